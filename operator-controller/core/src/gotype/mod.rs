//! Go's typed round trip of Kubernetes objects: decode into upstream's Go structs, marshal back.
//!
//! Input: a JSON value (an object read from a bundle manifest, or a configuration document) and the
//! Go type upstream decodes it into. Output: the JSON `json.Marshal` writes for that typed value,
//! or the conversion error. No IO.
//!
//! Upstream never applies a bundle's YAML as written: it decodes the CSV, the CRDs and the
//! `deploymentConfig` into typed Go structs, edits them, and marshals the result. That round trip
//! is visible in every rendered object, so this module reproduces it from the field tables in
//! [`shapes`] (generated from the same Go modules upstream builds with):
//!
//! | Go rule | effect on the rendered object |
//! |---|---|
//! | unknown fields are dropped | a misspelt field in a CSV deployment silently disappears |
//! | fields without `omitempty` are always written | `strategy: {}`, `resources: {}`, `status: {}` appear |
//! | nil slices/maps/pointers without `omitempty` are `null` | `storedVersions: null` in a CRD status |
//! | empty values with `omitempty` are dropped | `args: []` disappears; `{}` structs stay |
//! | `omitzero` drops zero values | `creationTimestamp` is absent, not `null` |
//! | custom JSON types | quantities are canonicalised (`0.5` → `500m`), times normalised to UTC |
//!
//! Two decoders exist upstream and both are reproduced ([`Mode`]): the unstructured converter
//! (CSV, CRDs: exact key match) and `encoding/json` (`deploymentConfig`, and every schema nested
//! below a CRD's `items`/`additionalProperties`: keys match case-insensitively). Type mismatches
//! give the decoders' own messages plus the field path.

pub mod encode;
mod quantity;
pub mod shapes;

use std::fmt;

use base64::Engine as _;
use serde_json::{Map, Number, Value};

pub use quantity::canonical as canonical_quantity;
use shapes::{Shapes, Special, Ty, TyId};

/// Which Go decoder reads the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `runtime.DefaultUnstructuredConverter.FromUnstructured`: keys match exactly.
    Unstructured,
    /// `encoding/json.Unmarshal`: keys match exactly, else case-insensitively.
    Json,
}

/// A value that does not fit the Go type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoError {
    /// The decoder's message (upstream's text where upstream has one).
    pub message: String,
    /// Where in the object: `spec.install.spec.deployments[0].spec.replicas`.
    pub path: String,
}

impl fmt::Display for GoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{} (field {})", self.message, self.path)
        }
    }
}

impl std::error::Error for GoError {}

/// Round-trips `value` through the root type `root` (`Deployment`, `ClusterServiceVersion`, ...).
pub fn round_trip(root: &str, value: &Value, mode: Mode) -> Result<Value, GoError> {
    let shapes = Shapes::get();
    let ty = shapes.root(root).ok_or_else(|| GoError {
        message: format!("internal error: no Go shape for {root}"),
        path: String::new(),
    })?;
    round_trip_type(ty, value, mode)
}

/// Round-trips `value` through the type `ty` of [`Shapes::get`].
pub fn round_trip_type(ty: TyId, value: &Value, mode: Mode) -> Result<Value, GoError> {
    let mut conv = Converter {
        shapes: Shapes::get(),
        mode,
        path: Vec::new(),
    };
    Ok(conv.convert(Some(value), ty)?.value)
}

/// A converted value with the facts `omitempty` and `omitzero` need.
struct Out {
    value: Value,
    /// Go's `isEmptyValue`: false, 0, "", nil pointer/interface, zero-length slice/map.
    empty: bool,
    /// The Go zero value (what `omitzero` tests).
    zero: bool,
}

impl Out {
    fn new(value: Value, empty: bool, zero: bool) -> Out {
        Out { value, empty, zero }
    }
}

enum Seg {
    Key(String),
    Index(usize),
}

struct Converter<'s> {
    shapes: &'s Shapes,
    mode: Mode,
    path: Vec<Seg>,
}

/// Go's reflect kind name of an unstructured value, as the converter prints it.
fn unstructured_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "invalid",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
    }
}

/// The JSON type name encoding/json prints in `cannot unmarshal X into ...`.
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

