//! Runs an HTTP or HTTPS listener for a router until shutdown, reloading TLS certificates when
//! their files change (cert-manager and OpenShift's service CA rotate them in place).
//!
//! Input: an address, a router, optional certificate files and a shutdown signal. Output: a
//! served socket. Network IO: accepts connections on the given address only.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum_server::Handle;
use axum_server::accept::NoDelayAcceptor;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};

/// How long in-flight responses may continue after shutdown starts (upstream: 30 s).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// How often certificate files are checked for changes.
const CERT_POLL: Duration = Duration::from_secs(10);

/// A certificate and key in PEM files.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("failed to load TLS certificate {cert} and key {key}: {source}")]
    Tls {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to bind {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to serve on {addr}: {source}")]
    Serve {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A listener bound but not yet serving, so callers learn the real port of `:0` before serving.
pub struct Bound {
    listener: std::net::TcpListener,
    pub addr: SocketAddr,
}

/// Binds `addr` (use port 0 for an ephemeral port).
pub fn bind(addr: SocketAddr) -> Result<Bound, ServerError> {
    let listener =
        std::net::TcpListener::bind(addr).map_err(|source| ServerError::Bind { addr, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| ServerError::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ServerError::Bind { addr, source })?;
    Ok(Bound { listener, addr })
}

impl Bound {
    /// Serves `app` until `shutdown` resolves, then lets in-flight requests finish.
    pub async fn serve(
        self,
        app: Router,
        tls: Option<TlsFiles>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        self.serve_with_cert_poll(app, tls, shutdown, CERT_POLL)
            .await
    }

    /// [`Bound::serve`] with a chosen certificate-change polling interval.
    pub async fn serve_with_cert_poll(
        self,
        app: Router,
        tls: Option<TlsFiles>,
        shutdown: impl Future<Output = ()> + Send + 'static,
        cert_poll: Duration,
    ) -> Result<(), ServerError> {
        let addr = self.addr;
        let handle = Handle::new();
        let stopper = handle.clone();
        tokio::spawn(async move {
            shutdown.await;
            stopper.graceful_shutdown(Some(SHUTDOWN_GRACE));
        });
        let service = app.into_make_service();
        // TCP_NODELAY on every connection, plain or TLS: a streamed body is written after its
        // headers, and with Nagle's algorithm a small body then waits for the client's delayed
        // ACK (about 40 ms per response on Linux; see docs/PERFORMANCE.md).
        let result = match tls {
            None => {
                axum_server::from_tcp(self.listener)
                    .map_err(|source| ServerError::Serve { addr, source })?
                    .acceptor(NoDelayAcceptor)
                    .handle(handle)
                    .serve(service)
                    .await
            }
            Some(files) => {
                let config = RustlsConfig::from_pem_file(&files.cert, &files.key)
                    .await
                    .map_err(|source| ServerError::Tls {
                        cert: files.cert.clone(),
                        key: files.key.clone(),
                        source,
                    })?;
                tokio::spawn(reload_on_change(config.clone(), files, cert_poll));
                axum_server::from_tcp(self.listener)
                    .map_err(|source| ServerError::Serve { addr, source })?
                    .acceptor(RustlsAcceptor::new(config).acceptor(NoDelayAcceptor))
                    .handle(handle)
                    .serve(service)
                    .await
            }
        };
        result.map_err(|source| ServerError::Serve { addr, source })
    }
}

fn modified(files: &TlsFiles) -> Option<(SystemTime, SystemTime)> {
    let m = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    Some((m(&files.cert)?, m(&files.key)?))
}

/// Polls the certificate files and swaps the served certificate when they change. A failed
/// reload (for example a half-written pair) keeps the previous certificate and retries.
async fn reload_on_change(config: RustlsConfig, files: TlsFiles, every: Duration) {
    let mut seen = modified(&files);
    loop {
        tokio::time::sleep(every).await;
        let now = modified(&files);
        if now.is_none() || now == seen {
            continue;
        }
        match config.reload_from_pem_file(&files.cert, &files.key).await {
            Ok(()) => {
                tracing::info!(cert = %files.cert.display(), "reloaded TLS certificate");
                seen = now;
            }
            Err(e) => {
                tracing::warn!(cert = %files.cert.display(), error = %e, "failed to reload TLS certificate; keeping the previous one")
            }
        }
    }
}
