//! One test per reason code, plus the upgrade path and the graph.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use olm_api::fbc::{WalkError, walk_metas_reader};
use olm_api::v1::{CatalogFilter, METADATA_NAME_LABEL, UpgradeConstraintPolicy};

use super::*;
use crate::resolve::{CatalogInfo, InstalledBundle, PackageContent, Resolver};

const P: &str = "p";

fn bundle(version: &str, extra: &str) -> String {
    format!(
        r#"{{"schema":"olm.bundle","name":"p.v{version}","package":"p","image":"i:{version}","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"{version}"}}}}{extra}]}}"#
    )
}

/// stable: 1.0.0 <- 1.1.0 <- 1.2.0 (replaces), 2.0.0 skipRange >=1.1.0 <2.0.0;
/// fast: 2.0.0, 2.1.0 replaces 2.0.0.
fn fixture(extra: &[String]) -> Arc<PackageContent> {
    let mut lines = vec![
        r#"{"schema":"olm.package","name":"p"}"#.to_owned(),
        r#"{"schema":"olm.channel","name":"stable","package":"p","entries":[{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"p.v1.0.0"},{"name":"p.v1.2.0","replaces":"p.v1.1.0"},{"name":"p.v2.0.0","skipRange":">=1.1.0 <2.0.0"}]}"#.to_owned(),
        r#"{"schema":"olm.channel","name":"fast","package":"p","entries":[{"name":"p.v2.0.0"},{"name":"p.v2.1.0","replaces":"p.v2.0.0"}]}"#.to_owned(),
    ];
    for v in ["1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.1.0"] {
        lines.push(bundle(v, ""));
    }
    lines.extend(extra.iter().cloned());
    content(&lines.join("\n"))
}

fn content(text: &str) -> Arc<PackageContent> {
    let mut b = PackageContent::builder(P);
    walk_metas_reader(text.as_bytes(), "t", |m| {
        b.push(m).map_err(WalkError::callback)
    })
    .unwrap();
    Arc::new(b.finish())
}

fn deprecations(versions: &[&str]) -> String {
    let entries: Vec<String> = versions
        .iter()
        .map(|v| format!(r#"{{"reference":{{"schema":"olm.bundle","name":"p.v{v}"}},"message":"p.v{v} is deprecated"}}"#))
        .collect();
    format!(
        r#"{{"schema":"olm.deprecations","package":"p","entries":[{}]}}"#,
        entries.join(",")
    )
}

fn filter(channels: &[&str], version: &str) -> CatalogFilter {
    CatalogFilter {
        package_name: P.to_owned(),
        version: (!version.is_empty()).then(|| version.to_owned()),
        channels: channels.iter().map(|c| c.to_string()).collect(),
        selector: None,
        upgrade_constraint_policy: UpgradeConstraintPolicy::CatalogProvided,
    }
}

fn installed(version: &str) -> InstalledBundle {
    InstalledBundle {
        name: format!("p.v{version}"),
        version: version.to_owned(),
        release: None,
    }
}

fn run(
    f: &CatalogFilter,
    inst: Option<&InstalledBundle>,
    catalogs: &[(CatalogInfo, Arc<PackageContent>)],
) -> Explanation {
    let infos: Vec<CatalogInfo> = catalogs.iter().map(|c| c.0.clone()).collect();
    let contents: Contents = catalogs
        .iter()
        .map(|(c, content)| (c.name.clone(), Ok(content.clone())))
        .collect();
    let e = explain(f, inst, &infos, &contents);
    // The outcome is the resolver's.
    let direct = Resolver::new(f, inst).and_then(|r| {
        r.resolve_fetched(
            r.catalogs_to_search(&infos)
                .into_iter()
                .map(|c| (c, contents[&c.name].clone().map_err(FetchError::from))),
        )
    });
    match (&e.outcome, &direct) {
        (Ok(a), Ok(b)) => assert_eq!((&a.bundle.name, &a.catalog), (&b.bundle.name, &b.catalog)),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("explain and resolve disagree"),
    }
    for c in &e.candidates {
        assert_eq!(c.chosen, c.reasons.is_empty(), "{c:?}");
    }
    e
}

fn one(catalog: Arc<PackageContent>) -> Vec<(CatalogInfo, Arc<PackageContent>)> {
    vec![(CatalogInfo::new("c", 0), catalog)]
}

fn find<'e>(e: &'e Explanation, catalog: &str, version: &str) -> &'e Candidate {
    e.candidates
        .iter()
        .find(|c| c.catalog == catalog && c.name == format!("p.v{version}"))
        .unwrap()
}

