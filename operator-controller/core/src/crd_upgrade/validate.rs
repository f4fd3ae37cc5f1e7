//! The data-aware step: stored custom resources validated against the new CRD's schema.
//!
//! Input: the new [`Crd`] (and, optionally, the old one) and the stored objects as JSON values
//! (the controller lists them; the CLI reads them from files). Output: one [`ObjectViolation`]
//! per problem, naming the object, its version, the field path and the rule. No IO.
//!
//! What is checked, per object, against the schema of the object's `apiVersion` in the new CRD:
//!
//! | rule | check |
//! |---|---|
//! | `version` | the object's version still exists in the new CRD |
//! | `type` | `object`, `array`, `string`, `integer` (a whole number), `number`, `boolean`; `x-kubernetes-int-or-string` |
//! | `nullable` | `null` only where `nullable: true` (the API server drops other nulls: data would change) |
//! | `enum` | the value is one of the listed values (JSON equality) |
//! | `maximum`/`minimum` (+ exclusive), `multipleOf` | numeric bounds |
//! | `maxLength`/`minLength` | counted in Unicode code points, as the API server does |
//! | `pattern` | RE2 syntax (the `regex` crate is RE2-compatible), unanchored search |
//! | `format` | the formats the API server enforces that can be checked exactly here (see [`check_format`]); the others are "not evaluated" |
//! | `maxItems`/`minItems`, `uniqueItems`, `x-kubernetes-list-type: set`/`map` | list size and uniqueness (by the map keys) |
//! | `maxProperties`/`minProperties`, `required` | object size and required fields |
//! | `pruned` | a field the new schema does not declare (no `properties` entry, no `additionalProperties`, no `x-kubernetes-preserve-unknown-fields`) would be pruned on read: data loss |
//! | `x-kubernetes-embedded-resource` | `apiVersion` and `kind` are set |
//! | `allOf`/`anyOf`/`oneOf`/`not` | evaluated on the value (value validation only, no pruning) |
//! | `x-kubernetes-validations` | **not evaluated**: reported as [`ViolationKind::NotEvaluated`] |
//!
//! CEL rules are not evaluated because no maintained Rust CEL implementation provides the
//! Kubernetes CEL environment (the `self`/`oldSelf` typing from the schema, the Kubernetes
//! extension libraries for lists, strings, regex, URLs, quantities, IPs and CIDRs, and the cost
//! limits); evaluating a rule with different semantics would be a guess. A rule that the old CRD
//! already had at the same place was enforced when each object was written, so
//! [`validate_objects_since`] leaves those out.
//!
//! The root's `apiVersion`, `kind` and `metadata` are the API server's business and are not
//! checked against the schema.

use std::collections::BTreeSet;

use serde_json::Value;

use super::model::{Crd, Schema};

/// Whether a rule failed or could not be checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ViolationKind {
    /// The stored value breaks the rule.
    Violated,
    /// The rule was not evaluated (CEL, or a format this check cannot verify exactly).
    NotEvaluated,
}

/// One problem of one stored object under the new schema.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectViolation {
    /// `metadata.namespace`, empty for cluster-scoped objects.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The object's version (from its `apiVersion`).
    pub version: String,
    /// JSON path of the value (`.spec.ports[0].name`).
    pub field: String,
    /// The schema keyword (`enum`, `type`, `pruned`, `x-kubernetes-validations`, …).
    pub rule: String,
    pub kind: ViolationKind,
    /// What is wrong, for people.
    pub message: String,
}

impl ObjectViolation {
    /// `<namespace>/<name>` (or `<name>`), the way `kubectl` names an object.
    pub fn object(&self) -> String {
        if self.namespace.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }
}

impl std::fmt::Display for ObjectViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            ViolationKind::Violated => "",
            ViolationKind::NotEvaluated => " (not evaluated)",
        };
        write!(
            f,
            "{} ({}) {}: {}{kind}: {}",
            self.object(),
            self.version,
            if self.field.is_empty() {
                "<root>"
            } else {
                &self.field
            },
            self.rule,
            self.message
        )
    }
}

