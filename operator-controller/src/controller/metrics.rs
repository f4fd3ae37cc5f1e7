//! Prometheus metrics of the ClusterExtension controller.
//!
//! Input: observations from the reconcile. Output: the text exposition served at `/metrics`
//! (beside `/healthz` and `/readyz`, as catalogd serves them). No IO of its own.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `operator_controller_reconcile_duration_seconds` | histogram | `result` | one reconcile, from read to status write |
//! | `operator_controller_reconciles_total` | counter | `result` (`success`, `error`, `terminal`) | reconciles by outcome |
//! | `operator_controller_resolution_duration_seconds` | histogram | – | fetching catalog content (cached by revision) and resolving |
//! | `operator_controller_unpack_duration_seconds` | histogram | – | pulling and unpacking a bundle image that was not cached |
//! | `operator_controller_extensions` | gauge | `installed`, `progressing` (condition status and reason) | extensions by state |
//! | `operator_controller_applied_objects_total` | counter | `change` (`changed`, `unchanged`) | objects written by applies |
//! | `operator_controller_pruned_objects_total` | counter | – | objects deleted because an upgrade dropped them |
//! | `operator_controller_managed_objects` | gauge | – | objects of every extension's last apply |
//! | `operator_controller_extensions_awaiting_approval` | gauge | – | extensions whose resolved bundle waits for approval (`status.pendingApproval` set) |
//! | `operator_controller_rollbacks_total` | counter | – | failed upgrades rolled back (`spec.install.rollback`) |
//! | `operator_controller_extensions_rollback_refused` | gauge | – | extensions whose failed upgrade stays because rolling back is unsafe |
//! | `operator_controller_write_conflicts_total` | counter | – | reconciles whose write was refused because the extension changed since it was read (retried from 10 ms) |

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

const RECONCILE_BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
const STEP_BUCKETS: [f64; 11] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
];
const UNPACK_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    installed: String,
    progressing: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpdatesLabels {
    name: String,
    package: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChangeLabel {
    change: String,
}

/// An extension's state as the gauge counts it: `Installed` status, `Progressing` reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ExtensionState {
    pub installed: String,
    pub progressing: String,
}

