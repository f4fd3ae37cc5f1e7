//! The four deprecation conditions of a ClusterExtension, from the catalog's `olm.deprecations`.
//!
//! Input: the deprecation object of the catalog that supplied the resolved bundle (or none),
//! whether catalog data was available at all, the requested channels and the installed bundle's
//! name. Output: the entries that apply and the type/status/reason/message of `Deprecated`,
//! `PackageDeprecated`, `ChannelDeprecated` and `BundleDeprecated`, as upstream's
//! `SetDeprecationStatus` sets them. No IO.
//!
//! Which entries apply:
//!
//! | entry schema   | applies when                                                        |
//! |----------------|---------------------------------------------------------------------|
//! | `olm.package`  | always                                                              |
//! | `olm.channel`  | no channels requested, or the channel is one of the requested ones  |
//! | `olm.bundle`   | it names the installed bundle                                       |
//!
//! Conditions (only entries with a non-empty message count as deprecating):
//!
//! | situation                       | Deprecated / Package / Channel                  | BundleDeprecated                                   |
//! |---------------------------------|-------------------------------------------------|----------------------------------------------------|
//! | no catalog data                 | Unknown `DeprecationStatusUnknown` "deprecation status unknown: catalog data unavailable" | Unknown: `Absent` "no bundle installed yet" when nothing is installed, else as the others |
//! | deprecating messages            | True `Deprecated`, messages joined by newlines (Deprecated: package, channel, bundle ones) | True `Deprecated` with the bundle messages |
//! | none                            | False `NotDeprecated` "not deprecated" / "package not deprecated" / "channel not deprecated" | False `NotDeprecated` "bundle not deprecated", or Unknown `Absent` "no bundle installed yet" |
//!
//! The controller computes these twice, as upstream does: at resolution time for the bundle that
//! is installed, and after a successful rollout for the newly installed bundle.

use olm_api::fbc::{Deprecation, DeprecationEntry, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE};
use olm_api::v1::{ConditionReason, ConditionStatus, ConditionType};
use serde::Serialize;

const UNKNOWN_MESSAGE: &str = "deprecation status unknown: catalog data unavailable";
const NO_BUNDLE_MESSAGE: &str = "no bundle installed yet";

/// The deprecation entries that concern one ClusterExtension.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplicableDeprecations<'d> {
    pub package: Vec<&'d DeprecationEntry>,
    pub channels: Vec<&'d DeprecationEntry>,
    pub bundle: Vec<&'d DeprecationEntry>,
}

impl<'d> ApplicableDeprecations<'d> {
    /// Selects the entries of `deprecation` that apply (see the module table). `installed_bundle`
    /// is `None` when nothing is installed.
    pub fn select(
        deprecation: Option<&'d Deprecation>,
        channels: &[String],
        installed_bundle: Option<&str>,
    ) -> ApplicableDeprecations<'d> {
        let mut out = ApplicableDeprecations::default();
        for entry in deprecation.iter().flat_map(|d| &d.entries) {
            let name = entry.reference.name.as_str();
            match entry.reference.schema.as_str() {
                SCHEMA_PACKAGE => out.package.push(entry),
                SCHEMA_CHANNEL if channels.is_empty() || channels.iter().any(|c| c == name) => {
                    out.channels.push(entry)
                }
                SCHEMA_BUNDLE if installed_bundle.is_some_and(|b| !b.is_empty() && b == name) => {
                    out.bundle.push(entry)
                }
                _ => {}
            }
        }
        out
    }
}

/// One condition's value, ready for `olm_api::v1::set_condition`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionValue {
    pub type_: ConditionType,
    pub status: ConditionStatus,
    pub reason: ConditionReason,
    pub message: String,
}

impl Serialize for ConditionValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Condition", 4)?;
        st.serialize_field("type", self.type_.as_str())?;
        st.serialize_field("status", self.status.as_str())?;
        st.serialize_field("reason", self.reason.as_str())?;
        st.serialize_field("message", &self.message)?;
        st.end()
    }
}

