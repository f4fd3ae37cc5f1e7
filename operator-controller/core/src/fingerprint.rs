//! Which changes of watched objects are worth acting on, as fingerprints: equal fingerprints mean
//! nothing to do.
//!
//! Input: object metadata (an applied object's, a ClusterExtension's). Output: `u64`
//! fingerprints, compared only within one process. No IO.
//!
//! - [`metadata_fingerprint`]: the drift watch's view of an object the apply layer wrote.
//! - [`reconcile_trigger`]: the ClusterExtension watch filter that starts a reconcile.

use std::hash::{Hash, Hasher};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use olm_api::v1::ClusterExtension;

/// Annotations Kubernetes' own controllers write on objects we apply, right after the apply
/// (the Deployment controller's rollout revision): not ours, never set by a bundle, and an
/// apply leaves them as they are.
const CONTROLLER_ANNOTATIONS: [&str; 1] = ["deployment.kubernetes.io/revision"];

/// What of an object's metadata changes when the object changes in a way an apply would
/// restore: its generation (spec) where the kind keeps one, else its resourceVersion (kinds
/// without status, such as ConfigMaps, change version only when they change), plus labels,
/// annotations, owner references, finalizers and deletion. Controllers' status writes change
/// none of it, so a Deployment rolling out keeps its fingerprint.
///
/// | change                                                   | fingerprint |
/// |----------------------------------------------------------|-------------|
/// | status write (resourceVersion only, generation kept)     | same        |
/// | `deployment.kubernetes.io/revision` annotation           | same        |
/// | generation; resourceVersion of a kind without generation | differs     |
/// | labels, any other annotation, finalizers, owner references, deletion | differs |
pub fn metadata_fingerprint(meta: &ObjectMeta) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match meta.generation.filter(|g| *g > 0) {
        Some(generation) => (0u8, generation).hash(&mut hasher),
        None => (1u8, &meta.resource_version).hash(&mut hasher),
    }
    meta.labels.hash(&mut hasher);
    for annotation in meta.annotations.iter().flatten() {
        if !CONTROLLER_ANNOTATIONS.contains(&annotation.0.as_str()) {
            annotation.hash(&mut hasher);
        }
    }
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    for owner in meta.owner_references.iter().flatten() {
        (
            &owner.api_version,
            &owner.kind,
            &owner.name,
            &owner.uid,
            owner.controller,
            owner.block_owner_deletion,
        )
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// What of an extension starts a reconcile when it changes (the controller's watch filter):
/// its generation (spec), deletion, labels, annotations and finalizers other than
/// `own_finalizers` (the controller's own). Status changes (the controller writes them) and the
/// finalizers it adds itself do not: the reconcile that wrote them has already acted on that
/// version, and re-running it would only repeat every request. Always `Some` (kube's predicate
/// filter reads `None` as "no fingerprint, always pass").
pub fn reconcile_trigger(extension: &ClusterExtension, own_finalizers: &[&str]) -> Option<u64> {
    let meta = &extension.metadata;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    for finalizer in meta.finalizers.iter().flatten() {
        if !own_finalizers.contains(&finalizer.as_str()) {
            finalizer.hash(&mut hasher);
        }
    }
    Some(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
    use serde_json::json;

    fn now() -> Time {
        serde_json::from_value(json!("2026-01-01T00:00:00Z")).expect("a time")
    }

    fn deployment_meta() -> ObjectMeta {
        ObjectMeta {
            name: Some("a".into()),
            namespace: Some("ns".into()),
            generation: Some(3),
            resource_version: Some("2".into()),
            ..Default::default()
        }
    }

    #[test]
    fn status_writes_and_the_deployment_revision_annotation_keep_the_fingerprint() {
        let base = deployment_meta();
        let mut status_written = base.clone();
        status_written.resource_version = Some("3".into());
        assert_eq!(
            metadata_fingerprint(&status_written),
            metadata_fingerprint(&base)
        );
        let mut revised = base.clone();
        revised
            .annotations
            .get_or_insert_default()
            .insert("deployment.kubernetes.io/revision".into(), "1".into());
        assert_eq!(
            metadata_fingerprint(&revised),
            metadata_fingerprint(&base),
            "the Deployment controller's revision annotation"
        );
    }

    #[test]
    fn spec_labels_other_annotations_finalizers_owners_and_deletion_change_the_fingerprint() {
        let base = deployment_meta();
        let mut changed = Vec::new();
        let mut spec = base.clone();
        spec.generation = Some(4);
        changed.push(("generation", spec));
        let mut labelled = base.clone();
        labelled
            .labels
            .get_or_insert_default()
            .insert("extra".into(), "x".into());
        changed.push(("labels", labelled));
        let mut annotated = base.clone();
        annotated
            .annotations
            .get_or_insert_default()
            .insert("example.com/note".into(), "1".into());
        changed.push(("any other annotation", annotated));
        let mut finalized = base.clone();
        finalized.finalizers = Some(vec!["example.com/keep".into()]);
        changed.push(("finalizers", finalized));
        let mut owned = base.clone();
        owned.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "owner".into(),
            uid: "u".into(),
            ..Default::default()
        }]);
        changed.push(("owner references", owned));
        let mut deleted = base.clone();
        deleted.deletion_timestamp = Some(now());
        changed.push(("deletion", deleted));
        for (what, meta) in changed {
            assert_ne!(
                metadata_fingerprint(&meta),
                metadata_fingerprint(&base),
                "{what}"
            );
        }
    }

    #[test]
    fn without_a_generation_the_resource_version_is_the_fingerprint_of_the_content() {
        let mut config_map = deployment_meta();
        config_map.generation = None;
        let mut edited = config_map.clone();
        edited.resource_version = Some("9".into());
        assert_ne!(
            metadata_fingerprint(&edited),
            metadata_fingerprint(&config_map)
        );
    }

    const OURS: [&str; 2] = [
        "olm.operatorframework.io/cleanup-unpack-cache",
        "olm.operatorframework.io/cleanup-contentmanager-cache",
    ];

    fn extension() -> ClusterExtension {
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": "e", "uid": "u"},
            "spec": {
                "namespace": "ns",
                "source": {"sourceType": "Catalog", "catalog": {"packageName": "p"}},
            },
        }))
        .expect("an extension")
    }

    #[test]
    fn status_and_our_own_finalizers_do_not_trigger_a_reconcile_spec_deletion_and_metadata_do() {
        let base = extension();
        let trigger = reconcile_trigger(&base, &OURS);
        let mut ours = base.clone();
        ours.metadata.finalizers = Some(OURS.map(String::from).to_vec());
        ours.status = Some(Default::default());
        assert_eq!(
            reconcile_trigger(&ours, &OURS),
            trigger,
            "status and our finalizers"
        );

        let mut changed = Vec::new();
        let mut spec = base.clone();
        spec.metadata.generation = Some(2);
        changed.push(spec);
        let mut deleted = base.clone();
        deleted.metadata.deletion_timestamp = Some(now());
        changed.push(deleted);
        let mut labelled = base.clone();
        labelled.metadata.labels = Some([("a".to_owned(), "b".to_owned())].into());
        changed.push(labelled);
        let mut annotated = base.clone();
        annotated.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
        changed.push(annotated);
        let mut foreign = base.clone();
        foreign.metadata.finalizers = Some(vec!["example.com/keep".to_owned()]);
        changed.push(foreign);
        for e in changed {
            assert_ne!(reconcile_trigger(&e, &OURS), trigger, "{:?}", e.metadata);
        }
    }
}
