//! The ClusterExtension configuration (`spec.config.inline`) of a registry+v1 bundle: its JSON
//! schema, derived from the bundle's install modes, and validation with upstream's messages.
//!
//! Input: the bundle's supported install modes, the install namespace and the raw configuration
//! (`None` when `spec.config` is unset). Output: the validated configuration (watch namespace,
//! `deploymentConfig` value) or upstream's error text. No IO.
//!
//! Schema (upstream's `registryv1.go buildBundleConfigSchema`):
//!
//! | install modes supported | `watchNamespace` |
//! |---|---|
//! | AllNamespaces only (or none of Own/Single) | not allowed (`unknown field "watchNamespace"`) |
//! | Own and/or Single, with AllNamespaces | optional: `null` or a namespace name |
//! | Own and/or Single, without AllNamespaces | required namespace name |
//! | Own without Single | must equal the install namespace (format `ownNamespaceInstallMode`) |
//! | Single without Own | must differ from the install namespace (format `singleNamespaceInstallMode`) |
//!
//! A namespace name is a string of length 1..63 matching `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`.
//! `deploymentConfig` holds the fields of OLM v0's `SubscriptionConfig` minus `selector`, each
//! validated against the Kubernetes OpenAPI schema of its type (`config_schema.json`, generated
//! from Kubernetes v1.36.3 as upstream's schema is). No other top-level field is allowed.
//!
//! Validation reproduces santhosh-tekuri/jsonschema v6 (draft-07) as upstream uses it: the same
//! error tree, flattened as its `BasicOutput`, each entry worded by upstream's
//! `formatSingleError`, several entries joined as `multiple errors found:\n  - a\n  - b`. Where
//! the Go library iterates a map (several bad properties), this implementation uses sorted key
//! order, so the order of several messages is deterministic here and random upstream.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::bundle::csv::{ALL_NAMESPACES, OWN_NAMESPACE, SINGLE_NAMESPACE};
use crate::bundle::validate::is_dns1123_label_shape;

/// The custom format names upstream registers.
pub const FORMAT_OWN_NAMESPACE: &str = "ownNamespaceInstallMode";
pub const FORMAT_SINGLE_NAMESPACE: &str = "singleNamespaceInstallMode";
const NAMESPACE_PATTERN: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// A configuration that passed validation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BundleConfig {
    /// `watchNamespace`, unless absent or `null`.
    pub watch_namespace: Option<String>,
    /// `deploymentConfig`, unless absent or `null`.
    pub deployment_config: Option<Value>,
}

/// The schema for a bundle supporting `modes`; `deployment_config` false removes
/// `deploymentConfig` (upstream's gate off).
pub fn config_schema(modes: &[String], deployment_config: bool) -> Value {
    let has = |m: &str| modes.iter().any(|x| x == m);
    let mut properties = Map::new();
    if deployment_config {
        properties.insert("deploymentConfig".into(), deployment_config_schema());
    }
    let mut required: Vec<Value> = Vec::new();
    let (own, single) = (has(OWN_NAMESPACE), has(SINGLE_NAMESPACE));
    if own || single {
        let mut ns = json!({
            "type": "string",
            "minLength": 1,
            "maxLength": 63,
            "pattern": NAMESPACE_PATTERN
        });
        if own && !single {
            ns["format"] = json!(FORMAT_OWN_NAMESPACE);
        } else if single && !own {
            ns["format"] = json!(FORMAT_SINGLE_NAMESPACE);
        }
        if has(ALL_NAMESPACES) {
            properties.insert(
                "watchNamespace".into(),
                json!({"anyOf": [{"type": "null"}, ns]}),
            );
        } else {
            properties.insert("watchNamespace".into(), ns);
            required.push(json!("watchNamespace"));
        }
    }
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema
}

fn deployment_config_schema() -> Value {
    let reference =
        |name: &str| json!({"$ref": format!("#/components/schemas/io.k8s.api.core.v1.{name}")});
    let list = |name: &str| json!({"type": "array", "items": reference(name)});
    let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "affinity": reference("Affinity"),
            "annotations": string_map,
            "env": list("EnvVar"),
            "envFrom": list("EnvFromSource"),
            "nodeSelector": string_map,
            "resources": reference("ResourceRequirements"),
            "tolerations": list("Toleration"),
            "volumeMounts": list("VolumeMount"),
            "volumes": list("Volume"),
        },
        "additionalProperties": false
    })
}

