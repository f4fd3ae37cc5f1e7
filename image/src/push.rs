//! Builds OCI images from directories or hand-made tars and pushes them: fixtures for tests and
//! `make run`, made by our own code rather than external tools. Input: files and labels. Output:
//! manifests and blobs in a registry, and their digests. Talks to registries.
//!
//! Layers built from directories are reproducible: entries sorted by name, mtime fixed, uid/gid 0,
//! no user or group names, modes 0755 for directories and executables and 0644 otherwise, so the
//! same directory always yields the same digest. Image configs carry no timestamps (no `created`,
//! no `history`), so the same layers, labels and [`RuntimeConfig`] give the same manifest digest:
//! [`BuiltImage`] computes it without a registry, which is how product images are checked to be
//! reproducible.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use http::HeaderValue;
use serde::Serialize;
use sha2::Digest as _;

use crate::auth::DockerConfig;
use crate::decompress;
use crate::labels;
use crate::manifest::{
    Descriptor, ImageIndex, ImageManifest, OCI_CONFIG, OCI_INDEX, OCI_LAYER_GZIP, OCI_MANIFEST,
    Platform,
};
use crate::reference::{ImageRef, sha256_digest};
use crate::registry_client::{ConnectionConfig, build_client, map_error};

/// Modification time of every entry in built layers (2000-01-01T00:00:00Z).
const FIXED_MTIME: u64 = 946_684_800;

/// Building or pushing a fixture image failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The target reference does not parse.
    #[error("invalid image reference {reference:?}: {reason}")]
    InvalidReference {
        /// The reference.
        reference: String,
        /// Why.
        reason: String,
    },
    /// Reading the source directory failed.
    #[error("failed to read {path:?}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The registry refused or could not be reached.
    #[error("failed to push {what} to {reference:?}: {kind}")]
    Registry {
        /// The target.
        reference: String,
        /// `blob sha256:…`, `manifest`, …
        what: String,
        /// Why.
        kind: Box<crate::error::ImageErrorKind>,
    },
    /// The registry client could not be built.
    #[error(transparent)]
    Connection(#[from] crate::registry_client::ConnectionError),
    /// A layer could not be built in memory; `path` names the file when one was refused.
    #[error("failed to build a layer{}: {source}", if path.is_empty() { String::new() } else { format!(" with {path:?}") })]
    Layer {
        /// The file being added, or empty.
        path: String,
        /// Why (the tar format refuses absolute paths and `..`).
        source: io::Error,
    },
}

/// One layer blob ready to push.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Layer media type.
    pub media_type: String,
    /// The blob bytes (compressed as the media type says).
    pub data: bytes::Bytes,
    /// sha256 of the uncompressed tar (the config's `rootfs.diff_ids` entry).
    pub diff_id: String,
}

impl Layer {
    /// A gzip layer holding `dir`'s tree under `prefix` (`""` for the image root,
    /// `"configs"` to put the tree in `/configs`). Symlinks are stored as symlinks.
    pub fn from_dir(dir: &Path, prefix: &str) -> Result<Self, PushError> {
        Self::from_dir_compressed(dir, prefix, flate2::Compression::default())
    }

    /// [`Layer::from_dir`] at another gzip level (the level changes the blob digest, never the
    /// `diff_id`). Large binaries build several times faster at [`flate2::Compression::fast`].
    pub fn from_dir_compressed(
        dir: &Path,
        prefix: &str,
        level: flate2::Compression,
    ) -> Result<Self, PushError> {
        let mut builder = LayerBuilder::with_level(level);
        let prefix = prefix.trim_matches('/');
        if !prefix.is_empty() {
            let mut parent = PathBuf::new();
            for component in Path::new(prefix).iter() {
                parent.push(component);
                builder
                    .dir(&parent, 0o755)
                    .map_err(|source| io_at(dir, source))?;
            }
        }
        builder.add_tree(dir, Path::new(prefix))?;
        builder.finish().map_err(|source| io_at(dir, source))
    }

