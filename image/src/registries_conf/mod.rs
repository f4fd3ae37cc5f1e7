//! Registry mirrors, remapped locations, insecure and blocked registries from `registries.conf`
//! (containers-registries.conf(5)), applied to image pulls as upstream's image library applies
//! them. Input: the configuration files ([`RegistriesConfFiles`]) and an image reference. Output:
//! the ordered pull sources of that reference ([`RegistriesConf::pull_sources`]). Only
//! [`RegistriesConfFiles::read`] touches the disk; nothing here touches the network.
//!
//! Which `[[registry]]` applies to an image: the one whose `prefix` is the longest match of the
//! image's name (`host[:port]/repository`, Docker Hub names normalised to
//! `docker.io/library/…`; tag and digest are not part of the name):
//!
//! | prefix                 | matches                                                            |
//! |------------------------|--------------------------------------------------------------------|
//! | `host[:port]`          | that registry (`example.com` does not match `example.com:5000`)    |
//! | `host/ns[/…]`          | that namespace at a `/` boundary (`host/ns` does not match `host/nsx`) |
//! | `*.example.com`        | any host below `example.com`, any port, not `example.com` itself   |
//! | `host/repo:tag`, `@…`  | nothing (names carry no tag), as upstream                          |
//!
//! The pull sources of an image, tried in order until one serves its manifest:
//!
//! | reference | `mirror-by-digest-only` | mirror's `pull-from-mirror` | mirror used |
//! |-----------|-------------------------|-----------------------------|-------------|
//! | digest    | true                    | (must be unset)             | yes         |
//! | tag       | true                    | (must be unset)             | no          |
//! | either    | false                   | `all` or unset              | yes         |
//! | digest    | false                   | `digest-only`               | yes         |
//! | tag       | false                   | `digest-only`               | no          |
//! | digest    | false                   | `tag-only`                  | no          |
//! | tag       | false                   | `tag-only`                  | yes         |
//!
//! then the primary `location`. Each source's reference is the image's with the matched prefix
//! replaced by the mirror's (or the primary's) location; a wildcard prefix without a location
//! keeps the reference as it is. A source is spoken to over plain HTTP or unverified TLS when its
//! own `insecure` is true. A source whose rewritten name matches a `blocked` entry is refused
//! (and the next one tried): so a blocked registry with mirrors is pulled only through them, as
//! upstream allows. An image no entry matches has one source, itself.
//!
//! Files and precedence ([`RegistriesConfFiles::from_environment`]): the file named by
//! `CONTAINERS_REGISTRIES_CONF` (then `REGISTRIES_CONFIG_PATH`), which must exist; otherwise
//! `$HOME/.config/containers/registries.conf` if it exists; otherwise
//! `/etc/containers/registries.conf` if it exists. Then the `*.conf` files of the drop-in
//! directories in name order (`/etc/containers/registries.conf.d` and
//! `$HOME/.config/containers/registries.conf.d`; only the latter when the per-user file is used),
//! each replacing the whole entry of every prefix it declares. Not supported, because fully
//! qualified references never need them: `unqualified-search-registries`, short-name `[aliases]`
//! and `short-name-mode` (accepted and ignored). Unlike upstream, `example.com` does not also
//! match `example.com:5000` (upstream calls that match unintended and not to be relied on).

mod load;
mod parse;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;

pub use load::{RegistriesConfFiles, RegistriesConfReloader, SourceFile, parse_sources};

use crate::reference::ImageRef;

/// A registries.conf problem: unreadable or invalid, naming the file and, where known, the line.
#[derive(Debug, thiserror::Error)]
pub enum RegistriesConfError {
    /// A file or drop-in directory could not be read.
    #[error("failed to read registries configuration {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file is not valid TOML or breaks a rule of the format.
    #[error("invalid registries configuration {}{}: {message}", path.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending value or table, when known.
        line: Option<usize>,
        /// What is wrong (upstream's wording where it has one).
        message: String,
    },
    /// A reference rewritten to a location is not a valid reference.
    #[error("failed to rewrite {reference} for location {location:?} of {origin}: {reason}")]
    Rewrite {
        /// The image reference.
        reference: String,
        /// The mirror's or registry's location.
        location: String,
        /// Where the entry was declared.
        origin: Origin,
        /// Why the rewritten reference is invalid.
        reason: String,
    },
}

/// Where an entry was declared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub file: PathBuf,
    /// 1-based line of its `[[registry]]` table.
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, line {}", self.file.display(), self.line)
    }
}

/// When a mirror is used (`pull-from-mirror`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullFromMirror {
    /// For digest and tag references (`all`, the default).
    All,
    /// For digest references only (`digest-only`).
    DigestOnly,
    /// For tag references only (`tag-only`).
    TagOnly,
}

impl PullFromMirror {
    fn parse(value: &str) -> Option<PullFromMirror> {
        match value {
            "all" => Some(PullFromMirror::All),
            "digest-only" => Some(PullFromMirror::DigestOnly),
            "tag-only" => Some(PullFromMirror::TagOnly),
            _ => None,
        }
    }

    fn serves(self, digest_reference: bool) -> bool {
        match self {
            PullFromMirror::All => true,
            PullFromMirror::DigestOnly => digest_reference,
            PullFromMirror::TagOnly => !digest_reference,
        }
    }
}

/// A `[[registry.mirror]]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// `host[:port][/path]` replacing the prefix.
    pub location: String,
    /// Plain HTTP or unverified TLS allowed.
    pub insecure: bool,
    /// When it is used.
    pub pull_from_mirror: PullFromMirror,
}

