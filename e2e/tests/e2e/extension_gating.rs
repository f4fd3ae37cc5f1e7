//! OpenShift cluster-upgrade gating wired into `operator-controller run --openshift=true` (issue
//! 13): the real binary installs a ClusterExtension from a catalog, the gating loop beside it
//! writes the `olm` ClusterOperator's `Upgradeable` condition, and the reconcile writes the
//! extension's own `ClusterUpgradeable` condition naming the bundle versions that lift the block.
//!
//! The cluster runs 4.18 (the ClusterVersion `version`'s Completed history entry, under
//! [`crate::support::CLUSTER_VERSION_SINGLETON`]). Expected texts: the `olm` ClusterOperator's as
//! in [`crate::gating`] (cluster-olm-operator's `InstalledOLMOperatorsUpgradeable`, reference
//! `openshift-upgrade-gating.md` §1.6, §1.7); the extension's are this project's own
//! (`olm_operator_core::gating::extension`, beyond upstream).

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams, PostParams};
use olm_api::openshift::{ClusterOperator, ClusterVersion};
use olm_api::v1::{ClusterExtension, ConditionStatus, ConditionType, find_condition};
use olm_e2e::images::{push_bundle, push_catalog};
use olm_e2e::operator_controller::{
    BundleSpec, Catalogs, OperatorController, Options, bundle_name, installed_bundle,
};
use serde_json::{Value, json};

use crate::extension_install::{
    catalog_spec, chain, create_extension, delete_extension, extensions, patch_spec,
};
use crate::support::{create_namespace, delete_namespace, unique_name};

const PREFIX: &str = "InstalledOLMOperatorsUpgradeable: ";

/// Writes `spec` with `metadata/properties.yaml` declaring `olm.maxOpenShiftVersion: max` (merged
/// into the CSV's `olm.properties`, so the installed release carries it); returns the image the
/// tag `<repo>:v<version>` will name, pushing it only when `push`.
async fn bundle(
    registry: &olm_e2e::registry::Registry,
    repo: &str,
    spec: &BundleSpec,
    max: &str,
    push: bool,
) -> String {
    let tag = format!("{repo}:v{}", spec.version);
    if push {
        let dir = tempfile::tempdir().unwrap();
        spec.write(dir.path());
        std::fs::write(
            dir.path().join("metadata/properties.yaml"),
            format!("properties:\n- type: olm.maxOpenShiftVersion\n  value: \"{max}\"\n"),
        )
        .unwrap();
        push_bundle(registry, &tag, dir.path(), &spec.package, &["stable"])
            .await
            .unwrap();
    }
    registry.image(&tag)
}

/// The ClusterVersion `version` says the cluster completed its update to `version`.
async fn cluster_runs(client: &kube::Client, version: &str) {
    let api: Api<ClusterVersion> = Api::all(client.clone());
    let _ = api.delete("version", &Default::default()).await;
    let cv: ClusterVersion = serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "spec": {"clusterID": "8b1c4e5e-0000-4000-8000-000000000002"}
    }))
    .unwrap();
    crate::support::eventually("the ClusterVersion to be created", || {
        let (api, cv) = (api.clone(), cv.clone());
        async move { api.create(&PostParams::default(), &cv).await.ok() }
    })
    .await;
    api.patch_status(
        "version",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"history": [{"state": "Completed", "version": version}]}})),
    )
    .await
    .unwrap();
}

/// The `olm` ClusterOperator's `Upgradeable` is exactly (status, reason, message).
async fn expect_upgradeable(
    oc: &OperatorController,
    client: &kube::Client,
    status: ConditionStatus,
    reason: &str,
    message: &str,
) {
    let api: Api<ClusterOperator> = Api::all(client.clone());
    oc.eventually(
        &format!("olm Upgradeable {status:?} {reason} {message:?}"),
        || {
            let api = api.clone();
            async move {
                let co = api.get("olm").await.ok()?;
                co.condition("Upgradeable")
                    .filter(|c| {
                        c.status == status
                            && c.reason.as_deref() == Some(reason)
                            && c.message.as_deref() == Some(message)
                    })
                    .map(|_| ())
            }
        },
    )
    .await;
}

