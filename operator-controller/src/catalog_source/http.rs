//! A package's content fetched from catalogd's `/metas` API, cached by catalog revision.
//!
//! Input: a catalog's base URL (`status.urls.base`, `.../catalogs/NAME`), its resolved revision
//! (the image digest in `status.resolvedSource`) and a package name. Output: a shared, parsed
//! [`PackageContent`]. Talks to catalogd over HTTP(S).
//!
//! Two requests per package, sent together: `/api/v1/metas?schema=olm.package&name=P` (the
//! package object, which catalogd does not index under `package=`) and
//! `/api/v1/metas?package=P` (channels, bundles, deprecations, others). Answers are requested
//! gzip-compressed and decoded transparently. A catalogd that answers `/metas` with 404 (upstream's
//! with its `APIV1MetasHandler` gate off, as upstream's standard manifest runs it) is read through
//! `/api/v1/all` instead: the whole catalog, within the same caps, parsed once per package and
//! revision, keeping only the package's objects.
//!
//! Cache: key (catalog, revision, package), value the parsed content, so a reconcile against an
//! unchanged catalog sends no request and parses nothing. Concurrent requests for one key share
//! one fetch. Only successful answers are cached: a non-200 status (catalogd replicas that do not
//! hold the catalog answer 404), a transport error or an unparseable answer is returned and the
//! next call tries again. Entries of older revisions of a catalog are dropped when a new revision
//! is fetched. A call without a revision (a one-shot CLI run) bypasses the cache.
//!
//! Retries within one call, with exponential backoff (`backoff`, `2 × backoff`, ...):
//!
//! | outcome                                         | retried |
//! |-------------------------------------------------|---------|
//! | connection failure, attempt deadline, body cut short | yes |
//! | no data for the read idle timeout               | no: the server is stalled, and each further attempt would cost the caller another idle period (the controller's reconcile retries with its own backoff) |
//! | 5xx, 429                                        | yes     |
//! | any other non-200 status (404, 400, 403, ...)   | no      |
//! | 200 whose body does not parse                   | no      |
//!
//! Bounds (every one is in [`ClientOptions`] and docs/SECURITY.md; errors name the URL and the
//! limit):
//!
//! | what                                   | default  | when exceeded                                  | retried |
//! |----------------------------------------|----------|------------------------------------------------|---------|
//! | connecting                             | 10 s     | `failed to fetch URL: ...` (transport error)  | yes     |
//! | silence: no headers, or no body bytes (`--catalogd-read-idle-timeout`, `0` turns it off) | 30 s | `... no data for 30s (read idle timeout)` | no |
//! | one attempt, headers to last byte      | 120 s    | `... no complete answer within 120s`           | yes     |
//! | all attempts and backoff together      | 300 s    | no further attempt; the last error is returned | no      |
//! | bytes on the wire (`Content-Length` or counted) | 128 MiB | `... the answer is larger than the limit of N bytes` | no |
//! | bytes after gzip decoding              | 128 MiB  | `... the decompressed answer is larger than the limit of N bytes` | no |
//!
//! A server that accepts and never answers, or sends headers and then stalls, fails at the idle
//! timeout; a body that trickles a byte a second is cut by the per-attempt deadline; an endless body or
//! a gzip bomb by the byte caps, before more than the cap is held in memory. gzip is decoded
//! here (not by the HTTP library) so that both caps can be enforced; the largest real package
//! answer is a few MB.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::io::Write as _;
use std::time::Instant;

use olm_api::fbc::{DeclarativeConfig, LoadError, SCHEMA_PACKAGE};
use olm_api::regular_file::read_regular;
use reqwest::{StatusCode, Url};
use tokio::sync::OnceCell;

use crate::resolve::PackageContent;

/// Default cap on a `/metas` answer, before and after decoding (128 MiB; the largest package of
/// the real catalogs is 4.3 MB uncompressed).
pub const DEFAULT_MAX_BODY_BYTES: u64 = 128 << 20;

/// Largest CA bundle read from `--catalogd-ca-file` (4 MiB; a bundle of every public CA is
/// about 200 KiB).
pub const MAX_CA_FILE_BYTES: u64 = 4 << 20;