/// The Kubernetes component schemas `#/components/schemas/...` refers to.
fn components() -> &'static Map<String, Value> {
    static COMPONENTS: OnceLock<Map<String, Value>> = OnceLock::new();
    COMPONENTS.get_or_init(|| {
        serde_json::from_str::<Value>(include_str!("config_schema.json"))
            .ok()
            .and_then(|v| v.get("schemas").and_then(Value::as_object).cloned())
            .unwrap_or_default()
    })
}

/// Validates `config` (`None`: `{}`) against `schema`; upstream's `UnmarshalConfig`. The error
/// is the text after upstream's `invalid configuration: ` prefix is added.
pub fn validate_config(
    config: Option<&Value>,
    schema: &Value,
    install_namespace: &str,
) -> Result<BundleConfig, String> {
    let empty = Value::Object(Map::new());
    let config = config.unwrap_or(&empty);
    let validator = Validator { install_namespace };
    if let Some(err) = validator.validate(schema, config, &mut Vec::new()) {
        let causes = match err.kind {
            Kind::Group => err.causes,
            _ => vec![err],
        };
        let root = VErr {
            kind: Kind::Schema,
            location: Vec::new(),
            causes,
        };
        return Err(format!("invalid configuration: {}", format_errors(&root)));
    }
    let obj = config.as_object();
    let get = |k: &str| obj.and_then(|o| o.get(k)).filter(|v| !v.is_null());
    Ok(BundleConfig {
        watch_namespace: get("watchNamespace").map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        deployment_config: get("deploymentConfig").cloned(),
    })
}

/// What went wrong, as the Go library's error kinds.
#[derive(Clone, Debug)]
enum Kind {
    Schema,
    Group,
    Reference,
    FalseSchema,
    AllOf,
    AnyOf,
    OneOf(Option<(usize, usize)>),
    Type {
        got: &'static str,
        want: Vec<String>,
    },
    Enum,
    Required(Vec<String>),
    AdditionalProperties(Vec<String>),
    Format {
        got: Value,
        want: String,
        err: String,
    },
    MinLength {
        got: usize,
        want: usize,
    },
    MaxLength {
        got: usize,
        want: usize,
    },
    Pattern {
        got: String,
        want: String,
    },
    Minimum,
    Maximum,
}

#[derive(Clone, Debug)]
struct VErr {
    kind: Kind,
    location: Vec<String>,
    causes: Vec<VErr>,
}

/// The Go library's single-quoted string (`'x'`).
fn quote(s: &str) -> String {
    let q = olm_api::version::go_text::go_quote(s);
    let inner = &q[1..q.len() - 1];
    format!("'{}'", inner.replace("\\\"", "\"").replace('\'', "\\'"))
}

fn display(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Object(_) => "value".into(),
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

impl Kind {
    fn message(&self) -> String {
        match self {
            Kind::Schema => "jsonschema validation failed".into(),
            Kind::Group | Kind::Reference => "validation failed".into(),
            Kind::FalseSchema => "false schema".into(),
            Kind::AllOf => "'allOf' failed".into(),
            Kind::AnyOf => "'anyOf' failed".into(),
            Kind::OneOf(None) => "'oneOf' failed, none matched".into(),
            Kind::OneOf(Some((a, b))) => format!("'oneOf' failed, subschemas {a}, {b} matched"),
            Kind::Type { got, want } => format!("got {got}, want {}", want.join(" or ")),
            Kind::Enum => "value must be one of the allowed values".into(),
            Kind::Required(missing) if missing.len() == 1 => {
                format!("missing property {}", quote(&missing[0]))
            }
            Kind::Required(missing) => format!(
                "missing properties {}",
                missing
                    .iter()
                    .map(|m| quote(m))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Kind::AdditionalProperties(props) => format!(
                "additional properties {} not allowed",
                props
                    .iter()
                    .map(|m| quote(m))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Kind::Format { got, want, err } => {
                format!("{} is not valid {want}: {err}", display(got))
            }
            Kind::MinLength { got, want } => format!("minLength: got {got}, want {want}"),
            Kind::MaxLength { got, want } => format!("maxLength: got {got}, want {want}"),
            Kind::Pattern { got, want } => {
                format!("{} does not match pattern {}", quote(got), quote(want))
            }
            Kind::Minimum => "minimum failed".into(),
            Kind::Maximum => "maximum failed".into(),
        }
    }
}

/// JSON type of an instance value, as the library names it.
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f == f.trunc()),
        _ => false,
    }
}

