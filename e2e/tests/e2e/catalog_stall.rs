//! A catalog server that stalls, as `operator-controller run` sees it (`full` tier): catalogd's
//! `status.urls.base` names a proxy ([`StallingProxy`]) that forwards to catalogd until the test
//! makes it stall after the response headers. With `--catalogd-read-idle-timeout=1s` the
//! reconcile that needs the catalog fails at the idle timeout with `Progressing=Retrying` naming
//! the URL, while the extension stays `Installed=True`; once the server answers again the
//! extension upgrades. Both processes' logs (files, not terminals) carry no ANSI colour codes.
//!
//! The scenario vocabulary's catalogd serves under its own address, so this test assembles its
//! catalogd and controller from the lower-level pieces.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use kube::api::Api;
use olm_api::v1::{ClusterExtension, ConditionType, find_condition};
use olm_e2e::catalogd::{Catalogd, Options as CatalogdOptions, catalogs};
use olm_e2e::operator_controller::{
    OperatorController, Options, bundle_name, ensure_namespace, free_port, installed_bundle,
};
use olm_e2e::scenario::{
    ExtensionSpec, INSTALLED, Message, POLL_MINUTES, Package, RETRYING, delete_extension, wait_for,
};
use olm_e2e::stalling_proxy::StallingProxy;

use crate::support::{delete_namespace, unique_name};

/// `(status, reason)` of condition `type_`.
fn condition(e: &ClusterExtension, type_: ConditionType) -> Option<(String, String)> {
    let c = find_condition(&e.status.as_ref()?.conditions, type_)?;
    Some((c.status.as_str().to_owned(), c.reason.clone()))
}

#[tokio::test]
async fn a_stalled_catalog_server_fails_the_reconcile_at_the_idle_timeout_and_the_extension_stays_installed()
 {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let package = Package::with_versions(&["1.0.0"]);
    let bundle_repo = unique_name("bundles");
    let catalog_repo = unique_name("catalog");
    let mut images = BTreeMap::new();
    images.insert(
        "1.0.0".to_string(),
        package.rows[0]
            .bundle
            .push(&env.registry, &bundle_repo)
            .await,
    );
    let image = package
        .push_catalog(&env.registry, &catalog_repo, &images)
        .await;

    // catalogd serves on its own port; status.urls.base names the proxy in front of it.
    let content_port = free_port();
    let proxy = StallingProxy::start(SocketAddr::from(([127, 0, 0, 1], content_port))).await;
    let catalogd = Catalogd::start(CatalogdOptions {
        content_port: Some(content_port),
        external_address: Some(proxy.addr().to_string()),
        ..CatalogdOptions::new(&env.registry)
    })
    .await;
    let catalogs_api = catalogs().await;
    let catalog = catalogd
        .create_catalog(&catalogs_api, "stall", &image, Some(POLL_MINUTES))
        .await;
    let served = catalogd.wait_serving(&catalogs_api, &catalog).await;
    let base = served
        .status
        .as_ref()
        .and_then(|s| s.urls.as_ref())
        .map(|u| u.base.clone())
        .unwrap();
    assert_eq!(base, format!("http://{}/catalogs/{catalog}", proxy.addr()));

    let mut options = Options::new(&env.registry);
    options
        .args
        .push("--catalogd-read-idle-timeout=1s".to_string());
    let oc = OperatorController::start(options).await;
    let ns = unique_name("stall");
    ensure_namespace(&client, &ns).await;
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let ext = ExtensionSpec::of_package(&package.name, &catalog, &ns)
        .create(&extensions, &oc.instance)
        .await;
    wait_for(&extensions, &ext.name, &oc, INSTALLED).await;

    // The server stalls; a new catalog revision makes the controller read the package again.
    proxy.stall();
    let package = package.versions(&["1.0.1"]);
    images.insert(
        "1.0.1".to_string(),
        package.rows[1]
            .bundle
            .push(&env.registry, &bundle_repo)
            .await,
    );
    package
        .push_catalog(&env.registry, &catalog_repo, &images)
        .await;
    let stalled = Message::contains(format!("failed to fetch {base}/api/v1/metas?"))
        .and(Message::contains(": no data for 1s (read idle timeout)"));
    let retrying = wait_for(&extensions, &ext.name, &oc, RETRYING.until_message(stalled)).await;
    assert_eq!(
        condition(&retrying, ConditionType::Installed),
        Some(("True".to_string(), "Succeeded".to_string()))
    );
    assert_eq!(
        installed_bundle(&retrying),
        Some((bundle_name(&package.name, "1.0.0"), "1.0.0".to_string()))
    );

    // The server answers again: the reconcile goes through and picks up the new revision.
    proxy.forward();
    oc.eventually("the extension to upgrade to 1.0.1", || async {
        let e = extensions.get(&ext.name).await.ok()?;
        (installed_bundle(&e) == Some((bundle_name(&package.name, "1.0.1"), "1.0.1".to_string())))
            .then_some(())
    })
    .await;

    // Logs written to files carry no terminal colour codes.
    let log = oc.log();
    assert!(log.contains("INFO"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "ANSI escape in the operator-controller log"
    );
    assert!(
        !catalogd.log_tail().contains('\u{1b}'),
        "ANSI escape in the catalogd log"
    );

    delete_extension(&extensions, &ext.name, &oc).await;
    delete_namespace(&client, &ns).await;
}
