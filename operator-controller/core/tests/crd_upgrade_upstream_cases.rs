//! Upstream's own crdupgradesafety test cases (operator-controller `df2c201d`,
//! `crdupgradesafety_test.go`), re-expressed with small CRDs written here: each asserts what the
//! upstream test asserts (the verdict and the entries it looks for or rules out).
#![allow(clippy::unwrap_used)]

use olm_operator_core::crd_upgrade::{CheckOptions, Crd, UpgradeVerdict, check_upgrade};
use serde_json::{Value, json};

fn version(name: &str, served: bool, storage: bool, props: Value) -> Value {
    json!({"name": name, "served": served, "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": props}}}}})
}

fn crd(versions: Vec<Value>, stored: &[&str], conversion: Option<&str>) -> Crd {
    let mut spec = json!({
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets"},
        "scope": "Namespaced",
        "versions": versions,
    });
    if let Some(strategy) = conversion {
        spec["conversion"] = json!({"strategy": strategy});
    }
    Crd::from_value(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": spec,
        "status": {"storedVersions": stored},
    }))
    .unwrap()
}

fn upstream(old: &Crd, new: &Crd) -> UpgradeVerdict {
    check_upgrade(
        old,
        new,
        &CheckOptions {
            allow_safe_changes: false,
            ..Default::default()
        },
    )
}

fn text(v: &UpgradeVerdict) -> String {
    v.upstream_message().unwrap_or_default()
}

#[test]
fn valid_upgrade_passes() {
    let old = crd(
        vec![version("v1", true, true, json!({"a": {"type": "string"}}))],
        &["v1"],
        None,
    );
    let new = crd(
        vec![version(
            "v1",
            true,
            true,
            json!({"a": {"type": "string"}, "b": {"type": "integer"}}),
        )],
        &[],
        None,
    );
    assert!(!upstream(&old, &new).upstream_refuses());
}

#[test]
fn existing_field_removal_fails() {
    let old = crd(
        vec![version(
            "v1",
            true,
            true,
            json!({"a": {"type": "string"}, "gone": {"type": "string"}}),
        )],
        &["v1"],
        None,
    );
    let new = crd(
        vec![version("v1", true, true, json!({"a": {"type": "string"}}))],
        &[],
        None,
    );
    let msg = text(&upstream(&old, &new));
    assert!(
        msg.contains("existingFieldRemoval: removed field : v1.^.spec.gone"),
        "{msg}"
    );
}

#[test]
fn description_changes_do_not_fail() {
    let old = crd(
        vec![version(
            "v1",
            true,
            true,
            json!({"a": {"type": "string", "description": "old"}}),
        )],
        &["v1"],
        None,
    );
    let new = crd(
        vec![version(
            "v1",
            true,
            true,
            json!({"a": {"type": "string", "description": "new"}}),
        )],
        &[],
        None,
    );
    assert!(!upstream(&old, &new).upstream_refuses());
}

#[test]
fn failures_of_every_kind_are_listed() {
    // As upstream's "new crd validation failures (all except existing field removal)".
    let old = crd(
        vec![
            version("v1alpha1", true, false, json!({})),
            version(
                "v1",
                true,
                true,
                json!({
                "e": {"type": "string", "enum": ["a", "b"]},
                "n": {"type": "integer", "minimum": 1, "maximum": 10},
                "t": {"type": "string"},
                "d": {"type": "string", "default": "x"}}),
            ),
        ],
        &["v1alpha1", "v1"],
        None,
    );
    let mut new = crd(
        vec![version(
            "v1",
            true,
            true,
            json!({
            "e": {"type": "string", "enum": ["a"]},
            "n": {"type": "integer", "minimum": 2, "maximum": 5},
            "t": {"type": "boolean"},
            "d": {"type": "string", "default": "y"}}),
        )],
        &[],
        None,
    );
    new.scope = "Cluster".into();
    let msg = text(&upstream(&old, &new));
    for want in [
        "scope: scope changed : \"Namespaced\" -> \"Cluster\"",
        "storedVersionRemoval: stored versions removed : [v1alpha1]",
        "v1: ^.spec.e: enum: allowed enum values removed : [\"b\"]",
        "v1: ^.spec.n: maximum: maximum decreased : 10 -> 5",
        "v1: ^.spec.n: minimum: minimum increased : 1 -> 2",
        "v1: ^.spec.t: type: type changed : \"string\" -> \"boolean\"",
        "v1: ^.spec.d: default: default value changed : \"\\\"x\\\"\" -> \"\\\"y\\\"\"",
    ] {
        assert!(msg.contains(want), "missing {want:?} in {msg}");
    }
}

