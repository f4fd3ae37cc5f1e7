//! The `ClusterExtension` API (group `olm.operatorframework.io`, version `v1`, cluster-scoped).
//!
//! Input: nothing. Output: types and their OpenAPI schema with upstream's validation rules. No IO.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Condition;

/// Regular expression (CEL syntax, as written in the CRD) for a DNS-1123 subdomain.
const DNS1123_SUBDOMAIN_RULE: &str =
    r#"self.matches("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")"#;

/// The desired state of a ClusterExtension: which package to install, into which namespace, and
/// the constraints on which of its bundles may be installed.
// Several `printcolumn(...)` entries repeat `type_`, which clippy mistakes for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "olm.operatorframework.io",
    version = "v1",
    kind = "ClusterExtension",
    plural = "clusterextensions",
    doc = "A ClusterExtension asks for a package from the cluster's catalogs to be installed and kept up to date within the constraints it states.",
    status = "ClusterExtensionStatus",
    printcolumn(
        name = "Installed Bundle",
        type_ = "string",
        json_path = ".status.install.bundle.name"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.install.bundle.version"
    ),
    printcolumn(
        name = "Installed",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Installed')].status"
    ),
    printcolumn(
        name = "Progressing",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Progressing')].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Latest",
        type_ = "string",
        json_path = ".status.availableUpdates[0].version",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionSpec {
    /// The namespace the extension's namespaced objects are installed into. It must already exist,
    /// must be a DNS-1123 label (lowercase alphanumerics and `-`, starting and ending with an
    /// alphanumeric, at most 63 characters) and cannot be changed after creation.
    #[schemars(length(max = 63))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"message": "namespace is immutable", "rule": "self == oldSelf"},
        {
            "message": "namespace must be a valid DNS1123 label",
            "rule": r#"self.matches("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")"#
        }
    ]))]
    pub namespace: String,

    /// Deprecated upstream, honoured here: when set, the extension's objects are applied with the
    /// permissions of this service account (in `namespace`), and any permission it lacks is
    /// reported in the Progressing condition. When unset, the controller's own identity is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountReference>,

    /// Where the extension's content comes from. Required.
    pub source: SourceConfig,

    /// Options for how the content is installed and upgraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<ClusterExtensionInstallConfig>,

    /// Bundle-specific configuration, validated against the configuration the resolved bundle
    /// accepts (for registry+v1 bundles: `watchNamespace`). When omitted the bundle's defaults apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ClusterExtensionConfig>,
}

/// Identifies a service account in the extension's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ServiceAccountReference {
    /// The service account's name: a DNS-1123 subdomain of at most 253 characters. Once set it
    /// cannot be changed, but it may be removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"message": "name is immutable once set but may be cleared", "rule": "self == oldSelf"},
        {
            "message": "name must be a valid DNS1123 subdomain. It must contain only lowercase alphanumeric characters, hyphens (-) or periods (.), start and end with an alphanumeric character, and be no longer than 253 characters",
            "rule": DNS1123_SUBDOMAIN_RULE
        }
    ]))]
    pub name: Option<String>,
}

/// The source of an extension. Exactly one kind of source is set, matching `sourceType`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "catalog is required when sourceType is Catalog, and forbidden otherwise",
    "rule": "has(self.sourceType) && self.sourceType == 'Catalog' ? has(self.catalog) : !has(self.catalog)"
}]))]
pub struct SourceConfig {
    /// The kind of source. The only supported value is `Catalog`: content is chosen from the
    /// cluster's ClusterCatalogs as configured in `catalog`.
    pub source_type: ExtensionSourceType,
    /// How to choose content from catalogs. Required when `sourceType` is `Catalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogFilter>,
}

/// Kinds of extension source.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ExtensionSourceType {
    #[default]
    Catalog,
}