impl Converter<'_> {
    fn err(&self, message: impl Into<String>) -> GoError {
        let mut path = String::new();
        for seg in &self.path {
            match seg {
                Seg::Key(k) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                }
                Seg::Index(i) => {
                    path.push('[');
                    path.push_str(&i.to_string());
                    path.push(']');
                }
            }
        }
        GoError {
            message: message.into(),
            path,
        }
    }

    /// The error for a value of the wrong JSON type for a non-struct target.
    fn mismatch(&self, v: &Value, ty: TyId) -> GoError {
        let go = self.go_type_name(ty);
        match self.mode {
            Mode::Json => self.err(format!(
                "json: cannot unmarshal {} into Go value of type {go}",
                json_kind(v)
            )),
            Mode::Unstructured => {
                let kind = self.kind_name(ty);
                // int64 is ConvertibleTo a string kind in Go (to a rune), so the converter reports
                // a failed conversion there instead of an unknown type.
                if matches!(self.shapes.types[ty], Ty::Str { .. })
                    && matches!(v, Value::Number(n) if n.is_i64())
                {
                    return self.err(format!("cannot convert int64 to {go}"));
                }
                match (&self.shapes.types[ty], v) {
                    (Ty::Map(_), _) => {
                        self.err(format!("cannot restore map from {}", unstructured_kind(v)))
                    }
                    (Ty::Slice(_) | Ty::Bytes, _) => self.err(format!(
                        "cannot restore slice from {}",
                        unstructured_kind(v)
                    )),
                    (Ty::Struct(_), _) => self.err(format!(
                        "cannot restore struct from: {}",
                        unstructured_kind(v)
                    )),
                    _ => self.err(format!("unrecognized type: {kind}")),
                }
            }
        }
    }

    fn go_type_name(&self, ty: TyId) -> String {
        match &self.shapes.types[ty] {
            Ty::Bool => "bool".into(),
            Ty::Str { go } | Ty::Int { go, .. } | Ty::Uint { go, .. } | Ty::Float { go } => {
                go.clone()
            }
            Ty::Bytes => "[]uint8".into(),
            Ty::Any => "interface {}".into(),
            Ty::Ptr(inner) => format!("*{}", self.go_type_name(*inner)),
            Ty::Slice(inner) => format!("[]{}", self.go_type_name(*inner)),
            Ty::Map(inner) => format!("map[string]{}", self.go_type_name(*inner)),
            Ty::Struct(s) => self.shapes.structs[*s].go_name.clone(),
            Ty::Special(s) => format!("{s:?}"),
        }
    }

    fn kind_name(&self, ty: TyId) -> &'static str {
        match &self.shapes.types[ty] {
            Ty::Bool => "bool",
            Ty::Str { .. } => "string",
            Ty::Int { bits: 8, .. } => "int8",
            Ty::Int { bits: 16, .. } => "int16",
            Ty::Int { bits: 32, .. } => "int32",
            Ty::Int { .. } => "int64",
            Ty::Uint { bits: 8, .. } => "uint8",
            Ty::Uint { bits: 16, .. } => "uint16",
            Ty::Uint { bits: 32, .. } => "uint32",
            Ty::Uint { .. } => "uint64",
            Ty::Float { .. } => "float64",
            Ty::Bytes | Ty::Slice(_) => "slice",
            Ty::Any => "interface",
            Ty::Ptr(_) => "ptr",
            Ty::Map(_) => "map",
            Ty::Struct(_) | Ty::Special(_) => "struct",
        }
    }

    /// The Go zero value of `ty`, marshalled.
    fn zero(&self, ty: TyId) -> Out {
        match &self.shapes.types[ty] {
            Ty::Bool => Out::new(Value::Bool(false), true, true),
            Ty::Str { .. } => Out::new(Value::String(String::new()), true, true),
            Ty::Int { .. } | Ty::Uint { .. } | Ty::Float { .. } => {
                Out::new(Value::Number(0.into()), true, true)
            }
            Ty::Bytes | Ty::Any | Ty::Ptr(_) | Ty::Slice(_) | Ty::Map(_) => {
                Out::new(Value::Null, true, true)
            }
            Ty::Struct(s) => {
                let mut obj = Map::new();
                self.zero_struct_into(*s, &mut obj);
                Out::new(Value::Object(obj), false, true)
            }
            Ty::Special(special) => {
                let value = match special {
                    Special::Quantity => Value::String("0".into()),
                    Special::IntOrString => Value::Number(0.into()),
                    Special::SchemaOrBool => Value::Bool(false),
                    Special::OperatorVersion => Value::String("0.0.0".into()),
                    Special::OperatorRelease => Value::String(String::new()),
                    Special::Time
                    | Special::Json
                    | Special::FieldsV1
                    | Special::RawMessage
                    | Special::SchemaOrArray
                    | Special::SchemaOrStringArray => Value::Null,
                };
                // RawMessage is a byte slice: empty when nil. The others are structs.
                Out::new(value, *special == Special::RawMessage, true)
            }
        }
    }

    fn zero_struct_into(&self, s: usize, obj: &mut Map<String, Value>) {
        for field in &self.shapes.structs[s].fields {
            if field.inline {
                if let Ty::Struct(inner) = self.shapes.types[field.ty] {
                    self.zero_struct_into(inner, obj);
                }
                continue;
            }
            let z = self.zero(field.ty);
            if (field.omit_empty && z.empty) || field.omit_zero {
                continue;
            }
            obj.entry(field.name.clone()).or_insert(z.value);
        }
    }

    fn convert(&mut self, v: Option<&Value>, ty: TyId) -> Result<Out, GoError> {
        let v = match v {
            None | Some(Value::Null) => return Ok(self.zero(ty)),
            Some(v) => v,
        };
        match self.shapes.types[ty].clone() {
            Ty::Bool => match v {
                Value::Bool(b) => Ok(Out::new(Value::Bool(*b), !*b, !*b)),
                _ => Err(self.mismatch(v, ty)),
            },
            Ty::Str { .. } => match v {
                Value::String(s) => Ok(Out::new(v.clone(), s.is_empty(), s.is_empty())),
                _ => Err(self.mismatch(v, ty)),
            },
            Ty::Int { bits, go } => {
                let n = self.integer(v, ty, &go)?;
                let n = wrap_signed(n, bits);
                Ok(Out::new(Value::Number(n.into()), n == 0, n == 0))
            }
            Ty::Uint { bits, go } => {
                let n = self.integer(v, ty, &go)?;
                let n = wrap_unsigned(n, bits);
                Ok(Out::new(Value::Number(n.into()), n == 0, n == 0))
            }
            Ty::Float { .. } => match v {
                Value::Number(n) => {
                    let f = n.as_f64().unwrap_or(0.0);
                    Ok(Out::new(go_float(f), f == 0.0, f == 0.0))
                }
                _ => Err(self.mismatch(v, ty)),
            },
            Ty::Bytes => match v {
                Value::String(s) => {
                    let bytes = decode_base64(s).map_err(|e| self.err(e))?;
                    let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
                    Ok(Out::new(Value::String(text), bytes.is_empty(), false))
                }
                _ => Err(self.mismatch(v, ty)),
            },
            Ty::Any => Ok(Out::new(v.clone(), false, false)),
            Ty::Ptr(inner) => {
                let out = self.convert(Some(v), inner)?;
                Ok(Out::new(out.value, false, false))
            }
            Ty::Slice(inner) => match v {
                Value::Array(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        self.path.push(Seg::Index(i));
                        let converted = self.convert(Some(item), inner);
                        self.path.pop();
                        out.push(converted?.value);
                    }
                    let empty = out.is_empty();
                    Ok(Out::new(Value::Array(out), empty, false))
                }
                _ => Err(self.mismatch(v, ty)),
            },
            Ty::Map(inner) => match v {
                Value::Object(entries) => {
                    let mut out = Map::new();
                    for (k, item) in entries {
                        self.path.push(Seg::Key(k.clone()));
                        let converted = self.convert(Some(item), inner);
                        self.path.pop();
                        out.insert(k.clone(), converted?.value);
                    }
                    let empty = out.is_empty();
                    Ok(Out::new(Value::Object(out), empty, false))
                }
                _ => Err(self.mismatch(v, ty)),
            },
            Ty::Struct(s) => match v {
                Value::Object(entries) => {
                    let mut out = Map::new();
                    let zero = self.struct_into(s, entries, &mut out)?;
                    Ok(Out::new(Value::Object(out), false, zero))
                }
                _ => Err(self.mismatch(v, ty)),
            },
            Ty::Special(special) => self.special(special, v),
        }
    }

    /// Fills `out` with the fields of struct `s` read from `entries`; returns whether every field
    /// is zero.
    fn struct_into(
        &mut self,
        s: usize,
        entries: &Map<String, Value>,
        out: &mut Map<String, Value>,
    ) -> Result<bool, GoError> {
        let mut all_zero = true;
        let fields = self.shapes.structs[s].fields.clone();
        for field in &fields {
            if field.inline {
                match self.shapes.types[field.ty] {
                    Ty::Struct(inner) => {
                        all_zero &= self.struct_into(inner, entries, out)?;
                    }
                    _ => {
                        return Err(self.err("internal error: inlined field is not a struct"));
                    }
                }
                continue;
            }
            let found = match self.mode {
                Mode::Unstructured => entries.get(&field.name),
                Mode::Json => entries.get(&field.name).or_else(|| {
                    entries
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(&field.name))
                        .map(|(_, v)| v)
                }),
            };
            self.path.push(Seg::Key(field.name.clone()));
            let converted = self.convert(found, field.ty);
            self.path.pop();
            let converted = converted?;
            all_zero &= converted.zero;
            if (field.omit_empty && converted.empty) || (field.omit_zero && converted.zero) {
                continue;
            }
            // An outer field wins over a promoted one of the same name (Go's depth rule).
            out.entry(field.name.clone()).or_insert(converted.value);
        }
        Ok(all_zero)
    }

    fn integer(&self, v: &Value, ty: TyId, go: &str) -> Result<i128, GoError> {
        match v {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    return Ok(i128::from(i));
                }
                if let Some(u) = n.as_u64() {
                    return Ok(i128::from(u));
                }
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.is_finite() && f == f.trunc() && f.abs() < 1e38 {
                    Ok(f as i128)
                } else {
                    match self.mode {
                        Mode::Unstructured => {
                            Err(self.err(format!("cannot convert float64 to {go}")))
                        }
                        Mode::Json => Err(self.err(format!(
                            "json: cannot unmarshal number {f} into Go value of type {go}"
                        ))),
                    }
                }
            }
            _ => Err(self.mismatch(v, ty)),
        }
    }

    fn special(&mut self, special: Special, v: &Value) -> Result<Out, GoError> {
        match special {
            Special::Quantity => {
                let text = match v {
                    Value::String(s) => s.trim().to_owned(),
                    Value::Number(n) => go_number_text(n),
                    other => other.to_string(),
                };
                let canonical = quantity::canonical(&text).map_err(|e| self.err(e))?;
                Ok(Out::new(Value::String(canonical), false, false))
            }
            Special::IntOrString => match v {
                Value::String(s) => Ok(Out::new(Value::String(s.clone()), false, false)),
                Value::Number(n) => {
                    let i = n
                        .as_i64()
                        .or_else(|| {
                            n.as_f64()
                                .filter(|f| *f == f.trunc() && f.abs() < 1e18)
                                .map(|f| f as i64)
                        })
                        .and_then(|i| i32::try_from(i).ok())
                        .ok_or_else(|| {
                            self.err(format!(
                                "json: cannot unmarshal number {} into Go value of type int32",
                                go_number_text(n)
                            ))
                        })?;
                    Ok(Out::new(Value::Number(i.into()), false, i == 0))
                }
                other => Err(self.err(format!(
                    "json: cannot unmarshal {} into Go value of type int32",
                    json_kind(other)
                ))),
            },
            Special::Time => match v {
                Value::String(s) => {
                    let t = rfc3339_to_utc(s).ok_or_else(|| {
                        self.err(format!(
                            "parsing time {:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse",
                            s
                        ))
                    })?;
                    Ok(Out::new(Value::String(t), false, false))
                }
                other => Err(self.err(format!(
                    "json: cannot unmarshal {} into Go value of type string",
                    json_kind(other)
                ))),
            },
            Special::Json | Special::FieldsV1 | Special::RawMessage => {
                Ok(Out::new(v.clone(), false, false))
            }
            Special::SchemaOrArray => {
                let schema_ty = self.schema_props_type()?;
                match v {
                    Value::Object(_) => {
                        let out = self.nested_json(v, schema_ty)?;
                        Ok(Out::new(out, false, false))
                    }
                    Value::Array(items) => {
                        let mut out = Vec::with_capacity(items.len());
                        for (i, item) in items.iter().enumerate() {
                            self.path.push(Seg::Index(i));
                            let converted = self.nested_json(item, schema_ty);
                            self.path.pop();
                            out.push(converted?);
                        }
                        if out.is_empty() {
                            Ok(Out::new(Value::Null, false, true))
                        } else {
                            Ok(Out::new(Value::Array(out), false, false))
                        }
                    }
                    _ => Ok(Out::new(Value::Null, false, true)),
                }
            }
            Special::SchemaOrBool => match v {
                Value::Object(_) => {
                    let schema_ty = self.schema_props_type()?;
                    let out = self.nested_json(v, schema_ty)?;
                    Ok(Out::new(out, false, false))
                }
                Value::Bool(b) => Ok(Out::new(Value::Bool(*b), false, !*b)),
                _ => Err(self.err("boolean or JSON schema expected")),
            },
            Special::SchemaOrStringArray => match v {
                Value::Object(_) => {
                    let schema_ty = self.schema_props_type()?;
                    let out = self.nested_json(v, schema_ty)?;
                    Ok(Out::new(out, false, false))
                }
                Value::Array(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for item in items {
                        match item {
                            Value::String(s) => out.push(Value::String(s.clone())),
                            Value::Null => out.push(Value::String(String::new())),
                            other => {
                                return Err(self.err(format!(
                                    "json: cannot unmarshal {} into Go value of type string",
                                    json_kind(other)
                                )));
                            }
                        }
                    }
                    if out.is_empty() {
                        Ok(Out::new(Value::Null, false, true))
                    } else {
                        Ok(Out::new(Value::Array(out), false, false))
                    }
                }
                _ => Ok(Out::new(Value::Null, false, true)),
            },
            Special::OperatorVersion => match v {
                Value::String(s) => {
                    let version = parse_tolerant(s).map_err(|e| self.err(e))?;
                    Ok(Out::new(Value::String(version), false, false))
                }
                other => Err(self.err(format!(
                    "json: cannot unmarshal {} into Go value of type string",
                    json_kind(other)
                ))),
            },
            Special::OperatorRelease => match v {
                Value::String(s) => {
                    for segment in s.split('.') {
                        check_prerelease_identifier(segment).map_err(|e| self.err(e))?;
                    }
                    Ok(Out::new(Value::String(s.clone()), false, false))
                }
                other => Err(self.err(format!(
                    "json: cannot unmarshal {} into Go value of type string",
                    json_kind(other)
                ))),
            },
        }
    }

    fn schema_props_type(&self) -> Result<TyId, GoError> {
        self.shapes
            .struct_type("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps")
            .ok_or_else(|| self.err("internal error: no shape for JSONSchemaProps"))
    }

    /// A schema nested in a custom unmarshaller: decoded by encoding/json.
    fn nested_json(&mut self, v: &Value, ty: TyId) -> Result<Value, GoError> {
        let saved = self.mode;
        self.mode = Mode::Json;
        let out = self.convert(Some(v), ty);
        self.mode = saved;
        Ok(out?.value)
    }
}

