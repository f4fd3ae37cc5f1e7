//! The OpenShift test CRDs (`config/openshift/`) accept what the upgrade gating reads and writes.

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use olm_api::openshift::{ClusterOperator, ClusterVersion, UPGRADEABLE};
use olm_api::v1::ConditionStatus;
use serde_json::json;

use crate::support::unique_name;

#[tokio::test]
async fn cluster_operator_status_is_written_through_the_status_subresource() {
    let client = olm_e2e::shared().await.client().await;
    let api: Api<ClusterOperator> = Api::all(client);
    let name = unique_name("olm");
    // A status sent with the object is dropped: status has its own subresource.
    let co: ClusterOperator = serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "metadata": {"name": name},
        "spec": {},
        "status": {"versions": [{"name": "operator", "version": "9.9.9"}]}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &co).await.unwrap();
    assert!(created.status.unwrap_or_default().versions.is_empty());

    let status = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "status": {
            "conditions": [{
                "type": UPGRADEABLE, "status": "False",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "IncompatibleOperatorsInstalled",
                "message": "Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle \"b-1.0\" for ClusterExtension \"a\"."
            }],
            "versions": [{"name": "operator", "version": "4.18.0"}],
            "relatedObjects": [{"group": "olm.operatorframework.io", "resource": "clusterextensions", "name": ""}]
        }
    });
    api.patch_status(
        &name,
        &PatchParams::apply("olm-e2e"),
        &Patch::Apply(&status),
    )
    .await
    .unwrap();
    let got = api.get(&name).await.unwrap();
    let upgradeable = got.condition(UPGRADEABLE).unwrap();
    assert_eq!(upgradeable.status, ConditionStatus::False);
    assert_eq!(
        upgradeable.reason.as_deref(),
        Some("IncompatibleOperatorsInstalled")
    );
    assert_eq!(got.status.unwrap().versions[0].version, "4.18.0");
    api.delete(&name, &Default::default()).await.unwrap();
}

#[tokio::test]
async fn cluster_operator_conditions_need_a_status_from_the_enum() {
    let client = olm_e2e::shared().await.client().await;
    let api: Api<ClusterOperator> = Api::all(client);
    let name = unique_name("olm");
    let co: ClusterOperator = serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "metadata": {"name": name}, "spec": {}
    }))
    .unwrap();
    api.create(&PostParams::default(), &co).await.unwrap();
    let status = json!({"status": {"conditions": [{
        "type": UPGRADEABLE, "status": "Maybe", "lastTransitionTime": "2026-01-01T00:00:00Z"
    }]}});
    let err = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap_err();
    assert!(
        crate::support::api_status(&err)
            .message
            .contains(r#"status.conditions[0].status: Unsupported value: "Maybe""#),
        "{err}"
    );
    api.delete(&name, &Default::default()).await.unwrap();
}

#[tokio::test]
async fn cluster_version_reports_the_current_version_from_its_history() {
    let _singleton = crate::support::CLUSTER_VERSION_SINGLETON.lock().await;
    let client = olm_e2e::shared().await.client().await;
    let api: Api<ClusterVersion> = Api::all(client.clone());
    // The singleton's name is fixed; only this test uses it.
    let cv: ClusterVersion = serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "spec": {"clusterID": "8b1c4e5e-0000-4000-8000-000000000000", "channel": "stable-4.19",
                 "desiredUpdate": {"version": "4.19.1"}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &cv).await.unwrap();
    let status = json!({"status": {
        "desired": {"version": "4.19.1", "image": "quay.io/openshift-release-dev/ocp-release@sha256:00"},
        "history": [
            {"state": "Partial", "version": "4.19.1"},
            {"state": "Completed", "version": "4.18.7"}
        ]
    }});
    api.patch_status("version", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let got = api.get("version").await.unwrap();
    assert_eq!(got.current_version(), Some("4.18.7"));
    assert_eq!(
        got.spec.desired_update.unwrap().version.as_deref(),
        Some("4.19.1")
    );
    api.delete("version", &Default::default()).await.unwrap();

    // The typed spec cannot represent a missing clusterID, so send raw JSON.
    let raw: Api<DynamicObject> = Api::all_with(client, &ApiResource::erase::<ClusterVersion>(&()));
    let missing_id = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version"}, "spec": {}
    });
    let err = crate::support::create(&raw, missing_id).await.unwrap_err();
    assert!(
        crate::support::api_status(&err)
            .message
            .contains("spec.clusterID: Required value"),
        "{err}"
    );
}
