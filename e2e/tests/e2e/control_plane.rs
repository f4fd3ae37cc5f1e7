//! The control plane itself: identities, tokens, RBAC, CRDs, and (tier Full) controllers.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use olm_e2e::control_plane::kubeconfig::Credential;
use olm_e2e::{ControlPlane, Tier};
use serde_json::json;

use crate::support::{eventually, unique_name};

async fn who_am_i(client: kube::Client) -> (String, Vec<String>) {
    let api: Api<SelfSubjectReview> = Api::all(client);
    let review: SelfSubjectReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"
    }))
    .unwrap();
    let answer = api.create(&PostParams::default(), &review).await.unwrap();
    let user = answer.status.unwrap().user_info.unwrap();
    (user.username.unwrap(), user.groups.unwrap_or_default())
}

async fn create_namespace(client: &kube::Client) -> String {
    let name = unique_name("e2e");
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
    name
}

#[tokio::test]
async fn admin_kubeconfig_authenticates_as_a_system_masters_user() {
    let env = olm_e2e::shared().await;
    let (user, groups) = who_am_i(env.client().await).await;
    assert_eq!(user, "admin");
    assert!(groups.contains(&"system:masters".to_owned()), "{groups:?}");
}

#[tokio::test]
async fn serving_certificate_is_valid_for_localhost_as_well_as_127_0_0_1() {
    let env = olm_e2e::shared().await;
    let cp = &env.control_plane;
    let (cert, key) = cp.admin_cert_pem();
    let text = cp
        .kubeconfig_for(&Credential::ClientCertificate {
            cert_pem: cert.to_owned(),
            key_pem: key.to_owned(),
        })
        .unwrap()
        .replace("https://127.0.0.1:", "https://localhost:");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    olm_e2e::install_crypto_provider();
    let client = kube::Client::try_from(config).unwrap();
    let (user, _) = who_am_i(client).await;
    assert_eq!(user, "admin");
}

#[tokio::test]
async fn service_account_tokens_authenticate_and_rbac_limits_them() {
    let env = olm_e2e::shared().await;
    let admin = env.client().await;
    let ns = create_namespace(&admin).await;
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), &ns);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "installer"}})).unwrap(),
    )
    .await
    .unwrap();

    let sa_client = env
        .control_plane
        .service_account_client(&ns, "installer")
        .await
        .unwrap();
    let (user, groups) = who_am_i(sa_client.clone()).await;
    assert_eq!(user, format!("system:serviceaccount:{ns}:installer"));
    assert!(groups.contains(&"system:serviceaccounts".to_owned()));

    let pods: Api<Pod> = Api::namespaced(sa_client, &ns);
    let denied = pods.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(crate::support::api_status(&denied).code, 403, "{denied}");

    let roles: Api<Role> = Api::namespaced(admin.clone(), &ns);
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "pod-reader"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), &ns);
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "installer-reads-pods"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    eventually("the RoleBinding to take effect", || async {
        pods.list(&ListParams::default()).await.ok()
    })
    .await;
}

#[tokio::test]
async fn repository_crds_are_installed_and_established() {
    let env = olm_e2e::shared().await;
    let api: Api<CustomResourceDefinition> = Api::all(env.client().await);
    for name in [
        "clustercatalogs.olm.operatorframework.io",
        "clusterextensions.olm.operatorframework.io",
        "clusteroperators.config.openshift.io",
        "clusterversions.config.openshift.io",
    ] {
        let crd = api.get(name).await.unwrap();
        let established = crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        assert!(established, "{name} is not established");
    }
}

fn require_full(env: &olm_e2e::TestEnv) {
    assert_eq!(
        env.control_plane.tier(),
        Tier::Full,
        "this test needs the Full tier (unset OLM_TEST_TIER or set it to `full`)"
    );
}

#[tokio::test]
async fn deployments_become_available_on_the_fake_node() {
    let env = olm_e2e::shared().await;
    require_full(env);
    let client = env.client().await;
    let ns = create_namespace(&client).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                // Never pulled: kwok only pretends to run containers.
                "spec": {"containers": [{"name": "web", "image": "registry.invalid/web:1"}]}
            }
        }
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    eventually("the Deployment to become Available", || async {
        let d = deployments.get("web").await.ok()?;
        let status = d.status?;
        let available = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True");
        (available && status.available_replicas == Some(2)).then_some(())
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client, &ns);
    for pod in pods.list(&ListParams::default()).await.unwrap() {
        let status = pod.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        let ip: std::net::IpAddr = status.pod_ip.unwrap().parse().unwrap();
        assert!(ip.is_loopback(), "pod IP {ip} is outside 127.0.0.0/8");
        assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("kwok-node-0"));
    }
}

#[tokio::test]
async fn owned_objects_are_garbage_collected_and_namespaces_finish_deleting() {
    let env = olm_e2e::shared().await;
    require_full(env);
    let client = env.client().await;
    let ns = create_namespace(&client).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let owner = config_maps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap(),
        )
        .await
        .unwrap();
    let owned = serde_json::from_value(json!({
        "metadata": {
            "name": "owned",
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner.metadata.uid.unwrap()
            }]
        }
    }))
    .unwrap();
    config_maps
        .create(&PostParams::default(), &owned)
        .await
        .unwrap();
    config_maps
        .delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the owned ConfigMap to be collected", || async {
        config_maps
            .get_opt("owned")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    let namespaces: Api<Namespace> = Api::all(client);
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the namespace to be gone", || async {
        namespaces
            .get_opt(&ns)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn every_namespace_gets_a_default_service_account_and_root_ca() {
    let env = olm_e2e::shared().await;
    require_full(env);
    let client = env.client().await;
    let ns = create_namespace(&client).await;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(client, &ns);
    eventually("the default ServiceAccount", || async {
        sas.get_opt("default").await.unwrap()
    })
    .await;
    let ca = eventually("kube-root-ca.crt", || async {
        cms.get_opt("kube-root-ca.crt").await.unwrap()
    })
    .await;
    assert_eq!(
        ca.data.unwrap()["ca.crt"].trim(),
        env.control_plane.ca_pem().trim()
    );
}

#[tokio::test]
async fn start_fails_with_instructions_when_binaries_are_missing() {
    let empty = tempfile::tempdir().unwrap();
    let err = ControlPlane::builder()
        .assets(olm_e2e::assets::Assets::in_dir(empty.path()))
        .start()
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("etcd"), "{message}");
    assert!(message.contains("make test"), "{message}");
}

#[tokio::test]
async fn a_component_that_crashes_fails_start_with_the_tail_of_its_log() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for name in ["etcd", "kube-apiserver"] {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{name}: pretend failure: disk on fire\" >&2\nexit 3\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let err = ControlPlane::builder()
        .assets(olm_e2e::assets::Assets::in_dir(dir.path()))
        .crd_dirs(vec![])
        .startup_timeout(Duration::from_secs(60))
        .start()
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("failed to start etcd"), "{message}");
    assert!(
        message.contains("etcd: pretend failure: disk on fire"),
        "{message}"
    );
    assert!(message.contains("exit status: 3"), "{message}");
}