/// Which bundle of a package to install, and from which catalogs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogFilter {
    /// The package to install: a DNS-1123 subdomain of at most 253 characters. Cannot be changed
    /// after creation.
    #[schemars(length(max = 253))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"message": "packageName is immutable", "rule": "self == oldSelf"},
        {
            "message": "packageName must be a valid DNS1123 subdomain. It must contain only lowercase alphanumeric characters, hyphens (-) or periods (.), start and end with an alphanumeric character, and be no longer than 253 characters",
            "rule": DNS1123_SUBDOMAIN_RULE
        }
    ]))]
    pub package_name: String,

    /// A version or version range the installed bundle must satisfy. When omitted any version may
    /// be installed, and the newest one allowed by the upgrade rules is chosen.
    ///
    /// Comparisons: `=` (or no operator), `!=`, `>`, `<`, `>=` (also `=>`), `<=` (also `=<`).
    /// Comparisons separated by spaces or commas must all hold; `||` separates alternatives, for
    /// example `>=1.2.3, <2.0.0 || >3.0.0`.
    ///
    /// Wildcards `x`, `X` and `*` stand for any number: `1.2.x` means `>=1.2.0, <1.3.0`, `>=1.2.x`
    /// means `>=1.2.0`, `<=2.x` means `<3`, and `*` alone means any version.
    ///
    /// `~` allows patch releases: `~1.2.3` means `>=1.2.3, <1.3.0`, `~1` means `>=1, <2`.
    /// `^` allows releases up to the next major version, or, below 1.0.0, up to the next
    /// non-zero component: `^1.2.3` means `>=1.2.3, <2.0.0`, `^0.2.3` means `>=0.2.3, <0.3.0`,
    /// `^0.0.3` means `>=0.0.3, <0.0.4`.
    ///
    /// Pre-release versions match only when a comparison in the same group names a pre-release.
    /// An exact version such as `1.11.1` pins the extension to that version. At most 64 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-validations" = [{
        "message": "invalid version expression",
        "rule": r#"self.matches("^(\\s*(=||!=|>|<|>=|=>|<=|=<|~|~>|\\^)\\s*(v?(0|[1-9]\\d*|[x|X|\\*])(\\.(0|[1-9]\\d*|x|X|\\*]))?(\\.(0|[1-9]\\d*|x|X|\\*))?(-([0-9A-Za-z\\-]+(\\.[0-9A-Za-z\\-]+)*))?(\\+([0-9A-Za-z\\-]+(\\.[0-9A-Za-z\\-]+)*))?)\\s*)((?:\\s+|,\\s*|\\s*\\|\\|\\s*)(=||!=|>|<|>=|=>|<=|=<|~|~>|\\^)\\s*(v?(0|[1-9]\\d*|x|X|\\*])(\\.(0|[1-9]\\d*|x|X|\\*))?(\\.(0|[1-9]\\d*|x|X|\\*]))?(-([0-9A-Za-z\\-]+(\\.[0-9A-Za-z\\-]+)*))?(\\+([0-9A-Za-z\\-]+(\\.[0-9A-Za-z\\-]+)*))?)\\s*)*$")"#
    }]))]
    pub version: Option<String>,

    /// Channels to choose bundles from. When set, only bundles in at least one of these channels
    /// are candidates, and upgrades follow only the edges those channels declare. When omitted,
    /// bundles of every channel (and of none) are candidates. Together with `version`, both must
    /// hold. Each entry is a DNS-1123 subdomain of at most 253 characters; at most 256 entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "channels_schema")]
    pub channels: Vec<String>,

    /// Restricts the catalogs considered to those whose labels match. Every catalog carries the
    /// label `olm.operatorframework.io/metadata.name` with its own name. When omitted or empty,
    /// all catalogs are considered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub selector: Option<LabelSelector>,

    /// Which upgrades and downgrades are allowed. `CatalogProvided` (the default) follows only the
    /// upgrade edges the catalog declares (replaces, skips, skipRange). `SelfCertified` allows any
    /// version permitted by `version` and `channels`, including downgrades; check the
    /// consequences first, as an unsupported upgrade or rollback can lose data.
    #[serde(default)]
    pub upgrade_constraint_policy: UpgradeConstraintPolicy,
}

