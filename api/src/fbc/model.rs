//! The typed catalog model (`DeclarativeConfig`) and its loader.
//!
//! Input: catalog objects from [`super::walk`] (a directory, a stream, or single [`Meta`]s).
//! Output: packages, channels, bundles, deprecations and the other objects. Reads local files only.
//!
//! Loading follows operator-registry's `LoadFS` (except that undecodable base64 in a package icon or
//! an `olm.bundle.object` is left to validation instead of failing the load): objects are sorted by `schema` into the typed
//! lists; unknown schemas are kept whole in `others`; an object without a schema is an error; typed
//! fields follow Go's `encoding/json` (field names match case-insensitively, the last of several
//! matching keys wins, `null` leaves a field empty, a value of the wrong JSON type is an error).
//! Loading does not check catalog consistency: that is [`super::validate`], a separate verdict, so
//! catalogs with, for example, multi-head channels load (and are served) fine.
//!
//! Memory: nothing keeps a generic JSON tree; property values are kept as raw JSON text.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::gojson::{self, Object, Value};
use super::property::{self, Property};
use super::walk::{self, Meta, Origin, RawObject, WalkError};

pub const SCHEMA_PACKAGE: &str = "olm.package";
pub const SCHEMA_CHANNEL: &str = "olm.channel";
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// A whole catalog, typed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeclarativeConfig {
    pub packages: Vec<Package>,
    pub channels: Vec<Channel>,
    pub bundles: Vec<Bundle>,
    pub deprecations: Vec<Deprecation>,
    /// Objects of any other schema, exactly as they are served.
    pub others: Vec<Meta>,
}

/// `olm.package`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Package {
    pub name: String,
    /// `None` when absent, `null` or empty.
    pub default_channel: Option<String>,
    pub description: String,
    pub icon: Option<Icon>,
    pub properties: Vec<Property>,
    pub origin: Option<Origin>,
}

/// A package icon (`base64data` is kept as text; [`Icon::data`] decodes it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Icon {
    pub base64data: String,
    pub mediatype: String,
}

impl Icon {
    pub fn data(&self) -> Result<Vec<u8>, String> {
        property::decode_go_base64(&self.base64data)
    }
}

/// `olm.channel`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Channel {
    pub name: String,
    pub package: String,
    pub entries: Vec<ChannelEntry>,
    pub properties: Vec<Property>,
    pub origin: Option<Origin>,
}

/// One entry of a channel and its upgrade edges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChannelEntry {
    pub name: String,
    /// `None` when absent or empty.
    pub replaces: Option<String>,
    pub skips: Vec<String>,
    /// `None` when absent or empty.
    pub skip_range: Option<String>,
}

/// `olm.bundle`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bundle {
    pub name: String,
    pub package: String,
    pub image: String,
    pub properties: Vec<Property>,
    pub related_images: Vec<RelatedImage>,
    pub origin: Option<Origin>,
}

impl Bundle {
    /// The first `olm.package` property, parsed.
    pub fn package_property(
        &self,
    ) -> Option<Result<property::PackageProperty, property::PropertyError>> {
        self.properties.iter().find_map(Property::package)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelatedImage {
    pub name: String,
    pub image: String,
}

/// `olm.deprecations`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deprecation {
    pub package: String,
    pub entries: Vec<DeprecationEntry>,
    pub origin: Option<Origin>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeprecationEntry {
    pub reference: PackageScopedReference,
    pub message: String,
}

/// What a deprecation entry points at: the package itself (`olm.package`, no name), one of its
/// channels (`olm.channel`) or bundles (`olm.bundle`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PackageScopedReference {
    pub schema: String,
    pub name: String,
}

/// Names one catalog object in messages: its position, schema, package and name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectRef {
    pub schema: String,
    pub package: String,
    pub name: String,
    pub origin: Option<Origin>,
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(o) = &self.origin {
            write!(f, "{o}: ")?;
        }
        if self.schema.is_empty() {
            f.write_str("object without schema")?;
        } else {
            f.write_str(&self.schema)?;
        }
        if !self.name.is_empty() || self.schema == SCHEMA_PACKAGE {
            write!(f, " {:?}", self.name)?;
        }
        if !self.package.is_empty() {
            write!(f, " (package {:?})", self.package)?;
        }
        Ok(())
    }
}

