//! Which extension an object belongs to: the metadata we write, and how we read it back.
//!
//! Input: the owning ClusterExtension, the install namespace, a rendered object or a live
//! object's metadata. Output: the rendered object stamped with ownership metadata; whether a
//! live object is ours; collisions with upstream's message. Pure: no IO.
//!
//! Every applied object gets, on top of its rendered metadata:
//!
//! | metadata | value | why |
//! |---|---|---|
//! | label `olm.operatorframework.io/owner-kind` | `ClusterExtension` | upstream's label; drift watches select on it |
//! | label `olm.operatorframework.io/owner-name` | the extension's name | upstream's label; maps events to the extension |
//! | label `app.kubernetes.io/managed-by` | `Helm` | Helm's ownership check (upstream applies through Helm) |
//! | annotation `meta.helm.sh/release-name` | the extension's name | same |
//! | annotation `meta.helm.sh/release-namespace` | the install namespace | same |
//! | ownerReference | the ClusterExtension, `controller: true`, `blockOwnerDeletion: true` | garbage collection where a collector runs |
//!
//! An object annotated `helm.sh/resource-policy: keep` (trimmed, case-insensitive, as Helm
//! reads it) gets no ownerReference (the garbage collector must not delete it) but
//! `operator-sdk/primary-resource: /<extension>` and
//! `operator-sdk/primary-resource-type: ClusterExtension.olm.operatorframework.io`, as
//! upstream's helm-operator-plugins post-renderer writes them.
//!
//! Because the Helm triple is the same as upstream's, objects installed by upstream are ours
//! and ours are upstream's: either implementation can take over the other's installs.
//!
//! Whether an existing object may be written (the collision rule, Helm's
//! `existingResourceConflict` plus one guard of ours):
//!
//! | object in the previous release | Helm triple names this extension | controller ownerReference | verdict |
//! |---|---|---|---|
//! | yes | any | any | ours (we installed it; a user may have removed a label, re-applying restores it) |
//! | no | yes | none, or a ClusterExtension of this name | ours (adopted: ours or upstream's from an interrupted install) |
//! | no | yes | another object | collision (the API server would refuse a second controller) |
//! | no | no (any of the three missing or different) | any | collision |
//!
//! Whether an existing object may be deleted (pruning, uninstall): it must carry this
//! extension's Helm triple or its `owner-kind`/`owner-name` labels, and not be controlled by
//! another object. Anything else is left alone and reported.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

/// Label naming the kind of an object's owner (upstream's).
pub const OWNER_KIND_LABEL: &str = "olm.operatorframework.io/owner-kind";
/// Label naming the owner (upstream's).
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";
/// The value of [`OWNER_KIND_LABEL`].
pub const OWNER_KIND: &str = "ClusterExtension";
/// Label selector every drift watch uses.
pub const OWNER_KIND_SELECTOR: &str = "olm.operatorframework.io/owner-kind=ClusterExtension";
/// Helm's ownership label.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY_LABEL`] Helm requires.
pub const MANAGED_BY_HELM: &str = "Helm";
/// Helm's release-name annotation.
pub const RELEASE_NAME_ANNOTATION: &str = "meta.helm.sh/release-name";
/// Helm's release-namespace annotation.
pub const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
/// Helm's resource-policy annotation.
pub const RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";
/// The value of [`RESOURCE_POLICY_ANNOTATION`] that keeps an object.
pub const RESOURCE_POLICY_KEEP: &str = "keep";
/// operator-lib's owner annotations, used instead of an ownerReference on kept objects.
pub const PRIMARY_RESOURCE_ANNOTATION: &str = "operator-sdk/primary-resource";
pub const PRIMARY_RESOURCE_TYPE_ANNOTATION: &str = "operator-sdk/primary-resource-type";
/// `Kind.group` of the owner, the value of [`PRIMARY_RESOURCE_TYPE_ANNOTATION`].
pub const PRIMARY_RESOURCE_TYPE: &str = "ClusterExtension.olm.operatorframework.io";
/// The owner's `apiVersion` in ownerReferences.
pub const OWNER_API_VERSION: &str = "olm.operatorframework.io/v1";
/// Annotation `kubectl apply` leaves behind; never part of what we apply (Boxcutter strips it
/// too).
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The ClusterExtension that owns a set of objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub name: String,
    pub uid: String,
}

