//! The error of a pull (or digest resolution): what went wrong, for which reference, and whether
//! retrying can help ([`ConditionError`]). Messages are stable (no socket addresses or timings), so
//! they can go into status conditions as they are. No IO.

use std::io;
use std::path::PathBuf;

use olm_api::condition_error::ConditionError;
use olm_api::v1::ConditionReason;

use crate::extract::ExtractError;
use crate::labels::CATALOG_CONFIGS_LABEL;
use crate::registries_conf::{Origin, RegistriesConfError};

/// A failed pull or resolution of `reference`.
#[derive(Debug, thiserror::Error)]
#[error("failed to pull image {reference:?}: {kind}")]
pub struct ImageError {
    /// The reference as the caller gave it.
    pub reference: String,
    /// Whether the reference names a digest (`repo@sha256:…`), so its content can never change.
    pub digest_pinned: bool,
    /// What went wrong.
    #[source]
    pub kind: ImageErrorKind,
}

impl ImageError {
    pub(crate) fn new(reference: &str, digest_pinned: bool, kind: ImageErrorKind) -> Self {
        Self {
            reference: reference.to_string(),
            digest_pinned,
            kind,
        }
    }

    /// The message for a status condition. `Display` is already free of ephemeral details
    /// (addresses, ports of the local side, timings); this is the same text.
    pub fn sanitize(&self) -> String {
        self.to_string()
    }
}

/// Pull failures as conditions: `Blocked` when terminal, `Retrying` otherwise (catalogd's
/// `Progressing`; the ClusterExtension controller's bundle pulls the same).
impl ConditionError for ImageError {
    fn reason(&self) -> ConditionReason {
        if self.is_terminal() {
            ConditionReason::Blocked
        } else {
            ConditionReason::Retrying
        }
    }

    /// True when retrying cannot succeed until the reference (the spec) changes.
    ///
    /// | failure                                                      | terminal            |
    /// |--------------------------------------------------------------|---------------------|
    /// | invalid reference                                            | always              |
    /// | network, TLS, 401/403, 429, 5xx, digest mismatch, local disk | never               |
    /// | manifest not found                                           | if digest-pinned    |
    /// | image content: manifest or config unusable, no matching platform, missing or invalid catalog label, unsupported layer, hostile or corrupt layer, size limits | if digest-pinned |
    ///
    /// Content found under a tag is not terminal: the tag may be re-pushed, and only a new
    /// resolution can notice (the same reasoning upstream applies to the catalog label).
    /// Credentials are never terminal: a pull secret can be fixed without touching the spec.
    ///
    /// registries.conf problems (unreadable, invalid, a blocked registry) are never terminal
    /// either: the file is read again before every pull. When mirrors were tried, the failure is
    /// terminal only if every source's failure is.
    fn is_terminal(&self) -> bool {
        self.kind.is_terminal(self.digest_pinned)
    }
}

