//! The HTTP(S) server of both binaries: an accept loop over hyper's HTTP/1.1 + HTTP/2 connection
//! builder, with limits that keep misbehaving clients from holding resources, certificate reload,
//! and graceful shutdown.
//!
//! Input: a bound listener, an axum router, [`ServeOptions`] and a shutdown future. Output: serves
//! until shutdown, then lets in-flight requests finish. Network: the listener; disk: the TLS
//! certificate and key (read as bounded regular files, re-read when they change).
//!
//! Limits ([`ServerLimits`], flags `--http-*` of the binaries):
//!
//! | situation | what happens |
//! |---|---|
//! | TLS handshake not done within `header_read_timeout` | connection closed |
//! | first request's headers not complete within `header_read_timeout` of connecting (HTTP/1.1), or no first stream (HTTP/2) | connection closed |
//! | later request headers (HTTP/1.1 keep-alive) not complete within `header_read_timeout` | connection closed; hyper starts this clock as soon as it waits for a request, so an idle keep-alive connection lasts `header_read_timeout` (as Go's server does with upstream's 5 s `ReadTimeout` and no `IdleTimeout`) |
//! | no request in flight for `idle_timeout` (HTTP/2; HTTP/1.1 reaches the row above first) | graceful close (GOAWAY) |
//! | `max_connections` connections open | nothing more is accepted: new connections wait in the kernel's listen backlog (and are refused by the kernel once it is full) until one closes; open connections keep working |
//! | shutdown | the listener closes, every connection finishes its in-flight requests (at most [`ServeOptions::shutdown_grace`], then they are dropped) |
//!
//! TLS: ALPN offers `h2` and `http/1.1`. The certificate and key are polled for changes every
//! [`ServeOptions::cert_poll`]; a pair that fails to load (half-written, mismatched) keeps the
//! previous certificate in service and is retried at the next change.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use olm_api::regular_file::{FileError, read_regular};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Set in the extensions of every request that arrived over TLS, so a handler can tell how its
/// connection is carried (catalogd paces plain-HTTP downloads only; see its `http::body`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverTls;

/// How long in-flight responses may continue after shutdown starts (upstream: 30 s).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// How often certificate files are checked for changes.
pub const CERT_POLL: Duration = Duration::from_secs(10);
/// The largest certificate or key file read (a chain of a dozen certificates is a few tens of KiB).
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// A certificate (chain) and its key in PEM files.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Limits on what clients may hold; see the module table. The flags are the same in both binaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::Args)]
pub struct ServerLimits {
    /// Longest time a client may take to complete its TLS handshake or its request headers
    /// (an idle HTTP/1.1 keep-alive connection is closed after it too).
    #[arg(
        long = "http-header-read-timeout",
        value_name = "DURATION",
        default_value = "5s",
        value_parser = crate::flags::duration
    )]
    pub header_read_timeout: Duration,
    /// An HTTP/2 connection without a request in flight for this long is closed gracefully.
    #[arg(
        long = "http-idle-timeout",
        value_name = "DURATION",
        default_value = "30s",
        value_parser = crate::flags::duration
    )]
    pub idle_timeout: Duration,
    /// Most connections served at once; more wait in the listen backlog until one closes.
    #[arg(
        long = "http-max-connections",
        value_name = "N",
        default_value_t = 1024,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_connections: u32,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_read_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            max_connections: 1024,
        }
    }
}

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub tls: Option<TlsFiles>,
    /// Protocol versions, suites and groups of the TLS listener (`--tls-profile`).
    pub tls_profile: crate::go_flags::TlsProfile,
    /// Offer only HTTP/1.1 over TLS (upstream's metrics listener disables HTTP/2).
    pub http1_only: bool,
    pub limits: ServerLimits,
    /// How often the certificate files are checked for changes.
    pub cert_poll: Duration,
    /// How long in-flight requests may continue after shutdown starts.
    pub shutdown_grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            tls: None,
            tls_profile: crate::go_flags::TlsProfile::default(),
            http1_only: false,
            limits: ServerLimits::default(),
            cert_poll: CERT_POLL,
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }
}

