//! YAML text of rendered objects, in the layout of sigs.k8s.io/yaml (go-yaml v2): keys sorted,
//! two-space indentation, sequences in a mapping not indented, multi-line strings as literal
//! blocks.
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
    for (k, v) in map {
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
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(s, block_indent, out),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
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

    #[test]
    fn layout_is_go_yaml_v2s() {
        let value = json!({"metadata": {"name": "a", "labels": {"x": "z"}}, "spec": {"ports": [{"name": "443", "port": 443}], "items": ["a"]}, "status": {}});
        assert_eq!(
            to_yaml(&value),
            "metadata:\n  labels:\n    x: z\n  name: a\nspec:\n  items:\n  - a\n  ports:\n  - name: \"443\"\n    port: 443\nstatus: {}\n"
        );
    }
}