fn two_served(v2_enum: &[&str], extra_v2: Option<Value>, conversion: Option<&str>) -> Crd {
    let mut v2 = json!({"e": {"type": "string", "enum": v2_enum}});
    if let Some(extra) = extra_v2 {
        v2["extraField"] = extra;
    }
    crd(
        vec![
            version(
                "v1",
                true,
                true,
                json!({"e": {"type": "string", "enum": ["a", "b"]}, "extraField": {"type": "boolean"}}),
            ),
            version("v2", true, false, v2),
        ],
        &["v1"],
        conversion,
    )
}

#[test]
fn webhook_conversion_skips_served_version_checks() {
    let old = crd(
        vec![version(
            "v1",
            true,
            true,
            json!({"e": {"type": "string", "enum": ["a", "b"]}, "extraField": {"type": "boolean"}}),
        )],
        &["v1"],
        Some("Webhook"),
    );
    let new = two_served(&["a"], None, Some("Webhook"));
    assert!(!upstream(&old, &new).upstream_refuses());
}

#[test]
fn without_webhook_an_enum_narrowed_between_served_versions_fails() {
    let old = crd(
        vec![version(
            "v1",
            true,
            true,
            json!({"e": {"type": "string", "enum": ["a", "b"]}, "extraField": {"type": "boolean"}}),
        )],
        &["v1"],
        Some("Webhook"),
    );
    let new = two_served(&["a"], None, None);
    let msg = text(&upstream(&old, &new));
    assert!(
        msg.contains("v1 -> v2: ^.spec.e: enum: allowed enum values removed : [\"b\"]"),
        "{msg}"
    );
}

#[test]
fn issues_the_old_crd_already_had_are_ratcheted() {
    let old = two_served(&["a"], None, None);
    let new = two_served(&["a"], None, None);
    assert!(!upstream(&old, &new).upstream_refuses());
}

#[test]
fn a_new_served_version_issue_is_reported_but_not_the_known_one() {
    let old = two_served(&["a"], Some(json!({"type": "boolean"})), None);
    let new = two_served(&["a"], Some(json!({"type": "string"})), None);
    let msg = text(&upstream(&old, &new));
    assert!(
        msg.contains("v1 -> v2: ^.spec.extraField: type: type changed : \"boolean\" -> \"string\""),
        "{msg}"
    );
    assert!(!msg.contains("enum"), "{msg}");
}

#[test]
fn oneof_removal_and_addition_are_reported_by_the_oneof_rule() {
    let with = json!({"o": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}});
    let without = json!({"o": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}});
    let old = crd(vec![version("v1", true, true, with.clone())], &["v1"], None);
    let new = crd(vec![version("v1", true, true, without.clone())], &[], None);
    assert!(text(&upstream(&old, &new)).contains("oneOf: allowed oneOf schemas removed"));
    let old = crd(vec![version("v1", true, true, without)], &["v1"], None);
    let new = crd(vec![version("v1", true, true, with)], &[], None);
    let msg = text(&upstream(&old, &new));
    assert!(msg.contains("oneOf: oneOf constraint added"), "{msg}");
    assert!(
        !msg.contains("unhandled") && !msg.contains("type:"),
        "{msg}"
    );
}

#[test]
fn unhandled_changes_are_concise() {
    let old = crd(
        vec![version("v1", true, true, json!({"m": {"type": "string"}}))],
        &["v1"],
        None,
    );
    let new = crd(
        vec![version(
            "v1",
            true,
            true,
            json!({"m": {"type": "string", "format": "email"}}),
        )],
        &[],
        None,
    );
    let msg = text(&upstream(&old, &new));
    assert!(
        msg.contains("unhandled changes found (Format \"\" -> \"email\")"),
        "{msg}"
    );
    assert!(!msg.contains("v1.JSONSchemaProps"), "{msg}");
}
