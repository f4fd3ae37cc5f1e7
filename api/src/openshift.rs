//! A minimal subset of OpenShift's `config.openshift.io/v1` API: `ClusterOperator` and
//! `ClusterVersion`, with only the fields OLM's cluster-upgrade gating reads or writes.
//!
//! Input: nothing. Output: types and their CRDs (committed under `config/openshift/`), used to run
//! the gating against a plain kube-apiserver in tests. No IO.
//!
//! Fields the upgrade gating uses:
//!
//! | kind            | field                                  | why                                          |
//! |-----------------|----------------------------------------|----------------------------------------------|
//! | ClusterOperator | `status.conditions[]` (`Upgradeable`)  | `False` blocks minor cluster updates          |
//! | ClusterOperator | `status.versions[]` (`operator`)       | the operator's reported version               |
//! | ClusterOperator | `status.relatedObjects[]`              | what `oc adm must-gather` collects            |
//! | ClusterVersion  | `spec.channel`, `spec.desiredUpdate`   | the update a cluster admin asked for          |
//! | ClusterVersion  | `status.desired.version`, `status.history[]` | the current and target cluster versions |
//!
//! The real CRDs carry more fields; objects of these kinds written by a real cluster keep only the
//! fields listed here when applied to a test API server (the rest are pruned).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::v1::ConditionStatus;

/// API group of both kinds.
pub const GROUP: &str = "config.openshift.io";
/// Condition type that, when `False` on any ClusterOperator, blocks minor cluster updates.
pub const UPGRADEABLE: &str = "Upgradeable";
/// Name of the singleton ClusterVersion.
pub const CLUSTER_VERSION_NAME: &str = "version";

/// The desired state of a ClusterOperator: empty; operators report through `status` only.
// Several `printcolumn(...)` entries repeat `type_`, which clippy mistakes for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterOperator",
    plural = "clusteroperators",
    shortname = "co",
    doc = "A ClusterOperator is how a cluster operator reports its health, version and whether the cluster may be updated (subset of OpenShift's type, for tests).",
    status = "ClusterOperatorStatus",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.versions[?(@.name==\"operator\")].version"
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status"
    ),
    printcolumn(
        name = "Progressing",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Progressing\")].status"
    ),
    printcolumn(
        name = "Degraded",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Degraded\")].status"
    ),
    printcolumn(
        name = "Since",
        type_ = "date",
        json_path = ".status.conditions[?(@.type==\"Available\")].lastTransitionTime"
    )
)]
pub struct ClusterOperatorSpec {}

/// What a cluster operator reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperatorStatus {
    /// The operator's state: `Available`, `Progressing`, `Degraded`, `Upgradeable` and
    /// `EvaluationConditionsDetected`. `Upgradeable=False` blocks minor cluster updates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<ClusterOperatorStatusCondition>,

    /// Versions of the operator and its operands; an available operator reports `operator`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub versions: Vec<OperandVersion>,

    /// Objects that help debug the operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub related_objects: Vec<ObjectReference>,
}

/// One aspect of a cluster operator's (or the cluster version's) state.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperatorStatusCondition {
    /// The condition's type, e.g. `Upgradeable`.
    #[serde(rename = "type")]
    #[schemars(length(min = 1))]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// When the status last changed.
    pub last_transition_time: Time,
    /// A CamelCase reason for the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A named version.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct OperandVersion {
    /// `operator` for the operator itself, otherwise the operand's name.
    pub name: String,
    /// The version, semver where possible.
    pub version: String,
}

/// A reference to an object related to an operator.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct ObjectReference {
    /// API group of the object (empty for the core group).
    pub group: String,
    /// Resource (plural) of the object.
    pub resource: String,
    /// Namespace of a namespaced object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the object.
    pub name: String,
}

/// The desired state of the cluster's version: which update to apply.
// Several `printcolumn(...)` entries repeat `type_`, which clippy mistakes for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterVersion",
    plural = "clusterversions",
    doc = "The ClusterVersion singleton (named `version`) says which OpenShift version the cluster runs and which update is wanted (subset of OpenShift's type, for tests).",
    status = "ClusterVersionStatus",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.history[?(@.state==\"Completed\")].version"
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status"
    ),
    printcolumn(
        name = "Progressing",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Progressing\")].status"
    ),
    printcolumn(
        name = "Since",
        type_ = "date",
        json_path = ".status.conditions[?(@.type==\"Progressing\")].lastTransitionTime"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionSpec {
    /// The cluster's unique identifier (a UUID on real clusters).
    #[serde(rename = "clusterID")]
    #[schemars(length(min = 1))]
    pub cluster_id: String,
    /// The update channel, e.g. `stable-4.18`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The update the administrator asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_update: Option<Update>,
}

/// A requested update, by version and/or image.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Update {
    /// The target version, e.g. `4.18.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The target release image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Whether to skip precondition checks (including `Upgradeable=False`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
}

/// The observed state of the cluster's version.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionStatus {
    /// The version the cluster is reconciling towards (the update target once one starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Release>,
    /// Updates applied to the cluster, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub history: Vec<UpdateHistory>,
    /// The cluster version operator's conditions (`Available`, `Progressing`, `Upgradeable`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<ClusterOperatorStatusCondition>,
}

/// A release, by version and image.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Release {
    /// The release's version, e.g. `4.18.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The release image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// One applied (or being applied) update.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct UpdateHistory {
    /// `Completed` once every part of the update rolled out, `Partial` before (or if it failed).
    pub state: UpdateState,
    /// The version of this update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The release image of this update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// Whether an update has fully rolled out.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum UpdateState {
    Completed,
    Partial,
}

impl ClusterVersion {
    /// The version of the newest completed update, i.e. the version the cluster runs.
    pub fn current_version(&self) -> Option<&str> {
        self.status
            .as_ref()?
            .history
            .iter()
            .find(|h| h.state == UpdateState::Completed)?
            .version
            .as_deref()
    }
}

impl ClusterOperator {
    /// The condition of type `type_`, if reported.
    pub fn condition(&self, type_: &str) -> Option<&ClusterOperatorStatusCondition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn current_version_is_the_newest_completed_history_entry() {
        let cv: ClusterVersion = serde_json::from_value(json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "spec": {"clusterID": "c0ffee"},
            "status": {"history": [
                {"state": "Partial", "version": "4.19.0"},
                {"state": "Completed", "version": "4.18.3"},
                {"state": "Completed", "version": "4.17.9"}
            ]}
        }))
        .unwrap();
        assert_eq!(cv.current_version(), Some("4.18.3"));
    }

    #[test]
    fn cluster_operator_round_trips_with_upstream_field_names() {
        let value = json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterOperator",
            "metadata": {"name": "olm"},
            "spec": {},
            "status": {
                "conditions": [{
                    "type": "Upgradeable", "status": "False",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "reason": "IncompatibleOperatorsInstalled", "message": "m"
                }],
                "versions": [{"name": "operator", "version": "4.18.0"}],
                "relatedObjects": [{"group": "", "resource": "namespaces", "name": "openshift-operator-controller"}]
            }
        });
        let co: ClusterOperator = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(
            co.condition(UPGRADEABLE).unwrap().status,
            ConditionStatus::False
        );
        assert_eq!(serde_json::to_value(&co).unwrap(), value);
    }
}
