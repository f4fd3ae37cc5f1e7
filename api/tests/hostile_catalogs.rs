//! Hostile catalog input (issue 14): special files, oversized files and objects, YAML alias and
//! merge-key byte bombs, over-long paths. Each case reproduces a failure seen before the fix
//! (a hang, unbounded memory, or an error naming the wrong path) and asserts the limit that now
//! stops it and the error that names it. Memory is bounded by the limits, which are measured in
//! docs/SECURITY.md; tests assert the limit being hit, not RSS.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use olm_api::fbc::walk::{MAX_CATALOG_FILE_BYTES, MAX_OBJECT_BYTES};
use olm_api::fbc::{DeclarativeConfig, LoadError, Meta, WalkError, walk_metas_dir};

/// Runs `f` on a thread and fails the test if it has not returned after five minutes: a
/// regression to "hangs forever" must fail, not stall the suite. Not a speed assertion.
fn finishes<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(300))
        .expect("the walk hung instead of refusing the input")
}

fn load(dir: &Path) -> Result<DeclarativeConfig, LoadError> {
    let dir = dir.to_path_buf();
    finishes(move || DeclarativeConfig::load_dir(&dir))
}

fn walk(dir: &Path) -> Result<usize, WalkError> {
    let dir = dir.to_path_buf();
    finishes(move || {
        let mut n = 0;
        walk_metas_dir(&dir, |_: Meta| {
            n += 1;
            Ok(())
        })
        .map(|()| n)
    })
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

const PACKAGE: &str = "schema: olm.package\nname: p\n";

fn catalog_with(extra: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), PACKAGE).unwrap();
    for (name, text) in extra {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn a_fifo_in_a_catalog_directory_is_refused_naming_it_instead_of_hanging() {
    let dir = catalog_with(&[]);
    let fifo = dir.path().join("b.json");
    mkfifo(&fifo);
    let want = format!(
        "failed to read {}: not a regular file (a FIFO)",
        fifo.display()
    );
    assert_eq!(load(dir.path()).unwrap_err().to_string(), want);
    assert_eq!(walk(dir.path()).unwrap_err().to_string(), want);
}

#[test]
fn a_fifo_indexignore_is_refused_naming_it_instead_of_hanging() {
    let dir = catalog_with(&[]);
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let fifo = dir.path().join("sub/.indexignore");
    mkfifo(&fifo);
    let want = format!(
        "failed to read {}: not a regular file (a FIFO)",
        fifo.display()
    );
    assert_eq!(load(dir.path()).unwrap_err().to_string(), want);
    assert_eq!(walk(dir.path()).unwrap_err().to_string(), want);
}

#[test]
fn a_symlink_to_dev_zero_is_refused_without_reading_it() {
    let dir = catalog_with(&[]);
    let link = dir.path().join("zero.yaml");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let want = format!(
        "failed to read {}: not a regular file (a character device)",
        link.display()
    );
    assert_eq!(load(dir.path()).unwrap_err().to_string(), want);
    assert_eq!(walk(dir.path()).unwrap_err().to_string(), want);
    // The same as the catalog root itself.
    let err = walk(Path::new("/dev/zero")).unwrap_err().to_string();
    assert_eq!(
        err,
        "failed to read /dev/zero: not a regular file (a character device)"
    );
    let fifo = dir.path().join("root-fifo");
    mkfifo(&fifo);
    assert!(
        walk(&fifo)
            .unwrap_err()
            .to_string()
            .ends_with("not a regular file (a FIFO)")
    );
}

/// `a: &a "<size bytes>"` then a list aliasing it `count` times (issue 14: a 1 MB file aliasing a
/// 1 MiB string 2,000 times peaked at 2 GB).
fn alias_bomb(size: usize, count: usize) -> String {
    let mut y = format!("schema: x\na: &a \"{}\"\nb: [", "x".repeat(size));
    y.push_str(&vec!["*a"; count].join(", "));
    y.push_str("]\n");
    y
}

#[test]
fn a_yaml_alias_byte_bomb_stops_at_the_expanded_size_limit() {
    let dir = catalog_with(&[("bomb.yaml", &alias_bomb(1 << 20, 2_000))]);
    for err in [
        load(dir.path()).unwrap_err().to_string(),
        walk(dir.path()).unwrap_err().to_string(),
    ] {
        assert!(err.contains("bomb.yaml:3:"), "{err}");
        assert!(
            err.ends_with(&format!(
                "document expands to more than {MAX_OBJECT_BYTES} bytes (aliases and merge keys included)"
            )),
            "{err}"
        );
    }
}

#[test]
fn a_merge_key_byte_bomb_stops_at_the_expanded_size_limit() {
    let mut y = format!(
        "schema: x\nm: &m {{big: \"{}\"}}\nitems:\n",
        "x".repeat(1 << 20)
    );
    for i in 0..2_000 {
        y.push_str(&format!("- {{<<: *m, i: {i}}}\n"));
    }
    let dir = catalog_with(&[("merge.yaml", &y)]);
    let err = load(dir.path()).unwrap_err().to_string();
    assert!(err.contains("merge.yaml:"), "{err}");
    assert!(err.contains("document expands to more than"), "{err}");
}

#[test]
fn aliases_within_the_limit_still_expand() {
    let dir = catalog_with(&[("ok.yaml", &alias_bomb(1 << 10, 100))]);
    assert_eq!(walk(dir.path()).unwrap(), 2);
}

#[test]
fn a_json_object_over_the_object_limit_is_an_error_at_its_position() {
    let big = format!(
        "{{\"schema\":\"olm.package\",\"name\":\"p\"}}\n  {{\"schema\":\"x\",\"pad\":\"{}\"}}\n",
        "x".repeat(MAX_OBJECT_BYTES)
    );
    let dir = catalog_with(&[("big.json", &big)]);
    let err = walk(dir.path()).unwrap_err().to_string();
    assert!(
        err.ends_with(&format!(
            "big.json:2:3: object is larger than the limit of {MAX_OBJECT_BYTES} bytes"
        )),
        "{err}"
    );
}

#[test]
fn a_yaml_document_over_the_object_limit_is_an_error_at_its_first_line() {
    // One endless line, and many short ones.
    let long_line = format!("schema: x\n---\npad: {}\n", "x".repeat(MAX_OBJECT_BYTES));
    let many_lines = format!(
        "schema: x\n---\n{}",
        "k: v\n".repeat(MAX_OBJECT_BYTES / 5 + 1)
    );
    for text in [long_line, many_lines] {
        let dir = catalog_with(&[("big.yaml", &text)]);
        let err = walk(dir.path()).unwrap_err().to_string();
        assert!(
            err.ends_with(&format!(
                "big.yaml:3:1: YAML document is larger than the limit of {MAX_OBJECT_BYTES} bytes"
            )),
            "{err}"
        );
    }
}

#[test]
fn the_catalog_file_limit_is_far_above_real_catalogs() {
    // The largest real catalog file in testdata/catalogs is 4.3 MB.
    const { assert!(MAX_CATALOG_FILE_BYTES >= 1 << 30) };
}

/// Creates directories below `root` until their path is longer than `PATH_MAX`, through
/// `openat`/`mkdirat` (a path that long cannot be created by name); returns the deepest path.
fn deep_tree(root: &Path) -> PathBuf {
    use rustix::fs::{CWD, Mode, OFlags, mkdirat, openat};
    let segment = "d".repeat(200);
    let mut fd = openat(CWD, root, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    let mut path = root.to_path_buf();
    while path.as_os_str().len() <= 4200 {
        mkdirat(&fd, segment.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        fd = openat(
            &fd,
            segment.as_str(),
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
        )
        .unwrap();
        path.push(&segment);
    }
    let file = openat(
        &fd,
        "c.yaml",
        OFlags::CREATE | OFlags::WRONLY,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    rustix::io::write(&file, b"schema: x\n").unwrap();
    path
}

#[test]
fn a_path_longer_than_path_max_is_reported_against_that_path() {
    let dir = catalog_with(&[]);
    let deepest = deep_tree(dir.path());
    for err in [
        load(dir.path()).unwrap_err().to_string(),
        walk(dir.path()).unwrap_err().to_string(),
    ] {
        assert!(err.contains("File name too long"), "{err}");
        let named = err
            .strip_prefix("failed to read ")
            .and_then(|rest| rest.split(": ").next())
            .unwrap();
        assert!(
            named.len() > 4096 && deepest.starts_with(named),
            "names {} bytes of path, not the long path",
            named.len()
        );
    }
}
