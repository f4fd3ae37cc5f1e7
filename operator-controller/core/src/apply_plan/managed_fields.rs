//! Field ownership: our field manager, and moving upstream's fields to it.
//!
//! Input: a live object's `metadata.managedFields`. Output: the entries to write back so that
//! the fields upstream's Helm client owns become ours, or `None` when nothing is to migrate.
//! Pure: no IO.
//!
//! We write with server-side apply under one field manager, [`FIELD_MANAGER`] =
//! `operator-controller`: the name upstream's Helm client writes under (the basename of its
//! binary), so `kubectl get --show-managed-fields` shows one name whichever implementation
//! installed an object, and an object both have touched has one owner name.
//!
//! Upstream's Helm client does not use server-side apply: it creates and patches, which the
//! API server records as an `Update` entry of manager `operator-controller`. Server-side apply
//! only removes a field when its applier stops sending it *and no other manager owns it*; the
//! `Update` entry would own every field upstream ever set, so a field our bundle no longer
//! sets would stay forever. Before the first apply of such an object we therefore merge the
//! legacy entries into our `Apply` entry (the technique of client-go's `csaupgrade`), so we
//! own what upstream owned and later applies can drop it.
//!
//! | entry of the live object | migration |
//! |---|---|
//! | manager `operator-controller`, operation `Update`, main resource | merged into ours, removed |
//! | manager `operator-controller`, operation `Apply`, main resource | ours: receives the union |
//! | any other (users, `kubectl rollout restart`, controllers, a subresource) | kept unchanged |
//!
//! Fields owned by other managers are untouched, so labels a user added, or
//! `kubectl rollout restart`'s `restartedAt`, survive every later apply.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use serde_json::{Map, Value};

/// The field manager of every write of the apply layer.
pub const FIELD_MANAGER: &str = "operator-controller";

/// `(manager, operation)` of the entries whose fields we take over: upstream's Helm client.
pub const LEGACY_MANAGERS: [(&str, &str); 1] = [("operator-controller", "Update")];

fn is_main_resource(entry: &ManagedFieldsEntry) -> bool {
    entry.subresource.as_deref().is_none_or(str::is_empty)
}

fn is_legacy(entry: &ManagedFieldsEntry) -> bool {
    is_main_resource(entry)
        && LEGACY_MANAGERS.iter().any(|(manager, operation)| {
            entry.manager.as_deref() == Some(*manager)
                && entry.operation.as_deref() == Some(*operation)
        })
}

fn is_ours(entry: &ManagedFieldsEntry) -> bool {
    is_main_resource(entry)
        && entry.manager.as_deref() == Some(FIELD_MANAGER)
        && entry.operation.as_deref() == Some("Apply")
}

/// Adds every field of `from` to `into` (set union of two `FieldsV1` tries).
fn union_fields(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (key, value) in from {
        match (into.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(more)) => union_fields(existing, more),
            (Some(_), _) => {}
            (None, _) => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The managed fields to write before applying, or `None` when no legacy entry exists.
///
/// `api_version` is the version we apply with; it names our entry when we have none yet.
pub fn migrate(
    entries: &[ManagedFieldsEntry],
    api_version: &str,
) -> Option<Vec<ManagedFieldsEntry>> {
    if !entries.iter().any(is_legacy) {
        return None;
    }
    let mut fields = Map::new();
    let mut ours: Option<ManagedFieldsEntry> = None;
    let mut kept = Vec::new();
    for entry in entries {
        if is_legacy(entry) || is_ours(entry) {
            if let Some(FieldsV1(Value::Object(f))) = &entry.fields_v1 {
                union_fields(&mut fields, f);
            }
            if is_ours(entry) {
                ours = Some(entry.clone());
            } else if ours.is_none() {
                // Our new entry inherits the legacy entry's time until the apply updates it.
                ours = Some(ManagedFieldsEntry {
                    api_version: Some(api_version.to_owned()),
                    fields_type: Some("FieldsV1".into()),
                    fields_v1: None,
                    manager: Some(FIELD_MANAGER.into()),
                    operation: Some("Apply".into()),
                    subresource: None,
                    time: entry.time.clone(),
                });
            }
        } else {
            kept.push(entry.clone());
        }
    }
    let mut ours = ours?;
    ours.fields_type = Some("FieldsV1".into());
    ours.fields_v1 = Some(FieldsV1(Value::Object(fields)));
    let mut result = vec![ours];
    result.extend(kept);
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            api_version: Some("v1".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: None,
            time: None,
        }
    }

    #[test]
    fn nothing_to_migrate_without_a_legacy_entry() {
        let entries = vec![
            entry(
                "operator-controller",
                "Apply",
                json!({"f:data": {"f:a": {}}}),
            ),
            entry(
                "kubectl-label",
                "Update",
                json!({"f:metadata": {"f:labels": {"f:x": {}}}}),
            ),
        ];
        assert_eq!(migrate(&entries, "v1"), None);
    }

    #[test]
    fn helms_update_entry_becomes_our_apply_entry_and_others_are_kept() {
        let user = entry(
            "kubectl-rollout",
            "Update",
            json!({"f:spec": {"f:template": {"f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/restartedAt": {}}}}}}),
        );
        let entries = vec![
            entry(
                "operator-controller",
                "Update",
                json!({"f:data": {".": {}, "f:old": {}}, "f:metadata": {"f:labels": {"f:a": {}}}}),
            ),
            user.clone(),
        ];
        let migrated = migrate(&entries, "v1").unwrap();
        assert_eq!(migrated.len(), 2);
        assert_eq!(migrated[0].manager.as_deref(), Some("operator-controller"));
        assert_eq!(migrated[0].operation.as_deref(), Some("Apply"));
        assert_eq!(
            migrated[0].fields_v1,
            Some(FieldsV1(
                json!({"f:data": {".": {}, "f:old": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
            ))
        );
        assert_eq!(migrated[1], user);
    }

    #[test]
    fn legacy_fields_are_unioned_into_an_existing_apply_entry() {
        let entries = vec![
            entry(
                "operator-controller",
                "Apply",
                json!({"f:data": {"f:new": {}}}),
            ),
            entry(
                "operator-controller",
                "Update",
                json!({"f:data": {"f:old": {}}, "f:spec": {".": {}}}),
            ),
        ];
        let migrated = migrate(&entries, "v1").unwrap();
        assert_eq!(migrated.len(), 1);
        assert_eq!(
            migrated[0].fields_v1,
            Some(FieldsV1(
                json!({"f:data": {"f:new": {}, "f:old": {}}, "f:spec": {".": {}}})
            ))
        );
    }

    #[test]
    fn subresource_entries_are_never_migrated() {
        let mut status = entry("operator-controller", "Update", json!({"f:status": {}}));
        status.subresource = Some("status".into());
        assert_eq!(migrate(&[status], "v1"), None);
    }
}