    /// A gzip layer with the given regular files (`path`, `content`), parents created implicitly.
    /// A file the tar format refuses (an absolute path, a `..` component) is an error naming it:
    /// a layer is never pushed without one of the files asked for.
    pub fn from_files<P: AsRef<str>, C: AsRef<[u8]>>(files: &[(P, C)]) -> Result<Self, PushError> {
        let mut builder = LayerBuilder::new();
        let mut sorted: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(p, c)| (p.as_ref(), c.as_ref()))
            .collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (path, content) in sorted {
            builder
                .file(Path::new(path), 0o644, content)
                .map_err(|source| PushError::Layer {
                    path: path.to_owned(),
                    source,
                })?;
        }
        builder.finish().map_err(|source| PushError::Layer {
            path: String::new(),
            source,
        })
    }

    /// A hand-made tar (for example a hostile one built with the `tar` crate), gzip-compressed.
    pub fn gzip_tar(tar_bytes: &[u8]) -> Result<Self, PushError> {
        let diff_id = sha256_digest(tar_bytes);
        let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let data = encoder
            .write_all(tar_bytes)
            .and_then(|()| encoder.finish())
            .map_err(|source| PushError::Layer {
                path: String::new(),
                source,
            })?;
        Ok(Self {
            media_type: OCI_LAYER_GZIP.to_string(),
            data: data.into(),
            diff_id,
        })
    }

    /// A blob pushed exactly as given, with any media type (unsupported ones included).
    pub fn raw(media_type: &str, data: Vec<u8>) -> Self {
        let mut uncompressed = Vec::new();
        let diff_id = match decompress::decompressing_reader(io::BufReader::new(&data[..]))
            .and_then(|mut r| r.read_to_end(&mut uncompressed))
        {
            Ok(_) => sha256_digest(&uncompressed),
            Err(_) => sha256_digest(&data),
        };
        Self {
            media_type: media_type.to_string(),
            data: data.into(),
            diff_id,
        }
    }

    /// The blob digest.
    pub fn digest(&self) -> String {
        sha256_digest(&self.data)
    }
}

/// Writes a reproducible tar into gzip while hashing the uncompressed stream.
struct LayerBuilder {
    tar: tar::Builder<HashingWriter<GzEncoder<Vec<u8>>>>,
}

struct HashingWriter<W> {
    inner: W,
    hasher: sha2::Sha256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl LayerBuilder {
    fn new() -> Self {
        Self::with_level(flate2::Compression::default())
    }

    fn with_level(level: flate2::Compression) -> Self {
        let writer = HashingWriter {
            inner: GzEncoder::new(Vec::new(), level),
            hasher: sha2::Sha256::new(),
        };
        let mut tar = tar::Builder::new(writer);
        tar.mode(tar::HeaderMode::Deterministic);
        Self { tar }
    }

    fn header(entry_type: tar::EntryType, mode: u32, size: u64) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(entry_type);
        header.set_mode(mode);
        header.set_size(size);
        header.set_mtime(FIXED_MTIME);
        header.set_uid(0);
        header.set_gid(0);
        header
    }

    fn dir(&mut self, path: &Path, mode: u32) -> io::Result<()> {
        let mut header = Self::header(tar::EntryType::Directory, mode, 0);
        self.tar.append_data(&mut header, path, io::empty())
    }

    fn file<R: Read>(&mut self, path: &Path, mode: u32, content: R) -> io::Result<()> {
        self.file_sized(path, mode, content, None)
    }

    fn file_sized<R: Read>(
        &mut self,
        path: &Path,
        mode: u32,
        mut content: R,
        size: Option<u64>,
    ) -> io::Result<()> {
        match size {
            Some(size) => {
                let mut header = Self::header(tar::EntryType::Regular, mode, size);
                self.tar.append_data(&mut header, path, content)
            }
            None => {
                let mut buf = Vec::new();
                content.read_to_end(&mut buf)?;
                let mut header = Self::header(tar::EntryType::Regular, mode, buf.len() as u64);
                self.tar.append_data(&mut header, path, &buf[..])
            }
        }
    }

    fn symlink(&mut self, path: &Path, target: &Path) -> io::Result<()> {
        let mut header = Self::header(tar::EntryType::Symlink, 0o777, 0);
        self.tar.append_link(&mut header, path, target)
    }

