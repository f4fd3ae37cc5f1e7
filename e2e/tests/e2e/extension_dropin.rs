//! Upstream's behaviour where it differs from what this controller once did (issue 24): a drop-in
//! behaves as upstream v1.11 by default. Same set-up as [`crate::extension_install`].

use olm_api::v1::ConditionType;
use olm_e2e::operator_controller::{OperatorController, Options};
use serde_json::json;

use crate::extension_install::{Fixture, create_extension, delete_extension, extensions};
use crate::support::{create_namespace, delete_namespace, unique_name};

/// Upstream v1.11 ignores the deprecated `spec.serviceAccount` (its acceptance suite installs an
/// extension naming a ServiceAccount that does not exist): so does this controller unless it
/// runs with `--honor-service-account`.
#[tokio::test]
async fn a_service_account_that_does_not_exist_is_ignored_as_upstream_ignores_it() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let ns = create_namespace(&client, "ignored-sa").await;
    let api = extensions().await;
    let name = unique_name("ext");
    let mut body = oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None);
    body["spec"]["serviceAccount"] = json!({"name": "some-sa"});
    create_extension(body).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    oc.wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}
