//! `olm-dev-env run`: a local environment for trying OLM by hand.
//!
//! Input: the binaries named by the environment (see [`crate::assets`]). Output: running
//! components on loopback, instructions on stdout, and a clean teardown on Ctrl-C or SIGTERM.
//! Network: 127.0.0.1 only.
//!
//! The environment is a list of steps ([`STEPS`]) run in order; teardown stops what they started
//! in reverse order: the control plane, a registry, the sample catalog image (built from
//! `config/samples/catalog`), catalogd, and the sample ClusterCatalog (`config/samples`).

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use std::path::PathBuf;
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use olm_api::v1::{ClusterCatalog, ConditionType, find_condition};

use crate::assets::Assets;
use crate::control_plane::{ControlPlane, ControlPlaneError, Tier};
use crate::process::{Spec, Supervised};
use crate::registry::Registry;

/// Failure of a step.
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
    pub catalogd: Option<Supervised>,
    /// `http://127.0.0.1:PORT` of catalogd's content server.
    pub catalogd_url: Option<String>,
    /// Scratch space for catalogd's cache and logs.
    pub scratch: Option<tempfile::TempDir>,
    /// Shell lines printed once every step has run.
    pub exports: Vec<String>,
    /// Commands to suggest.
    pub try_commands: Vec<String>,
}

type StepFuture<'a> = Pin<Box<dyn Future<Output = Result<(), DevEnvError>> + 'a>>;
type StepFn = for<'a> fn(&'a mut DevEnv, &'a Options) -> StepFuture<'a>;

/// The steps, in start order.
pub const STEPS: &[(&str, StepFn)] = &[
    ("control plane", |env, opts| {
        Box::pin(start_control_plane(env, opts))
    }),
    ("registry", |env, _| Box::pin(start_registry(env))),
    ("sample catalog image", |env, _| {
        Box::pin(push_sample_catalog(env))
    }),
    ("catalogd", |env, _| Box::pin(start_catalogd(env))),
    ("sample ClusterCatalog", |env, _| {
        Box::pin(apply_sample_catalog(env))
    }),
];

/// Name of the sample ClusterCatalog (as in `config/samples/olm_v1_clustercatalog.yaml`).
const SAMPLE_CATALOG: &str = "example-catalog";

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
    let registry = Registry::start()
        .await
        .map_err(DevEnvError::step("registry"))?;
    match registry.pid() {
        Some(pid) => println!("olm-dev-env: registry at {} (pid {pid})", registry.host()),
        None => println!("olm-dev-env: registry at {}", registry.host()),
    }
    env.registry = Some(registry);
    Ok(())
}

async fn push_sample_catalog(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let registry = env
        .registry
        .as_ref()
        .ok_or_else(|| fail("sample catalog image", "no registry"))?;
    let dir = repo_root().join("config/samples/catalog");
    let pushed = crate::images::push_catalog(registry, "olm/example-catalog:latest", &dir)
        .await
        .map_err(DevEnvError::step("sample catalog image"))?;
    let image = registry.image("olm/example-catalog:latest");
    println!(
        "olm-dev-env: pushed {image} ({}) from {}",
        pushed.digest,
        dir.display()
    );
    env.catalog_image = Some(image);
    Ok(())
}

fn free_port() -> Result<u16, DevEnvError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(DevEnvError::step("catalogd"))
}

async fn start_catalogd(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let (Some(cp), Some(registry)) = (env.control_plane.as_ref(), env.registry.as_ref()) else {
        return Err(fail(
            "catalogd",
            "the control plane and registry must run first",
        ));
    };
    let bin = Assets::products()
        .and_then(|a| a.binary("catalogd"))
        .map_err(DevEnvError::step("catalogd"))?;
    let scratch = tempfile::Builder::new()
        .prefix("olm-dev-env-catalogd-")
        .tempdir()
        .map_err(DevEnvError::step("catalogd"))?;
    let (content, health) = (free_port()?, free_port()?);
    let spec = Spec::new("catalogd", bin, scratch.path())
        .arg("run")
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(["--catalogs-server-addr", &format!("127.0.0.1:{content}")])
        .args(["--external-address", &format!("127.0.0.1:{content}")])
        .arg("--cache-dir")
        .arg(scratch.path().join("cache"))
        .args(["--metrics-bind-address", &format!("127.0.0.1:{health}")])
        .args([
            "--health-probe-bind-address",
            &format!("127.0.0.1:{health}"),
        ])
        .args(["--insecure-registries", &registry.host()]);
    let mut process = Supervised::start(spec).map_err(DevEnvError::step("catalogd"))?;
    let ready = format!("http://127.0.0.1:{health}/readyz");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = process.try_exit_status() {
            return Err(fail(
                "catalogd",
                format!("catalogd exited ({status}):\n{}", process.log_tail(20)),
            ));
        }
        if http_ok(&ready).await {
            break;
        }
        if Instant::now() > deadline {
            return Err(fail(
                "catalogd",
                format!("catalogd did not become ready:\n{}", process.log_tail(20)),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "olm-dev-env: catalogd (pid {}) serving on 127.0.0.1:{content}, metrics and health on 127.0.0.1:{health}; log {}",
        process.pid().unwrap_or_default(),
        process.log_path().display()
    );
    env.try_commands.push(format!(
        "curl -s http://127.0.0.1:{health}/metrics | grep catalogd_"
    ));
    env.catalogd_url = Some(format!("http://127.0.0.1:{content}"));
    env.catalogd = Some(process);
    env.scratch = Some(scratch);
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
    let Ok(mut stream) = tokio::net::TcpStream::connect(host).await else {
        return false;
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.is_ok() && head.ends_with(b"200")
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
        "olm-dev-env: control plane start-up: {}",
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

impl DevEnv {
    /// Stops everything started, newest first.
    pub async fn stop(&mut self) {
        if let Some(mut catalogd) = self.catalogd.take() {
            tokio::task::spawn_blocking(move || catalogd.stop(Duration::from_secs(10)))
                .await
                .ok();
        }
        self.scratch.take();
        if let Some(registry) = self.registry.take() {
            registry.stop().await;
        }
        if let Some(cp) = self.control_plane.take() {
            cp.stop().await;
        }
    }
}

/// Runs every step, prints how to use the environment, waits for Ctrl-C or SIGTERM, tears down.
/// A signal during start-up stops what was started so far.
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
            Some(Err(e)) => {
                env.stop().await;
                return Err(e);
            }
            None => {
                println!("olm-dev-env: interrupted while starting the {name}; stopping");
                env.stop().await;
                println!("olm-dev-env: stopped");
                return Ok(());
            }
        }
    }
    println!(
        "olm-dev-env: ready in {:.1}s. In another shell:\n",
        started.elapsed().as_secs_f64()
    );
    for line in &env.exports {
        println!("  {line}");
    }
    for line in &env.try_commands {
        println!("  {line}");
    }
    println!("\nolm-dev-env: press Ctrl-C to stop");
    shutdown.recv().await;
    println!("olm-dev-env: stopping");
    env.stop().await;
    println!("olm-dev-env: stopped");
    Ok(())
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
