//! Graceful shutdown: one [`CancellationToken`] per process, cancelled on SIGINT or SIGTERM and
//! passed down to every server, controller and background task, which stop when it is cancelled;
//! and [`run_until_signal`], the start-up both binaries' `run` modes share around it.
//!
//! Input: the process's signals. Output: the token, or the exit status of a `run` mode. No other
//! IO (an error is written to the writer the caller gives).

use std::future::Future;
use std::io::Write;

use crate::exit::Exit;

pub use tokio_util::sync::CancellationToken;

/// A `run` mode from start to exit status: starts a multi-threaded tokio runtime, runs
/// `run(token)` where the token is cancelled by the first SIGINT or SIGTERM, and maps how it ended:
///
/// | outcome                         | written to `err`                                | exit status      |
/// |---------------------------------|-------------------------------------------------|------------------|
/// | `Ok(())`                        | nothing                                         | 0                |
/// | `Err(e)`                        | `error: {e}`                                    | `exit_of(&e)`    |
/// | the runtime cannot be started   | `error: failed to start the runtime: {reason}`  | 3 (`Failed`)     |
pub fn run_until_signal<F, Fut, E>(
    err: &mut dyn Write,
    run: F,
    exit_of: impl FnOnce(&E) -> Exit,
) -> Exit
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "error: failed to start the runtime: {e}");
            return Exit::Failed;
        }
    };
    match runtime.block_on(async { run(on_signal()).await }) {
        Ok(()) => Exit::Ok,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            exit_of(&e)
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn signal() {
    let interrupt = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = interrupt => {}
                _ = term.recv() => {}
            }
        }
        // No SIGTERM handler (never on Linux in practice): Ctrl-C still stops the process.
        Err(_) => {
            let _ = interrupt.await;
        }
    }
}

/// A token cancelled by the first SIGINT or SIGTERM. Call inside a tokio runtime.
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        signal().await;
        tracing::info!("shutdown signal received");
        cancel.cancel();
    });
    token
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_succeeds_exits_zero_and_writes_nothing() {
        let mut err = Vec::new();
        let exit = run_until_signal(
            &mut err,
            |token| async move {
                // Inside the runtime, with a live token nobody has cancelled.
                assert!(!token.is_cancelled());
                tokio::task::yield_now().await;
                Ok::<(), String>(())
            },
            |_| Exit::Failed,
        );
        assert_eq!(exit, Exit::Ok);
        assert!(err.is_empty());
    }

    #[test]
    fn a_failed_run_writes_its_error_and_exits_with_the_status_the_caller_maps_it_to() {
        let mut err = Vec::new();
        let exit = run_until_signal(
            &mut err,
            |_| async { Err("failed to read /nonexistent: no such file".to_owned()) },
            |e: &String| {
                if e.contains("read") {
                    Exit::Invalid
                } else {
                    Exit::Failed
                }
            },
        );
        assert_eq!(exit, Exit::Invalid);
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "error: failed to read /nonexistent: no such file\n"
        );
    }
}
