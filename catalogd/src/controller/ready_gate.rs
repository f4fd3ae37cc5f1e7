//! When a starting replica reports ready: once it serves every catalog that was already
//! `Serving=True` when it started, or once [`DEFAULT_READY_BOUND`] has passed.
//!
//! A Service routes reads to every ready replica. A replica that reported ready as soon as its
//! listeners were up (upstream's `/readyz` is a plain ping) answered `404 Not Found` for catalogs
//! it had not unpacked yet, while the other replicas and `status.urls` said they were served: a
//! failover or rolling update under load showed it. So readiness waits for the catalogs a client
//! can already be reading. The bound keeps one unpullable image from holding a rollout forever;
//! past it the replica is ready as upstream's would be, and says which catalogs it lacks.
//!
//! Input: the ClusterCatalogs this replica manages (listed at start, and again while it waits so
//! that deleted catalogs stop counting), its storage. Output: the `ready` flag `/readyz` reads,
//! and one log line. Network: the Kubernetes API (LIST of ClusterCatalogs, only while waiting).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::api::{Api, ListParams};
use olm_api::v1::{ClusterCatalog, ConditionStatus, ConditionType, find_condition};
use tokio_util::sync::CancellationToken;

use crate::storage::Storage;

/// How long a starting replica waits for its catalogs before it reports ready regardless.
pub const DEFAULT_READY_BOUND: Duration = Duration::from_secs(120);
/// How often the wait looks at storage and at which catalogs still exist.
const POLL: Duration = Duration::from_millis(500);
/// Bound of each LIST the wait sends.
const LIST_BOUND: Duration = Duration::from_secs(10);
/// The wait lists the catalogs again (to forget deleted ones) every this many polls.
const LIST_EVERY: u32 = 10;

/// The catalogs a Service could already route reads for: `Serving=True` and not being deleted.
/// Pure.
pub fn served_elsewhere(catalogs: &[ClusterCatalog]) -> BTreeSet<String> {
    catalogs
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter(|c| {
            c.status.as_ref().is_some_and(|s| {
                find_condition(&s.conditions, ConditionType::Serving)
                    .is_some_and(|cond| cond.status == ConditionStatus::True)
            })
        })
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

/// Of the `required` catalogs, those that still exist (not being deleted) and that this replica
/// does not serve yet. `existing` is `None` when the latest list failed (then every required
/// catalog still counts). Pure.
pub fn still_missing(
    required: &BTreeSet<String>,
    existing: Option<&BTreeSet<String>>,
    served_here: impl Fn(&str) -> bool,
) -> BTreeSet<String> {
    required
        .iter()
        .filter(|name| existing.is_none_or(|e| e.contains(*name)))
        .filter(|name| !served_here(name))
        .cloned()
        .collect()
}

/// The names of the catalogs that exist and are not being deleted. Pure.
fn existing(catalogs: &[ClusterCatalog]) -> BTreeSet<String> {
    catalogs
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

/// Lists the catalogs this replica manages, bounded.
async fn list(api: &Api<ClusterCatalog>, params: &ListParams) -> Option<Vec<ClusterCatalog>> {
    match tokio::time::timeout(LIST_BOUND, api.list(params)).await {
        Ok(Ok(list)) => Some(list.items),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: failed to list ClusterCatalogs");
            None
        }
        Err(_) => {
            tracing::warn!(bound = ?LIST_BOUND, "readiness: listing ClusterCatalogs timed out");
            None
        }
    }
}

/// Sets `ready` once this replica serves every catalog that was `Serving=True` when it started
/// (or once `bound` has passed). Returns early, leaving `ready` unset, when `stop` is cancelled.
pub async fn open_when_served(
    api: Api<ClusterCatalog>,
    label_selector: Option<String>,
    storage: Storage,
    ready: Arc<AtomicBool>,
    bound: Duration,
    stop: CancellationToken,
) {
    let deadline = tokio::time::Instant::now() + bound;
    let mut params = ListParams::default();
    if let Some(selector) = &label_selector {
        params = params.labels(selector);
    }
    let served_here = |name: &str| matches!(storage.get(name), Ok(Some(_)));

    // The catalogs to wait for are those serving when this replica started; a list that fails is
    // tried again until the bound.
    let mut required = None;
    let mut existing_now = None;
    let mut polls = 0u32;
    loop {
        let list_now = required.is_none() || polls.is_multiple_of(LIST_EVERY);
        if list_now && let Some(items) = list(&api, &params).await {
            if required.is_none() {
                required = Some(served_elsewhere(&items));
            }
            existing_now = Some(existing(&items));
        }
        if let Some(required) = &required {
            let missing = still_missing(required, existing_now.as_ref(), served_here);
            if missing.is_empty() {
                tracing::info!(
                    catalogs = required.len(),
                    "ready: serving every catalog that was serving at start"
                );
                break;
            }
        }
        if tokio::time::Instant::now() >= deadline {
            let missing = required
                .as_ref()
                .map(|r| still_missing(r, existing_now.as_ref(), served_here))
                .map(|m| m.into_iter().collect::<Vec<_>>().join(", "));
            tracing::warn!(
                bound = ?bound,
                not_served = missing.as_deref().unwrap_or("(the catalogs could not be listed)"),
                "ready without serving every catalog that was serving at start"
            );
            break;
        }
        polls += 1;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(POLL) => {}
        }
    }
    ready.store(true, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use olm_api::v1::{
        AvailabilityMode, CatalogSource, ClusterCatalogSpec, ClusterCatalogStatus, Condition,
        ImageSource, SourceType,
    };

    fn catalog(name: &str, serving: Option<ConditionStatus>, deleting: bool) -> ClusterCatalog {
        let spec = ClusterCatalogSpec {
            source: CatalogSource {
                type_: SourceType::Image,
                image: Some(ImageSource {
                    ref_: "reg.io/cat:latest".into(),
                    poll_interval_minutes: None,
                }),
            },
            priority: 0,
            availability_mode: AvailabilityMode::Available,
        };
        let mut c = ClusterCatalog::new(name, spec);
        let epoch = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        if deleting {
            c.metadata.deletion_timestamp = Some(epoch.clone());
        }
        if let Some(status) = serving {
            c.status = Some(ClusterCatalogStatus {
                conditions: vec![Condition {
                    type_: "Serving".into(),
                    status,
                    observed_generation: None,
                    last_transition_time: epoch,
                    reason: "Available".into(),
                    message: String::new(),
                }],
                ..Default::default()
            });
        }
        c
    }

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_catalogs_serving_and_not_being_deleted_are_waited_for() {
        let catalogs = [
            catalog("serving", Some(ConditionStatus::True), false),
            catalog("unavailable", Some(ConditionStatus::False), false),
            catalog("unknown", Some(ConditionStatus::Unknown), false),
            catalog("new", None, false),
            catalog("going", Some(ConditionStatus::True), true),
        ];
        assert_eq!(served_elsewhere(&catalogs), names(&["serving"]));
    }

    #[test]
    fn a_catalog_counts_until_served_here_or_gone() {
        let required = names(&["a", "b", "c"]);
        let served = |n: &str| n == "a";
        assert_eq!(still_missing(&required, None, served), names(&["b", "c"]));
        assert_eq!(
            still_missing(&required, Some(&names(&["a", "b"])), served),
            names(&["b"])
        );
        assert_eq!(
            still_missing(&required, Some(&names(&["a"])), served),
            names(&[])
        );
        assert_eq!(still_missing(&BTreeSet::new(), None, |_| false), names(&[]));
    }
}
