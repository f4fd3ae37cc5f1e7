//! The `olm.properties` CSV annotation: assembled as upstream does, and read back.
//!
//! Input: the CSV's `olm.properties` annotation (if any) and the bytes of
//! `metadata/properties.yaml` (if any). Output: the annotation's new value, byte for byte what
//! upstream stores, plus warnings; and [`parse_olm_properties`] to read the value back. No IO.
//!
//! Upstream (`source.go copyMetadataPropertiesToCSV`):
//!
//! | CSV annotation | properties.yaml | annotation afterwards |
//! |---|---|---|
//! | any | absent or empty file | unchanged, byte for byte |
//! | absent | present | `json.Marshal` of the file's properties (`null` when it lists none) |
//! | present | present | `json.Marshal` of the annotation's properties followed by the file's |
//!
//! `json.Marshal` writes `[{"type":…,"value":…}]` compactly with HTML escaping (`<` → `\u003c`);
//! a property's value keeps its bytes (key order, number literals) when it came from the
//! annotation, and is the YAML→JSON conversion of sigs.k8s.io/yaml when it came from the file
//! (keys sorted, floats in Go's shortest form: an unquoted `4.10` becomes `4.1`). That last step
//! silently changes version-like values, so each number whose text changes is reported as a
//! warning (the gating controller reads `olm.maxOpenShiftVersion` from this annotation).

use std::collections::BTreeMap;

use olm_api::fbc::gojson;
use olm_api::fbc::yaml::{DocumentSplitter, SplitError, document_to_value};
use serde_json::Value;
use serde_json::value::RawValue;

use super::BundleError;
use super::document::{Node, go_json_number_text};
use crate::gotype::encode::{compact_html, write_string_html};

/// The annotation key.
pub const OLM_PROPERTIES: &str = "olm.properties";

/// One property with its value as raw JSON text (compacted on output).
struct RawProperty {
    type_: String,
    /// Raw JSON text of the value; `None` when the property had no `value`.
    value: Option<String>,
}

/// The new annotation value, or `None` when upstream leaves the annotation alone; plus warnings.
pub fn assemble(
    csv_name: &str,
    annotations: &BTreeMap<String, String>,
    properties_yaml: Option<&[u8]>,
) -> Result<(Option<String>, Vec<String>), BundleError> {
    let mut all = Vec::new();
    if let Some(existing) = annotations.get(OLM_PROPERTIES) {
        all.extend(parse_annotation(existing).map_err(BundleError::CsvProperties)?);
    }
    let Some(yaml) = properties_yaml.filter(|b| !b.is_empty()) else {
        return Ok((None, Vec::new()));
    };
    let mut warnings = Vec::new();
    let from_file = parse_properties_yaml(yaml, csv_name, &mut warnings)
        .map_err(BundleError::PropertiesYaml)?;
    all.extend(from_file);
    Ok((Some(marshal(all.as_slice(), all.is_empty())), warnings))
}

/// `json.Marshal([]property.Property)`; a nil slice is `null`.
fn marshal(props: &[RawProperty], nil: bool) -> String {
    if nil {
        return "null".into();
    }
    let mut out = Vec::new();
    out.push(b'[');
    for (i, p) in props.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"type\":");
        write_string_html(&p.type_, &mut out);
        out.extend_from_slice(b",\"value\":");
        match &p.value {
            Some(raw) => out.extend_from_slice(compact_html(raw).as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
    }
    out.push(b']');
    String::from_utf8_lossy(&out).into_owned()
}

