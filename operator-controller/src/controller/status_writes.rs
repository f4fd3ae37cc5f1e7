//! Keeps the reconciles and the Deployment watch's publisher ([`super::availability`]) from
//! refusing each other's status writes.
//!
//! Input: the names of extensions whose reconcile is running ([`InFlight::enter`]), the status
//! writes this process made ([`OwnWrites::record`]) and extensions as the informer holds them.
//! Output: whether the publisher leaves an extension to its running reconcile (the name is handed
//! back to the publisher when that reconcile ends), and the freshest copy of an extension this
//! process knows. No network.
//!
//! Why: every status write is guarded by the resourceVersion it was computed from. Right after
//! one of our writes the informer still holds the version before it, so a write computed from the
//! informer's copy is refused (HTTP 409), which costs a request and a reconcile; and a publisher
//! write that lands while a reconcile runs makes that reconcile's write fail. At 1,000 extensions
//! that was about 0.6 refused status patches per extension (docs/performance/issue-27.md, twelfth
//! step).
//!
//! resourceVersions are opaque, so the freshest copy is chosen without ordering them: each of our
//! writes was guarded by the version before it, so a chain of them has no foreign change in it,
//! and an informer copy carrying a version the chain superseded differs from the chain's last
//! version only by our status. Any other copy is taken as it is. A wrong choice can only get a
//! guarded write refused, as before; it never overwrites a change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use olm_api::v1::{ClusterExtension, ClusterExtensionStatus};
use tokio::sync::mpsc;

/// How long our own writes are remembered: the informer delivers them within milliseconds, and
/// an older chain only holds memory.
const KEEP: Duration = Duration::from_secs(10);

/// Our status writes to one extension that followed each other.
struct Chain {
    /// The versions our writes replaced, oldest first.
    superseded: Vec<String>,
    /// The version and status of the last one.
    version: String,
    status: Option<ClusterExtensionStatus>,
    at: Instant,
}

/// The status writes of this process, per extension, until the informer has them.
#[derive(Clone, Default)]
pub struct OwnWrites(Arc<Mutex<HashMap<String, Chain>>>);

impl OwnWrites {
    /// `written` is the API server's answer to a status write guarded by `base`'s
    /// resourceVersion.
    pub fn record(&self, base: &ClusterExtension, written: &ClusterExtension) {
        let (Some(name), Some(from), Some(to)) = (
            base.metadata.name.clone(),
            base.metadata.resource_version.clone(),
            written.metadata.resource_version.clone(),
        ) else {
            return;
        };
        let now = Instant::now();
        let mut chains = self.lock();
        chains.retain(|_, chain| now.duration_since(chain.at) < KEEP);
        let mut superseded = match chains.remove(&name) {
            Some(chain) if chain.version == from => chain.superseded,
            _ => Vec::new(),
        };
        superseded.push(from);
        chains.insert(
            name,
            Chain {
                superseded,
                version: to,
                status: written.status.clone(),
                at: now,
            },
        );
    }

    /// `seen` (the informer's copy) with our later status writes in it, when the informer has not
    /// delivered them yet; `None` when `seen` is the freshest copy this process knows.
    pub fn freshest(&self, seen: &ClusterExtension) -> Option<ClusterExtension> {
        let name = seen.metadata.name.as_deref()?;
        let seen_version = seen.metadata.resource_version.as_deref()?;
        let mut chains = self.lock();
        let chain = chains.get(name)?;
        if chain.at.elapsed() >= KEEP || chain.version == seen_version {
            // Forgotten, or the informer caught up.
            chains.remove(name);
            return None;
        }
        if !chain.superseded.iter().any(|v| v == seen_version) {
            return None;
        }
        let mut fresher = seen.clone();
        fresher.metadata.resource_version = Some(chain.version.clone());
        fresher.status = chain.status.clone();
        Some(fresher)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Chain>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The extensions whose reconcile is running, and which of them the publisher left to it.
pub struct InFlight {
    /// Name → whether the publisher was told of a change meanwhile.
    running: Mutex<HashMap<String, bool>>,
    /// Where a left extension goes when its reconcile ends (the publisher's input).
    hand_back: Option<mpsc::Sender<String>>,
}

impl InFlight {
    /// `hand_back`: the publisher's input; `None` when no publisher runs.
    pub fn new(hand_back: Option<mpsc::Sender<String>>) -> Arc<InFlight> {
        Arc::new(InFlight {
            running: Mutex::new(HashMap::new()),
            hand_back,
        })
    }

    /// A reconcile of `name` runs until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>, name: &str) -> Running {
        self.lock().insert(name.to_owned(), false);
        Running {
            in_flight: self.clone(),
            name: name.to_owned(),
        }
    }

    /// True when a reconcile of `name` is running: the publisher leaves the change to it, and
    /// gets `name` back when it ends (the reconcile may have read the Deployments before the
    /// change).
    pub fn leave_to_reconcile(&self, name: &str) -> bool {
        match self.lock().get_mut(name) {
            Some(changed) => {
                *changed = true;
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, bool>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running reconcile ([`InFlight::enter`]).
pub struct Running {
    in_flight: Arc<InFlight>,
    name: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let left = self.in_flight.lock().remove(&self.name).unwrap_or(false);
        let Some(hand_back) = self.in_flight.hand_back.clone().filter(|_| left) else {
            return;
        };
        match hand_back.try_send(std::mem::take(&mut self.name)) {
            Err(mpsc::error::TrySendError::Full(name)) => {
                // The publisher is busy: wait for room rather than lose the change.
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        let _ = hand_back.send(name).await;
                    });
                }
            }
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn extension(version: &str, progressing: &str) -> ClusterExtension {
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": "e", "resourceVersion": version, "generation": 1},
            "spec": {"namespace": "ns", "serviceAccount": {"name": "sa"},
                     "source": {"sourceType": "Catalog", "catalog": {"packageName": "p"}}},
            "status": {"conditions": [{"type": "Progressing", "status": "True",
                                        "reason": progressing, "message": "",
                                        "lastTransitionTime": "2026-11-28T00:00:00Z"}]}
        }))
        .expect("an extension")
    }

