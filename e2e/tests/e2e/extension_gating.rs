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

use std::time::Duration;

use kube::api::{Api, Patch, PatchParams, PostParams};
use olm_api::openshift::{ClusterOperator, ClusterVersion};
use olm_api::v1::{ClusterExtension, ConditionStatus, ConditionType};
use olm_e2e::scenario::{
    Expect, Extension, ExtensionSpec, INSTALLED, Message, Package, Scenario, installed_bundle,
};
use serde_json::json;

const PREFIX: &str = "InstalledOLMOperatorsUpgradeable: ";
/// The bundle property naming the highest OpenShift version a bundle supports.
const MAX_OPENSHIFT_VERSION: &str = "olm.maxOpenShiftVersion";

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
    scenario: &Scenario,
    status: ConditionStatus,
    reason: &str,
    message: &str,
) {
    let api: Api<ClusterOperator> = Api::all(scenario.client.clone());
    scenario
        .eventually(
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
    scenario: &Scenario,
    ext: &Extension,
    status: &'static str,
    reason: &'static str,
    message: &str,
) -> ClusterExtension {
    scenario
        .wait_for(
            ext,
            Expect::condition(ConditionType::ClusterUpgradeable, status, reason)
                .until_message(Message::exact(message)),
        )
        .await
}

/// 4.18 cluster: a bundle with max 4.18 blocks (the ClusterOperator names it; the extension says
/// which version in its catalog lifts the block); upgrading the extension to that version (max
/// 4.19) lifts it on both.
#[tokio::test]
async fn run_gates_the_cluster_upgrade_and_explains_it_on_the_extension() {
    let _singleton = crate::support::CLUSTER_VERSION_SINGLETON.lock().await;
    let mut scenario = Scenario::builder()
        .controller_arg("--openshift=true")
        .start()
        .await;
    let client = scenario.client.clone();
    cluster_runs(&client, "4.18.3").await;

    // 1.0.0 (max 4.18) is pushed; 1.1.0 (max 4.19) is listed in the catalog but pushed later,
    // so the controller cannot upgrade to it while the test looks at the explanation. The
    // catalog lists each bundle with its olm.maxOpenShiftVersion, as `opm render` would.
    let mut catalog = scenario
        .publish(
            Package::new("pkg")
                .bundle("1.0.0")
                .property(MAX_OPENSHIFT_VERSION, json!("4.18"))
                .bundle("1.1.0")
                .property(MAX_OPENSHIFT_VERSION, json!("4.19"))
                .not_pushed(),
        )
        .await;
    let ns = scenario.namespace("gated").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;
    scenario
        .wait_for(&ext, INSTALLED.bundle(catalog.bundle("1.0.0")))
        .await;

    let name = &ext.name;
    let v1_name = catalog.bundle("1.0.0").0;
    expect_upgradeable(
        &scenario,
        ConditionStatus::False,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled",
        &format!("{PREFIX}Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle \"{v1_name}\" for ClusterExtension \"{name}\"."),
    )
    .await;
    let blocks = format!(
        "bundle \"{v1_name}\" supports OpenShift up to 4.18; it blocks the cluster's upgrade from 4.18 to 4.19."
    );
    // Pinned to 1.0.0: nothing under its range lifts the block; 1.1.0, outside it, would, and
    // the message says what to change (issue 25).
    expect_extension_condition(
        &scenario,
        &ext,
        "False",
        "MaxOpenShiftVersionIncompatible",
        &format!("{blocks} No bundle version in the extension's catalogs, under its channels and version range, lifts the block; outside them these would: 1.1.0 (outside the version range: widen spec.source.catalog.version)."),
    )
    .await;

    // Unpinned: 1.1.0 resolves but its image is not there yet; 1.0.0 stays installed and the
    // extension names 1.1.0 as what lifts the block.
    scenario.set_version(&ext, ">=1.0.0").await;
    let e = expect_extension_condition(
        &scenario,
        &ext,
        "False",
        "MaxOpenShiftVersionIncompatible",
        &format!("{blocks} Bundle versions that would lift the block (from the extension's catalogs, under its channels and version range): 1.1.0."),
    )
    .await;
    assert_eq!(installed_bundle(&e), Some(catalog.bundle("1.0.0")));

    // The image arrives: the upgrade goes through and the block is lifted on both.
    scenario.push_bundle(&mut catalog, "1.1.0").await;
    let v2_name = catalog.bundle("1.1.0").0;
    let e = expect_extension_condition(
        &scenario,
        &ext,
        "True",
        "MaxOpenShiftVersionCompatible",
        &format!("bundle \"{v2_name}\" supports OpenShift up to 4.19; it does not block the cluster's upgrade from 4.18 to 4.19"),
    )
    .await;
    assert_eq!(installed_bundle(&e), Some(catalog.bundle("1.1.0")));
    expect_upgradeable(
        &scenario,
        ConditionStatus::True,
        "AsExpected",
        "All is well",
    )
    .await;

    scenario.delete_extension(&ext).await;
    scenario.stop_controller(Duration::from_secs(10));
    scenario.finish().await;
    let _ = Api::<ClusterVersion>::all(client)
        .delete("version", &Default::default())
        .await;
}

/// `--openshift=auto` on a plane that serves the OpenShift config APIs but has no ClusterVersion,
/// without `OPERATOR_IMAGE_VERSION`: the log says once, as a warning, that the cluster version
/// is not known (later passes, started by the install's release Secret writes, say it at debug
/// level), no ERROR line comes from gating, and the installed extension's `ClusterUpgradeable`
/// says `Unknown`.
#[tokio::test]
async fn without_a_cluster_version_auto_mode_warns_once_and_says_unknown_on_the_extension() {
    let _singleton = crate::support::CLUSTER_VERSION_SINGLETON.lock().await;
    let client = olm_e2e::shared().await.client().await;
    let cv_api: Api<ClusterVersion> = Api::all(client.clone());
    let _ = cv_api.delete("version", &Default::default()).await;
    crate::support::eventually("no ClusterVersion", || {
        let cv_api = cv_api.clone();
        async move { matches!(cv_api.get_opt("version").await, Ok(None)).then_some(()) }
    })
    .await;

    let mut scenario = Scenario::builder()
        .controller_arg("--openshift=auto")
        .start()
        .await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("noversion").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;
    expect_extension_condition(
        &scenario,
        &ext,
        "Unknown",
        "ClusterVersionUnknown",
        olm_operator_core::gating::VERSION_UNKNOWN_MESSAGE,
    )
    .await;
    // The install's release Secret writes each started a pass; wait until one said it again.
    scenario
        .eventually("a later gating pass", || async {
            scenario
                .controller()
                .log()
                .contains("the cluster version is still not known")
                .then_some(())
        })
        .await;

    let log = scenario.controller().log();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("the cluster version is not known"))
        .collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(warnings[0].contains(" WARN "), "{log}");
    assert!(
        !log.lines()
            .any(|l| l.contains("ERROR") && l.contains("gating")),
        "{log}"
    );
    assert!(!log.contains('\u{1b}'), "ANSI escape in the log");

    scenario.finish().await;
}
