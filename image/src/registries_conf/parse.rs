//! One registries.conf file (TOML) into its `[[registry]]` entries, checked as upstream's image
//! library checks them when it loads a file. Input: the file's path (for messages) and text.
//! Output: [`Registry`] entries, unique by prefix and sorted by it, or an error naming the file and
//! the line. No IO.
//!
//! Checks, in upstream's order (its messages are kept; a line is added):
//!
//! | what                                                            | message                                                            |
//! |-----------------------------------------------------------------|--------------------------------------------------------------------|
//! | not TOML, or a key of the wrong type                            | the TOML parser's                                                  |
//! | v1 tables (`[registries.search]`, …) in a drop-in               | `registry must be in v2 format but is in v1`                       |
//! | v1 tables and v2 keys in one file                               | `mixing sysregistry v1/v2 is not supported`                        |
//! | a `location` or `prefix` with `http://` or `https://`           | `invalid location '…': URI schemes are not supported`             |
//! | neither `prefix` nor `location`                                 | `invalid condition: both location and prefix are unset`           |
//! | no `location` and a prefix that is not `*.domain`               | `invalid condition: location is unset and prefix is not in the format: *.example.com` |
//! | `pull-from-mirror` on a `[[registry]]`                          | `pull-from-mirror must not be set for a non-mirror registry "…"`  |
//! | a mirror without `location`                                     | `invalid condition: mirror location is unset`                     |
//! | `mirror-by-digest-only` and a mirror's `pull-from-mirror`       | `cannot set mirror usage mirror-by-digest-only for the registry ("…") and pull-from-mirror for per-mirror ("…") at the same time` |
//! | `pull-from-mirror` other than `all`, `digest-only`, `tag-only`  | `unsupported pull-from-mirror value "…" for mirror "…"`           |
//! | one location given different `insecure` (or `blocked`) values   | `registry '…' is defined multiple times with conflicting 'insecure' setting` |
//! | a wildcard prefix with `/`, `:` or `@`                          | `Wildcarded prefix should be in the format: *.example.com. Current prefix "…" is incorrectly formatted` |
//!
//! Then, as upstream does, a prefix given twice keeps its first entry, and entries are sorted by
//! prefix. Keys this implementation has no use for (`unqualified-search-registries`,
//! `short-name-mode`, `[aliases]`, `credential-helpers`, …) are accepted and ignored, as are
//! unknown keys.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;
use toml::Spanned;

use super::{Mirror, Origin, PullFromMirror, RegistriesConfError, Registry};

/// The TOML document, v2 and v1 keys side by side (upstream decodes both at once too).
#[derive(Deserialize)]
struct RawFile {
    registry: Option<Vec<Spanned<RawRegistry>>>,
    /// v1: `[registries.search]`, `[registries.insecure]`, `[registries.block]`.
    registries: Option<RawV1>,
    // Present only to tell a v2 file from a v1 one; their values are not used.
    #[serde(rename = "unqualified-search-registries")]
    unqualified_search_registries: Option<IgnoredAny>,
    #[serde(rename = "credential-helpers")]
    credential_helpers: Option<IgnoredAny>,
    #[serde(rename = "short-name-mode")]
    short_name_mode: Option<IgnoredAny>,
    #[serde(rename = "additional-layer-store-auth-helper")]
    additional_layer_store_auth_helper: Option<IgnoredAny>,
    aliases: Option<IgnoredAny>,
}

