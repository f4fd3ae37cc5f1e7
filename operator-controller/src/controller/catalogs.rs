//! ClusterCatalogs for the ClusterExtension controller: what the resolver reads of them, their
//! package content, and the watch that re-queues the extensions a catalog change concerns.
//!
//! Input: ClusterCatalogs (listed, watched), catalogd's `/metas` API. Output: [`CatalogInfo`]s
//! and package content for the resolver; extension names to reconcile again. Network: the
//! Kubernetes API (list, watch) and catalogd over HTTP (through [`CatalogdClient`], which caches
//! content per catalog revision).
//!
//! Reading a selected catalog's package follows upstream's `GetPackage`:
//!
//! | catalog | result |
//! |---|---|
//! | `Serving` not True, or no `status.urls.base` / `status.resolvedSource` | error `catalog "<name>" is not being served` (ends the whole resolution, as upstream) |
//! | serving | the package's content at the resolved revision (cached by revision) |
//!
//! The watch keeps, per catalog, the [`CatalogView`] last seen and the names of the packages its
//! revision holds (`/metas?schema=olm.package`, read once per revision). A change the resolver
//! can see re-queues only the extensions whose package the catalog held before or holds after
//! (`olm_operator_core::catalog_changes`); when a package list cannot be read, every extension.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store, reflector};
use kube::runtime::watcher;
use olm_api::v1::{
    AvailabilityMode, ClusterCatalog, ClusterExtension, ConditionStatus, ConditionType,
    METADATA_NAME_LABEL, find_condition,
};
use olm_api::version::go_text::go_quote;
use olm_operator_core::catalog_changes::{
    CatalogView, affected_packages, extensions_to_requeue, resolver_visible,
};
use olm_operator_core::resolve::{CatalogInfo, FetchError, PackageContent};
use olm_runtime::shutdown::CancellationToken;
use tokio::sync::mpsc;

use crate::catalog_source::http::{CatalogEndpoint, CatalogdClient};
use crate::lean_watch::without_managed_fields;

/// What the resolver reads of a ClusterCatalog.
pub fn catalog_view(catalog: &ClusterCatalog) -> CatalogView {
    let status = catalog.status.as_ref();
    let serving = status
        .and_then(|s| find_condition(&s.conditions, ConditionType::Serving))
        .is_some_and(|c| c.status == ConditionStatus::True);
    let mut labels: BTreeMap<String, String> = catalog.labels().clone();
    // catalogd labels every catalog with its name; a catalog it has not reached yet is
    // selectable by name all the same.
    labels
        .entry(METADATA_NAME_LABEL.to_owned())
        .or_insert_with(|| catalog.name_any());
    CatalogView {
        name: catalog.name_any(),
        priority: catalog.spec.priority,
        labels,
        available: catalog.spec.availability_mode != AvailabilityMode::Unavailable,
        serving,
        resolved_ref: status
            .and_then(|s| s.resolved_source.as_ref())
            .map(|r| r.image.ref_.clone()),
        base_url: status.and_then(|s| s.urls.as_ref()).map(|u| u.base.clone()),
    }
}

/// The resolver's view of a catalog.
pub fn catalog_info(view: &CatalogView) -> CatalogInfo {
    CatalogInfo {
        name: view.name.clone(),
        priority: view.priority,
        labels: view.labels.clone(),
        available: view.available,
    }
}

/// Why the ClusterCatalogs could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("{0}")]
    Api(#[source] kube::Error),
    #[error("no answer from the API server within {}s", .0.as_secs())]
    Timeout(Duration),
}

