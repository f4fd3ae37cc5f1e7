//! operator-controller with exactly the permissions of `config/rbac/operator-controller` (the
//! release manifest's RBAC), as its ServiceAccount (as catalogd's RBAC test does for catalogd).

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, PostParams};
use olm_e2e::scenario::{AVAILABLE, ExtensionSpec, Package, Scenario};

use crate::support::create_namespace;

/// operator-controller's RBAC exactly as the release manifest carries it
/// (`config/rbac/operator-controller`, rendered by olm_e2e::release), moved into `namespace` and
/// renamed with `suffix` so parallel runs do not collide.
fn rbac(namespace: &str, suffix: &str) -> Vec<serde_json::Value> {
    olm_e2e::release::manifest::component_rbac(&olm_e2e::repo_root(), "operator-controller")
        .unwrap()
        .iter()
        .map(|object| {
            let text = serde_json::to_string(object)
                .unwrap()
                .replace("olmv1-system", namespace)
                .replace(
                    "operator-controller-manager-rolebinding",
                    &format!("operator-controller-manager-rolebinding-{suffix}"),
                )
                .replace(
                    "operator-controller-metrics-reader",
                    &format!("operator-controller-metrics-reader-{suffix}"),
                );
            serde_json::from_str::<serde_json::Value>(&text).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn operator_controller_works_with_only_the_permissions_its_rbac_manifests_grant() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let system = create_namespace(&client, "oc-rbac").await;
    let suffix = system.rsplit('-').next().unwrap().to_string();
    let pp = PostParams::default();
    for object in rbac(&system, &suffix) {
        match object["kind"].as_str().unwrap() {
            "ServiceAccount" => drop(
                Api::<ServiceAccount>::namespaced(client.clone(), &system)
                    .create(&pp, &serde_json::from_value(object).unwrap())
                    .await
                    .unwrap(),
            ),
            "ClusterRole" => drop(
                Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(client.clone())
                    .create(&pp, &serde_json::from_value(object).unwrap())
                    .await
                    .unwrap(),
            ),
            "ClusterRoleBinding" => drop(
                Api::<ClusterRoleBinding>::all(client.clone())
                    .create(&pp, &serde_json::from_value(object).unwrap())
                    .await
                    .unwrap(),
            ),
            other => panic!("unexpected kind {other} in config/rbac/operator-controller"),
        }
    }
    let token = env
        .control_plane
        .service_account_token(&system, "operator-controller-controller-manager")
        .await
        .unwrap();
    let kubeconfig = env
        .control_plane
        .write_kubeconfig(
            &format!("{system}.kubeconfig"),
            &olm_e2e::control_plane::kubeconfig::Credential::Token(token),
        )
        .unwrap();

    let mut scenario = Scenario::builder()
        .system_namespace(&system)
        .kubeconfig(kubeconfig)
        .controller_arg("--leader-elect")
        .start()
        .await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("rbac-install").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;
    scenario.wait_for(&ext, AVAILABLE).await;
    scenario.delete_extension(&ext).await;
    let log = scenario.controller().log_tail();
    assert!(!log.contains("forbidden"), "RBAC denial in the log:\n{log}");
    scenario.finish().await;
    let _ = Api::<ClusterRoleBinding>::all(client)
        .delete(
            &format!("operator-controller-manager-rolebinding-{suffix}"),
            &DeleteParams::default(),
        )
        .await;
}
