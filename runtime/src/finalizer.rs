//! Adding and removing a finalizer as JSON patches, so a concurrent change is never overwritten.
//!
//! Input: an object as last read and a finalizer name. Output: the object as the API server
//! returned it after the patch. Network: one PATCH to the Kubernetes API per change.
//!
//! | operation | precondition in the patch | when it fails |
//! |---|---|---|
//! | add, add all | the resourceVersion read ([`optimistic_lock`]) | 409 Conflict: the object changed since it was read; the caller re-reads (next reconcile) |
//! | remove | `test /metadata/finalizers/<i>` = the finalizer | 422: the list changed; the caller re-reads |
//!
//! Removing tests the finalizer's slot instead of the resourceVersion so that a deletion in
//! progress (which bumps the version as other finalizers go) does not make it fail needlessly.
//! A 404 on removal means the object is gone: done.
//!
//! The patches are built as typed operations, so building one cannot fail: a patch that could
//! not be encoded must never pass for "nothing to change".

use std::fmt::Debug;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, ReplaceOperation, TestOperation};
use kube::api::{Api, Patch};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// The JSON patch operation that makes a patch an optimistic-locking one: it sets the
/// resourceVersion that was read, and the API server refuses (409 Conflict) a patched object whose
/// resourceVersion is not the current one. (A `test` operation would fail with an unspecific 422.)
pub fn optimistic_lock(resource_version: Option<&str>) -> PatchOperation {
    PatchOperation::Replace(ReplaceOperation {
        path: PointerBuf::from_tokens(["metadata", "resourceVersion"]),
        value: json!(resource_version),
    })
}

/// Whether the API server refused a write because the object changed since it was read.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(e) if e.code == 409)
}

/// Whether `object` carries `finalizer`.
pub fn has<K: Resource>(object: &K, finalizer: &str) -> bool {
    object.finalizers().iter().any(|f| f == finalizer)
}

/// The JSON patch adding `finalizer` to `object` (guarded by its resourceVersion), or `None` when
/// it is there already. Pure.
pub fn add_patch<K: Resource>(object: &K, finalizer: &str) -> Option<json_patch::Patch> {
    add_all_patch(object, &[finalizer])
}

/// The JSON patch adding every finalizer of `finalizers` that `object` lacks, in order, in one
/// request (guarded by its resourceVersion), or `None` when all are there. Pure.
pub fn add_all_patch<K: Resource>(object: &K, finalizers: &[&str]) -> Option<json_patch::Patch> {
    let missing: Vec<&str> = finalizers
        .iter()
        .copied()
        .filter(|f| !has(object, f))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut ops = vec![optimistic_lock(object.meta().resource_version.as_deref())];
    if object.finalizers().is_empty() {
        ops.push(PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["metadata", "finalizers"]),
            value: json!(missing),
        }));
    } else {
        for finalizer in missing {
            ops.push(PatchOperation::Add(AddOperation {
                path: PointerBuf::from_tokens(["metadata", "finalizers", "-"]),
                value: json!(finalizer),
            }));
        }
    }
    Some(json_patch::Patch(ops))
}

/// The JSON patch removing `finalizer` from `object`, or `None` when it is not there. Pure.
pub fn remove_patch<K: Resource>(object: &K, finalizer: &str) -> Option<json_patch::Patch> {
    let index = object.finalizers().iter().position(|f| f == finalizer)?;
    let path = PointerBuf::from_tokens([
        "metadata".to_owned(),
        "finalizers".to_owned(),
        index.to_string(),
    ]);
    Some(json_patch::Patch(vec![
        PatchOperation::Test(TestOperation {
            path: path.clone(),
            value: json!(finalizer),
        }),
        PatchOperation::Remove(RemoveOperation { path }),
    ]))
}

/// Adds `finalizer`; returns the updated object, or `None` when nothing had to change.
pub async fn add<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
{
    add_all(api, object, &[finalizer]).await
}

/// Adds every missing finalizer of `finalizers` with one PATCH; returns the updated object, or
/// `None` when nothing had to change.
pub async fn add_all<K>(
    api: &Api<K>,
    object: &K,
    finalizers: &[&str],
) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
{
    let Some(patch) = add_all_patch(object, finalizers) else {
        return Ok(None);
    };
    api.patch(
        &object.name_any(),
        &crate::client::patch_params(),
        &Patch::<()>::Json(patch),
    )
    .await
    .map(Some)
}

/// Removes `finalizer`; an object already gone counts as done.
pub async fn remove<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<(), kube::Error>
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
{
    let Some(patch) = remove_patch(object, finalizer) else {
        return Ok(());
    };
    match api
        .patch(
            &object.name_any(),
            &crate::client::patch_params(),
            &Patch::<()>::Json(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Gone already (ours was the last finalizer): nothing left to do.
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn object(finalizers: &[&str]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("x".into()),
                resource_version: Some("42".into()),
                finalizers: (!finalizers.is_empty())
                    .then(|| finalizers.iter().map(|f| f.to_string()).collect()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn ops(patch: json_patch::Patch) -> serde_json::Value {
        serde_json::to_value(patch).expect("serializes")
    }

    #[test]
    fn adding_locks_on_the_resource_version_and_creates_the_list_when_absent() {
        assert_eq!(
            ops(add_patch(&object(&[]), "f").expect("needed")),
            json!([
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
                {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}
            ])
        );
        assert_eq!(
            ops(add_patch(&object(&["other"]), "f").expect("needed")),
            json!([
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
                {"op": "add", "path": "/metadata/finalizers/-", "value": "f"}
            ])
        );
        assert!(add_patch(&object(&["f"]), "f").is_none());
    }

    #[test]
    fn adding_several_is_one_patch_of_the_missing_ones_in_order() {
        assert_eq!(
            ops(add_all_patch(&object(&[]), &["a", "b"]).expect("needed")),
            json!([
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
                {"op": "add", "path": "/metadata/finalizers", "value": ["a", "b"]}
            ])
        );
        assert_eq!(
            ops(add_all_patch(&object(&["x", "a"]), &["a", "b", "c"]).expect("needed")),
            json!([
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
                {"op": "add", "path": "/metadata/finalizers/-", "value": "b"},
                {"op": "add", "path": "/metadata/finalizers/-", "value": "c"}
            ])
        );
        assert!(add_all_patch(&object(&["b", "a"]), &["a", "b"]).is_none());
    }

    #[test]
    fn removing_tests_the_slot_it_removes() {
        assert_eq!(
            ops(remove_patch(&object(&["a", "f"]), "f").expect("needed")),
            json!([
                {"op": "test", "path": "/metadata/finalizers/1", "value": "f"},
                {"op": "remove", "path": "/metadata/finalizers/1"}
            ])
        );
        assert!(remove_patch(&object(&["a"]), "f").is_none());
    }
}
