//! Why a ClusterCatalog reconcile failed: one error per step, wrapped by [`ReconcileError`], each
//! knowing its condition reason and whether it is terminal ([`ConditionError`]).
//!
//! Input: the failures of the steps. Output: typed errors that keep their source. No IO.
//!
//! | step | error | in status | terminal |
//! |---|---|---|---|
//! | pull the image | [`SourceError`] | `Progressing`, message `source catalog content: …` | when the pull error is (a digest that can never change) |
//! | store the content | [`StoreError`] | `Progressing` True/`Retrying`, message `error storing fbc: …` | never |
//! | remove local content | [`CleanupError`] | no (logged, retried) | never |
//! | write to the API server | [`PublishError`] | no (logged, retried) | never |
//!
//! Messages follow the rule of [`olm_api::condition_error`]: `Display` includes the cause.

use std::fmt;

use olm_api::condition_error::ConditionError;
use olm_api::v1::ConditionReason;
use olm_image::{ImageError, ImageErrorKind};

use crate::ingest::IngestError;
use crate::storage::StorageError;

/// The catalog image could not be pulled (upstream's `source catalog content: …`).
#[derive(Debug)]
pub struct SourceError(pub ImageError);

impl SourceError {
    /// Upstream words a missing catalog label on its own, without naming the image; every other
    /// failure names the image reference.
    fn says_kind_only(&self) -> bool {
        matches!(self.0.kind, ImageErrorKind::MissingCatalogLabel)
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.says_kind_only() {
            write!(f, "source catalog content: {}", self.0.kind)
        } else {
            write!(f, "source catalog content: {}", self.0.sanitize())
        }
    }
}

impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The cause whose text the message carries.
        if self.says_kind_only() {
            Some(&self.0.kind)
        } else {
            Some(&self.0)
        }
    }
}

impl ConditionError for SourceError {
    fn reason(&self) -> ConditionReason {
        self.0.reason()
    }

    fn is_terminal(&self) -> bool {
        self.0.is_terminal()
    }
}

/// The unpacked content could not be stored (upstream's `error storing fbc: …`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("error storing fbc: {0}")]
    Ingest(#[source] IngestError),
    #[error("error storing fbc: {0}")]
    Task(#[source] tokio::task::JoinError),
}

impl ConditionError for StoreError {
    fn reason(&self) -> ConditionReason {
        ConditionReason::Retrying
    }

    /// A catalog that fails to load may be re-pushed under the same tag, and disk trouble passes.
    fn is_terminal(&self) -> bool {
        false
    }
}

/// Local content (stored catalog or image cache) could not be removed.
#[derive(Debug, thiserror::Error)]
pub enum CleanupError {
    #[error("failed to remove content of catalog {name}: {source}")]
    Storage {
        name: String,
        #[source]
        source: StorageError,
    },
    #[error("failed to remove content of catalog {name}: {source}")]
    ImageCache {
        name: String,
        #[source]
        source: ImageError,
    },
}

impl ConditionError for CleanupError {
    fn reason(&self) -> ConditionReason {
        ConditionReason::Retrying
    }

    fn is_terminal(&self) -> bool {
        false
    }
}

/// A write to the API server (label, finalizer, status) failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("failed to update ClusterCatalog {name}: {source}")]
    Metadata {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Status(#[from] olm_runtime::status::StatusError),
}

impl PublishError {
    /// The catalog changed after it was read (409): the next attempt works from the new version.
    pub fn is_conflict(&self) -> bool {
        match self {
            PublishError::Metadata { source, .. } => olm_runtime::finalizer::is_conflict(source),
            PublishError::Status(e) => e.is_conflict(),
        }
    }
}

impl ConditionError for PublishError {
    fn reason(&self) -> ConditionReason {
        ConditionReason::Retrying
    }

    /// Conflicts and outages pass; the next attempt reads the object again.
    fn is_terminal(&self) -> bool {
        false
    }
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Cleanup(#[from] CleanupError),
    #[error(transparent)]
    Publish(#[from] PublishError),
}

impl ReconcileError {
    /// A write lost a race with another change of the catalog; not worth a warning.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ReconcileError::Publish(e) if e.is_conflict())
    }

    fn step(&self) -> &dyn ConditionError {
        match self {
            ReconcileError::Source(e) => e,
            ReconcileError::Store(e) => e,
            ReconcileError::Cleanup(e) => e,
            ReconcileError::Publish(e) => e,
        }
    }
}

impl ConditionError for ReconcileError {
    fn reason(&self) -> ConditionReason {
        self.step().reason()
    }

    fn is_terminal(&self) -> bool {
        self.step().is_terminal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_api::condition_error::missing_causes;

    fn pull_error(digest_pinned: bool, kind: ImageErrorKind) -> SourceError {
        SourceError(ImageError {
            reference: "reg.io/cat:v1".into(),
            digest_pinned,
            kind,
        })
    }

    /// Upstream's message for a catalog image without the label (reference §1.1; e2e pins it too).
    #[test]
    fn a_missing_label_is_worded_like_upstream_and_terminal_only_behind_a_digest() {
        let tagged = ReconcileError::from(pull_error(false, ImageErrorKind::MissingCatalogLabel));
        assert_eq!(
            tagged.condition_message(),
            "source catalog content: catalog image is missing the required label \"operators.operatorframework.io.index.configs.v1\""
        );
        assert!(!tagged.is_terminal());
        assert_eq!(tagged.reason(), ConditionReason::Retrying);
        assert!(
            missing_causes(&tagged).is_empty(),
            "{:?}",
            missing_causes(&tagged)
        );
        let pinned = ReconcileError::from(pull_error(true, ImageErrorKind::MissingCatalogLabel));
        assert!(pinned.is_terminal());
        assert_eq!(pinned.reason(), ConditionReason::Blocked);
    }

    #[test]
    fn other_pull_failures_name_the_image() {
        let e = ReconcileError::from(pull_error(
            false,
            ImageErrorKind::Unreachable {
                registry: "reg.io".into(),
                reason: "connection refused".into(),
            },
        ));
        assert_eq!(
            e.condition_message(),
            "source catalog content: failed to pull image \"reg.io/cat:v1\": failed to reach registry reg.io: connection refused"
        );
        assert!(missing_causes(&e).is_empty(), "{:?}", missing_causes(&e));
    }

    #[test]
    fn store_failures_are_retried() {
        let e = ReconcileError::from(StoreError::Ingest(IngestError::Storage(
            StorageError::InvalidName(".x".into()),
        )));
        assert!(!e.is_terminal());
        assert_eq!(e.reason(), ConditionReason::Retrying);
        assert!(e.condition_message().starts_with("error storing fbc: "));
        assert!(missing_causes(&e).is_empty(), "{:?}", missing_causes(&e));
    }
}
