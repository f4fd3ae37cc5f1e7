//! More of upstream's ClusterExtension features end to end (install.feature, update.feature,
//! recover.feature, user-managed-fields.feature) and bad input. Each test is a [`Scenario`]: a
//! controller, a catalogd and a package of its own.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use olm_api::v1::ConditionType;
use olm_e2e::operator_controller::CATALOG_NAME_LABEL;
use olm_e2e::scenario::{
    DESIRED_STATE, Extension, ExtensionSpec, INSTALLED, INVALID_CONFIGURATION, Message, Package,
    Published, RETRYING, Scenario, message,
};
use serde_json::json;

use crate::support::unique_name;

/// Why a configuration is refused: upstream's wording after the bundle's name.
const CONFIGURATION_ERROR: &str = "invalid ClusterExtension configuration: invalid configuration:";

async fn deployment(scenario: &Scenario, ext: &Extension, name: &str) -> Deployment {
    scenario
        .deployments(ext)
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("get Deployment {}/{name}: {e}", ext.namespace))
}

fn target_namespaces(d: &Deployment) -> Option<String> {
    d.spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get("olm.targetNamespaces")
        .cloned()
}

/// An OwnNamespace or SingleNamespace bundle installed into `namespace`: refused
/// (`InvalidConfiguration`) without `watchNamespace` and with a `wrong` one, installed with the
/// `right` one, which its Deployment then targets.
struct WatchNamespaceCase<'a> {
    catalog: &'a Published,
    namespace: String,
    /// The message without `watchNamespace`.
    missing: Message,
    wrong: &'static str,
    /// The message with the wrong `watchNamespace`.
    refused: Message,
    right: String,
}

impl WatchNamespaceCase<'_> {
    async fn refused_until_right(self, scenario: &mut Scenario) {
        let spec = ExtensionSpec::new(self.catalog, &self.namespace);
        let ext = scenario.apply_extension(spec).await;
        let refused = |message| INVALID_CONFIGURATION.message(message);
        scenario.wait_for(&ext, refused(self.missing)).await;
        scenario
            .set_config(&ext, json!({"watchNamespace": self.wrong}))
            .await;
        scenario.wait_for(&ext, refused(self.refused)).await;
        scenario
            .set_config(&ext, json!({"watchNamespace": self.right}))
            .await;
        scenario.wait_for(&ext, INSTALLED).await;
        let name = format!("{}-controller", self.catalog.package());
        let d = deployment(scenario, &ext, &name).await;
        assert_eq!(target_namespaces(&d), Some(self.right));
        scenario.delete_extension(&ext).await;
    }
}

/// update.feature: switching `spec.source.catalog.channels` moves to the other channel's head.
#[tokio::test]
async fn a_channel_switch_installs_the_other_channels_bundle() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(
            Package::new("pkg")
                .bundle("1.0.0")
                .channels(&["stable", "fast"])
                .bundle("1.1.0")
                .channels(&["fast"]),
        )
        .await;
    let ns = scenario.namespace("channel").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).channels(&["stable"]))
        .await;
    scenario
        .wait_for(&ext, INSTALLED.bundle(catalog.bundle("1.0.0")))
        .await;
    scenario
        .patch_spec(&ext, json!({"source": {"catalog": {"channels": ["fast"]}}}))
        .await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.1.0")))
        .await;
    scenario.finish().await;
}

/// install.feature: the same package in two catalogs of equal priority is ambiguous.
#[tokio::test]
async fn two_catalogs_at_the_same_priority_are_reported() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let second = scenario.serve(&catalog.image, None).await;
    let ns = scenario.namespace("twocats").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).catalogs(&[&catalog.name, &second]))
        .await;
    let mut names = [catalog.name.clone(), second.clone()];
    names.sort();
    // upstream-operator-controller.md §3.5.
    scenario
        .wait_for(
            &ext,
            RETRYING.message(Message::exact(format!(
                "found bundles for package \"{}\" in multiple catalogs with the same priority [{} {}]",
                catalog.package(),
                names[0],
                names[1]
            ))),
        )
        .await;
    // A higher priority decides.
    scenario.set_catalog_priority(&second, 10).await;
    scenario.wait_for(&ext, INSTALLED).await;
    scenario.finish().await;
}

