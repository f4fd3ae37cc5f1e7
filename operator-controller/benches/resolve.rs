//! Resolution benchmark on the large derived catalog (`community-operators-prod-derived`, 86 MB):
//! a package's content fetched from catalogd over HTTP (cold: empty cache), served from the cache
//! (warm), resolution alone, and the directory source.
//!
//! Run: `cargo bench -p operator-controller --bench resolve [-- [--server-nodelay=false] [--no-gzip] PACKAGE...]`.
//! catalogd is the real content API (`catalogd::http::router`) on 127.0.0.1 in this process (its
//! own thread and runtime), fed by `catalogd::ingest::ingest_dir`, as `catalogd serve` runs it.
//! Prints the best and median of several runs; results are recorded in docs/PERFORMANCE.md.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use catalogd::ingest::ingest_dir;
use catalogd::metrics::Metrics;
use catalogd::storage::Storage;
use olm_api::v1::{CatalogFilter, UpgradeConstraintPolicy};
use operator_controller::catalog_source::dir::DirSource;
use operator_controller::catalog_source::http::{CatalogEndpoint, CatalogdClient, ClientOptions};
use operator_controller::resolve::{CatalogInfo, InstalledBundle, PackageContent, Resolver};
use reqwest::Url;

const RUNS: usize = 7;
const WARM_CALLS: u32 = 2000;

fn catalog_dir() -> PathBuf {
    olm_testdata::path("catalogs/community-operators-prod-derived/catalog")
}

fn report(name: &str, mut times: Vec<Duration>, note: &str) {
    times.sort();
    println!(
        "  {name:<40} best {:>9.3} ms   median {:>9.3} ms   {note}",
        times[0].as_secs_f64() * 1e3,
        times[times.len() / 2].as_secs_f64() * 1e3
    );
}

/// `nodelay`: set TCP_NODELAY on accepted connections (see docs/PERFORMANCE.md for why).
fn serve(storage: Storage, nodelay: bool) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            use axum::serve::ListenerExt;
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let listener = listener.tap_io(move |tcp| {
                if nodelay {
                    let _ = tcp.set_nodelay(true);
                }
            });
            axum::serve(listener, catalogd::http::router(storage, Metrics::new()))
                .await
                .unwrap();
        });
    });
    addr
}

/// The lowest-versioned bundle, to resolve an upgrade from.
fn oldest(content: &PackageContent) -> InstalledBundle {
    let b = content
        .bundles()
        .iter()
        .filter(|b| b.version.is_ok())
        .min_by(|a, b| a.version.as_ref().unwrap().cmp(b.version.as_ref().unwrap()))
        .unwrap();
    InstalledBundle {
        name: b.bundle.name.clone(),
        version: b.version.as_ref().unwrap().to_string(),
        release: None,
    }
}

fn main() {
    let all: Vec<String> = std::env::args().skip(1).collect();
    // `--server-nodelay=false` serves like a server that leaves Nagle's algorithm on.
    let nodelay = !all.iter().any(|a| a == "--server-nodelay=false");
    // `--no-gzip` fetches uncompressed answers.
    let options = ClientOptions {
        accept_gzip: !all.iter().any(|a| a == "--no-gzip"),
        ..ClientOptions::default()
    };
    let args: Vec<String> = all.into_iter().filter(|a| !a.starts_with("--")).collect();
    let packages: Vec<String> = if args.is_empty() {
        [
            "project-quay",
            "eclipse-che",
            "ember-csi-community-operator",
        ]
        .map(String::from)
        .to_vec()
    } else {
        args
    };
    let dir = catalog_dir();
    println!("catalog: {}", dir.display());

    let storage_dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(storage_dir.path()).unwrap();
    let t = Instant::now();
    ingest_dir(&storage, "catalog", "sha256:bench", &dir).unwrap();
    println!("catalogd ingest: {:.2} s", t.elapsed().as_secs_f64());
    let addr = serve(storage, nodelay);
    println!(
        "server TCP_NODELAY: {nodelay}; client accepts gzip: {}",
        options.accept_gzip
    );
    let base = Url::parse(&format!("http://{addr}/catalogs/catalog")).unwrap();
    let endpoint = CatalogEndpoint {
        name: "catalog".into(),
        base_url: base,
        revision: Some("sha256:bench".into()),
    };
    let catalogs = vec![CatalogInfo::new("catalog", 0)];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    for package in &packages {
        let source = DirSource::open(&dir).unwrap();
        let content = Arc::new(source.package(package).unwrap());
        let installed = oldest(&content);
        println!(
            "{package}: {} channels, {} bundles; upgrade from {}",
            content.channels().len(),
            content.bundles().len(),
            installed.version
        );
        let filter = CatalogFilter {
            package_name: package.clone(),
            version: None,
            channels: Vec::new(),
            selector: None,
            upgrade_constraint_policy: UpgradeConstraintPolicy::CatalogProvided,
        };
        let resolve = |content: Arc<PackageContent>, installed: Option<&InstalledBundle>| {
            let r = Resolver::new(&filter, installed).unwrap();
            let selected = r.catalogs_to_search(&catalogs);
            r.resolve_fetched([(selected[0], Ok(content))])
                .map(|r| r.status_version())
                .unwrap_or_else(|e| e.to_string())
        };

        // Cold: a new client per run (new connection, empty cache), as after a restart.
        let mut times = Vec::new();
        let mut note = String::new();
        for _ in 0..RUNS {
            let t = Instant::now();
            let client = CatalogdClient::new(options.clone()).unwrap();
            let content = rt.block_on(client.package(&endpoint, package)).unwrap();
            note = resolve(content, None);
            times.push(t.elapsed());
        }
        report(
            "cold: new client, fetch + parse + resolve",
            times,
            &format!("-> {note}"),
        );

        // Cold for the cache but with a live connection, as after a catalog update.
        let client = CatalogdClient::new(options.clone()).unwrap();
        rt.block_on(client.package(&endpoint, package)).unwrap();
        let mut times = Vec::new();
        for _ in 0..RUNS {
            client.forget_catalog("catalog");
            let t = Instant::now();
            let content = rt.block_on(client.package(&endpoint, package)).unwrap();
            note = resolve(content, Some(&installed));
            times.push(t.elapsed());
        }
        report(
            "cold: kept connection, upgrade",
            times,
            &format!("-> {note}"),
        );

        // Warm: the reconcile path with unchanged catalog content.
        let before = client.stats().requests;
        let mut times = Vec::new();
        for _ in 0..RUNS {
            let t = Instant::now();
            for _ in 0..WARM_CALLS {
                let content = rt.block_on(client.package(&endpoint, package)).unwrap();
                note = resolve(content, Some(&installed));
            }
            times.push(t.elapsed() / WARM_CALLS);
        }
        assert_eq!(client.stats().requests, before, "warm calls sent requests");
        report(
            "warm: cache hit + resolve (per call)",
            times,
            &format!("-> {note}"),
        );

        let mut times = Vec::new();
        for _ in 0..RUNS {
            let t = Instant::now();
            for _ in 0..WARM_CALLS {
                note = resolve(content.clone(), Some(&installed));
            }
            times.push(t.elapsed() / WARM_CALLS);
        }
        report("resolve only (per call)", times, &format!("-> {note}"));

        let mut times = Vec::new();
        for _ in 0..RUNS {
            let t = Instant::now();
            let content = Arc::new(source.package(package).unwrap());
            note = resolve(content, None);
            times.push(t.elapsed());
        }
        report(
            "directory source: read 86 MB tree + resolve",
            times,
            &format!("-> {note}"),
        );
    }
}
