//! Status conditions: the wire type and the closed vocabulary of condition types and reasons.
//!
//! Input: nothing. Output: types only. No IO.
//!
//! Conditions are kept in one place so that every controller sets them through [`set_condition`],
//! which preserves `lastTransitionTime` while the status does not change, always records
//! `observedGeneration`, and truncates messages to the API limit. Errors become conditions through
//! [`crate::condition_error::ConditionError`].
//!
//! Condition types (upstream's, per kind in [`ConditionType::CLUSTER_CATALOG`] and
//! [`ConditionType::CLUSTER_EXTENSION`]):
//!
//! | type | kind | meaning |
//! |---|---|---|
//! | `Serving` | ClusterCatalog | the catalog's content is served at `status.urls.base` |
//! | `Progressing` | both | the controller moves the object toward its spec: True/`Succeeded` when there, True/`Retrying` after a retryable error, False/`Blocked` after a terminal one |
//! | `Installed` | ClusterExtension | a bundle is installed (`status.install` names it) |
//! | `Deprecated` | ClusterExtension | the package, a followed channel or the installed bundle is deprecated |
//! | `PackageDeprecated` | ClusterExtension | the catalog deprecates the package |
//! | `ChannelDeprecated` | ClusterExtension | a channel the extension follows is deprecated |
//! | `BundleDeprecated` | ClusterExtension | the installed bundle is deprecated |
//! | `Available` | ClusterExtension | every Deployment of the installed bundle is available (upstream sets it only in its experimental Boxcutter mode; we set it always) |
//! | `Approved` | ClusterExtension | only when `spec.install.approval.mode` is not `Automatic` (beyond upstream): whether the resolved bundle may be installed (True/`Approved`) or waits for approval (False/`AwaitingApproval`, `status.pendingApproval` names it) |
//! | `ClusterUpgradeable` | ClusterExtension | OpenShift mode only (beyond upstream): whether the installed bundle's `olm.maxOpenShiftVersion` lets the cluster upgrade to its next minor version, and if not, which bundle versions would |
//!
//! Condition reasons (per kind in [`ConditionReason::CLUSTER_CATALOG`] and
//! [`ConditionReason::CLUSTER_EXTENSION`]):
//!
//! | reason | set on | meaning |
//! |---|---|---|
//! | `Succeeded` | `Progressing` True | the desired state is reached |
//! | `Retrying` | `Progressing` True | an error occurred and the controller retries; the message is the error |
//! | `Blocked` | `Progressing` False | a terminal error: only a change of the object can unblock it |
//! | `Available` | `Serving` True | content from the resolved source is served |
//! | `Unavailable` | `Serving` False | content is not served (upstream: while the catalog is being deleted) |
//! | `UserSpecifiedUnavailable` | `Serving` False | `spec.availabilityMode` is `Unavailable` |
//! | `Failed` | `Installed` False/Unknown | nothing could be installed; the message says why |
//! | `Deprecated` | deprecation types True | the catalog deprecates it; the message is the catalog's text |
//! | `NotDeprecated` | deprecation types False | nothing applicable is deprecated |
//! | `DeprecationStatusUnknown` | deprecation types Unknown | no catalog data to decide |
//! | `InvalidConfiguration` | `Progressing` False | the bundle configuration (`spec.config`) is invalid |
//! | `Absent` | `BundleDeprecated` Unknown | no bundle is installed yet |
//! | `ProbesSucceeded` | `Available` True (ClusterExtension) | every rendered Deployment is Available (upstream's experimental reason) |
//! | `ProbeFailure` | `Available` False (ClusterExtension) | a rendered Deployment is not Available; the message names it |
//! | `MaxOpenShiftVersionCompatible` | `ClusterUpgradeable` True | the installed bundle declares no `olm.maxOpenShiftVersion`, or one above the cluster's version |
//! | `MaxOpenShiftVersionIncompatible` | `ClusterUpgradeable` False | the installed bundle's `olm.maxOpenShiftVersion` blocks the next minor cluster upgrade; the message lists the bundle versions that would lift the block |
//! | `MaxOpenShiftVersionInvalid` | `ClusterUpgradeable` False | the installed bundle's `olm.properties` or `olm.maxOpenShiftVersion` cannot be read (upstream then blocks the upgrade too); the message is upstream's error |
//! | `Approved` | `Approved` True | nothing waits for approval: the resolved bundle is installed, or is the approved version, or (AutomaticUnlessEscalation) widens nothing |
//! | `AwaitingApproval` | `Approved` False | the resolved bundle is not installed until approved; the message says how and what it would change |
//! | `ClusterVersionUnknown` | `ClusterUpgradeable` Unknown | the cluster's OpenShift version is not known (no `OPERATOR_IMAGE_VERSION` and no completed update in ClusterVersion `version`, or not read yet), so nothing is judged |

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Maximum length of a condition message accepted by the API server.
pub const MAX_CONDITION_MESSAGE_LEN: usize = 32768;
/// Suffix appended to a message that had to be shortened to fit [`MAX_CONDITION_MESSAGE_LEN`].
pub const TRUNCATION_SUFFIX: &str = "\n\n... [message truncated]";