struct Validator<'a> {
    install_namespace: &'a str,
}

impl Validator<'_> {
    fn error(&self, kind: Kind, loc: &[String]) -> VErr {
        VErr {
            kind,
            location: loc.to_vec(),
            causes: Vec::new(),
        }
    }

    fn resolve<'s>(&self, reference: &str) -> Option<&'s Value> {
        let name = reference.strip_prefix("#/components/schemas/")?;
        components().get(name)
    }

    /// The library's `validator.validate` for one schema and one value.
    fn validate(&self, s: &Value, v: &Value, loc: &mut Vec<String>) -> Option<VErr> {
        let s = match s {
            Value::Bool(true) => return None,
            Value::Bool(false) => return Some(self.error(Kind::FalseSchema, loc)),
            Value::Object(s) => s,
            _ => return None,
        };

        if let Some(types) = s.get("type") {
            let want: Vec<String> = match types {
                Value::String(t) => vec![t.clone()],
                Value::Array(ts) => ts
                    .iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            };
            if !want.is_empty() {
                let got = type_of(v);
                let matched = want.iter().any(|t| t == got)
                    || (want.iter().any(|t| t == "integer") && is_integer(v));
                if !matched {
                    let order = [
                        "null", "boolean", "number", "integer", "string", "array", "object",
                    ];
                    let want = order
                        .iter()
                        .filter(|o| want.iter().any(|w| w == *o))
                        .map(|o| (*o).to_owned())
                        .collect();
                    return Some(self.error(Kind::Type { got, want }, loc));
                }
            }
        }

        if let Some(Value::Array(values)) = s.get("enum")
            && !values.contains(v)
        {
            return Some(self.error(Kind::Enum, loc));
        }

        if let Some(Value::String(format)) = s.get("format")
            && let Some(err) = self.check_format(format, v)
        {
            return Some(self.error(
                Kind::Format {
                    got: v.clone(),
                    want: format.clone(),
                    err,
                },
                loc,
            ));
        }

        if let Some(Value::String(reference)) = s.get("$ref") {
            // Draft-07: keywords next to `$ref` are ignored.
            let target = self.resolve(reference)?;
            let err = self.validate(target, v, loc)?;
            let mut ref_err = self.error(Kind::Reference, loc);
            ref_err.causes = match err.kind {
                Kind::Group => err.causes,
                _ => vec![err],
            };
            return Some(ref_err);
        }

        let mut errors = Vec::new();
        match v {
            Value::Object(obj) => self.validate_object(s, obj, loc, &mut errors),
            Value::Array(items) => {
                if let Some(item_schema) =
                    s.get("items").filter(|i| i.is_object() || i.is_boolean())
                {
                    for (i, item) in items.iter().enumerate() {
                        loc.push(i.to_string());
                        if let Some(e) = self.validate(item_schema, item, loc) {
                            errors.push(e);
                        }
                        loc.pop();
                    }
                }
            }
            Value::String(text) => self.validate_string(s, text, loc, &mut errors),
            Value::Number(n) => {
                let f = n.as_f64().unwrap_or(0.0);
                if s.get("minimum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| f < m)
                {
                    errors.push(self.error(Kind::Minimum, loc));
                }
                if s.get("maximum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| f > m)
                {
                    errors.push(self.error(Kind::Maximum, loc));
                }
            }
            _ => {}
        }

        self.validate_conditionals(s, v, loc, &mut errors);

        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => {
                let mut group = self.error(Kind::Group, loc);
                group.causes = errors;
                Some(group)
            }
        }
    }

    fn validate_object(
        &self,
        s: &Map<String, Value>,
        obj: &Map<String, Value>,
        loc: &mut Vec<String>,
        errors: &mut Vec<VErr>,
    ) {
        if let Some(Value::Array(required)) = s.get("required") {
            let missing: Vec<String> = required
                .iter()
                .filter_map(Value::as_str)
                .filter(|r| !obj.contains_key(*r))
                .map(str::to_owned)
                .collect();
            if !missing.is_empty() {
                errors.push(self.error(Kind::Required(missing), loc));
            }
        }
        let properties = s.get("properties").and_then(Value::as_object);
        let additional = s.get("additionalProperties");
        let mut not_allowed = Vec::new();
        for (name, value) in obj {
            if let Some(prop) = properties.and_then(|p| p.get(name)) {
                loc.push(name.clone());
                if let Some(e) = self.validate(prop, value, loc) {
                    errors.push(e);
                }
                loc.pop();
                continue;
            }
            match additional {
                Some(Value::Bool(false)) => not_allowed.push(name.clone()),
                Some(schema @ Value::Object(_)) => {
                    loc.push(name.clone());
                    if let Some(e) = self.validate(schema, value, loc) {
                        errors.push(e);
                    }
                    loc.pop();
                }
                _ => {}
            }
        }
        if !not_allowed.is_empty() {
            errors.push(self.error(Kind::AdditionalProperties(not_allowed), loc));
        }
    }

    fn validate_string(
        &self,
        s: &Map<String, Value>,
        text: &str,
        loc: &[String],
        errors: &mut Vec<VErr>,
    ) {
        let len = text.chars().count();
        if let Some(min) = s.get("minLength").and_then(Value::as_u64)
            && (len as u64) < min
        {
            errors.push(self.error(
                Kind::MinLength {
                    got: len,
                    want: min as usize,
                },
                loc,
            ));
        }
        if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
            && (len as u64) > max
        {
            errors.push(self.error(
                Kind::MaxLength {
                    got: len,
                    want: max as usize,
                },
                loc,
            ));
        }
        if let Some(Value::String(pattern)) = s.get("pattern")
            && !pattern_matches(pattern, text)
        {
            errors.push(self.error(
                Kind::Pattern {
                    got: text.to_owned(),
                    want: pattern.clone(),
                },
                loc,
            ));
        }
    }

    fn validate_conditionals(
        &self,
        s: &Map<String, Value>,
        v: &Value,
        loc: &mut Vec<String>,
        errors: &mut Vec<VErr>,
    ) {
        if let Some(Value::Array(all)) = s.get("allOf") {
            let causes: Vec<VErr> = all
                .iter()
                .filter_map(|sub| self.validate(sub, v, loc))
                .collect();
            if !causes.is_empty() {
                let mut e = self.error(Kind::AllOf, loc);
                e.causes = causes;
                errors.push(e);
            }
        }
        if let Some(Value::Array(any)) = s.get("anyOf") {
            let mut causes = Vec::new();
            let mut matched = false;
            for sub in any {
                match self.validate(sub, v, loc) {
                    Some(e) => causes.push(e),
                    None => {
                        matched = true;
                        break;
                    }
                }
            }
            if !matched {
                let mut e = self.error(Kind::AnyOf, loc);
                e.causes = causes;
                errors.push(e);
            }
        }
        if let Some(Value::Array(one)) = s.get("oneOf") {
            let mut matched: Option<usize> = None;
            let mut causes = Vec::new();
            for (i, sub) in one.iter().enumerate() {
                match self.validate(sub, v, loc) {
                    Some(e) => {
                        if matched.is_none() {
                            causes.push(e);
                        }
                    }
                    None => match matched {
                        None => matched = Some(i),
                        Some(first) => {
                            errors.push(self.error(Kind::OneOf(Some((first, i))), loc));
                            break;
                        }
                    },
                }
            }
            if matched.is_none() {
                let mut e = self.error(Kind::OneOf(None), loc);
                e.causes = causes;
                errors.push(e);
            }
        }
    }

    /// Format assertions (draft-07 asserts formats): upstream's two custom formats, and the
    /// library's `date-time`. Unknown formats (`int32`, ...) are not checked.
    fn check_format(&self, format: &str, v: &Value) -> Option<String> {
        match format {
            FORMAT_OWN_NAMESPACE => {
                if self.install_namespace.is_empty() {
                    return None;
                }
                let Value::String(s) = v else {
                    return Some("value must be a string".into());
                };
                (s != self.install_namespace).then(|| {
                    format!(
                        "invalid value {}: must be {} (the namespace where the operator is installed) because this operator only supports OwnNamespace install mode",
                        olm_api::version::go_text::go_quote(s),
                        olm_api::version::go_text::go_quote(self.install_namespace)
                    )
                })
            }
            FORMAT_SINGLE_NAMESPACE => {
                if self.install_namespace.is_empty() {
                    return None;
                }
                let Value::String(s) = v else {
                    return Some("value must be a string".into());
                };
                (s == self.install_namespace).then(|| {
                    format!(
                        "invalid value {}: must be different from {} (the install namespace) because this operator uses SingleNamespace install mode to watch a different namespace",
                        olm_api::version::go_text::go_quote(s),
                        olm_api::version::go_text::go_quote(self.install_namespace)
                    )
                })
            }
            "date-time" => {
                let Value::String(s) = v else {
                    return None;
                };
                if s.len() < 20 {
                    return Some("less than 20 characters long".into());
                }
                if !matches!(s.as_bytes().get(10), Some(b't' | b'T')) {
                    return Some("11th character must be t or T".into());
                }
                crate::gotype::is_rfc3339(s)
                    .then_some(())
                    .map_or_else(|| Some("invalid date-time".into()), |_| None)
            }
            _ => None,
        }
    }
}

