//! More of upstream's ClusterExtension features end to end (install.feature, update.feature,
//! recover.feature, user-managed-fields.feature) and bad input. Same set-up as
//! [`crate::extension_install`]: a controller, a catalogd and a package per test.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use olm_api::v1::ConditionType;
use olm_e2e::operator_controller::{
    BundleSpec, CATALOG_NAME_LABEL, ChannelSpec, OperatorController, Options, bundle_name,
    installed_bundle, message,
};
use serde_json::json;

use crate::extension_install::{
    Fixture, chain, create_extension, delete_extension, extensions, patch_spec,
};
use crate::support::{create_namespace, delete_namespace, unique_name};

fn inline_config(config: serde_json::Value) -> serde_json::Value {
    json!({"configType": "Inline", "inline": config})
}

async fn deployment(client: &kube::Client, ns: &str, name: &str) -> Deployment {
    Api::<Deployment>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("get Deployment {ns}/{name}: {e}"))
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

/// update.feature: switching `spec.source.catalog.channels` moves to the other channel's head.
#[tokio::test]
async fn a_channel_switch_installs_the_other_channels_bundle() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let package = unique_name("pkg");
    let bundles = [
        BundleSpec::new(&package, "1.0.0"),
        BundleSpec::new(&package, "1.1.0"),
    ];
    let channels = vec![
        ChannelSpec {
            name: "stable".into(),
            entries: chain(&package, &["1.0.0"]),
        },
        ChannelSpec {
            name: "fast".into(),
            entries: chain(&package, &["1.0.0", "1.1.0"]),
        },
    ];
    let fixture = Fixture::with_channels(&env.registry, &package, &bundles, channels).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "channel").await;
    let api = extensions().await;
    let name = unique_name("ext");
    let mut body = oc.extension(&name, &ns, &package, &fixture.catalog, None);
    body["spec"]["source"]["catalog"]["channels"] = json!(["stable"]);
    create_extension(body).await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.0"), "1.0.0".into()))
    );
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"channels": ["fast"]}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.1.0"), "1.1.0".into()))
    );
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// install.feature: the same package in two catalogs of equal priority is ambiguous.
#[tokio::test]
async fn two_catalogs_at_the_same_priority_are_reported() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let second = fixture
        .catalogs
        .serve("cat", &fixture.catalog_image, None)
        .await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "twocats").await;
    let api = extensions().await;
    let name = unique_name("ext");
    let mut body = oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None);
    body["spec"]["source"]["catalog"]["selector"] = json!({"matchExpressions": [{
        "key": CATALOG_NAME_LABEL, "operator": "In", "values": [fixture.catalog, second],
    }]});
    create_extension(body).await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    let mut names = [fixture.catalog.clone(), second.clone()];
    names.sort();
    // upstream-operator-controller.md §3.5.
    assert_eq!(
        message(&e, ConditionType::Progressing),
        format!(
            "found bundles for package \"{}\" in multiple catalogs with the same priority [{} {}]",
            fixture.package, names[0], names[1]
        )
    );
    // A higher priority decides.
    fixture
        .catalogs
        .api
        .patch(
            &second,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"priority": 10}})),
        )
        .await
        .unwrap();
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// install.feature: OwnNamespace and SingleNamespace bundles need `watchNamespace`
/// (terminal `InvalidConfiguration` with upstream's texts until it is right); an
/// AllNamespaces-only bundle rejects it; `deploymentConfig.nodeSelector` reaches the pod spec.
#[tokio::test]
async fn install_mode_configuration_errors_and_success() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let own = unique_name("own");
    let single = unique_name("single");
    let all = unique_name("all");
    let mut own_bundle = BundleSpec::new(&own, "1.0.0");
    own_bundle.install_modes = vec!["OwnNamespace".into()];
    let mut single_bundle = BundleSpec::new(&single, "1.0.0");
    single_bundle.install_modes = vec!["SingleNamespace".into()];
    let own_fixture = Fixture::with_bundles(
        &env.registry,
        &own,
        &[own_bundle.clone()],
        &chain(&own, &["1.0.0"]),
    )
    .await;
    let single_fixture = Fixture::with_bundles(
        &env.registry,
        &single,
        &[single_bundle.clone()],
        &chain(&single, &["1.0.0"]),
    )
    .await;
    let all_fixture = Fixture::with_bundles(
        &env.registry,
        &all,
        &[BundleSpec::new(&all, "1.0.0")],
        &chain(&all, &["1.0.0"]),
    )
    .await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let api = extensions().await;

    // OwnNamespace.
    let ns = create_namespace(&client, "own").await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &own, &own_fixture.catalog, None)).await;
    let e = oc
        .wait_condition(
            &api,
            &name,
            ConditionType::Progressing,
            "False",
            "InvalidConfiguration",
        )
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert_eq!(
        text,
        format!(
            "error for resolved bundle \"{}\" with version \"1.0.0\": invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing",
            own_bundle.name()
        )
    );
    patch_spec(
        &api,
        &name,
        json!({"config": inline_config(json!({"watchNamespace": "some-ns"}))}),
    )
    .await;
    let e = oc
        .wait_condition(
            &api,
            &name,
            ConditionType::Progressing,
            "False",
            "InvalidConfiguration",
        )
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert!(
        text.contains(&format!("invalid value \"some-ns\": must be \"{ns}\"")),
        "{text}"
    );
    patch_spec(
        &api,
        &name,
        json!({"config": inline_config(json!({"watchNamespace": ns}))}),
    )
    .await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    let d = deployment(&client, &ns, &own_bundle.deployment_name()).await;
    assert_eq!(target_namespaces(&d), Some(ns.clone()));
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;

    // SingleNamespace: watching another namespace.
    let ns = create_namespace(&client, "single").await;
    let watched = create_namespace(&client, "watched").await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &single, &single_fixture.catalog, None)).await;
    let e = oc
        .wait_condition(
            &api,
            &name,
            ConditionType::Progressing,
            "False",
            "InvalidConfiguration",
        )
        .await;
    assert!(
        message(&e, ConditionType::Progressing).ends_with(
            "invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing"
        )
    );
    patch_spec(
        &api,
        &name,
        json!({"config": inline_config(json!({"watchNamespace": "invalid-namespace-"}))}),
    )
    .await;
    let e = oc
        .wait_condition(
            &api,
            &name,
            ConditionType::Progressing,
            "False",
            "InvalidConfiguration",
        )
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert!(
        text.contains(
            "invalid ClusterExtension configuration: invalid configuration: field \"watchNamespace\" must match pattern"
        ),
        "{text}"
    );
    patch_spec(
        &api,
        &name,
        json!({"config": inline_config(json!({"watchNamespace": watched}))}),
    )
    .await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    let d = deployment(&client, &ns, &single_bundle.deployment_name()).await;
    assert_eq!(target_namespaces(&d), Some(watched.clone()));
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
    delete_namespace(&client, &watched).await;

    // AllNamespaces only: watchNamespace is unknown; deploymentConfig reaches the Deployment.
    let ns = create_namespace(&client, "all").await;
    let name = unique_name("ext");
    let mut body = oc.extension(&name, &ns, &all, &all_fixture.catalog, None);
    body["spec"]["config"] = inline_config(json!({"watchNamespace": ns}));
    create_extension(body).await;
    let e = oc
        .wait_condition(
            &api,
            &name,
            ConditionType::Progressing,
            "False",
            "InvalidConfiguration",
        )
        .await;
    assert!(
        message(&e, ConditionType::Progressing).ends_with(
            "invalid ClusterExtension configuration: invalid configuration: unknown field \"watchNamespace\""
        ),
        "{}",
        message(&e, ConditionType::Progressing)
    );
    patch_spec(
        &api,
        &name,
        json!({"config": inline_config(json!({"watchNamespace": null, "deploymentConfig": {"nodeSelector": {"kubernetes.io/os": "linux"}}}))}),
    )
    .await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    let d = deployment(&client, &ns, &format!("{all}-controller")).await;
    let selector = d
        .spec
        .and_then(|s| s.template.spec)
        .and_then(|s| s.node_selector)
        .unwrap_or_default();
    assert_eq!(
        selector.get("kubernetes.io/os").map(String::as_str),
        Some("linux")
    );
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// user-managed-fields.feature: labels, annotations and a `rollout restart` a user adds to an
/// installed Deployment survive the controller's drift repair.
#[tokio::test]
async fn user_managed_fields_survive_drift_repair() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "userfields").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment_name = format!("{}-controller", fixture.package);
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
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.delete("test-configmap", &DeleteParams::default())
        .await
        .unwrap();
    oc.eventually("the ConfigMap to be restored", || async {
        cms.get_opt("test-configmap").await.ok().flatten()
    })
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
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// Issue 11 item 6: with `--honor-service-account`, `spec.serviceAccount` without RBAC is
/// reported (every missing permission in one message, Retrying) and installs once it is granted.
#[tokio::test]
async fn a_service_account_without_rbac_is_reported_then_installs() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let mut options = Options::new(&env.registry);
    options.args.push("--honor-service-account".into());
    let oc = OperatorController::start(options).await;
    let ns = create_namespace(&client, "sa").await;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "installer"}})).unwrap(),
    )
    .await
    .unwrap();
    let api = extensions().await;
    let name = unique_name("ext");
    let mut body = oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None);
    body["spec"]["serviceAccount"] = json!({"name": "installer"});
    create_extension(body).await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert!(
        text.contains(&format!("system:serviceaccount:{ns}:installer")),
        "{text}"
    );
    assert!(text.contains("configmaps"), "{text}");
    assert_eq!(message(&e, ConditionType::Installed), "No bundle installed");

    let binding_name = unique_name("installer-admin");
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
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
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    delete_extension(&oc, &api, &name).await;
    let _ = bindings
        .delete(&binding_name, &DeleteParams::default())
        .await;
    delete_namespace(&client, &ns).await;
}