/// Client settings (the bounds are in the module table).
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub connect_timeout: Duration,
    /// Longest wait for the response headers, and between two pieces of the body; zero: no
    /// limit besides [`Self::timeout`] and [`Self::total_timeout`].
    pub read_idle_timeout: Duration,
    /// Limit for one whole attempt, headers and body.
    pub timeout: Duration,
    /// Limit for all attempts of one request together, backoff included: no attempt starts
    /// after it, and a running one is cut at it.
    pub total_timeout: Duration,
    /// Largest body accepted as sent (compressed or not).
    pub max_body_bytes: u64,
    /// Largest body accepted after gzip decoding.
    pub max_decoded_bytes: u64,
    /// Tries per request, the first included.
    pub attempts: u32,
    /// Wait before the first retry; doubled for each further one.
    pub backoff: Duration,
    /// PEM certificates trusted in addition to the system's (catalogd's serving CA).
    pub extra_ca_pem: Option<Vec<u8>>,
    /// Ask for gzip-compressed answers (upstream's client does). catalogd compresses `/metas`
    /// answers per request, which costs more than it saves on a fast link for multi-MB
    /// packages; see docs/PERFORMANCE.md.
    pub accept_gzip: bool,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            connect_timeout: Duration::from_secs(10),
            read_idle_timeout: Duration::from_secs(30),
            timeout: Duration::from_secs(120),
            total_timeout: Duration::from_secs(300),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_decoded_bytes: DEFAULT_MAX_BODY_BYTES,
            attempts: 3,
            backoff: Duration::from_millis(250),
            extra_ca_pem: None,
            accept_gzip: true,
        }
    }
}

impl ClientOptions {
    /// Trusts the PEM certificates in `path` as well. The file must be a regular file of at most
    /// [`MAX_CA_FILE_BYTES`] (a FIFO or `/dev/zero` is refused, not read).
    pub fn with_ca_file(mut self, path: &Path) -> Result<ClientOptions, ClientError> {
        let pem = read_regular(path, MAX_CA_FILE_BYTES).map_err(|e| ClientError::CaFile {
            path: path.display().to_string(),
            message: e.detail(),
        })?;
        self.extra_ca_pem = Some(pem);
        Ok(self)
    }
}

/// The flag bounding catalogd's silence, shared by `operator-controller run` and `resolve`
/// (flatten it into their arguments).
#[derive(Clone, Debug, clap::Args)]
pub struct ReadIdleArgs {
    /// Longest silence accepted from catalogd while reading catalog content: no response
    /// headers, or no body bytes, for this long fails the read with an error naming the URL
    /// (Go duration syntax; `0` turns this limit off, leaving the 5-minute total).
    #[arg(
        long = "catalogd-read-idle-timeout",
        value_name = "DURATION",
        default_value = "30s",
        value_parser = olm_runtime::flags::duration
    )]
    pub catalogd_read_idle_timeout: Duration,
}

/// Where one catalog's content is served, and which revision of it is expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogEndpoint {
    pub name: String,
    /// `.../catalogs/NAME`, as in `status.urls.base`.
    pub base_url: Url,
    /// The resolved source (image digest); `None` disables caching for this catalog.
    pub revision: Option<String>,
}

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("failed to read CA file {path}: {message}")]
    CaFile { path: String, message: String },
    #[error("failed to build the catalogd HTTP client: {0}")]
    Build(String),
}

