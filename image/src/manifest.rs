//! OCI / Docker v2 manifests, image indexes and image configs as far as pulling needs them, and
//! platform selection in an index. No IO.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker schema 2 manifest.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker manifest list.
pub const DOCKER_MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// OCI image config.
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// OCI gzip layer.
pub const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// OCI zstd layer.
pub const OCI_LAYER_ZSTD: &str = "application/vnd.oci.image.layer.v1.tar+zstd";
/// OCI uncompressed layer.
pub const OCI_LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";

/// Media types accepted when fetching a manifest.
pub const ACCEPTED_MANIFESTS: [&str; 4] = [
    OCI_MANIFEST,
    OCI_INDEX,
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
];

/// Layer media types that hold a (possibly compressed) tar stream. Compression itself is
/// detected from the bytes, as container runtimes do.
pub fn is_tar_layer(media_type: &str) -> bool {
    matches!(
        media_type,
        OCI_LAYER_TAR
            | OCI_LAYER_GZIP
            | OCI_LAYER_ZSTD
            | "application/vnd.oci.image.layer.nondistributable.v1.tar"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd"
            | "application/vnd.docker.image.rootfs.diff.tar"
            | "application/vnd.docker.image.rootfs.diff.tar.gzip"
            | "application/vnd.docker.image.rootfs.diff.tar.zstd"
            | "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
    )
}

/// A content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Media type of the referenced content.
    pub media_type: String,
    /// Digest of the referenced content.
    pub digest: String,
    /// Size in bytes.
    pub size: i64,
    /// Platform, in index entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// An image manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// Always 2.
    pub schema_version: u32,
    /// Media type (optional in OCI, required in Docker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// Layers, bottom first.
    pub layers: Vec<Descriptor>,
}

/// An image index (or Docker manifest list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    /// Always 2.
    pub schema_version: u32,
    /// Media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// One entry per platform (or attestation).
    pub manifests: Vec<Descriptor>,
}

/// A fetched manifest document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// A single image.
    Image(ImageManifest),
    /// A multi-platform index.
    Index(ImageIndex),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Probe {
    schema_version: Option<u32>,
    media_type: Option<String>,
    manifests: Option<serde_json::Value>,
    layers: Option<serde_json::Value>,
}

/// Why a manifest body was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum ManifestParseError {
    /// Valid JSON of a kind we do not pull (schema 1, artifacts).
    Unsupported(String),
    /// Not parseable.
    Invalid(String),
}

impl Manifest {
    /// Parses a manifest body, using its `mediaType` or, when absent, its shape.
    pub fn parse(body: &[u8]) -> Result<Self, ManifestParseError> {
        let probe: Probe =
            serde_json::from_slice(body).map_err(|e| ManifestParseError::Invalid(e.to_string()))?;
        if probe.schema_version != Some(2) {
            return Err(ManifestParseError::Unsupported(format!(
                "schemaVersion {}",
                probe
                    .schema_version
                    .map_or_else(|| "missing".to_string(), |v| v.to_string())
            )));
        }
        let is_index = match probe.media_type.as_deref() {
            Some(OCI_INDEX | DOCKER_MANIFEST_LIST) => true,
            Some(OCI_MANIFEST | DOCKER_MANIFEST) => false,
            Some(other) => return Err(ManifestParseError::Unsupported(other.to_string())),
            None if probe.manifests.is_some() => true,
            None if probe.layers.is_some() => false,
            None => {
                return Err(ManifestParseError::Invalid(
                    "neither layers nor manifests".to_string(),
                ));
            }
        };
        let invalid = |e: serde_json::Error| ManifestParseError::Invalid(e.to_string());
        if is_index {
            serde_json::from_slice(body)
                .map(Manifest::Index)
                .map_err(invalid)
        } else {
            serde_json::from_slice(body)
                .map(Manifest::Image)
                .map_err(invalid)
        }
    }
}

/// The parts of an image config pulling needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ImageConfig {
    /// Labels (`config.Labels`).
    pub labels: BTreeMap<String, String>,
}

impl ImageConfig {
    /// Parses an image config blob.
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            config: Option<Inner>,
        }
        #[derive(Deserialize)]
        struct Inner {
            #[serde(rename = "Labels", default)]
            labels: Option<BTreeMap<String, String>>,
        }
        let raw: Raw = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        Ok(Self {
            labels: raw.config.and_then(|c| c.labels).unwrap_or_default(),
        })
    }
}

/// `os/architecture[/variant]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// `linux`.
    pub os: String,
    /// `amd64`, `arm64`, …
    pub architecture: String,
    /// `v8`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl Default for Platform {
    /// linux/amd64, the platform OLM's images are published for first.
    fn default() -> Self {
        Self {
            os: "linux".to_string(),
            architecture: "amd64".to_string(),
            variant: None,
        }
    }
}

