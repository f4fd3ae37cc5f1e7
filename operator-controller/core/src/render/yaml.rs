//! YAML text of rendered objects, in the layout of sigs.k8s.io/yaml (go-yaml v2): keys in
//! go-yaml's order, two-space indentation, sequences in a mapping not indented, numbers as
//! upstream prints them ([`number_text`]), multi-line strings as literal blocks.
//!
//! Input: a JSON value. Output: YAML text that any YAML 1.1 or 1.2 reader (kubectl, go-yaml,
//! this project's reader) reads back as the same value. No IO.
//!
//! A string is written plain only when it cannot be read as anything else: it starts with a
//! letter, `/`, or `_`, holds only letters, digits and `._/-=@+(),` plus single inner spaces
//! not followed by `#`, has no `: `, does not end in `:`, and is not one of YAML 1.1's
//! boolean or null words (`yes`, `No`, `ON`, `null`, `~`, ...). Anything else is double-quoted
//! (JSON escapes), or written as a literal block when it spans lines and a block keeps it intact.

use serde_json::Value;

/// The document for `value` (a mapping ends with a newline; no `---`).
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_mapping(map, 0, &mut out),
        Value::Array(items) if !items.is_empty() => write_sequence(items, 0, &mut out),
        other => {
            write_inline_scalar(other, 0, &mut out);
            out.push('\n');
        }
    }
    out
}

fn indent(n: usize, out: &mut String) {
    for _ in 0..n {
        out.push(' ');
    }
}

fn write_mapping(map: &serde_json::Map<String, Value>, level: usize, out: &mut String) {
    let mut first = true;
    for (k, v) in go_yaml_key_order(map) {
        if !first {
            indent(level, out);
        }
        first = false;
        write_key(k, out);
        out.push(':');
        write_value_after_key(v, level, out);
    }
}

/// Writes a value that follows `key:` (the key is already written).
fn write_value_after_key(v: &Value, level: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            indent(level + 2, out);
            write_mapping(m, level + 2, out);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            indent(level, out);
            write_sequence(items, level, out);
        }
        scalar => {
            out.push(' ');
            write_inline_scalar(scalar, level + 2, out);
            out.push('\n');
        }
    }
}

fn write_sequence(items: &[Value], level: usize, out: &mut String) {
    let mut first = true;
    for item in items {
        if !first {
            indent(level, out);
        }
        first = false;
        out.push_str("- ");
        match item {
            Value::Object(m) if !m.is_empty() => write_mapping(m, level + 2, out),
            Value::Array(inner) if !inner.is_empty() => write_sequence(inner, level + 2, out),
            scalar => {
                write_inline_scalar(scalar, level + 2, out);
                out.push('\n');
            }
        }
    }
}

/// The entries of `map` in the order go-yaml v2 writes a map's keys: runs of digits compare as
/// numbers (`e3` < `e19` < `e20`, `v2` < `v10`), letters before other characters, otherwise by
/// character (its `keyList.Less`).
fn go_yaml_key_order(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    // A merge sort that only asks "less?", so an order that is not total cannot make it fail;
    // ties keep the byte order of the map.
    let mut buf = entries.clone();
    merge_sort(&mut entries, &mut buf, &|a, b| go_yaml_key_less(a.0, b.0));
    entries
}

fn merge_sort<T: Copy>(items: &mut [T], buf: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    let n = items.len();
    if n < 2 {
        return;
    }
    let mid = n / 2;
    merge_sort(&mut items[..mid], &mut buf[..mid], less);
    merge_sort(&mut items[mid..], &mut buf[mid..], less);
    let (mut i, mut j) = (0, mid);
    for slot in buf.iter_mut().take(n) {
        let take_right = j < n && (i >= mid || less(&items[j], &items[i]));
        if take_right {
            *slot = items[j];
            j += 1;
        } else {
            *slot = items[i];
            i += 1;
        }
    }
    items.copy_from_slice(&buf[..n]);
}

