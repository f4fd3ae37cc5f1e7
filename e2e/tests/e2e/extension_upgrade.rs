//! ClusterExtension upgrades, recovery and refusals end to end (upstream's `update.feature`,
//! `recover.feature`; issue 17's CRD upgrade-safety e2e). Same set-up as
//! [`crate::extension_install`]: a controller, a catalogd and a package per test.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use olm_api::v1::ConditionType;
use olm_e2e::operator_controller::{
    BundleSpec, OperatorController, Options, bundle_name, installed_bundle, message, widget_schema,
};
use serde_json::json;

use crate::extension_install::{
    Fixture, chain, create_extension, delete_extension, extensions, patch_spec, release_secrets,
};
use crate::support::{create_namespace, delete_namespace, unique_name};

async fn configmap_version(client: &kube::Client, ns: &str) -> Option<String> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    cms.get_opt("test-configmap")
        .await
        .ok()
        .flatten()
        .and_then(|c| c.data)
        .and_then(|d| d.get("version").cloned())
}

/// update.feature: pinned version; a non-successor refused with upstream's exact message; an
/// upgrade within range; a SelfCertified downgrade.
#[tokio::test]
async fn pinned_install_then_upgrades_within_the_channel_and_refuses_non_successors() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    // 1.0.1 replaces 1.0.0; 1.2.0 replaces 1.0.1 (so it is no successor of 1.0.0).
    let fixture = Fixture::new(&env.registry, &["1.0.0", "1.0.1", "1.2.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "upgrade").await;
    let api = extensions().await;
    let name = unique_name("ext");
    let pkg = &fixture.package;
    create_extension(oc.extension(&name, &ns, pkg, &fixture.catalog, Some("1.0.0"))).await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(pkg, "1.0.0"), "1.0.0".into()))
    );
    assert_eq!(
        configmap_version(&client, &ns).await.as_deref(),
        Some("1.0.0")
    );

    // Not a successor: upstream's exact text (resolve/catalog.go, update.feature).
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": "1.2.0"}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    assert_eq!(
        message(&e, ConditionType::Progressing),
        format!(
            "error upgrading from currently installed version \"1.0.0\": no bundles found for package \"{pkg}\" matching version \"1.2.0\""
        )
    );
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(pkg, "1.0.0"), "1.0.0".into())),
        "the installed bundle stays"
    );
    assert_eq!(
        message(&e, ConditionType::Installed),
        format!("Installed bundle {} successfully", fixture.images["1.0.0"])
    );

    // Within range: the successor is installed.
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": ">=1.0.0 <1.2.0"}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(pkg, "1.0.1"), "1.0.1".into()))
    );
    assert_eq!(
        configmap_version(&client, &ns).await.as_deref(),
        Some("1.0.1")
    );
    let records = release_secrets(&oc, &name).await;
    let mut statuses: Vec<String> = records
        .iter()
        .map(|s| s.metadata.labels.clone().unwrap_or_default()["status"].clone())
        .collect();
    statuses.sort();
    assert_eq!(statuses, ["deployed", "superseded"]);

    // SelfCertified: a downgrade is allowed.
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": "1.0.0", "upgradeConstraintPolicy": "SelfCertified"}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(pkg, "1.0.0"), "1.0.0".into()))
    );
    assert_eq!(
        configmap_version(&client, &ns).await.as_deref(),
        Some("1.0.0")
    );

    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// recover.feature: a deleted ConfigMap is restored; after the catalog is deleted drift is
