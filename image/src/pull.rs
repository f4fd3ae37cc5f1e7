//! Pulls an image into the on-disk cache: resolve the reference to a digest, return the cached
//! tree when that digest is already unpacked, otherwise fetch manifest, config and layers (each
//! verified against its digest, layers streamed to disk, never held in memory) and extract them
//! safely, or for [`ExtractFilter::CatalogPack`] pack the catalog directory into one file when it
//! can be ([`crate::pack`]). Input: owner name, reference, what to extract. Output: [`Unpacked`].
//! Talks to registries.
//!
//! Network use per call:
//!
//! | reference | cache                          | requests                             |
//! |-----------|--------------------------------|--------------------------------------|
//! | digest    | hit, this owner's or another's | none                                 |
//! | tag       | hit, this owner's or another's | one manifest GET                     |
//! | either    | miss                           | manifest(s), config, every layer blob |
//!
//! A digest is unpacked once for all owners ([`crate::cache`]); owners asking for one digest at
//! once wait for the first unpack rather than each downloading it.
//!
//! With registries.conf ([`crate::registries_conf`]), the first manifest GET goes to each pull
//! source in turn (mirrors, then the primary location; blocked ones are skipped with an error)
//! and the rest of the pull to the source that answered. The digest, the cache entry and the
//! reference recorded (`digest_ref`) are the image's own, whichever source served it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use futures::StreamExt;
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use sha2::Digest as _;
use tokio::io::AsyncWriteExt;

use crate::auth::DockerConfig;
use crate::cache::{CacheEntry, CacheRecord, DiskCache};
use crate::error::{ImageError, ImageErrorKind, SourceAttempt};
use crate::extract::{Limits, PathFilter};
use crate::labels::CATALOG_CONFIGS_LABEL;
use crate::layers::{LayerExtraction, PackTarget};
use crate::manifest::{
    ACCEPTED_MANIFESTS, Descriptor, ImageConfig, ImageManifest, Manifest, ManifestParseError,
    Platform, is_tar_layer,
};
use crate::reference::{ImageRef, sha256_digest, validate_digest};
use crate::registries_conf::{PullSource, RegistriesConfFiles, RegistriesConfReloader};
use crate::registry_client::{
    ConnectionConfig, ConnectionError, InsecureTransport, build_client, build_insecure_client,
    map_error, transport_reason,
};

/// Image configs are small JSON documents; anything bigger is not an image config.
const MAX_CONFIG_BYTES: u64 = 8 << 20;
/// Nested indexes (an index pointing at an index) are followed this deep.
const MAX_INDEX_DEPTH: usize = 2;

/// Which part of an image to extract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractFilter {
    /// The whole image (bundle images).
    Everything,
    /// Only the directory named by the `operators.operatorframework.io.index.configs.v1` label,
    /// kept at its path inside the image (catalog images). A missing label is an error.
    CatalogConfigs,
    /// The same directory, kept as one pack file ([`Unpacked::pack`], [`crate::pack`]) when it
    /// holds only regular files and directories, and extracted as [`Self::CatalogConfigs`]
    /// otherwise. For readers of the catalog walk (catalogd), which read a pack as the tree.
    CatalogPack,
}

impl ExtractFilter {
    /// Recorded in the cache so an entry is only reused for the same kind of extraction.
    fn key(self) -> &'static str {
        match self {
            Self::Everything => "everything",
            Self::CatalogConfigs => "catalog",
            Self::CatalogPack => "catalog-pack",
        }
    }

    fn resolve(self, labels: &BTreeMap<String, String>) -> Result<PathFilter, ImageErrorKind> {
        match self {
            Self::Everything => Ok(PathFilter::Everything),
            Self::CatalogConfigs | Self::CatalogPack => {
                let value = labels
                    .get(CATALOG_CONFIGS_LABEL)
                    .ok_or(ImageErrorKind::MissingCatalogLabel)?;
                PathFilter::from_label_value(value).ok_or_else(|| {
                    ImageErrorKind::InvalidCatalogLabel {
                        value: value.clone(),
                    }
                })
            }
        }
    }
}

