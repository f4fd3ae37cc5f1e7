//! The workspace denies `unsafe_code` and allows exactly one exception: the declaration of glibc's
//! `malloc_trim` in `runtime/src/allocator.rs`. Every Rust file of the workspace (not its build
//! output, not the fuzz crate's own workspace) is searched for attributes that lift the lint.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        let name = entry.file_name();
        if kind.is_dir() {
            if !matches!(
                name.to_str(),
                Some("target" | ".git" | ".cache" | "_release" | "artifacts")
            ) {
                rust_files(&entry.path(), out);
            }
        } else if kind.is_file() && name.to_str().is_some_and(|n| n.ends_with(".rs")) {
            out.push(entry.path());
        }
    }
}

#[test]
fn the_workspace_denies_unsafe_code_with_one_reviewed_exception() {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("[workspace.lints.rust]\n")
            && manifest
                .lines()
                .any(|l| l.trim() == r#"unsafe_code = "deny""#),
        "the workspace manifest must deny unsafe_code"
    );

    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 100, "only {} Rust files found", files.len());
    // Built so that this file does not contain them.
    let lifts = ["allow", "expect", "warn"].map(|level| format!("{level}({})", "unsafe_code"));
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (index, line) in text.lines().enumerate() {
            if lifts.iter().any(|l| line.contains(l.as_str())) {
                found.push(format!(
                    "{}:{}",
                    file.strip_prefix(&root).unwrap().display(),
                    index + 1
                ));
            }
        }
    }
    assert_eq!(found.len(), 1, "unsafe_code lifted in: {found:#?}");
    assert!(
        found[0].starts_with("runtime/src/allocator.rs:"),
        "{found:?}"
    );
}