/// still repaired (§3.6 fallback) and a spec change (enforcement None) still reconciles.
#[tokio::test]
async fn drift_is_repaired_also_after_the_catalog_is_deleted() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "drift").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let restored = |what: &'static str| {
        let cms = cms.clone();
        let oc = &oc;
        async move {
            cms.delete("test-configmap", &DeleteParams::default())
                .await
                .unwrap();
            oc.eventually(what, || async {
                cms.get_opt("test-configmap").await.ok().flatten()
            })
            .await
        }
    };
    restored("the deleted ConfigMap to be restored").await;

    fixture
        .catalogs
        .api
        .delete(&fixture.catalog, &DeleteParams::default())
        .await
        .unwrap();
    fixture
        .catalogs
        .catalogd
        .wait_deleted(&fixture.catalogs.api, &fixture.catalog)
        .await;
    restored("the ConfigMap to be restored without a catalog").await;

    patch_spec(
        &api,
        &name,
        json!({"install": {"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&fixture.package, "1.0.0"), "1.0.0".into()))
    );
    for type_ in [ConditionType::Deprecated, ConditionType::BundleDeprecated] {
        assert_eq!(
            message(&e, type_),
            "deprecation status unknown: catalog data unavailable",
            "{type_:?}"
        );
    }

    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// recover.feature: a pre-existing unowned Deployment is a collision (Retrying, Installed
/// False); once it is deleted the bundle installs. A missing install namespace is retried
/// until it exists.
#[tokio::test]
async fn collisions_and_missing_namespaces_are_retried_until_resolved() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let api = extensions().await;

    // Missing namespace.
    let missing = unique_name("later");
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &missing, &fixture.package, &fixture.catalog, None)).await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    assert_eq!(
        (
            e.status.as_ref().and_then(|s| s.install.clone()),
            message(&e, ConditionType::Installed)
        ),
        (None, "No bundle installed".to_string())
    );
    let created = crate::support::create_namespace_named(&client, &missing).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &created).await;

    // Collision with an unowned Deployment.
    let ns = create_namespace(&client, "collide").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment_name = format!("{}-controller", fixture.package);
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
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert!(
        text.contains(&format!(
            "Deployment '{deployment_name}' already exists in namespace '{ns}' and cannot be managed by operator-controller"
        )),
        "{text}"
    );
    assert_eq!(message(&e, ConditionType::Installed), "No bundle installed");
    deployments
        .delete(&deployment_name, &DeleteParams::default())
        .await
        .unwrap();
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    oc.wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// Issue 17: an upgrade that removes a CRD field is refused with the exact message and the old
/// bundle stays installed; with enforcement `None` it proceeds.
#[tokio::test]
async fn a_crd_upgrade_removing_a_field_is_refused_unless_enforcement_is_none() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let package = unique_name("pkg");
    let bundles = [
        BundleSpec::new(&package, "1.0.0"),
        BundleSpec::new(&package, "1.0.1").with_crd_schema(widget_schema(false)),
    ];
    let fixture = Fixture::with_bundles(
        &env.registry,
        &package,
        &bundles,
        &chain(&package, &["1.0.0", "1.0.1"]),
    )
    .await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "crd").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &package, &fixture.catalog, Some("1.0.0"))).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;

    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": "1.0.1"}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    // Wrapping: upstream's `error for resolved bundle %q with version %q: `; entry: crdify's
    // existingFieldRemoval and type entries, as upstream reports a removed field (the
    // conformance pair `synthetic/existing-field-removal`); summary line first (issue 17).
    assert_eq!(
        message(&e, ConditionType::Progressing),
        format!(
            "error for resolved bundle \"{package}.v1.0.1\" with version \"1.0.1\": 1 CRD, 2 violations\nvalidating upgrade for CRD \"widgets.{package}.e2e.olm.test\": existingFieldRemoval: removed field : v1.^.spec.color\nv1: ^.spec.color: type: type changed : \"string\" -> \"\""
        )
    );
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.0"), "1.0.0".into())),
        "the old bundle stays installed"
    );
    assert_eq!(
        configmap_version(&client, &ns).await.as_deref(),
        Some("1.0.0")
    );

    patch_spec(
        &api,
        &name,
        json!({"install": {"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.1"), "1.0.1".into()))
    );
    assert_eq!(
        configmap_version(&client, &ns).await.as_deref(),
        Some("1.0.1")
    );
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// update.feature `@catalog-updates`: a new catalog image published under the same tag is
/// polled by catalogd, and the extension upgrades to the new successor on its own.
#[tokio::test]
async fn a_new_catalog_image_under_the_same_tag_upgrades_automatically() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "autoupdate").await;
    let api = extensions().await;
    let name = unique_name("ext");
    let pkg = fixture.package.clone();
    create_extension(oc.extension(&name, &ns, &pkg, &fixture.catalog, None)).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;

    let mut images = fixture.images.clone();
    images.insert(
        "1.0.1".into(),
        BundleSpec::new(&pkg, "1.0.1")
            .push(&env.registry, &fixture.repo)
            .await,
    );
    crate::extension_install::catalog_spec(&pkg, &images, &chain(&pkg, &["1.0.0", "1.0.1"]))
        .push(&env.registry, &fixture.catalog_repo, "latest")
        .await;
    oc.eventually("the extension to upgrade to 1.0.1", || async {
        let e = api.get(&name).await.ok()?;
        (installed_bundle(&e) == Some((bundle_name(&pkg, "1.0.1"), "1.0.1".into()))).then_some(())
    })
    .await;
    assert_eq!(
        configmap_version(&client, &ns).await.as_deref(),
        Some("1.0.1")
    );
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
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
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let package = unique_name("pkg");
    let bundles = [
        BundleSpec::new(&package, "1.0.0"),
        BundleSpec::new(&package, "1.0.1").with_crd_schema(widget_schema_with_color(
            json!({"type": "string", "enum": ["red", "blue"]}),
        )),
        BundleSpec::new(&package, "1.0.2").with_crd_schema(widget_schema_with_color(
            json!({"type": "string", "enum": ["blue"]}),
        )),
    ];
    let fixture = Fixture::with_bundles(
        &env.registry,
        &package,
        &bundles,
        &chain(&package, &["1.0.0", "1.0.1", "1.0.2"]),
    )
    .await;
    let mut options = Options::new(&env.registry);
    options.args.push("--crd-upgrade-safety-data-aware".into());
    let oc = OperatorController::start(options).await;
    let ns = create_namespace(&client, "dataaware").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &package, &fixture.catalog, Some("1.0.0"))).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
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
        Api::namespaced_with(client.clone(), &ns, &resource);
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
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": "1.0.1"}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.1"), "1.0.1".into()))
    );
    assert_eq!(
        message(&e, ConditionType::Progressing),
        format!(
            "Desired state reached\nCRD \"widgets.{group}\": upstream's check refuses this upgrade (1 violation); allowed because no stored object violates the new schema (1 object checked)"
        )
    );

    // Enum value "red" removed while a stored object uses it: refused, naming the object.
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": "1.0.2"}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert!(
        text.starts_with(&format!(
            "error for resolved bundle \"{package}.v1.0.2\" with version \"1.0.2\": 1 CRD, 1 violation\nvalidating upgrade for CRD \"widgets.{group}\": v1: ^.spec.color: enum: allowed enum values removed : [\"red\"]\ndata-aware check of CRD \"widgets.{group}\" (1 object checked): refused"
        )),
        "{text}"
    );
    assert!(text.contains("red-widget"), "{text}");
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.1"), "1.0.1".into())),
        "the old bundle stays installed"
    );
    let _ = widgets.delete("red-widget", &DeleteParams::default()).await;
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// A new version whose content is identical to the installed one (the same image, as
/// upstream's test catalog lists `1.0.4`) is recorded as an upgrade, so the installed state names
/// the new version (upstream's OCPBUGS-78311).
#[tokio::test]
async fn a_new_version_with_identical_content_is_recorded() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "identical").await;
    let api = extensions().await;
    let name = unique_name("ext");
    let pkg = fixture.package.clone();
    create_extension(oc.extension(&name, &ns, &pkg, &fixture.catalog, None)).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;

    let mut images = fixture.images.clone();
    images.insert("1.0.1".into(), fixture.images["1.0.0"].clone());
    crate::extension_install::catalog_spec(&pkg, &images, &chain(&pkg, &["1.0.0", "1.0.1"]))
        .push(&env.registry, &fixture.catalog_repo, "latest")
        .await;
    oc.eventually("the extension to report 1.0.1", || async {
        let e = api.get(&name).await.ok()?;
        (installed_bundle(&e) == Some((bundle_name(&pkg, "1.0.1"), "1.0.1".into()))).then_some(())
    })
    .await;
    let records = release_secrets(&oc, &name).await;
    let mut statuses: Vec<String> = records
        .iter()
        .map(|s| s.metadata.labels.clone().unwrap_or_default()["status"].clone())
        .collect();
    statuses.sort();
    assert_eq!(statuses, ["deployed", "superseded"]);
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// Issue 11 item 2: a ClusterCatalog change re-queues only the extensions whose package that
/// catalog holds (upstream re-queues every extension). The controller logs, at debug level, the
/// extensions each catalog change re-queues.
#[tokio::test]
async fn a_catalog_change_requeues_only_the_extensions_of_its_packages() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let changed = Fixture::new(&env.registry, &["1.0.0"]).await;
    let other = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    // Two namespaces: both bundles ship a ConfigMap `test-configmap`.
    let ns = create_namespace(&client, "requeue").await;
    let ns_b = create_namespace(&client, "requeue-b").await;
    let api = extensions().await;
    let (a, b) = (unique_name("ext-a"), unique_name("ext-b"));
    create_extension(oc.extension(&a, &ns, &changed.package, &changed.catalog, None)).await;
    create_extension(oc.extension(&b, &ns_b, &other.package, &other.catalog, None)).await;
    for name in [&a, &b] {
        oc.wait_condition(&api, name, ConditionType::Installed, "True", "Succeeded")
            .await;
    }

    let pkg = changed.package.clone();
    let mut images = changed.images.clone();
    images.insert(
        "1.0.1".into(),
        BundleSpec::new(&pkg, "1.0.1")
            .push(&env.registry, &changed.repo)
            .await,
    );
    crate::extension_install::catalog_spec(&pkg, &images, &chain(&pkg, &["1.0.0", "1.0.1"]))
        .push(&env.registry, &changed.catalog_repo, "latest")
        .await;
    oc.eventually("the changed catalog's extension to upgrade", || async {
        let e = api.get(&a).await.ok()?;
        (installed_bundle(&e) == Some((bundle_name(&pkg, "1.0.1"), "1.0.1".into()))).then_some(())
    })
    .await;
    // The re-queue is logged once the watch has read the new revision's package list, which
    // may be after the extension already upgraded through a retry that read the new catalog.
    let requeued = |log: &str| {
        log.lines().any(|l| {
            l.contains("catalog changed")
                && l.contains(changed.catalog.as_str())
                && l.contains(a.as_str())
        })
    };
    oc.eventually("the catalog watch to log the re-queue", || async {
        requeued(&oc.log()).then_some(())
    })
    .await;
    let log = oc.log();
    let requeues: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("catalog changed") && l.contains(changed.catalog.as_str()))
        .collect();
    assert!(
        requeues.iter().any(|l| l.contains(a.as_str())),
        "no re-queue of {a} logged:\n{log}"
    );
    assert!(
        requeues.iter().all(|l| !l.contains(b.as_str())),
        "{b} was re-queued by a change of a catalog without its package:\n{log}"
    );
    for name in [&a, &b] {
        delete_extension(&oc, &api, name).await;
    }
    delete_namespace(&client, &ns).await;
    delete_namespace(&client, &ns_b).await;
}
