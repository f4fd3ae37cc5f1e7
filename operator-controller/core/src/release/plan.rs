//! What a reconcile records for an extension's release, decided before anything is written.
//!
//! Input: the extension's release history (as read), the manifest the reconcile rendered and the
//! identity of the bundle it resolved. Output: a [`ReleaseAction`], and for each action the
//! records to write once the apply is over ([`ReleaseAction::after_apply`]). No IO: the
//! controller runs every pre-apply check and a server-side dry run before it executes an action
//! that records anything, so a refused attempt records nothing.
//!
//! | last record | its manifest and bundle | action | record before the apply | after success | after failure |
//! |---|---|---|---|---|---|
//! | none | – | [`Install`](ReleaseAction::Install) | new `pending-install` (version 1) | it becomes `deployed` | it becomes `failed` |
//! | `pending-*` | – | error: another operation is in progress ([`PlanError::Pending`]) | – | – | – |
//! | `deployed` | both identical | [`Unchanged`](ReleaseAction::Unchanged) | nothing | nothing | nothing |
//! | `deployed` | manifest or bundle differs | [`Upgrade`](ReleaseAction::Upgrade) | new `pending-upgrade` | it `deployed`, the old one `superseded` | it `failed` |
//! | `failed` | both identical | [`RetryFailed`](ReleaseAction::RetryFailed) | nothing | that record `deployed`, the deployed one (if any) `superseded` | nothing: an identical failure appends nothing |
//! | `failed` | differs | [`Upgrade`](ReleaseAction::Upgrade) | new `pending-upgrade` | as above | it `failed` |
//! | `superseded` (a newer one was removed) | – | [`Upgrade`](ReleaseAction::Upgrade) | new `pending-upgrade` | as above | it `failed` |
//!
//! "Bundle identical" compares the bundle name, version and image the record's labels carry
//! with the resolved ones: a new bundle version with byte-identical objects gets its own record
//! (upstream's OCPBUGS-78311 fix), so the installed state names it after a restart.
//!
//! Upstream's Helm client appends a new record on every retry of a failed release; with a large
//! bundle and a refusal that persists (a collision, a missing namespace) that pushes the real
//! history out of the 10 kept records within minutes. Here a failure that repeats leaves the
//! one `failed` record it made, and the retry that succeeds turns that record into the deployed
//! one, which upstream's readers see as an ordinary successful upgrade.

use super::history::{
    self, BUNDLE_NAME_LABEL, BUNDLE_REFERENCE_LABEL, BUNDLE_VERSION_LABEL, PlanError,
};
use super::model::{Release, Status};

/// The bundle a reconcile resolved, as release labels record it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleIdentity<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub image: &'a str,
}

impl BundleIdentity<'_> {
    /// Whether `release`'s labels name this bundle (name, version and image).
    pub fn recorded_in(&self, release: &Release) -> bool {
        release.label(BUNDLE_NAME_LABEL) == Some(self.name)
            && release.label(BUNDLE_VERSION_LABEL) == Some(self.version)
            && release.label(BUNDLE_REFERENCE_LABEL) == Some(self.image)
    }
}

/// What to do with the release records (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseAction {
    /// The deployed record is current: keep its objects applied, record nothing.
    Unchanged { deployed: i64 },
    /// No record yet: record `pending-install`, apply, then `deployed` or `failed`.
    Install,
    /// Record `pending-upgrade` (version `last + 1`), apply, then `deployed` (and `supersede`
    /// the release it upgrades from, when that one is deployed) or `failed`.
    Upgrade { supersede: Option<i64> },
    /// The last record is a failed attempt at exactly this manifest and bundle: apply again
    /// without a new record; on success that record becomes `deployed` (and `supersede`, the
    /// deployed one, `superseded`), on failure nothing is written.
    RetryFailed { failed: i64, supersede: Option<i64> },
}

/// One record change after an apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordChange {
    /// Mark this version `superseded` (its description stays, as Helm keeps it).
    Supersede(i64),
    /// Set this version's status and description.
    SetStatus {
        version: i64,
        status: &'static str,
        description: String,
    },
    /// Mark this failed upgrade as rolled back ([`super::rollback::mark_rolled_back`]).
    RolledBack { version: i64, description: String },
}

