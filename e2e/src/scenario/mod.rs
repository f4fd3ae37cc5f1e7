//! One vocabulary for the ClusterExtension end-to-end scenarios: publish a catalog from a table of
//! bundles, apply an extension, wait for a condition and check its message, read the release
//! records, snapshot objects and compare them later, delete the extension.
//!
//! Input: a [`Package`] table (bundle rows with channels, replaces, skips, skipRange, properties),
//! [`ExtensionSpec`]s, [`Expect`]ations of conditions with a [`Message`] pattern, [`ObjectKey`]s.
//! Output: a [`Scenario`] — a catalogd and an operator-controller of the test's own (the controller
//! managing only the extensions this scenario applies, so tests run in parallel), the catalogs it
//! serves ([`Published`]), the extensions it applied ([`Extension`]), [`ReleaseRecords`] and
//! [`Snapshot`]s. Network: 127.0.0.1 only (the shared API server and registry, both binaries).
//!
//! A test reads as its scenario:
//!
//! ```no_run
//! # async fn scenario() {
//! use olm_e2e::scenario::{ExtensionSpec, Message, Package, RETRYING, Scenario};
//! let mut scenario = Scenario::start().await;
//! let catalog = scenario.publish(Package::with_versions(&["1.0.0", "1.2.0"])).await;
//! let ns = scenario.namespace("install").await;
//! // Applied, then awaited until `Installed` is True with reason `Succeeded`.
//! let ext = scenario.install(ExtensionSpec::new(&catalog, &ns).version("1.0.0")).await;
//! scenario.patch_spec(&ext, serde_json::json!({"source": {"catalog": {"version": "1.2.0"}}})).await;
//! let refused = RETRYING.message(Message::contains("matching version \"1.2.0\""));
//! scenario.wait_for(&ext, refused).await;
//! assert_eq!(scenario.installed(&ext).await, Some(catalog.bundle("1.0.0")));
//! scenario.finish().await;
//! # }
//! ```
//!
//! Like the rest of this crate, the helpers panic (fail the test) on any failure.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Scenario`] and its [`ScenarioBuilder`]: the controller's settings, starting and stopping it, namespaces, [`Scenario::finish`] |
//! | `catalog.rs` | the table → catalog: [`Package`] rows, [`Published`], [`Scenario::publish`] and the other catalog steps |
//! | `extension.rs` | [`ExtensionSpec`], [`Extension`], and the steps on an applied extension ([`Scenario::wait_for`], `patch_spec`, `delete_extension`) |
//! | `expect.rs` | conditions and messages: [`Expect`], [`Message`], [`INSTALLED`] and the other named expectations |
//! | `records.rs` | what an extension recorded and installed: [`ReleaseRecords`], [`Scenario::labelled_objects`] |
//! | `snapshot.rs` | [`Snapshot`]s of objects by [`ObjectKey`], compared later |

mod catalog;
mod expect;
mod extension;
mod records;
mod snapshot;

use std::path::PathBuf;
use std::time::Duration;

use kube::api::{Api, DeleteParams};
use olm_api::v1::ClusterExtension;

pub use self::catalog::{Package, Published, Replaces, Row, RowImage};
pub use self::expect::{
    AVAILABLE, DESIRED_STATE, Expect, INSTALLED, INVALID_CONFIGURATION, Message, RETRYING,
    available, installed, progressing,
};
pub use self::extension::{Extension, ExtensionSpec, delete_extension, inline_config};
pub use self::records::{ReleaseRecord, ReleaseRecords};
pub use self::snapshot::{ObjectKey, Snapshot, WRITE_BOOKKEEPING};
use crate::TestEnv;
use crate::operator_controller::{Catalogs, OperatorController, Options, ensure_namespace};
pub use crate::operator_controller::{installed_bundle, message};
use crate::test_env::unique_name;

/// The label operator-controller puts on every object it installs, naming the extension.
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";
/// The channel a [`Package`] row is in unless it says otherwise.
pub const DEFAULT_CHANNEL: &str = "stable";
/// How often catalogd polls a published catalog's image (minutes), so a
/// [`Scenario::republish`] under the same tag reaches the extensions.
pub const POLL_MINUTES: i64 = 1;

/// How the scenario's operator-controller runs (what [`Options`] says, owned, so the controller
/// can be started later or again with the same instance and system namespace).
#[derive(Clone, Debug)]
pub struct ControllerSettings {
    pub instance: String,
    pub system_namespace: String,
    pub kubeconfig: Option<PathBuf>,
    pub cache: Option<PathBuf>,
    pub args: Vec<String>,
}

/// Sets up a [`Scenario`] whose controller does not run as [`Scenario::start`] runs it.
pub struct ScenarioBuilder {
    settings: ControllerSettings,
    start_controller: bool,
}

impl ScenarioBuilder {
    /// One more flag for `operator-controller run`.
    pub fn controller_arg(mut self, arg: impl Into<String>) -> ScenarioBuilder {
        self.settings.args.push(arg.into());
        self
    }

    /// The namespace of the release Secrets (created when missing).
    pub fn system_namespace(mut self, namespace: impl Into<String>) -> ScenarioBuilder {
        self.settings.system_namespace = namespace.into();
        self
    }

    /// The controller runs with this kubeconfig instead of the cluster admin's.
    pub fn kubeconfig(mut self, path: PathBuf) -> ScenarioBuilder {
        self.settings.kubeconfig = Some(path);
        self
    }

