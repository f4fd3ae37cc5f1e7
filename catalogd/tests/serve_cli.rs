//! `catalogd serve` as a process: real socket, real signals.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running `catalogd serve`. Dropped without [`Served::terminate`] (a failed assertion), it is
/// killed, so a failing test does not leave a server behind.
struct Served(Option<Child>);

impl Served {
    fn id(&self) -> u32 {
        self.0.as_ref().map(Child::id).unwrap_or_default()
    }

    /// SIGTERM, then its exit status.
    fn terminate(mut self) -> std::process::ExitStatus {
        let mut child = self.0.take().unwrap();
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        child.wait().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `catalogd serve` on a free port and returns it and its base URL.
fn serve(dir: &std::path::Path, extra: &[&str]) -> (Served, String) {
    serve_with_allocator_settings(dir, extra, None)
}

/// [`serve`] with `MALLOC_ARENA_MAX` set to `arenas`, or removed from the environment.
fn serve_with_allocator_settings(
    dir: &std::path::Path,
    extra: &[&str],
    arenas: Option<&str>,
) -> (Served, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_catalogd"));
    for (name, _) in olm_runtime::allocator::SETTINGS {
        command.env_remove(name);
    }
    if let Some(value) = arenas {
        command.env("MALLOC_ARENA_MAX", value);
    }
    let mut child = command
        .arg("serve")
        .arg("--dir")
        .arg(dir)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let served = Served(Some(child));
    let mut line = String::new();
    BufReader::new(stderr).read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .trim_end_matches("/api/v1/all")
        .to_string();
    (served, url)
}

#[tokio::test]
async fn serve_answers_with_upstreams_exact_bytes_and_stops_cleanly_on_sigterm() {
    let fixture = olm_testdata::path(
        "catalogs/upstream-operator-controller/catalogd/testdata/catalogs/test-catalog",
    );
    let expected = std::fs::read_to_string(fixture.join("expected_all.json")).unwrap();
    // Serve only the catalog file: the directory also holds the expected output.
    let (child, base) = serve(&fixture.join("catalog.yaml"), &["--name", "test-catalog"]);
    assert!(base.ends_with("/catalogs/test-catalog"), "{base}");

    let resp = reqwest::get(format!("{base}/api/v1/all")).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/jsonl");
    assert_eq!(resp.text().await.unwrap(), expected);

    let metas = reqwest::get(format!("{base}/api/v1/metas?schema=olm.package"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(metas.lines().count(), 1);
    assert!(
        expected.starts_with(&metas) || expected.contains(&metas),
        "{metas}"
    );

    let root = base.trim_end_matches("/catalogs/test-catalog");
    assert_eq!(
        reqwest::get(format!("{root}/healthz"))
            .await
            .unwrap()
            .status(),
        200
    );
    let metrics = reqwest::get(format!("{root}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("catalogd_http_request_duration_seconds_count{code=\"200\"}"),
        "{metrics}"
    );

    let status = child.terminate();
    assert!(status.success(), "{status:?}");
}

#[test]
fn serve_rejects_a_missing_directory_as_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_catalogd"))
        .args([
            "serve",
            "--dir",
            "/nonexistent/catalog",
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read catalog /nonexistent/catalog"),
        "{stderr}"
    );
}

#[test]
fn serve_reports_a_broken_catalog_with_its_file_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let cat = dir.path().join("broken");
    std::fs::create_dir(&cat).unwrap();
    std::fs::write(
        cat.join("index.json"),
        "{\"schema\": \"olm.package\", \"name\": ",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_catalogd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--dir"])
        .arg(&cat)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("index.json"), "{stderr}");
}

/// The `MALLOC_ARENA_MAX` a running process started with.
/// The allocator variables in the environment of process `pid`, as `NAME=value`.
fn allocator_settings_of(pid: u32) -> Vec<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    environ
        .split(|&b| b == 0)
        .filter_map(|var| std::str::from_utf8(var).ok())
        .filter(|var| var.starts_with("MALLOC_"))
        .map(str::to_owned)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[tokio::test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
async fn catalogd_runs_with_an_allocator_that_gives_memory_back_unless_the_environment_says_otherwise()
 {
    let fixture = olm_testdata::path(
        "catalogs/upstream-operator-controller/catalogd/testdata/catalogs/test-catalog",
    );
    let catalog = fixture.join("catalog.yaml");
    // Started again by itself with the variable: same process, serving as usual.
    let (child, base) = serve_with_allocator_settings(&catalog, &["--name", "test-catalog"], None);
    assert_eq!(
        allocator_settings_of(child.id()),
        [
            "MALLOC_ARENA_MAX=2",
            "MALLOC_MMAP_THRESHOLD_=131072",
            "MALLOC_TRIM_THRESHOLD_=131072"
        ]
    );
    let resp = reqwest::get(format!("{base}/api/v1/all")).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(child.terminate().success());

    // An operator's own value is kept.
    let (child, _) =
        serve_with_allocator_settings(&catalog, &["--name", "test-catalog"], Some("8"));
    assert_eq!(
        allocator_settings_of(child.id()),
        [
            "MALLOC_ARENA_MAX=8",
            "MALLOC_MMAP_THRESHOLD_=131072",
            "MALLOC_TRIM_THRESHOLD_=131072"
        ]
    );
    assert!(child.terminate().success());
}
