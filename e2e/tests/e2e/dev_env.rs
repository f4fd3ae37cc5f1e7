//! `olm-dev-env run` as a user runs it: a usable kubeconfig, a clean stop on Ctrl-C, no leftover
//! process when it is killed outright, and a watch over its components: a controller that exits is
//! reported and restarted, any other component that exits is reported and stops the environment
//! with a non-zero exit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::support::eventually;

struct DevEnv {
    child: Child,
    stdout: Lines<BufReader<ChildStdout>>,
    /// What olm-dev-env wrote to stderr (a file, so it can be read while it runs).
    stderr: tempfile::NamedTempFile,
    kubeconfig: PathBuf,
    /// Every component by name, as announced with "NAME (pid N)".
    components: BTreeMap<String, u32>,
    /// Where every component's NAME.log is.
    log_dir: PathBuf,
}

/// etcd, kube-apiserver, the registry, catalogd and operator-controller.
const APISERVER_TIER: &[&str] = &[
    "catalogd",
    "etcd",
    "kube-apiserver",
    "operator-controller",
    "registry",
];
/// The above, and kube-controller-manager, kube-scheduler and kwok.
const FULL_TIER: &[&str] = &[
    "catalogd",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "operator-controller",
    "registry",
];

/// Starts `olm-dev-env run --tier TIER` and reads its output until it is ready. It runs under
/// `setpriv --pdeathsig KILL` so a failing test cannot leave it behind.
async fn start_dev_env(tier: &str) -> DevEnv {
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new("setpriv")
        .args(["--pdeathsig", "KILL", "--"])
        .arg(env!("CARGO_BIN_EXE_olm-dev-env"))
        .args(["run", "--tier", tier])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr.reopen().unwrap()))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut kubeconfig = None;
    let mut log_dir = None;
    let mut components = BTreeMap::new();
    let mut seen = Vec::new();
    while let Some(line) = stdout.next_line().await.unwrap() {
        if let Some(path) = line.trim().strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(PathBuf::from(path));
        }
        if let Some(rest) = line.strip_prefix("olm-dev-env: logs in ") {
            log_dir = rest.split_once(": ").map(|(dir, _)| PathBuf::from(dir));
        }
        components.extend(announced_pids(&line));
        let ready = line.contains("press Ctrl-C to stop");
        seen.push(line);
        if ready {
            break;
        }
    }
    let explain = || {
        format!(
            "output:\n{}\nstderr:\n{}",
            seen.join("\n"),
            std::fs::read_to_string(stderr.path()).unwrap_or_default()
        )
    };
    let (Some(kubeconfig), Some(log_dir)) = (kubeconfig, log_dir) else {
        panic!(
            "olm-dev-env printed no KUBECONFIG or log directory; {}",
            explain()
        )
    };
    let expected = if tier == "full" {
        FULL_TIER
    } else {
        APISERVER_TIER
    };
    assert_eq!(
        components.keys().map(String::as_str).collect::<Vec<_>>(),
        expected,
        "{}",
        explain()
    );
    DevEnv {
        child,
        stdout,
        stderr,
        kubeconfig,
        components,
        log_dir,
    }
}

/// `(NAME, PID)` for every "NAME (pid N)" in an output line.
fn announced_pids(line: &str) -> Vec<(String, u32)> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find(" (pid ") {
        let name = rest[..at]
            .rsplit([' ', ','])
            .next()
            .unwrap_or_default()
            .to_owned();
        let after = &rest[at + " (pid ".len()..];
        if let Some(pid) = after.split(')').next().and_then(|p| p.parse().ok()) {
            found.push((name, pid));
        }
        rest = after;
    }
    found
}

impl DevEnv {
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    fn pid(&self, component: &str) -> u32 {
        self.components[component]
    }

    fn log(&self, component: &str) -> PathBuf {
        self.log_dir.join(format!("{component}.log"))
    }