/// install.feature: OwnNamespace and SingleNamespace bundles need `watchNamespace`
/// (terminal `InvalidConfiguration` with upstream's texts until it is right); an
/// AllNamespaces-only bundle rejects it; `deploymentConfig.nodeSelector` reaches the pod spec.
#[tokio::test]
async fn install_mode_configuration_errors_and_success() {
    let mut scenario = Scenario::start().await;
    let own = scenario
        .publish(
            Package::new("own")
                .bundle("1.0.0")
                .install_modes(&["OwnNamespace"]),
        )
        .await;
    let single = scenario
        .publish(
            Package::new("single")
                .bundle("1.0.0")
                .install_modes(&["SingleNamespace"]),
        )
        .await;
    let all = scenario
        .publish(Package::new("all").versions(&["1.0.0"]))
        .await;

    // OwnNamespace: the install namespace only.
    let ns = scenario.namespace("own").await;
    let missing = format!(
        "error for resolved bundle \"{}\" with version \"1.0.0\": {CONFIGURATION_ERROR} required field \"watchNamespace\" is missing",
        own.bundle("1.0.0").0
    );
    WatchNamespaceCase {
        catalog: &own,
        missing: Message::exact(missing),
        wrong: "some-ns",
        refused: Message::contains(format!("invalid value \"some-ns\": must be \"{ns}\"")),
        right: ns.clone(),
        namespace: ns,
    }
    .refused_until_right(&mut scenario)
    .await;

    // SingleNamespace: watching another namespace.
    let ns = scenario.namespace("single").await;
    let watched = scenario.namespace("watched").await;
    WatchNamespaceCase {
        catalog: &single,
        namespace: ns,
        missing: Message::ends_with(format!(
            "{CONFIGURATION_ERROR} required field \"watchNamespace\" is missing"
        )),
        wrong: "invalid-namespace-",
        refused: Message::contains(format!(
            "{CONFIGURATION_ERROR} field \"watchNamespace\" must match pattern"
        )),
        right: watched,
    }
    .refused_until_right(&mut scenario)
    .await;

    // AllNamespaces only: watchNamespace is unknown; deploymentConfig reaches the Deployment.
    let ns = scenario.namespace("all").await;
    let watch_own = json!({"watchNamespace": ns});
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&all, &ns).inline_config(watch_own))
        .await;
    scenario
        .wait_for(
            &ext,
            INVALID_CONFIGURATION.message(Message::ends_with(format!(
                "{CONFIGURATION_ERROR} unknown field \"watchNamespace\""
            ))),
        )
        .await;
    let config = json!({
        "watchNamespace": null,
        "deploymentConfig": {"nodeSelector": {"kubernetes.io/os": "linux"}},
    });
    scenario.set_config(&ext, config).await;
    scenario.wait_for(&ext, INSTALLED).await;
    let d = deployment(&scenario, &ext, &format!("{}-controller", all.package())).await;
    let selector = d
        .spec
        .and_then(|s| s.template.spec)
        .and_then(|s| s.node_selector)
        .unwrap_or_default();
    assert_eq!(
        selector.get("kubernetes.io/os").map(String::as_str),
        Some("linux")
    );
    scenario.finish().await;
}

