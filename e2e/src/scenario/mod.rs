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
//! | `policy.rs` | an [`AdmissionPolicy`] refusing real writes of a ConfigMap (dry runs pass), lifted by the test or by [`Scenario::finish`] |
//! | `records.rs` | what an extension recorded and installed: [`ReleaseRecords`], [`Scenario::labelled_objects`] |
//! | `snapshot.rs` | [`Snapshot`]s of objects by [`ObjectKey`], compared later |

mod catalog;
mod expect;
mod extension;
mod policy;
mod records;
mod snapshot;

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams};
use olm_api::v1::ClusterExtension;
use serde_json::json;

pub use self::catalog::{Package, Published, Replaces, Row, RowImage};
pub use self::expect::{
    APPROVED, AVAILABLE, AWAITING_APPROVAL, DESIRED_STATE, Expect, INSTALLED,
    INVALID_CONFIGURATION, Message, RETRYING, available, installed, progressing,
};
pub use self::extension::{Extension, ExtensionSpec, delete_extension, inline_config, wait_for};
pub use self::policy::{AdmissionPolicy, REFUSED_BY_POLICY};
pub use self::records::{ReleaseRecord, ReleaseRecords};
pub use self::snapshot::{ObjectKey, Snapshot, WRITE_BOOKKEEPING};
use crate::TestEnv;
use crate::eventually::eventually_explained;
use crate::operator_controller::{Catalogs, OperatorController, Options, ensure_namespace};
pub use crate::operator_controller::{installed_bundle, message};
use crate::registry::Registry;
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
    /// A client-certificate user (in `system:masters`) the controller authenticates as, instead
    /// of `kubeconfig` or the cluster admin: the API server's audit log names its requests apart.
    pub user: Option<String>,
    pub cache: Option<PathBuf>,
    pub args: Vec<String>,
    /// Further environment variables of the process.
    pub env: Vec<(String, String)>,
}

/// Sets up a [`Scenario`] whose controller does not run as [`Scenario::start`] runs it.
pub struct ScenarioBuilder {
    settings: ControllerSettings,
    start_controller: bool,
    own_registry: bool,
}

impl ScenarioBuilder {
    /// One more flag for `operator-controller run`.
    pub fn controller_arg(mut self, arg: impl Into<String>) -> ScenarioBuilder {
        self.settings.args.push(arg.into());
        self
    }

    /// One more environment variable of the controller's process (a test-only fault hook, for
    /// example).
    pub fn controller_env(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> ScenarioBuilder {
        self.settings.env.push((key.into(), value.into()));
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

    /// The controller authenticates as the client-certificate user `user` (a cluster admin by
    /// group), so the API server's audit log tells its writes apart
    /// ([`crate::ControlPlane::write_user_kubeconfig`]).
    pub fn controller_user(mut self, user: impl Into<String>) -> ScenarioBuilder {
        self.settings.user = Some(user.into());
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

    /// Bundles and catalogs go to a registry of the scenario's own (started with it), which
    /// [`Scenario::stop_registry`] stops without disturbing other tests.
    pub fn own_registry(mut self) -> ScenarioBuilder {
        self.own_registry = true;
        self
    }

    /// Starts catalogd and (unless started later) operator-controller, side by side.
    pub async fn start(self) -> Scenario {
        let env = crate::shared().await;
        let client = env.client().await;
        ensure_namespace(&client, &self.settings.system_namespace).await;
        let own_registry = match self.own_registry {
            true => Some(
                Registry::start()
                    .await
                    .unwrap_or_else(|e| panic!("a registry of the scenario's own: {e}")),
            ),
            false => None,
        };
        let registry = own_registry.as_ref().unwrap_or(&env.registry);
        let (catalogs, controller) = if self.start_controller {
            let (catalogs, controller) = tokio::join!(
                Catalogs::start(registry),
                start_controller(env, registry, &self.settings)
            );
            (catalogs, Some(controller))
        } else {
            (Catalogs::start(registry).await, None)
        };
        Scenario {
            env,
            extensions: Api::all(client.clone()),
            client,
            catalogs,
            controller,
            replicas: Vec::new(),
            own_registry,
            settings: self.settings,
            namespaces: Vec::new(),
            applied: Vec::new(),
            policies: Vec::new(),
        }
    }
}

async fn start_controller(
    env: &TestEnv,
    registry: &Registry,
    settings: &ControllerSettings,
) -> OperatorController {
    let mut options = Options::new(registry);
    options.instance = settings.instance.clone();
    options.system_namespace = settings.system_namespace.clone();
    options.kubeconfig = match &settings.user {
        Some(user) => Some(
            env.control_plane
                .write_user_kubeconfig(user, Some("system:masters"))
                .unwrap_or_else(|e| panic!("a kubeconfig for {user}: {e}")),
        ),
        None => settings.kubeconfig.clone(),
    };
    options.cache = settings.cache.clone();
    options.args = settings.args.clone();
    options.env = settings.env.clone();
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
    /// Further controllers of the same instance ([`Scenario::start_replica`]).
    replicas: Vec<OperatorController>,
    own_registry: Option<Registry>,
    pub settings: ControllerSettings,
    namespaces: Vec<String>,
    applied: Vec<String>,
    /// The admission policies (and bindings of the same name) still in force.
    policies: Vec<String>,
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
                user: None,
                cache: None,
                args: Vec::new(),
                env: Vec::new(),
            },
            start_controller: true,
            own_registry: false,
        }
    }

