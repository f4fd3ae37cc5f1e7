//! Measures olm-image on a large catalog: builds a catalog image from an FBC directory, pushes it
//! to a loopback docker-registry, then pulls and unpacks it in a separate process (so its peak
//! RSS is the pull's alone), cold and then from the cache. Talks to 127.0.0.1 only.
//!
//! Usage (release mode, registry binary from `make tools`):
//!   cargo run --release -p olm-e2e --example image_pull_bench -- [FBC_DIR]
//! FBC_DIR defaults to testdata/catalogs/community-operators-prod-derived.
//! The pull process runs under `/usr/bin/time -v` when it exists.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Instant;

use olm_e2e::registry::Registry;
use olm_image::push::{Layer, Pusher};
use olm_image::{ExtractFilter, Puller, PullerConfig};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("pull") {
        pull(&args[1], &args[2], &args[3]).await;
        return;
    }
    let fbc_dir = args
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(|| olm_e2e::images::testdata("catalogs/community-operators-prod-derived"));

    let registry = Registry::start().await.unwrap_or_else(|e| panic!("{e}"));
    let reference = registry.image("bench/catalog:v1");
    let started = Instant::now();
    let layer = Layer::from_dir(&fbc_dir, "configs").unwrap();
    let built = started.elapsed();
    let layer_bytes = layer.data.len();
    let pusher = Pusher::new(registry.pusher_config()).unwrap();
    let pushed = pusher
        .push_image(
            &reference,
            &olm_image::push::ImageSpec {
                layers: vec![layer],
                labels: olm_image::push::catalog_labels("/configs"),
                platform: olm_image::Platform::default(),
            },
        )
        .await
        .unwrap();
    println!(
        "built layer from {} in {:.2?} ({layer_bytes} bytes gzip), pushed in {:.2?}: {}",
        fbc_dir.display(),
        built,
        started.elapsed() - built,
        pushed.digest_ref
    );

    let cache = tempfile::tempdir().unwrap();
    for run in ["cold (empty cache)", "warm (same digest cached)"] {
        let me = std::env::current_exe().unwrap();
        let time = std::path::Path::new("/usr/bin/time");
        let mut command = if time.exists() {
            let mut c = std::process::Command::new(time);
            c.arg("-v").arg(&me);
            c
        } else {
            std::process::Command::new(&me)
        };
        let output = command
            .args([
                "pull",
                &reference,
                &cache.path().to_string_lossy(),
                &registry.host(),
            ])
            .output()
            .unwrap();
        println!("--- pull, {run} ---");
        print!("{}", String::from_utf8_lossy(&output.stdout));
        for line in String::from_utf8_lossy(&output.stderr).lines() {
            let line = line.trim();
            if line.starts_with("Elapsed (wall clock)")
                || line.starts_with("Maximum resident set size")
                || line.starts_with("User time")
                || line.starts_with("System time")
                || line.starts_with("Percent of CPU")
            {
                println!("  {line}");
            }
        }
        assert!(
            output.status.success(),
            "pull failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    registry.stop().await;
}

/// The measured part: one pull in a fresh process.
async fn pull(reference: &str, cache: &str, insecure_host: &str) {
    let mut config = PullerConfig::new(cache);
    config.insecure_registries = vec![insecure_host.to_string()];
    let puller = Puller::new(config).unwrap();
    let started = Instant::now();
    let unpacked = puller
        .pull("bench", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    let elapsed = started.elapsed();
    let (files, bytes) = count(&unpacked.dir);
    println!(
        "  pull+unpack {:.3?} (fresh: {}), {files} files, {bytes} bytes",
        elapsed, unpacked.fresh
    );
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(hwm) = status.lines().find(|l| l.starts_with("VmHWM")) {
        println!("  {}", hwm.split_whitespace().collect::<Vec<_>>().join(" "));
    }
}

fn count(dir: &std::path::Path) -> (u64, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            let (f, b) = count(&entry.path());
            files += f;
            bytes += b;
        } else {
            files += 1;
            bytes += meta.len();
        }
    }
    (files, bytes)
}