/// Settings of a [`Puller`].
#[derive(Debug, Clone)]
pub struct PullerConfig {
    /// Root of the unpack cache (`<cache_dir>/<owner>/<digest>/`).
    pub cache_dir: PathBuf,
    /// Platform picked from image indexes (default linux/amd64).
    pub platform: Platform,
    /// Registries (`host:port` as written in references) spoken to over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// Pull-secret credentials; anonymous when `None` or when no entry matches.
    pub auth: Option<DockerConfig>,
    /// Extra trusted CA certificates (PEM bundle).
    pub extra_ca_pem: Option<Vec<u8>>,
    /// Caps on entries and bytes.
    pub limits: Limits,
    /// registries.conf files: mirrors, remapped locations, insecure and blocked registries
    /// (none by default). They are read again before each pull that needs the network.
    pub registries: RegistriesConfFiles,
}

impl PullerConfig {
    /// Defaults: linux/amd64, HTTPS everywhere, anonymous, system CAs, default limits.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        Self {
            cache_dir: cache_dir.into(),
            platform: Platform::default(),
            insecure_registries: Vec::new(),
            auth: None,
            extra_ca_pem: None,
            limits: Limits::default(),
            registries: RegistriesConfFiles::none(),
        }
    }
}

/// An image available on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    /// `registry/repository@sha256:…` (the index digest when the reference names an index).
    pub digest_ref: String,
    /// The resolved digest.
    pub digest: String,
    /// Root of the extracted image tree.
    pub dir: PathBuf,
    /// The directory the filter selected: the catalog's FBC directory (`dir` + label value), or
    /// `dir` itself for [`ExtractFilter::Everything`]. It may be missing if the image lacks it.
    pub content_dir: PathBuf,
    /// Image config labels.
    pub labels: BTreeMap<String, String>,
    /// False when served from the cache without downloading layers.
    pub fresh: bool,
    /// When this digest was unpacked (stable across restarts and cache hits).
    pub unpacked_at: SystemTime,
    /// For [`ExtractFilter::CatalogPack`]: the pack holding `content_dir`'s files, when the image
    /// was packed (`content_dir` is then not on disk).
    pub pack: Option<PackFiles>,
}

/// Where a packed catalog directory is ([`olm_api::fbc::packed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackFiles {
    /// The files' bytes.
    pub pack: PathBuf,
    /// Their paths, offsets and lengths.
    pub listing: PathBuf,
}

impl Unpacked {
    fn from_entry(entry: CacheEntry, fresh: bool) -> Self {
        let content_dir = if entry.record.content_subdir.is_empty() {
            entry.dir.clone()
        } else {
            entry.dir.join(&entry.record.content_subdir)
        };
        let pack = entry.record.packed.then(|| PackFiles {
            pack: entry.pack_path(),
            listing: entry.pack_listing_path(),
        });
        Self {
            pack,
            digest_ref: entry.record.digest_ref.clone(),
            digest: entry.record.digest.clone(),
            unpacked_at: entry.record.unpacked_at(),
            labels: entry.record.labels,
            dir: entry.dir,
            content_dir,
            fresh,
        }
    }
}

