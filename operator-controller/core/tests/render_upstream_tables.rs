//! Upstream's unit-test tables for registry+v1 rendering, reproduced where they cover what the
//! golden files do not: validator messages and their order, configuration messages per install
//! mode set, service ports, webhook names and namespace selectors, conversion webhooks,
//! deploymentConfig merges (affinity in particular), provider gating and target namespaces.
//!
//! Sources (operator-framework/operator-controller df2c201d, `internal/operator-controller/`):
//! `rukpak/render/registryv1/validators/validator_test.go`, `config/config_test.go`,
//! `rukpak/render/registryv1/generators/generators_test.go`, `rukpak/render/render_test.go`,
//! `applier/provider_test.go`. Each test names its upstream test.
#![allow(clippy::unwrap_used)]

mod render_common;

use olm_operator_core::bundle::{BundleAnnotations, Crd, Csv, RegistryV1Bundle, validate};
use olm_operator_core::gotype::{Mode, round_trip};
use olm_operator_core::render::config::{config_schema, validate_config};
use olm_operator_core::render::{
    self, BundleRenderParams, CertProvider, DeploymentConfig, RenderOptions, generators,
};
use render_common::yaml_text_value;
use serde_json::{Value, json};

/// A bundle from a CSV `spec` (JSON), CRD names (with optional specs) and a package name.
fn bundle_with(spec: Value, crds: &[(&str, Value)], package: &str) -> RegistryV1Bundle {
    let csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "test-operator.v1.0.0"},
        "spec": spec
    });
    let csv = round_trip("ClusterServiceVersion", &csv, Mode::Unstructured).unwrap();
    RegistryV1Bundle {
        annotations: BundleAnnotations {
            package: package.into(),
            ..BundleAnnotations::default()
        },
        csv: Csv::from_value(csv).unwrap(),
        crds: crds
            .iter()
            .map(|(name, spec)| Crd {
                name: (*name).to_owned(),
                source: "test".into(),
                value: round_trip(
                    "CustomResourceDefinition",
                    &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}, "spec": spec}),
                    Mode::Unstructured,
                )
                .unwrap(),
            })
            .collect(),
        others: Vec::new(),
        warnings: Vec::new(),
    }
}

fn bundle(spec: Value) -> RegistryV1Bundle {
    bundle_with(spec, &[], "test-package")
}

fn install_modes(modes: &[&str]) -> Value {
    let all = [
        "AllNamespaces",
        "MultiNamespace",
        "OwnNamespace",
        "SingleNamespace",
    ];
    Value::Array(
        all.iter()
            .map(|m| json!({"type": m, "supported": modes.contains(m)}))
            .collect(),
    )
}

fn deployments(names: &[&str]) -> Value {
    json!({"strategy": "deployment", "spec": {"deployments": names.iter().map(|n| json!({"name": n, "spec": {}})).collect::<Vec<_>>()}})
}

// --- validators (validator_test.go) ---

#[test]
fn validator_messages_and_order_match_upstream() {
    // Test_CheckDeploymentSpecUniqueness: errors ordered by name.
    let b = bundle(
        json!({"install": deployments(&["test-deployment-b", "test-deployment-a", "test-deployment-b", "test-deployment-a", "test-deployment-c"])}),
    );
    assert_eq!(
        validate::deployment_spec_uniqueness(&b),
        [
            "cluster service version contains duplicate strategy deployment spec 'test-deployment-a'",
            "cluster service version contains duplicate strategy deployment spec 'test-deployment-b'"
        ]
    );
    // Test_CheckDeploymentNameIsDNS1123SubDomain: sorted by name, each name's errors sorted.
    let long = format!("a-name-is-wa{}y-too-long-and-bad-", "a".repeat(250));
    let long_ok = format!("b-name-is-wa{}y-too-long", "a".repeat(250));
    let b = bundle(json!({"install": deployments(&[&long_ok, "-bad-name", &long])}));
    let regex = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    assert_eq!(
        validate::deployment_names_are_dns1123_subdomains(&b),
        [
            format!(
                "invalid cluster service version strategy deployment name '-bad-name': {regex}"
            ),
            format!(
                "invalid cluster service version strategy deployment name '{long}': {regex}, must be no more than 253 characters"
            ),
            format!(
                "invalid cluster service version strategy deployment name '{long_ok}': must be no more than 253 characters"
            ),
        ]
    );
    // Test_CheckCRDResourceUniqueness and Test_CheckOwnedCRDExistence.
    let b = bundle_with(
        json!({"customresourcedefinitions": {"owned": [{"name": "c.crd.something"}, {"name": "a.crd.something"}, {"name": "b.crd.something"}]}}),
        &[
            ("c.crd.something", json!({})),
            ("a.crd.something", json!({})),
            ("a.crd.something", json!({})),
            ("c.crd.something", json!({})),
        ],
        "p",
    );
    assert_eq!(
        validate::crd_uniqueness(&b),
        [
            "bundle contains duplicate custom resource definition 'a.crd.something'",
            "bundle contains duplicate custom resource definition 'c.crd.something'"
        ]
    );
    assert_eq!(
        validate::owned_crds_exist(&b),
        [
            "cluster service definition references owned custom resource definition 'b.crd.something' not found in bundle"
        ]
    );
    // Test_CheckPackageNameNotEmpty.
    assert_eq!(
        validate::package_name_not_empty(&bundle_with(json!({}), &[], "")),
        ["package name is empty"]
    );
}

