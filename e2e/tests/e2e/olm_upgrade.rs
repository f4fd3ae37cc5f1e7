//! Upgrading OLM itself (upstream's upgrade-e2e scenario): both controllers, running as processes
//! with the release manifest's RBAC as their ServiceAccounts, are replaced by a new start of the
//! build under test, keeping their cache volumes (as a PersistentVolume or a container restart
//! keeps them). Every ClusterCatalog keeps serving and every extension stays installed, and
//! nothing that did not change is pulled or applied again.
//!
//! There is no older release of this project to install first, so the "old" and "new"
//! controllers are the same binary: the test proves the hand-over (Lease, on-disk state, status
//! left as it was), not compatibility between two versions.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, ListParams};
use olm_api::v1::{ClusterCatalog, ConditionType, find_condition};
use olm_e2e::catalogd::{Catalogd, Options as CatalogdOptions, all_path, catalogs};
use olm_e2e::operator_controller::{OperatorController, Options};
use olm_e2e::registry::Registry;
use olm_e2e::release::manifest::component_rbac;
use olm_e2e::scenario::{
    AVAILABLE, ExtensionSpec, INSTALLED, ObjectKey, Package, Snapshot, delete_extension, wait_for,
};
use serde_json::Value;

use crate::release_manifest::apply;
use crate::support::{create_namespace, delete_namespace, unique_name};

/// `component`'s RBAC from the release manifest's source, in `namespace`, cluster-scoped names
/// suffixed; created as cluster admin. Returns a kubeconfig for its ServiceAccount.
async fn run_as_manifest_rbac(
    client: &kube::Client,
    component: &str,
    namespace: &str,
    suffix: &str,
) -> std::path::PathBuf {
    let env = olm_e2e::shared().await;
    let mut account = String::new();
    for object in component_rbac(&olm_e2e::repo_root(), component).unwrap() {
        let text = serde_json::to_string(&object)
            .unwrap()
            .replace("olmv1-system", namespace)
            .replace(
                "catalogd-manager-role",
                &format!("catalogd-manager-role-{suffix}"),
            )
            .replace(
                "operator-controller-manager-rolebinding",
                &format!("operator-controller-manager-rolebinding-{suffix}"),
            );
        let object: Value = serde_json::from_str(&text).unwrap();
        if object["kind"] == "ServiceAccount" {
            account = object["metadata"]["name"].as_str().unwrap().to_string();
        }
        apply(client, &object, false).await.unwrap();
    }
    let token = env
        .control_plane
        .service_account_token(namespace, &account)
        .await
        .unwrap();
    env.control_plane
        .write_kubeconfig(
            &format!("{namespace}-{component}.kubeconfig"),
            &olm_e2e::control_plane::kubeconfig::Credential::Token(token),
        )
        .unwrap()
}

/// Blob downloads from the registry for repositories whose path contains one of `repos`.
fn blob_gets(registry: &Registry, repos: &[&str]) -> usize {
    registry
        .access_log()
        .iter()
        .filter(|e| e.is_blob_get() && repos.iter().any(|r| e.path.contains(r)))
        .count()
}