    async fn client(&self) -> kube::Client {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig).unwrap();
        olm_e2e::install_crypto_provider();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    /// Waits until stderr holds the exit report of `component` and returns the lines it quotes
    /// from the log. The report names the component, the exit status and the log file.
    async fn exit_report(&self, component: &str, status: &str) -> Vec<String> {
        let header = format!(
            "olm-dev-env: {component} exited ({status}); last lines of {}:",
            self.log(component).display()
        );
        let stderr = eventually(&format!("olm-dev-env to report {header}"), || async {
            let stderr = self.stderr();
            stderr.contains(&header).then_some(stderr)
        })
        .await;
        let (_, after) = stderr.split_once(&header).unwrap();
        after
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .map(|l| l[4..].to_owned())
            .collect()
    }
}

fn signal_pid(pid: u32, signal: Signal) {
    let pid = Pid::from_raw(pid as i32).unwrap();
    kill_process(pid, signal).unwrap();
}

fn signal(child: &Child, signal: Signal) {
    signal_pid(child.id().unwrap(), signal);
}

/// True when `pid` no longer names a live process (gone, or a zombie not yet reaped by init).
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn work_dir(kubeconfig: &Path) -> PathBuf {
    kubeconfig.parent().unwrap().to_path_buf()
}

/// The quoted tail is the end of the component's log as it was when it exited: non-empty, and
/// every line in the log file.
fn assert_tail_is_from_log(tail: &[String], log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    assert!(
        !tail.is_empty(),
        "no log lines quoted for {}",
        log.display()
    );
    for line in tail {
        assert!(
            text.lines().any(|l| l == line),
            "{line:?} is not in {}",
            log.display()
        );
    }
}

#[tokio::test]
async fn dev_env_prints_a_working_kubeconfig_and_stops_cleanly_on_ctrl_c() {
    let mut dev = start_dev_env("apiserver").await;
    let namespaces: Api<Namespace> = Api::all(dev.client().await);
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"default".to_owned()), "{names:?}");
    // The sample ClusterExtension is installed from the sample catalog's local bundle images
    // (olm-dev-env waits for that before it says it is ready).
    let extensions: Api<olm_api::v1::ClusterExtension> = Api::all(namespaces.clone().into_client());
    let sample = extensions.get("example-operator").await.unwrap();
    let status = sample.status.expect("status");
    let installed =
        olm_api::v1::find_condition(&status.conditions, olm_api::v1::ConditionType::Installed)
            .expect("Installed condition");
    assert_eq!(installed.status.as_str(), "True", "{installed:?}");
    assert_eq!(
        status.install.map(|i| i.bundle.version).as_deref(),
        Some("1.1.0")
    );
    // One directory holds every component's log, each named after its component.
    for name in dev.components.keys() {
        assert!(dev.log(name).is_file(), "no {}", dev.log(name).display());
    }

    signal(&dev.child, Signal::INT);
    let status = dev.child.wait().await.unwrap();
    assert!(status.success(), "olm-dev-env exited with {status}");
    let mut rest = Vec::new();
    while let Some(line) = dev.stdout.next_line().await.unwrap() {
        rest.push(line);
    }
    assert_eq!(
        rest.last().map(String::as_str),
        Some("olm-dev-env: stopped")
    );
    for pid in dev.components.values() {
        assert!(process_gone(*pid), "component {pid} outlived olm-dev-env");
    }
    assert!(
        !work_dir(&dev.kubeconfig).exists(),
        "scratch directory left behind"
    );
}

#[tokio::test]
async fn killing_the_dev_env_outright_takes_its_components_down() {
    let mut dev = start_dev_env("apiserver").await;
    signal(&dev.child, Signal::KILL);
    dev.child.wait().await.unwrap();
    for pid in dev.components.values().copied() {
        eventually("the parent-death signal to stop a component", || async {
            process_gone(pid).then_some(())
        })
        .await;
    }
    // Its scratch directory is left behind, and the next environment's start-up removes it.
    let dir = work_dir(&dev.kubeconfig);
    assert!(dir.exists());
    let removed = olm_e2e::workdir::remove_stale(dir.parent().unwrap());
    assert!(removed.contains(&dir), "{removed:?}");
    assert!(!dir.exists());
}

