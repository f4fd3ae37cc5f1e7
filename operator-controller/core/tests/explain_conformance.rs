//! `explain` against the resolver, on the conformance fixtures of
//! `testdata/conformance/upstream-resolution-scenarios.md` (every scenario of
//! `upstream_scenarios.rs` already goes through [`common::resolve_in`], which checks the
//! explanation of each) and on the real catalogs of `testdata/catalogs`, over a grid of queries
//! each: no constraint, every channel, version ranges, every installed bundle, both upgrade
//! constraint policies, selectors. Each case checks (see [`common::check_explanation`]): the
//! chosen bundle is the resolver's or both fail with the same message, every bundle is listed
//! exactly once, every bundle not chosen has a reason, codes come from the closed set, and the
//! upgrade path follows the resolver step by step. The number of cases is asserted.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use common::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use olm_api::v1::{CatalogFilter, METADATA_NAME_LABEL, UpgradeConstraintPolicy};
use olm_operator_core::resolve::explain::{GraphFormat, ReasonCode};
use olm_operator_core::resolve::{CatalogInfo, InstalledBundle, PackageContent};

use UpgradeConstraintPolicy::{CatalogProvided as CP, SelfCertified as SC};

const PKG: &str = "pkg-x1y2z";

type Catalogs = Vec<(CatalogInfo, Arc<PackageContent>)>;

/// Tallies of one run: cases, and how often each code was given.
#[derive(Default)]
struct Tally {
    cases: usize,
    resolved: usize,
    codes: BTreeMap<ReasonCode, usize>,
}

impl Tally {
    fn check(
        &mut self,
        filter: &CatalogFilter,
        installed: Option<&InstalledBundle>,
        catalogs: &Catalogs,
    ) {
        let resolved = resolve_only(filter, installed, catalogs);
        let e = check_explanation(filter, installed, catalogs, &resolved);
        self.cases += 1;
        self.resolved += usize::from(resolved.is_ok());
        for c in &e.candidates {
            for r in &c.reasons {
                *self.codes.entry(r.code).or_default() += 1;
            }
        }
    }
}

/// Channels, versions and bundles (name, version) of a fixture, for the query grid.
fn facts(catalogs: &Catalogs) -> (BTreeSet<String>, BTreeSet<String>, Vec<(String, String)>) {
    let mut channels = BTreeSet::new();
    let mut versions = BTreeSet::new();
    let mut bundles = Vec::new();
    for (_, content) in catalogs {
        for ch in content.channels() {
            channels.insert(ch.channel.name.clone());
        }
        for b in content.bundles() {
            if let Ok(v) = &b.version {
                versions.insert(v.to_string());
                bundles.push((b.bundle.name.clone(), v.to_string()));
            }
        }
    }
    bundles.sort();
    bundles.dedup();
    (channels, versions, bundles)
}

/// The query grid over one fixture.
fn grid(tally: &mut Tally, package: &str, catalogs: &Catalogs) {
    let (channels, versions, bundles) = facts(catalogs);
    let mut channel_sets: Vec<Vec<&str>> = vec![vec![], vec!["no-such-channel"]];
    channel_sets.extend(channels.iter().map(|c| vec![c.as_str()]));
    if channels.len() > 1 {
        channel_sets.push(channels.iter().map(String::as_str).collect());
    }
    let mut ranges: Vec<String> = vec![String::new(), "foobar".into(), ">=1.0.0 <2.0.0".into()];
    ranges.extend(versions.iter().cloned());
    ranges.extend(versions.iter().map(|v| format!("<{v}")));
    let mut installs: Vec<Option<InstalledBundle>> = vec![
        None,
        Some(installed("unknown.v9.9.9", "9.9.9")),
        Some(installed("unknown", "invalid-version")),
    ];
    installs.extend(bundles.iter().map(|(n, v)| Some(installed(n, v))));
    for channels in &channel_sets {
        for range in &ranges {
            for policy in [CP, SC] {
                let f = filter(package, channels, range, policy);
                for from in &installs {
                    tally.check(&f, from.as_ref(), catalogs);
                }
            }
        }
    }
}

