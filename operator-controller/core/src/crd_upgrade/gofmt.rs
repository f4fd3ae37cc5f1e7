//! Go's text formatting where upstream's messages depend on it: `strconv.Quote` (`%q`), `%v` of
//! floats, `unicode.IsPrint`, and `encoding/json`'s `Marshal` of an unstructured value (the bytes
//! a CRD's `default`, `enum` and `example` carry after upstream decodes a manifest).
//!
//! Input: strings, numbers, `serde_json` values. Output: strings/bytes. No IO.
//!
//! Upstream's messages embed these formats byte for byte (`default value changed : "\"x\"" -> …`,
//! `maximum decreased : 4.294967295e+09 -> …`), so they are reproduced here rather than
//! approximated with Rust's own formatting, which differs for floats (`1e6` vs `1e+06`) and for
//! quoting (`\u{a0}` vs `\u00a0`).

use icu_properties::CodePointMapData;
use icu_properties::props::{GeneralCategory, GeneralCategoryGroup};

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
pub fn is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    let gc = CodePointMapData::<GeneralCategory>::new().get(c);
    GeneralCategoryGroup::Letter.contains(gc)
        || GeneralCategoryGroup::Mark.contains(gc)
        || GeneralCategoryGroup::Number.contains(gc)
        || GeneralCategoryGroup::Punctuation.contains(gc)
        || GeneralCategoryGroup::Symbol.contains(gc)
}

/// Go's `unicode.IsSpace`.
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    ) || (!c.is_ascii() && c != '\u{85}' && c != '\u{a0}' && {
        let gc = CodePointMapData::<GeneralCategory>::new().get(c);
        GeneralCategoryGroup::Separator.contains(gc)
    })
}

/// Go's `strconv.Quote` (what `%q` prints for a string).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_quoted_char(&mut out, c, '"');
    }
    out.push('"');
    out
}

fn push_quoted_char(out: &mut String, c: char, quote: char) {
    if c == quote || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// Go's `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): shortest digits, exponent
/// form when the decimal exponent is below -4 or at least 6 (`1e+06`, `4.294967295e+09`).
pub fn format_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    // Rust's `{:e}` prints the shortest round-tripping digits, as Go's shortest mode does.
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = if digits.is_empty() {
        "0".to_owned()
    } else {
        digits
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let abs = exp.unsigned_abs();
        if abs < 10 {
            out.push('0');
        }
        out.push_str(&abs.to_string());
        return out;
    }
    // Fixed notation with exactly the significant digits.
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        out.push_str("0.");
        for _ in 0..(-point) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let point = point as usize;
        if digits.len() <= point {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
    out
}

/// `encoding/json.Marshal` of a value decoded the way apimachinery decodes unstructured JSON
/// (integers that fit in int64 stay integers, every other number is a float64), with Go's
/// defaults: object keys sorted, HTML characters escaped.
pub fn go_json_marshal(value: &serde_json::Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_go_json(value, &mut out);
    out
}

fn write_go_json(value: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.extend_from_slice(i.to_string().as_bytes());
            } else {
                olm_api::fbc::gojson::write_float(n.as_f64().unwrap_or(0.0), out);
            }
        }
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_go_json(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_go_json_string(k, out);
                out.push(b':');
                if let Some(v) = map.get(k) {
                    write_go_json(v, out);
                }
            }
            out.push(b'}');
        }
    }
}

/// A JSON string as `encoding/json` writes it with HTML escaping on (its default).
pub fn write_go_json_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
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
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let v = c as u32;
                out.extend_from_slice(b"\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(HEX[((v >> shift) & 0xf) as usize]);
                }
            }
            c if (c as u32) < 0x20 => {
                let v = c as u32;
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(v >> 4) as usize]);
                out.push(HEX[(v & 0xf) as usize]);
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Go's `%v` of a `[]byte` (`[123 34 97]`).
pub fn format_bytes_v(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 4 + 2);
    out.push('[');
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&b.to_string());
    }
    out.push(']');
    out
}

/// Go's `%v` of a `[]string` (`[a b]`, `[]` for nil or empty).
pub fn format_strings_v<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::from("[");
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(s.as_ref());
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn floats_print_as_go_percent_v() {
        // Expected strings are Go's `fmt.Sprint(float64)` outputs.
        assert_eq!(format_float_v(4294967295.0), "4.294967295e+09");
        assert_eq!(format_float_v(1e6), "1e+06");
        assert_eq!(format_float_v(123456.0), "123456");
        assert_eq!(format_float_v(0.0001), "0.0001");
        assert_eq!(format_float_v(0.00001), "1e-05");
        assert_eq!(format_float_v(5.0), "5");
        assert_eq!(format_float_v(0.0), "0");
        assert_eq!(format_float_v(-2.5), "-2.5");
        assert_eq!(format_float_v(1e21), "1e+21");
        assert_eq!(format_float_v(65535.0), "65535");
    }

    #[test]
    fn quote_escapes_as_strconv_quote() {
        assert_eq!(quote("\"x\""), r#""\"x\"""#);
        assert_eq!(quote("a\nb\t"), r#""a\nb\t""#);
        assert_eq!(quote("\u{a0}é\u{1}\u{7f}"), r#""\u00a0é\x01\x7f""#);
        assert_eq!(quote("\u{1F600}"), "\"\u{1F600}\"");
        assert_eq!(quote("\u{E000}"), r#""\ue000""#);
    }

    #[test]
    fn json_marshal_escapes_html_and_sorts_keys() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"b":1.0,"a":"<&>","c":[1e21,0.0000001,12345678901234567890]}"#,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(go_json_marshal(&v)).unwrap(),
            r#"{"a":"\u003c\u0026\u003e","b":1,"c":[1e+21,1e-7,12345678901234567000]}"#
        );
    }
}
