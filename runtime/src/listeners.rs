//! The operational listeners of both controllers, as upstream's managers open them: health
//! probes over plain HTTP, metrics over HTTPS for authenticated and authorized callers only, and
//! the optional profiling listener.
//!
//! Input: [`Listeners`] (addresses from the flags), the metrics registry, the readiness flag, a
//! Kubernetes client (for the metrics listener's TokenReviews and SubjectAccessReviews). Output:
//! one server task per listener. Network: the listeners; the Kubernetes API for reviews.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use prometheus_client::registry::Registry;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::go_flags::TlsProfile;
use crate::metrics_auth::{self, MetricsAuth};
use crate::ops;
use crate::server::{ServeOptions, ServerError, ServerLimits, TlsFiles, bind, check_tls_files};

/// Where to listen.
#[derive(Clone, Debug)]
pub struct Listeners {
    /// `/healthz`, `/readyz` (plain HTTP).
    pub health: Option<SocketAddr>,
    /// `/metrics` over HTTPS with this certificate, behind [`metrics_auth`].
    pub metrics: Option<(SocketAddr, TlsFiles)>,
    /// `/debug/pprof/`.
    pub pprof: Option<SocketAddr>,
    pub tls_profile: TlsProfile,
    pub limits: ServerLimits,
}

/// A running server.
pub type ServerTask = JoinHandle<Result<(), ServerError>>;

/// Binds every listener (failing before anything is served when one cannot be bound or its
/// certificate cannot be loaded) and serves until `stop` is cancelled.
pub fn start(
    listeners: Listeners,
    registry: Arc<Registry>,
    ready: Arc<AtomicBool>,
    client: kube::Client,
    stop: CancellationToken,
) -> Result<Vec<ServerTask>, ServerError> {
    let plain = ServeOptions {
        limits: listeners.limits,
        ..ServeOptions::default()
    };
    let mut bound = Vec::new();
    if let Some(addr) = listeners.health {
        let b = bind(addr)?;
        tracing::info!(addr = %b.addr, "health probe server listening");
        bound.push((b, ops::health_router(ready), plain.clone()));
    }
    if let Some((addr, files)) = listeners.metrics {
        check_tls_files(&files)?;
        let b = bind(addr)?;
        tracing::info!(addr = %b.addr, cert = %files.cert.display(), "metrics server listening (HTTPS, authenticated and authorized)");
        let app = ops::metrics_router(registry).layer(axum::middleware::from_fn_with_state(
            MetricsAuth::new(client),
            metrics_auth::filter,
        ));
        let options = ServeOptions {
            tls: Some(files),
            tls_profile: listeners.tls_profile.clone(),
            http1_only: true,
            limits: listeners.limits,
            ..ServeOptions::default()
        };
        bound.push((b, app, options));
    } else {
        tracing::warn!(
            "metrics server is disabled: metrics are served only with --tls-cert and --tls-key, as upstream"
        );
    }
    if let Some(addr) = listeners.pprof {
        let b = bind(addr)?;
        tracing::info!(addr = %b.addr, "profiling server listening");
        bound.push((b, ops::pprof_router(), plain));
    }
    Ok(bound
        .into_iter()
        .map(|(b, app, options)| {
            tokio::spawn(b.serve_with(app, options, stop.clone().cancelled_owned()))
        })
        .collect())
}
