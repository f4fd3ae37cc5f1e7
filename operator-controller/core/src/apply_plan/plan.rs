//! The plan of one apply: which objects to write, in which order, with which metadata; which
//! objects of the previous release to remove; which namespaces must exist; which permissions
//! it takes.
//!
//! Input: the rendered objects, the owner and install namespace, the previous release's
//! object references, and how each kind is served (the IO side asks discovery). Output: an
//! [`ApplyPlan`] or a [`PlanError`]. Pure: no IO.

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::object::{Gvk, InvalidObject, ObjectKey, ObjectRef, RenderedObject, ResourceInfo};
use super::order::{sort_for_apply, sort_for_removal};
use super::ownership::{
    Collision, Owner, Ownership, delete_ownership, has_keep_policy, stamp, write_ownership,
};
use super::permissions::{AccessPlan, CheckedObject};

/// Group of CustomResourceDefinitions.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";
/// Kind of CustomResourceDefinitions.
pub const CRD_KIND: &str = "CustomResourceDefinition";

/// What a CustomResourceDefinition serves: read from its spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdDefinition {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Served versions, in spec order.
    pub versions: Vec<String>,
}

impl CrdDefinition {
    /// Reads `spec.group`, `spec.names.{kind,plural}`, `spec.scope` and the served
    /// `spec.versions[].name` of a CustomResourceDefinition.
    pub fn from_json(crd: &Value) -> Result<CrdDefinition, String> {
        let text = |pointer: &str| {
            crd.pointer(pointer)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    format!(
                        "{} is missing or not a string",
                        &pointer[1..].replace('/', ".")
                    )
                })
        };
        let name = text("/metadata/name")?;
        let group = text("/spec/group")?;
        let kind = text("/spec/names/kind")?;
        let plural = text("/spec/names/plural")?;
        let namespaced = match text("/spec/scope")?.as_str() {
            "Namespaced" => true,
            "Cluster" => false,
            other => {
                return Err(format!(
                    "spec.scope {other:?} is neither Namespaced nor Cluster"
                ));
            }
        };
        let versions: Vec<String> = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|vs| {
                vs.iter()
                    .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(false))
                    .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(CrdDefinition {
            name,
            group,
            kind,
            plural,
            namespaced,
            versions,
        })
    }

    fn serves(&self, gvk: &Gvk) -> bool {
        gvk.group == self.group && gvk.kind == self.kind && self.versions.contains(&gvk.version)
    }
}

/// The custom resources' group and plural of a CustomResourceDefinition, from its name
/// (`<plural>.<group>`, which the API server enforces).
pub fn crd_resource_from_name(name: &str) -> Option<(&str, &str)> {
    let (plural, group) = name.split_once('.')?;
    (!plural.is_empty() && !group.is_empty()).then_some((group, plural))
}

/// A rendered set, parsed and checked, before kinds are resolved.
#[derive(Clone, Debug)]
pub struct DesiredSet {
    objects: Vec<RenderedObject>,
    crds: Vec<CrdDefinition>,
}

impl DesiredSet {
    /// Parses every rendered object; the first invalid one is the error.
    pub fn parse(desired: &[Value]) -> Result<DesiredSet, InvalidObject> {
        let mut objects = Vec::with_capacity(desired.len());
        let mut crds = Vec::new();
        for (index, body) in desired.iter().enumerate() {
            let object = RenderedObject::parse(index, body)?;
            if object.gvk.group == CRD_GROUP && object.gvk.kind == CRD_KIND {
                let crd = CrdDefinition::from_json(body).map_err(|problem| InvalidObject {
                    position: index + 1,
                    identity: format!(" ({CRD_KIND} \"{}\")", object.name),
                    problem,
                })?;
                crds.push(crd);
            }
            objects.push(object);
        }
        Ok(DesiredSet { objects, crds })
    }

