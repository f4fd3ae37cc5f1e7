//! Upgrade approval (`spec.install.approval`, beyond upstream): whether a resolved bundle waits,
//! the one-paragraph summary of what it would change, and the `Approved` condition with
//! `status.pendingApproval`.
//!
//! Input: the approval settings, the installed and resolved bundles, the preview
//! [`Report`] of the install or upgrade. Output: decisions and status fields. Pure.
//!
//! | mode | resolved bundle | outcome |
//! |---|---|---|
//! | `Automatic` (or no `approval`) | any | proceeds; no `Approved` condition, no `pendingApproval` |
//! | `Manual` | the installed one | proceeds (drift repair); `Approved` True |
//! | `Manual` | another (or nothing installed), version = `approvedVersion` | proceeds; `Approved` True |
//! | `Manual` | another (or nothing installed), any other version | waits; `Approved` False/`AwaitingApproval` |
//! | `AutomaticUnlessEscalation` | an upgrade that widens RBAC or passes the CRD check only with warnings | waits as `Manual` does, the cause named |
//! | `AutomaticUnlessEscalation` | anything else (first installs included) | proceeds; `Approved` True |

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_api::v1::{
    ApprovalConfig, ApprovalMode, BundleMetadata, ClusterExtensionStatus, ConditionReason,
    ConditionStatus, ConditionType, PendingApproval, set_condition,
};

use crate::preview::report::{Change, Report};

/// Whether `Manual` approval holds the resolved bundle: it is not the installed bundle and its
/// version is not `approvedVersion`.
pub fn manual_holds(
    approval: &ApprovalConfig,
    installed: Option<&str>,
    resolved: &BundleMetadata,
) -> bool {
    approval.mode == ApprovalMode::Manual
        && installed != Some(resolved.name.as_str())
        && approval.approved_version.as_deref() != Some(resolved.version.as_str())
}

/// Why `AutomaticUnlessEscalation` holds an upgrade (empty: it does not): every role whose
/// rules widen, with the widening requests, and every CRD the upgrade-safety check lets through
/// only with warnings.
pub fn escalations(report: &Report, crd_warnings: &[String]) -> Vec<String> {
    let mut causes: Vec<String> = report
        .rbac
        .iter()
        .filter(|r| r.widens())
        .map(|r| {
            let role = match &r.namespace {
                Some(ns) => format!("{} {ns}/{}", r.kind, r.name),
                None => format!("{} {}", r.kind, r.name),
            };
            let what = capped(r.widening.iter().map(ToString::to_string).collect());
            format!("{role} widens RBAC ({})", what.join(", "))
        })
        .collect();
    causes.extend(
        crd_warnings
            .iter()
            .map(|w| format!("the CRD upgrade-safety check passes only with a warning: {w}")),
    );
    causes
}

/// Most objects (or widening requests of one role) the summary names (the rest are counted).
const MAX_LISTED: usize = 10;

/// `listed`, at most [`MAX_LISTED`] of them and then how many more there are.
fn capped(mut listed: Vec<String>) -> Vec<String> {
    if listed.len() > MAX_LISTED {
        let more = listed.len() - MAX_LISTED;
        listed.truncate(MAX_LISTED);
        listed.push(format!("{more} more"));
    }
    listed
}

