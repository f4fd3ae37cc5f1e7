//! The `real` tier: a control plane and one real Node (containerd, runc, kubelet, kube-proxy,
//! CoreDNS, the bridge CNI) inside a network namespace of its own, so the project's images run as
//! real Pods.
//!
//! Input: the control-plane binaries ([`crate::assets`]), the node's binaries from
//! `OLM_NODE_ASSETS` (`hack/build-node.sh`: kubelet, kube-proxy, crictl, coredns, pause), Debian's
//! containerd, runc and CNI plugins, the registry binary (`OLM_REGISTRY_BIN`), root and cgroup v1.
//! Output: running processes, a kubeconfig, a registry at [`config::registry_host`]. Network:
//! only the namespace it creates; nothing in it is routed anywhere else.
//!
//! Lifecycle: [`RealCluster::create`] makes the scratch directory, the network namespace (a veth
//! pair inside it carries [`config::NODE_IP`]) and the kubelet's root cgroup in every v1
//! hierarchy; [`RealCluster::run`] runs a test body on a thread and tokio runtime whose sockets
//! live in that namespace (so `127.0.0.1`, the node address and Service ClusterIPs mean what they
//! mean on the node), where [`RealCluster::start`] starts the components in order; and
//! [`RealCluster::teardown`] removes everything (Pods through the CRI, processes, mounts, the
//! namespace, the cgroups, the directory) and returns what it could not remove. Teardown must be
//! called: mounts, cgroups and the namespace do not die with the test process. The next
//! [`RealCluster::create`] removes the remains of instances whose process is gone.

pub mod config;
pub mod teardown;

use std::collections::BTreeSet;
use std::fs::File;
use std::future::Future;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures::FutureExt;
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use olm_image::Platform;
use olm_image::push::{Pusher, PusherConfig};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

use crate::assets::Assets;
use crate::control_plane::certs::Pki;
use crate::control_plane::flags::{self, Layout};
use crate::control_plane::kubeconfig::{self, Credential};
use crate::process::{Spec, Supervised};
use config::{NODE_IP, Paths};

/// Environment variable naming the directory with kubelet, kube-proxy, crictl, coredns, pause and webhook
/// (written to tools.env by `hack/ensure-tools.sh`).
pub const NODE_ASSETS_ENV: &str = "OLM_NODE_ASSETS";
/// Prefix of every name the tier gives: scratch directory, cgroup, namespace file.
pub const PREFIX: &str = "olm-real-";
/// The kubeconfig context.
pub const CONTEXT: &str = "olm-real";
/// cgroup v1 hierarchies the kubelet's root cgroup is created in.
pub const CGROUP_CONTROLLERS: &[&str] = &[
    "cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd",
];
/// Upper bound of each start-up wait (only keeps a broken machine from hanging the run).
const STARTUP_BOUND: Duration = Duration::from_secs(180);
const STOP_GRACE: Duration = Duration::from_secs(5);
const TAIL_LINES: usize = 30;

/// Why the tier cannot run, or failed to set up.
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// This machine lacks something the tier needs (the test skips, which fails under
    /// `OLM_REQUIRE_ALL`).
    #[error("the real tier cannot run here: {0}")]
    Unavailable(String),
    #[error("the real tier's set-up failed: {0}")]
    Setup(String),
}

fn setup<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> RealError + '_ {
    move |e| RealError::Setup(format!("{what}: {e}"))
}

/// Every binary the tier runs.
#[derive(Clone, Debug)]
pub struct Tools {
    pub etcd: PathBuf,
    pub apiserver: PathBuf,
    pub controller_manager: PathBuf,
    pub scheduler: PathBuf,
    pub kubelet: PathBuf,
    pub kube_proxy: PathBuf,
    pub crictl: PathBuf,
    pub coredns: PathBuf,
    pub pause: PathBuf,
    /// The admission webhook server a test bundle's Pod runs.
    pub webhook: PathBuf,
    /// cert-manager's controller and cainjector, and its CRDs (one YAML stream).
    pub cert_manager_controller: PathBuf,
    pub cert_manager_cainjector: PathBuf,
    pub cert_manager_crds: PathBuf,
    pub registry: PathBuf,
    pub containerd: PathBuf,
    pub runc: PathBuf,
    pub nsenter: PathBuf,
    pub unshare: PathBuf,
    pub ip: PathBuf,
    pub cni_bin_dir: PathBuf,
}