    /// The CustomResourceDefinition of this set that serves `gvk`, as a resource.
    fn defined_here(&self, gvk: &Gvk) -> Option<(ResourceInfo, &CrdDefinition)> {
        self.crds.iter().find(|crd| crd.serves(gvk)).map(|crd| {
            (
                ResourceInfo {
                    gvk: gvk.clone(),
                    plural: crd.plural.clone(),
                    namespaced: crd.namespaced,
                },
                crd,
            )
        })
    }

    /// Kinds the set uses that no CustomResourceDefinition of the set serves: the IO side
    /// resolves these with discovery.
    pub fn kinds_to_discover(&self) -> BTreeSet<Gvk> {
        self.objects
            .iter()
            .map(|o| &o.gvk)
            .filter(|gvk| self.defined_here(gvk).is_none())
            .cloned()
            .collect()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Invalid(#[from] InvalidObject),
    /// Kinds the API server does not serve (and no CustomResourceDefinition of the set
    /// defines). Sorted.
    #[error("{}", unknown_kinds_message(.0))]
    UnknownKinds(Vec<Gvk>),
    #[error("the rendered bundle contains {0} more than once")]
    Duplicate(ObjectRef),
}

fn unknown_kinds_message(kinds: &[Gvk]) -> String {
    let list: Vec<String> = kinds
        .iter()
        .map(|g| format!("kind \"{}\" in version \"{}\"", g.kind, g.api_version()))
        .collect();
    format!(
        "failed to apply: the API server does not serve {} (is a CustomResourceDefinition missing?)",
        list.join(", ")
    )
}

/// One object to write.
#[derive(Clone, Debug, PartialEq)]
pub struct ApplyStep {
    /// With the namespace it is applied in (`None` for cluster-scoped kinds).
    pub object: ObjectRef,
    pub key: ObjectKey,
    pub resource: ResourceInfo,
    /// The server-side apply body: sanitized and stamped with ownership metadata.
    pub body: Value,
    /// `helm.sh/resource-policy: keep`: never pruned, never uninstalled, no ownerReference.
    pub keep_policy: bool,
    /// The namespace as rendered, for upstream's collision message.
    pub rendered_namespace: Option<String>,
    /// The previous release lists this object, so it is ours without a collision check.
    pub in_previous_release: bool,
    /// The name of the CustomResourceDefinition of this set that serves this object's kind:
    /// it must be Established before this object is written.
    pub needs_established_crd: Option<String>,
    /// Set when this object is itself a CustomResourceDefinition.
    pub crd: Option<CrdDefinition>,
}

impl ApplyStep {
    /// The collision this object is, given its live metadata (`None`: absent or ours).
    pub fn collision(
        &self,
        live: Option<&ObjectMeta>,
        owner: &Owner,
        install_namespace: &str,
    ) -> Option<Collision> {
        let live = live?;
        if self.in_previous_release {
            return None;
        }
        match write_ownership(live, owner, install_namespace) {
            Ownership::Ours => None,
            Ownership::NotOurs { why } => Some(Collision {
                kind: self.object.kind.clone(),
                name: self.object.name.clone(),
                // Helm's view of the namespace: the one a namespaced object is applied in; for a
                // cluster-scoped object the rendered one, usually none (install-path.md §3).
                namespace: self
                    .object
                    .namespace
                    .clone()
                    .or_else(|| self.rendered_namespace.clone())
                    .unwrap_or_default(),
                why,
            }),
        }
    }
}

/// One object of the previous release (or a CustomResourceDefinition labelled as ours) that
/// the new set no longer contains.
#[derive(Clone, Debug, PartialEq)]
pub struct RemovalStep {
    pub object: ObjectRef,
    pub resource: ResourceInfo,
    /// For a CustomResourceDefinition: its custom resources' group and plural.
    pub custom_resources: Option<(String, String)>,
}

/// Everything one apply does, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct ApplyPlan {
    /// In install order.
    pub steps: Vec<ApplyStep>,
    /// In removal order (the reverse of install order).
    pub prune: Vec<RemovalStep>,
    /// Namespaces objects are applied in that the set does not create; each must exist.
    pub namespaces: BTreeSet<String>,
}

/// What to do with an object being removed (pruned or uninstalled), given its live metadata.
///
/// | live object | decision |
/// |---|---|
/// | absent | gone already |
/// | annotated `helm.sh/resource-policy: keep` | keep |
/// | not ours ([`delete_ownership`]) | keep, reported |
/// | ours | delete (the IO side first checks a CustomResourceDefinition for custom resources when pruning) |
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemovalDecision {
    Gone,
    Delete,
    Keep(KeepReason),
}

/// Why an object that was to be removed stays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeepReason {
    /// `helm.sh/resource-policy: keep`.
    ResourcePolicy,
    /// Another owner manages it now.
    NotOwned(String),
    /// A CustomResourceDefinition that still has custom resources (pruning only).
    CustomResourcesExist,
    /// A CustomResourceDefinition whose custom resources could not be listed: kept, since
    /// deleting it could lose them.
    CustomResourcesUnknown(String),
}

