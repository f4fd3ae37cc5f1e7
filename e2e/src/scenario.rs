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

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use olm_api::v1::{ClusterExtension, ConditionType, find_condition};
use serde_json::{Value, json};

use crate::TestEnv;
use crate::images::push_catalog;
use crate::operator_controller::{
    BundleSpec, CATALOG_NAME_LABEL, Catalogs, INSTANCE_LABEL, OperatorController, Options,
    bundle_name, ensure_namespace,
};
pub use crate::operator_controller::{installed_bundle, message};
use crate::test_env::unique_name;

/// The label operator-controller puts on every object it installs, naming the extension.
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";
/// The channel a [`Package`] row is in unless it says otherwise.
pub const DEFAULT_CHANNEL: &str = "stable";
/// How often catalogd polls a published catalog's image (minutes), so a
/// [`Scenario::republish`] under the same tag reaches the extensions.
pub const POLL_MINUTES: i64 = 1;

// ---------------------------------------------------------------------------------------------
// The scenario

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

/// Deletes the extension `name` and waits until it is gone (`controller` released its
/// finalizers); a failure quotes the controller's log tail.
pub async fn delete_extension(
    extensions: &Api<ClusterExtension>,
    name: &str,
    controller: &OperatorController,
) {
    let _ = extensions.delete(name, &DeleteParams::default()).await;
    controller
        .eventually(&format!("{name} to be deleted"), || async {
            matches!(extensions.get_opt(name).await, Ok(None)).then_some(())
        })
        .await;
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

    // -----------------------------------------------------------------------------------------
    // Catalogs

    /// Pushes the package's bundles (each row's image unless it is not pushed or reuses
    /// another's) and a catalog listing them, and waits until the scenario's catalogd serves it
    /// (polled every [`POLL_MINUTES`]).
    pub async fn publish(&self, package: Package) -> Published {
        let registry = &self.env.registry;
        let bundle_repo = unique_name("bundles");
        let catalog_repo = unique_name("catalog");
        let mut published = Published {
            name: String::new(),
            image: String::new(),
            package,
            bundle_repo,
            catalog_repo,
            bundle_images: BTreeMap::new(),
        };
        published.push(registry).await;
        published.name = self
            .catalogs
            .serve("cat", &published.image, Some(POLL_MINUTES))
            .await;
        published
    }

    /// Changes the package's table, pushes the bundles it adds and the catalog again under the
    /// same tag. Returns at once: catalogd picks the new image up on its next poll.
    pub async fn republish(
        &self,
        published: &mut Published,
        change: impl FnOnce(Package) -> Package,
    ) {
        let package = std::mem::replace(&mut published.package, Package::named(""));
        published.package = change(package);
        published.push(&self.env.registry).await;
    }

    /// Pushes the image of a row that was listed but not pushed.
    pub async fn push_bundle(&self, published: &mut Published, version: &str) {
        let row = published.package.row_mut(version);
        row.image = RowImage::Pushed;
        let spec = row.bundle.clone();
        let image = spec.push(&self.env.registry, &published.bundle_repo).await;
        published.bundle_images.insert(version.to_owned(), image);
    }

    /// One more ClusterCatalog `prefix-<random>` for `image`, served by the scenario's catalogd.
    pub async fn serve(&self, image: &str, poll_minutes: Option<i64>) -> String {
        self.catalogs.serve("cat", image, poll_minutes).await
    }

    /// Sets a ClusterCatalog's `spec.priority`.
    pub async fn set_catalog_priority(&self, catalog: &str, priority: i32) {
        self.catalogs
            .api
            .patch(
                catalog,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"priority": priority}})),
            )
            .await
            .unwrap_or_else(|e| panic!("set the priority of {catalog}: {e}"));
    }

    /// Deletes a ClusterCatalog and waits until it is gone.
    pub async fn delete_catalog(&self, catalog: &str) {
        self.catalogs
            .api
            .delete(catalog, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete ClusterCatalog {catalog}: {e}"));
        self.catalogs
            .catalogd
            .wait_deleted(&self.catalogs.api, catalog)
            .await;
    }

    // -----------------------------------------------------------------------------------------
    // Extensions

    /// Creates the extension, labelled for the scenario's controller.
    pub async fn apply_extension(&mut self, spec: ExtensionSpec) -> Extension {
        let extension = spec.create(&self.extensions, &self.settings.instance).await;
        self.applied.push(extension.name.clone());
        extension
    }

    /// Merge-patches the extension's spec (`null` removes a field).
    pub async fn patch_spec(&self, extension: &Extension, spec: Value) {
        self.extensions
            .patch(
                &extension.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": spec })),
            )
            .await
            .unwrap_or_else(|e| panic!("patch {}: {e}", extension.name));
    }

    /// Sets `spec.source.catalog.version` (a version or a range).
    pub async fn set_version(&self, extension: &Extension, version: &str) {
        self.patch_spec(
            extension,
            json!({"source": {"catalog": {"version": version}}}),
        )
        .await;
    }

    /// Sets `spec.config` to `config` inline.
    pub async fn set_config(&self, extension: &Extension, config: Value) {
        self.patch_spec(extension, json!({ "config": inline_config(config) }))
            .await;
    }

    /// The extension as it is now.
    pub async fn get(&self, extension: &Extension) -> ClusterExtension {
        self.extensions
            .get(&extension.name)
            .await
            .unwrap_or_else(|e| panic!("get ClusterExtension {}: {e}", extension.name))
    }

    /// Waits until the extension meets `expect` for its current generation; returns it.
    ///
    /// A message given with [`Expect::message`] and a bundle given with [`Expect::bundle`] are
    /// checked once the condition's status and reason are reached (a mismatch fails at once); a
    /// message given with [`Expect::until_message`] is part of what is awaited.
    pub async fn wait_for(&self, extension: &Extension, expect: Expect) -> ClusterExtension {
        let name = &extension.name;
        let found = self
            .eventually(&format!("{name}: {expect}"), || async {
                let e = self.extensions.get(name).await.ok()?;
                let c = find_condition(&e.status.as_ref()?.conditions, expect.type_)?;
                (c.status.as_str() == expect.status
                    && c.reason == expect.reason
                    && c.observed_generation == e.metadata.generation
                    && expect.awaited.iter().all(|m| m.matches(&c.message)))
                .then_some(e)
            })
            .await;
        if let Some(pattern) = &expect.asserted {
            let text = message(&found, expect.type_);
            assert!(
                pattern.matches(&text),
                "{name}: {:?} {}/{}: the message does not match {pattern}:\n{text}",
                expect.type_,
                expect.status,
                expect.reason
            );
        }
        if let Some(bundle) = &expect.bundle {
            assert_eq!(
                installed_bundle(&found).as_ref(),
                Some(bundle),
                "{name}: {:?} {}/{}: the installed bundle",
                expect.type_,
                expect.status,
                expect.reason
            );
        }
        found
    }

    /// The installed bundle (name, version) as the extension's status reports it now.
    pub async fn installed(&self, extension: &Extension) -> Option<(String, String)> {
        installed_bundle(&self.get(extension).await)
    }

    /// Applies the extension and waits until it is [`INSTALLED`].
    pub async fn install(&mut self, spec: ExtensionSpec) -> Extension {
        let extension = self.apply_extension(spec).await;
        self.wait_for(&extension, INSTALLED).await;
        extension
    }

    /// Waits until the extension reports `bundle` (name, version; see [`Published::bundle`])
    /// installed.
    pub async fn wait_until_installed(&self, extension: &Extension, bundle: (String, String)) {
        let name = &extension.name;
        self.eventually(
            &format!("{name} to report {} installed", bundle.0),
            || async {
                let e = self.extensions.get(name).await.ok()?;
                (installed_bundle(&e).as_ref() == Some(&bundle)).then_some(())
            },
        )
        .await;
    }

    /// Deletes the extension and waits until it is gone (its finalizers released).
    pub async fn delete_extension(&mut self, extension: &Extension) {
        self.delete_extension_named(&extension.name).await;
        self.applied.retain(|n| n != &extension.name);
    }

    async fn delete_extension_named(&self, name: &str) {
        delete_extension(&self.extensions, name, self.controller()).await;
    }

    // -----------------------------------------------------------------------------------------
    // What the extension installed and recorded

    /// The extension's release records: the index Secrets in the system namespace, found as
    /// upstream's tools and e2e steps find them (labels `name`, `owner`; type `index.v1`).
    pub async fn release_records(&self, extension: &Extension) -> ReleaseRecords {
        let secrets: Api<Secret> =
            Api::namespaced(self.client.clone(), &self.settings.system_namespace);
        let list = secrets
            .list(
                &ListParams::default()
                    .labels(&format!(
                        "name={},owner=operator-controller",
                        extension.name
                    ))
                    .fields("type=operatorframework.io/index.v1"),
            )
            .await
            .unwrap_or_else(|e| panic!("list the release Secrets of {}: {e}", extension.name));
        let mut records: Vec<ReleaseRecord> = list
            .items
            .into_iter()
            .map(|secret| {
                let labels = secret.labels();
                let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
                ReleaseRecord {
                    name: secret.name_any(),
                    version: label("version"),
                    status: label("status"),
                    secret,
                }
            })
            .collect();
        records.sort_by_key(|r| r.version.parse::<u64>().unwrap_or(u64::MAX));
        ReleaseRecords(records)
    }

    /// The `version` in the bundle's ConfigMap `test-configmap` (see [`BundleSpec::new`]) in
    /// the extension's namespace, if it exists.
    pub async fn configmap_version(&self, extension: &Extension) -> Option<String> {
        self.configmaps(extension)
            .get_opt("test-configmap")
            .await
            .ok()
            .flatten()
            .and_then(|c| c.data)
            .and_then(|d| d.get("version").cloned())
    }

    /// The ConfigMaps of the extension's namespace.
    pub fn configmaps(&self, extension: &Extension) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &extension.namespace)
    }

    /// The Deployments of the extension's namespace.
    pub fn deployments(&self, extension: &Extension) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), &extension.namespace)
    }

    /// Deletes the bundle's ConfigMap `test-configmap` and waits until the controller restores
    /// it (`what` names the wait).
    pub async fn delete_configmap_and_wait_restored(
        &self,
        extension: &Extension,
        what: &str,
    ) -> ConfigMap {
        let configmaps = self.configmaps(extension);
        configmaps
            .delete("test-configmap", &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete test-configmap: {e}"));
        self.eventually(what, || async {
            configmaps.get_opt("test-configmap").await.ok().flatten()
        })
        .await
    }

    /// (kind, `namespace/name`) of every object labelled as the extension's, of the kinds the
    /// test bundles install.
    pub async fn labelled_objects(&self, extension: &Extension) -> Vec<(String, String)> {
        let selector = format!("{OWNER_NAME_LABEL}={}", extension.name);
        let mut out = Vec::new();
        for resource in [
            ApiResource::erase::<ConfigMap>(&()),
            ApiResource::erase::<Deployment>(&()),
            ApiResource::erase::<ServiceAccount>(&()),
            ApiResource::erase::<ClusterRole>(&()),
            ApiResource::erase::<ClusterRoleBinding>(&()),
            ApiResource::erase::<CustomResourceDefinition>(&()),
        ] {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
            let list = api
                .list(&ListParams::default().labels(&selector))
                .await
                .unwrap_or_else(|e| panic!("list {}: {e}", resource.kind));
            for o in list.items {
                out.push((
                    resource.kind.clone(),
                    format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()),
                ));
            }
        }
        out
    }

    /// A [`Snapshot`] of an object as it is now.
    pub async fn snapshot(&self, key: ObjectKey) -> Snapshot {
        Snapshot::of(&self.client, key).await
    }
}

