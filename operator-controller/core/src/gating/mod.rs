//! OpenShift cluster-upgrade gating on `olm.maxOpenShiftVersion`: which installed extensions
//! block the cluster's next minor upgrade, and the `Upgradeable` condition that says so.
//!
//! Input: the cluster's current minor version ([`version::current_cluster_version`]) and, per
//! ClusterExtension, what its installed release says ([`ExtensionMetadata`]: the bundle name and
//! the `olm.properties` chart annotation, or that nothing is deployed, or that the release could
//! not be read). Output: an [`Evaluation`]: a verdict per extension, the condition upstream's
//! cluster-olm-operator writes on `OLM/cluster` ([`Evaluation::olm_operator_condition`]) and the
//! `Upgradeable` condition it ends up as on the `olm` ClusterOperator
//! ([`Evaluation::cluster_operator_condition`]), plus warnings. No IO; the controller reads
//! ClusterVersion and the release Secrets and writes the ClusterOperator.
//!
//! Per extension (upstream's `checkIncompatibility`), in property order:
//!
//! | installed release                          | verdict                                        |
//! |--------------------------------------------|------------------------------------------------|
//! | none deployed                              | not counted                                    |
//! | unreadable                                 | error `error returning the last deployed release for <ce>` |
//! | no `olm.properties` annotation             | compatible                                     |
//! | `olm.properties` not a property list       | error `error with cluster extension <ce>: error in bundle <b>: could not convert olm.properties: failed to unmarshal properties annotation: <json error>` |
//! | no `olm.maxOpenShiftVersion`               | compatible                                     |
//! | a value `ToAllowedSemver` rejects          | error `error converting to semver for version <raw>: <why>` |
//! | a second `olm.maxOpenShiftVersion`         | error `more than one olm.maxOpenShiftVersion found in bundle` (stops there) |
//! | max > current (4.23 counted as 5.0)        | compatible                                     |
//! | otherwise                                  | blocking                                       |
//!
//! An extension with any error is never listed as blocking; its errors are joined with `\n` into
//! `error(s) with cluster extension <ce>: error in bundle <b>: <errors>`.
//!
//! Condition (upstream's `InstalledOLMOperatorsUpgradeable` on `OLM/cluster`):
//!
//! | blocking | errors | status | reason                            | message |
//! |----------|--------|--------|-----------------------------------|---------|
//! | ≥ 1      | any    | False  | `IncompatibleOperatorsInstalled`  | `Found ClusterExtensions that require upgrades prior to upgrading cluster to version <next>: <list>.` + (errors: `\n Additionally the following errors were encountered while getting extension metadata: <errors>`) |
//! | 0        | ≥ 1    | False  | `FailureGettingExtensionMetadata` | the errors, joined with `\n` |
//! | 0        | 0      | True   | (none)                            | (none)  |
//!
//! `<list>` is `bundle "<b>" for ClusterExtension "<ce>"` per blocking extension, sorted as
//! strings (so by bundle name first) and joined with `,`. Errors keep the input order. On the
//! `olm` ClusterOperator library-go turns that into `Upgradeable` with reason
//! `InstalledOLMOperators_<reason>` and every message line prefixed with
//! `InstalledOLMOperatorsUpgradeable: ` (True: reason `AsExpected`, message `All is well`).
//!
//! Beyond upstream, a value that is an unquoted JSON number `X.Y` with a one-digit minor gets a
//! warning: an unquoted `4.10` in a bundle's `metadata/properties.yaml` reaches `olm.properties`
//! as `4.1` (YAML reads it as a float), and the verdict is upstream's verdict on `4.1`.

pub mod extension;
pub mod lifting;
pub mod properties;
pub mod version;

pub use extension::{
    ExtensionCondition, Lifting, MAX_OUTSIDE, OutsideLift, VERSION_UNKNOWN_MESSAGE,
    extension_condition, lifts_block, put_extension_condition,
};
pub use lifting::{lifting_versions, lifting_versions_fetched, outside_lifting};

pub use properties::{RawProperty, decode_properties};
pub use version::{
    ClusterMinor, CurrentVersion, CurrentVersionError, MaxVersionError, RELEASE_VERSION_ENV,
    VersionSource, current_cluster_version, is_upgradeable, to_allowed_semver,
};

use olm_api::v1::ConditionStatus;

use crate::release::Release;
use crate::release::history::BUNDLE_NAME_LABEL;
use olm_api::version::go_text::go_quote;
use semver::Version;