/// Every metric of the controller. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Arc<Registry>,
    reconcile_duration: Family<ResultLabel, Histogram>,
    reconciles: Family<ResultLabel, Counter>,
    resolution_duration: Histogram,
    unpack_duration: Histogram,
    extensions: Family<StateLabels, Gauge>,
    applied: Family<ChangeLabel, Counter>,
    pruned: Counter,
    managed: Gauge,
    updates_available: Family<UpdatesLabels, Gauge>,
    /// The packages each extension's updates gauge was set for.
    update_packages: Mutex<HashMap<String, std::collections::BTreeSet<String>>>,
    /// Extensions whose status has `pendingApproval`.
    awaiting_approval: Gauge,
    awaiting: Mutex<std::collections::BTreeSet<String>>,
    rollbacks: Counter,
    write_conflicts: Counter,
    rollback_refused: Gauge,
    refused: Mutex<std::collections::BTreeSet<String>>,
    /// Per extension: its state and how many objects its last apply wrote.
    known: Mutex<HashMap<String, (Option<ExtensionState>, usize)>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let reconcile_duration = Family::<ResultLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(RECONCILE_BUCKETS.iter().copied())
        });
        registry.register(
            "operator_controller_reconcile_duration_seconds",
            "Time of one ClusterExtension reconcile, by result",
            reconcile_duration.clone(),
        );
        let reconciles = Family::<ResultLabel, Counter>::default();
        registry.register(
            "operator_controller_reconciles",
            "ClusterExtension reconciles by result (success, error, terminal)",
            reconciles.clone(),
        );
        let resolution_duration = Histogram::new(STEP_BUCKETS.iter().copied());
        registry.register(
            "operator_controller_resolution_duration_seconds",
            "Time to fetch catalog content and resolve a bundle",
            resolution_duration.clone(),
        );
        let unpack_duration = Histogram::new(UNPACK_BUCKETS.iter().copied());
        registry.register(
            "operator_controller_unpack_duration_seconds",
            "Time to pull and unpack a bundle image that was not cached",
            unpack_duration.clone(),
        );
        let extensions = Family::<StateLabels, Gauge>::default();
        registry.register(
            "operator_controller_extensions",
            "ClusterExtensions by Installed status and Progressing reason",
            extensions.clone(),
        );
        let applied = Family::<ChangeLabel, Counter>::default();
        registry.register(
            "operator_controller_applied_objects",
            "Objects written by applies, by whether the write changed them",
            applied.clone(),
        );
        let pruned = Counter::default();
        registry.register(
            "operator_controller_pruned_objects",
            "Objects deleted because an upgrade dropped them",
            pruned.clone(),
        );
        let managed = Gauge::default();
        registry.register(
            "operator_controller_managed_objects",
            "Objects of every ClusterExtension's last apply",
            managed.clone(),
        );
        let updates_available = Family::<UpdatesLabels, Gauge>::default();
        registry.register(
            "olm_clusterextension_updates_available",
            "Newer bundles held back from a ClusterExtension by its spec or the upgrade graph (status.availableUpdates)",
            updates_available.clone(),
        );
        let awaiting_approval = Gauge::default();
        registry.register(
            "operator_controller_extensions_awaiting_approval",
            "ClusterExtensions whose resolved bundle waits for approval (status.pendingApproval)",
            awaiting_approval.clone(),
        );
        let rollbacks = Counter::default();
        registry.register(
            "operator_controller_rollbacks",
            "Failed upgrades rolled back to the previous release (spec.install.rollback)",
            rollbacks.clone(),
        );
        let write_conflicts = Counter::default();
        registry.register(
            "operator_controller_write_conflicts",
            "Reconciles whose write was refused because the ClusterExtension changed since it was read (retried at once)",
            write_conflicts.clone(),
        );
        let rollback_refused = Gauge::default();
        registry.register(
            "operator_controller_extensions_rollback_refused",
            "ClusterExtensions whose failed upgrade stays installed because rolling back is unsafe for stored data",
            rollback_refused.clone(),
        );
        Metrics {
            inner: Arc::new(Inner {
                rollbacks,
                write_conflicts,
                rollback_refused,
                refused: Mutex::new(std::collections::BTreeSet::new()),
                awaiting_approval,
                awaiting: Mutex::new(std::collections::BTreeSet::new()),
                updates_available,
                update_packages: Mutex::new(HashMap::new()),
                registry: Arc::new(registry),
                reconcile_duration,
                reconciles,
                resolution_duration,
                unpack_duration,
                extensions,
                applied,
                pruned,
                managed,
                known: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The registry every metric is registered in, for the `/metrics` endpoint.
    pub fn registry(&self) -> Arc<Registry> {
        self.inner.registry.clone()
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        olm_runtime::ops::encode(&self.inner.registry)
    }

    pub fn observe_reconcile(&self, result: &str, seconds: f64) {
        let label = ResultLabel {
            result: result.to_owned(),
        };
        self.inner
            .reconcile_duration
            .get_or_create(&label)
            .observe(seconds);
        self.inner.reconciles.get_or_create(&label).inc();
    }

    pub fn observe_resolution(&self, seconds: f64) {
        self.inner.resolution_duration.observe(seconds);
    }

    pub fn observe_unpack(&self, seconds: f64) {
        self.inner.unpack_duration.observe(seconds);
    }

    /// Records an apply: how many objects it wrote that changed and that did not, how many it
    /// pruned; the extension's managed object count becomes `changed + unchanged`.
    pub fn observe_apply(&self, extension: &str, changed: usize, unchanged: usize, pruned: usize) {
        let inc = |change: &str, n: usize| {
            self.inner
                .applied
                .get_or_create(&ChangeLabel {
                    change: change.to_owned(),
                })
                .inc_by(n as u64);
        };
        inc("changed", changed);
        inc("unchanged", unchanged);
        self.inner.pruned.inc_by(pruned as u64);
        self.update(extension, |entry| entry.1 = changed + unchanged);
    }

    /// Records an extension's state after a reconcile (`None`: no condition yet).
    pub fn set_state(&self, extension: &str, state: Option<ExtensionState>) {
        self.update(extension, |entry| entry.0 = state);
    }

    /// How many updates `extension` (of `package`) is not getting.
    pub fn set_updates_available(&self, extension: &str, package: &str, count: usize) {
        self.inner
            .update_packages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(extension.to_owned())
            .or_default()
            .insert(package.to_owned());
        self.inner
            .updates_available
            .get_or_create(&UpdatesLabels {
                name: extension.to_owned(),
                package: package.to_owned(),
            })
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Forgets a deleted extension.
    /// Records whether `extension` waits for approval.
    pub fn set_awaiting_approval(&self, extension: &str, awaiting: bool) {
        let mut set = self
            .inner
            .awaiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if awaiting {
            set.insert(extension.to_owned());
        } else {
            set.remove(extension);
        }
        self.inner
            .awaiting_approval
            .set(i64::try_from(set.len()).unwrap_or(i64::MAX));
    }

    /// Counts a reconcile that lost a write race (409) and is tried again.
    pub fn write_conflict(&self) {
        self.inner.write_conflicts.inc();
    }

    /// Counts a rollback performed.
    pub fn rollback_performed(&self) {
        self.inner.rollbacks.inc();
    }

    /// Records whether `extension`'s failed upgrade stays because rolling back is unsafe.
    pub fn set_rollback_refused(&self, extension: &str, refused: bool) {
        let mut set = self
            .inner
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if refused {
            set.insert(extension.to_owned());
        } else {
            set.remove(extension);
        }
        self.inner
            .rollback_refused
            .set(i64::try_from(set.len()).unwrap_or(i64::MAX));
    }

    pub fn forget(&self, extension: &str) {
        self.forget_updates(extension);
        self.set_awaiting_approval(extension, false);
        self.set_rollback_refused(extension, false);
        let mut known = self.lock();
        known.remove(extension);
        self.publish(&known);
    }

    /// Drops every `olm_clusterextension_updates_available` series of `extension`.
    fn forget_updates(&self, extension: &str) {
        // prometheus-client cannot list a family's label sets; the gauge goes to zero for every
        // package the extension was seen with through `set_updates_available`.
        let packages = self
            .inner
            .update_packages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(extension)
            .unwrap_or_default();
        for package in packages {
            self.inner.updates_available.remove(&UpdatesLabels {
                name: extension.to_owned(),
                package,
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Option<ExtensionState>, usize)>> {
        self.inner
            .known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, extension: &str, edit: impl FnOnce(&mut (Option<ExtensionState>, usize))) {
        let mut known = self.lock();
        edit(known.entry(extension.to_owned()).or_default());
        self.publish(&known);
    }

    /// Recomputes the gauges from the per-extension table (so a state that no extension is in
    /// any more reads 0).
    fn publish(&self, known: &HashMap<String, (Option<ExtensionState>, usize)>) {
        let mut counts: HashMap<StateLabels, i64> = HashMap::new();
        for (state, _) in known.values() {
            if let Some(state) = state {
                *counts
                    .entry(StateLabels {
                        installed: state.installed.clone(),
                        progressing: state.progressing.clone(),
                    })
                    .or_default() += 1;
            }
        }
        self.inner.extensions.clear();
        for (labels, n) in counts {
            self.inner.extensions.get_or_create(&labels).set(n);
        }
        let managed: usize = known.values().map(|(_, n)| n).sum();
        self.inner
            .managed
            .set(i64::try_from(managed).unwrap_or(i64::MAX));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(installed: &str, progressing: &str) -> Option<ExtensionState> {
        Some(ExtensionState {
            installed: installed.into(),
            progressing: progressing.into(),
        })
    }

    #[test]
    fn the_exposition_counts_extensions_by_state_and_objects() {
        let m = Metrics::new();
        m.observe_reconcile("success", 0.2);
        m.observe_resolution(0.003);
        m.observe_unpack(1.0);
        m.set_state("a", state("True", "Succeeded"));
        m.set_state("b", state("True", "Succeeded"));
        m.set_state("c", state("False", "Retrying"));
        m.observe_apply("a", 2, 3, 1);
        m.observe_apply("b", 0, 4, 0);
        m.write_conflict();
        let text = m.encode();
        for line in [
            "operator_controller_write_conflicts_total 1",
            "operator_controller_reconciles_total{result=\"success\"} 1",
            "operator_controller_extensions{installed=\"True\",progressing=\"Succeeded\"} 2",
            "operator_controller_extensions{installed=\"False\",progressing=\"Retrying\"} 1",
            "operator_controller_applied_objects_total{change=\"changed\"} 2",
            "operator_controller_applied_objects_total{change=\"unchanged\"} 7",
            "operator_controller_pruned_objects_total 1",
            "operator_controller_managed_objects 9",
            "operator_controller_resolution_duration_seconds_count 1",
            "operator_controller_unpack_duration_seconds_count 1",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        m.set_state("c", state("True", "Succeeded"));
        m.forget("a");
        let text = m.encode();
        assert!(
            text.contains(
                "operator_controller_extensions{installed=\"True\",progressing=\"Succeeded\"} 2"
            ),
            "{text}"
        );
        assert!(!text.contains("progressing=\"Retrying\""), "{text}");
        assert!(
            text.contains("operator_controller_managed_objects 4"),
            "{text}"
        );
    }

    #[test]
    fn the_awaiting_approval_gauge_counts_each_extension_once() {
        let m = Metrics::new();
        m.set_awaiting_approval("a", true);
        m.set_awaiting_approval("a", true);
        m.set_awaiting_approval("b", true);
        assert!(
            m.encode()
                .contains("operator_controller_extensions_awaiting_approval 2")
        );
        m.set_awaiting_approval("b", false);
        m.forget("a");
        assert!(
            m.encode()
                .contains("operator_controller_extensions_awaiting_approval 0")
        );
    }
}
