//! What a ClusterCatalog reconcile must do, and the status it leads to. Pure: no clocks, no IO.
//!
//! Input: the ClusterCatalog, what this replica serves for it, when this replica last resolved its
//! reference, the current time and whether this replica leads. Output: a [`Plan`] and status values.
//!
//! Decision table (first matching row wins):
//!
//! | catalog | plan |
//! |---|---|
//! | being deleted | delete local content; the leader removes the finalizer |
//! | `availabilityMode: Unavailable` | delete local content; leader: status Unavailable, remove finalizer |
//! | follower, the leader waits for every replica to serve a digest (its replica Lease names it) | unpack that digest unless served here; nothing else |
//! | nothing served here | unpack |
//! | spec changed since the last unpack (`generation` ≠ Progressing's `observedGeneration`) | unpack |
//! | follower, leader published another digest than we serve | unpack that digest |
//! | leader, tag reference with `pollIntervalMinutes`, poll due | unpack (resolve the tag; no re-pull if unchanged) |
//! | otherwise | nothing; requeue at the next poll |
//!
//! Followers pull the digest the leader serves, so every replica serves identical bytes: while
//! the leader waits for them, the digest its replica Lease names (`status.resolvedSource` still
//! names what every replica serves: clients cache content by it); otherwise the digest in
//! `status.resolvedSource` once it describes the current generation; before that, the spec's
//! reference.

use std::time::{Duration, SystemTime};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_api::condition_error::ConditionError;
use olm_api::v1::{
    AvailabilityMode, ClusterCatalog, ClusterCatalogStatus, ClusterCatalogUrls, ConditionReason,
    ConditionStatus, ConditionType, DELETE_SERVER_CACHE_FINALIZER, ResolvedCatalogSource,
    ResolvedImageSource, SourceType, find_condition, set_condition,
};

pub const MSG_UNPACKED: &str = "Successfully unpacked and stored content from resolved source";
pub const MSG_SERVING: &str = "Serving desired content from resolved source";
pub const MSG_UNAVAILABLE: &str = "Catalog availability mode is set to Unavailable";

/// What this replica knows locally about a catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Local {
    /// Digest reference of the content this replica serves, if any.
    pub served_digest_ref: Option<String>,
    /// When this replica last resolved the catalog's reference successfully.
    pub last_poll: Option<SystemTime>,
    /// On a follower while the leader waits for every replica: the digest reference the leader
    /// serves (its replica Lease).
    pub leader_target: Option<String>,
}

/// The work a reconcile does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Delete this replica's content (and, when `finalize`, let the leader drop the finalizer).
    Remove { unavailable: bool },
    /// Pull `reference` and store its content; `add_finalizer` first when leading.
    Unpack { reference: String },
    /// Nothing to fetch.
    UpToDate,
}

/// Decides what to do; see the module table.
pub fn plan(
    catalog: &ClusterCatalog,
    local: &Local,
    now: SystemTime,
    leader: bool,
    poll_unit: Duration,
) -> Plan {
    if catalog.metadata.deletion_timestamp.is_some() {
        return Plan::Remove { unavailable: false };
    }
    if catalog.spec.availability_mode == AvailabilityMode::Unavailable {
        return Plan::Remove { unavailable: true };
    }
    let spec_ref = spec_reference(catalog);
    let status = catalog.status.clone().unwrap_or_default();
    let current_generation = observed_generation(&status) == catalog.metadata.generation;
    let published = status
        .resolved_source
        .as_ref()
        .map(|r| r.image.ref_.clone())
        .filter(|_| current_generation);

    if !leader && let Some(target) = &local.leader_target {
        // The published digest is the one being replaced: never go back to it meanwhile.
        return if local.served_digest_ref.as_ref() == Some(target) {
            Plan::UpToDate
        } else {
            Plan::Unpack {
                reference: target.clone(),
            }
        };
    }
    let Some(served) = &local.served_digest_ref else {
        return Plan::Unpack {
            reference: pull_reference(leader, published, spec_ref),
        };
    };
    if !current_generation {
        return Plan::Unpack {
            reference: spec_ref,
        };
    }
    match (leader, published) {
        (false, Some(published)) if &published != served => Plan::Unpack {
            reference: published,
        },
        (true, _) if poll_due(catalog, local.last_poll, now, poll_unit) => Plan::Unpack {
            reference: spec_ref,
        },
        _ => Plan::UpToDate,
    }
}

