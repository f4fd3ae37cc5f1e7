//! The Helm chart operator-controller synthesizes from a bundle's rendered objects, and the
//! `manifest` text Helm stores for it, reproduced byte for byte.
//!
//! Input: the rendered objects (each as the JSON text Go's `json.Marshal` gives for it), the
//! bundle CSV's annotations, and the post-render context (release namespace, the owning
//! ClusterExtension, which kinds are namespaced). Output: a [`Chart`] and the manifest text.
//! No IO: the caller supplies the resource scopes it discovered.
//!
//! Upstream (`applier/provider.go` `RegistryV1HelmChartProvider`, `applier/helm.go`, Helm
//! v3.21 `action.renderResources`, helm-operator-plugins v0.9.1 `ownerPostRenderer`):
//!
//! 1. Chart: `metadata.annotations` = the CSV's annotations (including `olm.properties`); per
//!    object ([`ChartObject::typed`] for what upstream's renderer generates,
//!    [`ChartObject::unstructured`] for the bundle's other manifests), a file `object-<first 8 bytes of sha256(json), hex>.json` holding the JSON, and a
//!    template of the same name whose text is `{{.Files.Get "<name>"}}` (so Go template syntax
//!    inside manifests is never evaluated).
//! 2. Helm renders each template (the file's text), orders the documents by kind
//!    ([`HELM_INSTALL_ORDER`](crate::apply_plan::order::HELM_INSTALL_ORDER), unknown kinds after, alphabetically) and, within a kind, by template
//!    name (the hash), and concatenates them as `---\n# Source: <name>\n<doc>\n`.
//! 3. Post-renderers, in order, re-read that stream as YAML (so the `# Source` lines and the
//!    original key order are lost):
//!    - Helm's builder sets `metadata.namespace` = the release namespace on namespaced objects
//!      that have none, and removes it from cluster-scoped ones (so the namespace upstream's
//!      renderer gives webhook configurations is in the chart file but not in the manifest);
//!    - the owner post-renderer appends a controller reference to the ClusterExtension, or, for
//!      objects annotated `helm.sh/resource-policy: keep`, sets `operator-sdk/primary-resource`
//!      (`/<ce>`) and `operator-sdk/primary-resource-type` (`ClusterExtension.olm.operatorframework.io`);
//!    - operator-controller's post-renderer merges the labels `olm.operatorframework.io/owner-kind`
//!      and `owner-name` and writes each object with `json.Encoder`: keys sorted, HTML escaped,
//!      one object per line.
//!
//! So the manifest is one compact JSON object per line, in Helm's order. Objects annotated
//! `helm.sh/hook` would become Helm hooks (run, not applied); OLM bundles have none and this
//! module refuses them ([`RenderError::Hook`]).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::go_json;
use super::model::{Chart, File, Metadata};
use crate::apply_plan::order::compare_kinds;

/// Label keys operator-controller puts on every applied object.
pub const OWNER_KIND_LABEL: &str = "olm.operatorframework.io/owner-kind";
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";
/// Helm's resource-policy annotation; `keep` objects survive uninstall and get no ownerRef.
pub const RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";
/// Helm's hook annotation.
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
/// Annotations operator-lib sets instead of an ownerRef on `keep` objects.
pub const PRIMARY_RESOURCE_ANNOTATION: &str = "operator-sdk/primary-resource";
pub const PRIMARY_RESOURCE_TYPE_ANNOTATION: &str = "operator-sdk/primary-resource-type";

/// One rendered object as upstream's chart holds it: the exact bytes of `json.Marshal(obj)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChartObject {
    pub json: Vec<u8>,
}

impl ChartObject {
    /// An object upstream holds as `unstructured.Unstructured` (bundle manifests other than the
    /// CSV and CRDs): Go writes its keys sorted.
    pub fn unstructured(object: &Value) -> ChartObject {
        ChartObject {
            json: go_json::value_to_vec(object),
        }
    }