/// The extension once its `ClusterUpgradeable` condition is exactly (status, reason, message).
async fn expect_extension_condition(
    oc: &OperatorController,
    api: &Api<ClusterExtension>,
    name: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> ClusterExtension {
    oc.eventually(
        &format!("{name} ClusterUpgradeable {status} {reason} {message:?}"),
        || async {
            let e = api.get(name).await.ok()?;
            let c = find_condition(
                &e.status.as_ref()?.conditions,
                ConditionType::ClusterUpgradeable,
            )?;
            (c.status.as_str() == status && c.reason == reason && c.message == message)
                .then_some(e.clone())
        },
    )
    .await
}

/// 4.18 cluster: a bundle with max 4.18 blocks (the ClusterOperator names it; the extension says
/// which version in its catalog lifts the block); upgrading the extension to that version (max
/// 4.19) lifts it on both.
#[tokio::test]
async fn run_gates_the_cluster_upgrade_and_explains_it_on_the_extension() {
    let _singleton = crate::support::CLUSTER_VERSION_SINGLETON.lock().await;
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    cluster_runs(&client, "4.18.3").await;

    // 1.0.0 (max 4.18) is pushed; 1.1.0 (max 4.19) is listed in the catalog but pushed later,
    // so the controller cannot upgrade to it while the test looks at the explanation.
    let package = unique_name("pkg");
    let repo = unique_name("bundles");
    let v1 = BundleSpec::new(&package, "1.0.0");
    let v2 = BundleSpec::new(&package, "1.1.0");
    let mut images = BTreeMap::new();
    images.insert(
        "1.0.0".to_string(),
        bundle(&env.registry, &repo, &v1, "4.18", true).await,
    );
    images.insert(
        "1.1.0".to_string(),
        bundle(&env.registry, &repo, &v2, "4.19", false).await,
    );
    // The catalog lists each bundle with its olm.maxOpenShiftVersion, as `opm render` would.
    let catalog_dir = tempfile::tempdir().unwrap();
    catalog_spec(&package, &images, &chain(&package, &["1.0.0", "1.1.0"]))
        .write(catalog_dir.path());
    for entry in std::fs::read_dir(catalog_dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let mut blob: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if blob["schema"] != "olm.bundle" {
            continue;
        }
        let max = if blob["name"] == bundle_name(&package, "1.0.0") {
            "4.18"
        } else {
            "4.19"
        };
        blob["properties"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "olm.maxOpenShiftVersion", "value": max}));
        std::fs::write(&path, blob.to_string()).unwrap();
    }
    let catalog_ref = format!("{}:latest", unique_name("catalog"));
    push_catalog(&env.registry, &catalog_ref, catalog_dir.path())
        .await
        .unwrap();
    let catalogs = Catalogs::start(&env.registry).await;
    let catalog = catalogs
        .serve("cat", &env.registry.image(&catalog_ref), None)
        .await;

    let mut options = Options::new(&env.registry);
    options.args = vec!["--openshift=true".into()];
    let mut oc = OperatorController::start(options).await;
    let ns = create_namespace(&client, "gated").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &package, &catalog, Some("1.0.0"))).await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.0"), "1.0.0".into()))
    );

    let v1_name = bundle_name(&package, "1.0.0");
    expect_upgradeable(
        &oc,
        &client,
        ConditionStatus::False,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled",
        &format!("{PREFIX}Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle \"{v1_name}\" for ClusterExtension \"{name}\"."),
    )
    .await;
    let blocks = format!(
        "bundle \"{v1_name}\" supports OpenShift up to 4.18; it blocks the cluster's upgrade from 4.18 to 4.19."
    );
    // Pinned to 1.0.0: nothing under its range lifts the block.
    expect_extension_condition(
        &oc,
        &api,
        &name,
        "False",
        "MaxOpenShiftVersionIncompatible",
        &format!("{blocks} No bundle version in the extension's catalogs, under its channels and version range, lifts the block."),
    )
    .await;

    // Unpinned: 1.1.0 resolves but its image is not there yet; 1.0.0 stays installed and the
    // extension names 1.1.0 as what lifts the block.
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": ">=1.0.0"}}}),
    )
    .await;
    let e = expect_extension_condition(
        &oc,
        &api,
        &name,
        "False",
        "MaxOpenShiftVersionIncompatible",
        &format!("{blocks} Bundle versions that would lift the block (from the extension's catalogs, under its channels and version range): 1.1.0."),
    )
    .await;
    assert_eq!(
        installed_bundle(&e),
        Some((v1_name.clone(), "1.0.0".into()))
    );

    // The image arrives: the upgrade goes through and the block is lifted on both.
    bundle(&env.registry, &repo, &v2, "4.19", true).await;
    let v2_name = bundle_name(&package, "1.1.0");
    let e = expect_extension_condition(
        &oc,
        &api,
        &name,
        "True",
        "MaxOpenShiftVersionCompatible",
        &format!("bundle \"{v2_name}\" supports OpenShift up to 4.19; it does not block the cluster's upgrade from 4.18 to 4.19"),
    )
    .await;
    assert_eq!(installed_bundle(&e), Some((v2_name, "1.1.0".into())));
    expect_upgradeable(
        &oc,
        &client,
        ConditionStatus::True,
        "AsExpected",
        "All is well",
    )
    .await;

    delete_extension(&oc, &api, &name).await;
    oc.stop(Duration::from_secs(10));
    delete_namespace(&client, &ns).await;
    let _ = Api::<ClusterVersion>::all(client.clone())
        .delete("version", &Default::default())
        .await;
}
