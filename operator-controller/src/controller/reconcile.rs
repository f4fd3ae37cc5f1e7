//! One ClusterExtension reconcile: the pipeline, then one status write.
//!
//! Input: a ClusterExtension from the watch cache and the shared [`Context`]. Output: an
//! [`Action`] (when to look again) or a [`ReconcileError`] for the error policy. Network: the
//! Kubernetes API, catalogd, image registries.
//!
//! | step | what | on failure |
//! |---|---|---|
//! | leadership | only the leader reconciles (every write is the leader's) | – |
//! | deletion | uninstall: the release's objects in reverse order, the release Secrets, the bundle cache, then the finalizers | retried; nothing else happens |
//! | finalizers | upstream's two names ([`super::FINALIZERS`]) | retried |
//! | validate | `spec.source.catalog` is set | terminal `InvalidConfiguration` |
//! | installed state | release history from the Secrets; a record left `pending-*` by a stopped writer is marked `failed` | `Installed` Unknown, `Progressing` `retrying to get installed bundle` |
//! | catalogs | every ClusterCatalog ([`super::catalogs`]) | `Retrying` |
//! | resolve | the resolver over the package content of the selected catalogs | §3.6 fallback ([`fallback::on_resolution_failure`]): keep the installed release applied, or report `Retrying` |
//! | pull, parse, render | bundle image (cached by digest per extension), registry+v1 parse, upstream's renderer | wrapped `error for resolved bundle …`; configuration errors terminal |
//! | release state | Helm's chart and manifest, compared with the last record; a new bundle identity with an identical manifest is an upgrade too | – |
//! | webhook certificates | built-in provider only: its Secrets beside the release, the CA bundle into the objects to apply (not the manifest), the next rotation as a requeue ([`crate::webhook_certs`]) | `Retrying` (a foreign Secret: upstream's collision message) |
//! | approval | `spec.install.approval` ([`approval`]): `Manual` holds a bundle other than the installed one unless it is `approvedVersion` (before the preflight); `AutomaticUnlessEscalation` holds an upgrade whose dry run widens RBAC or whose preflight passes only with warnings (after it, with the apply's checks). A held bundle: the deployed release stays applied (as when nothing resolves), `status.pendingApproval` and `Approved` False/`AwaitingApproval` with the preview engine's summary ([`super::pending`]) | – |
//! | preflight | CRD upgrade safety, only when installing or upgrading | `Retrying` with the composed message; the old release stays installed |
//! | rollback (`spec.install.rollback` `OnFailure` only, [`rollback_step`]) | right after the installed state: an upgrade on probation whose Deployments are not Available by the deadline returns to the release it replaced when that is safe for stored data; after a resolution that is the rolled-back bundle again at the same generation, it is not retried; after an upgrade's apply fails part-way, the same return | refused: the upgrade stays, `Progressing` says why |
//! | apply | record `pending-*` → apply → record `deployed` (previous `superseded`); unchanged: apply again (drift repair) | record `failed`; `Retrying` |
//! | availability | `Available` from the Deployments applied | – |
//! | OpenShift mode only: `ClusterUpgradeable` | the deployed release's `olm.maxOpenShiftVersion` at the cached cluster version; when it blocks, the versions in the extension's catalogs that would lift the block ([`cluster_upgradeable`]) | release unreadable: the condition is left as it was; catalogs unreadable: the message says so |
//! | status | [`next_status`] (plus `ClusterUpgradeable`), written only when it changed | the error is logged; retried |
//!
//! The status decisions are `olm_operator_core::status` and `olm_operator_core::gating`; the
//! pipeline only collects what it found into a [`Findings`]. The `ClusterUpgradeable` condition
//! is put into the computed status before the one status write, in [`reconcile_extension`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, Patch};
use kube::runtime::controller::Action;
use kube::runtime::reflector::Store;
use olm_api::condition_error::ConditionError;
use olm_api::v1::{
    ApprovalMode, BundleMetadata, CatalogFilter, ClusterCatalog, ClusterExtension, ConditionReason,
    ConditionStatus, ConditionType, PendingApproval, find_condition,
};
use olm_api::version::release::VersionRelease;
use olm_image::Puller;
use olm_operator_core::apply_plan::{Availability, Identity, ObjectRef, Owner};
use olm_operator_core::bundle;
use olm_operator_core::gating::{
    ClusterMinor, ExtensionMetadata, InstalledExtension, Lifting, OutsideLift, Verdict,
    check_extension, extension_condition, lifting_versions_fetched, outside_lifting,
    put_extension_condition,
};
use olm_operator_core::preview::report::Report;
use olm_operator_core::release::history;
use olm_operator_core::release::manifest::manifest_objects;
use olm_operator_core::release::plan::{self as release_plan, RecordChange, ReleaseAction};
use olm_operator_core::release::render::{ChartObject, PostRenderContext, render_release};
use olm_operator_core::release::secrets::cluster_extension_owner_reference;
use olm_operator_core::release::{Release, Status as ReleaseStatus};
use olm_operator_core::render::{self, CertProvider, RenderOptions};
use olm_operator_core::resolve::explain::{Contents, ReasonCode, explain};
use olm_operator_core::resolve::updates::{AvailableUpdate, available_updates};
use olm_operator_core::resolve::{
    CatalogSelector, ConditionValue, InstalledBundle, Resolution, Resolver, deprecation_conditions,
};
use olm_operator_core::status::approval;
use olm_operator_core::status::fallback::{self, CatalogsMatching, Fallback};
use olm_operator_core::status::{
    Available, Installed, Outcome, Progress, RETRYING_INSTALLED_STATE, next_status,
};
use olm_runtime::backoff::Backoff;
use olm_runtime::status::StatusWriter;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::availability::{DeployedDeployments, DeploymentWatch, deployments_of};
use super::catalogs::{self, catalog_info};
use super::error::{
    BundleFailure, BundleStepError, CatalogListError, InstalledStateError, PublishError,
    UninstallError, ValidationError,
};
use super::last_apply::{self, LastApplies};
use super::metrics::{ExtensionState, Metrics};
use super::pending::{compare_objects, crd_checks};
use super::preflight::{PreflightRequest, crd_upgrade_safety};
use super::status_writes::{InFlight, OwnWrites};
use crate::apply::{Applier, ApplyRequest, CheckedReads, DriftWatches, UninstallRequest};
use crate::bundle_source::{ReadLimits, pull_bundle};
use crate::catalog_source::http::CatalogdClient;
use crate::gating::ClusterVersionCache;
use crate::storage::{ReleaseStore, Written, scopes::discover_scopes};
use crate::webhook_certs::BuiltinCerts;