/// True when `annotations` carry `helm.sh/resource-policy: keep` as Helm reads it.
pub fn has_keep_policy(annotations: Option<&BTreeMap<String, String>>) -> bool {
    annotations
        .and_then(|a| a.get(RESOURCE_POLICY_ANNOTATION))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(RESOURCE_POLICY_KEEP))
}

fn json_keep_policy(body: &Value) -> bool {
    body.pointer("/metadata/annotations")
        .and_then(|a| a.get(RESOURCE_POLICY_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(RESOURCE_POLICY_KEEP))
}

/// Prepares a rendered object for server-side apply: keeps only the metadata fields that are
/// part of the desired state (name, namespace, labels, annotations, ownerReferences,
/// finalizers), drops `status` and `kubectl`'s last-applied annotation, sets the namespace
/// (`Some`: namespaced kind) or removes it (`None`: cluster-scoped kind), then stamps the
/// ownership metadata of the module table. Returns whether the object has the keep policy.
///
/// `body` must have passed [`super::RenderedObject::parse`] (an object with object metadata).
pub fn stamp(
    body: &mut Value,
    owner: &Owner,
    install_namespace: &str,
    namespace: Option<&str>,
) -> bool {
    let keep = json_keep_policy(body);
    let Some(object) = body.as_object_mut() else {
        return keep;
    };
    object.remove("status");
    let mut metadata = match object.remove("metadata") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    metadata.retain(|k, _| {
        matches!(
            k.as_str(),
            "name" | "namespace" | "labels" | "annotations" | "ownerReferences" | "finalizers"
        )
    });
    match namespace {
        Some(ns) => {
            metadata.insert("namespace".into(), Value::String(ns.to_owned()));
        }
        None => {
            metadata.remove("namespace");
        }
    }

    with_map(&mut metadata, "labels", |labels| {
        labels.insert(OWNER_KIND_LABEL.into(), OWNER_KIND.into());
        labels.insert(OWNER_NAME_LABEL.into(), owner.name.clone().into());
        labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY_HELM.into());
    });
    with_map(&mut metadata, "annotations", |annotations| {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        annotations.insert(RELEASE_NAME_ANNOTATION.into(), owner.name.clone().into());
        annotations.insert(
            RELEASE_NAMESPACE_ANNOTATION.into(),
            install_namespace.to_owned().into(),
        );
        if keep {
            annotations.insert(
                PRIMARY_RESOURCE_ANNOTATION.into(),
                format!("/{}", owner.name).into(),
            );
            annotations.insert(
                PRIMARY_RESOURCE_TYPE_ANNOTATION.into(),
                PRIMARY_RESOURCE_TYPE.into(),
            );
        }
    });
    if !keep {
        let mut refs = match metadata.remove("ownerReferences") {
            Some(Value::Array(refs)) => refs,
            _ => Vec::new(),
        };
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner.uid.as_str()));
        refs.push(json!({
            "apiVersion": OWNER_API_VERSION,
            "kind": OWNER_KIND,
            "name": owner.name,
            "uid": owner.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }));
        metadata.insert("ownerReferences".into(), Value::Array(refs));
    }
    object.insert("metadata".into(), Value::Object(metadata));
    keep
}

/// Edits the string map at `metadata[field]`, starting from an empty one when it is absent or
/// not an object.
fn with_map(
    metadata: &mut Map<String, Value>,
    field: &str,
    edit: impl FnOnce(&mut Map<String, Value>),
) {
    let mut map = match metadata.remove(field) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    edit(&mut map);
    metadata.insert(field.to_owned(), Value::Object(map));
}

/// How a live object's metadata relates to an extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// Carries this extension's Helm triple (or, for deletion, its owner labels) and no
    /// foreign controller.
    Ours,
    /// Anything else; the text says why, in Helm's words where Helm has them.
    NotOurs { why: String },
}

