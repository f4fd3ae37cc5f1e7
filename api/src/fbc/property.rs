//! Bundle, package and channel properties: the raw `{type, value}` pair and typed readers.
//!
//! Input: a property as loaded from a catalog. Output: typed values parsed on demand. No IO.
//!
//! Values are kept as raw JSON so that large ones (`olm.csv.metadata`, `olm.bundle.object`) cost no
//! more than their text, and so that the literal of a number survives (`olm.maxOpenShiftVersion:
//! 4.10` reads as `4.10`, not Go's `4.1`). Typed readers follow Go's `encoding/json` for the parts
//! that matter: unknown fields are ignored and `null` leaves a field at its zero value. Field names
//! must match exactly (Go would also accept other letter cases inside property values).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

pub const TYPE_PACKAGE: &str = "olm.package";
pub const TYPE_PACKAGE_REQUIRED: &str = "olm.package.required";
pub const TYPE_GVK: &str = "olm.gvk";
pub const TYPE_GVK_REQUIRED: &str = "olm.gvk.required";
pub const TYPE_BUNDLE_OBJECT: &str = "olm.bundle.object";
pub const TYPE_CSV_METADATA: &str = "olm.csv.metadata";
pub const TYPE_CONSTRAINT: &str = "olm.constraint";
pub const TYPE_MAX_OPENSHIFT_VERSION: &str = "olm.maxOpenShiftVersion";
/// Legacy channel membership property (early FBC alpha); still parsed by upstream.
pub const TYPE_CHANNEL: &str = "olm.channel";

/// One property: a type name and a raw JSON value.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Property {
    #[serde(rename = "type")]
    pub type_: String,
    /// The value as JSON: keys sorted and strings escaped as catalogd serves them, numbers as
    /// written in the source (a missing value reads as `null`).
    pub value: Box<RawValue>,
}

impl PartialEq for Property {
    fn eq(&self, other: &Self) -> bool {
        self.type_ == other.type_ && self.value.get() == other.value.get()
    }
}

/// A property value that does not parse as its type requires.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to parse property of type {type_:?}: {message}")]
pub struct PropertyError {
    pub type_: String,
    pub message: String,
}

/// `olm.package`: the bundle's package and version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageProperty {
    #[serde(default, deserialize_with = "nullable")]
    pub package_name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    /// Optional release (empty when absent).
    #[serde(default, deserialize_with = "nullable")]
    pub release: String,
}

/// `olm.gvk` and `olm.gvk.required`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Gvk {
    #[serde(default, deserialize_with = "nullable")]
    pub group: String,
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
}

/// `olm.package.required`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRequired {
    #[serde(default, deserialize_with = "nullable")]
    pub package_name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub version_range: String,
}

/// `olm.bundle.object`: one manifest of the bundle, base64-decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BundleObject {
    pub data: Vec<u8>,
}

