//! Why a ClusterExtension reconcile did not reach the desired state: one error per step,
//! wrapped by [`ReconcileError`], each knowing its condition reason and whether it is terminal
//! ([`ConditionError`]).
//!
//! Input: the failures of the steps. Output: typed errors whose `Display` is the `Progressing`
//! message. No IO.
//!
//! | step | error | `Progressing` | terminal (waits for a change) |
//! |---|---|---|---|
//! | validate the spec | [`ValidationError`] | False/`InvalidConfiguration` | yes |
//! | read the installed state | [`InstalledStateError`] | True/`Retrying` `retrying to get installed bundle` (the error goes to `Installed`) | no |
//! | list catalogs | [`CatalogListError`] | True/`Retrying` | no |
//! | resolve | `resolve::ResolveError` (upstream's texts) | True/`Retrying` | when only a spec or catalog change can help (see its table) |
//! | pull, parse, render, preflight, apply, record | [`BundleStepError`]: `error for resolved bundle "<b>" with version "<v>": …` | True/`Retrying`; False/`InvalidConfiguration` for configuration errors, False/`Blocked` for an unparsable image reference | only those two |
//! | guarded rollback (`spec.install.rollback`) | [`RollbackError`] | True/`Retrying` | no |
//! | uninstall | [`UninstallError`] | True/`Retrying` | no |
//! | write finalizers or status | [`PublishError`] | not written (logged) | no |
//!
//! Only invalid configuration and unparsable image references are terminal, as upstream
//! (install-path.md §1 item 5); resolution failures keep upstream's `Retrying` but wait for a
//! change of the extension or of a catalog, which the controller watches.

use olm_api::condition_error::ConditionError;
use olm_api::v1::ConditionReason;
use olm_operator_core::bundle::BundleError;
use olm_operator_core::release::history::PlanError as ReleasePlanError;
use olm_operator_core::release::manifest::ManifestError;
use olm_operator_core::render::RenderError;
use olm_operator_core::resolve::ResolveError;
use olm_operator_core::status::wrap_for_bundle;

use crate::apply::ApplyError;
use crate::bundle_source::BundleSourceError;
use crate::storage::StoreError;

use super::preflight::PreflightError;

/// The spec cannot be acted on (the CRD's validation normally prevents this).
#[derive(Debug, thiserror::Error)]
pub enum ValidationError {
    #[error(
        "operation cannot proceed due to the following validation error(s): spec.source.catalog is required when spec.source.sourceType is Catalog"
    )]
    NoCatalogSource,
}

/// The release records could not be read. Its text goes to `Installed` (Unknown), as upstream
/// reports it; `Progressing` says `retrying to get installed bundle`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InstalledStateError(#[from] pub StoreError);

/// The ClusterCatalogs could not be listed (upstream's wording).
#[derive(Debug, thiserror::Error)]
#[error("error walking catalogs: error listing catalogs: {0}")]
pub struct CatalogListError(pub String);

