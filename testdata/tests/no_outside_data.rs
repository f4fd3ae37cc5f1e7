//! Nothing in the repository reads or names test data outside it: every file (tracked or not
//! ignored, by `git ls-files`; a plain walk without `target/` when there is no git checkout) is
//! searched for the old location beside the checkout. Everything tests, benchmarks and hack
//! scripts read lives in `testdata/` (see olm-testdata).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root: the parent of `testdata/`.
fn repo_root() -> PathBuf {
    olm_testdata::root()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Files git knows or would add (`--cached --others --exclude-standard`), or `None` outside a git
/// checkout (an exported tree).
fn git_files(root: &Path) -> Option<Vec<PathBuf>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    // Only when root is the top of the checkout (not a tree exported inside another repository).
    let top = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .ok()?;
    let top = PathBuf::from(String::from_utf8(top.stdout).ok()?.trim());
    if top.canonicalize().ok()? != root.canonicalize().ok()? {
        return None;
    }
    Some(
        out.stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
            .filter(|p| p.is_file())
            .collect(),
    )
}

/// Every file below `dir` except build output and version control.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            if !matches!(
                name.to_str(),
                Some("target" | ".git" | ".cache" | "_release" | "artifacts")
            ) {
                walk(&entry.path(), out);
            }
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

#[test]
fn no_file_refers_to_data_outside_the_repository() {
    let root = repo_root();
    let files = git_files(&root).unwrap_or_else(|| {
        let mut files = Vec::new();
        walk(&root, &mut files);
        files
    });
    // Built so that this file does not contain them.
    let needles = [["..", "shared"].join("/"), ["shared", "data"].join("/")];
    let mut offenders = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for (index, line) in text.lines().enumerate() {
            if needles.iter().any(|n| line.contains(n.as_str())) {
                offenders.push(format!(
                    "{}:{}: {}",
                    file.strip_prefix(&root).unwrap().display(),
                    index + 1,
                    line.trim()
                ));
            }
        }
    }
    println!("{} files searched", files.len());
    assert!(
        files.len() > 100,
        "only {} files found under {}",
        files.len(),
        root.display()
    );
    assert!(
        offenders.is_empty(),
        "{} lines refer to test data outside the repository (use testdata/ and olm_testdata::path):\n{}",
        offenders.len(),
        offenders.join("\n")
    );
}
