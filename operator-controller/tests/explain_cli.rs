//! `operator-controller explain` as a process: the JSON contract, the human table, the graph,
//! exit statuses, and agreement with `operator-controller resolve` on the same inputs.
#![allow(clippy::unwrap_used)]

// One copy of the fixtures, shared with the pure crate's tests.
#[path = "../core/tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

fn run(mode: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_operator-controller"))
        .arg(mode)
        .args(args)
        .output()
        .unwrap()
}

fn explain(args: &[&str]) -> Output {
    run("explain", args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn json(o: &Output) -> Value {
    let text = stdout(o);
    assert_eq!(text.lines().count(), 1, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// Package `p` in catalog directory `<root>/<name>`: stable 1.0.0 <- 1.1.0 <- 1.2.0 (replaces),
/// 2.0.0 skipRange >=1.1.0 <2.0.0; fast 2.0.0 <- 2.1.0; 1.2.0 deprecated.
fn catalog(root: &Path, name: &str) -> PathBuf {
    let p = "p";
    let lines = [
        format!(r#"{{"schema":"olm.package","name":"{p}","defaultChannel":"stable"}}"#),
        channel(
            p,
            "stable",
            &[
                ("1.0.0", "", &[], ""),
                ("1.1.0", "1.0.0", &[], ""),
                ("1.2.0", "1.1.0", &[], ""),
                ("2.0.0", "", &[], ">=1.1.0 <2.0.0"),
            ],
        ),
        channel(
            p,
            "fast",
            &[("2.0.0", "", &[], ""), ("2.1.0", "2.0.0", &[], "")],
        ),
        bundle(p, "1.0.0"),
        bundle(p, "1.1.0"),
        bundle(p, "1.2.0"),
        bundle(p, "2.0.0"),
        bundle(p, "2.1.0"),
        bundle_deprecations(p, &["1.2.0"]),
    ];
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("catalog.json"), lines.join("\n")).unwrap();
    dir
}

const CODES: [&str; 9] = REASON_CODES;

/// The contract's shape: exactly these keys, every candidate listed with its reasons.
fn check_contract(v: &Value) {
    let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "package",
            "chosen",
            "message",
            "installed",
            "candidates",
            "upgradePath"
        ])
    );
    let chosen = &v["chosen"];
    if chosen.is_null() {
        assert!(!v["message"].as_str().unwrap().is_empty());
    } else {
        assert_eq!(v["message"], "");
        let keys: BTreeSet<&str> = chosen
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, BTreeSet::from(["name", "version", "catalog"]));
    }
    let mut seen = BTreeSet::new();
    let mut chosen_rows = 0;
    for c in v["candidates"].as_array().unwrap() {
        let keys: BTreeSet<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            BTreeSet::from(["name", "version", "catalog", "chosen", "reasons"])
        );
        assert!(seen.insert((
            c["catalog"].as_str().unwrap().to_owned(),
            c["name"].as_str().unwrap().to_owned()
        )));
        let reasons = c["reasons"].as_array().unwrap();
        if c["chosen"] == true {
            chosen_rows += 1;
            assert!(reasons.is_empty());
            assert_eq!(chosen["name"], c["name"]);
            assert_eq!(chosen["catalog"], c["catalog"]);
            assert_eq!(chosen["version"], c["version"]);
        } else {
            assert!(!reasons.is_empty(), "{c}");
        }
        for r in reasons {
            assert!(CODES.contains(&r["code"].as_str().unwrap()), "{r}");
            assert!(!r["message"].as_str().unwrap().is_empty());
        }
    }
    assert_eq!(chosen_rows, usize::from(!chosen.is_null()));
}

