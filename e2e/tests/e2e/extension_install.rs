//! ClusterExtensions end to end: the real `operator-controller run` binary installs bundles
//! from catalogs served by the real catalogd, on the `full` tier (garbage collector, kwok
//! Deployments that become Available). Each test runs its own controller (managing only its
//! own extensions), its own catalogd and its own package, so tests run in parallel.
//!
//! Exact strings come from upstream's `controllers/common_controller.go` (install-path.md §1)
//! and `resolve/catalog.go` (upstream-operator-controller.md §3.5).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::Api;
use olm_api::v1::ConditionType;
use olm_e2e::scenario::{
    AVAILABLE, DESIRED_STATE, ExtensionSpec, INSTALLED, Message, OWNER_NAME_LABEL, Package,
    Scenario, message,
};

#[tokio::test]
async fn install_latest_then_uninstall_removes_everything() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(Package::with_versions(&["1.0.0", "1.2.0"]))
        .await;
    let ns = scenario.namespace("install").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;

    // upstream: `Installed bundle %s successfully`, `Desired state reached`.
    scenario
        .wait_for(
            &ext,
            INSTALLED.message(Message::exact(format!(
                "Installed bundle {} successfully",
                catalog.bundle_image("1.2.0")
            ))),
        )
        .await;
    let installed = scenario
        .wait_for(
            &ext,
            DESIRED_STATE
                .message(Message::exact("Desired state reached"))
                .bundle(catalog.bundle("1.2.0")),
        )
        .await;
    for (type_, text) in [
        (ConditionType::Deprecated, "not deprecated"),
        (ConditionType::PackageDeprecated, "package not deprecated"),
        (ConditionType::ChannelDeprecated, "channel not deprecated"),
        (ConditionType::BundleDeprecated, "bundle not deprecated"),
    ] {
        assert_eq!(message(&installed, type_), text, "{type_:?}");
    }
    let finalizers = installed.finalizers().to_vec();
    assert!(
        finalizers.contains(&"olm.operatorframework.io/cleanup-unpack-cache".to_string())
            && finalizers
                .contains(&"olm.operatorframework.io/cleanup-contentmanager-cache".to_string()),
        "{finalizers:?}"
    );

    // Every object is labelled as the extension's.
    let configmaps = scenario.configmaps(&ext);
    let deployments = scenario.deployments(&ext);
    let crds: Api<CustomResourceDefinition> = Api::all(scenario.client.clone());
    let crd_name = format!("widgets.{}.e2e.olm.test", catalog.package());
    let cm = configmaps.get("test-configmap").await.unwrap();
    let deployment_name = format!("{}-controller", catalog.package());
    let deployment = deployments.get(&deployment_name).await.unwrap();
    let crd = crds.get(&crd_name).await.unwrap();
    for labels in [cm.labels(), deployment.labels(), crd.labels()] {
        assert_eq!(
            labels
                .get("olm.operatorframework.io/owner-kind")
                .map(String::as_str),
            Some("ClusterExtension")
        );
        assert_eq!(labels.get(OWNER_NAME_LABEL), Some(&ext.name));
    }
    assert_eq!(cm.data.unwrap()["version"], "1.2.0");

    // kwok makes the Deployment available; the extension reports it.
    scenario.wait_for(&ext, AVAILABLE).await;

    // Metrics (issue 11 item 9), over HTTPS for a ServiceAccount allowed `get` on `/metrics`
    // (issue 24: never to anyone else, as upstream).
    let metrics = scenario.controller().metrics().await;
    let tls = &scenario.controller().metrics_tls;
    let (status, body) = olm_e2e::metrics::scrape(&tls.url(), &tls.ca_pem, None).await;
    assert_eq!((status, body.as_str()), (401, "Unauthorized\n"));
    let client = olm_e2e::shared().await.client().await;
    let stranger = ("default", "e2e-not-a-metrics-reader");
    let accounts: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(client.clone(), stranger.0);
    accounts
        .patch(
            stranger.1,
            &kube::api::PatchParams::apply("olm-e2e").force(),
            &kube::api::Patch::Apply(serde_json::json!({"apiVersion": "v1",
                "kind": "ServiceAccount", "metadata": {"name": stranger.1}})),
        )
        .await
        .unwrap();
    let token = olm_e2e::metrics::service_account_token(&client, stranger.0, stranger.1).await;
    let (status, body) = olm_e2e::metrics::scrape(&tls.url(), &tls.ca_pem, Some(&token)).await;
    assert_eq!(
        (status, body),
        (
            403,
            format!(
                "Authorization denied for user system:serviceaccount:{}:{}\n",
                stranger.0, stranger.1
            )
        )
    );
    for family in [
        "operator_controller_reconciles_total{result=\"success\"}",
        "operator_controller_reconcile_duration_seconds_bucket",
        "operator_controller_resolution_duration_seconds_count",
        "operator_controller_unpack_duration_seconds_count 1",
        "operator_controller_extensions{installed=\"True\",progressing=\"Succeeded\"} 1",
        "operator_controller_applied_objects_total",
    ] {
        assert!(
            metrics.contains(family),
            "{family} missing from:\n{metrics}"
        );
    }

    // The release record is where upstream's tools look for it.
    let records = scenario.release_records(&ext).await;
    assert_eq!(records.len(), 1, "one release record");
    assert_eq!(records.statuses(), ["deployed"]);
    // Every write of it (created pending, replaced when deployed) is recorded under upstream's
    // field manager.
    for record in &records.0 {
        let managers: Vec<&str> = record
            .secret
            .managed_fields()
            .iter()
            .filter_map(|m| m.manager.as_deref())
            .collect();
        assert!(
            !managers.is_empty() && managers.iter().all(|m| *m == "operator-controller"),
            "{}: {managers:?}",
            record.name
        );
    }

    // uninstall.feature: gather every object labelled as the extension's, of every kind the
    // bundle installs; after the deletion each is gone.
    let labelled = scenario.labelled_objects(&ext).await;
    let kinds: std::collections::BTreeSet<&str> =
        labelled.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "CustomResourceDefinition",
            "Deployment",
            "ServiceAccount"
        ]
        .into(),
        "{labelled:?}"
    );
    scenario.delete_extension(&ext).await;
    assert_eq!(scenario.labelled_objects(&ext).await, Vec::new());
    assert!(
        configmaps
            .get_opt("test-configmap")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        deployments
            .get_opt(&deployment_name)
            .await
            .unwrap()
            .is_none()
    );
    assert!(crds.get_opt(&crd_name).await.unwrap().is_none());
    assert!(scenario.release_records(&ext).await.is_empty());
    scenario.finish().await;
}

/// operator-controller sets up glibc's allocator to give memory back after a burst
/// (`olm_runtime::allocator`): it runs with each setting the environment does not name.
#[tokio::test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
async fn the_controller_runs_with_an_allocator_that_gives_memory_back() {
    let scenario = Scenario::start().await;
    let pid = scenario.controller().pid().expect("the controller runs");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("its environment");
    let environ: Vec<&str> = environ
        .split(|&b| b == 0)
        .filter_map(|var| std::str::from_utf8(var).ok())
        .collect();
    for (name, value) in olm_runtime::allocator::SETTINGS {
        let expected = format!(
            "{name}={}",
            std::env::var(name).unwrap_or_else(|_| value.to_owned())
        );
        assert!(
            environ.contains(&expected.as_str()),
            "{expected} not in the controller's environment: {:?}",
            environ
                .iter()
                .filter(|v| v.starts_with("MALLOC_"))
                .collect::<Vec<_>>()
        );
    }
}