/// `metav1.LabelSelector` as upstream publishes it (atomic map and lists), which k8s-openapi's
/// schema does not mark.
fn label_selector_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "A label query over catalogs: matchLabels and matchExpressions must all hold; an empty selector matches every catalog.",
        "type": "object",
        "x-kubernetes-map-type": "atomic",
        "properties": {
            "matchExpressions": {
                "description": "Requirements on labels, all of which must hold.",
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "description": "A requirement on one label key.",
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"description": "The label key the requirement applies to.", "type": "string"},
                        "operator": {
                            "description": "How the key relates to the values: In, NotIn, Exists or DoesNotExist.",
                            "type": "string"
                        },
                        "values": {
                            "description": "Values for In and NotIn (non-empty); empty for Exists and DoesNotExist.",
                            "type": "array",
                            "x-kubernetes-list-type": "atomic",
                            "items": {"type": "string"}
                        }
                    }
                }
            },
            "matchLabels": {
                "description": "Labels that must be present with exactly these values.",
                "type": "object",
                "additionalProperties": {"type": "string"}
            }
        }
    })
}

fn channels_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "maxItems": 256,
        "items": {
            "type": "string",
            "maxLength": 253,
            "x-kubernetes-validations": [{
                "message": "channels entries must be valid DNS1123 subdomains",
                "rule": DNS1123_SUBDOMAIN_RULE
            }]
        }
    })
}

/// How upgrades are constrained.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UpgradeConstraintPolicy {
    #[default]
    CatalogProvided,
    SelfCertified,
}

/// Options for installing and upgrading an extension.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "at least one of [preflight, approval, rollback] are required when install is specified",
    "rule": "has(self.preflight) || has(self.approval) || has(self.rollback)"
}]))]
pub struct ClusterExtensionInstallConfig {
    /// Checks run before an install or upgrade is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<PreflightConfig>,

    /// Whether a newly resolved bundle is installed at once or waits for an administrator's
    /// approval. When omitted, every install and upgrade proceeds (`Automatic`). An addition of
    /// this implementation: upstream has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalConfig>,

    /// Whether a failed upgrade returns to the release installed before it. When omitted,
    /// nothing is rolled back (`None`), as upstream. An addition of this implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackConfig>,
}

/// Rolling back a failed upgrade.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollbackConfig {
    /// `None` (the default): a failed upgrade stays as it is and is retried. `OnFailure`: when
    /// applying an upgrade fails part-way, or the new release's Deployments are not Available
    /// within `progressDeadlineMinutes`, the previous release is installed again, but only
    /// when that is safe for stored data: every CRD of the previous release must still serve
    /// every version its custom resources are stored in, and every stored custom resource must
    /// validate against the previous schema. The failed bundle is then not retried until the
    /// ClusterExtension's spec or the resolved bundle changes. When rolling back is unsafe, the
    /// new release stays and `Progressing` names the CRD or object that prevents it.
    #[serde(default)]
    pub mode: RollbackMode,

    /// With `OnFailure`: how many minutes (1 to 720) a new release has to become Available
    /// after it is applied. Default 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = [{
        "message": "progressDeadlineMinutes must be between 1 and 720 (inclusive)",
        "rule": "self >= 1 && self <= 720"
    }]))]
    pub progress_deadline_minutes: Option<i32>,
}

/// Whether failed upgrades are rolled back.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum RollbackMode {
    #[default]
    None,
    OnFailure,
}

/// The deadline when `spec.install.rollback.progressDeadlineMinutes` is not set.
pub const DEFAULT_PROGRESS_DEADLINE_MINUTES: i32 = 10;

