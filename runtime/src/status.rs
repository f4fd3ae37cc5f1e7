//! Status writes: a JSON patch of the status subresource, sent only when the status changed.
//!
//! Input: the object as last read (or as returned by this reconcile's own metadata writes), its
//! status as read, and the desired status. Output: whether a write happened. Network: at most one
//! PATCH to the Kubernetes API.
//!
//! | desired status | written |
//! |---|---|
//! | equal to the status read | nothing (no request) |
//! | different | the resourceVersion read + the operations turning the old status into the new one |
//!
//! Carrying the resourceVersion read is optimistic locking: the API server refuses the write with
//! 409 Conflict when the object changed after it was read ([`StatusError::is_conflict`]), so a
//! status computed from stale input never lands; the caller retries from a fresh read. Patching
//! only the differences leaves status fields this version does not know untouched.

use std::fmt::Debug;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use kube::api::{Api, Patch};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Why a status could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("failed to encode the status of {name}: {source}")]
    Encode {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to write the status of {name}: {source}")]
    Write {
        name: String,
        #[source]
        source: kube::Error,
    },
}

impl StatusError {
    /// The object changed since it was read (409): read it again and recompute.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StatusError::Write { source, .. } if crate::finalizer::is_conflict(source))
    }
}

/// The patch turning status `previous` into `desired`, guarded by `resource_version`; `None`
/// when they are equal. Pure.
pub fn status_patch(
    resource_version: Option<&str>,
    previous: &Value,
    desired: &Value,
) -> Option<json_patch::Patch> {
    if previous == desired {
        return None;
    }
    let mut ops = vec![crate::finalizer::optimistic_lock(resource_version)];
    if previous.is_null() {
        ops.push(PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["status"]),
            value: desired.clone(),
        }));
    } else {
        // Typed operations all the way: nothing here can fail and silently patch less.
        let diff = json_patch::diff(&json!({"status": previous}), &json!({"status": desired}));
        ops.extend(diff.0);
    }
    Some(json_patch::Patch(ops))
}

/// Writes statuses of one kind of object. Holding one is what lets a replica write status: a
/// replica that does not lead has none (see catalogd's reconcile).
#[derive(Clone)]
pub struct StatusWriter<K: Resource + Clone + DeserializeOwned + Debug> {
    api: Api<K>,
}

impl<K> StatusWriter<K>
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
{
    pub fn new(api: Api<K>) -> StatusWriter<K> {
        StatusWriter { api }
    }

    /// Writes `desired` over `previous` (the status in `object` as read) when they differ, guarded
    /// by `object`'s resourceVersion. Returns whether anything was written.
    pub async fn write<S>(
        &self,
        object: &K,
        previous: Option<&S>,
        desired: &S,
    ) -> Result<bool, StatusError>
    where
        S: Serialize + PartialEq,
    {
        self.write_returning(object, previous, desired)
            .await
            .map(|written| written.is_some())
    }

    /// As [`StatusWriter::write`], returning the object as the API server stored it when a patch
    /// was sent (`None`: nothing to write), so a caller knows the resourceVersion it produced.
    pub async fn write_returning<S>(
        &self,
        object: &K,
        previous: Option<&S>,
        desired: &S,
    ) -> Result<Option<K>, StatusError>
    where
        S: Serialize + PartialEq,
    {
        if previous == Some(desired) {
            return Ok(None);
        }
        let name = object.name_any();
        let encode = |v: Option<&S>| {
            serde_json::to_value(v).map_err(|source| StatusError::Encode {
                name: name.clone(),
                source,
            })
        };
        let Some(patch) = status_patch(
            object.meta().resource_version.as_deref(),
            &encode(previous)?,
            &encode(Some(desired))?,
        ) else {
            return Ok(None);
        };
        self.api
            .patch_status(
                &name,
                &crate::client::patch_params(),
                &Patch::<()>::Json(patch),
            )
            .await
            .map(Some)
            .map_err(|source| StatusError::Write { name, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(patch: json_patch::Patch) -> Value {
        serde_json::to_value(patch).expect("serializes")
    }

    #[test]
    fn an_unchanged_status_needs_no_patch() {
        let s = json!({"conditions": [{"type": "A"}]});
        assert!(status_patch(Some("1"), &s, &s.clone()).is_none());
    }

    #[test]
    fn a_first_status_is_added_whole() {
        assert_eq!(
            ops(status_patch(Some("7"), &Value::Null, &json!({"a": 1})).expect("patch")),
            json!([
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "7"},
                {"op": "add", "path": "/status", "value": {"a": 1}}
            ])
        );
    }

    #[test]
    fn a_changed_status_patches_only_its_differences() {
        let old = json!({"keep": "x", "gone": 1, "conditions": [{"type": "A", "status": "True"}]});
        let new = json!({"keep": "x", "conditions": [{"type": "A", "status": "False"}]});
        let patch = status_patch(Some("9"), &old, &new).expect("patch");
        let mut doc =
            json!({"metadata": {"resourceVersion": "9"}, "status": old.clone(), "spec": {"s": 1}});
        json_patch::patch(&mut doc, &patch).expect("applies");
        assert_eq!(doc["status"], new);
        assert_eq!(doc["spec"], json!({"s": 1}));
        // Applied to a newer object, the patch sets the version read back: the API server sees
        // a resourceVersion that is not the current one and answers 409 Conflict.
        let mut newer = json!({"metadata": {"resourceVersion": "10"}, "status": old});
        json_patch::patch(&mut newer, &patch).expect("applies");
        assert_eq!(newer["metadata"]["resourceVersion"], "9");
    }
}
