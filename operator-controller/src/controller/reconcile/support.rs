//! Small answers the reconcile and `operator-controller preview` share: whose identity applies,
//! which objects a stored release lists, whether catalogs match, what rendering depends on, and
//! the finalizers and clock.
//!
//! Input: the extension, releases, catalog views. Output: values. Network: only
//! [`add_finalizers`] (one write when a finalizer is missing).

use super::*;

/// Whether ClusterCatalogs matching the extension's selector exist (any availability, as
/// upstream counts them).
///
/// `operator-controller preview` asks the same ([`crate::cmd::preview`]).
pub(crate) fn catalogs_matching(
    filter: &CatalogFilter,
    views: &[olm_operator_core::catalog_changes::CatalogView],
) -> CatalogsMatching {
    let Ok(selector) = CatalogSelector::new(filter.selector.as_ref()) else {
        return CatalogsMatching::Unknown;
    };
    if views.iter().any(|v| selector.matches(&v.labels)) {
        CatalogsMatching::Some
    } else {
        CatalogsMatching::None
    }
}

/// What a release's rendered objects depend on besides the bundle's content: the resolved
/// bundle (name, version, image reference), the install namespace, `spec.config` and the
/// certificate provider. A bundle image is known by its reference (a tag that moves under the
/// same reference is noticed at the next restart or spec change, not by a steady extension).
pub(super) fn render_inputs(
    extension: &ClusterExtension,
    resolution: &Resolution,
    cert_provider: CertProvider,
) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    resolution.bundle.name.hash(&mut hasher);
    resolution.status_version().hash(&mut hasher);
    resolution.bundle.image.hash(&mut hasher);
    extension.spec.namespace.hash(&mut hasher);
    serde_json::to_string(&extension.spec.config)
        .unwrap_or_default()
        .hash(&mut hasher);
    format!("{cert_provider:?}").hash(&mut hasher);
    hasher.finish()
}

/// The objects a stored release lists.
///
/// `operator-controller preview` asks the same ([`crate::cmd::preview`]).
pub(crate) fn release_refs(
    release: &Release,
) -> Result<Vec<ObjectRef>, olm_operator_core::release::manifest::ManifestError> {
    Ok(manifest_objects(&release.manifest)?
        .iter()
        .filter_map(ObjectRef::of_json)
        .collect())
}

pub(super) fn installed_finding(bundle: &history::InstalledBundle) -> Installed {
    Installed::Bundle {
        bundle: BundleMetadata {
            name: bundle.name.clone(),
            version: bundle.version.clone(),
        },
        image: bundle.image.clone(),
    }
}

/// Whose permissions an extension's objects are applied with:
///
/// | `--honor-service-account` | `spec.serviceAccount` | identity |
/// |---|---|---|
/// | off (default, upstream v1.11) | any | the controller |
/// | on | set | that ServiceAccount (impersonation) |
/// | on | unset | the controller |
///
/// `operator-controller preview` asks the same ([`crate::cmd::preview`]).
pub(crate) fn identity(extension: &ClusterExtension, honor_service_account: bool) -> Identity {
    match extension
        .spec
        .service_account
        .as_ref()
        .and_then(|s| s.name.as_ref())
        .filter(|_| honor_service_account)
    {
        Some(name) => Identity::ServiceAccount {
            namespace: extension.spec.namespace.clone(),
            name: name.clone(),
        },
        None => Identity::Controller,
    }
}

pub(super) fn uid(extension: &ClusterExtension) -> String {
    extension.metadata.uid.clone().unwrap_or_default()
}

/// Adds the finalizers that are missing; returns the object as last written.
pub(super) async fn add_finalizers(
    api: &Api<ClusterExtension>,
    extension: &ClusterExtension,
) -> Result<ClusterExtension, PublishError> {
    // Both in one request: one write, one watch event.
    match olm_runtime::finalizer::add_all(api, extension, &crate::controller::FINALIZERS)
        .await
        .map_err(|source| PublishError::Metadata {
            name: extension.name_any(),
            source,
        })? {
        Some(updated) => Ok(updated),
        None => Ok(extension.clone()),
    }
}

pub(super) fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

pub(super) fn now_secs() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_second()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extension(service_account: Option<&str>) -> ClusterExtension {
        let mut spec = json!({
            "namespace": "ns",
            "source": {"sourceType": "Catalog", "catalog": {"packageName": "p"}},
        });
        if let Some(sa) = service_account {
            spec["serviceAccount"] = json!({"name": sa});
        }
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": "e", "uid": "u"},
            "spec": spec,
        }))
        .expect("an extension")
    }

    #[test]
    fn the_identity_is_the_service_account_only_when_honoured_and_set() {
        assert_eq!(identity(&extension(None), true), Identity::Controller);
        assert_eq!(
            identity(&extension(Some("installer")), false),
            Identity::Controller
        );
        assert_eq!(
            identity(&extension(Some("installer")), true),
            Identity::ServiceAccount {
                namespace: "ns".into(),
                name: "installer".into()
            }
        );
    }

    /// Upstream holds the bundle's own manifests as unstructured objects (keys sorted) and what
    /// its generators produce as typed ones (Go's field order).
    #[test]
    fn bundle_manifests_are_unstructured_and_generated_objects_typed() {
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "ns"}, "data": {"b": "1", "a": "2"}});
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns"}, "spec": {"replicas": 1}});
        let rendered = render::Rendered {
            objects: vec![configmap.clone(), deployment.clone()],
            annotations: BTreeMap::new(),
            package_name: "p".into(),
            bundle_name: "p.v1".into(),
            bundle_version: "1.0.0".into(),
            warnings: Vec::new(),
        };
        let others = BTreeSet::from([("ConfigMap".to_owned(), "cm".to_owned())]);
        assert_eq!(
            chart_objects(&rendered, &others),
            vec![
                ChartObject::unstructured(&configmap),
                ChartObject::typed(&deployment)
            ]
        );
    }
}