    /// Adds the children of `dir` under `at`, sorted by name, recursively.
    fn add_tree(&mut self, dir: &Path, at: &Path) -> Result<(), PushError> {
        let mut children: Vec<fs::DirEntry> = fs::read_dir(dir)
            .map_err(|source| io_at(dir, source))?
            .collect::<Result<_, _>>()
            .map_err(|source| io_at(dir, source))?;
        children.sort_by_key(fs::DirEntry::file_name);
        for child in children {
            let source = child.path();
            let target = at.join(child.file_name());
            let meta = fs::symlink_metadata(&source).map_err(|e| io_at(&source, e))?;
            let file_type = meta.file_type();
            if file_type.is_symlink() {
                let link = fs::read_link(&source).map_err(|e| io_at(&source, e))?;
                self.symlink(&target, &link)
                    .map_err(|e| io_at(&source, e))?;
            } else if file_type.is_dir() {
                self.dir(&target, 0o755).map_err(|e| io_at(&source, e))?;
                self.add_tree(&source, &target)?;
            } else if file_type.is_file() {
                let mode = if meta.permissions().mode() & 0o111 != 0 {
                    0o755
                } else {
                    0o644
                };
                let file = fs::File::open(&source).map_err(|e| io_at(&source, e))?;
                self.file_sized(&target, mode, io::BufReader::new(file), Some(meta.len()))
                    .map_err(|e| io_at(&source, e))?;
            }
        }
        Ok(())
    }

    fn finish(self) -> io::Result<Layer> {
        let writer = self.tar.into_inner()?;
        let diff_id = format!("sha256:{}", hex::encode(writer.hasher.finalize()));
        let data = writer.inner.finish()?;
        Ok(Layer {
            media_type: OCI_LAYER_GZIP.to_string(),
            data: data.into(),
            diff_id,
        })
    }
}

fn io_at(path: &Path, source: io::Error) -> PushError {
    PushError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What to push.
#[derive(Debug, Clone, Default)]
pub struct ImageSpec {
    /// Layers, bottom first.
    pub layers: Vec<Layer>,
    /// Config labels.
    pub labels: BTreeMap<String, String>,
    /// Platform written into the config (default linux/amd64).
    pub platform: Platform,
}

/// A pushed manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedImage {
    /// Manifest digest.
    pub digest: String,
    /// `registry/repository@digest`.
    pub digest_ref: String,
    /// Manifest size in bytes.
    pub size: i64,
    /// Manifest media type.
    pub media_type: String,
}

/// Labels of a catalog image whose FBC lives in `configs_dir` (e.g. `/configs`).
pub fn catalog_labels(configs_dir: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(
        labels::CATALOG_CONFIGS_LABEL.to_string(),
        configs_dir.to_string(),
    )])
}

/// Labels of a registry+v1 bundle image.
pub fn bundle_labels(
    package: &str,
    channels: &[&str],
    default_channel: Option<&str>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([
        (
            labels::BUNDLE_MEDIATYPE_LABEL.to_string(),
            labels::REGISTRY_V1.to_string(),
        ),
        (
            labels::BUNDLE_MANIFESTS_LABEL.to_string(),
            "manifests/".to_string(),
        ),
        (
            labels::BUNDLE_METADATA_LABEL.to_string(),
            "metadata/".to_string(),
        ),
        (
            labels::BUNDLE_PACKAGE_LABEL.to_string(),
            package.to_string(),
        ),
        (
            labels::BUNDLE_CHANNELS_LABEL.to_string(),
            channels.join(","),
        ),
    ]);
    if let Some(default) = default_channel {
        out.insert(
            labels::BUNDLE_DEFAULT_CHANNEL_LABEL.to_string(),
            default.to_string(),
        );
    }
    out
}

/// Settings of a [`Pusher`].
#[derive(Debug, Clone, Default)]
pub struct PusherConfig {
    /// Registries spoken to over plain HTTP (`host:port`).
    pub insecure_registries: Vec<String>,
    /// Credentials.
    pub auth: Option<DockerConfig>,
    /// Extra trusted CAs (PEM).
    pub extra_ca_pem: Option<Vec<u8>>,
}

