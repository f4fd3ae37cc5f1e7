//! Guarded rollback of a failed upgrade (`spec.install.rollback.mode: OnFailure`, an addition
//! of this implementation): which upgrade is still on probation, whether its progress deadline
//! passed, whether the previous release still serves what is stored, the records a rollback
//! writes, and whether a rolled-back bundle may be tried again.
//!
//! Input: the release records of one extension, the availability of the deployed release's
//! Deployments, the clock, live and previous CRDs as JSON. Output: decisions and release
//! records. No IO.
//!
//! The state lives in the release records themselves (labels that Helm and upstream's readers
//! carry along and ignore), so it survives restarts and is visible with `helm history`:
//!
//! | label | on | meaning |
//! |---|---|---|
//! | [`WATCH_LABEL`] | an upgrade made while `OnFailure` was set | on probation: rolled back when its Deployments are not Available by the deadline; removed once they are |
//! | [`ROLLED_BACK_LABEL`] | the failed upgrade, now `superseded` | it was rolled back; its description says why |
//! | [`ROLLBACK_GENERATION_LABEL`] | the rollback record (`deployed`, a copy of the previous release) | the ClusterExtension generation it was made under: the failed bundle is not retried while the generation and the resolved bundle stay the same |
//!
//! A rollback appends records as Helm's own rollback does: a new record (`pending-rollback`,
//! then `deployed`, description `Rollback to N`) holding the previous release's chart, manifest
//! and labels, and the failed one marked `superseded`. Upstream reading the history finds the
//! previous bundle installed.

use k8s_openapi::jiff::Timestamp;
use olm_api::v1::ConditionStatus;
use olm_api::version::go_text::go_quote;
use serde_json::Value;

use super::history::{self, BUNDLE_NAME_LABEL, BUNDLE_VERSION_LABEL};
use super::model::{Info, Release, Status};
use super::plan::{BundleIdentity, RecordChange};
use super::time::HelmTime;
use crate::apply_plan::Availability;

/// On an upgrade record made while `OnFailure` was set, until its Deployments are Available.
pub const WATCH_LABEL: &str = "olm.operatorframework.io/rollback-on-failure";
/// On an upgrade that was rolled back.
pub const ROLLED_BACK_LABEL: &str = "olm.operatorframework.io/rolled-back";
/// On a rollback record: the ClusterExtension's generation when it was made.
pub const ROLLBACK_GENERATION_LABEL: &str = "olm.operatorframework.io/rollback-generation";

/// How often an upgrade whose availability cannot be read is looked at again.
pub const UNKNOWN_RECHECK_SECS: i64 = 30;

/// The labels an upgrade must not inherit from the record it follows (they describe that
/// record only).
pub fn strip_labels(labels: &mut std::collections::BTreeMap<String, String>) {
    for key in [WATCH_LABEL, ROLLED_BACK_LABEL, ROLLBACK_GENERATION_LABEL] {
        labels.remove(key);
    }
}

/// An upgrade on probation and the release it replaced.
#[derive(Clone, Copy, Debug)]
pub struct Watched<'a> {
    pub upgrade: &'a Release,
    pub previous: &'a Release,
}

/// The deployed release when it is an upgrade on probation ([`WATCH_LABEL`]) and the release
/// it would return to: the newest `superseded` record before it that was not itself rolled
/// back.
pub fn watched(releases: &[Release]) -> Option<Watched<'_>> {
    let upgrade = history::deployed(releases)?;
    upgrade.label(WATCH_LABEL)?;
    let previous = previous_good(releases, upgrade.version)?;
    Some(Watched { upgrade, previous })
}

/// The newest `superseded` record below `below` that was not rolled back: what an upgrade
/// to `below` replaced.
pub fn previous_good(releases: &[Release], below: i64) -> Option<&Release> {
    releases
        .iter()
        .filter(|r| {
            r.version < below
                && r.status() == Status::SUPERSEDED
                && r.label(ROLLED_BACK_LABEL).is_none()
        })
        .max_by_key(|r| r.version)
}

