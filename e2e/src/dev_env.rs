//! `olm-dev-env run`: a local environment for trying OLM by hand.
//!
//! Input: the binaries named by the environment (see [`crate::assets`]). Output: running
//! components on loopback, instructions on stdout, and a clean teardown on Ctrl-C or SIGTERM.
//! Network: 127.0.0.1 only.
//!
//! The environment is a list of steps ([`STEPS`]) run in order; teardown stops what they started
//! in reverse order: the control plane, a registry, the sample bundle images (built from
//! `config/samples/bundles`), the sample catalog image (built from `config/samples/catalog`, its
//! bundle references pointed at the local registry), catalogd, the sample ClusterCatalog,
//! operator-controller, and the sample ClusterExtension (`config/samples`).
//!
//! Every component logs to `NAME.log` in one directory (the control plane's `logs/`), and is
//! watched from the moment it starts: an exit is reported at once with its status and the end of
//! its log, then handled as [`after_exit`] decides (controllers are restarted, anything else stops
//! the environment with a non-zero exit and keeps the logs).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use olm_api::fbc::model::DeclarativeConfig;
use olm_api::v1::{ClusterCatalog, ClusterExtension, ConditionType, find_condition};

use crate::assets::Assets;
use crate::control_plane::{ControlPlane, ControlPlaneError, Tier};
use crate::process::{Exited, ProcessError, Spec, Supervised};
use crate::registry::{Registry, RegistryOptions};

/// Lines of a component's log quoted when it exits.
const TAIL_LINES: usize = 20;
/// How often the components are looked at once the environment is up.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// Failure of a step, or of a component once running.
#[derive(Debug, thiserror::Error)]
pub enum DevEnvError {
    #[error("failed to start the {step}: {source}")]
    Step {
        step: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("failed to wait for a shutdown signal: {0}")]
    Signal(#[source] std::io::Error),
    #[error("{name} exited ({status}); the environment cannot work without it and was stopped")]
    ControlPlaneExited { name: String, status: ExitStatus },
    #[error(
        "{name} exited ({status}) {times} times in a row within {QUICK_EXIT:?} of starting; the environment was stopped"
    )]
    ControllerKeepsExiting {
        name: String,
        status: ExitStatus,
        times: u32,
    },
    #[error("failed to restart {name}: {source}")]
    Restart {
        name: String,
        #[source]
        source: ProcessError,
    },
}

impl DevEnvError {
    fn step<E>(step: &'static str) -> impl FnOnce(E) -> DevEnvError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        move |e| DevEnvError::Step {
            step,
            source: Box::new(e),
        }
    }
}

/// Options of `olm-dev-env run`.
#[derive(Clone, Debug)]
pub struct Options {
    pub tier: Tier,
}

/// What the steps started, and what to tell the user.
#[derive(Default)]
pub struct DevEnv {
    pub control_plane: Option<ControlPlane>,
    pub registry: Option<Registry>,
    /// The sample catalog image, by tag.
    pub catalog_image: Option<String>,
    pub catalogd: Option<Controller>,
    pub operator_controller: Option<Controller>,
    /// `http://127.0.0.1:PORT` of catalogd's content server.
    pub catalogd_url: Option<String>,
    /// Shell lines printed once every step has run.
    pub exports: Vec<String>,
    /// Commands to suggest.
    pub try_commands: Vec<String>,
    /// Warnings printed (to stderr) with the instructions, once.
    pub warnings: Vec<String>,
}

/// How a component's exit is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and the registry: the
    /// environment does not work without them, and restarting them would hide why they stopped.
    ControlPlane,
    /// catalogd and operator-controller: restarted, as a Deployment's Pod would be, so one crash
    /// does not end a session; their state is in the API server and on disk.
    Controller,
}

/// What [`after_exit`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterExit {
    /// Start it again, with the same arguments, after this pause.
    Restart { after: Duration },
    /// Stop every component and exit non-zero.
    StopAll,
}

/// A controller that exits sooner than this after starting counts as a quick exit.
pub const QUICK_EXIT: Duration = Duration::from_secs(30);
/// Quick exits in a row after which a controller is given up on.
pub const MAX_QUICK_EXITS: u32 = 5;

/// The supervision policy of the dev environment.
///
/// | role          | it had become ready | it ran for | quick exits before | then                              |
/// |---------------|---------------------|------------|--------------------|-----------------------------------|
/// | control plane | any                 | any        | any                | stop everything, exit 1           |
/// | controller    | no (start-up)       | any        | any                | stop everything, exit 1           |
/// | controller    | yes                 | ≥ 30 s     | any                | restart after 1 s                 |
/// | controller    | yes                 | < 30 s     | n < 5              | restart after 2ⁿ s (1, 2, … 16 s) |
/// | controller    | yes                 | < 30 s     | 5                  | stop everything, exit 1           |
///
/// A controller that never became ready is broken by its arguments or binary, not by a passing
/// condition: restarting it would only repeat the error.
pub fn after_exit(
    role: Role,
    had_been_ready: bool,
    ran_for: Duration,
    quick_exits_before: u32,
) -> AfterExit {
    match role {
        Role::ControlPlane => AfterExit::StopAll,
        Role::Controller if !had_been_ready => AfterExit::StopAll,
        Role::Controller if ran_for >= QUICK_EXIT => AfterExit::Restart {
            after: Duration::from_secs(1),
        },
        Role::Controller if quick_exits_before >= MAX_QUICK_EXITS => AfterExit::StopAll,
        Role::Controller => AfterExit::Restart {
            after: Duration::from_secs(1 << quick_exits_before),
        },
    }
}