impl PusherConfig {
    /// Plain HTTP to `host` (a loopback test registry), anonymous.
    pub fn insecure(host: &str) -> Self {
        Self {
            insecure_registries: vec![host.to_string()],
            ..Self::default()
        }
    }
}

/// Pushes blobs and manifests.
pub struct Pusher {
    client: oci_client::Client,
    auth: DockerConfig,
}

#[derive(Serialize)]
struct ConfigDoc<'a> {
    architecture: &'a str,
    os: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<&'a str>,
    config: ConfigInner<'a>,
    rootfs: RootFs<'a>,
}

#[derive(Serialize)]
struct ConfigInner<'a> {
    // Empty fields are left out, so fixture images keep the config (and digest) they always had.
    #[serde(rename = "User", skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
    #[serde(rename = "Env", skip_serializing_if = "<[String]>::is_empty")]
    env: &'a [String],
    #[serde(rename = "Entrypoint", skip_serializing_if = "<[String]>::is_empty")]
    entrypoint: &'a [String],
    #[serde(rename = "Cmd", skip_serializing_if = "<[String]>::is_empty")]
    cmd: &'a [String],
    #[serde(rename = "WorkingDir", skip_serializing_if = "Option::is_none")]
    working_dir: Option<&'a str>,
    #[serde(rename = "Labels")]
    labels: &'a BTreeMap<String, String>,
}

/// How a runtime starts a container from the image (the config's `config` object beyond labels).
/// The default (all empty) is what fixture images have: content only, nothing to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// `User`: `uid[:gid]` (numeric, so `runAsNonRoot` can verify it without reading the image).
    pub user: Option<String>,
    /// `Env`: `KEY=value` entries.
    pub env: Vec<String>,
    /// `Entrypoint`: the program and its leading arguments.
    pub entrypoint: Vec<String>,
    /// `Cmd`: default arguments after the entrypoint.
    pub cmd: Vec<String>,
    /// `WorkingDir`.
    pub working_dir: Option<String>,
}

/// An image manifest with its config, built in memory and not yet pushed: its digest is known
/// before any registry is involved.
#[derive(Debug, Clone)]
pub struct BuiltImage {
    /// The config blob.
    pub config: bytes::Bytes,
    /// The layers, bottom first.
    pub layers: Vec<Layer>,
    /// The OCI image manifest body.
    pub manifest: Vec<u8>,
}

impl BuiltImage {
    /// Builds the config and manifest for `spec` started as `runtime` says.
    pub fn new(spec: &ImageSpec, runtime: &RuntimeConfig) -> Result<Self, serde_json::Error> {
        let config = ConfigDoc {
            architecture: &spec.platform.architecture,
            os: &spec.platform.os,
            variant: spec.platform.variant.as_deref(),
            config: ConfigInner {
                user: runtime.user.as_deref(),
                env: &runtime.env,
                entrypoint: &runtime.entrypoint,
                cmd: &runtime.cmd,
                working_dir: runtime.working_dir.as_deref(),
                labels: &spec.labels,
            },
            rootfs: RootFs {
                kind: "layers",
                diff_ids: spec.layers.iter().map(|l| l.diff_id.as_str()).collect(),
            },
        };
        let config = serde_json::to_vec(&config)?;
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: Some(OCI_MANIFEST.to_string()),
            config: Descriptor {
                media_type: OCI_CONFIG.to_string(),
                digest: sha256_digest(&config),
                size: config.len() as i64,
                platform: None,
                annotations: None,
            },
            layers: spec
                .layers
                .iter()
                .map(|layer| Descriptor {
                    media_type: layer.media_type.clone(),
                    digest: layer.digest(),
                    size: layer.data.len() as i64,
                    platform: None,
                    annotations: None,
                })
                .collect(),
        };
        Ok(Self {
            config: config.into(),
            layers: spec.layers.clone(),
            manifest: serde_json::to_vec(&manifest)?,
        })
    }

    /// The manifest digest (what `image@sha256:…` names).
    pub fn digest(&self) -> String {
        sha256_digest(&self.manifest)
    }
}

