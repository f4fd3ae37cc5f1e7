//! The last successful apply of each extension, so that a reconcile which would apply exactly
//! the same objects to a cluster where none of them changed since can skip the apply.
//!
//! Input: apply requests and their outcomes; the drift watches' view of the objects. Output:
//! the remembered outcome when it still holds. Network: none (the drift watches already hold
//! what is compared).
//!
//! An apply of an unchanged release costs, per object, a GET and a server-side apply, plus the
//! namespace, ServiceAccount, permission and labelled-CRD checks around them. Most reconciles
//! of an installed extension are of that kind: a Deployment's rollout, a catalog poll, the
//! availability re-check. The remembered outcome is used only when all of these hold:
//!
//! | check | why |
//! |---|---|
//! | the request is the same (objects, identity, install namespace, previous objects it would prune, owner) | anything else is a different apply |
//! | every applied object is, in its kind's drift watch, at the metadata fingerprint the apply left it with | the drift watch has seen no edit, deletion or label change since (status writes do not count) |
//! | the apply is younger than [`MAX_AGE`] | permissions, the ServiceAccount and objects the watch cannot see (a watch that lost its selector) are verified again by a full apply at least that often |
//!
//! A failed reconcile or an uninstall forgets the extension.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::apply::{ApplyOutcome, ApplyRequest, DriftWatches, ObjectRef};

/// How long a remembered apply stands in for a full one.
pub const MAX_AGE: Duration = Duration::from_secs(10 * 60);

struct Entry {
    request: u64,
    outcome: ApplyOutcome,
    at: Instant,
}

/// The last applies, by extension name.
#[derive(Default)]
pub struct LastApplies {
    entries: Mutex<HashMap<String, Entry>>,
}

/// A digest of everything an apply request says that decides what it does. Of the previous
/// objects only those the request would prune count (previous objects no longer desired): the
/// first install (no previous release) and the reconcile after it (the installed release as
/// previous, every object of it still desired) apply exactly the same, so they must not differ.
pub fn request_digest(request: &ApplyRequest<'_>) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&request.owner.name, &request.owner.uid).hash(&mut hasher);
    request.install_namespace.hash(&mut hasher);
    format!("{:?}", request.identity).hash(&mut hasher);
    for object in request.desired {
        // serde_json writes maps in key order: equal objects give equal text.
        object.to_string().hash(&mut hasher);
    }
    let desired: std::collections::HashSet<ObjectRef> = request
        .desired
        .iter()
        .filter_map(ObjectRef::of_json)
        .collect();
    for previous in request.previous.iter().filter(|p| !desired.contains(*p)) {
        previous.to_string().hash(&mut hasher);
    }
    hasher.finish()
}

