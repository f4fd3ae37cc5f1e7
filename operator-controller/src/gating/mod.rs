//! OpenShift cluster-upgrade gating, the IO side: keeps the `olm` ClusterOperator's
//! `Upgradeable` condition saying whether installed ClusterExtensions let the cluster upgrade to
//! its next minor version, and caches the cluster version for the per-extension condition.
//!
//! Input: a `kube::Client`, [`GatingOptions`], this replica's leadership and a shutdown token.
//! Output: server-side applies of one condition on the ClusterOperator, a [`ClusterVersionCache`]
//! and a stream of [`PassOutcome`]s. Network: the Kubernetes API only, every call bounded by
//! [`GatingOptions::timeout`]; lists are paged and capped at [`MAX_EXTENSIONS`]. No disk.
//!
//! One pass (the decisions are `olm_operator_core::gating`'s):
//!
//! 1. The current cluster version: [`GatingOptions::release_version`] (the
//!    `OPERATOR_IMAGE_VERSION` the cluster version operator sets) when set, else the
//!    ClusterVersion `version`'s newest `Completed` history entry (never `status.desired`).
//!    Every replica does this and publishes it in the [`ClusterVersionCache`].
//! 2. List every ClusterExtension (metadata only) and read each one's installed release through
//!    [`ReleaseStore`] (so releases upstream wrote count too).
//! 3. Judge them ([`evaluate`]) and log the warnings (the unquoted `4.10` → `4.1` edge) when
//!    they change.
//! 4. Only the leader writes: server-side apply the `Upgradeable` condition alone on the ClusterOperator (status
//!    subresource, field manager [`GatingOptions::field_manager`], forced: this controller is the
//!    condition's writer). `status.conditions` is a list-map keyed by `type` in OpenShift's CRD
//!    (and in `config/openshift/`), so the apply owns that one entry: other writers' conditions,
//!    `versions` and `relatedObjects` are untouched. Nothing is written when the condition already
//!    says the same; `lastTransitionTime` moves only when the status flips. Where
//!    cluster-olm-operator also derives this condition (its library-go status writer updates the
//!    whole list), both compute the same status, reason and message from the same releases, so
//!    neither rewrites the other's (transition times are not compared).
//!
//! | situation                                   | what the pass does                                   |
//! |---------------------------------------------|------------------------------------------------------|
//! | version unreadable: API error               | warns once per distinct error (then debug), keeps the last value, writes nothing, retries after [`GatingOptions::retry`] |
//! | version undetermined: no ClusterVersion and no `OPERATOR_IMAGE_VERSION`, or a bad value | warns once per distinct reason (then debug), publishes "unknown" (extensions' `ClusterUpgradeable` says `Unknown`, `ClusterVersionUnknown`), writes nothing; the ClusterVersion watch (and the resync) re-evaluate, no retry timer |
//! | not the leader                              | judges (so its outcome is observable) but writes nothing |
//! | listing ClusterExtensions fails             | `Upgradeable=False`, `InstalledOLMOperators_FailureGettingExtensionMetadata` (upstream) |
//! | a release cannot be read                    | that extension is an error, as upstream (`error returning the last deployed release for <ce>`); the cause is logged |
//! | the ClusterOperator does not exist          | created (`spec: {}`) with our field manager, then the status applied |
//! | the write fails                             | logged, retried after [`GatingOptions::retry`]       |
//!
//! A pass runs: at start, on every change of a release Secret in the system namespace (install,
//! upgrade, uninstall), of a ClusterExtension (created or deleted), of the ClusterVersion (when the
//! version comes from it), of the ClusterOperator's `Upgradeable` condition when it no longer says
//! what this loop wrote (another writer replaced it; their other status updates are ignored), on
//! gaining leadership, and every [`GatingOptions::resync`]. Events within
//! [`GatingOptions::settle`] of each other share one pass.
//!
//! OpenShift mode ([`OpenShiftMode`]) decides whether the loop runs at all: `auto` asks discovery
//! whether `config.openshift.io/v1` serves both `clusteroperators` and `clusterversions`.
//!
//! # The per-extension condition (for the ClusterExtension controller)
//!
//! The ClusterExtension controller owns the ClusterExtension status write (one write per
//! reconcile), so it adds the `ClusterUpgradeable` condition while computing status, in OpenShift
//! mode only. Exactly:
//!
//! ```text
//! // `operator-controller run`: `#[command(flatten)] gating: gating::OpenShiftArgs` in its Args;
//! // once at start:
//! let gating = gating::openshift_enabled(&client, args.gating.openshift, Duration::from_secs(30))
//!     .await?
//!     .then(|| gating::Gating::new(client.clone(), gating::GatingOptions::from_env(&system_namespace)));
//! let versions: Option<ClusterVersionCache> = gating.as_ref().map(Gating::cluster_version);
//! if let Some(g) = gating { tokio::spawn(g.run(leadership.receiver(), shutdown.clone())); }
//! // and re-queue every ClusterExtension on each item of `versions.changes()`.
//!
//! // Per reconcile, after the installed release was read (`ReleaseStore::installed`: the
//! // `Option<StoredRelease>` the controller already has; None before the first install) and after
//! // resolution (`filter` = spec.source.catalog, `installed_bundle` = the resolver's
//! // `InstalledBundle`, `selected` = `resolver.catalogs_to_search(..)`):
//! if let Some(versions) = &versions {
//!     let metadata = ExtensionMetadata::from_release(installed.as_ref().map(|s| &s.release));
//!     let current = versions.current();
//!     let lifting: Result<Vec<String>, String> = match current {
//!         // Same catalogs, same package: the catalogd client's cache answers.
//!         Some(current) => {
//!             let fetched = catalogs::fetch_packages(&ctx.catalogd, &by_name, &selected, package).await;
//!             olm_operator_core::gating::lifting_versions_fetched(filter, installed_bundle, current, fetched)
//!                 .map_err(|e| e.to_string())
//!         }
//!         None => Ok(Vec::new()), // no version: `extension_condition` returns None anyway
//!     };
//!     let condition = extension_condition(&name, metadata, current, Lifting::from_result(&lifting));
//!     // into the status being computed, before the one status write:
//!     put_extension_condition(&mut status.conditions, condition.as_ref(), generation, now());
//! }
//! ```
//!
//! The lifting versions are only worth their catalog reads when the installed bundle blocks (check
//! `check_extension(current, ..).verdict` first if the reads are not cached).
//! That wiring is not in this module: it is in `cmd::run` (mode, loop, cache, re-queues) and
//! `controller::reconcile` (`cluster_upgradeable`, which reads the deployed release afresh after
//! the pipeline so the condition describes what the reconcile left installed).

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResourceList, Time};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_stream};
use olm_api::openshift::{
    CLUSTER_VERSION_NAME, ClusterOperator, ClusterOperatorStatusCondition, ClusterVersion, GROUP,
};
use olm_api::v1::ClusterExtension;
use olm_operator_core::gating::{
    ClusterMinor, CurrentVersion, Evaluation, ExtensionMetadata, GatingCondition,
    InstalledExtension, RELEASE_VERSION_ENV, current_cluster_version, evaluate,
};
use olm_operator_core::release::StoredRelease;
use olm_runtime::shutdown::CancellationToken;
use serde_json::json;
use tokio::sync::{Notify, watch};

