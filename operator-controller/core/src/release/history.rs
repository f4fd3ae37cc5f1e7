//! Which stored release is the installed one, how a new one is numbered and labelled, and which
//! old ones are pruned: Helm v3's storage rules (`pkg/storage`, `pkg/action` install/upgrade) as
//! operator-controller uses them.
//!
//! Input: the releases of one name as read from storage (any order). Output: choices and new
//! release records. No IO.
//!
//! | question | rule (Helm / operator-controller) |
//! |---|---|
//! | installed bundle | the highest-version release whose status is `deployed` (`HelmRevisionStatesGetter`; cluster-olm-operator's `Deployed`) |
//! | "current" release | the highest version, any status (Helm's `Get`, `Last`) |
//! | next version | current + 1; 1 when there is none |
//! | upgrade base | current if `deployed`; else the installed one; else current if `failed`/`superseded`; else none |
//! | pending current | no new release (`another operation (install/upgrade/rollback) is in progress`); the leader may first mark it `failed` ([`interrupt_pending`]), then it is upgraded from |
//! | labels of an upgrade | the current release's labels, overridden by the new ones; a value `null` deletes the key |
//! | before writing a new release | delete the oldest until `max_history - 1` remain, never the installed one |
//! | after an upgrade is applied | the old deployed release becomes `superseded` (description kept), the new one `deployed` / `Upgrade complete` |

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use olm_api::version::go_text::go_quote;

use super::model::{Chart, Info, Release, Status};
use super::time::HelmTime;

/// Releases kept per extension (upstream's `maxHelmReleaseHistory`).
pub const MAX_HISTORY: usize = 10;

/// Release label: the installed bundle's name.
pub const BUNDLE_NAME_LABEL: &str = "olm.operatorframework.io/bundle-name";
/// Release label: the installed bundle's package.
pub const PACKAGE_NAME_LABEL: &str = "olm.operatorframework.io/package-name";
/// Release label: the installed bundle's version.
pub const BUNDLE_VERSION_LABEL: &str = "olm.operatorframework.io/bundle-version";
/// Release label: the installed bundle's image reference.
pub const BUNDLE_REFERENCE_LABEL: &str = "olm.operatorframework.io/bundle-reference";
/// Release label: the bundle's release value, when it has one.
pub const BUNDLE_RELEASE_LABEL: &str = "olm.operatorframework.io/bundle-release";

/// Helm's `errPending`.
pub const PENDING_MESSAGE: &str = "another operation (install/upgrade/rollback) is in progress";

/// The installed bundle as its release labels record it (upstream's `RevisionMetadata`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstalledBundle {
    pub release_version: i64,
    pub package: String,
    pub name: String,
    pub version: String,
    pub image: String,
    /// `bundle-release`, only when the label exists (an empty value is kept).
    pub bundle_release: Option<String>,
}

/// The highest-version release, any status.
pub fn last(releases: &[Release]) -> Option<&Release> {
    releases.iter().max_by_key(|r| r.version)
}

/// The highest-version `deployed` release.
pub fn deployed(releases: &[Release]) -> Option<&Release> {
    releases
        .iter()
        .filter(|r| r.status() == Status::DEPLOYED)
        .max_by_key(|r| r.version)
}

/// The installed bundle, read from the deployed release's labels.
pub fn installed_bundle(releases: &[Release]) -> Option<InstalledBundle> {
    let r = deployed(releases)?;
    let label = |k| r.label(k).unwrap_or_default().to_string();
    Some(InstalledBundle {
        release_version: r.version,
        package: label(PACKAGE_NAME_LABEL),
        name: label(BUNDLE_NAME_LABEL),
        version: label(BUNDLE_VERSION_LABEL),
        image: label(BUNDLE_REFERENCE_LABEL),
        bundle_release: r.label(BUNDLE_RELEASE_LABEL).map(str::to_string),
    })
}

/// The release labels for a bundle (what upstream passes as Helm storage labels).
pub fn bundle_labels(
    package: &str,
    name: &str,
    version: &str,
    image: &str,
    bundle_release: Option<&str>,
) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (BUNDLE_NAME_LABEL.to_string(), name.to_string()),
        (PACKAGE_NAME_LABEL.to_string(), package.to_string()),
        (BUNDLE_VERSION_LABEL.to_string(), version.to_string()),
        (BUNDLE_REFERENCE_LABEL.to_string(), image.to_string()),
    ]);
    if let Some(r) = bundle_release {
        labels.insert(BUNDLE_RELEASE_LABEL.to_string(), r.to_string());
    }
    labels
}