/// `json.Unmarshal(annotation, &[]property.Property)`.
fn parse_annotation(text: &str) -> Result<Vec<RawProperty>, String> {
    // Go's json.Unmarshal validates the whole text first; gojson gives Go's syntax errors.
    gojson::parse(text.as_bytes()).map_err(|e| e.message)?;
    let items: Option<Vec<Option<BTreeMap<String, &RawValue>>>> = serde_json::from_str(text)
        .map_err(|_| {
            format!(
                "json: cannot unmarshal {} into Go value of type []property.Property",
                json_kind_of_text(text)
            )
        })?;
    let mut out = Vec::new();
    for item in items.unwrap_or_default() {
        let Some(fields) = item else {
            out.push(RawProperty {
                type_: String::new(),
                value: None,
            });
            continue;
        };
        let field = |name: &str| {
            fields
                .get(name)
                .or_else(|| {
                    fields
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v)
                })
                .copied()
        };
        let type_ = match field("type") {
            None => String::new(),
            Some(raw) => match serde_json::from_str::<Option<String>>(raw.get()) {
                Ok(s) => s.unwrap_or_default(),
                Err(_) => {
                    return Err(format!(
                        "json: cannot unmarshal {} into Go struct field Property.type of type string",
                        json_kind_of_text(raw.get())
                    ));
                }
            },
        };
        out.push(RawProperty {
            type_,
            value: field("value").map(|raw| raw.get().to_owned()),
        });
    }
    Ok(out)
}

fn json_kind_of_text(text: &str) -> &'static str {
    match text.trim_start().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// `yaml.Unmarshal(properties.yaml, &struct{Properties []property.Property})`.
fn parse_properties_yaml(
    yaml: &[u8],
    csv_name: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<RawProperty>, String> {
    // sigs.k8s.io/yaml reads the first document only.
    let mut splitter = DocumentSplitter::new(yaml, 1);
    let doc = match splitter.next_document() {
        Ok(Some(doc)) => doc,
        Ok(None) => return Ok(Vec::new()),
        Err(SplitError::Io(e)) => return Err(e.to_string()),
        Err(SplitError::Syntax(e)) => {
            return Err(format!(
                "error converting YAML to JSON: {}",
                e.sigs_yaml_text()
            ));
        }
    };
    let value = document_to_value(&doc)
        .map_err(|e| format!("error converting YAML to JSON: {}", e.sigs_yaml_text()))?;
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let gojson::Value::Object(top) = value else {
        return Err(format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type source.RegistryV1Properties",
            go_kind(&value)
        ));
    };
    let props = top
        .iter()
        .find(|(k, _)| *k == "properties")
        .or_else(|| {
            top.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("properties"))
        })
        .map(|(_, v)| v.clone());
    let items = match props {
        None | Some(gojson::Value::Null) => return Ok(Vec::new()),
        Some(gojson::Value::Array(items)) => items,
        Some(other) => {
            return Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field RegistryV1Properties.properties of type []property.Property",
                go_kind(&other)
            ));
        }
    };
    let mut out = Vec::new();
    for item in items {
        let fields = match item {
            gojson::Value::Null => {
                out.push(RawProperty {
                    type_: String::new(),
                    value: None,
                });
                continue;
            }
            gojson::Value::Object(fields) => fields,
            other => {
                return Err(format!(
                    "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field RegistryV1Properties.properties of type property.Property",
                    go_kind(&other)
                ));
            }
        };
        let get = |name: &str| {
            fields
                .iter()
                .find(|(k, _)| *k == name)
                .or_else(|| fields.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
                .map(|(_, v)| v.clone())
        };
        let type_ = match get("type") {
            None | Some(gojson::Value::Null) => String::new(),
            Some(gojson::Value::String(s)) => s,
            Some(other) => {
                return Err(format!(
                    "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field Property.properties.type of type string",
                    go_kind(&other)
                ));
            }
        };
        let value = get("value");
        if let Some(v) = &value {
            let mut changed = Vec::new();
            changed_numbers(v, &mut changed);
            for (written, read) in changed {
                warnings.push(format!(
                    "bundle {csv_name}: metadata/properties.yaml property {type_:?} has the unquoted number {written}, which upstream stores as {read}; quote it to keep {written:?}"
                ));
            }
        }
        // The value stays raw JSON upstream (`json.RawMessage`): the text sigs.k8s.io/yaml wrote.
        let value = value.map(|v| Node::from_yaml(v).marshal());
        out.push(RawProperty { type_, value });
    }
    Ok(out)
}

fn go_kind(v: &gojson::Value) -> &'static str {
    match v {
        gojson::Value::Null => "null",
        gojson::Value::Bool(_) => "bool",
        gojson::Value::Number(_) => "number",
        gojson::Value::String(_) => "string",
        gojson::Value::Array(_) => "array",
        gojson::Value::Object(_) => "object",
    }
}