/// Pulls images into a digest-keyed disk cache. Cheap to share (`Arc`); pulls for the same owner
/// are serialised, pulls for different owners run concurrently.
pub struct Puller {
    client: oci_client::Client,
    /// Registries spoken to over plain HTTP by `client` (`--insecure-registries`).
    insecure_registries: Vec<String>,
    /// For registries.conf sources marked `insecure`, built when first needed.
    insecure_clients: OnceLock<Result<InsecureClients, ConnectionError>>,
    registries: Option<RegistriesConfReloader>,
    auth: DockerConfig,
    platform: Platform,
    limits: Limits,
    cache: DiskCache,
    owner_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Puller {
    /// Builds the registry client; fails only on an unusable CA bundle.
    pub fn new(config: PullerConfig) -> Result<Self, ConnectionError> {
        let client = build_client(&ConnectionConfig {
            insecure_registries: config.insecure_registries.clone(),
            extra_ca_pem: config.extra_ca_pem,
        })?;
        Ok(Self {
            client,
            insecure_registries: config.insecure_registries,
            insecure_clients: OnceLock::new(),
            registries: (!config.registries.is_none())
                .then(|| RegistriesConfReloader::new(config.registries)),
            auth: config.auth.unwrap_or_default(),
            platform: config.platform,
            limits: config.limits,
            cache: DiskCache::new(config.cache_dir),
            owner_locks: Mutex::new(HashMap::new()),
        })
    }

    /// The cache this puller fills.
    pub fn cache(&self) -> &DiskCache {
        &self.cache
    }

    /// Resolves `reference` to the digest of the manifest (or index) it names. Digest references
    /// are returned as they are, without network.
    pub async fn resolve_digest(&self, reference: &str) -> Result<String, ImageError> {
        let image = parse(reference)?;
        if let Some(digest) = image.digest() {
            return Ok(digest.to_string());
        }
        let (_, _, digest) = self
            .open(&image)
            .await
            .map_err(|kind| ImageError::new(reference, false, kind))?;
        Ok(digest)
    }

    /// What is cached for `owner` at `digest`, without network.
    pub fn cached(
        &self,
        owner: &str,
        digest: &str,
        filter: ExtractFilter,
    ) -> Result<Option<Unpacked>, ImageError> {
        let lookup = self
            .lookup(owner, digest, filter)
            .map_err(|kind| ImageError::new(digest, true, kind))?;
        Ok(lookup.map(|entry| Unpacked::from_entry(entry, false)))
    }

    /// Makes the image `reference` available on disk for `owner` and returns where. After a new
    /// digest is unpacked, other digests cached for `owner` are removed.
    pub async fn pull(
        &self,
        owner: &str,
        reference: &str,
        filter: ExtractFilter,
    ) -> Result<Unpacked, ImageError> {
        let image = parse(reference)?;
        let pinned = image.is_digest_pinned();
        let lock = self.owner_lock(owner);
        let _guard = lock.lock().await;
        self.pull_locked(owner, &image, reference, filter)
            .await
            .map_err(|kind| ImageError::new(reference, pinned, kind))
    }

    /// Removes everything cached for `owner` (waits for a running pull of that owner).
    pub async fn delete_owner(&self, owner: &str) -> Result<(), ImageError> {
        let lock = self.owner_lock(owner);
        let _guard = lock.lock().await;
        self.cache.delete_owner(owner).map_err(|source| {
            ImageError::new(
                owner,
                false,
                ImageErrorKind::cache("delete cache of", self.cache.root().join(owner), source),
            )
        })
    }

    fn owner_lock(&self, owner: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .owner_locks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        locks.entry(owner.to_string()).or_default().clone()
    }

    /// What an unpacked tree is filed under beside its digest: what was extracted and, because
    /// an index digest names a different tree per platform, the platform this puller picks.
    fn cache_key(&self, filter: ExtractFilter) -> String {
        let plain = |part: &str| -> String {
            part.chars()
                .map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' => c,
                    _ => '_',
                })
                .collect()
        };
        let platform = &self.platform;
        let mut key = format!(
            "{}-{}-{}",
            filter.key(),
            plain(&platform.os),
            plain(&platform.architecture)
        );
        if let Some(variant) = &platform.variant {
            key.push('-');
            key.push_str(&plain(variant));
        }
        key
    }

    fn lookup(
        &self,
        owner: &str,
        digest: &str,
        filter: ExtractFilter,
    ) -> Result<Option<CacheEntry>, ImageErrorKind> {
        self.cache
            .lookup(owner, digest, &self.cache_key(filter))
            .map_err(|e| {
                ImageErrorKind::cache(
                    "read cache entry",
                    self.cache.root().join(owner).join(digest),
                    e,
                )
            })
    }

    async fn pull_locked(
        &self,
        owner: &str,
        image: &ImageRef,
        reference: &str,
        filter: ExtractFilter,
    ) -> Result<Unpacked, ImageErrorKind> {
        // A digest already unpacked, for this owner or another, needs no network (and no
        // registries.conf).
        if let Some(digest) = image.digest() {
            if let Some(entry) = self.lookup(owner, digest, filter)? {
                tracing::debug!(owner, %digest, "image already unpacked");
                return Ok(Unpacked::from_entry(entry, false));
            }
            let _unpacking =
                UnpackLock::acquire(self.cache.root(), digest, self.cache_key(filter)).await;
            if let Some(unpacked) = self.attach_shared(owner, image, reference, digest, filter)? {
                return Ok(unpacked);
            }
            let opened = self.open(image).await?;
            return self.unpack(owner, image, reference, filter, opened).await;
        }
        let opened = self.open(image).await?;
        let digest = opened.2.clone();
        if let Some(entry) = self.lookup(owner, &digest, filter)? {
            tracing::debug!(owner, %digest, "image already unpacked");
            return Ok(Unpacked::from_entry(entry, false));
        }
        // Owners pulling one digest at once wait for the first unpack instead of each doing it.
        let _unpacking =
            UnpackLock::acquire(self.cache.root(), &digest, self.cache_key(filter)).await;
        if let Some(unpacked) = self.attach_shared(owner, image, reference, &digest, filter)? {
            return Ok(unpacked);
        }
        self.unpack(owner, image, reference, filter, opened).await
    }

    /// Gives `owner` the tree another owner already unpacked for `digest`, with its own record
    /// (its reference, the digest in its repository, the time it got the image).
    fn attach_shared(
        &self,
        owner: &str,
        image: &ImageRef,
        reference: &str,
        digest: &str,
        filter: ExtractFilter,
    ) -> Result<Option<Unpacked>, ImageErrorKind> {
        let cache_err = |op, e| ImageErrorKind::cache(op, self.cache.root().to_path_buf(), e);
        let Some(shared) = self
            .cache
            .lookup_shared(digest, &self.cache_key(filter))
            .map_err(|e| cache_err("read cache entry in", e))?
        else {
            return Ok(None);
        };
        let mut record = CacheRecord {
            reference: reference.to_string(),
            digest_ref: image.with_digest(digest),
            ..shared
        };
        record.set_unpacked_at(SystemTime::now());
        let Some(entry) = self
            .cache
            .attach(owner, &record)
            .map_err(|e| cache_err("record cache entry in", e))?
        else {
            return Ok(None);
        };
        self.cache
            .retain_only(owner, digest)
            .map_err(|e| cache_err("remove older images from", e))?;
        tracing::debug!(owner, digest_ref = %record.digest_ref, "image already unpacked for another owner");
        Ok(Some(Unpacked::from_entry(entry, false)))
    }

    /// Downloads and extracts the image whose manifest `opened` holds, for `owner`.
    async fn unpack(
        &self,
        owner: &str,
        image: &ImageRef,
        reference: &str,
        filter: ExtractFilter,
        (source, body, digest): (Source<'_>, bytes::Bytes, String),
    ) -> Result<Unpacked, ImageErrorKind> {
        let (manifest, manifest_digest) =
            self.select_image_manifest(&source, body, &digest).await?;
        let config_bytes = self.fetch_config(&source, &manifest.config).await?;
        let config =
            ImageConfig::parse(&config_bytes).map_err(|reason| ImageErrorKind::InvalidConfig {
                digest: manifest.config.digest.clone(),
                reason,
            })?;
        let path_filter = filter.resolve(&config.labels)?;
        self.check_layers(&manifest)?;

        let cache_err = |op, e| ImageErrorKind::cache(op, self.cache.root().to_path_buf(), e);
        let staging = self
            .cache
            .staging()
            .map_err(|e| cache_err("create staging directory in", e))?;
        let pack = match (&path_filter, filter) {
            (PathFilter::Under(dir), ExtractFilter::CatalogPack) => Some(PackTarget {
                dir: dir.clone(),
                files: PackFiles {
                    pack: staging.pack_path(),
                    listing: staging.pack_listing_path(),
                },
            }),
            _ => None,
        };
        let (extracted_bytes, packed) = self
            .download_and_extract(
                &source,
                &manifest.layers,
                staging.layers_dir(),
                staging.content_dir(),
                path_filter.clone(),
                pack,
            )
            .await?;
        let mut record = CacheRecord {
            reference: reference.to_string(),
            digest_ref: image.with_digest(&digest),
            digest: digest.clone(),
            manifest_digest,
            labels: config.labels,
            filter: self.cache_key(filter),
            content_subdir: match &path_filter {
                PathFilter::Everything => String::new(),
                PathFilter::Under(dir) => dir.to_string_lossy().into_owned(),
            },
            unpacked_at_unix_secs: 0,
            unpacked_at_nanos: 0,
            extracted_bytes,
            packed,
        };
        record.set_unpacked_at(SystemTime::now());
        let entry = self
            .cache
            .commit(owner, staging, &record)
            .map_err(|e| cache_err("commit unpacked image in", e))?;
        self.cache
            .retain_only(owner, &digest)
            .map_err(|e| cache_err("remove older images from", e))?;
        tracing::info!(owner, digest_ref = %record.digest_ref, bytes = extracted_bytes, "image unpacked");
        Ok(Unpacked::from_entry(entry, true))
    }

    /// Fetches the manifest `image` names from the first of its pull sources that serves it.
    /// Returns that source, the manifest and its digest. One source fails as itself; several
    /// fail together ([`ImageErrorKind::AllSourcesFailed`]).
    async fn open(
        &self,
        image: &ImageRef,
    ) -> Result<(Source<'_>, bytes::Bytes, String), ImageErrorKind> {
        let sources = match &self.registries {
            None => vec![PullSource {
                reference: image.clone(),
                insecure: false,
                mirror: false,
                blocked: None,
            }],
            Some(registries) => registries
                .current()
                .and_then(|conf| conf.pull_sources(image))
                .map_err(|e| ImageErrorKind::RegistriesConf(Box::new(e)))?,
        };
        let mut attempts = Vec::with_capacity(sources.len());
        for source in sources {
            let result = match &source.blocked {
                Some(blocked) => Err(ImageErrorKind::Blocked {
                    prefix: blocked.prefix.clone(),
                    origin: blocked.origin.clone(),
                }),
                None => self.open_source(&source).await,
            };
            match result {
                Ok((opened, body, digest)) => {
                    if source.reference != *image {
                        // Debug: tag references are resolved at every poll.
                        tracing::debug!(reference = %image, source = %source.reference, mirror = source.mirror, "pulling from the location registries.conf gives");
                    }
                    return Ok((opened, body, digest));
                }
                Err(error) => {
                    tracing::debug!(reference = %image, source = %source.reference, %error, "pull source failed");
                    attempts.push(SourceAttempt {
                        reference: source.reference.to_string(),
                        error,
                    });
                }
            }
        }
        match attempts.len() {
            1 => Err(attempts.remove(0).error),
            _ => Err(ImageErrorKind::AllSourcesFailed { attempts }),
        }
    }

    /// The manifest from one source. An `insecure` source not listed in `--insecure-registries`
    /// is tried over unverified TLS, then (when that does not connect) over plain HTTP.
    async fn open_source(
        &self,
        source: &PullSource,
    ) -> Result<(Source<'_>, bytes::Bytes, String), ImageErrorKind> {
        let image = &source.reference;
        let target = match image.digest() {
            Some(digest) => image.oci_with_digest(digest),
            None => image.oci().clone(),
        };
        let clients: Vec<&oci_client::Client> = if source.insecure
            && !self
                .insecure_registries
                .iter()
                .any(|r| r == image.registry())
        {
            let clients = self
                .insecure_clients
                .get_or_init(InsecureClients::build)
                .as_ref()
                .map_err(|e| ImageErrorKind::Unreachable {
                    registry: image.registry().to_string(),
                    reason: e.to_string(),
                })?;
            vec![&clients.unverified_tls, &clients.plain_http]
        } else {
            vec![&self.client]
        };
        let mut last_error = None;
        for client in clients {
            let opened = Source {
                image: image.clone(),
                client,
            };
            match self.fetch_manifest(&opened, &target).await {
                Ok((body, digest)) => return Ok((opened, body, digest)),
                Err(e @ ImageErrorKind::Unreachable { .. }) => last_error = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| ImageErrorKind::Unreachable {
            registry: image.registry().to_string(),
            reason: "no transport to try".to_string(),
        }))
    }

    fn registry_auth(&self, image: &ImageRef) -> RegistryAuth {
        self.auth
            .registry_auth(image.registry(), image.repository())
    }

    fn map_err(
        &self,
        image: &ImageRef,
        err: oci_client::errors::OciDistributionError,
    ) -> ImageErrorKind {
        let had_credentials = self
            .auth
            .credentials_for(image.registry(), image.repository())
            .is_some();
        map_error(image.registry(), had_credentials, err)
    }

    /// GETs a manifest; returns its body and its (verified) digest.
    async fn fetch_manifest(
        &self,
        source: &Source<'_>,
        target: &oci_client::Reference,
    ) -> Result<(bytes::Bytes, String), ImageErrorKind> {
        let image = &source.image;
        let (body, digest) = source
            .client
            .pull_manifest_raw(target, &self.registry_auth(image), &ACCEPTED_MANIFESTS)
            .await
            .map_err(|e| self.map_err(image, e))?;
        validate_digest(&digest).map_err(|detail| ImageErrorKind::Protocol {
            registry: image.registry().to_string(),
            detail,
        })?;
        let actual = sha256_digest(&body);
        if actual != digest {
            return Err(ImageErrorKind::DigestMismatch {
                what: "manifest",
                expected: digest,
                actual,
            });
        }
        Ok((body, digest))
    }

    /// Follows an index to the manifest for the configured platform.
    async fn select_image_manifest(
        &self,
        source: &Source<'_>,
        mut body: bytes::Bytes,
        digest: &str,
    ) -> Result<(ImageManifest, String), ImageErrorKind> {
        let mut digest = digest.to_string();
        for _ in 0..=MAX_INDEX_DEPTH {
            let manifest = Manifest::parse(&body).map_err(|e| match e {
                ManifestParseError::Unsupported(media_type) => {
                    ImageErrorKind::UnsupportedManifest { media_type }
                }
                ManifestParseError::Invalid(reason) => ImageErrorKind::InvalidManifest {
                    digest: digest.clone(),
                    reason,
                },
            })?;
            match manifest {
                Manifest::Image(m) => return Ok((m, digest)),
                Manifest::Index(index) => {
                    let entry = self.platform.select(&index).ok_or_else(|| {
                        ImageErrorKind::NoMatchingPlatform {
                            platform: self.platform.to_string(),
                            available: index
                                .manifests
                                .iter()
                                .filter_map(|d| d.platform.as_ref().map(ToString::to_string))
                                .collect(),
                        }
                    })?;
                    validate_digest(&entry.digest).map_err(|reason| {
                        ImageErrorKind::InvalidManifest {
                            digest: digest.clone(),
                            reason,
                        }
                    })?;
                    digest = entry.digest.clone();
                    body = self
                        .fetch_manifest(source, &source.image.oci_with_digest(&digest))
                        .await?
                        .0;
                }
            }
        }
        Err(ImageErrorKind::InvalidManifest {
            digest,
            reason: format!("image indexes nested more than {MAX_INDEX_DEPTH} deep"),
        })
    }

    fn check_layers(&self, manifest: &ImageManifest) -> Result<(), ImageErrorKind> {
        let mut total: u64 = 0;
        for layer in &manifest.layers {
            if !is_tar_layer(&layer.media_type) {
                return Err(ImageErrorKind::UnsupportedLayerMediaType {
                    digest: layer.digest.clone(),
                    media_type: layer.media_type.clone(),
                });
            }
            validate_digest(&layer.digest).map_err(|reason| ImageErrorKind::InvalidManifest {
                digest: layer.digest.clone(),
                reason,
            })?;
            total = total.saturating_add(u64::try_from(layer.size).unwrap_or(0));
        }
        if total > self.limits.max_download_bytes {
            return Err(ImageErrorKind::TooLarge {
                limit: self.limits.max_download_bytes,
            });
        }
        Ok(())
    }

    async fn fetch_config(
        &self,
        source: &Source<'_>,
        config: &Descriptor,
    ) -> Result<Vec<u8>, ImageErrorKind> {
        validate_digest(&config.digest).map_err(|reason| ImageErrorKind::InvalidConfig {
            digest: config.digest.clone(),
            reason,
        })?;
        let mut out = Vec::new();
        self.fetch_blob(
            source,
            config,
            "config",
            MAX_CONFIG_BYTES,
            BlobSink::Memory(&mut out),
        )
        .await?;
        Ok(out)
    }

    /// Streams one blob into `sink`, checking its size and digest as bytes arrive.
    async fn fetch_blob(
        &self,
        source: &Source<'_>,
        desc: &Descriptor,
        what: &'static str,
        max_bytes: u64,
        mut sink: BlobSink<'_>,
    ) -> Result<u64, ImageErrorKind> {
        let image = &source.image;
        let registry = image.registry().to_string();
        let oci_desc = OciDescriptor {
            media_type: desc.media_type.clone(),
            digest: desc.digest.clone(),
            size: desc.size,
            ..OciDescriptor::default()
        };
        source
            .client
            .store_auth_if_needed(image.oci().resolve_registry(), &self.registry_auth(image))
            .await;
        let mut stream = source
            .client
            .pull_blob_stream(image.oci(), &oci_desc)
            .await
            .map_err(|e| self.map_err(image, e))?;
        let declared = u64::try_from(desc.size).ok().filter(|s| *s > 0);
        let limit = declared.map_or(max_bytes, |d| d.min(max_bytes));
        let mut hasher = sha2::Sha256::new();
        let mut received: u64 = 0;
        let mut stream_error = None;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    stream_error = Some(e);
                    break;
                }
            };
            received += chunk.len() as u64;
            if received > limit {
                return Err(if declared.is_some_and(|d| received > d) {
                    ImageErrorKind::DigestMismatch {
                        what,
                        expected: desc.digest.clone(),
                        actual: format!("more than the {} bytes the manifest declares", desc.size),
                    }
                } else if what == "layer" {
                    ImageErrorKind::TooLarge { limit: max_bytes }
                } else {
                    ImageErrorKind::InvalidConfig {
                        digest: desc.digest.clone(),
                        reason: format!("larger than {max_bytes} bytes"),
                    }
                });
            }
            hasher.update(&chunk);
            sink.write(&chunk)
                .await
                .map_err(|e| ImageErrorKind::cache("write downloaded blob to", sink.path(), e))?;
        }
        let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
        if let Some(e) = stream_error {
            let is_digest_error = e.get_ref().is_some_and(|inner| {
                inner
                    .downcast_ref::<oci_client::errors::DigestError>()
                    .is_some()
            });
            if !is_digest_error || actual == desc.digest {
                return Err(ImageErrorKind::Unreachable {
                    registry,
                    reason: format!(
                        "download of {what} {} interrupted: {}",
                        desc.digest,
                        transport_reason(&e, false)
                    ),
                });
            }
        }
        if actual != desc.digest {
            return Err(ImageErrorKind::DigestMismatch {
                what,
                expected: desc.digest.clone(),
                actual,
            });
        }
        sink.finish()
            .await
            .map_err(|e| ImageErrorKind::cache("write downloaded blob to", sink.path(), e))?;
        Ok(received)
    }

    /// Downloads layers one at a time to `layers_dir` while a blocking thread extracts the
    /// previous ones, in order, into `content_dir`, or packs them into `pack` while they can be
    /// packed. Returns the bytes extracted and whether the result is a pack.
    async fn download_and_extract(
        &self,
        source: &Source<'_>,
        layers: &[Descriptor],
        layers_dir: PathBuf,
        content_dir: PathBuf,
        filter: PathFilter,
        pack: Option<PackTarget>,
    ) -> Result<(u64, bool), ImageErrorKind> {
        tokio::fs::create_dir_all(&layers_dir)
            .await
            .map_err(|e| ImageErrorKind::cache("create directory", &layers_dir, e))?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(String, PathBuf)>(1);
        let limits = self.limits;
        let extractor =
            tokio::task::spawn_blocking(move || -> Result<(u64, bool), ImageErrorKind> {
                let mut layers = LayerExtraction::new(content_dir, filter, limits, pack)?;
                while let Some((digest, path)) = rx.blocking_recv() {
                    layers.apply(digest, path)?;
                }
                layers.finish()
            });

        let mut download_error = None;
        let mut downloaded: u64 = 0;
        for (index, layer) in layers.iter().enumerate() {
            let path = layers_dir.join(index.to_string());
            let remaining = self.limits.max_download_bytes.saturating_sub(downloaded);
            let file = match tokio::fs::File::create(&path).await {
                Ok(file) => file,
                Err(e) => {
                    download_error = Some(ImageErrorKind::cache("create", &path, e));
                    break;
                }
            };
            let sink = BlobSink::File {
                writer: tokio::io::BufWriter::with_capacity(256 * 1024, file),
                path: path.clone(),
            };
            match self
                .fetch_blob(source, layer, "layer", remaining, sink)
                .await
            {
                Ok(n) => downloaded += n,
                Err(e) => {
                    download_error = Some(e);
                    break;
                }
            }
            if tx.send((layer.digest.clone(), path)).await.is_err() {
                break; // the extractor stopped with an error, reported below
            }
        }
        drop(tx);
        let extracted = extractor.await.map_err(|e| ImageErrorKind::Cache {
            op: "run layer extraction",
            path: PathBuf::new(),
            source: std::io::Error::other(e.to_string()),
        })?;
        // An extraction failure explains a closed channel; otherwise report the download failure.
        let extracted = extracted?;
        match download_error {
            Some(e) => Err(e),
            None => Ok(extracted),
        }
    }
}