impl fmt::Display for KeepReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepReason::ResourcePolicy => {
                f.write_str("it is annotated helm.sh/resource-policy: keep")
            }
            KeepReason::NotOwned(why) => write!(f, "it is not owned by this extension ({why})"),
            KeepReason::CustomResourcesExist => f.write_str(
                "custom resources of it still exist (it is removed once they are deleted)",
            ),
            KeepReason::CustomResourcesUnknown(why) => {
                write!(f, "its custom resources could not be listed ({why})")
            }
        }
    }
}

/// An object that was to be removed and stays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptObject {
    pub object: ObjectRef,
    pub reason: KeepReason,
}

impl fmt::Display for KeptObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is kept: {}", self.object, self.reason)
    }
}

/// The removal decision of the table on [`RemovalDecision`].
pub fn removal_decision(
    live: Option<&ObjectMeta>,
    owner: &Owner,
    install_namespace: &str,
) -> RemovalDecision {
    let Some(live) = live else {
        return RemovalDecision::Gone;
    };
    if has_keep_policy(live.annotations.as_ref()) {
        return RemovalDecision::Keep(KeepReason::ResourcePolicy);
    }
    match delete_ownership(live, owner, install_namespace) {
        Ownership::Ours => RemovalDecision::Delete,
        Ownership::NotOurs { why } => RemovalDecision::Keep(KeepReason::NotOwned(why)),
    }
}

/// A sentence for the extension's status about CustomResourceDefinitions an upgrade dropped
/// but kept because custom resources of them exist; `None` when there are none.
pub fn kept_crds_message(kept: &[KeptObject]) -> Option<String> {
    let names: Vec<String> = kept
        .iter()
        .filter(|k| k.object.kind == CRD_KIND && k.reason == KeepReason::CustomResourcesExist)
        .map(|k| format!("\"{}\"", k.object.name))
        .collect();
    if names.is_empty() {
        return None;
    }
    Some(format!(
        "kept CustomResourceDefinition(s) {} that the installed bundle no longer contains, because custom resources of them still exist; they are removed once those custom resources are deleted",
        names.join(", ")
    ))
}