/// Validates `objects` against `new`; every CEL rule on a present value is "not evaluated".
pub fn validate_objects(new: &Crd, objects: &[Value]) -> Vec<ObjectViolation> {
    validate_objects_since(None, new, objects)
}

/// As [`validate_objects`], leaving out CEL rules the old CRD already had at the same place.
pub fn validate_objects_since(
    old: Option<&Crd>,
    new: &Crd,
    objects: &[Value],
) -> Vec<ObjectViolation> {
    let mut out = Vec::new();
    for obj in objects {
        validate_object(old, new, obj, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

fn validate_object(old: Option<&Crd>, new: &Crd, obj: &Value, out: &mut Vec<ObjectViolation>) {
    let meta = obj.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let namespace = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let mut ctx = Ctx {
        namespace,
        name,
        version: version.to_owned(),
        out,
        old_rules: BTreeSet::new(),
    };
    if group != new.group {
        ctx.push(
            "",
            "version",
            ViolationKind::Violated,
            format!("apiVersion {api_version:?} is not in group {:?}", new.group),
        );
        return;
    }
    let Some(v) = new.version(version) else {
        ctx.push(
            "",
            "version",
            ViolationKind::Violated,
            format!("version {version:?} is not in the new CRD"),
        );
        return;
    };
    if let Some(old_schema) = old
        .and_then(|o| o.version(version))
        .and_then(|v| v.schema.as_ref())
    {
        collect_rules(old_schema, String::new(), &mut ctx.old_rules);
    }
    let Some(schema) = &v.schema else { return };
    let Some(root) = obj.as_object() else {
        ctx.push(
            "",
            "type",
            ViolationKind::Violated,
            "the object is not a JSON object".into(),
        );
        return;
    };
    // The root: apiVersion, kind and metadata are validated by the API server itself.
    let mut rest = root.clone();
    rest.remove("apiVersion");
    rest.remove("kind");
    rest.remove("metadata");
    let value = Value::Object(rest);
    let mut results = Vec::new();
    check(&value, schema, "", "", true, &ctx, &mut results);
    ctx.out.extend(results);
}

/// CEL rule texts by schema location (`properties` as `.name`, `items` as `[]`).
fn collect_rules(s: &Schema, loc: String, out: &mut BTreeSet<(String, String)>) {
    for r in s.x_validations.iter().flatten() {
        out.insert((loc.clone(), r.rule.clone()));
    }
    for (k, p) in s.properties.iter().flatten() {
        collect_rules(p, format!("{loc}.{k}"), out);
    }
    if let Some(i) = s.items.as_ref().and_then(|i| i.schema.as_ref()) {
        collect_rules(i, format!("{loc}[]"), out);
    }
    if let Some(a) = s
        .additional_properties
        .as_ref()
        .and_then(|a| a.schema.as_ref())
    {
        collect_rules(a, format!("{loc}{{}}"), out);
    }
}

struct Ctx<'o> {
    namespace: String,
    name: String,
    version: String,
    out: &'o mut Vec<ObjectViolation>,
    old_rules: BTreeSet<(String, String)>,
}

impl Ctx<'_> {
    fn push(&mut self, field: &str, rule: &str, kind: ViolationKind, message: String) {
        self.out.push(self.make(field, rule, kind, message));
    }

    fn make(
        &self,
        field: &str,
        rule: &str,
        kind: ViolationKind,
        message: String,
    ) -> ObjectViolation {
        ObjectViolation {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            version: self.version.clone(),
            field: field.to_owned(),
            rule: rule.to_owned(),
            kind,
            message,
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() && n.as_f64().is_some_and(|f| f.fract() != 0.0) => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Validates `v` against `s` at JSON path `field`; `loc` is the schema location (for matching
/// old CEL rules); `prune` is false inside `allOf`/`anyOf`/`oneOf`/`not` (value validation only).
fn check(
    v: &Value,
    s: &Schema,
    field: &str,
    loc: &str,
    prune: bool,
    ctx: &Ctx<'_>,
    out: &mut Vec<ObjectViolation>,
) {
    let fail = |out: &mut Vec<ObjectViolation>, rule: &str, msg: String| {
        out.push(ctx.make(field, rule, ViolationKind::Violated, msg));
    };
    if v.is_null() {
        if !s.nullable {
            fail(
                out,
                "nullable",
                "null is not allowed (the API server would drop it)".into(),
            );
        }
        return;
    }
    let kind = json_kind(v);
    if s.x_int_or_string {
        if !matches!(kind, "integer" | "string") {
            fail(
                out,
                "type",
                format!("expected an integer or a string, got {kind}"),
            );
            return;
        }
    } else if !s.type_.is_empty() {
        let ok = match s.type_.as_str() {
            "number" => matches!(kind, "integer" | "number"),
            t => t == kind,
        };
        if !ok {
            fail(out, "type", format!("expected {}, got {kind}", s.type_));
            return;
        }
    }
    if let Some(values) = &s.enum_
        && !values.is_empty()
        && !values
            .iter()
            .any(|e| e.value().is_some_and(|ev| json_eq(&ev, v)))
    {
        let list: Vec<String> = values.iter().map(|e| e.text()).collect();
        fail(
            out,
            "enum",
            format!("{v} is not one of [{}]", list.join(", ")),
        );
    }
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(max) = s.maximum
                && ((s.exclusive_maximum && x >= max) || x > max)
            {
                fail(out, "maximum", format!("{x} is above the maximum {max}"));
            }
            if let Some(min) = s.minimum
                && ((s.exclusive_minimum && x <= min) || x < min)
            {
                fail(out, "minimum", format!("{x} is below the minimum {min}"));
            }
            if let Some(m) = s.multiple_of
                && m != 0.0
                && ((x / m) - (x / m).round()).abs() > 1e-9
            {
                fail(out, "multipleOf", format!("{x} is not a multiple of {m}"));
            }
        }
        Value::String(text) => {
            let len = text.chars().count() as i64;
            if let Some(max) = s.max_length
                && len > max
            {
                fail(out, "maxLength", format!("length {len} is above {max}"));
            }
            if let Some(min) = s.min_length
                && len < min
            {
                fail(out, "minLength", format!("length {len} is below {min}"));
            }
            if !s.pattern.is_empty() {
                match regex::Regex::new(&s.pattern) {
                    Ok(re) => {
                        if !re.is_match(text) {
                            fail(
                                out,
                                "pattern",
                                format!("{text:?} does not match {:?}", s.pattern),
                            );
                        }
                    }
                    Err(e) => out.push(ctx.make(
                        field,
                        "pattern",
                        ViolationKind::NotEvaluated,
                        format!("pattern {:?} could not be compiled: {e}", s.pattern),
                    )),
                }
            }
            if !s.format.is_empty() {
                match check_format(&s.format, text) {
                    _ if is_unenforced_format(&s.format) => {}
                    Some(true) => {}
                    Some(false) => fail(
                        out,
                        "format",
                        format!("{text:?} is not a valid {}", s.format),
                    ),
                    None => out.push(ctx.make(
                        field,
                        "format",
                        ViolationKind::NotEvaluated,
                        format!("format {:?} is not checked by this tool", s.format),
                    )),
                }
            }
        }
        Value::Array(items) => {
            let n = items.len() as i64;
            if let Some(max) = s.max_items
                && n > max
            {
                fail(out, "maxItems", format!("{n} items is above {max}"));
            }
            if let Some(min) = s.min_items
                && n < min
            {
                fail(out, "minItems", format!("{n} items is below {min}"));
            }
            let list_type = s.x_list_type.as_deref().unwrap_or("atomic");
            if s.unique_items || list_type == "set" {
                for i in 0..items.len() {
                    if items[..i].iter().any(|p| json_eq(p, &items[i])) {
                        fail(
                            out,
                            "x-kubernetes-list-type",
                            format!("duplicate item at index {i}"),
                        );
                    }
                }
            }
            if list_type == "map" {
                let keys = s.x_list_map_keys.clone().unwrap_or_default();
                let mut seen: Vec<Vec<Value>> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let key: Vec<Value> = keys
                        .iter()
                        .map(|k| item.get(k).cloned().unwrap_or(Value::Null))
                        .collect();
                    if seen
                        .iter()
                        .any(|s| s.iter().zip(&key).all(|(a, b)| json_eq(a, b)))
                    {
                        fail(
                            out,
                            "x-kubernetes-list-map-keys",
                            format!("duplicate key at index {i}"),
                        );
                    }
                    seen.push(key);
                }
            }
            if let Some(item_schema) = s.items.as_ref().and_then(|i| i.schema.as_ref()) {
                for (i, item) in items.iter().enumerate() {
                    check(
                        item,
                        item_schema,
                        &format!("{field}[{i}]"),
                        &format!("{loc}[]"),
                        prune,
                        ctx,
                        out,
                    );
                }
            }
        }
        Value::Object(map) => {
            let n = map.len() as i64;
            if let Some(max) = s.max_properties
                && n > max
            {
                fail(
                    out,
                    "maxProperties",
                    format!("{n} properties is above {max}"),
                );
            }
            if let Some(min) = s.min_properties
                && n < min
            {
                fail(
                    out,
                    "minProperties",
                    format!("{n} properties is below {min}"),
                );
            }
            for r in s.required.iter().flatten() {
                if !map.contains_key(r) {
                    fail(out, "required", format!("required field {r:?} is missing"));
                }
            }
            if s.x_embedded_resource {
                for k in ["apiVersion", "kind"] {
                    if map.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
                        fail(
                            out,
                            "x-kubernetes-embedded-resource",
                            format!("{k} must be set"),
                        );
                    }
                }
            }
            let preserve = s.x_preserve_unknown_fields == Some(true);
            let additional = s.additional_properties.as_deref();
            for (k, item) in map {
                let child_field = format!("{field}.{k}");
                if let Some(p) = s.properties.as_ref().and_then(|p| p.get(k)) {
                    check(
                        item,
                        p,
                        &child_field,
                        &format!("{loc}.{k}"),
                        prune,
                        ctx,
                        out,
                    );
                } else if let Some(ap) = additional.and_then(|a| a.schema.as_deref()) {
                    check(
                        item,
                        ap,
                        &child_field,
                        &format!("{loc}{{}}"),
                        prune,
                        ctx,
                        out,
                    );
                } else if additional.is_some_and(|a| a.allows) || preserve {
                    // Unknown fields are kept.
                } else if s.x_embedded_resource
                    && matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
                {
                } else if prune {
                    out.push(ctx.make(
                        &child_field,
                        "pruned",
                        ViolationKind::Violated,
                        "the new schema does not declare this field: it would be pruned (data loss)".into(),
                    ));
                }
            }
        }
        _ => {}
    }
    // Compositions: value validation only.
    let sub = |sch: &Schema, ctx: &Ctx<'_>| -> Vec<ObjectViolation> {
        let mut tmp = Vec::new();
        check(v, sch, field, loc, false, ctx, &mut tmp);
        tmp
    };
    for a in s.all_of.iter().flatten() {
        let r = sub(a, ctx);
        out.extend(r);
    }
    if let Some(any) = &s.any_of
        && !any.is_empty()
    {
        let results: Vec<Vec<ObjectViolation>> = any.iter().map(|a| sub(a, ctx)).collect();
        let passing = results
            .iter()
            .filter(|r| r.iter().all(|x| x.kind == ViolationKind::NotEvaluated))
            .count();
        if passing == 0 {
            fail(out, "anyOf", "matches none of the anyOf schemas".into());
        }
    }
    if let Some(one) = &s.one_of
        && !one.is_empty()
    {
        let results: Vec<Vec<ObjectViolation>> = one.iter().map(|a| sub(a, ctx)).collect();
        let passing = results.iter().filter(|r| r.is_empty()).count();
        let unknown = results
            .iter()
            .any(|r| !r.is_empty() && r.iter().all(|x| x.kind == ViolationKind::NotEvaluated));
        if unknown {
            out.push(ctx.make(
                field,
                "oneOf",
                ViolationKind::NotEvaluated,
                "a oneOf schema could not be fully evaluated".into(),
            ));
        } else if passing != 1 {
            fail(
                out,
                "oneOf",
                format!("matches {passing} of the oneOf schemas (exactly one required)"),
            );
        }
    }
    if let Some(not) = &s.not {
        let r = sub(not, ctx);
        if r.is_empty() {
            fail(out, "not", "matches the schema under not".into());
        }
    }
    for rule in s.x_validations.iter().flatten() {
        if ctx.old_rules.contains(&(loc.to_owned(), rule.rule.clone())) {
            continue;
        }
        out.push(ctx.make(
            field,
            "x-kubernetes-validations",
            ViolationKind::NotEvaluated,
            format!("CEL rule {:?} was not evaluated", rule.rule),
        ));
    }
}