fn wrap_signed(n: i128, bits: u8) -> i64 {
    // Go's reflect Convert truncates to the target width.
    let shift = 128 - u32::from(bits);
    ((n << shift) >> shift) as i64
}

fn wrap_unsigned(n: i128, bits: u8) -> u64 {
    let mask: u128 = if bits >= 64 {
        u128::from(u64::MAX)
    } else {
        (1u128 << bits) - 1
    };
    ((n as u128) & mask) as u64
}

/// A float64 as Go writes it: integral values within ±2^53 become JSON integers, as the text
/// `json.Marshal` produces then parses back to.
fn go_float(f: f64) -> Value {
    if f == f.trunc() && f.abs() < 9.007_199_254_740_992e15 {
        Value::Number(Number::from(f as i64))
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// The text Go's json.Marshal writes for an unstructured number.
fn go_number_text(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let mut out = Vec::new();
    olm_api::fbc::gojson::write_float(n.as_f64().unwrap_or(0.0), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// encoding/json's base64 decoding of `[]byte` (standard alphabet, padding required, CR/LF
/// ignored).
fn decode_base64(s: &str) -> Result<Vec<u8>, String> {
    let cleaned: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .map_err(|e| format!("illegal base64 data: {e}"))
}

/// blang/semver's `ParseTolerant`: the version as `Version.String()` writes it.
pub fn parse_tolerant(s: &str) -> Result<String, String> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_owned).collect();
    for p in &mut parts {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            let starts_with_digit = trimmed.chars().next().is_some_and(|c| c.is_ascii_digit());
            *p = if trimmed.is_empty() || !starts_with_digit {
                format!("0{trimmed}")
            } else {
                trimmed.to_owned()
            };
        }
    }
    if parts.len() < 3 {
        if parts
            .last()
            .is_some_and(|p| p.contains('+') || p.contains('-'))
        {
            return Err("Short version cannot contain PreRelease/Build meta data".into());
        }
        while parts.len() < 3 {
            parts.push("0".into());
        }
    }
    let joined = parts.join(".");
    olm_api::version::blang::parse_version(&joined)
        .map(|v| v.to_string())
        .map_err(|e| e.to_string())
}

/// blang/semver's `NewPRVersion` checks.
fn check_prerelease_identifier(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("Prerelease is empty".into());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        if s.len() > 1 && s.starts_with('0') {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {s:?}"
            ));
        }
        if s.parse::<u64>().is_err() {
            return Err(format!(
                "strconv.ParseUint: parsing {s:?}: value out of range"
            ));
        }
        return Ok(());
    }
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        Ok(())
    } else {
        Err(format!("Invalid character(s) found in prerelease {s:?}"))
    }
}