// ---------------------------------------------------------------------------------------------
// Catalog tables

/// Where a row's bundle image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowImage {
    /// Written from the row's [`BundleSpec`] and pushed.
    Pushed,
    /// Listed in the catalog under the tag it would have, never pushed (until
    /// [`Scenario::push_bundle`]).
    NotPushed,
    /// The image of the row of that version (identical content under a new version).
    SameAs(String),
}

/// What a row's channel entries say it replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replaces {
    /// The row before it in the same channel (none for a channel's first row).
    Previous,
    /// The bundle of that version.
    Version(String),
    Nothing,
}

/// One bundle of a [`Package`]: its spec, its channels and its upgrade edges.
#[derive(Clone, Debug)]
pub struct Row {
    pub bundle: BundleSpec,
    pub channels: Vec<String>,
    pub replaces: Replaces,
    /// Versions it skips.
    pub skips: Vec<String>,
    /// `olm.skipRange`, in blang syntax.
    pub skip_range: Option<String>,
    pub image: RowImage,
}

/// A catalog of one package, as a table: one [`Row`] per bundle, in channel order.
///
/// ```text
/// Package::new("pkg")                       // package `pkg-<random>`, default channel stable
///     .bundle("1.0.0").channels(&["stable", "fast"])
///     .bundle("1.1.0").channels(&["fast"])  // replaces 1.0.0 in fast
///     .bundle("1.2.0").skip_range(">=1.0.0 <1.2.0").not_pushed()
/// ```
///
/// The row methods after [`Package::bundle`] (`channels`, `replaces`, `skips`, `skip_range`,
/// `not_pushed`, `same_image_as`, `property`, `crd_schema`, `install_modes`) change the row
/// added last.
#[derive(Clone, Debug)]
pub struct Package {
    pub name: String,
    /// Default: the first row's first channel.
    pub default_channel: Option<String>,
    pub rows: Vec<Row>,
}