use crate::storage::ReleaseStore;

/// The ClusterOperator OLM reports on.
pub const CLUSTER_OPERATOR_NAME: &str = "olm";
/// Our field manager on the ClusterOperator's status.
pub const FIELD_MANAGER: &str = "operator-controller-upgrade-gating";
/// Most ClusterExtensions one pass reads (each costs a release lookup).
pub const MAX_EXTENSIONS: usize = 10_000;
/// The group version whose resources mean "this is OpenShift".
pub const OPENSHIFT_CONFIG_API: &str = "config.openshift.io/v1";

/// Page size of the ClusterExtension list.
const PAGE: u32 = 500;

/// Whether gating runs: `--openshift=auto|true|false`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OpenShiftMode {
    /// Runs when discovery finds the OpenShift config APIs ([`serves_openshift_config_apis`]).
    #[default]
    Auto,
    Enabled,
    Disabled,
}

impl std::str::FromStr for OpenShiftMode {
    type Err = String;
    fn from_str(s: &str) -> Result<OpenShiftMode, String> {
        match s {
            "auto" => Ok(OpenShiftMode::Auto),
            "true" => Ok(OpenShiftMode::Enabled),
            "false" => Ok(OpenShiftMode::Disabled),
            other => Err(format!(
                "invalid OpenShift mode {other:?}: expected auto, true or false"
            )),
        }
    }
}

