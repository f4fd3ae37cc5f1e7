//! Field ownership of a live or dry-run object (`metadata.managedFields`, FieldsV1 tries) and
//! the projection of an object onto the fields one manager owns.
//!
//! Input: objects as JSON. Output: tries, projected objects, readable field paths. Pure.
//!
//! A FieldsV1 trie maps `f:<field>` (a struct or map member), `k:<json>` (a list element by
//! its keys), `v:<json>` (a set element by value) and `i:<n>` (a list element by index) to a
//! sub-trie; `.` marks the node itself as owned. A node with no children but `.` (or none at
//! all) owns the whole value there.

use serde_json::{Map, Value};

use crate::apply_plan::managed_fields::{FIELD_MANAGER, LEGACY_MANAGERS};

/// One FieldsV1 trie.
pub type Trie = Map<String, Value>;

fn entries(object: &Value) -> impl Iterator<Item = &Value> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn text<'a>(entry: &'a Value, field: &str) -> &'a str {
    entry.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn is_main_resource(entry: &Value) -> bool {
    text(entry, "subresource").is_empty()
}

/// Whether an entry is ours: our manager's `Apply`, or upstream's Helm client's `Update`
/// (whose fields the apply takes over before writing).
fn is_ours(entry: &Value) -> bool {
    if !is_main_resource(entry) {
        return false;
    }
    let (manager, operation) = (text(entry, "manager"), text(entry, "operation"));
    (manager == FIELD_MANAGER && operation == "Apply")
        || LEGACY_MANAGERS
            .iter()
            .any(|(m, o)| *m == manager && *o == operation)
}