impl Package {
    /// An empty package named `prefix-<random>`.
    pub fn new(prefix: &str) -> Package {
        Package::named(&unique_name(prefix))
    }

    /// An empty package named exactly `name`.
    pub fn named(name: &str) -> Package {
        Package {
            name: name.to_owned(),
            default_channel: None,
            rows: Vec::new(),
        }
    }

    /// A package `pkg-<random>` with [`Package::versions`].
    pub fn with_versions(versions: &[&str]) -> Package {
        Package::new("pkg").versions(versions)
    }

    /// Rows for `versions` in [`DEFAULT_CHANNEL`], each replacing the one before.
    pub fn versions(mut self, versions: &[&str]) -> Package {
        for version in versions {
            self = self.bundle(version);
        }
        self
    }

    /// A row for [`BundleSpec::new`] at `version`, in [`DEFAULT_CHANNEL`], replacing the row
    /// before it in its channel.
    pub fn bundle(self, version: &str) -> Package {
        self.bundle_with(version, |_| {})
    }

    /// As [`Package::bundle`], the bundle changed by `change` first.
    pub fn bundle_with(mut self, version: &str, change: impl FnOnce(&mut BundleSpec)) -> Package {
        let mut bundle = BundleSpec::new(&self.name, version);
        change(&mut bundle);
        self.rows.push(Row {
            bundle,
            channels: vec![DEFAULT_CHANNEL.to_owned()],
            replaces: Replaces::Previous,
            skips: Vec::new(),
            skip_range: None,
            image: RowImage::Pushed,
        });
        self
    }

