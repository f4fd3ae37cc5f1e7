//! Upstream's behaviour where it differs from what this controller once did (issue 24): a drop-in
//! behaves as upstream v1.11 by default. Each test is a [`Scenario`]: a controller, a catalogd
//! and a package of its own.

use olm_e2e::scenario::{DESIRED_STATE, ExtensionSpec, INSTALLED, Package, Scenario};

/// Upstream v1.11 ignores the deprecated `spec.serviceAccount` (its acceptance suite installs an
/// extension naming a ServiceAccount that does not exist): so does this controller unless it
/// runs with `--honor-service-account`.
#[tokio::test]
async fn a_service_account_that_does_not_exist_is_ignored_as_upstream_ignores_it() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("ignored-sa").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).service_account("some-sa"))
        .await;
    scenario.wait_for(&ext, INSTALLED).await;
    scenario.wait_for(&ext, DESIRED_STATE).await;
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}

/// Upstream's acceptance suite runs operator-controller with `HTTPS_PROXY` set and the API
/// server in `NO_PROXY`: the controller starts (the Kubernetes client honours `NO_PROXY`) and
/// installs. Here the proxy does not even exist: everything the controller reaches is on
/// 127.0.0.1, which `NO_PROXY` exempts, so nothing may go through it.
#[tokio::test]
async fn a_configured_proxy_with_the_api_server_exempted_does_not_stop_the_controller() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let proxy = format!("http://{closed}");
    let mut scenario = Scenario::builder()
        .controller_env("HTTPS_PROXY", &proxy)
        .controller_env("HTTP_PROXY", &proxy)
        .controller_env("NO_PROXY", "127.0.0.1,localhost")
        .start()
        .await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("behind-proxy").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    scenario.wait_for(&ext, INSTALLED).await;
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}
