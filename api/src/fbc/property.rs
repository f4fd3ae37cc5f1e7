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

/// Go's `base64.StdEncoding.Decode`, which `encoding/json` uses for `[]byte` fields (an icon's
/// `base64data`, a bundle object's `data`): padding required, `\r` and `\n` skipped anywhere,
/// non-zero trailing bits accepted. The error is Go's text, `illegal base64 data at input byte
/// N`, with Go's offset N (counted in the text as written, line breaks included), so messages
/// match upstream's byte for byte. Checked against Go 1.26 on the cases of the tests below.
pub(crate) fn decode_go_base64(text: &str) -> Result<Vec<u8>, String> {
    let corrupt = |at: usize| format!("illegal base64 data at input byte {at}");
    let is_newline = |c: u8| c == b'\n' || c == b'\r';
    let src = text.as_bytes();
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    // One quantum (four characters, or fewer before padding) per round, as Go's `decodeQuantum`.
    while si < src.len() {
        let mut quantum = [0u8; 4];
        let mut len = 4;
        let mut trailing_garbage = None;
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(corrupt(si - j));
            }
            let c = src[si];
            si += 1;
            if let Some(v) = base64_value(c) {
                quantum[j] = v;
                j += 1;
                continue;
            }
            if is_newline(c) {
                continue;
            }
            if c != b'=' {
                return Err(corrupt(si - 1));
            }
            match j {
                0 | 1 => return Err(corrupt(si - 1)),
                2 => {
                    // `==` is expected; the first `=` is consumed.
                    while si < src.len() && is_newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(corrupt(src.len()));
                    }
                    if src[si] != b'=' {
                        return Err(corrupt(si - 1));
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && is_newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                trailing_garbage = Some(corrupt(si));
            }
            len = j;
            break;
        }
        let v = (u32::from(quantum[0]) << 18)
            | (u32::from(quantum[1]) << 12)
            | (u32::from(quantum[2]) << 6)
            | u32::from(quantum[3]);
        let bytes = v.to_be_bytes();
        out.extend_from_slice(&bytes[1..len]);
        if let Some(e) = trailing_garbage {
            return Err(e);
        }
    }
    Ok(out)
}

/// The value of a character of the standard base64 alphabet.
fn base64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
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

    // Expected results printed by Go 1.26 (`json.Unmarshal` into a `[]byte` field).
    #[test]
    fn base64_decoding_matches_go_including_error_offsets() {
        let cases: &[(&str, Result<&[u8], usize>)] = &[
            ("", Ok(b"")),
            ("aGk=", Ok(b"hi")),
            ("aGk", Err(0)),
            ("a b", Err(1)),
            ("aGk=\n", Ok(b"hi")),
            ("aG\nk=", Ok(b"hi")),
            ("aGk=x", Err(4)),
            ("aG==", Ok(b"h")),
            ("aG=", Err(3)),
            ("a===", Err(1)),
            ("=", Err(0)),
            ("aGVsbG8=\r\n", Ok(b"hello")),
            ("aGVs\nbG8h", Ok(b"hello!")),
            ("aGVsbG8h!", Err(8)),
            ("aGVsbG8haGk", Err(8)),
            ("aGVsbG8haG=", Err(11)),
            ("YQ==YQ==", Err(4)),
            ("YR==", Ok(b"a")),
            ("YQ\n=\n=", Ok(b"a")),
            ("YQ=\n", Err(4)),
        ];
        for (text, want) in cases {
            let got = decode_go_base64(text);
            match want {
                Ok(bytes) => assert_eq!(got.as_deref(), Ok(*bytes), "{text:?}"),
                Err(at) => assert_eq!(
                    got,
                    Err(format!("illegal base64 data at input byte {at}")),
                    "{text:?}"
                ),
            }
        }
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