/// Builds the plan.
///
/// `previous` is the previous release's objects plus any CustomResourceDefinitions labelled
/// as this extension's (a CRD kept by an earlier upgrade stays a removal candidate until its
/// custom resources are gone). `resolve` says how a kind is served, or `None` when the API
/// server does not serve it; it is asked only for kinds no CustomResourceDefinition of the set
/// defines. A previous object whose kind is no longer served is gone and not planned.
pub fn plan(
    set: &DesiredSet,
    owner: &Owner,
    install_namespace: &str,
    previous: &[ObjectRef],
    resolve: &dyn Fn(&Gvk) -> Option<ResourceInfo>,
) -> Result<ApplyPlan, PlanError> {
    let mut unknown = BTreeSet::new();
    let mut steps = Vec::with_capacity(set.objects.len());
    // Previous objects in their recorded order, once each, with how their kind is served.
    let mut resolved_previous: Vec<(ObjectKey, ObjectRef, ResourceInfo)> = Vec::new();
    let mut previous_keys = HashSet::new();
    for reference in previous {
        let gvk = reference.gvk();
        let resource = set
            .defined_here(&gvk)
            .map(|(r, _)| r)
            .or_else(|| resolve(&gvk));
        if let Some(resource) = resource {
            let key = reference.key(resource.namespaced, install_namespace);
            if previous_keys.insert(key.clone()) {
                resolved_previous.push((key, reference.clone(), resource));
            }
        }
    }

    let mut seen = HashSet::new();
    let mut created_namespaces = BTreeSet::new();
    for rendered in &set.objects {
        let (resource, serving_crd) = match set.defined_here(&rendered.gvk) {
            Some((resource, crd)) => (resource, Some(crd.name.clone())),
            None => match resolve(&rendered.gvk) {
                Some(resource) => (resource, None),
                None => {
                    unknown.insert(rendered.gvk.clone());
                    continue;
                }
            },
        };
        let namespace = resource.namespaced.then(|| {
            rendered
                .rendered_namespace
                .clone()
                .unwrap_or_else(|| install_namespace.to_owned())
        });
        let object = ObjectRef::new(&rendered.gvk, namespace.as_deref(), &rendered.name);
        let key = object.key(resource.namespaced, install_namespace);
        if !seen.insert(key.clone()) {
            return Err(PlanError::Duplicate(object));
        }
        if rendered.gvk.group.is_empty() && rendered.gvk.kind == "Namespace" {
            created_namespaces.insert(rendered.name.clone());
        }
        let mut body = rendered.body.clone();
        let keep_policy = stamp(&mut body, owner, install_namespace, namespace.as_deref());
        let crd = set
            .crds
            .iter()
            .find(|c| {
                rendered.gvk.group == CRD_GROUP
                    && rendered.gvk.kind == CRD_KIND
                    && c.name == rendered.name
            })
            .cloned();
        steps.push(ApplyStep {
            in_previous_release: previous_keys.contains(&key),
            object,
            key,
            resource,
            body,
            keep_policy,
            rendered_namespace: rendered.rendered_namespace.clone(),
            needs_established_crd: serving_crd,
            crd,
        });
    }
    if !unknown.is_empty() {
        return Err(PlanError::UnknownKinds(unknown.into_iter().collect()));
    }
    sort_for_apply(&mut steps, |s| s.object.kind.as_str());

    let namespaces = steps
        .iter()
        .filter_map(|s| s.object.namespace.clone())
        .filter(|ns| !created_namespaces.contains(ns))
        .collect();

    let mut prune: Vec<RemovalStep> = resolved_previous
        .into_iter()
        .filter(|(key, _, _)| !seen.contains(key))
        .map(|(key, reference, resource)| {
            let custom_resources = (key.group == CRD_GROUP && key.kind == CRD_KIND)
                .then(|| crd_resource_from_name(&key.name))
                .flatten()
                .map(|(g, p)| (g.to_owned(), p.to_owned()));
            RemovalStep {
                object: ObjectRef {
                    namespace: key.namespace,
                    ..reference
                },
                resource,
                custom_resources,
            }
        })
        .collect();
    sort_for_removal(&mut prune, |p| p.object.kind.as_str());

    Ok(ApplyPlan {
        steps,
        prune,
        namespaces,
    })
}

impl ApplyPlan {
    /// The access checks of this plan (see [`super::permissions`]).
    pub fn access_plan(&self, owner: &Owner) -> AccessPlan {
        let mut access = AccessPlan::new();
        for step in &self.steps {
            access.apply(checked(&step.object, &step.resource));
        }
        if self.steps.iter().any(|s| !s.keep_policy) {
            access.owner_reference(&owner.name);
        }
        for removal in &self.prune {
            access.delete(checked(&removal.object, &removal.resource));
            if let Some((group, plural)) = &removal.custom_resources {
                access.list_custom_resources(group, plural);
            }
        }
        access
    }

