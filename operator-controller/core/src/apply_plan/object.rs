//! Names of objects and kinds: what a rendered object is, and how the release records it.
//!
//! Input: rendered objects as JSON, object references read from a release. Output: parsed
//! kinds ([`Gvk`]), references ([`ObjectRef`]), identity keys ([`ObjectKey`]) and
//! [`InvalidObject`] errors naming the offending object. Pure: no IO.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Group, version and kind, as `apiVersion` and `kind` spell them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Gvk {
    /// Empty for the core group (`apiVersion: v1`).
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    /// Splits `apiVersion` at its last `/`: `apps/v1` → (`apps`, `v1`), `v1` → (``, `v1`).
    pub fn from_api_version(api_version: &str, kind: &str) -> Gvk {
        let (group, version) = match api_version.rsplit_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        Gvk {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// The `apiVersion` text: `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Kind and group without the version: how objects are identified across API versions.
    pub fn group_kind(&self) -> (String, String) {
        (self.group.clone(), self.kind.clone())
    }
}

impl fmt::Display for Gvk {
    /// `Kind.apiVersion`, the shape of upstream's probe messages: `Deployment.apps/v1`,
    /// `ConfigMap.v1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.kind, self.api_version())
    }
}

/// How the API server serves a kind: from discovery, or from a CustomResourceDefinition
/// applied in the same set.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceInfo {
    pub gvk: Gvk,
    /// The URL path segment (`deployments`).
    pub plural: String,
    /// False for cluster-scoped kinds.
    pub namespaced: bool,
}

/// One object as a release records it: enough to find it again.
///
/// The namespace is the one the object was rendered with (or `None`); cluster-scoped kinds may
/// carry one (upstream renders webhook configurations with the install namespace), which
/// [`ObjectRef::key`] drops.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    pub fn new(gvk: &Gvk, namespace: Option<&str>, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: gvk.api_version(),
            kind: gvk.kind.clone(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }

    pub fn gvk(&self) -> Gvk {
        Gvk::from_api_version(&self.api_version, &self.kind)
    }

    /// The reference of a JSON object (`apiVersion`, `kind`, `metadata.namespace`,
    /// `metadata.name`), or `None` when one of the required fields is missing.
    pub fn of_json(object: &Value) -> Option<ObjectRef> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let metadata = object.get("metadata")?;
        let name = metadata.get("name")?.as_str()?;
        let namespace = metadata
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty());
        Some(ObjectRef::new(
            &Gvk::from_api_version(api_version, kind),
            namespace,
            name,
        ))
    }

    /// The identity of the object in the cluster, given how its kind is served: the version is
    /// not part of it (an object read as `apps/v1beta1` is the same as `apps/v1`), the
    /// namespace is dropped for cluster-scoped kinds and defaulted to `install_namespace` for
    /// namespaced objects rendered without one (as Helm does).
    pub fn key(&self, namespaced: bool, install_namespace: &str) -> ObjectKey {
        let gvk = self.gvk();
        ObjectKey {
            group: gvk.group,
            kind: gvk.kind,
            namespace: if namespaced {
                Some(
                    self.namespace
                        .clone()
                        .unwrap_or_else(|| install_namespace.to_owned()),
                )
            } else {
                None
            },
            name: self.name.clone(),
        }
    }
}

impl fmt::Display for ObjectRef {
    /// `Deployment "ns/name"`, or `ClusterRole "name"` without a namespace.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} \"{}/{}\"", self.kind, ns, self.name),
            None => write!(f, "{} \"{}\"", self.kind, self.name),
        }
    }
}

/// The identity of an object in the cluster: group, kind, namespace (only for namespaced kinds)
/// and name. Two references with the same key are the same object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

/// A rendered object that cannot be applied, named by its position in the set and whatever of
/// its identity could be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid object {position} of the rendered bundle{identity}: {problem}")]
pub struct InvalidObject {
    /// 1-based position in the rendered set.
    pub position: usize,
    /// ` (Kind "name")` when known, else empty.
    pub identity: String,
    pub problem: String,
}

/// The parts of a rendered object the plan needs, read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderedObject {
    pub gvk: Gvk,
    pub name: String,
    /// `metadata.namespace` as rendered (non-empty), before defaulting.
    pub rendered_namespace: Option<String>,
    pub body: Value,
}

/// Longest object name the API server accepts for any kind (DNS subdomain); longer names are
/// refused here so the error names the object instead of surfacing as an API error mid-apply.
const MAX_NAME_LEN: usize = 253;