impl std::fmt::Display for OpenShiftMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OpenShiftMode::Auto => "auto",
            OpenShiftMode::Enabled => "true",
            OpenShiftMode::Disabled => "false",
        })
    }
}

/// The `operator-controller run` flag choosing the mode (flatten it into the run arguments).
#[derive(Clone, Debug, clap::Args)]
pub struct OpenShiftArgs {
    /// OpenShift cluster-upgrade gating (the `olm` ClusterOperator's Upgradeable condition from
    /// installed bundles' olm.maxOpenShiftVersion): `auto` turns it on when config.openshift.io/v1
    /// serves ClusterOperator and ClusterVersion.
    #[arg(long = "openshift", value_name = "auto|true|false", default_value_t = OpenShiftMode::Auto)]
    pub openshift: OpenShiftMode,
}

/// Why gating could not do something. Each names the object involved.
#[derive(Debug, thiserror::Error)]
pub enum GatingError {
    #[error("failed to discover {OPENSHIFT_CONFIG_API}: {source}")]
    Discovery {
        #[source]
        source: kube::Error,
    },
    #[error("failed to {action} {object}: {source}")]
    Api {
        action: &'static str,
        object: String,
        #[source]
        source: kube::Error,
    },
    #[error("timed out after {seconds}s trying to {action} {object}")]
    Timeout {
        action: &'static str,
        object: String,
        seconds: u64,
    },
    #[error("more than {MAX_EXTENSIONS} ClusterExtensions; refusing to read them all")]
    TooManyExtensions,
}

impl GatingError {
    /// Whether a later attempt may succeed without anything else changing.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, GatingError::TooManyExtensions)
    }
}

/// Whether a `config.openshift.io/v1` discovery document serves both kinds gating uses.
pub fn serves_openshift_config_apis(list: &APIResourceList) -> bool {
    let has = |name: &str| list.resources.iter().any(|r| r.name == name);
    has("clusteroperators") && has("clusterversions")
}

/// Whether gating runs under `mode` on this cluster (`auto`: one discovery request, bounded by
/// `timeout`; a group the server does not serve means "not OpenShift").
pub async fn openshift_enabled(
    client: &kube::Client,
    mode: OpenShiftMode,
    timeout: Duration,
) -> Result<bool, GatingError> {
    match mode {
        OpenShiftMode::Enabled => return Ok(true),
        OpenShiftMode::Disabled => return Ok(false),
        OpenShiftMode::Auto => {}
    }
    match tokio::time::timeout(
        timeout,
        client.list_api_group_resources(OPENSHIFT_CONFIG_API),
    )
    .await
    {
        Err(_) => Err(GatingError::Timeout {
            action: "discover",
            object: OPENSHIFT_CONFIG_API.to_string(),
            seconds: timeout.as_secs(),
        }),
        Ok(Err(kube::Error::Api(status))) if status.code == 404 => Ok(false),
        Ok(Err(source)) => Err(GatingError::Discovery { source }),
        Ok(Ok(list)) => Ok(serves_openshift_config_apis(&list)),
    }
}

