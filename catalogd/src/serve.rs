//! `catalogd serve`: serves a local File-Based Catalog directory exactly as a ClusterCatalog's
//! content is served in a cluster (same bytes, same headers), for people debugging catalogs and
//! for tests.
//!
//! Input: a directory, a catalog name and a listen address. Output: an HTTP(S) server until
//! SIGINT/SIGTERM. Reads the directory, writes a temporary storage root, listens on the address.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cli::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};
use crate::http::{ops_router, router, validate_catalog_name};
use crate::ingest::ingest_dir;
use crate::metrics::Metrics;
use crate::server::{TlsFiles, bind};
use crate::storage::Storage;

/// What `serve` needs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub dir: PathBuf,
    pub name: Option<String>,
    pub listen: SocketAddr,
    pub tls: Option<TlsFiles>,
}

/// The catalog name: the given one, or the directory's own name.
pub fn catalog_name(dir: &Path, name: Option<&str>) -> Result<String, String> {
    let name = match name {
        Some(n) => n.to_string(),
        None => {
            let abs = dir
                .canonicalize()
                .map_err(|e| format!("cannot read catalog {}: {e}", dir.display()))?;
            abs.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .ok_or_else(|| {
                    format!(
                        "cannot derive a catalog name from {}; pass --name",
                        dir.display()
                    )
                })?
        }
    };
    validate_catalog_name(&name).map_err(|e| format!("{e}; pass a valid --name"))?;
    Ok(name)
}

/// Runs `serve` to completion; returns the exit status.
pub fn run(opts: ServeOptions, err: &mut dyn Write) -> u8 {
    // A root that is not a directory must be a regular file: opening a FIFO would block.
    if let Err(e) = std::fs::read_dir(&opts.dir).map(drop).or_else(|_| {
        olm_api::regular_file::open_regular(&opts.dir)
            .map(drop)
            .map_err(|e| e.into_io_error())
    }) {
        let _ = writeln!(
            err,
            "error: cannot read catalog {}: {e}",
            opts.dir.display()
        );
        return EXIT_USAGE;
    }
    let name = match catalog_name(&opts.dir, opts.name.as_deref()) {
        Ok(n) => n,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_USAGE;
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "error: failed to start the runtime: {e}");
            return EXIT_INVALID;
        }
    };
    match runtime.block_on(serve(opts, name, err)) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            EXIT_INVALID
        }
    }
}

async fn serve(opts: ServeOptions, name: String, err: &mut dyn Write) -> Result<(), String> {
    let scratch = tempfile::Builder::new()
        .prefix("catalogd-serve-")
        .tempdir()
        .map_err(|e| format!("failed to create a storage directory: {e}"))?;
    let storage = Storage::open(scratch.path()).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let stored = {
        let (storage, name, dir) = (storage.clone(), name.clone(), opts.dir.clone());
        let digest = format!("dir:{}", opts.dir.display());
        tokio::task::spawn_blocking(move || ingest_dir(&storage, &name, &digest, &dir))
            .await
            .map_err(|e| format!("failed to load catalog: {e}"))?
            .map_err(|e| format!("catalog {}: {e}", opts.dir.display()))?
    };
    let metrics = Metrics::new();
    metrics.observe_unpack(&name, started.elapsed().as_secs_f64(), stored.len());
    metrics.set_catalogs_served(1);

    let bound = bind(opts.listen).map_err(|e| e.to_string())?;
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let ready = Arc::new(AtomicBool::new(true));
    let app = router(storage, metrics.clone()).merge(ops_router(metrics, ready.clone()));
    let _ = writeln!(
        err,
        "serving catalog {name} ({} blobs, {} bytes) from {} at {scheme}://{}/catalogs/{name}/api/v1/all",
        stored.blobs(),
        stored.len(),
        opts.dir.display(),
        bound.addr,
    );
    let result = bound.serve(app, opts.tls, shutdown_signal()).await;
    ready.store(false, Ordering::Release);
    drop(scratch);
    result.map_err(|e| e.to_string())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_name_defaults_to_the_directory_name() {
        let parent = tempfile::tempdir().expect("tempdir");
        let dir = parent.path().join("my-catalog");
        std::fs::create_dir(&dir).expect("mkdir");
        assert_eq!(catalog_name(&dir, None).expect("name"), "my-catalog");
        assert_eq!(catalog_name(&dir, Some("other")).expect("name"), "other");
        let bad = parent.path().join("Bad_Dir");
        std::fs::create_dir(&bad).expect("mkdir");
        let e = catalog_name(&bad, None).expect_err("invalid");
        assert!(
            e.contains("invalid catalog name") && e.contains("--name"),
            "{e}"
        );
    }
}