/// A `[[registry]]` table, checked and normalised (prefix defaults to location, no trailing `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// What image names it applies to.
    pub prefix: String,
    /// Where the prefix really lives; empty only for a wildcard prefix (no rewriting).
    pub location: String,
    /// Plain HTTP or unverified TLS allowed for the primary location.
    pub insecure: bool,
    /// Pulls from the primary location are refused.
    pub blocked: bool,
    /// Mirrors only for digest references.
    pub mirror_by_digest_only: bool,
    /// Mirrors, tried in order before the primary location.
    pub mirrors: Vec<Mirror>,
    /// Where it was declared.
    pub origin: Origin,
}

/// One place to try an image at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullSource {
    /// The reference at this source (the prefix replaced by the source's location).
    pub reference: ImageRef,
    /// Plain HTTP or unverified TLS allowed.
    pub insecure: bool,
    /// A mirror, not the primary location.
    pub mirror: bool,
    /// Set when registries.conf blocks this source.
    pub blocked: Option<Blocked>,
}

/// The entry that blocks a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// Its prefix.
    pub prefix: String,
    /// Where it was declared.
    pub origin: Origin,
}

/// The merged configuration of every file: entries unique by prefix, sorted by prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistriesConf {
    registries: Vec<Registry>,
}

impl RegistriesConf {
    /// No entries: every image is pulled from where its reference says.
    pub fn empty() -> RegistriesConf {
        RegistriesConf::default()
    }

    /// Merges files in order: a later file's entry replaces an earlier one of the same prefix.
    pub fn merge(files: impl IntoIterator<Item = Vec<Registry>>) -> RegistriesConf {
        let mut by_prefix = std::collections::BTreeMap::new();
        for registries in files {
            for registry in registries {
                by_prefix.insert(registry.prefix.clone(), registry);
            }
        }
        RegistriesConf {
            registries: by_prefix.into_values().collect(),
        }
    }

    /// The entries, sorted by prefix.
    pub fn registries(&self) -> &[Registry] {
        &self.registries
    }

    /// The entry with the longest prefix matching `name` (`host[:port]/repository`). Between two
    /// prefixes of one length, the first in prefix order wins (upstream's tie-break).
    pub fn find(&self, name: &str) -> Option<&Registry> {
        let mut best: Option<&Registry> = None;
        for registry in &self.registries {
            if matched_len(name, &registry.prefix).is_some()
                && best.is_none_or(|b| registry.prefix.len() > b.prefix.len())
            {
                best = Some(registry);
            }
        }
        best
    }

    /// Where to try `image`, in order (see the module's tables).
    pub fn pull_sources(&self, image: &ImageRef) -> Result<Vec<PullSource>, RegistriesConfError> {
        let name = image.name();
        let Some(registry) = self.find(&name) else {
            return Ok(vec![PullSource {
                reference: image.clone(),
                insecure: false,
                mirror: false,
                blocked: None,
            }]);
        };
        let digest_reference = image.digest().is_some();
        let mirrors = registry.mirrors.iter().filter(|m| {
            if registry.mirror_by_digest_only {
                digest_reference
            } else {
                m.pull_from_mirror.serves(digest_reference)
            }
        });
        let endpoints = mirrors
            .map(|m| (m.location.as_str(), m.insecure, true))
            .chain(std::iter::once((
                registry.location.as_str(),
                registry.insecure,
                false,
            )));
        let whole = image.to_string();
        let mut sources = Vec::new();
        for (location, insecure, mirror) in endpoints {
            let reference = rewrite(image, &whole, registry, location)?;
            let blocked = self
                .find(&reference.name())
                .filter(|r| r.blocked)
                .map(|r| Blocked {
                    prefix: r.prefix.clone(),
                    origin: r.origin.clone(),
                });
            sources.push(PullSource {
                reference,
                insecure,
                mirror,
                blocked,
            });
        }
        Ok(sources)
    }
}

/// `whole` (the image's full reference) with the registry's prefix replaced by `location`.
fn rewrite(
    image: &ImageRef,
    whole: &str,
    registry: &Registry,
    location: &str,
) -> Result<ImageRef, RegistriesConfError> {
    if location.is_empty() {
        return Ok(image.clone());
    }
    let rewrite_error = |reason: String| RegistriesConfError::Rewrite {
        reference: whole.to_string(),
        location: location.to_string(),
        origin: registry.origin.clone(),
        reason,
    };
    let matched = matched_len(whole, &registry.prefix)
        .ok_or_else(|| rewrite_error("the prefix does not match".to_string()))?;
    ImageRef::parse(&format!("{location}{}", &whole[matched..])).map_err(rewrite_error)
}

/// The length of the part of `name` that `prefix` matches, if it does (see the module's table).
/// `name` may carry a tag or digest: a wildcard looks only at the host, and a plain prefix must
/// end where the name has a `/`, `:` or `@` (or ends).
fn matched_len(name: &str, prefix: &str) -> Option<usize> {
    if let Some(suffix) = prefix.strip_prefix('*') {
        if !suffix.starts_with('.') {
            return None;
        }
        let domain = name.split('/').next().unwrap_or(name);
        let host = domain.split(':').next().unwrap_or(domain);
        return (host.len() > suffix.len() && host.ends_with(suffix)).then_some(host.len());
    }
    let rest = name.strip_prefix(prefix)?;
    let boundary = match rest.as_bytes().first() {
        None | Some(b'/') => true,
        // After a repository (not after a bare host, where ':' starts a port).
        Some(b':' | b'@') => prefix.contains('/'),
        Some(_) => false,
    };
    boundary.then_some(prefix.len())
}
