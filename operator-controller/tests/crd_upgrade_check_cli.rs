//! `operator-controller crd-upgrade-check` as a process: each exit status, the report lines, and
//! the `--data` data-aware step over custom-resource files.
#![allow(clippy::unwrap_used)]

// One copy of the fixtures, shared with the pure crate's tests.
#[path = "../core/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::testdata;

fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_operator-controller"))
        .arg("crd-upgrade-check")
        .args(args)
        .output()
        .unwrap()
}

fn case(name: &str) -> PathBuf {
    testdata("conformance/crd-upgrade/synthetic").join(name)
}

fn pair(name: &str) -> (String, String) {
    let dir = case(name);
    (
        dir.join("old.yaml").to_string_lossy().into_owned(),
        dir.join("new.yaml").to_string_lossy().into_owned(),
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn data_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn widget(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: ns1\nspec:\n{spec}\n"
    )
}

#[test]
fn a_safe_change_exits_0() {
    let (old, new) = pair("field-addition-optional");
    let o = check(&[&old, &new]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).ends_with("verdict: safe\n"), "{}", stdout(&o));
}

#[test]
fn an_upstream_false_positive_is_listed_as_allowed_and_exits_0() {
    let (old, new) = pair("nullable-added");
    let o = check(&[&old, &new]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    // Upstream's entry (conformance data synthetic/nullable-added/expected.txt).
    assert!(
        text.contains("allow   v1: ^.spec.n: nullable: nullable added : false -> true"),
        "{text}"
    );
    assert!(text.contains("upstream's check refuses"), "{text}");
}

#[test]
fn upstream_mode_refuses_the_false_positive_with_exit_1() {
    let (old, new) = pair("nullable-added");
    let o = check(&[&old, &new, "--upstream"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("refuse  v1: ^.spec.n: nullable: nullable added : false -> true"));
}

#[test]
fn an_unsafe_change_prints_upstreams_entry_and_exits_1() {
    let (old, new) = pair("enum-values-removed");
    let o = check(&[&old, &new]);
    assert_eq!(o.status.code(), Some(1));
    // Entry text from synthetic/enum-values-removed/expected.txt.
    assert!(
        stdout(&o)
            .contains("refuse  v1: ^.spec.e: enum: allowed enum values removed : [\"b\" \"c\"]"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).ends_with("verdict: unsafe\n"));
}

#[test]
fn a_missing_file_is_a_usage_error_naming_it() {
    let (_, new) = pair("identical");
    let o = check(&["/nonexistent/old.yaml", &new]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/old.yaml"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_yaml_is_a_usage_error_naming_the_file() {
    let dir = data_dir(&[("bad.yaml", "a: [1, 2\n")]);
    let bad = dir.path().join("bad.yaml");
    let (_, new) = pair("identical");
    let o = check(&[bad.to_str().unwrap(), &new]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.yaml: invalid YAML"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_file_without_a_crd_is_a_usage_error() {
    let dir = data_dir(&[(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    )]);
    let (old, _) = pair("identical");
    let o = check(&[&old, dir.path().join("cm.yaml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no CustomResourceDefinition document"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_crd_with_a_wrongly_typed_field_is_a_usage_error_naming_the_field() {
    let (old, _) = pair("identical");
    let text = std::fs::read_to_string(case("identical").join("new.yaml"))
        .unwrap()
        .replace("type: string", "type: [string]");
    let dir = data_dir(&[("new.yaml", &text)]);
    let o = check(&[&old, dir.path().join("new.yaml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(".type: cannot convert slice to string"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let (old, new) = pair("identical");
    let o = check(&[&old, &new, "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn data_that_no_object_violates_lets_a_tightened_enum_through() {
    let (old, new) = pair("enum-values-removed");
    let dir = data_dir(&[
        ("a.yaml", &widget("w1", "  e: a")),
        (
            "b.yaml",
            &format!("{}---\n{}", widget("w2", "  e: a"), widget("w3", "  {}")),
        ),
    ]);
    let o = check(&[&old, &new, "--data", dir.path().to_str().unwrap()]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains(
            "allowed because no stored object violates the new schema (3 objects checked)"
        ),
        "{text}"
    );
}

#[test]
fn data_with_a_violating_object_is_refused_naming_the_object() {
    let (old, new) = pair("enum-values-removed");
    let dir = data_dir(&[(
        "a.yaml",
        &format!("{}---\n{}", widget("ok", "  e: a"), widget("bad", "  e: b")),
    )]);
    let o = check(&[&old, &new, "--data", dir.path().to_str().unwrap()]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("object  ns1/bad (v1) .spec.e: enum:"),
        "{text}"
    );
    assert!(!text.contains("ns1/ok "), "{text}");
    assert!(
        text.contains("refused: stored objects do not validate against the new schema: ns1/bad"),
        "{text}"
    );
}

#[test]
fn data_using_a_removed_field_is_refused_as_pruned() {
    let (old, new) = pair("existing-field-removal");
    let unused = data_dir(&[("a.yaml", &widget("w1", "  a: x"))]);
    let o = check(&[&old, &new, "--data", unused.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let used = data_dir(&[("a.yaml", &widget("w1", "  a: x\n  b: y"))]);
    let o = check(&[&old, &new, "--data", used.path().to_str().unwrap()]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("ns1/w1 (v1) .spec.b: pruned:"), "{text}");
}

#[test]
fn data_of_another_kind_is_skipped_and_named() {
    let (old, new) = pair("enum-values-removed");
    let dir = data_dir(&[(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    )]);
    let o = check(&[&old, &new, "--data", dir.path().to_str().unwrap()]);
    assert!(
        stdout(&o).contains("cm.yaml: ConfigMap v1 is not a Widget"),
        "{}",
        stdout(&o)
    );
    // No stored objects: nothing can be broken.
    assert_eq!(o.status.code(), Some(0));
}
