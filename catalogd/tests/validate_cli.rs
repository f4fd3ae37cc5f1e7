//! `catalogd validate DIR` as a process: exit status and messages on the real catalogs.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// `shared/data` sits beside the repository (`../shared`); a worktree may be nested deeper, so
/// look upwards from the crate.
fn data(rel: &str) -> PathBuf {
    manifest_dir()
        .ancestors()
        .map(|dir| dir.join("shared/data/catalogs"))
        .find(|dir| dir.is_dir())
        .expect("shared/data/catalogs not found above the crate")
        .join(rel)
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

#[test]
fn usage_errors_exit_two() {
    assert_eq!(catalogd(&["validate"]).status.code(), Some(2));
    assert_eq!(catalogd(&[]).status.code(), Some(2));
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

// Read at run time, not with env!: the cached target dir may hold a build from another checkout.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .expect("set by cargo")
        .into()
}