/// The one-paragraph summary of an install or upgrade, from its preview report: RBAC widened or
/// not, the CRD verdicts, and the objects created, updated and deleted.
pub fn summary(report: &Report) -> String {
    let mut parts = Vec::new();
    let widening: Vec<String> = report
        .rbac
        .iter()
        .filter(|r| r.widens())
        .map(|r| {
            let what = capped(r.widening.iter().map(ToString::to_string).collect());
            format!("{} {} ({})", r.kind, r.name, what.join(", "))
        })
        .collect();
    parts.push(if widening.is_empty() {
        "RBAC: not widened".to_owned()
    } else {
        format!("RBAC: widened by {}", widening.join("; "))
    });
    parts.push(if report.crds.is_empty() {
        "CRDs: no installed CRD changes".to_owned()
    } else {
        let verdicts: Vec<String> = report
            .crds
            .iter()
            .map(|c| format!("{} {}", c.name, c.verdict))
            .collect();
        format!("CRDs: {}", verdicts.join(", "))
    });
    if !report.data_aware.is_empty() {
        parts.push(format!("CRD warnings: {}", report.data_aware.join("; ")));
    }
    let count = |change: Change| report.objects.iter().filter(|o| o.change == change).count();
    let names = |change: Change| -> String {
        let listed = capped(
            report
                .objects
                .iter()
                .filter(|o| o.change == change)
                .map(|o| format!("{} {}", o.kind, o.name))
                .collect(),
        );
        if listed.is_empty() {
            String::new()
        } else {
            format!(" ({})", listed.join(", "))
        }
    };
    parts.push(format!(
        "objects: {} created{}, {} updated{}, {} deleted{}, {} unchanged",
        count(Change::Create),
        names(Change::Create),
        count(Change::Update),
        names(Change::Update),
        count(Change::Delete),
        names(Change::Delete),
        count(Change::Unchanged) + count(Change::Kept) + count(Change::Unknown),
    ));
    parts.join("; ")
}

/// What this reconcile found about approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The resolved bundle waits.
    Awaiting(PendingApproval),
    /// Nothing waits; the message of `Approved` True.
    Clear(String),
}

/// The `Approved` condition's message for a waiting bundle.
pub fn awaiting_message(mode: ApprovalMode, pending: &PendingApproval) -> String {
    let (name, version) = (&pending.bundle.name, &pending.bundle.version);
    match mode {
        ApprovalMode::AutomaticUnlessEscalation => format!(
            "bundle {name} ({version}) awaits approval: set spec.install.approval.mode to Manual and spec.install.approval.approvedVersion to {version}; {}",
            pending.summary
        ),
        _ => format!(
            "bundle {name} ({version}) awaits approval: set spec.install.approval.approvedVersion to {version}; {}",
            pending.summary
        ),
    }
}