/// go-yaml v2's `keyList.Less` for two string keys.
fn go_yaml_key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let digit = |c: char| c.is_ascii_digit();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            // A zero inside a number that started earlier is no leading zero.
            if ar[..i]
                .iter()
                .rev()
                .take_while(|c| digit(**c))
                .any(|c| *c != '0')
            {
                an = 1;
                bn = 1;
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

fn write_key(k: &str, out: &mut String) {
    if is_plain_safe(k) {
        out.push_str(k);
    } else {
        out.push_str(&quoted(k));
    }
}

/// A scalar (or empty collection) on the current line; `block_indent` is where the lines of a
/// literal block go.
fn write_inline_scalar(v: &Value, block_indent: usize, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_text(n)),
        Value::String(s) => write_string(s, block_indent, out),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
}

/// A number as sigs.k8s.io/yaml writes it: `json.Marshal` first (a float64 in Go's JSON form),
/// then go-yaml v2 reads that text back and writes what it read.
///
/// | value | JSON text | YAML text |
/// |---|---|---|
/// | int64, uint64 | decimal | the same |
/// | float64 written without `.` or exponent that fits int64 or uint64 (`1`, `-0`, `9223372036854776000` for 2^63) | decimal | that integer (`1`, `0`, `9223372036854776000`) |
/// | any other float64 (`1.5`, `1e+21`, `100000000000000000000` for 1e20, `0.000001`) | Go's float64 form | `strconv.FormatFloat(f, 'g', -1, 64)`: exponent form below 1e-4 and from 1e6 on (`1.5`, `1e+21`, `1e+20`, `1e-06`, `1.2345675e+06`) |
pub fn number_text(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let mut json = Vec::new();
    olm_api::fbc::gojson::write_float(f, &mut json);
    let json = String::from_utf8_lossy(&json);
    if let Ok(i) = json.parse::<i64>() {
        return i.to_string();
    }
    if let Ok(u) = json.parse::<u64>() {
        return u.to_string();
    }
    olm_api::fbc::gojson::format_float64_g(f)
}