/// What failed for a resolved bundle.
#[derive(Debug, thiserror::Error)]
pub enum BundleFailure {
    #[error(transparent)]
    Pull(#[from] BundleSourceError),
    #[error(transparent)]
    Parse(#[from] BundleError),
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Helm's manifest rendering (an object of a kind the API server does not serve).
    #[error(transparent)]
    Manifest(#[from] olm_operator_core::release::RenderError),
    #[error(transparent)]
    Preflight(#[from] PreflightError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// The built-in webhook certificate provider.
    #[error(transparent)]
    WebhookCerts(#[from] crate::webhook_certs::WebhookCertError),
    #[error(transparent)]
    Record(#[from] StoreError),
    #[error(transparent)]
    ReleasePlan(#[from] ReleasePlanError),
    /// Discovery of the kinds to render the release manifest with.
    #[error(transparent)]
    Scopes(#[from] crate::storage::scopes::ScopesError),
    /// The stored manifest of a release could not be read.
    #[error(transparent)]
    StoredManifest(#[from] ManifestError),
}

impl BundleFailure {
    fn reason(&self) -> ConditionReason {
        match self {
            BundleFailure::Pull(e) => e.reason(),
            BundleFailure::Render(e) => e.reason(),
            _ => ConditionReason::Retrying,
        }
    }

    fn is_terminal(&self) -> bool {
        match self {
            BundleFailure::Pull(e) => e.is_terminal(),
            BundleFailure::Render(e) => e.is_terminal(),
            _ => false,
        }
    }

    /// A refused CRD upgrade's message is composed with the bundle already named (summary
    /// line first); it is not wrapped a second time.
    fn is_wrapped(&self) -> bool {
        matches!(self, BundleFailure::Preflight(e) if e.is_composed())
    }
}

/// A failure after resolution, worded as upstream's `wrapErrorWithResolutionInfo`.
#[derive(Debug)]
pub struct BundleStepError {
    pub bundle: String,
    pub version: String,
    pub failure: BundleFailure,
}

impl std::fmt::Display for BundleStepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.failure.is_wrapped() {
            write!(f, "{}", self.failure)
        } else {
            let inner = self.failure.to_string();
            f.write_str(&wrap_for_bundle(&self.bundle, &self.version, &inner))
        }
    }
}

impl std::error::Error for BundleStepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.failure)
    }
}

/// Removing what an extension installed did not complete.
#[derive(Debug, thiserror::Error)]
pub enum UninstallError {
    #[error("failed to uninstall: {0}")]
    Records(#[source] StoreError),
    #[error("failed to uninstall: {0}")]
    Manifest(#[source] ManifestError),
    #[error("failed to uninstall: {0}")]
    Apply(#[source] ApplyError),
    #[error("failed to uninstall: {0}")]
    WebhookCerts(#[source] crate::webhook_certs::WebhookCertError),
    #[error(
        "failed to uninstall: waiting for {} to be deleted: {}",
        plural(.0.len(), "object"),
        .0.join(", ")
    )]
    Pending(Vec<String>),
    #[error("failed to uninstall: failed to remove the cached bundle: {0}")]
    Cache(String),
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The guarded rollback (`spec.install.rollback`) could not be carried out or recorded. A
/// rollback that is unsafe is no error: it is refused and reported in `Progressing`.
#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error("rolling back to {target}: reading its manifest: {source}")]
    Manifest {
        target: String,
        #[source]
        source: ManifestError,
    },
    #[error("rolling back to {target}: {source}")]
    Certificates {
        target: String,
        #[source]
        source: crate::webhook_certs::WebhookCertError,
    },
    #[error("rolling back to {target}: {source}")]
    Apply {
        target: String,
        #[source]
        source: ApplyError,
    },
    #[error("rolling back to {target}: recording the rollback: {source}")]
    Record {
        target: String,
        #[source]
        source: StoreError,
    },
    #[error("recording that the upgrade to {bundle} became Available: {source}")]
    Probation {
        bundle: String,
        #[source]
        source: StoreError,
    },
}

/// A write to the API server (finalizers, status) failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("failed to update ClusterExtension {name}: {source}")]
    Metadata {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Status(#[from] olm_runtime::status::StatusError),
    #[error("failed to encode a patch: {0}")]
    Encode(String),
}

impl PublishError {
    /// The extension changed after it was read (409): the next attempt works from the new one.
    pub fn is_conflict(&self) -> bool {
        match self {
            PublishError::Metadata { source, .. } => olm_runtime::finalizer::is_conflict(source),
            PublishError::Status(e) => e.is_conflict(),
            PublishError::Encode(_) => false,
        }
    }
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Validation(#[from] ValidationError),
    #[error(transparent)]
    InstalledState(#[from] InstalledStateError),
    #[error(transparent)]
    CatalogList(#[from] CatalogListError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Bundle(#[from] BundleStepError),
    #[error(transparent)]
    Rollback(#[from] RollbackError),
    #[error(transparent)]
    Uninstall(#[from] UninstallError),
    #[error(transparent)]
    Publish(#[from] PublishError),
}

impl ReconcileError {
    /// A write lost a race with another change of the extension; not worth a warning.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ReconcileError::Publish(e) if e.is_conflict())
    }
}

impl ConditionError for ReconcileError {
    fn reason(&self) -> ConditionReason {
        match self {
            ReconcileError::Validation(_) => ConditionReason::InvalidConfiguration,
            ReconcileError::Resolve(e) => e.reason(),
            ReconcileError::Bundle(e) => e.failure.reason(),
            ReconcileError::InstalledState(_)
            | ReconcileError::CatalogList(_)
            | ReconcileError::Rollback(_)
            | ReconcileError::Uninstall(_)
            | ReconcileError::Publish(_) => ConditionReason::Retrying,
        }
    }

    fn is_terminal(&self) -> bool {
        match self {
            ReconcileError::Validation(_) => true,
            ReconcileError::Resolve(e) => e.is_terminal(),
            ReconcileError::Bundle(e) => e.failure.is_terminal(),
            ReconcileError::InstalledState(_)
            | ReconcileError::CatalogList(_)
            | ReconcileError::Rollback(_)
            | ReconcileError::Uninstall(_)
            | ReconcileError::Publish(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_api::condition_error::missing_causes;

    fn for_bundle(failure: BundleFailure) -> ReconcileError {
        ReconcileError::Bundle(BundleStepError {
            bundle: "test.v1.0.0".into(),
            version: "1.0.0".into(),
            failure,
        })
    }

    /// Strings: upstream `wrapErrorWithResolutionInfo`; configuration errors are terminal
    /// `InvalidConfiguration` (install-path.md §1 item 5).
    #[test]
    fn bundle_failures_name_the_resolved_bundle_and_keep_their_reason() {
        let e = for_bundle(BundleFailure::Render(RenderError::InvalidConfiguration(
            "invalid configuration: required field \"watchNamespace\" is missing".into(),
        )));
        assert_eq!(
            e.condition_message(),
            "error for resolved bundle \"test.v1.0.0\" with version \"1.0.0\": invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing"
        );
        assert_eq!(e.reason(), ConditionReason::InvalidConfiguration);
        assert!(e.is_terminal());
        assert!(missing_causes(&e).is_empty(), "{:?}", missing_causes(&e));

        let unsupported = for_bundle(BundleFailure::Render(RenderError::Unsupported(
            "webhookDefinitions are not supported".into(),
        )));
        assert_eq!(unsupported.reason(), ConditionReason::Retrying);
        assert!(!unsupported.is_terminal());
        let parse = for_bundle(BundleFailure::Parse(BundleError::NoCsv));
        assert_eq!(
            parse.condition_message(),
            "error for resolved bundle \"test.v1.0.0\" with version \"1.0.0\": no ClusterServiceVersion found in \"manifests\""
        );
        assert!(!parse.is_terminal());
    }

    #[test]
    fn apply_failures_are_retried() {
        let e = for_bundle(BundleFailure::Apply(ApplyError::NamespacesMissing(vec![
            "ns".into(),
        ])));
        assert_eq!(e.reason(), ConditionReason::Retrying);
        assert!(!e.is_terminal());
        assert!(
            e.condition_message()
                .starts_with("error for resolved bundle \"test.v1.0.0\" with version \"1.0.0\": failed to apply: namespace \"ns\" does not exist")
        );
    }

    #[test]
    fn a_missing_catalog_source_is_invalid_configuration() {
        let e = ReconcileError::from(ValidationError::NoCatalogSource);
        assert_eq!(e.reason(), ConditionReason::InvalidConfiguration);
        assert!(e.is_terminal());
    }

    #[test]
    fn pending_uninstalls_name_what_remains() {
        assert_eq!(
            UninstallError::Pending(vec!["ConfigMap \"ns/a\"".into()]).to_string(),
            "failed to uninstall: waiting for 1 object to be deleted: ConfigMap \"ns/a\""
        );
    }
}
