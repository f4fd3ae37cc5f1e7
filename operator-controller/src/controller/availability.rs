//! `Available` from live state: a watch of the Deployments extensions own, read by every status
//! write, and a publisher that corrects the condition when a Deployment's availability changes.
//!
//! Input: Deployments labelled `olm.operatorframework.io/owner-kind=ClusterExtension` (one
//! watch, cluster-wide, with the controller's identity), the Deployments each extension's
//! deployed release lists ([`DeployedDeployments`], kept by the reconciles). Output: an
//! [`Availability`] for a list of Deployments, and per extension whose Deployments' availability
//! changed, a status write of only its `Available` condition (or a re-queue when that cannot be
//! decided without a reconcile). Network: one watch of Deployments, status patches of
//! ClusterExtensions.
//!
//! | Deployments of the deployed release, as the watch holds them | `Available` |
//! |---|---|
//! | the watch has not listed them yet | Unknown / `ProbeFailure`, naming them |
//! | all pass the probe | True / `ProbesSucceeded` |
//! | one is absent | False / `ProbeFailure`, `… not found` naming it |
//! | one fails the probe | False / `ProbeFailure` (`apply_plan::availability`) |
//!
//! Why a watch and not a read per reconcile: a reconcile that stops early (a registry or
//! catalogd down, a catalog deleted) still writes the status, and the `Available` it writes must
//! be today's; and a Deployment that becomes available after the reconcile that created it must
//! be reported without waiting for another reason to reconcile.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef as StoreRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_stream};
use olm_api::v1::{
    ClusterExtension, ConditionReason, ConditionStatus, ConditionType, find_condition,
    set_condition,
};
use olm_operator_core::apply_plan::ownership::{OWNER_KIND_SELECTOR, OWNER_NAME_LABEL};
use olm_operator_core::apply_plan::{Availability, ObjectRef, deployments_availability};
use olm_runtime::shutdown::CancellationToken;
use olm_runtime::status::StatusWriter;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::status_writes::{InFlight, OwnWrites};

/// The Deployments extensions own, as the watch last saw them (status and the metadata the
/// probe reads; the spec is dropped to keep the cache small).
#[derive(Clone)]
pub struct DeploymentWatch {
    store: Store<Deployment>,
    synced: watch::Receiver<bool>,
}

impl DeploymentWatch {
    /// Starts the watch; the owners of Deployments whose availability may have changed arrive
    /// on `changed`. Ends with `stop`.
    pub fn start(
        client: kube::Client,
        changed: mpsc::Sender<String>,
        stop: CancellationToken,
    ) -> DeploymentWatch {
        let (store, writer) = reflector::store();
        let (synced_tx, synced) = watch::channel(false);
        let api: Api<Deployment> = Api::all(client);
        let config = watcher::Config::default().labels(OWNER_KIND_SELECTOR);
        let stream = watch_stream(api, config)
            .default_backoff()
            .modify(|d: &mut Deployment| {
                d.spec = None;
                d.metadata.managed_fields = None;
                d.metadata.annotations = None;
            })
            .reflect(writer);
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            let mut probes = Probes::default();
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => return,
                    event = stream.next() => event,
                };
                let Some(event) = event else { return };
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        tracing::debug!(error = %e, "Deployment watch");
                        continue;
                    }
                };
                for owner in changed_owners(&mut probes, event, &synced_tx) {
                    if changed.send(owner).await.is_err() {
                        return;
                    }
                }
            }
        });
        DeploymentWatch { store, synced }
    }

    /// The `Available` condition of `deployments` as the watch holds them now (see the module
    /// table).
    pub fn availability(&self, deployments: &[ObjectRef]) -> Availability {
        if !*self.synced.borrow() {
            let names: Vec<String> = deployments.iter().map(ToString::to_string).collect();
            return Availability {
                status: ConditionStatus::Unknown,
                reason: ConditionReason::ProbeFailure,
                message: format!(
                    "the status of {} has not been observed yet",
                    if names.is_empty() {
                        "the Deployments".to_owned()
                    } else {
                        names.join(", ")
                    }
                ),
            };
        }
        let observed: Vec<(ObjectRef, Option<Value>)> = deployments
            .iter()
            .map(|reference| {
                let key = StoreRef::new(&reference.name)
                    .within(reference.namespace.as_deref().unwrap_or_default());
                let live = self
                    .store
                    .get(&key)
                    .and_then(|d| serde_json::to_value(d.as_ref()).ok());
                (reference.clone(), live)
            })
            .collect();
        deployments_availability(&observed)
    }
}