fn codes(c: &Candidate) -> Vec<&'static str> {
    c.reasons.iter().map(|r| r.code.as_str()).collect()
}

#[test]
fn without_constraints_the_highest_wins_and_every_other_lost_on_version() {
    let e = run(&filter(&[], ""), None, &one(fixture(&[])));
    assert_eq!(e.chosen().unwrap().name, "p.v2.1.0");
    let versions: Vec<&str> = e.candidates.iter().map(|c| c.version.as_str()).collect();
    assert_eq!(versions, ["2.1.0", "2.0.0", "1.2.0", "1.1.0", "1.0.0"]);
    let c = find(&e, "c", "1.2.0");
    assert_eq!(codes(c), ["HigherVersionChosen"]);
    assert_eq!(
        c.reasons[0].message,
        r#"Version 1.2.0 is eligible but bundle "p.v2.1.0" in catalog "c" has the higher version 2.1.0."#
    );
    assert!(e.upgrade_path.is_none());
}

#[test]
fn not_in_requested_channel() {
    let e = run(&filter(&["stable"], ""), None, &one(fixture(&[])));
    assert_eq!(e.chosen().unwrap().name, "p.v2.0.0");
    let c = find(&e, "c", "2.1.0");
    assert_eq!(codes(c), ["NotInRequestedChannel"]);
    assert_eq!(
        c.reasons[0].message,
        r#"Bundle "p.v2.1.0" is not an entry of the requested channels [stable]."#
    );
}

#[test]
fn outside_version_range_and_an_invalid_range() {
    let e = run(&filter(&[], "<2.0.0"), None, &one(fixture(&[])));
    assert_eq!(e.chosen().unwrap().name, "p.v1.2.0");
    let c = find(&e, "c", "2.0.0");
    assert_eq!(codes(c), ["OutsideVersionRange"]);
    assert_eq!(
        c.reasons[0].message,
        r#"Version 2.0.0 is outside the requested version range "<2.0.0"."#
    );
    let e = run(&filter(&[], "foobar"), None, &one(fixture(&[])));
    assert!(e.chosen().is_none());
    assert_eq!(e.candidates.len(), 5);
    assert!(
        e.candidates
            .iter()
            .all(|c| codes(c) == ["OutsideVersionRange"])
    );
}

#[test]
fn not_a_successor_names_the_installed_bundle_and_the_edges_looked_for() {
    let from = installed("1.0.0");
    let e = run(&filter(&[], ""), Some(&from), &one(fixture(&[])));
    assert_eq!(e.chosen().unwrap().name, "p.v1.1.0");
    let c = find(&e, "c", "2.0.0");
    assert_eq!(codes(c), ["NotASuccessor"]);
    assert_eq!(
        c.reasons[0].message,
        r#"No entry of bundle "p.v2.0.0" in any channel replaces or skips the installed bundle "p.v1.0.0" or has a skipRange covering 1.0.0, and version 2.0.0 is not the installed one (it declares skipRange >=1.1.0 <2.0.0 in stable)."#
    );
    // The installed bundle itself stays eligible and lost on version.
    let c = find(&e, "c", "1.0.0");
    assert_eq!(codes(c), ["SameVersionInstalled"]);
    assert_eq!(
        c.reasons[0].message,
        r#"Version 1.0.0 is the installed version, which stays eligible, but bundle "p.v1.1.0" (version 1.1.0) in catalog "c" ranks higher."#
    );
    assert_eq!(
        e.upgrade_path.as_deref().unwrap(),
        ["p.v1.0.0", "p.v1.1.0", "p.v2.0.0", "p.v2.1.0"]
    );
}

