//! The ClusterCatalog reconcile: reads the catalog and local state, runs [`plan`](super::plan),
//! then pulls, stores, deletes and (when leading) writes status, labels and the finalizer.
//!
//! Input: a ClusterCatalog from the watch cache. Output: an [`Action`]. Network: the Kubernetes
//! API (status and metadata writes, leader only) and image registries (through the puller).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use olm_api::v1::{
    ClusterCatalog, ClusterCatalogStatus, DELETE_SERVER_CACHE_FINALIZER, METADATA_NAME_LABEL,
};
use olm_image::{ExtractFilter, ImageErrorKind, Puller};
use serde_json::json;
use tokio::sync::watch;

use super::plan::{self, Local, Plan};
use crate::ingest::ingest_dir;
use crate::metrics::Metrics;
use crate::storage::Storage;

/// Everything a reconcile needs; shared by all reconciles.
pub struct Context {
    pub client: kube::Client,
    pub storage: Storage,
    /// Replaced when the global pull secret changes.
    pub puller: RwLock<Arc<Puller>>,
    pub leader: watch::Receiver<bool>,
    /// Host (and port) clients reach the catalog server at, e.g. `catalogd-service.olmv1-system.svc`.
    pub external_address: String,
    pub tls: bool,
    /// Length of one "minute" of `pollIntervalMinutes` (a minute, except in tests).
    pub poll_unit: Duration,
    pub metrics: Metrics,
    last_poll: Mutex<HashMap<String, SystemTime>>,
    failures: Mutex<HashMap<String, u32>>,
}

impl Context {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: kube::Client,
        storage: Storage,
        puller: Arc<Puller>,
        leader: watch::Receiver<bool>,
        external_address: String,
        tls: bool,
        poll_unit: Duration,
        metrics: Metrics,
    ) -> Context {
        Context {
            client,
            storage,
            puller: RwLock::new(puller),
            leader,
            external_address,
            tls,
            poll_unit,
            metrics,
            last_poll: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
        }
    }

    pub fn puller(&self) -> Arc<Puller> {
        self.puller
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn set_puller(&self, puller: Arc<Puller>) {
        *self.puller.write().unwrap_or_else(|p| p.into_inner()) = puller;
    }

    fn last_poll(&self, name: &str) -> Option<SystemTime> {
        self.last_poll
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .copied()
    }

    fn record_poll(&self, name: &str, at: SystemTime) {
        self.last_poll
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), at);
    }

    fn forget(&self, name: &str) {
        self.last_poll
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
    }

    fn note_failure(&self, name: &str) -> u32 {
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = f.entry(name.to_string()).or_default();
        *n = n.saturating_add(1);
        *n
    }

    fn note_success(&self, name: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
    }

    fn update_served_gauge(&self) {
        if let Ok(names) = self.storage.catalogs() {
            self.metrics.set_catalogs_served(names.len());
        }
    }
}

/// Why a reconcile failed; each knows whether retrying can help.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{message}")]
    Unpack { message: String, terminal: bool },
    #[error("failed to update ClusterCatalog {name}: {source}")]
    Kube {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to remove content of catalog {name}: {message}")]
    Cleanup { name: String, message: String },
}

impl ReconcileError {
    fn is_terminal(&self) -> bool {
        matches!(self, ReconcileError::Unpack { terminal: true, .. })
    }
}

/// Reconciles one ClusterCatalog.
pub async fn reconcile(
    catalog: Arc<ClusterCatalog>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let result = reconcile_inner(&catalog, &ctx).await;
    let outcome = match &result {
        Ok(_) => "success",
        Err(e) if e.is_terminal() => "terminal",
        Err(_) => "error",
    };
    ctx.metrics.count_reconcile(outcome);
    if result.is_ok() {
        ctx.note_success(&catalog.name_any());
    }
    result
}

/// Backoff after failures: terminal errors wait for a spec change; others retry after
/// 1 s, 2 s, 4 s, … up to 5 minutes.
pub fn error_policy(
    catalog: Arc<ClusterCatalog>,
    error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    let name = catalog.name_any();
    tracing::warn!(catalog = %name, error = %error, "reconcile failed");
    if error.is_terminal() {
        return Action::await_change();
    }
    let failures = ctx.note_failure(&name);
    Action::requeue(backoff(failures))
}

/// Exponential backoff with a cap; `failures` counts from 1.
pub fn backoff(failures: u32) -> Duration {
    const CAP: Duration = Duration::from_secs(300);
    let exp = failures.saturating_sub(1).min(16);
    Duration::from_secs(1u64 << exp).min(CAP)
}

