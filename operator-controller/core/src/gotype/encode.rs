//! Go `encoding/json` output bytes, with HTML escaping on (the default of `json.Marshal` and
//! `json.NewEncoder`).
//!
//! Input: strings, raw JSON text, values. Output: bytes identical to Go's. No IO.
//!
//! Two upstream byte contracts depend on this: the `olm.properties` annotation (re-marshalled
//! properties) and the hash inside generated RBAC names (the JSON of a permission).

use serde_json::Value;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a JSON string the way Go's encoder writes it with HTML escaping.
pub fn write_string_html(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let b = c as u8;
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
            '\u{2028}' => out.extend_from_slice(b"\\u2028"),
            '\u{2029}' => out.extend_from_slice(b"\\u2029"),
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// `json.Compact` with HTML escaping, as `json.Marshal` applies it to a `json.RawMessage`:
/// whitespace between tokens removed, `<`, `>`, `&`, U+2028 and U+2029 inside strings escaped,
/// everything else (key order, number literals, existing escapes) kept. `raw` must be valid JSON.
pub fn compact_html(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in raw.chars() {
        if in_string {
            if escaped {
                escaped = false;
                out.push(c);
                continue;
            }
            match c {
                '\\' => {
                    escaped = true;
                    out.push(c);
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                c => out.push(c),
            }
        } else {
            match c {
                ' ' | '\t' | '\n' | '\r' => {}
                '"' => {
                    in_string = true;
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }
    out
}

/// Appends `v` as `json.Marshal` of the equivalent Go `map[string]any` value writes it (keys
/// sorted, HTML escaping on, numbers as Go formats float64 values).
pub fn write_value_html(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.extend_from_slice(i.to_string().as_bytes());
            } else if let Some(u) = n.as_u64() {
                out.extend_from_slice(u.to_string().as_bytes());
            } else {
                olm_api::fbc::gojson::write_float(n.as_f64().unwrap_or(0.0), out);
            }
        }
        Value::String(s) => write_string_html(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value_html(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string_html(k, out);
                out.push(b':');
                write_value_html(item, out);
            }
            out.push(b'}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_html_and_line_separators_as_go_does() {
        let mut out = Vec::new();
        write_string_html("a<b>&\"\\\n\u{1}\u{2028}é", &mut out);
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            r#""a\u003cb\u003e\u0026\"\\\n\u0001\u2028é""#
        );
    }

    #[test]
    fn compaction_keeps_order_literals_and_escapes() {
        assert_eq!(
            compact_html("{ \"b\" : 1.50,\n \"a\": \"x < y \\\" \\u0041\" }"),
            r#"{"b":1.50,"a":"x \u003c y \" \u0041"}"#
        );
    }
}