/// One sample of the Prometheus text at `url` (`name{labels}` as written), 0 when absent.
async fn metric(oc: &OperatorController, series: &str) -> f64 {
    let text = oc.metrics().await;
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn replacing_both_controllers_keeps_catalogs_serving_and_extensions_installed_untouched() {
    let env = olm_e2e::shared().await;
    let registry = &env.registry;
    let client = env.client().await;
    let system = create_namespace(&client, "olm-upgrade").await;
    let suffix = system.rsplit('-').next().unwrap().to_string();
    let catalogd_kubeconfig = run_as_manifest_rbac(&client, "catalogd", &system, &suffix).await;
    let oc_kubeconfig =
        run_as_manifest_rbac(&client, "operator-controller", &system, &suffix).await;

    // A bundle and a catalog listing it.
    let package = Package::new("pkg").versions(&["1.0.0"]);
    let bundle_repo = unique_name("upgrade-bundles");
    let images = BTreeMap::from([(
        "1.0.0".to_string(),
        package.rows[0].bundle.push(registry, &bundle_repo).await,
    )]);
    let catalog_repo = unique_name("upgrade-catalog");
    let catalog_image = package.push_catalog(registry, &catalog_repo, &images).await;

    let catalogd_cache = tempfile::tempdir().unwrap();
    let oc_cache = tempfile::tempdir().unwrap();
    let catalogd_instance = unique_name("cd");
    let oc_instance = unique_name("oc");
    let start_catalogd = |identity: &'static str, content_port: Option<u16>| {
        Catalogd::start(CatalogdOptions {
            instance: catalogd_instance.clone(),
            cache: Some(catalogd_cache.path().to_path_buf()),
            leader_election_namespace: Some(&system),
            identity: Some(identity),
            kubeconfig: Some(catalogd_kubeconfig.clone()),
            content_port,
            ..CatalogdOptions::new(registry)
        })
    };
    let start_oc = || {
        let mut options = Options::new(registry);
        options.instance = oc_instance.clone();
        options.system_namespace = system.clone();
        options.kubeconfig = Some(oc_kubeconfig.clone());
        options.cache = Some(oc_cache.path().to_path_buf());
        options.args.push("--leader-elect".into());
        OperatorController::start(options)
    };

    // The "old" OLM: a catalog served, an extension installed.
    let mut old_catalogd = start_catalogd("catalogd-old", None).await;
    let mut old_oc = start_oc().await;
    let catalog_api = catalogs().await;
    let catalog = old_catalogd
        .create_catalog(&catalog_api, "upgrade", &catalog_image, None)
        .await;
    let served_before = old_catalogd.wait_serving(&catalog_api, &catalog).await;
    let content = old_catalogd
        .get(&all_path(&catalog))
        .await
        .text()
        .await
        .unwrap();
    let ns = create_namespace(&client, "upgrade-install").await;
    let extension_api = Api::all(client.clone());
    let extension = ExtensionSpec::of_package(&package.name, &catalog, &ns)
        .create(&extension_api, &oc_instance)
        .await
        .name;
    wait_for(&extension_api, &extension, &old_oc, INSTALLED).await;
    // Settled: the installed Deployment is Available too, so nothing is left to change.
    let installed_before = wait_for(&extension_api, &extension, &old_oc, AVAILABLE).await;
    let configmap_before = Snapshot::of(
        &client,
        ObjectKey::namespaced("v1", "ConfigMap", &ns, "test-configmap"),
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &system);
    let secret_versions = |list: Vec<Secret>| {
        list.into_iter()
            .map(|s| {
                (
                    s.metadata.name.unwrap(),
                    s.metadata.resource_version.unwrap(),
                )
            })
            .collect::<BTreeMap<_, _>>()
    };
    let release_before = secret_versions(secrets.list(&ListParams::default()).await.unwrap().items);
    let repos = [bundle_repo.as_str(), catalog_repo.as_str()];
    let pulls_before = blob_gets(registry, &repos);
    assert!(
        pulls_before > 0,
        "the set-up pulled nothing from the registry"
    );

    // The upgrade: both replaced by a new start, keeping their cache volumes.
    // The catalogd Service keeps its address in a cluster; here the new process takes the old
    // one's port, so `status.urls.base` stays valid.
    let content_port = old_catalogd
        .content_root
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok());
    old_catalogd.stop();
    old_oc.stop(std::time::Duration::from_secs(10));
    let new_catalogd = start_catalogd("catalogd-new", content_port).await;
    let new_oc = start_oc().await;

    // The new catalogd serves the same content, from its disk.
    let path = all_path(&catalog);
    new_catalogd
        .eventually("the new catalogd to serve the catalog", || async {
            let r = new_catalogd.get(&path).await;
            (r.status() == 200 && r.text().await.ok()? == content).then_some(())
        })
        .await;
    // The new operator-controller has reconciled the extension successfully at least once.
    new_oc
        .eventually("the new operator-controller to reconcile", || async {
            (metric(
                &new_oc,
                "operator_controller_reconciles_total{result=\"success\"}",
            )
            .await
                >= 1.0)
                .then_some(())
        })
        .await;

    let served_after = catalog_api.get(&catalog).await.unwrap();
    let serving = |c: &ClusterCatalog| {
        let status = c.status.as_ref().unwrap();
        (
            find_condition(&status.conditions, ConditionType::Serving).cloned(),
            status.resolved_source.clone(),
            status.last_unpacked.clone(),
        )
    };
    assert_eq!(
        serving(&served_after),
        serving(&served_before),
        "the catalog's Serving condition, source or unpack time changed across the upgrade"
    );
    let installed_after = extension_api.get(&extension).await.unwrap();
    assert_eq!(
        installed_after.status, installed_before.status,
        "the extension's status changed across the upgrade"
    );
    configmap_before
        .assert_unchanged_at(
            &["/metadata/resourceVersion"],
            "an installed object was written again",
        )
        .await;
    assert_eq!(
        secret_versions(secrets.list(&ListParams::default()).await.unwrap().items),
        release_before,
        "the release records were written again"
    );
    assert_eq!(
        blob_gets(registry, &repos),
        pulls_before,
        "an image was pulled again"
    );
    assert_eq!(
        metric(
            &new_oc,
            "operator_controller_applied_objects_total{change=\"changed\"}"
        )
        .await,
        0.0
    );
    assert_eq!(
        metric(&new_oc, "operator_controller_unpack_duration_seconds_count").await,
        0.0,
        "the new operator-controller unpacked a bundle again"
    );

    delete_extension(&extension_api, &extension, &new_oc).await;
    catalog_api
        .delete(&catalog, &DeleteParams::default())
        .await
        .unwrap();
    new_catalogd.wait_deleted(&catalog_api, &catalog).await;
    delete_namespace(&client, &ns).await;
    delete_namespace(&client, &system).await;
    let _ = Api::<ClusterRole>::all(client.clone())
        .delete(
            &format!("catalogd-manager-role-{suffix}"),
            &DeleteParams::default(),
        )
        .await;
    for binding in [
        format!("catalogd-manager-role-{suffix}binding"),
        format!("operator-controller-manager-rolebinding-{suffix}"),
    ] {
        let _ = Api::<ClusterRoleBinding>::all(client.clone())
            .delete(&binding, &DeleteParams::default())
            .await;
    }
}
