//! A package's content fetched from catalogd's `/metas` API, cached by catalog revision.
//!
//! Input: a catalog's base URL (`status.urls.base`, `.../catalogs/NAME`), its resolved revision
//! (the image digest in `status.resolvedSource`) and a package name. Output: a shared, parsed
//! [`PackageContent`]. Talks to catalogd over HTTP(S).
//!
//! Two requests per package, sent together: `/api/v1/metas?schema=olm.package&name=P` (the
//! package object, which catalogd does not index under `package=`) and
//! `/api/v1/metas?package=P` (channels, bundles, deprecations, others); never `/all`. Answers
//! are requested gzip-compressed and decoded transparently.
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
//! | connection failure, timeout, body cut short      | yes     |
//! | 5xx, 429                                        | yes     |
//! | any other non-200 status (404, 400, 403, ...)   | no      |
//! | 200 whose body does not parse                   | no      |
//!
//! Timeouts: connect 10 s; a whole request 5 minutes (upstream's value after large catalogs
//! outgrew 10 s).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use olm_api::fbc::{DeclarativeConfig, LoadError, SCHEMA_PACKAGE};
use reqwest::{StatusCode, Url};
use tokio::sync::OnceCell;

use crate::resolve::PackageContent;

/// Client settings.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub connect_timeout: Duration,
    /// Limit for one whole request, body included.
    pub timeout: Duration,
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
            timeout: Duration::from_secs(300),
            attempts: 3,
            backoff: Duration::from_millis(250),
            extra_ca_pem: None,
            accept_gzip: true,
        }
    }
}

impl ClientOptions {
    /// Trusts the PEM certificates in `path` as well.
    pub fn with_ca_file(mut self, path: &Path) -> Result<ClientOptions, ClientError> {
        let pem = std::fs::read(path).map_err(|source| ClientError::CaFile {
            path: path.display().to_string(),
            message: source.to_string(),
        })?;
        self.extra_ca_pem = Some(pem);
        Ok(self)
    }
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
    #[error("failed to fetch {url}: unexpected status {status}")]
    Status { url: String, status: StatusCode },
    #[error("failed to parse the answer of {url}: {source}")]
    Parse { url: String, source: LoadError },
    #[error("failed to parse catalog content: {0}")]
    Task(String),
}

impl FetchError {
    fn is_retryable(&self) -> bool {
        match self {
            FetchError::Transport { .. } => true,
            FetchError::Status { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            FetchError::Parse { .. } | FetchError::Task(_) => false,
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
    http: reqwest::Client,
    options: ClientOptions,
    cache: Mutex<HashMap<CacheKey, Slot>>,
    requests: AtomicU64,
    cache_hits: AtomicU64,
}

impl CatalogdClient {
    pub fn new(options: ClientOptions) -> Result<CatalogdClient, ClientError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .timeout(options.timeout)
            .gzip(options.accept_gzip)
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
        let http = builder
            .build()
            .map_err(|e| ClientError::Build(error_chain(&e)))?;
        Ok(CatalogdClient {
            http,
            options,
            cache: Mutex::new(HashMap::new()),
            requests: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
        })
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
            tokio::try_join!(self.get(&package_url), self.get(&objects_url))?;
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

    /// One GET with the retry policy of the module table.
    async fn get(&self, url: &Url) -> Result<Bytes, FetchError> {
        let mut wait = self.options.backoff;
        let mut attempt = 1;
        loop {
            match self.get_once(url).await {
                Ok(body) => return Ok(body),
                Err(e) if e.is_retryable() && attempt < self.options.attempts.max(1) => {
                    tokio::time::sleep(wait).await;
                    wait = wait.saturating_mul(2);
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn get_once(&self, url: &Url) -> Result<Bytes, FetchError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let transport = |e: reqwest::Error| FetchError::Transport {
            url: url.to_string(),
            message: error_chain(&e.without_url()),
        };
        let response = self.http.get(url.clone()).send().await.map_err(transport)?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: response.status(),
            });
        }
        response.bytes().await.map_err(transport)
    }
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
        let url = metas_url(base_url, &[("schema", SCHEMA_PACKAGE)]);
        let body = self.get(&url).await?;
        let body: &[u8] = &body;
        let config =
            DeclarativeConfig::from_reader(body, url.as_str()).map_err(|source| {
                FetchError::Parse {
                    url: url.to_string(),
                    source,
                }
            })?;
        Ok(config.packages.into_iter().map(|p| p.name).collect())
    }
}
