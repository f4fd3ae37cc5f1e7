//! The install manifest (`make release-manifest`): rendered from `config/` by our code exactly as
//! `kubectl kustomize` renders it, carrying exactly the RBAC the ServiceAccount tests run the
//! binaries with, images pinned by digest; applied to the test control plane (server-side dry-run
//! of every object, then a real apply, then hack/install.sh), where kwok runs its Pods.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use olm_e2e::Tier;
use olm_e2e::eventually::eventually;
use olm_e2e::release::kustomize::{object_key, parse_objects};
use olm_e2e::release::manifest::{
    self, COMPONENTS, ManifestError, RBAC_KINDS, Variant, component_rbac, container_images,
};
use olm_e2e::skip::skip;
use serde_json::Value;

const NAMESPACE: &str = "olmv1-system";
const VARIANTS: [Variant; 2] = [Variant::Standalone, Variant::CertManager];

fn by_key(objects: Vec<Value>) -> BTreeMap<String, Value> {
    objects.into_iter().map(|o| (object_key(&o), o)).collect()
}

/// Whole numbers as integers: `maximum: 2147483647.0` in a committed CRD and kustomize's
/// `2147483647` are the same JSON number to the API server.
fn normalize_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9e15) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_numbers),
        Value::Object(map) => map.values_mut().for_each(normalize_numbers),
        _ => {}
    }
}

