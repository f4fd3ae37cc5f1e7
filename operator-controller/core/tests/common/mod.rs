//! Shared test fixtures: package content from JSON text, the upstream `genPackage` fixture, and a
//! resolver driven over in-memory catalogs.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use olm_api::fbc::{WalkError, walk_metas_dir, walk_metas_reader};
use olm_api::v1::{CatalogFilter, UpgradeConstraintPolicy};
use olm_operator_core::resolve::explain::{Contents, Explanation, explain};
use olm_operator_core::resolve::{
    CatalogInfo, InstalledBundle, PackageContent, Resolution, ResolveError, resolve,
};

/// `testdata/<relative>` (see olm-testdata).
pub fn testdata(relative: &str) -> PathBuf {
    olm_testdata::path(relative)
}

/// Package `package`'s content from a JSON stream of catalog objects.
pub fn content(package: &str, json: &str) -> Arc<PackageContent> {
    let mut b = PackageContent::builder(package);
    walk_metas_reader(json.as_bytes(), "fixture", |m| {
        b.push(m).map_err(WalkError::callback)
    })
    .unwrap();
    Arc::new(b.finish())
}

/// Package `package`'s content from a catalog directory, every file parsed (the IO-side directory
/// source pre-filters files; this loader reads all of them).
pub fn dir_package(dir: &std::path::Path, package: &str) -> Arc<PackageContent> {
    let mut b = PackageContent::builder(package);
    walk_metas_dir(dir, |m| b.push(m).map_err(WalkError::callback)).unwrap();
    Arc::new(b.finish())
}

pub fn empty(package: &str) -> Arc<PackageContent> {
    Arc::new(PackageContent::empty(package))
}

/// Upstream's bundle name for a version: `<pkg>.v<version>`.
pub fn bundle_name(pkg: &str, version: &str) -> String {
    format!("{pkg}.v{version}")
}

/// An `olm.bundle` with only an `olm.package` property, as upstream's `genBundle`.
pub fn bundle(pkg: &str, version: &str) -> String {
    format!(
        r#"{{"schema":"olm.bundle","name":"{name}","package":"{pkg}","image":"registry.example/{pkg}:{version}","properties":[{{"type":"olm.package","value":{{"packageName":"{pkg}","version":"{version}"}}}}]}}"#,
        name = bundle_name(pkg, version)
    )
}

/// An `olm.channel`; each entry is (version, replaces, skips, skipRange) with bundle names built
/// from versions.
pub fn channel(pkg: &str, name: &str, entries: &[(&str, &str, &[&str], &str)]) -> String {
    let entries: Vec<String> = entries
        .iter()
        .map(|(v, replaces, skips, skip_range)| {
            let mut e = serde_json::json!({ "name": bundle_name(pkg, v) });
            if !replaces.is_empty() {
                e["replaces"] = bundle_name(pkg, replaces).into();
            }
            if !skips.is_empty() {
                e["skips"] = skips
                    .iter()
                    .map(|s| bundle_name(pkg, s))
                    .collect::<Vec<_>>()
                    .into();
            }
            if !skip_range.is_empty() {
                e["skipRange"] = (*skip_range).into();
            }
            e.to_string()
        })
        .collect();
    format!(
        r#"{{"schema":"olm.channel","package":"{pkg}","name":"{name}","entries":[{}]}}"#,
        entries.join(",")
    )
}

/// `olm.deprecations` deprecating the given bundle versions (message `bundle <name> is deprecated`).
pub fn bundle_deprecations(pkg: &str, versions: &[&str]) -> String {
    let entries: Vec<String> = versions
        .iter()
        .map(|v| {
            let n = bundle_name(pkg, v);
            format!(
                r#"{{"reference":{{"schema":"olm.bundle","name":"{n}"}},"message":"bundle {n} is deprecated"}}"#
            )
        })
        .collect();
    format!(
        r#"{{"schema":"olm.deprecations","package":"{pkg}","entries":[{}]}}"#,
        entries.join(",")
    )
}