impl RecordChange {
    /// The version the change is about.
    pub fn version(&self) -> i64 {
        match self {
            RecordChange::Supersede(v) => *v,
            RecordChange::SetStatus { version, .. } | RecordChange::RolledBack { version, .. } => {
                *version
            }
        }
    }

    /// Applies the change to `release`.
    pub fn apply_to(&self, release: &mut Release) {
        match self {
            RecordChange::Supersede(_) => history::mark_superseded(release),
            RecordChange::SetStatus {
                status,
                description,
                ..
            } => history::set_status(release, status, description),
            RecordChange::RolledBack { description, .. } => {
                super::rollback::mark_rolled_back(release, description)
            }
        }
    }
}

impl ReleaseAction {
    /// Whether the action writes a record before the apply (the controller must have passed
    /// every pre-apply check and the dry run first).
    pub fn records_before_apply(&self) -> bool {
        matches!(self, ReleaseAction::Install | ReleaseAction::Upgrade { .. })
    }

    /// Whether this installs or upgrades (the CRD upgrade-safety preflight runs, and the
    /// status reports the resolved bundle once applied).
    pub fn changes_release(&self) -> bool {
        !matches!(self, ReleaseAction::Unchanged { .. })
    }

    /// Whether the release being applied is an upgrade of an earlier one (Helm's wording of
    /// descriptions differs between install and upgrade).
    fn is_upgrade(&self, releases: &[Release]) -> bool {
        match self {
            ReleaseAction::Unchanged { .. } | ReleaseAction::Install => false,
            ReleaseAction::Upgrade { .. } => true,
            ReleaseAction::RetryFailed { failed, .. } => {
                releases.iter().any(|r| r.version < *failed)
            }
        }
    }

    /// The record changes once the apply of `new_version` (the record written before the
    /// apply, or the failed one retried) ended with `result` (`Err`: the apply's message).
    /// Order: the superseded record first, as Helm writes them.
    pub fn after_apply(
        &self,
        releases: &[Release],
        extension: &str,
        new_version: Option<i64>,
        result: Result<(), &str>,
    ) -> Vec<RecordChange> {
        let upgrade = self.is_upgrade(releases);
        let (target, supersede) = match (*self, new_version) {
            (ReleaseAction::Unchanged { .. }, _) => return Vec::new(),
            (ReleaseAction::RetryFailed { failed, supersede }, _) => (failed, supersede),
            (ReleaseAction::Install, Some(v)) => (v, None),
            (ReleaseAction::Upgrade { supersede }, Some(v)) => (v, supersede),
            (_, None) => return Vec::new(),
        };
        match result {
            Ok(()) => {
                let mut changes: Vec<RecordChange> =
                    supersede.into_iter().map(RecordChange::Supersede).collect();
                changes.push(RecordChange::SetStatus {
                    version: target,
                    status: Status::DEPLOYED,
                    description: if upgrade {
                        history::UPGRADE_COMPLETE
                    } else {
                        history::INSTALL_COMPLETE
                    }
                    .to_owned(),
                });
                changes
            }
            Err(_) if matches!(self, ReleaseAction::RetryFailed { .. }) => Vec::new(),
            Err(message) => vec![RecordChange::SetStatus {
                version: target,
                status: Status::FAILED,
                description: if upgrade {
                    history::upgrade_failed_description(extension, message)
                } else {
                    history::install_failed_description(extension, message)
                },
            }],
        }
    }
}