/// catalogd or operator-controller, restarted with the same arguments (and the same log file,
/// appended to) when it exits after it has been ready.
pub struct Controller {
    spec: Spec,
    ready_url: String,
    process: Supervised,
    started: Instant,
    ready: bool,
    /// Set once it has answered its readiness probe; a restarted process must answer again.
    had_been_ready: bool,
    quick_exits: u32,
    restarts: u32,
    restart_at: Option<Instant>,
}

impl Controller {
    fn start(spec: Spec, ready_url: String) -> Result<Controller, ProcessError> {
        let process = Supervised::start(spec.clone())?;
        Ok(Controller {
            spec,
            ready_url,
            process,
            started: Instant::now(),
            ready: false,
            had_been_ready: false,
            quick_exits: 0,
            restarts: 0,
            restart_at: None,
        })
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The PID of the current run.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    pub fn log_path(&self) -> &Path {
        &self.spec.log_path
    }

    /// True once the current run has answered its readiness probe.
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// One look: reports an exit, restarts when the pause is over, notices readiness.
    async fn supervise(&mut self) -> Result<(), DevEnvError> {
        let now = Instant::now();
        if let Some(at) = self.restart_at {
            if now >= at {
                self.restart()?;
            }
            return Ok(());
        }
        if let Some(exit) = self.process.exited(TAIL_LINES) {
            eprintln!("olm-dev-env: {exit}");
            let ran_for = now.saturating_duration_since(self.started);
            let quick = ran_for < QUICK_EXIT;
            return match after_exit(
                Role::Controller,
                self.had_been_ready,
                ran_for,
                self.quick_exits,
            ) {
                AfterExit::Restart { after } => {
                    self.quick_exits = if quick { self.quick_exits + 1 } else { 0 };
                    self.restart_at = Some(now + after);
                    self.ready = false;
                    eprintln!(
                        "olm-dev-env: restarting {} in {}s (a controller is restarted when it exits)",
                        self.name(),
                        after.as_secs()
                    );
                    Ok(())
                }
                AfterExit::StopAll if !self.had_been_ready => Err(DevEnvError::Step {
                    step: static_step(&self.spec.name),
                    source: Box::new(StepMessage(exit.to_string())),
                }),
                AfterExit::StopAll => Err(DevEnvError::ControllerKeepsExiting {
                    name: exit.name,
                    status: exit.status,
                    times: self.quick_exits + 1,
                }),
            };
        }
        if !self.ready && http_ok(&self.ready_url).await {
            self.ready = true;
            if self.had_been_ready {
                eprintln!(
                    "olm-dev-env: {} (pid {}) is ready again",
                    self.name(),
                    self.pid().unwrap_or_default()
                );
            }
            self.had_been_ready = true;
        }
        Ok(())
    }

    fn restart(&mut self) -> Result<(), DevEnvError> {
        self.restarts += 1;
        let mut spec = self.spec.clone();
        spec.append_log = true;
        // A marker between runs in the shared log, written before the new run writes anything.
        if let Ok(mut log) = std::fs::OpenOptions::new()
            .append(true)
            .open(&spec.log_path)
        {
            use std::io::Write as _;
            let _ = writeln!(
                log,
                "--- olm-dev-env: restart {} of {} ---",
                self.restarts, spec.name
            );
        }
        self.process = Supervised::start(spec).map_err(|source| DevEnvError::Restart {
            name: self.spec.name.clone(),
            source,
        })?;
        self.started = Instant::now();
        self.restart_at = None;
        eprintln!(
            "olm-dev-env: restarted {} (pid {}); log {}",
            self.spec.name,
            self.pid().unwrap_or_default(),
            self.spec.log_path.display()
        );
        Ok(())
    }

    fn stop(&mut self, grace: Duration) {
        self.process.stop(grace);
    }
}

/// The step name of a controller (steps are named by `&'static str`).
fn static_step(name: &str) -> &'static str {
    match name {
        "catalogd" => "catalogd",
        "operator-controller" => "operator-controller",
        _ => "controller",
    }
}

type StepFuture<'a> = Pin<Box<dyn Future<Output = Result<(), DevEnvError>> + 'a>>;
type StepFn = for<'a> fn(&'a mut DevEnv, &'a Options) -> StepFuture<'a>;

/// The steps, in start order.
pub const STEPS: &[(&str, StepFn)] = &[
    ("control plane", |env, opts| {
        Box::pin(start_control_plane(env, opts))
    }),
    ("registry", |env, _| Box::pin(start_registry(env))),
    ("sample bundle images", |env, _| {
        Box::pin(push_sample_bundles(env))
    }),
    ("sample catalog image", |env, _| {
        Box::pin(push_sample_catalog(env))
    }),
    ("catalogd", |env, _| Box::pin(start_catalogd(env))),
    ("sample ClusterCatalog", |env, _| {
        Box::pin(apply_sample_catalog(env))
    }),
    ("operator-controller", |env, _| {
        Box::pin(start_operator_controller(env))
    }),
    ("sample ClusterExtension", |env, opts| {
        Box::pin(apply_sample_extension(env, opts))
    }),
];

/// Name of the sample ClusterCatalog (as in `config/samples/olm_v1_clustercatalog.yaml`).
const SAMPLE_CATALOG: &str = "example-catalog";
/// Name and install namespace of the sample ClusterExtension
/// (`config/samples/olm_v1_clusterextension.yaml`).
const SAMPLE_EXTENSION: &str = "example-operator";
const SAMPLE_NAMESPACE: &str = "example-operator";
/// operator-controller's system namespace (its default `--system-namespace`).
const SYSTEM_NAMESPACE: &str = "olmv1-system";
/// The host the sample catalog names its bundle images under; replaced by the local registry.
const SAMPLE_BUNDLE_HOST: &str = "registry.example.com/";