/// Why a package could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("failed to fetch {url}: {message}")]
    Transport { url: String, message: String },
    #[error("failed to fetch {url}: no data for {}s (read idle timeout)", .idle.as_secs_f64())]
    Idle { url: String, idle: Duration },
    #[error("failed to fetch {url}: no complete answer within {}s", .limit.as_secs_f64())]
    Deadline { url: String, limit: Duration },
    #[error("failed to fetch {url}: the answer is larger than the limit of {limit} bytes")]
    TooLarge { url: String, limit: u64 },
    #[error(
        "failed to fetch {url}: the decompressed answer is larger than the limit of {limit} bytes"
    )]
    DecodedTooLarge { url: String, limit: u64 },
    #[error("failed to fetch {url}: unexpected status {status}")]
    Status { url: String, status: StatusCode },
    /// The total budget of [`ClientOptions::total_timeout`] ran out during a retry.
    #[error(
        "{last} (retries stopped after {attempts} attempts at the {}s limit)",
        .total.as_secs_f64()
    )]
    Exhausted {
        last: Box<FetchError>,
        attempts: u32,
        total: Duration,
    },
    #[error("failed to parse the answer of {url}: {source}")]
    Parse { url: String, source: LoadError },
    #[error("failed to parse catalog content: {0}")]
    Task(String),
}