/// Every ClusterCatalog: from `cache` (the watch's store) once it has listed them, else from a
/// LIST (the ClusterCatalog API being absent counts as no catalogs, as upstream's fallback
/// treats both alike; a watch of an absent API never becomes ready). The cache spares a LIST
/// per reconcile; it may trail the API server by a watch event, which the watch's re-queue of
/// the concerned extensions makes good.
pub async fn list_catalogs(
    client: &kube::Client,
    cache: Option<&Store<ClusterCatalog>>,
    timeout: Duration,
) -> Result<Vec<CatalogView>, ListError> {
    if let Some(cache) = cache
        && matches!(cache.wait_until_ready().now_or_never(), Some(Ok(())))
    {
        return Ok(cache.state().iter().map(|c| catalog_view(c)).collect());
    }
    let api: Api<ClusterCatalog> = Api::all(client.clone());
    match tokio::time::timeout(timeout, api.list(&ListParams::default())).await {
        Err(_) => Err(ListError::Timeout(timeout)),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => Ok(Vec::new()),
        Ok(Err(e)) => Err(ListError::Api(e)),
        Ok(Ok(list)) => Ok(list.items.iter().map(catalog_view).collect()),
    }
}

/// Where a catalog's content is served, or upstream's error when it is not.
pub fn endpoint(view: &CatalogView) -> Result<CatalogEndpoint, FetchError> {
    let not_served =
        || -> FetchError { format!("catalog {} is not being served", go_quote(&view.name)).into() };
    if !view.serving {
        return Err(not_served());
    }
    let (Some(base), Some(revision)) = (&view.base_url, &view.resolved_ref) else {
        return Err(not_served());
    };
    let base_url = reqwest::Url::parse(base)
        .map_err(|e| -> FetchError { format!("invalid status.urls.base {base:?}: {e}").into() })?;
    Ok(CatalogEndpoint {
        name: view.name.clone(),
        base_url,
        revision: Some(revision.clone()),
    })
}

/// `package` from each of `selected`, fetched concurrently.
pub async fn fetch_packages<'c>(
    client: &CatalogdClient,
    views: &BTreeMap<String, CatalogView>,
    selected: &[&'c CatalogInfo],
    package: &str,
) -> Vec<(&'c CatalogInfo, Result<Arc<PackageContent>, FetchError>)> {
    let fetches = selected.iter().map(|info| async move {
        let result = match views.get(&info.name).map(endpoint) {
            None => Err(format!("catalog {} disappeared", go_quote(&info.name)).into()),
            Some(Err(e)) => Err(e),
            Some(Ok(endpoint)) => client
                .package(&endpoint, package)
                .await
                .map_err(|e| -> FetchError { Box::new(e) }),
        };
        (*info, result)
    });
    futures::future::join_all(fetches).await
}

/// One catalog as the watch last saw it.
struct Known {
    view: CatalogView,
    /// The packages of `view.resolved_ref`; `None` when they could not be read.
    packages: Option<BTreeSet<String>>,
}

