//! `olm-dev-env run` as a user runs it: a usable kubeconfig, a clean stop on Ctrl-C, and no
//! leftover process when it is killed outright.

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
    kubeconfig: PathBuf,
    component_pids: Vec<u32>,
}

/// Starts `olm-dev-env run --tier apiserver` and reads its output until it is ready. It runs under
/// `setpriv --pdeathsig KILL` so a failing test cannot leave it behind.
async fn start_dev_env() -> DevEnv {
    let stderr_file = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new("setpriv")
        .args(["--pdeathsig", "KILL", "--"])
        .arg(env!("CARGO_BIN_EXE_olm-dev-env"))
        .args(["run", "--tier", "apiserver"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr_file.reopen().unwrap()))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut kubeconfig = None;
    let mut component_pids = Vec::new();
    let mut seen = Vec::new();
    while let Some(line) = stdout.next_line().await.unwrap() {
        if let Some(path) = line.trim().strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(PathBuf::from(path));
        }
        // Every child the environment starts announces its PID as "(pid N)".
        component_pids.extend(
            line.split("(pid ")
                .skip(1)
                .filter_map(|s| s.split(')').next().and_then(|p| p.parse::<u32>().ok())),
        );
        let ready = line.contains("press Ctrl-C to stop");
        seen.push(line);
        if ready {
            break;
        }
    }
    let stderr = std::fs::read_to_string(stderr_file.path()).unwrap_or_default();
    let kubeconfig = kubeconfig.unwrap_or_else(|| {
        panic!(
            "olm-dev-env printed no KUBECONFIG; output:\n{}\nstderr:\n{stderr}",
            seen.join("\n")
        )
    });
    // etcd, kube-apiserver, the registry, catalogd and operator-controller.
    assert_eq!(
        component_pids.len(),
        5,
        "output:\n{}\nstderr:\n{stderr}",
        seen.join("\n")
    );
    DevEnv {
        child,
        stdout,
        kubeconfig,
        component_pids,
    }
}

fn signal(child: &Child, signal: Signal) {
    let pid = Pid::from_raw(child.id().unwrap() as i32).unwrap();
    kill_process(pid, signal).unwrap();
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

#[tokio::test]
async fn dev_env_prints_a_working_kubeconfig_and_stops_cleanly_on_ctrl_c() {
    let mut dev = start_dev_env().await;
    let kubeconfig = kube::config::Kubeconfig::read_from(&dev.kubeconfig).unwrap();
    olm_e2e::install_crypto_provider();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let namespaces: Api<Namespace> = Api::all(kube::Client::try_from(config).unwrap());
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
    for pid in &dev.component_pids {
        assert!(process_gone(*pid), "component {pid} outlived olm-dev-env");
    }
    assert!(
        !work_dir(&dev.kubeconfig).exists(),
        "scratch directory left behind"
    );
}

#[tokio::test]
async fn killing_the_dev_env_outright_takes_its_components_down() {
    let mut dev = start_dev_env().await;
    signal(&dev.child, Signal::KILL);
    dev.child.wait().await.unwrap();
    for pid in dev.component_pids.clone() {
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