    fn last(&mut self) -> &mut Row {
        self.rows
            .last_mut()
            .expect("a row method needs a Package::bundle before it")
    }

    fn row_mut(&mut self, version: &str) -> &mut Row {
        self.rows
            .iter_mut()
            .find(|r| r.bundle.version == version)
            .unwrap_or_else(|| panic!("no row for version {version}"))
    }

    /// The last row is in these channels.
    pub fn channels(mut self, channels: &[&str]) -> Package {
        self.last().channels = channels.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// The last row replaces the bundle of `version`.
    pub fn replaces(mut self, version: &str) -> Package {
        self.last().replaces = Replaces::Version(version.to_owned());
        self
    }

    /// The last row replaces nothing.
    pub fn replaces_nothing(mut self) -> Package {
        self.last().replaces = Replaces::Nothing;
        self
    }

    /// The last row skips the bundles of `versions`.
    pub fn skips(mut self, versions: &[&str]) -> Package {
        self.last().skips = versions.iter().map(|v| (*v).to_owned()).collect();
        self
    }

    /// The last row's `olm.skipRange`.
    pub fn skip_range(mut self, range: &str) -> Package {
        self.last().skip_range = Some(range.to_owned());
        self
    }

    /// The last row is listed but its image is not pushed.
    pub fn not_pushed(mut self) -> Package {
        self.last().image = RowImage::NotPushed;
        self
    }

    /// The last row lists the image of the row of `version`.
    pub fn same_image_as(mut self, version: &str) -> Package {
        self.last().image = RowImage::SameAs(version.to_owned());
        self
    }

    /// The last row's bundle ships its CRD with this schema (see [`BundleSpec::with_crd_schema`]).
    pub fn crd_schema(mut self, schema: Value) -> Package {
        let row = self.last();
        row.bundle = row.bundle.clone().with_crd_schema(schema);
        self
    }

    /// The last row's bundle supports only these install modes.
    pub fn install_modes(mut self, modes: &[&str]) -> Package {
        self.last().bundle.install_modes = modes.iter().map(|m| (*m).to_owned()).collect();
        self
    }

    /// The last row's bundle declares a property (in its image and on its catalog entry).
    pub fn property(mut self, type_: &str, value: Value) -> Package {
        self.last()
            .bundle
            .properties
            .push((type_.to_owned(), value));
        self
    }

    /// The package's default channel.
    pub fn default_channel(mut self, channel: &str) -> Package {
        self.default_channel = Some(channel.to_owned());
        self
    }

    /// The channels in order of first appearance, each with its rows' entries.
    fn channel_entries(&self) -> Vec<(String, Vec<Value>)> {
        let mut channels: Vec<(String, Vec<Value>)> = Vec::new();
        let mut previous: BTreeMap<String, String> = BTreeMap::new();
        for row in &self.rows {
            let name = row.bundle.name();
            for channel in &row.channels {
                let mut entry = json!({ "name": name });
                let replaces = match &row.replaces {
                    Replaces::Previous => previous.get(channel).cloned(),
                    Replaces::Version(v) => Some(bundle_name(&self.name, v)),
                    Replaces::Nothing => None,
                };
                if let Some(r) = replaces {
                    entry["replaces"] = json!(r);
                }
                if !row.skips.is_empty() {
                    let skips: Vec<String> = row
                        .skips
                        .iter()
                        .map(|v| bundle_name(&self.name, v))
                        .collect();
                    entry["skips"] = json!(skips);
                }
                if let Some(range) = &row.skip_range {
                    entry["skipRange"] = json!(range);
                }
                previous.insert(channel.clone(), name.clone());
                match channels.iter_mut().find(|(c, _)| c == channel) {
                    Some((_, entries)) => entries.push(entry),
                    None => channels.push((channel.clone(), vec![entry])),
                }
            }
        }
        channels
    }

    /// The file-based catalog of the package, one blob per element, bundles listing `images`
    /// (version → image).
    pub fn fbc(&self, images: &BTreeMap<String, String>) -> Vec<Value> {
        let channels = self.channel_entries();
        let default_channel = self
            .default_channel
            .clone()
            .or_else(|| channels.first().map(|(c, _)| c.clone()))
            .unwrap_or_else(|| DEFAULT_CHANNEL.to_owned());
        let mut blobs = vec![json!({
            "schema": "olm.package", "name": self.name, "defaultChannel": default_channel,
        })];
        for (channel, entries) in channels {
            blobs.push(json!({
                "schema": "olm.channel", "name": channel, "package": self.name, "entries": entries,
            }));
        }
        for row in &self.rows {
            let version = &row.bundle.version;
            let mut properties = vec![json!({"type": "olm.package",
                "value": {"packageName": self.name, "version": version}})];
            properties.extend(
                row.bundle
                    .properties
                    .iter()
                    .map(|(type_, value)| json!({"type": type_, "value": value})),
            );
            let image = images
                .get(version)
                .unwrap_or_else(|| panic!("no image for {version}"));
            blobs.push(json!({
                "schema": "olm.bundle", "name": row.bundle.name(), "package": self.name,
                "image": image, "properties": properties,
            }));
        }
        blobs
    }

    /// Writes [`Package::fbc`] into `dir`, one JSON file per blob.
    pub fn write_fbc(&self, dir: &Path, images: &BTreeMap<String, String>) {
        std::fs::create_dir_all(dir).expect("catalog dir");
        for (i, blob) in self.fbc(images).iter().enumerate() {
            std::fs::write(dir.join(format!("{i:03}.json")), blob.to_string()).expect("blob");
        }
    }

    /// Pushes [`Package::fbc`] as the catalog image `<repo>:latest`; returns its reference.
    pub async fn push_catalog(
        &self,
        registry: &crate::registry::Registry,
        repo: &str,
        images: &BTreeMap<String, String>,
    ) -> String {
        let dir = tempfile::tempdir().expect("a catalog directory");
        self.write_fbc(dir.path(), images);
        let reference = format!("{repo}:latest");
        push_catalog(registry, &reference, dir.path())
            .await
            .unwrap_or_else(|e| panic!("push {reference}: {e}"));
        registry.image(&reference)
    }
}

/// A [`Package`] pushed and served: its ClusterCatalog and images.
#[derive(Debug)]
pub struct Published {
    /// The ClusterCatalog's name.
    pub name: String,
    /// The catalog image (`<repo>:latest`).
    pub image: String,
    pub package: Package,
    /// Where the bundle images are pushed (`<bundle_repo>:v<version>`).
    pub bundle_repo: String,
    pub catalog_repo: String,
    /// The image each version lists.
    pub bundle_images: BTreeMap<String, String>,
}

impl Published {
    /// The package's name.
    pub fn package(&self) -> &str {
        &self.package.name
    }

