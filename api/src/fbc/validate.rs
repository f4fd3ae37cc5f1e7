//! Catalog validation: the checks `opm validate` makes, as a verdict separate from loading.
//!
//! Input: a loaded [`DeclarativeConfig`] and the version-parsing [`Checks`]. Output: a [`Report`]
//! of errors and warnings, each naming the object (file position, schema, package, name). No IO.
//!
//! Unlike upstream, which stops at the first problem, every problem is reported. Checks:
//!
//! | object | error when |
//! |---|---|
//! | package | name empty, not a DNS-1123 label, or repeated; no default channel; default channel not among its channels; no channel |
//! | channel | no or unknown package; name empty or repeated in its package; no entries; an entry repeated or unnamed; an empty `skips` item; an entry without an `olm.bundle`; not exactly one head; a replaces cycle; entries the replaces chain from the head cannot reach (unless skipped) |
//! | bundle | no or unknown package; name empty or repeated in its package; a property that does not parse as its type; not exactly one `olm.package` property, or its name differs from the bundle's package; invalid version or release; a release with build metadata; name not `<package>-v<version>-<release>` when a release is set; image empty (and no `olm.bundle.object`); invalid image or related image pull spec; in no channel of its package |
//! | package (versions) | two bundles in its channels share a version (and release) |
//! | deprecations | no or unknown package; more than one per package; an entry without schema, with an unknown schema, repeated, with an empty message, or pointing at a missing bundle/channel; a package entry with a name |
//!
//! Two checks of `opm validate` concern things this project serves and resolves fine. They are
//! errors, as in opm, unless [`Checks::lenient`] is set, which makes them warnings:
//!
//! | finding | `opm validate` | upstream catalogd / resolver | here: serving, resolving | default | lenient |
//! |---|---|---|---|---|---|
//! | a `skipRange` blang cannot parse (`not-a-range`; the derived test catalog has `<v1.12.0`) | rejects | serves; the resolver ignores the range | same | error | warning |
//! | a package icon whose `base64data` is not base64 (three in the derived test catalog) | rejects at load | serves; the resolver cannot load the package | serves; resolves (the icon is never used) | error | warning |
//!
//! Deliberate difference: upstream checks "every channel entry has a bundle" only for the last
//! channel of each package (a bookkeeping slip); here every channel is checked.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;

use super::image_ref::validate_image_reference;
use super::model::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, ObjectRef, SCHEMA_BUNDLE, SCHEMA_CHANNEL,
    SCHEMA_PACKAGE,
};
use super::property::{TYPE_BUNDLE_OBJECT, TYPE_PACKAGE};

/// One problem found in a catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub object: ObjectRef,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.object, self.message)
    }
}

/// The verdict on a catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl Report {
    /// True when there are no errors (warnings allowed).
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// The version parsers validation uses; a seam so tests can swap one. Each returns `Err(reason)`
/// for text it rejects. [`Checks::default`] uses [`crate::version`].
pub struct Checks<'a> {
    /// A channel entry's `skipRange` (blang range dialect).
    pub skip_range: &'a dyn Fn(&str) -> Result<(), String>,
    /// A bundle version (strict semver, as blang `Parse`).
    pub version: &'a dyn Fn(&str) -> Result<(), String>,
    /// A bundle release (dot-separated semver pre-release identifiers, at most 20 characters).
    pub release: &'a dyn Fn(&str) -> Result<(), String>,
    /// Report what `opm validate` rejects but this project serves and resolves (an unparsable
    /// `skipRange`, an undecodable icon) as warnings instead of errors (module table).
    pub lenient: bool,
}

impl Default for Checks<'static> {
    /// The parsers of [`crate::version`]: blang ranges and versions, and bundle releases.
    fn default() -> Self {
        Checks {
            skip_range: &blang_skip_range,
            version: &blang_version,
            release: &release_identifiers,
            lenient: false,
        }
    }
}