    /// The kinds this plan writes, for drift watches.
    pub fn kinds(&self) -> Vec<ResourceInfo> {
        let mut kinds: Vec<ResourceInfo> = Vec::new();
        for step in &self.steps {
            if !kinds.contains(&step.resource) {
                kinds.push(step.resource.clone());
            }
        }
        kinds
    }
}

/// The access-check view of an object.
pub fn checked<'a>(object: &'a ObjectRef, resource: &'a ResourceInfo) -> CheckedObject<'a> {
    CheckedObject {
        group: &resource.gvk.group,
        plural: &resource.plural,
        namespace: object.namespace.as_deref(),
        name: &object.name,
    }
}

/// Sorts references of an installed set into removal order (uninstall), resolving kinds with
/// `resolve`; references whose kind is no longer served are returned separately (their
/// objects are gone with their CustomResourceDefinition).
pub fn removal_order(
    installed: &[ObjectRef],
    install_namespace: &str,
    resolve: &dyn Fn(&Gvk) -> Option<ResourceInfo>,
) -> (Vec<RemovalStep>, Vec<ObjectRef>) {
    let mut steps: Vec<RemovalStep> = Vec::new();
    let mut unserved = Vec::new();
    let mut seen = HashSet::new();
    for reference in installed {
        let Some(resource) = resolve(&reference.gvk()) else {
            unserved.push(reference.clone());
            continue;
        };
        let key = reference.key(resource.namespaced, install_namespace);
        if !seen.insert(key.clone()) {
            continue;
        }
        steps.push(RemovalStep {
            object: ObjectRef {
                namespace: key.namespace,
                ..reference.clone()
            },
            resource,
            custom_resources: None,
        });
    }
    sort_for_removal(&mut steps, |s| s.object.kind.as_str());
    (steps, unserved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner() -> Owner {
        Owner {
            name: "ext".into(),
            uid: "uid-1".into(),
        }
    }

    fn served(gvk: &Gvk) -> Option<ResourceInfo> {
        let (plural, namespaced) = match gvk.kind.as_str() {
            "ConfigMap" => ("configmaps", true),
            "Deployment" => ("deployments", true),
            "ServiceAccount" => ("serviceaccounts", true),
            "ClusterRole" => ("clusterroles", false),
            "CustomResourceDefinition" => ("customresourcedefinitions", false),
            "ValidatingWebhookConfiguration" => ("validatingwebhookconfigurations", false),
            "Namespace" => ("namespaces", false),
            _ => return None,
        };
        Some(ResourceInfo {
            gvk: gvk.clone(),
            plural: plural.into(),
            namespaced,
        })
    }

    fn obj(api_version: &str, kind: &str, ns: Option<&str>, name: &str) -> Value {
        let mut metadata = json!({"name": name});
        if let Some(ns) = ns {
            metadata["namespace"] = json!(ns);
        }
        json!({"apiVersion": api_version, "kind": kind, "metadata": metadata})
    }

    fn crd(name: &str, group: &str, kind: &str, plural: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural},
                     "versions": [{"name": "v1", "served": true, "storage": true},
                                  {"name": "v0", "served": false, "storage": false}]}
        })
    }

    fn reference(api_version: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: ns.map(Into::into),
            name: name.into(),
        }
    }

    #[test]
    fn steps_are_in_install_order_with_namespaces_defaulted_and_custom_kinds_from_the_sets_crd() {
        let set = DesiredSet::parse(&[
            obj("example.com/v1", "Widget", None, "w"),
            obj("apps/v1", "Deployment", Some("ns"), "d"),
            obj(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                Some("ns"),
                "v",
            ),
            crd("widgets.example.com", "example.com", "Widget", "widgets"),
            obj("v1", "ConfigMap", None, "c"),
        ])
        .unwrap();
        assert_eq!(
            set.kinds_to_discover()
                .into_iter()
                .map(|g| g.kind)
                .collect::<Vec<_>>(),
            // Sorted by group: core, admissionregistration, apiextensions, apps.
            [
                "ConfigMap",
                "ValidatingWebhookConfiguration",
                "CustomResourceDefinition",
                "Deployment"
            ]
        );
        let plan = plan(&set, &owner(), "ns", &[], &served).unwrap();
        let order: Vec<String> = plan.steps.iter().map(|s| s.object.to_string()).collect();
        assert_eq!(
            order,
            [
                "ConfigMap \"ns/c\"",
                "CustomResourceDefinition \"widgets.example.com\"",
                "Deployment \"ns/d\"",
                "ValidatingWebhookConfiguration \"v\"",
                "Widget \"ns/w\"",
            ]
        );
        let widget = &plan.steps[4];
        assert_eq!(
            widget.needs_established_crd.as_deref(),
            Some("widgets.example.com")
        );
        assert_eq!(widget.resource.plural, "widgets");
        assert!(plan.steps[1].crd.is_some());
        // The webhook configuration is cluster-scoped: applied without a namespace, but the
        // collision message keeps the rendered one.
        assert_eq!(plan.steps[3].body["metadata"].get("namespace"), None);
        assert_eq!(plan.steps[3].rendered_namespace.as_deref(), Some("ns"));
        assert_eq!(plan.namespaces.iter().collect::<Vec<_>>(), ["ns"]);
    }

    #[test]
    fn kinds_nobody_serves_are_all_reported_at_once() {
        let set = DesiredSet::parse(&[
            obj("monitoring.coreos.com/v1", "ServiceMonitor", None, "s"),
            obj("example.com/v1", "Widget", None, "w"),
            obj("example.com/v2", "Widget", None, "w2"),
        ])
        .unwrap();
        let err = plan(&set, &owner(), "ns", &[], &served).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to apply: the API server does not serve kind \"Widget\" in version \"example.com/v1\", kind \"Widget\" in version \"example.com/v2\", kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\" (is a CustomResourceDefinition missing?)"
        );
    }

    #[test]
    fn an_unserved_version_of_the_sets_crd_is_not_served() {
        let set = DesiredSet::parse(&[
            crd("widgets.example.com", "example.com", "Widget", "widgets"),
            obj("example.com/v0", "Widget", None, "w"),
        ])
        .unwrap();
        assert!(matches!(
            plan(&set, &owner(), "ns", &[], &served),
            Err(PlanError::UnknownKinds(_))
        ));
    }

    #[test]
    fn the_same_object_twice_is_refused() {
        let set = DesiredSet::parse(&[
            obj("v1", "ConfigMap", None, "c"),
            obj("v1", "ConfigMap", Some("ns"), "c"),
        ])
        .unwrap();
        assert_eq!(
            plan(&set, &owner(), "ns", &[], &served)
                .unwrap_err()
                .to_string(),
            "the rendered bundle contains ConfigMap \"ns/c\" more than once"
        );
    }

    #[test]
    fn dropped_objects_are_pruned_in_reverse_install_order_and_crds_get_a_custom_resource_check() {
        let set = DesiredSet::parse(&[obj("v1", "ConfigMap", Some("ns"), "kept")]).unwrap();
        let previous = [
            reference(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "widgets.example.com",
            ),
            reference("v1", "ConfigMap", Some("ns"), "kept"),
            reference("apps/v1", "Deployment", Some("ns"), "d"),
            reference("v1", "ConfigMap", None, "dropped"),
            reference(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                Some("ns"),
                "r",
            ),
            // Kind no longer served: its objects went with their CRD.
            reference("example.com/v1", "Widget", Some("ns"), "w"),
            // Listed twice (previous release plus the labelled-CRD list): pruned once.
            reference(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "widgets.example.com",
            ),
        ];
        let plan = plan(&set, &owner(), "ns", &previous, &served).unwrap();
        assert!(!plan.steps[0].body.is_null());
        assert!(plan.steps[0].in_previous_release);
        let prune: Vec<String> = plan.prune.iter().map(|p| p.object.to_string()).collect();
        assert_eq!(
            prune,
            [
                "Deployment \"ns/d\"",
                "ClusterRole \"r\"",
                "CustomResourceDefinition \"widgets.example.com\"",
                "ConfigMap \"ns/dropped\"",
            ]
        );
        assert_eq!(
            plan.prune[2].custom_resources,
            Some(("example.com".to_owned(), "widgets".to_owned()))
        );
        let checks: Vec<String> = plan
            .access_plan(&owner())
            .into_checks()
            .into_iter()
            .map(|c| {
                format!(
                    "{} {}/{} {}:{}",
                    c.verb, c.group, c.resource, c.namespace, c.name
                )
            })
            .collect();
        assert!(
            checks.contains(&"list example.com/widgets :".to_owned()),
            "{checks:?}"
        );
        assert!(
            checks.contains(
                &"delete apiextensions.k8s.io/customresourcedefinitions :widgets.example.com"
                    .to_owned()
            )
        );
        assert!(checks.contains(&"delete /configmaps ns:dropped".to_owned()));
        assert!(checks.contains(&"create /configmaps ns:kept".to_owned()));
        assert!(
            checks.contains(&"update olm.operatorframework.io/clusterextensions :ext".to_owned())
        );
    }

    #[test]
    fn a_namespace_the_set_creates_need_not_exist_beforehand() {
        let set = DesiredSet::parse(&[
            obj("v1", "Namespace", None, "made"),
            obj("v1", "ConfigMap", Some("made"), "c"),
            obj("v1", "ConfigMap", None, "d"),
        ])
        .unwrap();
        let plan = plan(&set, &owner(), "ns", &[], &served).unwrap();
        assert_eq!(plan.steps[0].object.kind, "Namespace");
        assert_eq!(plan.namespaces.iter().collect::<Vec<_>>(), ["ns"]);
    }

    #[test]
    fn recorded_objects_never_collide_and_unrecorded_foreign_ones_do() {
        let set = DesiredSet::parse(&[
            obj("apps/v1", "Deployment", Some("ns"), "d"),
            obj("rbac.authorization.k8s.io/v1", "ClusterRole", None, "r"),
        ])
        .unwrap();
        let previous = [reference("apps/v1", "Deployment", Some("ns"), "d")];
        let plan = plan(&set, &owner(), "ns", &previous, &served).unwrap();
        let foreign = ObjectMeta::default();
        assert_eq!(plan.steps[0].object.kind, "ClusterRole");
        let collision = plan.steps[0]
            .collision(Some(&foreign), &owner(), "ns")
            .unwrap();
        assert_eq!(
            collision.to_string(),
            "ClusterRole 'r' already exists in namespace '' and cannot be managed by operator-controller"
        );
        assert_eq!(plan.steps[0].collision(None, &owner(), "ns"), None);
        // A namespaced object rendered without a namespace collides in the install namespace;
        // a cluster-scoped one rendered with a namespace (webhook configurations) keeps it.
        let set = DesiredSet::parse(&[
            obj("v1", "ConfigMap", None, "c"),
            obj(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                Some("ns"),
                "v",
            ),
        ])
        .unwrap();
        let unnamespaced = super::plan(&set, &owner(), "ns", &[], &served).unwrap();
        let messages: Vec<String> = unnamespaced
            .steps
            .iter()
            .filter_map(|s| s.collision(Some(&foreign), &owner(), "ns"))
            .map(|c| c.to_string())
            .collect();
        assert_eq!(
            messages,
            [
                "ConfigMap 'c' already exists in namespace 'ns' and cannot be managed by operator-controller",
                "ValidatingWebhookConfiguration 'v' already exists in namespace 'ns' and cannot be managed by operator-controller",
            ]
        );
        assert_eq!(
            plan.steps[1].collision(Some(&foreign), &owner(), "ns"),
            None
        );
    }

    #[test]
    fn removal_decisions_follow_the_table() {
        let o = owner();
        assert_eq!(removal_decision(None, &o, "ns"), RemovalDecision::Gone);
        let mut ours = ObjectMeta {
            labels: Some([("app.kubernetes.io/managed-by".to_owned(), "Helm".to_owned())].into()),
            annotations: Some(
                [
                    ("meta.helm.sh/release-name".to_owned(), "ext".to_owned()),
                    ("meta.helm.sh/release-namespace".to_owned(), "ns".to_owned()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        };
        assert_eq!(
            removal_decision(Some(&ours), &o, "ns"),
            RemovalDecision::Delete
        );
        assert!(matches!(
            removal_decision(Some(&ObjectMeta::default()), &o, "ns"),
            RemovalDecision::Keep(KeepReason::NotOwned(_))
        ));
        if let Some(a) = ours.annotations.as_mut() {
            a.insert("helm.sh/resource-policy".into(), "keep".into());
        }
        assert_eq!(
            removal_decision(Some(&ours), &o, "ns"),
            RemovalDecision::Keep(KeepReason::ResourcePolicy)
        );
    }

    #[test]
    fn the_status_sentence_names_only_crds_kept_for_their_custom_resources() {
        let kept = [
            KeptObject {
                object: reference(
                    "apiextensions.k8s.io/v1",
                    "CustomResourceDefinition",
                    None,
                    "widgets.example.com",
                ),
                reason: KeepReason::CustomResourcesExist,
            },
            KeptObject {
                object: reference("v1", "ConfigMap", Some("ns"), "c"),
                reason: KeepReason::ResourcePolicy,
            },
        ];
        assert_eq!(
            kept_crds_message(&kept).unwrap(),
            "kept CustomResourceDefinition(s) \"widgets.example.com\" that the installed bundle no longer contains, because custom resources of them still exist; they are removed once those custom resources are deleted"
        );
        assert_eq!(kept_crds_message(&kept[1..]), None);
        assert_eq!(
            kept[0].to_string(),
            "CustomResourceDefinition \"widgets.example.com\" is kept: custom resources of it still exist (it is removed once they are deleted)"
        );
    }

    #[test]
    fn uninstall_order_is_reverse_install_order_and_unserved_kinds_are_set_apart() {
        let installed = [
            reference("v1", "ServiceAccount", Some("ns"), "sa"),
            reference(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "widgets.example.com",
            ),
            reference("apps/v1", "Deployment", Some("ns"), "d"),
            reference(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                Some("ns"),
                "v",
            ),
            reference("example.com/v1", "Widget", Some("ns"), "w"),
        ];
        let (steps, unserved) = removal_order(&installed, "ns", &served);
        let order: Vec<String> = steps.iter().map(|s| s.object.to_string()).collect();
        assert_eq!(
            order,
            [
                "ValidatingWebhookConfiguration \"v\"",
                "Deployment \"ns/d\"",
                "CustomResourceDefinition \"widgets.example.com\"",
                "ServiceAccount \"ns/sa\"",
            ]
        );
        assert_eq!(unserved, [installed[4].clone()]);
    }

    #[test]
    fn crd_definitions_need_group_names_and_scope() {
        let mut bad = crd("widgets.example.com", "example.com", "Widget", "widgets");
        bad["spec"]["scope"] = json!("Galaxy");
        let err = DesiredSet::parse(&[bad]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid object 1 of the rendered bundle (CustomResourceDefinition \"widgets.example.com\"): spec.scope \"Galaxy\" is neither Namespaced nor Cluster"
        );
        let mut bad = crd("widgets.example.com", "example.com", "Widget", "widgets");
        bad["spec"]["names"] = json!({});
        assert!(
            DesiredSet::parse(&[bad])
                .unwrap_err()
                .to_string()
                .ends_with("spec.names.kind is missing or not a string")
        );
        assert_eq!(
            crd_resource_from_name("widgets.example.com"),
            Some(("example.com", "widgets"))
        );
        assert_eq!(crd_resource_from_name("nodots"), None);
    }
}