/// The failure itself.
#[derive(Debug, thiserror::Error)]
pub enum ImageErrorKind {
    /// The reference does not parse.
    #[error("invalid image reference: {reason}")]
    InvalidReference {
        /// Why.
        reason: String,
    },
    /// Could not talk to the registry at all.
    #[error("failed to reach registry {registry}: {reason}")]
    Unreachable {
        /// host[:port]
        registry: String,
        /// A stable description (`connection refused`, `tls certificate verification failed`, …).
        reason: String,
    },
    /// 401 or 403.
    #[error("{}", unauthorized_message(registry, *status, *had_credentials))]
    Unauthorized {
        /// host[:port]
        registry: String,
        /// 401 or 403.
        status: u16,
        /// Whether a pull secret supplied credentials for this registry.
        had_credentials: bool,
    },
    /// The registry does not have the manifest (or repository).
    #[error("image not found in registry {registry}: {detail}")]
    NotFound {
        /// host[:port]
        registry: String,
        /// The registry's own wording (`manifest unknown`, `repository name not known to registry`).
        detail: String,
    },
    /// 429.
    #[error("registry {registry} is rate limiting requests (HTTP 429)")]
    RateLimited {
        /// host[:port]
        registry: String,
    },
    /// 5xx.
    #[error("registry {registry} answered HTTP {status}")]
    ServerError {
        /// host[:port]
        registry: String,
        /// The status code.
        status: u16,
    },
    /// Any other unexpected registry answer.
    #[error("unexpected answer from registry {registry}: {detail}")]
    Protocol {
        /// host[:port]
        registry: String,
        /// What was unexpected.
        detail: String,
    },
    /// Downloaded bytes do not hash to the digest that names them.
    #[error(
        "{what} {expected} does not match its content (sha256 of the bytes served is {actual})"
    )]
    DigestMismatch {
        /// `manifest`, `config` or `layer`.
        what: &'static str,
        /// The digest the bytes were requested by.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// Schema 1 manifests, artifacts, unknown manifest media types.
    #[error("unsupported manifest media type {media_type:?}")]
    UnsupportedManifest {
        /// The media type found.
        media_type: String,
    },
    /// A manifest that does not parse or is inconsistent.
    #[error("invalid manifest {digest}: {reason}")]
    InvalidManifest {
        /// The manifest digest.
        digest: String,
        /// Why.
        reason: String,
    },
    /// An image index without an entry for the wanted platform.
    #[error("image index has no manifest for platform {platform} (available: {})", available.join(", "))]
    NoMatchingPlatform {
        /// The wanted platform, `os/arch[/variant]`.
        platform: String,
        /// Platforms the index offers.
        available: Vec<String>,
    },
    /// The image config blob does not parse.
    #[error("invalid image config {digest}: {reason}")]
    InvalidConfig {
        /// The config digest.
        digest: String,
        /// Why.
        reason: String,
    },
    /// A catalog image without the label naming its FBC directory (upstream's exact wording).
    #[error("catalog image is missing the required label {CATALOG_CONFIGS_LABEL:?}")]
    MissingCatalogLabel,
    /// The catalog label points outside the image.
    #[error(
        "catalog image label {CATALOG_CONFIGS_LABEL:?} has invalid value {value:?}: it must be a directory inside the image"
    )]
    InvalidCatalogLabel {
        /// The label value.
        value: String,
    },
    /// A layer that is not a (compressed) tar: helm charts, artifacts, foreign layers.
    #[error("layer {digest} has unsupported media type {media_type:?}")]
    UnsupportedLayerMediaType {
        /// The layer digest.
        digest: String,
        /// The media type.
        media_type: String,
    },
    /// The image is larger than the configured download limit.
    #[error("image layers exceed the download limit of {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// A layer could not be applied (hostile entry, corrupt stream, limits, local disk).
    #[error(transparent)]
    Extract(ExtractError),
    /// registries.conf cannot be read, is invalid, or rewrites the reference into an invalid one.
    #[error(transparent)]
    RegistriesConf(Box<RegistriesConfError>),
    /// registries.conf blocks the registry (upstream's wording, with the file and line).
    #[error("registry {prefix} is blocked in {origin}")]
    Blocked {
        /// The prefix of the blocking entry.
        prefix: String,
        /// Where that entry is declared.
        origin: Origin,
    },
    /// Mirrors were configured and every source failed; the primary location's failure last.
    #[error("{}", all_sources_failed(attempts))]
    AllSourcesFailed {
        /// One per source, in the order tried.
        attempts: Vec<SourceAttempt>,
    },
    /// Local cache trouble (disk full, permissions).
    #[error("failed to {op} {path:?}: {source}")]
    Cache {
        /// What was being done.
        op: &'static str,
        /// Where.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

fn unauthorized_message(registry: &str, status: u16, had_credentials: bool) -> String {
    let answer = if status == 403 {
        "HTTP 403 Forbidden"
    } else {
        "HTTP 401 Unauthorized"
    };
    if had_credentials {
        format!("registry {registry} rejected the pull secret's credentials ({answer})")
    } else {
        format!(
            "registry {registry} requires authentication ({answer}) and no pull secret has credentials for it"
        )
    }
}

/// One pull source that failed.
#[derive(Debug)]
pub struct SourceAttempt {
    /// The reference at that source.
    pub reference: String,
    /// How it failed.
    pub error: ImageErrorKind,
}

/// Upstream's shape: `(mirrors also failed: [ref: error] [ref: error]): primary-ref: error`.
fn all_sources_failed(attempts: &[SourceAttempt]) -> String {
    let Some((primary, mirrors)) = attempts.split_last() else {
        return "no pull source was tried".to_string();
    };
    let mirrors: Vec<String> = mirrors
        .iter()
        .map(|a| format!("[{}: {}]", a.reference, a.error))
        .collect();
    format!(
        "(mirrors also failed: {}): {}: {}",
        mirrors.join(" "),
        primary.reference,
        primary.error
    )
}

impl ImageErrorKind {
    /// See [`ImageError::is_terminal`]'s table.
    fn is_terminal(&self, digest_pinned: bool) -> bool {
        use ImageErrorKind as K;
        match self {
            K::InvalidReference { .. } => true,
            K::Unreachable { .. }
            | K::Unauthorized { .. }
            | K::RateLimited { .. }
            | K::ServerError { .. }
            | K::Protocol { .. }
            | K::DigestMismatch { .. }
            | K::RegistriesConf(_)
            | K::Blocked { .. }
            | K::Cache { .. } => false,
            K::AllSourcesFailed { attempts } => {
                !attempts.is_empty() && attempts.iter().all(|a| a.error.is_terminal(digest_pinned))
            }
            K::Extract(e) => digest_pinned && e.is_hostile_or_corrupt(),
            K::NotFound { .. }
            | K::UnsupportedManifest { .. }
            | K::InvalidManifest { .. }
            | K::NoMatchingPlatform { .. }
            | K::InvalidConfig { .. }
            | K::MissingCatalogLabel
            | K::InvalidCatalogLabel { .. }
            | K::UnsupportedLayerMediaType { .. }
            | K::TooLarge { .. } => digest_pinned,
        }
    }

    pub(crate) fn cache(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Cache {
            op,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_api::condition_error::missing_causes;

    fn error(digest_pinned: bool, kind: ImageErrorKind) -> ImageError {
        ImageError::new("reg.io/cat:v1", digest_pinned, kind)
    }

    #[test]
    fn terminal_pulls_show_as_blocked_and_others_as_retrying() {
        let pinned = error(true, ImageErrorKind::MissingCatalogLabel);
        assert!(pinned.is_terminal());
        assert_eq!(pinned.reason(), ConditionReason::Blocked);
        let tagged = error(false, ImageErrorKind::MissingCatalogLabel);
        assert!(!tagged.is_terminal());
        assert_eq!(tagged.reason(), ConditionReason::Retrying);
    }

    #[test]
    fn failures_of_every_pull_source_are_terminal_only_if_each_one_is() {
        let not_found = |registry: &str| ImageErrorKind::NotFound {
            registry: registry.into(),
            detail: "manifest unknown".into(),
        };
        let attempt = |reference: &str, error| SourceAttempt {
            reference: reference.into(),
            error,
        };
        let all_missing = ImageErrorKind::AllSourcesFailed {
            attempts: vec![
                attempt("mirror.io/cat@sha256:1", not_found("mirror.io")),
                attempt("reg.io/cat@sha256:1", not_found("reg.io")),
            ],
        };
        assert!(error(true, all_missing).is_terminal());
        let mirror_down = ImageErrorKind::AllSourcesFailed {
            attempts: vec![
                attempt(
                    "mirror.io/cat@sha256:1",
                    ImageErrorKind::Unreachable {
                        registry: "mirror.io".into(),
                        reason: "connection refused".into(),
                    },
                ),
                attempt("reg.io/cat@sha256:1", not_found("reg.io")),
            ],
        };
        let e = error(true, mirror_down);
        assert!(!e.is_terminal());
        assert_eq!(
            e.to_string(),
            "failed to pull image \"reg.io/cat:v1\": (mirrors also failed: [mirror.io/cat@sha256:1: \
             failed to reach registry mirror.io: connection refused]): reg.io/cat@sha256:1: image not \
             found in registry reg.io: manifest unknown"
        );
    }

    #[test]
    fn condition_messages_contain_their_causes() {
        let errors = [
            error(
                false,
                ImageErrorKind::cache(
                    "create",
                    "/cache/x",
                    io::Error::new(io::ErrorKind::StorageFull, "no space left on device"),
                ),
            ),
            error(
                true,
                ImageErrorKind::Extract(ExtractError {
                    layer_digest: "sha256:1".into(),
                    entry: "a/../b".into(),
                    kind: crate::ExtractErrorKind::PathTraversal,
                }),
            ),
            error(
                false,
                ImageErrorKind::Unreachable {
                    registry: "reg.io".into(),
                    reason: "connection refused".into(),
                },
            ),
        ];
        for e in &errors {
            assert!(missing_causes(e).is_empty(), "{e}: {:?}", missing_causes(e));
            assert_eq!(e.condition_message(), e.to_string());
        }
    }
}