/// The four deprecation conditions, in the order `Deprecated`, `PackageDeprecated`,
/// `ChannelDeprecated`, `BundleDeprecated`. `deprecation` is the resolved catalog's object;
/// `catalog_data` is false when resolution produced no catalog data (upstream: it failed).
pub fn deprecation_conditions(
    deprecation: Option<&Deprecation>,
    catalog_data: bool,
    channels: &[String],
    installed_bundle: Option<&str>,
) -> [ConditionValue; 4] {
    let installed = installed_bundle.filter(|b| !b.is_empty());
    let value = |type_, status, reason, message: String| ConditionValue {
        type_,
        status,
        reason,
        message,
    };
    if !catalog_data {
        let unknown = |type_| {
            value(
                type_,
                ConditionStatus::Unknown,
                ConditionReason::DeprecationStatusUnknown,
                UNKNOWN_MESSAGE.to_owned(),
            )
        };
        let bundle = match installed {
            None => value(
                ConditionType::BundleDeprecated,
                ConditionStatus::Unknown,
                ConditionReason::Absent,
                NO_BUNDLE_MESSAGE.to_owned(),
            ),
            Some(_) => unknown(ConditionType::BundleDeprecated),
        };
        return [
            unknown(ConditionType::Deprecated),
            unknown(ConditionType::PackageDeprecated),
            unknown(ConditionType::ChannelDeprecated),
            bundle,
        ];
    }
    let applicable = ApplicableDeprecations::select(deprecation, channels, installed);
    let messages = |entries: &[&DeprecationEntry]| -> Vec<String> {
        entries
            .iter()
            .filter(|e| !e.message.is_empty())
            .map(|e| e.message.clone())
            .collect()
    };
    let package = messages(&applicable.package);
    let channel = messages(&applicable.channels);
    let bundle = messages(&applicable.bundle);
    let flag = |type_, messages: &[String], not_deprecated: &str| {
        if messages.is_empty() {
            value(
                type_,
                ConditionStatus::False,
                ConditionReason::NotDeprecated,
                not_deprecated.to_owned(),
            )
        } else {
            value(
                type_,
                ConditionStatus::True,
                ConditionReason::Deprecated,
                messages.join("\n"),
            )
        }
    };
    let all: Vec<String> = package
        .iter()
        .chain(&channel)
        .chain(&bundle)
        .cloned()
        .collect();
    let bundle_condition = match installed {
        None => value(
            ConditionType::BundleDeprecated,
            ConditionStatus::Unknown,
            ConditionReason::Absent,
            NO_BUNDLE_MESSAGE.to_owned(),
        ),
        Some(_) => flag(
            ConditionType::BundleDeprecated,
            &bundle,
            "bundle not deprecated",
        ),
    };
    [
        flag(ConditionType::Deprecated, &all, "not deprecated"),
        flag(
            ConditionType::PackageDeprecated,
            &package,
            "package not deprecated",
        ),
        flag(
            ConditionType::ChannelDeprecated,
            &channel,
            "channel not deprecated",
        ),
        bundle_condition,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_api::fbc::PackageScopedReference;

    fn entry(schema: &str, name: &str, message: &str) -> DeprecationEntry {
        DeprecationEntry {
            reference: PackageScopedReference {
                schema: schema.into(),
                name: name.into(),
            },
            message: message.into(),
        }
    }

    fn deprecation() -> Deprecation {
        Deprecation {
            package: "p".into(),
            entries: vec![
                entry("olm.package", "", "package p is deprecated"),
                entry("olm.channel", "alpha", "alpha is deprecated"),
                entry("olm.channel", "beta", "beta is deprecated"),
                entry("olm.bundle", "p.v1", "p.v1 is deprecated"),
                entry("olm.bundle", "p.v2", ""),
            ],
            origin: None,
        }
    }

    fn summary(c: &[ConditionValue; 4]) -> Vec<(String, &str, &str, String)> {
        c.iter()
            .map(|c| {
                (
                    c.type_.as_str().to_owned(),
                    c.status.as_str(),
                    c.reason.as_str(),
                    c.message.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn every_applicable_message_is_reported_in_package_channel_bundle_order() {
        let d = deprecation();
        let c = deprecation_conditions(Some(&d), true, &[], Some("p.v1"));
        assert_eq!(
            summary(&c),
            vec![
                (
                    "Deprecated".into(),
                    "True",
                    "Deprecated",
                    "package p is deprecated\nalpha is deprecated\nbeta is deprecated\np.v1 is deprecated".into()
                ),
                ("PackageDeprecated".into(), "True", "Deprecated", "package p is deprecated".into()),
                ("ChannelDeprecated".into(), "True", "Deprecated", "alpha is deprecated\nbeta is deprecated".into()),
                ("BundleDeprecated".into(), "True", "Deprecated", "p.v1 is deprecated".into()),
            ]
        );
    }

    #[test]
    fn only_requested_channels_count_and_empty_messages_do_not_deprecate() {
        let d = deprecation();
        let c = deprecation_conditions(Some(&d), true, &["beta".into()], Some("p.v2"));
        assert_eq!(c[2].message, "beta is deprecated");
        assert_eq!(c[3].status, ConditionStatus::False);
        assert_eq!(c[3].message, "bundle not deprecated");
        let c = deprecation_conditions(Some(&d), true, &["stable".into()], None);
        assert_eq!(c[2].reason, ConditionReason::NotDeprecated);
        assert_eq!(c[2].message, "channel not deprecated");
        assert_eq!(c[0].message, "package p is deprecated");
    }

    #[test]
    fn no_deprecation_object_means_nothing_is_deprecated() {
        let c = deprecation_conditions(None, true, &[], Some("p.v1"));
        assert_eq!(
            summary(&c),
            vec![
                (
                    "Deprecated".into(),
                    "False",
                    "NotDeprecated",
                    "not deprecated".into()
                ),
                (
                    "PackageDeprecated".into(),
                    "False",
                    "NotDeprecated",
                    "package not deprecated".into()
                ),
                (
                    "ChannelDeprecated".into(),
                    "False",
                    "NotDeprecated",
                    "channel not deprecated".into()
                ),
                (
                    "BundleDeprecated".into(),
                    "False",
                    "NotDeprecated",
                    "bundle not deprecated".into()
                ),
            ]
        );
        let c = deprecation_conditions(None, true, &[], None);
        assert_eq!(
            (c[3].status, c[3].reason, c[3].message.as_str()),
            (
                ConditionStatus::Unknown,
                ConditionReason::Absent,
                "no bundle installed yet"
            )
        );
    }

    #[test]
    fn without_catalog_data_everything_is_unknown() {
        let d = deprecation();
        let c = deprecation_conditions(Some(&d), false, &[], Some("p.v1"));
        for cond in &c {
            assert_eq!(cond.status, ConditionStatus::Unknown);
            assert_eq!(cond.reason, ConditionReason::DeprecationStatusUnknown);
            assert_eq!(cond.message, UNKNOWN_MESSAGE);
        }
        let c = deprecation_conditions(None, false, &[], None);
        assert_eq!(c[3].reason, ConditionReason::Absent);
        assert_eq!(c[0].reason, ConditionReason::DeprecationStatusUnknown);
    }
}