/// The body of an OCI image index over manifests of one repository, one per platform: what
/// [`Pusher::push_index`] uploads, computed without a registry.
pub fn index_body(entries: &[(Platform, PushedImage)]) -> Result<Vec<u8>, serde_json::Error> {
    let index = ImageIndex {
        schema_version: 2,
        media_type: Some(OCI_INDEX.to_string()),
        manifests: entries
            .iter()
            .map(|(platform, pushed)| Descriptor {
                media_type: pushed.media_type.clone(),
                digest: pushed.digest.clone(),
                size: pushed.size,
                platform: Some(platform.clone()),
                annotations: None,
            })
            .collect(),
    };
    serde_json::to_vec(&index)
}

#[derive(Serialize)]
struct RootFs<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    diff_ids: Vec<&'a str>,
}

impl Pusher {
    /// Builds the registry client.
    pub fn new(config: PusherConfig) -> Result<Self, PushError> {
        let client = build_client(&ConnectionConfig {
            insecure_registries: config.insecure_registries,
            extra_ca_pem: config.extra_ca_pem,
        })?;
        Ok(Self {
            client,
            auth: config.auth.unwrap_or_default(),
        })
    }

    fn parse(reference: &str) -> Result<ImageRef, PushError> {
        ImageRef::parse(reference).map_err(|reason| PushError::InvalidReference {
            reference: reference.to_string(),
            reason,
        })
    }

    fn registry_error(
        &self,
        image: &ImageRef,
        reference: &str,
        what: String,
        e: oci_client::errors::OciDistributionError,
    ) -> PushError {
        let had = self
            .auth
            .credentials_for(image.registry(), image.repository())
            .is_some();
        PushError::Registry {
            reference: reference.to_string(),
            what,
            kind: Box::new(map_error(image.registry(), had, e)),
        }
    }

    async fn authenticate(&self, image: &ImageRef, reference: &str) -> Result<(), PushError> {
        let auth = self
            .auth
            .registry_auth(image.registry(), image.repository());
        self.client
            .auth(image.oci(), &auth, oci_client::RegistryOperation::Push)
            .await
            .map(|_| ())
            .map_err(|e| self.registry_error(image, reference, "credentials".to_string(), e))
    }

    /// Uploads one blob into the repository of `reference`; returns its digest.
    pub async fn push_blob(
        &self,
        reference: &str,
        data: bytes::Bytes,
    ) -> Result<String, PushError> {
        let image = Self::parse(reference)?;
        self.authenticate(&image, reference).await?;
        self.push_blob_to(&image, reference, data).await
    }

    async fn push_blob_to(
        &self,
        image: &ImageRef,
        reference: &str,
        data: bytes::Bytes,
    ) -> Result<String, PushError> {
        let digest = sha256_digest(&data);
        let exists = self
            .client
            .blob_exists(image.oci(), &digest)
            .await
            .unwrap_or(false);
        if !exists {
            self.client
                .push_blob(image.oci(), data, &digest)
                .await
                .map_err(|e| self.registry_error(image, reference, format!("blob {digest}"), e))?;
        }
        Ok(digest)
    }

    /// Pushes raw manifest bytes with `media_type` to `reference` (a tag, or the repository alone
    /// to push by digest).
    pub async fn push_manifest_bytes(
        &self,
        reference: &str,
        media_type: &str,
        body: Vec<u8>,
    ) -> Result<PushedImage, PushError> {
        let image = Self::parse(reference)?;
        self.authenticate(&image, reference).await?;
        self.push_manifest_to(&image, reference, media_type, body)
            .await
    }

    async fn push_manifest_to(
        &self,
        image: &ImageRef,
        reference: &str,
        media_type: &str,
        body: Vec<u8>,
    ) -> Result<PushedImage, PushError> {
        let digest = sha256_digest(&body);
        let size = body.len() as i64;
        let target = if image.tag().is_some() && !image.is_digest_pinned() {
            image.oci().clone()
        } else {
            image.oci_with_digest(&digest)
        };
        let content_type =
            HeaderValue::from_str(media_type).map_err(|e| PushError::InvalidReference {
                reference: reference.to_string(),
                reason: format!("invalid media type {media_type:?}: {e}"),
            })?;
        self.client
            .push_manifest_raw(&target, body, content_type)
            .await
            .map_err(|e| self.registry_error(image, reference, "manifest".to_string(), e))?;
        Ok(PushedImage {
            digest_ref: image.with_digest(&digest),
            digest,
            size,
            media_type: media_type.to_string(),
        })
    }

