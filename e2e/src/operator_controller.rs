//! operator-controller for end-to-end tests: the real `operator-controller run` binary against
//! the shared control plane, plus the bundle and catalog fixtures its tests install from.
//!
//! Input: [`Options`]. Output: a running controller ([`OperatorController`]) managing only the
//! ClusterExtensions labelled with its instance name (so tests run in parallel), registry+v1
//! bundle directories written from a [`BundleSpec`] and pushed as images, and file-based catalogs
//! listing them ([`CatalogSpec`]). Network: 127.0.0.1 only.
//!
//! The helpers panic on failure, as test code does.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::api::{Api, PostParams};
use olm_api::v1::{ClusterCatalog, ClusterExtension, ConditionType, find_condition};
use serde_json::{Value, json};

use crate::assets::Assets;
use crate::catalogd::{Catalogd, Options as CatalogdOptions};
use crate::eventually::eventually_explained;
use crate::images::{push_bundle, push_catalog};
use crate::process::{Spec, Supervised};
use crate::registry::Registry;
use crate::test_env::unique_name;

/// The label telling which operator-controller instance manages a ClusterExtension.
pub const INSTANCE_LABEL: &str = "e2e.olm.test/operator-controller";
/// catalogd's label naming a catalog (what extensions select their catalog by).
pub const CATALOG_NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";

/// How to start an operator-controller.
pub struct Options<'a> {
    /// It manages the extensions labelled [`INSTANCE_LABEL`]`=<instance>`.
    pub instance: String,
    pub registry: &'a Registry,
    /// Where release Secrets go (created by [`OperatorController::start`] when missing).
    pub system_namespace: String,
    /// Kubeconfig to run with (default: the cluster admin's).
    pub kubeconfig: Option<PathBuf>,
    /// Its cache directory (default: a fresh temporary directory).
    pub cache: Option<PathBuf>,
    /// Further flags. Without an `--openshift…` flag among them the controller runs with
    /// `--openshift=false`: the test plane serves the OpenShift config APIs, and only the tests
    /// that are about OpenShift gating may write the `olm` ClusterOperator.
    pub args: Vec<String>,
    /// Further environment variables of the process.
    pub env: Vec<(String, String)>,
}

impl<'a> Options<'a> {
    pub fn new(registry: &'a Registry) -> Options<'a> {
        Options {
            instance: unique_name("oc"),
            registry,
            system_namespace: unique_name("olmv1-system"),
            kubeconfig: None,
            cache: None,
            args: Vec::new(),
            env: Vec::new(),
        }
    }
}

/// A running `operator-controller run`.
pub struct OperatorController {
    process: Supervised,
    pub instance: String,
    pub system_namespace: String,
    /// `http://127.0.0.1:PORT` of `/healthz` and `/readyz`.
    pub health_root: String,
    /// The metrics listener (HTTPS, for the metrics reader only): see [`OperatorController::metrics`].
    pub metrics_tls: crate::metrics::MetricsTls,
    _logs: tempfile::TempDir,
    _cache: Option<tempfile::TempDir>,
}

/// A free TCP port on 127.0.0.1, never handed out before in this process (see [`crate::ports`]).
pub fn free_port() -> u16 {
    crate::ports::free_port().expect("a free port on 127.0.0.1")
}

impl OperatorController {
    /// The `/metrics` text, read over HTTPS as a ServiceAccount allowed `get` on `/metrics`.
    pub async fn metrics(&self) -> String {
        crate::metrics::read(&self.metrics_tls).await
    }

