//! The CustomResourceDefinition as upstream's check sees it: `apiextensions.k8s.io/v1` decoded
//! from an unstructured object the way apimachinery's `DefaultUnstructuredConverter` does.
//!
//! Input: a `serde_json::Value` (a manifest converted from YAML, or an object from the API
//! server). Output: [`Crd`] with [`Schema`] trees, or a [`DecodeError`] naming the field. No IO.
//!
//! Why not `k8s_openapi`'s `JSONSchemaProps`: upstream's verdicts and messages depend on details
//! that type does not keep.
//!
//! | upstream (Go struct)                         | here                       | k8s-openapi               |
//! |----------------------------------------------|----------------------------|---------------------------|
//! | `type: ""` and no `type` are the same         | `String`, empty = absent   | `Option<String>` (differ) |
//! | `default`/`enum`/`example` are raw JSON bytes re-encoded by `encoding/json` (sorted keys, HTML escaped, `1.0` → `1`) | [`Json`] holds those bytes | `serde_json::Value` |
//! | `required: []` is an empty, non-nil slice (go-cmp prints it) | `Option<Vec<_>>`   | `Option<Vec<_>>`          |
//! | `items: true` is a non-nil, empty `JSONSchemaPropsOrArray` | kept                  | rejected                  |
//! | `additionalProperties: true` vs a schema     | [`SchemaOrBool`]           | kept                      |
//! | `null` for any field is the zero value       | kept                       | kept                      |
//! | field order (go-cmp prints fields in struct order) | [`Schema`] follows it | n/a                      |

use std::collections::BTreeMap;

use serde_json::Value;

use super::gofmt::{format_bytes_v, format_float_v, format_strings_v, go_json_marshal};

/// Schemas nested deeper than this are refused (the walk and the diff recurse per level).
pub const MAX_SCHEMA_DEPTH: usize = 128;

/// A field of the input that could not be decoded as upstream decodes it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DecodeError {
    /// JSON path of the offending field (`spec.versions[0].schema.openAPIV3Schema.properties.spec.type`).
    pub path: String,
    pub message: String,
}

/// Raw JSON of `default`, `enum` entries and `example`: exactly the bytes Go's `JSON.Raw` holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Json {
    pub raw: Vec<u8>,
}

impl Json {
    pub fn from_value(v: &Value) -> Json {
        Json {
            raw: go_json_marshal(v),
        }
    }

    /// The raw bytes as text (they are always UTF-8: they come from `encoding/json`).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }

    /// The value, parsed back.
    pub fn value(&self) -> Option<Value> {
        serde_json::from_slice(&self.raw).ok()
    }
}

/// `items`: one schema, or a list (the latter is not allowed by the API server, but decodes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaOrArray {
    pub schema: Option<Box<Schema>>,
    pub schemas: Option<Vec<Schema>>,
}

/// `additionalProperties` / `additionalItems`: a boolean or a schema (`allows` is true with a schema).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaOrBool {
    pub allows: bool,
    pub schema: Option<Box<Schema>>,
}

/// A `dependencies` entry: a schema or a list of property names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaOrStringArray {
    pub schema: Option<Box<Schema>>,
    pub property: Option<Vec<String>>,
}

/// `externalDocs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExternalDocs {
    pub description: String,
    pub url: String,
}

/// One `x-kubernetes-validations` entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValidationRule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: Option<String>,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
}

/// `JSONSchemaProps`, field for field in Go's order (go-cmp and `String()` print in this order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    pub id: String,
    pub schema: String,
    pub reference: Option<String>,
    pub description: String,
    pub type_: String,
    pub format: String,
    pub title: String,
    pub default: Option<Json>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: String,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    pub enum_: Option<Vec<Json>>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Option<Vec<String>>,
    pub items: Option<Box<SchemaOrArray>>,
    pub all_of: Option<Vec<Schema>>,
    pub one_of: Option<Vec<Schema>>,
    pub any_of: Option<Vec<Schema>>,
    pub not: Option<Box<Schema>>,
    pub properties: Option<BTreeMap<String, Schema>>,
    pub additional_properties: Option<Box<SchemaOrBool>>,
    pub pattern_properties: Option<BTreeMap<String, Schema>>,
    pub dependencies: Option<BTreeMap<String, SchemaOrStringArray>>,
    pub additional_items: Option<Box<SchemaOrBool>>,
    pub definitions: Option<BTreeMap<String, Schema>>,
    pub external_docs: Option<ExternalDocs>,
    pub example: Option<Json>,
    pub nullable: bool,
    pub x_preserve_unknown_fields: Option<bool>,
    pub x_embedded_resource: bool,
    pub x_int_or_string: bool,
    pub x_list_map_keys: Option<Vec<String>>,
    pub x_list_type: Option<String>,
    pub x_map_type: Option<String>,
    pub x_validations: Option<Vec<ValidationRule>>,
}