    /// Pushes layers, config and an OCI manifest to `reference` (`host/repo:tag`, or `host/repo`
    /// to push by digest only).
    pub async fn push_image(
        &self,
        reference: &str,
        spec: &ImageSpec,
    ) -> Result<PushedImage, PushError> {
        let built = BuiltImage::new(spec, &RuntimeConfig::default()).map_err(|e| {
            PushError::InvalidReference {
                reference: reference.to_string(),
                reason: e.to_string(),
            }
        })?;
        self.push_built(reference, &built).await
    }

    /// Pushes an image built with [`BuiltImage::new`]: blobs first, then the manifest.
    pub async fn push_built(
        &self,
        reference: &str,
        built: &BuiltImage,
    ) -> Result<PushedImage, PushError> {
        let image = Self::parse(reference)?;
        self.authenticate(&image, reference).await?;
        self.push_blob_to(&image, reference, built.config.clone())
            .await?;
        for layer in &built.layers {
            self.push_blob_to(&image, reference, layer.data.clone())
                .await?;
        }
        self.push_manifest_to(&image, reference, OCI_MANIFEST, built.manifest.clone())
            .await
    }

    /// Pushes an OCI image index over already pushed manifests (same repository) to `reference`.
    pub async fn push_index(
        &self,
        reference: &str,
        entries: &[(Platform, PushedImage)],
    ) -> Result<PushedImage, PushError> {
        let body = index_body(entries).map_err(|e| PushError::InvalidReference {
            reference: reference.to_string(),
            reason: e.to_string(),
        })?;
        self.push_manifest_bytes(reference, OCI_INDEX, body).await
    }

    /// A catalog image: `fbc_dir` in `/configs`, labelled for catalogd.
    pub async fn push_catalog_dir(
        &self,
        reference: &str,
        fbc_dir: &Path,
    ) -> Result<PushedImage, PushError> {
        let spec = ImageSpec {
            layers: vec![Layer::from_dir(fbc_dir, "configs")?],
            labels: catalog_labels("/configs"),
            platform: Platform::default(),
        };
        self.push_image(reference, &spec).await
    }

