//! One manifest file of a bundle: a YAML or JSON stream read into Kubernetes objects.
//!
//! Input: a file's path (for messages) and bytes, and a visitor for each object. Output: the
//! objects in file order, lists flattened, each handed to the visitor; or the error upstream's
//! reader gives. No IO.
//!
//! Upstream reads each file with cli-runtime's local builder
//! (`Unstructured().Flatten().Stream(file, path)`), which this module follows step by step. Each
//! document is read, checked and visited before the next one is read, so the first problem in
//! file order is the one reported.
//!
//! 1. The stream (apimachinery's `YAMLOrJSONDecoder`). Errors read `error parsing <path>: …`.
//!
//!    | stream | read as |
//!    |---|---|
//!    | first non-space byte (of the first 4096) is `{` | JSON values one after another |
//!    | a JSON value fails after at most one was read | YAML from just after the last value read; if the first YAML document fails too, the JSON error is reported: `json: offset N: <Go's message>` (`unexpected EOF` when the value is cut short) |
//!    | a JSON value fails after two were read | that error, without the offset |
//!    | otherwise | YAML documents split on `---` lines, each converted to JSON as sigs.k8s.io/yaml does ([`olm_api::fbc::yaml`]; its messages, [`YamlError::upstream_text`]) |
//!    | empty document, comments only, `null` | skipped |
//!
//! 2. Each document (apimachinery's unstructured decoder and cli-runtime's metadata check).
//!    Errors read `unable to decode "<path>": …`.
//!
//!    | document | result |
//!    |---|---|
//!    | not an object | `json: cannot unmarshal string into Go value of type unstructured.detector` |
//!    | a number beyond float64 (JSON only) | `json: cannot unmarshal number 1e400 into Go value of type float64` |
//!    | has an `items` key (any value, `null` too) | a list; `items` not a list: `json: cannot unmarshal object into Go struct field decodeList.items of type []json.RawMessage`; an item not an object: `json: cannot unmarshal string into Go value of type map[string]interface {}`; a `null` item is an empty object |
//!    | no string `kind`, or an `apiVersion` with two `/` | `Object 'Kind' is missing in '<the document as JSON>'` |
//!    | `apiVersion` or `metadata` of the wrong type | [`object_meta`]'s message (unquoted `on`, `yes`, numbers as label values) |
//!
//! 3. Lists are flattened: items with neither `kind` nor `apiVersion` take the list's
//!    (`kind` minus `List`); an item that is itself a list fails the file with
//!    `*unstructured.Unstructured is not a list: no Items field in this object`. Every item is
//!    visited even after one fails; an item without `kind` or version fails with
//!    `unable to get type info from the object "*unstructured.Unstructured": Object 'Kind' is missing in 'object has no kind field '`
//!    (`Object 'apiVersion' is missing in 'object has no apiVersion field'`); the errors of a
//!    list, the visitor's included, are joined as `[a, b]` (one alone is itself). The items of a
//!    list are not checked as in step 2.
//!
//! Object values keep apimachinery's numbers ([`document`]): int64 when written as an integer
//! within int64, float64 otherwise.

use std::collections::BTreeSet;

use olm_api::fbc::gojson;
use olm_api::fbc::yaml::{DocumentSplitter, SplitError, YamlError, document_to_value};
use olm_api::version::go_text::go_quote;
use serde_json::{Map, Value};

use super::document::Node;
use super::object_meta;

/// Splits `bytes` into objects. `path` is the bundle-relative path used in messages.
pub fn parse_objects(path: &str, bytes: &[u8]) -> Result<Vec<Map<String, Value>>, String> {
    let mut objects = Vec::new();
    visit_objects(path, bytes, &mut |obj| {
        objects.push(obj);
        Ok(())
    })?;
    Ok(objects)
}

/// Reads `bytes` and hands each object to `visit` in file order. An error of `visit` stops the
/// reading (within a list, once every item was visited), as upstream's visitor does.
pub fn visit_objects(
    path: &str,
    bytes: &[u8],
    visit: &mut dyn FnMut(Map<String, Value>) -> Result<(), String>,
) -> Result<(), String> {
    let mut stream = Stream::new(bytes);
    while let Some(doc) = stream
        .next_document()
        .map_err(|e| format!("error parsing {path}: {e}"))?
    {
        visit_document(path, doc, visit)?;
    }
    Ok(())
}