fn pull_reference(leader: bool, published: Option<String>, spec_ref: String) -> String {
    match published {
        Some(digest_ref) if !leader => digest_ref,
        _ => spec_ref,
    }
}

/// The image reference in the spec (the CRD makes `image` required for `type: Image`).
pub fn spec_reference(catalog: &ClusterCatalog) -> String {
    catalog
        .spec
        .source
        .image
        .as_ref()
        .map(|i| i.ref_.clone())
        .unwrap_or_default()
}

fn observed_generation(status: &ClusterCatalogStatus) -> Option<i64> {
    find_condition(&status.conditions, ConditionType::Progressing)
        .and_then(|c| c.observed_generation)
}

/// The poll interval of a tag reference, or `None` when the catalog is not polled.
pub fn poll_interval(catalog: &ClusterCatalog, poll_unit: Duration) -> Option<Duration> {
    let image = catalog.spec.source.image.as_ref()?;
    let minutes = u32::try_from(image.poll_interval_minutes?).ok()?;
    if image.ref_.contains('@') {
        return None;
    }
    Some(poll_unit * minutes)
}

fn poll_due(
    catalog: &ClusterCatalog,
    last_poll: Option<SystemTime>,
    now: SystemTime,
    poll_unit: Duration,
) -> bool {
    match (poll_interval(catalog, poll_unit), last_poll) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(interval), Some(at)) => at + interval <= now,
    }
}