/// One entry of `spec.versions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CrdVersion {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    /// `schema.openAPIV3Schema`.
    pub schema: Option<Schema>,
}

/// The parts of a CustomResourceDefinition the upgrade check reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Crd {
    /// `metadata.name`.
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// `spec.scope` (`Namespaced` or `Cluster`).
    pub scope: String,
    pub versions: Vec<CrdVersion>,
    /// `spec.conversion.strategy` (empty when there is no `conversion` block).
    pub conversion_strategy: String,
    /// `status.storedVersions`.
    pub stored_versions: Vec<String>,
}

impl Crd {
    /// Decodes an `apiextensions.k8s.io/v1` `CustomResourceDefinition`; other kinds are refused.
    pub fn from_value(v: &Value) -> Result<Crd, DecodeError> {
        let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        if api_version != "apiextensions.k8s.io/v1" || kind != "CustomResourceDefinition" {
            return Err(DecodeError {
                path: "".into(),
                message: format!(
                    "not an apiextensions.k8s.io/v1 CustomResourceDefinition (apiVersion {api_version:?}, kind {kind:?})"
                ),
            });
        }
        let d = Decoder { depth: 0 };
        let obj = d.object(v, "")?;
        let mut crd = Crd::default();
        if let Some(meta) = get(obj, "metadata") {
            let meta = d.object(meta, "metadata")?;
            crd.name = d.string(get(meta, "name"), "metadata.name")?;
        }
        if let Some(spec) = get(obj, "spec") {
            let spec = d.object(spec, "spec")?;
            crd.group = d.string(get(spec, "group"), "spec.group")?;
            if let Some(names) = get(spec, "names") {
                let names = d.object(names, "spec.names")?;
                crd.kind = d.string(get(names, "kind"), "spec.names.kind")?;
            }
            crd.scope = d.string(get(spec, "scope"), "spec.scope")?;
            if let Some(conv) = get(spec, "conversion") {
                let conv = d.object(conv, "spec.conversion")?;
                crd.conversion_strategy =
                    d.string(get(conv, "strategy"), "spec.conversion.strategy")?;
            }
            if let Some(versions) = get(spec, "versions") {
                for (i, item) in d.array(versions, "spec.versions")?.iter().enumerate() {
                    let path = format!("spec.versions[{i}]");
                    let vo = d.object(item, &path)?;
                    let mut version = CrdVersion {
                        name: d.string(get(vo, "name"), &format!("{path}.name"))?,
                        served: d.boolean(get(vo, "served"), &format!("{path}.served"))?,
                        storage: d.boolean(get(vo, "storage"), &format!("{path}.storage"))?,
                        schema: None,
                    };
                    if let Some(sv) = get(vo, "schema") {
                        let so = d.object(sv, &format!("{path}.schema"))?;
                        if let Some(root) = get(so, "openAPIV3Schema") {
                            version.schema =
                                Some(d.schema(root, &format!("{path}.schema.openAPIV3Schema"))?);
                        }
                    }
                    crd.versions.push(version);
                }
            }
        }
        if let Some(status) = get(obj, "status") {
            let status = d.object(status, "status")?;
            if let Some(sv) = get(status, "storedVersions") {
                crd.stored_versions = d
                    .strings(Some(sv), "status.storedVersions")?
                    .unwrap_or_default();
            }
        }
        Ok(crd)
    }

    pub fn version(&self, name: &str) -> Option<&CrdVersion> {
        self.versions.iter().find(|v| v.name == name)
    }
}