    /// An object upstream holds as a typed Go struct (everything its registry+v1 renderer
    /// generates: Deployments, ServiceAccounts, RBAC, CRDs, webhook configurations, webhook
    /// Services): keys in Go's struct field order ([`super::go_order`]). Kinds without a known
    /// Go type are written as [`ChartObject::unstructured`].
    pub fn typed(object: &Value) -> ChartObject {
        match super::go_order::typed_json(object) {
            Some(json) => ChartObject { json },
            None => ChartObject::unstructured(object),
        }
    }

    /// An object whose Go JSON text the caller already has.
    pub fn from_go_json(json: Vec<u8>) -> ChartObject {
        ChartObject { json }
    }

    /// `object-<hex of the first 8 bytes of sha256(json)>.json`.
    pub fn file_name(&self) -> String {
        let digest = Sha256::digest(&self.json);
        format!("object-{}.json", hex::encode(&digest[..8]))
    }
}

/// The chart upstream synthesizes: CSV annotations as metadata, one file and one template per
/// object, in the objects' order.
pub fn synthesize_chart(
    objects: &[ChartObject],
    csv_annotations: &BTreeMap<String, String>,
) -> Chart {
    let mut files = Vec::new();
    let mut templates = Vec::new();
    for object in objects {
        let name = object.file_name();
        templates.push(File {
            name: name.clone(),
            data: Some(format!("{{{{.Files.Get \"{name}\"}}}}").into_bytes()),
        });
        files.push(File {
            name,
            data: Some(object.json.clone()),
        });
    }
    Chart {
        metadata: Some(Metadata {
            annotations: csv_annotations.clone(),
            ..Default::default()
        }),
        lock: None,
        // Go appends to nil slices: no objects means `null`.
        templates: (!templates.is_empty()).then_some(templates),
        values: None,
        schema: None,
        files: (!files.is_empty()).then_some(files),
    }
}

/// Whether objects of a kind are namespaced; `None` when the API server does not know the kind.
pub trait ResourceScopes {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool>;
}

impl<F: Fn(&str, &str) -> Option<bool>> ResourceScopes for F {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self(api_version, kind)
    }
}

/// Scopes by `(apiVersion, kind)`, as discovery reported them (kinds the API server does not
/// serve are absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindScopes(pub BTreeMap<(String, String), bool>);

impl KindScopes {
    pub fn insert(&mut self, api_version: &str, kind: &str, namespaced: bool) {
        self.0
            .insert((api_version.to_string(), kind.to_string()), namespaced);
    }
}

impl ResourceScopes for KindScopes {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.0
            .get(&(api_version.to_string(), kind.to_string()))
            .copied()
    }
}

/// Who owns the release's objects, and where namespaced objects default to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostRenderContext {
    /// The ClusterExtension's `spec.namespace` (Helm's release namespace).
    pub release_namespace: String,
    /// The ClusterExtension's name.
    pub owner_name: String,
    /// The ClusterExtension's UID.
    pub owner_uid: String,
}

impl PostRenderContext {
    fn owner_reference(&self) -> OwnerReference {
        super::secrets::cluster_extension_owner_reference(&self.owner_name, &self.owner_uid)
    }
}

/// Why a chart cannot be rendered into a manifest.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error(
        "template {0:?} is not a file reference ({{{{.Files.Get \"<name>\"}}}}), which is all operator-controller renders"
    )]
    UnsupportedTemplate(String),
    #[error("YAML parse error on {file}: {message}")]
    Parse { file: String, message: String },
    #[error("object in {file} is not a JSON object")]
    NotAnObject { file: String },
    #[error("object in {file} has no {field}")]
    MissingField { file: String, field: &'static str },
    #[error(
        "object {name:?} of kind {kind:?} in {file} is annotated {HOOK_ANNOTATION:?}: Helm would run it as a hook instead of installing it, which operator-controller does not support"
    )]
    Hook {
        file: String,
        kind: String,
        name: String,
    },
    #[error(
        "resource mapping not found for name: {name:?} namespace: {namespace:?} from \"\": no matches for kind {kind:?} in version {api_version:?}\nensure CRDs are installed first"
    )]
    UnknownKind {
        name: String,
        namespace: String,
        kind: String,
        api_version: String,
    },
    #[error("failed to encode {what}: {message}")]
    Encode { what: &'static str, message: String },
}

