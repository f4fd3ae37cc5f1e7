//! Upgrade approval (issue 26, `spec.install.approval`): a `Manual` extension keeps its
//! installed bundle while a newer one waits in `status.pendingApproval`, until its version is
//! approved; an `AutomaticUnlessEscalation` extension upgrades unless the new release widens
//! RBAC. Extensions without approval settings are unaffected.

use std::time::Duration;

use olm_api::v1::{ClusterExtension, ConditionType, find_condition};
use olm_e2e::scenario::{
    APPROVED, AWAITING_APPROVAL, DESIRED_STATE, ExtensionSpec, INSTALLED, Message, Package,
    Scenario,
};
use serde_json::json;

use olm_e2e::test_env::unique_name;

use crate::preview::{install_strategy, json_of, preview};

const AWAITING: &str = "operator_controller_extensions_awaiting_approval";

fn pending_version(e: &ClusterExtension) -> Option<String> {
    e.status
        .as_ref()?
        .pending_approval
        .as_ref()
        .map(|p| p.bundle.version.clone())
}

#[tokio::test]
async fn manual_approval_holds_a_newer_bundle_until_its_version_is_approved() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(Package::with_versions(&["1.1.0", "1.2.0"]))
        .await;
    let other = scenario
        .publish(Package::with_versions(&["1.0.0", "1.1.0"]))
        .await;
    let ns = scenario.namespace("approval").await;
    let other_ns = scenario.namespace("automatic").await;

    // Manual from the start: even the first install waits until approved.
    let ext = scenario
        .apply_extension(
            ExtensionSpec::new(&catalog, &ns)
                .version("1.1.0")
                .approval("Manual"),
        )
        .await;
    let e = scenario.wait_for(&ext, AWAITING_APPROVAL).await;
    assert_eq!(pending_version(&e).as_deref(), Some("1.1.0"));
    assert_eq!(scenario.installed(&ext).await, None);
    scenario.approve(&ext, "1.1.0").await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.1.0")))
        .await;
    scenario.wait_for(&ext, APPROVED).await;
    let automatic = scenario
        .install(ExtensionSpec::new(&other, &other_ns).version("1.0.0"))
        .await;

    // The range admits 1.2.0: it waits, 1.1.0 stays installed and applied.
    scenario.set_version(&ext, ">=1.1.0").await;
    let (name, _) = catalog.bundle("1.2.0");
    let e = scenario
        .wait_for(
            &ext,
            AWAITING_APPROVAL.message(Message::starts_with(format!(
                "bundle {name} (1.2.0) awaits approval: set spec.install.approval.approvedVersion to 1.2.0; RBAC: not widened; CRDs: "
            ))),
        )
        .await;
    assert_eq!(pending_version(&e).as_deref(), Some("1.2.0"));
    let pending = e.status.as_ref().unwrap().pending_approval.clone().unwrap();
    assert_eq!(pending.bundle.name, name);
    assert!(
        pending.summary.contains(" updated (")
            && pending.summary.contains("ConfigMap test-configmap"),
        "{}",
        pending.summary
    );
    let metrics = scenario.controller().metrics().await;
    assert!(metrics.contains(&format!("{AWAITING} 1")), "{metrics}");
    let run = preview(
        &scenario,
        &unique_name("previewer"),
        &["--extension", &ext.name, "-o", "json"],
    )
    .await;
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    let notes = json_of(&run)["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "spec.install.approval is Manual: the controller holds {name} (1.2.0) until spec.install.approval.approvedVersion is 1.2.0"
        )),
        "{notes}"
    );

    // Meanwhile the Automatic extension upgrades, with no Approved condition.
    scenario.set_version(&automatic, ">=1.0.0").await;
    let a = scenario
        .wait_for(
            &automatic,
            DESIRED_STATE.until_bundle(other.bundle("1.1.0")),
        )
        .await;
    let a_status = a.status.unwrap();
    assert!(find_condition(&a_status.conditions, ConditionType::Approved).is_none());
    assert!(a_status.pending_approval.is_none());

    // It stays held, and the drift of the installed release is repaired meanwhile.
    scenario
        .delete_configmap_and_wait_restored(&ext, "the held extension's ConfigMap to be restored")
        .await;
    for _ in 0..15 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let e = scenario.get(&ext).await;
        assert_eq!(pending_version(&e).as_deref(), Some("1.2.0"));
        assert_eq!(
            scenario.installed(&ext).await,
            Some(catalog.bundle("1.1.0"))
        );
        assert_eq!(
            scenario.configmap_version(&ext).await.as_deref(),
            Some("1.1.0")
        );
    }

    // Lowering the range clears the pending entry.
    scenario.set_version(&ext, "1.1.0").await;
    let e = scenario.wait_for(&ext, APPROVED).await;
    assert_eq!(pending_version(&e), None);
    scenario.set_version(&ext, ">=1.1.0").await;
    scenario.wait_for(&ext, AWAITING_APPROVAL).await;

    // Approving 1.2.0 installs it.
    scenario.approve(&ext, "1.2.0").await;
    scenario
        .wait_for(&ext, DESIRED_STATE.until_bundle(catalog.bundle("1.2.0")))
        .await;
    let e = scenario
        .wait_for(
            &ext,
            APPROVED.until_message(Message::starts_with(format!("bundle {name} (1.2.0) is "))),
        )
        .await;
    assert_eq!(pending_version(&e), None);
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.2.0")
    );
    assert_eq!(
        scenario.release_records(&ext).await.statuses(),
        ["deployed", "superseded"]
    );
    let metrics = scenario.controller().metrics().await;
    assert!(metrics.contains(&format!("{AWAITING} 0")), "{metrics}");
    scenario.delete_extension(&ext).await;
    scenario.delete_extension(&automatic).await;
    scenario.finish().await;
}

