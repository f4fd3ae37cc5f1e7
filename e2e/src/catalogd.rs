//! catalogd for end-to-end tests, against the shared control plane and a registry on loopback.
//!
//! Input: [`Options`]. Output: a running catalogd ([`Catalogd`]) and helpers to create its
//! ClusterCatalogs, wait for them and read their content. Network: 127.0.0.1 only.
//!
//! Two tiers run the same controller:
//!
//! | tier | how | where a reconcile failure shows |
//! |---|---|---|
//! | process ([`Catalogd::start`]) | the real `catalogd run` binary from `$OLM_BIN_DIR`, as in a cluster | its log; a failed wait quotes the tail |
//! | in-process ([`Catalogd::start_in_process`]) | `catalogd::cmd::run::run` as a task of the test's own runtime | the test's output (logs go to the test writer), and [`Catalogd::shut_down`] returns `run`'s error |
//!
//! Each instance manages only the ClusterCatalogs labelled with its own instance name, so tests
//! run in parallel without touching each other's catalogs. [`ServingCatalog`] is the set-up most
//! catalogd tests start from: an image pushed, a catalogd, its ClusterCatalog served.
//!
//! The helpers panic on failure, as test code does.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use catalogd::cmd::run::{RunError, RunOptions};
use kube::api::{Api, DeleteParams, PostParams};
use olm_api::fbc::walk_metas_dir;
use olm_api::v1::{ClusterCatalog, ConditionType, find_condition};
use olm_image::push::PushedImage;
use olm_runtime::server::TlsFiles;
use olm_runtime::shutdown::CancellationToken;
use serde_json::json;

use crate::assets::Assets;
use crate::eventually::eventually_explained;
use crate::images::{push_catalog, testdata};
use crate::operator_controller::free_port;
use crate::process::{Spec, Supervised};
use crate::registry::Registry;
use crate::test_env::unique_name;

/// The label telling which catalogd instance manages a ClusterCatalog.
pub const INSTANCE_LABEL: &str = "e2e.olm.test/catalogd";
/// The Lease catalogd elects its leader with (upstream's name).
pub const LEADER_LEASE: &str = catalogd::cmd::run::LEADER_ELECTION_ID;

/// How to start a catalogd.
pub struct Options<'a> {
    /// Its instance name: it manages the catalogs labelled [`INSTANCE_LABEL`]`=<instance>`.
    pub instance: String,
    pub registry: &'a Registry,
    /// Its cache directory (default: a fresh temporary directory owned by the [`Catalogd`]).
    pub cache: Option<PathBuf>,
    /// Elect a leader through a Lease in this namespace.
    pub leader_election_namespace: Option<&'a str>,
    /// Leader-election identity (as `POD_NAME` gives it in a cluster).
    pub identity: Option<&'a str>,
    /// Kubeconfig to run with (default: the cluster admin's).
    pub kubeconfig: Option<PathBuf>,
    /// The content server's port (default: a free one). A replacement for a stopped catalogd
    /// passes the old one, as a Service keeps `status.urls.base` stable in a cluster.
    pub content_port: Option<u16>,
    /// `--external-address`, the `HOST:PORT` of `status.urls.base` (default: the content
    /// server's own address). A test puts a proxy of its own there.
    pub external_address: Option<String>,
    /// Further environment variables of the process (process tier only).
    pub env: Vec<(String, String)>,
    /// How long to keep serving after turning unready at shutdown (in-process tier only;
    /// default none, as outside a Pod).
    pub shutdown_drain: Duration,
    /// How long a starting replica waits to serve the catalogs already serving before it turns
    /// ready regardless (in-process tier only; default catalogd's own).
    pub ready_bound: Duration,
    /// Whether it may pull from `registry`. `false` leaves the registry out of the insecure
    /// (plain HTTP) registries, so every pull fails: a replica that cannot unpack (in-process
    /// tier only).
    pub can_pull: bool,
}