/// A present, non-null member of an object (Go's converter treats `null` as absent).
fn get<'a>(obj: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
    }
}

struct Decoder {
    depth: usize,
}

impl Decoder {
    fn err(path: &str, message: impl Into<String>) -> DecodeError {
        DecodeError {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    fn object<'a>(
        &self,
        v: &'a Value,
        path: &str,
    ) -> Result<&'a serde_json::Map<String, Value>, DecodeError> {
        v.as_object().ok_or_else(|| {
            Self::err(
                path,
                format!("cannot restore struct from: {}", kind_name(v)),
            )
        })
    }

    fn array<'a>(&self, v: &'a Value, path: &str) -> Result<&'a Vec<Value>, DecodeError> {
        v.as_array()
            .ok_or_else(|| Self::err(path, format!("cannot restore slice from {}", kind_name(v))))
    }

    fn string(&self, v: Option<&Value>, path: &str) -> Result<String, DecodeError> {
        Ok(self.opt_string(v, path)?.unwrap_or_default())
    }

    fn opt_string(&self, v: Option<&Value>, path: &str) -> Result<Option<String>, DecodeError> {
        match v {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Self::err(
                path,
                format!("cannot convert {} to string", kind_name(other)),
            )),
        }
    }

    fn boolean(&self, v: Option<&Value>, path: &str) -> Result<bool, DecodeError> {
        Ok(self.opt_bool(v, path)?.unwrap_or(false))
    }

    fn opt_bool(&self, v: Option<&Value>, path: &str) -> Result<Option<bool>, DecodeError> {
        match v {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(Self::err(
                path,
                format!("cannot convert {} to bool", kind_name(other)),
            )),
        }
    }

    fn opt_f64(&self, v: Option<&Value>, path: &str) -> Result<Option<f64>, DecodeError> {
        match v {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(Self::err(
                path,
                format!("cannot convert {} to float64", kind_name(other)),
            )),
        }
    }

    fn opt_i64(&self, v: Option<&Value>, path: &str) -> Result<Option<i64>, DecodeError> {
        match v {
            None => Ok(None),
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    return Ok(Some(i));
                }
                // The converter accepts a float with no fractional part for an integer field.
                match n.as_f64() {
                    Some(f) if f == f.trunc() && f.abs() < 9.2e18 => Ok(Some(f as i64)),
                    _ => Err(Self::err(path, "cannot convert float64 to int64")),
                }
            }
            Some(other) => Err(Self::err(
                path,
                format!("cannot convert {} to int64", kind_name(other)),
            )),
        }
    }

    fn strings(&self, v: Option<&Value>, path: &str) -> Result<Option<Vec<String>>, DecodeError> {
        let Some(v) = v else { return Ok(None) };
        let items = self.array(v, path)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            // A null entry becomes the zero value, as in Go.
            out.push(self.string(Some(item).filter(|v| !v.is_null()), &format!("{path}[{i}]"))?);
        }
        Ok(Some(out))
    }

    fn schema_list(
        &self,
        v: Option<&Value>,
        path: &str,
    ) -> Result<Option<Vec<Schema>>, DecodeError> {
        let Some(v) = v else { return Ok(None) };
        let items = self.array(v, path)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            out.push(if item.is_null() {
                Schema::default()
            } else {
                self.schema(item, &p)?
            });
        }
        Ok(Some(out))
    }

    fn schema_map(
        &self,
        v: Option<&Value>,
        path: &str,
    ) -> Result<Option<BTreeMap<String, Schema>>, DecodeError> {
        let Some(v) = v else { return Ok(None) };
        let obj = v
            .as_object()
            .ok_or_else(|| Self::err(path, format!("cannot restore map from {}", kind_name(v))))?;
        let mut out = BTreeMap::new();
        for (k, item) in obj {
            let p = format!("{path}.{k}");
            out.insert(
                k.clone(),
                if item.is_null() {
                    Schema::default()
                } else {
                    self.schema(item, &p)?
                },
            );
        }
        Ok(Some(out))
    }

    fn schema_or_bool(&self, v: &Value, path: &str) -> Result<SchemaOrBool, DecodeError> {
        match v {
            Value::Object(_) => Ok(SchemaOrBool {
                allows: true,
                schema: Some(Box::new(self.schema(v, path)?)),
            }),
            Value::Bool(b) => Ok(SchemaOrBool {
                allows: *b,
                schema: None,
            }),
            _ => Err(Self::err(path, "boolean or JSON schema expected")),
        }
    }

    fn schema(&self, v: &Value, path: &str) -> Result<Schema, DecodeError> {
        if self.depth >= MAX_SCHEMA_DEPTH {
            return Err(Self::err(
                path,
                format!("schema nested deeper than {MAX_SCHEMA_DEPTH} levels"),
            ));
        }
        let d = Decoder {
            depth: self.depth + 1,
        };
        let o = self.object(v, path)?;
        let p = |k: &str| format!("{path}.{k}");
        let json = |k: &str| get(o, k).map(Json::from_value);
        let mut s = Schema {
            id: d.string(get(o, "id"), &p("id"))?,
            schema: d.string(get(o, "$schema"), &p("$schema"))?,
            reference: d.opt_string(get(o, "$ref"), &p("$ref"))?,
            description: d.string(get(o, "description"), &p("description"))?,
            type_: d.string(get(o, "type"), &p("type"))?,
            format: d.string(get(o, "format"), &p("format"))?,
            title: d.string(get(o, "title"), &p("title"))?,
            default: json("default"),
            maximum: d.opt_f64(get(o, "maximum"), &p("maximum"))?,
            exclusive_maximum: d.boolean(get(o, "exclusiveMaximum"), &p("exclusiveMaximum"))?,
            minimum: d.opt_f64(get(o, "minimum"), &p("minimum"))?,
            exclusive_minimum: d.boolean(get(o, "exclusiveMinimum"), &p("exclusiveMinimum"))?,
            max_length: d.opt_i64(get(o, "maxLength"), &p("maxLength"))?,
            min_length: d.opt_i64(get(o, "minLength"), &p("minLength"))?,
            pattern: d.string(get(o, "pattern"), &p("pattern"))?,
            max_items: d.opt_i64(get(o, "maxItems"), &p("maxItems"))?,
            min_items: d.opt_i64(get(o, "minItems"), &p("minItems"))?,
            unique_items: d.boolean(get(o, "uniqueItems"), &p("uniqueItems"))?,
            multiple_of: d.opt_f64(get(o, "multipleOf"), &p("multipleOf"))?,
            enum_: None,
            max_properties: d.opt_i64(get(o, "maxProperties"), &p("maxProperties"))?,
            min_properties: d.opt_i64(get(o, "minProperties"), &p("minProperties"))?,
            required: d.strings(get(o, "required"), &p("required"))?,
            items: None,
            all_of: d.schema_list(get(o, "allOf"), &p("allOf"))?,
            one_of: d.schema_list(get(o, "oneOf"), &p("oneOf"))?,
            any_of: d.schema_list(get(o, "anyOf"), &p("anyOf"))?,
            not: None,
            properties: d.schema_map(get(o, "properties"), &p("properties"))?,
            additional_properties: None,
            pattern_properties: d
                .schema_map(get(o, "patternProperties"), &p("patternProperties"))?,
            dependencies: None,
            additional_items: None,
            definitions: d.schema_map(get(o, "definitions"), &p("definitions"))?,
            external_docs: None,
            example: json("example"),
            nullable: d.boolean(get(o, "nullable"), &p("nullable"))?,
            x_preserve_unknown_fields: d.opt_bool(
                get(o, "x-kubernetes-preserve-unknown-fields"),
                &p("x-kubernetes-preserve-unknown-fields"),
            )?,
            x_embedded_resource: d.boolean(
                get(o, "x-kubernetes-embedded-resource"),
                &p("x-kubernetes-embedded-resource"),
            )?,
            x_int_or_string: d.boolean(
                get(o, "x-kubernetes-int-or-string"),
                &p("x-kubernetes-int-or-string"),
            )?,
            x_list_map_keys: d.strings(
                get(o, "x-kubernetes-list-map-keys"),
                &p("x-kubernetes-list-map-keys"),
            )?,
            x_list_type: d.opt_string(
                get(o, "x-kubernetes-list-type"),
                &p("x-kubernetes-list-type"),
            )?,
            x_map_type: d
                .opt_string(get(o, "x-kubernetes-map-type"), &p("x-kubernetes-map-type"))?,
            x_validations: None,
        };
        if let Some(e) = get(o, "enum") {
            // Each entry goes through JSON.UnmarshalJSON; a null entry leaves Raw empty.
            s.enum_ = Some(
                d.array(e, &p("enum"))?
                    .iter()
                    .map(|item| {
                        if item.is_null() {
                            Json::default()
                        } else {
                            Json::from_value(item)
                        }
                    })
                    .collect(),
            );
        }
        if let Some(items) = get(o, "items") {
            // JSONSchemaPropsOrArray.UnmarshalJSON: an object is a schema, an array a list, and
            // anything else leaves both empty (but the pointer is set).
            let mut or_array = SchemaOrArray::default();
            match items {
                Value::Object(_) => {
                    or_array.schema = Some(Box::new(d.schema(items, &p("items"))?));
                }
                Value::Array(_) => or_array.schemas = d.schema_list(Some(items), &p("items"))?,
                _ => {}
            }
            s.items = Some(Box::new(or_array));
        }
        if let Some(not) = get(o, "not") {
            s.not = Some(Box::new(d.schema(not, &p("not"))?));
        }
        if let Some(ap) = get(o, "additionalProperties") {
            s.additional_properties =
                Some(Box::new(d.schema_or_bool(ap, &p("additionalProperties"))?));
        }
        if let Some(ai) = get(o, "additionalItems") {
            s.additional_items = Some(Box::new(d.schema_or_bool(ai, &p("additionalItems"))?));
        }
        if let Some(deps) = get(o, "dependencies") {
            let obj = deps.as_object().ok_or_else(|| {
                Self::err(
                    &p("dependencies"),
                    format!("cannot restore map from {}", kind_name(deps)),
                )
            })?;
            let mut out = BTreeMap::new();
            for (k, item) in obj {
                let path = format!("{}.{k}", p("dependencies"));
                let mut entry = SchemaOrStringArray::default();
                match item {
                    Value::Object(_) => entry.schema = Some(Box::new(d.schema(item, &path)?)),
                    Value::Array(_) => entry.property = d.strings(Some(item), &path)?,
                    _ => {}
                }
                out.insert(k.clone(), entry);
            }
            s.dependencies = Some(out);
        }
        if let Some(docs) = get(o, "externalDocs") {
            let dobj = d.object(docs, &p("externalDocs"))?;
            s.external_docs = Some(ExternalDocs {
                description: d.string(get(dobj, "description"), &p("externalDocs.description"))?,
                url: d.string(get(dobj, "url"), &p("externalDocs.url"))?,
            });
        }
        if let Some(rules) = get(o, "x-kubernetes-validations") {
            let path = p("x-kubernetes-validations");
            let mut out = Vec::new();
            for (i, item) in d.array(rules, &path)?.iter().enumerate() {
                let rp = format!("{path}[{i}]");
                if item.is_null() {
                    out.push(ValidationRule::default());
                    continue;
                }
                let r = d.object(item, &rp)?;
                out.push(ValidationRule {
                    rule: d.string(get(r, "rule"), &format!("{rp}.rule"))?,
                    message: d.string(get(r, "message"), &format!("{rp}.message"))?,
                    message_expression: d.string(
                        get(r, "messageExpression"),
                        &format!("{rp}.messageExpression"),
                    )?,
                    reason: d.opt_string(get(r, "reason"), &format!("{rp}.reason"))?,
                    field_path: d.string(get(r, "fieldPath"), &format!("{rp}.fieldPath"))?,
                    optional_old_self: d
                        .opt_bool(get(r, "optionalOldSelf"), &format!("{rp}.optionalOldSelf"))?,
                });
            }
            s.x_validations = Some(out);
        }
        Ok(s)
    }
}

