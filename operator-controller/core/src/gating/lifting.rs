//! Which bundle versions in an extension's catalogs would lift its upgrade block: the bundles the
//! resolver would accept for the extension (its selector, channels, version range and upgrade
//! edges from the installed bundle, exactly the resolver's [`CandidateRules`]) whose
//! `olm.maxOpenShiftVersion` lets the cluster upgrade ([`lifts_block`]).
//!
//! Input: the ClusterExtension's catalog filter, its installed bundle, the cluster's current
//! minor version, the catalogs and a function giving a catalog's content for the package.
//! Output: the lifting versions (status spelling, `1.0.0+2` for a legacy release), highest first,
//! each once; or the resolver's own error (invalid selector or range, a catalog that cannot be
//! read, an installed version the upgrade edges cannot be read from). No IO.
//!
//! | bundle of a selected, available catalog                      | listed |
//! |--------------------------------------------------------------|--------|
//! | not a candidate under the resolver's rules                   | no     |
//! | version unreadable                                           | no (the resolver could not install it either) |
//! | declares a dependency (`olm.package.required`, …)            | no (the resolver rejects it once chosen) |
//! | deprecated                                                   | yes (deprecation only ranks it later) |
//! | `olm.maxOpenShiftVersion` absent or above the current version | yes    |
//! | otherwise                                                    | no     |
//!
//! Values are judged as the catalog content carries them: canonical JSON, where an unquoted
//! `4.20` is Go's float64 text `4.2` (the same edge as install-path.md §6), so such a bundle is
//! not listed.
//!
//! The list says what the extension *can* move to; which one the resolver picks is still the
//! resolver's ranking (the highest non-deprecated candidate of the preferred catalog).

use std::collections::BTreeSet;
use std::sync::Arc;

use olm_api::fbc::property::{TYPE_CONSTRAINT, TYPE_GVK_REQUIRED, TYPE_PACKAGE_REQUIRED};
use olm_api::v1::{CatalogFilter, UpgradeConstraintPolicy};
use olm_api::version::masterminds::Constraints;
use olm_api::version::release::VersionRelease;

use super::{ClusterMinor, lifts_block};
use crate::resolve::filter::{CandidateRules, Successors};
use crate::resolve::{
    CatalogInfo, FetchError, InstalledBundle, PackageContent, ResolveError, Resolver,
};

/// The versions that would lift the block (see the module table), highest first; `fetch` gives
/// the package's content of each catalog the resolver would search.
pub fn lifting_versions(
    filter: &CatalogFilter,
    installed: Option<&InstalledBundle>,
    current: ClusterMinor,
    catalogs: &[CatalogInfo],
    mut fetch: impl FnMut(&CatalogInfo) -> Result<Arc<PackageContent>, FetchError>,
) -> Result<Vec<String>, ResolveError> {
    let resolver = Resolver::new(filter, installed)?;
    let fetched: Vec<_> = resolver
        .catalogs_to_search(catalogs)
        .into_iter()
        .map(|c| (c, fetch(c)))
        .collect();
    lifting_versions_fetched(filter, installed, current, fetched)
}

/// [`lifting_versions`] over content fetched beforehand for the catalogs of
/// [`Resolver::catalogs_to_search`] (as [`Resolver::resolve_fetched`] takes it; the first error
/// in catalog-name order is reported).
pub fn lifting_versions_fetched<'c>(
    filter: &CatalogFilter,
    installed: Option<&InstalledBundle>,
    current: ClusterMinor,
    fetched: impl IntoIterator<Item = (&'c CatalogInfo, Result<Arc<PackageContent>, FetchError>)>,
) -> Result<Vec<String>, ResolveError> {
    // Validates the selector and the range with the resolver's errors.
    Resolver::new(filter, installed)?;
    // `Resolver::new` accepted the range, so parsing it again cannot fail.
    let range = match filter.version.as_deref() {
        None | Some("") => None,
        Some(range) => Constraints::parse(range).ok(),
    };
    let constrained = filter.upgrade_constraint_policy != UpgradeConstraintPolicy::SelfCertified;
    let mut fetched: Vec<_> = fetched.into_iter().collect();
    fetched.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let mut successors: Option<Successors> = None;
    let mut found: BTreeSet<VersionRelease> = BTreeSet::new();
    for (catalog, content) in fetched {
        let content = content.map_err(|source| ResolveError::GetPackage {
            package: filter.package_name.clone(),
            catalog: catalog.name.clone(),
            source,
        })?;
        if content.is_empty() {
            continue;
        }
        // As the resolver does: the installed version is read at the first catalog with the package.
        if constrained
            && successors.is_none()
            && let Some(installed) = installed
        {
            successors = Some(
                Successors::new(installed).map_err(|e| ResolveError::UpgradeEdges(Box::new(e)))?,
            );
        }
        let rules = CandidateRules {
            channels: &filter.channels,
            range: range.as_ref(),
            successors: if constrained {
                successors.as_ref()
            } else {
                None
            },
        };
        for candidate in rules.candidates(&content) {
            let bundle = &content.bundles()[candidate.index];
            let Ok(version) = &bundle.version else {
                continue;
            };
            let has_dependency = bundle.bundle.properties.iter().any(|p| {
                matches!(
                    p.type_.as_str(),
                    TYPE_PACKAGE_REQUIRED | TYPE_GVK_REQUIRED | TYPE_CONSTRAINT
                )
            });
            if !has_dependency && lifts_block(current, &bundle.bundle) {
                found.insert(version.clone());
            }
        }
    }
    Ok(found.iter().rev().map(ToString::to_string).collect())
}