pub use super::error::ReconcileError;

mod apply_step;
mod approval_step;
mod bundle_step;
mod cluster_upgradeable;
mod installed_state;
mod retry;
mod rollback_step;
mod support;
mod uninstall;
mod updates_step;

use apply_step::{after_apply, apply_unless_unchanged, builtin_certificates, maintain};
use support::{add_finalizers, installed_finding, now, now_secs, render_inputs, uid};
pub(crate) use support::{catalogs_matching, identity, release_refs};

use approval_step::{hold, installed_message, pending_summary};
use updates_step::{resolve, updates_changed};

use bundle_step::pull_and_render;
pub(crate) use bundle_step::render_options;
pub use bundle_step::{bundle_manifests, chart_objects};
use cluster_upgradeable::cluster_upgradeable;
use installed_state::{available, record_changes, release_deployments};
use retry::{BACKOFF_CAP, BACKOFF_INITIAL, CONFLICT_BACKOFF_INITIAL, retry_after};
use uninstall::finalize;

/// Settings of the controller that do not change while it runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where release Secrets live (`olmv1-system`).
    pub system_namespace: String,
    pub cert_provider: CertProvider,
    /// Whether `cert_provider` was detected (not set by a flag), for the status note.
    pub cert_provider_detected: bool,
    /// Run the data-aware step of the CRD upgrade-safety preflight (issue 17).
    pub data_aware_crd_upgrade_safety: bool,
    /// Apply as `spec.serviceAccount` (`--honor-service-account`); otherwise the field is
    /// ignored, as upstream v1.11 ignores it.
    pub honor_service_account: bool,
    /// Bound of single API calls made by the reconcile itself.
    pub call_timeout: Duration,
    /// Upstream's SingleOwnNamespaceInstallSupport gate (on by default here).
    pub single_own_namespace: bool,
    /// Upstream's DeploymentConfig gate (on by default here).
    pub deployment_config: bool,
}

/// Everything a reconcile needs; shared by all reconciles.
pub struct Context {
    pub client: kube::Client,
    pub settings: Settings,
    pub store: ReleaseStore,
    pub applier: Applier,
    pub drift: DriftWatches,
    pub catalogd: Arc<CatalogdClient>,
    puller: RwLock<Arc<Puller>>,
    leader: watch::Receiver<bool>,
    pub metrics: Metrics,
    backoff: Backoff,
    /// Consecutive write conflicts per extension ([`CONFLICT_BACKOFF_INITIAL`]).
    conflicts: Backoff,
    /// OpenShift mode: the cluster version the gating loop read (`None`: not OpenShift).
    cluster_versions: Option<ClusterVersionCache>,
    /// The built-in webhook certificate provider (issue 12); also removes its Secrets on
    /// uninstall whatever the provider is now.
    builtin_certs: Option<BuiltinCerts>,
    /// The last apply per extension, for skipping applies that would change nothing.
    last_applies: LastApplies,
    /// The ClusterCatalog watch's cache (`None`: every reconcile lists them).
    catalog_cache: Option<Store<ClusterCatalog>>,
    /// The preflight's notes of the release each extension installed or upgraded to, by
    /// extension: `(release version, notes)`. Later reconciles of that release repeat them, so a
    /// warning stays in the status as long as the release it describes is installed (until a
    /// restart).
    preflight_notes: std::sync::Mutex<BTreeMap<String, (i64, Vec<String>)>>,
    /// The Deployments extensions own, for `Available` (`None`: read with a GET each time).
    deployment_watch: Option<DeploymentWatch>,
    /// The Deployments of each extension's deployed release.
    pub deployed: DeployedDeployments,
    /// Per extension, the rendering inputs ([`render_inputs`]) of its deployed release and that
    /// release's version: while both stay the same, the release's own record is what a
    /// reconcile applies, without pulling or rendering the bundle again.
    rendered: std::sync::Mutex<BTreeMap<String, (u64, i64)>>,
    /// Our status writes the extension informer may not have delivered yet.
    pub own_writes: OwnWrites,
    /// The reconciles running now, which the Deployment watch's publisher leaves changes to.
    pub in_flight: Arc<InFlight>,
}