/// When to look again: the next poll plus up to 1 % jitter (upstream's `wait.Jitter(d, 0.01)`),
/// so catalogs created together do not poll in lockstep. `jitter` is a sample in `[0, 1)`.
pub fn next_poll_in(
    catalog: &ClusterCatalog,
    last_poll: Option<SystemTime>,
    now: SystemTime,
    poll_unit: Duration,
    jitter: f64,
) -> Option<Duration> {
    let interval = poll_interval(catalog, poll_unit)?;
    let jittered = interval.mul_f64(1.0 + 0.01 * jitter.clamp(0.0, 1.0));
    let due = last_poll.unwrap_or(now) + jittered;
    Some(due.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The base URL of a catalog's content API.
pub fn base_url(external: &str, tls: bool, catalog: &str) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!(
        "{scheme}://{}/catalogs/{catalog}",
        external.trim_end_matches('/')
    )
}

/// Status after content was stored (or found up to date): serving the resolved digest.
pub fn serving_status(
    previous: &ClusterCatalogStatus,
    generation: Option<i64>,
    digest_ref: &str,
    base_url: &str,
    unpacked_at: SystemTime,
    now: Time,
) -> ClusterCatalogStatus {
    let mut status = previous.clone();
    keep_known_conditions(&mut status);
    status.resolved_source = Some(ResolvedCatalogSource {
        type_: SourceType::Image,
        image: ResolvedImageSource {
            ref_: digest_ref.to_string(),
        },
    });
    status.urls = Some(ClusterCatalogUrls {
        base: base_url.to_string(),
    });
    status.last_unpacked = Some(time_seconds(unpacked_at));
    set_condition(
        &mut status.conditions,
        ConditionType::Progressing,
        ConditionStatus::True,
        ConditionReason::Succeeded,
        MSG_UNPACKED,
        generation,
        now.clone(),
    );
    set_condition(
        &mut status.conditions,
        ConditionType::Serving,
        ConditionStatus::True,
        ConditionReason::Available,
        MSG_SERVING,
        generation,
        now,
    );
    status
}

/// What `Progressing`'s message says while the leader waits for other replicas.
pub const WAITING_FOR_REPLICAS: &str = "; waiting for every replica to serve it";

/// Status after this replica stored `digest_ref` while the replicas in `waiting_for` do not
/// serve it yet: only `Progressing` changes. The resolved source, `lastUnpacked`, `Serving` and
/// `status.urls` stay as they were, because content served before is still on every replica and
/// clients key their caches by the resolved source (a client reading through the Service must
/// never get older content under a newer digest); `Serving` is False when nothing was served.
/// Followers learn `digest_ref` from the leader's replica Lease.
#[allow(clippy::too_many_arguments)]
pub fn waiting_status(
    previous: &ClusterCatalogStatus,
    generation: Option<i64>,
    digest_ref: &str,
    base_url: &str,
    unpacked_at: SystemTime,
    waiting_for: &[String],
    now: Time,
) -> ClusterCatalogStatus {
    let mut status = serving_status(
        previous,
        generation,
        digest_ref,
        base_url,
        unpacked_at,
        now.clone(),
    );
    let message = format!(
        "{MSG_UNPACKED}{WAITING_FOR_REPLICAS} ({} not yet: {})",
        waiting_for.len(),
        waiting_for.join(", ")
    );
    set_condition(
        &mut status.conditions,
        ConditionType::Progressing,
        ConditionStatus::True,
        ConditionReason::Succeeded,
        &message,
        generation,
        now.clone(),
    );
    status.urls = previous.urls.clone();
    status.resolved_source = previous.resolved_source.clone();
    status.last_unpacked = previous.last_unpacked.clone();
    status
        .conditions
        .retain(|c| c.type_ != ConditionType::Serving.as_str());
    match find_condition(&previous.conditions, ConditionType::Serving) {
        Some(serving) if serving.status == ConditionStatus::True && previous.urls.is_some() => {
            status.conditions.push(serving.clone());
        }
        _ => {
            status.urls = None;
            set_condition(
                &mut status.conditions,
                ConditionType::Serving,
                ConditionStatus::False,
                ConditionReason::Unavailable,
                &message,
                generation,
                now,
            );
        }
    }
    status
}

/// Whether the status is one [`waiting_status`] wrote.
pub fn is_waiting(status: &ClusterCatalogStatus) -> bool {
    find_condition(&status.conditions, ConditionType::Progressing)
        .is_some_and(|c| c.message.contains(WAITING_FOR_REPLICAS))
}

/// Status after a failed unpack or store: Progressing says why; whatever was served before is
/// still served, so Serving and the resolved source are left as they were.
pub fn error_status(
    previous: &ClusterCatalogStatus,
    generation: Option<i64>,
    message: &str,
    terminal: bool,
    now: Time,
) -> ClusterCatalogStatus {
    let reason = if terminal {
        ConditionReason::Blocked
    } else {
        ConditionReason::Retrying
    };
    progressing_failure(previous, generation, reason, terminal, message, now)
}

/// [`error_status`] for a step error: its condition message and reason, `Progressing` False when
/// it is terminal and True otherwise.
pub fn failure_status(
    previous: &ClusterCatalogStatus,
    generation: Option<i64>,
    error: &dyn ConditionError,
    now: Time,
) -> ClusterCatalogStatus {
    progressing_failure(
        previous,
        generation,
        error.reason(),
        error.is_terminal(),
        &error.condition_message(),
        now,
    )
}

fn progressing_failure(
    previous: &ClusterCatalogStatus,
    generation: Option<i64>,
    reason: ConditionReason,
    terminal: bool,
    message: &str,
    now: Time,
) -> ClusterCatalogStatus {
    let mut status = previous.clone();
    keep_known_conditions(&mut status);
    let state = if terminal {
        ConditionStatus::False
    } else {
        ConditionStatus::True
    };
    set_condition(
        &mut status.conditions,
        ConditionType::Progressing,
        state,
        reason,
        message,
        generation,
        now,
    );
    status
}

/// Status once `availabilityMode: Unavailable` removed the content.
pub fn unavailable_status(
    previous: &ClusterCatalogStatus,
    generation: Option<i64>,
    now: Time,
) -> ClusterCatalogStatus {
    let mut status = previous.clone();
    keep_known_conditions(&mut status);
    status.resolved_source = None;
    status.urls = None;
    status.last_unpacked = None;
    set_condition(
        &mut status.conditions,
        ConditionType::Progressing,
        ConditionStatus::True,
        ConditionReason::Succeeded,
        MSG_UNAVAILABLE,
        generation,
        now.clone(),
    );
    set_condition(
        &mut status.conditions,
        ConditionType::Serving,
        ConditionStatus::False,
        ConditionReason::UserSpecifiedUnavailable,
        MSG_UNAVAILABLE,
        generation,
        now,
    );
    status
}

/// Upstream drops condition types it does not own.
fn keep_known_conditions(status: &mut ClusterCatalogStatus) {
    status.conditions.retain(|c| {
        ConditionType::CLUSTER_CATALOG
            .iter()
            .any(|t| t.as_str() == c.type_)
    });
}

/// Whether the finalizer is on the object.
pub fn has_finalizer(catalog: &ClusterCatalog) -> bool {
    catalog
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == DELETE_SERVER_CACHE_FINALIZER))
}

/// A time truncated to whole seconds, as the API stores `lastUnpacked`.
pub fn time_seconds(t: SystemTime) -> Time {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let ts = k8s_openapi::jiff::Timestamp::from_second(i64::try_from(secs).unwrap_or(0))
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    Time(ts)
}

#[cfg(test)]
mod tests;
