//! Guarded rollback (issue 26, `spec.install.rollback.mode: OnFailure`): an upgrade whose
//! Deployment never becomes Available returns to the release it replaced once its progress
//! deadline passes, and the failed bundle is not retried until the spec changes; so does an
//! upgrade whose apply fails part-way (after its dry run passed); when the new
//! release's CRD made a new version the storage version, rolling back would strand stored
//! objects, so the upgrade stays and the status names the CRD.

use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use olm_e2e::operator_controller::{BundleSpec, crd, widget_schema};
use olm_e2e::scenario::{
    AVAILABLE, DESIRED_STATE, Expect, ExtensionSpec, Message, Package, REFUSED_BY_POLICY, RETRYING,
    Scenario,
};
use serde_json::{Value, json};

use crate::preview::install_strategy;

const ROLLBACKS: &str = "operator_controller_rollbacks_total";
const REFUSED: &str = "operator_controller_extensions_rollback_refused";

/// The bundle's Deployment asks for a node label no node has: its pod is never scheduled, so the
/// Deployment never becomes Available.
fn unschedulable(bundle: &mut BundleSpec) {
    let mut strategy = install_strategy(
        bundle,
        "example.invalid/e2e/manager:v2",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]),
    );
    strategy["spec"]["deployments"][0]["spec"]["template"]["spec"]["nodeSelector"] =
        json!({"e2e.olm.test/never": "true"});
    bundle.csv_spec.insert("install".into(), strategy);
}

/// The bundle's CRD adds version `v2` and makes it the storage version.
fn stores_v2(bundle: &mut BundleSpec) {
    let mut crd = crd(&bundle.package, &widget_schema(true));
    let v1 = crd["spec"]["versions"][0].clone();
    let mut v2 = v1.clone();
    v2["name"] = json!("v2");
    let mut v1 = v1;
    v1["storage"] = json!(false);
    crd["spec"]["versions"] = json!([v1, v2]);
    bundle.manifests.retain(|(f, _)| f != "crd.json");
    bundle.manifests.push(("crd.json".into(), crd.to_string()));
}

fn rolled_back(failed: &(String, String), to: &(String, String)) -> Expect {
    RETRYING.message(Message::starts_with(format!(
        "upgrade to {} ({}) was rolled back to {} ({}): its Deployments were not Available within 1 minute of the upgrade: ",
        failed.0, failed.1, to.0, to.1
    )).and(Message::ends_with(format!(
        "; {} is not retried until the ClusterExtension's spec or the resolved bundle changes",
        failed.0
    ))))
}

/// Revision → status after one rollback: the previous release, the failed upgrade (both
/// superseded), the previous release deployed again.
fn rolled_back_history() -> std::collections::BTreeMap<String, String> {
    [("1", "superseded"), ("2", "superseded"), ("3", "deployed")]
        .into_iter()
        .map(|(v, s)| (v.to_owned(), s.to_owned()))
        .collect()
}

fn metric(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} "))?.trim().parse().ok())
}

#[tokio::test]
async fn an_upgrade_that_never_becomes_available_is_rolled_back_after_its_deadline() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(Package::with_versions(&["1.1.0"]).bundle_with("1.2.0", unschedulable))
        .await;
    let ns = scenario.namespace("rollback").await;
    let (v110, v120) = (catalog.bundle("1.1.0"), catalog.bundle("1.2.0"));
    let ext = scenario
        .install(
            ExtensionSpec::new(&catalog, &ns)
                .version("1.1.0")
                .rollback_on_failure(1),
        )
        .await;
    scenario.wait_for(&ext, AVAILABLE).await;

    // The upgrade is applied; its Deployment stays unavailable.
    scenario.set_version(&ext, ">=1.1.0").await;
    scenario
        .wait_for(&ext, DESIRED_STATE.until_bundle(v120.clone()))
        .await;
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.2.0")
    );

    // After the deadline: 1.1.0 again, saying why.
    let e = scenario
        .wait_for(&ext, rolled_back(&v120, &v110).bundle(v110.clone()))
        .await;
    let progressing = olm_api::v1::find_condition(
        &e.status.as_ref().unwrap().conditions,
        olm_api::v1::ConditionType::Progressing,
    )
    .unwrap()
    .message
    .clone();
    assert!(
        progressing.contains(&catalog.deployment_name()),
        "{progressing}"
    );
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.1.0")
    );
    let deployment = scenario
        .deployments(&ext)
        .get(&catalog.deployment_name())
        .await
        .expect("the Deployment of 1.1.0");
    let template = serde_json::to_value(&deployment.spec.unwrap().template).unwrap();
    assert_eq!(template.pointer("/spec/nodeSelector"), None, "{template}");
    scenario.wait_for(&ext, AVAILABLE).await;

    // The history, as Helm and upstream read it: 1.1.0, the failed 1.2.0 superseded, then 1.1.0
    // deployed again.
    let records = scenario.release_records(&ext).await;
    assert_eq!(records.by_revision(), rolled_back_history());
    let metrics = scenario.controller().metrics().await;
    assert_eq!(metric(&metrics, ROLLBACKS), Some(1.0), "{metrics}");
    assert_eq!(metric(&metrics, REFUSED), Some(0.0), "{metrics}");

    // 1.2.0 still resolves, but is not tried again.
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(scenario.installed(&ext).await, Some(v110.clone()));
        assert_eq!(scenario.release_records(&ext).await.len(), 3);
    }

    // A spec change lets it through again (without rollback, it then stays).
    scenario.set_rollback(&ext, json!({"mode": "None"})).await;
    scenario
        .wait_for(&ext, DESIRED_STATE.until_bundle(v120.clone()))
        .await;
    scenario.finish().await;
}

