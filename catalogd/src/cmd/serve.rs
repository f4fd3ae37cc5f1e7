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

use olm_runtime::exit::Exit;
use olm_runtime::server::{ServeOptions, ServerError, ServerLimits, TlsFiles, bind};
use olm_runtime::shutdown::CancellationToken;

use crate::http::{ops_router, router, validate_catalog_name};
use crate::ingest::ingest_dir;
use crate::metrics::Metrics;
use crate::storage::Storage;

/// Arguments of `catalogd serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The catalog directory (a single catalog file is accepted too).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The catalog name in URLs; defaults to the directory's name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Address to listen on; port 0 picks a free port (printed on start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Serve HTTPS with this PEM certificate (reloaded when the file changes).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    pub limits: ServerLimits,
}

/// Why `serve` stopped with an error.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("failed to create a storage directory: {0}")]
    Scratch(#[source] std::io::Error),
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
    #[error("catalog {dir}: {source}")]
    Catalog {
        dir: PathBuf,
        #[source]
        source: crate::ingest::IngestError,
    },
    #[error("failed to load catalog: {0}")]
    Task(#[source] tokio::task::JoinError),
    #[error(transparent)]
    Server(#[from] ServerError),
}

impl ServeError {
    /// A catalog that does not load and a certificate that does not parse are invalid input;
    /// the rest (disk, a port in use) are runtime failures.
    fn exit(&self) -> Exit {
        match self {
            ServeError::Catalog { .. } | ServeError::Server(ServerError::Tls { .. }) => {
                Exit::Invalid
            }
            _ => Exit::Failed,
        }
    }
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

/// Runs `serve` until SIGINT or SIGTERM; returns the exit status.
pub fn run(args: Args, err: &mut dyn Write) -> Exit {
    // A root that is not a directory must be a regular file: opening a FIFO would block.
    if let Err(e) = std::fs::read_dir(&args.dir).map(drop).or_else(|_| {
        olm_api::regular_file::open_regular(&args.dir)
            .map(drop)
            .map_err(|e| e.into_io_error())
    }) {
        let _ = writeln!(
            err,
            "error: cannot read catalog {}: {e}",
            args.dir.display()
        );
        return Exit::Usage;
    }
    let name = match catalog_name(&args.dir, args.name.as_deref()) {
        Ok(n) => n,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return Exit::Usage;
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "error: failed to start the runtime: {e}");
            return Exit::Failed;
        }
    };
    let result = runtime.block_on(async {
        let shutdown = olm_runtime::shutdown::on_signal();
        serve(args, name, shutdown, err).await
    });
    match result {
        Ok(()) => Exit::Ok,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            e.exit()
        }
    }
}

async fn serve(
    args: Args,
    name: String,
    shutdown: CancellationToken,
    err: &mut dyn Write,
) -> Result<(), ServeError> {
    let scratch = tempfile::Builder::new()
        .prefix("catalogd-serve-")
        .tempdir()
        .map_err(ServeError::Scratch)?;
    let storage = Storage::open(scratch.path())?;
    let started = std::time::Instant::now();
    let stored = {
        let (storage, name, dir) = (storage.clone(), name.clone(), args.dir.clone());
        let digest = format!("dir:{}", args.dir.display());
        tokio::task::spawn_blocking(move || ingest_dir(&storage, &name, &digest, &dir))
            .await
            .map_err(ServeError::Task)?
            .map_err(|source| ServeError::Catalog {
                dir: args.dir.clone(),
                source,
            })?
    };
    let metrics = Metrics::new();
    metrics.observe_unpack(&name, started.elapsed().as_secs_f64(), stored.len());
    metrics.set_catalogs_served(1);

    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        _ => None,
    };
    let bound = bind(args.listen)?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let ready = Arc::new(AtomicBool::new(true));
    let app = router(storage, metrics.clone()).merge(ops_router(metrics, ready.clone()));
    let options = ServeOptions {
        tls,
        limits: args.limits,
        ..ServeOptions::default()
    };
    let _ = writeln!(
        err,
        "serving catalog {name} ({} blobs, {} bytes) from {} at {scheme}://{}/catalogs/{name}/api/v1/all",
        stored.blobs(),
        stored.len(),
        args.dir.display(),
        bound.addr,
    );
    let result = bound
        .serve_with(app, options, shutdown.cancelled_owned())
        .await;
    ready.store(false, Ordering::Release);
    drop(scratch);
    Ok(result?)
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