    /// The image the catalog lists for `version`.
    pub fn bundle_image(&self, version: &str) -> &str {
        self.bundle_images
            .get(version)
            .unwrap_or_else(|| panic!("no bundle {version} published"))
    }

    /// (bundle name, version), as `status.install.bundle` reports an installed bundle.
    pub fn bundle(&self, version: &str) -> (String, String) {
        (bundle_name(&self.package.name, version), version.to_owned())
    }

    /// Pushes the rows' images not pushed yet and the catalog (tag `latest`).
    async fn push(&mut self, registry: &crate::registry::Registry) {
        for row in &self.package.rows {
            let version = &row.bundle.version;
            if self.bundle_images.contains_key(version) {
                continue;
            }
            let image = match &row.image {
                RowImage::Pushed => row.bundle.push(registry, &self.bundle_repo).await,
                RowImage::NotPushed => registry.image(&format!("{}:v{version}", self.bundle_repo)),
                RowImage::SameAs(other) => self.bundle_image(other).to_owned(),
            };
            self.bundle_images.insert(version.clone(), image);
        }
        self.image = self
            .package
            .push_catalog(registry, &self.catalog_repo, &self.bundle_images)
            .await;
    }
}

// ---------------------------------------------------------------------------------------------
// Extensions

/// A ClusterExtension to apply: one package from catalogs selected by name (or a selector).
#[derive(Clone, Debug)]
pub struct ExtensionSpec {
    /// Default: `ext-<random>`.
    pub name: Option<String>,
    pub package: String,
    pub namespace: String,
    /// `spec.source.catalog.selector`; default: the catalog's name label.
    pub selector: Value,
    pub version: Option<String>,
    pub channels: Vec<String>,
    pub upgrade_constraint_policy: Option<String>,
    pub service_account: Option<String>,
    /// `spec.config.inline`.
    pub inline_config: Option<Value>,
}

impl ExtensionSpec {
    /// The published package from its catalog (selected by name), into `namespace`.
    pub fn new(catalog: &Published, namespace: &str) -> ExtensionSpec {
        ExtensionSpec::of_package(catalog.package(), &catalog.name, namespace)
    }

    /// `package` from the ClusterCatalog named `catalog`, into `namespace`.
    pub fn of_package(package: &str, catalog: &str, namespace: &str) -> ExtensionSpec {
        ExtensionSpec {
            name: None,
            package: package.to_owned(),
            namespace: namespace.to_owned(),
            selector: json!({"matchLabels": {CATALOG_NAME_LABEL: catalog}}),
            version: None,
            channels: Vec::new(),
            upgrade_constraint_policy: None,
            service_account: None,
            inline_config: None,
        }
    }

    pub fn named(mut self, name: &str) -> ExtensionSpec {
        self.name = Some(name.to_owned());
        self
    }

    /// `spec.source.catalog.version` (a version or a range).
    pub fn version(mut self, version: &str) -> ExtensionSpec {
        self.version = Some(version.to_owned());
        self
    }