/// The one pattern upstream's schema uses; any other pattern is not checked (none exists).
fn pattern_matches(pattern: &str, text: &str) -> bool {
    if pattern == NAMESPACE_PATTERN {
        return is_dns1123_label_shape(text);
    }
    true
}

/// One entry of the library's `BasicOutput`: the error kind and its instance location.
struct Unit {
    kind: Kind,
    location: Vec<String>,
}

/// `ValidationError.BasicOutput().Errors`.
fn basic_output(root: &VErr) -> Vec<Unit> {
    fn flatten(e: &VErr) -> Vec<Unit> {
        let mut out = Vec::new();
        for cause in &e.causes {
            let mut cause_units = flatten(cause);
            let skip = cause.causes.len() == 1 && matches!(cause.kind, Kind::Reference);
            let location = if skip {
                // The unit of a skipped reference is its only cause's, relabelled with the
                // reference's kind; what lies below that cause is dropped (the library's quirk).
                let first = cause_units.drain(..).next();
                cause_units.clear();
                first.map(|u| u.location).unwrap_or_default()
            } else {
                cause.location.clone()
            };
            out.push(Unit {
                kind: cause.kind.clone(),
                location,
            });
            out.append(&mut cause_units);
        }
        out
    }
    flatten(root)
}

fn field_path(location: &[String]) -> String {
    location.join(".")
}