impl Package {
    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            schema: SCHEMA_PACKAGE.into(),
            package: String::new(),
            name: self.name.clone(),
            origin: self.origin.clone(),
        }
    }
}

impl Channel {
    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            schema: SCHEMA_CHANNEL.into(),
            package: self.package.clone(),
            name: self.name.clone(),
            origin: self.origin.clone(),
        }
    }
}

impl Bundle {
    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            schema: SCHEMA_BUNDLE.into(),
            package: self.package.clone(),
            name: self.name.clone(),
            origin: self.origin.clone(),
        }
    }
}

impl Deprecation {
    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            schema: SCHEMA_DEPRECATIONS.into(),
            package: self.package.clone(),
            name: String::new(),
            origin: self.origin.clone(),
        }
    }
}

/// Why a catalog could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Walk(#[from] WalkError),
    #[error("failed to load {object}: {message}")]
    Invalid {
        object: Box<ObjectRef>,
        message: String,
    },
}

impl DeclarativeConfig {
    /// Loads every object under `root` (a directory, or a single file) as `opm validate` loads
    /// it: an empty YAML document is an object without schema, which fails the load (see
    /// [`walk::NullDocuments`]).
    pub fn load_dir(root: &Path) -> Result<Self, LoadError> {
        let mut cfg = DeclarativeConfig::default();
        walk::walk_objects_dir(
            root,
            walk::NullDocuments::AsObjects,
            walk::Decode::Values,
            &mut |raw: RawObject| cfg.push_raw(raw),
        )?;
        Ok(cfg)
    }

    /// Loads a JSON or YAML stream; `source_name` names it in positions and errors.
    pub fn from_reader(r: impl Read, source_name: &str) -> Result<Self, LoadError> {
        let mut cfg = DeclarativeConfig::default();
        walk::read_stream(r, Arc::from(source_name), &mut |raw: RawObject| {
            cfg.push_raw(raw)
        })?;
        Ok(cfg)
    }

    /// Adds one object, for example one received from catalogd.
    pub fn push_meta(&mut self, meta: Meta) -> Result<(), LoadError> {
        if meta.schema.is_empty() || !is_typed_schema(&meta.schema) {
            return self.push_other(meta);
        }
        let object = ObjectRef {
            schema: meta.schema.clone(),
            package: meta.package.clone(),
            name: meta.name.clone(),
            origin: Some(meta.origin.clone()),
        };
        let value = gojson::parse(&meta.blob).map_err(|e| LoadError::Invalid {
            object: Box::new(object.clone()),
            message: format!("invalid JSON: {e}"),
        })?;
        self.push_raw(RawObject {
            schema: meta.schema,
            package: meta.package,
            name: meta.name,
            value,
            origin: meta.origin,
            empty_document: false,
            canonical: None,
        })
    }

    fn push_other(&mut self, meta: Meta) -> Result<(), LoadError> {
        if meta.schema.is_empty() {
            // operator-registry's words, around the blob exactly as it holds it (canonical JSON
            // and the newline its encoder adds; nothing at all for an empty YAML document).
            let text = String::from_utf8_lossy(&meta.blob);
            let newline = if text.is_empty() { "" } else { "\n" };
            return Err(LoadError::Invalid {
                message: format!("object '{text}{newline}' is missing root schema field"),
                object: Box::new(ObjectRef {
                    origin: Some(meta.origin),
                    ..ObjectRef::default()
                }),
            });
        }
        self.others.push(meta);
        Ok(())
    }

    fn push_raw(&mut self, raw: RawObject) -> Result<(), LoadError> {
        let origin = Some(raw.origin.clone());
        let object = || ObjectRef {
            schema: raw.schema.clone(),
            package: raw.package.clone(),
            name: raw.name.clone(),
            origin: origin.clone(),
        };
        let invalid = |message: String| LoadError::Invalid {
            object: Box::new(object()),
            message,
        };
        let obj = match &raw.value {
            Value::Object(obj) => obj,
            _ => {
                return self.push_other(raw.into_meta());
            }
        };
        match raw.schema.as_str() {
            SCHEMA_PACKAGE => {
                let mut p = decode_package(obj).map_err(invalid)?;
                p.origin = origin;
                self.packages.push(p);
            }
            SCHEMA_CHANNEL => {
                let mut c = decode_channel(obj).map_err(invalid)?;
                c.origin = origin;
                self.channels.push(c);
            }
            SCHEMA_BUNDLE => {
                let mut b = decode_bundle(obj).map_err(invalid)?;
                b.origin = origin;
                self.bundles.push(b);
            }
            SCHEMA_DEPRECATIONS => {
                let mut d = decode_deprecation(obj).map_err(invalid)?;
                d.origin = origin;
                self.deprecations.push(d);
            }
            _ => return self.push_other(raw.into_meta()),
        }
        Ok(())
    }
}