/// The versions outside the extension's spec (range, channels, successor edges) in its selected
/// catalogs that would lift the block, newest first: what the lifting sentence names when
/// nothing under the spec does. `explanation` is the extension's current resolution explained.
pub fn outside_lifting(
    explanation: &crate::resolve::explain::Explanation,
    current: ClusterMinor,
) -> Vec<super::extension::OutsideLift> {
    use crate::resolve::explain::ReasonCode;
    use crate::resolve::updates::BLOCKING;
    let mut seen = BTreeSet::new();
    explanation
        .candidates
        .iter()
        .filter(|c| !c.has(ReasonCode::CatalogNotSelected))
        .filter_map(|c| {
            let blocked_by = BLOCKING.into_iter().find(|code| c.has(*code))?;
            let bundle = explanation.bundle(&c.catalog, &c.name)?;
            (lifts_block(current, bundle) && seen.insert(c.version.clone())).then(|| {
                super::extension::OutsideLift {
                    version: c.version.clone(),
                    blocked_by,
                    deprecated: c.deprecated,
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use olm_api::fbc::walk_metas_reader;
    use std::collections::BTreeMap;

    const CUR: ClusterMinor = ClusterMinor::new(4, 18);

    fn bundle(version: &str, max: Option<&str>, extra: &str) -> String {
        let max = max
            .map(|m| format!(r#",{{"type":"olm.maxOpenShiftVersion","value":{m}}}"#))
            .unwrap_or_default();
        format!(
            r#"{{"schema":"olm.bundle","name":"p.v{version}","package":"p","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"{version}"}}}}{max}{extra}]}}"#
        )
    }

    /// Package `p`: channel `stable` 1.0.0 → 1.1.0 (replaces) → 1.2.0 (skipRange <1.2.0) →
    /// 2.0.0 (replaces 1.2.0 only); channel `fast` has 1.3.0 and 1.4.0 replacing 1.0.0.
    fn content() -> Arc<PackageContent> {
        let text = [
            r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}"#.to_string(),
            r#"{"schema":"olm.channel","name":"stable","package":"p","entries":[{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"p.v1.0.0"},{"name":"p.v1.2.0","skipRange":"<1.2.0"},{"name":"p.v2.0.0","replaces":"p.v1.2.0"}]}"#.to_string(),
            r#"{"schema":"olm.channel","name":"fast","package":"p","entries":[{"name":"p.v1.3.0","replaces":"p.v1.0.0"},{"name":"p.v1.4.0","replaces":"p.v1.0.0"}]}"#.to_string(),
            bundle("1.0.0", Some(r#""4.18""#), ""),
            bundle("1.1.0", Some(r#""4.19""#), ""),
            bundle("1.2.0", None, ""),
            bundle("1.3.0", Some(r#""4.20""#), ""),
            // Unquoted: the content arrives canonical, where Go's float64 text of 4.20 is `4.2`.
            bundle("1.4.0", Some("4.20"), ""),
            bundle("2.0.0", Some(r#""4.20""#), ""),
        ]
        .join("\n");
        let mut b = PackageContent::builder("p");
        walk_metas_reader(text.as_bytes(), "t", |m| {
            b.push(m).map_err(olm_api::fbc::WalkError::callback)
        })
        .unwrap();
        Arc::new(b.finish())
    }

    fn filter(channels: &[&str], version: Option<&str>) -> CatalogFilter {
        CatalogFilter {
            package_name: "p".to_string(),
            channels: channels.iter().map(|c| c.to_string()).collect(),
            version: version.map(str::to_string),
            selector: None,
            upgrade_constraint_policy: UpgradeConstraintPolicy::default(),
        }
    }

    fn installed_1_0_0() -> InstalledBundle {
        InstalledBundle {
            name: "p.v1.0.0".to_string(),
            version: "1.0.0".to_string(),
            release: None,
        }
    }

    fn run(filter: &CatalogFilter, installed: Option<&InstalledBundle>) -> Vec<String> {
        let catalogs = [CatalogInfo::new("c", 0)];
        let c = content();
        lifting_versions(filter, installed, CUR, &catalogs, |_| Ok(c.clone())).unwrap()
    }

    #[test]
    fn only_candidates_under_the_extensions_rules_are_listed() {
        let installed = installed_1_0_0();
        // Upgrade edges from 1.0.0: 1.1.0 (replaces), 1.2.0 (skipRange), 1.3.0 and 1.4.0 (fast);
        // not 2.0.0. 1.4.0's unquoted 4.20 is served as 4.2, which blocks (the 4.10 → 4.1 edge).
        assert_eq!(
            run(&filter(&[], None), Some(&installed)),
            ["1.3.0", "1.2.0", "1.1.0"]
        );
        // Channel `stable` only.
        assert_eq!(
            run(&filter(&["stable"], None), Some(&installed)),
            ["1.2.0", "1.1.0"]
        );
        // And a version range.
        assert_eq!(
            run(&filter(&["stable"], Some("<1.2.0")), Some(&installed)),
            ["1.1.0"]
        );
        // Self-certified upgrades ignore the edges: 2.0.0 counts.
        let mut any = filter(&["stable"], None);
        any.upgrade_constraint_policy = UpgradeConstraintPolicy::SelfCertified;
        assert_eq!(run(&any, Some(&installed)), ["2.0.0", "1.2.0", "1.1.0"]);
        // Nothing installed: every bundle of the channel is a candidate; 1.0.0 (max 4.18) is not listed.
        assert_eq!(
            run(&filter(&["stable"], None), None),
            ["2.0.0", "1.2.0", "1.1.0"]
        );
    }

    #[test]
    fn unselected_or_unavailable_catalogs_and_dependencies_do_not_count() {
        let mut f = filter(&[], None);
        f.selector = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    "olm.operatorframework.io/metadata.name".to_string(),
                    "other".to_string(),
                )])),
                ..Default::default()
            },
        );
        let catalogs = [CatalogInfo::new("c", 0)];
        let c = content();
        assert!(
            lifting_versions(&f, None, CUR, &catalogs, |_| Ok(c.clone()))
                .unwrap()
                .is_empty()
        );
        let mut unavailable = CatalogInfo::new("c", 0);
        unavailable.available = false;
        assert!(
            lifting_versions(&filter(&[], None), None, CUR, &[unavailable], |_| Ok(
                c.clone()
            ))
            .unwrap()
            .is_empty()
        );

        let text = bundle(
            "3.0.0",
            None,
            r#",{"type":"olm.package.required","value":{"packageName":"q","versionRange":">=1.0.0"}}"#,
        );
        let mut b = PackageContent::builder("p");
        walk_metas_reader(
            format!("{}\n{}", r#"{"schema":"olm.channel","name":"stable","package":"p","entries":[{"name":"p.v3.0.0"}]}"#, text).as_bytes(),
            "t",
            |m| b.push(m).map_err(olm_api::fbc::WalkError::callback),
        )
        .unwrap();
        let dep = Arc::new(b.finish());
        assert!(
            lifting_versions(
                &filter(&[], None),
                None,
                CUR,
                &catalogs,
                |_| Ok(dep.clone())
            )
            .unwrap()
            .is_empty()
        );
    }

    #[test]
    fn prefetched_content_gives_the_same_answer() {
        let catalogs = [CatalogInfo::new("b", 0), CatalogInfo::new("a", 0)];
        let c = content();
        let installed = installed_1_0_0();
        let f = filter(&["stable"], None);
        let fetched = catalogs.iter().map(|cat| (cat, Ok(c.clone())));
        assert_eq!(
            lifting_versions_fetched(&f, Some(&installed), CUR, fetched).unwrap(),
            run(&f, Some(&installed))
        );
        // Errors: the first in catalog-name order.
        let fetched = catalogs.iter().map(|cat| {
            (
                cat,
                Err::<Arc<PackageContent>, FetchError>(cat.name.clone().into()),
            )
        });
        let err = lifting_versions_fetched(&f, None, CUR, fetched).unwrap_err();
        assert!(
            matches!(err, ResolveError::GetPackage { ref catalog, .. } if catalog == "a"),
            "{err}"
        );
    }

    #[test]
    fn several_catalogs_list_each_version_once_and_errors_are_the_resolvers() {
        let catalogs = [CatalogInfo::new("a", 0), CatalogInfo::new("b", 0)];
        let c = content();
        assert_eq!(
            lifting_versions(&filter(&["stable"], None), None, CUR, &catalogs, |_| Ok(
                c.clone()
            ))
            .unwrap(),
            ["2.0.0", "1.2.0", "1.1.0"]
        );
        let err = lifting_versions(&filter(&[], None), None, CUR, &catalogs, |cat| {
            if cat.name == "b" {
                Err("connection refused".into())
            } else {
                Ok(c.clone())
            }
        })
        .unwrap_err();
        assert!(
            matches!(err, ResolveError::GetPackage { ref catalog, .. } if catalog == "b"),
            "{err}"
        );
        let err = lifting_versions(
            &filter(&[], Some("not a range")),
            None,
            CUR,
            &catalogs,
            |_| Ok(c.clone()),
        )
        .unwrap_err();
        assert!(
            matches!(err, ResolveError::InvalidVersionRange { .. }),
            "{err}"
        );
    }
}