/// Whether `s` is an RFC 3339 date-time Go's `time.Parse(time.RFC3339, s)` accepts.
pub fn is_rfc3339(s: &str) -> bool {
    rfc3339_to_utc(s).is_some()
}

/// Parses RFC 3339 (`time.RFC3339`, fractional seconds allowed) and writes it in UTC without
/// fractional seconds, as `metav1.Time` marshals.
fn rfc3339_to_utc(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't') {
        return None;
    }
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let offset_minutes = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let h = num(i + 1..i + 3)?;
            let m = num(i + 4..i + 6)?;
            let total = h * 60 + m;
            if *sign == b'-' { -total } else { total }
        }
        _ => return None,
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut total = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_minutes * 60;
    let days = total.div_euclid(86_400);
    total = total.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    Some(format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z",
        total / 3600,
        (total / 60) % 60,
        total % 60
    ))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deployment_gets_go_zero_fields_and_loses_unknown_ones() {
        let input = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "bogus": 1},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {"spec": {"containers": [
                    {"name": "c", "image": "i", "args": [], "unknownField": true,
                     "resources": {"limits": {"cpu": 0.5, "memory": "2048Mi"}}}
                ]}}
            }
        });
        let out = round_trip("Deployment", &input, Mode::Unstructured).expect("converts");
        assert_eq!(
            out,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "strategy": {},
                    "template": {"metadata": {}, "spec": {"containers": [
                        {"name": "c", "image": "i",
                         "resources": {"limits": {"cpu": "500m", "memory": "2Gi"}}}
                    ]}}
                },
                "status": {}
            })
        );
    }

    #[test]
    fn crd_status_gets_nulls_and_nested_schemas_decode_case_insensitively() {
        let input = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "a.b"},
            "spec": {"group": "b", "names": {"plural": "a", "kind": "A"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"x": {"type": "array", "items": {"Type": "string", "default": ""}}},
                    "additionalProperties": false
                }}}]}
        });
        let out = round_trip("CustomResourceDefinition", &input, Mode::Unstructured).expect("ok");
        assert_eq!(
            out["status"],
            json!({"acceptedNames": {"kind": "", "plural": ""}, "conditions": null, "storedVersions": null})
        );
        let schema = &out["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        assert_eq!(
            schema["properties"]["x"]["items"],
            json!({"type": "string", "default": ""})
        );
        assert_eq!(schema["additionalProperties"], json!(false));
    }

    #[test]
    fn type_mismatches_name_the_field() {
        let input = json!({"spec": {"replicas": "two"}});
        let err = round_trip("Deployment", &input, Mode::Unstructured).expect_err("mismatch");
        assert_eq!(err.message, "unrecognized type: int32");
        assert_eq!(err.path, "spec.replicas");
        let input = json!({"metadata": {"labels": {"a": 1}}});
        let err = round_trip("Deployment", &input, Mode::Unstructured).expect_err("mismatch");
        assert_eq!(
            err.to_string(),
            "cannot convert int64 to string (field metadata.labels.a)"
        );
    }

    #[test]
    fn times_are_written_in_utc() {
        assert_eq!(
            rfc3339_to_utc("2020-02-29T23:30:00-01:00").as_deref(),
            Some("2020-03-01T00:30:00Z")
        );
        assert_eq!(
            rfc3339_to_utc("2021-01-01T00:00:00.123Z").as_deref(),
            Some("2021-01-01T00:00:00Z")
        );
        assert_eq!(rfc3339_to_utc("2021-13-01T00:00:00Z"), None);
    }

    #[test]
    fn operator_versions_parse_tolerantly_as_blang_does() {
        assert_eq!(parse_tolerant("v1.2").as_deref(), Ok("1.2.0"));
        assert_eq!(parse_tolerant("01.02.03").as_deref(), Ok("1.2.3"));
        assert_eq!(
            parse_tolerant(" 1.0.0-alpha+b1 ").as_deref(),
            Ok("1.0.0-alpha+b1")
        );
        assert!(parse_tolerant("1.0-rc1").is_err());
    }
}