impl Platform {
    /// The running host's platform, in Go's naming.
    pub fn host() -> Self {
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "powerpc64" => "ppc64le",
            "s390x" => "s390x",
            other => other,
        };
        Self {
            os: "linux".to_string(),
            architecture: architecture.to_string(),
            variant: None,
        }
    }

    /// Whether an index entry's platform satisfies this one (a variant is compared only when this
    /// one names it).
    pub fn matches(&self, other: &Platform) -> bool {
        self.os == other.os
            && self.architecture == other.architecture
            && match &self.variant {
                Some(v) => other.variant.as_deref() == Some(v.as_str()),
                None => true,
            }
    }

    /// The entry of `index` for this platform: the first exact match, preferring entries
    /// without a variant when none is asked for.
    pub fn select<'a>(&self, index: &'a ImageIndex) -> Option<&'a Descriptor> {
        let candidates = || {
            index
                .manifests
                .iter()
                .filter(|d| d.platform.as_ref().is_some_and(|p| self.matches(p)))
        };
        candidates()
            .find(|d| {
                d.platform
                    .as_ref()
                    .is_some_and(|p| p.variant == self.variant)
            })
            .or_else(|| candidates().next())
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

impl FromStr for Platform {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [os, arch] if !os.is_empty() && !arch.is_empty() => Ok(Self {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: None,
            }),
            [os, arch, variant] if !os.is_empty() && !arch.is_empty() && !variant.is_empty() => {
                Ok(Self {
                    os: os.to_string(),
                    architecture: arch.to_string(),
                    variant: Some(variant.to_string()),
                })
            }
            _ => Err(format!(
                "invalid platform {s:?}: expected os/arch[/variant]"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(platform: &str, digest: &str) -> Descriptor {
        Descriptor {
            media_type: OCI_MANIFEST.to_string(),
            digest: digest.to_string(),
            size: 1,
            platform: Some(platform.parse().unwrap()),
            annotations: None,
        }
    }

    #[test]
    fn platform_selection_picks_matching_os_and_architecture() {
        let index = ImageIndex {
            schema_version: 2,
            media_type: Some(OCI_INDEX.to_string()),
            manifests: vec![
                entry("linux/arm64/v8", "a"),
                entry("linux/amd64", "b"),
                entry("linux/arm64", "c"),
            ],
        };
        assert_eq!(Platform::default().select(&index).unwrap().digest, "b");
        assert_eq!(
            "linux/arm64"
                .parse::<Platform>()
                .unwrap()
                .select(&index)
                .unwrap()
                .digest,
            "c"
        );
        assert_eq!(
            "linux/arm64/v8"
                .parse::<Platform>()
                .unwrap()
                .select(&index)
                .unwrap()
                .digest,
            "a"
        );
        assert!(
            "linux/s390x"
                .parse::<Platform>()
                .unwrap()
                .select(&index)
                .is_none()
        );
    }

    #[test]
    fn platform_strings_parse_and_print() {
        assert_eq!(
            "linux/arm64/v8".parse::<Platform>().unwrap().to_string(),
            "linux/arm64/v8"
        );
        assert!("linux".parse::<Platform>().is_err());
        assert!("linux//".parse::<Platform>().is_err());
    }

    #[test]
    fn manifest_kind_comes_from_media_type_or_shape() {
        let image =
            br#"{"schemaVersion":2,"config":{"mediaType":"x","digest":"d","size":1},"layers":[]}"#;
        assert!(matches!(Manifest::parse(image), Ok(Manifest::Image(_))));
        let index = br#"{"schemaVersion":2,"manifests":[]}"#;
        assert!(matches!(Manifest::parse(index), Ok(Manifest::Index(_))));
        let schema1 = br#"{"schemaVersion":1,"fsLayers":[]}"#;
        assert!(matches!(
            Manifest::parse(schema1),
            Err(ManifestParseError::Unsupported(_))
        ));
        let artifact = br#"{"schemaVersion":2,"mediaType":"application/vnd.cncf.helm.chart"}"#;
        assert!(matches!(
            Manifest::parse(artifact),
            Err(ManifestParseError::Unsupported(_))
        ));
        assert!(matches!(
            Manifest::parse(b"nope"),
            Err(ManifestParseError::Invalid(_))
        ));
    }

    #[test]
    fn config_labels_are_read_and_absent_labels_are_empty() {
        let c = ImageConfig::parse(br#"{"config":{"Labels":{"a":"b"}},"rootfs":{}}"#).unwrap();
        assert_eq!(c.labels.get("a").map(String::as_str), Some("b"));
        assert!(
            ImageConfig::parse(br#"{"config":{"Labels":null}}"#)
                .unwrap()
                .labels
                .is_empty()
        );
        assert!(ImageConfig::parse(br#"{}"#).unwrap().labels.is_empty());
        assert!(ImageConfig::parse(b"[").is_err());
    }
}