// ---------------------------------------------------------------------------------------------
// Go's generated `String()` methods (gogo/protobuf) and `%v` of struct values: upstream's `oneOf`
// messages print the schemas this way.

fn ptr_v<T>(v: &Option<T>, f: impl Fn(&T) -> String) -> String {
    match v {
        None => "nil".into(),
        Some(x) => format!("*{}", f(x)),
    }
}

impl Json {
    /// `(*JSON).String()`: `&JSON{Raw:*[123 34 …],}`.
    pub fn gogo_string(&self) -> String {
        format!("&JSON{{Raw:{},}}", raw_v(&self.raw))
    }
}

fn raw_v(raw: &[u8]) -> String {
    // A nil []byte prints as "nil"; Go keeps an empty Raw nil unless a value was decoded.
    if raw.is_empty() {
        "nil".into()
    } else {
        format!("*{}", format_bytes_v(raw))
    }
}

fn opt_gogo<T>(v: &Option<T>, f: impl Fn(&T) -> String) -> String {
    match v {
        None => "nil".into(),
        Some(x) => f(x),
    }
}

impl ValidationRule {
    pub fn gogo_string(&self) -> String {
        format!(
            "&ValidationRule{{Rule:{},Message:{},MessageExpression:{},Reason:{},FieldPath:{},OptionalOldSelf:{},}}",
            self.rule,
            self.message,
            self.message_expression,
            ptr_v(&self.reason, |s| s.clone()),
            self.field_path,
            ptr_v(&self.optional_old_self, |b| b.to_string()),
        )
    }
}