/// kubectl from `make tools` (`OLM_KUBECTL`): the one on PATH, else built from Go modules. Where
/// it could not be had, the parts needing it are skipped, which fails under `OLM_REQUIRE_ALL`.
fn kubectl() -> Option<PathBuf> {
    std::env::var_os("OLM_KUBECTL")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

#[test]
fn config_renders_with_our_code_exactly_as_kubectl_kustomize_renders_it() {
    let root = olm_e2e::repo_root();
    let Some(kubectl) = kubectl() else {
        skip("the kustomize comparison: OLM_KUBECTL is not set (make tools builds kubectl)");
        return;
    };
    for variant in VARIANTS {
        let ours = by_key(manifest::objects(&root, variant, None).unwrap());
        let output = std::process::Command::new(&kubectl)
            .arg("kustomize")
            .arg(root.join(variant.config_dir()))
            .output()
            .unwrap();
        assert!(output.status.success(), "kubectl kustomize: {output:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        let theirs = by_key(parse_objects(Path::new("kubectl kustomize"), &text).unwrap());
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{variant:?}: different objects"
        );
        for (key, object) in &ours {
            let (mut ours, mut theirs) = (object.clone(), theirs[key].clone());
            normalize_numbers(&mut ours);
            normalize_numbers(&mut theirs);
            assert!(ours == theirs, "{variant:?}: {key} differs");
        }
    }
}

#[test]
fn the_manifests_rbac_is_exactly_the_rbac_the_serviceaccount_tests_run_the_binaries_with() {
    let root = olm_e2e::repo_root();
    let mut expected = BTreeMap::new();
    for component in COMPONENTS {
        let rbac = component_rbac(&root, component).unwrap();
        assert!(
            rbac.iter().any(|o| o["kind"] == "ServiceAccount"),
            "{component} has no ServiceAccount"
        );
        expected.extend(by_key(rbac));
    }
    for variant in VARIANTS {
        let objects = manifest::objects(&root, variant, None).unwrap();
        let rbac: BTreeMap<String, Value> = by_key(
            objects
                .iter()
                .filter(|o| RBAC_KINDS.iter().any(|k| o["kind"] == *k))
                .cloned()
                .collect(),
        );
        assert_eq!(rbac, expected, "{variant:?}");
        // Each Deployment runs as the ServiceAccount of its own component's RBAC.
        for deployment in objects.iter().filter(|o| o["kind"] == "Deployment") {
            let component = deployment["metadata"]["labels"]["app.kubernetes.io/name"]
                .as_str()
                .unwrap();
            let account = &deployment["spec"]["template"]["spec"]["serviceAccountName"];
            assert!(
                component_rbac(&root, component)
                    .unwrap()
                    .iter()
                    .any(|o| o["kind"] == "ServiceAccount" && o["metadata"]["name"] == *account),
                "{component} runs as {account}, which its RBAC does not define"
            );
        }
    }
}

fn pinned(component: &str) -> String {
    format!(
        "registry.example:5000/olm/{component}@sha256:{}",
        "a".repeat(64)
    )
}

#[test]
fn the_release_manifest_pins_every_image_by_digest() {
    let root = olm_e2e::repo_root();
    let images: BTreeMap<String, String> = COMPONENTS
        .iter()
        .map(|c| (c.to_string(), pinned(c)))
        .collect();
    for variant in VARIANTS {
        let text = manifest::release_manifest(&root, variant, &images).unwrap();
        let objects = parse_objects(Path::new("release"), &text).unwrap();
        let mut seen: Vec<String> = objects.iter().flat_map(container_images).collect();
        seen.sort();
        let mut want: Vec<String> = COMPONENTS.iter().map(|c| pinned(c)).collect();
        want.sort();
        assert_eq!(seen, want, "{variant:?}");
        assert!(text.contains(variant.config_dir()));
    }
    let mut tagged = images.clone();
    tagged.insert("catalogd".into(), "registry.example/olm/catalogd:v1".into());
    assert!(matches!(
        manifest::release_manifest(&root, Variant::Standalone, &tagged),
        Err(ManifestError::NotPinned { .. })
    ));
    let mut missing = images.clone();
    missing.remove("operator-controller");
    assert_eq!(
        manifest::release_manifest(&root, Variant::Standalone, &missing)
            .unwrap_err()
            .to_string(),
        "no image given for operator-controller (expected one for each of [\"catalogd\", \"operator-controller\"])"
    );
}

/// Upstream labels every object of its release manifest but the CRDs, and the Pods its
/// Deployments make, `app.kubernetes.io/part-of=olm`; tools find OLM by it (upstream's acceptance
/// suite looks its Deployments up with that selector to read their feature gates).
#[test]
fn every_object_but_the_crds_and_every_pod_template_is_labelled_part_of_olm_as_upstreams() {
    let root = olm_e2e::repo_root();
    let images: BTreeMap<String, String> = COMPONENTS
        .iter()
        .map(|c| (c.to_string(), pinned(c)))
        .collect();
    let upstream =
        std::fs::read_to_string(root.join("testdata/upstream-manifests/standard.yaml")).unwrap();
    let upstream = parse_objects(Path::new("standard.yaml"), &upstream).unwrap();
    for objects in VARIANTS
        .iter()
        .map(|v| {
            let text = manifest::release_manifest(&root, *v, &images).unwrap();
            parse_objects(Path::new("release"), &text).unwrap()
        })
        .chain([upstream])
    {
        for object in &objects {
            let key = object_key(object);
            let labelled = |meta: &Value| meta["labels"]["app.kubernetes.io/part-of"] == "olm";
            let crd = object["kind"] == "CustomResourceDefinition";
            assert_eq!(labelled(&object["metadata"]), !crd, "{key}");
            if object["kind"] == "Deployment" {
                assert!(
                    labelled(&object["spec"]["template"]["metadata"]),
                    "{key}: Pod template"
                );
            }
        }
    }
}

/// Server-side apply of one object as `olm-install` (hack/install.sh's field manager).
pub async fn apply(
    client: &kube::Client,
    object: &Value,
    dry_run: bool,
) -> Result<(), kube::Error> {
    let (group, version) = object["apiVersion"]
        .as_str()
        .unwrap()
        .rsplit_once('/')
        .unwrap_or(("", object["apiVersion"].as_str().unwrap()));
    let gvk = GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap());
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk).await?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(
            client.clone(),
            object["metadata"]["namespace"].as_str().unwrap(),
            &resource,
        ),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let mut params = PatchParams::apply("olm-install").force();
    params.dry_run = dry_run;
    api.patch(
        object["metadata"]["name"].as_str().unwrap(),
        &params,
        &Patch::Apply(object),
    )
    .await
    .map(|_| ())
}