impl<'a> Options<'a> {
    /// A new instance using `registry`, with its own cache and the admin's credentials.
    pub fn new(registry: &'a Registry) -> Options<'a> {
        Options {
            instance: unique_name("cd"),
            registry,
            cache: None,
            leader_election_namespace: None,
            identity: None,
            kubeconfig: None,
            content_port: None,
            external_address: None,
            env: Vec::new(),
            shutdown_drain: Duration::ZERO,
            ready_bound: catalogd::controller::ready_gate::DEFAULT_READY_BOUND,
            can_pull: true,
        }
    }
}

enum Runner {
    Process(Supervised),
    InProcess {
        stop: CancellationToken,
        task: Option<tokio::task::JoinHandle<Result<(), RunError>>>,
    },
}

/// A running catalogd managing catalogs labelled with its instance name.
pub struct Catalogd {
    runner: Runner,
    pub instance: String,
    /// `http://127.0.0.1:PORT` of the content server.
    pub content_root: String,
    /// `http://127.0.0.1:PORT` of `/healthz` and `/readyz`.
    pub health_root: String,
    /// The in-process tier's metrics listener (HTTPS, for the metrics reader only).
    pub metrics_tls: Option<crate::metrics::MetricsTls>,
    _logs: tempfile::TempDir,
    _cache: Option<tempfile::TempDir>,
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// What both tiers set up alike: the two listen addresses and the scratch and cache directories.
struct Setup {
    content: SocketAddr,
    /// What `status.urls.base` names.
    external_address: String,
    health: SocketAddr,
    metrics_tls: crate::metrics::MetricsTls,
    cache: PathBuf,
    owned_cache: Option<tempfile::TempDir>,
    scratch: tempfile::TempDir,
}

impl Setup {
    fn new(opts: &Options<'_>) -> Setup {
        let (cache, owned_cache) = match &opts.cache {
            Some(dir) => (dir.clone(), None),
            None => {
                let dir = tempfile::tempdir().expect("a cache directory");
                (dir.path().to_path_buf(), Some(dir))
            }
        };
        let content = loopback(opts.content_port.unwrap_or_else(free_port));
        let scratch = tempfile::tempdir().expect("a scratch directory");
        Setup {
            metrics_tls: crate::metrics::MetricsTls::new(scratch.path()),
            content,
            external_address: opts
                .external_address
                .clone()
                .unwrap_or_else(|| content.to_string()),
            // Never the content port, which a replacement catalogd reuses from its predecessor
            // (free until the replacement binds it): ports are never handed out twice.
            health: loopback(free_port()),
            cache,
            owned_cache,
            scratch,
        }
    }

    /// The started catalogd, once ready.
    async fn ready(self, runner: Runner, instance: String) -> Catalogd {
        let catalogd = self.started(runner, instance);
        catalogd.wait_ready().await;
        catalogd
    }

    /// The started catalogd, ready or not.
    fn started(self, runner: Runner, instance: String) -> Catalogd {
        let metrics_tls = matches!(runner, Runner::InProcess { .. }).then_some(self.metrics_tls);
        Catalogd {
            metrics_tls,
            runner,
            instance,
            content_root: format!("http://{}", self.content),
            health_root: format!("http://{}", self.health),
            _logs: self.scratch,
            _cache: self.owned_cache,
        }
    }
}

impl Catalogd {
    /// Starts the `catalogd run` binary and waits until it is ready.
    pub async fn start(opts: Options<'_>) -> Catalogd {
        let env = crate::shared().await;
        let bin = Assets::products()
            .and_then(|a| a.binary("catalogd"))
            .unwrap_or_else(|e| panic!("{e}"));
        let setup = Setup::new(&opts);
        let kubeconfig = opts
            .kubeconfig
            .clone()
            .unwrap_or_else(|| env.kubeconfig_path().to_path_buf());
        let mut spec = Spec::new("catalogd", bin, setup.scratch.path())
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--catalogs-server-addr", &setup.content.to_string()])
            .args(["--external-address", &setup.external_address])
            .arg("--cache-dir")
            .arg(&setup.cache)
            .args(["--webhook-server-port", "0"])
            .args(["--health-probe-bind-address", &setup.health.to_string()])
            .args(["--insecure-registries", &opts.registry.host()])
            .args(["--poll-interval-unit", "1s"])
            .args(["--gc-interval", "2s"])
            .args([
                "--catalog-label-selector",
                &format!("{INSTANCE_LABEL}={}", opts.instance),
            ])
            .env("RUST_LOG", "info,catalogd=debug");
        if let Some(id) = opts.identity {
            spec = spec.env("POD_NAME", id);
        }
        for (key, value) in &opts.env {
            spec = spec.env(key, value);
        }
        if let Some(ns) = opts.leader_election_namespace {
            spec = spec
                .arg("--leader-elect")
                .args(["--leader-election-namespace", ns]);
        }
        let process = Supervised::start(spec).unwrap_or_else(|e| panic!("{e}"));
        setup.ready(Runner::Process(process), opts.instance).await
    }

    /// Runs the catalogd controller inside this test process (on the test's runtime) and waits
    /// until it is ready. Its logs go to the test's output.
    pub async fn start_in_process(opts: Options<'_>) -> Catalogd {
        let catalogd = Catalogd::start_in_process_unready(opts).await;
        catalogd.wait_ready().await;
        catalogd
    }