/// Formats the API server strips instead of enforcing (unknown names, `password`).
fn is_unenforced_format(format: &str) -> bool {
    let normalised = format.replace('-', "");
    !matches!(
        normalised.as_str(),
        "bsonobjectid"
            | "uri"
            | "email"
            | "hostname"
            | "ipv4"
            | "ipv6"
            | "cidr"
            | "mac"
            | "uuid"
            | "uuid3"
            | "uuid4"
            | "uuid5"
            | "isbn"
            | "isbn10"
            | "isbn13"
            | "creditcard"
            | "ssn"
            | "hexcolor"
            | "rgbcolor"
            | "byte"
            | "date"
            | "duration"
            | "datetime"
            | "k8sshortname"
            | "k8slongname"
    )
}

/// `Some(valid)` for the formats checked exactly here, `None` for the others.
pub fn check_format(format: &str, s: &str) -> Option<bool> {
    let normalised = format.replace('-', "");
    let re = |p: &str| regex::Regex::new(p).map(|r| r.is_match(s)).ok();
    match normalised.as_str() {
        "password" => Some(true),
        "bsonobjectid" => re("^[0-9a-fA-F]{24}$"),
        "ipv4" => Some(s.parse::<std::net::IpAddr>().is_ok() && s.contains('.')),
        "ipv6" => Some(s.parse::<std::net::IpAddr>().is_ok() && s.contains(':')),
        "cidr" => Some(s.split_once('/').is_some_and(|(ip, bits)| {
            let max = if ip.contains(':') { 128 } else { 32 };
            ip.parse::<std::net::IpAddr>().is_ok()
                && !bits.is_empty()
                && bits.chars().all(|c| c.is_ascii_digit())
                && bits.parse::<u32>().is_ok_and(|b| b <= max)
        })),
        "uuid" => re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
        "uuid3" => re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
        "uuid4" => re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"),
        "uuid5" => re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"),
        "hexcolor" => re("^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"),
        "date" => Some(valid_date(s)),
        "datetime" => Some(valid_date_time(s)),
        "byte" => {
            use base64_check::is_std_base64;
            Some(is_std_base64(s))
        }
        "k8sshortname" => re("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").map(|ok| ok && s.len() <= 63),
        "k8slongname" => re(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
            .map(|ok| ok && s.len() <= 253),
        "hostname" => re(r"^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])(\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9]))*$")
            .map(|ok| ok && s.len() <= 255),
        _ => None,
    }
}

mod base64_check {
    /// Standard base64 with padding (Go's `base64.StdEncoding`), the empty string included.
    pub fn is_std_base64(s: &str) -> bool {
        let b = s.as_bytes();
        if !b.len().is_multiple_of(4) {
            return false;
        }
        let pad = b.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 {
            return false;
        }
        b[..b.len() - pad]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
    }
}

fn valid_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|t| t.parse::<u32>().ok());
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    if !s[0..4]
        .chars()
        .chain(s[5..7].chars())
        .chain(s[8..10].chars())
        .all(|c| c.is_ascii_digit())
    {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

fn valid_date_time(s: &str) -> bool {
    // RFC 3339: full-date "T" partial-time time-offset (a space or lowercase t is accepted by
    // the API server's parser as well).
    let re = regex::Regex::new(
        r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$",
    );
    let Ok(re) = re else { return false };
    let Some(c) = re.captures(s) else {
        return false;
    };
    let n = |i: usize| {
        c.get(i)
            .and_then(|m| m.as_str().parse::<u32>().ok())
            .unwrap_or(99)
    };
    valid_date(&c[1]) && n(2) < 24 && n(3) < 60 && n(4) < 61
}