/// Why a certificate and key could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(transparent)]
    Read(#[from] FileError),
    #[error("{path}: {source}")]
    Pem {
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("{path}: no certificate found")]
    NoCertificate { path: PathBuf },
    #[error("{path}: no private key found")]
    NoKey { path: PathBuf },
    #[error("the key does not fit the certificate or is not supported: {0}")]
    Key(#[source] rustls::Error),
    #[error("failed to configure TLS: {0}")]
    Config(#[source] rustls::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("failed to load TLS certificate {cert} and key {key}: {source}")]
    Tls {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: TlsError,
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
    /// Serves `app` with the default limits until `shutdown` resolves, then lets in-flight
    /// requests finish.
    pub async fn serve(
        self,
        app: Router,
        tls: Option<TlsFiles>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let options = ServeOptions {
            tls,
            ..ServeOptions::default()
        };
        self.serve_with(app, options, shutdown).await
    }

    /// [`Bound::serve`] with a chosen certificate-change polling interval.
    pub async fn serve_with_cert_poll(
        self,
        app: Router,
        tls: Option<TlsFiles>,
        shutdown: impl Future<Output = ()> + Send + 'static,
        cert_poll: Duration,
    ) -> Result<(), ServerError> {
        let options = ServeOptions {
            tls,
            cert_poll,
            ..ServeOptions::default()
        };
        self.serve_with(app, options, shutdown).await
    }

    /// Serves `app` as `options` say until `shutdown` resolves.
    pub async fn serve_with(
        self,
        app: Router,
        options: ServeOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let addr = self.addr;
        let (tls, reloader) = match &options.tls {
            None => (None, None),
            Some(files) => {
                let (acceptor, store) =
                    tls_acceptor(files, &options.tls_profile, options.http1_only)?;
                let reload =
                    tokio::spawn(reload_on_change(store, files.clone(), options.cert_poll));
                (Some(acceptor), Some(reload))
            }
        };
        let listener = tokio::net::TcpListener::from_std(self.listener)
            .map_err(|source| ServerError::Serve { addr, source })?;
        let limits = options.limits;
        let builder = Arc::new(connection_builder(&limits));
        let slots = Arc::new(Semaphore::new(limits.max_connections as usize));
        let stop = CancellationToken::new();
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            while connections.try_join_next().is_some() {}
            // A free slot first: at the cap nothing is accepted and clients wait in the backlog.
            let slot = tokio::select! {
                _ = &mut shutdown => break,
                slot = slots.clone().acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => break,
                },
            };
            let (stream, _peer) = tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        accept_failed(addr, &e).await;
                        continue;
                    }
                },
            };
            connections.spawn(serve_connection(
                stream,
                tls.clone(),
                builder.clone(),
                app.clone(),
                limits,
                stop.child_token(),
                slot,
            ));
        }
        // Refuse new connections at once rather than letting them wait in the backlog.
        drop(listener);
        stop.cancel();
        let drained = tokio::time::timeout(options.shutdown_grace, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(%addr, open = connections.len(), "closing connections still busy after the shutdown grace period");
            connections.shutdown().await;
        }
        if let Some(reloader) = reloader {
            reloader.abort();
        }
        Ok(())
    }
}

/// Accept failures are about one connection (reset before accept) or about the process (out of
/// file descriptors); the latter would spin, so pause briefly before accepting again.
async fn accept_failed(addr: SocketAddr, error: &std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted
    ) {
        return;
    }
    tracing::warn!(%addr, %error, "failed to accept a connection");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

fn connection_builder(limits: &ServerLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    builder
}

/// One connection, from TLS handshake to close; `_slot` frees its place under the cap on return.
async fn serve_connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    app: Router,
    limits: ServerLimits,
    stop: CancellationToken,
    _slot: OwnedSemaphorePermit,
) {
    // A streamed body is written after its headers; with Nagle's algorithm a small body then
    // waits for the client's delayed ACK (about 40 ms per response; see docs/PERFORMANCE.md).
    let _ = stream.set_nodelay(true);
    let Some(acceptor) = tls else {
        return serve_http(stream, false, &builder, app, limits, stop).await;
    };
    let handshake = tokio::select! {
        _ = stop.cancelled() => return,
        handshake = tokio::time::timeout(limits.header_read_timeout, acceptor.accept(stream)) => handshake,
    };
    match handshake {
        Ok(Ok(stream)) => serve_http(stream, true, &builder, app, limits, stop).await,
        Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
        Err(_) => tracing::debug!("TLS handshake not completed in time; connection closed"),
    }
}