impl RawFile {
    fn has_v2_keys(&self) -> bool {
        self.registry.is_some()
            || self.unqualified_search_registries.is_some()
            || self.credential_helpers.is_some()
            || self.short_name_mode.is_some()
            || self.additional_layer_store_auth_helper.is_some()
            || self.aliases.is_some()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawRegistry {
    prefix: Option<Spanned<String>>,
    location: Option<Spanned<String>>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(default)]
    mirror_by_digest_only: bool,
    pull_from_mirror: Option<Spanned<String>>,
    #[serde(default)]
    mirror: Vec<Spanned<RawMirror>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawMirror {
    location: Option<Spanned<String>>,
    #[serde(default)]
    insecure: bool,
    pull_from_mirror: Option<Spanned<String>>,
}

#[derive(Deserialize)]
struct RawV1 {
    search: Option<RawV1List>,
    insecure: Option<RawV1List>,
    block: Option<RawV1List>,
}

#[derive(Deserialize)]
struct RawV1List {
    registries: Option<Vec<Spanned<String>>>,
}

impl RawV1 {
    /// Upstream treats a v1 table as set when it lists registries (even none).
    fn is_set(&self) -> bool {
        [&self.search, &self.insecure, &self.block]
            .iter()
            .any(|list| list.as_ref().is_some_and(|l| l.registries.is_some()))
    }
}

/// The entries of one file. `drop_in` files must be in the v2 format.
pub(crate) fn parse_file(
    path: &Path,
    text: &str,
    drop_in: bool,
) -> Result<Vec<Registry>, RegistriesConfError> {
    let lines = LineIndex::new(text);
    let invalid = |span: Option<Range<usize>>, message: String| RegistriesConfError::Invalid {
        path: path.to_path_buf(),
        line: span.map(|s| lines.line(s.start)),
        message,
    };
    let raw: RawFile =
        toml::from_str(text).map_err(|e| invalid(e.span(), e.message().trim().to_string()))?;
    let v1 = raw.registries.as_ref().filter(|v1| v1.is_set());
    let entries = match v1 {
        Some(_) if drop_in => {
            return Err(invalid(
                None,
                "registry must be in v2 format but is in v1".to_string(),
            ));
        }
        Some(_) if raw.has_v2_keys() => {
            return Err(invalid(
                None,
                "mixing sysregistry v1/v2 is not supported".to_string(),
            ));
        }
        Some(v1) => convert_v1(v1, &invalid)?,
        None => raw
            .registry
            .unwrap_or_default()
            .into_iter()
            .map(|registry| Entry::from_raw(registry, &invalid))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let origin = |span: &Range<usize>| Origin {
        file: path.to_path_buf(),
        line: lines.line(span.start),
    };
    check_conflicts(&entries, &invalid)?;
    // Upstream validates wildcard prefixes after its post-processing; the order only decides which
    // of two problems is reported first.
    for entry in &entries {
        if entry.registry.prefix.starts_with("*.")
            && entry.registry.prefix.contains(['/', '@', ':'])
        {
            return Err(invalid(
                Some(entry.span.clone()),
                format!(
                    "Wildcarded prefix should be in the format: *.example.com. Current prefix {:?} is incorrectly formatted",
                    entry.registry.prefix
                ),
            ));
        }
    }
    // The first entry of a prefix wins; later ones are ignored, as upstream does.
    let mut unique: BTreeMap<String, Registry> = BTreeMap::new();
    for entry in entries {
        let Entry { mut registry, span } = entry;
        registry.origin = origin(&span);
        unique.entry(registry.prefix.clone()).or_insert(registry);
    }
    Ok(unique.into_values().collect())
}

/// A registry with the span of the table that declared it.
struct Entry {
    registry: Registry,
    span: Range<usize>,
}

type Invalid<'a> = dyn Fn(Option<Range<usize>>, String) -> RegistriesConfError + 'a;

impl Entry {
    fn from_raw(
        raw: Spanned<RawRegistry>,
        invalid: &Invalid<'_>,
    ) -> Result<Entry, RegistriesConfError> {
        let span = raw.span();
        let raw = raw.into_inner();
        let location = match &raw.location {
            Some(l) => parse_location(l.get_ref()).map_err(|m| invalid(Some(l.span()), m))?,
            None => String::new(),
        };
        let prefix = match raw.prefix.as_ref().filter(|p| !p.get_ref().is_empty()) {
            None if location.is_empty() => {
                return Err(invalid(
                    Some(span),
                    "invalid condition: both location and prefix are unset".to_string(),
                ));
            }
            None => location.clone(),
            Some(p) => {
                let prefix = parse_location(p.get_ref()).map_err(|m| invalid(Some(p.span()), m))?;
                if !prefix.starts_with("*.") && location.is_empty() {
                    return Err(invalid(
                        Some(span),
                        "invalid condition: location is unset and prefix is not in the format: *.example.com".to_string(),
                    ));
                }
                prefix
            }
        };
        if let Some(p) = raw
            .pull_from_mirror
            .as_ref()
            .filter(|p| !p.get_ref().is_empty())
        {
            return Err(invalid(
                Some(p.span()),
                format!("pull-from-mirror must not be set for a non-mirror registry {prefix:?}"),
            ));
        }
        let mut mirrors = Vec::with_capacity(raw.mirror.len());
        for mirror in raw.mirror {
            let mirror_span = mirror.span();
            let mirror = mirror.into_inner();
            let location = match &mirror.location {
                Some(l) => parse_location(l.get_ref()).map_err(|m| invalid(Some(l.span()), m))?,
                None => String::new(),
            };
            if location.is_empty() {
                return Err(invalid(
                    Some(mirror_span),
                    "invalid condition: mirror location is unset".to_string(),
                ));
            }
            let pull_from_mirror = match mirror
                .pull_from_mirror
                .as_ref()
                .filter(|p| !p.get_ref().is_empty())
            {
                None => PullFromMirror::All,
                Some(value) => {
                    if raw.mirror_by_digest_only {
                        return Err(invalid(
                            Some(value.span()),
                            format!(
                                "cannot set mirror usage mirror-by-digest-only for the registry ({prefix:?}) and pull-from-mirror for per-mirror ({location:?}) at the same time"
                            ),
                        ));
                    }
                    PullFromMirror::parse(value.get_ref()).ok_or_else(|| {
                        invalid(
                            Some(value.span()),
                            format!(
                                "unsupported pull-from-mirror value {:?} for mirror {location:?}",
                                value.get_ref()
                            ),
                        )
                    })?
                }
            };
            mirrors.push(Mirror {
                location,
                insecure: mirror.insecure,
                pull_from_mirror,
            });
        }
        Ok(Entry {
            registry: Registry {
                prefix,
                location,
                insecure: raw.insecure,
                blocked: raw.blocked,
                mirror_by_digest_only: raw.mirror_by_digest_only,
                mirrors,
                origin: Origin::default(),
            },
            span,
        })
    }
}

/// Trailing slashes are dropped; URLs are refused (a location is `host[:port][/path]`).
fn parse_location(input: &str) -> Result<String, String> {
    let trimmed = input.trim_end_matches('/');
    if trimmed.starts_with("http://") || trimmed.starts_with("https://") {
        return Err(format!(
            "invalid location '{input}': URI schemes are not supported"
        ));
    }
    Ok(trimmed.to_string())
}

/// Entries naming the same location (or, without one, the same prefix) must agree on
/// `insecure` and `blocked`: several prefixes may share one registry, with different mirrors.
fn check_conflicts(entries: &[Entry], invalid: &Invalid<'_>) -> Result<(), RegistriesConfError> {
    let mut seen: BTreeMap<&str, &Registry> = BTreeMap::new();
    for entry in entries {
        let registry = &entry.registry;
        let key = if registry.location.is_empty() {
            registry.prefix.as_str()
        } else {
            registry.location.as_str()
        };
        let Some(first) = seen.get(key) else {
            seen.insert(key, registry);
            continue;
        };
        let conflict = if first.insecure != registry.insecure {
            "insecure"
        } else if first.blocked != registry.blocked {
            "blocked"
        } else {
            continue;
        };
        return Err(invalid(
            Some(entry.span.clone()),
            format!(
                "registry '{key}' is defined multiple times with conflicting '{conflict}' setting"
            ),
        ));
    }
    Ok(())
}

/// v1 lists become one entry per registry (prefix = location = the host), in order of first
/// mention, blocked ones first as upstream converts them.
fn convert_v1(v1: &RawV1, invalid: &Invalid<'_>) -> Result<Vec<Entry>, RegistriesConfError> {
    let mut entries: Vec<Entry> = Vec::new();
    let lists = [(&v1.block, true), (&v1.insecure, false)];
    for (list, blocked) in lists {
        let Some(registries) = list.as_ref().and_then(|l| l.registries.as_ref()) else {
            continue;
        };
        for host in registries {
            let location =
                parse_location(host.get_ref()).map_err(|m| invalid(Some(host.span()), m))?;
            let index = match entries.iter().position(|e| e.registry.location == location) {
                Some(index) => index,
                None => {
                    entries.push(Entry {
                        registry: Registry {
                            prefix: location.clone(),
                            location,
                            insecure: false,
                            blocked: false,
                            mirror_by_digest_only: false,
                            mirrors: Vec::new(),
                            origin: Origin::default(),
                        },
                        span: host.span(),
                    });
                    entries.len() - 1
                }
            };
            if blocked {
                entries[index].registry.blocked = true;
            } else {
                entries[index].registry.insecure = true;
            }
        }
    }
    Ok(entries)
}

/// Byte offset → 1-based line number.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { starts }
    }

    fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|start| *start <= offset).max(1)
    }
}