/// How the loop runs.
#[derive(Clone, Debug)]
pub struct GatingOptions {
    /// Where release Secrets live (`olmv1-system` by default).
    pub system_namespace: String,
    /// The ClusterOperator to write ([`CLUSTER_OPERATOR_NAME`]).
    pub cluster_operator: String,
    /// The release version from the environment; `None` or empty reads ClusterVersion.
    pub release_version: Option<String>,
    pub field_manager: String,
    /// Periodic re-evaluation (upstream's informer resync: 10 minutes).
    pub resync: Duration,
    /// How long to gather events into one pass.
    pub settle: Duration,
    /// Delay before retrying a failed pass.
    pub retry: Duration,
    /// Bound on every API call.
    pub timeout: Duration,
}

impl GatingOptions {
    /// Defaults, with the release version taken as given.
    pub fn new(system_namespace: &str, release_version: Option<String>) -> GatingOptions {
        GatingOptions {
            system_namespace: system_namespace.to_string(),
            cluster_operator: CLUSTER_OPERATOR_NAME.to_string(),
            release_version,
            field_manager: FIELD_MANAGER.to_string(),
            resync: Duration::from_secs(600),
            settle: Duration::from_millis(500),
            retry: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
        }
    }

    /// Defaults, with the release version read from [`RELEASE_VERSION_ENV`].
    pub fn from_env(system_namespace: &str) -> GatingOptions {
        GatingOptions::new(system_namespace, std::env::var(RELEASE_VERSION_ENV).ok())
    }
}

/// The cluster's current minor version as the gating loop last read it (`None`: not known).
#[derive(Clone, Debug)]
pub struct ClusterVersionCache {
    rx: watch::Receiver<Option<ClusterMinor>>,
}

impl ClusterVersionCache {
    pub fn current(&self) -> Option<ClusterMinor> {
        *self.rx.borrow()
    }

    /// Yields once per change of the cached version (re-evaluate every extension then).
    pub fn changes(&self) -> impl Stream<Item = ()> + Send + 'static {
        futures::stream::unfold(self.rx.clone(), |mut rx| async move {
            rx.changed().await.ok().map(|()| ((), rx))
        })
    }
}

/// What happened to the ClusterOperator in one pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The cluster version is not known; nothing was judged.
    VersionUnknown,
    /// This replica does not lead; judged, not written.
    NotLeader,
    /// The condition already said this.
    Unchanged,
    /// The condition was applied.
    Applied,
    /// The write failed (the text says why).
    Failed(String),
}

/// One pass, for observers (tests, metrics, logs).
#[derive(Clone, Debug)]
pub struct PassOutcome {
    /// Passes so far, this one included.
    pub pass: u64,
    pub version: Result<CurrentVersion, String>,
    pub evaluation: Option<Evaluation>,
    /// The `Upgradeable` condition judged (written or not).
    pub condition: Option<GatingCondition>,
    pub write: WriteOutcome,
    /// The version source says nothing usable (as opposed to an API error reading it).
    pub version_undetermined: bool,
}

/// The gating loop (see the module doc).
pub struct Gating {
    client: kube::Client,
    options: GatingOptions,
    store: ReleaseStore,
    version_tx: watch::Sender<Option<ClusterMinor>>,
    outcome_tx: watch::Sender<Option<Arc<PassOutcome>>>,
    /// What the ClusterOperator's condition says as far as this loop knows (applied or found).
    written_tx: watch::Sender<Option<GatingCondition>>,
}

/// Runs the gating loop until `shutdown` (see [`Gating::run`]).
pub async fn run(
    client: kube::Client,
    options: GatingOptions,
    leading: watch::Receiver<bool>,
    shutdown: CancellationToken,
) {
    Gating::new(client, options).run(leading, shutdown).await
}

impl Gating {
    pub fn new(client: kube::Client, options: GatingOptions) -> Gating {
        let mut store = ReleaseStore::new(client.clone(), &options.system_namespace);
        store.timeout = options.timeout;
        Gating {
            client,
            options,
            store,
            version_tx: watch::Sender::new(None),
            outcome_tx: watch::Sender::new(None),
            written_tx: watch::Sender::new(None),
        }
    }

