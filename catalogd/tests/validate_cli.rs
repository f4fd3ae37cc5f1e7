//! `catalogd validate DIR` as a process: exit status and messages on the real catalogs.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// `testdata/catalogs/<rel>` (see olm-testdata).
fn data(rel: &str) -> PathBuf {
    olm_testdata::path(&format!("catalogs/{rel}"))
}

fn catalogd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_catalogd"))
        .args(args)
        .output()
        .unwrap()
}

fn validate(rel: &str) -> Output {
    catalogd(&["validate", data(rel).to_str().unwrap()])
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn certified_and_community_catalogs_validate_with_exit_zero() {
    for rel in [
        "certified-operators/catalogs/v4.22",
        "community-operators-prod/catalogs/v4.22",
        "community-operators-prod/catalogs/v4.16",
    ] {
        let o = validate(rel);
        assert_eq!(o.status.code(), Some(0), "{rel}: {}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("is valid"));
    }
}

#[test]
fn upstream_e2e_catalog_exits_one_with_both_multi_head_channels() {
    let o =
        validate("upstream-operator-controller/testdata/images/catalogs/test-catalog/v1/configs");
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("configs/catalog.yaml:5:1: olm.channel \"alpha\" (package \"test\"): multiple channel heads found in graph: test-operator.1.0.0, test-operator.1.0.2, test-operator.1.0.3"),
        "{err}"
    );
    assert!(
        err.contains("configs/catalog.yaml:13:1: olm.channel \"beta\" (package \"test\"): multiple channel heads"),
        "{err}"
    );
}

#[test]
fn legacy_prometheus_catalog_exits_one() {
    let o = validate("upstream-operator-registry/test/e2e/testdata/test-configs/prometheus");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bundle not found in any channel entries"));
}

/// A valid one-package catalog in a fresh directory, as `c.yaml`, with `edit` applied to its text.
fn catalog_dir(edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let base = "schema: olm.package\nname: p\ndefaultChannel: s\n---\nschema: olm.channel\nname: s\npackage: p\nentries:\n- name: p.v1\n---\nschema: olm.bundle\nname: p.v1\npackage: p\nimage: quay.io/p:v1\nproperties:\n- type: olm.package\n  value: {packageName: p, version: 1.0.0}\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.yaml"), edit(base)).unwrap();
    dir
}

fn validate_path(dir: &std::path::Path, extra: &[&str]) -> Output {
    let mut args = vec!["validate"];
    args.extend_from_slice(extra);
    args.push(dir.to_str().unwrap());
    catalogd(&args)
}

// Issue 15 item 3: the four verdicts that differed from `opm validate` (operator-registry
// v1.73.0 run on these exact directories rejects each of them). The messages keep our
// file:line:column form; opm's own words follow it.
#[test]
fn verdicts_match_opm_where_they_used_to_differ() {
    let with_range =
        catalog_dir(|b| b.replace("- name: p.v1\n", "- name: p.v1\n  skipRange: not-a-range\n"));
    let o = validate_path(with_range.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("c.yaml:5:1: olm.channel \"s\" (package \"p\"): entry \"p.v1\": invalid skipRange \"not-a-range\": Could not get version from string: \"not-a-range\""),
        "{}",
        stderr(&o)
    );

    let with_icon = catalog_dir(|b| {
        b.replace(
            "defaultChannel: s\n",
            "defaultChannel: s\nicon: {base64data: 'a b', mediatype: image/png}\n",
        )
    });
    let o = validate_path(with_icon.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("c.yaml:1:1: olm.package \"p\": icon.base64data: parse package: illegal base64 data at input byte 1 (opm and upstream's resolver cannot load this package"),
        "{}",
        stderr(&o)
    );

    for (file, text) in [
        ("notes.yaml", "# only a comment\n"),
        ("README.md", "# Title\n"),
    ] {
        let dir = catalog_dir(str::to_owned);
        std::fs::write(dir.path().join(file), text).unwrap();
        let o = validate_path(dir.path(), &[]);
        assert_eq!(o.status.code(), Some(1), "{file}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!(
                "{file}:1:1: object without schema: object '' is missing root schema field"
            )),
            "{}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("could not be loaded"), "{}", stderr(&o));
    }
}

#[test]
fn lenient_mode_turns_what_serving_and_resolution_tolerate_into_warnings() {
    let dir = catalog_dir(|b| {
        b.replace("- name: p.v1\n", "- name: p.v1\n  skipRange: '>=v1.0.0'\n")
            .replace(
                "defaultChannel: s\n",
                "defaultChannel: s\nicon: {base64data: '%%', mediatype: image/png}\n",
            )
    });
    let o = validate_path(dir.path(), &["--lenient"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("warning: ").count(), 2, "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(2 warnings)"));
    assert_eq!(validate_path(dir.path(), &[]).status.code(), Some(1));
}

#[test]
fn usage_errors_exit_two() {
    assert_eq!(catalogd(&["validate"]).status.code(), Some(2));
    // No mode at all is the controller mode, as upstream's command line: without a cluster it
    // is a runtime failure naming the client, not a usage error.
    let no_mode = Command::new(env!("CARGO_BIN_EXE_catalogd"))
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    assert_eq!(no_mode.status.code(), Some(3), "{}", stderr(&no_mode));
    assert!(stderr(&no_mode).contains("failed to configure the Kubernetes client"));
    assert_eq!(catalogd(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        catalogd(&["validate", "--no-such-flag", "x"]).status.code(),
        Some(2)
    );
    let missing = catalogd(&["validate", "/nonexistent/catalog/dir"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read catalog /nonexistent/catalog/dir"));
}

#[test]
fn help_exits_zero() {
    let o = catalogd(&["validate", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("DIR"));
}