#[test]
fn conversion_webhook_and_webhook_rule_validators_keep_csv_order() {
    // Test_CheckConversionWebhookSupport: one error per conversion webhook, in CSV order.
    let b = bundle(json!({
        "installModes": install_modes(&["AllNamespaces", "SingleNamespace"]),
        "webhookdefinitions": [
            {"type": "ConversionWebhook", "generateName": "webhook-b", "admissionReviewVersions": ["v1"], "sideEffects": "None"},
            {"type": "ConversionWebhook", "generateName": "webhook-a", "admissionReviewVersions": ["v1"], "sideEffects": "None"},
            {"type": "ValidatingAdmissionWebhook", "generateName": "webhook-v", "admissionReviewVersions": ["v1"], "sideEffects": "None"}
        ]
    }));
    let suffix = "and supports install modes [AllNamespaces SingleNamespace] - conversion webhooks are only supported for bundles that only support AllNamespaces install mode";
    assert_eq!(
        validate::conversion_webhook_support(&b),
        [
            format!("bundle contains conversion webhook \"webhook-b\" {suffix}"),
            format!("bundle contains conversion webhook \"webhook-a\" {suffix}")
        ]
    );
    // Test_CheckWebhookRules.
    let rule = |groups: &[&str], resources: &[&str]| json!({"operations": ["CREATE"], "apiGroups": groups, "apiVersions": ["*"], "resources": resources});
    let b = bundle(json!({"webhookdefinitions": [
        {"type": "ValidatingAdmissionWebhook", "generateName": "webhook-z", "rules": [rule(&["appsv1"], &["deployments"]), rule(&["*"], &["*"])]},
        {"type": "MutatingAdmissionWebhook", "generateName": "webhook-a", "rules": [rule(&["olm.operatorframework.io"], &["x"])]},
        {"type": "MutatingAdmissionWebhook", "generateName": "webhook-r", "rules": [rule(&["admissionregistration.k8s.io"], &["*", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "ValidatingWebhookConfiguration", "validatingwebhookconfiguration", "validatingwebhookconfigurations", "other"])]},
        {"type": "ConversionWebhook", "generateName": "webhook-c", "rules": [rule(&["*"], &["*"])]}
    ]}));
    let resource = |r: &str| {
        format!(
            "webhook \"webhook-r\" contains forbidden rule: admission webhook rules cannot reference resource \"{r}\" for API group \"admissionregistration.k8s.io\""
        )
    };
    assert_eq!(
        validate::webhook_rules(&b),
        [
            "webhook \"webhook-z\" contains forbidden rule: admission webhook rules cannot reference API group \"*\"".to_owned(),
            "webhook \"webhook-a\" contains forbidden rule: admission webhook rules cannot reference API group \"olm.operatorframework.io\"".to_owned(),
            resource("*"),
            resource("MutatingWebhookConfiguration"),
            resource("mutatingwebhookconfigurations"),
            resource("ValidatingWebhookConfiguration"),
            resource("validatingwebhookconfiguration"),
            resource("validatingwebhookconfigurations"),
        ]
    );
}