/// Where an upgrade on probation stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probation {
    /// Its Deployments are Available: it stays, and leaves probation.
    Passed,
    /// Not Available yet; look again after this many seconds.
    Waiting { recheck_secs: i64 },
    /// Not Available when the deadline passed: roll back, for this reason.
    Failed { why: String },
}

/// Where `upgrade` stands at `now`, `deadline_minutes` after it was deployed.
///
/// | availability | before the deadline | after it |
/// |---|---|---|
/// | True | passed | passed |
/// | False | waiting until the deadline | failed |
/// | Unknown (not readable) | waiting | waiting, looked at every [`UNKNOWN_RECHECK_SECS`]: an unread state never rolls back |
pub fn probation(
    upgrade: &Release,
    availability: &Availability,
    now: Timestamp,
    deadline_minutes: i32,
) -> Probation {
    if availability.status == ConditionStatus::True {
        return Probation::Passed;
    }
    let deployed_at = upgrade
        .info
        .as_ref()
        .and_then(|i| unix_seconds(&i.last_deployed))
        .unwrap_or_else(|| now.as_second());
    let due = deployed_at + i64::from(deadline_minutes) * 60;
    let left = due - now.as_second();
    if availability.status == ConditionStatus::Unknown {
        return Probation::Waiting {
            recheck_secs: left.clamp(1, UNKNOWN_RECHECK_SECS),
        };
    }
    if left > 0 {
        return Probation::Waiting { recheck_secs: left };
    }
    Probation::Failed {
        why: format!(
            "its Deployments were not Available within {deadline_minutes} minute{} of the upgrade: {}",
            if deadline_minutes == 1 { "" } else { "s" },
            availability.message
        ),
    }
}

fn unix_seconds(time: &HelmTime) -> Option<i64> {
    if time.is_zero() {
        return None;
    }
    time.to_string()
        .parse::<Timestamp>()
        .ok()
        .map(|t| t.as_second())
}

/// The upgrade leaves probation (its Deployments were seen Available).
pub fn pass_probation(release: &mut Release) {
    if let Some(labels) = release.labels.as_mut() {
        labels.remove(WATCH_LABEL);
    }
}

/// Why the previous release cannot be installed again because of what a CRD stores: each
/// version in the live CRD's `status.storedVersions` that the previous release's CRD (same
/// name) does not list as served. Objects stored in such a version could not be read (and the
/// API server refuses a CRD that drops a stored version).
pub fn unserved_stored_versions(live: &Value, previous: &Value) -> Vec<String> {
    let name = live
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let stored = live
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let served = |version: &str| {
        previous
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .is_some_and(|versions| {
                versions.iter().any(|v| {
                    v.get("name").and_then(Value::as_str) == Some(version)
                        && v.get("served").and_then(Value::as_bool) == Some(true)
                })
            })
    };
    stored
        .iter()
        .filter_map(Value::as_str)
        .filter(|v| !served(v))
        .map(|v| {
            format!(
                "CRD {} stores objects as version {}, which the previous release does not serve",
                go_quote(name),
                go_quote(v)
            )
        })
        .collect()
}

/// Helm's description of a rollback record.
pub fn rollback_description(target: i64) -> String {
    format!("Rollback to {target}")
}

/// The record a rollback to `target` writes before applying anything (Helm's
/// `pending-rollback`): the next version, `target`'s chart, values, manifest and labels, and
/// [`ROLLBACK_GENERATION_LABEL`].
pub fn rollback_release(
    releases: &[Release],
    target: &Release,
    generation: i64,
    now: Timestamp,
) -> Release {
    let version = history::last(releases).map_or(1, |r| r.version) + 1;
    let mut labels = target.labels.clone().unwrap_or_default();
    strip_labels(&mut labels);
    labels.insert(ROLLBACK_GENERATION_LABEL.to_owned(), generation.to_string());
    let first_deployed = target
        .info
        .as_ref()
        .map(|i| i.first_deployed)
        .unwrap_or_default();
    Release {
        name: target.name.clone(),
        info: Some(Info {
            first_deployed,
            last_deployed: HelmTime::from_timestamp(now),
            status: Status::new(Status::PENDING_ROLLBACK),
            description: rollback_description(target.version),
            ..Default::default()
        }),
        chart: target.chart.clone(),
        config: target.config.clone(),
        manifest: target.manifest.clone(),
        hooks: Vec::new(),
        version,
        namespace: target.namespace.clone(),
        labels: Some(labels),
    }
}