#[test]
fn an_unreadable_installed_version_is_a_reason_on_every_bundle() {
    let from = InstalledBundle {
        name: "x".into(),
        version: "bad".into(),
        release: None,
    };
    let e = run(&filter(&[], ""), Some(&from), &one(fixture(&[])));
    assert!(e.outcome.is_err());
    assert!(
        e.candidates
            .iter()
            .all(|c| c.has(ReasonCode::NotASuccessor))
    );
    assert_eq!(e.upgrade_path.as_deref().unwrap(), ["x"]);
}

#[test]
fn lower_catalog_priority_and_ambiguity() {
    let catalogs = vec![
        (CatalogInfo::new("a", 0), fixture(&[])),
        (CatalogInfo::new("b", 5), fixture(&[])),
    ];
    let e = run(&filter(&[], ""), None, &catalogs);
    let chosen = e.chosen().unwrap();
    assert_eq!(
        (chosen.catalog.as_str(), chosen.name.as_str()),
        ("b", "p.v2.1.0")
    );
    let c = find(&e, "a", "2.1.0");
    assert_eq!(codes(c), ["LowerCatalogPriority"]);
    assert_eq!(
        c.reasons[0].message,
        r#"Catalog "a" has priority 0, lower than the priority 5 of catalog "b", which supplied the chosen bundle."#
    );
    assert_eq!(
        codes(find(&e, "a", "1.0.0")),
        ["HigherVersionChosen", "LowerCatalogPriority"]
    );

    let tied = vec![
        (CatalogInfo::new("a", 0), fixture(&[])),
        (CatalogInfo::new("b", 0), fixture(&[])),
    ];
    let e = run(&filter(&[], ""), None, &tied);
    assert!(e.chosen().is_none());
    let c = find(&e, "b", "2.1.0");
    assert_eq!(codes(c), ["LowerCatalogPriority"]);
    assert!(
        c.reasons[0]
            .message
            .contains("shares the highest priority 0")
    );
}

#[test]
fn catalog_not_selected_by_selector_or_availability() {
    let mut unavailable = CatalogInfo::new("u", 9);
    unavailable.available = false;
    let catalogs = vec![
        (CatalogInfo::new("a", 0), fixture(&[])),
        (CatalogInfo::new("b", 0), fixture(&[])),
        (unavailable, fixture(&[])),
    ];
    let mut f = filter(&[], "");
    f.selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([(
            METADATA_NAME_LABEL.to_owned(),
            "a".to_owned(),
        )])),
        match_expressions: None,
    });
    let e = run(&f, None, &catalogs);
    assert_eq!(e.chosen().unwrap().catalog, "a");
    assert_eq!(e.candidates.len(), 15);
    let c = find(&e, "b", "2.1.0");
    assert_eq!(codes(c), ["CatalogNotSelected"]);
    assert_eq!(
        c.reasons[0].message,
        r#"Catalog "b" is not selected by the catalog selector, so it is not searched."#
    );
    let c = find(&e, "u", "2.1.0");
    assert_eq!(
        c.reasons[0].message,
        r#"Catalog "u" is unavailable (availabilityMode Unavailable), so it is not searched."#
    );
}