/// Selector variations over a multi-catalog fixture: each catalog by name, an expression, an
/// invalid operator, each with and without an unavailable catalog.
fn selectors(tally: &mut Tally, package: &str, catalogs: &Catalogs) {
    let names: Vec<String> = catalogs.iter().map(|(c, _)| c.name.clone()).collect();
    let mut selectors: Vec<LabelSelector> = names
        .iter()
        .map(|n| LabelSelector {
            match_labels: Some(BTreeMap::from([(
                METADATA_NAME_LABEL.to_owned(),
                n.clone(),
            )])),
            match_expressions: None,
        })
        .collect();
    for op in ["NotIn", "bad"] {
        selectors.push(LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: METADATA_NAME_LABEL.to_owned(),
                operator: op.to_owned(),
                values: Some(vec![names[0].clone()]),
            }]),
        });
    }
    for unavailable in [None, Some(&names[0]), names.last()] {
        let mut catalogs = catalogs.clone();
        for (c, _) in &mut catalogs {
            c.available = Some(&c.name) != unavailable;
        }
        for selector in &selectors {
            let mut f = filter(package, &[], "", CP);
            f.selector = Some(selector.clone());
            tally.check(&f, None, &catalogs);
            tally.check(
                &f,
                Some(&installed(&bundle_name(package, "0.1.0"), "0.1.0")),
                &catalogs,
            );
        }
    }
}

fn fixtures() -> Vec<(&'static str, String, Catalogs)> {
    let mut out = Vec::new();
    // §4: genPackage in c, a and b empty.
    out.push(("genPackage", PKG.to_owned(), abc(PKG)));
    // §1: the successor fixture.
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
        bundle(p, "2.0.0+1"),
        bundle(p, "2.1.0"),
        bundle(p, "2.2.0"),
        bundle(p, "2.2.1"),
        bundle(p, "2.3.0"),
        bundle(p, "2.4.0"),
    ];
    out.push((
        "successors",
        p.to_owned(),
        vec![cat("c", content(p, &lines.join("\n")))],
    ));
    // §5: the same package varying between six catalogs.
    let variations: [(&str, &[&str], &[&str]); 6] = [
        ("a", &[], &[]),
        ("b", &["1.0.0"], &["1.0.0"]),
        ("c", &["1.0.1"], &["1.0.1"]),
        ("d", &["1.0.2"], &[]),
        ("e", &["1.0.3"], &["1.0.3"]),
        ("f", &["1.0.4", "1.0.5"], &[]),
    ];
    let catalogs = variations
        .iter()
        .map(|(name, versions, deprecated)| {
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
        .collect();
    out.push(("variations", PKG.to_owned(), catalogs));
    // §6: priorities (a winner, and a tie at the top).
    out.push((
        "priority",
        PKG.to_owned(),
        vec![
            (CatalogInfo::new("a", 1), gen_package(PKG)),
            (CatalogInfo::new("b", 0), gen_package(PKG)),
            (CatalogInfo::new("c", 1), gen_package(PKG)),
        ],
    ));
    out.push((
        "priority-winner",
        PKG.to_owned(),
        vec![
            (CatalogInfo::new("a", 2), gen_package(PKG)),
            (CatalogInfo::new("b", 0), gen_package(PKG)),
        ],
    ));
    // Edges only in one of two channels.
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
    out.push((
        "edges",
        p.to_owned(),
        vec![cat("c", content(p, &lines.join("\n")))],
    ));
    // A bundle declaring a dependency (rejected after the choice), and one without a version.
    let p = "dep";
    let lines = [
        bundle(p, "1.0.0"),
        r#"{"schema":"olm.bundle","name":"dep.v2.0.0","package":"dep","properties":[{"type":"olm.package","value":{"packageName":"dep","version":"2.0.0"}},{"type":"olm.gvk.required","value":"x"}]}"#.to_owned(),
        r#"{"schema":"olm.bundle","name":"dep.noversion","package":"dep"}"#.to_owned(),
    ];
    out.push((
        "dependency",
        p.to_owned(),
        vec![cat("c", content(p, &lines.join("\n")))],
    ));
    // Releases: build metadata read as a release.
    let p = "rel";
    let lines = [
        channel(
            p,
            "stable",
            &[
                ("1.0.0", "", &[], ""),
                ("1.0.0+1", "1.0.0", &[], ""),
                ("1.0.0+2", "1.0.0+1", &[], ""),
                ("1.1.0", "", &[], "<1.1.0"),
            ],
        ),
        bundle(p, "1.0.0"),
        bundle(p, "1.0.0+1"),
        bundle(p, "1.0.0+2"),
        bundle(p, "1.1.0"),
    ];
    out.push((
        "releases",
        p.to_owned(),
        vec![cat("c", content(p, &lines.join("\n")))],
    ));
    out
}

#[test]
fn explain_agrees_with_the_resolver_on_every_conformance_fixture_and_query() {
    let mut tally = Tally::default();
    for (name, package, catalogs) in fixtures() {
        let before = tally.cases;
        grid(&mut tally, &package, &catalogs);
        if catalogs.len() > 1 {
            selectors(&mut tally, &package, &catalogs);
        }
        println!("{name}: {} cases", tally.cases - before);
    }
    println!(
        "{} cases, {} resolved; codes {:?}",
        tally.cases, tally.resolved, tally.codes
    );
    assert_eq!(tally.cases, 7_504);
    // Every code shows up somewhere in the grid.
    for code in ReasonCode::ALL {
        assert!(tally.codes.get(&code).is_some_and(|n| *n > 0), "{code:?}");
    }
}

/// Every package of a real catalog directory (one directory per package).
fn packages(dir: &Path) -> Vec<(String, Arc<PackageContent>)> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        // The directory is named after the package, but not always exactly.
        let mut name = None;
        olm_api::fbc::walk_metas_dir(&e.path(), |m| {
            if m.schema == olm_api::fbc::SCHEMA_PACKAGE {
                name.get_or_insert(m.name);
            }
            Ok(())
        })
        .unwrap();
        let name = name.unwrap();
        let content = dir_package(&e.path(), &name);
        assert!(!content.bundles().is_empty(), "{name}");
        out.push((name, content));
    }
    out
}

