//! Measures catalogd's unpack path on a real catalog: pull a catalog image from a registry
//! (`Puller::pull` with `ExtractFilter::CatalogPack`), then store it (`ingest_pack`: walk the
//! FBC, re-encode every object as canonical JSON, write `catalog.jsonl`, its gzip copy and the
//! index), exactly as the ClusterCatalog controller does. One step per process, so
//! `/usr/bin/time -v` reports each step's own peak RSS. Talks only to the registry named on the
//! command line; `hack/bench-catalogd-ingest.sh` starts one on 127.0.0.1 and drives every mode.
//!
//! Modes:
//! - `push FBC_DIR REF` — build a catalog image from `FBC_DIR` (under `/configs`) and push it
//!   over plain HTTP.
//! - `pull-ingest REF CACHE_DIR STORAGE_DIR` — pull then ingest as catalog `bench`; run it twice
//!   with the same directories to measure the unchanged-digest path (no blob GET, no rewrite).
//! - `ingest FBC_DIR STORAGE_DIR` — the ingest step alone, from a local directory.
//!
//! Every mode prints one `key=value` line per measurement on stdout.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use catalogd::ingest::{ingest_dir, ingest_pack};
use catalogd::storage::Storage;
use olm_image::push::{ImageSpec, Layer, Pusher, PusherConfig, catalog_labels};
use olm_image::{ExtractFilter, Platform, Puller, PullerConfig};

const USAGE: &str = "usage: ingest_bench push FBC_DIR REF | pull-ingest REF CACHE_DIR STORAGE_DIR | ingest FBC_DIR STORAGE_DIR";
const CATALOG: &str = "bench";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["push", dir, reference] => runtime().block_on(push(Path::new(dir), reference)),
        ["pull-ingest", reference, cache, storage] => {
            runtime().block_on(pull_ingest(reference, Path::new(cache), Path::new(storage)))
        }
        ["ingest", dir, storage] => ingest(Path::new(dir), Path::new(storage)),
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    }
    report_peak_rss();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// `host:port` of a reference, which the bench always reaches over plain HTTP.
fn registry_host(reference: &str) -> &str {
    reference.split('/').next().unwrap()
}

async fn push(dir: &Path, reference: &str) {
    let started = Instant::now();
    let layer = Layer::from_dir(dir, "configs").unwrap();
    println!("layer_build_s={:.3}", started.elapsed().as_secs_f64());
    println!("layer_bytes={}", layer.data.len());
    let pusher = Pusher::new(PusherConfig::insecure(registry_host(reference))).unwrap();
    let started = Instant::now();
    let pushed = pusher
        .push_image(
            reference,
            &ImageSpec {
                layers: vec![layer],
                labels: catalog_labels("/configs"),
                platform: Platform::default(),
            },
        )
        .await
        .unwrap();
    println!("push_s={:.3}", started.elapsed().as_secs_f64());
    println!("digest_ref={}", pushed.digest_ref);
}

async fn pull_ingest(reference: &str, cache: &Path, storage_dir: &Path) {
    let mut config = PullerConfig::new(cache);
    config.insecure_registries = vec![registry_host(reference).to_string()];
    let puller = Puller::new(config).unwrap();
    let storage = Storage::open(storage_dir).unwrap();
    let before = live_content_dir(storage_dir);

    let started = Instant::now();
    let unpacked = puller
        .pull(CATALOG, reference, ExtractFilter::CatalogPack)
        .await
        .unwrap();
    let pulled = started.elapsed();
    let ingest_started = Instant::now();
    let dir: PathBuf = unpacked.content_dir.clone();
    let digest = unpacked.digest_ref.clone();
    let pack = unpacked.pack.clone();
    println!("packed={}", pack.is_some());
    let stored = tokio::task::spawn_blocking(move || match &pack {
        Some(pack) => ingest_pack(&storage, CATALOG, &digest, &dir, pack),
        None => ingest_dir(&storage, CATALOG, &digest, &dir),
    })
    .await
    .unwrap()
    .unwrap();
    let ingested = ingest_started.elapsed();

    println!("pull_s={:.3}", pulled.as_secs_f64());
    println!("pull_fresh={}", unpacked.fresh);
    println!("ingest_s={:.3}", ingested.as_secs_f64());
    println!("total_s={:.3}", started.elapsed().as_secs_f64());
    println!(
        "content_rewritten={}",
        before.is_none() || before != live_content_dir(storage_dir)
    );
    print_stored(&stored);
}

fn ingest(dir: &Path, storage_dir: &Path) {
    let storage = Storage::open(storage_dir).unwrap();
    let started = Instant::now();
    let stored = ingest_dir(&storage, CATALOG, &format!("dir:{}", dir.display()), dir).unwrap();
    println!("ingest_s={:.3}", started.elapsed().as_secs_f64());
    print_stored(&stored);
}

/// The stored content's figures, after waiting for its gzip copy (written in the background
/// once the content is live): `gzip_ready_s` is how long after the call that took.
fn print_stored(stored: &catalogd::storage::StoredCatalog) {
    let started = Instant::now();
    let gzip_bytes = stored.write_gzip_copy().unwrap();
    println!("gzip_ready_s={:.3}", started.elapsed().as_secs_f64());
    println!("blobs={}", stored.blobs());
    println!("jsonl_bytes={}", stored.len());
    println!("gzip_bytes={gzip_bytes}");
}

/// The content directory `current` points at, if any (a rewrite changes it).
fn live_content_dir(storage_dir: &Path) -> Option<String> {
    std::fs::read_to_string(storage_dir.join(CATALOG).join("current"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn report_peak_rss() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(kb) = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
    {
        println!("peak_rss_kb={kb}");
    }
}