fn is_typed_schema(schema: &str) -> bool {
    matches!(
        schema,
        SCHEMA_PACKAGE | SCHEMA_CHANNEL | SCHEMA_BUNDLE | SCHEMA_DEPRECATIONS
    )
}

/// Go's struct field matching: the last key (in sorted order) equal to `name` up to letter case.
fn field<'a>(obj: &'a Object, name: &str) -> Option<&'a Value> {
    obj.iter()
        .filter(|(k, _)| fold_eq(k, name))
        .last()
        .map(|(_, v)| v)
}

/// `key` equals the ASCII field name `field` under Go's simple case folding (which also folds the
/// Kelvin sign to `k` and the long s to `s`).
fn fold_eq(key: &str, field: &str) -> bool {
    let mut f = field.bytes();
    for c in key.chars() {
        let folded = match c {
            '\u{212A}' => 'k',
            '\u{017F}' => 's',
            c if c.is_ascii() => c.to_ascii_lowercase(),
            _ => return false,
        };
        match f.next() {
            Some(b) if b.to_ascii_lowercase() == folded as u8 => {}
            _ => return false,
        }
    }
    f.next().is_none()
}

fn string_field(obj: &Object, name: &str, path: &str) -> Result<String, String> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(format!(
            "field {:?}: expected a string, got {}",
            join_path(path, name),
            v.kind()
        )),
    }
}

fn opt_string_field(obj: &Object, name: &str, path: &str) -> Result<Option<String>, String> {
    let s = string_field(obj, name, path)?;
    Ok(if s.is_empty() { None } else { Some(s) })
}

fn array_field<'a>(obj: &'a Object, name: &str, path: &str) -> Result<&'a [Value], String> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(v) => Err(format!(
            "field {:?}: expected an array, got {}",
            join_path(path, name),
            v.kind()
        )),
    }
}

fn join_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn as_object<'a>(v: &'a Value, path: &str) -> Result<Option<&'a Object>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(Some(o)),
        other => Err(format!(
            "field {path:?}: expected an object, got {}",
            other.kind()
        )),
    }
}

fn string_list(obj: &Object, name: &str, path: &str) -> Result<Vec<String>, String> {
    let full = join_path(path, name);
    array_field(obj, name, path)?
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s.clone()),
            Value::Null => Ok(String::new()),
            other => Err(format!(
                "field {:?}: expected a string, got {}",
                format!("{full}[{i}]"),
                other.kind()
            )),
        })
        .collect()
}

fn properties_field(obj: &Object, path: &str) -> Result<Vec<Property>, String> {
    let full = join_path(path, "properties");
    let items = array_field(obj, "properties", path)?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let p = format!("{full}[{i}]");
        let Some(o) = as_object(item, &p)? else {
            out.push(Property {
                type_: String::new(),
                value: null_raw(),
            });
            continue;
        };
        let type_ = string_field(o, "type", &p)?;
        let value = match field(o, "value") {
            None => null_raw(),
            Some(v) => {
                let mut text = Vec::new();
                v.write_raw(&mut text);
                let text = String::from_utf8(text)
                    .map_err(|_| format!("field {p:?}: value is not valid UTF-8"))?;
                RawValue::from_string(text)
                    .map_err(|e| format!("field {p:?}: value cannot be kept as JSON: {e}"))?
            }
        };
        out.push(Property { type_, value });
    }
    Ok(out)
}

fn null_raw() -> Box<RawValue> {
    // serde_json's default raw value is `null`.
    Box::<RawValue>::default()
}

fn decode_package(obj: &Object) -> Result<Package, String> {
    let icon = match field(obj, "icon") {
        None => None,
        Some(v) => match as_object(v, "icon")? {
            None => None,
            Some(o) => {
                // Upstream's Go decoding fails the whole load on bad base64; here the icon text is
                // kept and validation reports it (a display detail should not hide a package).
                Some(Icon {
                    base64data: string_field(o, "base64data", "icon")?,
                    mediatype: string_field(o, "mediatype", "icon")?,
                })
            }
        },
    };
    Ok(Package {
        name: string_field(obj, "name", "")?,
        default_channel: opt_string_field(obj, "defaultChannel", "")?,
        description: string_field(obj, "description", "")?,
        icon,
        properties: properties_field(obj, "")?,
        origin: None,
    })
}