#[tokio::test]
async fn the_release_manifest_applies_to_the_control_plane_and_kwok_runs_its_pods() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let root = olm_e2e::repo_root();
    let images: BTreeMap<String, String> = crate::release_images::product_images()
        .await
        .iter()
        .map(|(name, pushed)| (name.clone(), pushed.reference.clone()))
        .collect();
    let text = manifest::release_manifest(&root, Variant::Standalone, &images).unwrap();
    let objects = parse_objects(Path::new("release manifest"), &text).unwrap();
    assert_eq!(objects[0]["kind"], "Namespace");

    // The namespace must exist before its objects can be dry-run.
    apply(&client, &objects[0], true).await.unwrap();
    apply(&client, &objects[0], false).await.unwrap();
    for object in &objects[1..] {
        apply(&client, object, true)
            .await
            .unwrap_or_else(|e| panic!("server-side dry-run of {}: {e}", object_key(object)));
    }
    for object in &objects[1..] {
        apply(&client, object, false)
            .await
            .unwrap_or_else(|e| panic!("apply of {}: {e}", object_key(object)));
    }

    match kubectl() {
        Some(kubectl) => {
            // `config/` itself installs with kubectl's kustomize (images left as `catalogd:latest`
            // and `operator-controller:latest`; the server checks everything else).
            let variant = Variant::Standalone;
            let output = std::process::Command::new(&kubectl)
                .args([
                    "apply",
                    "--server-side",
                    "--force-conflicts",
                    "--dry-run=server",
                    "-k",
                ])
                .arg(root.join(variant.config_dir()))
                .env("KUBECONFIG", env.kubeconfig_path())
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "kubectl apply -k {}: {}",
                variant.config_dir(),
                String::from_utf8_lossy(&output.stderr)
            );
            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), &text).unwrap();
            let output = std::process::Command::new(root.join("hack/install.sh"))
                .arg(file.path())
                .env("KUBECTL", &kubectl)
                .env("KUBECONFIG", env.kubeconfig_path())
                .env("OLM_INSTALL_TIMEOUT", "120s")
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "hack/install.sh failed:\n{}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            // catalogd's serving certificate and operator-controller's metrics certificate.
            for name in ["catalogd-service-cert", "operator-controller-cert"] {
                let secret = Api::<Secret>::namespaced(client.clone(), NAMESPACE)
                    .get(name)
                    .await
                    .unwrap();
                let data = secret.data.unwrap();
                for key in ["tls.crt", "tls.key", "ca.crt"] {
                    assert!(data.contains_key(key), "the Secret {name} lacks {key}");
                }
            }
        }
        None => skip("hack/install.sh: OLM_KUBECTL is not set (make tools builds kubectl)"),
    }

    if env.control_plane.tier() != Tier::Full {
        skip("Pod scheduling: the apiserver tier runs no scheduler or kwok");
        return;
    }
    let pods = Api::<Pod>::namespaced(client.clone(), NAMESPACE);
    for (component, replicas) in [("catalogd", 2), ("operator-controller", 1)] {
        let want = images[component].clone();
        let pods = &pods;
        eventually(&format!("{replicas} running {component} Pods"), || {
            let want = want.clone();
            async move {
                let list = pods
                    .list(
                        &ListParams::default()
                            .labels(&format!("app.kubernetes.io/name={component}")),
                    )
                    .await
                    .ok()?;
                let running = list
                    .items
                    .iter()
                    .filter(|pod| {
                        let spec = pod.spec.as_ref();
                        spec.and_then(|s| s.node_name.as_deref())
                            == Some(olm_e2e::control_plane::NODE_NAME)
                            && spec.is_some_and(|s| {
                                s.containers[0].image.as_deref() == Some(want.as_str())
                            })
                            && pod.status.as_ref().and_then(|s| s.phase.as_deref())
                                == Some("Running")
                    })
                    .count();
                (running == replicas).then_some(())
            }
        })
        .await;
    }
}