/// Killing the controller while it installs: a new one converges (a release record left
/// `pending-install` by the killed one is marked failed and the install is done again).
#[tokio::test]
async fn a_controller_killed_mid_install_converges_after_restart() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let mut options = Options::new(&env.registry);
    let system_namespace = options.system_namespace.clone();
    let instance = options.instance.clone();
    let mut first = OperatorController::start(options).await;
    let ns = create_namespace(&client, "killed").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(first.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    // As soon as the first release record exists the install is under way: kill it there.
    first
        .eventually("a release record", || async {
            (!crate::extension_install::release_secrets(&first, &name)
                .await
                .is_empty())
            .then_some(())
        })
        .await;
    first.stop(Duration::ZERO);
    drop(first);

    options = Options::new(&env.registry);
    options.system_namespace = system_namespace;
    options.instance = instance;
    let second = OperatorController::start(options).await;
    let e = second
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&fixture.package, "1.0.0"), "1.0.0".into()))
    );
    delete_extension(&second, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// Bad input: an unpullable bundle and a bundle failing validation are reported as `Retrying`
/// with a clear message, and the installed bundle stays installed and repaired.
#[tokio::test]
async fn unpullable_and_invalid_bundles_keep_the_installed_one() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let package = unique_name("pkg");
    let mut invalid = BundleSpec::new(&package, "1.0.2");
    // The CSV owns a CRD the bundle does not ship: upstream's validator refuses it.
    invalid.manifests.retain(|(f, _)| f != "crd.json");
    let bundles = [BundleSpec::new(&package, "1.0.0"), invalid];
    let missing = env
        .registry
        .image(&format!("{}:never-pushed", unique_name("missing")));
    let fixture = Fixture::with_catalog(
        &env.registry,
        &package,
        &bundles,
        vec![ChannelSpec {
            name: "stable".into(),
            entries: chain(&package, &["1.0.0", "1.0.1", "1.0.2"]),
        }],
        [("1.0.1".to_string(), missing)].into(),
    )
    .await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "badinput").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &package, &fixture.catalog, Some("1.0.0"))).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;

    // 1.0.1 is listed in the catalog with an image that was never pushed.
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": "1.0.1"}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert!(
        text.starts_with(&format!(
            "error for resolved bundle \"{}\" with version \"1.0.1\": ",
            bundle_name(&package, "1.0.1")
        )),
        "{text}"
    );
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.0"), "1.0.0".into()))
    );

    patch_spec(&api, &name, json!({"source": {"catalog": {"version": "1.0.2", "upgradeConstraintPolicy": "SelfCertified"}}})).await;
    let e = oc
        .wait_progressing(&api, &name, "Retrying", |m| {
            m.contains("not found in bundle")
        })
        .await;
    assert_eq!(
        message(&e, ConditionType::Progressing),
        format!(
            "error for resolved bundle \"{}\" with version \"1.0.2\": cluster service definition references owned custom resource definition 'widgets.{package}.e2e.olm.test' not found in bundle",
            bundle_name(&package, "1.0.2")
        )
    );
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.0"), "1.0.0".into()))
    );
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), &ns)
            .get_opt("test-configmap")
            .await
            .unwrap()
            .is_some()
    );
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// Bad input: a catalog whose content server answers garbage gives a clear `Retrying`
/// condition naming the catalog; nothing installed is lost.
#[tokio::test]
async fn a_catalog_serving_garbage_is_reported_and_the_installed_bundle_stays() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "garbage").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;

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
    let catalogs = &fixture.catalogs.api;
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
    patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"selector": {"matchLabels": {CATALOG_NAME_LABEL: garbage}}}}}),
    )
    .await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Retrying")
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert!(
        text.starts_with(&format!(
            "error walking catalogs: error getting package \"{}\" from catalog \"{garbage}\": ",
            fixture.package
        )),
        "{text}"
    );
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&fixture.package, "1.0.0"), "1.0.0".into()))
    );
    server.abort();
    let _ = catalogs.delete(&garbage, &DeleteParams::default()).await;
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// Bad input: an invalid configuration on an installed extension is a terminal
/// `InvalidConfiguration` (no retries) and what is installed stays and is kept; fixing the
/// configuration reconciles again.
#[tokio::test]
async fn an_invalid_configuration_keeps_the_installed_bundle() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "badconfig").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    patch_spec(
        &api,
        &name,
        json!({"config": inline_config(json!({"deploymentConfig": {"nodeSelector": "not a map"}}))}),
    )
    .await;
    let e = oc
        .wait_condition(
            &api,
            &name,
            ConditionType::Progressing,
            "False",
            "InvalidConfiguration",
        )
        .await;
    let text = message(&e, ConditionType::Progressing);
    assert!(
        text.starts_with(&format!(
            "error for resolved bundle \"{}\" with version \"1.0.0\": invalid ClusterExtension configuration: invalid configuration: ",
            bundle_name(&fixture.package, "1.0.0")
        )),
        "{text}"
    );
    assert!(text.contains("nodeSelector"), "{text}");
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&fixture.package, "1.0.0"), "1.0.0".into()))
    );
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), &ns)
            .get_opt("test-configmap")
            .await
            .unwrap()
            .is_some()
    );
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([{"op": "remove", "path": "/spec/config"}])).unwrap(),
        ),
    )
    .await
    .unwrap();
    oc.wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}
