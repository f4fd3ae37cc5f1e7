//! Why a resolution failed, worded exactly as upstream words it.
//!
//! Input: nothing. Output: [`ResolveError`], whose `Display` is the message upstream puts in the
//! `Progressing` condition, and the retry policy the controller applies to it. No IO.
//!
//! Upstream reports every resolution failure as `Progressing=True`, reason `Retrying`, message =
//! this text, and re-queues with backoff. The controller keeps the condition as upstream sets it
//! (see [`ResolveError::condition_reason`]) but only backs off on failures that can heal by
//! themselves; the others wait for a watch event (the ClusterExtension or a ClusterCatalog
//! changing), since nothing else can change the answer:
//!
//! | error                                  | changes the answer                      | [`ResolveError::is_retryable`] |
//! |----------------------------------------|-----------------------------------------|------------------|
//! | invalid selector or version range      | a spec edit                             | no               |
//! | a catalog's content could not be read  | time (network, catalogd restart)        | yes              |
//! | installed version unreadable           | a new installed record                  | no               |
//! | no bundle / ambiguous catalogs         | a spec edit or a catalog change         | no               |
//! | resolved bundle unreadable or has dependencies | a catalog change                | no               |

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

impl ResolveError {
    /// Whether trying again later, with no change to the ClusterExtension or the catalogs, may
    /// succeed (see the module table).
    pub fn is_retryable(&self) -> bool {
        matches!(self, ResolveError::GetPackage { .. })
    }

    /// The `Progressing` reason upstream sets for this failure: always `Retrying`.
    pub fn condition_reason(&self) -> ConditionReason {
        ConditionReason::Retrying
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
