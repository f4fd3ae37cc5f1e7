//! Bundle resolution: which bundle of which catalog a ClusterExtension gets.
//!
//! Input: the ClusterExtension's catalog filter (package, version range, channels, selector,
//! upgrade constraint policy), the installed bundle if any, the catalogs (name, priority, labels,
//! availability) and, per selected catalog, that package's [`PackageContent`]. Output: a
//! [`Resolution`] (the bundle, its version, its catalog and that catalog's deprecation object)
//! or a [`ResolveError`] whose text is upstream's. Pure: no Kubernetes client, no network, no
//! async runtime; content comes from a caller-supplied function or a pre-fetched list.
//!
//! Steps, as upstream OLM v1 takes them:
//!
//! 1. Parse the selector, then the version range (either failing ends the resolution).
//! 2. Keep the catalogs the selector matches and whose availability mode is `Available`; walk
//!    them in name order. Unselected catalogs are never fetched.
//! 3. Per catalog: skip it when it lacks the package; otherwise take its best candidate
//!    ([`filter`]). The installed bundle's version is read at the first catalog that has the
//!    package; failing to read it ends the resolution.
//! 4. Across catalogs (decision table below), then by priority: when more than one catalog
//!    remains, the highest `priority` wins if it is strictly higher than the next; otherwise the
//!    result is ambiguous and the error lists every remaining catalog.
//! 5. Read the winner's version and reject it if it declares dependencies
//!    (`olm.package.required`, `olm.gvk.required`, `olm.constraint`): validation happens after
//!    the choice, so such a bundle is an error, not skipped.
//!
//! The walk also records what it decided on the way (picks passed over for deprecation, picks
//! outranked by priority); [`explain`] reads that record and the per-bundle verdicts of
//! [`filter`] to say why each bundle was or was not chosen, on this very code path.
//!
//! Combining catalog picks during the walk (upstream's rule):
//!
//! | picks so far      | this catalog's pick | result                                   |
//! |-------------------|---------------------|------------------------------------------|
//! | none              | any                 | keep it                                  |
//! | not deprecated    | deprecated          | ignore it                                |
//! | deprecated        | not deprecated      | drop the earlier picks, keep this one    |
//! | same status       | same status         | keep it too (priority decides later)     |
//!
//! Versions are never compared across catalogs. The returned deprecation object is the one of
//! the catalog that supplied the winner. (Upstream returns the one of the last catalog it kept a
//! pick from, which differs only when several catalogs kept picks and priority chose an earlier
//! one; since upstream's catalog list order is not defined, this is the order-independent
//! reading of its behaviour.)

pub mod content;
pub mod deprecation;
pub mod error;
pub mod explain;
pub mod filter;
pub mod selector;
pub mod updates;

use std::collections::BTreeMap;
use std::sync::Arc;

use olm_api::fbc::property::{TYPE_CONSTRAINT, TYPE_GVK_REQUIRED, TYPE_PACKAGE_REQUIRED};
use olm_api::fbc::{Bundle, Deprecation};
use olm_api::v1::{BundleMetadata, CatalogFilter, METADATA_NAME_LABEL, UpgradeConstraintPolicy};
use olm_api::version::masterminds::Constraints;
use olm_api::version::release::VersionRelease;

pub use content::{BundleContent, BundleVersionError, ChannelContent, PackageContent};
pub use deprecation::{ApplicableDeprecations, ConditionValue, deprecation_conditions};
pub use error::{FetchError, ResolutionFailure, ResolveError};
pub use selector::{CatalogSelector, SelectorError};

use filter::{CandidateRules, Successors};

/// The bundle currently installed, as recorded (Helm release labels or revision annotations).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstalledBundle {
    pub name: String,
    pub version: String,
    /// An explicitly recorded release (even empty); `None` reads the release from the version's
    /// build metadata, as for every registry+v1 bundle.
    pub release: Option<String>,
}

/// What the resolver needs to know about a ClusterCatalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogInfo {
    pub name: String,
    pub priority: i32,
    pub labels: BTreeMap<String, String>,
    /// False when `spec.availabilityMode` is `Unavailable`.
    pub available: bool,
}

impl CatalogInfo {
    /// An available catalog labelled with its name, as catalogd's webhook labels every catalog.
    pub fn new(name: &str, priority: i32) -> CatalogInfo {
        CatalogInfo {
            name: name.to_owned(),
            priority,
            labels: BTreeMap::from([(METADATA_NAME_LABEL.to_owned(), name.to_owned())]),
            available: true,
        }
    }
}

/// The chosen bundle.
#[derive(Clone, Debug)]
pub struct Resolution {
    pub bundle: Bundle,
    pub version: VersionRelease,
    /// The catalog that supplied it.
    pub catalog: String,
    /// That catalog's `olm.deprecations` object for the package, if any.
    pub deprecation: Option<Deprecation>,
}