    /// The registry bundles and catalogs are pushed to: the scenario's own
    /// ([`ScenarioBuilder::own_registry`]) or the shared one.
    pub fn registry(&self) -> &Registry {
        self.own_registry.as_ref().unwrap_or(&self.env.registry)
    }

    /// Stops the scenario's own registry: pulls fail from now on (connection refused).
    ///
    /// # Panics
    /// Without [`ScenarioBuilder::own_registry`]: the shared registry serves other tests.
    pub async fn stop_registry(&mut self) {
        self.own_registry
            .as_mut()
            .expect("only a registry of the scenario's own (ScenarioBuilder::own_registry) stops")
            .shut_down()
            .await;
    }

    /// The operator-controller (running, or exited on its own: see
    /// [`Scenario::wait_for_controller_exit`]).
    ///
    /// # Panics
    /// When none was started (before [`Scenario::start_controller`], after
    /// [`Scenario::kill_controller`]).
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
        self.controller = Some(start_controller(self.env, self.registry(), &self.settings).await);
    }

    /// Starts one more operator-controller of the scenario's instance and system namespace, with
    /// its flags and environment (give the scenario `--leader-elect` to make the two replicas),
    /// authenticated as the client-certificate user `user`. It runs until the scenario is
    /// dropped; failed waits quote its log too.
    pub async fn start_replica(&mut self, user: &str) {
        let settings = ControllerSettings {
            user: Some(user.to_owned()),
            ..self.settings.clone()
        };
        let replica = start_controller(self.env, self.registry(), &settings).await;
        self.replicas.push(replica);
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

    /// Waits until the controller's process ends on its own and returns its exit status; the
    /// controller (its log) stays readable through [`Scenario::controller`].
    ///
    /// # Panics
    /// When it still runs after 120 s (quoting its log tail).
    pub async fn wait_for_controller_exit(&mut self) -> ExitStatus {
        let controller = self
            .controller
            .as_mut()
            .expect("the scenario's operator-controller was not started");
        for _ in 0..600 {
            if let Some(status) = controller.try_exit_status() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("still running:\n{}", controller.log_tail());
    }

    /// Whether the controller runs (started, not killed, not exited).
    fn controller_runs(&mut self) -> bool {
        self.controller
            .as_mut()
            .is_some_and(|controller| controller.try_exit_status().is_none())
    }

    /// How many reconciles the controller's log reports failed so far.
    pub fn failed_reconciles(&self) -> usize {
        self.controller().log().matches("reconcile failed").count()
    }

    /// Waits until the controller's log reports at least `attempts` failed reconciles.
    pub async fn wait_for_failed_reconciles(&self, attempts: usize) {
        self.eventually(&format!("{attempts} failed attempts"), || async {
            (self.failed_reconciles() >= attempts).then_some(())
        })
        .await;
    }

    /// Polls `check` until it yields a value; a failure quotes the log tail of the controller
    /// and of its replicas (or catalogd's while no controller runs).
    pub async fn eventually<T, F, Fut>(&self, what: &str, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        match (&self.controller, self.replicas.is_empty()) {
            (Some(controller), true) => controller.eventually(what, check).await,
            (None, true) => self.catalogs.catalogd.eventually(what, check).await,
            (_, false) => {
                let explain = || {
                    let controllers = self.controller.iter().chain(&self.replicas);
                    let logs: Vec<String> = controllers
                        .map(|c| format!("operator-controller log:\n{}", c.log_tail()))
                        .collect();
                    logs.join("\n")
                };
                eventually_explained(what, explain, check).await
            }
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
    /// finalizers ran while the controller runs; releasing them by hand when no controller runs
    /// any more), the admission policies still in force, then its namespaces and the system
    /// namespace.
    pub async fn finish(mut self) {
        let runs = self.controller_runs();
        for name in std::mem::take(&mut self.applied) {
            if runs {
                self.delete_extension_named(&name).await;
            } else {
                let _ = self
                    .extensions
                    .delete(&name, &DeleteParams::default())
                    .await;
                // Nothing runs the finalizers any more: release them by hand.
                let _ = self
                    .extensions
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                    )
                    .await;
            }
        }
        for name in std::mem::take(&mut self.policies) {
            self.delete_policy(&name).await;
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