async fn serve_http<I>(
    io: I,
    over_tls: bool,
    builder: &auto::Builder<TokioExecutor>,
    app: Router,
    limits: ServerLimits,
    stop: CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::default());
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            if over_tls {
                request.extensions_mut().insert(OverTls);
            }
            let guard = activity.begin();
            let app = app.clone();
            async move {
                let response = match app.oneshot(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                let (parts, body) = response.into_parts();
                let body = Body::new(TrackedBody {
                    body,
                    _guard: guard,
                });
                Ok::<_, Infallible>(hyper::Response::from_parts(parts, body))
            }
        })
    };
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    // hyper's own header timer starts only once it knows the protocol; this one covers a client
    // that sends nothing (or half an HTTP/2 preface) at all.
    let first_request = tokio::time::sleep(limits.header_read_timeout);
    tokio::pin!(first_request);
    let mut awaiting_first = true;
    let mut closing = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            _ = &mut first_request, if awaiting_first => {
                awaiting_first = false;
                if !activity.started() {
                    tracing::debug!("no request within the header read timeout; connection closed");
                    return;
                }
            }
            _ = stop.cancelled(), if !closing => {
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
            _ = activity.idle_for(limits.idle_timeout), if !closing => {
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

/// Requests in flight on one connection (a request stays in flight until its body is sent).
#[derive(Default)]
struct Activity {
    in_flight: AtomicUsize,
    started: AtomicBool,
    changed: Notify,
}

struct ActivityGuard(Arc<Activity>);

impl Activity {
    fn begin(self: &Arc<Self>) -> ActivityGuard {
        self.started.store(true, Ordering::Release);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_waiters();
        ActivityGuard(self.clone())
    }

    fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Resolves once no request has been in flight for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the count is read, so a change in between is not missed.
            changed.as_mut().enable();
            if self.in_flight.load(Ordering::Acquire) == 0 {
                tokio::select! {
                    _ = tokio::time::sleep(idle) => return,
                    _ = &mut changed => {}
                }
            } else {
                changed.await;
            }
        }
    }
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_waiters();
    }
}

/// A response body that keeps its request counted as in flight until hyper drops it. Size hint
/// and end-of-stream pass through, so `Content-Length` is unaffected.
struct TrackedBody {
    body: Body,
    _guard: ActivityGuard,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The certificate in service, swapped on reload.
#[derive(Debug)]
struct CertStore {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Reads and checks a certificate chain and its key (both bounded regular files).
pub fn load_certified_key(files: &TlsFiles) -> Result<CertifiedKey, TlsError> {
    let cert_pem = read_regular(&files.cert, MAX_PEM_BYTES)?;
    let key_pem = read_regular(&files.key, MAX_PEM_BYTES)?;
    let pem_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TlsError::Pem { path, source }
    };
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error(&files.cert))?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: files.cert.clone(),
        });
    }
    let key = match PrivateKeyDer::from_pem_slice(&key_pem) {
        Ok(key) => key,
        Err(rustls::pki_types::pem::Error::NoItemsFound) => {
            return Err(TlsError::NoKey {
                path: files.key.clone(),
            });
        }
        Err(source) => return Err(pem_error(&files.key)(source)),
    };
    CertifiedKey::from_der(chain, key, &provider()).map_err(TlsError::Key)
}

/// Loads `files` once, so a binary can refuse an unusable certificate before it starts anything.
pub fn check_tls_files(files: &TlsFiles) -> Result<(), ServerError> {
    load_certified_key(files)
        .map(drop)
        .map_err(|source| ServerError::Tls {
            cert: files.cert.clone(),
            key: files.key.clone(),
            source,
        })
}

/// The crypto provider a profile asks for: its TLS 1.2 suites (TLS 1.3's are always on, as in
/// Go) and key-exchange groups, by rustls name.
fn profile_provider(profile: &crate::go_flags::TlsProfile) -> CryptoProvider {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    if let Some(names) = &profile.tls12_suites {
        provider.cipher_suites.retain(|s| {
            let name = format!("{:?}", s.suite());
            name.starts_with("TLS13_") || names.contains(&name)
        });
    }
    if let Some(names) = &profile.groups {
        let all = rustls::crypto::aws_lc_rs::ALL_KX_GROUPS;
        provider.kx_groups = names
            .iter()
            .filter_map(|n| {
                all.iter()
                    .find(|g| format!("{:?}", g.name()).eq_ignore_ascii_case(n))
                    .copied()
            })
            .collect();
        if provider.kx_groups.is_empty() {
            provider.kx_groups = rustls::crypto::aws_lc_rs::DEFAULT_KX_GROUPS.to_vec();
        }
    }
    provider
        .cipher_suites
        .sort_by_key(|s| go_preference_rank(s.suite()));
    if ring_aes_gcm_is_faster() {
        provider = with_ring_record_protection(provider);
    }
    provider
}

