//! When a failed reconcile of an extension is tried again.
//!
//! Input: the reconcile's error and the extension's failure counts. Output: the delay before the
//! next attempt, or none (wait for a change of the extension). No IO.
//!
//! | error | next attempt |
//! |---|---|
//! | terminal (invalid spec, no bundle to resolve, …) | when the extension changes |
//! | a write refused because the extension changed since it was read (409) | after 10 ms, doubling while conflicts repeat |
//! | any other | after 1 s, doubling, at most 5 minutes |
//!
//! Why conflicts are retried almost at once: the next attempt reads the new version, so waiting
//! a second gains nothing. The usual writer in between is the Deployment watch publishing
//! `Available` while the first reconcile of a new extension runs; with the 1 s backoff that left
//! a fresh install's `Installed` unwritten for 1-3 s (`make bench-upstream`, P4 warm).
//! Upstream's controller-runtime retries any failed object from 5 ms, doubling.

use std::time::Duration;

use olm_api::condition_error::ConditionError;
use olm_runtime::backoff::Backoff;

use crate::controller::error::ReconcileError;

/// Retryable failures back off from 1 s, doubling, to at most 5 minutes (with jitter).
pub(super) const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
pub(super) const BACKOFF_CAP: Duration = Duration::from_secs(300);

/// Write conflicts back off from 10 ms, to the same cap.
pub(super) const CONFLICT_BACKOFF_INITIAL: Duration = Duration::from_millis(10);

/// When to retry `name` after `error`; `None` for a terminal error (wait for a change).
pub(super) fn retry_after(
    error: &ReconcileError,
    name: &str,
    backoff: &Backoff,
    conflicts: &Backoff,
) -> Option<Duration> {
    if error.is_terminal() {
        None
    } else if error.is_conflict() {
        Some(conflicts.failed(name))
    } else {
        Some(backoff.failed(name))
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;
    use olm_runtime::status::StatusError;

    use super::*;
    use crate::controller::error::{PublishError, ValidationError};

    fn refused_write(code: u16) -> ReconcileError {
        ReconcileError::Publish(PublishError::Status(StatusError::Write {
            name: "e".into(),
            source: kube::Error::Api(
                Status::failure("refused", "Conflict")
                    .with_code(code)
                    .boxed(),
            ),
        }))
    }

    fn backoffs() -> (Backoff, Backoff) {
        (
            Backoff::new(BACKOFF_INITIAL, BACKOFF_CAP),
            Backoff::new(CONFLICT_BACKOFF_INITIAL, BACKOFF_CAP),
        )
    }

    #[test]
    fn a_status_write_that_lost_a_race_is_retried_at_once_and_backs_off_only_if_it_repeats() {
        let (backoff, conflicts) = backoffs();
        let conflict = refused_write(409);
        let first = retry_after(&conflict, "e", &backoff, &conflicts).expect("retried");
        assert!(first <= Duration::from_millis(10), "{first:?}");
        let second = retry_after(&conflict, "e", &backoff, &conflicts).expect("retried");
        assert!(
            second > first && second <= Duration::from_millis(20),
            "{second:?}"
        );
        // Conflicts do not use up the ordinary failures' backoff.
        assert_eq!(backoff.failures("e"), 0);
        let failed = retry_after(&refused_write(500), "e", &backoff, &conflicts).expect("retried");
        assert!(failed >= Duration::from_millis(900), "{failed:?}");
    }

    #[test]
    fn a_terminal_error_waits_for_a_change() {
        let (backoff, conflicts) = backoffs();
        let invalid = ReconcileError::Validation(ValidationError::NoCatalogSource);
        assert_eq!(retry_after(&invalid, "e", &backoff, &conflicts), None);
    }
}