/// user-managed-fields.feature: labels, annotations and a `rollout restart` a user adds to an
/// installed Deployment survive the controller's drift repair.
#[tokio::test]
async fn user_managed_fields_survive_drift_repair() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("userfields").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;
    let deployments = scenario.deployments(&ext);
    let deployment_name = format!("{}-controller", catalog.package());
    deployments
        .patch(
            &deployment_name,
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"labels": {"user": "label"}, "annotations": {"user": "annotation"}},
                "spec": {"template": {"metadata": {"annotations": {
                    "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"
                }}}},
            })),
        )
        .await
        .unwrap();
    // Force a drift repair: delete an object of the release and wait until it is back.
    scenario
        .delete_configmap_and_wait_restored(&ext, "the ConfigMap to be restored")
        .await;
    let d = deployments.get(&deployment_name).await.unwrap();
    assert_eq!(
        d.metadata
            .labels
            .unwrap_or_default()
            .get("user")
            .map(String::as_str),
        Some("label")
    );
    assert_eq!(
        d.metadata
            .annotations
            .unwrap_or_default()
            .get("user")
            .map(String::as_str),
        Some("annotation")
    );
    assert_eq!(
        d.spec
            .and_then(|s| s.template.metadata)
            .and_then(|m| m.annotations)
            .unwrap_or_default()
            .get("kubectl.kubernetes.io/restartedAt")
            .map(String::as_str),
        Some("2026-01-01T00:00:00Z")
    );
    scenario.finish().await;
}

/// Issue 11 item 6: with `--honor-service-account`, `spec.serviceAccount` without RBAC is
/// reported (every missing permission in one message, Retrying) and installs once it is granted.
#[tokio::test]
async fn a_service_account_without_rbac_is_reported_then_installs() {
    let mut scenario = Scenario::builder()
        .controller_arg("--honor-service-account")
        .start()
        .await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("sa").await;
    let sas: Api<ServiceAccount> = Api::namespaced(scenario.client.clone(), &ns);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "installer"}})).unwrap(),
    )
    .await
    .unwrap();
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).service_account("installer"))
        .await;
    let e = scenario
        .wait_for(
            &ext,
            RETRYING.message(
                Message::contains(format!("system:serviceaccount:{ns}:installer"))
                    .and(Message::contains("configmaps")),
            ),
        )
        .await;
    assert_eq!(message(&e, ConditionType::Installed), "No bundle installed");

    let binding_name = unique_name("installer-admin");
    let bindings: Api<ClusterRoleBinding> = Api::all(scenario.client.clone());
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": binding_name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}],
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    scenario.wait_for(&ext, INSTALLED).await;
    scenario.delete_extension(&ext).await;
    let _ = bindings
        .delete(&binding_name, &DeleteParams::default())
        .await;
    scenario.finish().await;
}

/// Killing the controller while it installs: a new one converges (a release record left
/// `pending-install` by the killed one is marked failed and the install is done again).
#[tokio::test]
async fn a_controller_killed_mid_install_converges_after_restart() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("killed").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    // As soon as the first release record exists the install is under way: kill it there.
    scenario
        .eventually("a release record", || async {
            (!scenario.release_records(&ext).await.is_empty()).then_some(())
        })
        .await;
    scenario.kill_controller();

    scenario.start_controller().await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.0.0")))
        .await;
    scenario.finish().await;
}

/// Bad input: an unpullable bundle and a bundle failing validation are reported as `Retrying`
/// with a clear message, and the installed bundle stays installed and repaired.
#[tokio::test]
async fn unpullable_and_invalid_bundles_keep_the_installed_one() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(
            Package::new("pkg")
                .bundle("1.0.0")
                // Listed in the catalog with an image that was never pushed.
                .bundle("1.0.1")
                .not_pushed()
                // The CSV owns a CRD the bundle does not ship: upstream's validator refuses it.
                .bundle_with("1.0.2", |b| b.manifests.retain(|(f, _)| f != "crd.json")),
        )
        .await;
    let package = catalog.package();
    let ns = scenario.namespace("badinput").await;
    let ext = scenario
        .install(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;

    scenario.set_version(&ext, "1.0.1").await;
    scenario
        .wait_for(
            &ext,
            RETRYING
                .message(Message::starts_with(format!(
                    "error for resolved bundle \"{}\" with version \"1.0.1\": ",
                    catalog.bundle("1.0.1").0
                )))
                .bundle(catalog.bundle("1.0.0")),
        )
        .await;

    scenario
        .patch_spec(
            &ext,
            json!({"source": {"catalog": {"version": "1.0.2", "upgradeConstraintPolicy": "SelfCertified"}}}),
        )
        .await;
    let invalid = format!(
        "error for resolved bundle \"{}\" with version \"1.0.2\": cluster service definition references owned custom resource definition 'widgets.{package}.e2e.olm.test' not found in bundle",
        catalog.bundle("1.0.2").0
    );
    let refused = RETRYING
        .until_message(Message::contains("not found in bundle"))
        .message(Message::exact(invalid));
    scenario
        .wait_for(&ext, refused.bundle(catalog.bundle("1.0.0")))
        .await;
    assert!(scenario.configmap_version(&ext).await.is_some());
    scenario.finish().await;
}

