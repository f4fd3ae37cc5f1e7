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
//! | object changed (resourceVersion differs from the last one seen) | yes, `Modified` |
//! | object created, or seen for the first time | no (our own apply creates it) |
//! | watch re-listed after a gap | objects missing from the new list as `Deleted`, changed ones as `Modified` |
//! | object without an `owner-name` label | no |
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
            let task = tokio::spawn(run_watch(api, kind.clone(), self.events.clone(), synced_tx));
            watches.insert(kind.clone(), Watch { task, synced });
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
#[derive(Clone, PartialEq, Eq)]
struct Seen {
    owner: String,
    resource_version: String,
}

type ObjectName = (Option<String>, String);

fn identify(meta: &PartialObjectMeta<DynamicObject>) -> Option<(ObjectName, Seen)> {
    let metadata = &meta.metadata;
    let owner = metadata.labels.as_ref()?.get(OWNER_NAME_LABEL)?.clone();
    let name = metadata.name.clone()?;
    Some((
        (metadata.namespace.clone(), name),
        Seen {
            owner,
            resource_version: metadata.resource_version.clone().unwrap_or_default(),
        },
    ))
}

async fn run_watch(
    api: Api<PartialObjectMeta<DynamicObject>>,
    kind: ResourceInfo,
    events: mpsc::Sender<DriftEvent>,
    synced: watch::Sender<bool>,
) {
    let config = watcher::Config::default().labels(OWNER_KIND_SELECTOR);
    let mut stream = watch_stream(api, config).default_backoff().boxed();
    let mut known: HashMap<ObjectName, Seen> = HashMap::new();
    let mut relisting: Option<HashMap<ObjectName, Seen>> = None;
    let report = |name: &ObjectName, owner: &str, change: DriftChange| DriftEvent {
        extension: owner.to_owned(),
        object: ObjectRef::new(&kind.gvk, name.0.as_deref(), &name.1),
        change,
    };
    while let Some(event) = stream.next().await {
        let mut out = Vec::new();
        match event {
            Ok(Event::Init) => relisting = Some(HashMap::new()),
            Ok(Event::InitApply(meta)) => {
                if let (Some(list), Some((name, seen))) = (relisting.as_mut(), identify(&meta)) {
                    list.insert(name, seen);
                }
            }
            Ok(Event::InitDone) => {
                let fresh = relisting.take().unwrap_or_default();
                for (name, old) in &known {
                    match fresh.get(name) {
                        None => out.push(report(name, &old.owner, DriftChange::Deleted)),
                        Some(new) if new.resource_version != old.resource_version => {
                            out.push(report(name, &new.owner, DriftChange::Modified));
                        }
                        Some(_) => {}
                    }
                }
                known = fresh;
                synced.send_replace(true);
            }
            Ok(Event::Apply(meta)) => {
                if let Some((name, seen)) = identify(&meta)
                    && let Some(old) = known.insert(name.clone(), seen.clone())
                    && old.resource_version != seen.resource_version
                {
                    if old.owner != seen.owner {
                        out.push(report(&name, &old.owner, DriftChange::Modified));
                    }
                    out.push(report(&name, &seen.owner, DriftChange::Modified));
                }
            }
            Ok(Event::Delete(meta)) => {
                if let Some((name, seen)) = identify(&meta) {
                    known.remove(&name);
                    out.push(report(&name, &seen.owner, DriftChange::Deleted));
                }
            }
            Err(error) => {
                tracing::warn!(kind = %kind.gvk, %error, "drift watch failed; retrying with backoff");
            }
        }
        for event in out {
            if events.send(event).await.is_err() {
                return;
            }
        }
    }
}