#[tokio::test]
async fn automatic_unless_escalation_holds_an_upgrade_that_adds_a_cluster_role_rule() {
    let mut scenario = Scenario::start().await;
    // 1.1.0 grants what 1.0.0 grants; 1.2.0 adds `delete` on secrets.
    let catalog = scenario
        .publish(
            Package::new("pkg")
                .bundle("1.0.0")
                .bundle("1.1.0")
                .bundle_with("1.2.0", |b| {
                    let strategy = install_strategy(
                        b,
                        "example.invalid/e2e/manager:v1",
                        json!([
                            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
                            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete"]}
                        ]),
                    );
                    b.csv_spec.insert("install".into(), strategy);
                }),
        )
        .await;
    let ns = scenario.namespace("escalation").await;
    // A first install is not held.
    let ext = scenario
        .apply_extension(
            ExtensionSpec::new(&catalog, &ns)
                .version("1.0.0")
                .approval("AutomaticUnlessEscalation"),
        )
        .await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.0.0")))
        .await;
    scenario.wait_for(&ext, APPROVED).await;

    // 1.1.0 widens nothing: it is installed without approval.
    scenario.set_version(&ext, ">=1.0.0 <1.2.0").await;
    scenario
        .wait_for(&ext, DESIRED_STATE.until_bundle(catalog.bundle("1.1.0")))
        .await;
    scenario
        .wait_for(
            &ext,
            APPROVED.until_message(Message::starts_with(format!(
                "bundle {} (1.1.0) ",
                catalog.bundle("1.1.0").0
            ))),
        )
        .await;

    // 1.2.0 adds a ClusterRole rule: held, the rule named.
    scenario.set_version(&ext, ">=1.0.0").await;
    let (name, _) = catalog.bundle("1.2.0");
    let e = scenario
        .wait_for(
            &ext,
            AWAITING_APPROVAL.message(
                Message::starts_with(format!(
                    "bundle {name} (1.2.0) awaits approval: set spec.install.approval.mode to Manual and spec.install.approval.approvedVersion to 1.2.0; held because ClusterRole "
                ))
                .and(Message::contains("widens RBAC (")).and(Message::contains("delete secrets")),
            ),
        )
        .await;
    assert_eq!(pending_version(&e).as_deref(), Some("1.2.0"));
    // `operator-controller preview` says the same.
    let run = preview(
        &scenario,
        &unique_name("previewer"),
        &["--extension", &ext.name, "-o", "json"],
    )
    .await;
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    let notes = json_of(&run)["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "spec.install.approval is AutomaticUnlessEscalation: the controller holds {name} (1.2.0) because ClusterRole "
        )),
        "{notes}"
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        scenario.installed(&ext).await,
        Some(catalog.bundle("1.1.0"))
    );
    scenario.wait_for(&ext, INSTALLED).await;

    // Approved as in Manual mode: installed.
    scenario.approve(&ext, "1.2.0").await;
    scenario
        .wait_for(&ext, DESIRED_STATE.until_bundle(catalog.bundle("1.2.0")))
        .await;
    let e = scenario.wait_for(&ext, APPROVED).await;
    assert_eq!(pending_version(&e), None);
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}