/// `name` in [`config::SYSTEM_PATH`]'s directories.
pub fn system_binary(name: &str) -> Option<PathBuf> {
    config::SYSTEM_PATH
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| crate::kubectl::is_executable(p))
}

impl Tools {
    /// Finds every binary, or says what is missing and how to get it.
    pub fn find() -> Result<Tools, RealError> {
        let mut missing = Vec::new();
        let mut system = |name: &str| {
            system_binary(name).unwrap_or_else(|| {
                missing.push(format!("{name} (Debian package; .ci/run installs it)"));
                PathBuf::new()
            })
        };
        let containerd = system("containerd");
        let _shim = system("containerd-shim-runc-v2");
        let runc = system("runc");
        let nsenter = system("nsenter");
        let unshare = system("unshare");
        let ip = system("ip");
        let _iptables = system("iptables");
        let _conntrack = system("conntrack");
        let cni_bin_dir = ["/usr/lib/cni", "/opt/cni/bin"]
            .iter()
            .map(PathBuf::from)
            .find(|d| {
                ["bridge", "host-local", "loopback"]
                    .iter()
                    .all(|p| d.join(p).is_file())
            });
        if cni_bin_dir.is_none() {
            missing.push("the CNI plugins bridge, host-local and loopback (Debian package containernetworking-plugins)".into());
        }
        let node = std::env::var_os(NODE_ASSETS_ENV)
            .filter(|v| !v.is_empty())
            .map(Assets::in_dir);
        let mut node_binary = |name: &str| match &node {
            Some(a) => a.binary(name).unwrap_or_else(|e| {
                missing.push(e.to_string());
                PathBuf::new()
            }),
            None => {
                missing.push(format!(
                    "{name}: {NODE_ASSETS_ENV} is not set (hack/ensure-tools.sh builds the node's binaries with hack/build-node.sh)"
                ));
                PathBuf::new()
            }
        };
        let kubelet = node_binary("kubelet");
        let kube_proxy = node_binary("kube-proxy");
        let crictl = node_binary("crictl");
        let coredns = node_binary("coredns");
        let pause = node_binary("pause");
        let webhook = node_binary("webhook");
        let cert_manager_controller = node_binary("cert-manager-controller");
        let cert_manager_cainjector = node_binary("cert-manager-cainjector");
        let cert_manager_crds = cert_manager_controller.with_file_name("cert-manager-crds.yaml");
        if !cert_manager_controller.as_os_str().is_empty() && !cert_manager_crds.is_file() {
            missing.push(format!(
                "{}: not built (hack/build-node.sh writes it)",
                cert_manager_crds.display()
            ));
        }
        let plane = Assets::control_plane().map_err(|e| RealError::Unavailable(e.to_string()))?;
        let mut plane_binary = |name: &str| {
            plane.binary(name).unwrap_or_else(|e| {
                missing.push(e.to_string());
                PathBuf::new()
            })
        };
        let etcd = plane_binary("etcd");
        let apiserver = plane_binary("kube-apiserver");
        let controller_manager = plane_binary("kube-controller-manager");
        let scheduler = plane_binary("kube-scheduler");
        let registry = std::env::var_os(crate::registry::REGISTRY_BIN_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                missing.push(format!(
                    "docker-registry: {} is not set",
                    crate::registry::REGISTRY_BIN_ENV
                ));
                PathBuf::new()
            });
        if !missing.is_empty() {
            return Err(RealError::Unavailable(format!(
                "missing: {}",
                missing.join("; ")
            )));
        }
        Ok(Tools {
            etcd,
            apiserver,
            controller_manager,
            scheduler,
            kubelet,
            kube_proxy,
            crictl,
            coredns,
            pause,
            webhook,
            cert_manager_controller,
            cert_manager_cainjector,
            cert_manager_crds,
            registry,
            containerd,
            runc,
            nsenter,
            unshare,
            ip,
            cni_bin_dir: cni_bin_dir.unwrap_or_default(),
        })
    }
}

