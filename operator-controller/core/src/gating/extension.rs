//! The per-ClusterExtension `ClusterUpgradeable` condition (beyond upstream): whether this
//! extension's installed bundle lets the OpenShift cluster upgrade to its next minor version, and
//! if not, which bundle versions in its catalogs would.
//!
//! Input: the extension's name, its installed release as gating reads it ([`ExtensionMetadata`]),
//! the cluster's current minor version (the gating loop's cache) and the [`Lifting`] versions the
//! caller resolved (the resolver's candidates under the extension's channels and version range,
//! kept by [`lifts_block`]). Output: an [`ExtensionCondition`] (status, reason, message) or `None`
//! when the extension gets no such condition. No IO.
//!
//! | installed release (per [`check_extension`])       | status | reason                              | message |
//! |----------------------------------------------------|--------|-------------------------------------|---------|
//! | none deployed                                      | (no condition)                          |         |
//! | deployed, cluster version not known                | Unknown | `ClusterVersionUnknown`            | [`VERSION_UNKNOWN_MESSAGE`] |
//! | compatible, no `olm.maxOpenShiftVersion`           | True   | `MaxOpenShiftVersionCompatible`     | `bundle "<b>" declares no olm.maxOpenShiftVersion; it does not block OpenShift upgrades` |
//! | compatible, max `M` > current                      | True   | `MaxOpenShiftVersionCompatible`     | `bundle "<b>" supports OpenShift up to <M>; it does not block the cluster's upgrade from <cur> to <next>` |
//! | blocking, max `M`                                  | False  | `MaxOpenShiftVersionIncompatible`   | `bundle "<b>" supports OpenShift up to <M>; it blocks the cluster's upgrade from <cur> to <next>. ` + the lifting sentence |
//! | unreadable release or invalid properties           | False  | `MaxOpenShiftVersionInvalid`        | upstream's error for the extension (it counts as an error on the `olm` ClusterOperator) |
//!
//! The lifting sentence ([`Lifting`]):
//!
//! | lifting                | sentence |
//! |------------------------|----------|
//! | `Versions([v1, v2])`   | `Bundle versions that would lift the block (from the extension's catalogs, under its channels and version range): v1, v2.` |
//! | `Versions([])`         | `No bundle version in the extension's catalogs, under its channels and version range, lifts the block.` |
//! | `Outside([...])`       | the sentence above without its full stop, then `; outside them these would: 1.2.0 (outside the version range: widen spec.source.catalog.version), 1.1.0 (deprecated; not in the requested channels: add a channel that lists it to spec.source.catalog.channels).` (at most [`MAX_OUTSIDE`], newest first) |
//! | `Unknown(why)`         | `The bundle versions that would lift the block could not be determined: <why>.` |
//!
//! Every warning [`check_extension`] gives (the unquoted `X.Y0` → `X.Y` edge) is appended on a
//! line of its own, prefixed `Warning: `, so the administrator sees it on the extension.

use semver::Version;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_api::fbc::Bundle;
use olm_api::v1::{Condition, ConditionReason, ConditionStatus, ConditionType, set_condition};
use olm_api::version::go_text::go_quote;

use super::{
    ClusterMinor, ExtensionMetadata, InstalledExtension, MAX_OPENSHIFT_VERSION_PROPERTY,
    RawProperty, Verdict, check_extension, judge_properties,
};

/// How many versions outside the spec the lifting sentence names.
pub const MAX_OUTSIDE: usize = 5;

/// A bundle version outside the extension's version range or channels (or not a successor)
/// that would lift the block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutsideLift {
    pub version: String,
    /// `OutsideVersionRange`, `NotInRequestedChannel` or `NotASuccessor`.
    pub blocked_by: crate::resolve::explain::ReasonCode,
    pub deprecated: bool,
}

impl OutsideLift {
    /// `1.2.0 (deprecated; outside the version range: widen spec.source.catalog.version)`.
    fn describe(&self) -> String {
        use crate::resolve::explain::ReasonCode;
        let change = match self.blocked_by {
            ReasonCode::OutsideVersionRange => {
                "outside the version range: widen spec.source.catalog.version"
            }
            ReasonCode::NotInRequestedChannel => {
                "not in the requested channels: add a channel that lists it to spec.source.catalog.channels"
            }
            _ => {
                "not an upgrade edge from the installed bundle: upgradeConstraintPolicy SelfCertified allows it"
            }
        };
        let deprecated = if self.deprecated { "deprecated; " } else { "" };
        format!("{} ({deprecated}{change})", self.version)
    }
}

