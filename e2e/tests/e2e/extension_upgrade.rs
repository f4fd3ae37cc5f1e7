//! ClusterExtension upgrades, recovery and refusals end to end (upstream's `update.feature`,
//! `recover.feature`; issue 17's CRD upgrade-safety e2e). Each test is a [`Scenario`]: a
//! controller, a catalogd and a package of its own.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, PostParams};
use olm_api::v1::ConditionType;
use olm_e2e::operator_controller::widget_schema;
use olm_e2e::scenario::{
    DESIRED_STATE, ExtensionSpec, INSTALLED, Message, Package, RETRYING, Scenario, message,
};
use serde_json::json;

/// update.feature: pinned version; a non-successor refused with upstream's exact message; an
/// upgrade within range; a SelfCertified downgrade.
#[tokio::test]
async fn pinned_install_then_upgrades_within_the_channel_and_refuses_non_successors() {
    let mut scenario = Scenario::start().await;
    // 1.0.1 replaces 1.0.0; 1.2.0 replaces 1.0.1 (so it is no successor of 1.0.0).
    let catalog = scenario
        .publish(Package::with_versions(&["1.0.0", "1.0.1", "1.2.0"]))
        .await;
    let pkg = catalog.package();
    let ns = scenario.namespace("upgrade").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;
    scenario
        .wait_for(&ext, INSTALLED.bundle(catalog.bundle("1.0.0")))
        .await;
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.0.0")
    );

    // Not a successor: upstream's exact text (resolve/catalog.go, update.feature).
    scenario.set_version(&ext, "1.2.0").await;
    // The installed bundle stays.
    let refusal = format!(
        "error upgrading from currently installed version \"1.0.0\": no bundles found for package \"{pkg}\" matching version \"1.2.0\""
    );
    let e = scenario
        .wait_for(
            &ext,
            RETRYING
                .message(Message::exact(refusal))
                .bundle(catalog.bundle("1.0.0")),
        )
        .await;
    assert_eq!(
        message(&e, ConditionType::Installed),
        format!(
            "Installed bundle {} successfully",
            catalog.bundle_image("1.0.0")
        )
    );

    // Within range: the successor is installed.
    scenario.set_version(&ext, ">=1.0.0 <1.2.0").await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.0.1")))
        .await;
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.0.1")
    );
    assert_eq!(
        scenario.release_records(&ext).await.statuses(),
        ["deployed", "superseded"]
    );

    // SelfCertified: a downgrade is allowed.
    scenario
        .patch_spec(
            &ext,
            json!({"source": {"catalog": {"version": "1.0.0", "upgradeConstraintPolicy": "SelfCertified"}}}),
        )
        .await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.0.0")))
        .await;
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.0.0")
    );
    scenario.finish().await;
}