/// One aspect of the observed state of an object, in the shape of `metav1.Condition`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition's kind, in CamelCase (for example `Serving` or `Installed`).
    #[serde(rename = "type")]
    #[schemars(length(max = 316))]
    #[schemars(regex(
        pattern = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
    ))]
    pub type_: String,
    /// Whether the condition holds: `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// The `.metadata.generation` this condition was computed from; older than the object's
    /// generation means the condition is stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub observed_generation: Option<i64>,
    /// When the status last changed (not when the condition was last written).
    pub last_transition_time: Time,
    /// A CamelCase machine-readable reason for the current status.
    #[schemars(length(min = 1, max = 1024))]
    #[schemars(regex(pattern = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"))]
    pub reason: String,
    /// A human-readable explanation; may be empty.
    #[schemars(length(max = 32768))]
    pub message: String,
}

/// Status of a condition.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

/// Every condition type either controller sets (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionType {
    // ClusterCatalog
    Serving,
    // Both kinds
    Progressing,
    // ClusterExtension
    Installed,
    Deprecated,
    PackageDeprecated,
    ChannelDeprecated,
    BundleDeprecated,
    Available,
    ClusterUpgradeable,
    Approved,
}

impl ConditionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionType::Serving => "Serving",
            ConditionType::Progressing => "Progressing",
            ConditionType::Installed => "Installed",
            ConditionType::Deprecated => "Deprecated",
            ConditionType::PackageDeprecated => "PackageDeprecated",
            ConditionType::ChannelDeprecated => "ChannelDeprecated",
            ConditionType::BundleDeprecated => "BundleDeprecated",
            ConditionType::Available => "Available",
            ConditionType::ClusterUpgradeable => "ClusterUpgradeable",
            ConditionType::Approved => "Approved",
        }
    }

    /// Every condition type.
    pub const ALL: [ConditionType; 10] = [
        ConditionType::Serving,
        ConditionType::Progressing,
        ConditionType::Installed,
        ConditionType::Deprecated,
        ConditionType::PackageDeprecated,
        ConditionType::ChannelDeprecated,
        ConditionType::BundleDeprecated,
        ConditionType::Available,
        ConditionType::ClusterUpgradeable,
        ConditionType::Approved,
    ];

    /// The condition types a ClusterCatalog carries.
    pub const CLUSTER_CATALOG: [ConditionType; 2] =
        [ConditionType::Serving, ConditionType::Progressing];
    /// The condition types a ClusterExtension carries (upstream's `conditionsets`, plus
    /// `Available`, `ClusterUpgradeable` in OpenShift mode only, and `Approved` when approval is
    /// not automatic).
    pub const CLUSTER_EXTENSION: [ConditionType; 9] = [
        ConditionType::Installed,
        ConditionType::Deprecated,
        ConditionType::PackageDeprecated,
        ConditionType::ChannelDeprecated,
        ConditionType::BundleDeprecated,
        ConditionType::Progressing,
        ConditionType::Available,
        ConditionType::ClusterUpgradeable,
        ConditionType::Approved,
    ];
}

/// Every condition reason either controller sets (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionReason {
    // Shared
    Succeeded,
    Retrying,
    Blocked,
    // ClusterCatalog Serving
    Available,
    Unavailable,
    UserSpecifiedUnavailable,
    // ClusterExtension
    Failed,
    Deprecated,
    NotDeprecated,
    DeprecationStatusUnknown,
    InvalidConfiguration,
    Absent,
    // ClusterExtension Available (upstream's experimental Boxcutter reasons)
    ProbesSucceeded,
    ProbeFailure,
    // ClusterExtension ClusterUpgradeable (OpenShift mode, beyond upstream)
    MaxOpenShiftVersionCompatible,
    MaxOpenShiftVersionIncompatible,
    MaxOpenShiftVersionInvalid,
    ClusterVersionUnknown,
    // ClusterExtension Approved (beyond upstream)
    Approved,
    AwaitingApproval,
}