fn repo_root() -> PathBuf {
    crate::repo_root()
}

/// A step failure with a plain message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct StepMessage(String);

fn fail(step: &'static str, message: impl Into<String>) -> DevEnvError {
    DevEnvError::Step {
        step,
        source: Box::new(StepMessage(message.into())),
    }
}

async fn start_registry(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let log_dir = env.control_plane.as_ref().map(ControlPlane::log_dir);
    let registry = Registry::start_logging_in(RegistryOptions::default(), log_dir.as_deref())
        .await
        .map_err(DevEnvError::step("registry"))?;
    println!(
        "olm-dev-env: registry (pid {}) at {}; log {}",
        registry.pid().unwrap_or_default(),
        registry.host(),
        registry.log_path().display()
    );
    env.registry = Some(registry);
    Ok(())
}

async fn push_sample_catalog(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let registry = env
        .registry
        .as_ref()
        .ok_or_else(|| fail("sample catalog image", "no registry"))?;
    let (image, digest) = push_sample_catalog_image(registry).await?;
    println!(
        "olm-dev-env: pushed {image} ({digest}) from {}",
        repo_root().join("config/samples/catalog").display()
    );
    env.catalog_image = Some(image);
    Ok(())
}

/// Pushes the sample catalog (`config/samples/catalog`, its bundle images pointed at `registry`)
/// as `olm/example-catalog:latest`: (image reference, digest).
pub async fn push_sample_catalog_image(
    registry: &crate::registry::Registry,
) -> Result<(String, String), DevEnvError> {
    let source = repo_root().join("config/samples/catalog");
    // The catalog names its bundles under an example host; point them at the local registry.
    let rewritten = tempfile::Builder::new()
        .prefix("olm-dev-env-catalog-")
        .tempdir()
        .map_err(DevEnvError::step("sample catalog image"))?;
    copy_replacing(
        &source,
        rewritten.path(),
        SAMPLE_BUNDLE_HOST,
        &format!("{}/olm/", registry.host()),
    )
    .map_err(DevEnvError::step("sample catalog image"))?;
    let pushed =
        crate::images::push_catalog(registry, "olm/example-catalog:latest", rewritten.path())
            .await
            .map_err(DevEnvError::step("sample catalog image"))?;
    Ok((registry.image("olm/example-catalog:latest"), pushed.digest))
}

fn free_port(step: &'static str) -> Result<u16, DevEnvError> {
    crate::ports::free_port().map_err(DevEnvError::step(step))
}

async fn start_catalogd(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let step = "catalogd";
    let (Some(cp), Some(registry)) = (env.control_plane.as_ref(), env.registry.as_ref()) else {
        return Err(fail(step, "the control plane and registry must run first"));
    };
    let bin = Assets::products()
        .and_then(|a| a.binary("catalogd"))
        .map_err(DevEnvError::step(step))?;
    let [content, health] = [free_port(step)?, free_port(step)?];
    let spec = Spec::new("catalogd", bin, &cp.log_dir())
        // Plain text in the log file, without terminal colour codes.
        .env("NO_COLOR", "1")
        .arg("run")
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(["--catalogs-server-addr", &format!("127.0.0.1:{content}")])
        .args(["--external-address", &format!("127.0.0.1:{content}")])
        .arg("--cache-dir")
        .arg(cp.work_dir().join("catalogd-cache"))
        .args([
            "--health-probe-bind-address",
            &format!("127.0.0.1:{health}"),
        ])
        .args(["--insecure-registries", &registry.host()]);
    let controller = Controller::start(spec, format!("http://127.0.0.1:{health}/readyz"))
        .map_err(DevEnvError::step(step))?;
    env.catalogd = Some(controller);
    wait_controller_ready(env, |env| env.catalogd.as_ref(), step).await?;
    if let Some(catalogd) = env.catalogd.as_ref() {
        println!(
            "olm-dev-env: catalogd (pid {}) serving on 127.0.0.1:{content}, health probes on 127.0.0.1:{health}; log {}",
            catalogd.pid().unwrap_or_default(),
            catalogd.log_path().display()
        );
    }
    env.try_commands.push(format!(
        "curl -s http://127.0.0.1:{health}/readyz  # catalogd"
    ));
    env.catalogd_url = Some(format!("http://127.0.0.1:{content}"));
    Ok(())
}

/// Copies the files of `from` (one level of package directories, as the sample catalog has)
/// into `to`, replacing `needle` with `replacement` in their text.
fn copy_replacing(from: &Path, to: &Path, needle: &str, replacement: &str) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_replacing(&entry.path(), &target, needle, replacement)?;
        } else {
            let text = std::fs::read_to_string(entry.path())?;
            std::fs::write(target, text.replace(needle, replacement))?;
        }
    }
    Ok(())
}

/// A bundle the sample catalog names, and where its image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleBundle {
    pub package: String,
    pub version: String,
    /// The directory the image is built from: `BUNDLES/<package>/<version>`.
    pub dir: PathBuf,
    /// Repository and tag in the local registry, e.g. `olm/example-operator-bundle:v1.1.0` (the
    /// catalog's `registry.example.com/` becomes `<registry>/olm/`).
    pub name: String,
    /// The channels whose entries list it, in catalog order.
    pub channels: Vec<String>,
}