/// Helm's `mergeCustomLabels`: `desired` over `current`; a value `"null"` removes the key.
pub fn merge_custom_labels(
    current: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = current.clone();
    out.extend(desired.iter().map(|(k, v)| (k.clone(), v.clone())));
    out.retain(|_, v| v != "null");
    out
}

/// The versions to delete before writing a new release so that at most `max_history` remain
/// afterwards (Helm's `removeLeastRecent(name, max_history - 1)`): oldest first, skipping the
/// deployed one. `max_history` 0 means unlimited.
pub fn prune_before_create(releases: &[Release], max_history: usize) -> Vec<i64> {
    let records: Vec<(i64, &str)> = releases.iter().map(|r| (r.version, r.status())).collect();
    prune_versions(&records, max_history)
}

/// [`prune_before_create`] over `(version, status)` pairs, as index Secret labels give them
/// without decoding the records.
pub fn prune_versions(records: &[(i64, &str)], max_history: usize) -> Vec<i64> {
    if max_history == 0 {
        return Vec::new();
    }
    let keep = max_history - 1;
    if records.len() <= keep {
        return Vec::new();
    }
    let mut versions: Vec<(i64, &str)> = records.to_vec();
    versions.sort_by_key(|r| r.0);
    let deployed_version = records
        .iter()
        .filter(|r| r.1 == Status::DEPLOYED)
        .map(|r| r.0)
        .max();
    let mut delete = Vec::new();
    for (version, _) in versions {
        if records.len() - delete.len() == keep {
            break;
        }
        if Some(version) != deployed_version {
            delete.push(version);
        }
    }
    delete
}

/// Why no new release can be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{PENDING_MESSAGE}")]
    Pending,
    #[error("{} has no deployed releases", go_quote(.0))]
    NoDeployedReleases(String),
}

/// What a reconcile must do with the release, given the manifest it would store now
/// (upstream's `getReleaseState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseState {
    /// No record: install.
    NeedsInstall,
    /// The last record's manifest differs, or it failed or was superseded: upgrade.
    NeedsUpgrade,
    /// The last record is current: keep its objects applied, write nothing.
    Unchanged,
}

/// upstream's `getReleaseState` over the records of one release:
///
/// | last record (any status)             | manifest       | state          |
/// |--------------------------------------|----------------|----------------|
/// | none                                 | –              | NeedsInstall   |
/// | pending-install/upgrade/rollback     | –              | error (pending) |
/// | failed or superseded                 | –              | NeedsUpgrade   |
/// | other                                | differs        | NeedsUpgrade   |
/// | other                                | byte-identical | Unchanged      |
pub fn release_state(
    releases: &[Release],
    desired_manifest: &str,
) -> Result<ReleaseState, PlanError> {
    let Some(current) = last(releases) else {
        return Ok(ReleaseState::NeedsInstall);
    };
    if current.info.as_ref().is_some_and(|i| i.status.is_pending()) {
        return Err(PlanError::Pending);
    }
    if current.manifest != desired_manifest
        || matches!(current.status(), Status::FAILED | Status::SUPERSEDED)
    {
        return Ok(ReleaseState::NeedsUpgrade);
    }
    Ok(ReleaseState::Unchanged)
}

/// What goes into a new release.
#[derive(Clone, Debug, PartialEq)]
pub struct NewRelease<'a> {
    /// The ClusterExtension's name.
    pub name: &'a str,
    /// The ClusterExtension's `spec.namespace`.
    pub namespace: &'a str,
    pub chart: Chart,
    pub manifest: String,
    /// The bundle identity ([`bundle_labels`]).
    pub labels: BTreeMap<String, String>,
    pub now: Timestamp,
}