    /// Installed releases read from `cache` when its watch allows ([`crate::storage::IndexCache`];
    /// the watch must cover the system namespace).
    pub fn with_release_index_cache(mut self, cache: crate::storage::IndexCache) -> Gating {
        self.store = self.store.with_index_cache(cache);
        self
    }

    /// The cached cluster version, for the ClusterExtension controller.
    pub fn cluster_version(&self) -> ClusterVersionCache {
        ClusterVersionCache {
            rx: self.version_tx.subscribe(),
        }
    }

    /// The latest pass.
    pub fn outcomes(&self) -> watch::Receiver<Option<Arc<PassOutcome>>> {
        self.outcome_tx.subscribe()
    }

    /// Runs passes (see the module doc) until `shutdown` is cancelled; writes only while
    /// `leading` is true.
    pub async fn run(self, mut leading: watch::Receiver<bool>, shutdown: CancellationToken) {
        let wake = Arc::new(Notify::new());
        let mut watches = vec![
            tokio::spawn(wake_on(
                "release secrets",
                watch_stream(
                    Api::<PartialObjectMeta<Secret>>::namespaced(
                        self.client.clone(),
                        &self.options.system_namespace,
                    ),
                    watcher::Config::default().labels("owner=operator-controller"),
                ),
                wake.clone(),
            )),
            tokio::spawn(wake_on(
                "cluster extensions",
                watch_stream(
                    Api::<PartialObjectMeta<ClusterExtension>>::all(self.client.clone()),
                    watcher::Config::default(),
                ),
                wake.clone(),
            )),
            tokio::spawn(wake_on_foreign_condition(
                watch_stream(
                    Api::<ClusterOperator>::all(self.client.clone()),
                    watcher::Config::default()
                        .fields(&format!("metadata.name={}", self.options.cluster_operator)),
                ),
                self.written_tx.subscribe(),
                wake.clone(),
            )),
        ];
        if self.env_version().is_none() {
            watches.push(tokio::spawn(wake_on(
                "cluster version",
                watch_stream(
                    Api::<ClusterVersion>::all(self.client.clone()),
                    watcher::Config::default()
                        .fields(&format!("metadata.name={CLUSTER_VERSION_NAME}")),
                ),
                wake.clone(),
            )));
        }

        let mut resync = tokio::time::interval(self.options.resync);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut state = LoopState::default();
        let mut retry_at: Option<tokio::time::Instant> = None;
        let mut election_over = false;
        loop {
            let retry = async {
                match retry_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = resync.tick() => {}
                _ = wake.notified() => {}
                _ = retry => {}
                changed = leadership_change(&mut leading, election_over) => {
                    // A closed channel: the election ended and leadership stays as it was.
                    election_over = changed.is_err();
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(self.options.settle) => {}
            }
            let is_leading = *leading.borrow_and_update();
            let outcome = self.pass(is_leading, &mut state).await;
            // A version that cannot be determined (no ClusterVersion, an invalid value) changes
            // only with the ClusterVersion, which is watched: no timer for it.
            retry_at = match (&outcome.version, &outcome.write) {
                (Err(_), _) if !outcome.version_undetermined => {
                    Some(tokio::time::Instant::now() + self.options.retry)
                }
                (_, WriteOutcome::Failed(_)) => {
                    Some(tokio::time::Instant::now() + self.options.retry)
                }
                _ => None,
            };
            self.outcome_tx.send_replace(Some(Arc::new(outcome)));
        }
        for w in watches {
            w.abort();
        }
    }

    fn env_version(&self) -> Option<&str> {
        self.options
            .release_version
            .as_deref()
            .filter(|v| !v.is_empty())
    }

    /// One pass (see the module doc).
    async fn pass(&self, is_leading: bool, state: &mut LoopState) -> PassOutcome {
        state.passes += 1;
        let mut outcome = PassOutcome {
            pass: state.passes,
            version: Err(String::new()),
            evaluation: None,
            condition: None,
            write: WriteOutcome::VersionUnknown,
            version_undetermined: false,
        };
        match self.current_version().await {
            Ok(v) => {
                if state.version_problem.take().is_some() {
                    tracing::info!(version = %v.minor, "upgrade gating: the cluster version is known");
                }
                self.version_tx.send_if_modified(|cached| {
                    let changed = *cached != Some(v.minor);
                    *cached = Some(v.minor);
                    changed
                });
                outcome.version = Ok(v);
            }
            Err(VersionFailure::Api(e)) => {
                let e = e.to_string();
                if state.says_new(&e) {
                    tracing::warn!(error = %e, "upgrade gating: cannot read the cluster version; keeping the last one and retrying");
                } else {
                    tracing::debug!(error = %e, "upgrade gating: still cannot read the cluster version");
                }
                outcome.version = Err(e);
                return outcome;
            }
            Err(VersionFailure::Undetermined(e)) => {
                if state.says_new(&e) {
                    tracing::warn!(error = %e, "upgrade gating: the cluster version is not known; nothing is judged, the ClusterOperator is left as it is and installed extensions' ClusterUpgradeable says Unknown until it is");
                } else {
                    tracing::debug!(error = %e, "upgrade gating: the cluster version is still not known");
                }
                self.version_tx
                    .send_if_modified(|cached| cached.take().is_some());
                outcome.version = Err(e);
                outcome.version_undetermined = true;
                return outcome;
            }
        }
        let current = match &outcome.version {
            Ok(v) => v.minor,
            Err(_) => return outcome,
        };
        let evaluation = match self.extension_names().await {
            Err(e) => Evaluation::listing_failed(current, e.to_string()),
            Ok(names) => {
                let mut releases: Vec<(String, Result<Option<StoredRelease>, ()>)> =
                    Vec::with_capacity(names.len());
                for name in names {
                    let installed = self.store.installed(&name).await.map_err(|e| {
                        tracing::warn!(extension = %name, error = %e, "upgrade gating: cannot read the installed release");
                    });
                    releases.push((name, installed));
                }
                let extensions: Vec<InstalledExtension<'_>> = releases
                    .iter()
                    .map(|(name, installed)| InstalledExtension {
                        name,
                        metadata: match installed {
                            Err(()) => ExtensionMetadata::Unreadable,
                            Ok(r) => {
                                ExtensionMetadata::from_release(r.as_ref().map(|s| &s.release))
                            }
                        },
                    })
                    .collect();
                evaluate(current, &extensions)
            }
        };
        let warnings: BTreeSet<String> = evaluation.warnings().map(str::to_string).collect();
        if warnings != state.warnings {
            for w in warnings.difference(&state.warnings) {
                tracing::warn!(warning = %w, "upgrade gating");
            }
            state.warnings = warnings;
        }
        let condition = evaluation.cluster_operator_condition();
        outcome.write = if !is_leading {
            WriteOutcome::NotLeader
        } else {
            match self.apply_condition(&condition).await {
                Ok(true) => {
                    self.written_tx.send_replace(Some(condition.clone()));
                    tracing::info!(status = ?condition.status, reason = %condition.reason, message = %condition.message, "upgrade gating: wrote the ClusterOperator's Upgradeable condition");
                    WriteOutcome::Applied
                }
                Ok(false) => {
                    self.written_tx.send_replace(Some(condition.clone()));
                    WriteOutcome::Unchanged
                }
                Err(e) => {
                    tracing::warn!(error = %e, "upgrade gating: cannot write the ClusterOperator's Upgradeable condition");
                    WriteOutcome::Failed(e.to_string())
                }
            }
        };
        outcome.evaluation = Some(evaluation);
        outcome.condition = Some(condition);
        outcome
    }

    async fn call<T>(
        &self,
        action: &'static str,
        object: &str,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, GatingError> {
        match tokio::time::timeout(self.options.timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(source)) => Err(GatingError::Api {
                action,
                object: object.to_string(),
                source,
            }),
            Err(_) => Err(GatingError::Timeout {
                action,
                object: object.to_string(),
                seconds: self.options.timeout.as_secs(),
            }),
        }
    }

    async fn current_version(&self) -> Result<CurrentVersion, VersionFailure> {
        let env = self.env_version();
        let cluster_version = if env.is_none() {
            let api: Api<ClusterVersion> = Api::all(self.client.clone());
            self.call(
                "get",
                &format!("ClusterVersion {CLUSTER_VERSION_NAME:?}"),
                api.get_opt(CLUSTER_VERSION_NAME),
            )
            .await
            .map_err(VersionFailure::Api)?
        } else {
            None
        };
        current_cluster_version(env, cluster_version.as_ref())
            .map_err(|e| VersionFailure::Undetermined(e.to_string()))
    }

    /// Every ClusterExtension's name (metadata only, paged, capped).
    async fn extension_names(&self) -> Result<Vec<String>, GatingError> {
        let api: Api<ClusterExtension> = Api::all(self.client.clone());
        let mut params = ListParams::default().limit(PAGE);
        let mut names = Vec::new();
        loop {
            let page = self
                .call("list", "ClusterExtensions", api.list_metadata(&params))
                .await?;
            names.extend(page.items.into_iter().filter_map(|o| o.metadata.name));
            if names.len() > MAX_EXTENSIONS {
                return Err(GatingError::TooManyExtensions);
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
        Ok(names)
    }

    /// Applies `condition` as the ClusterOperator's only condition owned by us; `Ok(false)` when
    /// it already said the same.
    async fn apply_condition(&self, condition: &GatingCondition) -> Result<bool, GatingError> {
        let name = &self.options.cluster_operator;
        let object = format!("ClusterOperator {name:?}");
        let api: Api<ClusterOperator> = Api::all(self.client.clone());
        let params = PatchParams::apply(&self.options.field_manager).force();
        let existing = match self.call("get", &object, api.get_opt(name)).await? {
            Some(co) => co,
            None => {
                let body = json!({
                    "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterOperator",
                    "metadata": {"name": name}, "spec": {}
                });
                self.call(
                    "create",
                    &object,
                    api.patch(name, &params, &Patch::Apply(&body)),
                )
                .await?
            }
        };
        let previous = existing.condition(condition.type_);
        let reason = (!condition.reason.is_empty()).then(|| condition.reason.clone());
        let message = (!condition.message.is_empty()).then(|| condition.message.clone());
        if says_the_same(&existing, condition) {
            return Ok(false);
        }
        let last_transition_time = match previous {
            Some(p) if p.status == condition.status => p.last_transition_time.clone(),
            _ => Time(k8s_openapi::jiff::Timestamp::now()),
        };
        let applied = ClusterOperatorStatusCondition {
            type_: condition.type_.to_string(),
            status: condition.status,
            last_transition_time,
            reason,
            message,
        };
        let body = json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterOperator",
            "metadata": {"name": name},
            "status": {"conditions": [applied]}
        });
        self.call(
            "apply the Upgradeable condition to",
            &object,
            api.patch_status(name, &params, &Patch::Apply(&body)),
        )
        .await?;
        Ok(true)
    }
}

/// What the loop remembers between passes.
#[derive(Default)]
struct LoopState {
    passes: u64,
    /// The warnings logged last, so each is logged once while it holds.
    warnings: BTreeSet<String>,
    /// Why the cluster version could not be had, as last logged: each reason is logged once
    /// (a warning) while it holds, and its end once.
    version_problem: Option<String>,
}

impl LoopState {
    /// Records `problem`; whether it differs from the one logged last (then log it).
    fn says_new(&mut self, problem: &str) -> bool {
        if self.version_problem.as_deref() == Some(problem) {
            return false;
        }
        self.version_problem = Some(problem.to_string());
        true
    }
}

enum VersionFailure {
    /// Reading ClusterVersion failed: transient.
    Api(GatingError),
    /// The version source says nothing usable (core's error text).
    Undetermined(String),
}

/// Wakes the loop when the ClusterOperator is deleted (or re-listed), or when its `Upgradeable`
/// condition differs from what this loop last wrote or found: someone else changed it. Other
/// writers' updates of their own conditions (frequent on a real cluster) do not start a pass.
async fn wake_on_foreign_condition<S>(
    stream: S,
    written: watch::Receiver<Option<GatingCondition>>,
    wake: Arc<Notify>,
) where
    S: Stream<Item = Result<Event<ClusterOperator>, watcher::Error>> + Send,
{
    let mut stream = std::pin::pin!(stream.default_backoff());
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Apply(co)) => {
                let ours = written.borrow().clone();
                if !ours.is_some_and(|c| says_the_same(&co, &c)) {
                    wake.notify_one();
                }
            }
            Ok(Event::Delete(_) | Event::InitDone) => wake.notify_one(),
            Ok(Event::Init | Event::InitApply(_)) => {}
            Err(error) => {
                tracing::warn!(watch = "cluster operator", %error, "upgrade gating: watch failed; retrying with backoff")
            }
        }
    }
}