async fn reconcile_inner(
    catalog: &ClusterCatalog,
    ctx: &Context,
) -> Result<Action, ReconcileError> {
    let name = catalog.name_any();
    let leader = *ctx.leader.borrow();
    let now = SystemTime::now();
    let served = ctx
        .storage
        .get(&name)
        .map_err(|e| ReconcileError::Cleanup {
            name: name.clone(),
            message: e.to_string(),
        })?
        .map(|s| s.digest().to_string());
    let local = Local {
        served_digest_ref: served,
        last_poll: ctx.last_poll(&name),
    };
    let api: Api<ClusterCatalog> = Api::all(ctx.client.clone());

    if leader && catalog.metadata.deletion_timestamp.is_none() {
        ensure_name_label(&api, catalog).await?;
    }

    match plan::plan(catalog, &local, now, leader, ctx.poll_unit) {
        Plan::Remove { unavailable } => {
            remove_content(ctx, &name).await?;
            if leader {
                if unavailable {
                    let previous = catalog.status.clone().unwrap_or_default();
                    let status = plan::unavailable_status(
                        &previous,
                        catalog.metadata.generation,
                        now_time(),
                    );
                    write_status(&api, catalog, &previous, status).await?;
                }
                remove_finalizer(&api, catalog).await?;
            }
            Ok(Action::await_change())
        }
        Plan::Unpack { reference } => {
            if leader {
                add_finalizer(&api, catalog).await?;
            }
            unpack(catalog, ctx, &api, &reference, leader).await?;
            Ok(requeue_after_poll(catalog, ctx, leader))
        }
        Plan::UpToDate => {
            if leader {
                add_finalizer(&api, catalog).await?;
            }
            Ok(requeue_after_poll(catalog, ctx, leader))
        }
    }
}

fn requeue_after_poll(catalog: &ClusterCatalog, ctx: &Context, leader: bool) -> Action {
    if !leader {
        // Followers act on the leader's status updates, which arrive through the watch.
        return Action::await_change();
    }
    let name = catalog.name_any();
    match plan::next_poll_in(
        catalog,
        ctx.last_poll(&name),
        SystemTime::now(),
        ctx.poll_unit,
        rand::random::<f64>(),
    ) {
        Some(after) => Action::requeue(after.max(Duration::from_millis(100))),
        None => Action::await_change(),
    }
}

async fn unpack(
    catalog: &ClusterCatalog,
    ctx: &Context,
    api: &Api<ClusterCatalog>,
    reference: &str,
    leader: bool,
) -> Result<(), ReconcileError> {
    let name = catalog.name_any();
    let previous = catalog.status.clone().unwrap_or_default();
    let generation = catalog.metadata.generation;
    let started = Instant::now();
    let puller = ctx.puller();
    let unpacked = match puller
        .pull(&name, reference, ExtractFilter::CatalogConfigs)
        .await
    {
        Ok(u) => u,
        Err(e) => {
            // Upstream reports a missing label in its own words; other failures name the image.
            let detail = match e.kind {
                ImageErrorKind::MissingCatalogLabel => e.kind.to_string(),
                _ => e.sanitize(),
            };
            let message = format!("source catalog content: {detail}");
            return fail(api, catalog, &previous, leader, message, e.is_terminal()).await;
        }
    };
    ctx.record_poll(&name, SystemTime::now());

    let stored = {
        let (storage, name, digest_ref, dir) = (
            ctx.storage.clone(),
            name.clone(),
            unpacked.digest_ref.clone(),
            unpacked.content_dir.clone(),
        );
        tokio::task::spawn_blocking(move || ingest_dir(&storage, &name, &digest_ref, &dir)).await
    };
    let stored = match stored {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return fail(
                api,
                catalog,
                &previous,
                leader,
                format!("error storing fbc: {e}"),
                false,
            )
            .await;
        }
        Err(e) => {
            return fail(
                api,
                catalog,
                &previous,
                leader,
                format!("error storing fbc: {e}"),
                false,
            )
            .await;
        }
    };
    if unpacked.fresh {
        ctx.metrics
            .observe_unpack(&name, started.elapsed().as_secs_f64(), stored.len());
    }
    ctx.update_served_gauge();
    if leader {
        let base = plan::base_url(&ctx.external_address, ctx.tls, &name);
        let status = plan::serving_status(
            &previous,
            generation,
            &unpacked.digest_ref,
            &base,
            unpacked.unpacked_at,
            now_time(),
        );
        write_status(api, catalog, &previous, status).await?;
    }
    Ok(())
}