impl ConditionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionReason::Succeeded => "Succeeded",
            ConditionReason::Retrying => "Retrying",
            ConditionReason::Blocked => "Blocked",
            ConditionReason::Available => "Available",
            ConditionReason::Unavailable => "Unavailable",
            ConditionReason::UserSpecifiedUnavailable => "UserSpecifiedUnavailable",
            ConditionReason::Failed => "Failed",
            ConditionReason::Deprecated => "Deprecated",
            ConditionReason::NotDeprecated => "NotDeprecated",
            ConditionReason::DeprecationStatusUnknown => "DeprecationStatusUnknown",
            ConditionReason::InvalidConfiguration => "InvalidConfiguration",
            ConditionReason::Absent => "Absent",
            ConditionReason::ProbesSucceeded => "ProbesSucceeded",
            ConditionReason::ProbeFailure => "ProbeFailure",
            ConditionReason::MaxOpenShiftVersionCompatible => "MaxOpenShiftVersionCompatible",
            ConditionReason::MaxOpenShiftVersionIncompatible => "MaxOpenShiftVersionIncompatible",
            ConditionReason::MaxOpenShiftVersionInvalid => "MaxOpenShiftVersionInvalid",
            ConditionReason::ClusterVersionUnknown => "ClusterVersionUnknown",
            ConditionReason::Approved => "Approved",
            ConditionReason::AwaitingApproval => "AwaitingApproval",
        }
    }

    /// Every condition reason.
    pub const ALL: [ConditionReason; 20] = [
        ConditionReason::Succeeded,
        ConditionReason::Retrying,
        ConditionReason::Blocked,
        ConditionReason::Available,
        ConditionReason::Unavailable,
        ConditionReason::UserSpecifiedUnavailable,
        ConditionReason::Failed,
        ConditionReason::Deprecated,
        ConditionReason::NotDeprecated,
        ConditionReason::DeprecationStatusUnknown,
        ConditionReason::InvalidConfiguration,
        ConditionReason::Absent,
        ConditionReason::ProbesSucceeded,
        ConditionReason::ProbeFailure,
        ConditionReason::MaxOpenShiftVersionCompatible,
        ConditionReason::MaxOpenShiftVersionIncompatible,
        ConditionReason::MaxOpenShiftVersionInvalid,
        ConditionReason::ClusterVersionUnknown,
        ConditionReason::Approved,
        ConditionReason::AwaitingApproval,
    ];

    /// The reasons a ClusterCatalog's conditions carry (upstream catalogd's).
    pub const CLUSTER_CATALOG: [ConditionReason; 6] = [
        ConditionReason::Succeeded,
        ConditionReason::Retrying,
        ConditionReason::Blocked,
        ConditionReason::Available,
        ConditionReason::Unavailable,
        ConditionReason::UserSpecifiedUnavailable,
    ];

    /// The reasons a ClusterExtension's conditions carry (upstream's `conditionsets`, without the
    /// Boxcutter-only `RollingOut` and `ProgressDeadlineExceeded`), plus the experimental
    /// `Available` condition's two reasons, the OpenShift-mode `ClusterUpgradeable` reasons and
    /// the `Approved` reasons.
    pub const CLUSTER_EXTENSION: [ConditionReason; 17] = [
        ConditionReason::Succeeded,
        ConditionReason::Deprecated,
        ConditionReason::NotDeprecated,
        ConditionReason::DeprecationStatusUnknown,
        ConditionReason::Failed,
        ConditionReason::Blocked,
        ConditionReason::InvalidConfiguration,
        ConditionReason::Retrying,
        ConditionReason::Absent,
        ConditionReason::ProbesSucceeded,
        ConditionReason::ProbeFailure,
        ConditionReason::MaxOpenShiftVersionCompatible,
        ConditionReason::MaxOpenShiftVersionIncompatible,
        ConditionReason::MaxOpenShiftVersionInvalid,
        ConditionReason::ClusterVersionUnknown,
        ConditionReason::Approved,
        ConditionReason::AwaitingApproval,
    ];
}

/// Shortens `message` to the API limit, marking the cut. Cuts on a character boundary.
pub fn truncate_message(message: &str) -> String {
    if message.len() <= MAX_CONDITION_MESSAGE_LEN {
        return message.to_string();
    }
    let mut end = MAX_CONDITION_MESSAGE_LEN - TRUNCATION_SUFFIX.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{}", &message[..end], TRUNCATION_SUFFIX)
}

