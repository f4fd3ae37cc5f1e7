//! `status.availableUpdates` (issue 25 part 3): a newer bundle the spec keeps out is listed with
//! what blocks it, counted in `olm_clusterextension_updates_available`, announced by one Event,
//! and cleared once the spec lets it in.

use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use olm_api::v1::UpdateBlocker;
use olm_e2e::scenario::{ExtensionSpec, INSTALLED, Package, Scenario};

/// The `UpdateAvailable` Events about `extension`.
async fn update_events(client: &kube::Client, extension: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some("UpdateAvailable")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(extension)
        })
        .filter_map(|e| e.note)
        .collect()
}

#[tokio::test]
async fn a_newer_bundle_outside_a_pinned_version_is_listed_counted_announced_and_cleared() {
    let mut scenario = Scenario::start().await;
    let mut catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("updates").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;
    let installed = scenario.wait_for(&ext, INSTALLED).await;
    assert!(installed.status.unwrap().available_updates.is_empty());
    let package = catalog.package().to_owned();
    let series = format!(
        "olm_clusterextension_updates_available{{name=\"{}\",package=\"{package}\"}}",
        ext.name
    );

    // A newer bundle appears in the catalog: listed as held back by the pin.
    scenario
        .republish(&mut catalog, |p| p.bundle("1.1.0"))
        .await;
    let (name, _) = catalog.bundle("1.1.0");
    let listed = scenario
        .eventually("1.1.0 to be listed as an available update", || async {
            let e = scenario.get(&ext).await;
            let updates = e.status?.available_updates;
            (!updates.is_empty()).then_some(updates)
        })
        .await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].name, name);
    assert_eq!(listed[0].version, "1.1.0");
    assert_eq!(listed[0].catalog, catalog.name);
    assert_eq!(listed[0].blocked_by, UpdateBlocker::OutsideVersionRange);
    let metrics = scenario.controller().metrics().await;
    assert!(metrics.contains(&format!("{series} 1")), "{metrics}");
    let client = scenario.client.clone();
    let events = scenario
        .eventually("one UpdateAvailable Event", || async {
            let notes = update_events(&client, &ext.name).await;
            (!notes.is_empty()).then_some(notes)
        })
        .await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].contains("1.1.0") && events[0].contains("OutsideVersionRange"));

    // Widening the range installs it and clears the entry (and no second Event is sent).
    scenario.set_version(&ext, ">=1.0.0").await;
    scenario
        .wait_until_installed(&ext, catalog.bundle("1.1.0"))
        .await;
    scenario
        .eventually("the entry to be cleared", || async {
            let e = scenario.get(&ext).await;
            e.status?.available_updates.is_empty().then_some(())
        })
        .await;
    let metrics = scenario.controller().metrics().await;
    assert!(metrics.contains(&format!("{series} 0")), "{metrics}");
    assert_eq!(update_events(&client, &ext.name).await.len(), 1);
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}
