//! YAML manifests to the unstructured values upstream decodes them into.
//!
//! Input: YAML text (already read into memory). Output: one `serde_json::Value` per non-empty
//! document, or an error naming the line. No IO.
//!
//! Documents are split and converted by `olm_api::fbc::yaml` (apimachinery's splitter and
//! sigs.k8s.io/yaml's YAML 1.1 conversion). Numbers then follow apimachinery's unstructured
//! decoding: an integer literal that fits in int64 stays an integer, anything else is a float64.

use olm_api::fbc::gojson;
use olm_api::fbc::yaml::{DocumentSplitter, SplitError, document_to_value};

/// A YAML document that could not be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct YamlError {
    pub line: usize,
    pub message: String,
}

/// Every non-empty document of `text`.
pub fn parse_documents(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let mut splitter = DocumentSplitter::new(text.as_bytes(), 1);
    let mut out = Vec::new();
    loop {
        let doc = match splitter.next_document() {
            Ok(Some(doc)) => doc,
            Ok(None) => break,
            Err(SplitError::Io(e)) => {
                return Err(YamlError {
                    line: 0,
                    message: e.to_string(),
                });
            }
            Err(SplitError::Syntax(e)) => {
                return Err(YamlError {
                    line: e.line,
                    message: e.message,
                });
            }
        };
        match document_to_value(&doc) {
            Ok(Some(v)) => out.push(to_serde(v)),
            Ok(None) => {}
            Err(e) => {
                return Err(YamlError {
                    line: e.line,
                    message: e.message,
                });
            }
        }
    }
    Ok(out)
}

fn to_serde(v: gojson::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        gojson::Value::Null => J::Null,
        gojson::Value::Bool(b) => J::Bool(b),
        gojson::Value::Number(n) => {
            let lit = n.literal();
            let integer = !lit.is_empty()
                && lit
                    .trim_start_matches('-')
                    .chars()
                    .all(|c| c.is_ascii_digit());
            if integer && let Ok(i) = lit.parse::<i64>() {
                return J::from(i);
            }
            let f = n.as_f64();
            if f == f.trunc() && f.abs() < 9.007_199_254_740_992e15 {
                // YAML `1.0` reaches Go's unstructured map as the JSON number 1: an int64.
                return J::from(f as i64);
            }
            serde_json::Number::from_f64(f).map_or(J::Null, J::Number)
        }
        gojson::Value::String(s) => J::String(s),
        gojson::Value::Array(items) => J::Array(items.into_iter().map(to_serde).collect()),
        gojson::Value::Object(obj) => J::Object(
            obj.into_entries()
                .into_iter()
                .map(|(k, v)| (k, to_serde(v)))
                .collect(),
        ),
    }
}