fn decode_channel(obj: &Object) -> Result<Channel, String> {
    let mut entries = Vec::new();
    for (i, v) in array_field(obj, "entries", "")?.iter().enumerate() {
        let p = format!("entries[{i}]");
        let Some(o) = as_object(v, &p)? else {
            entries.push(ChannelEntry::default());
            continue;
        };
        entries.push(ChannelEntry {
            name: string_field(o, "name", &p)?,
            replaces: opt_string_field(o, "replaces", &p)?,
            skips: string_list(o, "skips", &p)?,
            skip_range: opt_string_field(o, "skipRange", &p)?,
        });
    }
    Ok(Channel {
        name: string_field(obj, "name", "")?,
        package: string_field(obj, "package", "")?,
        entries,
        properties: properties_field(obj, "")?,
        origin: None,
    })
}

fn decode_bundle(obj: &Object) -> Result<Bundle, String> {
    let mut related_images = Vec::new();
    for (i, v) in array_field(obj, "relatedImages", "")?.iter().enumerate() {
        let p = format!("relatedImages[{i}]");
        let Some(o) = as_object(v, &p)? else {
            related_images.push(RelatedImage::default());
            continue;
        };
        related_images.push(RelatedImage {
            name: string_field(o, "name", &p)?,
            image: string_field(o, "image", &p)?,
        });
    }
    // Upstream also decodes every olm.bundle.object while loading; here a bad one is a validation
    // error instead, so the rest of the catalog still loads.
    let properties = properties_field(obj, "")?;
    Ok(Bundle {
        name: string_field(obj, "name", "")?,
        package: string_field(obj, "package", "")?,
        image: string_field(obj, "image", "")?,
        properties,
        related_images,
        origin: None,
    })
}

