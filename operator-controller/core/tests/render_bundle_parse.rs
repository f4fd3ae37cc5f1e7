//! Reading registry+v1 bundles: upstream's behaviour on odd bundles (several CSVs, JSON and list
//! manifests, `olm.properties: "null"`, objects clashing with generated ones), upstream's errors,
//! and this project's one deliberate difference (`apiextensions.k8s.io/v1beta1` CRDs are refused
//! with a clear error instead of being silently mangled; see README "Differences from upstream").
#![allow(clippy::unwrap_used)]

use olm_operator_core::bundle::{self, BundleError, BundleFs};
use olm_operator_core::render::{self, CertProvider, RenderOptions};
use serde_json::json;

const ANNOTATIONS: &str = "annotations:\n  operators.operatorframework.io.bundle.package.v1: pkg\n  operators.operatorframework.io.bundle.channels.v1: alpha\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n";

fn csv(name: &str) -> String {
    format!(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {name}\nspec:\n  version: 1.0.0\n  installModes:\n  - {{type: AllNamespaces, supported: true}}\n  install:\n    strategy: deployment\n    spec:\n      permissions:\n      - serviceAccountName: op\n        rules: [{{verbs: [get], apiGroups: [''], resources: [pods]}}]\n      deployments:\n      - name: op\n        spec:\n          selector: {{matchLabels: {{app: op}}}}\n          template:\n            metadata: {{labels: {{app: op}}}}\n            spec:\n              serviceAccountName: op\n              containers: [{{name: op, image: 'op:1'}}]\n"
    )
}

fn fs_with(files: &[(&str, &str)]) -> BundleFs {
    let mut fs = BundleFs::new();
    fs.insert_file("metadata/annotations.yaml", ANNOTATIONS.as_bytes().to_vec());
    fs.insert_dir("manifests");
    for (path, content) in files {
        fs.insert_file(*path, content.as_bytes().to_vec());
    }
    fs
}

fn render_fs(fs: &BundleFs) -> Result<render::Rendered, String> {
    let parsed = bundle::parse(fs).map_err(|e| e.to_string())?;
    render::render(&parsed, &RenderOptions::new("ns")).map_err(|e| e.to_string())
}

#[test]
fn a_v1beta1_crd_is_refused_naming_the_file_and_the_crd() {
    let crd = "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, version: v1, names: {plural: widgets, kind: Widget}, scope: Namespaced}\n";
    let fs = fs_with(&[
        ("manifests/csv.yaml", &csv("op.v1")),
        ("manifests/crd.yaml", crd),
    ]);
    let err = bundle::parse(&fs).unwrap_err();
    assert_eq!(
        err.to_string(),
        "error parsing objects in \"manifests/crd.yaml\": CustomResourceDefinition \"widgets.example.com\" has apiVersion \"apiextensions.k8s.io/v1beta1\"; only apiextensions.k8s.io/v1 CustomResourceDefinitions are supported"
    );
    assert!(!err.is_terminal());
}

#[test]
fn with_several_csvs_the_last_one_read_wins() {
    let fs = fs_with(&[
        ("manifests/a.yaml", &csv("first.v1")),
        ("manifests/b.yaml", &csv("second.v1")),
    ]);
    assert_eq!(bundle::parse(&fs).unwrap().csv.name, "second.v1");
}

#[test]
fn json_manifests_and_lists_are_read() {
    let list = r#"{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "elsewhere"}}, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cr"}}]}"#;
    let fs = fs_with(&[
        ("manifests/csv.yaml", &csv("op.v1")),
        ("manifests/objects.json", list),
    ]);
    let rendered = render_fs(&fs).unwrap();
    let cm = rendered
        .objects
        .iter()
        .find(|o| render::object_kind(o) == "ConfigMap")
        .unwrap();
    assert_eq!(
        cm["metadata"]["namespace"],
        json!("ns"),
        "namespaced objects are moved to the install namespace"
    );
    let cr = rendered
        .objects
        .iter()
        .find(|o| render::object_name(o) == "cr")
        .unwrap();
    assert_eq!(cr["metadata"].get("namespace"), None);
}

