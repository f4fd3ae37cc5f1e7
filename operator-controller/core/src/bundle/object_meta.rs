//! The metadata check upstream's manifest reader runs on every document.
//!
//! Input: a document as Go's decoder reads it ([`Node`]). Output: nothing, or the error upstream
//! gives. No IO.
//!
//! cli-runtime's unstructured builder decodes each document a second time into
//! `struct { metav1.TypeMeta; metav1.ObjectMeta "metadata" }` with apimachinery's JSON decoder
//! (exact key match) "so we don't silently truncate schema errors in metadata later". Any value
//! of the wrong type there fails the whole bundle, although the object itself is kept
//! unstructured. That is how a YAML 1.1 boolean written unquoted as a label or annotation value
//! (`app: on`, `enabled: yes`) or a number (`tier: 1`) makes upstream refuse the bundle, with
//! encoding/json's message:
//!
//! | value | message |
//! |---|---|
//! | wrong JSON type for a field | `json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string` |
//! | a number that is no int64 in an int64 field | `json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64` |
//! | a time that is not a string | `json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string` |
//! | a string that is not an RFC 3339 time | `parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"` (Go's `time.Parse`) |
//! | `null` anywhere | accepted (and kept in the object: a `null` label renders as `null`) |
//!
//! The struct named is the innermost Go struct holding the field (`ObjectMeta`, `OwnerReference`,
//! `ManagedFieldsEntry`; `metadataOnlyObject` for `metadata` itself and `TypeMeta.apiVersion`);
//! the field path has no list indexes or map keys. Type errors let decoding go on and the first
//! one is reported, unless a time fails to parse anywhere (that error stops decoding and wins).
//! Only whole documents are checked: the items of a `List` are not.

use std::fmt::Write as _;

use super::document::Node;

