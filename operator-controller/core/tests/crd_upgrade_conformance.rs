//! Every CRD pair of `testdata/conformance/crd-upgrade/` (real operators' successive CRDs and
//! synthetic pairs per rule): upstream's verdict and message entries (compared as a multiset, with
//! `required` lists as sets, as the data's README prescribes), then our verdict with the false
//! positives we allow.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::testdata;
use olm_operator_core::crd_upgrade::{CheckOptions, Crd, check_upgrade, yaml};

/// Pairs in the data: 61 real and 130 synthetic (191, as docs/CRD_UPGRADE_SAFETY.md says), so a
/// lost directory fails instead of shrinking the test.
const CASES: [(&str, usize); 2] = [("real", 61), ("synthetic", 130)];

fn cases(kind: &str) -> Vec<PathBuf> {
    let dir = testdata("conformance/crd-upgrade").join(kind);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.txt").is_file())
        .collect();
    out.sort();
    let expected = CASES
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, n)| *n)
        .unwrap();
    println!("conformance/crd-upgrade/{kind}: {} pairs", out.len());
    assert_eq!(out.len(), expected, "pairs in {}", dir.display());
    out
}

#[test]
fn the_data_holds_all_191_pairs() {
    let total: usize = CASES.iter().map(|(kind, _)| cases(kind).len()).sum();
    assert_eq!(total, 191);
}

fn load(path: &Path) -> Crd {
    let text = std::fs::read_to_string(path).unwrap();
    let docs = yaml::parse_documents(&text).unwrap();
    Crd::from_value(&docs[0]).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An entry with a `required` list in canonical (sorted) order.
fn canonical(entry: &str) -> String {
    if let Some(idx) = entry.find("new required fields: [") {
        let start = idx + "new required fields: [".len();
        if let Some(end) = entry[start..].find(']') {
            let mut names: Vec<&str> = entry[start..start + end].split(' ').collect();
            names.sort_unstable();
            return format!(
                "{}{}{}",
                &entry[..start],
                names.join(" "),
                &entry[start + end..]
            );
        }
    }
    entry.to_owned()
}

fn multiset(entries: impl IntoIterator<Item = String>) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in entries {
        *m.entry(canonical(&e)).or_insert(0) += 1;
    }
    m
}

/// (verdict, entries) from an expected.txt.
fn expected(dir: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(dir.join("expected.txt")).unwrap();
    let mut lines = text.strip_suffix('\n').unwrap_or(&text).split('\n');
    let verdict = lines.next().unwrap().to_owned();
    let mut entries = Vec::new();
    for (i, l) in lines.enumerate() {
        if i == 0 {
            let (_, rest) = l.split_once("\": ").unwrap();
            entries.push(rest.to_owned());
        } else {
            entries.push(l.to_owned());
        }
    }
    (verdict, entries)
}

/// Upstream's nondeterministic served-version ratcheting (README "Verdict nondeterminism"):
/// the recorded outcome is `unsafe`; upstream also passes in some runs, and we always pass.
const NONDETERMINISTIC: &[&str] = &[
    "served-ratchet-required-order",
    "flux__buckets.source.toolkit.fluxcd.io__2.2.2__2.3.0",
];

