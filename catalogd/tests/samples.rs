//! The sample catalog `make run` publishes must be a valid File-Based Catalog.
#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn the_sample_catalog_in_config_is_valid() {
    let dir = manifest_dir().join("../config/samples/catalog");
    let out = Command::new(env!("CARGO_BIN_EXE_catalogd"))
        .arg("validate")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// Read at run time, not with env!: the cached target dir may hold a build from another checkout.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .expect("set by cargo")
        .into()
}
