//! The `olm.properties` annotation decoded as upstream decodes it: Go's `json.Unmarshal` into
//! `[]property.Property{Type string; Value json.RawMessage}`.
//!
//! Input: the annotation text. Output: each property's type and the raw JSON text of its value,
//! or Go's error text. No IO.
//!
//! Go's decoding rules that matter here, reproduced:
//!
//! | input                                   | result                                              |
//! |-----------------------------------------|-----------------------------------------------------|
//! | not JSON (`""`, `abcd`)                 | Go's syntax error (`unexpected end of JSON input`)  |
//! | `null`                                  | no properties                                       |
//! | not an array                            | `json: cannot unmarshal object into Go value of type []property.Property` |
//! | an element not an object (`null`: empty property) | `json: cannot unmarshal string into Go value of type property.Property` |
//! | `type` not a string (`null`: empty)     | `json: cannot unmarshal number into Go struct field Property.type of type string` |
//! | keys `Type`, `VALUE`, …                 | matched case-insensitively; the last occurrence wins |
//! | `value` absent or `null`                | raw text `""` / `null`                              |

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// One property: its type and the raw JSON text of its value (empty when absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawProperty {
    pub type_: String,
    pub value: String,
}

/// Decodes `olm.properties` like Go's `json.Unmarshal` into `[]property.Property`; the error is
/// Go's error text.
pub fn decode_properties(text: &str) -> Result<Vec<RawProperty>, String> {
    // Go checks the syntax of the whole input before decoding anything (values stay raw, so a
    // number too large for float64 is fine); the error text is Go's.
    let top: Box<RawValue> = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Err(match olm_api::fbc::gojson::parse(text.as_bytes()) {
                Err(go) => go.message,
                Ok(_) => e.to_string(),
            });
        }
    };
    let top = top.get().trim();
    if top == "null" {
        return Ok(Vec::new());
    }
    if !top.starts_with('[') {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type []property.Property",
            go_json_kind(top)
        ));
    }
    let elements: Vec<Box<RawValue>> = serde_json::from_str(top).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(elements.len());
    let mut first_type_error: Option<String> = None;
    for element in &elements {
        let element = element.get().trim();
        if element == "null" {
            out.push(RawProperty {
                type_: String::new(),
                value: String::new(),
            });
            continue;
        }
        if !element.starts_with('{') {
            first_type_error.get_or_insert_with(|| {
                format!(
                    "json: cannot unmarshal {} into Go value of type property.Property",
                    go_json_kind(element)
                )
            });
            continue;
        }
        let Entries(entries) = serde_json::from_str(element).map_err(|e| e.to_string())?;
        let mut property = RawProperty {
            type_: String::new(),
            value: String::new(),
        };
        for (key, raw) in entries {
            let raw = raw.get().trim();
            if key.eq_ignore_ascii_case("type") {
                if raw == "null" {
                    // Go leaves the field as it was.
                    continue;
                }
                match serde_json::from_str::<String>(raw) {
                    Ok(s) => property.type_ = s,
                    Err(_) => {
                        // Go keeps decoding and reports the first type error at the end.
                        first_type_error.get_or_insert_with(|| {
                            format!(
                                "json: cannot unmarshal {} into Go struct field Property.type of type string",
                                go_json_kind(raw)
                            )
                        });
                    }
                }
            } else if key.eq_ignore_ascii_case("value") {
                property.value = raw.to_string();
            }
        }
        out.push(property);
    }
    match first_type_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The word Go's `UnmarshalTypeError` uses for a JSON value.
fn go_json_kind(raw: &str) -> &'static str {
    match raw.as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        _ => "number",
    }
}

/// An object's entries in document order, keeping duplicates (Go lets the last one win).
struct Entries(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Entries, A::Error> {
                Err(de::Error::custom("expected a JSON object"))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> Vec<(String, String)> {
        decode_properties(text)
            .unwrap()
            .into_iter()
            .map(|p| (p.type_, p.value))
            .collect()
    }

    #[test]
    fn raw_values_keep_their_text() {
        assert_eq!(
            props(
                r#"[{"type":"olm.maxOpenShiftVersion","value":4.10},{"type":"x","value":"4.18"}]"#
            ),
            vec![
                ("olm.maxOpenShiftVersion".into(), "4.10".into()),
                ("x".into(), "\"4.18\"".into())
            ]
        );
    }

    #[test]
    fn keys_match_case_insensitively_and_the_last_one_wins() {
        assert_eq!(
            props(r#"[{"Type":"a","VALUE":1,"type":"b"}]"#),
            vec![("b".into(), "1".into())]
        );
    }

    #[test]
    fn go_error_texts() {
        let cases = [
            ("", "unexpected end of JSON input"),
            (
                "abcd",
                "invalid character 'a' looking for beginning of value",
            ),
            (
                "{}",
                "json: cannot unmarshal object into Go value of type []property.Property",
            ),
            (
                r#"["x"]"#,
                "json: cannot unmarshal string into Go value of type property.Property",
            ),
            (
                r#"[{"type":1,"value":1}]"#,
                "json: cannot unmarshal number into Go struct field Property.type of type string",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(decode_properties(input).unwrap_err(), want, "{input:?}");
        }
    }

    #[test]
    fn null_is_no_properties_and_null_fields_are_empty() {
        assert!(props("null").is_empty());
        assert_eq!(
            props(r#"[null,{"type":null,"value":null}]"#),
            vec![
                (String::new(), String::new()),
                (String::new(), "null".into())
            ]
        );
    }
}
