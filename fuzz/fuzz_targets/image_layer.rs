//! Layer extraction from arbitrary bytes (plain, gzip or zstd tar; seeds: small hostile tars)
//! into a fresh directory, with small limits. No panic, and when extraction succeeds nothing
//! was written outside the root and no symlink left in the tree resolves outside it.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use olm_image::extract::Extractor;
use olm_image::{Limits, PathFilter};

fuzz_target!(|data: &[u8]| {
    let Ok(parent) = tempfile::tempdir() else {
        return;
    };
    let root = parent.path().join("root");
    if std::fs::create_dir(&root).is_err() {
        return;
    }
    let limits = Limits {
        max_entries: 2_000,
        max_extracted_bytes: 4 << 20,
        max_download_bytes: 4 << 20,
    };
    // Two layers from one input, so whiteouts and cross-layer links get exercised.
    let (first, second) = match data.split_first() {
        Some((b'2', rest)) => rest.split_at(rest.len() / 2),
        _ => (data, &data[..0]),
    };
    let mut extractor = Extractor::new(&root, PathFilter::Everything, limits);
    let mut ok = extractor.apply_layer("sha256:first", first).is_ok();
    if ok && !second.is_empty() {
        ok = extractor.apply_layer("sha256:second", second).is_ok();
    }
    if ok && extractor.finish().is_ok() {
        let names: Vec<_> = std::fs::read_dir(parent.path())
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("root")],
            "wrote beside the root"
        );
        check_inside(&root, &root);
    }
});

/// Every symlink under `dir` that resolves at all resolves inside `root`.
fn check_inside(root: &Path, dir: &Path) {
    let Ok(real_root) = root.canonicalize() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(real) = path.canonicalize() {
                assert!(
                    real.starts_with(&real_root),
                    "{path:?} resolves to {real:?}"
                );
            }
        } else if meta.is_dir() {
            check_inside(root, &path);
        }
    }
}
