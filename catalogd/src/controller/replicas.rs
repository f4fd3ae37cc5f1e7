//! Which catalogd replicas serve what, so the leader reports a catalog as served only once its
//! content can be read from every replica behind the Service (upstream #2819: a client routed to
//! a replica that has not unpacked yet gets 404 while `Serving` says True).
//!
//! Every replica (with `--leader-elect`) keeps one Lease of its own in the system namespace,
//! `catalogd-replica-<identity>`, labelled with its replica group (replicas that manage the same
//! catalogs), renewed every [`RENEW`] and at once when its stored content changes, naming in an
//! annotation the digest it serves per catalog. The leader lists the group's live Leases (renewed
//! within their duration) and withholds `Serving=True` and `status.urls` for a new digest until
//! every live replica serves it; a replica that stops renewing (gone, partitioned) stops counting
//! after [`LEASE_DURATION`]. Listing failures (for example RBAC) fall back to this replica alone.
//!
//! While it waits, the leader publishes nothing new: `status.resolvedSource` keeps naming content
//! every replica serves (clients cache content by it), and only `Progressing` says it waits. The
//! followers learn the digest to pull from the leader's own replica Lease
//! ([`Presence::leader_serves`]), found through the leader-election Lease's holder.
//!
//! Input: the storage of this replica, the leader's questions. Output: Lease writes, [`missing`],
//! [`Presence::leader_serves`]. Network: the Kubernetes API (Leases in the system namespace).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, Patch, PatchParams};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::storage::Storage;

/// How often a replica renews its Lease.
pub const RENEW: Duration = Duration::from_secs(10);
/// How long a Lease counts after its last renewal.
pub const LEASE_DURATION: Duration = Duration::from_secs(30);
/// Label naming a replica Lease's group.
pub const GROUP_LABEL: &str = "olm.operatorframework.io/catalogd-replica-group";
/// Annotation with the served digests (JSON object: catalog name → digest reference).
pub const SERVED_ANNOTATION: &str = "olm.operatorframework.io/served";
/// Bound of the two reads that find what the leader serves.
const LEADER_READ_BOUND: Duration = Duration::from_secs(10);
/// Expired replica Leases older than this are deleted by the leader (best effort).
const FORGET_AFTER: Duration = Duration::from_secs(600);

/// One replica as its Lease describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replica {
    pub identity: String,
    /// Seconds since the last renewal.
    pub age: Duration,
    pub served: BTreeMap<String, String>,
}

/// The live replicas other than `self_identity` that do not serve `digest` for `catalog`. Pure.
pub fn missing(
    replicas: &[Replica],
    self_identity: &str,
    catalog: &str,
    digest: &str,
) -> Vec<String> {
    replicas
        .iter()
        .filter(|r| r.identity != self_identity && r.age < LEASE_DURATION)
        .filter(|r| r.served.get(catalog).map(String::as_str) != Some(digest))
        .map(|r| r.identity.clone())
        .collect()
}

/// What a replica Lease says: its holder, the time since its renewal (`Duration::MAX` when it
/// was never renewed) and the digests it serves.
fn replica_of(lease: &Lease) -> Replica {
    let spec = lease.spec.clone().unwrap_or_default();
    let age = spec
        .renew_time
        .as_ref()
        .and_then(|t| k8s_openapi::jiff::Timestamp::now().since(t.0).ok())
        .and_then(|span| span.total(k8s_openapi::jiff::Unit::Second).ok())
        .map(|secs| Duration::from_secs_f64(secs.max(0.0)))
        .unwrap_or(Duration::MAX);
    let served = lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SERVED_ANNOTATION))
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    Replica {
        identity: spec.holder_identity.unwrap_or_default(),
        age,
        served,
    }
}

/// The digest `leader` serves for `catalog`, when `replica` is the leader's live Lease. Pure.
pub fn leader_target(replica: &Replica, leader: &str, catalog: &str) -> Option<String> {
    (replica.identity == leader && replica.age < LEASE_DURATION)
        .then(|| replica.served.get(catalog).cloned())
        .flatten()
}

/// The group of replicas managing the same catalogs: a label value derived from the catalog
/// label selector (`all` without one).
pub fn group(label_selector: Option<&str>) -> String {
    match label_selector {
        None => "all".to_owned(),
        Some(selector) => {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(selector.as_bytes());
            digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
        }
    }
}

/// A Lease name for `identity` (lowercase alphanumerics and dashes, at most 63 characters).
pub fn lease_name(identity: &str) -> String {
    let clean: String = identity
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut name = format!("catalogd-replica-{clean}");
    name.truncate(63);
    name.trim_end_matches('-').to_owned()
}

/// This replica's presence: its Lease, renewed by [`Presence::run`].
pub struct Presence {
    api: Api<Lease>,
    /// The leader-election Lease (in the same namespace), whose holder is the leader.
    election_lease: String,
    identity: String,
    group: String,
    storage: Storage,
    changed: Notify,
}

