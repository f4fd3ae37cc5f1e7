//! One package's content in one catalog, parsed once for any number of resolutions.
//!
//! Input: catalog objects ([`Meta`]) from catalogd's `/metas` answers or a directory walk.
//! Output: a [`PackageContent`] with typed channels and bundles, each bundle's version and release
//! and each entry's `skipRange` already parsed. No IO.
//!
//! Which objects belong to package `P` and which copy wins follow upstream's catalog cache, which
//! stores each object as the file `<package>/<schema>/<name or schema>.json`:
//!
//! | object                                     | belongs to `P` when | duplicates (same schema and name) |
//! |--------------------------------------------|---------------------|-----------------------------------|
//! | `olm.package`                              | its `name` is `P`   | the last one read wins            |
//! | any other schema (channel, bundle, ...)    | its `package` is `P`| the last one read wins            |
//! | `olm.deprecations` (no name)               | its `package` is `P`| so there is at most one           |
//!
//! Channels and bundles are then ordered by that file name (`<name>.json`, bytewise), the order
//! upstream reads the cache in. Order only matters for ties (two bundles with equal version and
//! release), which upstream breaks by this order too when it reads the cache sequentially.

use std::collections::{BTreeMap, BTreeSet};

use olm_api::fbc::property::TYPE_PACKAGE;
use olm_api::fbc::{
    Bundle, Channel, DeclarativeConfig, Deprecation, LoadError, Meta, Package, SCHEMA_BUNDLE,
    SCHEMA_PACKAGE,
};
use olm_api::version::blang::Range;
use olm_api::version::release::{ReleaseError, VersionRelease};
use serde::Deserialize;

/// A package's content from one catalog. Empty when the catalog does not have the package.
#[derive(Clone, Debug, Default)]
pub struct PackageContent {
    name: String,
    package: Option<Package>,
    channels: Vec<ChannelContent>,
    bundles: Vec<BundleContent>,
    deprecation: Option<Deprecation>,
    /// Objects of other schemas belonging to the package (kept only as a count).
    others: usize,
}

/// A channel with each entry's `skipRange` parsed (`None`: absent or not a blang range, which
/// upstream ignores).
#[derive(Clone, Debug)]
pub struct ChannelContent {
    pub channel: Channel,
    pub skip_ranges: Vec<Option<Range>>,
}

/// A bundle with its version and release, or why they cannot be read.
#[derive(Clone, Debug)]
pub struct BundleContent {
    pub bundle: Bundle,
    pub version: Result<VersionRelease, BundleVersionError>,
}

/// Why a bundle's version cannot be read; the messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleVersionError {
    #[error("no package property found in bundle {}", olm_api::version::go_text::go_quote(.0))]
    NoPackageProperty(String),
    #[error("error unmarshalling package property: {0}")]
    Unmarshal(String),
    #[error(transparent)]
    Version(#[from] ReleaseError),
}

impl PackageContent {
    /// The content of a catalog that does not have package `name`.
    pub fn empty(name: &str) -> PackageContent {
        PackageContent {
            name: name.to_owned(),
            ..PackageContent::default()
        }
    }

    /// Starts collecting the objects of package `name`.
    pub fn builder(name: &str) -> PackageContentBuilder {
        PackageContentBuilder {
            name: name.to_owned(),
            package: None,
            channels: BTreeMap::new(),
            bundles: BTreeMap::new(),
            deprecation: None,
            others: BTreeSet::new(),
        }
    }

    /// The package name this content is for.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the catalog has no object of this package at all.
    pub fn is_empty(&self) -> bool {
        self.package.is_none()
            && self.channels.is_empty()
            && self.bundles.is_empty()
            && self.deprecation.is_none()
            && self.others == 0
    }

    pub fn package(&self) -> Option<&Package> {
        self.package.as_ref()
    }

    pub fn channels(&self) -> &[ChannelContent] {
        &self.channels
    }

    pub fn bundles(&self) -> &[BundleContent] {
        &self.bundles
    }

    /// The package's `olm.deprecations` object, if the catalog has one.
    pub fn deprecation(&self) -> Option<&Deprecation> {
        self.deprecation.as_ref()
    }

