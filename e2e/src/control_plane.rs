//! A real Kubernetes control plane on loopback: etcd and kube-apiserver, and optionally
//! kube-controller-manager, kube-scheduler and kwok with one fake Node.
//!
//! Input: the prebuilt binaries ([`crate::assets`]) and CRD directories. Output: running processes,
//! a kubeconfig file for a `system:masters` user, and clients. Network: 127.0.0.1 only.
//!
//! Two tiers:
//!
//! | tier               | components                               | gives                                      |
//! |--------------------|------------------------------------------|--------------------------------------------|
//! | [`Tier::ApiServer`]| etcd, kube-apiserver                     | CRUD, SSA, CEL, RBAC, TokenRequest, status |
//! | [`Tier::Full`]     | + kube-controller-manager, kube-scheduler, kwok + Node `kwok-node-0` | GC by ownerReference, namespace deletion, Deployments that become Available, `default` ServiceAccounts |
//!
//! Start-up order: certificates → etcd (`/health`) → kube-apiserver (`/readyz`) → CRDs applied and
//! `Established` → (Full) the other components, the fake Node `Ready`, the `default`
//! ServiceAccount present. Ports come from [`crate::ports`]; a component that loses its port
//! to another process in the meantime is restarted on new ports. A component that exits or does
//! not become ready fails the start with the tail of its log; the scratch directory is then kept.

pub mod certs;
pub mod crds;
pub mod flags;
pub mod kubeconfig;

use std::future::Future;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::assets::{Assets, AssetsError};
use crate::process::{Exited, ProcessError, Spec, Supervised};
use crate::workdir::WorkDir;
use certs::{CertError, Pki};
use crds::CrdError;
use flags::Layout;
use kubeconfig::Credential;

/// Name of the fake Node kwok manages in [`Tier::Full`].
pub const NODE_NAME: &str = "kwok-node-0";
/// Context, cluster and user name in the generated kubeconfig.
pub const CONTEXT: &str = "olm-e2e";

/// How many times a component is restarted on fresh ports after losing a port race.
const PORT_ATTEMPTS: usize = 5;
/// Lines of a component's log quoted in a start-up error.
const TAIL_LINES: usize = 30;
/// How long a stopping component gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(50);
/// Upper bound for one readiness probe, so a component that accepts a connection and then stalls
/// cannot stall start-up past its timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Which components run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tier {
    /// etcd and kube-apiserver only.
    #[default]
    ApiServer,
    /// Also kube-controller-manager, kube-scheduler and kwok with one fake Node.
    Full,
}

/// Failure to start or use the control plane.
#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    #[error("failed to restart kube-apiserver: {0}")]
    Restart(String),
    #[error(transparent)]
    Assets(#[from] AssetsError),
    #[error("failed to create the scratch directory: {0}")]
    WorkDir(#[source] std::io::Error),
    #[error(transparent)]
    Certs(#[from] CertError),
    #[error("failed to write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to render the kubeconfig: {0}")]
    Kubeconfig(#[source] serde_saphyr::ser::Error),
    #[error("failed to find a free loopback port: {0}")]
    Port(#[source] std::io::Error),
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error(
        "failed to start {name}: it exited ({status}) before {waiting_for}; last lines of {log}:\n{tail}"
    )]
    Exited {
        name: String,
        status: ExitStatus,
        waiting_for: String,
        log: PathBuf,
        tail: String,
    },
    #[error(
        "failed to start the control plane: {waiting_for} did not happen within {waited:?} (last check: {last_check}); last lines of {log}:\n{tail}"
    )]
    NotReady {
        waiting_for: String,
        waited: Duration,
        last_check: String,
        log: PathBuf,
        tail: String,
    },
    #[error("failed to build a client for {server}: {source}")]
    Client {
        server: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(transparent)]
    Crds(#[from] CrdError),
    #[error("failed to {action}: {source}")]
    Api {
        action: String,
        #[source]
        source: kube::Error,
    },
}

impl ControlPlaneError {
    fn lost_port_race(&self) -> bool {
        matches!(self, ControlPlaneError::Exited { tail, .. } if tail.contains("address already in use"))
    }
}

/// Options for [`ControlPlane::start`].
#[derive(Clone, Debug)]
pub struct Builder {
    assets: Option<Assets>,
    tier: Tier,
    crd_dirs: Vec<PathBuf>,
    startup_timeout: Duration,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            assets: None,
            tier: Tier::ApiServer,
            crd_dirs: default_crd_dirs(),
            startup_timeout: Duration::from_secs(180),
        }
    }
}