/// `olm.constraint` (operator-framework/api constraints).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Constraint {
    #[serde(default, deserialize_with = "nullable")]
    pub failure_message: String,
    #[serde(default)]
    pub cel: Option<CelConstraint>,
    #[serde(default)]
    pub gvk: Option<Gvk>,
    #[serde(default)]
    pub package: Option<PackageRequired>,
    #[serde(default)]
    pub all: Option<CompoundConstraint>,
    #[serde(default)]
    pub any: Option<CompoundConstraint>,
    #[serde(default)]
    pub not: Option<CompoundConstraint>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct CelConstraint {
    #[serde(default, deserialize_with = "nullable")]
    pub rule: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct CompoundConstraint {
    #[serde(default, deserialize_with = "nullable")]
    pub constraints: Vec<Constraint>,
}

/// `olm.csv.metadata`: the CSV fields a catalog keeps instead of the whole CSV.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvMetadata {
    #[serde(default, deserialize_with = "nullable")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub api_service_definitions: Option<serde_json::Value>,
    #[serde(default)]
    pub crd_descriptions: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
    #[serde(default, deserialize_with = "nullable")]
    pub display_name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub install_modes: Vec<InstallMode>,
    #[serde(default, deserialize_with = "nullable")]
    pub keywords: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "nullable")]
    pub links: Vec<AppLink>,
    #[serde(default, deserialize_with = "nullable")]
    pub maintainers: Vec<Maintainer>,
    #[serde(default, deserialize_with = "nullable")]
    pub maturity: String,
    #[serde(default, deserialize_with = "nullable")]
    pub min_kube_version: String,
    #[serde(default, rename = "nativeAPIs", deserialize_with = "nullable")]
    pub native_apis: Vec<Gvk>,
    #[serde(default, deserialize_with = "nullable")]
    pub provider: AppLink,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct InstallMode {
    #[serde(rename = "type", default, deserialize_with = "nullable")]
    pub type_: String,
    #[serde(default, deserialize_with = "nullable")]
    pub supported: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct AppLink {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Maintainer {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub email: String,
}

/// The raw value of `olm.maxOpenShiftVersion`, as OpenShift's gating logic needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaxOpenShiftVersion<'a> {
    /// A JSON number, with its literal text (`4.10` stays `4.10`).
    Number(&'a str),
    /// A JSON string, unquoted.
    String(String),
    /// Any other JSON value, as raw text (gating reports it as an invalid type).
    Other(&'a str),
}

/// Go decodes `null` into a field by leaving it at its zero value.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Go's `base64.StdEncoding` as used for `[]byte` JSON fields: padding required, line breaks
/// ignored, non-zero trailing bits accepted.
pub(crate) fn decode_go_base64(text: &str) -> Result<Vec<u8>, String> {
    const ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
    );
    let cleaned: Vec<u8> = text
        .bytes()
        .filter(|b| *b != b'\r' && *b != b'\n')
        .collect();
    ENGINE
        .decode(&cleaned)
        .map_err(|e| format!("illegal base64 data: {e}"))
}

impl Property {
    /// A property from a type and JSON text (which must be valid JSON).
    pub fn new(type_: impl Into<String>, value_json: &str) -> Result<Property, serde_json::Error> {
        Ok(Property {
            type_: type_.into(),
            value: RawValue::from_string(value_json.to_owned())?,
        })
    }

    fn parse_as<T: DeserializeOwned>(&self, type_: &str) -> Option<Result<T, PropertyError>> {
        (self.type_ == type_).then(|| {
            serde_json::from_str(self.value.get()).map_err(|e| PropertyError {
                type_: self.type_.clone(),
                message: e.to_string(),
            })
        })
    }

    /// `olm.package`; `None` for other types.
    pub fn package(&self) -> Option<Result<PackageProperty, PropertyError>> {
        self.parse_as(TYPE_PACKAGE)
    }

    /// `olm.gvk`; `None` for other types.
    pub fn gvk(&self) -> Option<Result<Gvk, PropertyError>> {
        self.parse_as(TYPE_GVK)
    }

    /// `olm.gvk.required`; `None` for other types.
    pub fn gvk_required(&self) -> Option<Result<Gvk, PropertyError>> {
        self.parse_as(TYPE_GVK_REQUIRED)
    }

    /// `olm.package.required`; `None` for other types.
    pub fn package_required(&self) -> Option<Result<PackageRequired, PropertyError>> {
        self.parse_as(TYPE_PACKAGE_REQUIRED)
    }

    /// `olm.constraint`; `None` for other types.
    pub fn constraint(&self) -> Option<Result<Constraint, PropertyError>> {
        self.parse_as(TYPE_CONSTRAINT)
    }

    /// `olm.csv.metadata`; `None` for other types.
    pub fn csv_metadata(&self) -> Option<Result<CsvMetadata, PropertyError>> {
        self.parse_as(TYPE_CSV_METADATA)
    }

    /// `olm.bundle.object` with its data base64-decoded; `None` for other types.
    pub fn bundle_object(&self) -> Option<Result<BundleObject, PropertyError>> {
        #[derive(Deserialize)]
        struct Wire {
            #[serde(default, deserialize_with = "nullable")]
            data: String,
        }
        let wire: Result<Wire, PropertyError> = self.parse_as(TYPE_BUNDLE_OBJECT)?;
        Some(wire.and_then(|w| {
            decode_go_base64(&w.data)
                .map(|data| BundleObject { data })
                .map_err(|message| PropertyError {
                    type_: self.type_.clone(),
                    message,
                })
        }))
    }

    /// `olm.maxOpenShiftVersion` with the raw text of its value; `None` for other types.
    pub fn max_openshift_version(&self) -> Option<MaxOpenShiftVersion<'_>> {
        if self.type_ != TYPE_MAX_OPENSHIFT_VERSION {
            return None;
        }
        let raw = self.value.get().trim();
        Some(match raw.as_bytes().first() {
            Some(b'-' | b'0'..=b'9') => MaxOpenShiftVersion::Number(raw),
            Some(b'"') => match serde_json::from_str::<String>(raw) {
                Ok(s) => MaxOpenShiftVersion::String(s),
                Err(_) => MaxOpenShiftVersion::Other(raw),
            },
            _ => MaxOpenShiftVersion::Other(raw),
        })
    }

    /// Checks that the value parses as its type requires (unknown types: any JSON is fine).
    /// This is what `opm validate` checks per property.
    pub fn check(&self) -> Result<(), PropertyError> {
        let r = match self.type_.as_str() {
            TYPE_PACKAGE => self.package().map(|r| r.map(drop)),
            TYPE_PACKAGE_REQUIRED => self.package_required().map(|r| r.map(drop)),
            TYPE_GVK => self.gvk().map(|r| r.map(drop)),
            TYPE_GVK_REQUIRED => self.gvk_required().map(|r| r.map(drop)),
            TYPE_BUNDLE_OBJECT => self.bundle_object().map(|r| r.map(drop)),
            TYPE_CSV_METADATA => self.csv_metadata().map(|r| r.map(drop)),
            TYPE_CHANNEL => Some(self.legacy_channel().map(drop)),
            _ => None,
        };
        r.unwrap_or(Ok(()))
    }

    /// The legacy `olm.channel` property's `channelName`.
    fn legacy_channel(&self) -> Result<String, PropertyError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            #[serde(default, deserialize_with = "nullable")]
            channel_name: String,
        }
        serde_json::from_str::<Wire>(self.value.get())
            .map(|w| w.channel_name)
            .map_err(|e| PropertyError {
                type_: self.type_.clone(),
                message: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(t: &str, v: &str) -> Property {
        Property::new(t, v).unwrap()
    }

    #[test]
    fn package_property_reads_name_version_and_optional_release() {
        let p = prop(
            TYPE_PACKAGE,
            r#"{"packageName":"etcd","version":"0.9.4","release":null}"#,
        );
        assert_eq!(
            p.package().unwrap().unwrap(),
            PackageProperty {
                package_name: "etcd".into(),
                version: "0.9.4".into(),
                release: String::new()
            }
        );
        assert!(p.gvk().is_none());
    }

    #[test]
    fn a_number_where_a_string_belongs_is_a_parse_error() {
        let p = prop(TYPE_PACKAGE, r#"{"packageName":"etcd","version":1}"#);
        let e = p.package().unwrap().unwrap_err();
        assert!(e.to_string().contains("olm.package"), "{e}");
        assert!(p.check().is_err());
    }

    #[test]
    fn max_openshift_version_keeps_the_literal() {
        assert_eq!(
            prop(TYPE_MAX_OPENSHIFT_VERSION, "4.10").max_openshift_version(),
            Some(MaxOpenShiftVersion::Number("4.10"))
        );
        assert_eq!(
            prop(TYPE_MAX_OPENSHIFT_VERSION, r#""4.10""#).max_openshift_version(),
            Some(MaxOpenShiftVersion::String("4.10".into()))
        );
        assert_eq!(
            prop(TYPE_MAX_OPENSHIFT_VERSION, "null").max_openshift_version(),
            Some(MaxOpenShiftVersion::Other("null"))
        );
    }

    #[test]
    fn bundle_object_data_is_base64_decoded_like_go() {
        let p = prop(TYPE_BUNDLE_OBJECT, r#"{"data":"aGVs\nbG8="}"#);
        assert_eq!(p.bundle_object().unwrap().unwrap().data, b"hello");
        let bad = prop(TYPE_BUNDLE_OBJECT, r#"{"data":"%%%"}"#);
        assert!(bad.bundle_object().unwrap().is_err());
    }

    #[test]
    fn constraint_and_csv_metadata_parse_their_known_fields() {
        let c = prop(
            TYPE_CONSTRAINT,
            r#"{"failureMessage":"needs x","all":{"constraints":[{"gvk":{"group":"g","kind":"K","version":"v1"}},{"package":{"packageName":"p","versionRange":">=1.0.0"}}]}}"#,
        )
        .constraint()
        .unwrap()
        .unwrap();
        assert_eq!(c.failure_message, "needs x");
        let all = c.all.unwrap().constraints;
        assert_eq!(all[0].gvk.as_ref().unwrap().kind, "K");
        assert_eq!(all[1].package.as_ref().unwrap().version_range, ">=1.0.0");

        let m = prop(
            TYPE_CSV_METADATA,
            r#"{"annotations":{"a":"b"},"displayName":"X","installModes":[{"type":"OwnNamespace","supported":true}],"nativeAPIs":[{"group":"","kind":"Pod","version":"v1"}],"unknown":1}"#,
        )
        .csv_metadata()
        .unwrap()
        .unwrap();
        assert_eq!(m.display_name, "X");
        assert!(m.install_modes[0].supported);
        assert_eq!(m.native_apis[0].kind, "Pod");
    }

    #[test]
    fn unknown_property_types_accept_any_json() {
        assert!(prop("example.com/custom", "[1,2]").check().is_ok());
    }
}