/// Checks a document's `apiVersion`, `kind` and `metadata` as upstream decodes them.
pub fn check(doc: &Node) -> Result<(), String> {
    let mut d = Decoder { saved: None };
    let cx = Context {
        strukt: METADATA_ONLY_OBJECT.name,
        path: Vec::new(),
    };
    d.value(doc, &Ty::Struct(&METADATA_ONLY_OBJECT), &cx)?;
    match d.saved {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The Go types found in `TypeMeta` and `ObjectMeta`.
enum Ty {
    /// A string kind, with its Go type name (`string`, `types.UID`).
    Str(&'static str),
    Int64,
    Bool,
    /// `metav1.Time` (and `*metav1.Time`): its own `UnmarshalJSON`.
    Time,
    /// `metav1.FieldsV1`: keeps any JSON.
    FieldsV1,
    /// `map[string]string`.
    StringMap,
    /// `[]string`.
    StringSlice,
    Struct(&'static StructDef),
    StructSlice(&'static StructDef),
}

impl Ty {
    fn go_name(&self) -> String {
        match self {
            Ty::Str(name) => (*name).to_owned(),
            Ty::Int64 => "int64".into(),
            Ty::Bool => "bool".into(),
            Ty::Time => "v1.Time".into(),
            Ty::FieldsV1 => "v1.FieldsV1".into(),
            Ty::StringMap => "map[string]string".into(),
            Ty::StringSlice => "[]string".into(),
            Ty::Struct(s) => s.go_name.into(),
            Ty::StructSlice(s) => format!("[]{}", s.go_name),
        }
    }
}

struct StructDef {
    /// `reflect.Type.Name()`: what the message prints before the field path.
    name: &'static str,
    /// `reflect.Type.String()`: what it prints as the field's type.
    go_name: &'static str,
    /// JSON name, the names of the embedded structs it is promoted through, type.
    fields: &'static [(&'static str, &'static [&'static str], Ty)],
}

const STRING: Ty = Ty::Str("string");

static METADATA_ONLY_OBJECT: StructDef = StructDef {
    name: "metadataOnlyObject",
    go_name: "resource.metadataOnlyObject",
    fields: &[
        ("kind", &["TypeMeta"], STRING),
        ("apiVersion", &["TypeMeta"], STRING),
        ("metadata", &[], Ty::Struct(&OBJECT_META)),
    ],
};

static OBJECT_META: StructDef = StructDef {
    name: "ObjectMeta",
    go_name: "v1.ObjectMeta",
    fields: &[
        ("name", &[], STRING),
        ("generateName", &[], STRING),
        ("namespace", &[], STRING),
        ("selfLink", &[], STRING),
        ("uid", &[], Ty::Str("types.UID")),
        ("resourceVersion", &[], STRING),
        ("generation", &[], Ty::Int64),
        ("creationTimestamp", &[], Ty::Time),
        ("deletionTimestamp", &[], Ty::Time),
        ("deletionGracePeriodSeconds", &[], Ty::Int64),
        ("labels", &[], Ty::StringMap),
        ("annotations", &[], Ty::StringMap),
        ("ownerReferences", &[], Ty::StructSlice(&OWNER_REFERENCE)),
        ("finalizers", &[], Ty::StringSlice),
        ("managedFields", &[], Ty::StructSlice(&MANAGED_FIELDS_ENTRY)),
    ],
};

static OWNER_REFERENCE: StructDef = StructDef {
    name: "OwnerReference",
    go_name: "v1.OwnerReference",
    fields: &[
        ("apiVersion", &[], STRING),
        ("kind", &[], STRING),
        ("name", &[], STRING),
        ("uid", &[], Ty::Str("types.UID")),
        ("controller", &[], Ty::Bool),
        ("blockOwnerDeletion", &[], Ty::Bool),
    ],
};

static MANAGED_FIELDS_ENTRY: StructDef = StructDef {
    name: "ManagedFieldsEntry",
    go_name: "v1.ManagedFieldsEntry",
    fields: &[
        ("manager", &[], STRING),
        ("operation", &[], Ty::Str("v1.ManagedFieldsOperationType")),
        ("apiVersion", &[], STRING),
        ("time", &[], Ty::Time),
        ("fieldsType", &[], STRING),
        ("fieldsV1", &[], Ty::FieldsV1),
        ("subresource", &[], STRING),
    ],
};

/// encoding/json's error context: the struct being decoded and the JSON field path to here.
#[derive(Clone)]
struct Context {
    strukt: &'static str,
    path: Vec<String>,
}

struct Decoder {
    /// The first type error (decoding goes on after one).
    saved: Option<String>,
}

impl Decoder {
    fn save(&mut self, found: &str, ty: &Ty, cx: &Context) {
        if self.saved.is_none() {
            self.saved = Some(type_error(found, &ty.go_name(), cx));
        }
    }

    /// Decodes `v` into `ty`; `Err` is an error that stops decoding (from a custom decoder).
    fn value(&mut self, v: &Node, ty: &Ty, cx: &Context) -> Result<(), String> {
        if matches!(v, Node::Null) {
            return Ok(());
        }
        match ty {
            Ty::Str(_) => {
                if !matches!(v, Node::String(_)) {
                    self.save(v.kind(), ty, cx);
                }
            }
            Ty::Bool => {
                if !matches!(v, Node::Bool(_)) {
                    self.save(v.kind(), ty, cx);
                }
            }
            Ty::Int64 => match v {
                Node::Number(text) if text.parse::<i64>().is_ok() => {}
                Node::Number(text) => self.save(&format!("number {text}"), ty, cx),
                other => self.save(other.kind(), ty, cx),
            },
            Ty::Time => match v {
                Node::String(s) => parse_rfc3339(s)?,
                // `metav1.Time.UnmarshalJSON` first decodes a string.
                other => return Err(type_error(other.kind(), "string", cx)),
            },
            Ty::FieldsV1 => {}
            Ty::StringMap => match v {
                Node::Object(entries) => {
                    for (_, item) in entries {
                        self.value(item, &STRING, cx)?;
                    }
                }
                other => self.save(other.kind(), ty, cx),
            },
            Ty::StringSlice => match v {
                Node::Array(items) => {
                    for item in items {
                        self.value(item, &STRING, cx)?;
                    }
                }
                other => self.save(other.kind(), ty, cx),
            },
            Ty::Struct(def) => match v {
                Node::Object(entries) => {
                    for (key, item) in entries {
                        let Some((_, via, field_ty)) =
                            def.fields.iter().find(|(name, _, _)| name == key)
                        else {
                            continue;
                        };
                        let mut inner = cx.clone();
                        inner.strukt = def.name;
                        inner.path.extend(via.iter().map(|s| (*s).to_owned()));
                        inner.path.push(key.clone());
                        self.value(item, field_ty, &inner)?;
                    }
                }
                other => self.save(other.kind(), ty, cx),
            },
            Ty::StructSlice(def) => match v {
                Node::Array(items) => {
                    for item in items {
                        self.value(item, &Ty::Struct(def), cx)?;
                    }
                }
                other => self.save(other.kind(), ty, cx),
            },
        }
        Ok(())
    }
}

fn type_error(found: &str, go_type: &str, cx: &Context) -> String {
    format!(
        "json: cannot unmarshal {found} into Go struct field {}.{} of type {go_type}",
        cx.strukt,
        cx.path.join(".")
    )
}

/// The layout `metav1.Time` parses with (`time.RFC3339`).
const RFC3339: &str = "2006-01-02T15:04:05Z07:00";

/// Go's `time.Parse(time.RFC3339, value)`, for its verdict and error message. The elements of
/// the layout are read in turn:
///
/// | element | accepts | range checked |
/// |---|---|---|
/// | `2006` | four digits | |
/// | `-`, `-`, `T`, `:`, `:` | that byte | |
/// | `01` `02` `04` `05` | two digits | month 1-12, minute and second below 60 |
/// | `15` | one or two digits | hour below 24 |
/// | (after `05`) | `.` or `,` and digits: fractional seconds | |
/// | `Z07:00` | `Z`, or `±hh:mm` | offset hour at most 24, minute at most 60 |
///
/// then the day against the month's length. Failures read `cannot parse "<rest>" as
/// "<element>"`, `<what> out of range`, `day out of range` or `extra text: "<rest>"`.
pub fn parse_rfc3339(value: &str) -> Result<(), String> {
    let quoted_value = time_quote(value);
    let cannot_parse = |rest: &[u8], elem: &str| {
        format!(
            "parsing time {quoted_value} as {}: cannot parse {} as {}",
            time_quote(RFC3339),
            time_quote(&String::from_utf8_lossy(rest)),
            time_quote(elem)
        )
    };
    let out_of_range = |what: &str| format!("parsing time {quoted_value}: {what} out of range");
    let mut v = value.as_bytes();
    let digit = |v: &[u8], i: usize| v.get(i).is_some_and(u8::is_ascii_digit);
    // Go's getnum: one digit, or two (required when `fixed`).
    let getnum = |v: &[u8], fixed: bool| -> Option<(u32, usize)> {
        if !digit(v, 0) {
            return None;
        }
        if !digit(v, 1) {
            if fixed {
                return None;
            }
            return Some((u32::from(v[0] - b'0'), 1));
        }
        Some((u32::from(v[0] - b'0') * 10 + u32::from(v[1] - b'0'), 2))
    };
    let skip = |v: &mut &[u8], byte: u8| -> Result<(), String> {
        if v.first() == Some(&byte) {
            *v = &v[1..];
            Ok(())
        } else {
            Err(cannot_parse(v, &(byte as char).to_string()))
        }
    };

    // 2006
    if v.len() < 4 || !v[..4].iter().all(u8::is_ascii_digit) {
        return Err(cannot_parse(v, "2006"));
    }
    let year: i64 = v[..4]
        .iter()
        .fold(0, |acc, b| acc * 10 + i64::from(b - b'0'));
    v = &v[4..];
    skip(&mut v, b'-')?;
    // 01
    let (month, n) = getnum(v, true).ok_or_else(|| cannot_parse(v, "01"))?;
    v = &v[n..];
    if !(1..=12).contains(&month) {
        return Err(out_of_range("month"));
    }
    skip(&mut v, b'-')?;
    // 02 (checked against the month at the end)
    let (day, n) = getnum(v, true).ok_or_else(|| cannot_parse(v, "02"))?;
    v = &v[n..];
    skip(&mut v, b'T')?;
    // 15
    let (hour, n) = getnum(v, false).ok_or_else(|| cannot_parse(v, "15"))?;
    v = &v[n..];
    if hour >= 24 {
        return Err(out_of_range("hour"));
    }
    skip(&mut v, b':')?;
    // 04
    let (minute, n) = getnum(v, true).ok_or_else(|| cannot_parse(v, "04"))?;
    v = &v[n..];
    if minute >= 60 {
        return Err(out_of_range("minute"));
    }
    skip(&mut v, b':')?;
    // 05, then fractional seconds the layout does not name
    let (second, n) = getnum(v, true).ok_or_else(|| cannot_parse(v, "05"))?;
    v = &v[n..];
    if second >= 60 {
        return Err(out_of_range("second"));
    }
    if v.len() >= 2 && matches!(v[0], b'.' | b',') && digit(v, 1) {
        let n = 1 + v[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        v = &v[n..];
    }
    // Z07:00
    if v.first() == Some(&b'Z') {
        v = &v[1..];
    } else {
        let hold = v;
        if v.len() < 6 || v[3] != b':' {
            return Err(cannot_parse(hold, "Z07:00"));
        }
        let hh = getnum(&v[1..3], true);
        // Go reads the minutes only when the hours read, and names the last range it finds.
        let mm = hh.and_then(|_| getnum(&v[4..6], true));
        if mm.is_some_and(|(m, _)| m > 60) {
            return Err(out_of_range("time zone offset minute"));
        }
        if hh.is_some_and(|(h, _)| h > 24) {
            return Err(out_of_range("time zone offset hour"));
        }
        if hh.is_none() || mm.is_none() || !matches!(v[0], b'+' | b'-') {
            return Err(cannot_parse(hold, "Z07:00"));
        }
        v = &v[6..];
    }
    if !v.is_empty() {
        return Err(format!(
            "parsing time {quoted_value}: extra text: {}",
            time_quote(&String::from_utf8_lossy(v))
        ));
    }
    if day < 1 || day > days_in(month, year) {
        return Err(format!("parsing time {quoted_value}: day out of range"));
    }
    Ok(())
}

fn days_in(month: u32, year: i64) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The `time` package's quoting: ASCII from the space on kept (with `"` and `\` escaped), every
/// byte of anything else (and of control characters) as `\xNN`.
fn time_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c.is_ascii() && c >= ' ' {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(yaml: &str) -> Node {
        let doc = olm_api::fbc::yaml::Document {
            text: yaml.as_bytes().to_vec(),
            first_line: 1,
        };
        Node::from_yaml(
            olm_api::fbc::yaml::document_to_value(&doc)
                .expect("parses")
                .expect("a value"),
        )
    }

    fn verdict(yaml: &str) -> Result<(), String> {
        check(&node(yaml))
    }

    #[test]
    fn unquoted_yaml_1_1_words_in_labels_and_annotations_are_type_errors() {
        assert_eq!(
            verdict("metadata: {labels: {a: on}}"),
            Err("json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string".into())
        );
        assert_eq!(
            verdict("metadata: {annotations: {a: 1}}"),
            Err("json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string".into())
        );
        assert_eq!(verdict("metadata: {labels: {a: null, b: 'on'}}"), Ok(()));
    }

    #[test]
    fn messages_name_the_innermost_struct_and_the_path_without_indexes() {
        assert_eq!(
            verdict("apiVersion: 1"),
            Err("json: cannot unmarshal number into Go struct field metadataOnlyObject.TypeMeta.apiVersion of type string".into())
        );
        assert_eq!(
            verdict("metadata: hello"),
            Err("json: cannot unmarshal string into Go struct field metadataOnlyObject.metadata of type v1.ObjectMeta".into())
        );
        assert_eq!(
            verdict("metadata: {ownerReferences: [{name: x, controller: 'yes'}]}"),
            Err("json: cannot unmarshal string into Go struct field OwnerReference.metadata.ownerReferences.controller of type bool".into())
        );
        assert_eq!(
            verdict("metadata: {generation: 1.5}"),
            Err("json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64".into())
        );
        assert_eq!(
            verdict("metadata: {generation: 1e3}"),
            Ok(()),
            "written 1000"
        );
        assert_eq!(
            verdict("metadata: {finalizers: x, uid: 5}"),
            Err("json: cannot unmarshal string into Go struct field ObjectMeta.metadata.finalizers of type []string".into()),
            "keys are sorted for YAML: finalizers before uid"
        );
    }

    #[test]
    fn a_time_error_stops_decoding_and_wins_over_an_earlier_type_error() {
        assert_eq!(
            verdict("metadata: {annotations: {a: 1}, creationTimestamp: 5}"),
            Err("json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string".into())
        );
        assert_eq!(
            verdict("metadata: {managedFields: [{manager: 1, time: x}]}"),
            Err("parsing time \"x\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"x\" as \"2006\"".into())
        );
        assert_eq!(verdict("metadata: {creationTimestamp: null}"), Ok(()));
    }

    #[test]
    fn times_parse_as_go_parses_rfc3339() {
        for ok in [
            "2021-01-01T10:00:00Z",
            "2021-01-01T10:00:00+01:00",
            "2021-01-01T1:00:00Z",
            "2021-01-01T10:00:00.123456789123Z",
            "2020-02-29T00:00:00-24:00",
        ] {
            assert_eq!(parse_rfc3339(ok), Ok(()), "{ok}");
        }
        let layout = "as \"2006-01-02T15:04:05Z07:00\"";
        for (bad, want) in [
            (
                "2021-13-01T00:00:00Z",
                "parsing time \"2021-13-01T00:00:00Z\": month out of range".to_owned(),
            ),
            (
                "2021-01-01",
                format!("parsing time \"2021-01-01\" {layout}: cannot parse \"\" as \"T\""),
            ),
            (
                "2021-02-30T00:00:00Z",
                "parsing time \"2021-02-30T00:00:00Z\": day out of range".to_owned(),
            ),
            (
                "2021-01-01T24:00:00Z",
                "parsing time \"2021-01-01T24:00:00Z\": hour out of range".to_owned(),
            ),
            (
                "2021-01-01T00:00:00",
                format!(
                    "parsing time \"2021-01-01T00:00:00\" {layout}: cannot parse \"\" as \"Z07:00\""
                ),
            ),
            (
                "2021-01-01T00:00:00Zx",
                "parsing time \"2021-01-01T00:00:00Zx\": extra text: \"x\"".to_owned(),
            ),
            (
                "2021-01-01T00:00:00+25:00",
                "parsing time \"2021-01-01T00:00:00+25:00\": time zone offset hour out of range"
                    .to_owned(),
            ),
            (
                "21-01-01T00:00:00Z",
                format!(
                    "parsing time \"21-01-01T00:00:00Z\" {layout}: cannot parse \"21-01-01T00:00:00Z\" as \"2006\""
                ),
            ),
            (
                "2021-1-01T00:00:00Z",
                format!(
                    "parsing time \"2021-1-01T00:00:00Z\" {layout}: cannot parse \"1-01T00:00:00Z\" as \"01\""
                ),
            ),
            (
                "é",
                format!(
                    "parsing time \"\\xc3\\xa9\" {layout}: cannot parse \"\\xc3\\xa9\" as \"2006\""
                ),
            ),
        ] {
            assert_eq!(parse_rfc3339(bad), Err(want), "{bad}");
        }
    }
}