/// Approval of installs and upgrades.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "approvedVersion is only allowed when mode is Manual",
    "rule": "!has(self.approvedVersion) || (has(self.mode) && self.mode == 'Manual')"
}]))]
pub struct ApprovalConfig {
    /// `Automatic` (the default): every resolved bundle is installed. `Manual`: a resolved
    /// bundle other than the installed one is installed only when its version is
    /// `approvedVersion`; until then the installed release stays applied and
    /// `status.pendingApproval` describes the waiting bundle. `AutomaticUnlessEscalation`:
    /// upgrades proceed unless the new release widens RBAC (new verbs, resources, wildcards,
    /// escalate/bind/impersonate) or the CRD upgrade-safety check passes only with warnings;
    /// then the upgrade waits as with `Manual` (approve it by switching to `Manual` with
    /// `approvedVersion`). First installs are never held in that mode.
    #[serde(default)]
    pub mode: ApprovalMode,

    /// With `Manual` only: the one bundle version that may be installed or upgraded to next
    /// (a semantic version such as `1.2.0`). A later, newer bundle waits again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-validations" = [{
        "message": "approvedVersion must be well-formed semver",
        "rule": r#"self.matches("^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\\+([0-9a-zA-Z-]+(\\.[0-9a-zA-Z-]+)*))?$")"#
    }]))]
    pub approved_version: Option<String>,
}

/// How installs and upgrades are approved.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ApprovalMode {
    #[default]
    Automatic,
    Manual,
    AutomaticUnlessEscalation,
}

impl ClusterExtensionSpec {
    /// The approval mode (`Automatic` when `spec.install.approval` is absent).
    pub fn approval_mode(&self) -> ApprovalMode {
        self.approval().map(|a| a.mode).unwrap_or_default()
    }

    /// `spec.install.approval`.
    pub fn approval(&self) -> Option<&ApprovalConfig> {
        self.install.as_ref().and_then(|i| i.approval.as_ref())
    }

    /// With `spec.install.rollback.mode: OnFailure`, the progress deadline in minutes;
    /// `None` when failed upgrades are not rolled back.
    pub fn rollback_deadline_minutes(&self) -> Option<i32> {
        let rollback = self.install.as_ref()?.rollback.as_ref()?;
        (rollback.mode == RollbackMode::OnFailure).then(|| {
            rollback
                .progress_deadline_minutes
                .unwrap_or(DEFAULT_PROGRESS_DEADLINE_MINUTES)
        })
    }
}

/// Pre-apply checks.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "at least one of [crdUpgradeSafety] are required when preflight is specified",
    "rule": "has(self.crdUpgradeSafety)"
}]))]
pub struct PreflightConfig {
    /// The CRD upgrade safety check, which refuses upgrades that would make existing custom
    /// resources invalid or lose data.
    pub crd_upgrade_safety: CrdUpgradeSafetyPreflightConfig,
}

/// Settings of the CRD upgrade safety check.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrdUpgradeSafetyPreflightConfig {
    /// `Strict` (the behaviour when this block is absent) blocks unsafe CRD upgrades; `None`
    /// skips the check.
    pub enforcement: CrdUpgradeSafetyEnforcement,
}

/// Whether the CRD upgrade safety check is enforced.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum CrdUpgradeSafetyEnforcement {
    None,
    Strict,
}

/// Bundle configuration. Exactly one kind of configuration is set, matching `configType`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "inline is required when configType is Inline, and forbidden otherwise",
    "rule": "has(self.configType) && self.configType == 'Inline' ?has(self.inline) : !has(self.inline)"
}]))]
pub struct ClusterExtensionConfig {
    /// The kind of configuration. The only supported value is `Inline`: values are given in `inline`.
    pub config_type: ClusterExtensionConfigType,
    /// Configuration values as a JSON or YAML object with at least one property, validated at
    /// install time against what the bundle accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "inline_config_schema")]
    pub inline: Option<serde_json::Map<String, serde_json::Value>>,
}

fn inline_config_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "minProperties": 1,
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// Kinds of bundle configuration.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ClusterExtensionConfigType {
    #[default]
    Inline,
}

