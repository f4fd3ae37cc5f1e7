//! Takeover of an install made by upstream operator-controller: its release record (Helm's
//! chunked Secrets, install-path.md §3) and the objects its Helm client created are taken as the
//! installed state, without redeploying anything.
//!
//! The record is built from the documented format: the chart and manifest upstream renders for
//! the bundle (`release::render`, byte-identical to upstream's, see
//! `release_storage::discovered_scopes_render_upstreams_manifest`), the release labels upstream
//! stores, status `deployed`, written as index and chunk Secrets (`ReleaseStore`, whose bytes the
//! release-storage tests compare with upstream's). The objects are created as Helm creates them:
//! a plain create of each manifest object.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, GroupVersionKind, PostParams};
use olm_api::v1::ConditionType;
use olm_e2e::operator_controller::{
    BundleSpec, OperatorController, Options, bundle_name, extension_body, installed_bundle,
};
use olm_operator_core::release::history::{self, NewRelease};
use olm_operator_core::release::manifest::manifest_objects;
use olm_operator_core::release::render::{PostRenderContext, render_release};
use olm_operator_core::release::secrets::cluster_extension_owner_reference;
use olm_operator_core::render::{RenderOptions, render};
use operator_controller::bundle_source::{ReadLimits, read_bundle_dir};
use operator_controller::controller::reconcile::{bundle_manifests, chart_objects};
use operator_controller::storage::ReleaseStore;
use operator_controller::storage::scopes::discover_scopes;

use crate::extension_install::{
    Fixture, create_extension, delete_extension, extensions, release_secrets,
};
use crate::support::{create_namespace, create_namespace_named, delete_namespace, unique_name};

#[tokio::test]
async fn an_install_recorded_in_upstreams_format_is_taken_over_without_redeploying() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let package = fixture.package.clone();
    let options = Options::new(&env.registry);
    let system = create_namespace_named(&client, &options.system_namespace).await;
    let ns = create_namespace(&client, "takeover").await;

    // The extension exists (upstream installed it); no controller of ours runs yet.
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(extension_body(
        &options.instance,
        &name,
        &ns,
        &package,
        &fixture.catalog,
        None,
    ))
    .await;
    let uid = api.get(&name).await.unwrap().metadata.uid.unwrap();

    // What upstream rendered and recorded for bundle 1.0.0.
    let dir = tempfile::tempdir().unwrap();
    BundleSpec::new(&package, "1.0.0").write(dir.path());
    let fs = read_bundle_dir(dir.path(), &ReadLimits::default()).unwrap();
    let parsed = olm_operator_core::bundle::parse(&fs).unwrap();
    let rendered = render(&parsed, &RenderOptions::new(ns.clone())).unwrap();
    let objects = chart_objects(&rendered, &bundle_manifests(&parsed));
    let scopes = discover_scopes(
        &client,
        &rendered.objects,
        std::time::Duration::from_secs(10),
    )
    .await
    .unwrap();
    let context = PostRenderContext {
        release_namespace: ns.clone(),
        owner_name: name.clone(),
        owner_uid: uid.clone(),
    };
    let (chart, manifest) =
        render_release(&objects, &rendered.annotations, &context, &scopes).unwrap();
    let image = fixture.images["1.0.0"].clone();
    let mut release = history::install_release(NewRelease {
        name: &name,
        namespace: &ns,
        chart,
        manifest: manifest.clone(),
        labels: history::bundle_labels(
            &package,
            &bundle_name(&package, "1.0.0"),
            "1.0.0",
            &image,
            None,
        ),
        now: k8s_openapi::jiff::Timestamp::now(),
    });
    history::set_status(&mut release, "deployed", history::INSTALL_COMPLETE);
    let store = ReleaseStore::new(client.clone(), &system);
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    store
        .create(
            &release,
            &cluster_extension_owner_reference(&name, &uid),
            now,
        )
        .await
        .unwrap();

    // The objects, created as Helm's client creates them.
    for object in manifest_objects(&manifest).unwrap() {
        let api_version = object["apiVersion"].as_str().unwrap();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap());
        let (resource, caps) = kube::discovery::pinned_kind(&client, &gvk).await.unwrap();
        let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
            Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
                Api::namespaced_with(client.clone(), ns, &resource)
            }
            _ => Api::all_with(client.clone(), &resource),
        };
        let dynamic: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        api.create(
            &PostParams {
                field_manager: Some("operator-controller".into()),
                ..PostParams::default()
            },
            &dynamic,
        )
        .await
        .unwrap_or_else(|e| panic!("create {}: {e}", object["kind"]));
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment_name = format!("{package}-controller");
    let before = deployments.get(&deployment_name).await.unwrap();

    // Our controller takes over.
    let oc = OperatorController::start(options).await;
    let e = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        installed_bundle(&e),
        Some((bundle_name(&package, "1.0.0"), "1.0.0".into()))
    );
    let after = deployments.get(&deployment_name).await.unwrap();
    assert_eq!(after.metadata.uid, before.metadata.uid, "not redeployed");
    assert_eq!(
        after.spec.as_ref().map(|s| &s.template),
        before.spec.as_ref().map(|s| &s.template),
        "the pod template is unchanged (no rollout)"
    );
    let records = release_secrets(&oc, &name).await;
    let versions: BTreeMap<String, String> = records
        .iter()
        .map(|s| {
            let labels = s.metadata.labels.clone().unwrap_or_default();
            (labels["version"].clone(), labels["status"].clone())
        })
        .collect();
    assert_eq!(
        versions,
        BTreeMap::from([("1".to_string(), "deployed".to_string())]),
        "upstream's record is the installed state; nothing new was recorded"
    );

    delete_extension(&oc, &api, &name).await;
    assert!(
        deployments
            .get_opt(&deployment_name)
            .await
            .unwrap()
            .is_none()
    );
    delete_namespace(&client, &ns).await;
    delete_namespace(&client, &system).await;
}