/// Helm's ownership check (`checkOwnership`): every problem with the triple, joined with `; `,
/// in Helm's wording; empty when the triple names this release.
fn helm_triple_problems(meta: &ObjectMeta, release: &str, release_namespace: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let require = |map: Option<&BTreeMap<String, String>>, key: &str, want: &str| match map
        .and_then(|m| m.get(key))
    {
        None => Some(format!("missing key \"{key}\": must be set to \"{want}\"")),
        Some(actual) if actual != want => Some(format!(
            "key \"{key}\" must equal \"{want}\": current value is \"{actual}\""
        )),
        Some(_) => None,
    };
    if let Some(p) = require(meta.labels.as_ref(), MANAGED_BY_LABEL, MANAGED_BY_HELM) {
        problems.push(format!("label validation error: {p}"));
    }
    if let Some(p) = require(meta.annotations.as_ref(), RELEASE_NAME_ANNOTATION, release) {
        problems.push(format!("annotation validation error: {p}"));
    }
    if let Some(p) = require(
        meta.annotations.as_ref(),
        RELEASE_NAMESPACE_ANNOTATION,
        release_namespace,
    ) {
        problems.push(format!("annotation validation error: {p}"));
    }
    problems
}

fn has_owner_labels(meta: &ObjectMeta, owner: &Owner) -> bool {
    let labels = meta.labels.as_ref();
    labels
        .and_then(|l| l.get(OWNER_KIND_LABEL))
        .map(String::as_str)
        == Some(OWNER_KIND)
        && labels.and_then(|l| l.get(OWNER_NAME_LABEL)) == Some(&owner.name)
}

/// The controller ownerReference of `meta` when it is not this extension (a ClusterExtension
/// of the same name counts as this extension: a re-created extension takes over).
fn foreign_controller(meta: &ObjectMeta, owner: &Owner) -> Option<String> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .filter(|r| {
            !(r.kind == OWNER_KIND
                && r.name == owner.name
                && r.api_version.starts_with("olm.operatorframework.io/"))
        })
        .map(|r| format!("controlled by {} \"{}\"", r.kind, r.name))
}

/// Whether an existing object that is not in the previous release may be written by this
/// extension (the module's collision table).
pub fn write_ownership(meta: &ObjectMeta, owner: &Owner, install_namespace: &str) -> Ownership {
    let problems = helm_triple_problems(meta, &owner.name, install_namespace);
    if !problems.is_empty() {
        return Ownership::NotOurs {
            why: format!("invalid ownership metadata; {}", problems.join("; ")),
        };
    }
    match foreign_controller(meta, owner) {
        Some(why) => Ownership::NotOurs { why },
        None => Ownership::Ours,
    }
}

/// Whether an existing object may be deleted on behalf of this extension (pruning, uninstall).
pub fn delete_ownership(meta: &ObjectMeta, owner: &Owner, install_namespace: &str) -> Ownership {
    let helm_ours = helm_triple_problems(meta, &owner.name, install_namespace).is_empty();
    if !helm_ours && !has_owner_labels(meta, owner) {
        return Ownership::NotOurs {
            why: format!(
                "it carries neither this extension's Helm ownership metadata nor its {OWNER_NAME_LABEL} label"
            ),
        };
    }
    match foreign_controller(meta, owner) {
        Some(why) => Ownership::NotOurs { why },
        None => Ownership::Ours,
    }
}

/// An existing object the set cannot take over.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Collision {
    pub kind: String,
    pub name: String,
    /// The namespace of upstream's message, as Helm reports it: the one a namespaced object is
    /// applied in; for a cluster-scoped object the rendered one, usually none (giving `''`).
    pub namespace: String,
    /// Why the object is not ours (not part of upstream's message; logged and kept for tests).
    pub why: String,
}

impl fmt::Display for Collision {
    /// Upstream's translation of Helm's install conflict (`action/error/errors.go`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} '{}' already exists in namespace '{}' and cannot be managed by operator-controller",
            self.kind, self.name, self.namespace
        )
    }
}

