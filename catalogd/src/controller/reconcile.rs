//! The ClusterCatalog reconcile, in five stages with IO only at the ends:
//!
//! | stage | what | IO |
//! |---|---|---|
//! | read | the catalog (from the watch cache), the digest this replica serves, when it last resolved the reference | local disk |
//! | plan | [`plan::plan`]: remove, unpack or nothing ([`Plan`]) | none |
//! | execute | leader prerequisites (name label, finalizer), then pull and store, or remove local content ([`Executed`]) | API server (leader), registry, disk |
//! | outcome | [`outcome`]: the status to publish and whether the finalizer goes | none |
//! | status | at most one status write (only when it changed), then the finalizer removal | API server (leader) |
//!
//! Leadership is a [`Publisher`]: the replica holding the Lease has one and writes status, labels
//! and finalizers; the others have none and only unpack and serve. A failed pull or store is
//! written into `Progressing` and then returned, so the error policy backs off (retryable) or
//! waits for a change (terminal).
//!
//! Input: a ClusterCatalog from the watch cache. Output: an [`Action`] or a [`ReconcileError`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use olm_api::condition_error::ConditionError;
use olm_api::v1::{
    ClusterCatalog, ClusterCatalogStatus, DELETE_SERVER_CACHE_FINALIZER, METADATA_NAME_LABEL,
};
use olm_image::{ExtractFilter, Puller};
use olm_runtime::backoff::Backoff;
use olm_runtime::status::StatusWriter;
use serde_json::json;
use tokio::sync::watch;

use super::error::{CleanupError, PublishError, SourceError, StoreError};
use super::plan::{self, Local, Plan};
use super::replicas::Presence;
use crate::ingest::{ingest_dir, ingest_pack};
use crate::metrics::Metrics;
use crate::storage::Storage;

pub use super::error::ReconcileError;