/// Every bundle of the sample catalog in `catalog_dir`, with the directory under `bundles_dir`
/// its image is built from. A bundle without a directory (its image would never be pushed, and
/// installing it would fail with `manifest unknown`) or with an image outside
/// `registry.example.com/` is an error naming it.
pub fn sample_bundles(catalog_dir: &Path, bundles_dir: &Path) -> Result<Vec<SampleBundle>, String> {
    let catalog = DeclarativeConfig::load_dir(catalog_dir)
        .map_err(|e| format!("{}: {e}", catalog_dir.display()))?;
    let mut bundles = Vec::new();
    let mut problems = Vec::new();
    for bundle in &catalog.bundles {
        let Some(Ok(property)) = bundle.package_property() else {
            problems.push(format!(
                "bundle {:?} has no readable olm.package property",
                bundle.name
            ));
            continue;
        };
        let version = property.version;
        let Some(name) = bundle.image.strip_prefix(SAMPLE_BUNDLE_HOST) else {
            problems.push(format!(
                "bundle {:?}: image {:?} is not under {SAMPLE_BUNDLE_HOST}, so it is not pushed to the local registry",
                bundle.name, bundle.image
            ));
            continue;
        };
        let dir = bundles_dir.join(&bundle.package).join(&version);
        if !dir.join("manifests").is_dir() {
            problems.push(format!(
                "bundle {:?} (image {}) has no bundle directory {} (with manifests/ and metadata/), so its image is never pushed",
                bundle.name,
                bundle.image,
                dir.display()
            ));
            continue;
        }
        let channels = catalog
            .channels
            .iter()
            .filter(|c| {
                c.package == bundle.package && c.entries.iter().any(|e| e.name == bundle.name)
            })
            .map(|c| c.name.clone())
            .collect();
        bundles.push(SampleBundle {
            package: bundle.package.clone(),
            version,
            dir,
            name: format!("olm/{name}"),
            channels,
        });
    }
    if problems.is_empty() {
        Ok(bundles)
    } else {
        Err(problems.join("; "))
    }
}

/// Pushes the image of every bundle the sample catalog names (see [`sample_bundles`]).
async fn push_sample_bundles(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let registry = env
        .registry
        .as_ref()
        .ok_or_else(|| fail("sample bundle images", "no registry"))?;
    let bundles = push_sample_bundle_images(registry).await?;
    println!(
        "olm-dev-env: pushed {} bundles ({}) from {}",
        bundles.len(),
        bundles
            .iter()
            .map(|b| format!("{} {}", b.package, b.version))
            .collect::<Vec<_>>()
            .join(", "),
        repo_root().join("config/samples/bundles").display()
    );
    Ok(())
}

/// Pushes the image of every bundle the sample catalog names (see [`sample_bundles`]).
pub async fn push_sample_bundle_images(
    registry: &crate::registry::Registry,
) -> Result<Vec<SampleBundle>, DevEnvError> {
    let step = "sample bundle images";
    let root = repo_root().join("config/samples/bundles");
    let bundles = sample_bundles(&repo_root().join("config/samples/catalog"), &root)
        .map_err(|e| fail(step, e))?;
    for bundle in &bundles {
        let channels: Vec<&str> = bundle.channels.iter().map(String::as_str).collect();
        crate::images::push_bundle(
            registry,
            &bundle.name,
            &bundle.dir,
            &bundle.package,
            &channels,
        )
        .await
        .map_err(DevEnvError::step(step))?;
    }
    Ok(bundles)
}