/// Upstream's prefix for errors found while computing the release state (where Helm finds
/// conflicts): `applier/helm.go`.
pub const RELEASE_STATE_PREFIX: &str = "failed to get release state using server-side dry-run: ";

/// The message for a refused set: upstream's text for one collision
/// (`failed to get release state using server-side dry-run: <Kind> '<name>' already exists in
/// namespace '<ns>' and cannot be managed by operator-controller`), and for several, every
/// collision on its own line in install order (upstream stops at the first).
pub fn collisions_message(collisions: &[Collision]) -> String {
    let lines: Vec<String> = collisions.iter().map(Collision::to_string).collect();
    format!("{RELEASE_STATE_PREFIX}{}", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn owner() -> Owner {
        Owner {
            name: "ext".into(),
            uid: "u-1".into(),
        }
    }

    fn meta(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> ObjectMeta {
        let map = |kv: &[(&str, &str)]| {
            (!kv.is_empty()).then(|| {
                kv.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
        };
        ObjectMeta {
            labels: map(labels),
            annotations: map(annotations),
            ..ObjectMeta::default()
        }
    }

    fn helm_meta(release: &str, ns: &str) -> ObjectMeta {
        meta(
            &[(MANAGED_BY_LABEL, "Helm")],
            &[
                (RELEASE_NAME_ANNOTATION, release),
                (RELEASE_NAMESPACE_ANNOTATION, ns),
            ],
        )
    }

    #[test]
    fn stamping_adds_owner_labels_helm_metadata_and_a_controller_reference() {
        let mut body = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "c", "labels": {"app": "x"}, "creationTimestamp": null,
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                "resourceVersion": "5", "uid": "zzz"
            },
            "data": {"k": "v"},
            "status": {}
        });
        let keep = stamp(&mut body, &owner(), "ns", Some("ns"));
        assert!(!keep);
        assert_eq!(
            body,
            serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {
                    "name": "c", "namespace": "ns",
                    "labels": {
                        "app": "x",
                        "olm.operatorframework.io/owner-kind": "ClusterExtension",
                        "olm.operatorframework.io/owner-name": "ext",
                        "app.kubernetes.io/managed-by": "Helm"
                    },
                    "annotations": {
                        "meta.helm.sh/release-name": "ext",
                        "meta.helm.sh/release-namespace": "ns"
                    },
                    "ownerReferences": [{
                        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
                        "name": "ext", "uid": "u-1", "controller": true, "blockOwnerDeletion": true
                    }]
                },
                "data": {"k": "v"}
            })
        );
    }

    #[test]
    fn kept_objects_get_owner_annotations_instead_of_a_reference() {
        let mut body = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "w.example.com", "namespace": "ns",
                         "annotations": {"helm.sh/resource-policy": " Keep "}}
        });
        assert!(stamp(&mut body, &owner(), "ns", None));
        let metadata = &body["metadata"];
        assert!(metadata.get("ownerReferences").is_none());
        assert!(metadata.get("namespace").is_none());
        assert_eq!(
            metadata["annotations"]["operator-sdk/primary-resource"],
            "/ext"
        );
        assert_eq!(
            metadata["annotations"]["operator-sdk/primary-resource-type"],
            "ClusterExtension.olm.operatorframework.io"
        );
        assert_eq!(metadata["labels"]["app.kubernetes.io/managed-by"], "Helm");
    }

    #[test]
    fn keep_policy_is_read_as_helm_reads_it() {
        let with = |v: &str| meta(&[], &[(RESOURCE_POLICY_ANNOTATION, v)]).annotations;
        assert!(has_keep_policy(with("keep").as_ref()));
        assert!(has_keep_policy(with("  KEEP ").as_ref()));
        assert!(!has_keep_policy(with("delete").as_ref()));
        assert!(!has_keep_policy(None));
    }

    #[test]
    fn the_helm_triple_decides_whether_an_unrecorded_object_may_be_written() {
        let o = owner();
        assert_eq!(
            write_ownership(&helm_meta("ext", "ns"), &o, "ns"),
            Ownership::Ours
        );
        // Helm's wording for each problem, joined as Helm joins them.
        assert_eq!(
            write_ownership(&ObjectMeta::default(), &o, "ns"),
            Ownership::NotOurs {
                why: "invalid ownership metadata; label validation error: missing key \"app.kubernetes.io/managed-by\": must be set to \"Helm\"; annotation validation error: missing key \"meta.helm.sh/release-name\": must be set to \"ext\"; annotation validation error: missing key \"meta.helm.sh/release-namespace\": must be set to \"ns\"".into()
            }
        );
        assert_eq!(
            write_ownership(&helm_meta("other", "ns"), &o, "ns"),
            Ownership::NotOurs {
                why: "invalid ownership metadata; annotation validation error: key \"meta.helm.sh/release-name\" must equal \"ext\": current value is \"other\"".into()
            }
        );
        assert!(matches!(
            write_ownership(&helm_meta("ext", "elsewhere"), &o, "ns"),
            Ownership::NotOurs { .. }
        ));
        // Owner labels alone are not Helm's rule.
        let labelled = meta(
            &[(OWNER_KIND_LABEL, OWNER_KIND), (OWNER_NAME_LABEL, "ext")],
            &[],
        );
        assert!(matches!(
            write_ownership(&labelled, &o, "ns"),
            Ownership::NotOurs { .. }
        ));
    }

    #[test]
    fn a_foreign_controller_makes_an_object_not_ours_even_with_our_helm_metadata() {
        let o = owner();
        let mut m = helm_meta("ext", "ns");
        m.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "rs".into(),
            uid: "x".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        assert_eq!(
            write_ownership(&m, &o, "ns"),
            Ownership::NotOurs {
                why: "controlled by ReplicaSet \"rs\"".into()
            }
        );
        // A re-created extension of the same name (other uid) is still this extension.
        m.owner_references = Some(vec![OwnerReference {
            api_version: OWNER_API_VERSION.into(),
            kind: OWNER_KIND.into(),
            name: "ext".into(),
            uid: "old-uid".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        assert_eq!(write_ownership(&m, &o, "ns"), Ownership::Ours);
    }

    #[test]
    fn deletion_needs_our_helm_metadata_or_our_owner_labels() {
        let o = owner();
        assert_eq!(
            delete_ownership(&helm_meta("ext", "ns"), &o, "ns"),
            Ownership::Ours
        );
        let labelled = meta(
            &[(OWNER_KIND_LABEL, OWNER_KIND), (OWNER_NAME_LABEL, "ext")],
            &[],
        );
        assert_eq!(delete_ownership(&labelled, &o, "ns"), Ownership::Ours);
        let other = meta(
            &[(OWNER_KIND_LABEL, OWNER_KIND), (OWNER_NAME_LABEL, "other")],
            &[],
        );
        assert!(matches!(
            delete_ownership(&other, &o, "ns"),
            Ownership::NotOurs { .. }
        ));
        assert!(matches!(
            delete_ownership(&ObjectMeta::default(), &o, "ns"),
            Ownership::NotOurs { .. }
        ));
    }

    #[test]
    fn collision_messages_are_upstreams_one_line_per_object() {
        // Source: operator-controller internal/operator-controller/action/error/errors.go
        // (translation) and applier/helm.go (prefix); install-path.md §3.
        let deployment = Collision {
            kind: "Deployment".into(),
            name: "test-operator".into(),
            namespace: "ns".into(),
            why: String::new(),
        };
        assert_eq!(
            collisions_message(std::slice::from_ref(&deployment)),
            "failed to get release state using server-side dry-run: Deployment 'test-operator' already exists in namespace 'ns' and cannot be managed by operator-controller"
        );
        let role = Collision {
            kind: "ClusterRole".into(),
            name: "r".into(),
            namespace: String::new(),
            why: String::new(),
        };
        assert_eq!(
            collisions_message(&[role, deployment]),
            "failed to get release state using server-side dry-run: ClusterRole 'r' already exists in namespace '' and cannot be managed by operator-controller\nDeployment 'test-operator' already exists in namespace 'ns' and cannot be managed by operator-controller"
        );
    }
}