/// The property type gating reads.
pub const MAX_OPENSHIFT_VERSION_PROPERTY: &str = "olm.maxOpenShiftVersion";
/// The chart annotation (a CSV annotation) holding the bundle's properties.
pub const OLM_PROPERTIES_ANNOTATION: &str = "olm.properties";
/// upstream's condition type on `OLM/cluster`.
pub const OLM_OPERATOR_CONDITION_TYPE: &str = "InstalledOLMOperatorsUpgradeable";
/// The condition type on the `olm` ClusterOperator.
pub const CLUSTER_OPERATOR_CONDITION_TYPE: &str = "Upgradeable";
/// Reason when at least one extension blocks the upgrade.
pub const REASON_INCOMPATIBLE_OPERATORS_INSTALLED: &str = "IncompatibleOperatorsInstalled";
/// Reason when nothing blocks but some extension's metadata could not be read.
pub const REASON_FAILURE_GETTING_EXTENSION_METADATA: &str = "FailureGettingExtensionMetadata";

/// What a ClusterExtension's installed state says, as gating needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtensionMetadata<'a> {
    /// No deployed release (not installed yet): the extension is not counted.
    NotDeployed,
    /// The deployed release could not be read.
    Unreadable,
    /// The deployed release: its `olm.operatorframework.io/bundle-name` release label and its
    /// chart's `olm.properties` annotation, if present.
    Deployed {
        bundle: &'a str,
        olm_properties: Option<&'a str>,
    },
}

impl<'a> ExtensionMetadata<'a> {
    /// What cluster-olm-operator's Helm path reads: the deployed release (`None`: not deployed),
    /// its `olm.operatorframework.io/bundle-name` label (empty when missing) and its chart's
    /// `olm.properties` annotation (a release without chart metadata counts as having none).
    pub fn from_release(release: Option<&'a Release>) -> ExtensionMetadata<'a> {
        match release {
            None => ExtensionMetadata::NotDeployed,
            Some(r) => ExtensionMetadata::Deployed {
                bundle: r.label(BUNDLE_NAME_LABEL).unwrap_or_default(),
                olm_properties: r.chart_annotation(OLM_PROPERTIES_ANNOTATION),
            },
        }
    }

    /// What cluster-olm-operator's Boxcutter path reads: of the extension's ClusterObjectSets,
    /// the `Active` one with the highest `spec.revision` (the first of equals); none is "not
    /// deployed".
    pub fn from_object_sets(sets: &[ObjectSetRevision<'a>]) -> ExtensionMetadata<'a> {
        let mut selected: Option<&ObjectSetRevision<'a>> = None;
        for set in sets.iter().filter(|s| s.lifecycle_state == "Active") {
            if selected.is_none_or(|s| set.revision > s.revision) {
                selected = Some(set);
            }
        }
        match selected {
            None => ExtensionMetadata::NotDeployed,
            Some(s) => ExtensionMetadata::Deployed {
                bundle: s.bundle.unwrap_or_default(),
                olm_properties: s.olm_properties,
            },
        }
    }
}

/// One ClusterObjectSet of an extension, as gating reads it (`spec.lifecycleState`,
/// `spec.revision`, annotations `olm.operatorframework.io/bundle-name` and `olm.properties`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectSetRevision<'a> {
    pub lifecycle_state: &'a str,
    pub revision: i64,
    pub bundle: Option<&'a str>,
    pub olm_properties: Option<&'a str>,
}

/// One ClusterExtension to judge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstalledExtension<'a> {
    pub name: &'a str,
    pub metadata: ExtensionMetadata<'a>,
}

/// The verdict on one extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing deployed: not part of the evaluation.
    NotCounted,
    /// Does not block; `max` is the declared maximum, if any.
    Compatible { max: Option<Version> },
    /// Blocks the upgrade to the next minor version.
    Blocking { max: Version },
    /// Its metadata could not be judged; the text is the error upstream reports for it.
    Error { message: String },
}

/// The verdict on one extension, with what it was judged on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtensionVerdict {
    pub extension: String,
    /// The installed bundle's name (empty when nothing is deployed or the release is unreadable).
    pub bundle: String,
    pub verdict: Verdict,
    /// Things an administrator should know that do not change the verdict.
    pub warnings: Vec<String>,
}