impl Schema {
    /// `(*JSONSchemaProps).String()` as generated by gogo/protobuf.
    pub fn gogo_string(&self) -> String {
        let list = |items: &Option<Vec<Schema>>| {
            let mut s = String::from("[]JSONSchemaProps{");
            for item in items.iter().flatten() {
                s.push_str(item.gogo_string().replacen('&', "", 1).as_str());
                s.push(',');
            }
            s.push('}');
            s
        };
        let map = |prefix: &str, items: &Option<BTreeMap<String, Schema>>| {
            let mut s = format!("{prefix}{{");
            for (k, v) in items.iter().flatten() {
                s.push_str(&format!("{k}: {},", v.go_struct_v(0)));
            }
            s.push('}');
            s
        };
        let mut enums = String::from("[]JSON{");
        for e in self.enum_.iter().flatten() {
            enums.push_str(e.gogo_string().replacen('&', "", 1).as_str());
            enums.push(',');
        }
        enums.push('}');
        let mut rules = String::from("[]ValidationRule{");
        for r in self.x_validations.iter().flatten() {
            rules.push_str(r.gogo_string().replacen('&', "", 1).as_str());
            rules.push(',');
        }
        rules.push('}');
        let mut deps = String::from("JSONSchemaDependencies{");
        for (k, v) in self.dependencies.iter().flatten() {
            let schema = if v.schema.is_some() {
                GO_POINTER_PLACEHOLDER
            } else {
                "<nil>"
            };
            let props = format_strings_v(v.property.as_deref().unwrap_or(&[]));
            deps.push_str(&format!("{k}: {{{schema} {props}}},"));
        }
        deps.push('}');
        let items = opt_gogo(&self.items, |i| {
            let mut arr = String::from("[]JSONSchemaProps{");
            for s in i.schemas.iter().flatten() {
                arr.push_str(s.gogo_string().replacen('&', "", 1).as_str());
                arr.push(',');
            }
            arr.push('}');
            format!(
                "&JSONSchemaPropsOrArray{{Schema:{},JSONSchemas:{},}}",
                opt_gogo(&i.schema, |s| s.gogo_string()),
                arr
            )
        });
        let or_bool = |v: &Option<Box<SchemaOrBool>>| {
            opt_gogo(v, |b| {
                format!(
                    "&JSONSchemaPropsOrBool{{Allows:{},Schema:{},}}",
                    b.allows,
                    opt_gogo(&b.schema, |s| s.gogo_string())
                )
            })
        };
        let docs = opt_gogo(&self.external_docs, |d| {
            format!(
                "&ExternalDocumentation{{Description:{},URL:{},}}",
                d.description, d.url
            )
        });
        let f = |v: &Option<f64>| ptr_v(v, |x| format_float_v(*x));
        let i = |v: &Option<i64>| ptr_v(v, |x| x.to_string());
        let strs = |v: &Option<Vec<String>>| format_strings_v(v.as_deref().unwrap_or(&[]));
        format!(
            "&JSONSchemaProps{{ID:{},Schema:{},Ref:{},Description:{},Type:{},Format:{},Title:{},Default:{},Maximum:{},ExclusiveMaximum:{},Minimum:{},ExclusiveMinimum:{},MaxLength:{},MinLength:{},Pattern:{},MaxItems:{},MinItems:{},UniqueItems:{},MultipleOf:{},Enum:{},MaxProperties:{},MinProperties:{},Required:{},Items:{},AllOf:{},OneOf:{},AnyOf:{},Not:{},Properties:{},AdditionalProperties:{},PatternProperties:{},Dependencies:{},AdditionalItems:{},Definitions:{},ExternalDocs:{},Example:{},Nullable:{},XPreserveUnknownFields:{},XEmbeddedResource:{},XIntOrString:{},XListMapKeys:{},XListType:{},XMapType:{},XValidations:{},}}",
            self.id,
            self.schema,
            ptr_v(&self.reference, |s| s.clone()),
            self.description,
            self.type_,
            self.format,
            self.title,
            opt_gogo(&self.default, Json::gogo_string),
            f(&self.maximum),
            self.exclusive_maximum,
            f(&self.minimum),
            self.exclusive_minimum,
            i(&self.max_length),
            i(&self.min_length),
            self.pattern,
            i(&self.max_items),
            i(&self.min_items),
            self.unique_items,
            f(&self.multiple_of),
            enums,
            i(&self.max_properties),
            i(&self.min_properties),
            strs(&self.required),
            items,
            list(&self.all_of),
            list(&self.one_of),
            list(&self.any_of),
            opt_gogo(&self.not, |s| s.gogo_string()),
            map("map[string]JSONSchemaProps", &self.properties),
            or_bool(&self.additional_properties),
            map("map[string]JSONSchemaProps", &self.pattern_properties),
            deps,
            or_bool(&self.additional_items),
            map("JSONSchemaDefinitions", &self.definitions),
            docs,
            opt_gogo(&self.example, Json::gogo_string),
            self.nullable,
            ptr_v(&self.x_preserve_unknown_fields, |b| b.to_string()),
            self.x_embedded_resource,
            self.x_int_or_string,
            strs(&self.x_list_map_keys),
            ptr_v(&self.x_list_type, |s| s.clone()),
            ptr_v(&self.x_map_type, |s| s.clone()),
            rules,
        )
    }

