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

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use olm_api::v1::{ClusterCatalog, ClusterExtension, ConditionType, find_condition};

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
    pub operator_controller: Option<Supervised>,
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
    let image = registry.image("olm/example-catalog:latest");
    println!(
        "olm-dev-env: pushed {image} ({}) from {}",
        pushed.digest,
        source.display()
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
    wait_ready(
        &mut process,
        &format!("http://127.0.0.1:{health}/readyz"),
        "catalogd",
    )
    .await?;
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

/// Copies the files of `from` (one level of package directories, as the sample catalog has)
/// into `to`, replacing `needle` with `replacement` in their text.
fn copy_replacing(
    from: &std::path::Path,
    to: &std::path::Path,
    needle: &str,
    replacement: &str,
) -> std::io::Result<()> {
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

/// Pushes every version under `config/samples/bundles/example-operator` as
/// `olm/example-operator-bundle:v<version>`, the names the sample catalog uses.
async fn push_sample_bundles(env: &mut DevEnv) -> Result<(), DevEnvError> {
    let step = "sample bundle images";
    let registry = env
        .registry
        .as_ref()
        .ok_or_else(|| fail(step, "no registry"))?;
    let root = repo_root().join("config/samples/bundles/example-operator");
    let mut versions: Vec<String> = std::fs::read_dir(&root)
        .map_err(DevEnvError::step(step))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    versions.sort();
    for version in &versions {
        let channels: &[&str] = if version.contains('-') {
            &["candidate"]
        } else {
            &["stable"]
        };
        let name = format!("olm/example-operator-bundle:v{version}");
        crate::images::push_bundle(
            registry,
            &name,
            &root.join(version),
            "example-operator",
            channels,
        )
        .await
        .map_err(DevEnvError::step(step))?;
    }
    println!(
        "olm-dev-env: pushed {} example-operator bundles ({}) from {}",
        versions.len(),
        versions.join(", "),
        root.display()
    );
    Ok(())
}

/// Waits until `process` answers 200 on `ready_url`, failing if it exits or takes 30 s.
async fn wait_ready(
    process: &mut Supervised,
    ready_url: &str,
    step: &'static str,
) -> Result<(), DevEnvError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = process.try_exit_status() {
            return Err(fail(
                step,
                format!("{step} exited ({status}):\n{}", process.log_tail(20)),
            ));
        }
        if http_ok(ready_url).await {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(fail(
                step,
                format!("{step} did not become ready:\n{}", process.log_tail(20)),
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
    let (Some(cp), Some(registry), Some(scratch)) = (
        env.control_plane.as_ref(),
        env.registry.as_ref(),
        env.scratch.as_ref(),
    ) else {
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
    let health = free_port()?;
    let spec = Spec::new("operator-controller", bin, scratch.path())
        .arg("run")
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .arg("--cache-path")
        .arg(scratch.path().join("operator-controller-cache"))
        .args(["--metrics-bind-address", &format!("127.0.0.1:{health}")])
        .args([
            "--health-probe-bind-address",
            &format!("127.0.0.1:{health}"),
        ])
        .args(["--insecure-registries", &registry.host()]);
    let mut process = Supervised::start(spec).map_err(DevEnvError::step(step))?;
    wait_ready(
        &mut process,
        &format!("http://127.0.0.1:{health}/readyz"),
        step,
    )
    .await?;
    println!(
        "olm-dev-env: operator-controller (pid {}), metrics and health on 127.0.0.1:{health}; log {}",
        process.pid().unwrap_or_default(),
        process.log_path().display()
    );
    env.try_commands.push(format!(
        "curl -s http://127.0.0.1:{health}/metrics | grep operator_controller_"
    ));
    env.operator_controller = Some(process);
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
    // A machine without kubectl gets the one `make tools` built (hack/build-kubectl.sh).
    if let Some(dir) = std::env::var_os("OLM_KUBECTL")
        .map(PathBuf::from)
        .and_then(|k| k.parent().map(PathBuf::from))
    {
        env.exports
            .push(format!("export PATH={}:$PATH", dir.display()));
    }
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
        if let Some(mut controller) = self.operator_controller.take() {
            tokio::task::spawn_blocking(move || controller.stop(Duration::from_secs(10)))
                .await
                .ok();
        }
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