impl Context {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: kube::Client,
        settings: Settings,
        applier: Applier,
        drift: DriftWatches,
        catalogd: Arc<CatalogdClient>,
        puller: Arc<Puller>,
        leader: watch::Receiver<bool>,
        metrics: Metrics,
    ) -> Context {
        let mut store = ReleaseStore::new(client.clone(), &settings.system_namespace);
        store.timeout = settings.call_timeout;
        Context {
            client,
            settings,
            store,
            applier,
            drift,
            catalogd,
            puller: RwLock::new(puller),
            leader,
            metrics,
            backoff: Backoff::new(BACKOFF_INITIAL, BACKOFF_CAP),
            conflicts: Backoff::new(CONFLICT_BACKOFF_INITIAL, BACKOFF_CAP),
            cluster_versions: None,
            builtin_certs: None,
            last_applies: LastApplies::default(),
            catalog_cache: None,
            preflight_notes: Default::default(),
            deployment_watch: None,
            deployed: DeployedDeployments::default(),
            rendered: Default::default(),
            own_writes: OwnWrites::default(),
            in_flight: InFlight::new(None),
        }
    }

    /// Changes of availability the publisher left to a running reconcile go back to it on
    /// `hand_back` when that reconcile ends ([`super::status_writes`]).
    pub fn with_publisher_input(mut self, hand_back: mpsc::Sender<String>) -> Context {
        self.in_flight = InFlight::new(Some(hand_back));
        self
    }

    /// Release histories answered from `cache` when its watch allows
    /// ([`crate::storage::IndexCache`]); without it, every read lists.
    pub fn with_release_index_cache(mut self, cache: crate::storage::IndexCache) -> Context {
        self.store = self.store.clone().with_index_cache(cache);
        self
    }

    /// The built-in webhook certificate provider.
    pub fn with_builtin_certs(mut self, certs: BuiltinCerts) -> Context {
        self.builtin_certs = Some(certs);
        self
    }

    /// Reads the Deployments' availability from the Deployment watch.
    pub fn with_deployment_watch(mut self, watch: DeploymentWatch) -> Context {
        self.deployment_watch = Some(watch);
        self
    }

    /// Reads ClusterCatalogs from the catalog watch's cache once it has listed them.
    pub fn with_catalog_cache(mut self, cache: Store<ClusterCatalog>) -> Context {
        self.catalog_cache = Some(cache);
        self
    }

    /// OpenShift mode: every status gets the extension's `ClusterUpgradeable` condition.
    pub fn with_cluster_versions(mut self, versions: Option<ClusterVersionCache>) -> Context {
        self.cluster_versions = versions;
        self
    }

    pub fn puller(&self) -> Arc<Puller> {
        self.puller
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the puller (the global pull secret changed).
    pub fn set_puller(&self, puller: Arc<Puller>) {
        *self.puller.write().unwrap_or_else(|p| p.into_inner()) = puller;
    }

    fn set_preflight_notes(&self, extension: &str, version: Option<(i64, Vec<String>)>) {
        let mut notes = self
            .preflight_notes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match version {
            Some(entry) if !entry.1.is_empty() => {
                notes.insert(extension.to_owned(), entry);
            }
            _ => {
                notes.remove(extension);
            }
        }
    }

    fn preflight_notes(&self, extension: &str, version: i64) -> Vec<String> {
        self.preflight_notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(extension)
            .filter(|(v, _)| *v == version)
            .map(|(_, notes)| notes.clone())
            .unwrap_or_default()
    }

    fn rendered_as(&self, extension: &str) -> Option<(u64, i64)> {
        self.rendered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(extension)
            .copied()
    }

    fn set_rendered(&self, extension: &str, entry: Option<(u64, i64)>) {
        let mut rendered = self.rendered.lock().unwrap_or_else(|p| p.into_inner());
        match entry {
            Some(entry) => rendered.insert(extension.to_owned(), entry),
            None => rendered.remove(extension),
        };
    }

    fn leading(&self) -> bool {
        *self.leader.borrow()
    }
}

