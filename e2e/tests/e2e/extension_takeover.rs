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

use kube::api::{Api, DynamicObject, GroupVersionKind, PostParams};
use olm_e2e::operator_controller::BundleSpec;
use olm_e2e::scenario::{DESIRED_STATE, ExtensionSpec, ObjectKey, Package, Scenario};
use olm_operator_core::release::history::{self, NewRelease};
use olm_operator_core::release::manifest::manifest_objects;
use olm_operator_core::release::render::{PostRenderContext, render_release};
use olm_operator_core::release::secrets::cluster_extension_owner_reference;
use olm_operator_core::render::{RenderOptions, render};
use operator_controller::bundle_source::{ReadLimits, read_bundle_dir};
use operator_controller::controller::reconcile::{bundle_manifests, chart_objects};
use operator_controller::storage::ReleaseStore;
use operator_controller::storage::scopes::discover_scopes;

#[tokio::test]
async fn an_install_recorded_in_upstreams_format_is_taken_over_without_redeploying() {
    // The extension exists (upstream installed it); no controller of ours runs yet.
    let mut scenario = Scenario::builder().controller_started_later().start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let package = catalog.package().to_owned();
    let client = scenario.client.clone();
    let ns = scenario.namespace("takeover").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    let name = ext.name.clone();
    let uid = scenario.get(&ext).await.metadata.uid.unwrap();

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
    let image = catalog.bundle_image("1.0.0").to_owned();
    let (bundle, version) = catalog.bundle("1.0.0");
    let mut release = history::install_release(NewRelease {
        name: &name,
        namespace: &ns,
        chart,
        manifest: manifest.clone(),
        labels: history::bundle_labels(&package, &bundle, &version, &image, None),
        now: k8s_openapi::jiff::Timestamp::now(),
    });
    history::set_status(&mut release, "deployed", history::INSTALL_COMPLETE);
    let store = ReleaseStore::new(client.clone(), &scenario.settings.system_namespace);
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
    let deployment_name = format!("{package}-controller");
    let before = scenario
        .snapshot(ObjectKey::namespaced(
            "apps/v1",
            "Deployment",
            &ns,
            &deployment_name,
        ))
        .await;

    // Our controller takes over.
    scenario.start_controller().await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.0.0")))
        .await;
    before
        .assert_unchanged_at(&["/metadata/uid"], "not redeployed")
        .await;
    before
        .assert_unchanged_at(
            &["/spec/template"],
            "the pod template is unchanged (no rollout)",
        )
        .await;
    assert_eq!(
        scenario.release_records(&ext).await.by_revision(),
        BTreeMap::from([("1".to_string(), "deployed".to_string())]),
        "upstream's record is the installed state; nothing new was recorded"
    );

    scenario.delete_extension(&ext).await;
    assert!(
        scenario
            .deployments(&ext)
            .get_opt(&deployment_name)
            .await
            .unwrap()
            .is_none()
    );
    scenario.finish().await;
}