    fn reason(extension: &ClusterExtension) -> &str {
        &extension.status.as_ref().expect("a status").conditions[0].reason
    }

    #[test]
    fn a_copy_from_before_our_writes_gets_the_last_of_them() {
        let writes = OwnWrites::default();
        let v1 = extension("1", "Retrying");
        let v2 = extension("2", "Succeeded");
        let v3 = extension("3", "Blocked");
        writes.record(&v1, &v2);
        writes.record(&v2, &v3);
        for seen in [&v1, &v2] {
            let fresher = writes.freshest(seen).expect("our writes are newer");
            assert_eq!(fresher.metadata.resource_version.as_deref(), Some("3"));
            assert_eq!(reason(&fresher), "Blocked");
        }
    }

    #[test]
    fn a_copy_with_our_last_write_or_a_foreign_version_is_taken_as_it_is() {
        let writes = OwnWrites::default();
        writes.record(&extension("1", "Retrying"), &extension("2", "Succeeded"));
        assert!(writes.freshest(&extension("7", "Retrying")).is_none());
        assert!(writes.freshest(&extension("2", "Succeeded")).is_none());
        // The informer caught up: the chain is gone, so even the old version is taken as it is.
        assert!(writes.freshest(&extension("1", "Retrying")).is_none());
    }

    #[test]
    fn a_write_from_another_base_starts_a_new_chain() {
        let writes = OwnWrites::default();
        writes.record(&extension("1", "Retrying"), &extension("2", "Succeeded"));
        // Someone else wrote version 3; our next write was based on it.
        writes.record(&extension("3", "Retrying"), &extension("4", "Blocked"));
        assert!(writes.freshest(&extension("1", "Retrying")).is_none());
        let fresher = writes
            .freshest(&extension("3", "Retrying"))
            .expect("our write on 3 is newer");
        assert_eq!(fresher.metadata.resource_version.as_deref(), Some("4"));
    }

    #[tokio::test]
    async fn a_change_left_to_a_running_reconcile_is_handed_back_when_it_ends() {
        let (tx, mut rx) = mpsc::channel(1);
        let in_flight = InFlight::new(Some(tx));
        assert!(!in_flight.leave_to_reconcile("e"), "nothing runs yet");

        let running = in_flight.enter("e");
        assert!(in_flight.leave_to_reconcile("e"));
        assert!(!in_flight.leave_to_reconcile("f"));
        assert!(rx.try_recv().is_err(), "not before the reconcile ends");
        drop(running);
        assert_eq!(rx.recv().await.as_deref(), Some("e"));
        assert!(!in_flight.leave_to_reconcile("e"), "it no longer runs");

        // A reconcile the publisher did not defer to hands nothing back.
        drop(in_flight.enter("e"));
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_hand_back_waits_for_room_when_the_publisher_is_busy() {
        let (tx, mut rx) = mpsc::channel(1);
        tx.send("busy".to_owned()).await.expect("room for one");
        let in_flight = InFlight::new(Some(tx));
        let running = in_flight.enter("e");
        assert!(in_flight.leave_to_reconcile("e"));
        drop(running);
        assert_eq!(rx.recv().await.as_deref(), Some("busy"));
        assert_eq!(rx.recv().await.as_deref(), Some("e"));
    }
}