impl RenderedObject {
    /// Reads `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` of the object at
    /// `index` (0-based) of a rendered set.
    pub fn parse(index: usize, body: &Value) -> Result<RenderedObject, InvalidObject> {
        let position = index + 1;
        let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = body
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let identity = match (kind.is_empty(), name.is_empty()) {
            (false, false) => format!(" ({kind} \"{name}\")"),
            (false, true) => format!(" ({kind})"),
            _ => String::new(),
        };
        let invalid = |problem: &str| InvalidObject {
            position,
            identity: identity.clone(),
            problem: problem.to_owned(),
        };
        if !body.is_object() {
            return Err(invalid("not a JSON object"));
        }
        let api_version = match body.get("apiVersion").and_then(Value::as_str) {
            Some(v) if !v.is_empty() => v,
            _ => return Err(invalid("apiVersion is missing or not a string")),
        };
        if kind.is_empty() {
            return Err(invalid("kind is missing or not a string"));
        }
        let metadata = match body.get("metadata") {
            Some(Value::Object(m)) => m,
            _ => return Err(invalid("metadata is missing or not an object")),
        };
        if name.is_empty() {
            return Err(invalid("metadata.name is missing or empty"));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(invalid(&format!(
                "metadata.name is longer than {MAX_NAME_LEN} characters"
            )));
        }
        let rendered_namespace = match metadata.get("namespace") {
            None | Some(Value::Null) => None,
            Some(Value::String(ns)) if ns.is_empty() => None,
            Some(Value::String(ns)) => Some(ns.clone()),
            Some(_) => return Err(invalid("metadata.namespace is not a string")),
        };
        for field in ["labels", "annotations"] {
            match metadata.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::Object(map)) => {
                    if map.values().any(|v| !v.is_string()) {
                        return Err(invalid(&format!(
                            "metadata.{field} has a value that is not a string"
                        )));
                    }
                }
                Some(_) => return Err(invalid(&format!("metadata.{field} is not an object"))),
            }
        }
        Ok(RenderedObject {
            gvk: Gvk::from_api_version(api_version, kind),
            name: name.to_owned(),
            rendered_namespace,
            body: body.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn api_version_splits_into_group_and_version() {
        let apps = Gvk::from_api_version("apps/v1", "Deployment");
        assert_eq!((apps.group.as_str(), apps.version.as_str()), ("apps", "v1"));
        assert_eq!(apps.api_version(), "apps/v1");
        let core = Gvk::from_api_version("v1", "ConfigMap");
        assert_eq!((core.group.as_str(), core.version.as_str()), ("", "v1"));
        assert_eq!(core.api_version(), "v1");
        assert_eq!(apps.to_string(), "Deployment.apps/v1");
        assert_eq!(core.to_string(), "ConfigMap.v1");
    }

    #[test]
    fn keys_ignore_version_and_the_namespace_of_cluster_scoped_kinds() {
        let rendered_vwc = ObjectRef {
            api_version: "admissionregistration.k8s.io/v1".into(),
            kind: "ValidatingWebhookConfiguration".into(),
            namespace: Some("ns".into()),
            name: "w".into(),
        };
        let live_vwc = ObjectRef {
            namespace: None,
            ..rendered_vwc.clone()
        };
        assert_eq!(rendered_vwc.key(false, "ns"), live_vwc.key(false, "ns"));

        let v1 = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: None,
            name: "d".into(),
        };
        let beta = ObjectRef {
            api_version: "apps/v1beta1".into(),
            namespace: Some("install".into()),
            ..v1.clone()
        };
        assert_eq!(v1.key(true, "install"), beta.key(true, "install"));
        assert_ne!(v1.key(true, "other"), beta.key(true, "install"));
    }

    #[test]
    fn a_rendered_object_without_a_name_is_named_by_position_and_kind() {
        let err = RenderedObject::parse(
            2,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid object 3 of the rendered bundle (ConfigMap): metadata.name is missing or empty"
        );
    }

    #[test]
    fn rendered_objects_with_bad_metadata_are_refused_with_the_field_named() {
        let cases = [
            (
                json!([]),
                "invalid object 1 of the rendered bundle: not a JSON object",
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a"}}),
                "invalid object 1 of the rendered bundle (ConfigMap \"a\"): apiVersion is missing or not a string",
            ),
            (
                json!({"apiVersion": "v1", "metadata": {"name": "a"}}),
                "invalid object 1 of the rendered bundle: kind is missing or not a string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": 1}}}),
                "invalid object 1 of the rendered bundle (ConfigMap \"a\"): metadata.labels has a value that is not a string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": 3}}),
                "invalid object 1 of the rendered bundle (ConfigMap \"a\"): metadata.namespace is not a string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a".repeat(254)}}),
                &format!(
                    "invalid object 1 of the rendered bundle (ConfigMap \"{}\"): metadata.name is longer than 253 characters",
                    "a".repeat(254)
                ),
            ),
        ];
        for (body, want) in cases {
            let err = RenderedObject::parse(0, &body).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn object_refs_display_with_and_without_namespace() {
        let r = ObjectRef::of_json(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}),
        )
        .unwrap();
        assert_eq!(r.to_string(), "ConfigMap \"n/a\"");
        let c = ObjectRef::of_json(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}),
        )
        .unwrap();
        assert_eq!(c.to_string(), "ClusterRole \"r\"");
    }
}