/// Watches ClusterCatalogs until `stop`, keeping `cache` (read by [`list_catalogs`]); sends
/// the names of the extensions each change concerns (see the module header). `extensions` is
/// the controller's cache of extensions. The cache is updated before the re-queues of a
/// change are sent, so the reconciles they start see it.
pub async fn watch(
    client: kube::Client,
    catalogd: Arc<CatalogdClient>,
    extensions: Store<ClusterExtension>,
    cache: Writer<ClusterCatalog>,
    requeue: mpsc::Sender<ObjectRef<ClusterExtension>>,
    stop: CancellationToken,
) {
    let api: Api<ClusterCatalog> = Api::all(client);
    let mut known: HashMap<String, Known> = HashMap::new();
    let mut events = std::pin::pin!(reflector(
        cache,
        without_managed_fields(watcher(api, watcher::Config::default()))
    ));
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = events.next() => event,
        };
        let Some(event) = event else { return };
        let (catalog, deleted) = match event {
            Ok(watcher::Event::Apply(c)) => (c, false),
            Ok(watcher::Event::Delete(c)) => (c, true),
            Ok(watcher::Event::InitApply(c)) => {
                // Every extension is reconciled at start; only remember the catalog.
                let view = catalog_view(&c);
                let packages = package_names(&catalogd, &view).await;
                known.insert(view.name.clone(), Known { view, packages });
                continue;
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => continue,
            Err(e) => {
                tracing::debug!(error = %e, "ClusterCatalog watch interrupted; it resumes");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let name = catalog.name_any();
        let before = known.remove(&name);
        let after = (!deleted).then(|| catalog_view(&catalog));
        if !resolver_visible(before.as_ref().map(|k| &k.view), after.as_ref()) {
            if let Some(before) = before {
                known.insert(name, before);
            }
            continue;
        }
        let after_packages = match &after {
            None => Some(BTreeSet::new()),
            Some(view) => match &before {
                Some(k) if k.view.resolved_ref == view.resolved_ref && k.packages.is_some() => {
                    k.packages.clone()
                }
                _ => package_names(&catalogd, view).await,
            },
        };
        let before_packages = match &before {
            None => Some(BTreeSet::new()),
            Some(k) => k.packages.clone(),
        };
        if deleted {
            catalogd.forget_catalog(&name);
        }
        let affected = affected_packages(before_packages.as_ref(), after_packages.as_ref());
        let state = extensions.state();
        let names = extensions_to_requeue(
            &affected,
            state.iter().filter_map(|e| {
                let package = e.spec.source.catalog.as_ref()?.package_name.as_str();
                Some((e.metadata.name.as_deref()?, package))
            }),
        );
        tracing::debug!(catalog = %name, extensions = ?names, "catalog changed");
        for extension in names {
            if requeue.send(ObjectRef::new(&extension)).await.is_err() {
                return;
            }
        }
        if let Some(view) = after {
            known.insert(
                name,
                Known {
                    view,
                    packages: after_packages,
                },
            );
        }
    }
}

/// The packages a serving catalog holds; empty for one that serves nothing; `None` when they
/// could not be read.
async fn package_names(catalogd: &CatalogdClient, view: &CatalogView) -> Option<BTreeSet<String>> {
    if !view.serving || view.resolved_ref.is_none() {
        return Some(BTreeSet::new());
    }
    let url = reqwest::Url::parse(view.base_url.as_deref()?).ok()?;
    match catalogd.package_names(&url).await {
        Ok(names) => Some(names),
        Err(e) => {
            tracing::debug!(catalog = %view.name, error = %e, "could not list the catalog's packages");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(serving: bool, with_status: bool) -> ClusterCatalog {
        let mut c: ClusterCatalog = serde_json::from_value(serde_json::json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "cat", "labels": {"team": "a"}},
            "spec": {"source": {"type": "Image", "image": {"ref": "reg.io/cat:v1"}}, "priority": 5},
        }))
        .expect("a catalog");
        if with_status {
            c.status = serde_json::from_value(serde_json::json!({
                "conditions": [{"type": "Serving", "status": if serving {"True"} else {"False"},
                                "reason": "Available", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "resolvedSource": {"type": "Image", "image": {"ref": "reg.io/cat@sha256:1"}},
                "urls": {"base": "https://catalogd.svc/catalogs/cat"},
            }))
            .expect("a status");
        }
        c
    }

    #[test]
    fn the_view_carries_what_the_resolver_reads_and_the_name_label() {
        let view = catalog_view(&catalog(true, true));
        assert!(view.serving && view.available);
        assert_eq!(view.priority, 5);
        assert_eq!(
            view.labels.get(METADATA_NAME_LABEL).map(String::as_str),
            Some("cat")
        );
        assert_eq!(view.labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(view.resolved_ref.as_deref(), Some("reg.io/cat@sha256:1"));
        let endpoint = endpoint(&view).expect("served");
        assert_eq!(endpoint.revision.as_deref(), Some("reg.io/cat@sha256:1"));
        assert_eq!(
            endpoint.base_url.as_str(),
            "https://catalogd.svc/catalogs/cat"
        );
    }

    /// upstream's `GetPackage`: `catalog %q is not being served`.
    #[test]
    fn a_catalog_not_serving_or_without_status_is_not_being_served() {
        for c in [catalog(false, true), catalog(true, false)] {
            let e = endpoint(&catalog_view(&c)).expect_err("not served");
            assert_eq!(e.to_string(), "catalog \"cat\" is not being served");
        }
    }
}