    /// Go's `%v` of a `JSONSchemaProps` *value* (what gogo's `String()` prints for map entries):
    /// fields separated by spaces, nil pointers as `<nil>`. A non-nil pointer below the top level
    /// prints as a memory address in Go, which cannot be reproduced; [`GO_POINTER_PLACEHOLDER`]
    /// stands in for it (upstream's own text for such a schema differs from run to run).
    pub fn go_struct_v(&self, depth: usize) -> String {
        let ptr = |present: bool| {
            if present {
                GO_POINTER_PLACEHOLDER.to_owned()
            } else {
                "<nil>".to_owned()
            }
        };
        let _ = depth;
        let json_list = |v: &Option<Vec<Json>>| {
            let items: Vec<String> = v
                .iter()
                .flatten()
                .map(|j| format!("{{{}}}", format_bytes_v(&j.raw)))
                .collect();
            format_strings_v(&items)
        };
        let schema_list = |v: &Option<Vec<Schema>>| {
            let items: Vec<String> = v
                .iter()
                .flatten()
                .map(|s| s.go_struct_v(depth + 1))
                .collect();
            format_strings_v(&items)
        };
        let schema_map = |v: &Option<BTreeMap<String, Schema>>| {
            let items: Vec<String> = v
                .iter()
                .flatten()
                .map(|(k, s)| format!("{k}:{}", s.go_struct_v(depth + 1)))
                .collect();
            format!("map{}", format_strings_v(&items))
        };
        let strs = |v: &Option<Vec<String>>| format_strings_v(v.as_deref().unwrap_or(&[]));
        let rules: Vec<String> = self
            .x_validations
            .iter()
            .flatten()
            .map(|r| {
                format!(
                    "{{{} {} {} {} {} {}}}",
                    r.rule,
                    r.message,
                    r.message_expression,
                    ptr(r.reason.is_some()),
                    r.field_path,
                    ptr(r.optional_old_self.is_some())
                )
            })
            .collect();
        let deps: Vec<String> = self
            .dependencies
            .iter()
            .flatten()
            .map(|(k, d)| format!("{k}:{{{} {}}}", ptr(d.schema.is_some()), strs(&d.property)))
            .collect();
        let fields = [
            self.id.clone(),
            self.schema.clone(),
            ptr(self.reference.is_some()),
            self.description.clone(),
            self.type_.clone(),
            self.format.clone(),
            self.title.clone(),
            ptr(self.default.is_some()),
            ptr(self.maximum.is_some()),
            self.exclusive_maximum.to_string(),
            ptr(self.minimum.is_some()),
            self.exclusive_minimum.to_string(),
            ptr(self.max_length.is_some()),
            ptr(self.min_length.is_some()),
            self.pattern.clone(),
            ptr(self.max_items.is_some()),
            ptr(self.min_items.is_some()),
            self.unique_items.to_string(),
            ptr(self.multiple_of.is_some()),
            json_list(&self.enum_),
            ptr(self.max_properties.is_some()),
            ptr(self.min_properties.is_some()),
            strs(&self.required),
            ptr(self.items.is_some()),
            schema_list(&self.all_of),
            schema_list(&self.one_of),
            schema_list(&self.any_of),
            ptr(self.not.is_some()),
            schema_map(&self.properties),
            ptr(self.additional_properties.is_some()),
            schema_map(&self.pattern_properties),
            format!("map{}", format_strings_v(&deps)),
            ptr(self.additional_items.is_some()),
            schema_map(&self.definitions),
            ptr(self.external_docs.is_some()),
            ptr(self.example.is_some()),
            self.nullable.to_string(),
            ptr(self.x_preserve_unknown_fields.is_some()),
            self.x_embedded_resource.to_string(),
            self.x_int_or_string.to_string(),
            strs(&self.x_list_map_keys),
            ptr(self.x_list_type.is_some()),
            ptr(self.x_map_type.is_some()),
            format_strings_v(&rules),
        ];
        format!("{{{}}}", fields.join(" "))
    }