    /// Starts the binary and waits until it is ready.
    pub async fn start(opts: Options<'_>) -> OperatorController {
        let env = crate::shared().await;
        let client = env.client().await;
        ensure_namespace(&client, &opts.system_namespace).await;
        let bin = Assets::products()
            .and_then(|a| a.binary("operator-controller"))
            .unwrap_or_else(|e| panic!("{e}"));
        let logs = tempfile::tempdir().expect("a log directory");
        let (cache, owned_cache) = match &opts.cache {
            Some(dir) => (dir.clone(), None),
            None => {
                let dir = tempfile::tempdir().expect("a cache directory");
                (dir.path().to_path_buf(), Some(dir))
            }
        };
        let health = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let metrics_tls = crate::metrics::MetricsTls::new(logs.path());
        let kubeconfig = opts
            .kubeconfig
            .clone()
            .unwrap_or_else(|| env.kubeconfig_path().to_path_buf());
        let spec = Spec::new("operator-controller", bin, logs.path())
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--system-namespace", &opts.system_namespace])
            .arg("--cache-path")
            .arg(&cache)
            .args(metrics_tls.flags())
            .args(["--health-probe-bind-address", &health.to_string()])
            .args(["--insecure-registries", &opts.registry.host()])
            .args([
                "--extension-label-selector",
                &format!("{INSTANCE_LABEL}={}", opts.instance),
            ])
            .args(
                (!opts.args.iter().any(|a| a.starts_with("--openshift")))
                    .then_some("--openshift=false"),
            )
            .args(opts.args.iter())
            .env(
                "RUST_LOG",
                "info,operator_controller=debug,kube_runtime=debug",
            );
        let spec = opts.env.iter().fold(spec, |spec, (k, v)| spec.env(k, v));
        let process = Supervised::start(spec).unwrap_or_else(|e| panic!("{e}"));
        let controller = OperatorController {
            process,
            instance: opts.instance,
            system_namespace: opts.system_namespace,
            health_root: format!("http://{health}"),
            metrics_tls,
            _logs: logs,
            _cache: owned_cache,
        };
        let ready = format!("{}/readyz", controller.health_root);
        // Ready only once this process says it listens there: a port lost to another process
        // would otherwise be reported ready by whoever holds it.
        let listening = format!("health probe server listening addr={health}");
        controller
            .eventually("operator-controller to become ready", || {
                let ready = ready.clone();
                let ours = controller.log().contains(&listening);
                async move {
                    (ours && matches!(reqwest::get(&ready).await, Ok(r) if r.status() == 200))
                        .then_some(())
                }
            })
            .await;
        controller
    }

    pub fn log_tail(&self) -> String {
        self.process.log_tail(150)
    }

    /// The whole log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.process.log_path()).unwrap_or_default()
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// The process's exit status once it has exited on its own.
    pub fn try_exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.process.try_exit_status()
    }

    /// Stops the process (SIGTERM, then SIGKILL after `grace`).
    pub fn stop(&mut self, grace: Duration) {
        self.process.stop(grace);
    }

    /// Polls `check` until it yields a value; fails with the controller's log tail.
    pub async fn eventually<T, F, Fut>(&self, what: &str, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        eventually_explained(
            what,
            || format!("operator-controller log:\n{}", self.log_tail()),
            check,
        )
        .await
    }
}

/// Creates namespace `name` unless it exists.
pub async fn ensure_namespace(client: &kube::Client, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).expect("a namespace");
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create namespace {name}: {e}"),
    }
}

/// A registry+v1 bundle to write and push.
#[derive(Clone, Debug)]
pub struct BundleSpec {
    pub package: String,
    pub version: String,
    /// The supported install modes (`AllNamespaces`, `OwnNamespace`, `SingleNamespace`).
    pub install_modes: Vec<String>,
    /// Extra manifests: file name → YAML or JSON text.
    pub manifests: Vec<(String, String)>,
    /// Bundle properties (`type`, `value`), written to `metadata/properties.yaml` (which the
    /// CSV's `olm.properties` takes in) and listed on the bundle's catalog entry.
    pub properties: Vec<(String, Value)>,
    /// Fields added to the CSV's `spec` (for example `webhookdefinitions`).
    pub csv_spec: serde_json::Map<String, Value>,
}

impl BundleSpec {
    /// `package` at `version`, AllNamespaces, with a ConfigMap `test-configmap` holding the
    /// version and a CustomResourceDefinition of the package's own group.
    pub fn new(package: &str, version: &str) -> BundleSpec {
        BundleSpec {
            package: package.to_owned(),
            version: version.to_owned(),
            install_modes: vec!["AllNamespaces".into()],
            manifests: vec![
                (
                    "configmap.yaml".into(),
                    format!(
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-configmap\ndata:\n  version: \"{version}\"\n"
                    ),
                ),
                (
                    "crd.json".into(),
                    crd(package, &widget_schema(true)).to_string(),
                ),
            ],
            properties: Vec::new(),
            csv_spec: serde_json::Map::new(),
        }
    }