/// Whether the ClusterOperator's condition of `condition`'s type has its status, reason and
/// message (transition times are not compared).
fn says_the_same(co: &ClusterOperator, condition: &GatingCondition) -> bool {
    co.condition(condition.type_).is_some_and(|p| {
        p.status == condition.status
            && p.reason.as_deref().unwrap_or_default() == condition.reason
            && p.message.as_deref().unwrap_or_default() == condition.message
    })
}

/// The next leadership change; never, once the election is over.
async fn leadership_change(
    leading: &mut watch::Receiver<bool>,
    election_over: bool,
) -> Result<(), watch::error::RecvError> {
    if election_over {
        std::future::pending().await
    } else {
        leading.changed().await
    }
}

/// Wakes the loop on every change a watch reports (the initial listing counts once).
async fn wake_on<K, S>(what: &'static str, stream: S, wake: Arc<Notify>)
where
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send,
{
    let mut stream = std::pin::pin!(stream.default_backoff());
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Apply(_) | Event::Delete(_) | Event::InitDone) => wake.notify_one(),
            Ok(Event::Init | Event::InitApply(_)) => {}
            Err(error) => {
                tracing::warn!(watch = what, %error, "upgrade gating: watch failed; retrying with backoff")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;

    fn resources(names: &[&str]) -> APIResourceList {
        APIResourceList {
            group_version: OPENSHIFT_CONFIG_API.to_string(),
            resources: names
                .iter()
                .map(|n| APIResource {
                    name: n.to_string(),
                    kind: String::new(),
                    namespaced: false,
                    singular_name: String::new(),
                    verbs: Vec::new(),
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn openshift_needs_both_config_kinds() {
        assert!(serves_openshift_config_apis(&resources(&[
            "clusteroperators",
            "clusteroperators/status",
            "clusterversions"
        ])));
        assert!(!serves_openshift_config_apis(&resources(&[
            "clusteroperators"
        ])));
        assert!(!serves_openshift_config_apis(&resources(&[
            "clusterversions"
        ])));
        assert!(!serves_openshift_config_apis(&resources(&[])));
    }

    #[test]
    fn the_flag_defaults_to_auto_and_rejects_other_values() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            gating: OpenShiftArgs,
        }
        assert_eq!(
            Run::try_parse_from(["run"]).unwrap().gating.openshift,
            OpenShiftMode::Auto
        );
        assert_eq!(
            Run::try_parse_from(["run", "--openshift=false"])
                .unwrap()
                .gating
                .openshift,
            OpenShiftMode::Disabled
        );
        let err = Run::try_parse_from(["run", "--openshift", "yes"])
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("invalid OpenShift mode \"yes\""), "{err}");
    }

    #[test]
    fn mode_flag_values() {
        for (text, mode) in [
            ("auto", OpenShiftMode::Auto),
            ("true", OpenShiftMode::Enabled),
            ("false", OpenShiftMode::Disabled),
        ] {
            assert_eq!(text.parse::<OpenShiftMode>().unwrap(), mode);
            assert_eq!(mode.to_string(), text);
        }
        assert_eq!(
            "yes".parse::<OpenShiftMode>().unwrap_err(),
            "invalid OpenShift mode \"yes\": expected auto, true or false"
        );
    }
}
