//! Waiting for a condition in end-to-end tests: one helper, one bound.
//!
//! Input: a check to poll. Output: its first `Some` value, or a test failure naming what was
//! awaited. No IO of its own.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long [`eventually`] waits. It only keeps a broken environment from hanging the run; it is
/// far above what any healthy run needs and is not a performance assertion.
pub const BOUND: Duration = Duration::from_secs(120);
/// Pause between checks.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// Polls `check` until it returns `Some`; fails the test after [`BOUND`].
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    eventually_explained(what, String::new, check).await
}

/// [`eventually`], adding `explain()` (for example a component's log tail) to the failure.
pub async fn eventually_explained<T, F, Fut, E>(what: &str, explain: E, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
    E: Fn() -> String,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            start.elapsed() < BOUND,
            "gave up waiting for {what}{}",
            match explain() {
                context if context.is_empty() => String::new(),
                context => format!("\n{context}"),
            }
        );
        tokio::time::sleep(INTERVAL).await;
    }
}