/// recover.feature: a deleted ConfigMap is restored; after the catalog is deleted drift is
/// still repaired (§3.6 fallback) and a spec change (enforcement None) still reconciles.
#[tokio::test]
async fn drift_is_repaired_also_after_the_catalog_is_deleted() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("drift").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;

    scenario
        .delete_configmap_and_wait_restored(&ext, "the deleted ConfigMap to be restored")
        .await;
    scenario.delete_catalog(&catalog.name).await;
    scenario
        .delete_configmap_and_wait_restored(&ext, "the ConfigMap to be restored without a catalog")
        .await;

    scenario
        .patch_spec(
            &ext,
            json!({"install": {"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}}}),
        )
        .await;
    let e = scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.0.0")))
        .await;
    for type_ in [ConditionType::Deprecated, ConditionType::BundleDeprecated] {
        assert_eq!(
            message(&e, type_),
            "deprecation status unknown: catalog data unavailable",
            "{type_:?}"
        );
    }
    scenario.finish().await;
}

/// recover.feature: a pre-existing unowned Deployment is a collision (Retrying, Installed
/// False); once it is deleted the bundle installs. A missing install namespace is retried
/// until it exists.
#[tokio::test]
async fn collisions_and_missing_namespaces_are_retried_until_resolved() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;

    // Missing namespace.
    let missing = olm_e2e::test_env::unique_name("later");
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &missing))
        .await;
    let e = scenario.wait_for(&ext, RETRYING).await;
    assert_eq!(
        (
            e.status.as_ref().and_then(|s| s.install.clone()),
            message(&e, ConditionType::Installed)
        ),
        (None, "No bundle installed".to_string())
    );
    scenario.namespace_named(&missing).await;
    scenario.wait_for(&ext, INSTALLED).await;
    scenario.delete_extension(&ext).await;

    // Collision with an unowned Deployment.
    let ns = scenario.namespace("collide").await;
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), &ns);
    let deployment_name = format!("{}-controller", catalog.package());
    let squatter: Deployment = serde_json::from_value(json!({
        "metadata": {"name": deployment_name},
        "spec": {
            "selector": {"matchLabels": {"app": "squatter"}},
            "template": {"metadata": {"labels": {"app": "squatter"}},
                         "spec": {"containers": [{"name": "c", "image": "example.invalid/squatter:1"}]}},
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &squatter)
        .await
        .unwrap();
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    let e = scenario
        .wait_for(
            &ext,
            RETRYING.message(Message::contains(format!(
                "Deployment '{deployment_name}' already exists in namespace '{ns}' and cannot be managed by operator-controller"
            ))),
        )
        .await;
    assert_eq!(message(&e, ConditionType::Installed), "No bundle installed");
    deployments
        .delete(&deployment_name, &DeleteParams::default())
        .await
        .unwrap();
    scenario.wait_for(&ext, INSTALLED).await;
    scenario.wait_for(&ext, DESIRED_STATE).await;
    scenario.finish().await;
}

/// Issue 17: an upgrade that removes a CRD field is refused with the exact message and the old
/// bundle stays installed; with enforcement `None` it proceeds.
#[tokio::test]
async fn a_crd_upgrade_removing_a_field_is_refused_unless_enforcement_is_none() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(
            Package::new("pkg")
                .bundle("1.0.0")
                .bundle("1.0.1")
                .crd_schema(widget_schema(false)),
        )
        .await;
    let package = catalog.package();
    let ns = scenario.namespace("crd").await;
    let ext = scenario
        .install(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;

    scenario.set_version(&ext, "1.0.1").await;
    // Wrapping: upstream's `error for resolved bundle %q with version %q: `; entry: crdify's
    // existingFieldRemoval and type entries, as upstream reports a removed field (the
    // conformance pair `synthetic/existing-field-removal`); summary line first (issue 17).
    // The old bundle stays installed.
    let refusal = format!(
        "error for resolved bundle \"{package}.v1.0.1\" with version \"1.0.1\": 1 CRD, 2 violations\nvalidating upgrade for CRD \"widgets.{package}.e2e.olm.test\": existingFieldRemoval: removed field : v1.^.spec.color\nv1: ^.spec.color: type: type changed : \"string\" -> \"\""
    );
    scenario
        .wait_for(
            &ext,
            RETRYING
                .message(Message::exact(refusal))
                .bundle(catalog.bundle("1.0.0")),
        )
        .await;
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.0.0")
    );

    scenario
        .patch_spec(
            &ext,
            json!({"install": {"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}}}),
        )
        .await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.0.1")))
        .await;
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.0.1")
    );
    scenario.finish().await;
}

/// update.feature `@catalog-updates`: a new catalog image published under the same tag is
/// polled by catalogd, and the extension upgrades to the new successor on its own.
#[tokio::test]
async fn a_new_catalog_image_under_the_same_tag_upgrades_automatically() {
    let mut scenario = Scenario::start().await;
    let mut catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("autoupdate").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;

    scenario
        .republish(&mut catalog, |package| package.bundle("1.0.1"))
        .await;
    scenario
        .wait_until_installed(&ext, catalog.bundle("1.0.1"))
        .await;
    assert_eq!(
        scenario.configmap_version(&ext).await.as_deref(),
        Some("1.0.1")
    );
    scenario.finish().await;
}

fn widget_schema_with_color(color: serde_json::Value) -> serde_json::Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": color}},
    }})
}

