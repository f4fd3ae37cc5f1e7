//! Leader election on a `coordination.k8s.io/v1` Lease, so that one replica of a controller
//! writes status and finalizers while every replica does the work all replicas share (catalogd:
//! unpacking and serving content).
//!
//! Input: a Kubernetes client, the Lease's namespace and name, this replica's identity. Output: a
//! [`Leadership`] that says whether this replica leads right now. Network: the Kubernetes API only.
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
//!
//! This is our own implementation rather than the `kube-lease-manager` crate: that crate judges
//! expiry from the holder's `renewTime` against the local clock (tolerating a configured skew),
//! while client-go and this module never compare clocks of different nodes. This one releases the
//! Lease on shutdown, so a follower takes over at once (the e2e HA test relies on it).

use std::time::{Duration, Instant};

use futures::Stream;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

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

/// Whether this replica leads, for the whole run of a controller.
pub struct Leadership {
    leading: watch::Receiver<bool>,
    /// The sender of a constant leadership, held so receivers never see a closed channel.
    _constant: Option<watch::Sender<bool>>,
    election: Option<tokio::task::JoinHandle<()>>,
}

impl Leadership {
    /// A single replica: it leads from start to end.
    pub fn always() -> Leadership {
        let (tx, rx) = watch::channel(true);
        Leadership {
            leading: rx,
            _constant: Some(tx),
            election: None,
        }
    }

    /// Runs an election until `shutdown` is cancelled. On shutdown a held Lease is released so
    /// another replica can take over at once.
    pub fn elect(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
        timing: Timing,
        shutdown: CancellationToken,
    ) -> Leadership {
        let (tx, rx) = watch::channel(false);
        let mut elector = Elector {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity: identity.to_string(),
            timing,
            observed: None,
            last_renewed: None,
        };
        let election = tokio::spawn(async move {
            loop {
                let leading = elector.try_acquire_or_renew().await;
                if *tx.borrow() != leading {
                    tracing::info!(lease = %elector.name, identity = %elector.identity, leading, "leadership changed");
                    let _ = tx.send(leading);
                }
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(timing.retry_period) => {}
                }
            }
            if *tx.borrow() {
                let _ = tx.send(false);
                elector.release().await;
            }
        });
        Leadership {
            leading: rx,
            _constant: None,
            election: Some(election),
        }
    }

    /// Whether this replica leads now.
    pub fn is_leading(&self) -> bool {
        *self.leading.borrow()
    }

    /// A receiver of leadership, for tasks that check it as they go.
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Yields once per change of leadership (for example to re-examine every object when this
    /// replica becomes the one writing status).
    pub fn changes(&self) -> impl Stream<Item = ()> + Send + 'static {
        futures::stream::unfold(self.leading.clone(), |mut rx| async move {
            rx.changed().await.ok().map(|()| ((), rx))
        })
    }

    /// Waits until the election has ended (and released the Lease) after shutdown.
    pub async fn stopped(self) {
        if let Some(election) = self.election {
            let _ = election.await;
        }
    }
}

/// This replica's identity in the Lease: `$POD_NAME` (or the host name) plus a random suffix, so a
/// restarted Pod with the same name is a new holder, as controller-runtime does.
pub fn identity(pod_name: Option<&str>, fallback: &str) -> String {
    let host = pod_name.map(str::to_string).or_else(|| {
        olm_api::regular_file::read_regular_to_string(
            std::path::Path::new("/proc/sys/kernel/hostname"),
            256,
        )
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
    });
    format!(
        "{}_{:08x}",
        host.as_deref().unwrap_or(fallback),
        rand::random::<u32>()
    )
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
            return match self.api.create(&crate::client::post_params(), &lease).await {
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
            .replace(&self.name, &crate::client::post_params(), &lease)
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
            .replace(&self.name, &crate::client::post_params(), &lease)
            .await
        {
            tracing::warn!(lease = %self.name, error = %e, "failed to release the leader lease");
        }
    }
}