/// Judges one extension against the current cluster version (see the module table).
pub fn check_extension(
    current: ClusterMinor,
    extension: &InstalledExtension<'_>,
) -> ExtensionVerdict {
    let name = extension.name;
    let (bundle, olm_properties) = match extension.metadata {
        ExtensionMetadata::NotDeployed => {
            return ExtensionVerdict {
                extension: name.to_string(),
                bundle: String::new(),
                verdict: Verdict::NotCounted,
                warnings: Vec::new(),
            };
        }
        ExtensionMetadata::Unreadable => {
            return ExtensionVerdict {
                extension: name.to_string(),
                bundle: String::new(),
                verdict: Verdict::Error {
                    message: format!("error returning the last deployed release for {name}"),
                },
                warnings: Vec::new(),
            };
        }
        ExtensionMetadata::Deployed {
            bundle,
            olm_properties,
        } => (bundle, olm_properties),
    };
    let verdict = |verdict| ExtensionVerdict {
        extension: name.to_string(),
        bundle: bundle.to_string(),
        verdict,
        warnings: Vec::new(),
    };
    let Some(text) = olm_properties else {
        return verdict(Verdict::Compatible { max: None });
    };
    let properties = match decode_properties(text) {
        Ok(p) => p,
        Err(e) => {
            return verdict(Verdict::Error {
                message: format!(
                    "error with cluster extension {name}: error in bundle {bundle}: could not convert olm.properties: failed to unmarshal properties annotation: {e}"
                ),
            });
        }
    };

    let judged = judge_properties(current, bundle, &properties);
    let mut out = if !judged.errors.is_empty() {
        verdict(Verdict::Error {
            message: format!(
                "error(s) with cluster extension {name}: error in bundle {bundle}: {}",
                judged.errors.join("\n")
            ),
        })
    } else {
        verdict(judged.verdict)
    };
    out.warnings = judged.warnings;
    out
}

/// What one bundle's properties say, before the extension's name is put on the errors.
pub(crate) struct PropertiesJudgement {
    /// [`Verdict::Compatible`] or [`Verdict::Blocking`]; meaningless when `errors` is not empty.
    pub verdict: Verdict,
    /// upstream's per-property errors, in property order.
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// Judges a bundle's properties, in property order (the module table's rows after the decode).
pub(crate) fn judge_properties(
    current: ClusterMinor,
    bundle: &str,
    properties: &[RawProperty],
) -> PropertiesJudgement {
    let mut errors: Vec<String> = Vec::new();
    let mut warnings = Vec::new();
    let mut blocking_max: Option<Version> = None;
    let mut compatible_max: Option<Version> = None;
    let mut seen = 0usize;
    for property in properties
        .iter()
        .filter(|p| p.type_ == MAX_OPENSHIFT_VERSION_PROPERTY)
    {
        seen += 1;
        if seen > 1 {
            errors.push(format!(
                "more than one {MAX_OPENSHIFT_VERSION_PROPERTY} found in bundle"
            ));
            break;
        }
        if let Some(w) = trailing_zero_warning(bundle, property) {
            warnings.push(w);
        }
        match to_allowed_semver(&property.value) {
            Ok(max) => {
                if is_upgradeable(&max, current) {
                    compatible_max = Some(max);
                    blocking_max = None;
                } else {
                    blocking_max = Some(max);
                    compatible_max = None;
                }
            }
            Err(e) => errors.push(format!(
                "error converting to semver for version {}: {e}",
                property.value
            )),
        }
    }
    let verdict = match blocking_max {
        Some(max) => Verdict::Blocking { max },
        None => Verdict::Compatible {
            max: compatible_max,
        },
    };
    PropertiesJudgement {
        verdict,
        errors,
        warnings,
    }
}

/// A warning when a maximum is an unquoted number `X.Y` with a one-digit minor: that is what an
/// unquoted `X.Y0` in `metadata/properties.yaml` turns into.
fn trailing_zero_warning(bundle: &str, property: &RawProperty) -> Option<String> {
    let (major, minor) = property.value.split_once('.')?;
    let is_number = !major.is_empty()
        && major.bytes().all(|b| b.is_ascii_digit())
        && minor.len() == 1
        && matches!(minor.as_bytes()[0], b'1'..=b'9');
    is_number.then(|| {
        format!(
            "bundle {bundle:?} declares {{\"type\":\"{MAX_OPENSHIFT_VERSION_PROPERTY}\",\"value\":{}}} as an unquoted number: it is read as {major}.{minor}, but if the bundle's metadata/properties.yaml wrote {major}.{minor}0 unquoted, YAML turned it into {major}.{minor}; quote the version (\"{major}.{minor}0\") to declare {major}.{minor}0",
            property.value
        )
    })
}

/// A condition to write: status, reason (empty for none) and message (empty for none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatingCondition {
    pub type_: &'static str,
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
}

/// The result of judging every extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evaluation {
    pub current: ClusterMinor,
    /// One verdict per input extension, in input order.
    pub extensions: Vec<ExtensionVerdict>,
    /// An error that stopped the evaluation before any extension was judged (listing the
    /// ClusterExtensions failed).
    pub listing_error: Option<String>,
}