/// Reconciles one ClusterExtension.
pub async fn reconcile(
    extension: Arc<ClusterExtension>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    if !ctx.leading() {
        // A change of leadership re-examines every extension.
        return Ok(Action::await_change());
    }
    if test_fault_panics_on(&extension.name_any()) {
        panic!(
            "test fault: reconcile of ClusterExtension \"{}\" panics ({PANIC_ON_EXTENSION_ENV})",
            extension.name_any()
        );
    }
    let started = Instant::now();
    // Upstream's controllers log these two lines for every reconcile, naming the object; tools
    // (upstream's acceptance suite among them) wait for "reconcile ending" in the leader's log.
    let name = extension.name_any();
    tracing::info!(ClusterExtension = %name, "reconcile starting");
    let _running = ctx.in_flight.enter(&name);
    let _ending = LogOnDrop(name);
    // Every write of a reconcile is the leader's: when this replica stops leading, the reconcile
    // in progress is dropped at its next await, so none of its later writes is sent.
    let mut leader = ctx.leader.clone();
    let result = tokio::select! {
        biased;
        _ = leader.wait_for(|leading| !*leading) => {
            tracing::warn!(extension = %extension.name_any(), "leadership lost; the reconcile in progress is abandoned");
            return Ok(Action::await_change());
        }
        result = reconcile_extension(&extension, &ctx) => result,
    };
    let label = match &result {
        Ok(_) => "success",
        Err(e) if e.is_terminal() => "terminal",
        Err(_) => "error",
    };
    ctx.metrics
        .observe_reconcile(label, started.elapsed().as_secs_f64());
    if result.is_ok() {
        ctx.backoff.reset(&extension.name_any());
        ctx.conflicts.reset(&extension.name_any());
    }
    result
}

/// Logs upstream's "reconcile ending" for the extension it names when the reconcile returns,
/// whichever way it returns.
struct LogOnDrop(String);

impl Drop for LogOnDrop {
    fn drop(&mut self) {
        tracing::info!(ClusterExtension = %self.0, "reconcile ending");
    }
}

/// Test-only fault hook: `OPERATOR_CONTROLLER_TEST_PANIC_ON_EXTENSION=<name>` makes the reconcile
/// of that extension panic, so that tests can prove a panicked controller ends the process.
pub const PANIC_ON_EXTENSION_ENV: &str = "OPERATOR_CONTROLLER_TEST_PANIC_ON_EXTENSION";

fn test_fault_panics_on(extension: &str) -> bool {
    static TARGET: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    TARGET
        .get_or_init(|| {
            std::env::var(PANIC_ON_EXTENSION_ENV)
                .ok()
                .filter(|v| !v.is_empty())
        })
        .as_deref()
        == Some(extension)
}

/// The controller's watch filter: [`olm_operator_core::fingerprint::reconcile_trigger`] with
/// this controller's own finalizers.
pub fn reconcile_trigger(extension: &ClusterExtension) -> Option<u64> {
    olm_operator_core::fingerprint::reconcile_trigger(extension, &super::FINALIZERS)
}

/// After a failure: terminal errors wait for a change of the extension; the others retry with
/// per-extension capped exponential backoff (1 s doubling to 5 minutes, with jitter), write
/// conflicts from 10 ms.
pub fn error_policy(
    extension: Arc<ClusterExtension>,
    error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    let name = extension.name_any();
    if error.is_conflict() {
        ctx.metrics.write_conflict();
        tracing::debug!(extension = %name, error = %error, "extension changed while reconciling; retrying with the new version");
    } else {
        tracing::info!(extension = %name, error = %error, "reconcile failed");
    }
    match retry_after(error, &name, &ctx.backoff, &ctx.conflicts) {
        Some(delay) => Action::requeue(delay),
        None => Action::await_change(),
    }
}

/// What the pipeline found, for the status.
struct Findings {
    installed: Installed,
    deprecation: Option<[ConditionValue; 4]>,
    /// The Deployments of the release deployed when the reconcile ends, for `Available`.
    deployed: Deployed,
    notes: Vec<String>,
    /// When the built-in provider's next certificate step is due.
    cert_recheck: Option<Duration>,
    /// `status.availableUpdates` from this reconcile's catalog content; `None` when it could
    /// not be computed (the previous value stays).
    available_updates: Option<Vec<olm_api::v1::AvailableUpdate>>,
    /// Upgrade approval ([`approval`]): `None` when this reconcile did not get to decide (the
    /// status keeps what it had).
    approval: Option<approval::Finding>,
    /// Guarded rollback ([`rollback_step`]): a rollback done, refused, or holding a failed
    /// bundle back. `Progressing` becomes True/`Retrying` with this message (after the error's,
    /// when there is one).
    rollback_note: Option<String>,
    /// When an upgrade on probation (or a refused rollback) is looked at again.
    rollback_recheck: Option<Duration>,
}

/// Which Deployments `Available` is about.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Deployed {
    /// The release history could not be read.
    Unknown,
    /// No release is deployed: no `Available` condition.
    Nothing,
    /// The Deployments of the deployed release.
    Release(Vec<ObjectRef>),
}

impl Findings {
    fn new() -> Findings {
        Findings {
            installed: Installed::Nothing,
            deprecation: None,
            deployed: Deployed::Unknown,
            notes: Vec::new(),
            cert_recheck: None,
            available_updates: None,
            approval: None,
            rollback_note: None,
            rollback_recheck: None,
        }
    }
}