/// A `skipRange` in the blang dialect upstream resolves with.
pub fn blang_skip_range(r: &str) -> Result<(), String> {
    crate::version::blang::Range::parse(r)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// A bundle version as blang `Parse` accepts it (strict semver).
pub fn blang_version(v: &str) -> Result<(), String> {
    crate::version::blang::parse_version(v)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// A release: dot-separated pre-release identifiers, at most 20 characters.
pub fn release_identifiers(r: &str) -> Result<(), String> {
    if r.len() > 20 {
        return Err(format!(
            "invalid release {r:?}: exceeds maximum length of 20 characters"
        ));
    }
    crate::version::release::Release::parse(r)
        .map(drop)
        .map_err(|e| format!("invalid release {r:?}: {e}"))
}

/// A lowercase RFC 1123 label.
fn dns1123_label(s: &str) -> Result<(), String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-';
    if !ok {
        errs.push(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
             and must start and end with an alphanumeric character"
                .to_owned(),
        );
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

struct Out {
    report: Report,
}

impl Out {
    fn error(&mut self, object: &ObjectRef, message: impl Into<String>) {
        self.report.errors.push(Finding {
            object: object.clone(),
            message: message.into(),
        });
    }

    fn warning(&mut self, object: &ObjectRef, message: impl Into<String>) {
        self.report.warnings.push(Finding {
            object: object.clone(),
            message: message.into(),
        });
    }

    /// An error, or a warning in lenient mode (see the module table).
    fn opm_error(&mut self, lenient: bool, object: &ObjectRef, message: impl Into<String>) {
        if lenient {
            self.warning(object, message);
        } else {
            self.error(object, message);
        }
    }
}

fn at(origin: &Option<super::walk::Origin>) -> String {
    origin
        .as_ref()
        .map_or_else(|| "elsewhere".to_owned(), ToString::to_string)
}

/// Validates a whole catalog.
pub fn validate(cfg: &DeclarativeConfig, checks: &Checks<'_>) -> Report {
    let mut out = Out {
        report: Report::default(),
    };

    // Packages.
    let mut packages: HashMap<&str, usize> = HashMap::new();
    for (i, p) in cfg.packages.iter().enumerate() {
        let obj = p.object_ref();
        if p.name.is_empty() {
            out.error(&obj, "package name must not be empty");
            continue;
        }
        if let Some(&first) = packages.get(p.name.as_str()) {
            out.error(
                &obj,
                format!(
                    "duplicate package {:?} (first defined at {})",
                    p.name,
                    at(&cfg.packages[first].origin)
                ),
            );
            continue;
        }
        packages.insert(&p.name, i);
        if let Err(e) = dns1123_label(&p.name) {
            out.error(&obj, format!("invalid package name {:?}: {e}", p.name));
        }
        if p.default_channel.is_none() {
            out.error(&obj, "default channel must be set");
        }
        if let Some(icon) = &p.icon
            && let Err(e) = icon.data()
        {
            // `parse package: <Go's error>` is what opm and upstream's resolver report.
            out.opm_error(
                checks.lenient,
                &obj,
                format!(
                    "icon.base64data: parse package: {e} (opm and upstream's resolver cannot load this package; this project serves and resolves it, the icon is only displayed)"
                ),
            );
        }
    }

    // Channels, indexed per package.
    let mut channels: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, c) in cfg.channels.iter().enumerate() {
        let obj = c.object_ref();
        if c.package.is_empty() {
            out.error(&obj, "package name must be set for channel");
            continue;
        }
        if !packages.contains_key(c.package.as_str()) {
            out.error(&obj, format!("unknown package {:?} for channel", c.package));
            continue;
        }
        if c.name.is_empty() {
            out.error(&obj, "channel name must not be empty");
            continue;
        }
        if let Some(&first) = channels.get(&(c.package.as_str(), c.name.as_str())) {
            out.error(
                &obj,
                format!(
                    "duplicate channel {:?} in package {:?} (first defined at {})",
                    c.name,
                    c.package,
                    at(&cfg.channels[first].origin)
                ),
            );
            continue;
        }
        channels.insert((&c.package, &c.name), i);
        check_channel(c, checks, &mut out);
    }

    for (i, p) in cfg.packages.iter().enumerate() {
        // Only the first definition of each package is checked further.
        if packages.get(p.name.as_str()) != Some(&i) {
            continue;
        }
        let has_channel = cfg.channels.iter().any(|c| c.package == p.name);
        if !has_channel {
            out.error(&p.object_ref(), "package must contain at least one channel");
        }
        if let Some(d) = &p.default_channel
            && !channels.contains_key(&(p.name.as_str(), d.as_str()))
        {
            out.error(
                &p.object_ref(),
                format!("default channel {d:?} not found in the package's channels"),
            );
        }
    }

    // Which entry names each package's channels define.
    let mut entries_by_package: HashMap<&str, HashSet<&str>> = HashMap::new();
    for &i in channels.values() {
        let c = &cfg.channels[i];
        let set = entries_by_package.entry(c.package.as_str()).or_default();
        for e in &c.entries {
            set.insert(&e.name);
        }
    }

    // Bundles.
    let mut bundles: HashMap<(&str, &str), usize> = HashMap::new();
    // package -> version string -> bundle names, for bundles that are in a channel.
    let mut versions: BTreeMap<&str, BTreeMap<String, BTreeSet<&str>>> = BTreeMap::new();
    for (i, b) in cfg.bundles.iter().enumerate() {
        let obj = b.object_ref();
        if b.package.is_empty() {
            out.error(&obj, "package name must be set for bundle");
            continue;
        }
        if !packages.contains_key(b.package.as_str()) {
            out.error(&obj, format!("unknown package {:?} for bundle", b.package));
            continue;
        }
        if b.name.is_empty() {
            out.error(&obj, "bundle name must be set");
        } else if let Some(&first) = bundles.get(&(b.package.as_str(), b.name.as_str())) {
            out.error(
                &obj,
                format!(
                    "duplicate bundle {:?} in package {:?} (first defined at {})",
                    b.name,
                    b.package,
                    at(&cfg.bundles[first].origin)
                ),
            );
            continue;
        } else {
            bundles.insert((&b.package, &b.name), i);
        }
        let in_channel = entries_by_package
            .get(b.package.as_str())
            .is_some_and(|s| s.contains(b.name.as_str()));
        if !in_channel {
            out.error(&obj, "bundle not found in any channel entries");
        }
        if let Some(vs) = check_bundle(b, checks, &mut out)
            && in_channel
        {
            versions
                .entry(b.package.as_str())
                .or_default()
                .entry(vs)
                .or_default()
                .insert(&b.name);
        }
    }

    // Channel entries need bundles.
    for &i in channels.values() {
        let c = &cfg.channels[i];
        let missing: BTreeSet<&str> = c
            .entries
            .iter()
            .map(|e| e.name.as_str())
            .filter(|n| !n.is_empty() && !bundles.contains_key(&(c.package.as_str(), *n)))
            .collect();
        if !missing.is_empty() {
            out.error(
                &c.object_ref(),
                format!(
                    "no olm.bundle blobs found for channel entries {}",
                    missing.into_iter().collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }

    for (pkg, by_version) in &versions {
        let dups: Vec<String> = by_version
            .iter()
            .filter(|(_, names)| names.len() > 1)
            .map(|(v, names)| {
                format!(
                    "{{{v}: [{}]}}",
                    names.iter().copied().collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        if !dups.is_empty()
            && let Some(&i) = packages.get(pkg)
        {
            out.error(
                &cfg.packages[i].object_ref(),
                format!("duplicate versions found in bundles: [{}]", dups.join(" ")),
            );
        }
    }

    // Deprecations.
    let mut deprecated_packages: HashSet<&str> = HashSet::new();
    for d in &cfg.deprecations {
        let obj = d.object_ref();
        if d.package.is_empty() {
            out.error(&obj, "package name must be set for deprecation");
            continue;
        }
        if !packages.contains_key(d.package.as_str()) {
            out.error(
                &obj,
                format!(
                    "cannot apply deprecations to an unknown package {:?}",
                    d.package
                ),
            );
            continue;
        }
        if !deprecated_packages.insert(&d.package) {
            out.error(
                &obj,
                format!(
                    "expected a maximum of one deprecation per package: {:?}",
                    d.package
                ),
            );
            continue;
        }
        let mut seen = HashSet::new();
        for (j, e) in d.entries.iter().enumerate() {
            let r = &e.reference;
            if r.schema.is_empty() {
                out.error(&obj, format!("entries[{j}]: schema must be set"));
                continue;
            }
            if !seen.insert(r) {
                out.error(
                    &obj,
                    format!(
                        "entries[{j}]: duplicate deprecation entry for {} {:?}",
                        r.schema, r.name
                    ),
                );
                continue;
            }
            match r.schema.as_str() {
                SCHEMA_BUNDLE => {
                    if !bundles.contains_key(&(d.package.as_str(), r.name.as_str())) {
                        out.error(
                            &obj,
                            format!(
                                "entries[{j}]: cannot deprecate bundle {:?}: bundle not found",
                                r.name
                            ),
                        );
                    }
                }
                SCHEMA_CHANNEL => {
                    if !channels.contains_key(&(d.package.as_str(), r.name.as_str())) {
                        out.error(
                            &obj,
                            format!(
                                "entries[{j}]: cannot deprecate channel {:?}: channel not found",
                                r.name
                            ),
                        );
                    }
                }
                SCHEMA_PACKAGE => {
                    if !r.name.is_empty() {
                        out.error(
                            &obj,
                            format!(
                                "entries[{j}]: package name must be empty for a deprecated package (specified {:?})",
                                r.name
                            ),
                        );
                    }
                }
                other => out.error(
                    &obj,
                    format!("entries[{j}]: cannot deprecate an object of unknown schema {other:?}"),
                ),
            }
            if e.message.is_empty() {
                out.error(&obj, format!("entries[{j}]: message must be set"));
            }
        }
    }

    out.report
}

fn check_channel(c: &Channel, checks: &Checks<'_>, out: &mut Out) {
    let obj = c.object_ref();
    if c.entries.is_empty() {
        out.error(&obj, "channel must contain at least one bundle");
        return;
    }
    let mut names: HashSet<&str> = HashSet::new();
    let mut duplicated = false;
    for (i, e) in c.entries.iter().enumerate() {
        if e.name.is_empty() {
            out.error(&obj, format!("entries[{i}]: name must be set"));
        } else if !names.insert(&e.name) {
            out.error(&obj, format!("duplicate entry {:?}", e.name));
            duplicated = true;
        }
        for (k, s) in e.skips.iter().enumerate() {
            if s.is_empty() {
                out.error(&obj, format!("entry {:?}: skips[{k}] is empty", e.name));
            }
        }
        if let Some(r) = &e.skip_range
            && let Err(reason) = (checks.skip_range)(r)
        {
            // opm's words (`invalid skipRange "R": <blang error>`); the resolver never matches it.
            out.opm_error(
                checks.lenient,
                &obj,
                format!(
                    "entry {:?}: invalid skipRange {r:?}: {reason} (resolvers ignore it: it never matches)",
                    e.name
                ),
            );
        }
    }
    if !duplicated && let Err(e) = check_replaces_chain(&c.entries) {
        out.error(&obj, e);
    }
}

/// The entry nothing replaces or skips; exactly one is required.
fn channel_head(entries: &[ChannelEntry]) -> Result<&ChannelEntry, String> {
    let mut incoming: HashSet<&str> = HashSet::new();
    for e in entries {
        if let Some(r) = &e.replaces {
            incoming.insert(r);
        }
        incoming.extend(e.skips.iter().map(String::as_str));
    }
    let heads: Vec<&ChannelEntry> = entries
        .iter()
        .filter(|e| !incoming.contains(e.name.as_str()))
        .collect();
    match heads.as_slice() {
        [] => Err("no channel head found in graph".into()),
        [one] => Ok(one),
        many => {
            let mut names: Vec<&str> = many.iter().map(|e| e.name.as_str()).collect();
            names.sort_unstable();
            Err(format!(
                "multiple channel heads found in graph: {}",
                names.join(", ")
            ))
        }
    }
}

/// One head; its replaces chain reaches every entry that is not skipped; no cycle. The tail may
/// replace an entry that does not exist.
fn check_replaces_chain(entries: &[ChannelEntry]) -> Result<(), String> {
    let head = channel_head(entries)?;
    let by_name: HashMap<&str, &ChannelEntry> =
        entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let skipped: HashSet<&str> = entries
        .iter()
        .flat_map(|e| e.skips.iter().map(String::as_str))
        .collect();
    let mut chain: Vec<&str> = vec![head.name.as_str()];
    let mut on_chain: HashSet<&str> = HashSet::from([head.name.as_str()]);
    let mut cur = Some(head);
    while let Some(e) = cur {
        let replaces = e.replaces.as_deref().unwrap_or("");
        if skipped.contains(replaces) {
            break;
        }
        if on_chain.contains(replaces) {
            let start = chain.iter().position(|n| *n == replaces).unwrap_or(0);
            let mut path: Vec<&str> = chain[start..].to_vec();
            path.push(replaces);
            return Err(format!(
                "detected cycle in replaces chain of upgrade graph: {}",
                path.join(" -> ")
            ));
        }
        on_chain.insert(replaces);
        chain.push(replaces);
        cur = by_name.get(replaces).copied();
    }
    let mut stranded: Vec<&str> = entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| !on_chain.contains(n) && !skipped.contains(n))
        .collect();
    stranded.sort_unstable();
    stranded.dedup();
    if stranded.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "channel contains one or more stranded bundles: {}",
            stranded.join(", ")
        ))
    }
}

/// Checks one bundle; returns its version string (version, plus `-release`) when it has one.
fn check_bundle(b: &Bundle, checks: &Checks<'_>, out: &mut Out) -> Option<String> {
    let obj = b.object_ref();
    let mut packages = Vec::new();
    let mut has_bundle_object = false;
    for (i, p) in b.properties.iter().enumerate() {
        if let Err(e) = p.check() {
            out.error(&obj, format!("properties[{i}]: {e}"));
            continue;
        }
        if p.type_ == TYPE_BUNDLE_OBJECT {
            has_bundle_object = true;
        }
        if let Some(Ok(pp)) = p.package() {
            packages.push(pp);
        }
    }
    if b.image.is_empty() && !has_bundle_object {
        out.error(&obj, "bundle image must be set");
    }
    if !b.image.is_empty()
        && let Err(e) = validate_image_reference(&b.image)
    {
        out.error(&obj, format!("invalid image pull spec {:?}: {e}", b.image));
    }
    for (i, r) in b.related_images.iter().enumerate() {
        if !r.image.is_empty()
            && let Err(e) = validate_image_reference(&r.image)
        {
            out.error(
                &obj,
                format!(
                    "relatedImages[{i}].image: invalid image pull spec {:?}: {e}",
                    r.image
                ),
            );
        }
    }
    let count = b
        .properties
        .iter()
        .filter(|p| p.type_ == TYPE_PACKAGE)
        .count();
    if count != 1 {
        out.error(
            &obj,
            format!("must have exactly 1 {TYPE_PACKAGE:?} property, found {count}"),
        );
        return None;
    }
    let pp = packages.pop()?;
    if pp.package_name != b.package {
        out.error(
            &obj,
            format!(
                "package {:?} does not match {TYPE_PACKAGE:?} property {:?}",
                b.package, pp.package_name
            ),
        );
    }
    if let Err(e) = (checks.version)(&pp.version) {
        out.error(&obj, format!("invalid version {:?}: {e}", pp.version));
        return None;
    }
    if pp.release.is_empty() {
        return Some(pp.version);
    }
    if let Err(e) = (checks.release)(&pp.release) {
        out.error(&obj, e);
        return None;
    }
    if pp.version.contains('+') {
        out.error(
            &obj,
            "cannot use build metadata in version with a release version",
        );
    }
    let version_string = format!("{}-{}", pp.version, pp.release);
    let normalized = format!("{}-v{}", b.package, version_string);
    if b.name != normalized {
        out.error(
            &obj,
            format!(
                "name {:?} does not match normalized name {normalized:?}",
                b.name
            ),
        );
    }
    Some(version_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fbc::DeclarativeConfig;

    fn report(yaml: &str) -> Report {
        let cfg = DeclarativeConfig::from_reader(yaml.as_bytes(), "t").unwrap();
        validate(&cfg, &Checks::default())
    }

    fn errors(yaml: &str) -> Vec<String> {
        report(yaml)
            .errors
            .iter()
            .map(|f| f.message.clone())
            .collect()
    }

    const PKG: &str = "schema: olm.package\nname: p\ndefaultChannel: stable\n";

    fn bundle(name: &str, version: &str) -> String {
        format!(
            "---\nschema: olm.bundle\nname: {name}\npackage: p\nimage: quay.io/p/{name}:v1\nproperties:\n- type: olm.package\n  value: {{packageName: p, version: '{version}'}}\n"
        )
    }

    fn chan(name: &str, entries: &str) -> String {
        format!("---\nschema: olm.channel\nname: {name}\npackage: p\nentries:\n{entries}")
    }

    #[test]
    fn a_linear_channel_is_valid() {
        let y = format!(
            "{PKG}{}{}{}",
            chan("stable", "- name: a\n- name: b\n  replaces: a\n"),
            bundle("a", "1.0.0"),
            bundle("b", "1.1.0")
        );
        let r = report(&y);
        assert!(r.is_valid(), "{:?}", r.errors);
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn multiple_heads_are_an_error_naming_them() {
        let y = format!(
            "{PKG}{}{}{}",
            chan("stable", "- name: a\n- name: b\n"),
            bundle("a", "1.0.0"),
            bundle("b", "1.1.0")
        );
        assert_eq!(
            errors(&y),
            vec!["multiple channel heads found in graph: a, b"]
        );
    }

    #[test]
    fn a_replaces_cycle_is_reported_with_its_path() {
        let y = format!(
            "{PKG}{}{}{}{}",
            chan(
                "stable",
                "- name: h\n  replaces: a\n- name: a\n  replaces: b\n- name: b\n  replaces: a\n"
            ),
            bundle("h", "1.2.0"),
            bundle("a", "1.1.0"),
            bundle("b", "1.0.0")
        );
        assert_eq!(
            errors(&y),
            vec!["detected cycle in replaces chain of upgrade graph: a -> b -> a"]
        );
    }

    #[test]
    fn stranded_entries_are_errors_unless_skipped() {
        let y = format!(
            "{PKG}{}{}{}{}",
            chan(
                "stable",
                "- name: c\n  replaces: b\n  skips: [a]\n- name: b\n- name: a\n"
            ),
            bundle("a", "1.0.0"),
            bundle("b", "1.1.0"),
            bundle("c", "1.2.0")
        );
        assert!(report(&y).is_valid());
        let y = format!(
            "{PKG}{}{}{}",
            chan(
                "stable",
                "- name: c\n  skips: [x]\n- name: x\n- name: z\n  replaces: c\n"
            ),
            bundle("c", "1.2.0"),
            bundle("x", "1.0.0")
        );
        let e = errors(&y);
        assert!(
            e.iter()
                .any(|m| m.contains("no olm.bundle blobs found for channel entries z")),
            "{e:?}"
        );
    }

    // `opm validate` (operator-registry v1.73.0) rejects both with
    // `invalid skipRange "not-a-range": Could not get version from string: "not-a-range"`.
    #[test]
    fn unparsable_skip_range_is_an_error_as_in_opm_and_a_warning_when_lenient() {
        for range in ["not-a-range", ">=v1.9.0 <v1.10.1"] {
            let y = format!(
                "{PKG}{}{}",
                chan("stable", &format!("- name: a\n  skipRange: '{range}'\n")),
                bundle("a", "1.0.0")
            );
            let r = report(&y);
            assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
            assert!(
                r.errors[0]
                    .message
                    .starts_with(&format!("entry \"a\": invalid skipRange \"{range}\": ")),
                "{}",
                r.errors[0].message
            );
            let cfg = DeclarativeConfig::from_reader(y.as_bytes(), "t").unwrap();
            let lenient = validate(
                &cfg,
                &Checks {
                    lenient: true,
                    ..Checks::default()
                },
            );
            assert!(lenient.is_valid());
            assert_eq!(lenient.warnings.len(), 1);
        }
        let y = format!(
            "{PKG}{}{}",
            chan("stable", "- name: a\n  skipRange: 'not-a-range'\n"),
            bundle("a", "1.0.0")
        );
        assert!(
            report(&y).errors[0]
                .message
                .contains("Could not get version from string: \"not-a-range\""),
            "{:?}",
            report(&y).errors
        );
    }

    #[test]
    fn skip_range_parser_is_a_seam() {
        let y = format!(
            "{PKG}{}{}",
            chan("stable", "- name: a\n  skipRange: 'anything'\n"),
            bundle("a", "1.0.0")
        );
        let cfg = DeclarativeConfig::from_reader(y.as_bytes(), "t").unwrap();
        let accept_all = |_: &str| Ok(());
        let checks = Checks {
            skip_range: &accept_all,
            ..Checks::default()
        };
        assert!(validate(&cfg, &checks).warnings.is_empty());
    }

    #[test]
    fn missing_default_channel_and_bundle_outside_channels_are_errors() {
        let y = format!(
            "schema: olm.package\nname: p\ndefaultChannel: alpha\n{}{}{}",
            chan("stable", "- name: a\n"),
            bundle("a", "1.0.0"),
            bundle("b", "1.1.0")
        );
        let e = errors(&y);
        assert!(
            e.contains(
                &"default channel \"alpha\" not found in the package's channels".to_string()
            ),
            "{e:?}"
        );
        assert!(
            e.contains(&"bundle not found in any channel entries".to_string()),
            "{e:?}"
        );
    }

    #[test]
    fn package_property_must_be_unique_match_and_hold_semver() {
        let y = format!(
            "{PKG}{}---\nschema: olm.bundle\nname: a\npackage: p\nimage: quay.io/p/a:v1\nproperties:\n- type: olm.package\n  value: {{packageName: q, version: v1.0}}\n",
            chan("stable", "- name: a\n")
        );
        let e = errors(&y);
        assert!(
            e.iter()
                .any(|m| m.contains("does not match \"olm.package\" property \"q\"")),
            "{e:?}"
        );
        assert!(
            e.iter().any(|m| m.starts_with("invalid version \"v1.0\"")),
            "{e:?}"
        );
        let y = format!(
            "{PKG}{}---\nschema: olm.bundle\nname: a\npackage: p\nimage: quay.io/p/a:v1\n",
            chan("stable", "- name: a\n")
        );
        assert_eq!(
            errors(&y),
            vec!["must have exactly 1 \"olm.package\" property, found 0"]
        );
    }

    #[test]
    fn duplicates_are_errors_with_the_first_position() {
        let y = format!(
            "{PKG}---\n{PKG}{}{}{}",
            chan("stable", "- name: a\n"),
            bundle("a", "1.0.0"),
            bundle("a", "1.0.0")
        );
        let e = errors(&y);
        assert!(
            e.iter()
                .any(|m| m == "duplicate package \"p\" (first defined at t:1:1)"),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m.starts_with("duplicate bundle \"a\" in package \"p\"")),
            "{e:?}"
        );
    }

    #[test]
    fn duplicate_versions_in_a_package_are_errors() {
        let y = format!(
            "{PKG}{}{}{}",
            chan("stable", "- name: a\n- name: b\n  replaces: a\n"),
            bundle("a", "1.0.0"),
            bundle("b", "1.0.0")
        );
        assert_eq!(
            errors(&y),
            vec!["duplicate versions found in bundles: [{1.0.0: [a, b]}]"]
        );
    }

    #[test]
    fn deprecation_references_must_exist() {
        let y = format!(
            "{PKG}{}{}---\nschema: olm.deprecations\npackage: p\nentries:\n\
             - reference: {{schema: olm.bundle, name: nope}}\n  message: m\n\
             - reference: {{schema: olm.channel, name: stable}}\n  message: m\n\
             - reference: {{schema: olm.channel, name: gone}}\n  message: m\n\
             - reference: {{schema: olm.package, name: p}}\n  message: m\n\
             - reference: {{schema: olm.package}}\n\
             - reference: {{schema: olm.thing, name: x}}\n  message: m\n",
            chan("stable", "- name: a\n"),
            bundle("a", "1.0.0")
        );
        assert_eq!(
            errors(&y),
            vec![
                "entries[0]: cannot deprecate bundle \"nope\": bundle not found",
                "entries[2]: cannot deprecate channel \"gone\": channel not found",
                "entries[3]: package name must be empty for a deprecated package (specified \"p\")",
                "entries[4]: message must be set",
                "entries[5]: cannot deprecate an object of unknown schema \"olm.thing\"",
            ]
        );
    }

    #[test]
    fn release_versions_require_the_normalized_bundle_name() {
        let y = format!(
            "{PKG}{}---\nschema: olm.bundle\nname: a\npackage: p\nimage: quay.io/p/a:v1\nproperties:\n- type: olm.package\n  value: {{packageName: p, version: 1.0.0, release: '2'}}\n",
            chan("stable", "- name: a\n")
        );
        assert_eq!(
            errors(&y),
            vec!["name \"a\" does not match normalized name \"p-v1.0.0-2\""]
        );
    }

    // `opm validate` fails the load with `parse package: illegal base64 data at input byte 1`.
    #[test]
    fn bad_icon_base64_is_an_error_as_in_opm_and_bad_bundle_object_too() {
        let y = format!(
            "schema: olm.package\nname: p\ndefaultChannel: stable\nicon: {{base64data: 'a b', mediatype: image/png}}\n{}---\nschema: olm.bundle\nname: a\npackage: p\nimage: ''\nproperties:\n- type: olm.package\n  value: {{packageName: p, version: 1.0.0}}\n- type: olm.bundle.object\n  value: {{data: '%%%'}}\n",
            chan("stable", "- name: a\n")
        );
        let r = report(&y);
        assert!(r.warnings.is_empty());
        let e: Vec<&str> = r.errors.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(
            e[0].starts_with(
                "icon.base64data: parse package: illegal base64 data at input byte 1 (opm and upstream's resolver cannot load this package"
            ),
            "{e:?}"
        );
        assert!(
            e[1].starts_with(
                "properties[1]: failed to parse property of type \"olm.bundle.object\""
            ),
            "{e:?}"
        );
        assert_eq!(e[2], "bundle image must be set");
        let cfg = DeclarativeConfig::from_reader(y.as_bytes(), "t").unwrap();
        let lenient = validate(
            &cfg,
            &Checks {
                lenient: true,
                ..Checks::default()
            },
        );
        assert_eq!(lenient.errors.len(), 2);
        assert_eq!(lenient.warnings.len(), 1);
    }

    #[test]
    fn findings_name_file_position_schema_package_and_name() {
        let y = format!(
            "{PKG}{}{}",
            chan("stable", "- name: a\n- name: b\n"),
            bundle("a", "1.0.0")
        );
        let r = report(&y);
        let text: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
        assert!(
            text.contains(&"t:5:1: olm.channel \"stable\" (package \"p\"): multiple channel heads found in graph: a, b".to_string()),
            "{text:?}"
        );
    }
}