/// What the probe reads of a Deployment, hashed: a change of anything else does not change its
/// availability.
fn probe_input(deployment: &Deployment) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    deployment.metadata.generation.hash(&mut hasher);
    if let Some(status) = &deployment.status {
        status.observed_generation.hash(&mut hasher);
        status.replicas.hash(&mut hasher);
        status.updated_replicas.hash(&mut hasher);
        for c in status.conditions.iter().flatten() {
            (&c.type_, &c.status, &c.reason).hash(&mut hasher);
        }
    }
    hasher.finish()
}

fn owner_of(deployment: &Deployment) -> Option<String> {
    deployment
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(OWNER_NAME_LABEL))
        .cloned()
}

/// What the watch remembers per Deployment: its owner and [`probe_input`].
#[derive(Default)]
struct Probes {
    seen: HashMap<(String, String), (String, u64)>,
    /// Deployments of a re-list in progress (between `Init` and `InitDone`).
    relisting: Option<std::collections::HashSet<(String, String)>>,
}

/// The owners to tell about one watch event: those of Deployments that appeared, disappeared
/// (also while the watch was away: missing from a re-list) or whose probe input changed. Marks
/// the watch synced when a list completes.
fn changed_owners(
    probes: &mut Probes,
    event: Event<Deployment>,
    synced: &watch::Sender<bool>,
) -> Vec<String> {
    let key = |d: &Deployment| {
        (
            d.metadata.namespace.clone().unwrap_or_default(),
            d.metadata.name.clone().unwrap_or_default(),
        )
    };
    let mut owners = Vec::new();
    match event {
        Event::Init => probes.relisting = Some(Default::default()),
        Event::InitDone => {
            if let Some(listed) = probes.relisting.take() {
                let gone: Vec<_> = probes
                    .seen
                    .keys()
                    .filter(|k| !listed.contains(*k))
                    .cloned()
                    .collect();
                for k in gone {
                    if let Some((owner, _)) = probes.seen.remove(&k) {
                        owners.push(owner);
                    }
                }
            }
            synced.send_replace(true);
        }
        Event::Apply(d) | Event::InitApply(d) => {
            if let Some(listed) = probes.relisting.as_mut() {
                listed.insert(key(&d));
            }
            let Some(owner) = owner_of(&d) else {
                if let Some((old, _)) = probes.seen.remove(&key(&d)) {
                    owners.push(old);
                }
                return owners;
            };
            let now = (owner.clone(), probe_input(&d));
            match probes.seen.insert(key(&d), now.clone()) {
                Some(old) if old == now => {}
                Some(old) if old.0 != owner => {
                    owners.push(old.0);
                    owners.push(owner);
                }
                _ => owners.push(owner),
            }
        }
        Event::Delete(d) => {
            if let Some((owner, _)) = probes.seen.remove(&key(&d)) {
                owners.push(owner);
            } else if let Some(owner) = owner_of(&d) {
                owners.push(owner);
            }
        }
    }
    owners
}

/// The Deployments of each extension's deployed release, by extension, with the release
/// version they were read from: what [`publish`] evaluates between reconciles.
#[derive(Clone, Default)]
pub struct DeployedDeployments(Arc<Mutex<ByExtension>>);

/// Extension name → (release version, its Deployments).
type ByExtension = BTreeMap<String, (i64, Vec<ObjectRef>)>;

impl DeployedDeployments {
    pub fn set(&self, extension: &str, version: i64, deployments: Vec<ObjectRef>) {
        self.lock()
            .insert(extension.to_owned(), (version, deployments));
    }

    /// The Deployments of `extension`'s release `version`, when they are known.
    pub fn of_version(&self, extension: &str, version: i64) -> Option<Vec<ObjectRef>> {
        self.lock()
            .get(extension)
            .filter(|(v, _)| *v == version)
            .map(|(_, d)| d.clone())
    }

    pub fn get(&self, extension: &str) -> Option<Vec<ObjectRef>> {
        self.lock().get(extension).map(|(_, d)| d.clone())
    }

