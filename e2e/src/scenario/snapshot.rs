//! Snapshots: an object as it was when read ([`Snapshot::of`], by [`ObjectKey`]), compared later
//! with how it is then, byte for byte or but for named fields.
//!
//! Input: an [`ObjectKey`] (its kind found by discovery). Output: [`Snapshot`]s, and assertions
//! that fail the test naming every changed JSON pointer. Network: 127.0.0.1 only (the API server).

use std::fmt;

use kube::ResourceExt;
use kube::api::{Api, DynamicObject, GroupVersionKind};
use serde_json::Value;

use super::Scenario;

/// Which object a [`Snapshot`] reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectKey {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn namespaced(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: Some(namespace.to_owned()),
            name: name.to_owned(),
        }
    }

    /// The key of an object read from the API server (which names its apiVersion and kind).
    pub fn of(object: &DynamicObject) -> ObjectKey {
        let types = object
            .types
            .as_ref()
            .unwrap_or_else(|| panic!("{:?} has no apiVersion and kind", object.metadata.name));
        ObjectKey {
            api_version: types.api_version.clone(),
            kind: types.kind.clone(),
            namespace: object.metadata.namespace.clone(),
            name: object.name_any(),
        }
    }

    pub fn cluster_scoped(api_version: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: None,
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// The fields [`Snapshot::assert_unchanged_except`] usually leaves out: what any write changes.
pub const WRITE_BOOKKEEPING: &[&str] = &["/metadata/resourceVersion", "/metadata/managedFields"];

/// An object as it was when read, to compare with how it is later.
pub struct Snapshot {
    pub key: ObjectKey,
    /// The object, as JSON.
    pub object: Value,
    api: Api<DynamicObject>,
}

impl Snapshot {
    /// Reads the object (its kind found by discovery).
    pub async fn of(client: &kube::Client, key: ObjectKey) -> Snapshot {
        let (group, version) = key
            .api_version
            .split_once('/')
            .unwrap_or(("", key.api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &key.kind);
        let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("discover {}: {e}", key.kind));
        let api = match &key.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let object = read(&api, &key).await;
        Snapshot { key, object, api }
    }

    /// The object as it is now.
    pub async fn current(&self) -> Value {
        read(&self.api, &self.key).await
    }

    /// The object is unchanged, byte for byte, but for the fields at `ignored` (JSON pointers,
    /// for example [`WRITE_BOOKKEEPING`]).
    pub async fn assert_unchanged_except(&self, ignored: &[&str]) {
        self.assert_same(ignored, "").await;
    }

    /// The object is unchanged, byte for byte.
    pub async fn assert_unchanged(&self) {
        self.assert_same(&[], "").await;
    }

    /// The object is unchanged, byte for byte, after `what` (named in the failure: a cycle, a
    /// step).
    pub async fn assert_unchanged_after(&self, what: &str) {
        self.assert_same(&[], &format!(" after {what}")).await;
    }

    async fn assert_same(&self, ignored: &[&str], when: &str) {
        let (mut before, mut now) = (self.object.clone(), self.current().await);
        for pointer in ignored {
            remove_pointer(&mut before, pointer);
            remove_pointer(&mut now, pointer);
        }
        let differences = differences("", &before, &now);
        assert!(
            differences.is_empty(),
            "{} changed{when} (ignoring {ignored:?}) at:\n{}",
            self.key,
            differences.join("\n")
        );
    }

    /// The fields at `pointers` (JSON pointers) are unchanged; `why` says what that proves.
    pub async fn assert_unchanged_at(&self, pointers: &[&str], why: &str) {
        let now = self.current().await;
        for pointer in pointers {
            assert_eq!(
                now.pointer(pointer),
                self.object.pointer(pointer),
                "{}: {pointer} changed: {why}",
                self.key
            );
        }
    }
}

async fn read(api: &Api<DynamicObject>, key: &ObjectKey) -> Value {
    let object = api
        .get(&key.name)
        .await
        .unwrap_or_else(|e| panic!("get {key}: {e}"));
    serde_json::to_value(object).unwrap_or_else(|e| panic!("{key} as JSON: {e}"))
}

fn remove_pointer(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < items.len()
            {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// The JSON pointers at which `a` and `b` differ, each with both values.
fn differences(at: &str, a: &Value, b: &Value) -> Vec<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .flat_map(|k| {
                    let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    differences(
                        &path,
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                    )
                })
                .collect()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .flat_map(|(i, (p, q))| differences(&format!("{at}/{i}"), p, q))
            .collect(),
        _ if a == b => Vec::new(),
        _ => vec![format!("  {at}: {a} -> {b}")],
    }
}

impl Scenario {
    /// A [`Snapshot`] of an object as it is now.
    pub async fn snapshot(&self, key: ObjectKey) -> Snapshot {
        Snapshot::of(&self.client, key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_the_changed_pointers() {
        let a = json!({"metadata": {"name": "x", "labels": {"a/b": "1"}}, "spec": [1, 2]});
        let b = json!({"metadata": {"name": "x", "labels": {"a/b": "2"}}, "spec": [1, 3]});
        assert_eq!(
            differences("", &a, &b),
            [
                "  /metadata/labels/a~1b: \"1\" -> \"2\"",
                "  /spec/1: 2 -> 3"
            ]
        );
        let mut c = a.clone();
        remove_pointer(&mut c, "/metadata/labels");
        assert_eq!(c, json!({"metadata": {"name": "x"}, "spec": [1, 2]}));
    }
}