impl Presence {
    pub fn new(
        client: kube::Client,
        namespace: &str,
        election_lease: &str,
        identity: &str,
        group: String,
        storage: Storage,
    ) -> Arc<Presence> {
        Arc::new(Presence {
            api: Api::namespaced(client, namespace),
            election_lease: election_lease.to_owned(),
            identity: identity.to_owned(),
            group,
            storage,
            changed: Notify::new(),
        })
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Stored content changed: renew now.
    pub fn content_changed(&self) {
        self.changed.notify_one();
    }

    fn served(&self) -> BTreeMap<String, String> {
        let names = self.storage.catalogs().unwrap_or_default();
        names
            .into_iter()
            .filter_map(|name| {
                let stored = self.storage.get(&name).ok()??;
                Some((name, stored.digest().to_string()))
            })
            .collect()
    }

    async fn renew(&self) -> Result<(), kube::Error> {
        let now = k8s_openapi::jiff::Timestamp::now();
        let served = serde_json::to_string(&self.served()).unwrap_or_else(|_| "{}".into());
        let lease = serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {
                "name": lease_name(&self.identity),
                "labels": {GROUP_LABEL: self.group},
                "annotations": {SERVED_ANNOTATION: served},
            },
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": LEASE_DURATION.as_secs(),
                "renewTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(now),
            },
        });
        self.api
            .patch(
                &lease_name(&self.identity),
                &PatchParams::apply("catalogd-replica").force(),
                &Patch::Apply(&lease),
            )
            .await
            .map(drop)
    }

    /// Renews every [`RENEW`] and on every content change until `stop`, then deletes the Lease.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut warned = false;
        loop {
            match self.renew().await {
                Ok(()) => warned = false,
                Err(e) if !warned => {
                    tracing::warn!(error = %e, "failed to renew this replica's Lease; the leader may report catalogs as served before this replica serves them");
                    warned = true;
                }
                Err(_) => {}
            }
            tokio::select! {
                _ = stop.cancelled() => {
                    // Leaving: the leader need not wait for this replica's Lease to expire.
                    let _ = self
                        .api
                        .delete(&lease_name(&self.identity), &Default::default())
                        .await;
                    return;
                }
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep(RENEW) => {}
            }
        }
    }

    /// The group's replicas as their Leases say (`Err`: they cannot be listed).
    pub async fn replicas(&self) -> Result<Vec<Replica>, kube::Error> {
        let leases = self
            .api
            .list(&ListParams::default().labels(&format!("{GROUP_LABEL}={}", self.group)))
            .await?;
        let mut out = Vec::new();
        for lease in leases.items {
            if lease.spec.is_none() {
                continue;
            }
            let replica = replica_of(&lease);
            if replica.age > FORGET_AFTER
                && let Some(name) = lease.metadata.name.as_deref()
            {
                // A replica gone for long: its Lease is only clutter.
                let _ = self.api.delete(name, &Default::default()).await;
                continue;
            }
            out.push(replica);
        }
        Ok(out)
    }

    /// The digest the current leader serves for `catalog`, as its replica Lease says: what a
    /// follower pulls while the leader waits for every replica before publishing it. `None` when
    /// this replica leads, no live leader is known, or the leader serves nothing for `catalog`.
    pub async fn leader_serves(&self, catalog: &str) -> Result<Option<String>, kube::Error> {
        // Bounded: a slow API server means "not known yet", and the follower asks again soon.
        tokio::time::timeout(LEADER_READ_BOUND, self.read_leader_serves(catalog))
            .await
            .unwrap_or(Ok(None))
    }

    async fn read_leader_serves(&self, catalog: &str) -> Result<Option<String>, kube::Error> {
        let election = self.api.get_opt(&self.election_lease).await?;
        let Some(holder) = election
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .filter(|h| !h.is_empty() && h != &self.identity)
        else {
            return Ok(None);
        };
        let Some(lease) = self.api.get_opt(&lease_name(&holder)).await? else {
            return Ok(None);
        };
        Ok(leader_target(&replica_of(&lease), &holder, catalog))
    }

    /// The live replicas that do not serve `digest` for `catalog` yet; empty when the Leases
    /// cannot be read (warned once per call site by the caller's log).
    pub async fn missing(&self, catalog: &str, digest: &str) -> Vec<String> {
        match self.replicas().await {
            Ok(replicas) => missing(&replicas, &self.identity, catalog, digest),
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the replica Leases; reporting content as served by this replica alone");
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(id: &str, age: u64, served: &[(&str, &str)]) -> Replica {
        Replica {
            identity: id.into(),
            age: Duration::from_secs(age),
            served: served
                .iter()
                .map(|(c, d)| (c.to_string(), d.to_string()))
                .collect(),
        }
    }

    #[test]
    fn only_live_other_replicas_without_the_digest_are_missing() {
        let replicas = [
            replica("me", 1, &[]),
            replica("ready", 2, &[("c", "d1")]),
            replica("old", 3, &[("c", "d0")]),
            replica("none", 4, &[]),
            replica("gone", 31, &[]),
        ];
        assert_eq!(missing(&replicas, "me", "c", "d1"), ["old", "none"]);
        assert!(missing(&replicas[..2], "me", "c", "d1").is_empty());
    }

    #[test]
    fn a_follower_pulls_what_the_live_leader_serves() {
        let leader = replica("replica-a", 3, &[("c", "r@sha256:2")]);
        assert_eq!(
            leader_target(&leader, "replica-a", "c").as_deref(),
            Some("r@sha256:2")
        );
        assert_eq!(leader_target(&leader, "replica-a", "other"), None);
        // Another replica's Lease, or the leader's gone stale, say nothing.
        assert_eq!(leader_target(&leader, "replica-b", "c"), None);
        let stale = replica(
            "replica-a",
            LEASE_DURATION.as_secs() + 1,
            &[("c", "r@sha256:2")],
        );
        assert_eq!(leader_target(&stale, "replica-a", "c"), None);
    }

    #[test]
    fn names_and_groups_are_valid_kubernetes_values() {
        assert_eq!(lease_name("Pod_A.1"), "catalogd-replica-pod-a-1");
        assert!(lease_name(&"x".repeat(100)).len() <= 63);
        assert_eq!(group(None), "all");
        let g = group(Some("a=b"));
        assert_eq!(g.len(), 16);
        assert_ne!(g, group(Some("a=c")));
    }
}
