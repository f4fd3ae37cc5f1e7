//! The rollback decisions, scenario by scenario: an upgrade on probation, its deadline, the
//! records a rollback writes, and the failed bundle not retried.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use olm_api::v1::{ConditionReason, ConditionStatus};
use serde_json::json;

use super::*;
use crate::release::history::{BUNDLE_REFERENCE_LABEL, NewRelease, upgrade_release};
use crate::release::model::Chart;

const EXT: &str = "ext";

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).unwrap()
}

fn release(version: i64, status: &str, bundle: &str, labels: &[(&str, &str)]) -> Release {
    let mut all = BTreeMap::from([
        (BUNDLE_NAME_LABEL.to_owned(), format!("p.v{bundle}")),
        (BUNDLE_VERSION_LABEL.to_owned(), bundle.to_owned()),
        (BUNDLE_REFERENCE_LABEL.to_owned(), format!("r/p:v{bundle}")),
    ]);
    all.extend(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    Release {
        name: EXT.into(),
        version,
        info: Some(Info {
            status: Status::new(status),
            last_deployed: HelmTime::from_timestamp(at(1_000_000 + version * 100)),
            description: format!("record {version}"),
            ..Default::default()
        }),
        manifest: format!("manifest of {bundle}"),
        chart: Some(Chart::default()),
        namespace: "ns".into(),
        labels: Some(all),
        ..Default::default()
    }
}

fn availability(status: ConditionStatus) -> Availability {
    Availability {
        status,
        reason: ConditionReason::ProbeFailure,
        message: "deployments [ns/op] are not available".into(),
    }
}

/// 1.1.0 deployed, then an upgrade to 1.2.0 made under `OnFailure` (deployed at 1,000,200).
fn upgraded_on_probation() -> Vec<Release> {
    vec![
        release(1, Status::SUPERSEDED, "1.1.0", &[]),
        release(2, Status::DEPLOYED, "1.2.0", &[(WATCH_LABEL, "true")]),
    ]
}

#[test]
fn only_an_upgrade_made_under_on_failure_is_on_probation() {
    let releases = upgraded_on_probation();
    let w = watched(&releases).expect("on probation");
    assert_eq!((w.upgrade.version, w.previous.version), (2, 1));

    let mut plain = upgraded_on_probation();
    plain[1].labels.as_mut().unwrap().remove(WATCH_LABEL);
    assert!(watched(&plain).is_none(), "made without OnFailure");

    let install = vec![release(
        1,
        Status::DEPLOYED,
        "1.1.0",
        &[(WATCH_LABEL, "true")],
    )];
    assert!(watched(&install).is_none(), "nothing to return to");

    let mut passed = upgraded_on_probation();
    pass_probation(&mut passed[1]);
    assert!(watched(&passed).is_none(), "seen Available once");
}

#[test]
fn the_release_to_return_to_skips_failed_and_rolled_back_upgrades() {
    let releases = vec![
        release(1, Status::SUPERSEDED, "1.0.0", &[]),
        release(
            2,
            Status::SUPERSEDED,
            "1.1.0",
            &[(ROLLED_BACK_LABEL, "true")],
        ),
        release(3, Status::FAILED, "1.1.1", &[]),
        release(4, Status::DEPLOYED, "1.2.0", &[(WATCH_LABEL, "true")]),
    ];
    assert_eq!(watched(&releases).unwrap().previous.version, 1);
}

#[test]
fn probation_passes_when_available_waits_until_the_deadline_and_then_fails() {
    let releases = upgraded_on_probation();
    let upgrade = &releases[1];
    let deployed_at = 1_000_200;
    assert_eq!(
        probation(
            upgrade,
            &availability(ConditionStatus::True),
            at(deployed_at + 9_999),
            1
        ),
        Probation::Passed
    );
    assert_eq!(
        probation(
            upgrade,
            &availability(ConditionStatus::False),
            at(deployed_at + 20),
            1
        ),
        Probation::Waiting { recheck_secs: 40 }
    );
    assert_eq!(
        probation(upgrade, &availability(ConditionStatus::False), at(deployed_at + 60), 1),
        Probation::Failed {
            why: "its Deployments were not Available within 1 minute of the upgrade: deployments [ns/op] are not available".into()
        }
    );
    match probation(
        upgrade,
        &availability(ConditionStatus::False),
        at(deployed_at + 601),
        10,
    ) {
        Probation::Failed { why } => assert!(why.contains("within 10 minutes"), "{why}"),
        other => panic!("{other:?}"),
    }
    // An availability that could not be read never rolls back.
    assert_eq!(
        probation(
            upgrade,
            &availability(ConditionStatus::Unknown),
            at(deployed_at + 6_000),
            1
        ),
        Probation::Waiting { recheck_secs: 1 }
    );
    assert_eq!(
        probation(
            upgrade,
            &availability(ConditionStatus::Unknown),
            at(deployed_at),
            10
        ),
        Probation::Waiting {
            recheck_secs: UNKNOWN_RECHECK_SECS
        }
    );
}

#[test]
fn a_stored_version_the_previous_crd_does_not_serve_prevents_the_rollback() {
    let live = json!({
        "metadata": {"name": "widgets.e2e"},
        "spec": {"versions": [{"name": "v1", "served": true}, {"name": "v2", "served": true}]},
        "status": {"storedVersions": ["v1", "v2"]},
    });
    let previous_without_v2 = json!({"spec": {"versions": [{"name": "v1", "served": true}]}});
    assert_eq!(
        unserved_stored_versions(&live, &previous_without_v2),
        vec![
            "CRD \"widgets.e2e\" stores objects as version \"v2\", which the previous release does not serve"
        ]
    );
    let previous_not_serving = json!({"spec": {"versions": [
        {"name": "v1", "served": true}, {"name": "v2", "served": false}]}});
    assert_eq!(
        unserved_stored_versions(&live, &previous_not_serving).len(),
        1
    );
    let previous_serving = json!({"spec": {"versions": [
        {"name": "v1", "served": true}, {"name": "v2", "served": true, "storage": false}]}});
    assert!(unserved_stored_versions(&live, &previous_serving).is_empty());
}

#[test]
fn a_rollback_appends_a_copy_of_the_previous_release_and_marks_the_failed_one() {
    let releases = upgraded_on_probation();
    let new = rollback_release(&releases, &releases[0], 7, at(2_000_000));
    assert_eq!(new.version, 3);
    assert_eq!(new.status(), Status::PENDING_ROLLBACK);
    assert_eq!(new.manifest, releases[0].manifest);
    assert_eq!(new.label(BUNDLE_VERSION_LABEL), Some("1.1.0"));
    assert_eq!(new.label(ROLLBACK_GENERATION_LABEL), Some("7"));
    assert_eq!(new.info.as_ref().unwrap().description, "Rollback to 1");

    let changes = after_rollback(&releases, EXT, 2, 3, 1, "it broke", Ok(()));
    assert_eq!(
        changes,
        vec![
            RecordChange::RolledBack {
                version: 2,
                description: "Upgrade \"ext\" failed: it broke".into()
            },
            RecordChange::SetStatus {
                version: 3,
                status: Status::DEPLOYED,
                description: "Rollback to 1".into()
            },
        ]
    );
    // After a failed apply of the upgrade, the previous release is still the deployed one.
    let apply_failed = vec![
        release(1, Status::DEPLOYED, "1.1.0", &[]),
        release(2, Status::FAILED, "1.2.0", &[]),
    ];
    let changes = after_rollback(&apply_failed, EXT, 2, 3, 1, "conflict", Ok(()));
    assert!(changes.contains(&RecordChange::Supersede(1)), "{changes:?}");
    assert_eq!(
        after_rollback(&apply_failed, EXT, 2, 3, 1, "conflict", Err("denied")),
        vec![RecordChange::SetStatus {
            version: 3,
            status: Status::FAILED,
            description: "Rollback \"ext\" failed: denied".into()
        }]
    );

    let mut failed = releases[1].clone();
    changes_apply(
        &mut failed,
        &RecordChange::RolledBack {
            version: 2,
            description: "Upgrade \"ext\" failed: it broke".into(),
        },
    );
    assert_eq!(failed.status(), Status::SUPERSEDED);
    assert_eq!(failed.label(ROLLED_BACK_LABEL), Some("true"));
    assert_eq!(failed.label(WATCH_LABEL), None);
}

fn changes_apply(release: &mut Release, change: &RecordChange) {
    change.apply_to(release);
}

fn after_a_rollback() -> Vec<Release> {
    let mut releases = upgraded_on_probation();
    let mut new = rollback_release(&releases, &releases[0], 7, at(2_000_000));
    history::set_status(&mut new, Status::DEPLOYED, "Rollback to 1");
    mark_rolled_back(
        &mut releases[1],
        "Upgrade \"ext\" failed: its Deployments were not Available within 1 minute of the upgrade: x",
    );
    releases.push(new);
    releases
}

#[test]
fn the_failed_bundle_is_not_retried_until_the_generation_or_the_bundle_changes() {
    let releases = after_a_rollback();
    let rb = rolled_back(&releases).expect("a rollback in force");
    let failed = BundleIdentity {
        name: "p.v1.2.0",
        version: "1.2.0",
        image: "r/p:v1.2.0",
    };
    assert!(rb.holds(Some(7), failed));
    assert!(!rb.holds(Some(8), failed), "the spec changed");
    let republished = BundleIdentity {
        image: "r/p:v1.2.0-fixed",
        ..failed
    };
    assert!(!rb.holds(Some(7), republished), "the catalog changed");
    assert_eq!(
        rb.message(EXT),
        "upgrade to p.v1.2.0 (1.2.0) was rolled back to p.v1.1.0 (1.1.0): its Deployments were not Available within 1 minute of the upgrade: x; p.v1.2.0 is not retried until the ClusterExtension's spec or the resolved bundle changes"
    );
    // The installed bundle, as upstream reads it, is the previous one.
    assert_eq!(
        history::installed_bundle(&releases).unwrap().version,
        "1.1.0"
    );
}

#[test]
fn a_later_upgrade_inherits_none_of_the_rollback_marks() {
    let releases = after_a_rollback();
    let new = |labels: BTreeMap<String, String>| NewRelease {
        name: EXT,
        namespace: "ns",
        chart: Chart::default(),
        manifest: "manifest of 1.3.0".into(),
        labels,
        now: at(3_000_000),
    };
    let bundle = history::bundle_labels("p", "p.v1.3.0", "1.3.0", "r/p:v1.3.0", None);
    let (upgrade, from) = upgrade_release(&releases, new(bundle.clone())).unwrap();
    assert_eq!(from, 3);
    for label in [WATCH_LABEL, ROLLED_BACK_LABEL, ROLLBACK_GENERATION_LABEL] {
        assert_eq!(upgrade.label(label), None, "{label}");
    }
    let mut watched_bundle = bundle;
    watched_bundle.insert(WATCH_LABEL.into(), "true".into());
    let (mut upgrade, _) = upgrade_release(&releases, new(watched_bundle)).unwrap();
    assert_eq!(upgrade.label(WATCH_LABEL), Some("true"));
    history::set_status(&mut upgrade, Status::DEPLOYED, history::UPGRADE_COMPLETE);
    let mut later = releases.clone();
    later[2].info.as_mut().unwrap().status = Status::new(Status::SUPERSEDED);
    later.push(upgrade);
    assert!(rolled_back(&later).is_none());
    assert_eq!(watched(&later).unwrap().previous.version, 3);
}