/// Issue 17, data-aware mode (`--crd-upgrade-safety-data-aware`): tightening an enum that no
/// stored object violates proceeds with a warning in `Progressing` (still `Succeeded`); one that
/// a stored object violates is refused, naming that object; the old bundle stays installed.
#[tokio::test]
async fn data_aware_crd_upgrade_safety_checks_the_stored_objects() {
    let mut scenario = Scenario::builder()
        .controller_arg("--crd-upgrade-safety-data-aware")
        .start()
        .await;
    let catalog = scenario
        .publish(
            Package::new("pkg")
                .bundle("1.0.0")
                .bundle("1.0.1")
                .crd_schema(widget_schema_with_color(
                    json!({"type": "string", "enum": ["red", "blue"]}),
                ))
                .bundle("1.0.2")
                .crd_schema(widget_schema_with_color(
                    json!({"type": "string", "enum": ["blue"]}),
                )),
        )
        .await;
    let package = catalog.package();
    let ns = scenario.namespace("dataaware").await;
    let ext = scenario
        .install(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;

    // A stored object with color "red".
    let group = format!("{package}.e2e.olm.test");
    let resource = kube::api::ApiResource {
        group: group.clone(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(scenario.client.clone(), &ns, &resource);
    let widget: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": {"name": "red-widget"}, "spec": {"size": 1, "color": "red"},
    }))
    .unwrap();
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();

    // Enum added: upstream refuses; no stored object violates it: allowed with a warning.
    scenario.set_version(&ext, "1.0.1").await;
    let warning = format!(
        "Desired state reached\nCRD \"widgets.{group}\": upstream's check refuses this upgrade (1 violation); allowed because no stored object violates the new schema (1 object checked)"
    );
    scenario
        .wait_for(
            &ext,
            DESIRED_STATE
                .message(Message::exact(warning))
                .bundle(catalog.bundle("1.0.1")),
        )
        .await;

    // Enum value "red" removed while a stored object uses it: refused, naming the object.
    scenario.set_version(&ext, "1.0.2").await;
    // The old bundle stays installed.
    let refusal = Message::starts_with(format!(
        "error for resolved bundle \"{package}.v1.0.2\" with version \"1.0.2\": 1 CRD, 1 violation\nvalidating upgrade for CRD \"widgets.{group}\": v1: ^.spec.color: enum: allowed enum values removed : [\"red\"]\ndata-aware check of CRD \"widgets.{group}\" (1 object checked): refused"
    ))
    .and(Message::contains("red-widget"));
    scenario
        .wait_for(
            &ext,
            RETRYING.message(refusal).bundle(catalog.bundle("1.0.1")),
        )
        .await;
    let _ = widgets.delete("red-widget", &DeleteParams::default()).await;
    scenario.finish().await;
}

/// A new version whose content is identical to the installed one (the same image, as
/// upstream's test catalog lists `1.0.4`) is recorded as an upgrade, so the installed state names
/// the new version (upstream's OCPBUGS-78311).
#[tokio::test]
async fn a_new_version_with_identical_content_is_recorded() {
    let mut scenario = Scenario::start().await;
    let mut catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("identical").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;

    scenario
        .republish(&mut catalog, |package| {
            package.bundle("1.0.1").same_image_as("1.0.0")
        })
        .await;
    scenario
        .wait_until_installed(&ext, catalog.bundle("1.0.1"))
        .await;
    assert_eq!(
        scenario.release_records(&ext).await.statuses(),
        ["deployed", "superseded"]
    );
    scenario.finish().await;
}

/// Issue 11 item 2: a ClusterCatalog change re-queues only the extensions whose package that
/// catalog holds (upstream re-queues every extension). The controller logs, at debug level, the
/// extensions each catalog change re-queues.
#[tokio::test]
async fn a_catalog_change_requeues_only_the_extensions_of_its_packages() {
    let mut scenario = Scenario::start().await;
    let mut changed = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let other = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    // Two namespaces: both bundles ship a ConfigMap `test-configmap`.
    let ns = scenario.namespace("requeue").await;
    let ns_b = scenario.namespace("requeue-b").await;
    let a = scenario
        .apply_extension(ExtensionSpec::new(&changed, &ns))
        .await;
    let b = scenario
        .apply_extension(ExtensionSpec::new(&other, &ns_b))
        .await;
    for ext in [&a, &b] {
        scenario.wait_for(ext, INSTALLED).await;
    }

    scenario
        .republish(&mut changed, |package| package.bundle("1.0.1"))
        .await;
    scenario
        .wait_until_installed(&a, changed.bundle("1.0.1"))
        .await;
    // The re-queue is logged once the watch has read the new revision's package list, which
    // may be after the extension already upgraded through a retry that read the new catalog.
    let (a, b) = (a.name.as_str(), b.name.as_str());
    let requeued = |log: &str| {
        log.lines().any(|l| {
            l.contains("catalog changed") && l.contains(changed.name.as_str()) && l.contains(a)
        })
    };
    scenario
        .eventually("the catalog watch to log the re-queue", || async {
            requeued(&scenario.controller().log()).then_some(())
        })
        .await;
    let log = scenario.controller().log();
    let requeues: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("catalog changed") && l.contains(changed.name.as_str()))
        .collect();
    assert!(
        requeues.iter().any(|l| l.contains(a)),
        "no re-queue of {a} logged:\n{log}"
    );
    assert!(
        requeues.iter().all(|l| !l.contains(b)),
        "{b} was re-queued by a change of a catalog without its package:\n{log}"
    );
    scenario.finish().await;
}
