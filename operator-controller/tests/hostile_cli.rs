//! `operator-controller resolve` on hostile local inputs (issue 14), as a process: a FIFO or a
//! symlink to `/dev/zero` in a catalog, `/dev/zero` as the catalog or as the CA file. Each used
//! to hang or read until memory ran out; each now ends with the documented exit status (1: the
//! resolution failed on the catalog's content, 2: a path given on the command line is unusable).
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `resolve`, killing it (and failing) if it is still running after five minutes.
fn resolve(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_operator-controller"))
        .arg("resolve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("resolve {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn catalog() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), "schema: olm.package\nname: p\n").unwrap();
    dir
}

#[test]
fn special_files_inside_a_catalog_fail_resolution_with_exit_1_naming_them() {
    let fifo_dir = catalog();
    let fifo = fifo_dir.path().join("b.yaml");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let zero_dir = catalog();
    let zero = zero_dir.path().join("z.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (dir, path, what) in [
        (&fifo_dir, &fifo, "a FIFO"),
        (&zero_dir, &zero, "a character device"),
    ] {
        let o = resolve(&["--catalog", dir.path().to_str().unwrap(), "--package", "p"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!(
                "failed to read {}: not a regular file ({what})",
                path.display()
            )),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn dev_zero_as_the_catalog_or_the_ca_file_is_a_usage_error() {
    let o = resolve(&["--catalog", "/dev/zero", "--package", "p"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("failed to read /dev/zero: not a regular file (a character device)"),
        "{}",
        stderr(&o)
    );
    // The CA file is read when a catalog is a URL (nothing is dialled: the file fails first).
    let o = resolve(&[
        "--catalog",
        "https://127.0.0.1:9/catalogs/c",
        "--package",
        "p",
        "--catalogd-ca-file",
        "/dev/zero",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("failed to read CA file /dev/zero: not a regular file (a character device)"),
        "{}",
        stderr(&o)
    );
}