/// The observed state of a ClusterExtension.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionStatus {
    /// The extension's state as conditions.
    ///
    /// `Installed`: True/`Succeeded` once a bundle is installed; False/`Failed` when none is.
    ///
    /// `Progressing`: True/`Succeeded` when the desired state is reached; True/`Retrying` after an
    /// error a later attempt may fix; False/`Blocked` or False/`InvalidConfiguration` after an
    /// error that needs a change to the ClusterExtension.
    ///
    /// `PackageDeprecated`, `ChannelDeprecated` and `BundleDeprecated` tell whether the catalog marks
    /// the requested package, a requested channel or the installed bundle as deprecated
    /// (True/`Deprecated`, False/`NotDeprecated`, Unknown when no catalog data is available or, for
    /// the bundle, nothing is installed yet). `Deprecated` is True when any of the three is.
    ///
    /// `Available`: True/`ProbesSucceeded` when every Deployment of the installed bundle is
    /// available; False/`ProbeFailure` naming the ones that are not.
    ///
    /// `Approved` (only when `spec.install.approval.mode` is not `Automatic`): True/`Approved`
    /// when nothing waits; False/`AwaitingApproval` while the resolved bundle waits for approval,
    /// the message saying how to approve it and what it would change (`pendingApproval`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// What is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<ClusterExtensionInstallStatus>,

    /// Newer bundles of the package in the selected catalogs that are not what would be
    /// installed, because the spec or the catalog's upgrade graph keeps them out; newest first,
    /// at most 10. Refreshed on every status write from the catalogs' current content (a catalog
    /// change re-examines the extensions whose package it holds). Empty when nothing newer is
    /// held back or nothing is installed. An addition of this implementation: upstream's
    /// controllers neither write nor read it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10))]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub available_updates: Vec<AvailableUpdate>,

    /// Set while a resolved bundle waits for approval (`spec.install.approval`): the bundle and
    /// what installing it would change. Cleared once nothing waits. An addition of this
    /// implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_approval: Option<PendingApproval>,
}

/// A resolved bundle that waits for approval.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// The waiting bundle.
    pub bundle: BundleMetadata,
    /// One paragraph: whether RBAC widens, the CRD upgrade-safety verdict, the objects the
    /// install or upgrade would create, update and delete, and (AutomaticUnlessEscalation) what
    /// caused the hold.
    pub summary: String,
}

/// A newer bundle that is not installed, and what holds it back.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailableUpdate {
    /// The bundle's name as the catalog lists it.
    pub name: String,
    /// The bundle's version.
    pub version: String,
    /// The ClusterCatalog that offers it.
    pub catalog: String,
    /// The first channel (by name) of that catalog listing it; empty when none does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub channel: String,
    /// What holds it back: `OutsideVersionRange` (widen `spec.source.catalog.version`),
    /// `NotInRequestedChannel` (add a channel that lists it to `spec.source.catalog.channels`),
    /// `NotASuccessor` (no upgrade edge from the installed bundle; `SelfCertified` would allow
    /// it).
    pub blocked_by: UpdateBlocker,
    /// True when the catalog deprecates the bundle.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
}

/// Why an available update is not installed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum UpdateBlocker {
    OutsideVersionRange,
    NotInRequestedChannel,
    NotASuccessor,
}

/// The installed bundle.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionInstallStatus {
    /// The bundle that was most recently installed successfully.
    pub bundle: BundleMetadata,
}

/// Identity of a bundle.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleMetadata {
    /// The bundle's name as the catalog lists it.
    #[schemars(extend("x-kubernetes-validations" = [{
        "message": "packageName must be a valid DNS1123 subdomain. It must contain only lowercase alphanumeric characters, hyphens (-) or periods (.), start and end with an alphanumeric character, and be no longer than 253 characters",
        "rule": DNS1123_SUBDOMAIN_RULE
    }]))]
    pub name: String,
    /// The bundle's semantic version.
    #[schemars(extend("x-kubernetes-validations" = [{
        "message": "version must be well-formed semver",
        "rule": r#"self.matches("^([0-9]+)(\\.[0-9]+)?(\\.[0-9]+)?(-([-0-9A-Za-z]+(\\.[-0-9A-Za-z]+)*))?(\\+([-0-9A-Za-z]+(-\\.[-0-9A-Za-z]+)*))?")"#
    }]))]
    pub version: String,
}