async fn reconcile_extension(
    extension: &ClusterExtension,
    ctx: &Context,
) -> Result<Action, ReconcileError> {
    let api: Api<ClusterExtension> = Api::all(ctx.client.clone());
    // The informer may not hold our last status write yet; writing from its copy would be
    // refused.
    let fresher = ctx.own_writes.freshest(extension);
    let extension = fresher.as_ref().unwrap_or(extension);
    if extension.metadata.deletion_timestamp.is_some() {
        ctx.last_applies.forget(&extension.name_any());
        ctx.set_preflight_notes(&extension.name_any(), None);
        ctx.deployed.forget(&extension.name_any());
        ctx.set_rendered(&extension.name_any(), None);
        return finalize(&api, extension, ctx).await;
    }
    tracing::debug!(extension = %extension.name_any(), "reconciling");
    let current = add_finalizers(&api, extension).await?;

    let mut findings = Findings::new();
    let result = pipeline(&current, ctx, &mut findings).await;
    if result.is_err() {
        // The next reconcile verifies everything again.
        ctx.last_applies.forget(&current.name_any());
    }
    let recheck = [findings.cert_recheck, findings.rollback_recheck]
        .into_iter()
        .flatten()
        .min();
    let available_updates = findings.available_updates.take();
    if findings.rollback_note.is_none() {
        ctx.metrics.set_rollback_refused(&current.name_any(), false);
    }

    let progress = match (&result, findings.rollback_note.take()) {
        (Ok(()), Some(note)) => Progress::Failed {
            reason: ConditionReason::Retrying,
            message: note,
        },
        (Err(e), Some(note)) => Progress::Failed {
            reason: e.reason(),
            message: format!("{}\n{note}", e.condition_message()),
        },
        (Ok(()), None) => Progress::Reached {
            notes: std::mem::take(&mut findings.notes),
        },
        (Err(ReconcileError::InstalledState(_)), None) => Progress::Failed {
            reason: ConditionReason::Retrying,
            message: RETRYING_INSTALLED_STATE.to_owned(),
        },
        (Err(e), None) => Progress::Failed {
            reason: e.reason(),
            message: e.condition_message(),
        },
    };
    let outcome = Outcome {
        installed: findings.installed,
        progress,
        deprecation: findings.deprecation,
        available: available(ctx, &current.name_any(), &findings.deployed).await,
    };
    let mut status = next_status(
        current.status.as_ref(),
        current.metadata.generation,
        &outcome,
        now(),
    );
    if let Some(updates) = available_updates {
        status.available_updates = updates;
    }
    approval::put_approval(
        &mut status,
        current.spec.approval_mode(),
        findings.approval.as_ref(),
        current.metadata.generation,
        now(),
    );
    if let Some(versions) = &ctx.cluster_versions {
        cluster_upgradeable(&current, ctx, versions, &mut status).await;
    }
    let written = StatusWriter::new(api)
        .write_returning(&current, current.status.as_ref(), &status)
        .await
        .map_err(PublishError::from)?;
    if let Some(written) = &written {
        ctx.own_writes.record(&current, written);
    }
    updates_changed(&current, &status, ctx).await;
    ctx.metrics
        .set_state(&current.name_any(), Some(extension_state(&status)));
    ctx.metrics
        .set_awaiting_approval(&current.name_any(), status.pending_approval.is_some());
    result?;
    // `Available` changes arrive through the Deployment watch ([`super::availability`]); only
    // certificate steps and rollback deadlines are timed.
    Ok(match recheck {
        Some(after) => Action::requeue(after),
        None => Action::await_change(),
    })
}

fn extension_state(status: &olm_api::v1::ClusterExtensionStatus) -> ExtensionState {
    let get = |t, f: fn(&olm_api::v1::Condition) -> String| {
        find_condition(&status.conditions, t)
            .map(f)
            .unwrap_or_default()
    };
    ExtensionState {
        installed: get(ConditionType::Installed, |c| c.status.as_str().to_owned()),
        progressing: get(ConditionType::Progressing, |c| c.reason.clone()),
    }
}