impl Resolution {
    /// The version as the ClusterExtension's status records it (a legacy release folded back
    /// into build metadata, `1.0.0+2`).
    pub fn status_version(&self) -> String {
        self.version.to_string()
    }

    /// `status.install.bundle` once this bundle is installed.
    pub fn bundle_metadata(&self) -> BundleMetadata {
        BundleMetadata {
            name: self.bundle.name.clone(),
            version: self.status_version(),
        }
    }
}

/// A parsed resolution request: build it once, then give it catalog content.
#[derive(Debug)]
pub struct Resolver<'a> {
    filter: &'a CatalogFilter,
    installed: Option<&'a InstalledBundle>,
    selector: CatalogSelector,
    range: Option<Constraints>,
}

/// One catalog's candidate kept during the walk.
struct Pick {
    catalog: String,
    priority: i32,
    content: Arc<PackageContent>,
    index: usize,
    deprecated: bool,
}

impl<'a> Resolver<'a> {
    /// Step 1: parses the selector and the version range.
    pub fn new(
        filter: &'a CatalogFilter,
        installed: Option<&'a InstalledBundle>,
    ) -> Result<Resolver<'a>, ResolveError> {
        let selector = CatalogSelector::new(filter.selector.as_ref())
            .map_err(ResolveError::InvalidSelector)?;
        let range = match filter.version.as_deref() {
            None | Some("") => None,
            Some(range) => Some(Constraints::parse(range).map_err(|source| {
                ResolveError::InvalidVersionRange {
                    range: range.to_owned(),
                    source,
                }
            })?),
        };
        Ok(Resolver {
            filter,
            installed,
            selector,
            range,
        })
    }

    /// The package being resolved.
    pub fn package(&self) -> &str {
        &self.filter.package_name
    }

    /// Step 2: the catalogs to fetch the package from, in walk order.
    pub fn catalogs_to_search<'c>(&self, catalogs: &'c [CatalogInfo]) -> Vec<&'c CatalogInfo> {
        let mut selected: Vec<&CatalogInfo> = catalogs
            .iter()
            .filter(|c| c.available && self.selector.matches(&c.labels))
            .collect();
        selected.sort_by(|a, b| a.name.cmp(&b.name));
        selected
    }

    /// Steps 2 to 5, fetching each selected catalog's content lazily in walk order; the first
    /// fetch error ends the walk (later catalogs are not fetched).
    pub fn resolve_with(
        &self,
        catalogs: &[CatalogInfo],
        mut fetch: impl FnMut(&CatalogInfo) -> Result<Arc<PackageContent>, FetchError>,
    ) -> Result<Resolution, ResolveError> {
        let mut walk = Walk::default();
        for catalog in self.catalogs_to_search(catalogs) {
            let content = fetch(catalog).map_err(|source| self.fetch_error(catalog, source))?;
            self.consider(catalog, content, &mut walk)?;
        }
        self.finish(&mut walk)
    }

    /// Steps 3 to 5 over content fetched beforehand for the catalogs of
    /// [`Resolver::catalogs_to_search`] (in any order; errors are reported in walk order).
    pub fn resolve_fetched<'c>(
        &self,
        fetched: impl IntoIterator<Item = (&'c CatalogInfo, Result<Arc<PackageContent>, FetchError>)>,
    ) -> Result<Resolution, ResolveError> {
        self.walk_fetched(fetched).1
    }

    /// [`Resolver::resolve_fetched`], also returning what the walk decided on the way (which
    /// catalog picks were passed over and why, which survived priority), for
    /// [`explain`](self::explain).
    fn walk_fetched<'c>(
        &self,
        fetched: impl IntoIterator<Item = (&'c CatalogInfo, Result<Arc<PackageContent>, FetchError>)>,
    ) -> (Walk, Result<Resolution, ResolveError>) {
        let mut fetched: Vec<_> = fetched.into_iter().collect();
        fetched.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let mut walk = Walk::default();
        for (catalog, content) in fetched {
            let step = content
                .map_err(|source| self.fetch_error(catalog, source))
                .and_then(|content| self.consider(catalog, content, &mut walk));
            if let Err(e) = step {
                return (walk, Err(e));
            }
        }
        let result = self.finish(&mut walk);
        (walk, result)
    }

    /// The rules applied to each catalog's content; `successors` as the walk computed them.
    fn rules<'r>(&'r self, successors: Option<&'r Successors>) -> CandidateRules<'r> {
        let constrained =
            self.filter.upgrade_constraint_policy != UpgradeConstraintPolicy::SelfCertified;
        CandidateRules {
            channels: &self.filter.channels,
            range: self.range.as_ref(),
            successors: if constrained { successors } else { None },
        }
    }

    fn fetch_error(&self, catalog: &CatalogInfo, source: FetchError) -> ResolveError {
        ResolveError::GetPackage {
            package: self.package().to_owned(),
            catalog: catalog.name.clone(),
            source,
        }
    }

    /// Step 3 and the walk-time half of step 4 for one catalog.
    fn consider(
        &self,
        catalog: &CatalogInfo,
        content: Arc<PackageContent>,
        walk: &mut Walk,
    ) -> Result<(), ResolveError> {
        if content.is_empty() {
            return Ok(());
        }
        let constrained =
            self.filter.upgrade_constraint_policy != UpgradeConstraintPolicy::SelfCertified;
        if constrained
            && walk.successors.is_none()
            && let Some(installed) = self.installed
        {
            walk.successors = Some(
                Successors::new(installed).map_err(|e| ResolveError::UpgradeEdges(Box::new(e)))?,
            );
        }
        let rules = self.rules(walk.successors.as_ref());
        let Some(best) = rules.best(&content) else {
            return Ok(());
        };
        if let Some(prior) = walk.picks.last() {
            if best.deprecated && !prior.deprecated {
                walk.passed_over.push(PassedOver {
                    catalog: catalog.name.clone(),
                    preferred: prior.catalog.clone(),
                });
                return Ok(());
            }
            if !best.deprecated && prior.deprecated {
                for p in walk.picks.drain(..) {
                    walk.passed_over.push(PassedOver {
                        catalog: p.catalog,
                        preferred: catalog.name.clone(),
                    });
                }
            }
        }
        walk.picks.push(Pick {
            catalog: catalog.name.clone(),
            priority: catalog.priority,
            content,
            index: best.index,
            deprecated: best.deprecated,
        });
        Ok(())
    }

    /// The priority half of step 4, and step 5.
    fn finish(&self, walk: &mut Walk) -> Result<Resolution, ResolveError> {
        let picks = &mut walk.picks;
        if picks.len() > 1 {
            picks.sort_by_key(|p| std::cmp::Reverse(p.priority));
            if picks[0].priority != picks[1].priority {
                walk.outranked = picks.drain(1..).collect();
            }
        }
        if picks.len() != 1 {
            let mut catalogs: Vec<String> = picks.iter().map(|p| p.catalog.clone()).collect();
            catalogs.sort();
            let failure = Box::new(ResolutionFailure {
                package: self.package().to_owned(),
                version: self.filter.version.clone().unwrap_or_default(),
                channels: self.filter.channels.clone(),
                installed_version: self.installed.map(|i| i.version.clone()),
                catalogs,
            });
            return Err(if picks.is_empty() {
                ResolveError::NoBundle(failure)
            } else {
                ResolveError::Ambiguous(failure)
            });
        }
        let pick = &picks[0];
        let chosen = &pick.content.bundles()[pick.index];
        let version =
            chosen
                .version
                .clone()
                .map_err(|source| ResolveError::ResolvedBundleVersion {
                    bundle: chosen.bundle.name.clone(),
                    source: Box::new(source),
                })?;
        if let Some(p) = chosen.bundle.properties.iter().find(|p| {
            matches!(
                p.type_.as_str(),
                TYPE_PACKAGE_REQUIRED | TYPE_GVK_REQUIRED | TYPE_CONSTRAINT
            )
        }) {
            return Err(ResolveError::UnsupportedDependency {
                bundle: chosen.bundle.name.clone(),
                property_type: p.type_.clone(),
            });
        }
        Ok(Resolution {
            bundle: chosen.bundle.clone(),
            version,
            catalog: pick.catalog.clone(),
            deprecation: pick.content.deprecation().cloned(),
        })
    }
}

#[derive(Default)]
struct Walk {
    /// The picks kept; after [`Resolver::finish`], those left by the priority step.
    picks: Vec<Pick>,
    successors: Option<Successors>,
    /// Catalog picks set aside because they are deprecated and another catalog's is not.
    passed_over: Vec<PassedOver>,
    /// Picks of catalogs whose priority is lower than the winner's.
    outranked: Vec<Pick>,
}

/// A deprecated catalog pick set aside for `preferred`'s non-deprecated one.
struct PassedOver {
    catalog: String,
    preferred: String,
}

/// Resolves with content fetched lazily by `fetch` (see [`Resolver::resolve_with`]).
pub fn resolve(
    filter: &CatalogFilter,
    installed: Option<&InstalledBundle>,
    catalogs: &[CatalogInfo],
    fetch: impl FnMut(&CatalogInfo) -> Result<Arc<PackageContent>, FetchError>,
) -> Result<Resolution, ResolveError> {
    Resolver::new(filter, installed)?.resolve_with(catalogs, fetch)
}