/// The bundle versions that would lift a block, as the caller resolved them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifting<'a> {
    /// The versions (as the caller wants them shown, best first); empty when none would.
    Versions(&'a [String]),
    /// None under the extension's channels and version range would; these outside them would
    /// (newest first, never empty).
    Outside(&'a [OutsideLift]),
    /// The catalogs could not be read or the resolution failed; the text says why.
    Unknown(&'a str),
}

impl<'a> Lifting<'a> {
    /// The lifting versions, or why they are not known (an error's text).
    pub fn from_result<E: AsRef<str>>(result: &'a Result<Vec<String>, E>) -> Lifting<'a> {
        match result {
            Ok(versions) => Lifting::Versions(versions),
            Err(why) => Lifting::Unknown(why.as_ref()),
        }
    }
}

/// The `ClusterUpgradeable` condition of one ClusterExtension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtensionCondition {
    pub status: ConditionStatus,
    pub reason: ConditionReason,
    pub message: String,
}

impl ExtensionCondition {
    /// The condition type ([`ConditionType::ClusterUpgradeable`]).
    pub const TYPE: ConditionType = ConditionType::ClusterUpgradeable;
}

/// The message of `ClusterUpgradeable=Unknown`: the cluster version is not known (the gating
/// loop logs why, once).
pub const VERSION_UNKNOWN_MESSAGE: &str = "the cluster's OpenShift version is not known, so olm.maxOpenShiftVersion is not checked: it is OPERATOR_IMAGE_VERSION when set, else the newest Completed update in the status.history of ClusterVersion \"version\" (operator-controller's log says which is missing or invalid)";

/// The extension's `ClusterUpgradeable` condition (see the module table); `None` when it gets
/// none: nothing deployed. Called in OpenShift mode only; `current` is `None` while the cluster
/// version is not known (not read yet, or nothing to read it from).
pub fn extension_condition(
    name: &str,
    metadata: ExtensionMetadata<'_>,
    current: Option<ClusterMinor>,
    lifting: Lifting<'_>,
) -> Option<ExtensionCondition> {
    let Some(current) = current else {
        return (!matches!(metadata, ExtensionMetadata::NotDeployed)).then(|| ExtensionCondition {
            status: ConditionStatus::Unknown,
            reason: ConditionReason::ClusterVersionUnknown,
            message: VERSION_UNKNOWN_MESSAGE.to_string(),
        });
    };
    let verdict = check_extension(current, &InstalledExtension { name, metadata });
    let bundle = go_quote(&verdict.bundle);
    let next = current.next();
    let (status, reason, mut message) = match &verdict.verdict {
        Verdict::NotCounted => return None,
        Verdict::Compatible { max: None } => (
            ConditionStatus::True,
            ConditionReason::MaxOpenShiftVersionCompatible,
            format!(
                "bundle {bundle} declares no {MAX_OPENSHIFT_VERSION_PROPERTY}; it does not block OpenShift upgrades"
            ),
        ),
        Verdict::Compatible { max: Some(max) } => (
            ConditionStatus::True,
            ConditionReason::MaxOpenShiftVersionCompatible,
            format!(
                "bundle {bundle} supports OpenShift up to {}; it does not block the cluster's upgrade from {current} to {next}",
                minor_text(max)
            ),
        ),
        Verdict::Blocking { max } => {
            let lifting = match lifting {
                Lifting::Versions([]) | Lifting::Outside([]) => "No bundle version in the extension's catalogs, under its channels and version range, lifts the block.".to_string(),
                Lifting::Outside(outside) => format!(
                    "No bundle version in the extension's catalogs, under its channels and version range, lifts the block; outside them these would: {}.",
                    outside
                        .iter()
                        .take(MAX_OUTSIDE)
                        .map(OutsideLift::describe)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Lifting::Versions(versions) => format!(
                    "Bundle versions that would lift the block (from the extension's catalogs, under its channels and version range): {}.",
                    versions.join(", ")
                ),
                Lifting::Unknown(why) => format!(
                    "The bundle versions that would lift the block could not be determined: {why}."
                ),
            };
            (
                ConditionStatus::False,
                ConditionReason::MaxOpenShiftVersionIncompatible,
                format!(
                    "bundle {bundle} supports OpenShift up to {}; it blocks the cluster's upgrade from {current} to {next}. {lifting}",
                    minor_text(max)
                ),
            )
        }
        Verdict::Error { message } => (
            ConditionStatus::False,
            ConditionReason::MaxOpenShiftVersionInvalid,
            message.clone(),
        ),
    };
    for warning in &verdict.warnings {
        message.push_str("\nWarning: ");
        message.push_str(warning);
    }
    Some(ExtensionCondition {
        status,
        reason,
        message,
    })
}

/// Puts `condition` into a ClusterExtension's status conditions (`set_condition` rules:
/// `lastTransitionTime` moves only on a status change), or removes the `ClusterUpgradeable`
/// condition when there is none (not OpenShift, nothing deployed, version unknown). Returns
/// whether the list changed.
pub fn put_extension_condition(
    conditions: &mut Vec<Condition>,
    condition: Option<&ExtensionCondition>,
    generation: Option<i64>,
    now: Time,
) -> bool {
    match condition {
        Some(c) => set_condition(
            conditions,
            ExtensionCondition::TYPE,
            c.status,
            c.reason,
            &c.message,
            generation,
            now,
        ),
        None => {
            let before = conditions.len();
            conditions.retain(|c| c.type_ != ExtensionCondition::TYPE.as_str());
            conditions.len() != before
        }
    }
}

/// Whether installing `bundle` (a catalog bundle the resolver offers the extension) would lift
/// the block at `current`: its `olm.maxOpenShiftVersion` properties judge compatible without
/// errors, exactly as they would once installed (catalogd serves property values as the catalog
/// wrote them, and the installed `olm.properties` carries the same values).
pub fn lifts_block(current: ClusterMinor, bundle: &Bundle) -> bool {
    let properties: Vec<RawProperty> = bundle
        .properties
        .iter()
        .filter(|p| p.type_ == MAX_OPENSHIFT_VERSION_PROPERTY)
        .map(|p| RawProperty {
            type_: p.type_.clone(),
            value: p.value.get().to_string(),
        })
        .collect();
    let judged = judge_properties(current, &bundle.name, &properties);
    judged.errors.is_empty() && matches!(judged.verdict, Verdict::Compatible { .. })
}

/// `X.Y` of a maximum (its patch is always 0).
fn minor_text(max: &Version) -> String {
    format!("{}.{}", max.major, max.minor)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const CUR: ClusterMinor = ClusterMinor::new(4, 18);

    fn deployed<'a>(bundle: &'a str, props: Option<&'a str>) -> ExtensionMetadata<'a> {
        ExtensionMetadata::Deployed {
            bundle,
            olm_properties: props,
        }
    }

    fn cond(
        metadata: ExtensionMetadata<'_>,
        lifting: Lifting<'_>,
    ) -> (ConditionStatus, ConditionReason, String) {
        let c = extension_condition("ext", metadata, Some(CUR), lifting).unwrap();
        (c.status, c.reason, c.message)
    }

    #[test]
    fn versions_outside_the_spec_are_named_with_what_to_change() {
        use crate::resolve::explain::ReasonCode;
        let outside = [
            OutsideLift {
                version: "1.2.0".into(),
                blocked_by: ReasonCode::OutsideVersionRange,
                deprecated: false,
            },
            OutsideLift {
                version: "1.1.0".into(),
                blocked_by: ReasonCode::NotInRequestedChannel,
                deprecated: true,
            },
        ];
        let props = Some(r#"[{"type":"olm.maxOpenShiftVersion","value":"4.18"}]"#);
        let (_, _, message) = cond(deployed("b.v1.0.0", props), Lifting::Outside(&outside));
        assert!(
            message.ends_with("lifts the block; outside them these would: 1.2.0 (outside the version range: widen spec.source.catalog.version), 1.1.0 (deprecated; not in the requested channels: add a channel that lists it to spec.source.catalog.channels)."),
            "{message}"
        );
    }

    #[test]
    fn nothing_deployed_gives_no_condition() {
        for current in [Some(CUR), None] {
            assert_eq!(
                extension_condition(
                    "ext",
                    ExtensionMetadata::NotDeployed,
                    current,
                    Lifting::Versions(&[])
                ),
                None
            );
        }
    }

    #[test]
    fn an_unknown_cluster_version_is_said_on_the_condition_of_an_installed_extension() {
        for metadata in [
            deployed(
                "b.v1",
                Some(r#"[{"type":"olm.maxOpenShiftVersion","value":"4.18"}]"#),
            ),
            deployed("b.v1", None),
            ExtensionMetadata::Unreadable,
        ] {
            let c = extension_condition("ext", metadata, None, Lifting::Versions(&[])).unwrap();
            assert_eq!(
                (c.status, c.reason, c.message.as_str()),
                (
                    ConditionStatus::Unknown,
                    ConditionReason::ClusterVersionUnknown,
                    VERSION_UNKNOWN_MESSAGE
                )
            );
        }
        assert!(VERSION_UNKNOWN_MESSAGE.contains("OPERATOR_IMAGE_VERSION"));
    }

    #[test]
    fn compatible_bundles_say_why() {
        assert_eq!(
            cond(deployed("b.v1", None), Lifting::Versions(&[])),
            (
                ConditionStatus::True,
                ConditionReason::MaxOpenShiftVersionCompatible,
                "bundle \"b.v1\" declares no olm.maxOpenShiftVersion; it does not block OpenShift upgrades".to_string()
            )
        );
        assert_eq!(
            cond(
                deployed(
                    "b.v1",
                    Some(r#"[{"type":"olm.maxOpenShiftVersion","value":"4.19"}]"#)
                ),
                Lifting::Versions(&[])
            ),
            (
                ConditionStatus::True,
                ConditionReason::MaxOpenShiftVersionCompatible,
                "bundle \"b.v1\" supports OpenShift up to 4.19; it does not block the cluster's upgrade from 4.18 to 4.19".to_string()
            )
        );
    }

    #[test]
    fn a_blocking_bundle_names_the_lifting_versions() {
        let props = Some(r#"[{"type":"olm.maxOpenShiftVersion","value":"4.18"}]"#);
        let versions = ["1.2.0".to_string(), "1.1.0".to_string()];
        assert_eq!(
            cond(deployed("b.v1.0.0", props), Lifting::Versions(&versions)),
            (
                ConditionStatus::False,
                ConditionReason::MaxOpenShiftVersionIncompatible,
                "bundle \"b.v1.0.0\" supports OpenShift up to 4.18; it blocks the cluster's upgrade from 4.18 to 4.19. Bundle versions that would lift the block (from the extension's catalogs, under its channels and version range): 1.2.0, 1.1.0.".to_string()
            )
        );
        assert_eq!(
            cond(deployed("b.v1.0.0", props), Lifting::Versions(&[])).2,
            "bundle \"b.v1.0.0\" supports OpenShift up to 4.18; it blocks the cluster's upgrade from 4.18 to 4.19. No bundle version in the extension's catalogs, under its channels and version range, lifts the block."
        );
        assert_eq!(
            cond(
                deployed("b.v1.0.0", props),
                Lifting::Unknown("catalog \"c\" is not serving")
            )
            .2,
            "bundle \"b.v1.0.0\" supports OpenShift up to 4.18; it blocks the cluster's upgrade from 4.18 to 4.19. The bundle versions that would lift the block could not be determined: catalog \"c\" is not serving."
        );
    }

    #[test]
    fn lifting_from_a_result() {
        let ok: Result<Vec<String>, String> = Ok(vec!["1.1.0".to_string()]);
        assert_eq!(
            Lifting::from_result(&ok),
            Lifting::Versions(&["1.1.0".to_string()])
        );
        let err: Result<Vec<String>, String> = Err("boom".to_string());
        assert_eq!(Lifting::from_result(&err), Lifting::Unknown("boom"));
    }

    #[test]
    fn the_4_23_cluster_names_5_1_as_next() {
        let c = extension_condition(
            "ext",
            deployed(
                "b",
                Some(r#"[{"type":"olm.maxOpenShiftVersion","value":"5.0"}]"#),
            ),
            Some(ClusterMinor::new(4, 23)),
            Lifting::Versions(&[]),
        )
        .unwrap();
        assert_eq!(c.status, ConditionStatus::False);
        assert!(
            c.message
                .starts_with("bundle \"b\" supports OpenShift up to 5.0; it blocks the cluster's upgrade from 4.23 to 5.1."),
            "{}",
            c.message
        );
    }

    #[test]
    fn invalid_metadata_carries_upstreams_error() {
        // Texts: cluster-olm-operator `checkIncompatibility` (reference §1.5).
        assert_eq!(
            cond(deployed("b.v1", Some("abcd")), Lifting::Versions(&[])),
            (
                ConditionStatus::False,
                ConditionReason::MaxOpenShiftVersionInvalid,
                "error with cluster extension ext: error in bundle b.v1: could not convert olm.properties: failed to unmarshal properties annotation: invalid character 'a' looking for beginning of value".to_string()
            )
        );
        assert_eq!(
            cond(
                deployed(
                    "b.v1",
                    Some(r#"[{"type":"olm.maxOpenShiftVersion","value":"v4.18"}]"#)
                ),
                Lifting::Versions(&[])
            )
            .2,
            "error(s) with cluster extension ext: error in bundle b.v1: error converting to semver for version \"v4.18\": invalid version format"
        );
        assert_eq!(
            cond(ExtensionMetadata::Unreadable, Lifting::Versions(&[])),
            (
                ConditionStatus::False,
                ConditionReason::MaxOpenShiftVersionInvalid,
                "error returning the last deployed release for ext".to_string()
            )
        );
    }

    #[test]
    fn the_unquoted_4_1_edge_is_upstreams_verdict_plus_a_warning() {
        // install-path.md §6: an unquoted 4.10 in properties.yaml reaches olm.properties as 4.1.
        let (status, reason, message) = cond(
            deployed(
                "b.v1",
                Some(r#"[{"type":"olm.maxOpenShiftVersion","value":4.1}]"#),
            ),
            Lifting::Versions(&[]),
        );
        assert_eq!(
            (status, reason),
            (
                ConditionStatus::False,
                ConditionReason::MaxOpenShiftVersionIncompatible
            )
        );
        let (first, warning) = message.split_once("\nWarning: ").unwrap();
        assert!(first.contains("supports OpenShift up to 4.1;"), "{first}");
        assert!(
            warning.starts_with(
                "bundle \"b.v1\" declares {\"type\":\"olm.maxOpenShiftVersion\",\"value\":4.1} as an unquoted number"
            ),
            "{warning}"
        );
    }

    #[test]
    fn the_condition_is_put_or_removed() {
        use k8s_openapi::jiff::Timestamp;
        let at = |s: i64| Time(Timestamp::from_second(s).unwrap());
        let mut conditions = Vec::new();
        let blocking = ExtensionCondition {
            status: ConditionStatus::False,
            reason: ConditionReason::MaxOpenShiftVersionIncompatible,
            message: "m".to_string(),
        };
        assert!(put_extension_condition(
            &mut conditions,
            Some(&blocking),
            Some(3),
            at(10)
        ));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].type_, "ClusterUpgradeable");
        assert_eq!(conditions[0].reason, "MaxOpenShiftVersionIncompatible");
        assert_eq!(conditions[0].observed_generation, Some(3));
        // Same again: unchanged, transition time kept.
        assert!(!put_extension_condition(
            &mut conditions,
            Some(&blocking),
            Some(3),
            at(20)
        ));
        assert_eq!(conditions[0].last_transition_time, at(10));
        assert!(put_extension_condition(
            &mut conditions,
            None,
            Some(3),
            at(30)
        ));
        assert!(conditions.is_empty());
        assert!(!put_extension_condition(
            &mut conditions,
            None,
            Some(3),
            at(30)
        ));
    }

    fn bundle(name: &str, properties: &str) -> Bundle {
        Bundle {
            name: name.to_string(),
            package: "p".to_string(),
            properties: serde_json::from_str(properties).unwrap(),
            ..Default::default()
        }
    }

    #[test]
    fn lifting_bundles_are_those_judged_compatible() {
        let cases = [
            ("[]", true),
            (
                r#"[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]"#,
                true,
            ),
            (
                r#"[{"type":"olm.maxOpenShiftVersion","value":"4.19"}]"#,
                true,
            ),
            (r#"[{"type":"olm.maxOpenShiftVersion","value":4.19}]"#, true),
            (
                r#"[{"type":"olm.maxOpenShiftVersion","value":"4.18"}]"#,
                false,
            ),
            (r#"[{"type":"olm.maxOpenShiftVersion","value":4.1}]"#, false),
            (
                r#"[{"type":"olm.maxOpenShiftVersion","value":"v4.19"}]"#,
                false,
            ),
            (
                r#"[{"type":"olm.maxOpenShiftVersion","value":"4.19"},{"type":"olm.maxOpenShiftVersion","value":"4.20"}]"#,
                false,
            ),
        ];
        for (props, want) in cases {
            assert_eq!(lifts_block(CUR, &bundle("p.v2", props)), want, "{props}");
        }
    }
}