#[test]
fn webhook_reference_and_name_validators_sort_as_upstream() {
    // Test_CheckWebhookDeploymentReferentialIntegrity: by deployment, type, name.
    let wh = |t: &str, name: &str, dep: &str| json!({"type": t, "generateName": name, "deploymentName": dep});
    let b = bundle(json!({
        "install": deployments(&["test-deployment-one"]),
        "webhookdefinitions": [
            wh("ValidatingAdmissionWebhook", "test-val-webhook-c", "test-deployment-c"),
            wh("MutatingAdmissionWebhook", "test-mute-webhook-a", "test-deployment-a"),
            wh("ConversionWebhook", "test-conv-webhook-b", "test-deployment-b"),
            wh("MutatingAdmissionWebhook", "test-mute-webhook-c", "test-deployment-c"),
            wh("ConversionWebhook", "test-conv-webhook-c-b", "test-deployment-c"),
            wh("ConversionWebhook", "test-conv-webhook-c-a", "test-deployment-c"),
            wh("ValidatingAdmissionWebhook", "ok", "test-deployment-one"),
        ]
    }));
    let e = |t: &str, n: &str, d: &str| {
        format!("webhook of type '{t}' with name '{n}' references non-existent deployment '{d}'")
    };
    assert_eq!(
        validate::webhook_deployment_referential_integrity(&b),
        [
            e(
                "MutatingAdmissionWebhook",
                "test-mute-webhook-a",
                "test-deployment-a"
            ),
            e(
                "ConversionWebhook",
                "test-conv-webhook-b",
                "test-deployment-b"
            ),
            e(
                "ConversionWebhook",
                "test-conv-webhook-c-a",
                "test-deployment-c"
            ),
            e(
                "ConversionWebhook",
                "test-conv-webhook-c-b",
                "test-deployment-c"
            ),
            e(
                "MutatingAdmissionWebhook",
                "test-mute-webhook-c",
                "test-deployment-c"
            ),
            e(
                "ValidatingAdmissionWebhook",
                "test-val-webhook-c",
                "test-deployment-c"
            ),
        ]
    );
    // Test_CheckWebhookNameUniqueness: same name of different types is fine.
    let b = bundle(json!({"webhookdefinitions": [
        wh("ValidatingAdmissionWebhook", "test-val-webhook-b", "d"), wh("ValidatingAdmissionWebhook", "test-val-webhook-b", "d"),
        wh("ValidatingAdmissionWebhook", "test-val-webhook-a", "d"), wh("ValidatingAdmissionWebhook", "test-val-webhook-a", "d"),
        wh("ConversionWebhook", "test-conv-webhook-a", "d"), wh("ConversionWebhook", "test-conv-webhook-a", "d"),
        wh("MutatingAdmissionWebhook", "test-val-webhook-a", "d"),
    ]}));
    assert_eq!(
        validate::webhook_name_uniqueness(&b),
        [
            "duplicate webhook 'test-conv-webhook-a' of type 'ConversionWebhook'",
            "duplicate webhook 'test-val-webhook-a' of type 'ValidatingAdmissionWebhook'",
            "duplicate webhook 'test-val-webhook-b' of type 'ValidatingAdmissionWebhook'"
        ]
    );
    // Test_CheckConversionWebhookCRDReferenceUniqueness and ..ReferenceOwnedCRDs.
    let cw = |name: &str, crds: &[&str]| json!({"type": "ConversionWebhook", "generateName": name, "deploymentName": "d", "conversionCRDs": crds});
    let b = bundle(json!({
        "customresourcedefinitions": {"owned": [{"name": "b.crd.something"}]},
        "webhookdefinitions": [cw("test-webhook-c", &["d.crd.something", "a.crd.something"]), cw("test-webhook-a", &["c.crd.something", "a.crd.something", "b.crd.something"])]
    }));
    assert_eq!(
        validate::conversion_webhook_crd_reference_uniqueness(&b),
        [
            "conversion webhooks [test-webhook-a,test-webhook-c] reference same custom resource definition 'a.crd.something'"
        ]
    );
    let e = |w: &str, c: &str| {
        format!(
            "conversion webhook '{w}' references custom resource definition '{c}' not owned bundle"
        )
    };
    assert_eq!(
        validate::conversion_webhooks_reference_owned_crds(&b),
        [
            e("test-webhook-a", "a.crd.something"),
            e("test-webhook-a", "c.crd.something"),
            e("test-webhook-c", "a.crd.something"),
            e("test-webhook-c", "d.crd.something"),
        ]
    );
    // Test_CheckWebhookNameIsDNS1123SubDomain: the errors of one name joined with a comma.
    let b =
        bundle(json!({"webhookdefinitions": [wh("ValidatingAdmissionWebhook", "Bad_Name", "d")]}));
    let errs = validate::webhook_names_are_dns1123_subdomains(&b);
    assert_eq!(errs.len(), 1);
    assert!(errs[0].starts_with("webhook of type 'ValidatingAdmissionWebhook' has invalid name 'Bad_Name': a lowercase RFC 1123 subdomain"), "{errs:?}");
}

// --- configuration (config_test.go Test_UnmarshalConfig) ---

