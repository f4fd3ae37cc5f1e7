//! Drift detection: one watch per applied kind, mapping changes of extensions' objects to the
//! extension that owns them.
//!
//! Input: kinds to watch ([`ResourceInfo`], from [`super::ApplyOutcome::kinds`]). Output:
//! [`DriftEvent`]s on a channel, which the controller turns into re-queues of
//! [`DriftEvent::extension`]. Network: one metadata-only watch per kind, cluster-wide, label
//! selector `olm.operatorframework.io/owner-kind=ClusterExtension`, with the controller's
//! identity.
//!
//! Which events are reported (upstream's tracking cache reports update and delete events of
//! extension-owned objects and ignores creations):
//!
//! | event | reported |
//! |---|---|
//! | object deleted | yes, `Deleted` |
//! | object changed in a way an apply restores ([`metadata_fingerprint`] differs from the last one seen) | yes, `Modified` |
//! | only its status changed (same fingerprint, new resourceVersion) | no (availability has its own watch) |
//! | object created, or seen for the first time | no (our own apply creates it) |
//! | `owner-name` label removed or changed | `Modified` to the previous owner (and the new one) |
//! | `owner-kind` label removed (the object leaves the selector) | `Deleted` (the API server reports it so) |
//! | watch re-listed after a gap | objects missing from the new list as `Deleted`, changed ones as `Modified` |
//! | object never seen with an `owner-name` label | no |
//!
//! Only metadata is watched and only `(owner, resourceVersion)` per object is kept, so the
//! memory per watched object is a few dozen bytes. A kind no extension uses any more stops
//! being watched with [`DriftWatches::retain`]. When the receiver is dropped, every watch ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_stream};
use olm_operator_core::apply_plan::ownership::{OWNER_KIND_SELECTOR, OWNER_NAME_LABEL};
use olm_operator_core::apply_plan::{ObjectRef, ResourceInfo};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::call::api_resource;

/// A change of an object that belongs to an extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriftEvent {
    /// The owning ClusterExtension's name (its `owner-name` label).
    pub extension: String,
    pub object: ObjectRef,
    pub change: DriftChange,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriftChange {
    Modified,
    Deleted,
}