/// Sets (adds or replaces) the condition of type `type_` in `conditions`.
///
/// | existing condition | status changes | lastTransitionTime |
/// |---|---|---|
/// | none | – | `now` |
/// | present | no | kept |
/// | present | yes | `now` |
///
/// `observedGeneration` is always set to `generation`; the message is truncated to the API limit.
/// Returns true when anything in the list changed.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: ConditionType,
    status: ConditionStatus,
    reason: ConditionReason,
    message: &str,
    generation: Option<i64>,
    now: Time,
) -> bool {
    let message = truncate_message(message);
    let new = |last_transition_time| Condition {
        type_: type_.as_str().to_string(),
        status,
        observed_generation: generation,
        last_transition_time,
        reason: reason.as_str().to_string(),
        message: message.clone(),
    };
    match conditions.iter_mut().find(|c| c.type_ == type_.as_str()) {
        Some(existing) => {
            let transition = if existing.status == status {
                existing.last_transition_time.clone()
            } else {
                now
            };
            let updated = new(transition);
            if *existing == updated {
                false
            } else {
                *existing = updated;
                true
            }
        }
        None => {
            conditions.push(new(now));
            true
        }
    }
}

/// Finds the condition of the given type.
pub fn find_condition(conditions: &[Condition], type_: ConditionType) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == type_.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("valid timestamp"))
    }

    #[test]
    fn set_condition_keeps_transition_time_while_status_is_unchanged() {
        let mut conds = Vec::new();
        assert!(set_condition(
            &mut conds,
            ConditionType::Serving,
            ConditionStatus::True,
            ConditionReason::Available,
            "a",
            Some(1),
            at(10)
        ));
        assert!(set_condition(
            &mut conds,
            ConditionType::Serving,
            ConditionStatus::True,
            ConditionReason::Available,
            "b",
            Some(2),
            at(20)
        ));
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].last_transition_time, at(10));
        assert_eq!(conds[0].message, "b");
        assert_eq!(conds[0].observed_generation, Some(2));
    }

    #[test]
    fn set_condition_moves_transition_time_when_status_changes() {
        let mut conds = Vec::new();
        set_condition(
            &mut conds,
            ConditionType::Progressing,
            ConditionStatus::True,
            ConditionReason::Retrying,
            "x",
            Some(1),
            at(10),
        );
        set_condition(
            &mut conds,
            ConditionType::Progressing,
            ConditionStatus::False,
            ConditionReason::Blocked,
            "x",
            Some(1),
            at(30),
        );
        assert_eq!(conds[0].last_transition_time, at(30));
        assert_eq!(conds[0].reason, "Blocked");
    }

    #[test]
    fn set_condition_reports_no_change_for_identical_input() {
        let mut conds = Vec::new();
        let set = |c: &mut Vec<Condition>, t| {
            set_condition(
                c,
                ConditionType::Installed,
                ConditionStatus::True,
                ConditionReason::Succeeded,
                "m",
                Some(3),
                t,
            )
        };
        assert!(set(&mut conds, at(1)));
        assert!(!set(&mut conds, at(2)));
    }

    /// Vocabulary that no product code sets yet, and why. The completeness test below fails when
    /// an entry here starts being used (take it off the list) or anything else is unused.
    const NOT_SET_YET: &[(&str, &str)] = &[];

    /// Which variant index `ALL` holds; a new variant fails to compile here until it is listed.
    fn type_index(t: ConditionType) -> usize {
        match t {
            ConditionType::Serving => 0,
            ConditionType::Progressing => 1,
            ConditionType::Installed => 2,
            ConditionType::Deprecated => 3,
            ConditionType::PackageDeprecated => 4,
            ConditionType::ChannelDeprecated => 5,
            ConditionType::BundleDeprecated => 6,
            ConditionType::Available => 7,
            ConditionType::ClusterUpgradeable => 8,
            ConditionType::Approved => 9,
        }
    }

    fn reason_index(r: ConditionReason) -> usize {
        match r {
            ConditionReason::Succeeded => 0,
            ConditionReason::Retrying => 1,
            ConditionReason::Blocked => 2,
            ConditionReason::Available => 3,
            ConditionReason::Unavailable => 4,
            ConditionReason::UserSpecifiedUnavailable => 5,
            ConditionReason::Failed => 6,
            ConditionReason::Deprecated => 7,
            ConditionReason::NotDeprecated => 8,
            ConditionReason::DeprecationStatusUnknown => 9,
            ConditionReason::InvalidConfiguration => 10,
            ConditionReason::Absent => 11,
            ConditionReason::ProbesSucceeded => 12,
            ConditionReason::ProbeFailure => 13,
            ConditionReason::MaxOpenShiftVersionCompatible => 14,
            ConditionReason::MaxOpenShiftVersionIncompatible => 15,
            ConditionReason::MaxOpenShiftVersionInvalid => 16,
            ConditionReason::ClusterVersionUnknown => 17,
            ConditionReason::Approved => 18,
            ConditionReason::AwaitingApproval => 19,
        }
    }

    /// Like upstream's registration tests (`api/v1/*_types_test.go`): every type and reason is
    /// listed, registered for a kind, and documented in this module's tables.
    #[test]
    fn every_condition_type_and_reason_is_registered_and_documented() {
        let source = std::fs::read_to_string(crate_dir().join("src/v1/condition.rs"))
            .expect("read condition.rs");
        for (i, t) in ConditionType::ALL.iter().enumerate() {
            assert_eq!(type_index(*t), i, "{t:?}");
            assert!(
                ConditionType::CLUSTER_CATALOG.contains(t)
                    || ConditionType::CLUSTER_EXTENSION.contains(t),
                "{t:?} belongs to no kind"
            );
            assert!(
                source.contains(&format!("//! | `{}` | ", t.as_str())),
                "{t:?} is missing from the type table"
            );
        }
        for (i, r) in ConditionReason::ALL.iter().enumerate() {
            assert_eq!(reason_index(*r), i, "{r:?}");
            assert!(
                ConditionReason::CLUSTER_CATALOG.contains(r)
                    || ConditionReason::CLUSTER_EXTENSION.contains(r),
                "{r:?} belongs to no kind"
            );
            assert!(
                source.contains(&format!("//! | `{}` | ", r.as_str())),
                "{r:?} is missing from the reason table"
            );
        }
    }

    /// Every type and reason is set by product code somewhere in the workspace (test code does not
    /// count), except the ones listed in [`NOT_SET_YET`], which must indeed be unused.
    #[test]
    fn every_condition_type_and_reason_is_used_by_product_code() {
        let mut product = String::new();
        let root = crate_dir().join("..");
        let mut files = 0;
        for dir in ["api", "image", "runtime", "catalogd", "operator-controller"] {
            files += collect_product_code(&root.join(dir), &mut product);
        }
        assert!(files > 50, "the scan found only {files} source files");
        let names = ConditionType::ALL
            .iter()
            .map(|t| format!("ConditionType::{t:?}"))
            .chain(
                ConditionReason::ALL
                    .iter()
                    .map(|r| format!("ConditionReason::{r:?}")),
            );
        let mut problems = Vec::new();
        for name in names {
            let used = product.contains(&name);
            let reserved = NOT_SET_YET.iter().any(|(n, _)| *n == name);
            match (used, reserved) {
                (false, false) => problems.push(format!("{name} is set nowhere")),
                (true, true) => {
                    problems.push(format!("{name} is used now: take it off NOT_SET_YET"))
                }
                _ => {}
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    fn crate_dir() -> std::path::PathBuf {
        std::env::var_os("CARGO_MANIFEST_DIR")
            .expect("set by cargo")
            .into()
    }

    /// Appends the non-test Rust code under `dir`: no `tests/` or `benches/` trees, no test
    /// files, and each file cut at its `#[cfg(test)]` module; this file's own definitions excluded.
    fn collect_product_code(dir: &std::path::Path, out: &mut String) -> usize {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        let mut files = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "tests" | "benches" | "examples" | "target") {
                    files += collect_product_code(&path, out);
                }
                continue;
            }
            let is_test_file = name == "tests.rs" || name.ends_with("_tests.rs");
            if !name.ends_with(".rs") || is_test_file || path.ends_with("src/v1/condition.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            out.push_str(text.split("#[cfg(test)]").next().unwrap_or_default());
            files += 1;
        }
        files
    }

    #[test]
    fn long_messages_are_truncated_with_a_marker() {
        let long = "é".repeat(MAX_CONDITION_MESSAGE_LEN);
        let t = truncate_message(&long);
        assert!(t.len() <= MAX_CONDITION_MESSAGE_LEN);
        assert!(t.ends_with(TRUNCATION_SUFFIX));
        assert_eq!(truncate_message("short"), "short");
    }
}
