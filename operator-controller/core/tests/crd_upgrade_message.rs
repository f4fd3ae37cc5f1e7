//! The `Progressing` message: upstream's wrapping, the summary line first, the 32768-byte limit;
//! the data-aware validator on small schemas; the step error's reason.
#![allow(clippy::unwrap_used)]

use olm_api::v1::ConditionReason;
use olm_operator_core::crd_upgrade::message::compose_with_limit;
use olm_operator_core::crd_upgrade::{
    CheckOptions, Crd, CrdUpgradeError, MAX_CONDITION_MESSAGE_BYTES, ViolationKind, check_all,
    check_upgrade, compose_progressing_message, validate_objects, yaml,
};
use serde_json::json;

fn crd(name: &str, props: serde_json::Value) -> Crd {
    Crd::from_value(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": props}}}}}]
        },
        "status": {"storedVersions": ["v1"]}
    }))
    .unwrap()
}

#[test]
fn a_refusal_is_wrapped_as_upstream_with_the_summary_line_first() {
    let old = crd(
        "widgets.example.com",
        json!({"a": {"type": "string"}, "b": {"type": "string"}}),
    );
    let new = crd("widgets.example.com", json!({"a": {"type": "string"}}));
    let v = check_upgrade(&old, &new, &CheckOptions::default());
    let msg = compose_progressing_message("w.v2", "2.0.0", &[v]).unwrap();
    // Entry texts: upstream's (conformance data synthetic/existing-field-removal).
    assert_eq!(
        msg,
        "error for resolved bundle \"w.v2\" with version \"2.0.0\": 1 CRD, 2 violations\n\
         validating upgrade for CRD \"widgets.example.com\": existingFieldRemoval: removed field : v1.^.spec.b\n\
         v1: ^.spec.b: type: type changed : \"string\" -> \"\""
    );
}

#[test]
fn no_message_when_every_crd_is_safe() {
    let old = crd("widgets.example.com", json!({"a": {"type": "string"}}));
    let new = crd(
        "widgets.example.com",
        json!({"a": {"type": "string", "nullable": true}}),
    );
    let v = check_upgrade(&old, &new, &CheckOptions::default());
    assert!(v.upstream_refuses());
    assert_eq!(compose_progressing_message("b", "1", &[v]), None);
}

#[test]
fn a_long_message_keeps_whole_entries_within_the_limit() {
    let many: serde_json::Map<String, serde_json::Value> = (0..3000)
        .map(|i| (format!("field{i:04}"), json!({"type": "string"})))
        .collect();
    let old = crd("widgets.example.com", serde_json::Value::Object(many));
    let new = crd("widgets.example.com", json!({}));
    let v = check_upgrade(&old, &new, &CheckOptions::default());
    assert_eq!(v.blocking().count(), 6000);
    let msg = compose_progressing_message("b", "1", std::slice::from_ref(&v)).unwrap();
    assert!(msg.len() <= MAX_CONDITION_MESSAGE_BYTES, "{}", msg.len());
    assert!(msg.starts_with(
        "error for resolved bundle \"b\" with version \"1\": 1 CRD, 6000 violations\n"
    ));
    let last = msg.lines().last().unwrap();
    assert!(
        last.starts_with("... ") && last.ends_with(" more violations not shown"),
        "{last}"
    );
    let shown = msg.lines().count() - 2;
    let hidden: usize = last.split(' ').nth(1).unwrap().parse().unwrap();
    assert_eq!(shown + hidden, 6000);
    // A tiny limit still yields the summary and the count.
    let small = compose_with_limit("b", "1", &[v], 120).unwrap();
    assert!(small.len() <= 120, "{small}");
    assert!(
        small.ends_with("... 6000 more violations not shown"),
        "{small}"
    );
}

#[test]
fn several_crds_are_joined_with_newlines_and_the_error_retries() {
    let a_old = crd("a.example.com", json!({"x": {"type": "string"}}));
    let a_new = crd("a.example.com", json!({"x": {"type": "integer"}}));
    let b_old = crd(
        "b.example.com",
        json!({"y": {"type": "string", "enum": ["p", "q"]}}),
    );
    let b_new = crd(
        "b.example.com",
        json!({"y": {"type": "string", "enum": ["p"]}}),
    );
    let err = check_all(
        &[(&a_old, &a_new), (&b_old, &b_new)],
        &CheckOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "validating upgrade for CRD \"a.example.com\": v1: ^.spec.x: type: type changed : \"string\" -> \"integer\"\n\
         validating upgrade for CRD \"b.example.com\": v1: ^.spec.y: enum: allowed enum values removed : [\"q\"]"
    );
    assert_eq!(err.condition_reason(), ConditionReason::Retrying);
    assert!(!err.is_terminal());
    assert!(matches!(err, CrdUpgradeError::Unsafe(_)));
}

#[test]
fn enforcement_none_skips_the_check() {
    let old = crd("w.example.com", json!({"x": {"type": "string"}}));
    let new = crd("w.example.com", json!({"x": {"type": "integer"}}));
    let v = check_upgrade(
        &old,
        &new,
        &CheckOptions {
            enforcement: olm_operator_core::crd_upgrade::Enforcement::None,
            ..Default::default()
        },
    );
    assert!(v.skipped && v.is_safe() && !v.upstream_refuses());
}

#[test]
fn the_validator_names_object_field_and_rule() {
    let new = crd(
        "widgets.example.com",
        json!({
            "n": {"type": "integer", "minimum": 1, "maximum": 10},
            "s": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3},
            "d": {"type": "string", "format": "date"},
            "l": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "r": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}},
            "c": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'x'"}]}
        }),
    );
    let objects = [
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "good", "namespace": "ns"},
               "spec": {"n": 5, "s": "abc", "d": "2024-02-29", "l": ["a", "b"], "r": {"k": "v"}}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "bad", "namespace": "ns"},
               "spec": {"n": 11, "s": "ABCD", "d": "2023-02-29", "l": ["a", "a"], "r": {}, "c": "y", "extra": 1}}),
        json!({"apiVersion": "example.com/v9", "kind": "Widget", "metadata": {"name": "old"}}),
    ];
    let found = validate_objects(&new, &objects);
    let summary: Vec<(String, String, String, ViolationKind)> = found
        .iter()
        .map(|v| (v.object(), v.field.clone(), v.rule.clone(), v.kind))
        .collect();
    use ViolationKind::*;
    let want = [
        (
            "ns/bad",
            ".spec.c",
            "x-kubernetes-validations",
            NotEvaluated,
        ),
        ("ns/bad", ".spec.extra", "pruned", Violated),
        ("ns/bad", ".spec.l", "x-kubernetes-list-type", Violated),
        ("ns/bad", ".spec.n", "maximum", Violated),
        ("ns/bad", ".spec.r", "required", Violated),
        ("ns/bad", ".spec.d", "format", Violated),
        ("ns/bad", ".spec.s", "maxLength", Violated),
        ("ns/bad", ".spec.s", "pattern", Violated),
        ("old", "", "version", Violated),
    ];
    let mut got = summary.clone();
    got.sort();
    let mut want: Vec<(String, String, String, ViolationKind)> = want
        .iter()
        .map(|(o, f, r, k)| (o.to_string(), f.to_string(), r.to_string(), *k))
        .collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn yaml_numbers_become_what_upstreams_decoder_sees() {
    let docs = yaml::parse_documents("a: 1.0\nb: 1.5\nc: 0x10\nd: yes\n").unwrap();
    assert_eq!(docs[0], json!({"a": 1, "b": 1.5, "c": 16, "d": true}));
}