fn run_all(kind: &str) {
    let mut failures = Vec::new();
    for dir in cases(kind) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let old = load(&dir.join("old.yaml"));
        let new = load(&dir.join("new.yaml"));
        let (want_verdict, want_entries) = expected(&dir);
        let upstream = check_upgrade(
            &old,
            &new,
            &CheckOptions {
                allow_safe_changes: false,
                ..Default::default()
            },
        );
        let got_entries: Vec<String> = upstream.violations.iter().map(|v| v.entry()).collect();
        if NONDETERMINISTIC.contains(&name.as_str()) {
            if !got_entries.is_empty() {
                failures.push(format!(
                    "{name}: expected the deterministic pass, got {got_entries:#?}"
                ));
            }
            continue;
        }
        let got_verdict = if upstream.upstream_refuses() {
            "unsafe"
        } else {
            "safe"
        };
        if got_verdict != want_verdict {
            failures.push(format!(
                "{name}: verdict {got_verdict}, upstream {want_verdict}"
            ));
        }
        let want = multiset(want_entries);
        let got = multiset(got_entries);
        if want != got {
            let missing: Vec<_> = want
                .iter()
                .filter(|(k, n)| got.get(*k) != Some(n))
                .collect();
            let extra: Vec<_> = got
                .iter()
                .filter(|(k, n)| want.get(*k) != Some(n))
                .collect();
            failures.push(format!(
                "{name}: entries differ\n  missing (upstream has): {missing:#?}\n  extra (we have): {extra:#?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn synthetic_pairs_give_upstreams_verdict_and_entries() {
    run_all("synthetic");
}

#[test]
fn real_pairs_give_upstreams_verdict_and_entries() {
    run_all("real");
}

/// Pairs upstream refuses and this check allows: every entry upstream reports for them is one of
/// the documented false positives (docs/CRD_UPGRADE_SAFETY.md).
const UPSTREAM_REFUSES_WE_ALLOW: &[&str] = &[
    "real/bpfman-operator__fexitprograms.bpfman.io__0.4.1__0.4.2",
    "real/dynatrace-operator__edgeconnects.dynatrace.com__1.3.2__1.4.0",
    "real/edp-keycloak-operator__keycloakrealmcomponents.v1.edp.epam.com__1.20.0__1.21.0",
    "real/ember-csi-community-operator__embercsis.ember-csi.io__0.9.8__0.9.9",
    "real/hive-operator__machinepools.hive.openshift.io__1.2.4703-02f3f00__1.2.4731-41f153f",
    "real/ndmspc-operator__ndmspcconfigs.apps.ndmspc.io__0.10.2__0.11.1",
    "real/nexus-operator__nexususers.edp.epam.com__3.3.0__3.4.0",
    "real/node-healthcheck-operator__nodehealthchecks.remediation.medik8s.io__0.3.0__0.5.0",
    "real/opendatahub-operator__trustyais.components.platform.opendatahub.io__2.24.0__2.25.0",
    "real/opentelemetry-operator__instrumentations.opentelemetry.io__0.58.0__0.59.0",
    "real/service-binding-operator__servicebindings.servicebinding.io__1.1.1__1.2.0",
    "real/stackgres-community__sgclusters.stackgres.io__1.14.3__1.15.0-rc1",
    "real/verticadb-operator__verticaautoscalers.vertica.com__25.1.0-0__25.2.0-0",
    "real/victoriametrics-operator__vmservicescrapes.operator.victoriametrics.com__0.64.1__0.65.0",
    "synthetic/default-added",
    "synthetic/default-changed",
    "synthetic/default-changed-integer",
    "synthetic/default-changed-object",
    "synthetic/default-removed",
    "synthetic/enum-constraint-removed",
    "synthetic/example-changed",
    "synthetic/exclusiveMinimum-removed",
    "synthetic/format-removed",
    "synthetic/items-default-added",
    "synthetic/nested-default-added",
    "synthetic/nullable-added",
    "synthetic/oneOf-removed-entirely",
    "synthetic/pattern-removed",
    "synthetic/title-added",
    "synthetic/type-integer-to-number",
    "synthetic/type-removed-int-or-string",
    "synthetic/xk8s-map-type-added",
    "synthetic/xk8s-preserve-unknown-added",
    "synthetic/xval-message-changed",
    "synthetic/xval-removed",
];

fn doc_text() -> String {
    let mut dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    loop {
        let candidate = dir.join("docs/CRD_UPGRADE_SAFETY.md");
        if candidate.is_file() {
            return std::fs::read_to_string(candidate).unwrap();
        }
        assert!(dir.pop(), "docs/CRD_UPGRADE_SAFETY.md not found");
    }
}

#[test]
fn only_documented_false_positives_are_allowed() {
    let doc = doc_text();
    for kind in ["real", "synthetic"] {
        for dir in cases(kind) {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let label = format!("{kind}/{name}");
            let old = load(&dir.join("old.yaml"));
            let new = load(&dir.join("new.yaml"));
            let (want_verdict, want_entries) = expected(&dir);
            let upstream = multiset(want_entries);
            let ours = check_upgrade(&old, &new, &CheckOptions::default());
            for v in ours.violations.iter().filter(|v| v.allowed.is_some()) {
                let class = v.allowed.as_ref().unwrap().class();
                assert!(
                    doc.contains(&format!("`{class}`")),
                    "{label}: class {class} is not documented"
                );
                // Upstream refuses with this entry; we allow it.
                if !NONDETERMINISTIC.contains(&name.as_str()) {
                    assert!(
                        upstream.contains_key(&canonical(&v.entry())),
                        "{label}: upstream refuses with {:?}, which we allow, but upstream's data lacks it",
                        v.entry()
                    );
                }
            }
            if UPSTREAM_REFUSES_WE_ALLOW.contains(&label.as_str()) {
                assert!(ours.upstream_refuses(), "{label}: upstream refuses");
                assert!(ours.is_safe(), "{label}: we allow: {:?}", ours.message());
            } else if NONDETERMINISTIC.contains(&name.as_str()) {
                assert!(ours.is_safe(), "{label}: deterministic ratcheting passes");
            } else if want_verdict == "unsafe" {
                assert!(!ours.is_safe(), "{label}: still refused");
                assert!(ours.message().is_some());
            } else {
                assert!(
                    ours.is_safe() && ours.violations.is_empty(),
                    "{label}: safe for both"
                );
            }
        }
    }
}

/// Prints, per case, the verdict with our default options (a review aid; asserted elsewhere).
#[test]
#[ignore]
fn print_our_verdicts() {
    for kind in ["real", "synthetic"] {
        for dir in cases(kind) {
            let old = load(&dir.join("old.yaml"));
            let new = load(&dir.join("new.yaml"));
            let v = check_upgrade(&old, &new, &CheckOptions::default());
            let blocking = v.blocking().count();
            let allowed = v.violations.len() - blocking;
            println!(
                "{kind}/{} upstream={} ours={} allowed={allowed} blocking={blocking}",
                dir.file_name().unwrap().to_string_lossy(),
                if v.upstream_refuses() {
                    "unsafe"
                } else {
                    "safe"
                },
                if v.is_safe() { "safe" } else { "unsafe" }
            );
            for a in v.violations.iter().filter(|x| x.allowed.is_some()) {
                println!(
                    "    allow {} -- {}",
                    a.entry().chars().take(160).collect::<String>(),
                    a.allowed.as_ref().unwrap().reason()
                );
            }
        }
    }
}