struct Watch {
    task: JoinHandle<()>,
    synced: watch::Receiver<bool>,
    /// The objects of this kind as the watch last saw them (shared with its task).
    known: Known,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The registry of drift watches. Cheap to clone; clones share the watches.
#[derive(Clone)]
pub struct DriftWatches {
    client: kube::Client,
    events: mpsc::Sender<DriftEvent>,
    watches: Arc<Mutex<HashMap<ResourceInfo, Watch>>>,
}

impl DriftWatches {
    /// A registry whose events arrive on the returned receiver, which buffers up to
    /// `capacity` events (a full buffer pauses the watches, nothing is dropped).
    pub fn new(
        client: kube::Client,
        capacity: usize,
    ) -> (DriftWatches, mpsc::Receiver<DriftEvent>) {
        let (events, receiver) = mpsc::channel(capacity.max(1));
        let registry = DriftWatches {
            client,
            events,
            watches: Arc::default(),
        };
        (registry, receiver)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ResourceInfo, Watch>> {
        self.watches.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a watch for every kind of `kinds` not watched yet. Must be called inside a tokio
    /// runtime.
    pub fn watch(&self, kinds: &[ResourceInfo]) {
        let mut watches = self.lock();
        for kind in kinds {
            if watches.contains_key(kind) {
                continue;
            }
            let (synced_tx, synced) = watch::channel(false);
            let api: Api<PartialObjectMeta<DynamicObject>> =
                Api::all_with(self.client.clone(), &api_resource(kind));
            let tracker = Tracker::new(kind.clone());
            let known = tracker.known.clone();
            let task = tokio::spawn(run_watch(api, tracker, self.events.clone(), synced_tx));
            watches.insert(
                kind.clone(),
                Watch {
                    task,
                    synced,
                    known,
                },
            );
        }
    }

    /// Stops every watch whose kind is not in `in_use`.
    pub fn retain(&self, in_use: &[ResourceInfo]) {
        self.lock().retain(|kind, _| in_use.contains(kind));
    }

    /// The kinds watched now.
    pub fn watched(&self) -> Vec<ResourceInfo> {
        self.lock().keys().cloned().collect()
    }

    /// Whether the watch of `kind` has listed the existing objects by now (without waiting):
    /// a change of an object it has seen after this is reported.
    pub fn is_synced(&self, kind: &ResourceInfo) -> bool {
        self.lock().get(kind).is_some_and(|w| *w.synced.borrow())
    }

    /// Whether every object of `objects` is, as its kind's watch sees it now, the version an
    /// apply left it in: the watch has listed its kind and holds the object with the same
    /// [`metadata_fingerprint`]. False as soon as one is missing, different or unwatched.
    pub fn unchanged(&self, objects: &[(ResourceInfo, ObjectRef, u64)]) -> bool {
        let watches = self.lock();
        objects.iter().all(|(kind, object, fingerprint)| {
            let Some(watch) = watches.get(kind) else {
                return false;
            };
            if !*watch.synced.borrow() {
                return false;
            }
            let known = watch.known.lock().unwrap_or_else(PoisonError::into_inner);
            known
                .get(&(object.namespace.clone(), object.name.clone()))
                .is_some_and(|seen| seen.fingerprint == *fingerprint)
        })
    }

    /// The names (namespace, name) of the objects of `kind` labelled as `owner`'s, as the watch
    /// holds them now; `None` while `kind` is not watched or not listed yet. What a LIST with
    /// the owner labels as selector answers, without the request; the answer lags the API
    /// server by the watch's delay, as any cache does.
    pub fn owned_by(&self, kind: &ResourceInfo, owner: &str) -> Option<Vec<ObjectName>> {
        let watches = self.lock();
        let watch = watches.get(kind)?;
        if !*watch.synced.borrow() {
            return None;
        }
        let known = watch.known.lock().unwrap_or_else(PoisonError::into_inner);
        let mut names: Vec<ObjectName> = known
            .iter()
            .filter(|(_, seen)| seen.owner == owner)
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        Some(names)
    }

    /// Waits until the watch of `kind` has listed the existing objects (changes after that are
    /// reported). Returns false when `kind` is not watched or its watch ended.
    pub async fn synced(&self, kind: &ResourceInfo) -> bool {
        let receiver = self.lock().get(kind).map(|w| w.synced.clone());
        match receiver {
            Some(mut receiver) => receiver.wait_for(|synced| *synced).await.is_ok(),
            None => false,
        }
    }
}

/// What is remembered per watched object.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    owner: String,
    resource_version: String,
    /// [`metadata_fingerprint`] of this version.
    fingerprint: u64,
}

impl Seen {
    /// A change an apply would restore, or a change of owner. A new resourceVersion alone (a
    /// controller's status write) is none: the Deployment watch of `controller::availability`
    /// reports what status changes mean.
    fn differs_from(&self, other: &Seen) -> bool {
        self.owner != other.owner || self.fingerprint != other.fingerprint
    }
}

/// An object's namespace (`None`: cluster-scoped) and name.
pub type ObjectName = (Option<String>, String);
type Known = Arc<Mutex<HashMap<ObjectName, Seen>>>;

pub use olm_operator_core::fingerprint::metadata_fingerprint;

/// An object's namespace and name, and its owner and resourceVersion when it has an
/// `owner-name` label.
fn identify(meta: &PartialObjectMeta<DynamicObject>) -> Option<(ObjectName, Option<Seen>)> {
    let metadata = &meta.metadata;
    let name = metadata.name.clone()?;
    let seen = metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(OWNER_NAME_LABEL))
        .map(|owner| Seen {
            owner: owner.clone(),
            resource_version: metadata.resource_version.clone().unwrap_or_default(),
            fingerprint: metadata_fingerprint(metadata),
        });
    Some(((metadata.namespace.clone(), name), seen))
}

/// The bookkeeping of one watch: the objects of its kind as the events describe them, and the
/// events of the module table they give rise to.
struct Tracker {
    kind: ResourceInfo,
    known: Known,
    /// Objects of a re-list in progress (between `Init` and `InitDone`).
    relisting: Option<HashMap<ObjectName, Seen>>,
}

impl Tracker {
    fn new(kind: ResourceInfo) -> Tracker {
        Tracker {
            kind,
            known: Arc::default(),
            relisting: None,
        }
    }

