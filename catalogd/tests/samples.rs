//! The sample catalog `make run` publishes must be a valid File-Based Catalog.
#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn the_sample_catalog_in_config_is_valid() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../config/samples/catalog");
    let out = Command::new(env!("CARGO_BIN_EXE_catalogd"))
        .args(["validate", dir])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