/// Bad input: a catalog whose content server answers garbage gives a clear `Retrying`
/// condition naming the catalog; nothing installed is lost.
#[tokio::test]
async fn a_catalog_serving_garbage_is_reported_and_the_installed_bundle_stays() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("garbage").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;

    // A content server on loopback that answers every request with bytes that are no FBC.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let body = "{\"schema\": \"olm.package\", \"name\": ]]] not json \u{1}\u{2}";
                let _ = socket
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/jsonl\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    // A ClusterCatalog no catalogd manages, its status written as catalogd would.
    let garbage = unique_name("garbage");
    let catalogs = &scenario.catalogs.api;
    catalogs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": garbage, "labels": {CATALOG_NAME_LABEL: garbage}},
                "spec": {"source": {"type": "Image", "image": {"ref": "example.invalid/garbage:1"}}},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let status = json!({"status": {
        "conditions": [{"type": "Serving", "status": "True", "reason": "Available", "message": "x",
                        "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}],
        "resolvedSource": {"type": "Image", "image": {"ref": "example.invalid/garbage@sha256:0000000000000000000000000000000000000000000000000000000000000000"}},
        "urls": {"base": format!("http://{addr}/catalogs/{garbage}")},
        "lastUnpacked": "2026-01-01T00:00:00Z",
    }});
    catalogs
        .patch_status(&garbage, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    scenario
        .patch_spec(
            &ext,
            json!({"source": {"catalog": {"selector": {"matchLabels": {CATALOG_NAME_LABEL: garbage}}}}}),
        )
        .await;
    let unreadable = format!(
        "error walking catalogs: error getting package \"{}\" from catalog \"{garbage}\": ",
        catalog.package()
    );
    scenario
        .wait_for(
            &ext,
            RETRYING
                .message(Message::starts_with(unreadable))
                .bundle(catalog.bundle("1.0.0")),
        )
        .await;
    server.abort();
    let _ = catalogs.delete(&garbage, &DeleteParams::default()).await;
    scenario.finish().await;
}

/// Bad input: an invalid configuration on an installed extension is a terminal
/// `InvalidConfiguration` (no retries) and what is installed stays and is kept; fixing the
/// configuration reconciles again.
#[tokio::test]
async fn an_invalid_configuration_keeps_the_installed_bundle() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("badconfig").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;
    scenario
        .set_config(
            &ext,
            json!({"deploymentConfig": {"nodeSelector": "not a map"}}),
        )
        .await;
    let refused = Message::starts_with(format!(
        "error for resolved bundle \"{}\" with version \"1.0.0\": {CONFIGURATION_ERROR} ",
        catalog.bundle("1.0.0").0
    ))
    .and(Message::contains("nodeSelector"));
    scenario
        .wait_for(
            &ext,
            INVALID_CONFIGURATION
                .message(refused)
                .bundle(catalog.bundle("1.0.0")),
        )
        .await;
    assert!(scenario.configmap_version(&ext).await.is_some());
    // Removing the configuration reconciles again.
    scenario.patch_spec(&ext, json!({"config": null})).await;
    scenario.wait_for(&ext, DESIRED_STATE).await;
    scenario.finish().await;
}