/// The first release of a name, `pending-install` as Helm stores it before applying anything.
pub fn install_release(new: NewRelease<'_>) -> Release {
    let now = HelmTime::from_timestamp(new.now);
    Release {
        name: new.name.to_string(),
        info: Some(Info {
            first_deployed: now,
            last_deployed: now,
            status: Status::new(Status::PENDING_INSTALL),
            description: "Initial install underway".to_string(),
            ..Default::default()
        }),
        chart: Some(new.chart),
        config: None,
        manifest: new.manifest,
        hooks: Vec::new(),
        version: 1,
        namespace: new.namespace.to_string(),
        labels: Some(new.labels),
    }
}

/// The next release of a name, `pending-upgrade` as Helm stores it before applying anything,
/// and the release it upgrades from (to mark `superseded` once applied).
pub fn upgrade_release(
    releases: &[Release],
    new: NewRelease<'_>,
) -> Result<(Release, i64), PlanError> {
    let last = last(releases).ok_or_else(|| PlanError::NoDeployedReleases(new.name.to_string()))?;
    if last.info.as_ref().is_some_and(|i| i.status.is_pending()) {
        return Err(PlanError::Pending);
    }
    let current = if last.status() == Status::DEPLOYED {
        last
    } else {
        match deployed(releases) {
            Some(d) => d,
            None if matches!(last.status(), Status::FAILED | Status::SUPERSEDED) => last,
            None => return Err(PlanError::NoDeployedReleases(new.name.to_string())),
        }
    };
    let first_deployed = current
        .info
        .as_ref()
        .map(|i| i.first_deployed)
        .unwrap_or_default();
    let mut labels = merge_custom_labels(&last.labels.clone().unwrap_or_default(), &new.labels);
    // What marked the record before (probation, a rollback) is about that record only; the
    // caller adds this upgrade's own marks to `new.labels`.
    super::rollback::strip_labels(&mut labels);
    labels.extend(
        new.labels
            .iter()
            .filter(|(k, _)| k.as_str() == super::rollback::WATCH_LABEL)
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    let release = Release {
        name: new.name.to_string(),
        info: Some(Info {
            first_deployed,
            last_deployed: HelmTime::from_timestamp(new.now),
            status: Status::new(Status::PENDING_UPGRADE),
            description: "Preparing upgrade".to_string(),
            ..Default::default()
        }),
        chart: Some(new.chart),
        config: None,
        manifest: new.manifest,
        hooks: Vec::new(),
        version: last.version + 1,
        namespace: current.namespace.clone(),
        labels: Some(labels),
    };
    Ok((release, current.version))
}

/// The description [`interrupt_pending`] gives a record left pending.
pub const INTERRUPTED_DESCRIPTION: &str =
    "operation interrupted: operator-controller stopped before it finished; retrying";

/// Marks a record left `pending-*` by a writer that stopped mid-operation as `failed`, so the
/// next reconcile upgrades from it instead of waiting forever (upstream stays stuck on
/// `another operation (install/upgrade/rollback) is in progress`). Only for the leader to call:
/// with leader election no other writer can be mid-operation. Returns whether it changed
/// anything.
pub fn interrupt_pending(release: &mut Release) -> bool {
    if !release.info.as_ref().is_some_and(|i| i.status.is_pending()) {
        return false;
    }
    set_status(release, Status::FAILED, INTERRUPTED_DESCRIPTION);
    true
}

/// Sets a release's status and description (Helm's `SetStatus`).
pub fn set_status(release: &mut Release, status: &str, description: &str) {
    let info = release.info.get_or_insert_with(Info::default);
    info.status = Status::new(status);
    info.description = description.to_string();
}

/// Marks the release an upgrade replaced: only its status changes (Helm keeps the description).
pub fn mark_superseded(release: &mut Release) {
    release.info.get_or_insert_with(Info::default).status = Status::new(Status::SUPERSEDED);
}

/// The description Helm gives a successful install / upgrade.
pub const INSTALL_COMPLETE: &str = "Install complete";
pub const UPGRADE_COMPLETE: &str = "Upgrade complete";

/// Helm's description of a failed install.
pub fn install_failed_description(name: &str, error: &str) -> String {
    format!("Release {} failed: {error}", go_quote(name))
}

/// Helm's description of a failed upgrade.
pub fn upgrade_failed_description(name: &str, error: &str) -> String {
    format!("Upgrade {} failed: {error}", go_quote(name))
}