/// Judges every extension (see the module tables).
pub fn evaluate(current: ClusterMinor, extensions: &[InstalledExtension<'_>]) -> Evaluation {
    Evaluation {
        current,
        extensions: extensions
            .iter()
            .map(|e| check_extension(current, e))
            .collect(),
        listing_error: None,
    }
}

impl Evaluation {
    /// The evaluation when the ClusterExtensions could not be listed: upstream reports the
    /// listing error as `FailureGettingExtensionMetadata`.
    pub fn listing_failed(current: ClusterMinor, error: impl Into<String>) -> Evaluation {
        Evaluation {
            current,
            extensions: Vec::new(),
            listing_error: Some(error.into()),
        }
    }

    /// The extensions that block, as `(extension, bundle)`.
    pub fn blocking(&self) -> impl Iterator<Item = &ExtensionVerdict> {
        self.extensions
            .iter()
            .filter(|e| matches!(e.verdict, Verdict::Blocking { .. }))
    }

    /// Every error, in input order, joined as Go's `errors.Join` does; `None` when there is none.
    pub fn errors(&self) -> Option<String> {
        if let Some(e) = &self.listing_error {
            return Some(e.clone());
        }
        let errors: Vec<&str> = self
            .extensions
            .iter()
            .filter_map(|e| match &e.verdict {
                Verdict::Error { message } => Some(message.as_str()),
                _ => None,
            })
            .collect();
        (!errors.is_empty()).then(|| errors.join("\n"))
    }

    /// Every warning, in input order.
    pub fn warnings(&self) -> impl Iterator<Item = &str> {
        self.extensions
            .iter()
            .flat_map(|e| e.warnings.iter().map(String::as_str))
    }

    /// upstream's `InstalledOLMOperatorsUpgradeable` condition (see the module table).
    pub fn olm_operator_condition(&self) -> GatingCondition {
        let mut listed: Vec<String> = self
            .blocking()
            .map(|e| {
                format!(
                    "bundle {} for ClusterExtension {}",
                    go_quote(&e.bundle),
                    go_quote(&e.extension)
                )
            })
            .collect();
        listed.sort();
        let errors = self.errors();
        let condition = |status, reason: &str, message: String| GatingCondition {
            type_: OLM_OPERATOR_CONDITION_TYPE,
            status,
            reason: reason.to_string(),
            message,
        };
        if !listed.is_empty() {
            let mut message = format!(
                "Found ClusterExtensions that require upgrades prior to upgrading cluster to version {}: {}.",
                self.current.next(),
                listed.join(",")
            );
            if let Some(errors) = errors {
                message.push_str(
                    "\n Additionally the following errors were encountered while getting extension metadata: ",
                );
                message.push_str(&errors);
            }
            condition(
                ConditionStatus::False,
                REASON_INCOMPATIBLE_OPERATORS_INSTALLED,
                message,
            )
        } else if let Some(errors) = errors {
            condition(
                ConditionStatus::False,
                REASON_FAILURE_GETTING_EXTENSION_METADATA,
                errors,
            )
        } else {
            condition(ConditionStatus::True, "", String::new())
        }
    }

    /// The `olm` ClusterOperator's `Upgradeable` condition: library-go's union of the
    /// `*Upgradeable` operator conditions, of which gating's is the one that can be False.
    pub fn cluster_operator_condition(&self) -> GatingCondition {
        let inner = self.olm_operator_condition();
        let prefix = inner.type_;
        let mut lines: Vec<&str> = Vec::new();
        for line in inner.message.split('\n') {
            if !inner.message.is_empty() && !lines.contains(&line) {
                lines.push(line);
            }
        }
        let message = lines
            .iter()
            .map(|l| format!("{prefix}: {l}"))
            .collect::<Vec<_>>()
            .join("\n");
        let short_type = &prefix[..prefix.len() - CLUSTER_OPERATOR_CONDITION_TYPE.len()];
        if inner.status == ConditionStatus::True {
            GatingCondition {
                type_: CLUSTER_OPERATOR_CONDITION_TYPE,
                status: ConditionStatus::True,
                reason: "AsExpected".to_string(),
                message: if message.is_empty() {
                    "All is well".to_string()
                } else {
                    message
                },
            }
        } else {
            GatingCondition {
                type_: CLUSTER_OPERATOR_CONDITION_TYPE,
                status: inner.status,
                reason: if inner.reason.is_empty() {
                    short_type.to_string()
                } else {
                    format!("{short_type}_{}", inner.reason)
                },
                message,
            }
        }
    }
}
