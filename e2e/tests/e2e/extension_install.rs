//! ClusterExtensions end to end: the real `operator-controller run` binary installs bundles
//! from catalogs served by the real catalogd, on the `full` tier (garbage collector, kwok
//! Deployments that become Available). Each test runs its own controller (managing only its
//! own extensions), its own catalogd and its own package, so tests run in parallel.
//!
//! Exact strings come from upstream's `controllers/common_controller.go` (install-path.md §1)
//! and `resolve/catalog.go` (upstream-operator-controller.md §3.5).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use olm_api::v1::{ClusterExtension, ConditionType};
use olm_e2e::operator_controller::{BundleSpec, Catalogs, OperatorController, bundle_name};
use olm_e2e::registry::Registry;
use olm_e2e::scenario::{
    AVAILABLE, DESIRED_STATE, ExtensionSpec, INSTALLED, Message, OWNER_NAME_LABEL, POLL_MINUTES,
    Package, Scenario, message,
};
use olm_e2e::test_env::unique_name;
use serde_json::{Value, json};

use crate::support::{cluster_extensions, create};

// Transitional: the helpers `extension_trust.rs` and `extension_dropin.rs` were written with before
// `olm_e2e::scenario`.
// Nothing else uses them; they go once those files speak the scenario vocabulary.

/// A package served by a catalogd of the test's own (see [`Scenario::publish`]).
#[allow(dead_code)]
pub struct Fixture {
    pub package: String,
    pub catalog: String,
    pub catalogs: Catalogs,
}

#[allow(dead_code)]
impl Fixture {
    /// Bundles at `versions`, each replacing the one before in channel `stable`.
    pub async fn new(registry: &Registry, versions: &[&str]) -> Fixture {
        let package = Package::with_versions(versions);
        Fixture::serve(registry, package).await
    }

    /// `bundles` of `package`, listed in channel `stable` with `channel`'s entries.
    pub async fn with_bundles(
        registry: &Registry,
        package: &str,
        bundles: &[BundleSpec],
        channel: &[(String, Option<String>)],
    ) -> Fixture {
        let mut table = Package::named(package);
        for (name, replaces) in channel {
            let spec = bundles.iter().find(|b| &b.name() == name);
            let spec = spec.unwrap_or_else(|| panic!("no bundle {name}")).clone();
            table = table.bundle_with(&spec.version.clone(), |b| *b = spec);
            table = match replaces {
                Some(r) => table.replaces(r.rsplit_once(".v").map_or(r.as_str(), |(_, v)| v)),
                None => table.replaces_nothing(),
            };
        }
        Fixture::serve(registry, table).await
    }

    async fn serve(registry: &Registry, package: Package) -> Fixture {
        let repo = unique_name("bundles");
        let mut images = BTreeMap::new();
        for row in &package.rows {
            let image = row.bundle.push(registry, &repo).await;
            images.insert(row.bundle.version.clone(), image);
        }
        let image = package
            .push_catalog(registry, &unique_name("catalog"), &images)
            .await;
        let catalogs = Catalogs::start(registry).await;
        let catalog = catalogs.serve("cat", &image, Some(POLL_MINUTES)).await;
        Fixture {
            package: package.name,
            catalog,
            catalogs,
        }
    }
}

/// Channel entries where each version replaces the previous one.
#[allow(dead_code)]
pub fn chain(package: &str, versions: &[&str]) -> Vec<(String, Option<String>)> {
    let names: Vec<String> = versions.iter().map(|v| bundle_name(package, v)).collect();
    let previous = std::iter::once(None).chain(names.iter().cloned().map(Some));
    names.iter().cloned().zip(previous).collect()
}

#[allow(dead_code)]
pub async fn extensions() -> Api<ClusterExtension> {
    Api::all(olm_e2e::shared().await.client().await)
}

/// Creates the extension described by `body`.
#[allow(dead_code)]
pub async fn create_extension(body: Value) {
    let client = olm_e2e::shared().await.client().await;
    create(&cluster_extensions(&client), body)
        .await
        .unwrap_or_else(|e| panic!("create ClusterExtension: {e}"));
}

/// Merge-patches the extension's spec.
#[allow(dead_code)]
pub async fn patch_spec(api: &Api<ClusterExtension>, name: &str, spec: Value) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": spec })),
    )
    .await
    .unwrap_or_else(|e| panic!("patch {name}: {e}"));
}

/// Deletes the extension and waits until it is gone (its finalizers released).
#[allow(dead_code)]
pub async fn delete_extension(oc: &OperatorController, api: &Api<ClusterExtension>, name: &str) {
    olm_e2e::scenario::delete_extension(api, name, oc).await;
}

/// The release index Secrets of an extension, as upstream's e2e steps query them.
#[allow(dead_code)]
pub async fn release_secrets(oc: &OperatorController, extension: &str) -> Vec<Secret> {
    let client = olm_e2e::shared().await.client().await;
    let secrets: Api<Secret> = Api::namespaced(client, &oc.system_namespace);
    let selector = format!("name={extension},owner=operator-controller");
    let list = ListParams::default()
        .labels(&selector)
        .fields("type=operatorframework.io/index.v1");
    secrets.list(&list).await.unwrap().items
}

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

    // Metrics (issue 11 item 9), on the ops listener as catalogd serves them.
    let metrics = reqwest::get(format!("{}/metrics", scenario.controller().health_root))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
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