    /// [`Catalogd::start_in_process`] without waiting for `/readyz`: for a test of readiness.
    pub async fn start_in_process_unready(opts: Options<'_>) -> Catalogd {
        let env = crate::shared().await;
        install_test_logging();
        let setup = Setup::new(&opts);
        let run_options = RunOptions {
            kubeconfig: Some(
                opts.kubeconfig
                    .clone()
                    .unwrap_or_else(|| env.kubeconfig_path().to_path_buf()),
            ),
            catalogs_server_addr: setup.content,
            external_address: setup.external_address.clone(),
            cache_dir: setup.cache.clone(),
            tls: None,
            tls_profile: Default::default(),
            limits: olm_runtime::server::ServerLimits::default(),
            metrics: Some((
                setup.metrics_tls.addr,
                TlsFiles {
                    cert: setup.metrics_tls.cert.clone(),
                    key: setup.metrics_tls.key.clone(),
                },
            )),
            health_addr: Some(setup.health),
            pprof_addr: None,
            webhook_addr: None,
            metas: true,
            leader_elect: opts.leader_election_namespace.is_some(),
            leader_election_namespace: opts
                .leader_election_namespace
                .unwrap_or("olmv1-system")
                .to_string(),
            global_pull_secret: None,
            pull_cas_dir: None,
            insecure_registries: if opts.can_pull {
                vec![opts.registry.host()]
            } else {
                Vec::new()
            },
            registries_conf: olm_image::RegistriesConfFiles::none(),
            gc_interval: Duration::from_secs(2),
            poll_unit: Duration::from_secs(1),
            identity: olm_runtime::leader::identity(opts.identity, "catalogd-in-process"),
            label_selector: Some(format!("{INSTANCE_LABEL}={}", opts.instance)),
            shutdown_drain: opts.shutdown_drain,
            ready_bound: opts.ready_bound,
        };
        let stop = CancellationToken::new();
        let task = tokio::spawn(catalogd::cmd::run::run(run_options, stop.clone()));
        let runner = Runner::InProcess {
            stop,
            task: Some(task),
        };
        setup.started(runner, opts.instance)
    }

    /// Whether `/readyz` answers 200 now.
    pub async fn is_ready(&self) -> bool {
        let ready = format!("{}/readyz", self.health_root);
        matches!(reqwest::get(&ready).await, Ok(r) if r.status() == 200)
    }

    /// Waits until `/readyz` answers 200.
    pub async fn wait_ready(&self) {
        self.eventually("catalogd to become ready", || async {
            self.is_ready().await.then_some(())
        })
        .await;
    }

    /// The end of the process's log; for the in-process tier, where the log is.
    pub fn log_tail(&self) -> String {
        match &self.runner {
            Runner::Process(process) => process.log_tail(40),
            Runner::InProcess { .. } => {
                "(catalogd runs in this test process: its log is in the test output above)".into()
            }
        }
    }

    /// Stops catalogd gracefully (it releases a held Lease). The in-process tier only starts the
    /// shutdown; [`Catalogd::shut_down`] also waits for it.
    pub fn stop(&mut self) {
        match &mut self.runner {
            Runner::Process(process) => process.stop(Duration::from_secs(10)),
            Runner::InProcess { stop, .. } => stop.cancel(),
        }
    }

    /// Stops catalogd and waits for it; for the in-process tier, returns what `run` returned.
    pub async fn shut_down(mut self) -> Result<(), String> {
        match &mut self.runner {
            Runner::Process(process) => {
                process.stop(Duration::from_secs(10));
                Ok(())
            }
            Runner::InProcess { stop, task } => {
                stop.cancel();
                match task.take() {
                    Some(task) => match task.await {
                        Ok(result) => result.map_err(|e| e.to_string()),
                        Err(e) => Err(format!("the catalogd task failed: {e}")),
                    },
                    None => Ok(()),
                }
            }
        }
    }

    /// Polls `check` until it yields a value; fails the test with catalogd's log tail after the
    /// common bound.
    pub async fn eventually<T, F, Fut>(&self, what: &str, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        eventually_explained(
            what,
            || format!("catalogd log:\n{}", self.log_tail()),
            check,
        )
        .await
    }