/// Go's server preference among the suites both libraries have (crypto/tls on a CPU with AES
/// hardware): AES-128-GCM before AES-256-GCM before ChaCha20, in TLS 1.3 and 1.2 alike.
/// Upstream's servers choose by this order, not the client's; served with
/// `ignore_client_order`, ours choose as theirs do. One case differs: Go serves ChaCha20 to a
/// client that lists it first (one without AES hardware), and rustls has no hook for that, so
/// such a client gets AES-GCM from us.
///
/// Why it matters: OpenSSL's clients (curl, wrk) list AES-256-GCM first, and rustls follows the
/// client by default, so they got AES-256 from us and AES-128 from upstream. Its four more
/// rounds per block cost both ends: serving `/all` to `wrk` over TLS, three interleaved runs,
/// 0.62–0.64 against 0.56–0.60 server CPU s per GB and 1,365–1,423 against 1,473–1,632 MB/s
/// (issue 27's twenty-fourth step).
const GO_SUITE_PREFERENCE: &[rustls::CipherSuite] = &[
    rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
    rustls::CipherSuite::TLS13_AES_256_GCM_SHA384,
    rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    rustls::CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
];

/// Position of `suite` in [`GO_SUITE_PREFERENCE`]; suites Go does not rank come last, in the
/// provider's order (the sort is stable).
fn go_preference_rank(suite: rustls::CipherSuite) -> usize {
    GO_SUITE_PREFERENCE
        .iter()
        .position(|s| *s == suite)
        .unwrap_or(GO_SUITE_PREFERENCE.len())
}