/// Held while one digest is looked up in the shared cache and, when absent, unpacked: process-wide
/// (pullers are rebuilt when credentials change; they share the cache directory), keyed by cache
/// root, digest and filter. Its map entry goes with the last holder.
struct UnpackLock {
    key: UnpackKey,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

type UnpackKey = (PathBuf, String, String);

fn unpack_locks() -> &'static Mutex<HashMap<UnpackKey, Arc<tokio::sync::Mutex<()>>>> {
    static LOCKS: OnceLock<Mutex<HashMap<UnpackKey, Arc<tokio::sync::Mutex<()>>>>> =
        OnceLock::new();
    LOCKS.get_or_init(Default::default)
}

impl UnpackLock {
    async fn acquire(root: &std::path::Path, digest: &str, cache_key: String) -> UnpackLock {
        let key = (root.to_path_buf(), digest.to_string(), cache_key);
        let lock = unpack_locks()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(key.clone())
            .or_default()
            .clone();
        let guard = lock.clone().lock_owned().await;
        UnpackLock {
            key,
            lock,
            guard: Some(guard),
        }
    }
}

impl Drop for UnpackLock {
    fn drop(&mut self) {
        let mut locks = unpack_locks()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.guard = None;
        // Only ours and the map's left (the guard's went above): nobody else holds or waits.
        if Arc::strong_count(&self.lock) == 2 {
            locks.remove(&self.key);
        }
    }
}

