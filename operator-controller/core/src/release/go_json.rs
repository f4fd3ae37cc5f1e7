//! JSON text exactly as Go's `encoding/json` writes it with its default settings (`json.Marshal`,
//! `json.NewEncoder`): the form Helm uses for release records and apimachinery for manifests.
//!
//! Input: any `Serialize` value (struct fields in declaration order, maps with sorted keys) or a
//! `serde_json::Value`. Output: bytes. No IO.
//!
//! | input                         | Go's output (and ours)                      |
//! |-------------------------------|---------------------------------------------|
//! | `<` `>` `&`                   | `\u003c` `\u003e` `\u0026` (HTML escaping on) |
//! | U+2028, U+2029                | `\u2028`, `\u2029`                          |
//! | `\b \f \n \r \t`              | short escapes; other controls `\u00XX`      |
//! | floats                        | shortest digits, exponent outside [1e-6, 1e21) (`1e+21`) |
//! | map keys                      | sorted by bytes                             |
//!
//! `serde_json` differs from Go only in string escaping and float formatting, so this is a
//! `serde_json` formatter that changes those two.

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;

/// A `serde_json` formatter producing Go's compact output (see the module table).
#[derive(Clone, Copy, Debug, Default)]
pub struct GoFormatter;

impl Formatter for GoFormatter {
    fn write_string_fragment<W>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        let bytes = fragment.as_bytes();
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let escape: Option<&[u8]> = match bytes[i] {
                b'<' => Some(b"\\u003c"),
                b'>' => Some(b"\\u003e"),
                b'&' => Some(b"\\u0026"),
                0xE2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xA8) => {
                    Some(b"\\u2028")
                }
                0xE2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xA9) => {
                    Some(b"\\u2029")
                }
                _ => None,
            };
            match escape {
                Some(e) => {
                    writer.write_all(&bytes[start..i])?;
                    writer.write_all(e)?;
                    i += if bytes[i] == 0xE2 { 3 } else { 1 };
                    start = i;
                }
                None => i += 1,
            }
        }
        writer.write_all(&bytes[start..])
    }

    fn write_f64<W>(&mut self, writer: &mut W, value: f64) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        let mut out = Vec::new();
        olm_api::fbc::gojson::write_float(value, &mut out);
        writer.write_all(&out)
    }

    fn write_f32<W>(&mut self, writer: &mut W, value: f32) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        self.write_f64(writer, f64::from(value))
    }
}

/// `json.Marshal(v)`: Go's compact text of `v`.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoFormatter);
    value.serialize(&mut ser)?;
    Ok(out)
}

/// `json.NewEncoder(w).Encode(v)`: [`to_vec`] plus the newline the encoder appends.
pub fn to_vec_line<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = to_vec(value)?;
    out.push(b'\n');
    Ok(out)
}

/// Go's text of a decoded JSON value (`map[string]interface{}` semantics for key order: keys
/// sorted by bytes at every level, whatever order the map holds them in).
pub fn value_to_vec(value: &serde_json::Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(k.clone()), out);
                out.push(b':');
                write_value(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(v, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &serde_json::Value, out: &mut Vec<u8>) {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, GoFormatter);
    // Scalars (strings, numbers from JSON, booleans, null) always serialize.
    let _ = serde::Serialize::serialize(value, &mut ser);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_and_numbers_as_go_writes_them() {
        let v = json!({"b": "<a href=\"x\">&\u{2028}\u{2029}\u{7f}\u{1}\n\u{8}", "a": [1.5, 1e21, 1e-7, 100.0, -0.0, 12]});
        assert_eq!(
            String::from_utf8(to_vec(&v).unwrap()).unwrap(),
            r#"{"a":[1.5,1e+21,1e-7,100,-0,12],"b":"\u003ca href=\"x\"\u003e\u0026\u2028\u2029\u007f\u0001\n\b"}"#
                .replace("\\u007f", "\u{7f}")
        );
    }
}