    /// A registry+v1 bundle image: `bundle_dir` (with `manifests/` and `metadata/`) at the root.
    pub async fn push_bundle_dir(
        &self,
        reference: &str,
        bundle_dir: &Path,
        package: &str,
        channels: &[&str],
    ) -> Result<PushedImage, PushError> {
        let spec = ImageSpec {
            layers: vec![Layer::from_dir(bundle_dir, "")?],
            labels: bundle_labels(package, channels, channels.first().copied()),
            platform: Platform::default(),
        };
        self.push_image(reference, &spec).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(layer: &Layer) -> Vec<(String, tar::EntryType, u32, u64, u64)> {
        let reader = decompress::decompressing_reader(io::BufReader::new(&layer.data[..])).unwrap();
        let mut archive = tar::Archive::new(reader);
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    h.entry_type(),
                    h.mode().unwrap(),
                    h.mtime().unwrap(),
                    h.uid().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn layer_from_dir_is_reproducible_sorted_and_normalised() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("b/sub")).unwrap();
        fs::write(tmp.path().join("b/sub/z.yaml"), "z").unwrap();
        fs::write(tmp.path().join("a.json"), "{}").unwrap();
        fs::write(tmp.path().join("run.sh"), "#!/bin/sh").unwrap();
        fs::set_permissions(tmp.path().join("run.sh"), fs::Permissions::from_mode(0o700)).unwrap();
        fs::set_permissions(tmp.path().join("a.json"), fs::Permissions::from_mode(0o600)).unwrap();
        let first = Layer::from_dir(tmp.path(), "/configs/").unwrap();
        let second = Layer::from_dir(tmp.path(), "configs").unwrap();
        assert_eq!(first.digest(), second.digest());
        let listed = entries(&first);
        let names: Vec<&str> = listed.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "configs",
                "configs/a.json",
                "configs/b",
                "configs/b/sub",
                "configs/b/sub/z.yaml",
                "configs/run.sh"
            ]
        );
        assert!(listed.iter().all(|e| e.3 == FIXED_MTIME && e.4 == 0));
        assert_eq!(listed[1].2, 0o644);
        assert_eq!(listed[5].2, 0o755);
        // diff_id is the digest of the uncompressed tar.
        let mut tar_bytes = Vec::new();
        decompress::decompressing_reader(io::BufReader::new(&first.data[..]))
            .unwrap()
            .read_to_end(&mut tar_bytes)
            .unwrap();
        assert_eq!(first.diff_id, sha256_digest(&tar_bytes));
    }

    #[test]
    fn bundle_labels_follow_registry_v1_conventions() {
        let labels = bundle_labels("etcd", &["alpha", "stable"], Some("stable"));
        assert_eq!(labels[labels::BUNDLE_MEDIATYPE_LABEL], "registry+v1");
        assert_eq!(labels[labels::BUNDLE_MANIFESTS_LABEL], "manifests/");
        assert_eq!(labels[labels::BUNDLE_METADATA_LABEL], "metadata/");
        assert_eq!(labels[labels::BUNDLE_PACKAGE_LABEL], "etcd");
        assert_eq!(labels[labels::BUNDLE_CHANNELS_LABEL], "alpha,stable");
        assert_eq!(
            catalog_labels("/configs")[labels::CATALOG_CONFIGS_LABEL],
            "/configs"
        );
    }

    #[test]
    fn a_file_the_tar_format_refuses_is_an_error_naming_it_not_a_layer_without_it() {
        for path in ["../outside", "/etc/passwd"] {
            let err = Layer::from_files(&[("configs/a.json", "{}"), (path, "x")])
                .expect_err("refused by tar");
            assert!(
                matches!(&err, PushError::Layer { path: p, .. } if p == path),
                "{err:?}"
            );
            assert!(
                err.to_string()
                    .starts_with(&format!("failed to build a layer with {path:?}: ")),
                "{err}"
            );
        }
        let layer = Layer::from_files(&[("configs/a.json", "{}")]).expect("a layer");
        assert!(!layer.data.is_empty());
        let gz = Layer::gzip_tar(b"tar bytes").expect("compressed");
        assert_eq!(gz.diff_id, sha256_digest(b"tar bytes"));
    }

    #[test]
    fn raw_layer_keeps_bytes_and_media_type() {
        let layer = Layer::raw(
            "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
            b"not a tar".to_vec(),
        );
        assert_eq!(&layer.data[..], b"not a tar");
        assert_eq!(layer.diff_id, sha256_digest(b"not a tar"));
    }

    #[test]
    fn built_image_has_no_timestamps_and_the_same_inputs_give_the_same_digest() {
        let spec = ImageSpec {
            layers: vec![
                Layer::from_files(&[("etc/passwd", "nonroot:x:65532:65532::/:")]).expect("a layer"),
            ],
            labels: BTreeMap::from([("org.opencontainers.image.version".into(), "1.0.0".into())]),
            platform: Platform::default(),
        };
        let runtime = RuntimeConfig {
            user: Some("65532:65532".into()),
            entrypoint: vec!["/app".into()],
            ..RuntimeConfig::default()
        };
        let first = BuiltImage::new(&spec, &runtime).unwrap();
        let second = BuiltImage::new(&spec.clone(), &runtime.clone()).unwrap();
        assert_eq!(first.digest(), second.digest());
        let config: serde_json::Value = serde_json::from_slice(&first.config).unwrap();
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(config["config"]["Entrypoint"], serde_json::json!(["/app"]));
        assert!(config.get("created").is_none() && config.get("history").is_none());
        // Fixture images (no runtime settings) keep the config they always had.
        let plain = BuiltImage::new(&spec, &RuntimeConfig::default()).unwrap();
        let plain: serde_json::Value = serde_json::from_slice(&plain.config).unwrap();
        assert_eq!(
            plain["config"],
            serde_json::json!({"Labels": {"org.opencontainers.image.version": "1.0.0"}})
        );
    }
}