/// Waits until the controller `get` picks out has answered its readiness probe, watching every
/// component meanwhile; fails if it exits or takes 30 s.
async fn wait_controller_ready(
    env: &mut DevEnv,
    get: fn(&DevEnv) -> Option<&Controller>,
    step: &'static str,
) -> Result<(), DevEnvError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        env.supervise().await?;
        let Some(controller) = get(env) else {
            return Err(fail(step, "it was not started"));
        };
        if controller.is_ready() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(fail(
                step,
                format!(
                    "{step} did not become ready within 30 s; last lines of {}:\n{}",
                    controller.log_path().display(),
                    controller.process.log_tail(TAIL_LINES)
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates `name` if it does not exist (server-side apply, so an existing one is left as is).
async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .patch(
            name,
            &PatchParams::apply("olm-dev-env").force(),
            &Patch::Apply(&namespace),
        )
        .await
        .map(drop)
}

async fn start_operator_controller(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let step = "operator-controller";
    let (Some(cp), Some(registry)) = (env.control_plane.as_ref(), env.registry.as_ref()) else {
        return Err(fail(
            step,
            "the control plane, registry and catalogd must run first",
        ));
    };
    let bin = Assets::products()
        .and_then(|a| a.binary("operator-controller"))
        .map_err(DevEnvError::step(step))?;
    // Its installed-state Secrets live in the system namespace (the install manifest creates it).
    ensure_namespace(&cp.client().await, SYSTEM_NAMESPACE)
        .await
        .map_err(DevEnvError::step(step))?;
    let health = free_port(step)?;
    let spec = Spec::new("operator-controller", bin, &cp.log_dir())
        // Plain text in the log file, without terminal colour codes.
        .env("NO_COLOR", "1")
        .arg("run")
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .arg("--cache-path")
        .arg(cp.work_dir().join("operator-controller-cache"))
        .args([
            "--health-probe-bind-address",
            &format!("127.0.0.1:{health}"),
        ])
        .args(["--insecure-registries", &registry.host()]);
    let controller = Controller::start(spec, format!("http://127.0.0.1:{health}/readyz"))
        .map_err(DevEnvError::step(step))?;
    env.operator_controller = Some(controller);
    wait_controller_ready(env, |env| env.operator_controller.as_ref(), step).await?;
    if let Some(controller) = env.operator_controller.as_ref() {
        println!(
            "olm-dev-env: operator-controller (pid {}), health probes on 127.0.0.1:{health}; log {}",
            controller.pid().unwrap_or_default(),
            controller.log_path().display()
        );
    }
    env.try_commands.push(format!(
        "curl -s http://127.0.0.1:{health}/readyz  # operator-controller"
    ));
    Ok(())
}

/// Creates the sample's install namespace, applies `config/samples/olm_v1_clusterextension.yaml`
/// and waits for `Installed=True` (and, on the full tier, for its Deployment to be Available).
async fn apply_sample_extension(env: &mut DevEnv, opts: &Options) -> Result<(), DevEnvError> {
    let step = "sample ClusterExtension";
    let Some(cp) = env.control_plane.as_ref() else {
        return Err(fail(step, "the control plane must run first"));
    };
    let client = cp.client().await;
    let apply = PatchParams::apply("olm-dev-env").force();
    ensure_namespace(&client, SAMPLE_NAMESPACE)
        .await
        .map_err(DevEnvError::step(step))?;
    let path = repo_root().join("config/samples/olm_v1_clusterextension.yaml");
    let text = std::fs::read_to_string(&path).map_err(DevEnvError::step(step))?;
    let extension: ClusterExtension = serde_saphyr::from_str(&text)
        .map_err(|e| fail(step, format!("{}: {e}", path.display())))?;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    api.patch(SAMPLE_EXTENSION, &apply, &Patch::Apply(&extension))
        .await
        .map_err(DevEnvError::step(step))?;
    let deployments: Api<Deployment> = Api::namespaced(client, SAMPLE_NAMESPACE);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        env.supervise().await?;
        let installed = api.get(SAMPLE_EXTENSION).await.ok().and_then(|ce| {
            let status = ce.status?;
            let cond = find_condition(&status.conditions, ConditionType::Installed)?.clone();
            Some((cond.status.as_str() == "True", cond.message))
        });
        let available = opts.tier != Tier::Full
            || deployments
                .get("example-operator-controller")
                .await
                .ok()
                .and_then(|d| d.status?.conditions)
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "Available" && c.status == "True")
                });
        if matches!(installed, Some((true, _))) && available {
            break;
        }
        if Instant::now() > deadline {
            let last = installed.map(|(_, m)| m).unwrap_or_default();
            return Err(fail(
                step,
                format!(
                    "the sample ClusterExtension was not installed (and Available) within 120 s; Installed says {last:?}; see operator-controller's log"
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    env.try_commands.extend([
        "kubectl get clusterextensions".to_string(),
        format!("kubectl get clusterextension {SAMPLE_EXTENSION} -o yaml"),
        format!("kubectl -n {SAMPLE_NAMESPACE} get deployments,serviceaccounts"),
    ]);
    if let Ok(bin) = Assets::products().and_then(|a| a.binary("operator-controller")) {
        env.try_commands.push(format!(
            "{} explain --extension {SAMPLE_EXTENSION}   # why this bundle, and the upgrade path",
            bin.display()
        ));
    }
    env.try_commands.extend([
        format!(
            "kubectl patch clusterextension {SAMPLE_EXTENSION} --type merge -p '{{\"spec\":{{\"source\":{{\"catalog\":{{\"version\":\"1.2.0\"}}}}}}}}'   # upgrade"
        ),
        format!("kubectl delete clusterextension {SAMPLE_EXTENSION}   # uninstall"),
    ]);
    Ok(())
}

/// A plain HTTP GET on loopback answering 200 (no TLS, no client library needed).
async fn http_ok(url: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let probe = async {
        let Ok(mut stream) = tokio::net::TcpStream::connect(host).await else {
            return false;
        };
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        if stream.write_all(request.as_bytes()).await.is_err() {
            return false;
        }
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.is_ok() && head.ends_with(b"200")
    };
    // A process that accepts and then stalls must not stall the watch.
    tokio::time::timeout(Duration::from_secs(2), probe)
        .await
        .unwrap_or(false)
}

async fn apply_sample_catalog(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let step = "sample ClusterCatalog";
    let (Some(cp), Some(image), Some(url)) = (
        env.control_plane.as_ref(),
        env.catalog_image.clone(),
        env.catalogd_url.clone(),
    ) else {
        return Err(fail(step, "catalogd and the sample image must exist first"));
    };
    let path = repo_root().join("config/samples/olm_v1_clustercatalog.yaml");
    let text = std::fs::read_to_string(&path).map_err(DevEnvError::step(step))?;
    let mut catalog: ClusterCatalog = serde_saphyr::from_str(&text)
        .map_err(|e| fail(step, format!("{}: {e}", path.display())))?;
    if let Some(source) = catalog.spec.source.image.as_mut() {
        source.ref_ = image;
    }
    let api: Api<ClusterCatalog> = Api::all(cp.client().await);
    api.patch(
        SAMPLE_CATALOG,
        &PatchParams::apply("olm-dev-env").force(),
        &Patch::Apply(&catalog),
    )
    .await
    .map_err(DevEnvError::step(step))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        env.supervise().await?;
        let serving = api.get(SAMPLE_CATALOG).await.ok().and_then(|c| {
            let status = c.status?;
            let cond = find_condition(&status.conditions, ConditionType::Serving)?.clone();
            Some(cond.status.as_str() == "True")
        });
        if serving == Some(true) {
            break;
        }
        if Instant::now() > deadline {
            return Err(fail(
                step,
                "the sample ClusterCatalog did not become Serving; see catalogd's log",
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let base = format!("{url}/catalogs/{SAMPLE_CATALOG}");
    env.try_commands.splice(
        0..0,
        [
            "kubectl get clustercatalogs".to_string(),
            format!("kubectl get clustercatalog {SAMPLE_CATALOG} -o yaml"),
            format!("curl -s {base}/api/v1/all"),
            format!("curl -s '{base}/api/v1/metas?schema=olm.package'"),
            format!("curl -s '{base}/api/v1/metas?package=example-operator&schema=olm.channel'"),
            format!("curl -sI --compressed {base}/api/v1/all"),
        ],
    );
    if let Ok(resolve) = Assets::products().and_then(|a| a.binary("operator-controller")) {
        let resolve = resolve.display();
        env.try_commands.splice(
            6..6,
            [
                format!("{resolve} resolve --catalog {base} --package example-operator"),
                format!("{resolve} resolve --catalog {base} --package example-operator --installed-bundle example-operator.v1.0.0 --installed-version 1.0.0 --channel stable"),
                format!("{resolve} resolve --catalog {base} --package example-operator --version '>=3.0.0'; echo \"exit $?\""),
            ],
        );
    }
    Ok(())
}

async fn start_control_plane(env: &mut DevEnv, opts: &Options) -> Result<(), DevEnvError> {
    let cp = ControlPlane::builder()
        .tier(opts.tier)
        .start()
        .await
        .map_err(DevEnvError::step::<ControlPlaneError>("control plane"))?;
    env.exports.push(format!(
        "export KUBECONFIG={}",
        cp.kubeconfig_path().display()
    ));
    let server_version = cp
        .client()
        .await
        .apiserver_version()
        .await
        .map(|info| info.git_version)
        .map_err(DevEnvError::step("control plane"))?;
    let advice = kubectl_advice(
        &crate::kubectl::find_on_path().await,
        crate::kubectl::built_path(&server_version).as_deref(),
        &server_version,
    );
    env.exports.extend(advice.export_path);
    env.warnings.extend(advice.warning);
    env.try_commands.extend(
        [
            "kubectl get nodes -o wide",
            "kubectl get crds",
            "kubectl explain clusterextension.spec.source.catalog",
            "kubectl create deployment hello --image=registry.invalid/hello:1 && kubectl rollout status deployment/hello",
        ]
        .map(String::from),
    );
    println!(
        "olm-dev-env: control plane {server_version} start-up: {}",
        cp.startup_summary()
    );
    println!(
        "olm-dev-env: components: {}; logs in {}",
        cp.components()
            .iter()
            .map(|c| format!("{} (pid {})", c.name, c.pid))
            .collect::<Vec<_>>()
            .join(", "),
        cp.log_dir().display()
    );
    env.control_plane = Some(cp);
    Ok(())
}

/// What to tell the user about kubectl.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KubectlAdvice {
    /// `export PATH=DIR:$PATH`, only for a kubectl built for this control plane that PATH lacks.
    pub export_path: Option<String>,
    /// Printed once with the instructions.
    pub warning: Option<String>,
}

/// Which kubectl the printed commands will run, and whether it suits an API server at
/// `server_version` (e.g. `v1.34.4`). kubectl supports one minor version of skew either way;
/// beyond that it warns on every call (and may misbehave). `built` is where
/// `hack/build-kubectl.sh` puts the kubectl of the control plane's version, in the cache.
///
/// | kubectl on PATH             | built one | advice                                                        |
/// |-----------------------------|-----------|---------------------------------------------------------------|
/// | within one minor version    | any       | nothing                                                       |
/// | further away                | present   | warn; offer `export PATH=<built dir>:$PATH`                   |
/// | further away                | absent    | warn; offer `hack/build-kubectl.sh` and that `export PATH=…`  |
/// | none                        | present   | print `export PATH=<built dir>:$PATH` with the instructions   |
/// | none                        | absent    | warn; offer `hack/build-kubectl.sh` and that `export PATH=…`  |
/// | version unreadable          | any       | nothing (it may work; kubectl will say)                       |
pub fn kubectl_advice(
    on_path: &crate::kubectl::OnPath,
    built: Option<&Path>,
    server_version: &str,
) -> KubectlAdvice {
    use crate::kubectl::OnPath;
    let export = built
        .and_then(Path::parent)
        .map(|dir| format!("export PATH={}:$PATH", dir.display()));
    let exists = built.is_some_and(crate::kubectl::is_executable);
    let fix = |why: String| match (&export, exists) {
        (Some(line), true) => format!("{why}; use the one built for this control plane: {line}"),
        (Some(line), false) => format!(
            "{why}; build one at the control plane's version (a few minutes once the control plane is built): hack/build-kubectl.sh && {line}"
        ),
        (None, _) => format!(
            "{why}; build one at the control plane's version with hack/build-kubectl.sh (it prints its path) and put its directory first on PATH"
        ),
    };
    match on_path {
        OnPath::Missing if exists => KubectlAdvice {
            export_path: export,
            warning: None,
        },
        OnPath::Missing => KubectlAdvice {
            export_path: None,
            warning: Some(fix("no kubectl on PATH".to_owned())),
        },
        OnPath::Unreadable { .. } => KubectlAdvice::default(),
        OnPath::Found { path, version } => {
            let skew = match (
                crate::kubectl::minor_version(version),
                crate::kubectl::minor_version(server_version),
            ) {
                (Some((cmaj, cmin)), Some((smaj, smin))) if cmaj == smaj => cmin.abs_diff(smin),
                (Some(_), Some(_)) => u64::MAX,
                _ => 0,
            };
            if skew <= 1 {
                return KubectlAdvice::default();
            }
            KubectlAdvice {
                export_path: None,
                warning: Some(fix(format!(
                    "kubectl on PATH ({}, {version}) is more than one minor version away from the API server ({server_version}), so it warns on every call",
                    path.display()
                ))),
            }
        }
    }
}

impl DevEnv {
    /// One look at every component started so far (see [`after_exit`]): an exit is reported on
    /// stderr with its status and the end of its log; a controller is restarted after its pause;
    /// an exit of a control-plane component (or the registry) is an error, and the caller stops
    /// everything. The control plane is looked at first: when the API server goes the controllers
    /// may follow, and the cause is what to report.
    pub async fn supervise(&mut self) -> Result<(), DevEnvError> {
        let mut broken = self
            .control_plane
            .as_mut()
            .and_then(|cp| cp.exited_component(TAIL_LINES));
        if broken.is_none() {
            broken = self.registry.as_mut().and_then(|r| r.exited(TAIL_LINES));
        }
        if let Some(exit) = broken {
            report_control_plane_exit(&exit);
            return Err(DevEnvError::ControlPlaneExited {
                name: exit.name,
                status: exit.status,
            });
        }
        for controller in [self.catalogd.as_mut(), self.operator_controller.as_mut()]
            .into_iter()
            .flatten()
        {
            controller.supervise().await?;
        }
        Ok(())
    }

    /// Where every component's `NAME.log` is.
    pub fn log_dir(&self) -> Option<PathBuf> {
        self.control_plane.as_ref().map(ControlPlane::log_dir)
    }

    /// Stops everything started, newest first. With `keep_logs`, the scratch directory (logs,
    /// kubeconfig, certificates) stays for a look at what went wrong; the next start removes it.
    pub async fn stop(&mut self, keep_logs: bool) {
        for controller in [self.operator_controller.take(), self.catalogd.take()]
            .into_iter()
            .flatten()
        {
            let mut controller = controller;
            tokio::task::spawn_blocking(move || controller.stop(Duration::from_secs(10)))
                .await
                .ok();
        }
        if let Some(registry) = self.registry.take() {
            registry.stop().await;
        }
        if let Some(mut cp) = self.control_plane.take() {
            if keep_logs {
                cp.keep_work_dir();
            }
            cp.stop().await;
        }
    }
}

fn report_control_plane_exit(exit: &Exited) {
    eprintln!("olm-dev-env: {exit}");
    eprintln!(
        "olm-dev-env: {} is part of the control plane, which does not work without it; stopping everything",
        exit.name
    );
}

/// Runs every step, prints how to use the environment, then watches the components until Ctrl-C
/// or SIGTERM (a clean stop, exit 0) or until one that cannot be restarted exits (everything is
/// stopped, the logs are kept, and the error says which one). A signal during start-up stops what
/// was started so far.
pub async fn run(opts: Options) -> Result<(), DevEnvError> {
    // Listen before starting anything, so no signal is missed (or left to its default action).
    let mut shutdown = ShutdownSignals::listen()?;
    let mut env = DevEnv::default();
    let started = Instant::now();
    for (name, step) in STEPS {
        let step_started = Instant::now();
        let outcome = tokio::select! {
            result = step(&mut env, &opts) => Some(result),
            () = shutdown.recv() => None,
        };
        match outcome {
            Some(Ok(())) => println!(
                "olm-dev-env: {name} ready in {:.1}s",
                step_started.elapsed().as_secs_f64()
            ),
            Some(Err(e)) => return Err(stop_after_failure(&mut env, e).await),
            None => {
                println!("olm-dev-env: interrupted while starting the {name}; stopping");
                env.stop(false).await;
                println!("olm-dev-env: stopped");
                return Ok(());
            }
        }
    }
    println!(
        "olm-dev-env: ready in {:.1}s. In another shell:\n",
        started.elapsed().as_secs_f64()
    );
    for warning in &env.warnings {
        eprintln!("olm-dev-env: warning: {warning}");
    }
    for line in &env.exports {
        println!("  {line}");
    }
    for line in &env.try_commands {
        println!("  {line}");
    }
    if let Some(dir) = env.log_dir() {
        println!(
            "\nolm-dev-env: logs in {}: {}",
            dir.display(),
            log_names(&dir).join(", ")
        );
    }
    println!(
        "olm-dev-env: watching every component: catalogd and operator-controller are restarted when they exit; if any other exits, everything stops"
    );
    println!("olm-dev-env: press Ctrl-C to stop");
    loop {
        tokio::select! {
            () = shutdown.recv() => break,
            () = tokio::time::sleep(WATCH_EVERY) => {
                if let Err(e) = env.supervise().await {
                    return Err(stop_after_failure(&mut env, e).await);
                }
            }
        }
    }
    println!("olm-dev-env: stopping");
    env.stop(false).await;
    println!("olm-dev-env: stopped");
    Ok(())
}

/// Stops everything after `error`, keeping the logs, and says where they are.
async fn stop_after_failure(env: &mut DevEnv, error: DevEnvError) -> DevEnvError {
    let logs = env.log_dir();
    eprintln!("olm-dev-env: stopping everything");
    env.stop(true).await;
    match logs {
        Some(dir) => eprintln!(
            "olm-dev-env: stopped; logs kept in {} (the next start removes them)",
            dir.display()
        ),
        None => eprintln!("olm-dev-env: stopped"),
    }
    error
}

/// The `*.log` files in `dir`, sorted.
fn log_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".log"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// SIGINT and SIGTERM, registered up front.
struct ShutdownSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    fn listen() -> Result<ShutdownSignals, DevEnvError> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(ShutdownSignals {
            interrupt: signal(SignalKind::interrupt()).map_err(DevEnvError::Signal)?,
            terminate: signal(SignalKind::terminate()).map_err(DevEnvError::Signal)?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubectl::OnPath;

    #[test]
    fn control_plane_exits_always_stop_everything() {
        for ran_for in [Duration::ZERO, Duration::from_secs(3600)] {
            assert_eq!(
                after_exit(Role::ControlPlane, true, ran_for, 0),
                AfterExit::StopAll
            );
        }
    }

    #[test]
    fn a_controller_is_restarted_with_a_growing_pause_and_given_up_on_after_five_quick_exits() {
        let quick = Duration::from_secs(2);
        let pauses: Vec<AfterExit> = (0..=MAX_QUICK_EXITS)
            .map(|n| after_exit(Role::Controller, true, quick, n))
            .collect();
        let secs = |s| AfterExit::Restart {
            after: Duration::from_secs(s),
        };
        assert_eq!(
            pauses,
            vec![
                secs(1),
                secs(2),
                secs(4),
                secs(8),
                secs(16),
                AfterExit::StopAll
            ]
        );
        // A run that lasted is not part of a crash loop.
        assert_eq!(
            after_exit(Role::Controller, true, QUICK_EXIT, MAX_QUICK_EXITS),
            secs(1)
        );
    }

    #[test]
    fn a_controller_that_never_became_ready_stops_everything() {
        assert_eq!(
            after_exit(Role::Controller, false, Duration::from_secs(1), 0),
            AfterExit::StopAll
        );
    }

    #[test]
    fn every_bundle_the_sample_catalog_names_has_a_directory_its_image_is_built_from() {
        let root = crate::repo_root();
        let bundles = sample_bundles(
            &root.join("config/samples/catalog"),
            &root.join("config/samples/bundles"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = bundles.iter().map(|b| b.name.as_str()).collect();
        assert!(
            names.contains(&"olm/example-operator-bundle:v1.1.0"),
            "{names:?}"
        );
        let v120 = bundles
            .iter()
            .find(|b| b.version == "1.2.0")
            .expect("1.2.0");
        assert_eq!(v120.channels, ["stable", "candidate"]);
    }

    #[test]
    fn a_sample_bundle_without_a_directory_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("catalog");
        std::fs::create_dir_all(&catalog).unwrap();
        std::fs::write(
            catalog.join("catalog.json"),
            r#"{"schema":"olm.package","name":"hello","defaultChannel":"alpha"}
{"schema":"olm.channel","package":"hello","name":"alpha","entries":[{"name":"hello.v0.1.0"}]}
{"schema":"olm.bundle","name":"hello.v0.1.0","package":"hello","image":"registry.example.com/hello-bundle:v0.1.0","properties":[{"type":"olm.package","value":{"packageName":"hello","version":"0.1.0"}}]}
"#,
        )
        .unwrap();
        let err = sample_bundles(&catalog, &dir.path().join("bundles")).unwrap_err();
        assert!(err.contains("\"hello.v0.1.0\""), "{err}");
        assert!(err.contains("hello/0.1.0"), "{err}");
        assert!(err.contains("never pushed"), "{err}");
    }

    fn found(version: &str) -> OnPath {
        OnPath::Found {
            path: PathBuf::from("/usr/bin/kubectl"),
            version: version.to_owned(),
        }
    }

    #[test]
    fn a_kubectl_within_one_minor_version_gets_no_advice() {
        for version in ["v1.33.1", "v1.34.0", "v1.35.2"] {
            assert_eq!(
                kubectl_advice(&found(version), None, "v1.34.4"),
                KubectlAdvice::default(),
                "{version}"
            );
        }
    }

    /// `DIR/kubectl/v1.34.4/bin/kubectl`, created as an executable file when `exists`.
    fn built_kubectl(dir: &Path, exists: bool) -> PathBuf {
        let path = dir.join("kubectl/v1.34.4/bin/kubectl");
        if exists {
            use std::os::unix::fs::PermissionsExt;
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path
    }

    #[test]
    fn a_kubectl_two_minor_versions_old_is_warned_about_once_with_the_built_one_offered() {
        let dir = tempfile::tempdir().unwrap();
        let built = built_kubectl(dir.path(), true);
        let export = format!("export PATH={}:$PATH", built.parent().unwrap().display());
        let advice = kubectl_advice(&found("v1.32.4-dispatcher"), Some(&built), "v1.34.4");
        assert_eq!(advice.export_path, None);
        let warning = advice.warning.unwrap();
        assert!(
            warning.contains("/usr/bin/kubectl, v1.32.4-dispatcher"),
            "{warning}"
        );
        assert!(warning.contains("(v1.34.4)"), "{warning}");
        assert!(
            warning.ends_with(&format!(
                "use the one built for this control plane: {export}"
            )),
            "{warning}"
        );
        // Not built yet: the fix is to build it, then the same PATH line.
        let dir = tempfile::tempdir().unwrap();
        let unbuilt = built_kubectl(dir.path(), false);
        let export = format!("export PATH={}:$PATH", unbuilt.parent().unwrap().display());
        let warning = kubectl_advice(&found("v1.36.0"), Some(&unbuilt), "v1.34.4")
            .warning
            .unwrap();
        assert!(
            warning.ends_with(&format!("hack/build-kubectl.sh && {export}")),
            "{warning}"
        );
    }

    #[test]
    fn path_is_extended_only_for_a_built_kubectl_when_path_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let built = built_kubectl(dir.path(), true);
        let advice = kubectl_advice(&OnPath::Missing, Some(&built), "v1.34.4");
        assert_eq!(
            advice.export_path,
            Some(format!(
                "export PATH={}:$PATH",
                built.parent().unwrap().display()
            ))
        );
        assert_eq!(advice.warning, None);
        let dir = tempfile::tempdir().unwrap();
        let unbuilt = built_kubectl(dir.path(), false);
        let advice = kubectl_advice(&OnPath::Missing, Some(&unbuilt), "v1.34.4");
        assert_eq!(advice.export_path, None);
        assert!(
            advice
                .warning
                .unwrap()
                .contains("no kubectl on PATH; build one")
        );
        // A kubectl on PATH is never shadowed, whatever was built.
        let advice = kubectl_advice(&found("v1.34.1"), Some(&built), "v1.34.4");
        assert_eq!(advice, KubectlAdvice::default());
    }
}