/// Reports a failed unpack in status (leader) and returns the error for the backoff.
async fn fail(
    api: &Api<ClusterCatalog>,
    catalog: &ClusterCatalog,
    previous: &ClusterCatalogStatus,
    leader: bool,
    message: String,
    terminal: bool,
) -> Result<(), ReconcileError> {
    if leader {
        let status = plan::error_status(
            previous,
            catalog.metadata.generation,
            &message,
            terminal,
            now_time(),
        );
        write_status(api, catalog, previous, status).await?;
    }
    Err(ReconcileError::Unpack { message, terminal })
}

async fn remove_content(ctx: &Context, name: &str) -> Result<(), ReconcileError> {
    ctx.storage
        .delete(name)
        .map_err(|e| ReconcileError::Cleanup {
            name: name.to_string(),
            message: e.to_string(),
        })?;
    ctx.puller()
        .delete_owner(name)
        .await
        .map_err(|e| ReconcileError::Cleanup {
            name: name.to_string(),
            message: e.to_string(),
        })?;
    ctx.forget(name);
    ctx.metrics.forget_catalog(name);
    ctx.update_served_gauge();
    Ok(())
}

fn now_time() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// Writes `status` when it differs from `previous`, guarded by the object's resourceVersion.
async fn write_status(
    api: &Api<ClusterCatalog>,
    catalog: &ClusterCatalog,
    previous: &ClusterCatalogStatus,
    status: ClusterCatalogStatus,
) -> Result<(), ReconcileError> {
    if &status == previous {
        return Ok(());
    }
    let mut updated = catalog.clone();
    updated.status = Some(status);
    updated.metadata.managed_fields = None;
    api.replace_status(&catalog.name_any(), &PostParams::default(), &updated)
        .await
        .map(drop)
        .map_err(|source| ReconcileError::Kube {
            name: catalog.name_any(),
            source,
        })
}

/// Keeps `olm.operatorframework.io/metadata.name` equal to the object's name, so label selectors
/// can pick catalogs by name (upstream does this in a mutating webhook).
async fn ensure_name_label(
    api: &Api<ClusterCatalog>,
    catalog: &ClusterCatalog,
) -> Result<(), ReconcileError> {
    let name = catalog.name_any();
    if catalog.labels().get(METADATA_NAME_LABEL) == Some(&name) {
        return Ok(());
    }
    let patch = json!({"metadata": {"labels": {METADATA_NAME_LABEL: name}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(|source| ReconcileError::Kube { name, source })
}

async fn add_finalizer(
    api: &Api<ClusterCatalog>,
    catalog: &ClusterCatalog,
) -> Result<(), ReconcileError> {
    if plan::has_finalizer(catalog) {
        return Ok(());
    }
    let rv = catalog.meta().resource_version.clone();
    let patch = match catalog.metadata.finalizers.as_ref() {
        Some(f) if !f.is_empty() => json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "add", "path": "/metadata/finalizers/-", "value": DELETE_SERVER_CACHE_FINALIZER}
        ]),
        _ => json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "add", "path": "/metadata/finalizers", "value": [DELETE_SERVER_CACHE_FINALIZER]}
        ]),
    };
    json_patch(api, catalog, patch).await
}

async fn remove_finalizer(
    api: &Api<ClusterCatalog>,
    catalog: &ClusterCatalog,
) -> Result<(), ReconcileError> {
    let Some(index) = catalog
        .metadata
        .finalizers
        .as_ref()
        .and_then(|f| f.iter().position(|x| x == DELETE_SERVER_CACHE_FINALIZER))
    else {
        return Ok(());
    };
    let patch = json!([
        {"op": "test", "path": format!("/metadata/finalizers/{index}"), "value": DELETE_SERVER_CACHE_FINALIZER},
        {"op": "remove", "path": format!("/metadata/finalizers/{index}")}
    ]);
    json_patch(api, catalog, patch).await
}

async fn json_patch(
    api: &Api<ClusterCatalog>,
    catalog: &ClusterCatalog,
    patch: serde_json::Value,
) -> Result<(), ReconcileError> {
    let name = catalog.name_any();
    let patch: json_patch::Patch =
        serde_json::from_value(patch).map_err(|e| ReconcileError::Kube {
            name: name.clone(),
            source: kube::Error::SerdeError(e),
        })?;
    match api
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        Ok(_) => Ok(()),
        // Gone already (the last finalizer was ours): nothing left to do.
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(source) => Err(ReconcileError::Kube { name, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(5), Duration::from_secs(16));
        assert_eq!(backoff(20), Duration::from_secs(300));
        assert_eq!(backoff(u32::MAX), Duration::from_secs(300));
    }
}