impl FetchError {
    fn is_retryable(&self) -> bool {
        match self {
            FetchError::Transport { .. } | FetchError::Deadline { .. } => true,
            FetchError::Idle { .. } => false,
            FetchError::Status { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            FetchError::TooLarge { .. }
            | FetchError::DecodedTooLarge { .. }
            | FetchError::Exhausted { .. }
            | FetchError::Parse { .. }
            | FetchError::Task(_) => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct CacheKey {
    catalog: String,
    revision: String,
    package: String,
}

type Slot = Arc<OnceCell<Arc<PackageContent>>>;

/// Counters for tests, logs and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// HTTP requests sent (retries included).
    pub requests: u64,
    /// Calls answered from the cache.
    pub cache_hits: u64,
}

/// The catalogd content client. Cheap to share behind an `Arc`; one per process.
#[derive(Debug)]
pub struct CatalogdClient {
    /// Rebuilt by [`CatalogdClient::trust`] when the trusted certificate authorities change.
    http: std::sync::RwLock<reqwest::Client>,
    options: ClientOptions,
    cache: Mutex<HashMap<CacheKey, Slot>>,
    requests: AtomicU64,
    cache_hits: AtomicU64,
}

impl CatalogdClient {
    pub fn new(options: ClientOptions) -> Result<CatalogdClient, ClientError> {
        let http = Self::http_client(&options)?;
        Ok(CatalogdClient {
            http: std::sync::RwLock::new(http),
            options,
            cache: Mutex::new(HashMap::new()),
            requests: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
        })
    }

    /// Trusts `extra_ca_pem` (besides the system's) from the next request on, for example after
    /// cert-manager rotated catalogd's CA. On an invalid bundle the CAs in use stay.
    pub fn trust(&self, extra_ca_pem: Vec<u8>) -> Result<(), ClientError> {
        let options = ClientOptions {
            extra_ca_pem: Some(extra_ca_pem),
            ..self.options.clone()
        };
        let http = Self::http_client(&options)?;
        *self.http.write().unwrap_or_else(|p| p.into_inner()) = http;
        Ok(())
    }

    fn http_client(options: &ClientOptions) -> Result<reqwest::Client, ClientError> {
        // Timeouts other than connecting, and gzip decoding, are applied per request in
        // `get_once`, where each has its own error.
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .gzip(false)
            .user_agent(concat!("operator-controller/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &options.extra_ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| ClientError::Build(format!("invalid CA certificates: {e}")))?;
            if certs.is_empty() {
                return Err(ClientError::Build(
                    "invalid CA certificates: no PEM certificate found".to_owned(),
                ));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        builder
            .build()
            .map_err(|e| ClientError::Build(error_chain(&e)))
    }

    pub fn stats(&self) -> ClientStats {
        ClientStats {
            requests: self.requests.load(Ordering::Relaxed),
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
        }
    }

    /// Drops every cached package of `catalog` (for example when the catalog is deleted).
    pub fn forget_catalog(&self, catalog: &str) {
        self.lock_cache().retain(|k, _| k.catalog != catalog);
    }

    /// `package`'s content in the catalog at `endpoint`, from the cache when its revision was
    /// fetched before.
    pub async fn package(
        &self,
        endpoint: &CatalogEndpoint,
        package: &str,
    ) -> Result<Arc<PackageContent>, FetchError> {
        let Some(revision) = &endpoint.revision else {
            return self.fetch(&endpoint.base_url, package).await.map(Arc::new);
        };
        let key = CacheKey {
            catalog: endpoint.name.clone(),
            revision: revision.clone(),
            package: package.to_owned(),
        };
        let slot = {
            let mut cache = self.lock_cache();
            if !cache.contains_key(&key) {
                cache.retain(|k, _| k.catalog != key.catalog || k.revision == key.revision);
            }
            cache.entry(key).or_default().clone()
        };
        if let Some(content) = slot.get() {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(content.clone());
        }
        slot.get_or_try_init(|| async {
            self.fetch(&endpoint.base_url, package).await.map(Arc::new)
        })
        .await
        .cloned()
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Slot>> {
        // A panic elsewhere while holding the lock leaves a usable map behind.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn fetch(&self, base: &Url, package: &str) -> Result<PackageContent, FetchError> {
        let package_url = metas_url(base, &[("schema", SCHEMA_PACKAGE), ("name", package)]);
        let objects_url = metas_url(base, &[("package", package)]);
        let (package_body, objects_body) =
            match tokio::try_join!(self.get(&package_url), self.get(&objects_url)) {
                Ok(bodies) => bodies,
                Err(FetchError::Status { status, .. }) if status == StatusCode::NOT_FOUND => {
                    return self.fetch_from_all(base, package).await;
                }
                Err(e) => return Err(e),
            };
        let package = package.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut builder = PackageContent::builder(&package);
            let load = |body: &[u8], url: &Url| {
                DeclarativeConfig::from_reader(body, url.as_str()).map_err(|source| {
                    FetchError::Parse {
                        url: url.to_string(),
                        source,
                    }
                })
            };
            let mut packages = load(&package_body, &package_url)?;
            // Only the first answer may contribute the package object, as in upstream's cache.
            packages.channels.clear();
            packages.bundles.clear();
            packages.deprecations.clear();
            packages.others.clear();
            builder.push_config(packages);
            let mut objects = load(&objects_body, &objects_url)?;
            objects.packages.clear();
            builder.push_config(objects);
            Ok(builder.finish())
        })
        .await
        .map_err(|e| FetchError::Task(e.to_string()))?
    }

    /// The package's content from `/api/v1/all`, for a catalogd that does not serve `/metas`
    /// (upstream's with its `APIV1MetasHandler` gate off answers 404 there). The whole catalog
    /// is read within the same byte caps and parsed once; only the package's objects are kept.
    async fn fetch_from_all(
        &self,
        base: &Url,
        package: &str,
    ) -> Result<PackageContent, FetchError> {
        let url = all_url(base);
        tracing::debug!(%url, package, "catalogd does not serve /metas; reading /all");
        let body = self.get(&url).await?;
        let package = package.to_owned();
        tokio::task::spawn_blocking(move || {
            let all =
                DeclarativeConfig::from_reader(&body[..], url.as_str()).map_err(|source| {
                    FetchError::Parse {
                        url: url.to_string(),
                        source,
                    }
                })?;
            let mut builder = PackageContent::builder(&package);
            builder.push_config(all);
            Ok(builder.finish())
        })
        .await
        .map_err(|e| FetchError::Task(e.to_string()))?
    }

    /// One GET with the retry policy of the module table, all attempts within
    /// [`ClientOptions::total_timeout`].
    async fn get(&self, url: &Url) -> Result<Vec<u8>, FetchError> {
        let total = self.options.total_timeout;
        let deadline = Instant::now() + total;
        let mut wait = self.options.backoff;
        let mut attempt = 1;
        let mut last: Option<FetchError> = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let cut_by_budget = left < self.options.timeout;
            let limit = self.options.timeout.min(left);
            let result = match tokio::time::timeout(limit, self.get_once(url)).await {
                Ok(result) => result,
                // The budget, not the attempt, ran out: report what went wrong before.
                Err(_) if cut_by_budget && last.is_some() => {
                    return Err(FetchError::Exhausted {
                        last: Box::new(last.take().unwrap_or(FetchError::Deadline {
                            url: url.to_string(),
                            limit: total,
                        })),
                        attempts: attempt,
                        total,
                    });
                }
                Err(_) => Err(FetchError::Deadline {
                    url: url.to_string(),
                    limit,
                }),
            };
            match result {
                Ok(body) => return Ok(body),
                Err(e) if e.is_retryable() && attempt < self.options.attempts.max(1) => {
                    if Instant::now() + wait >= deadline {
                        return Err(FetchError::Exhausted {
                            last: Box::new(e),
                            attempts: attempt,
                            total,
                        });
                    }
                    tokio::time::sleep(wait).await;
                    wait = wait.saturating_mul(2);
                    attempt += 1;
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One attempt: headers within the idle timeout, then the body piece by piece, each piece
    /// within the idle timeout, counted against both byte caps as it arrives.
    async fn get_once(&self, url: &Url) -> Result<Vec<u8>, FetchError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let idle = self.options.read_idle_timeout;
        let transport = |e: reqwest::Error| FetchError::Transport {
            url: url.to_string(),
            message: transport_message(&e.without_url()),
        };
        let idle_error = || FetchError::Idle {
            url: url.to_string(),
            idle,
        };
        let http = self.http.read().unwrap_or_else(|p| p.into_inner()).clone();
        let mut request = http.get(url.clone());
        if self.options.accept_gzip {
            request = request.header(reqwest::header::ACCEPT_ENCODING, "gzip");
        }
        let mut response = within_idle(idle, request.send())
            .await
            .ok_or_else(idle_error)?
            .map_err(transport)?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: response.status(),
            });
        }
        let too_large = || FetchError::TooLarge {
            url: url.to_string(),
            limit: self.options.max_body_bytes,
        };
        if response
            .content_length()
            .is_some_and(|n| n > self.options.max_body_bytes)
        {
            return Err(too_large());
        }
        let gzip = response
            .headers()
            .get(reqwest::header::CONTENT_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
        let mut body = Body::new(gzip, self.options.max_decoded_bytes);
        let mut received: u64 = 0;
        while let Some(chunk) = within_idle(idle, response.chunk())
            .await
            .ok_or_else(idle_error)?
            .map_err(transport)?
        {
            received += chunk.len() as u64;
            if received > self.options.max_body_bytes {
                return Err(too_large());
            }
            body.push(&chunk).map_err(|e| self.decode_error(url, e))?;
        }
        body.finish().map_err(|e| self.decode_error(url, e))
    }

    fn decode_error(&self, url: &Url, e: std::io::Error) -> FetchError {
        if e.kind() == std::io::ErrorKind::FileTooLarge {
            FetchError::DecodedTooLarge {
                url: url.to_string(),
                limit: self.options.max_decoded_bytes,
            }
        } else {
            FetchError::Transport {
                url: url.to_string(),
                message: format!("invalid gzip answer: {e}"),
            }
        }
    }
}

/// `future`'s output if it comes within `idle` (any time when `idle` is zero), else `None`.
async fn within_idle<F: std::future::Future>(idle: Duration, future: F) -> Option<F::Output> {
    if idle.is_zero() {
        Some(future.await)
    } else {
        tokio::time::timeout(idle, future).await.ok()
    }
}

/// A response body being received: kept as is, or gzip-decoded on the fly, never more than
/// `limit` bytes after decoding.
enum Body {
    Plain(Capped),
    Gzip(Box<flate2::write::GzDecoder<Capped>>),
}

impl Body {
    fn new(gzip: bool, limit: u64) -> Body {
        let out = Capped {
            bytes: Vec::new(),
            limit,
        };
        if gzip {
            Body::Gzip(Box::new(flate2::write::GzDecoder::new(out)))
        } else {
            Body::Plain(out)
        }
    }

    fn push(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        match self {
            Body::Plain(out) => out.write_all(chunk),
            Body::Gzip(decoder) => decoder.write_all(chunk),
        }
    }

    /// The whole body; a truncated gzip stream is an error.
    fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Body::Plain(out) => Ok(out.bytes),
            Body::Gzip(decoder) => Ok(decoder.finish()?.bytes),
        }
    }
}

/// A byte buffer that refuses to grow past `limit` (`ErrorKind::FileTooLarge`).
struct Capped {
    bytes: Vec<u8>,
    limit: u64,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() as u64 + buf.len() as u64 > self.limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                "decoded body over the limit",
            ));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `BASE/api/v1/all`, keeping any path BASE has.
fn all_url(base: &Url) -> Url {
    let mut url = base.clone();
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty().extend(["api", "v1", "all"]);
    }
    url.set_query(None);
    url
}

/// `BASE/api/v1/metas?k=v&...`, keeping any path BASE has.
fn metas_url(base: &Url, query: &[(&str, &str)]) -> Url {
    let mut url = base.clone();
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty().extend(["api", "v1", "metas"]);
    }
    url.query_pairs_mut().clear().extend_pairs(query);
    url
}