    /// The same schema with every `description` cleared, at every depth.
    pub fn without_descriptions(&self) -> Schema {
        let mut s = self.clone();
        s.strip_descriptions();
        s
    }

    fn strip_descriptions(&mut self) {
        self.description.clear();
        self.for_each_child_mut(&mut |c| c.strip_descriptions());
    }

    /// Calls `f` on every direct subschema.
    pub fn for_each_child_mut(&mut self, f: &mut dyn FnMut(&mut Schema)) {
        if let Some(items) = &mut self.items {
            if let Some(s) = &mut items.schema {
                f(s);
            }
            for s in items.schemas.iter_mut().flatten() {
                f(s);
            }
        }
        for list in [&mut self.all_of, &mut self.one_of, &mut self.any_of] {
            for s in list.iter_mut().flatten() {
                f(s);
            }
        }
        if let Some(s) = &mut self.not {
            f(s);
        }
        for map in [
            &mut self.properties,
            &mut self.pattern_properties,
            &mut self.definitions,
        ] {
            for s in map.iter_mut().flatten().map(|(_, s)| s) {
                f(s);
            }
        }
        for ob in [&mut self.additional_properties, &mut self.additional_items] {
            if let Some(s) = ob.as_mut().and_then(|b| b.schema.as_mut()) {
                f(s);
            }
        }
        for d in self.dependencies.iter_mut().flatten().map(|(_, d)| d) {
            if let Some(s) = &mut d.schema {
                f(s);
            }
        }
    }
}

/// What a Go memory address prints as here (see [`Schema::go_struct_v`]).
pub const GO_POINTER_PLACEHOLDER: &str = "0xc000000000";

/// The lowercase name of a schema's JSON type, for messages (`"<none>"` when untyped).
pub fn type_label(s: &Schema) -> &str {
    if s.type_.is_empty() {
        "<none>"
    } else {
        &s.type_
    }
}