    fn report(&self, name: &ObjectName, owner: &str, change: DriftChange) -> DriftEvent {
        DriftEvent {
            extension: owner.to_owned(),
            object: ObjectRef::new(&self.kind.gvk, name.0.as_deref(), &name.1),
            change,
        }
    }

    /// The drift events of one watch event, and whether the watch is now in sync (a list
    /// completed).
    fn observe(
        &mut self,
        event: Event<PartialObjectMeta<DynamicObject>>,
    ) -> (Vec<DriftEvent>, bool) {
        let mut out = Vec::new();
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Init => self.relisting = Some(HashMap::new()),
            Event::InitApply(meta) => {
                if let (Some(list), Some((name, Some(seen)))) =
                    (self.relisting.as_mut(), identify(&meta))
                {
                    list.insert(name, seen);
                }
            }
            Event::InitDone => {
                let fresh = self.relisting.take().unwrap_or_default();
                for (name, old) in known.iter() {
                    match fresh.get(name) {
                        None => out.push(self.report(name, &old.owner, DriftChange::Deleted)),
                        Some(new) if new.differs_from(old) => {
                            if new.owner != old.owner {
                                out.push(self.report(name, &old.owner, DriftChange::Modified));
                            }
                            out.push(self.report(name, &new.owner, DriftChange::Modified));
                        }
                        Some(_) => {}
                    }
                }
                *known = fresh;
                return (out, true);
            }
            Event::Apply(meta) => {
                let Some((name, seen)) = identify(&meta) else {
                    return (out, false);
                };
                let old = match seen {
                    Some(seen) => known.insert(name.clone(), seen),
                    None => known.remove(&name),
                };
                let now = known.get(&name);
                if let Some(old) = old
                    && now.is_none_or(|now| now.differs_from(&old))
                {
                    // Changed, lost its owner label, or moved to another owner: the old owner
                    // re-applies (restoring its label), a new owner hears of it too.
                    out.push(self.report(&name, &old.owner, DriftChange::Modified));
                    if let Some(now) = now.filter(|n| n.owner != old.owner) {
                        out.push(self.report(&name, &now.owner, DriftChange::Modified));
                    }
                }
            }
            Event::Delete(meta) => {
                if let Some((name, seen)) = identify(&meta) {
                    let old = known.remove(&name);
                    if let Some(owner) = old.map(|o| o.owner).or(seen.map(|s| s.owner)) {
                        out.push(self.report(&name, &owner, DriftChange::Deleted));
                    }
                }
            }
        }
        (out, false)
    }
}