#[test]
fn json_lists_every_bundle_with_its_reasons_and_the_upgrade_path() {
    let root = tempfile::tempdir().unwrap();
    let dir = catalog(root.path(), "main");
    let out = explain(&[
        "--catalog",
        dir.to_str().unwrap(),
        "--package",
        "p",
        "--installed-bundle",
        "p.v1.0.0",
        "--installed-version",
        "1.0.0",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty());
    let v = json(&out);
    check_contract(&v);
    assert_eq!(v["package"], "p");
    assert_eq!(
        v["chosen"],
        serde_json::json!({"name": "p.v1.1.0", "version": "1.1.0", "catalog": "main"})
    );
    assert_eq!(
        v["installed"],
        serde_json::json!({"name": "p.v1.0.0", "version": "1.0.0"})
    );
    assert_eq!(
        v["upgradePath"],
        serde_json::json!(["p.v1.0.0", "p.v1.1.0", "p.v2.0.0", "p.v2.1.0"])
    );
    let rows: Vec<(String, Vec<String>)> = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["version"].as_str().unwrap().to_owned(),
                c["reasons"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["code"].as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();
    let expect = |v: &str, codes: &[&str]| {
        (
            v.to_owned(),
            codes.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        rows,
        [
            expect("2.1.0", &["NotASuccessor"]),
            expect("2.0.0", &["NotASuccessor"]),
            expect("1.2.0", &["NotASuccessor", "Deprecated"]),
            expect("1.1.0", &[]),
            expect("1.0.0", &["SameVersionInstalled"]),
        ]
    );
    let not_successor = &v["candidates"][1]["reasons"][0]["message"];
    assert_eq!(
        not_successor,
        r#"No entry of bundle "p.v2.0.0" in any channel replaces or skips the installed bundle "p.v1.0.0" or has a skipRange covering 1.0.0, and version 2.0.0 is not the installed one (it declares skipRange >=1.1.0 <2.0.0 in stable)."#
    );
}

#[test]
fn nothing_resolving_exits_1_and_still_prints_the_explanation_with_resolves_message() {
    let root = tempfile::tempdir().unwrap();
    let dir = catalog(root.path(), "main");
    let args = [
        "--catalog",
        dir.to_str().unwrap(),
        "--package",
        "p",
        "--version",
        ">=3.0.0",
        "--channel",
        "fast",
    ];
    let resolved = run("resolve", &args);
    assert_eq!(resolved.status.code(), Some(1));
    let out = explain(&[&args[..], &["-o", "json"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = json(&out);
    check_contract(&v);
    assert_eq!(v["chosen"], Value::Null);
    assert_eq!(v["message"], stderr(&resolved).trim_end());
    assert_eq!(
        v["message"],
        r#"no bundles found for package "p" matching version ">=3.0.0" in channels [fast]"#
    );
    assert_eq!(v["upgradePath"], Value::Null);
    assert_eq!(v["candidates"].as_array().unwrap().len(), 5);
    // The table too.
    let out = explain(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).starts_with(
        "Package p: nothing resolves: no bundles found for package \"p\" matching version \">=3.0.0\" in channels [fast]\n"
    ));
}

#[test]
fn the_table_lists_bundles_newest_first_then_the_upgrade_path() {
    let root = tempfile::tempdir().unwrap();
    let main = catalog(root.path(), "main");
    let mirror = catalog(root.path(), "mirror");
    let out = explain(&[
        "--catalog",
        main.to_str().unwrap(),
        "--catalog",
        mirror.to_str().unwrap(),
        "--catalog-priority",
        "main=1",
        "--package",
        "p",
        "--channel",
        "stable",
        "--installed-bundle",
        "p.v1.1.0",
        "--installed-version",
        "1.1.0",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), EXPECTED_TABLE);
}

const EXPECTED_TABLE: &str = concat!(
    "Package p: chosen p.v2.0.0 (version 2.0.0) from catalog main\n",
    "Installed: p.v1.1.0 (version 1.1.0)\n",
    "\n",
    "VERSION  BUNDLE    CATALOG  CHOSEN / WHY NOT\n",
    "2.1.0    p.v2.1.0  main     NotInRequestedChannel: Bundle \"p.v2.1.0\" is not an entry of the requested channels [stable].\n",
    "                            NotASuccessor: No entry of bundle \"p.v2.1.0\" in channels [stable] replaces or skips the installed bundle \"p.v1.1.0\" or has a skipRange covering 1.1.0, and version 2.1.0 is not the installed one (it declares no edges there).\n",
    "2.1.0    p.v2.1.0  mirror   NotInRequestedChannel: Bundle \"p.v2.1.0\" is not an entry of the requested channels [stable].\n",
    "                            NotASuccessor: No entry of bundle \"p.v2.1.0\" in channels [stable] replaces or skips the installed bundle \"p.v1.1.0\" or has a skipRange covering 1.1.0, and version 2.1.0 is not the installed one (it declares no edges there).\n",
    "2.0.0    p.v2.0.0  main     chosen\n",
    "2.0.0    p.v2.0.0  mirror   LowerCatalogPriority: Catalog \"mirror\" has priority 0, lower than the priority 1 of catalog \"main\", which supplied the chosen bundle.\n",
    "1.2.0    p.v1.2.0  main     HigherVersionChosen: Version 1.2.0 is eligible but bundle \"p.v2.0.0\" in catalog \"main\" has the higher version 2.0.0.\n",
    "                            Deprecated: Bundle \"p.v1.2.0\" is deprecated in catalog \"main\"; deprecated bundles stay eligible but rank after the others.\n",
    "1.2.0    p.v1.2.0  mirror   HigherVersionChosen: Version 1.2.0 is eligible but bundle \"p.v2.0.0\" in catalog \"mirror\" has the higher version 2.0.0.\n",
    "                            LowerCatalogPriority: Catalog \"mirror\" has priority 0, lower than the priority 1 of catalog \"main\", which supplied the chosen bundle.\n",
    "                            Deprecated: Bundle \"p.v1.2.0\" is deprecated in catalog \"mirror\"; deprecated bundles stay eligible but rank after the others.\n",
    "1.1.0    p.v1.1.0  main     SameVersionInstalled: Version 1.1.0 is the installed version, which stays eligible, but bundle \"p.v2.0.0\" (version 2.0.0) in catalog \"main\" ranks higher.\n",
    "1.1.0    p.v1.1.0  mirror   SameVersionInstalled: Version 1.1.0 is the installed version, which stays eligible, but bundle \"p.v2.0.0\" (version 2.0.0) in catalog \"mirror\" ranks higher.\n",
    "                            LowerCatalogPriority: Catalog \"mirror\" has priority 0, lower than the priority 1 of catalog \"main\", which supplied the chosen bundle.\n",
    "1.0.0    p.v1.0.0  main     NotASuccessor: No entry of bundle \"p.v1.0.0\" in channels [stable] replaces or skips the installed bundle \"p.v1.1.0\" or has a skipRange covering 1.1.0, and version 1.0.0 is not the installed one (it declares no edges there).\n",
    "1.0.0    p.v1.0.0  mirror   NotASuccessor: No entry of bundle \"p.v1.0.0\" in channels [stable] replaces or skips the installed bundle \"p.v1.1.0\" or has a skipRange covering 1.1.0, and version 1.0.0 is not the installed one (it declares no edges there).\n",
    "\n",
    "Upgrade path: p.v1.1.0 -> p.v2.0.0\n",
);

#[test]
fn the_graph_is_printed_instead_in_mermaid_or_dot() {
    let root = tempfile::tempdir().unwrap();
    let dir = catalog(root.path(), "main");
    let base = [
        "--catalog",
        dir.to_str().unwrap(),
        "--package",
        "p",
        "--installed-bundle",
        "p.v1.0.0",
        "--installed-version",
        "1.0.0",
    ];
    let out = explain(&[&base[..], &["--graph", "mermaid"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let m = stdout(&out);
    assert!(m.starts_with("flowchart LR\n"), "{m}");
    assert!(m.contains(r#"["p.v1.1.0 1.1.0"]:::chosen"#), "{m}");
    assert!(
        m.contains("(installed) [SameVersionInstalled]\"]:::installed"),
        "{m}"
    );
    assert!(m.contains("]:::rejected"), "{m}");
    assert!(m.contains("  %% channel main/fast\n"), "{m}");
    assert_eq!(m.matches("-->|replaces|").count(), 3, "{m}");
    assert_eq!(m.matches("-->|skipRange|").count(), 2, "{m}");
    let out = explain(&[&base[..], &["--graph", "dot"]].concat());
    assert_eq!(out.status.code(), Some(0));
    let d = stdout(&out);
    assert!(d.starts_with("digraph \"p\" {\n"), "{d}");
    assert!(d.contains(r#"label="main/stable""#), "{d}");
    assert!(d.contains(r#"[label="skipRange (main/stable)"]"#), "{d}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["--package", "p"],
        vec!["--catalog", "/nonexistent/dir", "--package", "p"],
        vec!["--extension", "x", "--package", "p"],
        vec!["--extension", "x", "--graph", "svg"],
        vec![
            "--catalog",
            ".",
            "--package",
            "p",
            "--graph",
            "dot",
            "-o",
            "json",
        ],
    ] {
        let out = explain(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
}

/// `resolve` and `explain` agree on the real catalogs: same bundle or same message.
#[test]
fn explain_chooses_what_resolve_chooses_on_the_real_catalogs() {
    let certified = testdata("catalogs/certified-operators/catalogs/v4.22");
    let community = testdata("catalogs/community-operators-prod/catalogs/v4.22");
    let certified = certified.to_str().unwrap();
    let community = community.to_str().unwrap();
    // (Both directories are named v4.22, so each query reads one.)
    let queries: Vec<Vec<&str>> = vec![
        vec![certified, "--package", "kubecost-operator"],
        vec![
            certified,
            "--package",
            "kubecost-operator",
            "--channel",
            "alpha",
        ],
        vec![
            certified,
            "--package",
            "kubecost-operator",
            "--version",
            "<3.0.0",
        ],
        vec![
            certified,
            "--package",
            "kubecost-operator",
            "--installed-bundle",
            "kubecost-operator.v2.8.0",
            "--installed-version",
            "2.8.0",
        ],
        vec![community, "--package", "infinispan"],
        vec![community, "--package", "infinispan", "--channel", "2.4.x"],
        vec![community, "--package", "infinispan", "--version", ">=99"],
        vec![community, "--package", "no-such-package"],
    ];
    let mut checked = 0;
    for q in &queries {
        let args = [&["--catalog"][..], &q[..]].concat();
        let r = run("resolve", &args);
        let e = explain(&[&args[..], &["-o", "json"]].concat());
        assert_eq!(e.status.code(), r.status.code(), "{q:?}");
        let v = json(&e);
        check_contract(&v);
        if r.status.code() == Some(0) {
            let resolved: Value = serde_json::from_str(&stdout(&r)).unwrap();
            assert_eq!(v["chosen"]["name"], resolved["bundle"]["name"], "{q:?}");
            assert_eq!(v["chosen"]["version"], resolved["bundle"]["version"]);
            assert_eq!(v["chosen"]["catalog"], resolved["catalog"]);
        } else {
            assert_eq!(v["message"], stderr(&r).trim_end(), "{q:?}");
        }
        checked += 1;
    }
    assert_eq!(checked, 8);
}

/// An unreadable catalog that is not selected is named on stderr and does not change the answer.
#[test]
fn an_unreadable_unselected_catalog_is_noted_and_ignored() {
    let root = tempfile::tempdir().unwrap();
    let dir = catalog(root.path(), "main");
    let out = explain(&[
        "--catalog",
        dir.to_str().unwrap(),
        "--catalog",
        "http://127.0.0.1:9/catalogs/gone",
        "--catalog-unavailable",
        "gone",
        "--package",
        "p",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("note: catalog \"gone\" could not be read ("),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).starts_with("Package p: chosen p.v2.1.0 (version 2.1.0) from catalog main\n")
    );
}
