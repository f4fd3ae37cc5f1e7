//! `operator-controller preview` as a process, without a cluster: usage errors exit 2 before
//! any connection (a missing, unreadable or wrong `-f` file, conflicting flags), and an
//! unreachable API server is a runtime failure (exit 3). What it reports against a cluster is
//! the end-to-end test `e2e/tests/e2e/preview.rs`.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

fn preview(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_operator-controller"))
        .arg("preview")
        .args(args)
        // No ambient cluster: a connection attempt goes to this (unreachable) kubeconfig.
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn usage_errors_exit_2_before_any_connection() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let not_an_extension = dir.path().join("configmap.yaml");
    std::fs::write(
        &not_an_extension,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n",
    )
    .unwrap();
    let nameless = dir.path().join("nameless.yaml");
    std::fs::write(
        &nameless,
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\nmetadata: {}\nspec:\n  namespace: ns\n  source:\n    sourceType: Catalog\n    catalog:\n      packageName: p\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![], "--filename"),
        (
            vec!["-f", "x.yaml", "--extension", "e"],
            "cannot be used with",
        ),
        (
            vec!["-f", "x.yaml", "--version", "1.0.0"],
            "cannot be used with",
        ),
        (vec!["-f", missing.to_str().unwrap()], "missing.yaml"),
        (vec!["-f", "/dev/zero"], "/dev/zero"),
        (
            vec!["-f", not_an_extension.to_str().unwrap()],
            "not a ClusterExtension",
        ),
        (
            vec!["-f", nameless.to_str().unwrap()],
            "metadata.name is required",
        ),
    ];
    for (args, expected) in cases {
        let out = preview(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn an_unreachable_cluster_is_a_runtime_failure() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n",
    )
    .unwrap();
    let out = preview(&[
        "--extension",
        "e",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
}