/// The action for a reconcile that rendered `manifest` for `bundle` (see the module table).
pub fn plan(
    releases: &[Release],
    manifest: &str,
    bundle: BundleIdentity<'_>,
) -> Result<ReleaseAction, PlanError> {
    let Some(last) = history::last(releases) else {
        return Ok(ReleaseAction::Install);
    };
    if last.info.as_ref().is_some_and(|i| i.status.is_pending()) {
        return Err(PlanError::Pending);
    }
    let same = last.manifest == manifest && bundle.recorded_in(last);
    let deployed = history::deployed(releases).map(|r| r.version);
    match last.status() {
        Status::DEPLOYED if same => Ok(ReleaseAction::Unchanged {
            deployed: last.version,
        }),
        Status::FAILED if same => Ok(ReleaseAction::RetryFailed {
            failed: last.version,
            supersede: deployed,
        }),
        _ => Ok(ReleaseAction::Upgrade {
            supersede: if last.status() == Status::DEPLOYED {
                Some(last.version)
            } else {
                deployed
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn release(version: i64, status: &str, manifest: &str, bundle: (&str, &str, &str)) -> Release {
        let mut labels = BTreeMap::new();
        labels.insert(BUNDLE_NAME_LABEL.to_owned(), bundle.0.to_owned());
        labels.insert(BUNDLE_VERSION_LABEL.to_owned(), bundle.1.to_owned());
        labels.insert(BUNDLE_REFERENCE_LABEL.to_owned(), bundle.2.to_owned());
        Release {
            name: "e".into(),
            version,
            info: Some(super::super::model::Info {
                status: Status::new(status),
                ..Default::default()
            }),
            manifest: manifest.into(),
            labels: Some(labels),
            ..Default::default()
        }
    }

    /// Name, history, manifest, resolved bundle, expected action.
    type Row = (
        &'static str,
        Vec<Release>,
        &'static str,
        (&'static str, &'static str, &'static str),
        Result<ReleaseAction, PlanError>,
    );

    const V1: (&str, &str, &str) = ("p.v1", "1.0.0", "r/p:v1");
    const V2: (&str, &str, &str) = ("p.v2", "2.0.0", "r/p:v2");

    fn identity(b: (&'static str, &'static str, &'static str)) -> BundleIdentity<'static> {
        BundleIdentity {
            name: b.0,
            version: b.1,
            image: b.2,
        }
    }

    /// The module table, row by row.
    #[test]
    fn the_action_follows_the_last_record_and_whether_manifest_and_bundle_are_identical() {
        let rows: Vec<Row> = vec![
            ("no record", vec![], "m1", V1, Ok(ReleaseAction::Install)),
            (
                "pending",
                vec![release(1, Status::PENDING_INSTALL, "m1", V1)],
                "m1",
                V1,
                Err(PlanError::Pending),
            ),
            (
                "deployed, identical",
                vec![release(1, Status::DEPLOYED, "m1", V1)],
                "m1",
                V1,
                Ok(ReleaseAction::Unchanged { deployed: 1 }),
            ),
            (
                "deployed, manifest differs",
                vec![release(1, Status::DEPLOYED, "m1", V1)],
                "m2",
                V2,
                Ok(ReleaseAction::Upgrade { supersede: Some(1) }),
            ),
            (
                "deployed, same manifest under a new bundle version",
                vec![release(1, Status::DEPLOYED, "m1", V1)],
                "m1",
                ("p.v1.0.1", "1.0.1", "r/p:v1"),
                Ok(ReleaseAction::Upgrade { supersede: Some(1) }),
            ),
            (
                "failed install, identical",
                vec![release(1, Status::FAILED, "m1", V1)],
                "m1",
                V1,
                Ok(ReleaseAction::RetryFailed {
                    failed: 1,
                    supersede: None,
                }),
            ),
            (
                "failed upgrade, identical",
                vec![
                    release(1, Status::DEPLOYED, "m1", V1),
                    release(2, Status::FAILED, "m2", V2),
                ],
                "m2",
                V2,
                Ok(ReleaseAction::RetryFailed {
                    failed: 2,
                    supersede: Some(1),
                }),
            ),
            (
                "failed upgrade, another manifest",
                vec![
                    release(1, Status::DEPLOYED, "m1", V1),
                    release(2, Status::FAILED, "m2", V2),
                ],
                "m3",
                ("p.v3", "3.0.0", "r/p:v3"),
                Ok(ReleaseAction::Upgrade { supersede: Some(1) }),
            ),
            (
                "failed upgrade, back to the deployed manifest",
                vec![
                    release(1, Status::DEPLOYED, "m1", V1),
                    release(2, Status::FAILED, "m2", V2),
                ],
                "m1",
                V1,
                Ok(ReleaseAction::Upgrade { supersede: Some(1) }),
            ),
            (
                "superseded last",
                vec![
                    release(1, Status::DEPLOYED, "m1", V1),
                    release(2, Status::SUPERSEDED, "m2", V2),
                ],
                "m2",
                V2,
                Ok(ReleaseAction::Upgrade { supersede: Some(1) }),
            ),
        ];
        for (name, releases, manifest, bundle, want) in rows {
            assert_eq!(plan(&releases, manifest, identity(bundle)), want, "{name}");
        }
    }

    #[test]
    fn only_install_and_upgrade_record_before_the_apply() {
        assert!(ReleaseAction::Install.records_before_apply());
        assert!(ReleaseAction::Upgrade { supersede: None }.records_before_apply());
        assert!(
            !ReleaseAction::RetryFailed {
                failed: 1,
                supersede: None
            }
            .records_before_apply()
        );
        assert!(!ReleaseAction::Unchanged { deployed: 1 }.records_before_apply());
    }

    #[test]
    fn after_a_successful_upgrade_the_old_record_is_superseded_first_then_the_new_one_deployed() {
        let releases = vec![release(1, Status::DEPLOYED, "m1", V1)];
        let changes = ReleaseAction::Upgrade { supersede: Some(1) }.after_apply(
            &releases,
            "e",
            Some(2),
            Ok(()),
        );
        assert_eq!(
            changes,
            vec![
                RecordChange::Supersede(1),
                RecordChange::SetStatus {
                    version: 2,
                    status: Status::DEPLOYED,
                    description: history::UPGRADE_COMPLETE.into()
                }
            ]
        );
        let install = ReleaseAction::Install.after_apply(&[], "e", Some(1), Ok(()));
        assert_eq!(
            install,
            vec![RecordChange::SetStatus {
                version: 1,
                status: Status::DEPLOYED,
                description: history::INSTALL_COMPLETE.into()
            }]
        );
    }

    #[test]
    fn a_failed_install_or_upgrade_marks_its_record_failed_with_helms_description() {
        let failed = ReleaseAction::Install.after_apply(&[], "e", Some(1), Err("boom"));
        assert_eq!(
            failed,
            vec![RecordChange::SetStatus {
                version: 1,
                status: Status::FAILED,
                description: "Release \"e\" failed: boom".into()
            }]
        );
        let releases = vec![release(1, Status::DEPLOYED, "m1", V1)];
        let failed = ReleaseAction::Upgrade { supersede: Some(1) }.after_apply(
            &releases,
            "e",
            Some(2),
            Err("boom"),
        );
        assert_eq!(
            failed,
            vec![RecordChange::SetStatus {
                version: 2,
                status: Status::FAILED,
                description: "Upgrade \"e\" failed: boom".into()
            }]
        );
    }

    #[test]
    fn a_retry_that_fails_again_writes_nothing_and_one_that_succeeds_deploys_the_failed_record() {
        let releases = vec![
            release(1, Status::DEPLOYED, "m1", V1),
            release(2, Status::FAILED, "m2", V2),
        ];
        let retry = ReleaseAction::RetryFailed {
            failed: 2,
            supersede: Some(1),
        };
        assert_eq!(retry.after_apply(&releases, "e", None, Err("boom")), vec![]);
        assert_eq!(
            retry.after_apply(&releases, "e", None, Ok(())),
            vec![
                RecordChange::Supersede(1),
                RecordChange::SetStatus {
                    version: 2,
                    status: Status::DEPLOYED,
                    description: history::UPGRADE_COMPLETE.into()
                }
            ]
        );
        let failed_install = vec![release(1, Status::FAILED, "m1", V1)];
        let retry = ReleaseAction::RetryFailed {
            failed: 1,
            supersede: None,
        };
        assert_eq!(
            retry.after_apply(&failed_install, "e", None, Ok(())),
            vec![RecordChange::SetStatus {
                version: 1,
                status: Status::DEPLOYED,
                description: history::INSTALL_COMPLETE.into()
            }]
        );
    }

    #[test]
    fn an_unchanged_release_records_nothing_whatever_the_apply_did() {
        let unchanged = ReleaseAction::Unchanged { deployed: 1 };
        assert!(unchanged.after_apply(&[], "e", None, Ok(())).is_empty());
        assert!(unchanged.after_apply(&[], "e", None, Err("x")).is_empty());
    }
}