/// The steps between the finalizers and the status (see the module table).
async fn pipeline(
    extension: &ClusterExtension,
    ctx: &Context,
    findings: &mut Findings,
) -> Result<(), ReconcileError> {
    let name = extension.name_any();
    // Validate.
    let filter = extension
        .spec
        .source
        .catalog
        .as_ref()
        .ok_or(ValidationError::NoCatalogSource)?;

    // Installed state.
    let (mut releases, records) = match ctx.store.history(&name).await {
        Ok(history) => (history.releases(), history.records),
        Err(e) => {
            findings.installed = Installed::Unknown {
                message: e.to_string(),
            };
            return Err(InstalledStateError(e).into());
        }
    };
    let owner_ref = cluster_extension_owner_reference(&name, &uid(extension));
    if let Some(last) = releases.iter_mut().max_by_key(|r| r.version)
        && history::interrupt_pending(last)
    {
        tracing::info!(extension = %name, version = last.version, "marking a release left pending as failed");
        if let Err(e) = ctx.store.update(last, &owner_ref, now_secs()).await {
            findings.installed = Installed::Unknown {
                message: e.to_string(),
            };
            return Err(InstalledStateError(e).into());
        }
    }
    // Guarded rollback: the deployed upgrade's probation, before anything else is decided.
    let rollback_deadline = extension.spec.rollback_deadline_minutes();
    if let Some(deadline) = rollback_deadline
        && rollback_step::probation(extension, ctx, &mut releases, deadline, findings).await?
    {
        return Ok(());
    }
    let installed = history::installed_bundle(&releases);
    tracing::debug!(extension = %name, installed = ?installed.as_ref().map(|b| &b.name), "installed state read");
    findings.installed = match &installed {
        Some(b) => installed_finding(b),
        None => Installed::Nothing,
    };
    let deployed = history::deployed(&releases).cloned();
    findings.deployed = match &deployed {
        None => Deployed::Nothing,
        Some(release) => release_deployments(ctx, extension, release),
    };

    // Catalogs and resolution.
    let resolve_started = Instant::now();
    let installed_for_resolver = installed.as_ref().map(|b| InstalledBundle {
        name: b.name.clone(),
        version: b.version.clone(),
        release: b.bundle_release.clone(),
    });
    let views = catalogs::list_catalogs(
        &ctx.client,
        ctx.catalog_cache.as_ref(),
        ctx.settings.call_timeout,
    )
    .await;
    let resolved = match &views {
        Err(e) => Err(ReconcileError::from(CatalogListError(e.to_string()))),
        Ok(views) => {
            let (resolved, updates) =
                resolve(ctx, filter, installed_for_resolver.as_ref(), views).await;
            findings.available_updates = updates;
            resolved
        }
    };
    ctx.metrics
        .observe_resolution(resolve_started.elapsed().as_secs_f64());
    let resolution = match resolved {
        Ok(resolution) => resolution,
        Err(error) => {
            findings.approval = Some(approval::Finding::Clear(
                "no bundle resolves; nothing awaits approval".to_owned(),
            ));
            findings.deprecation = Some(deprecation_conditions(
                None,
                false,
                &filter.channels,
                installed.as_ref().map(|b| b.name.as_str()),
            ));
            let matching = match &views {
                Err(_) => CatalogsMatching::Unknown,
                Ok(views) => catalogs_matching(filter, views),
            };
            let decision = fallback::on_resolution_failure(
                installed.as_ref().map(|b| b.version.as_str()),
                filter.version.as_deref(),
                matching,
            );
            return match (decision, deployed) {
                (Fallback::KeepInstalled, Some(deployed)) => {
                    tracing::info!(extension = %name, error = %error, "no catalog serves the package; maintaining the installed release");
                    maintain(extension, ctx, &deployed, findings).await
                }
                _ => Err(error),
            };
        }
    };
    tracing::debug!(extension = %name, bundle = %resolution.bundle.name, catalog = %resolution.catalog, "resolved");
    findings.deprecation = Some(deprecation_conditions(
        resolution.deprecation.as_ref(),
        true,
        &filter.channels,
        installed.as_ref().map(|b| b.name.as_str()),
    ));

    let bundle_name = resolution.bundle.name.clone();
    let bundle_version = resolution.status_version();
    if let Some(note) = rollback_step::not_retried(
        extension,
        &releases,
        release_plan::BundleIdentity {
            name: &bundle_name,
            version: &bundle_version,
            image: &resolution.bundle.image,
        },
    ) {
        tracing::debug!(extension = %name, bundle = %bundle_name, "rolled back earlier; not retried");
        findings.rollback_note = Some(note);
        return match &deployed {
            Some(deployed) => maintain(extension, ctx, deployed, findings).await,
            None => Ok(()),
        };
    }
    let wrap = |failure: BundleFailure| -> ReconcileError {
        BundleStepError {
            bundle: bundle_name.clone(),
            version: bundle_version.clone(),
            failure,
        }
        .into()
    };

    // The deployed release was rendered from exactly these inputs (same bundle, image,
    // configuration, namespace and certificate provider) and nothing was recorded after it:
    // keep it applied from its own record, without pulling or rendering (a registry that is down
    // does not stop drift repair, and a steady extension costs no registry request).
    let inputs = render_inputs(extension, &resolution, ctx.settings.cert_provider);
    if let Some(deployed) = &deployed
        && history::last(&releases).map(|r| r.version) == Some(deployed.version)
        && ctx.rendered_as(&name) == Some((inputs, deployed.version))
    {
        tracing::debug!(extension = %name, version = deployed.version, "rendering inputs unchanged; applying the deployed release's record");
        findings.approval = Some(approval::Finding::Clear(installed_message(
            &bundle_name,
            &bundle_version,
        )));
        findings
            .notes
            .extend(ctx.preflight_notes(&name, deployed.version));
        return maintain(extension, ctx, deployed, findings).await;
    }

    // Pull, parse, render. Repairing what is installed needs no pull: when the bundle cannot
    // be had (a registry down, a tag gone), the deployed release's own record is re-applied
    // and the pull's failure reported.
    let rendered = match pull_and_render(extension, ctx, &resolution).await {
        Ok(rendered) => rendered,
        Err(failure @ BundleFailure::Pull(_)) => {
            if let Some(deployed) = &deployed {
                tracing::info!(extension = %name, error = %failure, "bundle unavailable; keeping the installed release applied from its record");
                if let Err(e) = maintain(extension, ctx, deployed, findings).await {
                    tracing::info!(extension = %name, error = %e, "could not re-apply the installed release");
                }
            }
            return Err(wrap(failure));
        }
        Err(failure) => return Err(wrap(failure)),
    };
    let chart_objects = chart_objects(&rendered.0, &rendered.1);
    let context = PostRenderContext {
        release_namespace: extension.spec.namespace.clone(),
        owner_name: name.clone(),
        owner_uid: uid(extension),
    };
    let scopes = discover_scopes(&ctx.client, &rendered.0.objects, ctx.settings.call_timeout)
        .await
        .map_err(|e| wrap(e.into()))?;
    let (chart, manifest) =
        render_release(&chart_objects, &rendered.0.annotations, &context, &scopes)
            .map_err(|e| wrap(e.into()))?;
    let mut desired = manifest_objects(&manifest).map_err(|e| wrap(e.into()))?;
    let previous = match &deployed {
        Some(d) => release_refs(d).map_err(|e| wrap(e.into()))?,
        None => Vec::new(),
    };

    let action = release_plan::plan(
        &releases,
        &manifest,
        release_plan::BundleIdentity {
            name: &bundle_name,
            version: &bundle_version,
            image: &resolution.bundle.image,
        },
    )
    .map_err(|e| wrap(e.into()))?;
    tracing::debug!(extension = %name, ?action, objects = desired.len(), "rendered");
    let identity = identity(extension, ctx.settings.honor_service_account);
    let owner = Owner {
        name: name.clone(),
        uid: uid(extension),
    };
    let resolved_bundle = BundleMetadata {
        name: bundle_name.clone(),
        version: bundle_version.clone(),
    };
    let approval_mode = extension.spec.approval_mode();
    let installed_name = installed.as_ref().map(|b| b.name.as_str());
    if matches!(action, ReleaseAction::Unchanged { .. }) || approval_mode == ApprovalMode::Automatic
    {
        findings.approval = Some(approval::Finding::Clear(installed_message(
            &bundle_name,
            &bundle_version,
        )));
    } else if extension
        .spec
        .approval()
        .is_some_and(|a| approval::manual_holds(a, installed_name, &resolved_bundle))
    {
        // Manual: not the installed bundle and not the approved version.
        let request = ApplyRequest {
            owner: &owner,
            install_namespace: &extension.spec.namespace,
            identity: &identity,
            desired: &desired,
            previous: &previous,
        };
        let summary = pending_summary(ctx, extension, &rendered.0.objects, &request).await;
        return hold(
            extension,
            ctx,
            deployed.as_ref(),
            resolved_bundle,
            summary,
            findings,
        )
        .await;
    } else if approval_mode == ApprovalMode::Manual {
        findings.approval = Some(approval::Finding::Clear(
            if installed_name == Some(&bundle_name) {
                installed_message(&bundle_name, &bundle_version)
            } else {
                format!(
                    "bundle {bundle_name} ({bundle_version}) is approved by spec.install.approval.approvedVersion"
                )
            },
        ));
    }
    let outcome = if let ReleaseAction::Unchanged { deployed } = action {
        findings.notes.extend(ctx.preflight_notes(&name, deployed));
        let rendered_version = deployed;
        builtin_certificates(extension, ctx, &mut desired, findings)
            .await
            .map_err(|e| wrap(e.into()))?;
        let request = ApplyRequest {
            owner: &owner,
            install_namespace: &extension.spec.namespace,
            identity: &identity,
            desired: &desired,
            previous: &previous,
        };
        let outcome = apply_unless_unchanged(ctx, &request)
            .await
            .map_err(|e| wrap(e.into()))?;
        ctx.set_rendered(&name, Some((inputs, rendered_version)));
        outcome
    } else {
        // Install, upgrade or a retry of a failed release: every check comes before the first
        // write (release::plan's module documentation).
        let enforcement = extension
            .spec
            .install
            .as_ref()
            .and_then(|i| i.preflight.as_ref())
            .map(|p| p.crd_upgrade_safety.enforcement);
        let preflight_notes = crd_upgrade_safety(
            &ctx.client,
            &PreflightRequest {
                objects: &rendered.0.objects,
                enforcement,
                data_aware: ctx.settings.data_aware_crd_upgrade_safety,
                bundle: &bundle_name,
                version: &bundle_version,
                call_timeout: ctx.settings.call_timeout,
            },
        )
        .await
        .map_err(|e| wrap(e.into()))?;
        let check = ApplyRequest {
            owner: &owner,
            install_namespace: &extension.spec.namespace,
            identity: &identity,
            desired: &desired,
            previous: &previous,
        };
        // What the check saw: the apply writes on condition that it did not change since.
        // (A preview reads whole objects into its report; the apply then reads for itself.)
        let mut checked = CheckedReads::default();
        if approval_mode == ApprovalMode::AutomaticUnlessEscalation
            && installed.as_ref().is_some_and(|b| b.name != bundle_name)
        {
            // The preview's checks are the apply's checks (`Applier::check`), plus what they read.
            let found = ctx
                .applier
                .preview(&check)
                .await
                .map_err(|e| wrap(e.into()))?;
            let mut report = Report::default();
            compare_objects(&mut report, &found);
            let causes = approval::escalations(&report, &preflight_notes);
            if !causes.is_empty() {
                report.data_aware = preflight_notes.clone();
                report.crds = crd_checks(
                    &ctx.client,
                    &rendered.0.objects,
                    enforcement,
                    ctx.settings.call_timeout,
                )
                .await
                .unwrap_or_default();
                let summary = format!(
                    "held because {}; {}",
                    causes.join("; "),
                    approval::summary(&report)
                );
                return hold(
                    extension,
                    ctx,
                    deployed.as_ref(),
                    resolved_bundle,
                    summary,
                    findings,
                )
                .await;
            }
            findings.approval = Some(approval::Finding::Clear(format!(
                "bundle {bundle_name} ({bundle_version}) widens no permissions and passes the CRD upgrade-safety check without warnings"
            )));
        } else {
            if approval_mode == ApprovalMode::AutomaticUnlessEscalation {
                findings.approval = Some(approval::Finding::Clear(format!(
                    "bundle {bundle_name} ({bundle_version}): first installs and re-applies of the installed bundle need no approval"
                )));
            }
            checked = ctx
                .applier
                .check(&check)
                .await
                .map_err(|e| wrap(e.into()))?;
        }
        findings.notes.extend(preflight_notes.iter().cloned());
        builtin_certificates(extension, ctx, &mut desired, findings)
            .await
            .map_err(|e| wrap(e.into()))?;
        let request = ApplyRequest {
            owner: &owner,
            install_namespace: &extension.spec.namespace,
            identity: &identity,
            desired: &desired,
            previous: &previous,
        };
        let request_digest = last_apply::request_digest(&request);

        // The record written before the apply (install and upgrade only).
        let mut written_release: Option<(Release, Written)> = None;
        if action.records_before_apply() {
            let mut labels = history::bundle_labels(
                &rendered.0.package_name,
                &bundle_name,
                &bundle_version,
                &resolution.bundle.image,
                None,
            );
            if rollback_deadline.is_some() && matches!(action, ReleaseAction::Upgrade { .. }) {
                labels.insert(
                    olm_operator_core::release::rollback::WATCH_LABEL.to_owned(),
                    "true".to_owned(),
                );
            }
            let new = history::NewRelease {
                name: &name,
                namespace: &extension.spec.namespace,
                chart,
                manifest,
                labels,
                now: k8s_openapi::jiff::Timestamp::now(),
            };
            let release = match action {
                ReleaseAction::Install => history::install_release(new),
                _ => {
                    history::upgrade_release(&releases, new)
                        .map_err(|e| wrap(e.into()))?
                        .0
                }
            };
            let written = ctx
                .store
                .create_after(&release, &owner_ref, now_secs(), Some(&records))
                .await
                .map_err(|e| wrap(e.into()))?;
            written_release = Some((release, written));
        }
        let applied = ctx.applier.apply_checked(&request, &checked).await;
        let changes = action.after_apply(
            &releases,
            &name,
            written_release.as_ref().map(|(r, _)| r.version),
            match &applied {
                Ok(_) => Ok(()),
                Err(e) => Err(e.to_string()),
            }
            .as_ref()
            .map(|_| ())
            .map_err(String::as_str),
        );
        let recorded = record_changes(
            ctx,
            &owner_ref,
            &mut releases,
            written_release.as_mut(),
            &changes,
        )
        .await;
        if let (
            Err(failure),
            Some(_),
            ReleaseAction::Upgrade {
                supersede: Some(target),
            },
            Ok(()),
            Some((failed, _)),
        ) = (
            &applied,
            rollback_deadline,
            action,
            &recorded,
            &written_release,
        ) {
            // The upgrade's apply failed part-way: return to the release it replaced.
            releases.push(failed.clone());
            let rolled_back = rollback_step::roll_back(
                extension,
                ctx,
                &mut releases,
                failed.version,
                target,
                &failure.to_string(),
                findings,
            )
            .await;
            match rolled_back {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(extension = %name, error = %e, "rolling back the failed upgrade failed");
                    findings.rollback_note = Some(e.to_string());
                }
            }
        }
        let outcome = applied.map_err(|e| wrap(e.into()))?;
        recorded.map_err(|e| wrap(e.into()))?;
        ctx.last_applies.record(&name, request_digest, &outcome);
        let deployed_version = changes.iter().find_map(|c| match c {
            RecordChange::SetStatus {
                version, status, ..
            } if *status == ReleaseStatus::DEPLOYED => Some(*version),
            _ => None,
        });
        if let Some(version) = deployed_version {
            ctx.set_preflight_notes(&name, Some((version, preflight_notes)));
            ctx.set_rendered(&name, Some((inputs, version)));
            let deployments = deployments_of(&desired, &extension.spec.namespace);
            ctx.deployed.set(&name, version, deployments.clone());
            findings.deployed = Deployed::Release(deployments);
        }
        outcome
    };
    findings.installed = Installed::Bundle {
        bundle: BundleMetadata {
            name: bundle_name.clone(),
            version: bundle_version.clone(),
        },
        image: resolution.bundle.image.clone(),
    };
    // Deprecation of the bundle now installed.
    findings.deprecation = Some(deprecation_conditions(
        resolution.deprecation.as_ref(),
        true,
        &filter.channels,
        Some(&bundle_name),
    ));
    after_apply(ctx, &name, &outcome, findings).await;
    Ok(())
}
