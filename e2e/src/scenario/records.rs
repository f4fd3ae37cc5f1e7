//! What an extension recorded and installed: its release records (the index Secrets in the system
//! namespace, as upstream's tools find them), the objects labelled as its own, the test bundle's
//! ConfigMap.
//!
//! Input: an applied [`Extension`]. Output: [`ReleaseRecords`], lists of labelled objects, the
//! ConfigMap's version. Network: 127.0.0.1 only (the API server).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};

use super::{Extension, OWNER_NAME_LABEL, Scenario};

/// One release record (an index Secret) of an extension.
#[derive(Clone, Debug)]
pub struct ReleaseRecord {
    pub name: String,
    /// The release's revision (label `version`).
    pub version: String,
    /// Label `status`: `deployed`, `superseded`, `failed`, `pending-install`, ...
    pub status: String,
    pub secret: Secret,
}

/// An extension's release records, by revision.
#[derive(Clone, Debug)]
pub struct ReleaseRecords(pub Vec<ReleaseRecord>);

impl ReleaseRecords {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The records' statuses, sorted.
    pub fn statuses(&self) -> Vec<String> {
        let mut statuses: Vec<String> = self.0.iter().map(|r| r.status.clone()).collect();
        statuses.sort();
        statuses
    }

    /// Revision → status.
    pub fn by_revision(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .map(|r| (r.version.clone(), r.status.clone()))
            .collect()
    }
}

impl Scenario {
    /// The extension's release records: the index Secrets in the system namespace, found as
    /// upstream's tools and e2e steps find them (labels `name`, `owner`; type `index.v1`).
    pub async fn release_records(&self, extension: &Extension) -> ReleaseRecords {
        let secrets: Api<Secret> =
            Api::namespaced(self.client.clone(), &self.settings.system_namespace);
        let list = secrets
            .list(
                &ListParams::default()
                    .labels(&format!(
                        "name={},owner=operator-controller",
                        extension.name
                    ))
                    .fields("type=operatorframework.io/index.v1"),
            )
            .await
            .unwrap_or_else(|e| panic!("list the release Secrets of {}: {e}", extension.name));
        let mut records: Vec<ReleaseRecord> = list
            .items
            .into_iter()
            .map(|secret| {
                let labels = secret.labels();
                let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
                ReleaseRecord {
                    name: secret.name_any(),
                    version: label("version"),
                    status: label("status"),
                    secret,
                }
            })
            .collect();
        records.sort_by_key(|r| r.version.parse::<u64>().unwrap_or(u64::MAX));
        ReleaseRecords(records)
    }

    /// The `version` in the bundle's ConfigMap `test-configmap` (see [`BundleSpec::new`](crate::operator_controller::BundleSpec::new)) in
    /// the extension's namespace, if it exists.
    pub async fn configmap_version(&self, extension: &Extension) -> Option<String> {
        self.configmaps(extension)
            .get_opt("test-configmap")
            .await
            .ok()
            .flatten()
            .and_then(|c| c.data)
            .and_then(|d| d.get("version").cloned())
    }

    /// The ConfigMaps of the extension's namespace.
    pub fn configmaps(&self, extension: &Extension) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &extension.namespace)
    }

    /// The Deployments of the extension's namespace.
    pub fn deployments(&self, extension: &Extension) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), &extension.namespace)
    }

    /// Deletes the bundle's ConfigMap `test-configmap` and waits until the controller restores
    /// it (`what` names the wait).
    pub async fn delete_configmap_and_wait_restored(
        &self,
        extension: &Extension,
        what: &str,
    ) -> ConfigMap {
        let configmaps = self.configmaps(extension);
        configmaps
            .delete("test-configmap", &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete test-configmap: {e}"));
        self.eventually(what, || async {
            configmaps.get_opt("test-configmap").await.ok().flatten()
        })
        .await
    }

    /// (kind, `namespace/name`) of every object labelled as the extension's, of the kinds the
    /// test bundles install.
    pub async fn labelled_objects(&self, extension: &Extension) -> Vec<(String, String)> {
        let selector = format!("{OWNER_NAME_LABEL}={}", extension.name);
        let mut out = Vec::new();
        for resource in [
            ApiResource::erase::<ConfigMap>(&()),
            ApiResource::erase::<Deployment>(&()),
            ApiResource::erase::<ServiceAccount>(&()),
            ApiResource::erase::<ClusterRole>(&()),
            ApiResource::erase::<ClusterRoleBinding>(&()),
            ApiResource::erase::<CustomResourceDefinition>(&()),
        ] {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
            let list = api
                .list(&ListParams::default().labels(&selector))
                .await
                .unwrap_or_else(|e| panic!("list {}: {e}", resource.kind));
            for o in list.items {
                out.push((
                    resource.kind.clone(),
                    format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()),
                ));
            }
        }
        out
    }
}
