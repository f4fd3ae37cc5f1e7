//! One manifest file of a bundle: a YAML or JSON stream split into Kubernetes objects.
//!
//! Input: a file's path (for messages) and bytes. Output: the objects in file order as JSON
//! values, lists flattened, or the error upstream's reader gives. No IO.
//!
//! Upstream reads each file with cli-runtime's local builder (`Unstructured().Flatten().Stream`),
//! which this module follows:
//!
//! | stream content | result |
//! |---|---|
//! | first non-blank byte is `{` | a JSON stream: one object after another |
//! | otherwise | YAML documents split on `---` lines, each converted as sigs.k8s.io/yaml does (YAML 1.1 scalars) |
//! | empty document, comments only, `null` | skipped |
//! | an object with a non-null `items` field | a list: each item is an object (items without `apiVersion`/`kind` inherit the list's, `kind` minus `List`) |
//! | an object without `kind` | error `Object 'Kind' is missing in '<json>'` |
//! | a YAML syntax error | error `error parsing <path>: error converting YAML to JSON: yaml: line N: ...` (the text after `line N:` is this parser's, not go-yaml's) |

use olm_api::fbc::gojson;
use olm_api::fbc::yaml::{DocumentSplitter, SplitError, document_to_value};
use serde_json::{Map, Number, Value};

/// Splits `bytes` into objects. `path` is the bundle-relative path used in messages.
pub fn parse_objects(path: &str, bytes: &[u8]) -> Result<Vec<Map<String, Value>>, String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let documents = if first == Some(&b'{') {
        json_documents(path, bytes)?
    } else {
        yaml_documents(path, bytes)?
    };
    let mut objects = Vec::new();
    for doc in documents {
        match doc {
            Value::Null => continue,
            Value::Object(obj) => flatten(obj, &mut objects)?,
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    json_kind(&other)
                ));
            }
        }
    }
    Ok(objects)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn json_documents(path: &str, bytes: &[u8]) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for doc in serde_json::Deserializer::from_slice(bytes).into_iter::<Value>() {
        out.push(doc.map_err(|e| format!("error parsing {path}: {e}"))?);
    }
    Ok(out)
}

fn yaml_documents(path: &str, bytes: &[u8]) -> Result<Vec<Value>, String> {
    let mut splitter = DocumentSplitter::new(bytes, 1);
    let mut out = Vec::new();
    loop {
        let doc = match splitter.next_document() {
            Ok(Some(doc)) => doc,
            Ok(None) => return Ok(out),
            Err(SplitError::Io(e)) => return Err(format!("error parsing {path}: {e}")),
            Err(SplitError::Syntax(e)) => {
                return Err(format!(
                    "error parsing {path}: error converting YAML to JSON: yaml: line {}: {}",
                    e.line, e.message
                ));
            }
        };
        match document_to_value(&doc) {
            Ok(Some(value)) => out.push(from_go(value)),
            Ok(None) => {}
            Err(e) => {
                return Err(format!(
                    "error parsing {path}: error converting YAML to JSON: yaml: line {}: {}",
                    e.line, e.message
                ));
            }
        }
    }
}

/// A Go JSON value as apimachinery's unstructured decoding holds it: integers as int64 (exactly,
/// from the literal), everything else as float64.
pub fn from_go(v: gojson::Value) -> Value {
    match v {
        gojson::Value::Null => Value::Null,
        gojson::Value::Bool(b) => Value::Bool(b),
        gojson::Value::Number(n) => number_from_go(&n),
        gojson::Value::String(s) => Value::String(s),
        gojson::Value::Array(items) => Value::Array(items.into_iter().map(from_go).collect()),
        gojson::Value::Object(obj) => Value::Object(
            obj.into_entries()
                .into_iter()
                .map(|(k, v)| (k, from_go(v)))
                .collect(),
        ),
    }
}

fn number_from_go(n: &gojson::Number) -> Value {
    if let Ok(i) = n.literal().parse::<i64>() {
        return Value::Number(i.into());
    }
    let f = n.as_f64();
    // Go wrote the float with json.Marshal and read it back: integral values below 2^63 come
    // back as int64.
    if f == f.trunc() && f.abs() < 9.223_372_036_854_775e18 {
        return Value::Number((f as i64).into());
    }
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// Appends `obj`, or the items of a list, to `out`.
fn flatten(mut obj: Map<String, Value>, out: &mut Vec<Map<String, Value>>) -> Result<(), String> {
    let is_list = obj.get("items").is_some_and(|items| !items.is_null());
    if !is_list {
        if obj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            return Err(missing_kind(&obj));
        }
        out.push(obj);
        return Ok(());
    }
    let list_kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let list_api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let items = match obj.remove("items") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type []interface {{}}",
                json_kind(&other)
            ));
        }
        None => Vec::new(),
    };
    let item_kind = list_kind
        .strip_suffix("List")
        .unwrap_or(&list_kind)
        .to_owned();
    for item in items {
        let Value::Object(mut item) = item else {
            return Err("unable to decode list item: not an object".into());
        };
        let no_kind = item
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty();
        let no_version = item
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty();
        if no_kind && no_version {
            item.insert("kind".into(), Value::String(item_kind.clone()));
            item.insert("apiVersion".into(), Value::String(list_api_version.clone()));
        }
        flatten(item, out)?;
    }
    Ok(())
}

fn missing_kind(obj: &Map<String, Value>) -> String {
    let json = gojson::canonicalize(&Value::Object(obj.clone()));
    let mut text = String::from_utf8_lossy(&json).into_owned();
    // Keep the message bounded for huge objects.
    if text.len() > 1024 {
        let mut cut = 1024;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    format!("Object 'Kind' is missing in '{text}'")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_streams_split_into_objects_and_lists_flatten() {
        let text = b"---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: SecretList\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: b}}\n- {metadata: {name: c}}\n";
        let objects = parse_objects("manifests/x.yaml", text).expect("parses");
        let names: Vec<(String, String)> = objects
            .iter()
            .map(|o| (o["kind"].to_string(), o["metadata"]["name"].to_string()))
            .collect();
        let want: Vec<(String, String)> = [("ConfigMap", "a"), ("Secret", "b"), ("Secret", "c")]
            .iter()
            .map(|(k, n)| (json!(k).to_string(), json!(n).to_string()))
            .collect();
        assert_eq!(names, want);
    }

    #[test]
    fn json_streams_and_missing_kinds() {
        let objects = parse_objects("m.json", b" {\"kind\":\"A\",\"n\":1.0} {\"kind\":\"B\"}")
            .expect("parses");
        assert_eq!(objects.len(), 2);
        let err =
            parse_objects("m.yaml", b"apiVersion: v1\nmetadata: {name: x}\n").expect_err("no kind");
        assert_eq!(
            err,
            "Object 'Kind' is missing in '{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"}}'"
        );
    }

    #[test]
    fn yaml_floats_that_are_integral_become_integers_as_after_go_json() {
        let objects =
            parse_objects("m.yaml", b"kind: A\na: 1.0\nb: 1.5\nc: 0x10\n").expect("parses");
        assert_eq!(objects[0]["a"], json!(1));
        assert_eq!(objects[0]["b"], json!(1.5));
        assert_eq!(objects[0]["c"], json!(16));
    }
}