/// Numbers whose YAML text differs from the JSON Go writes for them (`4.10` → `4.1`).
fn changed_numbers(v: &gojson::Value, out: &mut Vec<(String, String)>) {
    match v {
        gojson::Value::Number(n) => {
            let written = go_json_number_text(n);
            if written != n.literal() {
                out.push((n.literal().to_owned(), written));
            }
        }
        gojson::Value::Array(items) => items.iter().for_each(|i| changed_numbers(i, out)),
        gojson::Value::Object(obj) => obj.iter().for_each(|(_, i)| changed_numbers(i, out)),
        _ => {}
    }
}

/// One property read back from an `olm.properties` value.
#[derive(Clone, Debug, PartialEq)]
pub struct Property {
    pub type_: String,
    pub value: Value,
}

/// Reads an `olm.properties` annotation value (`null` reads as no properties).
pub fn parse_olm_properties(text: &str) -> Result<Vec<Property>, String> {
    let raw = parse_annotation(text)?;
    raw.into_iter()
        .map(|p| {
            let value = match p.value {
                Some(text) => serde_json::from_str(&text).map_err(|e| e.to_string())?,
                None => Value::Null,
            };
            Ok(Property {
                type_: p.type_,
                value,
            })
        })
        .collect()
}

/// The `olm.maxOpenShiftVersion` value of a properties list, as the text the gating controller
/// compares (a JSON string as is, a JSON number in Go's formatting).
pub fn max_openshift_version(props: &[Property]) -> Option<String> {
    props
        .iter()
        .rev()
        .find(|p| p.type_ == "olm.maxOpenShiftVersion")
        .and_then(|p| match &p.value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(props: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(OLM_PROPERTIES.to_owned(), props.to_owned())])
    }

    #[test]
    fn without_properties_yaml_the_annotation_is_untouched() {
        let (value, warnings) =
            assemble("c", &annotations("[ {\"type\": \"a\"} ]"), None).expect("assembles");
        assert_eq!(value, None);
        assert!(warnings.is_empty());
    }

    #[test]
    fn annotation_properties_keep_their_bytes_and_file_properties_follow() {
        let yaml = b"properties:\n- type: olm.maxOpenShiftVersion\n  value: 4.10\n- type: x\n  value: {b: 1.50, a: '<'}\n";
        let (value, warnings) = assemble(
            "csv.v1",
            &annotations(r#"[{"type":"p","value":{"z":1.0,"a":"<&>"}}]"#),
            Some(yaml),
        )
        .expect("assembles");
        assert_eq!(
            value.as_deref(),
            Some(
                r#"[{"type":"p","value":{"z":1.0,"a":"\u003c\u0026\u003e"}},{"type":"olm.maxOpenShiftVersion","value":4.1},{"type":"x","value":{"a":"\u003c","b":1.5}}]"#
            )
        );
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("csv.v1"), "{warnings:?}");
        assert!(
            warnings[0].contains("olm.maxOpenShiftVersion"),
            "{warnings:?}"
        );
        assert!(warnings[0].contains("4.10"), "{warnings:?}");
    }

    #[test]
    fn an_empty_property_list_marshals_as_null() {
        let (value, _) = assemble("c", &BTreeMap::new(), Some(b"properties: []\n")).expect("ok");
        assert_eq!(value.as_deref(), Some("null"));
    }

    #[test]
    fn bad_annotation_json_is_reported_with_upstreams_prefix() {
        let err = assemble("c", &annotations("[{"), Some(b"properties: []\n")).expect_err("bad");
        assert!(
            err.to_string()
                .starts_with("failed to unmarshal csv.metadata.annotations['olm.properties']: "),
            "{err}"
        );
    }

    #[test]
    fn properties_read_back_including_the_max_openshift_version() {
        let props = parse_olm_properties(
            r#"[{"type":"olm.maxOpenShiftVersion","value":4.1},{"type":"b","value":"x"}]"#,
        )
        .expect("parses");
        assert_eq!(max_openshift_version(&props).as_deref(), Some("4.1"));
        assert_eq!(parse_olm_properties("null").expect("null"), Vec::new());
    }
}