    pub fn channels(mut self, channels: &[&str]) -> ExtensionSpec {
        self.channels = channels.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// `CatalogProvided` or `SelfCertified`.
    pub fn upgrade_constraint_policy(mut self, policy: &str) -> ExtensionSpec {
        self.upgrade_constraint_policy = Some(policy.to_owned());
        self
    }

    /// The catalogs whose names are `catalogs` (a `matchExpressions` selector).
    pub fn catalogs(mut self, catalogs: &[&str]) -> ExtensionSpec {
        self.selector = json!({"matchExpressions": [{
            "key": CATALOG_NAME_LABEL, "operator": "In", "values": catalogs,
        }]});
        self
    }

    pub fn service_account(mut self, name: &str) -> ExtensionSpec {
        self.service_account = Some(name.to_owned());
        self
    }

    pub fn inline_config(mut self, config: Value) -> ExtensionSpec {
        self.inline_config = Some(config);
        self
    }

    /// Creates the ClusterExtension, labelled for the controller `instance`.
    pub async fn create(&self, extensions: &Api<ClusterExtension>, instance: &str) -> Extension {
        let extension = Extension {
            name: self.name.clone().unwrap_or_else(|| unique_name("ext")),
            namespace: self.namespace.clone(),
        };
        let body = self.body(instance, &extension.name);
        let object: ClusterExtension = serde_json::from_value(body.clone())
            .unwrap_or_else(|e| panic!("ClusterExtension {body}: {e}"));
        extensions
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create ClusterExtension {}: {e}", extension.name));
        extension
    }

    /// The ClusterExtension, labelled for the controller `instance`.
    pub fn body(&self, instance: &str, name: &str) -> Value {
        let mut source = json!({"packageName": self.package, "selector": self.selector});
        if let Some(v) = &self.version {
            source["version"] = json!(v);
        }
        if !self.channels.is_empty() {
            source["channels"] = json!(self.channels);
        }
        if let Some(p) = &self.upgrade_constraint_policy {
            source["upgradeConstraintPolicy"] = json!(p);
        }
        let mut spec = json!({
            "namespace": self.namespace,
            "source": {"sourceType": "Catalog", "catalog": source},
        });
        if let Some(sa) = &self.service_account {
            spec["serviceAccount"] = json!({ "name": sa });
        }
        if let Some(config) = &self.inline_config {
            spec["config"] = inline_config(config.clone());
        }
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": name, "labels": {INSTANCE_LABEL: instance}},
            "spec": spec,
        })
    }
}

/// `spec.config` holding `config` inline.
pub fn inline_config(config: Value) -> Value {
    json!({"configType": "Inline", "inline": config})
}

/// An applied extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extension {
    pub name: String,
    /// Its install namespace.
    pub namespace: String,
}

// ---------------------------------------------------------------------------------------------
// Conditions and messages

/// A text pattern a condition message must match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Exact(String),
    Contains(String),
    StartsWith(String),
    EndsWith(String),
    /// `*` stands for any text (nothing else is special).
    Glob(String),
    /// Every one of these.
    All(Vec<Message>),
}

impl Message {
    pub fn exact(text: impl Into<String>) -> Message {
        Message::Exact(text.into())
    }

    pub fn contains(text: impl Into<String>) -> Message {
        Message::Contains(text.into())
    }

    pub fn starts_with(text: impl Into<String>) -> Message {
        Message::StartsWith(text.into())
    }

    pub fn ends_with(text: impl Into<String>) -> Message {
        Message::EndsWith(text.into())
    }

    pub fn glob(pattern: impl Into<String>) -> Message {
        Message::Glob(pattern.into())
    }

    /// This pattern and `other`.
    pub fn and(self, other: Message) -> Message {
        match self {
            Message::All(mut all) => {
                all.push(other);
                Message::All(all)
            }
            one => Message::All(vec![one, other]),
        }
    }

    pub fn matches(&self, text: &str) -> bool {
        match self {
            Message::Exact(m) => text == m,
            Message::Contains(m) => text.contains(m.as_str()),
            Message::StartsWith(m) => text.starts_with(m.as_str()),
            Message::EndsWith(m) => text.ends_with(m.as_str()),
            Message::Glob(pattern) => glob_matches(pattern, text),
            Message::All(all) => all.iter().all(|m| m.matches(text)),
        }
    }
}

/// Whether `text` matches `pattern`, in which `*` is any text: the first piece is a prefix, the
/// last a suffix, the ones between occur in order.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    if let [only] = pieces.as_slice() {
        return text == *only;
    }
    let (first, rest) = pieces
        .split_first()
        .expect("split yields one piece at least");
    let (last, middle) = rest.split_last().expect("two pieces at least");
    let Some(mut left) = text.strip_prefix(first) else {
        return false;
    };
    for piece in middle {
        match left.find(piece) {
            Some(at) => left = &left[at + piece.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Exact(m) => write!(f, "exactly {m:?}"),
            Message::Contains(m) => write!(f, "containing {m:?}"),
            Message::StartsWith(m) => write!(f, "starting with {m:?}"),
            Message::EndsWith(m) => write!(f, "ending with {m:?}"),
            Message::Glob(m) => write!(f, "like {m:?}"),
            Message::All(all) => {
                let parts: Vec<String> = all.iter().map(ToString::to_string).collect();
                write!(f, "{}", parts.join(" and "))
            }
        }
    }
}