/// A transport error's text; a failure to reach an HTTPS proxy starts with `proxyconnect tcp:`,
/// the words Go's client (upstream's) uses, which admins and upstream's acceptance suite look for.
fn transport_message(e: &dyn std::error::Error) -> String {
    let chain = error_chain(e);
    if chain.contains("tunnel error") {
        format!("proxyconnect tcp: {chain}")
    } else {
        chain
    }
}

/// An error and its sources, `: `-separated (reqwest's own text omits the cause).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            let _ = write!(out, ": {text}");
        }
        source = s.source();
    }
    out
}

impl CatalogdClient {
    /// The names of the packages a catalog holds: `/api/v1/metas?schema=olm.package` (one small
    /// object per package), read with the retry policy of the module table and not cached here
    /// (the controller keeps one list per catalog revision). The controller uses it to re-queue
    /// only the ClusterExtensions whose package a changed catalog holds.
    pub async fn package_names(
        &self,
        base_url: &Url,
    ) -> Result<std::collections::BTreeSet<String>, FetchError> {
        let mut url = metas_url(base_url, &[("schema", SCHEMA_PACKAGE)]);
        let body = match self.get(&url).await {
            Err(FetchError::Status { status, .. }) if status == StatusCode::NOT_FOUND => {
                // No /metas on this catalogd (see `fetch_from_all`).
                url = all_url(base_url);
                self.get(&url).await?
            }
            other => other?,
        };
        let body: &[u8] = &body;
        let config = DeclarativeConfig::from_reader(body, url.as_str()).map_err(|source| {
            FetchError::Parse {
                url: url.to_string(),
                source,
            }
        })?;
        Ok(config.packages.into_iter().map(|p| p.name).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_certificate_authorities_are_trusted_and_an_unusable_bundle_keeps_those_in_use() {
        let client = CatalogdClient::new(ClientOptions::default()).unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["olmv1-ca".to_owned()]).unwrap();
        client.trust(ca.cert.pem().into_bytes()).unwrap();
        for unusable in [&b""[..], b"not a certificate"] {
            let error = client.trust(unusable.to_vec()).unwrap_err();
            assert!(
                error.to_string().contains("invalid CA certificates"),
                "{error}"
            );
        }
    }

    #[derive(Debug)]
    struct Chain(&'static str, Option<Box<Chain>>);

    impl std::fmt::Display for Chain {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Chain {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1
                .as_deref()
                .map(|c| c as &(dyn std::error::Error + 'static))
        }
    }

    #[test]
    fn a_proxy_that_cannot_be_reached_is_named_as_go_names_it() {
        let tunnel = Chain(
            "client error (Connect)",
            Some(Box::new(Chain(
                "tunnel error: failed to create underlying connection",
                None,
            ))),
        );
        assert_eq!(
            transport_message(&tunnel),
            "proxyconnect tcp: client error (Connect): tunnel error: failed to create underlying connection"
        );
        let direct = Chain(
            "client error (Connect)",
            Some(Box::new(Chain("tcp connect error", None))),
        );
        assert_eq!(
            transport_message(&direct),
            "client error (Connect): tcp connect error"
        );
    }
}