#[tokio::test]
async fn a_controller_that_exits_is_reported_with_its_log_and_restarted() {
    let mut dev = start_dev_env("apiserver").await;
    for controller in ["catalogd", "operator-controller"] {
        let old = dev.pid(controller);
        signal_pid(old, Signal::KILL);
        let tail = dev.exit_report(controller, "signal: 9 (SIGKILL)").await;
        assert_tail_is_from_log(&tail, &dev.log(controller));
        let restarted = format!("olm-dev-env: restarted {controller} (pid ");
        let new = eventually(&format!("{controller} to be restarted"), || async {
            let stderr = dev.stderr();
            let (_, after) = stderr.split_once(&restarted)?;
            after.split(')').next()?.parse::<u32>().ok()
        })
        .await;
        assert_ne!(new, old);
        let ready = format!("olm-dev-env: {controller} (pid {new}) is ready again");
        eventually(&ready, || async {
            dev.stderr().contains(&ready).then_some(())
        })
        .await;
        // The new run appends to the same log.
        let log = std::fs::read_to_string(dev.log(controller)).unwrap();
        assert!(
            log.contains(&format!("--- olm-dev-env: restart 1 of {controller} ---")),
            "{log}"
        );
        assert!(log.contains(&tail[0]), "the first run's log was lost");
        dev.components.insert(controller.to_owned(), new);
    }
    // Still a working environment: the sample catalog is served by the new catalogd, and the
    // environment stops cleanly.
    let catalogs: Api<olm_api::v1::ClusterCatalog> = Api::all(dev.client().await);
    let catalog = catalogs.get("example-catalog").await.unwrap();
    let serving = olm_api::v1::find_condition(
        &catalog.status.expect("status").conditions,
        olm_api::v1::ConditionType::Serving,
    )
    .map(|c| c.status.as_str().to_owned());
    assert_eq!(serving.as_deref(), Some("True"));
    signal(&dev.child, Signal::INT);
    let status = dev.child.wait().await.unwrap();
    assert!(status.success(), "olm-dev-env exited with {status}");
    for pid in dev.components.values() {
        assert!(process_gone(*pid), "component {pid} outlived olm-dev-env");
    }
}

/// Kills `component` of a fresh environment of `tier` and checks the report, the non-zero exit,
/// that nothing outlives it, and that the logs were kept.
async fn killing_stops_the_environment(tier: &str, component: &str) {
    let mut dev = start_dev_env(tier).await;
    signal_pid(dev.pid(component), Signal::KILL);
    let status = dev.child.wait().await.unwrap();
    assert_eq!(status.code(), Some(1), "olm-dev-env exited with {status}");
    let tail = dev.exit_report(component, "signal: 9 (SIGKILL)").await;
    assert_tail_is_from_log(&tail, &dev.log(component));
    let stderr = dev.stderr();
    for expected in [
        format!(
            "olm-dev-env: {component} is part of the control plane, which does not work without it; stopping everything"
        ),
        format!(
            "olm-dev-env: stopped; logs kept in {}",
            dev.log_dir.display()
        ),
        format!(
            "olm-dev-env: {component} exited (signal: 9 (SIGKILL)); the environment cannot work without it and was stopped"
        ),
    ] {
        assert!(stderr.contains(&expected), "{expected:?} not in:\n{stderr}");
    }
    for (name, pid) in &dev.components {
        assert!(process_gone(*pid), "{name} ({pid}) outlived olm-dev-env");
    }
    std::fs::remove_dir_all(work_dir(&dev.kubeconfig)).unwrap();
}

#[tokio::test]
async fn etcd_the_api_server_or_the_registry_exiting_stops_the_environment_with_a_non_zero_exit() {
    for component in ["etcd", "kube-apiserver", "registry"] {
        killing_stops_the_environment("apiserver", component).await;
    }
}

#[tokio::test]
async fn the_controller_manager_scheduler_or_kwok_exiting_stops_the_environment_with_a_non_zero_exit()
 {
    for component in ["kube-controller-manager", "kube-scheduler", "kwok"] {
        killing_stops_the_environment("full", component).await;
    }
}
