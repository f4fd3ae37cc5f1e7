//! One document of a manifest file as Go's JSON decoders see it.
//!
//! Input: a JSON document's text, or a YAML document already converted by
//! [`olm_api::fbc::yaml`]. Output: a [`Node`] tree that keeps what upstream's decoders depend on,
//! and the unstructured value upstream holds. No IO.
//!
//! Upstream turns every YAML document into JSON text first (sigs.k8s.io/yaml: keys sorted, go-yaml
//! v2's numbers written by `json.Marshal`) and decodes JSON documents as written. Its decoders
//! then read that text, so a [`Node`] keeps:
//!
//! | what | why |
//! |---|---|
//! | keys in document order (sorted for YAML) | the first of several type errors in `metadata` is the one reported |
//! | each number's JSON text | `cannot unmarshal number 1.5 into ... int64` quotes it; ints and floats decode differently |
//! | the document's text | `Object 'Kind' is missing in '<text>'` quotes it |
//!
//! Numbers in the unstructured value follow apimachinery's JSON decoding (sigs.k8s.io/json with
//! ints preserved):
//!
//! | JSON text | value |
//! |---|---|
//! | no `.` and within int64 (`42`, `-0`, `1000` written for YAML's `1e3`) | int64 |
//! | anything else (`1.5`, `1e+21`, `9223372036854775808`) | float64 |
//! | beyond float64 (`1e400`, possible in JSON only) | error `json: cannot unmarshal number 1e400 into Go value of type float64` |
//!
//! So an integer beyond int64 is a float64 in every object upstream keeps unstructured, and is
//! printed as Go prints that float (`9223372036854776000`).

use olm_api::fbc::gojson;
use serde_json::{Map, Number, Value};

/// A JSON value with its keys in the order a Go decoder reads them and numbers as JSON text.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Node>),
    /// Entries in document order; a repeated key appears as often as written.
    Object(Vec<(String, Node)>),
}

impl Node {
    /// The JSON type name Go's decoder uses in `cannot unmarshal <kind> into ...`.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "bool",
            Node::Number(_) => "number",
            Node::String(_) => "string",
            Node::Array(_) => "array",
            Node::Object(_) => "object",
        }
    }

    /// The value of `key` in an object as a Go map holds it (the last one written), exact match.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Object(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A string value, as `Unstructured`'s getters read one (anything else is `""`).
    pub fn str_at(&self, key: &str) -> &str {
        match self.get(key) {
            Some(Node::String(s)) => s,
            _ => "",
        }
    }

    /// A YAML document as sigs.k8s.io/yaml hands it to the JSON decoder: keys sorted, numbers as
    /// `json.Marshal` writes go-yaml's int, uint64 or float64.
    pub fn from_yaml(v: gojson::Value) -> Node {
        match v {
            gojson::Value::Null => Node::Null,
            gojson::Value::Bool(b) => Node::Bool(b),
            gojson::Value::Number(n) => Node::Number(go_json_number_text(&n)),
            gojson::Value::String(s) => Node::String(s),
            gojson::Value::Array(items) => {
                Node::Array(items.into_iter().map(Node::from_yaml).collect())
            }
            gojson::Value::Object(obj) => Node::Object(
                obj.into_entries()
                    .into_iter()
                    .map(|(k, v)| (k, Node::from_yaml(v)))
                    .collect(),
            ),
        }
    }

    /// Reads one JSON value that [`gojson::scan_value`] accepted, keeping document order.
    /// `None` only if the text is not such a value.
    pub fn from_json(text: &[u8]) -> Option<Node> {
        let mut r = JsonReader { text, pos: 0 };
        let node = r.value()?;
        r.skip_ws();
        (r.pos == text.len()).then_some(node)
    }

    /// `json.Marshal` of the value (keys as stored, HTML characters escaped): the text
    /// sigs.k8s.io/yaml makes of a YAML document.
    pub fn marshal(&self) -> String {
        let mut out = Vec::new();
        self.write(&mut out);
        // `<`, `>` and `&` only occur inside strings, where json.Marshal escapes them.
        String::from_utf8_lossy(&out)
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Node::Number(text) => out.extend_from_slice(text.as_bytes()),
            Node::String(s) => gojson::write_string(s, out),
            Node::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            Node::Object(entries) => {
                out.push(b'{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    gojson::write_string(k, out);
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
        }
    }

    /// The value apimachinery's decoder makes of this text (`map[string]interface{}` with ints
    /// preserved; a repeated key keeps its last value), or its error.
    pub fn into_unstructured(self) -> Result<Value, String> {
        Ok(match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Number(text) => unstructured_number(&text)?,
            Node::String(s) => Value::String(s),
            Node::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(Node::into_unstructured)
                    .collect::<Result<_, _>>()?,
            ),
            Node::Object(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k, v.into_unstructured()?);
                }
                Value::Object(map)
            }
        })
    }
}

/// The number sigs.k8s.io/json decodes from `text` into an `interface{}` with ints preserved.
pub fn unstructured_number(text: &str) -> Result<Value, String> {
    if !text.contains('.')
        && let Ok(i) = text.parse::<i64>()
    {
        return Ok(Value::Number(i.into()));
    }
    text.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| {
            format!("json: cannot unmarshal number {text} into Go value of type float64")
        })
}