/// The repository's CRD directories: `config/crd` (ours) and `config/openshift` (OpenShift types
/// used in tests).
pub fn default_crd_dirs() -> Vec<PathBuf> {
    let root = crate::repo_root();
    vec![root.join("config/crd"), root.join("config/openshift")]
}

impl Builder {
    /// Where the binaries are (default: [`Assets::control_plane`], from the environment).
    pub fn assets(mut self, assets: Assets) -> Builder {
        self.assets = Some(assets);
        self
    }

    pub fn tier(mut self, tier: Tier) -> Builder {
        self.tier = tier;
        self
    }

    /// CRD directories to install (default: [`default_crd_dirs`]); empty installs none.
    pub fn crd_dirs(mut self, dirs: Vec<PathBuf>) -> Builder {
        self.crd_dirs = dirs;
        self
    }

    /// Upper bound for each start-up wait (a crashed component fails at once; this only bounds a
    /// component that hangs).
    pub fn startup_timeout(mut self, timeout: Duration) -> Builder {
        self.startup_timeout = timeout;
        self
    }

    /// Starts the control plane.
    pub async fn start(self) -> Result<ControlPlane, ControlPlaneError> {
        crate::install_crypto_provider();
        let assets = match self.assets.clone() {
            Some(a) => a,
            None => Assets::control_plane()?,
        };
        // Check every binary before starting anything.
        let bins = Binaries {
            etcd: assets.binary("etcd")?,
            apiserver: assets.binary("kube-apiserver")?,
            full: match self.tier {
                Tier::ApiServer => None,
                Tier::Full => Some([
                    assets.binary("kube-controller-manager")?,
                    assets.binary("kube-scheduler")?,
                    assets.binary("kwok")?,
                ]),
            },
        };
        let mut work = WorkDir::create().map_err(ControlPlaneError::WorkDir)?;
        let layout = Layout::new(work.path());
        let mut processes = Vec::new();
        let mut timings = Vec::new();
        match self
            .start_in(&layout, &bins, &mut processes, &mut timings)
            .await
        {
            Ok((server_url, pki)) => Ok(ControlPlane {
                processes,
                timings,
                kubeconfig: layout.kubeconfig(),
                work,
                layout,
                server_url,
                pki,
                tier: self.tier,
                restarted: std::sync::Mutex::new(Vec::new()),
            }),
            Err(e) => {
                for p in processes.iter_mut().rev() {
                    p.stop(Duration::ZERO);
                }
                work.keep();
                Err(e)
            }
        }
    }