#[test]
fn upstreams_errors_for_broken_bundles() {
    let mut no_annotations = BundleFs::new();
    no_annotations.insert_dir("manifests");
    assert_eq!(
        bundle::parse(&no_annotations).unwrap_err(),
        BundleError::MissingAnnotations
    );
    assert_eq!(
        bundle::parse(&fs_with(&[])).unwrap_err().to_string(),
        "no ClusterServiceVersion found in \"manifests\""
    );
    let bad_type = csv("op.v1").replace("version: 1.0.0", "version: [1]");
    let err = bundle::parse(&fs_with(&[("manifests/csv.yaml", &bad_type)])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "error parsing objects in \"manifests/csv.yaml\": json: cannot unmarshal array into Go value of type string (field spec.version)"
    );
    let bad_replicas = csv("op.v1").replace("selector:", "replicas: two\n          selector:");
    let err = bundle::parse(&fs_with(&[("manifests/csv.yaml", &bad_replicas)])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "error parsing objects in \"manifests/csv.yaml\": unrecognized type: int32 (field spec.install.spec.deployments[0].spec.replicas)"
    );
    let err = bundle::parse(&fs_with(&[
        ("manifests/csv.yaml", &csv("op.v1")),
        (
            "manifests/x.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n",
        ),
    ]))
    .unwrap_err();
    assert!(
        err.to_string().starts_with("error parsing objects in \"manifests/x.yaml\": error parsing manifests/x.yaml: error converting YAML to JSON: yaml: line "),
        "{err}"
    );
    let err = render_fs(&fs_with(&[
        ("manifests/csv.yaml", &csv("op.v1")),
        (
            "manifests/x.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: extra}\n",
        ),
    ]))
    .unwrap_err();
    assert_eq!(
        err,
        "unsupported resource \"extra\" with kind \"Deployment\""
    );
}

#[test]
fn a_bundle_service_account_named_like_a_generated_one_yields_both_as_upstream() {
    let sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: op, labels: {from: bundle}}\n";
    let fs = fs_with(&[
        ("manifests/csv.yaml", &csv("op.v1")),
        ("manifests/sa.yaml", sa),
    ]);
    let rendered = render_fs(&fs).unwrap();
    let sas: Vec<_> = rendered
        .objects
        .iter()
        .filter(|o| render::object_kind(o) == "ServiceAccount" && render::object_name(o) == "op")
        .collect();
    assert_eq!(sas.len(), 2);
    assert_eq!(sas[0]["metadata"].get("labels"), None, "generated first");
    assert_eq!(sas[1]["metadata"]["labels"], json!({"from": "bundle"}));
}

#[test]
fn an_empty_properties_file_list_makes_olm_properties_null_as_upstream() {
    let mut fs = fs_with(&[("manifests/csv.yaml", &csv("op.v1"))]);
    fs.insert_file("metadata/properties.yaml", b"properties: []\n".to_vec());
    let rendered = render_fs(&fs).unwrap();
    assert_eq!(
        rendered
            .annotations
            .get("olm.properties")
            .map(String::as_str),
        Some("null")
    );
    let dep = rendered
        .objects
        .iter()
        .find(|o| render::object_kind(o) == "Deployment")
        .unwrap();
    assert_eq!(
        dep["spec"]["template"]["metadata"]["annotations"]["olm.properties"],
        json!("null")
    );
    assert_eq!(rendered.bundle_version, "1.0.0");
    assert_eq!(rendered.package_name, "pkg");
    assert_eq!(rendered.bundle_name, "op.v1");
}

#[test]
fn a_webhook_bundle_with_the_builtin_provider_mounts_the_certificate_secret_without_extra_objects()
{
    let with_webhook = csv("op.v1").replace(
        "  install:\n",
        "  webhookdefinitions:\n  - {type: ValidatingAdmissionWebhook, generateName: vw.example.com, deploymentName: op, containerPort: 9443, admissionReviewVersions: [v1], sideEffects: None}\n  install:\n",
    );
    let parsed = bundle::parse(&fs_with(&[("manifests/csv.yaml", &with_webhook)])).unwrap();
    let opts = RenderOptions {
        cert_provider: CertProvider::Builtin,
        ..RenderOptions::new("ns")
    };
    let rendered = render::render(&parsed, &opts).unwrap();
    assert!(
        rendered
            .objects
            .iter()
            .all(|o| !["Issuer", "Certificate"].contains(&render::object_kind(o)))
    );
    let dep = rendered
        .objects
        .iter()
        .find(|o| render::object_kind(o) == "Deployment")
        .unwrap();
    assert_eq!(
        dep["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        json!("op-service-cert")
    );
    let vwc = rendered
        .objects
        .iter()
        .find(|o| render::object_kind(o) == "ValidatingWebhookConfiguration")
        .unwrap();
    assert_eq!(vwc["metadata"].get("annotations"), None);
}
