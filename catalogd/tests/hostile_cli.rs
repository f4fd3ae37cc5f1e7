//! `catalogd validate` and `catalogd serve --dir` on hostile catalogs (issue 14), as processes:
//! each used to hang or read until memory ran out; each now ends with the documented exit status
//! (1: the catalog is bad, 2: the catalog path itself is unusable) and an error naming the file.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs catalogd to completion, killing it (and failing) if it is still running after five
/// minutes: a regression to "hangs forever" must fail the test, not stall the suite.
fn catalogd(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_catalogd"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("catalogd {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

fn catalog() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), "schema: olm.package\nname: p\n").unwrap();
    dir
}

fn validate(dir: &Path) -> Output {
    catalogd(&["validate", dir.to_str().unwrap()])
}

fn serve(dir: &Path) -> Output {
    catalogd(&[
        "serve",
        "--dir",
        dir.to_str().unwrap(),
        "--name",
        "c",
        "--listen",
        "127.0.0.1:0",
    ])
}

#[test]
fn special_files_inside_a_catalog_exit_1_naming_the_file() {
    let fifo_dir = catalog();
    mkfifo(&fifo_dir.path().join("b.yaml"));
    let ignore_dir = catalog();
    mkfifo(&ignore_dir.path().join(".indexignore"));
    let zero_dir = catalog();
    std::os::unix::fs::symlink("/dev/zero", zero_dir.path().join("z.json")).unwrap();
    for (dir, file, what) in [
        (&fifo_dir, "b.yaml", "a FIFO"),
        (&ignore_dir, ".indexignore", "a FIFO"),
        (&zero_dir, "z.json", "a character device"),
    ] {
        let want = format!(
            "failed to read {}: not a regular file ({what})",
            dir.path().join(file).display()
        );
        for o in [validate(dir.path()), serve(dir.path())] {
            assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
            assert!(stderr(&o).contains(&want), "{}", stderr(&o));
        }
    }
}

#[test]
fn a_catalog_path_that_is_a_fifo_or_a_device_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("root");
    mkfifo(&fifo);
    for (path, what) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a character device"),
    ] {
        for o in [validate(path), serve(path)] {
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!(
                    "error: cannot read catalog {}: not a regular file ({what})",
                    path.display()
                )),
                "{}",
                stderr(&o)
            );
        }
    }
}

#[test]
fn a_yaml_alias_byte_bomb_exits_1_at_the_limit() {
    let dir = catalog();
    let mut bomb = format!("schema: x\na: &a \"{}\"\nb: [", "x".repeat(1 << 20));
    bomb.push_str(&vec!["*a"; 2_000].join(", "));
    bomb.push_str("]\n");
    std::fs::write(dir.path().join("bomb.yaml"), bomb).unwrap();
    for o in [validate(dir.path()), serve(dir.path())] {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("bomb.yaml:3:")
                && stderr(&o).contains(
                    "document expands to more than 16777216 bytes (aliases and merge keys included)"
                ),
            "{}",
            stderr(&o)
        );
    }
}