/// The text `json.Marshal` writes for the value go-yaml v2 decoded: integers (int or uint64) as
/// written in decimal, floats in Go's float64 form. The YAML reader keeps an integer's decimal
/// text as its literal.
pub fn go_json_number_text(n: &gojson::Number) -> String {
    let lit = n.literal();
    let digits = lit.strip_prefix('-').unwrap_or(lit);
    let is_int = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    if is_int && (lit.parse::<i64>().is_ok() || lit.parse::<u64>().is_ok()) {
        return lit.to_owned();
    }
    let mut out = Vec::new();
    gojson::write_float(n.as_f64(), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A reader over JSON text already known to be well formed; strings are decoded by
/// [`gojson::parse`] (Go's escapes and invalid-UTF-8 rules).
struct JsonReader<'a> {
    text: &'a [u8],
    pos: usize,
}

impl JsonReader<'_> {
    fn skip_ws(&mut self) {
        while matches!(self.text.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Option<Node> {
        self.skip_ws();
        match *self.text.get(self.pos)? {
            b'{' => {
                self.pos += 1;
                let mut entries = Vec::new();
                loop {
                    self.skip_ws();
                    match *self.text.get(self.pos)? {
                        b'}' => {
                            self.pos += 1;
                            return Some(Node::Object(entries));
                        }
                        b',' => self.pos += 1,
                        _ => {
                            let key = self.string()?;
                            self.skip_ws();
                            if self.text.get(self.pos) != Some(&b':') {
                                return None;
                            }
                            self.pos += 1;
                            let value = self.value()?;
                            entries.push((key, value));
                        }
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    match *self.text.get(self.pos)? {
                        b']' => {
                            self.pos += 1;
                            return Some(Node::Array(items));
                        }
                        b',' => self.pos += 1,
                        _ => items.push(self.value()?),
                    }
                }
            }
            b'"' => self.string().map(Node::String),
            b't' => self.word("true", Node::Bool(true)),
            b'f' => self.word("false", Node::Bool(false)),
            b'n' => self.word("null", Node::Null),
            _ => {
                let start = self.pos;
                while matches!(
                    self.text.get(self.pos),
                    Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                ) {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.text[start..self.pos]).ok()?;
                (!text.is_empty()).then(|| Node::Number(text.to_owned()))
            }
        }
    }

    fn word(&mut self, word: &str, node: Node) -> Option<Node> {
        self.text[self.pos..].starts_with(word.as_bytes()).then(|| {
            self.pos += word.len();
            node
        })
    }

    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        if self.text.get(start) != Some(&b'"') {
            return None;
        }
        let mut i = start + 1;
        loop {
            match *self.text.get(i)? {
                b'\\' => i += 2,
                b'"' => break,
                _ => i += 1,
            }
        }
        self.pos = i + 1;
        match gojson::parse(&self.text[start..self.pos]).ok()? {
            gojson::Value::String(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(text: &str) -> Node {
        let doc = olm_api::fbc::yaml::Document {
            text: text.as_bytes().to_vec(),
            first_line: 1,
        };
        Node::from_yaml(
            olm_api::fbc::yaml::document_to_value(&doc)
                .expect("parses")
                .expect("a value"),
        )
    }

    #[test]
    fn yaml_numbers_become_the_text_json_marshal_writes_for_go_yamls_values() {
        let node = yaml(
            "a: 1.0\nb: 1e3\nc: 9223372036854775808\nd: 18446744073709551616\ne: -0.0\nf: 0x10\ng: 1e21\nh: 0.0000001\n",
        );
        assert_eq!(
            node.marshal(),
            r#"{"a":1,"b":1000,"c":9223372036854775808,"d":18446744073709552000,"e":-0,"f":16,"g":1e+21,"h":1e-7}"#
        );
    }

    #[test]
    fn integers_stay_int64_only_within_int64_as_apimachinery_decodes_them() {
        let node = yaml(
            "a: 9223372036854775807\nb: 9223372036854775808\nc: -9223372036854775808\nd: -0.0\ne: 1e20\nf: 1.5\n",
        );
        let v = node.into_unstructured().expect("decodes");
        assert_eq!(v["a"], json!(9_223_372_036_854_775_807_i64));
        assert!(v["b"].is_f64(), "{}", v["b"]);
        assert_eq!(v["b"].as_f64(), Some(9_223_372_036_854_775_808.0));
        assert_eq!(v["c"], json!(i64::MIN));
        assert_eq!(v["d"], json!(0), "-0 is an integer text");
        assert!(
            v["e"].is_f64(),
            "1e20 is written 100000000000000000000, beyond int64"
        );
        assert_eq!(v["f"], json!(1.5));
    }

    #[test]
    fn json_text_keeps_its_order_and_literals() {
        let node = Node::from_json(br#" {"z": 1.0, "a": [true, null, "x\u003c"], "z": 1e3} "#)
            .expect("reads");
        let Node::Object(entries) = &node else {
            panic!("not an object")
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "z"]);
        assert_eq!(node.get("z"), Some(&Node::Number("1e3".into())));
        let v = node.into_unstructured().expect("decodes");
        assert_eq!(v, json!({"z": 1000.0, "a": [true, null, "x<"]}));
        assert!(
            v["z"].is_f64(),
            "1e3 has no dot but is no int64 text either"
        );
        assert_eq!(
            Node::from_json(b"[1e400]")
                .expect("reads")
                .into_unstructured(),
            Err("json: cannot unmarshal number 1e400 into Go value of type float64".into())
        );
    }

    #[test]
    fn marshal_escapes_html_as_json_marshal_does() {
        assert_eq!(
            yaml("b: '<a&b>'\na: \"\\u2028\"\n").marshal(),
            r#"{"a":"\u2028","b":"\u003ca\u0026b\u003e"}"#
        );
    }
}