/// What the machine must offer besides binaries: root, cgroup v1 hierarchies, bridge netfilter,
/// overlayfs.
pub fn check_machine() -> Result<(), RealError> {
    if !rustix::process::geteuid().is_root() {
        return Err(RealError::Unavailable(
            "needs root (network namespace, mounts, cgroups; CI runs tests as root)".into(),
        ));
    }
    for controller in CGROUP_CONTROLLERS {
        let dir = Path::new("/sys/fs/cgroup").join(controller);
        if !dir.join("cgroup.procs").is_file() {
            return Err(RealError::Unavailable(format!(
                "needs the cgroup v1 hierarchy {} (this tier drives the kubelet with cgroupfs on cgroup v1)",
                dir.display()
            )));
        }
    }
    if !Path::new("/proc/sys/net/bridge/bridge-nf-call-iptables").exists() {
        return Err(RealError::Unavailable(
            "needs the br_netfilter kernel module (Service traffic between Pods on one bridge)"
                .into(),
        ));
    }
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !filesystems.lines().any(|l| l.ends_with("\toverlay")) {
        return Err(RealError::Unavailable(
            "needs overlayfs (containerd's snapshotter)".into(),
        ));
    }
    Ok(())
}

/// One instance of the tier.
pub struct RealCluster {
    id: String,
    paths: Paths,
    tools: Tools,
    netns_file: PathBuf,
    netns_inode: u64,
    cgroups: Vec<PathBuf>,
    /// `/run/netns` entries before the start (containerd adds one per Pod sandbox there).
    netns_dir_before: Option<BTreeSet<String>>,
    created_dirs: Vec<PathBuf>,
    processes: Mutex<Vec<Supervised>>,
    pki: OnceLock<Pki>,
}

impl std::fmt::Debug for RealCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealCluster")
            .field("id", &self.id)
            .field("dir", &self.paths.root())
            .finish_non_exhaustive()
    }
}