fn decode_deprecation(obj: &Object) -> Result<Deprecation, String> {
    let mut entries = Vec::new();
    for (i, v) in array_field(obj, "entries", "")?.iter().enumerate() {
        let p = format!("entries[{i}]");
        let Some(o) = as_object(v, &p)? else {
            entries.push(DeprecationEntry::default());
            continue;
        };
        let rp = format!("{p}.reference");
        let reference = match field(o, "reference") {
            None => PackageScopedReference::default(),
            Some(v) => match as_object(v, &rp)? {
                None => PackageScopedReference::default(),
                Some(r) => PackageScopedReference {
                    schema: string_field(r, "schema", &rp)?,
                    name: string_field(r, "name", &rp)?,
                },
            },
        };
        entries.push(DeprecationEntry {
            reference,
            message: string_field(o, "message", &p)?,
        });
    }
    Ok(Deprecation {
        package: string_field(obj, "package", "")?,
        entries,
        origin: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<DeclarativeConfig, LoadError> {
        DeclarativeConfig::from_reader(text.as_bytes(), "t")
    }

    #[test]
    fn objects_are_sorted_into_typed_lists_and_unknown_schemas_kept_whole() {
        let cfg = load(
            "schema: olm.package\nname: p\ndefaultChannel: stable\n---\n\
             schema: olm.channel\nname: stable\npackage: p\nentries:\n- name: p.v1\n- name: p.v2\n  replaces: p.v1\n  skips: [p.v0]\n  skipRange: '<2.0.0'\n---\n\
             schema: olm.bundle\nname: p.v2\npackage: p\nimage: quay.io/p:v2\nproperties:\n- type: olm.package\n  value: {packageName: p, version: 2.0.0}\nrelatedImages:\n- {name: op, image: quay.io/op:v2}\n---\n\
             schema: olm.deprecations\npackage: p\nentries:\n- reference: {schema: olm.channel, name: stable}\n  message: gone\n---\n\
             schema: example.com/custom\nz: 1\na: 2\n",
        )
        .unwrap();
        assert_eq!(cfg.packages[0].default_channel.as_deref(), Some("stable"));
        let e = &cfg.channels[0].entries[1];
        assert_eq!(e.replaces.as_deref(), Some("p.v1"));
        assert_eq!(e.skips, vec!["p.v0"]);
        assert_eq!(e.skip_range.as_deref(), Some("<2.0.0"));
        assert_eq!(cfg.bundles[0].related_images[0].image, "quay.io/op:v2");
        assert_eq!(
            cfg.bundles[0].package_property().unwrap().unwrap().version,
            "2.0.0"
        );
        assert_eq!(
            cfg.deprecations[0].entries[0].reference.schema,
            "olm.channel"
        );
        assert_eq!(
            cfg.others[0].blob,
            br#"{"a":2,"schema":"example.com/custom","z":1}"#
        );
        assert_eq!(cfg.bundles[0].origin.as_ref().unwrap().line, 15);
    }

    #[test]
    fn typed_fields_match_keys_case_insensitively_like_go() {
        let cfg = load(r#"{"Schema":"olm.bundle","Name":"b","Package":"p","Image":"i","Properties":[{"Type":"olm.package","Value":{"packageName":"p","version":"1.0.0"}}]}"#).unwrap();
        assert_eq!(cfg.bundles[0].image, "i");
        assert_eq!(cfg.bundles[0].properties[0].type_, "olm.package");
    }

    #[test]
    fn a_field_of_the_wrong_type_fails_the_load_with_its_position() {
        let e = load("schema: olm.bundle\nname: b\nimage: 5\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("t:1:1: olm.bundle \"b\""), "{msg}");
        assert!(
            msg.contains("field \"image\": expected a string, got number"),
            "{msg}"
        );
    }

    #[test]
    fn an_object_without_schema_fails_the_load_in_upstreams_words() {
        // operator-registry v1.73.0 prints exactly this blob: canonical JSON, then a newline.
        let e = load("{\"name\":\"x\",\"b\":[1.0,\"<&>\"]}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "failed to load t:1:1: object without schema: object '{\"b\":[1,\"<&>\"],\"name\":\"x\"}\n' is missing root schema field"
        );
    }

    // `opm validate` on each of these directories fails with `object '' is missing root schema
    // field` (checked with operator-registry v1.73.0), while catalogd serves nothing for them.
    #[test]
    fn empty_yaml_documents_fail_a_directory_load_as_in_opm_validate() {
        for (file, text) in [
            ("only-comment.yaml", "# only a comment\n"),
            ("README.md", "# Title\n"),
            ("blank.yaml", "\n\n"),
            ("separator.yaml", "---\n"),
            ("tilde.yaml", "~\n"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("a.yaml"), "schema: olm.package\nname: p\n").unwrap();
            std::fs::write(dir.path().join(file), text).unwrap();
            let e = DeclarativeConfig::load_dir(dir.path()).unwrap_err();
            let shown = e.to_string();
            assert!(
                shown.ends_with(": object without schema: object '' is missing root schema field"),
                "{file}: {shown}"
            );
            assert!(shown.contains(file), "{shown}");
            // A stream read for resolution skips them: catalogd serves nothing for them.
            let cfg = DeclarativeConfig::from_reader(text.as_bytes(), file).unwrap();
            assert!(cfg.others.is_empty() && cfg.packages.is_empty());
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty.yaml"), "").unwrap();
        assert!(DeclarativeConfig::load_dir(dir.path()).is_ok());
    }

    #[test]
    fn invalid_icon_base64_still_loads() {
        let cfg =
            load("schema: olm.package\nname: p\nicon: {base64data: '%%', mediatype: image/png}\n")
                .unwrap();
        assert!(cfg.packages[0].icon.as_ref().unwrap().data().is_err());
    }

    #[test]
    fn property_values_keep_number_literals() {
        let cfg = load(r#"{"schema":"olm.bundle","name":"b","properties":[{"type":"olm.maxOpenShiftVersion","value":4.10}]}"#).unwrap();
        assert_eq!(cfg.bundles[0].properties[0].value.get(), "4.10");
    }

    #[test]
    fn push_meta_accepts_served_blobs() {
        let mut cfg = DeclarativeConfig::default();
        walk::walk_metas_reader(
            &b"{\"defaultChannel\":\"a\",\"name\":\"p\",\"schema\":\"olm.package\"}\n{\"schema\":\"x\"}\n"[..],
            "served",
            |m| cfg.push_meta(m).map_err(WalkError::callback),
        )
        .unwrap();
        assert_eq!(cfg.packages.len(), 1);
        assert_eq!(cfg.others.len(), 1);
    }
}