/// Adds every field of `from` to `into`.
pub fn union(into: &mut Trie, from: &Trie) {
    for (key, value) in from {
        match (into.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(more)) => union(existing, more),
            (Some(_), _) => {}
            (None, _) => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The fields our field manager owns on `object` (main resource only).
pub fn ours(object: &Value) -> Trie {
    let mut trie = Trie::new();
    for entry in entries(object).filter(|e| is_ours(e)) {
        if let Some(Value::Object(fields)) = entry.get("fieldsV1") {
            union(&mut trie, fields);
        }
    }
    trie
}

/// Fields of `object` other managers own (main resource, status aside) and that we do not:
/// `(manager, readable paths)`, sorted by manager.
pub fn others(object: &Value, ours: &Trie) -> Vec<(String, Vec<String>)> {
    let mut by_manager: std::collections::BTreeMap<String, Trie> = Default::default();
    for entry in entries(object).filter(|e| is_main_resource(e) && !is_ours(e)) {
        if let Some(Value::Object(fields)) = entry.get("fieldsV1") {
            let manager = match text(entry, "manager") {
                "" => "unknown",
                m => m,
            };
            union(by_manager.entry(manager.to_owned()).or_default(), fields);
        }
    }
    by_manager
        .into_iter()
        .map(|(manager, trie)| {
            let mut paths = Vec::new();
            leaf_paths(&trie, Some(ours), "", &mut paths);
            paths.retain(|p| p != ".status" && !p.starts_with(".status."));
            (manager, paths)
        })
        .filter(|(_, paths)| !paths.is_empty())
        .collect()
}

/// Readable paths of the leaves of `trie` that `except` does not own.
fn leaf_paths(trie: &Trie, except: Option<&Trie>, prefix: &str, out: &mut Vec<String>) {
    for (key, child) in trie {
        if key == "." {
            continue;
        }
        let sub_except = except.and_then(|e| e.get(key)).and_then(Value::as_object);
        let owned_whole_by_except = except
            .and_then(|e| e.get(key))
            .and_then(Value::as_object)
            .is_some_and(|t| t.keys().all(|k| k == "."));
        if owned_whole_by_except {
            continue;
        }
        let path = format!("{prefix}{}", segment(key));
        match child.as_object() {
            Some(c) if c.keys().any(|k| k != ".") => leaf_paths(c, sub_except, &path, out),
            _ => out.push(path),
        }
    }
}

/// `f:name` → `.name`, `k:{"name":"x"}` → `[name=x]`, `v:"a"` → `[a]`, `i:3` → `[3]`.
fn segment(key: &str) -> String {
    if let Some(name) = key.strip_prefix("f:") {
        return format!(".{name}");
    }
    if let Some(keys) = key.strip_prefix("k:") {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(keys) {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect();
            return format!("[{}]", parts.join(","));
        }
        return format!("[{keys}]");
    }
    if let Some(value) = key.strip_prefix("v:") {
        return match serde_json::from_str::<Value>(value) {
            Ok(Value::String(s)) => format!("[{s}]"),
            _ => format!("[{value}]"),
        };
    }
    if let Some(index) = key.strip_prefix("i:") {
        return format!("[{index}]");
    }
    format!(".{key}")
}

/// Whether a trie node owns its whole value (no member below it).
fn whole(trie: &Trie) -> bool {
    trie.keys().all(|k| k == ".")
}

/// `value` restricted to the fields of `trie` (`None` when none of them is present).
pub fn project(value: &Value, trie: &Trie) -> Option<Value> {
    if whole(trie) {
        return Some(value.clone());
    }
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, child) in trie {
                let Some(name) = key.strip_prefix("f:") else {
                    continue;
                };
                let Some(member) = map.get(name) else {
                    continue;
                };
                let sub = child.as_object().cloned().unwrap_or_default();
                if let Some(projected) = project(member, &sub) {
                    out.insert(name.to_owned(), projected);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for (index, item) in items.iter().enumerate() {
                let matched = trie
                    .iter()
                    .find(|(key, _)| element_matches(key, index, item));
                if let Some((_, child)) = matched {
                    let sub = child.as_object().cloned().unwrap_or_default();
                    if let Some(projected) = project(item, &sub) {
                        out.push(projected);
                    }
                }
            }
            Some(Value::Array(out))
        }
        // A scalar where the trie expects members: the field changed shape; show it whole.
        other => Some(other.clone()),
    }
}

fn element_matches(key: &str, index: usize, item: &Value) -> bool {
    if let Some(keys) = key.strip_prefix("k:") {
        return match serde_json::from_str::<Value>(keys) {
            Ok(Value::Object(wanted)) => wanted.iter().all(|(k, v)| item.get(k) == Some(v)),
            _ => false,
        };
    }
    if let Some(value) = key.strip_prefix("v:") {
        return serde_json::from_str::<Value>(value).is_ok_and(|v| &v == item);
    }
    if let Some(i) = key.strip_prefix("i:") {
        return i.parse::<usize>() == Ok(index);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(entries: Value) -> Value {
        json!({
            "metadata": {"name": "d", "labels": {"a": "1", "user": "x"}, "managedFields": entries},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "manager", "image": "m:v1", "imagePullPolicy": "IfNotPresent"},
                {"name": "sidecar", "image": "s:v1"}
            ]}}},
            "status": {"replicas": 3},
        })
    }

    fn entries() -> Value {
        json!([
            {"manager": "operator-controller", "operation": "Apply", "fieldsV1": {
                "f:metadata": {"f:labels": {"f:a": {}}},
                "f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"manager\"}": {".": {}, "f:name": {}, "f:image": {}}
                }}}}
            }},
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {
                "f:metadata": {"f:labels": {"f:user": {}}}, "f:spec": {"f:replicas": {}}
            }},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
             "fieldsV1": {"f:status": {"f:replicas": {}}}}
        ])
    }

    #[test]
    fn the_projection_keeps_only_our_fields() {
        let o = object(entries());
        let projected = project(&o, &ours(&o)).unwrap();
        assert_eq!(
            projected,
            json!({
                "metadata": {"labels": {"a": "1"}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "manager", "image": "m:v1"}
                ]}}}
            })
        );
    }

    #[test]
    fn fields_of_other_managers_are_named_status_aside() {
        let o = object(entries());
        assert_eq!(
            others(&o, &ours(&o)),
            vec![(
                "kubectl".to_owned(),
                vec![
                    ".metadata.labels.user".to_owned(),
                    ".spec.replicas".to_owned()
                ]
            )]
        );
    }

    #[test]
    fn upstream_helm_updates_count_as_ours() {
        let o = object(
            json!([{"manager": "operator-controller", "operation": "Update",
            "fieldsV1": {"f:spec": {"f:replicas": {}}}}]),
        );
        assert_eq!(
            project(&o, &ours(&o)).unwrap(),
            json!({"spec": {"replicas": 3}})
        );
    }

    #[test]
    fn keyed_set_and_index_segments_read_as_paths() {
        assert_eq!(segment("k:{\"name\":\"manager\"}"), "[name=manager]");
        assert_eq!(segment("v:\"get\""), "[get]");
        assert_eq!(segment("i:2"), "[2]");
        assert_eq!(segment("f:image"), ".image");
    }
}