impl LastApplies {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The outcome of the last apply of `extension` when it still describes the cluster (see
    /// the module table), as an apply that changed and pruned nothing.
    pub fn unchanged(
        &self,
        extension: &str,
        request: u64,
        drift: &DriftWatches,
    ) -> Option<ApplyOutcome> {
        let outcome = {
            let entries = self.lock();
            let entry = entries.get(extension)?;
            if entry.request != request || entry.at.elapsed() >= MAX_AGE {
                return None;
            }
            entry.outcome.clone()
        };
        let objects: Vec<_> = outcome
            .applied
            .iter()
            .map(|a| (a.resource.clone(), a.object.clone(), a.fingerprint))
            .collect();
        if !drift.unchanged(&objects) {
            return None;
        }
        let mut outcome = outcome;
        for applied in &mut outcome.applied {
            applied.changed = false;
        }
        outcome.pruned.clear();
        Some(outcome)
    }

    /// Remembers a successful apply. An outcome remembered again (from [`Self::unchanged`])
    /// keeps its original time, so [`MAX_AGE`] bounds the time since the last full apply.
    pub fn record(&self, extension: &str, request: u64, outcome: &ApplyOutcome) {
        self.lock().insert(
            extension.to_owned(),
            Entry {
                request,
                outcome: outcome.clone(),
                at: Instant::now(),
            },
        );
    }

    /// Forgets `extension` (a failed reconcile, an uninstall).
    pub fn forget(&self, extension: &str) {
        self.lock().remove(extension);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{AppliedObject, Identity, ObjectRef, Owner, ResourceInfo};
    use olm_operator_core::apply_plan::Gvk;
    use serde_json::json;

    fn outcome() -> ApplyOutcome {
        let gvk = Gvk::from_api_version("v1", "ConfigMap");
        ApplyOutcome {
            applied: vec![AppliedObject {
                object: ObjectRef::new(&gvk, Some("ns"), "a"),
                resource: ResourceInfo {
                    gvk,
                    plural: "configmaps".into(),
                    namespaced: true,
                },
                resource_version: "1".into(),
                fingerprint: 7,
                changed: true,
            }],
            pruned: vec![],
            kept: vec![],
        }
    }

    #[test]
    fn the_request_digest_changes_with_every_part_of_the_request() {
        let owner = Owner {
            name: "e".into(),
            uid: "u".into(),
        };
        let desired = [json!({"kind": "ConfigMap", "metadata": {"name": "a"}})];
        let identity = Identity::Controller;
        let base = ApplyRequest {
            owner: &owner,
            install_namespace: "ns",
            identity: &identity,
            desired: &desired,
            previous: &[],
        };
        let digest = request_digest(&base);
        assert_eq!(request_digest(&base), digest);
        let other_desired = [json!({"kind": "ConfigMap", "metadata": {"name": "b"}})];
        let other_owner = Owner {
            name: "e".into(),
            uid: "v".into(),
        };
        let previous = [ObjectRef::new(
            &Gvk::from_api_version("v1", "ConfigMap"),
            Some("ns"),
            "old",
        )];
        for changed in [
            ApplyRequest {
                desired: &other_desired,
                ..base
            },
            ApplyRequest {
                install_namespace: "other",
                ..base
            },
            ApplyRequest {
                owner: &other_owner,
                ..base
            },
            ApplyRequest {
                previous: &previous,
                ..base
            },
        ] {
            assert_ne!(request_digest(&changed), digest);
        }
    }

    #[test]
    fn previous_objects_still_desired_do_not_change_the_digest() {
        let owner = Owner {
            name: "e".into(),
            uid: "u".into(),
        };
        let desired = [json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns"}})];
        let identity = Identity::Controller;
        let first_install = ApplyRequest {
            owner: &owner,
            install_namespace: "ns",
            identity: &identity,
            desired: &desired,
            previous: &[],
        };
        let installed: Vec<ObjectRef> = desired.iter().filter_map(ObjectRef::of_json).collect();
        assert_eq!(installed.len(), 1);
        let next = ApplyRequest {
            previous: &installed,
            ..first_install
        };
        assert_eq!(request_digest(&next), request_digest(&first_install));
        // One more previous object, which the apply would prune: another request.
        let mut with_pruned = installed.clone();
        with_pruned.push(ObjectRef::new(
            &Gvk::from_api_version("v1", "ConfigMap"),
            Some("ns"),
            "gone",
        ));
        let pruning = ApplyRequest {
            previous: &with_pruned,
            ..first_install
        };
        assert_ne!(request_digest(&pruning), request_digest(&first_install));
    }

    #[tokio::test]
    async fn nothing_is_reused_for_another_request_or_when_the_watch_has_not_seen_the_objects() {
        let applies = LastApplies::default();
        // A client that is never called: the drift registry watches nothing here.
        olm_runtime::client::install_crypto_provider();
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a url"));
        let client = kube::Client::try_from(config).expect("a client");
        let (drift, _events) = DriftWatches::new(client, 1);
        assert!(
            applies.unchanged("e", 1, &drift).is_none(),
            "nothing recorded"
        );
        applies.record("e", 1, &outcome());
        assert!(applies.unchanged("e", 2, &drift).is_none(), "other request");
        assert!(
            applies.unchanged("e", 1, &drift).is_none(),
            "the kind is not watched, so the object's state is unknown"
        );
        applies.forget("e");
        assert!(applies.unchanged("e", 1, &drift).is_none());
    }
}