#[test]
fn configuration_messages_per_install_mode_set_match_upstream() {
    // (modes, raw config or None, install namespace, Ok(watch namespace) | Err(substring)).
    type Expect = Result<Option<&'static str>, &'static str>;
    let missing: Expect = Err(r#"required field "watchNamespace" is missing"#);
    let unknown: Expect = Err(r#"unknown field "watchNamespace""#);
    let invalid: Expect = Err("invalid configuration:");
    let cases: Vec<(&[&str], Option<&str>, &str, Expect)> = vec![
        (&["AllNamespaces"], None, "", Ok(None)),
        (&["OwnNamespace"], None, "", missing),
        (&["SingleNamespace"], None, "", missing),
        (
            &["SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "install-ns",
            Ok(Some("some-namespace")),
        ),
        (
            &["SingleNamespace"],
            Some("watchNamespace: some-namespace"),
            "install-ns",
            Ok(Some("some-namespace")),
        ),
        (
            &["SingleNamespace"],
            Some("true"),
            "",
            Err("got boolean, want object"),
        ),
        (
            &["AllNamespaces"],
            Some("somekey: somevalue"),
            "",
            Err(r#"unknown field "somekey""#),
        ),
        (
            &["AllNamespaces"],
            Some(r#"{"deploymentConfig": {"selector": {"matchLabels": {"app": "test"}}}}"#),
            "",
            Err(r#"unknown field "selector""#),
        ),
        (
            &["SingleNamespace"],
            Some(r#"{"watchNamespace": {"hello": "there"}}"#),
            "",
            Err("got object, want string"),
        ),
        (
            &["AllNamespaces"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "",
            unknown,
        ),
        (
            &["MultiNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "",
            unknown,
        ),
        (
            &["AllNamespaces", "MultiNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "",
            unknown,
        ),
        (
            &["OwnNamespace"],
            Some(r#"{"watchNamespace": null}"#),
            "",
            missing,
        ),
        (&["OwnNamespace"], Some("{}"), "", missing),
        (
            &["MultiNamespace", "OwnNamespace"],
            Some(r#"{"watchNamespace": null}"#),
            "",
            missing,
        ),
        (&["MultiNamespace", "OwnNamespace"], Some("{}"), "", missing),
        (
            &["SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "install-ns",
            Ok(Some("some-namespace")),
        ),
        (
            &["AllNamespaces", "SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "install-ns",
            Ok(Some("some-namespace")),
        ),
        (
            &["MultiNamespace", "SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "install-ns",
            Ok(Some("some-namespace")),
        ),
        (
            &["OwnNamespace", "SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "not-namespace",
            Ok(Some("some-namespace")),
        ),
        (
            &["SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "some-namespace",
            invalid,
        ),
        (
            &["AllNamespaces", "SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "some-namespace",
            invalid,
        ),
        (
            &["MultiNamespace", "SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "some-namespace",
            invalid,
        ),
        (
            &["AllNamespaces", "OwnNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "some-namespace",
            Ok(Some("some-namespace")),
        ),
        (
            &["OwnNamespace", "SingleNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "some-namespace",
            Ok(Some("some-namespace")),
        ),
        (
            &["AllNamespaces", "OwnNamespace"],
            Some(r#"{"watchNamespace": "some-namespace"}"#),
            "not-some-namespace",
            invalid,
        ),
        (
            &["SingleNamespace"],
            Some(r#"{"watchNamespace": null}"#),
            "not-some-namespace",
            missing,
        ),
        (
            &["SingleNamespace", "OwnNamespace"],
            Some(r#"{"watchNamespace": null}"#),
            "not-some-namespace",
            missing,
        ),
        (
            &["SingleNamespace", "MultiNamespace"],
            Some(r#"{"watchNamespace": null}"#),
            "not-some-namespace",
            missing,
        ),
        (
            &["SingleNamespace"],
            Some("{}"),
            "not-some-namespace",
            missing,
        ),
        (
            &["SingleNamespace", "OwnNamespace"],
            Some("{}"),
            "not-some-namespace",
            missing,
        ),
        (
            &["SingleNamespace", "MultiNamespace"],
            Some("{}"),
            "not-some-namespace",
            missing,
        ),
        (
            &["SingleNamespace", "OwnNamespace", "MultiNamespace"],
            Some(r#"{"watchNamespace": null}"#),
            "not-some-namespace",
            missing,
        ),
        (
            &["AllNamespaces", "OwnNamespace"],
            Some(r#"{"watchNamespace": null}"#),
            "not-some-namespace",
            Ok(None),
        ),
        (
            &["AllNamespaces", "OwnNamespace", "MultiNamespace"],
            Some(r#"{"watchNamespace": null}"#),
            "not-some-namespace",
            Ok(None),
        ),
        (
            &["AllNamespaces", "OwnNamespace"],
            Some("{}"),
            "not-some-namespace",
            Ok(None),
        ),
        (
            &["AllNamespaces", "OwnNamespace", "MultiNamespace"],
            Some("{}"),
            "not-some-namespace",
            Ok(None),
        ),
        (
            &["OwnNamespace"],
            Some(r#"{"watchNamespace": "valid-ns"}"#),
            "",
            Ok(Some("valid-ns")),
        ),
    ];
    for (i, (modes, raw, ns, expect)) in cases.into_iter().enumerate() {
        let mut modes: Vec<String> = modes.iter().map(|m| (*m).to_owned()).collect();
        modes.sort();
        let schema = config_schema(&modes, true);
        let config = raw.map(|r| yaml_text_value(r.as_bytes()));
        let got = validate_config(config.as_ref(), &schema, ns);
        match (expect, got) {
            (Ok(want), Ok(cfg)) => assert_eq!(cfg.watch_namespace.as_deref(), want, "case {i}"),
            (Err(want), Err(got)) => {
                assert!(got.contains(want), "case {i}: {got:?} lacks {want:?}")
            }
            (expect, got) => panic!("case {i} {modes:?} {raw:?}: expected {expect:?}, got {got:?}"),
        }
    }
}

// --- generators (generators_test.go) ---

fn generate(
    bundle: &RegistryV1Bundle,
    install: &str,
    targets: &[&str],
    provider: CertProvider,
) -> Vec<Value> {
    let targets: Vec<String> = targets.iter().map(|t| (*t).to_owned()).collect();
    generators::generate(&generators::Context {
        bundle,
        install_namespace: install,
        target_namespaces: &targets,
        cert_provider: provider,
        deployment_config: None,
    })
    .unwrap()
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects
        .iter()
        .filter(|o| render::object_kind(o) == kind)
        .collect()
}

#[test]
fn webhook_services_default_ports_and_aggregate_per_deployment() {
    // Test_BundleDeploymentServiceResourceGenerator_Succeeds.
    let wh = |t: &str, extra: Value| {
        let mut w = json!({"type": t, "generateName": format!("{}-w", t.to_lowercase()), "deploymentName": "my-deployment", "admissionReviewVersions": ["v1"], "sideEffects": "None"});
        w.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        w
    };
    let install = json!({"strategy": "deployment", "spec": {"deployments": [{"name": "my-deployment", "spec": {"selector": {"matchLabels": {"foo": "bar"}}}}]}});
    let cases = [
        (
            vec![wh("MutatingAdmissionWebhook", json!({}))],
            json!([{"name": "443", "port": 443, "targetPort": 443}]),
        ),
        (
            vec![wh(
                "ValidatingAdmissionWebhook",
                json!({"containerPort": 8443}),
            )],
            json!([{"name": "8443", "port": 8443, "targetPort": 8443}]),
        ),
        (
            vec![wh("ConversionWebhook", json!({"targetPort": 8080}))],
            json!([{"name": "443", "port": 443, "targetPort": 8080}]),
        ),
        (
            vec![wh(
                "ConversionWebhook",
                json!({"containerPort": 9090, "targetPort": 9099}),
            )],
            json!([{"name": "9090", "port": 9090, "targetPort": 9099}]),
        ),
        (
            vec![
                wh("MutatingAdmissionWebhook", json!({})),
                wh("ValidatingAdmissionWebhook", json!({"containerPort": 8443})),
                wh(
                    "ConversionWebhook",
                    json!({"targetPort": 8080, "generateName": "c1"}),
                ),
                wh(
                    "ConversionWebhook",
                    json!({"containerPort": 9090, "targetPort": 9099, "generateName": "c2"}),
                ),
                wh(
                    "ValidatingAdmissionWebhook",
                    json!({"generateName": "again"}),
                ),
            ],
            json!([
                {"name": "443", "port": 443, "targetPort": 443},
                {"name": "443", "port": 443, "targetPort": 8080},
                {"name": "8443", "port": 8443, "targetPort": 8443},
                {"name": "9090", "port": 9090, "targetPort": 9099}
            ]),
        ),
    ];
    for (webhooks, ports) in cases {
        let b = bundle(json!({"install": install, "webhookdefinitions": webhooks}));
        let objects = generate(
            &b,
            "install-namespace",
            &["watch-namespace-one", "watch-namespace-two"],
            CertProvider::None,
        );
        let services = of_kind(&objects, "Service");
        assert_eq!(services.len(), 1);
        assert_eq!(
            *services[0],
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "my-deployment-service", "namespace": "install-namespace"},
                "spec": {"ports": ports, "selector": {"foo": "bar"}},
                "status": {"loadBalancer": {}}
            })
        );
    }
}

#[test]
fn webhook_configurations_trim_generate_name_and_select_target_namespaces() {
    // Test_BundleValidatingWebhookResourceGenerator_Succeeds / ..Mutating..: "removes any -
    // suffixes from the webhook name", namespaceSelector over the target namespaces.
    let b = bundle(json!({
        "install": deployments(&["my-deployment"]),
        "webhookdefinitions": [
            {"type": "ValidatingAdmissionWebhook", "generateName": "my-val-webhook-", "deploymentName": "my-deployment", "containerPort": 443, "admissionReviewVersions": ["v1", "v1beta1"], "sideEffects": "None", "webhookPath": "/webhook-path", "timeoutSeconds": 1, "failurePolicy": "Fail", "matchPolicy": "Equivalent", "objectSelector": {"matchLabels": {"foo": "bar"}}, "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": [""], "resources": ["namespaces"]}]},
            {"type": "MutatingAdmissionWebhook", "generateName": "my-mutating-webhook", "deploymentName": "my-deployment", "containerPort": 443, "admissionReviewVersions": ["v1"], "sideEffects": "None", "reinvocationPolicy": "IfNeeded"}
        ]
    }));
    let objects = generate(
        &b,
        "install-namespace",
        &["watch-namespace-one", "watch-namespace-two"],
        CertProvider::None,
    );
    let selector = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["watch-namespace-one", "watch-namespace-two"]}]});
    assert_eq!(
        *of_kind(&objects, "ValidatingWebhookConfiguration")[0],
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "my-val-webhook", "namespace": "install-namespace"},
            "webhooks": [{
                "name": "my-val-webhook",
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": [""], "resources": ["namespaces"]}],
                "failurePolicy": "Fail", "matchPolicy": "Equivalent",
                "objectSelector": {"matchLabels": {"foo": "bar"}},
                "sideEffects": "None", "timeoutSeconds": 1,
                "admissionReviewVersions": ["v1", "v1beta1"],
                "clientConfig": {"service": {"namespace": "install-namespace", "name": "my-deployment-service", "path": "/webhook-path", "port": 443}},
                "namespaceSelector": selector
            }]
        })
    );
    let mwc = of_kind(&objects, "MutatingWebhookConfiguration")[0];
    assert_eq!(mwc["webhooks"][0]["reinvocationPolicy"], json!("IfNeeded"));
    assert_eq!(
        mwc["webhooks"][0]["clientConfig"]["service"].get("path"),
        None
    );
    // AllNamespaces: no namespaceSelector.
    let objects = generate(&b, "install-namespace", &[""], CertProvider::None);
    assert_eq!(
        of_kind(&objects, "MutatingWebhookConfiguration")[0]["webhooks"][0]
            .get("namespaceSelector"),
        None
    );
}

#[test]
fn permissions_become_roles_in_every_target_namespace_and_cluster_roles_in_all_namespaces() {
    // Test_BundleCSVPermissionsGenerator_Succeeds / Test_BundleCSVClusterPermissionsGenerator_Succeeds.
    let rule = json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"]});
    let b = bundle(json!({"install": {"strategy": "deployment", "spec": {
        "deployments": [],
        "permissions": [{"serviceAccountName": "service-account-one", "rules": [rule]}, {"serviceAccountName": "", "rules": [rule]}],
        "clusterPermissions": [{"serviceAccountName": "service-account-two", "rules": [rule]}]
    }}}));
    let objects = generate(
        &b,
        "install-namespace",
        &["ns-one", "ns-two"],
        CertProvider::None,
    );
    let roles = of_kind(&objects, "Role");
    assert_eq!(roles.len(), 4);
    assert_eq!(
        roles
            .iter()
            .map(|r| render::object_namespace(r))
            .collect::<Vec<_>>(),
        ["ns-one", "ns-one", "ns-two", "ns-two"]
    );
    let bindings = of_kind(&objects, "RoleBinding");
    assert_eq!(
        bindings[1]["subjects"],
        json!([{"kind": "ServiceAccount", "name": "default", "namespace": "install-namespace"}])
    );
    // `<csv>-<sa>` is cut so that the name with its 43-44 character hash stays within 63.
    assert!(render::object_name(bindings[1]).starts_with("test-operator.v1.0"));
    assert!(render::object_name(bindings[1]).len() <= 63);
    assert_eq!(of_kind(&objects, "ClusterRole").len(), 1);
    let sas: Vec<&str> = of_kind(&objects, "ServiceAccount")
        .iter()
        .map(|s| render::object_name(s))
        .collect();
    assert_eq!(sas, ["service-account-one", "service-account-two"]);

    let objects = generate(&b, "install-namespace", &[""], CertProvider::None);
    assert!(of_kind(&objects, "Role").is_empty());
    let cluster_roles = of_kind(&objects, "ClusterRole");
    assert_eq!(cluster_roles.len(), 3);
    assert_eq!(
        cluster_roles[1]["rules"],
        json!([rule, {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]}])
    );
}

#[test]
fn conversion_webhooks_wire_crds_with_a_default_path_and_refuse_preserve_unknown_fields() {
    // Test_BundleCRDGenerator_WithConversionWebhook_Succeeds / _Fails.
    let cw = |path: Option<&str>, crd: &str| {
        let mut w = json!({"type": "ConversionWebhook", "generateName": format!("cw-{crd}"), "containerPort": 8443, "admissionReviewVersions": ["v1", "v1beta1"], "conversionCRDs": [crd], "deploymentName": "some-deployment"});
        if let Some(p) = path {
            w["webhookPath"] = json!(p);
        }
        w
    };
    let b = bundle_with(
        json!({"webhookdefinitions": [cw(Some("/some/path"), "crd-one"), cw(None, "crd-two")]}),
        &[("crd-one", json!({})), ("crd-two", json!({}))],
        "p",
    );
    let objects = generate(&b, "install-namespace", &[""], CertProvider::None);
    let crds = of_kind(&objects, "CustomResourceDefinition");
    let conversion = |path: &str| json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": "install-namespace", "name": "some-deployment-service", "path": path, "port": 8443}}, "conversionReviewVersions": ["v1", "v1beta1"]}});
    assert_eq!(crds[0]["spec"]["conversion"], conversion("/some/path"));
    assert_eq!(crds[1]["spec"]["conversion"], conversion("/"));
    // With cert-manager, the CRD gets the injection annotation.
    let objects = generate(&b, "install-namespace", &[""], CertProvider::CertManager);
    assert_eq!(
        of_kind(&objects, "CustomResourceDefinition")[0]["metadata"]["annotations"],
        json!({"cert-manager.io/inject-ca-from": "install-namespace/some-deployment-service-cert"})
    );

    let b = bundle_with(
        json!({"webhookdefinitions": [cw(Some("/some/path"), "crd-one")]}),
        &[("crd-one", json!({"preserveUnknownFields": true}))],
        "p",
    );
    let err = generators::generate(&generators::Context {
        bundle: &b,
        install_namespace: "install-namespace",
        target_namespaces: &[String::new()],
        cert_provider: CertProvider::None,
        deployment_config: None,
    })
    .unwrap_err();
    assert!(err.contains("must have .spec.preserveUnknownFields set to false to let API Server call webhook to do the conversion"), "{err}");

    let b = bundle_with(
        json!({"webhookdefinitions": [cw(None, "crd-one"), cw(None, "crd-one")]}),
        &[("crd-one", json!({}))],
        "p",
    );
    let err = generators::generate(&generators::Context {
        bundle: &b,
        install_namespace: "ns",
        target_namespaces: &[String::new()],
        cert_provider: CertProvider::None,
        deployment_config: None,
    })
    .unwrap_err();
    assert_eq!(
        err,
        "custom resource definition 'crd-one' is referenced by multiple conversion webhook definitions"
    );
}

// --- deploymentConfig (Test_BundleCSVDeploymentGenerator_WithDeploymentConfig) ---

fn deployment_with(pod_spec: Value, config: &str) -> Value {
    let b = bundle(json!({
        "installModes": install_modes(&["AllNamespaces"]),
        "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "dep", "spec": {"template": {"spec": pod_spec}}}]}}
    }));
    let dc = DeploymentConfig::from_value(&yaml_text_value(config.as_bytes())).unwrap();
    let rendered = render::render_bundle(
        &b,
        &BundleRenderParams {
            install_namespace: "ns".into(),
            deployment_config: dc,
            ..BundleRenderParams::default()
        },
    )
    .unwrap();
    rendered
        .objects
        .into_iter()
        .find(|o| render::object_kind(o) == "Deployment")
        .unwrap()
}

#[test]
fn affinity_merges_follow_olm_v0() {
    let node = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]}});
    let pod = json!({"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "t", "labelSelector": {"matchLabels": {"a": "b"}}}]});
    let bundle_affinity = json!({"containers": [{"name": "c"}], "affinity": {"nodeAffinity": node, "podAffinity": pod}});
    let affinity = |d: &Value| d.pointer("/spec/template/spec/affinity").cloned();
    // empty affinity erases bundle affinity
    assert_eq!(
        affinity(&deployment_with(bundle_affinity.clone(), "affinity: {}")),
        None
    );
    // empty nodeAffinity erases only nodeAffinity
    assert_eq!(
        affinity(&deployment_with(
            bundle_affinity.clone(),
            "affinity: {nodeAffinity: {}}"
        )),
        Some(json!({"podAffinity": pod}))
    );
    // empty nodeAffinity with empty nodeSelectorTerms erases only nodeAffinity
    assert_eq!(
        affinity(&deployment_with(
            bundle_affinity.clone(),
            "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}"
        )),
        Some(json!({"podAffinity": pod}))
    );
    // nil affinity preserves bundle affinity
    assert_eq!(
        affinity(&deployment_with(
            bundle_affinity.clone(),
            "env: [{name: A, value: b}]"
        )),
        affinity(&deployment_with(bundle_affinity.clone(), "{}"))
    );
    assert_eq!(
        affinity(&deployment_with(bundle_affinity.clone(), "{}")),
        Some(json!({"nodeAffinity": node, "podAffinity": pod}))
    );
    // partial affinity override preserves unspecified fields
    let anti = json!({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "z"}}]});
    let config = format!("affinity: {{podAntiAffinity: {anti}}}");
    assert_eq!(
        affinity(&deployment_with(bundle_affinity.clone(), &config)),
        Some(json!({"nodeAffinity": node, "podAffinity": pod, "podAntiAffinity": anti}))
    );
    // empty sub-fields erase to nil affinity
    assert_eq!(
        affinity(&deployment_with(
            bundle_affinity.clone(),
            "affinity: {nodeAffinity: {}, podAffinity: {}, podAntiAffinity: {}}"
        )),
        None
    );
    // empty nodeAffinity / empty affinity without bundle affinity stays nil
    assert_eq!(
        affinity(&deployment_with(
            json!({"containers": [{"name": "c"}]}),
            "affinity: {nodeAffinity: {}}"
        )),
        None
    );
    assert_eq!(
        affinity(&deployment_with(
            json!({"containers": [{"name": "c"}]}),
            "affinity: {}"
        )),
        None
    );
}

#[test]
fn list_merges_apply_to_every_container_and_skip_duplicates() {
    // "applies config to multiple containers", "applies envFrom", "applies tolerations".
    let pod = json!({
        "containers": [{"name": "a", "env": [{"name": "X", "value": "1"}], "envFrom": [{"configMapRef": {"name": "cm"}}]}, {"name": "b"}],
        "tolerations": [{"key": "k", "operator": "Exists"}]
    });
    let d = deployment_with(
        pod,
        "env: [{name: X, value: '2'}, {name: Z, value: '3'}]\nenvFrom: [{configMapRef: {name: cm}}, {secretRef: {name: s}}]\ntolerations: [{key: k, operator: Exists}, {key: j, operator: Exists}]\nnodeSelector: {}\nresources: {limits: {cpu: 0.5}}\n",
    );
    let containers = d.pointer("/spec/template/spec/containers").unwrap();
    assert_eq!(
        containers[0]["env"],
        json!([{"name": "X", "value": "2"}, {"name": "Z", "value": "3"}])
    );
    assert_eq!(
        containers[1]["env"],
        json!([{"name": "X", "value": "2"}, {"name": "Z", "value": "3"}])
    );
    assert_eq!(
        containers[0]["envFrom"],
        json!([{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}}])
    );
    assert_eq!(
        containers[1]["resources"],
        json!({"limits": {"cpu": "500m"}})
    );
    assert_eq!(
        d.pointer("/spec/template/spec/tolerations").unwrap(),
        &json!([{"key": "k", "operator": "Exists"}, {"key": "j", "operator": "Exists"}])
    );
    assert_eq!(d.pointer("/spec/template/spec/nodeSelector"), None);
}

// --- provider (provider_test.go) and render options (render_test.go) ---

#[test]
fn the_provider_refuses_what_upstream_refuses() {
    let webhooks =
        json!([{"type": "ValidatingAdmissionWebhook", "generateName": "w", "deploymentName": "d"}]);
    let cases = [
        (
            json!({"installModes": install_modes(&["AllNamespaces"]), "apiservicedefinitions": {"owned": [{"name": "a", "group": "g", "version": "v1", "kind": "K"}]}}),
            true,
            "unsupported bundle: apiServiceDefintions are not supported",
        ),
        (
            json!({"installModes": install_modes(&["AllNamespaces"]), "webhookdefinitions": webhooks}),
            true,
            "unsupported bundle: webhookDefinitions are not supported",
        ),
        (
            json!({"installModes": install_modes(&["SingleNamespace"])}),
            false,
            "unsupported bundle: bundle does not support AllNamespaces install mode",
        ),
        (
            json!({"installModes": install_modes(&["MultiNamespace"])}),
            true,
            "unsupported bundle: bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] install modes",
        ),
    ];
    for (spec, single_own, want) in cases {
        let opts = RenderOptions {
            install_namespace: "ns".into(),
            single_own_namespace: single_own,
            ..RenderOptions::default()
        };
        let err = render::render(&bundle(spec), &opts).unwrap_err();
        assert_eq!(err.to_string(), want);
        assert!(!err.is_terminal());
    }
    // DeploymentConfig gate off: the field is unknown.
    let opts = RenderOptions {
        install_namespace: "ns".into(),
        config: Some(json!({"deploymentConfig": {}})),
        deployment_config: false,
        ..RenderOptions::default()
    };
    let err = render::render(
        &bundle(json!({"installModes": install_modes(&["AllNamespaces"])})),
        &opts,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid ClusterExtension configuration: invalid configuration: unknown field \"deploymentConfig\""
    );
    assert!(err.is_terminal());
}

#[test]
fn target_namespace_defaults_and_errors_match_render_test() {
    // Test_BundleRenderer_DefaultTargetNamespaces / _ValidatesRenderOptions.
    /// Install modes, target namespaces given, the rendered `olm.targetNamespaces` or the error.
    type Case<'a> = (
        &'a [&'a str],
        Option<&'a [&'a str]>,
        Result<&'a str, &'a str>,
    );
    let cases: [Case<'_>; 5] = [
        (&["AllNamespaces", "OwnNamespace"], None, Ok("")),
        (
            &["OwnNamespace"],
            None,
            Err(
                "invalid option(s): invalid target namespaces []: exactly one target namespace must be specified",
            ),
        ),
        (
            &["MultiNamespace"],
            None,
            Err(
                "invalid option(s): invalid target namespaces []: at least one target namespace must be specified",
            ),
        ),
        (
            &["OwnNamespace"],
            Some(&["install-namespace"]),
            Ok("install-namespace"),
        ),
        (
            &["AllNamespaces"],
            Some(&["x", "y"]),
            Err(
                "invalid option(s): invalid target namespaces [x y]: supported install modes [AllNamespaces] do not support target namespaces [x y]",
            ),
        ),
    ];
    for (modes, targets, want) in cases {
        let b = bundle(
            json!({"installModes": install_modes(modes), "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "d", "spec": {}}]}}}),
        );
        let params = BundleRenderParams {
            install_namespace: "install-namespace".into(),
            target_namespaces: targets.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
            ..BundleRenderParams::default()
        };
        match (render::render_bundle(&b, &params), want) {
            (Ok(r), Ok(ns)) => {
                let d = r
                    .objects
                    .iter()
                    .find(|o| render::object_kind(o) == "Deployment")
                    .unwrap();
                assert_eq!(
                    d.pointer("/spec/template/metadata/annotations/olm.targetNamespaces"),
                    Some(&json!(ns))
                );
            }
            (Err(e), Err(msg)) => assert_eq!(e.to_string(), msg),
            (got, want) => panic!("{modes:?}: got {got:?}, want {want:?}"),
        }
    }
}