    async fn start_in(
        &self,
        layout: &Layout,
        bins: &Binaries,
        processes: &mut Vec<Supervised>,
        timings: &mut Vec<(&'static str, Duration)>,
    ) -> Result<(String, Pki), ControlPlaneError> {
        let mut phase = Instant::now();
        let mut lap = |name: &'static str| {
            timings.push((name, phase.elapsed()));
            phase = Instant::now();
        };
        for dir in [
            layout.root().join("pki"),
            layout.logs(),
            layout.apiserver_cert_dir(),
        ] {
            std::fs::create_dir_all(&dir).map_err(|source| ControlPlaneError::Write {
                path: dir.clone(),
                source,
            })?;
        }
        let pki = Pki::generate()?;
        write_file(&layout.ca_cert(), &pki.ca.cert_pem, false)?;
        write_file(&layout.serving_cert(), &pki.serving.cert_pem, false)?;
        write_file(&layout.serving_key(), &pki.serving.key_pem, true)?;
        write_file(&layout.admin_cert(), &pki.admin.cert_pem, false)?;
        write_file(&layout.admin_key(), &pki.admin.key_pem, true)?;
        write_file(
            &layout.service_account_key(),
            &pki.service_account_key_pem,
            true,
        )?;
        write_file(
            &layout.service_account_pub(),
            &pki.service_account_public_pem,
            false,
        )?;
        write_file(&layout.audit_policy(), flags::AUDIT_POLICY, false)?;
        lap("certificates");

        let etcd_port = self.start_etcd(layout, &bins.etcd, processes).await?;
        lap("etcd /health");
        let server_url = self
            .start_apiserver(layout, &bins.apiserver, etcd_port, &pki, processes)
            .await?;
        lap("kube-apiserver /readyz");
        let client = client_from_kubeconfig_file(&layout.kubeconfig(), &server_url).await?;

        if !self.crd_dirs.is_empty() {
            crds::install(&client, &self.crd_dirs, self.startup_timeout).await?;
            lap("CRDs established");
        }

        if let Some([kcm, scheduler, kwok]) = &bins.full {
            write_file(&layout.kwok_config(), KWOK_CONFIG, false)?;
            let logs = layout.logs();
            processes.push(Supervised::start(
                Spec::new("kube-controller-manager", kcm, &logs)
                    .args(flags::controller_manager(layout)),
            )?);
            processes.push(Supervised::start(
                Spec::new("kube-scheduler", scheduler, &logs).args(flags::scheduler(layout)),
            )?);
            processes.push(Supervised::start(
                Spec::new("kwok", kwok, &logs).args(flags::kwok(layout)),
            )?);
            create_fake_node(&client).await?;
            let nodes: Api<Node> = Api::all(client.clone());
            wait_until(
                processes,
                "kwok",
                "the fake Node to become Ready",
                self.startup_timeout,
                || async {
                    let node = nodes.get(NODE_NAME).await.map_err(|e| e.to_string())?;
                    let ready = node
                        .status
                        .and_then(|s| s.conditions)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True");
                    if ready {
                        Ok(())
                    } else {
                        Err("Ready is not True".to_owned())
                    }
                },
            )
            .await?;
            let service_accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
            wait_until(
                processes,
                "kube-controller-manager",
                "the default ServiceAccount to be created",
                self.startup_timeout,
                || async {
                    service_accounts
                        .get("default")
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                },
            )
            .await?;
            lap("controllers, scheduler, kwok Node Ready");
        }
        Ok((server_url, pki))
    }