/// Upstream's `genPackage` fixture (resolve/catalog_test.go), see the scenarios file §4.
pub fn gen_package_json(pkg: &str) -> String {
    let mut lines = vec![format!(r#"{{"schema":"olm.package","name":"{pkg}"}}"#)];
    lines.push(channel(
        pkg,
        "alpha",
        &[
            ("0.1.0", "", &[], ""),
            ("1.0.0", "", &[], "<1.0.0"),
            ("1.0.1", "", &[], "<1.0.1"),
            ("1.0.2", "", &[], "<1.0.2"),
            ("2.0.0", "", &[], ">=1.0.0 <2.0.0"),
        ],
    ));
    lines.push(channel(
        pkg,
        "beta",
        &[("0.1.0", "", &[], ""), ("1.0.2", "", &[], "<1.0.2")],
    ));
    lines.push(channel(
        pkg,
        "gamma",
        &[("3.0.0", "", &[], ">=2.0.0 <3.0.0")],
    ));
    for v in ["0.1.0", "1.0.0", "1.0.1", "1.0.2", "2.0.0", "3.0.0"] {
        lines.push(bundle(pkg, v));
    }
    lines.push(bundle_deprecations(pkg, &["1.0.0", "1.0.1"]));
    lines.join("\n")
}

pub fn gen_package(pkg: &str) -> Arc<PackageContent> {
    content(pkg, &gen_package_json(pkg))
}

pub fn filter(
    pkg: &str,
    channels: &[&str],
    version: &str,
    policy: UpgradeConstraintPolicy,
) -> CatalogFilter {
    CatalogFilter {
        package_name: pkg.to_owned(),
        version: (!version.is_empty()).then(|| version.to_owned()),
        channels: channels.iter().map(|c| c.to_string()).collect(),
        selector: None,
        upgrade_constraint_policy: policy,
    }
}

pub fn installed(name: &str, version: &str) -> InstalledBundle {
    InstalledBundle {
        name: name.to_owned(),
        version: version.to_owned(),
        release: None,
    }
}

/// Resolves over in-memory catalogs (content by catalog name). Every call also explains the
/// resolution and checks the explanation against the answer ([`check_explanation`]).
pub fn resolve_in(
    filter: &CatalogFilter,
    installed: Option<&InstalledBundle>,
    catalogs: &[(CatalogInfo, Arc<PackageContent>)],
) -> Result<Resolution, ResolveError> {
    let result = resolve_only(filter, installed, catalogs);
    check_explanation(filter, installed, catalogs, &result);
    result
}

/// [`resolve_in`] without the explanation check.
pub fn resolve_only(
    filter: &CatalogFilter,
    installed: Option<&InstalledBundle>,
    catalogs: &[(CatalogInfo, Arc<PackageContent>)],
) -> Result<Resolution, ResolveError> {
    let infos: Vec<CatalogInfo> = catalogs.iter().map(|(c, _)| c.clone()).collect();
    resolve(filter, installed, &infos, |c| {
        Ok(catalogs
            .iter()
            .find(|(info, _)| info.name == c.name)
            .map(|(_, content)| content.clone())
            .unwrap())
    })
}

/// The reason codes an explanation may use.
pub const REASON_CODES: [&str; 9] = [
    "NotInRequestedChannel",
    "OutsideVersionRange",
    "NotASuccessor",
    "HigherVersionChosen",
    "LowerCatalogPriority",
    "CatalogNotSelected",
    "Deprecated",
    "SameVersionInstalled",
    "ResolutionFailed",
];

/// Explains the resolution and checks the explanation against `resolved` (the resolver's
/// answer for the same inputs): the same bundle or the same failure message, every bundle of
/// every catalog listed once, reasons exactly on the bundles not chosen, codes from
/// [`REASON_CODES`], and an upgrade path whose every step is the resolver's answer from the
/// step before.
pub fn check_explanation(
    filter: &CatalogFilter,
    installed: Option<&InstalledBundle>,
    catalogs: &[(CatalogInfo, Arc<PackageContent>)],
    resolved: &Result<Resolution, ResolveError>,
) -> Explanation {
    let infos: Vec<CatalogInfo> = catalogs.iter().map(|(c, _)| c.clone()).collect();
    let contents: Contents = catalogs
        .iter()
        .map(|(c, content)| (c.name.clone(), Ok(content.clone())))
        .collect();
    let e = explain(filter, installed, &infos, &contents);
    let context = || format!("{filter:?} installed {installed:?}");
    match (&e.outcome, resolved) {
        (Ok(a), Ok(b)) => {
            assert_eq!(
                (&a.bundle.name, &a.catalog, a.status_version()),
                (&b.bundle.name, &b.catalog, b.status_version()),
                "{}",
                context()
            );
            let chosen = e.chosen().expect("the chosen bundle is listed");
            assert_eq!(
                (&chosen.name, &chosen.catalog),
                (&b.bundle.name, &b.catalog)
            );
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{}", context());
            assert!(e.chosen().is_none(), "{}", context());
        }
        (a, b) => panic!(
            "explain {:?} and resolve {:?} disagree: {}",
            a.as_ref()
                .map(|r| &r.bundle.name)
                .map_err(|e| e.to_string()),
            b.as_ref()
                .map(|r| &r.bundle.name)
                .map_err(|e| e.to_string()),
            context()
        ),
    }
    let mut listed = std::collections::BTreeMap::new();
    for c in &e.candidates {
        *listed
            .entry((c.catalog.clone(), c.name.clone()))
            .or_insert(0) += 1;
        assert_eq!(c.chosen, c.reasons.is_empty(), "{c:?} {}", context());
        for r in &c.reasons {
            assert!(REASON_CODES.contains(&r.code.as_str()), "{r:?}");
            assert!(r.message.ends_with('.') && r.message.len() > 20, "{r:?}");
        }
    }
    assert!(listed.values().all(|n| *n == 1), "{listed:?}");
    let expected: std::collections::BTreeMap<(String, String), i32> = catalogs
        .iter()
        .flat_map(|(c, content)| {
            content
                .bundles()
                .iter()
                .map(|b| ((c.name.clone(), b.bundle.name.clone()), 1))
        })
        .collect();
    assert_eq!(listed, expected, "{}", context());
    assert_eq!(e.chosen().is_some(), resolved.is_ok());
    match (installed, &e.upgrade_path) {
        (None, None) => {}
        (Some(i), Some(path)) => {
            assert_eq!(path[0], i.name);
            match resolved {
                Ok(r) if r.bundle.name != i.name => {
                    assert_eq!(path.get(1), Some(&r.bundle.name), "{path:?}")
                }
                _ => assert!(path.len() <= 1 || path[1] != i.name, "{path:?}"),
            }
            // Each later step is the resolver's answer from the step before.
            for w in path.windows(2).skip(1) {
                let from = e
                    .candidates
                    .iter()
                    .find(|c| c.name == w[0])
                    .expect("a path step is a listed bundle");
                let step = resolve_only(
                    filter,
                    Some(&InstalledBundle {
                        name: from.name.clone(),
                        version: from.version.clone(),
                        release: None,
                    }),
                    catalogs,
                );
                assert_eq!(
                    step.map(|r| r.bundle.name).ok().as_ref(),
                    Some(&w[1]),
                    "{path:?}"
                );
            }
        }
        (i, p) => panic!("installed {i:?} but upgrade path {p:?}"),
    }
    e
}

/// Catalog `name` with priority 0 holding `content`.
pub fn cat(name: &str, content: Arc<PackageContent>) -> (CatalogInfo, Arc<PackageContent>) {
    (CatalogInfo::new(name, 0), content)
}

/// Catalogs a and b empty, c holding `genPackage`, as most upstream resolver tests use.
pub fn abc(pkg: &str) -> Vec<(CatalogInfo, Arc<PackageContent>)> {
    vec![
        cat("a", empty(pkg)),
        cat("b", empty(pkg)),
        cat("c", gen_package(pkg)),
    ]
}

/// The chosen bundle's version as the status shows it.
pub fn version_of(r: &Result<Resolution, ResolveError>) -> String {
    match r {
        Ok(r) => r.status_version(),
        Err(e) => panic!("resolution failed: {e}"),
    }
}

pub fn error_of(r: Result<Resolution, ResolveError>) -> String {
    match r {
        Ok(r) => panic!("expected an error, got {}", r.bundle.name),
        Err(e) => e.to_string(),
    }
}

// Read at run time, not with env!: the cached target dir may hold a build from another checkout.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .expect("set by cargo")
        .into()
}
