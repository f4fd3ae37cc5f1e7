//! Why a resolution failed, worded exactly as upstream words it.
//!
//! Input: nothing. Output: [`ResolveError`], whose `Display` is the message upstream puts in the
//! `Progressing` condition, and the retry policy the controller applies to it. No IO.
//!
//! Upstream reports every resolution failure as `Progressing=True`, reason `Retrying`, message =
//! this text, and re-queues with backoff. The controller keeps the condition as upstream sets it
//! ([`ConditionError::reason`] is always `Retrying`) but only backs off on failures that can heal
//! by themselves; the others are terminal and wait for a watch event (the ClusterExtension or a
//! ClusterCatalog changing), since nothing else can change the answer:
//!
//! | error                                  | changes the answer                      | [`ConditionError::is_terminal`] |
//! |----------------------------------------|-----------------------------------------|------------------|
//! | invalid selector or version range      | a spec edit                             | yes              |
//! | a catalog's content could not be read  | time (network, catalogd restart)        | no               |
//! | installed version unreadable           | a new installed record                  | yes              |
//! | no bundle / ambiguous catalogs         | a spec edit or a catalog change         | yes              |
//! | resolved bundle unreadable or has dependencies | a catalog change                | yes              |

use olm_api::condition_error::ConditionError;
use olm_api::v1::ConditionReason;
use olm_api::version::go_text::go_quote;
use olm_api::version::masterminds::ConstraintError;
use olm_api::version::release::InstalledVersionError;

use super::content::BundleVersionError;
use super::selector::SelectorError;

/// What a catalog source reports when it cannot provide a package's content.
pub type FetchError = Box<dyn std::error::Error + Send + Sync>;

/// Why no bundle could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("desired catalog selector is invalid: {0}")]
    InvalidSelector(#[source] SelectorError),
    #[error("desired version range {} is invalid: {source}", go_quote(.range))]
    InvalidVersionRange {
        range: String,
        source: ConstraintError,
    },
    #[error(
        "error walking catalogs: error getting package {} from catalog {}: {source}",
        go_quote(.package),
        go_quote(.catalog)
    )]
    GetPackage {
        package: String,
        catalog: String,
        source: FetchError,
    },
    #[error("error walking catalogs: error finding upgrade edges: {0}")]
    UpgradeEdges(#[source] Box<InstalledVersionError>),
    #[error("{0}")]
    NoBundle(Box<ResolutionFailure>),
    #[error("{0}")]
    Ambiguous(Box<ResolutionFailure>),
    #[error("error getting resolved bundle version for bundle {}: {source}", go_quote(.bundle))]
    ResolvedBundleVersion {
        bundle: String,
        source: Box<BundleVersionError>,
    },
    #[error(
        "validating bundle {}: bundle {} has a dependency declared via property {} which is currently not supported",
        go_quote(.bundle),
        go_quote(.bundle),
        go_quote(.property_type)
    )]
    UnsupportedDependency {
        bundle: String,
        property_type: String,
    },
}

impl ConditionError for ResolveError {
    /// The `Progressing` reason upstream sets for this failure: always `Retrying`.
    fn reason(&self) -> ConditionReason {
        ConditionReason::Retrying
    }

    /// Whether only a change of the ClusterExtension or the catalogs can change the answer (see
    /// the module table).
    fn is_terminal(&self) -> bool {
        !matches!(self, ResolveError::GetPackage { .. })
    }
}

/// The facts the "no bundles found" and "found bundles ... in multiple catalogs" messages list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolutionFailure {
    pub package: String,
    /// The requested range as written; empty when none.
    pub version: String,
    pub channels: Vec<String>,
    /// The installed bundle's version as recorded, when something is installed.
    pub installed_version: Option<String>,
    /// Catalogs that each offered a bundle with the same top priority (sorted by name); fewer
    /// than two means nothing was found.
    pub catalogs: Vec<String>,
}

impl std::fmt::Display for ResolutionFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        if let Some(v) = &self.installed_version {
            s.push_str(&format!(
                "error upgrading from currently installed version {}: ",
                go_quote(v)
            ));
        }
        if self.catalogs.len() > 1 {
            s.push_str(&format!(
                "found bundles for package {} ",
                go_quote(&self.package)
            ));
        } else {
            s.push_str(&format!(
                "no bundles found for package {} ",
                go_quote(&self.package)
            ));
        }
        if !self.version.is_empty() {
            s.push_str(&format!("matching version {} ", go_quote(&self.version)));
        }
        if !self.channels.is_empty() {
            s.push_str(&format!("in channels [{}] ", self.channels.join(" ")));
        }
        if self.catalogs.len() > 1 {
            s.push_str(&format!(
                "in multiple catalogs with the same priority [{}] ",
                self.catalogs.join(" ")
            ));
        }
        f.write_str(s.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_api::condition_error::missing_causes;

    #[test]
    fn only_unreadable_catalog_content_is_retried_and_every_failure_shows_as_retrying() {
        let fetch = ResolveError::GetPackage {
            package: "p".into(),
            catalog: "c".into(),
            source: "connection refused".into(),
        };
        let no_bundle = ResolveError::NoBundle(Box::new(ResolutionFailure {
            package: "p".into(),
            version: String::new(),
            channels: vec![],
            installed_version: None,
            catalogs: vec![],
        }));
        let dependency = ResolveError::UnsupportedDependency {
            bundle: "b".into(),
            property_type: "olm.gvk.required".into(),
        };
        assert!(!fetch.is_terminal());
        assert!(no_bundle.is_terminal());
        assert!(dependency.is_terminal());
        for e in [&fetch, &no_bundle, &dependency] {
            assert_eq!(e.reason(), ConditionReason::Retrying);
            assert!(missing_causes(e).is_empty(), "{e}");
        }
        assert_eq!(
            fetch.condition_message(),
            "error walking catalogs: error getting package \"p\" from catalog \"c\": connection refused"
        );
    }
}