/// A Go JSON value as apimachinery's unstructured decoding holds it (see [`document`]), for a
/// YAML document already converted by [`olm_api::fbc::yaml`]: integers as int64 when they fit,
/// everything else as float64.
pub fn from_go(v: gojson::Value) -> Value {
    Node::from_yaml(v)
        .into_unstructured()
        .unwrap_or(Value::Null)
}

/// One document of a stream.
enum RawDocument<'a> {
    /// A JSON value's text.
    Json(&'a [u8]),
    /// A YAML document, converted.
    Yaml(gojson::Value),
}

/// How much of the file apimachinery inspects to tell JSON from YAML.
const JSON_SNIFF_BYTES: usize = 4096;

enum Mode<'a> {
    Json {
        /// Where the next value may start (just past the last one read).
        pos: usize,
        /// Values read so far.
        count: usize,
    },
    Yaml {
        splitter: DocumentSplitter<&'a [u8]>,
        /// The JSON error to report if the first YAML document fails too.
        json_error: Option<String>,
    },
}

/// apimachinery's `YAMLOrJSONDecoder` over one file.
struct Stream<'a> {
    bytes: &'a [u8],
    mode: Mode<'a>,
}

impl<'a> Stream<'a> {
    fn new(bytes: &'a [u8]) -> Stream<'a> {
        let head = &bytes[..bytes.len().min(JSON_SNIFF_BYTES)];
        let head = match std::str::from_utf8(head) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
        };
        let mode = if head.trim_start().starts_with('{') {
            Mode::Json { pos: 0, count: 0 }
        } else {
            Mode::Yaml {
                splitter: DocumentSplitter::new(bytes, 1),
                json_error: None,
            }
        };
        Stream { bytes, mode }
    }

    /// The next non-empty document; errors are the text after `error parsing <path>: `.
    fn next_document(&mut self) -> Result<Option<RawDocument<'a>>, String> {
        loop {
            match &mut self.mode {
                Mode::Json { pos, count } => {
                    let start = *pos
                        + self.bytes[*pos..]
                            .iter()
                            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                            .count();
                    if start == self.bytes.len() {
                        return Ok(None);
                    }
                    match gojson::scan_value(self.bytes, start) {
                        Ok(end) => {
                            *pos = end;
                            *count += 1;
                            return Ok(Some(RawDocument::Json(&self.bytes[start..end])));
                        }
                        Err(e) => {
                            let cut_short = e.offset >= self.bytes.len();
                            if *count > 1 {
                                return Err(if cut_short {
                                    "unexpected EOF".into()
                                } else {
                                    e.message
                                });
                            }
                            let json_error = if cut_short {
                                "unexpected EOF".into()
                            } else {
                                format!("json: offset {}: {}", e.offset + 1, e.message)
                            };
                            let rest = *pos + whitespace_through_newline(&self.bytes[*pos..]);
                            let first_line =
                                1 + self.bytes[..rest].iter().filter(|b| **b == b'\n').count();
                            self.mode = Mode::Yaml {
                                splitter: DocumentSplitter::new(&self.bytes[rest..], first_line),
                                json_error: Some(json_error),
                            };
                        }
                    }
                }
                Mode::Yaml {
                    splitter,
                    json_error,
                } => {
                    let converted = match splitter.next_document() {
                        Ok(None) => return Ok(None),
                        Ok(Some(doc)) => document_to_value(&doc),
                        Err(SplitError::Syntax(e)) => Err(e),
                        Err(SplitError::Io(e)) => return Err(e.to_string()),
                    };
                    let first_yaml_error = json_error.take();
                    match converted {
                        Ok(Some(value)) => return Ok(Some(RawDocument::Yaml(value))),
                        Ok(None) => {}
                        Err(e) => return Err(first_yaml_error.unwrap_or_else(|| yaml_text(&e))),
                    }
                }
            }
        }
    }
}

fn yaml_text(e: &YamlError) -> String {
    e.upstream_text()
}