/// Upstream's `formatSchemaError`.
fn format_errors(root: &VErr) -> String {
    let messages: Vec<String> = basic_output(root)
        .iter()
        .map(format_single_error)
        .filter(|m| !m.is_empty())
        .collect();
    match messages.len() {
        0 => format!("invalid configuration: {}", root.kind.message()),
        1 => messages.into_iter().next().unwrap_or_default(),
        _ => format!("multiple errors found:\n  - {}", messages.join("\n  - ")),
    }
}

/// The first single-quoted name in a message (upstream's `extractFieldNameFromMessage`).
fn first_quoted(message: &str) -> Option<String> {
    let start = message.find('\'')? + 1;
    let len = message[start..].find('\'')?;
    Some(message[start..start + len].to_owned())
}

/// Upstream's `formatSingleError`.
fn format_single_error(unit: &Unit) -> String {
    let path = field_path(&unit.location);
    let message = unit.kind.message();
    match &unit.kind {
        Kind::Required(_) => match first_quoted(&message) {
            Some(field) => format!("required field {} is missing", go_q(&field)),
            None => "required field is missing".into(),
        },
        Kind::AdditionalProperties(_) => match first_quoted(&message) {
            Some(field) => format!("unknown field {}", go_q(&field)),
            None => "unknown field".into(),
        },
        Kind::Type { .. } => {
            if path.is_empty() {
                format!("invalid type: {message}")
            } else if message.contains("got null") {
                format!("required field {} is missing", go_q(&path))
            } else {
                format!("invalid type for field {}: {message}", go_q(&path))
            }
        }
        Kind::Format { .. } => {
            if path.is_empty() {
                format!("invalid format: {message}")
            } else {
                format!("invalid format for field {}: {message}", go_q(&path))
            }
        }
        Kind::AnyOf => {
            if path.is_empty() {
                "invalid value".into()
            } else {
                format!("invalid value for field {}", go_q(&path))
            }
        }
        Kind::MaxLength { got, want } if !path.is_empty() => format!(
            "field {} must have maximum length of {want} (len={got})",
            go_q(&path)
        ),
        Kind::MinLength { got, want } if !path.is_empty() => format!(
            "field {} must have minimum length of {want} (len={got})",
            go_q(&path)
        ),
        Kind::Pattern { want, .. } if !path.is_empty() => {
            format!("field {} must match pattern {}", go_q(&path), go_q(want))
        }
        _ => message,
    }
}

fn go_q(s: &str) -> String {
    olm_api::version::go_text::go_quote(s)
}