/// What [`Scenario::wait_for`] waits for: a condition's status and reason for the extension's
/// current generation, and maybe a message.
#[derive(Clone, Debug)]
pub struct Expect {
    pub type_: ConditionType,
    pub status: &'static str,
    pub reason: &'static str,
    /// Checked once status and reason are reached.
    pub asserted: Option<Message>,
    /// Awaited with status and reason.
    pub awaited: Option<Message>,
    /// The bundle (name, version) `status.install` names, checked once status and reason are
    /// reached.
    pub bundle: Option<(String, String)>,
}

impl Expect {
    pub const fn condition(
        type_: ConditionType,
        status: &'static str,
        reason: &'static str,
    ) -> Expect {
        Expect {
            type_,
            status,
            reason,
            asserted: None,
            awaited: None,
            bundle: None,
        }
    }

    /// The message must match `pattern` when status and reason are reached.
    pub fn message(mut self, pattern: Message) -> Expect {
        self.asserted = Some(pattern);
        self
    }

    /// The extension must report `bundle` (name, version; see [`Published::bundle`]) installed
    /// when status and reason are reached.
    pub fn bundle(mut self, bundle: (String, String)) -> Expect {
        self.bundle = Some(bundle);
        self
    }

    /// Waits until the message matches `pattern` too (for a condition that holds the same
    /// status and reason with other messages first).
    pub fn until_message(mut self, pattern: Message) -> Expect {
        self.awaited = Some(pattern);
        self
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {}/{}", self.type_, self.status, self.reason)?;
        if let Some(m) = &self.awaited {
            write!(f, " with a message {m}")?;
        }
        Ok(())
    }
}

/// `Installed` with `status` and `reason`.
pub const fn installed(status: &'static str, reason: &'static str) -> Expect {
    Expect::condition(ConditionType::Installed, status, reason)
}

/// `Progressing` with `status` and `reason`.
pub const fn progressing(status: &'static str, reason: &'static str) -> Expect {
    Expect::condition(ConditionType::Progressing, status, reason)
}

/// `Available` with `status` and `reason`.
pub const fn available(status: &'static str, reason: &'static str) -> Expect {
    Expect::condition(ConditionType::Available, status, reason)
}

/// `Installed` True, `Succeeded`: a bundle is installed.
pub const INSTALLED: Expect = installed("True", "Succeeded");
/// `Progressing` True, `Succeeded`: the desired state is reached.
pub const DESIRED_STATE: Expect = progressing("True", "Succeeded");
/// `Progressing` True, `Retrying`: a retryable error.
pub const RETRYING: Expect = progressing("True", "Retrying");
/// `Progressing` False, `InvalidConfiguration`: a terminal error in `spec.config`.
pub const INVALID_CONFIGURATION: Expect = progressing("False", "InvalidConfiguration");
/// `Available` True, `ProbesSucceeded`: the installed Deployments are available.
pub const AVAILABLE: Expect = available("True", "ProbesSucceeded");

// ---------------------------------------------------------------------------------------------
// Release records

/// One release record (an index Secret) of an extension.
#[derive(Clone, Debug)]
pub struct ReleaseRecord {
    pub name: String,
    /// The release's revision (label `version`).
    pub version: String,
    /// Label `status`: `deployed`, `superseded`, `failed`, `pending-install`, ...
    pub status: String,
    pub secret: Secret,
}

/// An extension's release records, by revision.
#[derive(Clone, Debug)]
pub struct ReleaseRecords(pub Vec<ReleaseRecord>);

impl ReleaseRecords {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The records' statuses, sorted.
    pub fn statuses(&self) -> Vec<String> {
        let mut statuses: Vec<String> = self.0.iter().map(|r| r.status.clone()).collect();
        statuses.sort();
        statuses
    }

