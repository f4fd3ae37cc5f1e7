//! Which resource serves a kind: API discovery, cached per group version.
//!
//! Input: kinds (group, version, kind). Output: their plural and scope, or nothing for kinds
//! the API server does not serve. Network: one discovery request per group version not yet
//! cached (`GET /api/v1`, `GET /apis/<group>/<version>`), with the controller's identity
//! (discovery is readable by every authenticated user).
//!
//! Cache policy:
//!
//! | lookup | action |
//! |---|---|
//! | group version cached, kind present | answer from the cache |
//! | group version cached, kind absent | fetch the group version again (a CRD may have added the kind), answer from it |
//! | group version not cached | fetch it; 404 means not served and is not cached |
//! | [`Discovery::forget`] (an apply got 404 for a kind) | drop the group version |
//!
//! Each group version is fetched at most once per [`Discovery::resolve`] call. Kinds defined by
//! a CustomResourceDefinition of the set being applied never come here: the plan reads them
//! from the CRD, which is applied and Established before its objects.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::Client;
use olm_operator_core::apply_plan::{Gvk, ResourceInfo};

use super::call::bounded;
use super::error::{ApiFailure, ApplyError};

/// Kinds of one group version: kind → resource.
type GroupVersionKinds = Arc<HashMap<String, ResourceInfo>>;

/// A discovery cache shared by every apply of a controller.
#[derive(Clone)]
pub struct Discovery {
    client: Client,
    call_timeout: Duration,
    cache: Arc<Mutex<HashMap<String, GroupVersionKinds>>>,
}

impl Discovery {
    pub fn new(client: Client, call_timeout: Duration) -> Discovery {
        Discovery {
            client,
            call_timeout,
            cache: Arc::default(),
        }
    }

    fn cached(&self, api_version: &str) -> Option<GroupVersionKinds> {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(api_version)
            .cloned()
    }

    /// Drops a group version from the cache (after the API server answered 404 for it).
    pub fn forget(&self, gvk: &Gvk) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&gvk.api_version());
    }

    /// Resolves every kind of `kinds`; kinds the API server does not serve are absent from the
    /// answer.
    pub async fn resolve(
        &self,
        kinds: &BTreeSet<Gvk>,
    ) -> Result<HashMap<Gvk, ResourceInfo>, ApplyError> {
        let mut answer = HashMap::new();
        let mut fetched: HashMap<String, Option<GroupVersionKinds>> = HashMap::new();
        for gvk in kinds {
            let api_version = gvk.api_version();
            let hit = self
                .cached(&api_version)
                .and_then(|kinds| kinds.get(&gvk.kind).cloned());
            if let Some(resource) = hit {
                answer.insert(gvk.clone(), resource);
                continue;
            }
            let kinds_of_version = match fetched.get(&api_version) {
                Some(kinds) => kinds.clone(),
                None => {
                    let kinds = self.fetch(gvk).await.map_err(ApplyError::api(format!(
                        "discover the resources of API version \"{api_version}\""
                    )))?;
                    fetched.insert(api_version.clone(), kinds.clone());
                    kinds
                }
            };
            if let Some(resource) = kinds_of_version.and_then(|k| k.get(&gvk.kind).cloned()) {
                answer.insert(gvk.clone(), resource);
            }
        }
        Ok(answer)
    }

    /// Fetches one group version; `None` when it is not served.
    async fn fetch(&self, gvk: &Gvk) -> Result<Option<GroupVersionKinds>, ApiFailure> {
        let api_version = gvk.api_version();
        let list = if gvk.group.is_empty() {
            bounded(
                self.call_timeout,
                self.client.list_core_api_resources(&gvk.version),
            )
            .await
        } else {
            bounded(
                self.call_timeout,
                self.client.list_api_group_resources(&api_version),
            )
            .await
        };
        let list = match list {
            Ok(list) => list,
            Err(e) if e.is_not_found() => {
                self.forget(gvk);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let kinds: HashMap<String, ResourceInfo> = list
            .resources
            .into_iter()
            // Subresources (`deployments/scale`) share the kind of their parent.
            .filter(|r| !r.name.contains('/'))
            .map(|r| {
                let resource = ResourceInfo {
                    gvk: Gvk {
                        group: gvk.group.clone(),
                        version: gvk.version.clone(),
                        kind: r.kind.clone(),
                    },
                    plural: r.name,
                    namespaced: r.namespaced,
                };
                (r.kind, resource)
            })
            .collect();
        let kinds = Arc::new(kinds);
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(api_version, kinds.clone());
        Ok(Some(kinds))
    }
}