    /// The bundle's (and CSV's) name.
    pub fn name(&self) -> String {
        bundle_name(&self.package, &self.version)
    }

    /// The Deployment the bundle installs.
    pub fn deployment_name(&self) -> String {
        format!("{}-controller", self.package)
    }

    /// Replaces the CRD manifest's schema.
    pub fn with_crd_schema(mut self, schema: Value) -> BundleSpec {
        self.manifests.retain(|(f, _)| f != "crd.json");
        self.manifests
            .push(("crd.json".into(), crd(&self.package, &schema).to_string()));
        self
    }

    /// Writes the bundle directory.
    pub fn write(&self, dir: &Path) {
        let manifests = dir.join("manifests");
        let metadata = dir.join("metadata");
        std::fs::create_dir_all(&manifests).expect("manifests/");
        std::fs::create_dir_all(&metadata).expect("metadata/");
        std::fs::write(
            metadata.join("annotations.yaml"),
            format!(
                "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: {}\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
                self.package
            ),
        )
        .expect("annotations.yaml");
        let modes: Vec<Value> = [
            "OwnNamespace",
            "SingleNamespace",
            "MultiNamespace",
            "AllNamespaces",
        ]
        .iter()
        .map(|m| json!({"type": m, "supported": self.install_modes.iter().any(|s| s == m)}))
        .collect();
        let app = format!("{}-op", self.package);
        let sa = format!("{}-sa", self.package);
        let csv = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": self.name(), "annotations": {"capabilities": "Basic Install"}},
            "spec": {
                "displayName": self.package,
                "version": self.version,
                "provider": {"name": "e2e"},
                "installModes": modes,
                "customresourcedefinitions": {"owned": [{
                    "name": format!("widgets.{}.e2e.olm.test", self.package),
                    "kind": "Widget", "version": "v1", "displayName": "Widget",
                }]},
                "install": {"strategy": "deployment", "spec": {
                    "clusterPermissions": [{"serviceAccountName": sa, "rules": [
                        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
                    ]}],
                    "deployments": [{
                        "name": self.deployment_name(),
                        "spec": {
                            "replicas": 1,
                            "selector": {"matchLabels": {"app": app}},
                            "template": {
                                "metadata": {"labels": {"app": app}},
                                "spec": {
                                    "serviceAccountName": sa,
                                    "containers": [{"name": "manager", "image": "example.invalid/e2e/manager:v1"}],
                                },
                            },
                        },
                    }],
                }},
            },
        });
        let mut csv = csv;
        for (field, value) in &self.csv_spec {
            csv["spec"][field] = value.clone();
        }
        std::fs::write(manifests.join("csv.json"), csv.to_string()).expect("csv");
        if !self.properties.is_empty() {
            let properties: Vec<Value> = self
                .properties
                .iter()
                .map(|(type_, value)| json!({"type": type_, "value": value}))
                .collect();
            // JSON is YAML: the bundle reader takes it as it is.
            std::fs::write(
                metadata.join("properties.yaml"),
                json!({"properties": properties}).to_string(),
            )
            .expect("properties.yaml");
        }
        for (file, text) in &self.manifests {
            std::fs::write(manifests.join(file), text).expect("manifest");
        }
    }

    /// Writes and pushes the bundle as `<repo>:v<version>`; returns the image reference.
    pub async fn push(&self, registry: &Registry, repo: &str) -> String {
        let dir = tempfile::tempdir().expect("a bundle directory");
        self.write(dir.path());
        let tag = format!("{repo}:v{}", self.version);
        push_bundle(registry, &tag, dir.path(), &self.package, &["stable"])
            .await
            .unwrap_or_else(|e| panic!("push {tag}: {e}"));
        registry.image(&tag)
    }
}

/// `<package>.v<version>`.
pub fn bundle_name(package: &str, version: &str) -> String {
    format!("{package}.v{version}")
}