    pub fn forget(&self, extension: &str) {
        self.lock().remove(extension);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByExtension> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The Deployments among a release's objects; a namespaced object without a namespace goes
/// to the install namespace, as the apply puts it there.
pub fn deployments_of(objects: &[Value], install_namespace: &str) -> Vec<ObjectRef> {
    objects
        .iter()
        .filter_map(ObjectRef::of_json)
        .filter(|o| o.kind == "Deployment" && o.api_version == "apps/v1")
        .map(|mut o| {
            if o.namespace.is_none() {
                o.namespace = Some(install_namespace.to_owned());
            }
            o
        })
        .collect()
}

/// What [`publish`] needs.
pub struct Publisher {
    pub client: kube::Client,
    pub extensions: Store<ClusterExtension>,
    pub watch: DeploymentWatch,
    pub deployed: DeployedDeployments,
    pub leader: watch::Receiver<bool>,
    /// Extensions to reconcile in full (their deployed release is not known here).
    pub requeue: mpsc::Sender<StoreRef<ClusterExtension>>,
    /// Our status writes the informer may not have delivered yet.
    pub own_writes: OwnWrites,
    /// Running reconciles: a change of their extension is theirs, handed back when they end.
    pub in_flight: Arc<InFlight>,
}

/// For each extension named on `changed`: when its `Available` condition no longer says what
/// its Deployments show, writes only that condition (guarded by the resourceVersion read, so a
/// concurrent reconcile's status is never overwritten; a conflict re-queues a reconcile).
/// Only the leader writes. An extension whose reconcile is running is left to it and comes back
/// on `changed` when it ends; the status compared with is the freshest this process knows
/// ([`super::status_writes`]).
pub async fn publish(
    publisher: Publisher,
    mut changed: mpsc::Receiver<String>,
    stop: CancellationToken,
) {
    let api: Api<ClusterExtension> = Api::all(publisher.client.clone());
    let writer = StatusWriter::new(api);
    loop {
        let name = tokio::select! {
            _ = stop.cancelled() => return,
            name = changed.recv() => name,
        };
        let Some(name) = name else { return };
        if !*publisher.leader.borrow() || publisher.in_flight.leave_to_reconcile(&name) {
            continue;
        }
        let Some(seen) = publisher.extensions.get(&StoreRef::new(&name)) else {
            continue;
        };
        let extension = match publisher.own_writes.freshest(&seen) {
            Some(fresher) => Arc::new(fresher),
            None => seen,
        };
        if extension.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(deployments) = publisher.deployed.get(&name) else {
            let _ = publisher.requeue.send(StoreRef::new(&name)).await;
            continue;
        };
        let availability = publisher.watch.availability(&deployments);
        let previous = extension.status.clone().unwrap_or_default();
        let current = find_condition(&previous.conditions, ConditionType::Available);
        if current.is_some_and(|c| {
            c.status == availability.status
                && c.reason == availability.reason.as_str()
                && c.message == availability.message
        }) {
            continue;
        }
        let mut status = previous.clone();
        set_condition(
            &mut status.conditions,
            ConditionType::Available,
            availability.status,
            availability.reason,
            &availability.message,
            extension.metadata.generation,
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ),
        );
        match writer
            .write_returning(extension.as_ref(), extension.status.as_ref(), &status)
            .await
        {
            Ok(written) => {
                if let Some(written) = &written {
                    publisher.own_writes.record(&extension, written);
                }
                tracing::debug!(extension = %name, available = %availability.status.as_str(), "Available updated from the Deployment watch");
            }
            Err(e) => {
                tracing::debug!(extension = %name, error = %e, "Available not written; reconciling");
                let _ = publisher.requeue.send(StoreRef::new(&name)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(name: &str, owner: &str, available: &str) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "generation": 1,
                          "labels": {OWNER_NAME_LABEL: owner}},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                       "conditions": [{"type": "Available", "status": available}]}
        }))
        .expect("a deployment")
    }

    #[test]
    fn an_owner_hears_of_new_changed_and_deleted_deployments_but_not_of_unchanged_ones() {
        let (synced, _rx) = watch::channel(false);
        let mut probes = Probes::default();
        let d = deployment("d", "e", "False");
        assert_eq!(
            changed_owners(&mut probes, Event::Apply(d.clone()), &synced),
            vec!["e"]
        );
        assert!(changed_owners(&mut probes, Event::Apply(d.clone()), &synced).is_empty());
        let available = deployment("d", "e", "True");
        assert_eq!(
            changed_owners(&mut probes, Event::Apply(available.clone()), &synced),
            vec!["e"]
        );
        assert_eq!(
            changed_owners(&mut probes, Event::Delete(available), &synced),
            vec!["e"]
        );
        let moved = deployment("d", "f", "True");
        changed_owners(&mut probes, Event::Apply(d), &synced);
        assert_eq!(
            changed_owners(&mut probes, Event::Apply(moved), &synced),
            vec!["e", "f"]
        );
        assert!(!*synced.borrow());
        changed_owners(&mut probes, Event::InitDone, &synced);
        assert!(*synced.borrow());
    }

    #[test]
    fn a_releases_deployments_get_the_install_namespace_when_they_name_none() {
        let objects = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "b", "namespace": "x"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        ];
        let found = deployments_of(&objects, "ns");
        assert_eq!(
            found
                .iter()
                .map(|o| (o.namespace.as_deref(), o.name.as_str()))
                .collect::<Vec<_>>(),
            vec![(Some("ns"), "a"), (Some("x"), "b")]
        );
    }
}
