//! Per-object capped exponential backoff with jitter, for retryable reconcile failures.
//!
//! Input: failures and successes per object key. Output: how long to wait before the next try.
//! No IO; the random jitter sample is the only impurity, and [`delay`] takes it as an argument.
//!
//! | consecutive failures | base delay (before jitter) |
//! |---|---|
//! | 1 | `initial` |
//! | n | `initial` × 2^(n−1) |
//! | any | at most `cap` |
//!
//! Jitter takes up to [`JITTER`] of the delay off, so objects that failed together (a registry
//! outage) do not retry in lockstep, while the cap stays an upper bound. A success or a deletion
//! resets the count.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The largest fraction jitter takes off a delay.
pub const JITTER: f64 = 0.1;

/// `initial` × 2^(failures−1), capped; `failures` counts from 1.
pub fn exponential(failures: u32, initial: Duration, cap: Duration) -> Duration {
    let exp = failures.saturating_sub(1).min(31);
    initial.saturating_mul(1u32 << exp).min(cap)
}

/// The delay after `failures` consecutive failures with the jitter sample `sample` in `[0, 1)`.
pub fn delay(failures: u32, initial: Duration, cap: Duration, sample: f64) -> Duration {
    exponential(failures, initial, cap).mul_f64(1.0 - JITTER * sample.clamp(0.0, 1.0))
}

/// Failure counts per object.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    cap: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    pub fn new(initial: Duration, cap: Duration) -> Backoff {
        Backoff {
            initial,
            cap,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Records a failure of `key` and returns how long to wait before retrying it.
    pub fn failed(&self, key: &str) -> Duration {
        let failures = {
            let mut all = self.failures.lock().unwrap_or_else(|p| p.into_inner());
            let n = all.entry(key.to_string()).or_default();
            *n = n.saturating_add(1);
            *n
        };
        delay(failures, self.initial, self.cap, rand::random::<f64>())
    }

    /// Resets `key` after a success (or its deletion).
    pub fn reset(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// Consecutive failures recorded for `key`.
    pub fn failures(&self, key: &str) -> u32 {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// catalogd's retry schedule (1 s doubling to 5 minutes), before jitter.
    fn backoff(failures: u32) -> Duration {
        exponential(failures, Duration::from_secs(1), Duration::from_secs(300))
    }

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(5), Duration::from_secs(16));
        assert_eq!(backoff(20), Duration::from_secs(300));
        assert_eq!(backoff(u32::MAX), Duration::from_secs(300));
    }

    #[test]
    fn jitter_only_shortens_a_delay_by_at_most_a_tenth() {
        let (initial, cap) = (Duration::from_secs(1), Duration::from_secs(300));
        assert_eq!(delay(3, initial, cap, 0.0), Duration::from_secs(4));
        assert_eq!(delay(3, initial, cap, 0.5), Duration::from_millis(3800));
        assert_eq!(
            delay(30, initial, cap, 0.999_999),
            Duration::from_secs(300).mul_f64(1.0 - 0.099_999_9)
        );
        assert!(delay(30, initial, cap, 1.0) >= Duration::from_secs(270));
    }

    #[test]
    fn failures_count_per_object_and_reset_on_success() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
        for _ in 0..3 {
            b.failed("a");
        }
        let fourth = b.failed("a");
        assert!(fourth <= Duration::from_secs(8) && fourth >= Duration::from_millis(7200));
        assert_eq!(b.failures("a"), 4);
        assert!(
            b.failed("b") <= Duration::from_secs(1),
            "b has its own count"
        );
        b.reset("a");
        assert_eq!(b.failures("a"), 0);
        assert_eq!(b.failures("b"), 1);
    }
}
