//! `operator-controller run` as a process against an API server that cannot be reached: SIGTERM still stops it.
//!
//! Input: a kubeconfig naming a closed port on 127.0.0.1. Output: the process's exit status.
//! Network: connection attempts to that closed port only.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Far beyond any stop the binary is designed to take (its controller bound is 20 s); only there
/// so that a hang fails the test instead of stalling the suite.
const HANG: Duration = Duration::from_secs(120);

/// A kubeconfig whose server is a port on 127.0.0.1 that nothing listens on.
fn kubeconfig_to_a_closed_port(dir: &std::path::Path) -> std::path::PathBuf {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}\n\
             contexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\nusers:\n- name: u\n  user: {{token: t}}\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn run_stops_on_sigterm_while_the_api_server_cannot_be_reached() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig_to_a_closed_port(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_operator-controller"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--cache-path")
        .arg(dir.path().join("cache"))
        .args(["--openshift", "false", "--cert-provider", "builtin"])
        .args(["--health-probe-bind-address", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once it has failed to reach the API server, its signal handler is long installed and its
    // controller is waiting for a first list that cannot come.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!(
                "operator-controller ended before trying the API server: {:?}",
                child.wait()
            );
        }
        if line.contains("client error (Connect)") {
            break;
        }
    }
    // Keep draining its log so that a full pipe cannot block it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    assert!(
        Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .unwrap()
            .success()
    );
    let asked = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if asked.elapsed() > HANG {
            let _ = child.kill();
            panic!("operator-controller did not exit within {HANG:?} of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "operator-controller exited with {status}");
}