#[test]
fn deprecated_is_informational_and_says_when_it_decided() {
    // 2.1.0 deprecated: 2.0.0 wins although lower.
    let e = run(
        &filter(&[], ""),
        None,
        &one(fixture(&[deprecations(&["2.1.0", "1.0.0"])])),
    );
    assert_eq!(e.chosen().unwrap().name, "p.v2.0.0");
    let c = find(&e, "c", "2.1.0");
    assert_eq!(codes(c), ["Deprecated"]);
    assert_eq!(
        c.reasons[0].message,
        r#"Bundle "p.v2.1.0" is deprecated in catalog "c", so the non-deprecated bundle "p.v2.0.0" ranks first although its version 2.0.0 is lower than 2.1.0."#
    );
    // 1.0.0 lost on version anyway; its deprecation is only noted.
    let c = find(&e, "c", "1.0.0");
    assert_eq!(codes(c), ["HigherVersionChosen", "Deprecated"]);
    assert!(
        c.reasons[1]
            .message
            .contains("stay eligible but rank after")
    );

    // Across catalogs: a's best is deprecated, b's is not, so b wins at lower version.
    let b = content(
        &[
            r#"{"schema":"olm.package","name":"p"}"#.to_owned(),
            bundle("1.0.0", ""),
        ]
        .join("\n"),
    );
    let catalogs = vec![
        (
            CatalogInfo::new("a", 0),
            fixture(&[deprecations(&["1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.1.0"])]),
        ),
        (CatalogInfo::new("b", 0), b),
    ];
    let e = run(&filter(&[], ""), None, &catalogs);
    assert_eq!(e.chosen().unwrap().catalog, "b");
    let c = find(&e, "a", "2.1.0");
    assert_eq!(codes(c), ["Deprecated"]);
    assert_eq!(
        c.reasons[0].message,
        r#"Bundle "p.v2.1.0" is deprecated in catalog "a" and catalog "b" offers a non-deprecated bundle, which is preferred."#
    );
}

#[test]
fn same_version_installed_when_staying_loses_to_an_upgrade() {
    let from = installed("2.0.0");
    let e = run(&filter(&["fast"], ""), Some(&from), &one(fixture(&[])));
    assert_eq!(e.chosen().unwrap().name, "p.v2.1.0");
    assert_eq!(codes(find(&e, "c", "2.0.0")), ["SameVersionInstalled"]);
    // Not in fast and not successors.
    assert_eq!(
        codes(find(&e, "c", "1.2.0")),
        ["NotInRequestedChannel", "NotASuccessor"]
    );
    assert_eq!(e.upgrade_path.as_deref().unwrap(), ["p.v2.0.0", "p.v2.1.0"]);
}

#[test]
fn a_failure_after_the_choice_is_a_resolution_failed_reason() {
    let c = content(
        &[
            r#"{"schema":"olm.package","name":"p"}"#.to_owned(),
            bundle("1.0.0", ""),
            bundle(
                "2.0.0",
                r#",{"type":"olm.gvk.required","value":{"group":"g","kind":"K","version":"v1"}}"#,
            ),
        ]
        .join("\n"),
    );
    let e = run(&filter(&[], ""), None, &one(c));
    assert!(e.chosen().is_none());
    let c = find(&e, "c", "2.0.0");
    assert_eq!(codes(c), ["ResolutionFailed"]);
    assert!(
        c.reasons[0]
            .message
            .contains("has a dependency declared via property")
    );
    assert_eq!(codes(find(&e, "c", "1.0.0")), ["HigherVersionChosen"]);
}

#[test]
fn an_unreadable_catalog_is_reported_and_its_bundles_are_not_listed() {
    let infos = vec![CatalogInfo::new("a", 0), CatalogInfo::new("b", 0)];
    let contents: Contents = BTreeMap::from([
        ("a".to_owned(), Err("connection refused".to_owned())),
        ("b".to_owned(), Ok(fixture(&[]))),
    ]);
    let e = explain(&filter(&[], ""), None, &infos, &contents);
    assert_eq!(
        e.outcome.as_ref().unwrap_err().to_string(),
        r#"error walking catalogs: error getting package "p" from catalog "a": connection refused"#
    );
    assert_eq!(
        e.unread,
        [("a".to_owned(), "connection refused".to_owned())]
    );
    assert_eq!(e.candidates.len(), 5);
    assert_eq!(codes(find(&e, "b", "2.1.0")), ["ResolutionFailed"]);
}