#[tokio::test]
async fn a_rollback_that_would_strand_objects_stored_in_a_new_crd_version_is_refused() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(
            Package::with_versions(&["1.1.0"]).bundle_with("1.2.0", |b| {
                unschedulable(b);
                stores_v2(b);
            }),
        )
        .await;
    let ns = scenario.namespace("norollback").await;
    let v120 = catalog.bundle("1.2.0");
    let ext = scenario
        .install(
            ExtensionSpec::new(&catalog, &ns)
                .version("1.1.0")
                .rollback_on_failure(1),
        )
        .await;
    scenario.set_version(&ext, ">=1.1.0").await;
    scenario
        .wait_for(&ext, DESIRED_STATE.until_bundle(v120.clone()))
        .await;

    // A Widget written as v2, the new storage version.
    let group = format!("{}.e2e.olm.test", catalog.package());
    let resource = ApiResource {
        group: group.clone(),
        version: "v2".into(),
        api_version: format!("{group}/v2"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets: Api<DynamicObject> = Api::namespaced_with(scenario.client.clone(), &ns, &resource);
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v2"), "kind": "Widget",
        "metadata": {"name": "stored-as-v2"}, "spec": {"size": 3},
    }))
    .unwrap();
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .expect("a Widget written as v2");

    let crd_name = format!("widgets.{group}");
    let e = scenario
        .wait_for(
            &ext,
            RETRYING
                .message(Message::contains(format!(
                    "is unsafe, so the upgrade stays installed: CRD \"{crd_name}\" stores objects as version \"v2\", which the previous release does not serve"
                )))
                .bundle(v120.clone()),
        )
        .await;
    let message: Value = serde_json::to_value(&e.status).unwrap();
    assert!(message.to_string().contains("upgrade to "), "{message}");
    let records = scenario.release_records(&ext).await;
    assert_eq!(
        records.by_revision().get("2").map(String::as_str),
        Some("deployed")
    );
    assert_eq!(records.len(), 2, "a refused rollback records nothing");
    let metrics = scenario.controller().metrics().await;
    assert_eq!(metric(&metrics, REFUSED), Some(1.0), "{metrics}");
    assert_eq!(metric(&metrics, ROLLBACKS), Some(0.0), "{metrics}");
    scenario.finish().await;
}

/// The API server refuses the real write of one object of 1.2.0 (its dry run passes): the apply
/// fails part-way, and 1.1.0 is installed again at once.
#[tokio::test]
async fn an_upgrade_whose_apply_fails_part_way_is_rolled_back_at_once() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(Package::with_versions(&["1.1.0"]).bundle_with("1.2.0", |b| {
            b.manifests.push((
                "refused.yaml".into(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: refused-on-upgrade\ndata:\n  a: b\n".into(),
            ));
        }))
        .await;
    let ns = scenario.namespace("applyfails").await;
    let (v110, v120) = (catalog.bundle("1.1.0"), catalog.bundle("1.2.0"));
    let ext = scenario
        .install(
            ExtensionSpec::new(&catalog, &ns)
                .version("1.1.0")
                .rollback_on_failure(10),
        )
        .await;
    let policy = scenario
        .refuse_real_writes_of_configmap("refused-on-upgrade")
        .await;

    scenario.set_version(&ext, ">=1.1.0").await;
    scenario
        .wait_for(
            &ext,
            RETRYING
                .message(
                    Message::starts_with(format!(
                        "upgrade to {} (1.2.0) was rolled back to {} (1.1.0): ",
                        v120.0, v110.0
                    ))
                    .and(Message::contains(REFUSED_BY_POLICY)),
                )
                .bundle(v110.clone()),
        )
        .await;
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.1.0")
    );
    let records = scenario.release_records(&ext).await;
    assert_eq!(records.by_revision(), rolled_back_history());
    scenario.lift(policy).await;
    scenario.finish().await;
}

/// `kubectl explain` documents the additions of issue 26, as the API server publishes them.
#[tokio::test]
async fn kubectl_explain_documents_approval_and_rollback() {
    let Some(kubectl) = std::env::var_os("OLM_KUBECTL").filter(|k| !k.is_empty()) else {
        olm_e2e::skip::skip("kubectl explain: OLM_KUBECTL is not set (make tools builds kubectl)");
        return;
    };
    let env = olm_e2e::shared().await;
    for (field, documented) in [
        ("clusterextension.spec.install.rollback.mode", "OnFailure"),
        (
            "clusterextension.spec.install.rollback.progressDeadlineMinutes",
            "how many minutes (1 to 720)",
        ),
        (
            "clusterextension.spec.install.approval.mode",
            "AutomaticUnlessEscalation",
        ),
        (
            "clusterextension.status.pendingApproval",
            "waits for approval",
        ),
    ] {
        // The API server publishes a new CRD's OpenAPI a moment after it is established.
        let text = olm_e2e::eventually::eventually(&format!("kubectl explain {field}"), || async {
            let output = tokio::process::Command::new(&kubectl)
                .arg("--kubeconfig")
                .arg(env.kubeconfig_path())
                .args(["explain", field])
                .output()
                .await
                .ok()?;
            output
                .status
                .success()
                .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
        })
        .await;
        assert!(
            text.contains(documented),
            "kubectl explain {field}:\n{text}"
        );
    }
}