async fn run_watch(
    api: Api<PartialObjectMeta<DynamicObject>>,
    mut tracker: Tracker,
    events: mpsc::Sender<DriftEvent>,
    synced: watch::Sender<bool>,
) {
    let config = watcher::Config::default().labels(OWNER_KIND_SELECTOR);
    let mut stream = watch_stream(api, config).default_backoff().boxed();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(kind = %tracker.kind.gvk, %error, "drift watch failed; retrying with backoff");
                continue;
            }
        };
        let (drift, in_sync) = tracker.observe(event);
        if in_sync {
            synced.send_replace(true);
        }
        for event in drift {
            if events.send(event).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use olm_operator_core::apply_plan::Gvk;

    fn kind() -> ResourceInfo {
        ResourceInfo {
            gvk: Gvk::from_api_version("v1", "ConfigMap"),
            plural: "configmaps".into(),
            namespaced: true,
        }
    }

    fn meta(name: &str, owner: Option<&str>, rv: &str) -> PartialObjectMeta<DynamicObject> {
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                labels: owner.map(|o| [(OWNER_NAME_LABEL.to_owned(), o.to_owned())].into()),
                ..ObjectMeta::default()
            },
            _phantom: Default::default(),
        }
    }

    fn summary(events: &[DriftEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| format!("{} {} {:?}", e.extension, e.object.name, e.change))
            .collect()
    }

    fn listed(
        tracker: &mut Tracker,
        objects: Vec<PartialObjectMeta<DynamicObject>>,
    ) -> Vec<String> {
        assert_eq!(tracker.observe(Event::Init), (vec![], false));
        for o in objects {
            assert_eq!(tracker.observe(Event::InitApply(o)), (vec![], false));
        }
        let (events, synced) = tracker.observe(Event::InitDone);
        assert!(synced);
        summary(&events)
    }

    #[test]
    fn the_first_list_and_creations_report_nothing_changes_and_deletions_report_the_owner() {
        let mut t = Tracker::new(kind());
        assert!(listed(&mut t, vec![meta("a", Some("ext"), "1")]).is_empty());
        assert!(
            t.observe(Event::Apply(meta("b", Some("ext"), "2")))
                .0
                .is_empty(),
            "creation"
        );
        assert!(
            t.observe(Event::Apply(meta("a", Some("ext"), "1")))
                .0
                .is_empty(),
            "same version"
        );
        assert_eq!(
            summary(&t.observe(Event::Apply(meta("a", Some("ext"), "3"))).0),
            ["ext a Modified"]
        );
        assert_eq!(
            summary(&t.observe(Event::Delete(meta("b", Some("ext"), "2"))).0),
            ["ext b Deleted"]
        );
        let (events, _) = t.observe(Event::Delete(meta("a", Some("ext"), "3")));
        assert_eq!(events[0].object.to_string(), "ConfigMap \"ns/a\"");
    }

    #[test]
    fn a_status_write_reports_nothing_and_a_spec_change_reports_the_owner() {
        let mut t = Tracker::new(kind());
        let with_generation = |rv: &str, generation: i64| {
            let mut m = meta("d", Some("ext"), rv);
            m.metadata.generation = Some(generation);
            m
        };
        listed(&mut t, vec![with_generation("1", 1)]);
        assert!(
            t.observe(Event::Apply(with_generation("2", 1)))
                .0
                .is_empty(),
            "status only: same generation, new resourceVersion"
        );
        assert_eq!(
            summary(&t.observe(Event::Apply(with_generation("3", 2))).0),
            ["ext d Modified"]
        );
        let mut events = listed(&mut t, vec![with_generation("9", 2)]);
        events.sort();
        assert!(events.is_empty(), "a re-list with only status changes");
    }

    #[test]
    fn a_relist_after_a_gap_reports_what_disappeared_or_changed_meanwhile() {
        let mut t = Tracker::new(kind());
        listed(
            &mut t,
            vec![
                meta("gone", Some("x"), "1"),
                meta("same", Some("x"), "1"),
                meta("edited", Some("y"), "1"),
            ],
        );
        let mut events = listed(
            &mut t,
            vec![meta("same", Some("x"), "1"), meta("edited", Some("y"), "5")],
        );
        events.sort();
        assert_eq!(events, ["x gone Deleted", "y edited Modified"]);
    }

    #[test]
    fn losing_or_changing_the_owner_label_tells_the_owners() {
        let mut t = Tracker::new(kind());
        listed(
            &mut t,
            vec![meta("a", Some("x"), "1"), meta("b", Some("x"), "1")],
        );
        assert_eq!(
            summary(&t.observe(Event::Apply(meta("a", None, "2"))).0),
            ["x a Modified"]
        );
        assert_eq!(
            summary(&t.observe(Event::Apply(meta("b", Some("y"), "2"))).0),
            ["x b Modified", "y b Modified"]
        );
    }

    #[tokio::test]
    async fn owned_by_answers_a_labelled_list_once_the_watch_has_listed() {
        olm_runtime::client::install_crypto_provider();
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a url"));
        let client = kube::Client::try_from(config).expect("a client (never called)");
        let (drift, _events) = DriftWatches::new(client, 1);
        assert_eq!(drift.owned_by(&kind(), "ext"), None, "not watched");
        let mut tracker = Tracker::new(kind());
        let (synced_tx, synced) = watch::channel(false);
        drift.lock().insert(
            kind(),
            Watch {
                task: tokio::spawn(async {}),
                synced,
                known: tracker.known.clone(),
            },
        );
        listed(
            &mut tracker,
            vec![
                meta("b", Some("ext"), "1"),
                meta("a", Some("ext"), "2"),
                meta("c", Some("other"), "3"),
                meta("d", None, "4"),
            ],
        );
        assert_eq!(drift.owned_by(&kind(), "ext"), None, "not listed yet");
        synced_tx.send_replace(true);
        let names = |owner: &str| {
            drift
                .owned_by(&kind(), owner)
                .map(|n| n.into_iter().map(|(_, name)| name).collect::<Vec<_>>())
        };
        assert_eq!(names("ext"), Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(names("nobody"), Some(vec![]));
        // Relabelled to another owner, then deleted: gone from the answer.
        tracker.observe(Event::Apply(meta("a", Some("other"), "5")));
        tracker.observe(Event::Delete(meta("b", Some("ext"), "6")));
        assert_eq!(names("ext"), Some(vec![]));
        assert_eq!(names("other"), Some(vec!["a".to_owned(), "c".to_owned()]));
    }

    #[tokio::test]
    async fn unchanged_holds_while_the_watch_sees_the_applied_metadata_and_not_after_an_edit() {
        olm_runtime::client::install_crypto_provider();
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a url"));
        let client = kube::Client::try_from(config).expect("a client (never called)");
        let (drift, _events) = DriftWatches::new(client, 1);
        let mut tracker = Tracker::new(kind());
        let (synced_tx, synced) = watch::channel(false);
        drift.lock().insert(
            kind(),
            Watch {
                task: tokio::spawn(async {}),
                synced,
                known: tracker.known.clone(),
            },
        );
        let applied = |m: &PartialObjectMeta<DynamicObject>| {
            vec![(
                kind(),
                ObjectRef::new(&kind().gvk, Some("ns"), "a"),
                metadata_fingerprint(&m.metadata),
            )]
        };
        let first = meta("a", Some("ext"), "1");
        listed(&mut tracker, vec![first.clone()]);
        assert!(!drift.unchanged(&applied(&first)), "not synced yet");
        synced_tx.send_replace(true);
        assert!(drift.unchanged(&applied(&first)));

        // A status write: new resourceVersion, same generation and metadata.
        let mut with_generation = meta("a", Some("ext"), "2");
        with_generation.metadata.generation = Some(3);
        tracker.observe(Event::Apply(with_generation.clone()));
        let mut status_written = meta("a", Some("ext"), "3");
        status_written.metadata.generation = Some(3);
        tracker.observe(Event::Apply(status_written));
        assert!(drift.unchanged(&applied(&with_generation)), "status only");

        let mut edited = meta("a", Some("ext"), "4");
        edited.metadata.generation = Some(4);
        tracker.observe(Event::Apply(edited));
        assert!(!drift.unchanged(&applied(&with_generation)), "spec edited");

        let mut relabelled = meta("a", Some("ext"), "5");
        relabelled.metadata.generation = Some(3);
        relabelled
            .metadata
            .labels
            .get_or_insert_default()
            .insert("extra".into(), "x".into());
        tracker.observe(Event::Apply(relabelled));
        assert!(
            !drift.unchanged(&applied(&with_generation)),
            "labels changed"
        );

        tracker.observe(Event::Delete(meta("a", Some("ext"), "6")));
        assert!(!drift.unchanged(&applied(&first)), "deleted");
        assert!(drift.unchanged(&[]), "nothing to compare");
    }
}
