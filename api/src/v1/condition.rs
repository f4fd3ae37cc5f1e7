//! Status conditions: the wire type and the closed vocabulary of condition types and reasons.
//!
//! Input: nothing. Output: types only. No IO.
//!
//! Conditions are kept in one place so that every controller sets them through [`set_condition`],
//! which preserves `lastTransitionTime` while the status does not change, always records
//! `observedGeneration`, and truncates messages to the API limit.

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

/// Every condition type either controller sets.
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
        }
    }

    /// The condition types a ClusterCatalog carries.
    pub const CLUSTER_CATALOG: [ConditionType; 2] =
        [ConditionType::Serving, ConditionType::Progressing];
    /// The condition types a ClusterExtension carries.
    pub const CLUSTER_EXTENSION: [ConditionType; 6] = [
        ConditionType::Installed,
        ConditionType::Deprecated,
        ConditionType::PackageDeprecated,
        ConditionType::ChannelDeprecated,
        ConditionType::BundleDeprecated,
        ConditionType::Progressing,
    ];
}

/// Every condition reason either controller sets.
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
        }
    }
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

    #[test]
    fn long_messages_are_truncated_with_a_marker() {
        let long = "é".repeat(MAX_CONDITION_MESSAGE_LEN);
        let t = truncate_message(&long);
        assert!(t.len() <= MAX_CONDITION_MESSAGE_LEN);
        assert!(t.ends_with(TRUNCATION_SUFFIX));
        assert_eq!(truncate_message("short"), "short");
    }
}