    /// The controller's cache directory (default: a fresh one per start).
    pub fn cache(mut self, dir: PathBuf) -> ScenarioBuilder {
        self.settings.cache = Some(dir);
        self
    }

    /// No controller runs until [`Scenario::start_controller`]: extensions can be applied (and
    /// state prepared) before any controller sees them.
    pub fn controller_started_later(mut self) -> ScenarioBuilder {
        self.start_controller = false;
        self
    }

    /// Starts catalogd and (unless started later) operator-controller, side by side.
    pub async fn start(self) -> Scenario {
        let env = crate::shared().await;
        let client = env.client().await;
        ensure_namespace(&client, &self.settings.system_namespace).await;
        let (catalogs, controller) = if self.start_controller {
            let (catalogs, controller) = tokio::join!(
                Catalogs::start(&env.registry),
                start_controller(env, &self.settings)
            );
            (catalogs, Some(controller))
        } else {
            (Catalogs::start(&env.registry).await, None)
        };
        Scenario {
            env,
            extensions: Api::all(client.clone()),
            client,
            catalogs,
            controller,
            settings: self.settings,
            namespaces: Vec::new(),
            applied: Vec::new(),
        }
    }
}

async fn start_controller(env: &TestEnv, settings: &ControllerSettings) -> OperatorController {
    let mut options = Options::new(&env.registry);
    options.instance = settings.instance.clone();
    options.system_namespace = settings.system_namespace.clone();
    options.kubeconfig = settings.kubeconfig.clone();
    options.cache = settings.cache.clone();
    options.args = settings.args.clone();
    OperatorController::start(options).await
}

/// A catalogd and an operator-controller of the test's own, on the shared environment, and what
/// the test created through it (namespaces, extensions), which [`Scenario::finish`] removes.
pub struct Scenario {
    pub env: &'static TestEnv,
    /// A cluster-admin client of the test's runtime.
    pub client: kube::Client,
    pub extensions: Api<ClusterExtension>,
    /// The catalogd serving what [`Scenario::publish`] publishes.
    pub catalogs: Catalogs,
    controller: Option<OperatorController>,
    pub settings: ControllerSettings,
    namespaces: Vec<String>,
    applied: Vec<String>,
}

impl Scenario {
    /// A catalogd and an operator-controller with default options.
    pub async fn start() -> Scenario {
        Scenario::builder().start().await
    }

    /// A scenario whose controller takes other options.
    pub fn builder() -> ScenarioBuilder {
        ScenarioBuilder {
            settings: ControllerSettings {
                instance: unique_name("oc"),
                system_namespace: unique_name("olmv1-system"),
                kubeconfig: None,
                cache: None,
                args: Vec::new(),
            },
            start_controller: true,
        }
    }

    /// The running operator-controller.
    ///
    /// # Panics
    /// When none runs (before [`Scenario::start_controller`], after [`Scenario::kill_controller`]).
    pub fn controller(&self) -> &OperatorController {
        self.controller
            .as_ref()
            .expect("the scenario's operator-controller is not running")
    }

    /// Starts the controller (again) with the scenario's instance and system namespace.
    pub async fn start_controller(&mut self) {
        assert!(
            self.controller.is_none(),
            "the scenario's operator-controller already runs"
        );
        self.controller = Some(start_controller(self.env, &self.settings).await);
    }

    /// Kills the controller at once (SIGKILL), as a crash would.
    pub fn kill_controller(&mut self) {
        if let Some(mut controller) = self.controller.take() {
            controller.stop(Duration::ZERO);
        }
    }

    /// Stops the controller (SIGTERM, then SIGKILL after `grace`).
    pub fn stop_controller(&mut self, grace: Duration) {
        if let Some(mut controller) = self.controller.take() {
            controller.stop(grace);
        }
    }

    /// Polls `check` until it yields a value; a failure quotes the controller's log tail (or
    /// catalogd's while no controller runs).
    pub async fn eventually<T, F, Fut>(&self, what: &str, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        match &self.controller {
            Some(controller) => controller.eventually(what, check).await,
            None => self.catalogs.catalogd.eventually(what, check).await,
        }
    }

    /// Creates a namespace `prefix-<random>`, deleted by [`Scenario::finish`].
    pub async fn namespace(&mut self, prefix: &str) -> String {
        let name = unique_name(prefix);
        self.namespace_named(&name).await;
        name
    }

    /// Creates the namespace `name` (when missing), deleted by [`Scenario::finish`].
    pub async fn namespace_named(&mut self, name: &str) {
        ensure_namespace(&self.client, name).await;
        self.namespaces.push(name.to_owned());
    }

    /// Deletes what the scenario left: every applied extension still there (waiting until its
    /// finalizers ran, while the controller still runs), then its namespaces and the system
    /// namespace.
    pub async fn finish(mut self) {
        for name in std::mem::take(&mut self.applied) {
            if self.controller.is_some() {
                self.delete_extension_named(&name).await;
            } else {
                let _ = self
                    .extensions
                    .delete(&name, &DeleteParams::default())
                    .await;
            }
        }
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        for name in self
            .namespaces
            .iter()
            .chain([&self.settings.system_namespace])
        {
            let _ = namespaces.delete(name, &DeleteParams::default()).await;
        }
    }
}
