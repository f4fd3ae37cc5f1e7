//! Every scenario of `testdata/conformance/upstream-resolution-scenarios.md` (upstream's
//! resolver, successor, ordering and version tests, written as data) and the examples of the
//! OLM product documentation (the classic and v1 guides' resolution examples), run against the real resolver.
#![allow(clippy::unwrap_used)]

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use olm_api::v1::{METADATA_NAME_LABEL, UpgradeConstraintPolicy};
use olm_operator_core::resolve::content::bundle_version;
use olm_operator_core::resolve::filter::{CandidateRules, Successors};
use olm_operator_core::resolve::{
    CatalogInfo, InstalledBundle, PackageContent, ResolveError, Resolver, resolve,
};

use UpgradeConstraintPolicy::{CatalogProvided as CP, SelfCertified as SC};

const PKG: &str = "pkg-x1y2z";

fn pkg_deprecation_names(r: &olm_operator_core::resolve::Resolution) -> Vec<String> {
    r.deprecation
        .as_ref()
        .unwrap()
        .entries
        .iter()
        .map(|e| e.reference.name.clone())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// §1 TestSuccessorsPredicate and §2 TestLegacySuccessor: the successor rule over all bundles.

fn successors_fixture() -> Arc<PackageContent> {
    let p = "test-package";
    let lines = [
        channel(
            p,
            "stable",
            &[
                ("2.0.0", "", &[], ""),
                ("2.1.0", "2.0.0", &[], ""),
                ("2.2.0", "2.1.0", &["2.0.0+1"], ""),
                ("2.2.1", "", &[], ""),
                ("2.3.0", "2.2.0", &["2.2.1"], ""),
                ("2.4.0", "", &[], ">=2.3.0 <2.4.0"),
            ],
        ),
        bundle(p, "2.0.0"),
        // In no channel.
        bundle(p, "2.0.0+1"),
        bundle(p, "2.1.0"),
        bundle(p, "2.2.0"),
        bundle(p, "2.2.1"),
        bundle(p, "2.3.0"),
        bundle(p, "2.4.0"),
    ];
    content(p, &lines.join("\n"))
}

/// Names of every bundle the successor rule admits, best first.
fn successors(content: &PackageContent, installed: &InstalledBundle) -> Vec<String> {
    let s = Successors::new(installed).unwrap();
    let rules = CandidateRules {
        channels: &[],
        range: None,
        successors: Some(&s),
    };
    rules
        .candidates(content)
        .iter()
        .map(|b| content.bundles()[b.index].bundle.name.clone())
        .collect()
}

fn with_release(name: &str, version: &str, release: &str) -> InstalledBundle {
    InstalledBundle {
        release: Some(release.to_owned()),
        ..installed(name, version)
    }
}

#[test]
fn replaces_makes_a_successor_and_the_installed_bundle_stays_eligible() {
    let c = successors_fixture();
    assert_eq!(
        successors(&c, &installed("test-package.v2.0.0", "2.0.0")),
        ["test-package.v2.1.0", "test-package.v2.0.0"]
    );
}

#[test]
fn skips_makes_a_successor() {
    let c = successors_fixture();
    assert_eq!(
        successors(&c, &installed("test-package.v2.2.1", "2.2.1")),
        ["test-package.v2.3.0", "test-package.v2.2.1"]
    );
}

#[test]
fn skip_range_makes_a_successor() {
    let c = successors_fixture();
    assert_eq!(
        successors(&c, &installed("test-package.v2.3.0", "2.3.0")),
        ["test-package.v2.4.0", "test-package.v2.3.0"]
    );
}

#[test]
fn build_metadata_is_a_release_and_names_match_exactly() {
    // 2.0.0+1 is version 2.0.0 release 1: only it equals itself, and v2.1.0 (which replaces
    // v2.0.0, not v2.0.0+1) is not a successor.
    let c = successors_fixture();
    assert_eq!(
        successors(&c, &installed("test-package.v2.0.0+1", "2.0.0+1")),
        ["test-package.v2.2.0", "test-package.v2.0.0+1"]
    );
}

#[test]
fn an_unknown_installed_bundle_has_no_successors() {
    let c = successors_fixture();
    assert!(successors(&c, &installed("test-package.v9.0.0", "9.0.0")).is_empty());
}

#[test]
fn an_explicit_installed_release_is_compared_as_a_release() {
    let c = successors_fixture();
    assert!(successors(&c, &with_release("test-package.v1.0.0", "1.0.0", "2")).is_empty());
    // With an explicit (empty) release, build metadata stays build metadata.
    assert!(
        successors(
            &c,
            &with_release("test-package.v1.0.0+git", "1.0.0+git", "")
        )
        .is_empty()
    );
}

#[test]
fn edges_are_not_transitive_and_nameless_bundles_succeed_nothing() {
    let p = "package1";
    let lines = [
        channel(
            p,
            "",
            &[
                ("0.0.2", "0.0.1", &[], ""),
                ("0.0.3", "0.0.2", &[], ""),
                ("0.0.4", "", &["0.0.1"], ""),
                ("0.0.5", "", &[], "<=0.0.1"),
            ],
        ),
        bundle(p, "0.0.2"),
        bundle(p, "0.0.3"),
        bundle(p, "0.0.4"),
        bundle(p, "0.0.5"),
        r#"{"schema":"olm.bundle","name":"","package":"package1","properties":[{"type":"olm.package","value":{"packageName":"package1","version":"0.0.9"}}]}"#.to_owned(),
    ];
    let c = content(p, &lines.join("\n"));
    assert_eq!(
        successors(&c, &installed("package1.v0.0.1", "0.0.1")),
        ["package1.v0.0.5", "package1.v0.0.4", "package1.v0.0.2"]
    );
}

// ---------------------------------------------------------------------------------------------
// §3 installed-version parse errors.

fn upgrade_error(installed: &InstalledBundle) -> String {
    error_of(resolve_in(
        &filter(PKG, &[], "", CP),
        Some(installed),
        &abc(PKG),
    ))
}

#[test]
fn an_unreadable_installed_version_fails_the_resolution() {
    assert_eq!(
        upgrade_error(&installed("x", "invalid-version")),
        "error walking catalogs: error finding upgrade edges: failed to get version and release \
         of installed bundle: No Major.Minor.Patch elements found"
    );
    assert!(
        upgrade_error(&with_release("x", "invalid-version", "1"))
            .contains("failed to parse installed bundle version")
    );
    assert!(
        upgrade_error(&with_release("x", "1.0.0", "001"))
            .contains("failed to parse installed bundle version and release")
    );
}

#[test]
fn the_installed_version_is_only_read_when_some_catalog_has_the_package() {
    // Upstream computes upgrade edges per catalog that has the package; with none, the plain
    // "no bundles found" answer comes first.
    let catalogs = vec![cat("a", empty(PKG))];
    assert_eq!(
        error_of(resolve_in(
            &filter(PKG, &[], "", CP),
            Some(&installed("x", "invalid-version")),
            &catalogs
        )),
        format!(
            r#"error upgrading from currently installed version "invalid-version": no bundles found for package "{PKG}""#
        )
    );
    // SelfCertified never reads it.
    let r = resolve_in(
        &filter(PKG, &[], "", SC),
        Some(&installed("x", "invalid-version")),
        &abc(PKG),
    );
    assert_eq!(version_of(&r), "3.0.0");
}

// ---------------------------------------------------------------------------------------------
// §4 the resolver over `genPackage` (catalogs a and b empty, c holding the package).

fn run4(
    channels: &[&str],
    version: &str,
    policy: UpgradeConstraintPolicy,
    installed_bundle: Option<InstalledBundle>,
) -> Result<olm_operator_core::resolve::Resolution, ResolveError> {
    resolve_in(
        &filter(PKG, channels, version, policy),
        installed_bundle.as_ref(),
        &abc(PKG),
    )
}

#[test]
fn invalid_version_range_is_reported_with_masterminds_text() {
    assert_eq!(
        error_of(run4(&[], "foobar", CP, None)),
        r#"desired version range "foobar" is invalid: improper constraint: "foobar""#
    );
}

#[test]
fn package_does_not_exist() {
    let catalogs = vec![
        cat("a", empty(PKG)),
        cat("b", empty(PKG)),
        cat("c", empty(PKG)),
    ];
    assert_eq!(
        error_of(resolve_in(&filter(PKG, &[], "", CP), None, &catalogs)),
        format!(r#"no bundles found for package "{PKG}""#)
    );
}

#[test]
fn package_exists_and_the_highest_version_wins_even_outside_any_requested_channel() {
    let r = run4(&[], "", CP, None).unwrap();
    assert_eq!(r.status_version(), "3.0.0");
    assert_eq!(r.bundle.name, bundle_name(PKG, "3.0.0"));
    assert_eq!(r.catalog, "c");
    assert_eq!(
        pkg_deprecation_names(&r),
        [bundle_name(PKG, "1.0.0"), bundle_name(PKG, "1.0.1")]
    );
}

#[test]
fn version_does_not_exist() {
    assert_eq!(
        error_of(run4(&[], "4.0.0", CP, None)),
        format!(r#"no bundles found for package "{PKG}" matching version "4.0.0""#)
    );
}

#[test]
fn version_exists() {
    assert_eq!(version_of(&run4(&[], ">=1.0.0 <2.0.0", CP, None)), "1.0.2");
}

#[test]
fn channel_does_not_exist() {
    assert_eq!(
        error_of(run4(&["stable"], "", CP, None)),
        format!(r#"no bundles found for package "{PKG}" in channels [stable]"#)
    );
}

#[test]
fn channel_exists() {
    assert_eq!(version_of(&run4(&["beta"], "", CP, None)), "1.0.2");
}

#[test]
fn channel_exists_but_not_version() {
    assert_eq!(
        error_of(run4(&["beta"], "3.0.0", CP, None)),
        format!(
            r#"no bundles found for package "{PKG}" matching version "3.0.0" in channels [beta]"#
        )
    );
}

#[test]
fn version_exists_but_not_channel() {
    assert_eq!(
        error_of(run4(&["stable"], "1.0.0", CP, None)),
        format!(
            r#"no bundles found for package "{PKG}" matching version "1.0.0" in channels [stable]"#
        )
    );
}

#[test]
fn channel_and_version_exist() {
    assert_eq!(version_of(&run4(&["alpha"], "0.1.0", CP, None)), "0.1.0");
}

#[test]
fn a_lower_non_deprecated_bundle_beats_a_higher_deprecated_one() {
    // 1.0.0 is higher but deprecated.
    assert_eq!(version_of(&run4(&[], ">=0.1.0 <=1.0.0", CP, None)), "0.1.0");
}

#[test]
fn when_every_candidate_is_deprecated_the_highest_wins() {
    assert_eq!(version_of(&run4(&[], ">=1.0.0 <=1.0.1", CP, None)), "1.0.1");
}

#[test]
fn upgrade_follows_skip_range_edges() {
    // 0.1.0 -> 1.0.2 via skipRange "<1.0.2"; 1.0.0 and 1.0.1 are successors too but deprecated,
    // and 2.0.0 (">=1.0.0 <2.0.0") and 3.0.0 do not cover 0.1.0.
    let r = run4(
        &[],
        "",
        CP,
        Some(installed(&bundle_name(PKG, "0.1.0"), "0.1.0")),
    );
    assert_eq!(version_of(&r), "1.0.2");
}

#[test]
fn upgrade_not_found_is_reported_with_the_installed_version() {
    assert_eq!(
        error_of(run4(
            &[],
            "<1.0.0 >=2.0.0",
            CP,
            Some(installed(&bundle_name(PKG, "0.1.0"), "0.1.0"))
        )),
        format!(
            r#"error upgrading from currently installed version "0.1.0": no bundles found for package "{PKG}" matching version "<1.0.0 >=2.0.0""#
        )
    );
}

#[test]
fn self_certified_allows_a_downgrade() {
    // <1.0.2 admits 0.1.0, 1.0.0, 1.0.1; the last two are deprecated.
    let r = run4(
        &[],
        "<1.0.2",
        SC,
        Some(installed(&bundle_name(PKG, "1.0.2"), "1.0.2")),
    );
    assert_eq!(version_of(&r), "0.1.0");
}

#[test]
fn self_certified_downgrade_not_found() {
    assert_eq!(
        error_of(run4(
            &[],
            ">0.1.0 <1.0.0",
            SC,
            Some(installed(&bundle_name(PKG, "1.0.2"), "1.0.2"))
        )),
        format!(
            r#"error upgrading from currently installed version "1.0.2": no bundles found for package "{PKG}" matching version ">0.1.0 <1.0.0""#
        )
    );
}

#[test]
fn several_channels_pool_their_bundles() {
    // 3.0.0 is only in gamma.
    assert_eq!(version_of(&run4(&["beta", "alpha"], "", CP, None)), "2.0.0");
}

#[test]
fn the_error_lists_channels_in_the_order_given() {
    assert_eq!(
        error_of(run4(&["stable", "beta"], "9.0.0", CP, None)),
        format!(
            r#"no bundles found for package "{PKG}" matching version "9.0.0" in channels [stable beta]"#
        )
    );
}

#[test]
fn without_filters_the_candidates_from_0_1_0_are_itself_and_its_skip_range_successors() {
    // Derived check of §4: candidates {0.1.0, 1.0.0, 1.0.1, 1.0.2}; restricting to <1.0.2 leaves
    // 0.1.0 (self) and the deprecated 1.0.0/1.0.1, so staying wins.
    let r = run4(
        &[],
        "<1.0.2",
        CP,
        Some(installed(&bundle_name(PKG, "0.1.0"), "0.1.0")),
    );
    assert_eq!(version_of(&r), "0.1.0");
    // Channel gamma's only entry does not cover 0.1.0, and 0.1.0 itself is not in gamma.
    assert!(
        run4(
            &["gamma"],
            "",
            CP,
            Some(installed(&bundle_name(PKG, "0.1.0"), "0.1.0"))
        )
        .is_err()
    );
}

#[test]
fn upgrade_edges_of_unselected_channels_do_not_count() {
    // 1.0.2 covers 0.1.0 via skipRange in alpha and beta; the "gamma"-only view has no edge,
    // and when only beta is selected 1.0.2 is still reachable.
    let from = Some(installed(&bundle_name(PKG, "0.1.0"), "0.1.0"));
    assert_eq!(version_of(&run4(&["beta"], "", CP, from.clone())), "1.0.2");
    // A channel with the bundle but not the edge: 2.0.0 is a successor of 1.0.2 in alpha only.
    let p = "edge";
    let lines = [
        channel(
            p,
            "fast",
            &[("1.0.0", "", &[], ""), ("2.0.0", "1.0.0", &[], "")],
        ),
        channel(p, "slow", &[("1.0.0", "", &[], ""), ("2.0.0", "", &[], "")]),
        bundle(p, "1.0.0"),
        bundle(p, "2.0.0"),
    ];
    let catalogs = vec![cat("c", content(p, &lines.join("\n")))];
    let inst = installed(&bundle_name(p, "1.0.0"), "1.0.0");
    let via = |channels: &[&str]| {
        version_of(&resolve_in(
            &filter(p, channels, "", CP),
            Some(&inst),
            &catalogs,
        ))
    };
    assert_eq!(via(&["fast"]), "2.0.0");
    assert_eq!(via(&["slow"]), "1.0.0");
    assert_eq!(via(&[]), "2.0.0");
}

#[test]
fn a_bundle_with_dependencies_is_rejected_after_being_chosen() {
    for property in ["olm.package.required", "olm.gvk.required", "olm.constraint"] {
        let p = "dep";
        let lines = [
            r#"{"schema":"olm.bundle","name":"dep.v1.0.0","package":"dep","properties":[{"type":"olm.package","value":{"packageName":"dep","version":"1.0.0"}}]}"#.to_owned(),
            format!(
                r#"{{"schema":"olm.bundle","name":"fake-catalog/{property}/alpha/2.0.0","package":"dep","properties":[{{"type":"olm.package","value":{{"packageName":"dep","version":"2.0.0"}}}},{{"type":"{property}","value":"content-is-not-relevant"}}]}}"#
            ),
        ];
        let catalogs = vec![cat("c", content(p, &lines.join("\n")))];
        assert_eq!(
            error_of(resolve_in(&filter(p, &[], "", CP), None, &catalogs)),
            format!(
                r#"validating bundle "fake-catalog/{property}/alpha/2.0.0": bundle "fake-catalog/{property}/alpha/2.0.0" has a dependency declared via property "{property}" which is currently not supported"#
            )
        );
        // Constraining the query away from it resolves.
        assert_eq!(
            version_of(&resolve_in(&filter(p, &[], "<2", CP), None, &catalogs)),
            "1.0.0"
        );
    }
}

#[test]
fn a_fetch_error_names_the_package_and_catalog() {
    let infos = vec![CatalogInfo::new("a", 0)];
    let r = resolve(&filter(PKG, &[], "", CP), None, &infos, |_| {
        Err("fake error".into())
    });
    assert_eq!(
        error_of(r),
        format!(
            r#"error walking catalogs: error getting package "{PKG}" from catalog "a": fake error"#
        )
    );
}

// ---------------------------------------------------------------------------------------------
// §5 TestPackageVariationsBetweenCatalogs.

fn variation(
    contents: [(&str, &[&str], &[&str]); 6],
    names: [&str; 6],
) -> Vec<(CatalogInfo, Arc<PackageContent>)> {
    contents
        .iter()
        .zip(names)
        .map(|((_, versions, deprecated), name)| {
            let mut lines = Vec::new();
            if !versions.is_empty() {
                lines.push(format!(r#"{{"schema":"olm.package","name":"{PKG}"}}"#));
            }
            lines.extend(versions.iter().map(|v| bundle(PKG, v)));
            if !deprecated.is_empty() {
                lines.push(bundle_deprecations(PKG, deprecated));
            }
            cat(name, content(PKG, &lines.join("\n")))
        })
        .collect()
}

#[test]
fn catalog_variations_resolve_the_same_whatever_catalog_holds_which_content() {
    // Content labelled by upstream's catalog names a..f; each permutation gives the same content
    // other catalog names (and so another walk order).
    let contents: [(&str, &[&str], &[&str]); 6] = [
        ("a", &[], &[]),
        ("b", &["1.0.0"], &["1.0.0"]),
        ("c", &["1.0.1"], &["1.0.1"]),
        ("d", &["1.0.2"], &[]),
        ("e", &["1.0.3"], &["1.0.3"]),
        ("f", &["1.0.4", "1.0.5"], &[]),
    ];
    let permutations = [
        ["a", "b", "c", "d", "e", "f"],
        ["f", "e", "d", "c", "b", "a"],
        ["c", "a", "f", "b", "e", "d"],
        ["b", "d", "a", "f", "c", "e"],
    ];
    for names in permutations {
        let catalogs = variation(contents, names);
        // Upstream label -> actual catalog name in this permutation.
        let named = |label: &str| {
            let i = contents.iter().position(|c| c.0 == label).unwrap();
            names[i].to_owned()
        };
        let run = |range: &str| resolve_in(&filter(PKG, &[], range, CP), None, &catalogs);

        let r = run(">=1.0.0 <=1.0.3").unwrap();
        assert_eq!(
            (r.status_version(), r.catalog.clone()),
            ("1.0.2".into(), named("d"))
        );
        assert!(r.deprecation.is_none());

        let mut bc = [named("b"), named("c")];
        bc.sort();
        assert!(
            error_of(run(">=1.0.0 <=1.0.1")).ends_with(&format!(
                "in multiple catalogs with the same priority [{} {}]",
                bc[0], bc[1]
            )),
            "{names:?}"
        );

        let mut df = [named("d"), named("f")];
        df.sort();
        assert_eq!(
            error_of(run(">=1.0.0 <=1.0.4")),
            format!(
                r#"found bundles for package "{PKG}" matching version ">=1.0.0 <=1.0.4" in multiple catalogs with the same priority [{} {}]"#,
                df[0], df[1]
            )
        );

        let r = run(">=1.0.4 <=1.0.5").unwrap();
        assert_eq!(
            (r.status_version(), r.catalog.clone()),
            ("1.0.5".into(), named("f"))
        );
        assert!(r.deprecation.is_none());
    }
}

// ---------------------------------------------------------------------------------------------
// §6 priority, selectors, availability.

#[test]
fn priority_beats_a_higher_version() {
    let a = content(
        PKG,
        &[
            channel(PKG, "alpha", &[("1.0.0", "", &[], "")]),
            bundle(PKG, "1.0.0"),
        ]
        .join("\n"),
    );
    let b = content(
        PKG,
        &[
            channel(PKG, "alpha", &[("1.1.0", "", &[], "")]),
            bundle(PKG, "1.1.0"),
        ]
        .join("\n"),
    );
    let catalogs = vec![(CatalogInfo::new("a", 1), a), (CatalogInfo::new("b", 0), b)];
    let r = resolve_in(&filter(PKG, &[], "", CP), None, &catalogs).unwrap();
    assert_eq!(
        (r.status_version(), r.catalog.as_str()),
        ("1.0.0".into(), "a")
    );
}

#[test]
fn a_tie_at_the_top_priority_lists_every_catalog_with_a_pick() {
    let catalogs = vec![
        (CatalogInfo::new("a", 1), gen_package(PKG)),
        (CatalogInfo::new("b", 0), gen_package(PKG)),
        (CatalogInfo::new("c", 1), gen_package(PKG)),
    ];
    assert_eq!(
        error_of(resolve_in(
            &filter(PKG, &[], ">=1.0.0 <=1.0.1", CP),
            None,
            &catalogs
        )),
        format!(
            r#"found bundles for package "{PKG}" matching version ">=1.0.0 <=1.0.1" in multiple catalogs with the same priority [a b c]"#
        )
    );
}

#[test]
fn ambiguity_with_an_installed_bundle_keeps_the_upgrade_prefix() {
    let catalogs = vec![cat("b", gen_package(PKG)), cat("c", gen_package(PKG))];
    assert_eq!(
        error_of(resolve_in(
            &filter(PKG, &["alpha"], "", CP),
            Some(&installed(&bundle_name(PKG, "1.0.0"), "1.0.0")),
            &catalogs
        )),
        format!(
            r#"error upgrading from currently installed version "1.0.0": found bundles for package "{PKG}" in channels [alpha] in multiple catalogs with the same priority [b c]"#
        )
    );
}

fn counting_resolve(
    f: &olm_api::v1::CatalogFilter,
    infos: &[CatalogInfo],
    content: impl Fn(&str) -> Arc<PackageContent>,
) -> (
    Result<olm_operator_core::resolve::Resolution, ResolveError>,
    Vec<String>,
) {
    let fetched = RefCell::new(Vec::new());
    let r = resolve(f, None, infos, |c| {
        fetched.borrow_mut().push(c.name.clone());
        Ok(content(&c.name))
    });
    (r, fetched.into_inner())
}

fn name_selector(name: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([(
            METADATA_NAME_LABEL.to_owned(),
            name.to_owned(),
        )])),
        match_expressions: None,
    }
}

#[test]
fn a_label_selector_restricts_the_catalogs_and_others_are_never_fetched() {
    let infos = vec![CatalogInfo::new("a", 0), CatalogInfo::new("b", 0)];
    let mut f = filter(PKG, &[], "", CP);
    f.selector = Some(name_selector("b"));
    let (r, fetched) = counting_resolve(&f, &infos, |_| gen_package(PKG));
    assert_eq!(r.unwrap().catalog, "b");
    assert_eq!(fetched, ["b"]);

    f.selector = Some(name_selector("a"));
    let (r, fetched) = counting_resolve(&f, &infos, |name| {
        if name == "a" {
            empty(PKG)
        } else {
            gen_package(PKG)
        }
    });
    assert_eq!(
        error_of(r),
        format!(r#"no bundles found for package "{PKG}""#)
    );
    assert_eq!(fetched, ["a"]);
}

#[test]
fn an_invalid_selector_operator_is_reported_with_upstreams_text() {
    let mut f = filter("foo", &[], "", CP);
    f.selector = Some(LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "name".into(),
            operator: "bad".into(),
            values: Some(vec!["value".into()]),
        }]),
    });
    assert_eq!(
        error_of(resolve_in(&f, None, &[cat("a", gen_package("foo"))])),
        r#"desired catalog selector is invalid: "bad" is not a valid label selector operator"#
    );
}

#[test]
fn invalid_selector_labels_are_reported_with_upstreams_text() {
    let mut f = filter("foo", &[], "", CP);
    f.selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("".to_owned(), "value".to_owned())])),
        match_expressions: None,
    });
    let e = error_of(resolve_in(&f, None, &[cat("a", gen_package("foo"))]));
    assert!(e.starts_with("desired catalog selector is invalid: key: Invalid value: \"\": name part must be non-empty"), "{e}");

    f.selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("name".to_owned(), "&value".to_owned())])),
        match_expressions: None,
    });
    let e = error_of(resolve_in(&f, None, &[cat("a", gen_package("foo"))]));
    assert!(e.starts_with("desired catalog selector is invalid: values[0][name]: Invalid value: \"&value\": a valid label must be"), "{e}");
}