#[test]
fn every_code_has_a_distinct_name() {
    let names: std::collections::BTreeSet<&str> =
        ReasonCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(names.len(), ReasonCode::ALL.len());
    for c in ReasonCode::ALL {
        assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
    }
}

#[test]
fn the_graph_marks_installed_chosen_and_rejected_bundles() {
    let from = installed("1.0.0");
    let e = run(&filter(&[], ""), Some(&from), &one(fixture(&[])));
    let m = e.graph(GraphFormat::Mermaid);
    assert!(m.starts_with("flowchart LR\n"), "{m}");
    assert!(m.contains(r#"subgraph g0["c/fast"]"#), "{m}");
    assert!(m.contains(r#"["p.v1.1.0 1.1.0"]:::chosen"#), "{m}");
    assert!(
        m.contains(r#"["p.v1.0.0 1.0.0 (installed) [SameVersionInstalled]"]:::installed"#),
        "{m}"
    );
    assert!(m.contains("-->|replaces|"), "{m}");
    assert!(m.contains("-->|skipRange|"), "{m}");
    // skipRange >=1.1.0 <2.0.0 covers 1.1.0 and 1.2.0: two edges into 2.0.0.
    assert_eq!(m.matches("-->|skipRange|").count(), 2, "{m}");
    let d = e.graph(GraphFormat::Dot);
    assert!(d.starts_with("digraph \"p\" {\n"), "{d}");
    assert!(d.contains("subgraph cluster_0 {"), "{d}");
    assert!(d.contains(r#"label="replaces (c/stable)""#), "{d}");
    assert!(d.trim_end().ends_with('}'));
}

mod updates {
    use super::*;
    use crate::resolve::updates::{AvailableUpdate, MAX_UPDATES, available_updates};
    use olm_api::version::release::VersionRelease;

    fn updates(f: &CatalogFilter, inst: &str) -> Vec<(String, String, &'static str)> {
        let e = run(f, Some(&installed(inst)), &one(fixture(&[])));
        let installed = VersionRelease::from_installed(inst, None).unwrap();
        available_updates(&e, &installed)
            .into_iter()
            .map(|u: AvailableUpdate| (u.version, u.channel, u.blocked_by.as_str()))
            .collect()
    }

    fn row(v: &str, ch: &str, code: &'static str) -> (String, String, &'static str) {
        (v.to_owned(), ch.to_owned(), code)
    }

    #[test]
    fn a_pin_lists_every_newer_bundle_as_outside_the_range_newest_first() {
        assert_eq!(
            updates(&filter(&[], "1.1.0"), "1.1.0"),
            [
                row("2.1.0", "fast", "OutsideVersionRange"),
                row("2.0.0", "fast", "OutsideVersionRange"),
                row("1.2.0", "stable", "OutsideVersionRange"),
            ]
        );
    }

    #[test]
    fn a_channel_hides_newer_bundles_of_other_channels_beyond_the_chosen_one() {
        // stable offers 2.0.0 (chosen, skipRange); 2.1.0 is only in fast.
        assert_eq!(
            updates(&filter(&["stable"], ""), "1.2.0"),
            [row("2.1.0", "fast", "NotInRequestedChannel")]
        );
    }

    #[test]
    fn nothing_is_listed_at_the_newest_version_or_when_the_upgrade_is_taken() {
        assert!(updates(&filter(&[], ""), "2.1.0").is_empty());
        // 1.0.0 installed, no constraint: 1.1.0 is chosen (replaces); 2.x are not successors.
        let listed = updates(&filter(&[], ""), "1.0.0");
        assert!(
            listed.iter().all(|(v, _, _)| v.as_str() > "1.1.0"),
            "{listed:?}"
        );
        assert!(listed.len() <= MAX_UPDATES);
    }
}