    /// A ClusterCatalog this instance manages.
    pub fn catalog(&self, name: &str, image: &str, poll_minutes: Option<i64>) -> ClusterCatalog {
        let mut image_source = json!({"ref": image});
        if let Some(m) = poll_minutes {
            image_source["pollIntervalMinutes"] = json!(m);
        }
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": name, "labels": {INSTANCE_LABEL: self.instance}},
            "spec": {"source": {"type": "Image", "image": image_source}}
        }))
        .expect("a valid ClusterCatalog")
    }

    /// Creates a ClusterCatalog of this instance named `prefix-<random>`; returns its name.
    pub async fn create_catalog(
        &self,
        api: &Api<ClusterCatalog>,
        prefix: &str,
        image: &str,
        poll_minutes: Option<i64>,
    ) -> String {
        let name = unique_name(prefix);
        api.create(
            &PostParams::default(),
            &self.catalog(&name, image, poll_minutes),
        )
        .await
        .unwrap_or_else(|e| panic!("create ClusterCatalog {name}: {e}"));
        name
    }

    /// Waits until `name` is served with the current generation and returns it.
    pub async fn wait_serving(&self, api: &Api<ClusterCatalog>, name: &str) -> ClusterCatalog {
        self.eventually(&format!("catalog {name} to be served"), || async {
            let c = api.get(name).await.ok()?;
            let status = c.status.as_ref()?;
            let serving = find_condition(&status.conditions, ConditionType::Serving)?;
            let progressing = find_condition(&status.conditions, ConditionType::Progressing)?;
            (serving.status.as_str() == "True"
                && progressing.reason == "Succeeded"
                && progressing.observed_generation == c.metadata.generation)
                .then_some(c)
        })
        .await
    }

    /// Waits until the ClusterCatalog `name` is gone (its finalizer removed).
    pub async fn wait_deleted(&self, api: &Api<ClusterCatalog>, name: &str) {
        self.eventually(&format!("catalog {name} to be deleted"), || async {
            matches!(api.get_opt(name).await, Ok(None)).then_some(())
        })
        .await;
    }

    /// GET `path` on the content server.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        reqwest::get(format!("{}{path}", self.content_root))
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }
}

/// Logs of in-process components go to the test writer, so they show with a failing test.
fn install_test_logging() {
    let filter = tracing_subscriber::EnvFilter::new("info,catalogd=debug,olm_runtime=debug");
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

/// The ClusterCatalog API as the cluster admin.
pub async fn catalogs() -> Api<ClusterCatalog> {
    Api::all(crate::shared().await.client().await)
}

/// `/catalogs/<name>/api/v1/all`.
pub fn all_path(name: &str) -> String {
    format!("/catalogs/{name}/api/v1/all")
}

/// Upstream's test catalog at `version` (`v1`, `v2`): an FBC directory in `testdata/`.
pub fn test_catalog(version: &str) -> PathBuf {
    testdata(&format!(
        "catalogs/upstream-operator-controller/testdata/images/catalogs/test-catalog/{version}/configs"
    ))
}

/// The JSON Lines catalogd must serve for an FBC directory: every blob, canonical, in walk order.
pub fn expected_jsonl(dir: &Path) -> String {
    let mut out = String::new();
    walk_metas_dir(dir, |m| {
        out.push_str(&String::from_utf8_lossy(&m.blob));
        out.push('\n');
        Ok(())
    })
    .unwrap_or_else(|e| panic!("walk {}: {e}", dir.display()));
    out
}

/// A catalog image pushed to a registry, a catalogd (process tier) managing it, and its
/// ClusterCatalog, served.
pub struct ServingCatalog {
    pub catalogd: Catalogd,
    pub api: Api<ClusterCatalog>,
    /// The ClusterCatalog's name.
    pub name: String,
    /// The repository the image was pushed to (`<repo>:<tag>`).
    pub repo: String,
    /// The image reference the ClusterCatalog names.
    pub image: String,
    pub pushed: PushedImage,
    /// The ClusterCatalog as it was once served.
    pub served: ClusterCatalog,
}

impl ServingCatalog {
    /// Pushes `fbc_dir` as `<prefix>-<random>:<tag>` to `registry`, starts a catalogd for it and
    /// waits until a ClusterCatalog naming that tag (polled every `poll_minutes`) is served.
    pub async fn start(
        registry: &Registry,
        prefix: &str,
        fbc_dir: &Path,
        tag: &str,
        poll_minutes: Option<i64>,
    ) -> ServingCatalog {
        let repo = unique_name(prefix);
        let pushed = push_catalog(registry, &format!("{repo}:{tag}"), fbc_dir)
            .await
            .unwrap_or_else(|e| panic!("push {repo}:{tag}: {e}"));
        let catalogd = Catalogd::start(Options::new(registry)).await;
        let api = catalogs().await;
        let image = registry.image(&format!("{repo}:{tag}"));
        let name = catalogd
            .create_catalog(&api, prefix, &image, poll_minutes)
            .await;
        let served = catalogd.wait_serving(&api, &name).await;
        ServingCatalog {
            catalogd,
            api,
            name,
            repo,
            image,
            pushed,
            served,
        }
    }

    /// `/catalogs/<name>/api/v1/all` of this catalog.
    pub fn all_path(&self) -> String {
        all_path(&self.name)
    }

    /// Deletes the ClusterCatalog and waits until catalogd has let it go.
    pub async fn delete(&self) {
        self.api
            .delete(&self.name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete ClusterCatalog {}: {e}", self.name));
        self.catalogd.wait_deleted(&self.api, &self.name).await;
    }
}