    /// Revision → status.
    pub fn by_revision(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .map(|r| (r.version.clone(), r.status.clone()))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Snapshots

/// Which object a [`Snapshot`] reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectKey {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn namespaced(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: Some(namespace.to_owned()),
            name: name.to_owned(),
        }
    }

    /// The key of an object read from the API server (which names its apiVersion and kind).
    pub fn of(object: &DynamicObject) -> ObjectKey {
        let types = object
            .types
            .as_ref()
            .unwrap_or_else(|| panic!("{:?} has no apiVersion and kind", object.metadata.name));
        ObjectKey {
            api_version: types.api_version.clone(),
            kind: types.kind.clone(),
            namespace: object.metadata.namespace.clone(),
            name: object.name_any(),
        }
    }

    pub fn cluster_scoped(api_version: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: None,
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// The fields [`Snapshot::assert_unchanged_except`] usually leaves out: what any write changes.
pub const WRITE_BOOKKEEPING: &[&str] = &["/metadata/resourceVersion", "/metadata/managedFields"];

/// An object as it was when read, to compare with how it is later.
pub struct Snapshot {
    pub key: ObjectKey,
    /// The object, as JSON.
    pub object: Value,
    api: Api<DynamicObject>,
}

impl Snapshot {
    /// Reads the object (its kind found by discovery).
    pub async fn of(client: &kube::Client, key: ObjectKey) -> Snapshot {
        let (group, version) = key
            .api_version
            .split_once('/')
            .unwrap_or(("", key.api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &key.kind);
        let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("discover {}: {e}", key.kind));
        let api = match &key.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let object = read(&api, &key).await;
        Snapshot { key, object, api }
    }

    /// The object as it is now.
    pub async fn current(&self) -> Value {
        read(&self.api, &self.key).await
    }

    /// The object is unchanged, byte for byte, but for the fields at `ignored` (JSON pointers,
    /// for example [`WRITE_BOOKKEEPING`]).
    pub async fn assert_unchanged_except(&self, ignored: &[&str]) {
        let (mut before, mut now) = (self.object.clone(), self.current().await);
        for pointer in ignored {
            remove_pointer(&mut before, pointer);
            remove_pointer(&mut now, pointer);
        }
        let differences = differences("", &before, &now);
        assert!(
            differences.is_empty(),
            "{} changed (ignoring {ignored:?}) at:\n{}",
            self.key,
            differences.join("\n")
        );
    }

    /// The object is unchanged, byte for byte.
    pub async fn assert_unchanged(&self) {
        self.assert_unchanged_except(&[]).await;
    }

    /// The fields at `pointers` (JSON pointers) are unchanged; `why` says what that proves.
    pub async fn assert_unchanged_at(&self, pointers: &[&str], why: &str) {
        let now = self.current().await;
        for pointer in pointers {
            assert_eq!(
                now.pointer(pointer),
                self.object.pointer(pointer),
                "{}: {pointer} changed: {why}",
                self.key
            );
        }
    }
}

async fn read(api: &Api<DynamicObject>, key: &ObjectKey) -> Value {
    let object = api
        .get(&key.name)
        .await
        .unwrap_or_else(|e| panic!("get {key}: {e}"));
    serde_json::to_value(object).unwrap_or_else(|e| panic!("{key} as JSON: {e}"))
}

fn remove_pointer(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < items.len()
            {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// The JSON pointers at which `a` and `b` differ, each with both values.
fn differences(at: &str, a: &Value, b: &Value) -> Vec<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .flat_map(|k| {
                    let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    differences(
                        &path,
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                    )
                })
                .collect()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .flat_map(|(i, (p, q))| differences(&format!("{at}/{i}"), p, q))
            .collect(),
        _ if a == b => Vec::new(),
        _ => vec![format!("  {at}: {a} -> {b}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_star_is_any_text_and_everything_else_is_literal() {
        assert!(glob_matches("abc", "abc"));
        assert!(!glob_matches("abc", "abcd"));
        assert!(glob_matches("error *", "error for bundle"));
        assert!(glob_matches("* not found", "widgets not found"));
        assert!(glob_matches("*[red]*", "values removed : [red]"));
        assert!(glob_matches("a*b*c", "a-b-c"));
        assert!(!glob_matches("a*b*c", "a-c-b"));
        assert!(
            !glob_matches("ab*ba", "aba"),
            "prefix and suffix may not overlap"
        );
    }

    #[test]
    fn rows_replace_the_row_before_them_in_each_channel() {
        let package = Package::named("p")
            .bundle("1.0.0")
            .channels(&["stable", "fast"])
            .bundle("1.1.0")
            .channels(&["fast"])
            .bundle("1.2.0")
            .channels(&["fast"])
            .skips(&["1.1.0"])
            .skip_range("<1.2.0");
        let images = [("1.0.0", "i0"), ("1.1.0", "i1"), ("1.2.0", "i2")]
            .map(|(v, i)| (v.to_owned(), i.to_owned()))
            .into();
        let fbc = package.fbc(&images);
        assert_eq!(fbc[0]["defaultChannel"], "stable");
        assert_eq!(fbc[1]["entries"], json!([{"name": "p.v1.0.0"}]));
        assert_eq!(
            fbc[2]["entries"],
            json!([
                {"name": "p.v1.0.0"},
                {"name": "p.v1.1.0", "replaces": "p.v1.0.0"},
                {"name": "p.v1.2.0", "replaces": "p.v1.1.0", "skips": ["p.v1.1.0"], "skipRange": "<1.2.0"},
            ])
        );
        assert_eq!(fbc[5]["image"], "i2");
    }

    #[test]
    fn differences_name_the_changed_pointers() {
        let a = json!({"metadata": {"name": "x", "labels": {"a/b": "1"}}, "spec": [1, 2]});
        let b = json!({"metadata": {"name": "x", "labels": {"a/b": "2"}}, "spec": [1, 3]});
        assert_eq!(
            differences("", &a, &b),
            [
                "  /metadata/labels/a~1b: \"1\" -> \"2\"",
                "  /spec/1: 2 -> 3"
            ]
        );
        let mut c = a.clone();
        remove_pointer(&mut c, "/metadata/labels");
        assert_eq!(c, json!({"metadata": {"name": "x"}, "spec": [1, 2]}));
    }
}