    async fn start_etcd(
        &self,
        layout: &Layout,
        bin: &Path,
        processes: &mut Vec<Supervised>,
    ) -> Result<u16, ControlPlaneError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let [client_port, peer_port] = free_loopback_ports()?;
            let spec = Spec::new("etcd", bin, &layout.logs()).args(flags::etcd(
                layout,
                client_port,
                peer_port,
            ));
            processes.push(Supervised::start(spec)?);
            let result = wait_until(
                processes,
                "etcd",
                "etcd to report /health",
                self.startup_timeout,
                || etcd_healthy(client_port),
            )
            .await;
            match result {
                Ok(()) => return Ok(client_port),
                Err(e) if e.lost_port_race() && attempt < PORT_ATTEMPTS => {
                    if let Some(mut p) = processes.pop() {
                        p.stop(Duration::ZERO);
                    }
                    let _ = std::fs::remove_dir_all(layout.etcd_data());
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn start_apiserver(
        &self,
        layout: &Layout,
        bin: &Path,
        etcd_port: u16,
        pki: &Pki,
        processes: &mut Vec<Supervised>,
    ) -> Result<String, ControlPlaneError> {
        let with_controllers = self.tier == Tier::Full;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let [port] = free_loopback_ports()?;
            let server_url = format!("https://{}:{port}", flags::LOOPBACK);
            let kubeconfig = kubeconfig::render(
                CONTEXT,
                &server_url,
                &pki.ca.cert_pem,
                &Credential::ClientCertificate {
                    cert_pem: pki.admin.cert_pem.clone(),
                    key_pem: pki.admin.key_pem.clone(),
                },
            )
            .map_err(ControlPlaneError::Kubeconfig)?;
            write_file(&layout.kubeconfig(), &kubeconfig, true)?;
            let client = client_from_kubeconfig_file(&layout.kubeconfig(), &server_url).await?;
            let spec = Spec::new("kube-apiserver", bin, &layout.logs()).args(flags::apiserver(
                layout,
                port,
                etcd_port,
                with_controllers,
            ));
            processes.push(Supervised::start(spec)?);
            let result = wait_until(
                processes,
                "kube-apiserver",
                "kube-apiserver to report /readyz",
                self.startup_timeout,
                || async {
                    let request = http::Request::get("/readyz")
                        .body(Vec::new())
                        .map_err(|e| e.to_string())?;
                    client
                        .request_text(request)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                },
            )
            .await;
            match result {
                Ok(()) => return Ok(server_url),
                Err(e) if e.lost_port_race() && attempt < PORT_ATTEMPTS => {
                    if let Some(mut p) = processes.pop() {
                        p.stop(Duration::ZERO);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

struct Binaries {
    etcd: PathBuf,
    apiserver: PathBuf,
    full: Option<[PathBuf; 3]>,
}

/// kwok's configuration: none of our own, so kwok uses its built-in fast Node and Pod stages
/// (Nodes become Ready, scheduled Pods become Running and Ready at once). Passing this file keeps
/// kwok from reading `~/.kwok/kwok.yaml`.
const KWOK_CONFIG: &str =
    "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions: {}\n";

/// A running control plane. Dropping it kills every component and removes its scratch directory;
/// [`ControlPlane::stop`] does the same gracefully.
pub struct ControlPlane {
    // Declared before `work` so the processes are gone before their directory is removed.
    processes: Vec<Supervised>,
    timings: Vec<(&'static str, Duration)>,
    work: WorkDir,
    layout: Layout,
    kubeconfig: PathBuf,
    server_url: String,
    pki: Pki,
    tier: Tier,
    /// Components started again by [`ControlPlane::restart_apiserver`].
    restarted: std::sync::Mutex<Vec<Supervised>>,
}

/// A line on the test's standard error (the harness has no logger of its own).
fn tracing_free_note(note: &str) {
    eprintln!("olm-e2e: {note}");
}

/// One running component, for diagnostics and tests.
#[derive(Clone, Debug)]
pub struct Component {
    pub name: String,
    pub pid: u32,
    pub log: PathBuf,
}

impl ControlPlane {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Starts etcd and kube-apiserver with the repository's CRDs.
    pub async fn start() -> Result<ControlPlane, ControlPlaneError> {
        Builder::default().start().await
    }

    /// A kubeconfig for a `system:masters` user (cluster-admin), with inlined credentials.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:PORT`.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// The CA (PEM) that signed the API server's certificate and that the API server trusts for
    /// client certificates.
    pub fn ca_pem(&self) -> &str {
        &self.pki.ca.cert_pem
    }

    /// The admin client certificate and key (PEM): user `admin`, group `system:masters`.
    pub fn admin_cert_pem(&self) -> (&str, &str) {
        (&self.pki.admin.cert_pem, &self.pki.admin.key_pem)
    }

    /// The service-account token signing key (PEM), for components that sign tokens.
    pub fn service_account_key_pem(&self) -> &str {
        &self.pki.service_account_key_pem
    }

    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// The scratch directory (certificates, kubeconfig, etcd data, logs).
    pub fn work_dir(&self) -> &Path {
        self.work.path()
    }

    /// Where the components' logs are (`NAME.log`).
    /// The API server's audit log: one JSON object per mutating request
    /// ([`flags::AUDIT_POLICY`]).
    pub fn audit_log_path(&self) -> PathBuf {
        self.layout.audit_log()
    }

    pub fn log_dir(&self) -> PathBuf {
        self.layout.logs()
    }

    /// The fake Node's name in [`Tier::Full`].
    pub fn node_name(&self) -> Option<&str> {
        (self.tier == Tier::Full).then_some(NODE_NAME)
    }

    /// How long each start-up phase took, in order.
    pub fn startup_timings(&self) -> &[(&'static str, Duration)] {
        &self.timings
    }

    /// [`Self::startup_timings`] as one line, e.g. `etcd /health 0.4s, kube-apiserver /readyz 2.1s`.
    pub fn startup_summary(&self) -> String {
        self.timings
            .iter()
            .map(|(name, d)| format!("{name} {:.1}s", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The first component found to have exited since start-up (reaped, with the last
    /// `tail_lines` lines of its log), if any. A control plane missing a component is broken: the
    /// caller decides whether to stop it.
    pub fn exited_component(&mut self, tail_lines: usize) -> Option<Exited> {
        self.processes.iter_mut().find_map(|p| p.exited(tail_lines))
    }

    /// Keeps the scratch directory (certificates, kubeconfig, logs) when the control plane is
    /// stopped or dropped, for a look at what went wrong.
    pub fn keep_work_dir(&mut self) {
        self.work.keep();
    }

    /// The running components in start order.
    pub fn components(&self) -> Vec<Component> {
        self.processes
            .iter()
            .filter_map(|p| {
                Some(Component {
                    name: p.name().to_owned(),
                    pid: p.pid()?,
                    log: p.log_path().to_path_buf(),
                })
            })
            .collect()
    }

    /// Kills kube-apiserver (SIGKILL) and starts it again with the same command line, port and
    /// etcd; returns once it reports `/readyz` again. What clients see is an API server
    /// restart: connections drop, watches end and must be re-established.
    pub async fn restart_apiserver(&self) -> Result<(), ControlPlaneError> {
        let restarted = |what: String| ControlPlaneError::Restart(what);
        let pid = {
            let again = self.restarted.lock().unwrap_or_else(|p| p.into_inner());
            again
                .iter()
                .rev()
                .chain(self.processes.iter())
                .find(|p| p.name() == "kube-apiserver")
                .and_then(|p| p.pid())
                .ok_or_else(|| restarted("no kube-apiserver process".into()))?
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map_err(|e| restarted(format!("read the command line of {pid}: {e}")))?;
        let mut argv = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned());
        let program = argv
            .next()
            .ok_or_else(|| restarted("an empty command line".into()))?;
        let args: Vec<String> = argv.collect();
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32)
                .ok_or_else(|| restarted(format!("pid {pid}")))?,
            rustix::process::Signal::KILL,
        )
        .map_err(|e| restarted(format!("kill {pid}: {e}")))?;
        // The port is free once the old process is gone: nothing accepts connections on it.
        let port = args
            .iter()
            .find_map(|a| a.strip_prefix("--secure-port="))
            .and_then(|p| p.parse::<u16>().ok())
            .ok_or_else(|| restarted("no --secure-port in its command line".into()))?;
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let freed = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
            if Instant::now() >= freed {
                return Err(restarted(format!("port {port} still accepts connections")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let spec = Spec::new("kube-apiserver", program, &self.layout.logs()).args(args);
        // A listener socket of the killed process may linger a moment: start again while the
        // new process fails to bind.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut process = Supervised::start(spec.clone())?;
            tokio::time::sleep(Duration::from_millis(500)).await;
            match process.try_exit_status() {
                Some(status) if attempts < 20 => {
                    tracing_free_note(&format!(
                        "kube-apiserver exited at restart ({status}); again"
                    ));
                }
                Some(status) => {
                    return Err(restarted(format!(
                        "kube-apiserver exited at restart: {status}"
                    )));
                }
                None => {
                    self.restarted
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(process);
                    break;
                }
            }
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(client) = self.try_client().await {
                let request = http::Request::get("/readyz")
                    .body(Vec::new())
                    .map_err(|e| restarted(e.to_string()))?;
                if client.request_text(request).await.is_ok() {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(restarted(
                    "kube-apiserver did not report /readyz again".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A new admin client. Each call builds its own connection pool, so clients made in one test's
    /// runtime are never reused by another.
    pub async fn try_client(&self) -> Result<kube::Client, ControlPlaneError> {
        client_from_kubeconfig_file(&self.kubeconfig, &self.server_url).await
    }

    /// Like [`ControlPlane::try_client`].
    ///
    /// # Panics
    /// If the client cannot be built from the kubeconfig this control plane wrote, which means the
    /// environment itself is broken.
    pub async fn client(&self) -> kube::Client {
        match self.try_client().await {
            Ok(c) => c,
            Err(e) => panic!("the test control plane's own kubeconfig is unusable: {e}"),
        }
    }

    /// Kubeconfig text for another identity against this API server.
    pub fn kubeconfig_for(&self, credential: &Credential) -> Result<String, ControlPlaneError> {
        kubeconfig::render(CONTEXT, &self.server_url, &self.pki.ca.cert_pem, credential)
            .map_err(ControlPlaneError::Kubeconfig)
    }

    /// A kubeconfig file for a client-certificate user `user` in `group` (e.g. `system:masters`
    /// for a cluster admin the audit log names apart from `admin`).
    pub fn write_user_kubeconfig(
        &self,
        user: &str,
        group: Option<&str>,
    ) -> Result<PathBuf, ControlPlaneError> {
        let pair = self.pki.client_certificate(user, group)?;
        self.write_kubeconfig(
            &format!("kubeconfig-{user}"),
            &Credential::ClientCertificate {
                cert_pem: pair.cert_pem,
                key_pem: pair.key_pem,
            },
        )
    }

    /// Writes [`ControlPlane::kubeconfig_for`] to `FILE_NAME` in the scratch directory.
    pub fn write_kubeconfig(
        &self,
        file_name: &str,
        credential: &Credential,
    ) -> Result<PathBuf, ControlPlaneError> {
        let path = self.work.path().join(file_name);
        write_file(&path, &self.kubeconfig_for(credential)?, true)?;
        Ok(path)
    }

    /// A token for ServiceAccount `namespace/name` from the TokenRequest API (default audience,
    /// one hour).
    pub async fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<String, ControlPlaneError> {
        let client = self.try_client().await?;
        let api: Api<ServiceAccount> = Api::namespaced(client, namespace);
        let request: TokenRequest = serde_json::from_value(json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": { "audiences": [], "expirationSeconds": 3600 }
        }))
        .map_err(|e| ControlPlaneError::Api {
            action: "build a TokenRequest".into(),
            source: kube::Error::SerdeError(e),
        })?;
        let response = api
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .map_err(|source| ControlPlaneError::Api {
                action: format!("request a token for ServiceAccount {namespace}/{name}"),
                source,
            })?;
        Ok(response.status.map(|s| s.token).unwrap_or_default())
    }

    /// A client authenticated as ServiceAccount `namespace/name` (via [`Self::service_account_token`]).
    pub async fn service_account_client(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<kube::Client, ControlPlaneError> {
        let token = self.service_account_token(namespace, name).await?;
        let text = self.kubeconfig_for(&Credential::Token(token))?;
        client_from_kubeconfig_text(&text, &self.server_url).await
    }

    /// Stops every component (newest first: SIGTERM, then SIGKILL after a grace period) and
    /// removes the scratch directory.
    pub async fn stop(mut self) {
        let processes = std::mem::take(&mut self.processes);
        let stopped = tokio::task::spawn_blocking(move || stop_all(processes)).await;
        if let Err(e) = stopped {
            // The blocking pool is gone (runtime shutting down); Drop still kills the rest.
            eprintln!("olm-e2e: failed to stop the control plane cleanly: {e}");
        }
    }
}

fn stop_all(mut processes: Vec<Supervised>) {
    while let Some(mut p) = processes.pop() {
        p.stop(STOP_GRACE);
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        while let Some(mut p) = self.processes.pop() {
            p.stop(Duration::ZERO);
        }
    }
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("server_url", &self.server_url)
            .field("work_dir", &self.work.path())
            .field("tier", &self.tier)
            .field("components", &self.components())
            .finish()
    }
}

fn write_file(path: &Path, contents: &str, secret: bool) -> Result<(), ControlPlaneError> {
    let err = |source| ControlPlaneError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if secret { 0o600 } else { 0o644 })
        .open(path)
        .map_err(err)?;
    file.write_all(contents.as_bytes()).map_err(err)
}

/// `N` distinct free ports on 127.0.0.1 (see [`crate::ports`]); released for the component to
/// bind, a race the callers handle by retrying.
fn free_loopback_ports<const N: usize>() -> Result<[u16; N], ControlPlaneError> {
    crate::ports::free_ports().map_err(ControlPlaneError::Port)
}

/// Polls `check` until it succeeds. Fails at once if any of `processes` exits, and after `timeout`
/// with the last check's error and the log tail of the component named `owner`.
async fn wait_until<F, Fut>(
    processes: &mut [Supervised],
    owner: &str,
    waiting_for: &str,
    timeout: Duration,
    mut check: F,
) -> Result<(), ControlPlaneError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let start = Instant::now();
    loop {
        for p in processes.iter_mut() {
            if let Some(status) = p.try_exit_status() {
                return Err(ControlPlaneError::Exited {
                    name: p.name().to_owned(),
                    status,
                    waiting_for: waiting_for.to_owned(),
                    log: p.log_path().to_path_buf(),
                    tail: p.log_tail(TAIL_LINES),
                });
            }
        }
        let last_check = match tokio::time::timeout(PROBE_TIMEOUT, check()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e,
            Err(_) => format!("no answer within {PROBE_TIMEOUT:?}"),
        };
        if start.elapsed() >= timeout {
            let owner = processes.iter().find(|p| p.name() == owner);
            return Err(ControlPlaneError::NotReady {
                waiting_for: waiting_for.to_owned(),
                waited: timeout,
                last_check,
                log: owner
                    .map(|p| p.log_path().to_path_buf())
                    .unwrap_or_default(),
                tail: owner.map(|p| p.log_tail(TAIL_LINES)).unwrap_or_default(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// etcd's `/health` over plain HTTP on loopback.
async fn etcd_healthy(port: u16) -> Result<(), String> {
    let mut stream = tokio::net::TcpStream::connect((flags::LOOPBACK, port))
        .await
        .map_err(|e| e.to_string())?;
    let request = format!(
        "GET /health HTTP/1.1\r\nHost: {}:{port}\r\nConnection: close\r\n\r\n",
        flags::LOOPBACK
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&response);
    if text.starts_with("HTTP/1.1 200") && text.contains(r#""health":"true""#) {
        Ok(())
    } else {
        Err(text.lines().next().unwrap_or("empty response").to_owned())
    }
}

async fn client_from_kubeconfig_file(
    path: &Path,
    server: &str,
) -> Result<kube::Client, ControlPlaneError> {
    let text = std::fs::read_to_string(path).map_err(|e| ControlPlaneError::Client {
        server: server.to_owned(),
        source: Box::new(e),
    })?;
    client_from_kubeconfig_text(&text, server).await
}

async fn client_from_kubeconfig_text(
    text: &str,
    server: &str,
) -> Result<kube::Client, ControlPlaneError> {
    crate::install_crypto_provider();
    let err = |source: Box<dyn std::error::Error + Send + Sync>| ControlPlaneError::Client {
        server: server.to_owned(),
        source,
    };
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| err(Box::new(e)))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| err(Box::new(e)))?;
    kube::Client::try_from(config).map_err(|e| err(Box::new(e)))
}

async fn create_fake_node(client: &kube::Client) -> Result<(), ControlPlaneError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let (key, value) = flags::KWOK_NODE_SELECTOR
        .split_once('=')
        .unwrap_or((flags::KWOK_NODE_SELECTOR, ""));
    let resources = json!({ "cpu": "32", "memory": "256Gi", "pods": "110" });
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "annotations": { key: value, "node.alpha.kubernetes.io/ttl": "0" },
            "labels": {
                "kubernetes.io/hostname": NODE_NAME,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "fake",
                "kubeProxyVersion": "fake",
            },
        },
    });
    nodes
        .patch(
            NODE_NAME,
            &PatchParams::apply(crds::FIELD_MANAGER).force(),
            &Patch::Apply(&node),
        )
        .await
        .map_err(|source| ControlPlaneError::Api {
            action: format!("create the fake Node {NODE_NAME}"),
            source,
        })?;
    Ok(())
}