/// The manifest Helm stores for `chart` (see the module steps).
pub fn render_manifest(
    chart: &Chart,
    context: &PostRenderContext,
    scopes: &dyn ResourceScopes,
) -> Result<String, RenderError> {
    let docs = rendered_documents(chart)?;
    // Encoded once; an error here must never become a `null` owner reference in the manifest.
    let owner =
        serde_json::to_value(context.owner_reference()).map_err(|e| RenderError::Encode {
            what: "the owner reference",
            message: e.to_string(),
        })?;
    let mut out = Vec::new();
    for doc in docs {
        let object = post_render(doc.object, &doc.file, context, &owner, scopes)?;
        out.extend(go_json::value_to_vec(&object));
        out.push(b'\n');
    }
    // Every part was written from `String`s and JSON values, so the text is UTF-8.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The chart and manifest of a set of objects, in one call.
pub fn render_release(
    objects: &[ChartObject],
    csv_annotations: &BTreeMap<String, String>,
    context: &PostRenderContext,
    scopes: &dyn ResourceScopes,
) -> Result<(Chart, String), RenderError> {
    let chart = synthesize_chart(objects, csv_annotations);
    let manifest = render_manifest(&chart, context, scopes)?;
    Ok((chart, manifest))
}

struct Document {
    file: String,
    kind: String,
    object: Map<String, Value>,
}

/// Helm's engine plus `SortManifests`: the documents of every template, in install order.
fn rendered_documents(chart: &Chart) -> Result<Vec<Document>, RenderError> {
    // `.Files.Get` reads a map: for a repeated name the last file wins.
    let files: BTreeMap<&str, &[u8]> = chart
        .files
        .iter()
        .flatten()
        .map(|f| (f.name.as_str(), f.data.as_deref().unwrap_or_default()))
        .collect();
    // The engine renders into a map keyed by template path; SortManifests walks it sorted.
    let mut rendered: BTreeMap<&str, String> = BTreeMap::new();
    for template in chart.templates.iter().flatten() {
        let text = String::from_utf8_lossy(template.data.as_deref().unwrap_or_default());
        let file = text
            .strip_prefix("{{.Files.Get \"")
            .and_then(|t| t.strip_suffix("\"}}"))
            .ok_or_else(|| RenderError::UnsupportedTemplate(template.name.clone()))?;
        let content = files.get(file).copied().unwrap_or_default();
        rendered.insert(
            template.name.as_str(),
            String::from_utf8_lossy(content).into_owned(),
        );
    }
    let mut docs = Vec::new();
    for (path, content) in rendered {
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('_') || content.trim().is_empty() {
            continue;
        }
        for text in split_manifests(&content) {
            let value: Value = serde_json::from_str(text).map_err(|e| RenderError::Parse {
                file: path.to_string(),
                message: e.to_string(),
            })?;
            let Value::Object(object) = value else {
                return Err(RenderError::NotAnObject {
                    file: path.to_string(),
                });
            };
            let kind = object
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if let Some(annotations) = object
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(Value::as_object)
                && annotations.contains_key(HOOK_ANNOTATION)
            {
                return Err(RenderError::Hook {
                    file: path.to_string(),
                    kind,
                    name: metadata_str(&object, "name").to_string(),
                });
            }
            docs.push(Document {
                file: path.to_string(),
                kind,
                object,
            });
        }
    }
    // Stable: within a kind the template-path order above is kept.
    docs.sort_by(|a, b| compare_kinds(&a.kind, &b.kind));
    Ok(docs)
}

/// Helm's `SplitManifests`: documents separated by `---` at the start of a line, trimmed, empty
/// ones dropped.
fn split_manifests(content: &str) -> Vec<&str> {
    let text = content.trim();
    let mut docs = Vec::new();
    let mut start = 0;
    let mut i = 0;
    let b = text.as_bytes();
    while i + 3 <= b.len() {
        if &b[i..i + 3] == b"---" && (i == 0 || b[i - 1] == b'\n') {
            docs.push(text[start..i].trim());
            let mut j = i + 3;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            start = j;
            i = j;
        } else {
            i += 1;
        }
    }
    docs.push(text[start..].trim());
    docs.into_iter().filter(|d| !d.is_empty()).collect()
}

fn metadata_str<'a>(object: &'a Map<String, Value>, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The three post-render steps for one object.
fn post_render(
    mut object: Map<String, Value>,
    file: &str,
    context: &PostRenderContext,
    owner: &Value,
    scopes: &dyn ResourceScopes,
) -> Result<Value, RenderError> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if api_version.is_empty() {
        return Err(RenderError::MissingField {
            file: file.to_string(),
            field: "apiVersion",
        });
    }
    if kind.is_empty() {
        return Err(RenderError::MissingField {
            file: file.to_string(),
            field: "kind",
        });
    }
    let name = metadata_str(&object, "name").to_string();
    let namespace = metadata_str(&object, "namespace").to_string();
    let namespaced =
        scopes
            .is_namespaced(&api_version, &kind)
            .ok_or_else(|| RenderError::UnknownKind {
                name: name.clone(),
                namespace: namespace.clone(),
                kind: kind.clone(),
                api_version: api_version.clone(),
            })?;
    let mut metadata = match object.remove("metadata") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };

    // Helm's builder: DefaultNamespace, then FilterNamespace.
    if !namespaced {
        metadata.remove("namespace");
    } else if namespace.is_empty() {
        metadata.insert(
            "namespace".to_string(),
            Value::String(context.release_namespace.clone()),
        );
    }

    // helm-operator-plugins' owner post-renderer.
    let keep = metadata
        .get("annotations")
        .and_then(|a| a.get(RESOURCE_POLICY_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("keep"));
    if keep {
        with_object(&mut metadata, "annotations", |annotations| {
            annotations.insert(
                PRIMARY_RESOURCE_ANNOTATION.to_string(),
                Value::String(format!("/{}", context.owner_name)),
            );
            annotations.insert(
                PRIMARY_RESOURCE_TYPE_ANNOTATION.to_string(),
                Value::String("ClusterExtension.olm.operatorframework.io".to_string()),
            );
        });
    } else {
        let reference = owner.clone();
        let mut refs = match metadata.remove("ownerReferences") {
            Some(Value::Array(refs)) => refs,
            _ => Vec::new(),
        };
        refs.push(reference);
        metadata.insert("ownerReferences".to_string(), Value::Array(refs));
    }

    // operator-controller's label post-renderer.
    with_object(&mut metadata, "labels", |labels| {
        labels.insert(
            OWNER_KIND_LABEL.to_string(),
            Value::String("ClusterExtension".to_string()),
        );
        labels.insert(
            OWNER_NAME_LABEL.to_string(),
            Value::String(context.owner_name.clone()),
        );
    });
    object.insert("metadata".to_string(), Value::Object(metadata));
    Ok(Value::Object(object))
}

/// Applies `f` to `metadata[key]` as an object (a missing or non-object value starts empty, as
/// Go's `GetLabels`/`GetAnnotations` read it).
fn with_object(
    metadata: &mut Map<String, Value>,
    key: &str,
    f: impl FnOnce(&mut Map<String, Value>),
) {
    let mut map = match metadata.remove(key) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    f(&mut map);
    metadata.insert(key.to_string(), Value::Object(map));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_manifests_as_helm_does() {
        assert_eq!(split_manifests("a: 1"), vec!["a: 1"]);
        assert_eq!(
            split_manifests("---\na: 1\n---\nb: 2\n  \n---\n"),
            vec!["a: 1", "b: 2"]
        );
        assert_eq!(
            split_manifests("{\"a\":\"x---y\"}"),
            vec!["{\"a\":\"x---y\"}"]
        );
    }

    #[test]
    fn unknown_kinds_sort_after_known_ones_alphabetically() {
        let mut kinds = vec!["Zeta", "Deployment", "Alpha", "Namespace", "ServiceAccount"];
        kinds.sort_by(|a, b| compare_kinds(a, b));
        assert_eq!(
            kinds,
            vec!["Namespace", "ServiceAccount", "Deployment", "Alpha", "Zeta"]
        );
    }
}