/// How many bytes apimachinery skips before reading YAML after JSON: white space up to and
/// including the first newline.
fn whitespace_through_newline(rest: &[u8]) -> usize {
    let text = match std::str::from_utf8(rest) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or(""),
    };
    let mut n = 0;
    for c in text.chars() {
        if !c.is_whitespace() {
            break;
        }
        n += c.len_utf8();
        if c == '\n' {
            break;
        }
    }
    n
}

/// Decodes, checks and visits one document (steps 2 and 3 of the module table).
fn visit_document(
    path: &str,
    raw: RawDocument<'_>,
    visit: &mut dyn FnMut(Map<String, Value>) -> Result<(), String>,
) -> Result<(), String> {
    let unable = |message: String| format!("unable to decode {}: {message}", go_quote(path));
    // The JSON text apimachinery decodes: as written, or as sigs.k8s.io/yaml wrote it.
    let (node, json_text) = match raw {
        RawDocument::Json(bytes) => match Node::from_json(bytes) {
            Some(node) => (node, Some(bytes)),
            None => return Err(unable("invalid JSON".into())),
        },
        RawDocument::Yaml(value) => (Node::from_yaml(value), None),
    };
    if node == Node::Null {
        return Ok(());
    }
    if !matches!(node, Node::Object(_)) {
        return Err(unable(format!(
            "json: cannot unmarshal {} into Go value of type unstructured.detector",
            node.kind()
        )));
    }
    let is_list = match node.get("items") {
        None => false,
        Some(Node::Array(_) | Node::Null) => true,
        Some(other) => {
            return Err(unable(format!(
                "json: cannot unmarshal {} into Go struct field decodeList.items of type []json.RawMessage",
                other.kind()
            )));
        }
    };
    // What the later steps need from the document, taken before it is consumed.
    let kind = node.str_at("kind").to_owned();
    let api_version = node.str_at("apiVersion").to_owned();
    let metadata = object_meta::check(&node);
    let missing_kind = group_version_kind(&api_version, &kind)
        .is_none_or(|(_, kind)| kind.is_empty())
        .then(|| match json_text {
            Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            None => node.marshal(),
        });

    let Value::Object(mut object) = node.into_unstructured().map_err(unable)? else {
        return Err(unable("not an object".into()));
    };
    let mut items = Vec::new();
    if is_list {
        let list_items = match object.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        let item_kind = kind.strip_suffix("List").unwrap_or(&kind);
        for item in list_items {
            let mut item = match item {
                Value::Object(map) => map,
                Value::Null => Map::new(),
                other => {
                    return Err(unable(format!(
                        "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                        json_kind(&other)
                    )));
                }
            };
            if str_at(&item, "kind").is_empty() && str_at(&item, "apiVersion").is_empty() {
                item.insert("kind".into(), Value::String(item_kind.to_owned()));
                item.insert("apiVersion".into(), Value::String(api_version.clone()));
            }
            items.push(item);
        }
    }
    if let Some(text) = missing_kind {
        return Err(unable(format!("Object 'Kind' is missing in '{text}'")));
    }
    metadata.map_err(unable)?;

    if !is_list {
        return visit(object);
    }
    if items
        .iter()
        .any(|item| matches!(item.get("items"), Some(Value::Array(_))))
    {
        return Err(
            "*unstructured.Unstructured is not a list: no Items field in this object".into(),
        );
    }
    let mut errors = Vec::new();
    for item in items {
        let problem = match group_version_kind(str_at(&item, "apiVersion"), str_at(&item, "kind")) {
            None | Some((_, "")) => Some("Object 'Kind' is missing in 'object has no kind field '"),
            Some(("", _)) => {
                Some("Object 'apiVersion' is missing in 'object has no apiVersion field'")
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            errors.push(format!(
                "unable to get type info from the object \"*unstructured.Unstructured\": {problem}"
            ));
            continue;
        }
        if let Err(e) = visit(item) {
            errors.push(e);
        }
    }
    aggregate(errors)
}

fn str_at<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `Unstructured.GroupVersionKind()`'s version and kind, `None` when `apiVersion` does not parse
/// (more than one `/`).
fn group_version_kind<'a>(api_version: &'a str, kind: &'a str) -> Option<(&'a str, &'a str)> {
    let version = match api_version.matches('/').count() {
        _ if api_version == "/" => "",
        0 => api_version,
        1 => api_version.split_once('/').map_or("", |(_, v)| v),
        _ => return None,
    };
    Some((version, kind))
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

/// apimachinery's `NewAggregate(errs).Error()`: one error is itself; several are `[a, b]`,
/// repeated messages once.
fn aggregate(errors: Vec<String>) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    let unique: Vec<String> = errors
        .into_iter()
        .filter(|e| seen.insert(e.clone()))
        .collect();
    match unique.len() {
        0 => Ok(()),
        1 => Err(unique.into_iter().next().unwrap_or_default()),
        _ => Err(format!("[{}]", unique.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(objects: &[Map<String, Value>]) -> Vec<(String, String)> {
        objects
            .iter()
            .map(|o| {
                (
                    str_at(o, "kind").to_owned(),
                    o["metadata"]["name"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, n)| ((*k).to_owned(), (*n).to_owned()))
            .collect()
    }

    #[test]
    fn yaml_streams_split_into_objects_and_lists_flatten() {
        let text = b"---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: SecretList\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: b}}\n- {metadata: {name: c}}\n";
        let objects = parse_objects("manifests/x.yaml", text).expect("parses");
        assert_eq!(
            names(&objects),
            pairs(&[("ConfigMap", "a"), ("Secret", "b"), ("Secret", "c")])
        );
    }

    #[test]
    fn json_streams_and_missing_kinds() {
        let objects = parse_objects("m.json", b" {\"kind\":\"A\",\"n\":1.0} {\"kind\":\"B\"}")
            .expect("parses");
        assert_eq!(objects.len(), 2);
        assert!(
            objects[0]["n"].is_f64(),
            "1.0 written in JSON stays a float64"
        );
        let err =
            parse_objects("m.yaml", b"apiVersion: v1\nmetadata: {name: x}\n").expect_err("no kind");
        assert_eq!(
            err,
            "unable to decode \"m.yaml\": Object 'Kind' is missing in '{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"}}'"
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

    #[test]
    fn a_list_with_null_items_is_an_empty_list() {
        let objects = parse_objects(
            "m.yaml",
            b"kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\nitems: null\n",
        )
        .expect("parses");
        assert!(objects.is_empty());
    }

    #[test]
    fn errors_of_list_items_are_joined() {
        let text = b"apiVersion: v1\nkind: List\nitems: [{kind: ConfigMap}, {metadata: {name: c}}, {kind: ConfigMap, apiVersion: v1}]\n";
        let mut visited = 0;
        let err = visit_objects("m.yaml", text, &mut |_| {
            visited += 1;
            Err("bad".into())
        })
        .expect_err("fails");
        assert_eq!(visited, 1);
        assert_eq!(
            err,
            "[unable to get type info from the object \"*unstructured.Unstructured\": Object 'apiVersion' is missing in 'object has no apiVersion field', unable to get type info from the object \"*unstructured.Unstructured\": Object 'Kind' is missing in 'object has no kind field ', bad]"
        );
    }

    #[test]
    fn a_broken_json_stream_is_read_again_as_yaml() {
        // A trailing comma is no JSON, but a valid YAML flow mapping.
        let objects = parse_objects(
            "m.json",
            b"{\"kind\": \"ConfigMap\", \"apiVersion\": \"v1\", \"metadata\": {\"name\": \"a\",}}\n",
        )
        .expect("parses as YAML");
        assert_eq!(names(&objects), pairs(&[("ConfigMap", "a")]));
        let err = parse_objects("m.json", b"{\"kind\": \"A\"}}\n").expect_err("fails");
        assert_eq!(
            err,
            "error parsing m.json: json: offset 14: invalid character '}' looking for beginning of value"
        );
        let err =
            parse_objects("m.json", b"{\"kind\": \"A\"} {\"kind\": \"B\"} {x").expect_err("fails");
        assert_eq!(
            err,
            "error parsing m.json: invalid character 'x' looking for beginning of object key string"
        );
        let err = parse_objects("m.json", b"{\"kind\": \"A\"").expect_err("fails");
        assert_eq!(err, "error parsing m.json: unexpected EOF");
    }
}
