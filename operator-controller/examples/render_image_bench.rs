//! Measures `operator-controller render` from a bundle image: pushes a bundle directory to a
//! loopback docker-registry, then runs the real binary under `/usr/bin/time -v`, first with an
//! empty cache and then with the same cache (the digest is already unpacked). Talks to 127.0.0.1
//! only.
//!
//! Usage (release mode; registry binary from `make tools`; build the binary first):
//!   cargo build --release -p operator-controller
//!   cargo run --release -p operator-controller --example render_image_bench -- [BUNDLE_DIR] [RUNS]
//! BUNDLE_DIR defaults to the largest render-real bundle (alloydb-omni-operator.1.7.0).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use olm_e2e::registry::Registry;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bundle = args.first().map(PathBuf::from).unwrap_or_else(|| {
        olm_testdata::path("conformance/render-real/bundles/alloydb-omni-operator.1.7.0")
    });
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(3);
    let binary = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("operator-controller");
    assert!(binary.exists(), "build {} first", binary.display());

    let registry = Registry::start().await.unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let pushed =
        olm_e2e::images::push_bundle(&registry, "bench/bundle:v1", &bundle, "bench", &["alpha"])
            .await
            .unwrap();
    println!(
        "pushed {} in {:.2?}: {}",
        bundle.display(),
        started.elapsed(),
        pushed.digest_ref
    );
    let reference = registry.image("bench/bundle:v1");
    for round in 0..runs {
        let cache = tempfile::tempdir().unwrap();
        for phase in ["cold (empty cache)", "warm (same digest cached)"] {
            let output = Command::new("/usr/bin/time")
                .arg("-v")
                .arg(&binary)
                .args([
                    "render",
                    "--bundle",
                    &reference,
                    "--install-namespace",
                    "bench-system",
                    "--cert-provider",
                    "cert-manager",
                    "--insecure-registries",
                    &registry.host(),
                    "--cache-dir",
                    &cache.path().to_string_lossy(),
                ])
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            println!(
                "--- round {round}, {phase}: {} bytes of YAML ---",
                output.stdout.len()
            );
            for line in String::from_utf8_lossy(&output.stderr).lines() {
                let line = line.trim();
                if line.starts_with("Elapsed (wall clock)")
                    || line.starts_with("Maximum resident set size")
                    || line.starts_with("User time")
                    || line.starts_with("System time")
                {
                    println!("  {line}");
                }
            }
        }
    }
    let blob_gets = registry
        .access_log()
        .iter()
        .filter(|e| e.is_blob_get())
        .count();
    println!("blob GETs in total: {blob_gets} (config + layer per cold run)");
}