    /// Whether the catalog's deprecation object lists bundle `name` (only bundle entries count).
    pub fn is_bundle_deprecated(&self, name: &str) -> bool {
        self.deprecation.as_ref().is_some_and(|d| {
            d.entries
                .iter()
                .any(|e| e.reference.schema == SCHEMA_BUNDLE && e.reference.name == name)
        })
    }
}

/// Collects a package's objects; objects of other packages are ignored, so a whole catalog
/// stream can be pushed through it.
#[derive(Debug)]
pub struct PackageContentBuilder {
    name: String,
    package: Option<Package>,
    channels: BTreeMap<Vec<u8>, Channel>,
    bundles: BTreeMap<Vec<u8>, Bundle>,
    deprecation: Option<Deprecation>,
    others: BTreeSet<(String, String)>,
}

impl PackageContentBuilder {
    /// Whether `meta` belongs to this builder's package.
    pub fn wants(&self, meta: &Meta) -> bool {
        if meta.schema == SCHEMA_PACKAGE {
            meta.name == self.name
        } else {
            meta.package == self.name
        }
    }

    /// Adds one object if it belongs to the package; an object that does not load as its schema
    /// requires is an error naming it.
    pub fn push(&mut self, meta: Meta) -> Result<(), LoadError> {
        if !self.wants(&meta) {
            return Ok(());
        }
        let mut one = DeclarativeConfig::default();
        let key = (meta.schema.clone(), meta.name.clone());
        one.push_meta(meta)?;
        if let Some(p) = one.packages.pop() {
            self.package = Some(p);
        } else if let Some(c) = one.channels.pop() {
            self.channels.insert(file_key(&c.name), c);
        } else if let Some(b) = one.bundles.pop() {
            self.bundles.insert(file_key(&b.name), b);
        } else if let Some(d) = one.deprecations.pop() {
            self.deprecation = Some(d);
        } else {
            self.others.insert(key);
        }
        Ok(())
    }

    /// Adds the objects of a loaded stream that belong to the package, in stream order (one
    /// parse per object, unlike [`PackageContentBuilder::push`] which re-reads canonical bytes).
    pub fn push_config(&mut self, cfg: DeclarativeConfig) {
        for p in cfg.packages {
            if p.name == self.name {
                self.package = Some(p);
            }
        }
        for c in cfg.channels {
            if c.package == self.name {
                self.channels.insert(file_key(&c.name), c);
            }
        }
        for b in cfg.bundles {
            if b.package == self.name {
                self.bundles.insert(file_key(&b.name), b);
            }
        }
        for d in cfg.deprecations {
            if d.package == self.name {
                self.deprecation = Some(d);
            }
        }
        for m in cfg.others {
            if self.wants(&m) {
                self.others.insert((m.schema, m.name));
            }
        }
    }

    /// Parses versions and ranges once and returns the content.
    pub fn finish(self) -> PackageContent {
        let channels = self
            .channels
            .into_values()
            .map(|channel| {
                let skip_ranges = channel
                    .entries
                    .iter()
                    .map(|e| e.skip_range.as_deref().and_then(|r| Range::parse(r).ok()))
                    .collect();
                ChannelContent {
                    channel,
                    skip_ranges,
                }
            })
            .collect();
        let bundles = self
            .bundles
            .into_values()
            .map(|bundle| {
                let version = bundle_version(&bundle);
                BundleContent { bundle, version }
            })
            .collect();
        PackageContent {
            name: self.name,
            package: self.package,
            channels,
            bundles,
            deprecation: self.deprecation,
            others: self.others.len(),
        }
    }
}

/// The cache file name upstream sorts by.
fn file_key(name: &str) -> Vec<u8> {
    let mut key = name.as_bytes().to_vec();
    key.extend_from_slice(b".json");
    key
}