/// Puts `Approved` and `pendingApproval` into `status`: removed when the mode is `Automatic`;
/// set from `finding`; left as they are when this reconcile did not get that far (`None`).
pub fn put_approval(
    status: &mut ClusterExtensionStatus,
    mode: ApprovalMode,
    finding: Option<&Finding>,
    generation: Option<i64>,
    now: Time,
) {
    if mode == ApprovalMode::Automatic {
        status.pending_approval = None;
        status
            .conditions
            .retain(|c| c.type_ != ConditionType::Approved.as_str());
        return;
    }
    match finding {
        None => {}
        Some(Finding::Awaiting(pending)) => {
            set_condition(
                &mut status.conditions,
                ConditionType::Approved,
                ConditionStatus::False,
                ConditionReason::AwaitingApproval,
                &awaiting_message(mode, pending),
                generation,
                now,
            );
            status.pending_approval = Some(pending.clone());
        }
        Some(Finding::Clear(message)) => {
            set_condition(
                &mut status.conditions,
                ConditionType::Approved,
                ConditionStatus::True,
                ConditionReason::Approved,
                message,
                generation,
                now,
            );
            status.pending_approval = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preview::rbac::{RoleDelta, Widening, WideningKind};
    use crate::preview::report::{CrdCheck, ObjectChange};

    fn bundle(name: &str, version: &str) -> BundleMetadata {
        BundleMetadata {
            name: name.into(),
            version: version.into(),
        }
    }

    fn manual(approved: Option<&str>) -> ApprovalConfig {
        ApprovalConfig {
            mode: ApprovalMode::Manual,
            approved_version: approved.map(str::to_owned),
        }
    }

    #[test]
    fn manual_holds_anything_but_the_installed_bundle_and_the_approved_version() {
        let new = bundle("p.v1.2.0", "1.2.0");
        assert!(manual_holds(&manual(None), Some("p.v1.1.0"), &new));
        assert!(manual_holds(&manual(None), None, &new));
        assert!(manual_holds(&manual(Some("1.1.0")), Some("p.v1.1.0"), &new));
        assert!(!manual_holds(
            &manual(Some("1.2.0")),
            Some("p.v1.1.0"),
            &new
        ));
        assert!(!manual_holds(&manual(None), Some("p.v1.2.0"), &new));
        let automatic = ApprovalConfig::default();
        assert!(!manual_holds(&automatic, Some("p.v1.1.0"), &new));
    }

    fn object(kind: &str, name: &str, change: Change) -> ObjectChange {
        ObjectChange {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
            change,
            diff: String::new(),
            kept_fields: Vec::new(),
            reason: String::new(),
        }
    }

    fn report(widening: bool) -> Report {
        Report {
            objects: vec![
                object("ConfigMap", "a", Change::Create),
                object("Deployment", "d", Change::Update),
                object("Service", "s", Change::Unchanged),
                object("ClusterRole", "old", Change::Delete),
            ],
            rbac: vec![RoleDelta {
                kind: "ClusterRole".into(),
                namespace: None,
                name: "r".into(),
                replaces: None,
                added: Vec::new(),
                removed: Vec::new(),
                widening: if widening {
                    vec![Widening {
                        kind: WideningKind::NewVerb,
                        what: "delete /secrets".into(),
                    }]
                } else {
                    Vec::new()
                },
            }],
            crds: vec![CrdCheck {
                name: "a.example.com".into(),
                verdict: "safe".into(),
                upstream: String::new(),
            }],
            ..Report::default()
        }
    }

    #[test]
    fn the_summary_is_one_paragraph_of_rbac_crds_and_objects() {
        assert_eq!(
            summary(&report(false)),
            "RBAC: not widened; CRDs: a.example.com safe; objects: 1 created (ConfigMap a), 1 updated (Deployment d), 1 deleted (ClusterRole old), 1 unchanged"
        );
        assert!(
            summary(&report(true))
                .starts_with("RBAC: widened by ClusterRole r (new verb: delete /secrets); ")
        );
    }

    #[test]
    fn long_lists_are_capped_and_counted() {
        let mut r = report(false);
        r.objects = (0..12)
            .map(|i| object("ConfigMap", &format!("c{i}"), Change::Create))
            .collect();
        assert!(
            summary(&r).contains("12 created (ConfigMap c0, ConfigMap c1, ConfigMap c2, ConfigMap c3, ConfigMap c4, ConfigMap c5, ConfigMap c6, ConfigMap c7, ConfigMap c8, ConfigMap c9, 2 more)"),
            "{}",
            summary(&r)
        );
    }

    #[test]
    fn escalations_name_the_role_and_the_crd_warnings() {
        assert!(escalations(&report(false), &[]).is_empty());
        assert_eq!(
            escalations(&report(true), &["w".into()]),
            [
                "ClusterRole r widens RBAC (new verb: delete /secrets)",
                "the CRD upgrade-safety check passes only with a warning: w"
            ]
        );
    }

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).expect("a time"))
    }

    #[test]
    fn the_condition_follows_the_finding_and_goes_away_with_automatic() {
        let pending = PendingApproval {
            bundle: bundle("p.v1.2.0", "1.2.0"),
            summary: "RBAC: not widened".into(),
        };
        let mut status = ClusterExtensionStatus::default();
        put_approval(
            &mut status,
            ApprovalMode::Manual,
            Some(&Finding::Awaiting(pending.clone())),
            Some(1),
            at(1),
        );
        let c = &status.conditions[0];
        assert_eq!(
            (c.type_.as_str(), c.status, c.reason.as_str()),
            ("Approved", ConditionStatus::False, "AwaitingApproval")
        );
        assert_eq!(
            c.message,
            "bundle p.v1.2.0 (1.2.0) awaits approval: set spec.install.approval.approvedVersion to 1.2.0; RBAC: not widened"
        );
        assert_eq!(status.pending_approval.as_ref(), Some(&pending));
        // A reconcile that did not get to decide leaves both as they are.
        put_approval(&mut status, ApprovalMode::Manual, None, Some(1), at(2));
        assert_eq!(status.pending_approval.as_ref(), Some(&pending));
        put_approval(
            &mut status,
            ApprovalMode::Manual,
            Some(&Finding::Clear("ok".into())),
            Some(2),
            at(3),
        );
        assert_eq!(status.pending_approval, None);
        assert_eq!(status.conditions[0].reason, "Approved");
        assert_eq!(status.conditions[0].status, ConditionStatus::True);
        put_approval(&mut status, ApprovalMode::Automatic, None, Some(3), at(4));
        assert!(status.conditions.is_empty());
    }
}