#[test]
fn an_invalid_selector_is_reported_before_an_invalid_version_range() {
    let mut f = filter("foo", &[], "foobar", CP);
    f.selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("".to_owned(), "v".to_owned())])),
        match_expressions: None,
    });
    assert!(
        error_of(resolve_in(&f, None, &[])).starts_with("desired catalog selector is invalid: ")
    );
}

#[test]
fn unavailable_catalogs_are_never_fetched() {
    let mut infos = vec![CatalogInfo::new("a", 0), CatalogInfo::new("b", 0)];
    for i in &mut infos {
        i.available = false;
    }
    let (r, fetched) = counting_resolve(&filter(PKG, &[], ">=1.0.0", CP), &infos, |_| {
        gen_package(PKG)
    });
    assert_eq!(
        error_of(r),
        format!(r#"no bundles found for package "{PKG}" matching version ">=1.0.0""#)
    );
    assert!(fetched.is_empty());
}

#[test]
fn an_unavailable_catalog_is_ignored_and_the_available_one_answers() {
    let mut disabled = CatalogInfo::new("disabledCatalog", 0);
    disabled.available = false;
    let infos = vec![CatalogInfo::new("enabledCatalog", 1), disabled];
    let (r, fetched) = counting_resolve(&filter(PKG, &[], ">=1.0.0", CP), &infos, |_| {
        gen_package(PKG)
    });
    assert_eq!(version_of(&r), "3.0.0");
    assert_eq!(fetched, ["enabledCatalog"]);
}

#[test]
fn catalogs_are_walked_in_name_order() {
    let infos = vec![CatalogInfo::new("b", 0), CatalogInfo::new("a", 0)];
    let f = filter(PKG, &[], "", CP);
    let resolver = Resolver::new(&f, None).unwrap();
    let order: Vec<_> = resolver
        .catalogs_to_search(&infos)
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(order, ["a", "b"]);
    let (_, fetched) = counting_resolve(&f, &infos, |_| empty(PKG));
    assert_eq!(fetched, ["a", "b"]);
}

#[test]
fn the_first_fetch_error_in_walk_order_stops_the_walk() {
    let infos = vec![
        CatalogInfo::new("c", 0),
        CatalogInfo::new("b", 0),
        CatalogInfo::new("a", 0),
    ];
    let fetched = RefCell::new(Vec::new());
    let r = resolve(&filter(PKG, &[], "", CP), None, &infos, |c| {
        fetched.borrow_mut().push(c.name.clone());
        if c.name == "a" {
            Ok(empty(PKG))
        } else {
            Err(format!("{} is down", c.name).into())
        }
    });
    assert!(error_of(r).ends_with(r#"from catalog "b": b is down"#));
    assert_eq!(fetched.into_inner(), ["a", "b"]);
}

#[test]
fn the_deprecation_returned_is_the_winning_catalogs() {
    // a (priority 1) has no deprecations, b (priority 0) deprecates the package; a wins.
    let a = content(PKG, &[bundle(PKG, "1.0.0")].join("\n"));
    let b = content(
        PKG,
        &[
            bundle(PKG, "2.0.0"),
            format!(
                r#"{{"schema":"olm.deprecations","package":"{PKG}","entries":[{{"reference":{{"schema":"olm.package"}},"message":"gone"}}]}}"#
            ),
        ]
        .join("\n"),
    );
    let catalogs = vec![(CatalogInfo::new("a", 1), a), (CatalogInfo::new("b", 0), b)];
    let r = resolve_in(&filter(PKG, &[], "", CP), None, &catalogs).unwrap();
    assert_eq!(r.catalog, "a");
    assert!(r.deprecation.is_none());
}

// ---------------------------------------------------------------------------------------------
// §7 version ranges apply to the version without its release; §8 ordering; §9 version parsing.

#[test]
fn releases_rank_above_the_plain_version_and_ranges_ignore_them() {
    let p = "rel";
    let lines = [
        bundle(p, "1.0.0"),
        bundle(p, "1.0.0+1"),
        bundle(p, "1.0.0+2"),
        bundle(p, "2.0.0"),
    ];
    let catalogs = vec![cat("c", content(p, &lines.join("\n")))];
    let run = |range: &str| version_of(&resolve_in(&filter(p, &[], range, CP), None, &catalogs));
    assert_eq!(run("1.0.0"), "1.0.0+2");
    // The status records the release folded back into build metadata, as upstream does.
    let r = resolve_in(&filter(p, &[], "1.0.0", CP), None, &catalogs).unwrap();
    assert_eq!(
        r.bundle_metadata(),
        olm_api::v1::BundleMetadata {
            name: "rel.v1.0.0+2".into(),
            version: "1.0.0+2".into()
        }
    );
    assert_eq!(run("1.0.0+1"), "1.0.0+2");
    assert_eq!(run("<2.0.0"), "1.0.0+2");
    assert_eq!(run(">=2.0.0"), "2.0.0");
    assert_eq!(run(""), "2.0.0");
}

#[test]
fn bundles_rank_by_version_then_release_with_unreadable_versions_last() {
    let p = "ord";
    let b = |name: &str, props: &str| {
        format!(
            r#"{{"schema":"olm.bundle","name":"{name}","package":"{p}","properties":[{props}]}}"#
        )
    };
    let pkg = |v: &str| {
        format!(r#"{{"type":"olm.package","value":{{"packageName":"{p}","version":"{v}"}}}}"#)
    };
    let lines = [
        b("b3_1", &pkg("1.0.0-alpha+1")),
        b(
            "b4",
            &format!(r#"{{"type":"olm.package","value":{{"packageName":"{p}"}}}}"#),
        ),
        b("b2", &pkg("0.0.1")),
        b("b3_2", &pkg("1.0.0-alpha+2")),
        b("b5", ""),
        b("b1", &pkg("1.0.0")),
    ];
    let c = content(p, &lines.join("\n"));
    let rules = CandidateRules {
        channels: &[],
        range: None,
        successors: None,
    };
    let order: Vec<_> = rules
        .candidates(&c)
        .iter()
        .map(|x| c.bundles()[x.index].bundle.name.clone())
        .collect();
    assert_eq!(order, ["b1", "b3_2", "b3_1", "b2", "b4", "b5"]);

    // A winner whose version cannot be read is an error naming it.
    let only_bad = content(
        p,
        &[b(
            "b4",
            &format!(r#"{{"type":"olm.package","value":{{"packageName":"{p}"}}}}"#),
        )]
        .join("\n"),
    );
    assert_eq!(
        error_of(resolve_in(
            &filter(p, &[], "", CP),
            None,
            &[cat("c", only_bad)]
        )),
        r#"error getting resolved bundle version for bundle "b4": Version string empty"#
    );
    let no_props = content(p, &b("b5", ""));
    assert_eq!(
        error_of(resolve_in(
            &filter(p, &[], "", CP),
            None,
            &[cat("c", no_props)]
        )),
        r#"error getting resolved bundle version for bundle "b5": no package property found in bundle "b5""#
    );
}

#[test]
fn legacy_versions_read_build_metadata_as_a_release_when_it_is_one() {
    let v = |version: &str| {
        let c = content("v", &bundle("v", version));
        bundle_version(&c.bundles()[0].bundle).unwrap()
    };
    let pre = v("1.0.0-pre+1.alpha.2");
    assert_eq!(pre.version.to_string(), "1.0.0-pre");
    assert_eq!(pre.release.unwrap().to_string(), "1.alpha.2");
    let kept = v("1.0.0+001");
    assert_eq!(kept.version.to_string(), "1.0.0+001");
    assert!(kept.release.is_none());
    // Without the release support gate an explicit release is ignored.
    let c = content(
        "v",
        r#"{"schema":"olm.bundle","name":"v","package":"v","properties":[{"type":"olm.package","value":{"packageName":"v","version":"1.0.0+2","release":"999"}}]}"#,
    );
    let x = bundle_version(&c.bundles()[0].bundle).unwrap();
    assert_eq!(
        (x.version.to_string(), x.release.unwrap().to_string()),
        ("1.0.0".into(), "2".into())
    );
}

// ---------------------------------------------------------------------------------------------
// §10 the upstream e2e test catalogs, and the product documentation's examples.

fn e2e_catalog(version: &str) -> Arc<PackageContent> {
    let dir = testdata(&format!(
        "catalogs/upstream-operator-controller/testdata/images/catalogs/test-catalog/{version}/configs"
    ));
    dir_package(&dir, "test")
}

#[test]
fn the_e2e_catalog_upgrades_one_replaces_edge_at_a_time_and_multi_head_channels_load() {
    let catalogs = vec![cat("test-catalog", e2e_catalog("v1"))];
    let from = |v: &str| {
        version_of(&resolve_in(
            &filter("test", &[], "", CP),
            Some(&installed(&format!("test-operator.{v}"), v)),
            &catalogs,
        ))
    };
    // beta: 1.0.0 <- 1.0.1 <- 1.2.0 by replaces; 1.0.4 has no edges (a second head).
    assert_eq!(from("1.0.0"), "1.0.1");
    assert_eq!(from("1.0.1"), "1.2.0");
    assert_eq!(from("1.0.4"), "1.0.4");
    assert_eq!(from("1.2.0"), "1.2.0");
    // A fresh install takes the highest version of any channel.
    assert_eq!(
        version_of(&resolve_in(&filter("test", &[], "", CP), None, &catalogs)),
        "1.2.0"
    );
    assert_eq!(
        version_of(&resolve_in(
            &filter("test", &["alpha"], "", CP),
            None,
            &catalogs
        )),
        "1.0.3"
    );
    // The e2e "non-successor update is rejected" case.
    assert_eq!(
        error_of(resolve_in(
            &filter("test", &[], "1.2.0", CP),
            Some(&installed("test-operator.1.0.0", "1.0.0")),
            &catalogs
        )),
        r#"error upgrading from currently installed version "1.0.0": no bundles found for package "test" matching version "1.2.0""#
    );
    // SelfCertified forces it.
    assert_eq!(
        version_of(&resolve_in(
            &filter("test", &[], "1.2.0", SC),
            Some(&installed("test-operator.1.0.0", "1.0.0")),
            &catalogs
        )),
        "1.2.0"
    );
}

#[test]
fn the_updated_e2e_catalog_offers_1_3_0_from_1_2_0() {
    let catalogs = vec![cat("test-catalog", e2e_catalog("v2"))];
    let r = resolve_in(
        &filter("test", &[], "", CP),
        Some(&installed("test-operator.1.2.0", "1.2.0")),
        &catalogs,
    );
    assert_eq!(version_of(&r), "1.3.0");
}

#[test]
fn v1_finds_a_skipped_bundle_that_covers_the_installed_version_by_skip_range() {
    // Seed 001: v3.0.0 skips v2.0.0; v2.0.0 has skipRange ">=1.0.0 <2.0.0". From 1.0.0, OLM v0
    // finds no path (2.0.0 is skipped and off the replaces chain); v1 finds 2.0.0.
    let p = "example";
    let lines = [
        channel(
            p,
            "stable",
            &[
                ("3.0.0", "", &["2.0.0"], ""),
                ("2.0.0", "", &[], ">=1.0.0 <2.0.0"),
            ],
        ),
        bundle(p, "1.0.0"),
        bundle(p, "2.0.0"),
        bundle(p, "3.0.0"),
    ];
    let catalogs = vec![cat("c", content(p, &lines.join("\n")))];
    let from = |v: &str| {
        version_of(&resolve_in(
            &filter(p, &[], "", CP),
            Some(&installed(&bundle_name(p, v), v)),
            &catalogs,
        ))
    };
    assert_eq!(from("1.0.0"), "2.0.0");
    assert_eq!(from("2.0.0"), "3.0.0");
}

#[test]
fn v1_picks_the_highest_successor_not_the_one_closest_to_the_head() {
    // Seed 001: with several successors v0 picks the one nearest the channel head, v1 the
    // highest version. Here 1.5.0 (nearer the head, replaces 1.0.0) and 2.0.0 (skipRange over
    // 1.0.0) both succeed 1.0.0; the head 3.0.0 only replaces 2.0.0.
    let p = "multi";
    let lines = [
        channel(
            p,
            "stable",
            &[
                ("1.0.0", "", &[], ""),
                ("2.0.0", "", &[], "<2.0.0"),
                ("1.5.0", "1.0.0", &[], ""),
                ("3.0.0", "2.0.0", &[], ""),
            ],
        ),
        bundle(p, "1.0.0"),
        bundle(p, "1.5.0"),
        bundle(p, "2.0.0"),
        bundle(p, "3.0.0"),
    ];
    let catalogs = vec![cat("c", content(p, &lines.join("\n")))];
    let r = resolve_in(
        &filter(p, &[], "", CP),
        Some(&installed(&bundle_name(p, "1.0.0"), "1.0.0")),
        &catalogs,
    );
    assert_eq!(version_of(&r), "2.0.0");
}

#[test]
fn classic_graph_examples_upgrade_one_declared_edge_at_a_time() {
    // Seed 003: 0.1.3 replaces 0.1.2 replaces 0.1.1: from 0.1.1 the next step is 0.1.2.
    let p = "example";
    let chain = [
        channel(
            p,
            "alpha",
            &[
                ("0.1.1", "", &[], ""),
                ("0.1.2", "0.1.1", &[], ""),
                ("0.1.3", "0.1.2", &[], ""),
            ],
        ),
        bundle(p, "0.1.1"),
        bundle(p, "0.1.2"),
        bundle(p, "0.1.3"),
    ];
    let catalogs = vec![cat("c", content(p, &chain.join("\n")))];
    let step = |v: &str| {
        version_of(&resolve_in(
            &filter(p, &[], "", CP),
            Some(&installed(&bundle_name(p, v), v)),
            &catalogs,
        ))
    };
    assert_eq!(step("0.1.1"), "0.1.2");
    assert_eq!(step("0.1.2"), "0.1.3");

    // etcdoperator.v0.9.2 replaces v0.9.0 and skips v0.9.1: both reach 0.9.2.
    let e = "etcdoperator";
    let skip = [
        channel(
            e,
            "alpha",
            &[("0.9.0", "", &[], ""), ("0.9.2", "0.9.0", &["0.9.1"], "")],
        ),
        bundle(e, "0.9.0"),
        bundle(e, "0.9.1"),
        bundle(e, "0.9.2"),
    ];
    let catalogs = vec![cat("c", content(e, &skip.join("\n")))];
    for from in ["0.9.0", "0.9.1"] {
        let r = resolve_in(
            &filter(e, &[], "", CP),
            Some(&installed(&bundle_name(e, from), from)),
            &catalogs,
        );
        assert_eq!(version_of(&r), "0.9.2");
    }

    // elasticsearch-operator.v4.1.2 with olm.skipRange ">=4.1.0 <4.1.2".
    let s = "elasticsearch-operator";
    let range = [
        channel(s, "4.1", &[("4.1.2", "", &[], ">=4.1.0 <4.1.2")]),
        bundle(s, "4.1.2"),
    ];
    let catalogs = vec![cat("c", content(s, &range.join("\n")))];
    for from in ["4.1.0", "4.1.1"] {
        let r = resolve_in(
            &filter(s, &[], "", CP),
            Some(&installed(&bundle_name(s, from), from)),
            &catalogs,
        );
        assert_eq!(version_of(&r), "4.1.2");
    }
    assert!(
        resolve_in(
            &filter(s, &[], "", CP),
            Some(&installed(&bundle_name(s, "4.0.0"), "4.0.0")),
            &catalogs
        )
        .is_err()
    );
}

// ---------------------------------------------------------------------------------------------
// The scenario file itself: the tests above transcribe it section by section, so it must still
// hold exactly the sections and table rows they were written from.

/// Table rows (not counting header and separator lines) per section `## N.` of the scenario file.
const SCENARIO_ROWS: [(u32, usize); 11] = [
    (0, 10),
    (1, 13),
    (2, 5),
    (3, 4),
    (4, 17),
    (5, 10),
    (6, 10),
    (7, 7),
    (8, 2),
    (9, 8),
    (10, 0),
];

#[test]
fn the_scenario_file_holds_the_sections_and_rows_transcribed_here() {
    let path = testdata("conformance/upstream-resolution-scenarios.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let is_separator =
        |l: &str| l.starts_with('|') && l.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
    let mut rows: BTreeMap<u32, usize> = BTreeMap::new();
    let mut section = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("## ") {
            let number = rest.split_once('.').and_then(|(n, _)| n.parse().ok());
            section = Some(number.unwrap_or_else(|| panic!("heading {line:?}")));
            rows.insert(section.unwrap(), 0);
        } else if line.starts_with('|') && !is_separator(line) {
            let header = lines.get(i + 1).is_some_and(|next| is_separator(next));
            if let (Some(s), false) = (section, header) {
                *rows.get_mut(&s).unwrap() += 1;
            }
        }
    }
    let total: usize = rows.values().sum();
    println!(
        "{}: {} sections, {total} table rows",
        path.display(),
        rows.len()
    );
    assert_eq!(rows, BTreeMap::from(SCENARIO_ROWS));
    assert_eq!(total, 86);
}
