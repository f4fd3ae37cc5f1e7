//! Leader election on a `coordination.k8s.io/v1` Lease, so that one catalogd replica writes
//! ClusterCatalog status and finalizers while every replica unpacks and serves content.
//!
//! Input: a Kubernetes client, the Lease's namespace and name, this replica's identity. Output: a
//! `watch` channel that is `true` while this replica leads. Network: the Kubernetes API only.
//!
//! Expiry is judged by when this replica last *observed* the Lease record change, not by the
//! holder's timestamps, so clock skew between nodes cannot make two replicas lead at once
//! (client-go's rule).
//!
//! | observed Lease | action |
//! |---|---|
//! | absent | create it, holding it |
//! | held by us | renew (`renewTime`), optimistic concurrency on `resourceVersion` |
//! | held by another, record unchanged for `lease_duration` | take it over (`leaseTransitions`+1) |
//! | held by another, recently changed | follow |
//! | renewal failing for `renew_deadline` | step down |

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;

/// Timing of the election (controller-runtime's defaults: 15 s / 10 s / 2 s).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// How long a holder's claim lasts without renewal.
    pub lease_duration: Duration,
    /// How long a leader keeps trying to renew before it steps down.
    pub renew_deadline: Duration,
    /// Pause between attempts.
    pub retry_period: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Runs an election until `shutdown` fires, publishing leadership on the returned channel. On
/// shutdown a held Lease is released so another replica can take over at once.
pub fn elect(
    client: kube::Client,
    namespace: &str,
    name: &str,
    identity: &str,
    timing: Timing,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> (watch::Receiver<bool>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = watch::channel(false);
    let mut elector = Elector {
        api: Api::namespaced(client, namespace),
        name: name.to_string(),
        identity: identity.to_string(),
        timing,
        observed: None,
        last_renewed: None,
    };
    let handle = tokio::spawn(async move {
        tokio::pin!(shutdown);
        loop {
            let leading = elector.try_acquire_or_renew().await;
            if *tx.borrow() != leading {
                tracing::info!(lease = %elector.name, identity = %elector.identity, leading, "leadership changed");
                let _ = tx.send(leading);
            }
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tokio::time::sleep(timing.retry_period) => {}
            }
        }
        if *tx.borrow() {
            let _ = tx.send(false);
            elector.release().await;
        }
    });
    (rx, handle)
}

struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timing: Timing,
    /// The last Lease record seen (holder, renew time, transitions) and when it was first seen.
    observed: Option<(RecordKey, Instant)>,
    /// When this replica last renewed successfully.
    last_renewed: Option<Instant>,
}

#[derive(Clone, Debug, PartialEq)]
struct RecordKey {
    holder: Option<String>,
    renew: Option<MicroTime>,
    transitions: Option<i32>,
}

fn key(lease: &Lease) -> RecordKey {
    let spec = lease.spec.clone().unwrap_or_default();
    RecordKey {
        holder: spec.holder_identity,
        renew: spec.renew_time,
        transitions: spec.lease_transitions,
    }
}

fn now_micro() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

impl Elector {
    /// One election round; returns whether this replica leads afterwards.
    async fn try_acquire_or_renew(&mut self) -> bool {
        match self.round().await {
            Ok(leading) => {
                if leading {
                    self.last_renewed = Some(Instant::now());
                }
                leading
            }
            Err(e) => {
                tracing::warn!(lease = %self.name, error = %e, "failed to acquire or renew the leader lease");
                // Keep leading only while the last renewal is within the renew deadline.
                self.last_renewed
                    .is_some_and(|at| at.elapsed() < self.timing.renew_deadline)
            }
        }
    }

    async fn round(&mut self) -> Result<bool, kube::Error> {
        let duration_secs = i32::try_from(self.timing.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(duration_secs),
                    acquire_time: Some(now_micro()),
                    renew_time: Some(now_micro()),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };

        let record = key(&lease);
        let first_seen = match &self.observed {
            Some((seen, at)) if *seen == record => *at,
            _ => Instant::now(),
        };
        self.observed = Some((record.clone(), first_seen));

        let held_by_us = record.holder.as_deref() == Some(self.identity.as_str());
        let vacant = record.holder.as_deref().is_none_or(str::is_empty);
        let expired = first_seen.elapsed() >= self.timing.lease_duration;
        if !held_by_us && !vacant && !expired {
            return Ok(false);
        }

        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if !held_by_us {
            spec.holder_identity = Some(self.identity.clone());
            spec.acquire_time = Some(now_micro());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.renew_time = Some(now_micro());
        spec.lease_duration_seconds = Some(duration_secs);
        // `replace` carries the resourceVersion we read: a concurrent change makes it fail (409).
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observed = Some((key(&updated), Instant::now()));
                Ok(true)
            }
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up so the next replica does not wait for it to expire.
    async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now_micro());
        if let Err(e) = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(lease = %self.name, error = %e, "failed to release the leader lease");
        }
    }
}