/// Queries over one real package: no constraint, each channel (at most four), ranges below the
/// highest and at or above the median, installed at the lowest, median and second-highest
/// versions (both policies), and a channel with an installed bundle.
fn real_queries(tally: &mut Tally, package: &str, catalogs: &Catalogs) {
    let (channels, _, _) = facts(catalogs);
    let mut by_version: Vec<(olm_api::version::release::VersionRelease, String, String)> = catalogs
        .iter()
        .flat_map(|(_, c)| c.bundles())
        .filter_map(|b| {
            b.version
                .as_ref()
                .ok()
                .map(|v| (v.clone(), b.bundle.name.clone(), v.to_string()))
        })
        .collect();
    by_version.sort_by(|a, b| a.0.cmp(&b.0));
    let n = by_version.len();
    let pick = |i: usize| &by_version[i.min(n - 1)];
    let highest = pick(n - 1).0.version.to_string();
    let median = pick(n / 2).0.version.to_string();
    tally.check(&filter(package, &[], "", CP), None, catalogs);
    for c in channels.iter().take(4) {
        tally.check(&filter(package, &[c], "", CP), None, catalogs);
    }
    tally.check(
        &filter(package, &[], &format!("<{highest}"), CP),
        None,
        catalogs,
    );
    tally.check(
        &filter(package, &[], &format!(">={median}"), CP),
        None,
        catalogs,
    );
    for i in [0, n / 2, n.saturating_sub(2)] {
        let (_, name, version) = pick(i);
        let from = installed(name, version);
        for policy in [CP, SC] {
            tally.check(&filter(package, &[], "", policy), Some(&from), catalogs);
        }
        tally.check(
            &filter(package, &[], &format!("<{highest}"), CP),
            Some(&from),
            catalogs,
        );
        if let Some(c) = channels.iter().next() {
            tally.check(&filter(package, &[c], "", CP), Some(&from), catalogs);
        }
    }
}