/// Whether ring's AES-GCM beats aws-lc-rs's on this CPU: it has VAES and VPCLMULQDQ with AVX2
/// but not the AVX-512 that aws-lc-rs's own VAES code needs.
///
/// Why: serving is bound by encrypting records. There, ring 0.17 uses VAES with AVX2 and
/// aws-lc-rs 1.19 stops at AES-NI with PCLMULQDQ. On a two-core EPYC of that kind, one binary
/// each way, interleaved (`wrk -t2 -c64` on `/all`, three pairs): 0.72–0.78 against 0.93–1.04
/// server CPU s per GB, 1,020–1,063 against 906–999 MB/s (issue 27's tenth step). With AVX-512,
/// aws-lc-rs's own AVX-512 code is the faster (16 KiB records on a Xeon: 7.1–7.3 against
/// 4.1–4.7 GB/s, twenty-second step; it needs `AWS_LC_SYS_SMALL=0`, `.cargo/config.toml`).
/// Without VAES, aws-lc-rs's is kept: the two were not compared there.
fn ring_aes_gcm_is_faster() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("vaes")
            && has!("vpclmulqdq")
            && has!("avx2")
            && !(has!("avx512f") && has!("avx512bw") && has!("avx512vl"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `provider` with each cipher suite implemented by ring where ring has it, in the same order.
/// Key exchange, certificates and signatures stay `provider`'s.
fn with_ring_record_protection(mut provider: CryptoProvider) -> CryptoProvider {
    provider.cipher_suites = provider
        .cipher_suites
        .iter()
        .map(|suite| {
            rustls::crypto::ring::ALL_CIPHER_SUITES
                .iter()
                .find(|ring| ring.suite() == suite.suite())
                .copied()
                .unwrap_or(*suite)
        })
        .collect();
    provider
}

fn tls_acceptor(
    files: &TlsFiles,
    profile: &crate::go_flags::TlsProfile,
    http1_only: bool,
) -> Result<(TlsAcceptor, Arc<CertStore>), ServerError> {
    let fail = |source| ServerError::Tls {
        cert: files.cert.clone(),
        key: files.key.clone(),
        source,
    };
    let key = load_certified_key(files).map_err(fail)?;
    let store = Arc::new(CertStore {
        current: RwLock::new(Arc::new(key)),
    });
    for note in &profile.notes {
        tracing::warn!(cert = %files.cert.display(), "TLS profile: {note}");
    }
    let versions: &[&rustls::SupportedProtocolVersion] = if profile.tls13_only {
        &[&rustls::version::TLS13]
    } else {
        rustls::DEFAULT_VERSIONS
    };
    let mut config =
        rustls::ServerConfig::builder_with_provider(Arc::new(profile_provider(profile)))
            .with_protocol_versions(versions)
            .map_err(|e| fail(TlsError::Config(e)))?
            .with_no_client_auth()
            .with_cert_resolver(store.clone());
    // The server's order decides, as in Go ([`GO_SUITE_PREFERENCE`]).
    config.ignore_client_order = true;
    config.alpn_protocols = if http1_only {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    };
    Ok((TlsAcceptor::from(Arc::new(config)), store))
}

fn modified(files: &TlsFiles) -> Option<(SystemTime, SystemTime)> {
    let m = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    Some((m(&files.cert)?, m(&files.key)?))
}

/// Polls the certificate files and swaps the served certificate when they change. A failed
/// reload (for example a half-written pair) keeps the previous certificate and retries.
async fn reload_on_change(store: Arc<CertStore>, files: TlsFiles, every: Duration) {
    let mut seen = modified(&files);
    loop {
        tokio::time::sleep(every).await;
        let now = modified(&files);
        if now.is_none() || now == seen {
            continue;
        }
        let loading = files.clone();
        match tokio::task::spawn_blocking(move || load_certified_key(&loading)).await {
            Ok(Ok(key)) => {
                *store.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(key);
                tracing::info!(cert = %files.cert.display(), "reloaded TLS certificate");
                seen = now;
            }
            Ok(Err(e)) => {
                tracing::warn!(cert = %files.cert.display(), error = %e, "failed to reload TLS certificate; keeping the previous one")
            }
            Err(e) => tracing::warn!(error = %e, "certificate reload task failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use rustls::SupportedCipherSuite;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        limits: ServerLimits,
    }

    /// Whether `suite` is ring's very implementation, not only an equal suite number.
    fn implemented_by_ring(suite: &SupportedCipherSuite) -> bool {
        rustls::crypto::ring::ALL_CIPHER_SUITES
            .iter()
            .any(|ring| match (suite, ring) {
                (SupportedCipherSuite::Tls13(a), SupportedCipherSuite::Tls13(b)) => {
                    std::ptr::eq(*a, *b)
                }
                (SupportedCipherSuite::Tls12(a), SupportedCipherSuite::Tls12(b)) => {
                    std::ptr::eq(*a, *b)
                }
                _ => false,
            })
    }

    #[test]
    fn ring_protects_records_with_aws_lc_rs_suites_order_and_key_exchange() {
        let aws_lc = rustls::crypto::aws_lc_rs::default_provider();
        assert!(!aws_lc.cipher_suites.iter().any(implemented_by_ring));
        for profile in [
            crate::go_flags::TlsProfile::default(),
            crate::go_flags::TlsProfile {
                tls12_suites: Some(vec!["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384".into()]),
                ..Default::default()
            },
        ] {
            let provider = with_ring_record_protection(profile_provider(&profile));
            let expected: Vec<_> = aws_lc
                .cipher_suites
                .iter()
                .filter(|s| {
                    let name = format!("{:?}", s.suite());
                    profile
                        .tls12_suites
                        .as_ref()
                        .is_none_or(|names| name.starts_with("TLS13_") || names.contains(&name))
                })
                .map(|s| s.suite())
                .collect();
            let mut ids: Vec<_> = provider.cipher_suites.iter().map(|s| s.suite()).collect();
            assert!(ids.is_sorted_by_key(|s| go_preference_rank(*s)), "{ids:?}");
            ids.sort_by_key(|s| u16::from(*s));
            let mut expected = expected;
            expected.sort_by_key(|s| u16::from(*s));
            assert_eq!(ids, expected);
            for suite in &provider.cipher_suites {
                assert!(
                    implemented_by_ring(suite),
                    "{:?} is not ring's",
                    suite.suite()
                );
            }
            let groups =
                |p: &CryptoProvider| -> Vec<_> { p.kx_groups.iter().map(|g| g.name()).collect() };
            assert_eq!(groups(&provider), groups(&aws_lc));
        }
        // What the servers get depends on the CPU: ring's exactly where it is the faster.
        let served = profile_provider(&crate::go_flags::TlsProfile::default());
        assert_eq!(
            served.cipher_suites.iter().all(implemented_by_ring),
            ring_aes_gcm_is_faster()
        );
        assert_eq!(
            served.cipher_suites.iter().any(implemented_by_ring),
            ring_aes_gcm_is_faster()
        );
    }

    #[test]
    fn flag_defaults_are_the_default_limits() {
        let flags = Flags::try_parse_from(["x"]).expect("defaults");
        assert_eq!(flags.limits, ServerLimits::default());
        let flags = Flags::try_parse_from([
            "x",
            "--http-header-read-timeout",
            "1m30s",
            "--http-max-connections",
            "7",
        ])
        .expect("parses");
        assert_eq!(flags.limits.header_read_timeout, Duration::from_secs(90));
        assert_eq!(flags.limits.max_connections, 7);
        assert!(Flags::try_parse_from(["x", "--http-max-connections", "0"]).is_err());
    }

    #[test]
    fn certificate_files_that_are_devices_are_refused_by_name() {
        let files = TlsFiles {
            cert: "/dev/zero".into(),
            key: "/dev/null".into(),
        };
        let Err(err) = tls_acceptor(&files, &Default::default(), false) else {
            panic!("/dev/zero is not a certificate");
        };
        assert_eq!(
            err.to_string(),
            "failed to load TLS certificate /dev/zero and key /dev/null: failed to read /dev/zero: not a regular file (a character device)"
        );
    }

    /// What a client listing `offered` (in its order of preference) and speaking only `version`
    /// gets from our TLS listener, by an in-memory handshake.
    fn negotiated(
        offered: &[rustls::CipherSuite],
        version: &'static rustls::SupportedProtocolVersion,
    ) -> rustls::CipherSuite {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("certificate");
        let files = TlsFiles {
            cert: dir.path().join("tls.crt"),
            key: dir.path().join("tls.key"),
        };
        std::fs::write(&files.cert, cert.pem()).expect("write");
        std::fs::write(&files.key, key.serialize_pem()).expect("write");
        let (acceptor, _) = tls_acceptor(&files, &Default::default(), false).expect("acceptor");

        let mut provider = rustls::crypto::aws_lc_rs::default_provider();
        provider.cipher_suites = offered
            .iter()
            .map(|want| {
                *provider
                    .cipher_suites
                    .iter()
                    .find(|s| s.suite() == *want)
                    .expect("aws-lc-rs has the suite")
            })
            .collect();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone()).expect("root");
        let client_config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[version])
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut client = rustls::ClientConnection::new(
            Arc::new(client_config),
            "localhost".try_into().expect("name"),
        )
        .expect("client");
        let mut server = rustls::ServerConnection::new(acceptor.config().clone()).expect("server");
        while client.is_handshaking() || server.is_handshaking() {
            let mut wire = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut wire).expect("client writes");
            }
            server.read_tls(&mut wire.as_slice()).expect("server reads");
            server.process_new_packets().expect("server handshake");
            let mut wire = Vec::new();
            while server.wants_write() {
                server.write_tls(&mut wire).expect("server writes");
            }
            client.read_tls(&mut wire.as_slice()).expect("client reads");
            client.process_new_packets().expect("client handshake");
        }
        server
            .negotiated_cipher_suite()
            .expect("a suite was agreed")
            .suite()
    }

    #[test]
    fn a_client_preferring_aes_256_gets_aes_128_as_upstreams_go_servers_choose() {
        use rustls::CipherSuite as S;
        // OpenSSL's default order (curl, wrk): AES-256-GCM first.
        let tls13 = [
            S::TLS13_AES_256_GCM_SHA384,
            S::TLS13_CHACHA20_POLY1305_SHA256,
            S::TLS13_AES_128_GCM_SHA256,
        ];
        assert_eq!(
            negotiated(&tls13, &rustls::version::TLS13),
            S::TLS13_AES_128_GCM_SHA256
        );
        let tls12 = [
            S::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            S::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ];
        assert_eq!(
            negotiated(&tls12, &rustls::version::TLS12),
            S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        );
        // A client that offers only AES-256 still gets it.
        assert_eq!(
            negotiated(&tls13[..1], &rustls::version::TLS13),
            S::TLS13_AES_256_GCM_SHA384
        );
    }

    #[test]
    fn a_file_without_pem_blocks_has_no_certificate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = TlsFiles {
            cert: dir.path().join("tls.crt"),
            key: dir.path().join("tls.key"),
        };
        std::fs::write(&files.cert, "not pem").expect("write");
        std::fs::write(&files.key, "not pem either").expect("write");
        let err = load_certified_key(&files).expect_err("no certificate");
        assert_eq!(
            err.to_string(),
            format!("{}: no certificate found", files.cert.display())
        );
    }
}