/// Retryable failures back off from 1 s, doubling, to at most 5 minutes (with jitter).
const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
const BACKOFF_CAP: Duration = Duration::from_secs(300);

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
    backoff: Backoff,
    /// This replica's Lease among its peers (`--leader-elect` only): the leader reports content
    /// as served once every live replica serves it.
    pub replicas: Option<Arc<Presence>>,
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
            backoff: Backoff::new(BACKOFF_INITIAL, BACKOFF_CAP),
            replicas: None,
        }
    }

    /// With replica presence (see [`super::replicas`]).
    pub fn with_replicas(mut self, presence: Arc<Presence>) -> Context {
        self.replicas = Some(presence);
        self
    }

    /// The replicas that do not serve `digest` for `catalog` yet (none without presence).
    async fn replicas_missing(&self, catalog: &str, digest: &str) -> Vec<String> {
        match &self.replicas {
            Some(presence) => presence.missing(catalog, digest).await,
            None => Vec::new(),
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

    /// The leader's writer; `None` on a replica that does not lead.
    fn publisher(&self) -> Option<Publisher> {
        (*self.leader.borrow()).then(|| Publisher::new(self.client.clone()))
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
        self.backoff.reset(name);
    }

    fn update_served_gauge(&self) {
        if let Ok(names) = self.storage.catalogs() {
            self.metrics.set_catalogs_served(names.len());
        }
    }
}

/// Reconciles one ClusterCatalog.
pub async fn reconcile(
    catalog: Arc<ClusterCatalog>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    // Upstream's controllers log these two lines for every reconcile, naming the object; tools
    // (upstream's acceptance suite among them) wait for "reconcile ending" in the leader's log.
    tracing::info!(ClusterCatalog = %catalog.name_any(), "reconcile starting");
    let result = reconcile_catalog(&catalog, &ctx).await;
    tracing::info!(ClusterCatalog = %catalog.name_any(), "reconcile ending");
    let outcome = match &result {
        Ok(_) => "success",
        Err(e) if e.is_terminal() => "terminal",
        Err(_) => "error",
    };
    ctx.metrics.count_reconcile(outcome);
    if result.is_ok() {
        ctx.backoff.reset(&catalog.name_any());
    }
    result
}

/// After a failure: terminal errors wait for a change of the catalog; others retry with
/// per-catalog capped exponential backoff (1 s doubling to 5 minutes, with jitter). A write that
/// lost a race with another change (the watch cache was behind) is routine: logged at debug.
pub fn error_policy(
    catalog: Arc<ClusterCatalog>,
    error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    let name = catalog.name_any();
    if error.is_conflict() {
        tracing::debug!(catalog = %name, error = %error, "catalog changed while reconciling; retrying with the new version");
    } else {
        tracing::warn!(catalog = %name, error = %error, "reconcile failed");
    }
    if error.is_terminal() {
        return Action::await_change();
    }
    Action::requeue(ctx.backoff.failed(&name))
}

async fn reconcile_catalog(
    catalog: &ClusterCatalog,
    ctx: &Context,
) -> Result<Action, ReconcileError> {
    // Read.
    let name = catalog.name_any();
    let served = ctx
        .storage
        .get(&name)
        .map_err(|source| CleanupError::Storage {
            name: name.clone(),
            source,
        })?
        .map(|s| s.digest().to_string());
    let publisher = ctx.publisher();
    // A follower that sees the leader waiting for every replica pulls what the leader serves.
    let leader_waiting = publisher.is_none()
        && catalog.status.as_ref().is_some_and(plan::is_waiting)
        && ctx.replicas.is_some();
    let leader_target = match (&ctx.replicas, leader_waiting) {
        (Some(presence), true) => presence.leader_serves(&name).await.unwrap_or_else(|e| {
            tracing::debug!(catalog = %name, error = %e, "cannot read the leader's replica Lease; trying again");
            None
        }),
        _ => None,
    };
    let local = Local {
        served_digest_ref: served,
        last_poll: ctx.last_poll(&name),
        leader_target,
    };

    // Plan.
    let plan = plan::plan(
        catalog,
        &local,
        SystemTime::now(),
        publisher.is_some(),
        ctx.poll_unit,
    );

    // Execute.
    let current = match &publisher {
        Some(p) => p.prepare(catalog, &plan).await?,
        None => catalog.clone(),
    };
    let executed = execute(&plan, catalog, ctx).await?;
    if matches!(executed, Executed::Stored { .. } | Executed::Removed { .. })
        && let Some(presence) = &ctx.replicas
    {
        presence.content_changed();
    }

    // Outcome, then status. Content is reported as served once every live replica serves it.
    let mut waiting = false;
    if let Some(publisher) = &publisher {
        let base_url = plan::base_url(&ctx.external_address, ctx.tls, &name);
        let mut outcome = outcome(catalog, &executed, &base_url, now_time());
        let previous = catalog.status.clone().unwrap_or_default();
        match &executed {
            Executed::Stored {
                digest_ref,
                unpacked_at,
            } => {
                let missing = ctx.replicas_missing(&name, digest_ref).await;
                if !missing.is_empty() {
                    waiting = true;
                    outcome.status = Some(plan::waiting_status(
                        &previous,
                        catalog.metadata.generation,
                        digest_ref,
                        &base_url,
                        *unpacked_at,
                        &missing,
                        now_time(),
                    ));
                }
            }
            Executed::UpToDate if plan::is_waiting(&previous) => {
                if let Some(digest_ref) = local.served_digest_ref.as_deref() {
                    let missing = ctx.replicas_missing(&name, digest_ref).await;
                    waiting = !missing.is_empty();
                    if !waiting {
                        // The waiting status kept the previous lastUnpacked: this content's
                        // time is its store time here.
                        let unpacked_at = ctx
                            .storage
                            .get(&name)
                            .ok()
                            .flatten()
                            .map(|stored| stored.modified())
                            .unwrap_or_else(SystemTime::now);
                        outcome.status = Some(plan::serving_status(
                            &previous,
                            catalog.metadata.generation,
                            digest_ref,
                            &base_url,
                            unpacked_at,
                            now_time(),
                        ));
                    }
                }
            }
            _ => {}
        }
        publisher.publish(&current, &outcome).await?;
    }
    if waiting || (leader_waiting && !matches!(executed, Executed::Failed(_))) {
        // Followers renew their Leases every few seconds, and the leader renews its own at once
        // when it stores new content (perhaps after its status said it waits): look again soon.
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    match executed {
        Executed::Removed { .. } => Ok(Action::await_change()),
        Executed::Failed(error) => Err(error),
        Executed::Stored { .. } | Executed::UpToDate => {
            Ok(requeue_after_poll(catalog, ctx, publisher.is_some()))
        }
    }
}

/// What executing a [`Plan`] did to this replica's content.
#[derive(Debug)]
pub enum Executed {
    /// Local content removed (the catalog is being deleted, or made unavailable).
    Removed { unavailable: bool },
    /// Content of `digest_ref` stored (or already stored), unpacked at `unpacked_at`.
    Stored {
        digest_ref: String,
        unpacked_at: SystemTime,
    },
    /// Nothing needed fetching.
    UpToDate,
    /// The pull or the store failed; the error is reported in status, then returned.
    Failed(ReconcileError),
}

/// Pulls and stores, or removes, this replica's content. Errors that cannot be reported in status
/// (local content that cannot be removed) end the reconcile here.
async fn execute(
    plan: &Plan,
    catalog: &ClusterCatalog,
    ctx: &Context,
) -> Result<Executed, ReconcileError> {
    let name = catalog.name_any();
    match plan {
        Plan::Remove { unavailable } => {
            remove_content(ctx, &name).await?;
            Ok(Executed::Removed {
                unavailable: *unavailable,
            })
        }
        Plan::Unpack { reference } => Ok(match unpack(ctx, &name, reference).await {
            Ok(stored) => stored,
            Err(error) => Executed::Failed(error),
        }),
        Plan::UpToDate => Ok(Executed::UpToDate),
    }
}

/// What the leader publishes after execution.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The status to write (when it differs from the one read); `None` leaves status alone.
    pub status: Option<ClusterCatalogStatus>,
    /// Whether the finalizer comes off after the status write.
    pub release_finalizer: bool,
}

/// The status and finalizer change an execution leads to. Pure.
///
/// | executed | status | finalizer |
/// |---|---|---|
/// | removed, `Unavailable` | Serving False/`UserSpecifiedUnavailable`, source and URLs cleared | removed |
/// | removed, being deleted | unchanged | removed |
/// | stored | Serving True/`Available`, Progressing True/`Succeeded`, resolved digest, URL | kept |
/// | up to date | unchanged | kept |
/// | failed | Progressing from the error's condition contract; Serving unchanged | kept |
pub fn outcome(
    catalog: &ClusterCatalog,
    executed: &Executed,
    base_url: &str,
    now: Time,
) -> Outcome {
    let previous = catalog.status.clone().unwrap_or_default();
    let generation = catalog.metadata.generation;
    let (status, release_finalizer) = match executed {
        Executed::Removed { unavailable: true } => (
            Some(plan::unavailable_status(&previous, generation, now)),
            true,
        ),
        Executed::Removed { unavailable: false } => (None, true),
        Executed::Stored {
            digest_ref,
            unpacked_at,
        } => (
            Some(plan::serving_status(
                &previous,
                generation,
                digest_ref,
                base_url,
                *unpacked_at,
                now,
            )),
            false,
        ),
        Executed::UpToDate => (None, false),
        Executed::Failed(error) => (
            Some(plan::failure_status(&previous, generation, error, now)),
            false,
        ),
    };
    Outcome {
        status,
        release_finalizer,
    }
}

fn requeue_after_poll(catalog: &ClusterCatalog, ctx: &Context, leading: bool) -> Action {
    if !leading {
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

/// Pulls `reference` and stores its content as the catalog's.
async fn unpack(ctx: &Context, name: &str, reference: &str) -> Result<Executed, ReconcileError> {
    let started = Instant::now();
    let unpacked = ctx
        .puller()
        .pull(name, reference, ExtractFilter::CatalogPack)
        .await
        .map_err(SourceError)?;
    ctx.record_poll(name, SystemTime::now());

    let stored = {
        let (storage, name, digest_ref, dir, pack) = (
            ctx.storage.clone(),
            name.to_string(),
            unpacked.digest_ref.clone(),
            unpacked.content_dir.clone(),
            unpacked.pack.clone(),
        );
        tokio::task::spawn_blocking(move || match &pack {
            Some(pack) => ingest_pack(&storage, &name, &digest_ref, &dir, pack),
            None => ingest_dir(&storage, &name, &digest_ref, &dir),
        })
        .await
        .map_err(StoreError::Task)?
        .map_err(StoreError::Ingest)?
    };
    if unpacked.fresh {
        ctx.metrics
            .observe_unpack(name, started.elapsed().as_secs_f64(), stored.len());
    }
    ctx.update_served_gauge();
    Ok(Executed::Stored {
        digest_ref: unpacked.digest_ref,
        unpacked_at: unpacked.unpacked_at,
    })
}

async fn remove_content(ctx: &Context, name: &str) -> Result<(), CleanupError> {
    ctx.storage
        .delete(name)
        .map_err(|source| CleanupError::Storage {
            name: name.to_string(),
            source,
        })?;
    ctx.puller()
        .delete_owner(name)
        .await
        .map_err(|source| CleanupError::ImageCache {
            name: name.to_string(),
            source,
        })?;
    ctx.forget(name);
    ctx.metrics.forget_catalog(name);
    ctx.update_served_gauge();
    Ok(())
}

fn now_time() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// The leader's writes to ClusterCatalogs. Holding one is what leading means to a reconcile.
pub struct Publisher {
    api: Api<ClusterCatalog>,
    status: StatusWriter<ClusterCatalog>,
}

impl Publisher {
    fn new(client: kube::Client) -> Publisher {
        let api: Api<ClusterCatalog> = Api::all(client);
        Publisher {
            status: StatusWriter::new(api.clone()),
            api,
        }
    }

    /// Before any content work: the name label on every live catalog, and the finalizer unless
    /// the plan removes the content. Returns the object as last written (its resourceVersion
    /// guards the writes that follow).
    async fn prepare(
        &self,
        catalog: &ClusterCatalog,
        plan: &Plan,
    ) -> Result<ClusterCatalog, PublishError> {
        let mut current = catalog.clone();
        if catalog.metadata.deletion_timestamp.is_none() {
            current = self.ensure_name_label(current).await?;
        }
        if !matches!(plan, Plan::Remove { .. })
            && let Some(updated) =
                olm_runtime::finalizer::add(&self.api, &current, DELETE_SERVER_CACHE_FINALIZER)
                    .await
                    .map_err(|source| self.metadata_error(&current, source))?
        {
            current = updated;
        }
        Ok(current)
    }

    /// The one status write of a reconcile (when the status changed), then the finalizer removal.
    async fn publish(
        &self,
        current: &ClusterCatalog,
        outcome: &Outcome,
    ) -> Result<(), PublishError> {
        if let Some(status) = &outcome.status {
            self.status
                .write(current, current.status.as_ref(), status)
                .await?;
        }
        if outcome.release_finalizer {
            olm_runtime::finalizer::remove(&self.api, current, DELETE_SERVER_CACHE_FINALIZER)
                .await
                .map_err(|source| self.metadata_error(current, source))?;
        }
        Ok(())
    }

    /// Keeps `olm.operatorframework.io/metadata.name` equal to the object's name, so label
    /// selectors can pick catalogs by name (upstream does this in a mutating webhook).
    async fn ensure_name_label(
        &self,
        catalog: ClusterCatalog,
    ) -> Result<ClusterCatalog, PublishError> {
        let name = catalog.name_any();
        if catalog.labels().get(METADATA_NAME_LABEL) == Some(&name) {
            return Ok(catalog);
        }
        let patch = json!({"metadata": {"labels": {METADATA_NAME_LABEL: name}}});
        self.api
            .patch(
                &name,
                &olm_runtime::client::patch_params(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|source| self.metadata_error(&catalog, source))
    }

    fn metadata_error(&self, catalog: &ClusterCatalog, source: kube::Error) -> PublishError {
        PublishError::Metadata {
            name: catalog.meta().name.clone().unwrap_or_default(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_api::v1::{
        AvailabilityMode, CatalogSource, ClusterCatalogSpec, ConditionReason, ConditionType,
        ImageSource, SourceType, find_condition,
    };

    fn catalog() -> ClusterCatalog {
        let mut c = ClusterCatalog::new(
            "cat",
            ClusterCatalogSpec {
                source: CatalogSource {
                    type_: SourceType::Image,
                    image: Some(ImageSource {
                        ref_: "reg.io/cat:v1".into(),
                        poll_interval_minutes: None,
                    }),
                },
                priority: 0,
                availability_mode: AvailabilityMode::Available,
            },
        );
        c.metadata.generation = Some(3);
        c
    }

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).expect("ts"))
    }

    #[test]
    fn a_stored_image_is_published_as_serving_and_keeps_the_finalizer() {
        let executed = Executed::Stored {
            digest_ref: "reg.io/cat@sha256:1".into(),
            unpacked_at: SystemTime::UNIX_EPOCH,
        };
        let o = outcome(&catalog(), &executed, "https://x/catalogs/cat", at(5));
        let status = o.status.expect("a status");
        let serving = find_condition(&status.conditions, ConditionType::Serving).expect("serving");
        assert_eq!(serving.reason, ConditionReason::Available.as_str());
        assert_eq!(serving.observed_generation, Some(3));
        assert!(!o.release_finalizer);
    }

    #[test]
    fn removal_releases_the_finalizer_and_only_unavailable_writes_status() {
        let deleted = outcome(
            &catalog(),
            &Executed::Removed { unavailable: false },
            "u",
            at(5),
        );
        assert_eq!(
            deleted,
            Outcome {
                status: None,
                release_finalizer: true
            }
        );
        let off = outcome(
            &catalog(),
            &Executed::Removed { unavailable: true },
            "u",
            at(5),
        );
        assert!(off.release_finalizer);
        let status = off.status.expect("a status");
        let serving = find_condition(&status.conditions, ConditionType::Serving).expect("serving");
        assert_eq!(
            serving.reason,
            ConditionReason::UserSpecifiedUnavailable.as_str()
        );
    }

    #[test]
    fn a_failed_pull_is_published_in_progressing_from_the_error() {
        let error = ReconcileError::from(SourceError(olm_image::ImageError {
            reference: "reg.io/cat@sha256:1".into(),
            digest_pinned: true,
            kind: olm_image::ImageErrorKind::MissingCatalogLabel,
        }));
        let o = outcome(&catalog(), &Executed::Failed(error), "u", at(5));
        let status = o.status.expect("a status");
        let p =
            find_condition(&status.conditions, ConditionType::Progressing).expect("progressing");
        assert_eq!((p.status.as_str(), p.reason.as_str()), ("False", "Blocked"));
        assert!(
            p.message.starts_with("source catalog content: "),
            "{}",
            p.message
        );
        assert!(find_condition(&status.conditions, ConditionType::Serving).is_none());
        assert!(!o.release_finalizer);
    }

    #[test]
    fn nothing_to_fetch_publishes_nothing() {
        assert_eq!(
            outcome(&catalog(), &Executed::UpToDate, "u", at(5)),
            Outcome {
                status: None,
                release_finalizer: false
            }
        );
    }
}
