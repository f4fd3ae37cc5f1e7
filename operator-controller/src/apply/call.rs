//! Bounded API calls and dynamic API handles for resolved kinds.
//!
//! Input: a client, a kind as [`ResourceInfo`], a future of a kube call. Output: the call's
//! result, or [`ApiFailure::Timeout`] when it takes longer than the bound. Network: the calls
//! it wraps.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource, DynamicObject};
use olm_operator_core::apply_plan::ResourceInfo;

use super::error::ApiFailure;

/// Runs one API call with a time bound, so no request of the apply layer can hang a reconcile.
pub(crate) async fn bounded<T>(
    limit: Duration,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiFailure> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(ApiFailure::from_kube(error)),
        Err(_) => Err(ApiFailure::Timeout(limit)),
    }
}

/// The kube-rs description of a resolved kind.
pub(crate) fn api_resource(resource: &ResourceInfo) -> ApiResource {
    ApiResource {
        group: resource.gvk.group.clone(),
        version: resource.gvk.version.clone(),
        api_version: resource.gvk.api_version(),
        kind: resource.gvk.kind.clone(),
        plural: resource.plural.clone(),
    }
}

/// An API handle for objects of `resource` in `namespace` (`None`: cluster-scoped, or all
/// namespaces for listing).
pub(crate) fn dynamic_api(
    client: &kube::Client,
    resource: &ResourceInfo,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let ar = api_resource(resource);
    match namespace {
        Some(ns) if resource.namespaced => Api::namespaced_with(client.clone(), ns, &ar),
        _ => Api::all_with(client.clone(), &ar),
    }
}

/// The metadata of one object, `None` when it does not exist. Any 404 counts as absent: the
/// API server answers a plain-text 404 (not a `NotFound` status) for a kind that is not
/// served, e.g. a custom resource whose CRD was just deleted.
pub(crate) async fn read_metadata(
    api: &Api<DynamicObject>,
    name: &str,
    limit: Duration,
) -> Result<Option<ObjectMeta>, ApiFailure> {
    match bounded(limit, api.get_metadata(name)).await {
        Ok(found) => Ok(Some(found.metadata)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// One whole object, `None` when it does not exist (any 404, as for [`read_metadata`]).
pub(crate) async fn read_object(
    api: &Api<DynamicObject>,
    name: &str,
    limit: Duration,
) -> Result<Option<DynamicObject>, ApiFailure> {
    match bounded(limit, api.get(name)).await {
        Ok(found) => Ok(Some(found)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}