/// Upstream's `GetVersionAndRelease` without the `BundleReleaseSupport` gate (off by default):
/// the first `olm.package` property's version, build metadata read as a legacy release.
pub fn bundle_version(bundle: &Bundle) -> Result<VersionRelease, BundleVersionError> {
    #[derive(Deserialize)]
    struct Wire {
        #[serde(default)]
        version: Option<String>,
    }
    let property = bundle
        .properties
        .iter()
        .find(|p| p.type_ == TYPE_PACKAGE)
        .ok_or_else(|| BundleVersionError::NoPackageProperty(bundle.name.clone()))?;
    let wire: Wire = serde_json::from_str(property.value.get())
        .map_err(|e| BundleVersionError::Unmarshal(e.to_string()))?;
    Ok(VersionRelease::from_bundle_version(
        wire.version.as_deref().unwrap_or(""),
        None,
        false,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_api::fbc::walk_metas_reader;

    fn build(package: &str, text: &str) -> PackageContent {
        let mut b = PackageContent::builder(package);
        walk_metas_reader(text.as_bytes(), "t", |m| {
            b.push(m).map_err(olm_api::fbc::WalkError::callback)
        })
        .unwrap();
        b.finish()
    }

    #[test]
    fn only_the_packages_own_objects_are_kept() {
        let c = build(
            "p",
            r#"{"schema":"olm.package","name":"p"}
{"schema":"olm.package","name":"q"}
{"schema":"olm.bundle","name":"q.v1","package":"q"}
{"schema":"olm.bundle","name":"p.v1","package":"p","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0+2"}}]}
{"schema":"example.com/x","package":"p","name":"x"}"#,
        );
        assert_eq!(c.package().unwrap().name, "p");
        assert_eq!(c.bundles().len(), 1);
        let v = c.bundles()[0].version.as_ref().unwrap();
        assert_eq!(v.to_string(), "1.0.0+2");
        assert!(v.release.is_some());
        assert!(!c.is_empty());
        assert!(build("absent", r#"{"schema":"olm.package","name":"p"}"#).is_empty());
    }

    #[test]
    fn the_last_copy_of_a_duplicate_wins_and_entries_are_in_file_name_order() {
        let c = build(
            "p",
            r#"{"schema":"olm.bundle","name":"p.a","package":"p","image":"first"}
{"schema":"olm.bundle","name":"p.a-b","package":"p","image":"x"}
{"schema":"olm.bundle","name":"p.a","package":"p","image":"second"}
{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle","name":"p.a"},"message":"one"}]}
{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle","name":"p.a-b"},"message":"two"}]}"#,
        );
        let names: Vec<_> = c.bundles().iter().map(|b| b.bundle.name.as_str()).collect();
        // "p.a-b.json" < "p.a.json" because '-' < '.'.
        assert_eq!(names, ["p.a-b", "p.a"]);
        assert_eq!(c.bundles()[1].bundle.image, "second");
        assert_eq!(c.deprecation().unwrap().entries[0].message, "two");
        assert!(c.is_bundle_deprecated("p.a-b"));
        assert!(!c.is_bundle_deprecated("p.a"));
    }

    #[test]
    fn bundle_version_errors_use_upstreams_words() {
        let c = build(
            "p",
            r#"{"schema":"olm.bundle","name":"p.none","package":"p"}
{"schema":"olm.bundle","name":"p.bad","package":"p","properties":[{"type":"olm.package","value":{"version":"x"}}]}
{"schema":"olm.bundle","name":"p.num","package":"p","properties":[{"type":"olm.package","value":{"version":1}}]}"#,
        );
        let err = |name: &str| {
            c.bundles()
                .iter()
                .find(|b| b.bundle.name == name)
                .unwrap()
                .version
                .clone()
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("p.none"),
            r#"no package property found in bundle "p.none""#
        );
        assert_eq!(err("p.bad"), "No Major.Minor.Patch elements found");
        assert!(err("p.num").starts_with("error unmarshalling package property: "));
    }

    #[test]
    fn unparseable_skip_ranges_are_ignored() {
        let c = build(
            "p",
            r#"{"schema":"olm.channel","name":"s","package":"p","entries":[{"name":"a","skipRange":">=v1.0.0"},{"name":"b","skipRange":"<1.0.0"},{"name":"c"}]}"#,
        );
        let ranges = &c.channels()[0].skip_ranges;
        assert!(ranges[0].is_none());
        assert!(ranges[1].is_some());
        assert!(ranges[2].is_none());
    }
}