/// Every `$ref` target used by the schema exists (checked by a unit test).
pub fn missing_references() -> Vec<String> {
    fn walk(v: &Value, out: &mut BTreeMap<String, ()>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.insert(r.clone(), ());
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut refs = BTreeMap::new();
    walk(&deployment_config_schema(), &mut refs);
    for schema in components().values() {
        walk(schema, &mut refs);
    }
    refs.into_keys()
        .filter(|r| {
            r.strip_prefix("#/components/schemas/")
                .is_none_or(|name| !components().contains_key(name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modes(m: &[&str]) -> Vec<String> {
        m.iter().map(|s| (*s).to_owned()).collect()
    }

    fn check(modes_: &[&str], config: Value, ns: &str) -> Result<BundleConfig, String> {
        let schema = config_schema(&modes(modes_), true);
        validate_config(Some(&config), &schema, ns)
    }

    #[test]
    fn the_generated_component_schemas_are_complete() {
        assert!(components().len() > 50);
        assert_eq!(missing_references(), Vec::<String>::new());
    }

    // Messages from upstream's config_test.go and registryv1_test.go.
    #[test]
    fn watch_namespace_rules_follow_the_install_modes() {
        assert_eq!(
            check(&["AllNamespaces"], json!({"watchNamespace": "x"}), "ns"),
            Err("invalid configuration: unknown field \"watchNamespace\"".into())
        );
        assert_eq!(
            check(&["OwnNamespace"], json!({}), "ns"),
            Err("invalid configuration: required field \"watchNamespace\" is missing".into())
        );
        assert_eq!(
            check(&["OwnNamespace"], json!({"watchNamespace": null}), "ns"),
            Err("invalid configuration: required field \"watchNamespace\" is missing".into())
        );
        assert_eq!(
            check(&["OwnNamespace"], json!({"watchNamespace": "ns"}), "ns")
                .map(|c| c.watch_namespace),
            Ok(Some("ns".into()))
        );
        assert_eq!(
            check(
                &["AllNamespaces", "SingleNamespace"],
                json!({"watchNamespace": null}),
                "ns"
            ),
            Ok(BundleConfig::default())
        );
        assert_eq!(
            check(&["SingleNamespace"], json!({"watchNamespace": "ns"}), "ns"),
            Err("invalid configuration: invalid format for field \"watchNamespace\": 'ns' is not valid singleNamespaceInstallMode: invalid value \"ns\": must be different from \"ns\" (the install namespace) because this operator uses SingleNamespace install mode to watch a different namespace".into())
        );
        assert_eq!(
            check(&["OwnNamespace", "SingleNamespace"], json!({"watchNamespace": 1}), "ns"),
            Err("invalid configuration: invalid type for field \"watchNamespace\": got number, want string".into())
        );
        let long = "a".repeat(64);
        assert_eq!(
            check(&["OwnNamespace", "SingleNamespace"], json!({"watchNamespace": long}), "ns"),
            Err("invalid configuration: field \"watchNamespace\" must have maximum length of 63 (len=64)".into())
        );
    }

    #[test]
    fn deployment_config_is_checked_against_kubernetes_schemas() {
        assert_eq!(
            check(&["AllNamespaces"], json!({"deploymentConfig": {"nodeSelector": "linux"}}), "ns"),
            Err("invalid configuration: invalid type for field \"deploymentConfig.nodeSelector\": got string, want object".into())
        );
        assert_eq!(
            check(
                &["AllNamespaces"],
                json!({"deploymentConfig": {"selector": {}}}),
                "ns"
            ),
            Err("invalid configuration: unknown field \"selector\"".into())
        );
        assert_eq!(
            check(
                &["AllNamespaces"],
                json!({"deploymentConfig": {"env": [{"value": "x"}]}}),
                "ns"
            ),
            Err("invalid configuration: validation failed".into())
        );
        assert!(check(
            &["AllNamespaces"],
            json!({"deploymentConfig": {"env": [{"name": "A", "value": "x"}], "resources": {"limits": {"cpu": 1}}}}),
            "ns"
        )
        .is_ok());
        let schema = config_schema(&modes(&["AllNamespaces"]), false);
        assert_eq!(
            validate_config(Some(&json!({"deploymentConfig": {}})), &schema, "ns"),
            Err("invalid configuration: unknown field \"deploymentConfig\"".into())
        );
    }

    #[test]
    fn a_non_object_configuration_is_a_type_error() {
        assert_eq!(
            check(&["AllNamespaces"], json!([]), "ns"),
            Err("invalid configuration: invalid type: got array, want object".into())
        );
    }
}