/// The record changes once the rollback record `rollback` (to `target`) was applied with
/// `result`. Success: the failed upgrade `failed` is marked rolled back with `why` (a Helm
/// upgrade-failure description), every other deployed record `superseded`, the rollback record
/// `deployed`. Failure: the rollback record `failed`; the rest stays as it was.
pub fn after_rollback(
    releases: &[Release],
    extension: &str,
    failed: i64,
    rollback: i64,
    target: i64,
    why: &str,
    result: Result<(), &str>,
) -> Vec<RecordChange> {
    match result {
        Ok(()) => {
            let mut changes = vec![RecordChange::RolledBack {
                version: failed,
                description: history::upgrade_failed_description(extension, why),
            }];
            changes.extend(
                releases
                    .iter()
                    .filter(|r| {
                        r.status() == Status::DEPLOYED
                            && r.version != failed
                            && r.version < rollback
                    })
                    .map(|r| RecordChange::Supersede(r.version)),
            );
            changes.push(RecordChange::SetStatus {
                version: rollback,
                status: Status::DEPLOYED,
                description: rollback_description(target),
            });
            changes
        }
        Err(message) => vec![RecordChange::SetStatus {
            version: rollback,
            status: Status::FAILED,
            description: format!("Rollback {} failed: {message}", go_quote(extension)),
        }],
    }
}

/// Marks a failed upgrade as rolled back: `superseded`, the reason as its description,
/// [`ROLLED_BACK_LABEL`].
pub fn mark_rolled_back(release: &mut Release, description: &str) {
    history::set_status(release, Status::SUPERSEDED, description);
    let labels = release.labels.get_or_insert_with(Default::default);
    labels.remove(WATCH_LABEL);
    labels.insert(ROLLED_BACK_LABEL.to_owned(), "true".to_owned());
}

/// A rollback that is in force: the deployed rollback record and the upgrade it undid.
#[derive(Clone, Copy, Debug)]
pub struct RolledBack<'a> {
    pub failed: &'a Release,
    pub deployed: &'a Release,
    generation: Option<i64>,
}

/// The rollback in force, when the deployed release is a rollback record.
pub fn rolled_back(releases: &[Release]) -> Option<RolledBack<'_>> {
    let deployed = history::deployed(releases)?;
    let generation = deployed.label(ROLLBACK_GENERATION_LABEL)?;
    let failed = releases
        .iter()
        .filter(|r| r.version < deployed.version && r.label(ROLLED_BACK_LABEL).is_some())
        .max_by_key(|r| r.version)?;
    Some(RolledBack {
        failed,
        deployed,
        generation: generation.parse().ok(),
    })
}

impl RolledBack<'_> {
    /// Whether resolving `bundle` at `generation` is the failed upgrade again, which is not
    /// retried: same ClusterExtension generation, same bundle name, version and image.
    pub fn holds(&self, generation: Option<i64>, bundle: BundleIdentity<'_>) -> bool {
        self.generation.is_some()
            && self.generation == generation
            && bundle.recorded_in(self.failed)
    }

    /// `Progressing`'s message while the rollback holds.
    pub fn message(&self, extension: &str) -> String {
        let label = |r: &Release, k| r.label(k).unwrap_or_default().to_owned();
        let failed = label(self.failed, BUNDLE_NAME_LABEL);
        let prefix = history::upgrade_failed_description(extension, "");
        let description = self
            .failed
            .info
            .as_ref()
            .map(|i| i.description.as_str())
            .unwrap_or_default();
        format!(
            "upgrade to {failed} ({}) was rolled back to {} ({}): {}; {failed} is not retried until the ClusterExtension's spec or the resolved bundle changes",
            label(self.failed, BUNDLE_VERSION_LABEL),
            label(self.deployed, BUNDLE_NAME_LABEL),
            label(self.deployed, BUNDLE_VERSION_LABEL),
            description.strip_prefix(&prefix).unwrap_or(description),
        )
    }
}

#[cfg(test)]
mod tests;
