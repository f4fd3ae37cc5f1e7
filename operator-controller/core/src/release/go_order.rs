//! `json.Marshal` of a *typed* Kubernetes Go object: keys in Go struct field order.
//!
//! Input: an object (`serde_json::Value`) of a kind upstream's registry+v1 renderer returns as a
//! typed Go struct (Deployment, ServiceAccount, Service, Role, RoleBinding, ClusterRole,
//! ClusterRoleBinding, CustomResourceDefinition, Validating/MutatingWebhookConfiguration; also
//! ConfigMap and Secret). Output: the bytes Go writes for it. No IO.
//!
//! Why: upstream names each chart file after the sha256 of these bytes, and Helm orders objects
//! of the same kind by that name, so the manifest's order (which upstream compares byte for
//! byte to decide whether to redeploy) depends on Go's field order.
//!
//! The order comes from `go_field_order.json`: for each struct type reachable from those kinds
//! (k8s.io/api and apiextensions-apiserver v0.36.3, the versions upstream builds with), its JSON
//! field names in declaration order (embedded structs such as `TypeMeta` expanded in place) and
//! the type of each field's value. It was produced by reflecting over the Go types; every type
//! with its own JSON marshaller (`Time`, `Quantity`, `IntOrString`, raw JSON) is a leaf.
//!
//! | value                        | written as                                                 |
//! |------------------------------|------------------------------------------------------------|
//! | struct                       | its fields present in the value, in Go's order; keys Go's struct does not have follow, sorted (a typed decode would drop them; they are kept so nothing is lost silently) |
//! | map                          | keys sorted, values by the map's value type                |
//! | list                         | elements by the element type                               |
//! | leaf (scalars, raw JSON, …)  | as decoded JSON with sorted keys ([`super::go_json::value_to_vec`]) |
//! | `JSONSchemaPropsOr…`         | an object as a schema, a list element-wise, anything else as a leaf |
//!
//! Values are written as given: the caller supplies the fields Go would emit (for example a
//! Deployment's `status: {}`), which is the renderer's job.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use super::go_json;

#[derive(Deserialize)]
struct Table {
    roots: HashMap<String, String>,
    types: HashMap<String, Vec<(String, String)>>,
}

fn table() -> Option<&'static Table> {
    static TABLE: OnceLock<Option<Table>> = OnceLock::new();
    TABLE
        .get_or_init(|| serde_json::from_str(include_str!("go_field_order.json")).ok())
        .as_ref()
}

/// The Go type upstream decodes `apiVersion`/`kind` into, if it is one of the typed kinds.
fn root_type(object: &Value) -> Option<&'static str> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    table()?
        .roots
        .get(&format!("{api_version}/{kind}"))
        .map(String::as_str)
}

/// Whether `object` is of a kind this module knows Go's field order for.
pub fn is_typed_kind(object: &Value) -> bool {
    root_type(object).is_some()
}

/// Go's `json.Marshal` text of `object` decoded into its typed struct; `None` when the kind is
/// not one of the typed kinds.
pub fn typed_json(object: &Value) -> Option<Vec<u8>> {
    let root = root_type(object)?;
    let table = table()?;
    let mut out = Vec::new();
    write(table, object, &format!("s:{root}"), &mut out);
    Some(out)
}

fn write(table: &Table, value: &Value, reference: &str, out: &mut Vec<u8>) {
    if let Some(type_name) = reference.strip_prefix("s:") {
        match (value, table.types.get(type_name)) {
            (Value::Object(map), Some(fields)) => write_struct(table, map, fields, out),
            _ => out.extend(go_json::value_to_vec(value)),
        }
    } else if let Some(element) = reference.strip_prefix('[') {
        match value {
            Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(table, item, element, out);
                }
                out.push(b']');
            }
            other => out.extend(go_json::value_to_vec(other)),
        }
    } else if let Some(element) = reference.strip_prefix('{') {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
                out.push(b'{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(go_json::value_to_vec(&Value::String(key.clone())));
                    out.push(b':');
                    write(table, &map[key], element, out);
                }
                out.push(b'}');
            }
            other => out.extend(go_json::value_to_vec(other)),
        }
    } else if let Some(type_name) = reference.strip_prefix("or:") {
        let schema = format!("s:{type_name}");
        match value {
            Value::Object(_) => write(table, value, &schema, out),
            Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    if item.is_object() {
                        write(table, item, &schema, out);
                    } else {
                        out.extend(go_json::value_to_vec(item));
                    }
                }
                out.push(b']');
            }
            other => out.extend(go_json::value_to_vec(other)),
        }
    } else {
        out.extend(go_json::value_to_vec(value));
    }
}

fn write_struct(
    table: &Table,
    map: &serde_json::Map<String, Value>,
    fields: &[(String, String)],
    out: &mut Vec<u8>,
) {
    out.push(b'{');
    let mut first = true;
    let mut separator = |out: &mut Vec<u8>| {
        if !first {
            out.push(b',');
        }
        first = false;
    };
    for (name, reference) in fields {
        if let Some(v) = map.get(name) {
            separator(out);
            out.extend(go_json::value_to_vec(&Value::String(name.clone())));
            out.push(b':');
            write(table, v, reference, out);
        }
    }
    let mut extra: Vec<&String> = map
        .keys()
        .filter(|k| !fields.iter().any(|(n, _)| n == *k))
        .collect();
    extra.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    for key in extra {
        separator(out);
        out.extend(go_json::value_to_vec(&Value::String(key.clone())));
        out.push(b':');
        out.extend(go_json::value_to_vec(&map[key]));
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_table_loads_and_knows_the_typed_kinds() {
        assert!(table().is_some());
        for (api_version, kind) in [
            ("apps/v1", "Deployment"),
            ("v1", "ServiceAccount"),
            ("v1", "Service"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
            ),
        ] {
            assert!(
                is_typed_kind(&json!({"apiVersion": api_version, "kind": kind})),
                "{kind}"
            );
        }
        assert!(!is_typed_kind(
            &json!({"apiVersion": "cert-manager.io/v1", "kind": "Issuer"})
        ));
    }

    #[test]
    fn struct_order_maps_sorted_and_schemas_nested() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "w.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "w", "kind": "W"}, "scope": "Namespaced",
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "default": {"b": 1, "a": "<"}, "description": "d"}}}}}]},
            "status": {"storedVersions": null}
        });
        let text = String::from_utf8(typed_json(&crd).unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"w.example.com"},"spec":{"group":"example.com","names":{"plural":"w","kind":"W"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"description":"d","type":"object","default":{"a":"\u003c","b":1}}}}}}]},"status":{"storedVersions":null}}"#
        );
    }
}
