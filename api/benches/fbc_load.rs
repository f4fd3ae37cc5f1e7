//! Load benchmark for the large derived catalog: `walk_metas_dir` (canonical blobs, what catalogd
//! stores), `DeclarativeConfig::load_dir` (typed model) and `validate`.
//!
//! Run: `cargo bench -p olm-api --bench fbc_load [-- [--only=walk|load] [CATALOG_DIR]]`.
//! Prints the best and median wall time of several runs for each step; `--only` runs one step (to
//! measure its peak memory with `/usr/bin/time -v`). Results are recorded in docs/PERFORMANCE.md.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use olm_api::fbc::{Checks, DeclarativeConfig, validate, walk_metas_dir};

const RUNS: usize = 5;

fn default_catalog() -> PathBuf {
    olm_testdata::path("catalogs/community-operators-prod-derived/catalog")
}

fn measure(name: &str, mut f: impl FnMut() -> String) {
    let mut times: Vec<Duration> = Vec::new();
    let mut note = String::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        note = f();
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "{name:<28} best {:>8.1} ms   median {:>8.1} ms   ({note})",
        times[0].as_secs_f64() * 1e3,
        times[RUNS / 2].as_secs_f64() * 1e3
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a non-flag argument is a catalog path.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map_or_else(default_catalog, PathBuf::from);
    let only = args
        .iter()
        .find_map(|a| a.strip_prefix("--only="))
        .unwrap_or("all")
        .to_owned();
    let run = |step: &str| only == "all" || only == step;
    println!("catalog: {}", root.display());
    if run("walk") {
        measure_walk(&root);
    }
    if run("load") {
        measure("DeclarativeConfig::load_dir", || {
            let cfg = DeclarativeConfig::load_dir(&root).unwrap();
            format!("{} bundles", cfg.bundles.len())
        });
    }
    if only == "all" {
        let cfg = DeclarativeConfig::load_dir(&root).unwrap();
        measure("validate", || {
            let r = validate(&cfg, &Checks::default());
            format!("{} errors, {} warnings", r.errors.len(), r.warnings.len())
        });
    }
}

fn measure_walk(root: &Path) {
    measure("walk_metas_dir", || {
        let (mut n, mut bytes) = (0usize, 0usize);
        walk_metas_dir(root, |m| {
            n += 1;
            bytes += m.blob.len() + 1;
            Ok(())
        })
        .unwrap();
        format!("{n} blobs, {bytes} bytes of JSONL")
    });
}