/// The pull source that served an image's manifest, and the client that reached it: the rest of
/// the pull goes there too.
struct Source<'a> {
    image: ImageRef,
    client: &'a oci_client::Client,
}

/// Clients for registries.conf sources marked `insecure`.
struct InsecureClients {
    unverified_tls: oci_client::Client,
    plain_http: oci_client::Client,
}

impl InsecureClients {
    fn build() -> Result<InsecureClients, ConnectionError> {
        Ok(InsecureClients {
            unverified_tls: build_insecure_client(InsecureTransport::UnverifiedTls)?,
            plain_http: build_insecure_client(InsecureTransport::PlainHttp)?,
        })
    }
}

fn parse(reference: &str) -> Result<ImageRef, ImageError> {
    ImageRef::parse(reference).map_err(|reason| {
        ImageError::new(
            reference,
            false,
            ImageErrorKind::InvalidReference { reason },
        )
    })
}

enum BlobSink<'a> {
    Memory(&'a mut Vec<u8>),
    File {
        writer: tokio::io::BufWriter<tokio::fs::File>,
        path: PathBuf,
    },
}

impl BlobSink<'_> {
    async fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        match self {
            Self::Memory(out) => {
                out.extend_from_slice(chunk);
                Ok(())
            }
            Self::File { writer, .. } => writer.write_all(chunk).await,
        }
    }

    async fn finish(&mut self) -> std::io::Result<()> {
        match self {
            Self::Memory(_) => Ok(()),
            Self::File { writer, .. } => writer.flush().await,
        }
    }

    fn path(&self) -> PathBuf {
        match self {
            Self::Memory(_) => PathBuf::from("<memory>"),
            Self::File { path, .. } => path.clone(),
        }
    }
}
