//! `catalogd run`: the in-cluster mode. Watches ClusterCatalogs, unpacks their images, serves their
//! content, and (on the elected leader) writes their status.
//!
//! Input: [`RunOptions`]. Output: runs until SIGINT/SIGTERM. Network: the Kubernetes API, image
//! registries, and the catalog, health and metrics listeners.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{Controller, watcher};
use olm_api::v1::ClusterCatalog;
use olm_image::{Puller, PullerConfig};
use tokio::sync::watch;

use crate::controller::gc;
use crate::controller::pull_secret::{self, SecretRef};
use crate::controller::reconcile::{Context, error_policy, reconcile};
use crate::http::{ops_router, router};
use crate::leader::{self, Timing};
use crate::metrics::Metrics;
use crate::server::{TlsFiles, bind};
use crate::storage::Storage;

/// Lease name of catalogd's leader election (upstream's).
pub const LEADER_ELECTION_ID: &str = "catalogd-operator-lock";

/// Settings of `catalogd run`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub kubeconfig: Option<PathBuf>,
    pub catalogs_server_addr: SocketAddr,
    pub external_address: String,
    pub cache_dir: PathBuf,
    pub tls: Option<TlsFiles>,
    pub metrics_addr: Option<SocketAddr>,
    pub health_addr: Option<SocketAddr>,
    pub leader_elect: bool,
    pub leader_election_namespace: String,
    pub global_pull_secret: Option<SecretRef>,
    pub pull_cas_dir: Option<PathBuf>,
    pub insecure_registries: Vec<String>,
    pub gc_interval: Duration,
    pub poll_unit: Duration,
    pub identity: String,
    /// Only ClusterCatalogs matching this label selector are managed.
    pub label_selector: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("failed to configure the Kubernetes client: {0}")]
    Kube(String),
    #[error("failed to prepare the cache directory: {0}")]
    Storage(#[from] crate::storage::StorageError),
    #[error("failed to read registry CA certificates from {path}: {source}")]
    Cas {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to create the image puller: {0}")]
    Puller(#[from] olm_image::ConnectionError),
    #[error(transparent)]
    Server(#[from] crate::server::ServerError),
}

/// Parses a listen address the way Go flags are written: `:8443` means every interface.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|e| format!("invalid listen address {s:?}: {e}"))
}

/// Reads every PEM file in a directory into one bundle.
fn read_cas(dir: &std::path::Path) -> Result<Vec<u8>, RunError> {
    let err = |source| RunError::Cas {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(err)?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    let mut bundle = Vec::new();
    for path in entries.into_iter().filter(|p| p.is_file()) {
        // Regular files only, bounded (docs/SECURITY.md): a CA bundle is a few hundred KiB.
        let bytes =
            olm_api::regular_file::read_regular(&path, 4 << 20).map_err(|e| RunError::Cas {
                path: path.clone(),
                source: e.into_io_error(),
            })?;
        bundle.extend_from_slice(&bytes);
        bundle.push(b'\n');
    }
    Ok(bundle)
}

async fn kube_client(kubeconfig: Option<&PathBuf>) -> Result<kube::Client, RunError> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| RunError::Kube(e.to_string()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| RunError::Kube(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| RunError::Kube(e.to_string()))?,
    };
    kube::Client::try_from(config).map_err(|e| RunError::Kube(e.to_string()))
}

/// Runs until `shutdown` resolves.
pub async fn run(
    opts: RunOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let client = kube_client(opts.kubeconfig.as_ref()).await?;
    let storage = Storage::open(opts.cache_dir.join("catalogs"))?;
    let mut puller_config = PullerConfig::new(opts.cache_dir.join("unpack"));
    puller_config.insecure_registries = opts.insecure_registries.clone();
    if let Some(dir) = &opts.pull_cas_dir {
        puller_config.extra_ca_pem = Some(read_cas(dir)?);
    }
    let puller = Arc::new(Puller::new(puller_config.clone())?);
    let metrics = Metrics::new();
    metrics.set_catalogs_served(storage.catalogs().map(|c| c.len()).unwrap_or(0));

    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };

    let (leading, election) = if opts.leader_elect {
        let (rx, handle) = leader::elect(
            client.clone(),
            &opts.leader_election_namespace,
            LEADER_ELECTION_ID,
            &opts.identity,
            Timing::default(),
            stopped(),
        );
        (rx, Some(handle))
    } else {
        let (tx, rx) = watch::channel(true);
        // Keep the sender alive for the whole run so receivers never see a closed channel.
        std::mem::forget(tx);
        (rx, None)
    };

    let ctx = Arc::new(Context::new(
        client.clone(),
        storage.clone(),
        puller,
        leading.clone(),
        opts.external_address.clone(),
        opts.tls.is_some(),
        opts.poll_unit,
        metrics.clone(),
    ));

    // Every replica serves content, leader or not.
    let ready = Arc::new(AtomicBool::new(false));
    let catalog_server = bind(opts.catalogs_server_addr)?;
    tracing::info!(addr = %catalog_server.addr, "catalog content server listening");
    let mut servers = vec![tokio::spawn(catalog_server.serve(
        router(storage, metrics.clone()),
        opts.tls.clone(),
        stopped(),
    ))];
    let mut ops_addrs: Vec<SocketAddr> = opts.metrics_addr.into_iter().collect();
    if let Some(health) = opts.health_addr
        && Some(health) != opts.metrics_addr
    {
        ops_addrs.push(health);
    }
    for addr in ops_addrs {
        let bound = bind(addr)?;
        tracing::info!(addr = %bound.addr, "health and metrics server listening");
        servers.push(tokio::spawn(bound.serve(
            ops_router(metrics.clone(), ready.clone()),
            None,
            stopped(),
        )));
    }
    ready.store(true, Ordering::Release);

    let mut background = vec![tokio::spawn(gc::run(
        ctx.clone(),
        opts.label_selector.clone(),
        opts.gc_interval,
        stopped(),
    ))];
    if let Some(secret) = opts.global_pull_secret.clone() {
        let (ctx, base) = (ctx.clone(), puller_config.clone());
        background.push(tokio::spawn(pull_secret::watch(ctx, secret, base)));
    }

    // A change of leadership re-examines every catalog (the new leader owns their status).
    let leadership_changes = futures::stream::unfold(leading, |mut rx| async move {
        rx.changed().await.ok().map(|()| ((), rx))
    });
    let api: Api<ClusterCatalog> = Api::all(client);
    let mut watch_config = watcher::Config::default();
    if let Some(selector) = &opts.label_selector {
        watch_config = watch_config.labels(selector);
    }
    let controller = Controller::new(api, watch_config)
        .reconcile_all_on(leadership_changes)
        .graceful_shutdown_on(stopped())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "controller event");
            }
        });
    let controller = tokio::spawn(controller);

    shutdown.await;
    tracing::info!("shutting down");
    ready.store(false, Ordering::Release);
    let _ = stop_tx.send(true);
    let _ = controller.await;
    for task in background {
        task.abort();
    }
    if let Some(election) = election {
        let _ = election.await;
    }
    for server in servers {
        if let Ok(Err(e)) = server.await {
            tracing::warn!(error = %e, "server stopped with an error");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_style_listen_addresses_are_accepted() {
        assert_eq!(
            parse_listen(":8443").expect("valid"),
            "0.0.0.0:8443".parse().expect("addr")
        );
        assert_eq!(
            parse_listen("127.0.0.1:0").expect("valid"),
            "127.0.0.1:0".parse().expect("addr")
        );
        assert!(parse_listen("nope").is_err());
    }
}