/// Where the tier's scratch directories live: the system temporary directory (overlayfs needs a
/// real file system under containerd's snapshots, which rules out some tmpfs set-ups).
pub fn base_dir() -> PathBuf {
    std::env::var_os("OLM_REAL_TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

/// The directory where containerd 1.6 keeps Pod sandboxes' network namespaces (not configurable).
pub const POD_NETNS_DIR: &str = "/run/netns";

impl RealCluster {
    /// Checks the machine and the binaries, removes the remains of dead instances, and makes this
    /// instance's directory, network namespace and cgroups. Starts nothing.
    pub fn create() -> Result<RealCluster, RealError> {
        // Before any thread enters the tier's namespace: the shared spawner must live outside it.
        crate::process::start_spawner();
        check_machine()?;
        let tools = Tools::find()?;
        for removed in teardown::remove_stale(&base_dir()) {
            eprintln!("olm-e2e real tier: removed the remains of a dead instance: {removed}");
        }
        let suffix: u32 = rand::random();
        let id = format!("{PREFIX}{}-{suffix:08x}", std::process::id());
        let root = base_dir().join(&id);
        let paths = Paths::new(&root);
        let netns_dir_before = std::fs::read_dir(POD_NETNS_DIR).ok().map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        });
        let mut cluster = RealCluster {
            netns_file: root.join("netns"),
            id,
            paths,
            tools,
            netns_inode: 0,
            cgroups: Vec::new(),
            netns_dir_before,
            created_dirs: teardown::missing_fixed_paths(),
            processes: Mutex::new(Vec::new()),
            pki: OnceLock::new(),
        };
        if let Err(e) = cluster.create_in() {
            let left = cluster.teardown();
            return Err(RealError::Setup(format!(
                "{e}{}",
                if left.is_empty() {
                    String::new()
                } else {
                    format!(" (and teardown left: {left:?})")
                }
            )));
        }
        Ok(cluster)
    }

    fn create_in(&mut self) -> Result<(), RealError> {
        let paths = self.paths.clone();
        for dir in [
            paths.root().to_path_buf(),
            paths.logs(),
            paths.plane().join("pki"),
            paths.containerd_root(),
            paths.containerd_state(),
            paths.containerd_hosts_dir().join(config::registry_host()),
            paths.cni_conf_dir(),
            paths.cni_ipam_dir(),
            paths.kubelet_root(),
            paths.pod_logs(),
            paths.registry_storage(),
            paths.runc_root(),
        ] {
            std::fs::create_dir_all(&dir).map_err(setup(&dir.display().to_string()))?;
        }
        // The namespace, pinned by a bind mount on a file of the scratch directory
        // (util-linux's `unshare --net=FILE`).
        std::fs::write(&self.netns_file, b"").map_err(setup("the namespace file"))?;
        let output = Command::new(&self.tools.unshare)
            .arg(format!("--net={}", self.netns_file.display()))
            .arg("true")
            .output()
            .map_err(setup("run unshare"))?;
        if !output.status.success() {
            return Err(RealError::Setup(format!(
                "unshare --net={}: {}",
                self.netns_file.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        self.netns_inode = teardown::inode(&self.netns_file).unwrap_or(0);
        let node = format!("{NODE_IP}/{}", config::NODE_PREFIX);
        for args in [
            vec!["link", "set", "lo", "up"],
            vec![
                "link", "add", "eth0", "type", "veth", "peer", "name", "eth1",
            ],
            vec!["addr", "add", &node, "dev", "eth0"],
            vec!["link", "set", "eth0", "up"],
            vec!["link", "set", "eth1", "up"],
            vec!["route", "add", "default", "dev", "eth0"],
        ] {
            self.in_netns_command(&self.tools.ip, &args)?;
        }
        let netns = File::open(&self.netns_file).map_err(setup("open the namespace"))?;
        std::thread::scope(|s| {
            s.spawn(|| -> Result<(), RealError> {
                enter(&netns)?;
                for (key, value) in [
                    ("net/ipv4/ip_forward", "1"),
                    ("net/bridge/bridge-nf-call-iptables", "1"),
                    ("net/bridge/bridge-nf-call-ip6tables", "1"),
                ] {
                    let path = Path::new("/proc/sys").join(key);
                    std::fs::write(&path, value).map_err(setup(&path.display().to_string()))?;
                }
                Ok(())
            })
            .join()
            .map_err(|_| RealError::Setup("the sysctl thread panicked".into()))?
        })?;
        // The kubelet's root cgroup in every hierarchy; cpuset needs its CPUs and memory nodes.
        for controller in CGROUP_CONTROLLERS {
            let dir = Path::new("/sys/fs/cgroup").join(controller).join(&self.id);
            std::fs::create_dir(&dir).map_err(setup(&dir.display().to_string()))?;
            self.cgroups.push(dir.clone());
            if *controller == "cpuset" {
                for file in ["cpuset.cpus", "cpuset.mems"] {
                    let parent = Path::new("/sys/fs/cgroup/cpuset").join(file);
                    let value = std::fs::read_to_string(&parent)
                        .map_err(setup(&parent.display().to_string()))?;
                    std::fs::write(dir.join(file), value.trim())
                        .map_err(setup(&dir.join(file).display().to_string()))?;
                }
            }
        }
        // Configuration files.
        let layout = Layout::new(&paths.plane());
        let files = [
            (
                paths.containerd_config(),
                config::containerd(&paths, &self.tools.cni_bin_dir, &self.tools.runc),
            ),
            (
                paths
                    .containerd_hosts_dir()
                    .join(config::registry_host())
                    .join("hosts.toml"),
                config::registry_hosts_toml(),
            ),
            (
                paths.cni_conf_dir().join("10-olm-real.conflist"),
                config::cni_conflist(&paths),
            ),
            (
                paths.kubelet_config(),
                config::kubelet(&paths, &self.id, &layout.ca_cert()),
            ),
            (paths.resolv_conf(), String::new()),
            (
                paths.kube_proxy_config(),
                config::kube_proxy(&layout.kubeconfig()),
            ),
            (
                paths.corefile(),
                config::corefile(&layout.kubeconfig(), CONTEXT),
            ),
            (paths.registry_config(), config::registry(&paths)),
            (layout.audit_policy(), flags::AUDIT_POLICY.to_string()),
        ];
        for (path, text) in files {
            std::fs::write(&path, text).map_err(setup(&path.display().to_string()))?;
        }
        Ok(())
    }

    fn in_netns_command(&self, program: &Path, args: &[&str]) -> Result<(), RealError> {
        let output = Command::new(&self.tools.nsenter)
            .arg(format!("--net={}", self.netns_file.display()))
            .arg("--")
            .arg(program)
            .args(args)
            .output()
            .map_err(setup(&format!("run {}", program.display())))?;
        if !output.status.success() {
            return Err(RealError::Setup(format!(
                "{} {}: {}",
                program.display(),
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(())
    }

    /// The instance's name (scratch directory, cgroup).
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// The file pinning the network namespace (`nsenter --net=FILE`).
    pub fn netns_file(&self) -> &Path {
        &self.netns_file
    }

    /// The admin kubeconfig (server [`config::server_url`]).
    pub fn kubeconfig_path(&self) -> PathBuf {
        Layout::new(&self.paths.plane()).kubeconfig()
    }

    pub fn log_dir(&self) -> PathBuf {
        self.paths.logs()
    }

    /// The last lines of component `name`'s log.
    pub fn log_tail(&self, name: &str, lines: usize) -> String {
        crate::process::log_tail(&self.paths.logs().join(format!("{name}.log")), lines)
    }

    /// Copies the components' logs (and containerd's Pod logs) out of the scratch directory,
    /// which teardown removes, into `base_dir()/olm-e2e-real-logs-ID`; returns that directory.
    pub fn keep_logs(&self) -> PathBuf {
        let out = base_dir().join(format!("olm-e2e-real-logs-{}", self.id));
        for (from, to) in [
            (self.paths.logs(), out.clone()),
            (self.paths.pod_logs(), out.join("pods")),
        ] {
            copy_tree(&from, &to);
        }
        out
    }

    /// The control plane's PKI (after [`RealCluster::start`]).
    pub fn pki(&self) -> &Pki {
        self.pki.get().expect("the real tier has not been started")
    }

    /// A pusher for the tier's registry (plain HTTP).
    pub fn pusher(&self) -> Pusher {
        Pusher::new(PusherConfig {
            insecure_registries: vec![config::registry_host()],
            auth: None,
            extra_ca_pem: None,
        })
        .expect("a pusher for the real tier's registry")
    }

    /// `registry_host/name`.
    pub fn image(&self, name: &str) -> String {
        format!("{}/{name}", config::registry_host())
    }

    /// Runs `body` on a thread and a tokio runtime (every worker and blocking thread too) inside
    /// the tier's network namespace: its sockets, and the processes it starts with
    /// `std::process::Command` or `tokio::process`, see what the node sees. A panic in `body`
    /// is returned, not propagated, so the caller can tear down first.
    pub fn run<T, F>(&self, body: F) -> std::thread::Result<T>
    where
        T: Send,
        F: AsyncFnOnce(&RealCluster) -> T + Send,
    {
        let netns = Arc::new(File::open(&self.netns_file).expect("open the tier's namespace file"));
        std::thread::scope(|s| {
            s.spawn(|| {
                enter(&netns).expect("enter the tier's network namespace");
                let for_workers = netns.clone();
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .on_thread_start(move || {
                        enter(&for_workers).expect("enter the tier's network namespace");
                    })
                    .build()
                    .expect("a tokio runtime for the real tier");
                let result =
                    runtime.block_on(std::panic::AssertUnwindSafe(body(self)).catch_unwind());
                runtime.shutdown_timeout(Duration::from_secs(5));
                result
            })
            .join()
            .and_then(|r| r)
        })
    }

    fn spawn(&self, name: &str, program: &Path, args: Vec<String>) -> Result<(), RealError> {
        self.spawn_with_env(name, program, args, &[])
    }

    fn spawn_with_env(
        &self,
        name: &str,
        program: &Path,
        args: Vec<String>,
        env: &[(&str, &str)],
    ) -> Result<(), RealError> {
        let mut spec = Spec::new(name, &self.tools.nsenter, &self.paths.logs())
            .arg(format!("--net={}", self.netns_file.display()))
            .arg("--")
            .arg(program)
            .args(args)
            .env("PATH", config::SYSTEM_PATH);
        for (key, value) in env {
            spec = spec.env(key, value);
        }
        let process = Supervised::start(spec).map_err(setup(&format!("start {name}")))?;
        self.processes.lock().expect("process list").push(process);
        Ok(())
    }

    /// Polls `check` until it returns `Ok`; fails when component `name` exits or after the bound,
    /// with the tail of its log.
    async fn wait<F, Fut>(&self, name: &str, what: &str, mut check: F) -> Result<(), RealError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(), String>>,
    {
        let start = Instant::now();
        loop {
            let last = match check().await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            let exited = self
                .processes
                .lock()
                .expect("process list")
                .iter_mut()
                .find(|p| p.name() == name)
                .and_then(|p| p.exited(TAIL_LINES));
            if let Some(exited) = exited {
                return Err(RealError::Setup(format!("{exited} (waiting for {what})")));
            }
            if start.elapsed() > STARTUP_BOUND {
                return Err(RealError::Setup(format!(
                    "{what} did not happen within {STARTUP_BOUND:?} (last check: {last}); last lines of {name}'s log:\n{}",
                    self.log_tail(name, TAIL_LINES)
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts every component, in order, each waited for: etcd, kube-apiserver, the registry (and
    /// the sandbox image pushed to it), containerd, kube-controller-manager, kube-scheduler,
    /// kubelet (Node Ready), kube-proxy (the `kubernetes` Service reachable), CoreDNS. Must run
    /// inside [`RealCluster::run`].
    pub async fn start(&self) -> Result<Vec<(&'static str, Duration)>, RealError> {
        crate::install_crypto_provider();
        let mut timings = Vec::new();
        let mut phase = Instant::now();
        let mut lap = |name: &'static str| {
            timings.push((name, phase.elapsed()));
            phase = Instant::now();
        };
        let layout = Layout::new(&self.paths.plane());
        let pki = Pki::generate().map_err(setup("the PKI"))?;
        let serving = serving_certificate(&pki).map_err(RealError::Setup)?;
        let write = |path: PathBuf, text: &str| {
            std::fs::write(&path, text).map_err(setup(&path.display().to_string()))
        };
        write(layout.ca_cert(), &pki.ca.cert_pem)?;
        write(layout.serving_cert(), &serving.0)?;
        write(layout.serving_key(), &serving.1)?;
        write(layout.admin_cert(), &pki.admin.cert_pem)?;
        write(layout.admin_key(), &pki.admin.key_pem)?;
        write(layout.service_account_key(), &pki.service_account_key_pem)?;
        write(
            layout.service_account_pub(),
            &pki.service_account_public_pem,
        )?;
        let kubeconfig = kubeconfig::render(
            CONTEXT,
            &config::server_url(),
            &pki.ca.cert_pem,
            &Credential::ClientCertificate {
                cert_pem: pki.admin.cert_pem.clone(),
                key_pem: pki.admin.key_pem.clone(),
            },
        )
        .map_err(setup("the kubeconfig"))?;
        write(layout.kubeconfig(), &kubeconfig)?;
        let _ = self.pki.set(pki);
        lap("certificates");

        self.spawn("etcd", &self.tools.etcd, flags::etcd(&layout, 2379, 2380))?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .no_proxy()
            .build()
            .map_err(setup("an HTTP client"))?;
        self.wait("etcd", "etcd /health", || async {
            let response = http
                .get("http://127.0.0.1:2379/health")
                .send()
                .await
                .map_err(|e| e.to_string())?;
            response
                .status()
                .is_success()
                .then_some(())
                .ok_or_else(|| response.status().to_string())
        })
        .await?;
        lap("etcd /health");

        self.spawn(
            "kube-apiserver",
            &self.tools.apiserver,
            config::apiserver(
                flags::apiserver(&layout, config::APISERVER_PORT, 2379, true),
                &layout.admin_cert(),
                &layout.admin_key(),
            ),
        )?;
        let client = self.try_client().await?;
        self.wait("kube-apiserver", "kube-apiserver /readyz", || async {
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|e| e.to_string())?;
            client
                .request_text(request)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .await?;
        lap("kube-apiserver /readyz");

        self.spawn(
            "registry",
            &self.tools.registry,
            vec![
                "serve".into(),
                self.paths.registry_config().display().to_string(),
            ],
        )?;
        self.wait("registry", "the registry to answer", || async {
            http.get(format!("http://{}/v2/", config::registry_host()))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .await?;
        let pause = crate::release::image::ImageInput {
            name: "pause".into(),
            binary: self.tools.pause.clone(),
            version: "1".into(),
            revision: "0".repeat(40),
            source: "https://example.invalid/olm-rs".into(),
            ca_bundle: None,
            platform: Platform::host(),
            strip_debug: false,
        };
        let image = tokio::task::spawn_blocking(move || crate::release::image::build(&pause))
            .await
            .map_err(setup("building the sandbox image"))?
            .map_err(setup("building the sandbox image"))?;
        crate::release::image::push(
            &self.pusher(),
            &self.image(config::PAUSE_REPOSITORY),
            "v1",
            &image,
        )
        .await
        .map_err(setup("pushing the sandbox image"))?;
        lap("registry, sandbox image");

        self.spawn(
            "containerd",
            &self.tools.containerd,
            vec![
                "--config".into(),
                self.paths.containerd_config().display().to_string(),
            ],
        )?;
        self.wait("containerd", "containerd's CRI to answer", || async {
            let output = self.crictl(&["info"]).await.map_err(|e| e.to_string())?;
            output
                .status
                .success()
                .then_some(())
                .ok_or_else(|| String::from_utf8_lossy(&output.stderr).into_owned())
        })
        .await?;
        lap("containerd");

        self.spawn(
            "kube-controller-manager",
            &self.tools.controller_manager,
            config::controller_manager(flags::controller_manager(&layout)),
        )?;
        self.spawn(
            "kube-scheduler",
            &self.tools.scheduler,
            flags::scheduler(&layout),
        )?;
        self.spawn(
            "kubelet",
            &self.tools.kubelet,
            config::kubelet_args(&self.paths, &layout.kubeconfig()),
        )?;
        let nodes: Api<Node> = Api::all(client.clone());
        self.wait("kubelet", "the Node to become Ready", || async {
            let node = nodes
                .get(config::NODE_NAME)
                .await
                .map_err(|e| e.to_string())?;
            let ready = node
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            ready
                .then_some(())
                .ok_or_else(|| "Ready is not True".into())
        })
        .await?;
        lap("kubelet: Node Ready");

        self.spawn(
            "kube-proxy",
            &self.tools.kube_proxy,
            vec![format!(
                "--config={}",
                self.paths.kube_proxy_config().display()
            )],
        )?;
        self.spawn(
            "coredns",
            &self.tools.coredns,
            vec!["-conf".into(), self.paths.corefile().display().to_string()],
        )?;
        self.wait(
            "kube-proxy",
            "the kubernetes Service to answer on its ClusterIP",
            || async {
                let request = format!("https://{}:443/readyz", config::KUBERNETES_SERVICE_IP);
                reqwest::Client::builder()
                    .timeout(Duration::from_secs(2))
                    .danger_accept_invalid_certs(true)
                    .no_proxy()
                    .build()
                    .map_err(|e| e.to_string())?
                    .get(request)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            },
        )
        .await?;
        self.wait("coredns", "CoreDNS /ready", || async {
            let response = http
                .get("http://127.0.0.1:8181/ready")
                .send()
                .await
                .map_err(|e| e.to_string())?;
            response
                .status()
                .is_success()
                .then_some(())
                .ok_or_else(|| response.status().to_string())
        })
        .await?;
        let service_accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
        self.wait(
            "kube-controller-manager",
            "the default ServiceAccount",
            || async {
                service_accounts
                    .get("default")
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            },
        )
        .await?;
        lap("kube-proxy, CoreDNS, default ServiceAccount");
        Ok(timings)
    }

    /// cert-manager (`hack/build-node.sh` builds v1.11.5) as two processes of the node with the
    /// tier's admin kubeconfig, for the release manifest's cert-manager variant: its CRDs applied
    /// and Established, the namespace `cert-manager` (its cluster resource namespace, where the
    /// variant's CA lives), then the controller and the cainjector. Its admission webhook is not
    /// run (nothing here needs its validation). Must run inside [`RealCluster::run`].
    pub async fn start_cert_manager(&self) -> Result<(), RealError> {
        use k8s_openapi::api::core::v1::Namespace;
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        use kube::api::{Patch, PatchParams};
        let client = self.try_client().await?;
        let text = std::fs::read_to_string(&self.tools.cert_manager_crds)
            .map_err(setup("read cert-manager's CRDs"))?;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let apply = PatchParams::apply("olm-real-tier").force();
        let mut names = Vec::new();
        for crd in crate::release::kustomize::parse_objects(&self.tools.cert_manager_crds, &text)
            .map_err(setup("parse cert-manager's CRDs"))?
        {
            let name = crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            crds.patch(&name, &apply, &Patch::Apply(&crd))
                .await
                .map_err(setup(&format!("apply the CRD {name}")))?;
            names.push(name);
        }
        let namespace = serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cert-manager"}
        });
        Api::<Namespace>::all(client.clone())
            .patch("cert-manager", &apply, &Patch::Apply(&namespace))
            .await
            .map_err(setup("create the namespace cert-manager"))?;
        for name in &names {
            self.wait(
                "kube-apiserver",
                &format!("the CRD {name} Established"),
                || async {
                    let crd = crds.get(name).await.map_err(|e| e.to_string())?;
                    crd.status
                        .and_then(|s| s.conditions)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                        .then_some(())
                        .ok_or_else(|| "not Established".to_owned())
                },
            )
            .await?;
        }
        let kubeconfig = self.kubeconfig_path().display().to_string();
        self.spawn_with_env(
            "cert-manager-controller",
            &self.tools.cert_manager_controller,
            vec![
                format!("--kubeconfig={kubeconfig}"),
                "--leader-elect=false".into(),
                "--cluster-resource-namespace=cert-manager".into(),
                "--metrics-listen-address=127.0.0.1:9402".into(),
            ],
            &[],
        )?;
        self.spawn_with_env(
            "cert-manager-cainjector",
            &self.tools.cert_manager_cainjector,
            vec!["--leader-elect=false".into()],
            &[("KUBECONFIG", kubeconfig.as_str())],
        )?;
        Ok(())
    }

    /// `crictl` against this node's containerd.
    pub async fn crictl(&self, args: &[&str]) -> std::io::Result<std::process::Output> {
        tokio::process::Command::new(&self.tools.crictl)
            .arg(format!(
                "--runtime-endpoint=unix://{}",
                self.paths.containerd_socket().display()
            ))
            .arg("--timeout=10s")
            .args(args)
            .output()
            .await
    }

    /// A cluster-admin client (inside [`RealCluster::run`]).
    pub async fn client(&self) -> kube::Client {
        self.try_client()
            .await
            .unwrap_or_else(|e| panic!("a client for the real tier: {e}"))
    }

    async fn try_client(&self) -> Result<kube::Client, RealError> {
        crate::install_crypto_provider();
        let kubeconfig =
            Kubeconfig::read_from(self.kubeconfig_path()).map_err(setup("read the kubeconfig"))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(setup("the kubeconfig"))?;
        kube::Client::try_from(config).map_err(setup("a client"))
    }

    /// PIDs of the running components, by name.
    pub fn component_pids(&self) -> Vec<(String, u32)> {
        self.processes
            .lock()
            .expect("process list")
            .iter()
            .filter_map(|p| p.pid().map(|pid| (p.name().to_owned(), pid)))
            .collect()
    }

    /// Removes everything of this instance (see the module docs) and returns what is left:
    /// empty when teardown was complete.
    pub fn teardown(self) -> Vec<String> {
        let processes = std::mem::take(&mut *self.processes.lock().expect("process list"));
        teardown::teardown(
            &teardown::Instance {
                id: self.id.clone(),
                root: self.paths.root().to_path_buf(),
                netns_file: self.netns_file.clone(),
                netns_inode: self.netns_inode,
                netns_dir_before: self.netns_dir_before.clone(),
                crictl: Some((self.tools.crictl.clone(), self.paths.containerd_socket())),
                created_dirs: self.created_dirs.clone(),
            },
            processes,
        )
    }
}

fn copy_tree(from: &Path, to: &Path) {
    let _ = std::fs::create_dir_all(to);
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries.flatten() {
        let target = to.join(entry.file_name());
        match entry.file_type() {
            Ok(t) if t.is_dir() => copy_tree(&entry.path(), &target),
            Ok(t) if t.is_file() => {
                let _ = std::fs::copy(entry.path(), target);
            }
            _ => {}
        }
    }
}

/// Moves the calling thread into the network namespace `netns` (an open namespace file).
fn enter(netns: &File) -> Result<(), RealError> {
    rustix::thread::move_into_link_name_space(
        netns.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(setup("setns into the tier's network namespace"))
}

/// The API server's serving certificate for the node: its address, the `kubernetes` Service's
/// ClusterIP and names, loopback. Returns (certificate, key) PEM.
fn serving_certificate(pki: &Pki) -> Result<(String, String), String> {
    let ca_key = KeyPair::from_pem(&pki.ca.key_pem).map_err(|e| e.to_string())?;
    let mut ca_params = CertificateParams::default();
    let mut ca_name = DistinguishedName::new();
    ca_name.push(DnType::CommonName, "olm-e2e-ca");
    ca_params.distinguished_name = ca_name;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().map_err(|e| e.to_string())?;
    let mut sans: Vec<String> = crate::control_plane::certs::SERVING_SANS
        .iter()
        .map(|s| s.to_string())
        .collect();
    sans.extend([
        NODE_IP.to_string(),
        config::KUBERNETES_SERVICE_IP.to_string(),
        format!("kubernetes.default.svc.{}", config::CLUSTER_DOMAIN),
    ]);
    sans.sort();
    sans.dedup();
    let mut params = CertificateParams::new(sans).map_err(|e| e.to_string())?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "kube-apiserver");
    params.distinguished_name = name;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, &issuer).map_err(|e| e.to_string())?;
    Ok((cert.pem(), key.serialize_pem()))
}