/// The schema of the `Widget` kind: `spec.size` (integer) and, when `with_color`, `spec.color`.
pub fn widget_schema(with_color: bool) -> Value {
    let mut spec = json!({"size": {"type": "integer"}});
    if with_color {
        spec["color"] = json!({"type": "string"});
    }
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec},
    }})
}

/// The CustomResourceDefinition `widgets.<package>.e2e.olm.test` with `schema` for `v1`.
pub fn crd(package: &str, schema: &Value) -> Value {
    let group = format!("{package}.e2e.olm.test");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}],
        },
    })
}

/// One channel of a [`CatalogSpec`]: entries as (bundle name, the bundle it replaces).
#[derive(Clone, Debug)]
pub struct ChannelSpec {
    pub name: String,
    pub entries: Vec<(String, Option<String>)>,
}

/// A file-based catalog of one package.
#[derive(Clone, Debug)]
pub struct CatalogSpec {
    pub package: String,
    pub default_channel: String,
    pub channels: Vec<ChannelSpec>,
    /// (bundle name, version, image).
    pub bundles: Vec<(String, String, String)>,
}

impl CatalogSpec {
    /// Writes the catalog as JSON files into `dir`.
    pub fn write(&self, dir: &Path) {
        std::fs::create_dir_all(dir).expect("catalog dir");
        let mut blobs = vec![json!({
            "schema": "olm.package", "name": self.package, "defaultChannel": self.default_channel,
        })];
        for channel in &self.channels {
            let entries: Vec<Value> = channel
                .entries
                .iter()
                .map(|(name, replaces)| match replaces {
                    Some(r) => json!({"name": name, "replaces": r}),
                    None => json!({"name": name}),
                })
                .collect();
            blobs.push(json!({
                "schema": "olm.channel", "name": channel.name, "package": self.package, "entries": entries,
            }));
        }
        for (name, version, image) in &self.bundles {
            blobs.push(json!({
                "schema": "olm.bundle", "name": name, "package": self.package, "image": image,
                "properties": [{"type": "olm.package", "value": {"packageName": self.package, "version": version}}],
            }));
        }
        for (i, blob) in blobs.iter().enumerate() {
            std::fs::write(dir.join(format!("{i:03}.json")), blob.to_string()).expect("blob");
        }
    }

    /// Writes and pushes the catalog as `<repo>:<tag>`; returns the image reference.
    pub async fn push(&self, registry: &Registry, repo: &str, tag: &str) -> String {
        let dir = tempfile::tempdir().expect("a catalog directory");
        self.write(dir.path());
        let reference = format!("{repo}:{tag}");
        push_catalog(registry, &reference, dir.path())
            .await
            .unwrap_or_else(|e| panic!("push {reference}: {e}"));
        registry.image(&reference)
    }
}

/// A catalogd serving one or more catalogs for a test.
pub struct Catalogs {
    pub catalogd: Catalogd,
    pub api: Api<ClusterCatalog>,
}

impl Catalogs {
    pub async fn start(registry: &Registry) -> Catalogs {
        Catalogs {
            catalogd: Catalogd::start(CatalogdOptions::new(registry)).await,
            api: crate::catalogd::catalogs().await,
        }
    }

    /// Creates a ClusterCatalog `prefix-<random>` for `image` (polled every `poll_minutes`)
    /// and waits until it is served; returns its name.
    pub async fn serve(&self, prefix: &str, image: &str, poll_minutes: Option<i64>) -> String {
        let name = self
            .catalogd
            .create_catalog(&self.api, prefix, image, poll_minutes)
            .await;
        self.catalogd.wait_serving(&self.api, &name).await;
        name
    }
}

/// Whether `e` reports `Installed` True for `bundle`.
pub fn installed_bundle(e: &ClusterExtension) -> Option<(String, String)> {
    let b = &e.status.as_ref()?.install.as_ref()?.bundle;
    Some((b.name.clone(), b.version.clone()))
}

/// The message of condition `type_`, or "".
pub fn message(e: &ClusterExtension, type_: ConditionType) -> String {
    e.status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, type_))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}