#[test]
fn explain_agrees_with_the_resolver_on_every_package_of_the_real_catalogs() {
    let mut tally = Tally::default();
    let mut graphs = 0;
    let certified = packages(&testdata("catalogs/certified-operators/catalogs/v4.22"));
    let community = packages(&testdata(
        "catalogs/community-operators-prod/catalogs/v4.22",
    ));
    assert_eq!((certified.len(), community.len()), (48, 29));
    for (source, list) in [
        ("certified-operators", &certified),
        ("community", &community),
    ] {
        for (package, content) in list {
            let catalogs = vec![cat(source, content.clone())];
            real_queries(&mut tally, package, &catalogs);
            // The graph renders for every package.
            let resolved = resolve_only(&filter(package, &[], "", CP), None, &catalogs);
            let e = check_explanation(&filter(package, &[], "", CP), None, &catalogs, &resolved);
            for format in [GraphFormat::Mermaid, GraphFormat::Dot] {
                let g = e.graph(format);
                assert!(g.lines().count() > content.bundles().len(), "{package}");
                graphs += 1;
            }
        }
    }
    // Packages in both catalogs: both at once, equal and different priorities.
    let both: Vec<(&String, &Arc<PackageContent>, &Arc<PackageContent>)> = certified
        .iter()
        .filter_map(|(p, a)| {
            community
                .iter()
                .find(|(q, _)| q == p)
                .map(|(_, b)| (p, a, b))
        })
        .collect();
    for (package, a, b) in &both {
        for priority in [0, 1] {
            let catalogs = vec![
                (CatalogInfo::new("certified", priority), (*a).clone()),
                (CatalogInfo::new("community", 0), (*b).clone()),
            ];
            real_queries(&mut tally, package, &catalogs);
        }
    }
    // The upstream e2e test catalogs, v1 and v2 side by side.
    let dir = |v: &str| {
        testdata(&format!(
            "catalogs/upstream-operator-controller/testdata/catalogs/test-catalog-{v}"
        ))
    };
    for package in ["prometheus", "prometheus-mirrored"] {
        let catalogs = vec![
            (
                CatalogInfo::new("test-catalog-v1", 0),
                dir_package(&dir("v1"), package),
            ),
            (
                CatalogInfo::new("test-catalog-v2", 1),
                dir_package(&dir("v2"), package),
            ),
        ];
        if catalogs.iter().any(|(_, c)| !c.bundles().is_empty()) {
            real_queries(&mut tally, package, &catalogs);
        }
    }
    println!(
        "{} cases over {} + {} packages ({} in both), {} resolved, {graphs} graphs; codes {:?}",
        tally.cases,
        certified.len(),
        community.len(),
        both.len(),
        tally.resolved,
        tally.codes
    );
    assert_eq!(tally.cases, 1_426);
    assert_eq!(graphs, 2 * (48 + 29));
}

/// The resolver's short-cut evaluation ([`CandidateRules::candidates`]) and the complete one the
/// explanation reads ([`CandidateRules::verdicts`]) find the same candidates, on every fixture and
/// every real package, for rule combinations with each rule on and off.
#[test]
fn complete_verdicts_and_the_resolvers_candidates_agree() {
    use olm_api::version::masterminds::Constraints;
    use olm_operator_core::resolve::filter::{CandidateRules, Successors};
    let mut contents: Vec<Arc<PackageContent>> = fixtures()
        .into_iter()
        .flat_map(|(_, _, catalogs)| catalogs.into_iter().map(|(_, c)| c))
        .collect();
    for dir in [
        "catalogs/certified-operators/catalogs/v4.22",
        "catalogs/community-operators-prod/catalogs/v4.22",
    ] {
        contents.extend(packages(&testdata(dir)).into_iter().map(|(_, c)| c));
    }
    let range = Constraints::parse(">=1.0.0 <3.0.0").unwrap();
    let mut checked = 0;
    for content in &contents {
        let channels: Vec<String> = content
            .channels()
            .iter()
            .take(1)
            .map(|c| c.channel.name.clone())
            .collect();
        let installed: Vec<Successors> = content
            .bundles()
            .iter()
            .step_by(3)
            .filter_map(|b| {
                let v = b.version.as_ref().ok()?.to_string();
                Successors::new(&installed(&b.bundle.name, &v)).ok()
            })
            .collect();
        for channels in [&[][..], &channels[..]] {
            for range in [None, Some(&range)] {
                for successors in std::iter::once(None).chain(installed.iter().map(Some)) {
                    let rules = CandidateRules {
                        channels,
                        range,
                        successors,
                    };
                    let mut eligible: Vec<usize> = rules
                        .verdicts(content)
                        .iter()
                        .filter(|v| v.eligible())
                        .map(|v| v.index)
                        .collect();
                    let mut candidates: Vec<usize> =
                        rules.candidates(content).iter().map(|b| b.index).collect();
                    eligible.sort();
                    candidates.sort();
                    assert_eq!(eligible, candidates);
                    checked += 1;
                }
            }
        }
    }
    println!("{checked} rule sets over {} contents", contents.len());
    assert_eq!(checked, 2_004);
}
