//! Helpers shared by the end-to-end tests.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::core::Status;
use olm_api::v1::{ClusterCatalog, ClusterExtension};
use serde_json::Value;

pub use olm_e2e::eventually::eventually;

/// Held by every test that creates the ClusterVersion singleton (`version`), so they take turns.
pub static CLUSTER_VERSION_SINGLETON: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
pub use olm_e2e::test_env::unique_name;

/// The API resource of ClusterExtension, for sending arbitrary (also invalid) JSON.
pub fn cluster_extensions(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &ApiResource::erase::<ClusterExtension>(&()))
}

/// The API resource of ClusterCatalog, for sending arbitrary (also invalid) JSON.
pub fn cluster_catalogs(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &ApiResource::erase::<ClusterCatalog>(&()))
}

/// Creates a namespace with a unique name starting with `prefix` and returns the name.
pub async fn create_namespace(client: &kube::Client, prefix: &str) -> String {
    let name = unique_name(prefix);
    let namespace: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name},
    }))
    .unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|e| panic!("create namespace {name}: {e}"));
    name
}

/// Deletes a namespace, ignoring errors (cleanup at the end of a test).
pub async fn delete_namespace(client: &kube::Client, name: &str) {
    let _ = Api::<Namespace>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await;
}

/// Creates an object from JSON (which may be invalid on purpose).
pub async fn create(api: &Api<DynamicObject>, body: Value) -> Result<DynamicObject, kube::Error> {
    let object: DynamicObject = serde_json::from_value(body).unwrap();
    api.create(&PostParams::default(), &object).await
}

/// Deletes a cluster-scoped object, ignoring "not found".
pub async fn delete(api: &Api<DynamicObject>, object: &DynamicObject) {
    if let Some(name) = object.metadata.name.as_deref() {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
}

/// The Status the API server answered with; panics (test failure) on other errors.
pub fn api_status(err: &kube::Error) -> &Status {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other}"),
    }
}

/// Outcome of one table case, for a single report at the end of a table test.
#[derive(Default)]
pub struct Report {
    failures: Vec<String>,
    cases: usize,
}

impl Report {
    /// Records that `case` should have been accepted.
    pub fn expect_accepted<T>(&mut self, case: &str, result: &Result<T, kube::Error>) {
        self.cases += 1;
        if let Err(e) = result {
            self.failures
                .push(format!("{case}: expected acceptance, got: {e}"));
        }
    }

    /// Records that `case` should have been rejected with a message containing every string of
    /// `wanted`.
    pub fn expect_rejected<T>(
        &mut self,
        case: &str,
        result: &Result<T, kube::Error>,
        wanted: &[&str],
    ) {
        self.cases += 1;
        match result {
            Ok(_) => self.failures.push(format!(
                "{case}: expected rejection with {wanted:?}, but it was accepted"
            )),
            Err(e) => {
                let message = &api_status(e).message;
                for w in wanted {
                    if !message.contains(w) {
                        self.failures
                            .push(format!("{case}: message lacks {w:?}; got: {message}"));
                    }
                }
            }
        }
    }

    /// Records that `case` should have been rejected with exactly `wanted.len()` causes, each
    /// message of `wanted` appearing in the API server's message.
    pub fn expect_exact_causes<T>(
        &mut self,
        case: &str,
        result: &Result<T, kube::Error>,
        wanted: &[String],
    ) {
        if wanted.is_empty() {
            return self.expect_accepted(case, result);
        }
        let refs: Vec<&str> = wanted.iter().map(String::as_str).collect();
        self.expect_rejected(case, result, &refs);
        if let Err(e) = result {
            let causes = api_status(e)
                .details
                .as_ref()
                .map(|d| d.causes.len())
                .unwrap_or(0);
            if causes != wanted.len() {
                self.failures.push(format!(
                    "{case}: expected {} error(s), the API server reported {causes}: {}",
                    wanted.len(),
                    api_status(e).message
                ));
            }
        }
    }

    /// Fails the test listing every failed case.
    pub fn assert_all_passed(self, table: &str) {
        assert!(
            self.failures.is_empty(),
            "{table}: {} of {} cases failed:\n{}",
            self.failures.len(),
            self.cases,
            self.failures.join("\n")
        );
    }
}