fn write_string(s: &str, block_indent: usize, out: &mut String) {
    if is_plain_safe(s) {
        out.push_str(s);
    } else if literal_block_ok(s) {
        let content = s.trim_end_matches('\n');
        let keep = s.len() - content.len();
        out.push('|');
        match keep {
            0 => out.push('-'),
            1 => {}
            _ => out.push('+'),
        }
        for line in content.split('\n') {
            out.push('\n');
            if !line.is_empty() {
                indent(block_indent, out);
                out.push_str(line);
            }
        }
        for _ in 1..keep {
            out.push('\n');
        }
    } else {
        out.push_str(&quoted(s));
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Multi-line text a literal block reproduces exactly.
fn literal_block_ok(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with(' ')
        && !s.starts_with('\n')
        && s.chars().all(|c| {
            c == '\n'
                || (!c.is_control()
                    && c != '\u{feff}'
                    && c != '\u{2028}'
                    && c != '\u{2029}'
                    && c != '\u{85}')
        })
        && s.split('\n')
            .all(|line| !line.ends_with(' ') && !line.ends_with('\t'))
        && !s.contains('\t')
}

/// YAML 1.1 words that read as booleans or null.
const SPECIAL_WORDS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
    "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
];

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || first == '/' || first == '_') {
        return false;
    }
    if SPECIAL_WORDS.contains(&s) || s.ends_with(':') || s.ends_with(' ') {
        return false;
    }
    if s.contains(": ") || s.contains(" #") || s.contains("  ") {
        return false;
    }
    s.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '.' | '_' | '/' | '-' | '=' | '@' | '+' | '(' | ')' | ',' | ' ' | ':'
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_back(text: &str) -> Value {
        let mut splitter = olm_api::fbc::yaml::DocumentSplitter::new(text.as_bytes(), 1);
        let doc = splitter
            .next_document()
            .expect("splits")
            .expect("a document");
        let v = olm_api::fbc::yaml::document_to_value(&doc)
            .expect("parses")
            .expect("not empty");
        crate::bundle::manifest::from_go(v)
    }

    #[test]
    fn tricky_scalars_read_back_unchanged() {
        let value = json!({
            "a": ["yes", "No", "on", "null", "~", "1", "1.5", "0x10", "-1", ".inf", "2020-01-01",
                  "", " lead", "trail ", "a: b", "a #b", "#c", "x:", "- y", "[z]", "{w}", "*a", "&b",
                  "!t", "|p", ">f", "'q'", "\"d\"", "%", "@at", "`tick", "tab\there", "é"],
            "multi": "line one\nline two\n",
            "multi-keep": "a\n\n",
            "multi-strip": "a\nb",
            "multi-lead": " a\nb",
            "nested": {"list": [{"k": 1, "l": [1, [2, 3]]}, [], {}], "empty": {}, "none": null, "t": true},
            "1": "numeric key",
            "yes": "special key",
            "num": 1.5,
            "int": -3
        });
        let text = to_yaml(&value);
        assert_eq!(read_back(&text), value, "{text}");
    }

    /// Each value with the text upstream's golden writer (sigs.k8s.io/yaml) prints for it,
    /// recorded by rendering the same numbers with upstream's code.
    #[test]
    fn numbers_print_as_sigs_yaml_prints_them() {
        let cases: &[(Value, &str)] = &[
            (json!(9_007_199_254_740_993_i64), "9007199254740993"),
            (json!(i64::MAX), "9223372036854775807"),
            (json!(9_223_372_036_854_775_808.0), "9223372036854776000"),
            (
                json!(-9_223_372_036_854_775_808.0),
                "-9.223372036854776e+18",
            ),
            (
                json!(18_446_744_073_709_551_615.0),
                "1.8446744073709552e+19",
            ),
            (json!(1e19), "10000000000000000000"),
            (json!(1e20), "1e+20"),
            (json!(1e21), "1e+21"),
            (json!(6.02e23), "6.02e+23"),
            (json!(1.234_567_890_123_456_8e29), "1.2345678901234568e+29"),
            (json!(1_234_567.5), "1.2345675e+06"),
            (json!(123_456.5), "123456.5"),
            (json!(0.000_001), "1e-06"),
            (json!(1e-7), "1e-07"),
            (json!(-1.5e-10), "-1.5e-10"),
            (json!(0.5), "0.5"),
            (json!(1.0), "1"),
            (json!(-0.0), "0"),
            (json!(1000), "1000"),
        ];
        for (value, want) in cases {
            assert_eq!(
                to_yaml(&json!({"v": value})),
                format!("v: {want}\n"),
                "{value}"
            );
        }
    }

    /// The order sigs.k8s.io/yaml wrote these keys in. (Keys such as `x01y`, `x1y`, `x10` compare
    /// in a cycle there; upstream's order for them changes from run to run.)
    #[test]
    fn keys_are_ordered_as_go_yaml_v2_orders_them() {
        let value = json!({"e21": 1, "e3": 2, "e19": 3, "e20": 4, "v10": 5, "v2": 6, "a_b": 7,
            "ab": 8, "a01": 9, "a1": 10, "B": 11, "a": 12, "a-b": 13, "a.b": 14, "x10": 17,
            "x1a": 18, "z": 20});
        let keys: Vec<String> = to_yaml(&value)
            .lines()
            .map(|l| l.split(':').next().unwrap_or("").to_owned())
            .collect();
        assert_eq!(
            keys,
            [
                "B", "a", "a-b", "a.b", "a_b", "a1", "a01", "ab", "e3", "e19", "e20", "e21", "v2",
                "v10", "x10", "x1a", "z"
            ]
        );
    }

    #[test]
    fn layout_is_go_yaml_v2s() {
        let value = json!({"metadata": {"name": "a", "labels": {"x": "z"}}, "spec": {"ports": [{"name": "443", "port": 443}], "items": ["a"]}, "status": {}});
        assert_eq!(
            to_yaml(&value),
            "metadata:\n  labels:\n    x: z\n  name: a\nspec:\n  items:\n  - a\n  ports:\n  - name: \"443\"\n    port: 443\nstatus: {}\n"
        );
    }
}
