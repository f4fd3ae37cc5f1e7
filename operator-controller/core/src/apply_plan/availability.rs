//! Whether an extension's Deployments are available: the `Available` condition.
//!
//! Input: the applied Deployments as read from the cluster (JSON; `None` for one that is
//! missing). Output: an [`Availability`] with upstream's experimental reasons
//! (`ProbesSucceeded` / `ProbeFailure`, from its Boxcutter runtime) and a message naming every
//! Deployment that is not available. Pure: no IO.
//!
//! A Deployment passes the probe upstream's Boxcutter runtime gives Deployments (boxcutter
//! v0.14 `probing`): if `status.observedGeneration` is present it must equal
//! `metadata.generation` (else Unknown, `.status outdated`); then both of
//!
//! | assertion | True | False | Unknown |
//! |---|---|---|---|
//! | `status.updatedReplicas` equals `status.replicas` | `"status.updatedReplicas" == "status.replicas"` | `"<field>" missing`, or `"status.updatedReplicas" != "status.replicas" expected: <a> got: <b>` | — |
//! | condition `Available` is `True` | `.status.condition["Available"] is True` | `.status.condition["Available"] is <status>` | `missing .status.conditions`, `malformed .status.conditions`, `.status.condition["Available"] outdated`, `missing .status.condition["Available"]` |
//!
//! combined as boxcutter's `And`: Unknown if any is Unknown, else False if any is False, else
//! True; the messages of the deciding status are joined with ` and `. Anything but True fails.
//! A Deployment scaled to zero has neither replica field and fails the first assertion, as
//! upstream's does.
//!
//! Message: all pass → `Objects are available and pass all probes.` (upstream's COS text);
//! otherwise one line per failing Deployment, `Object Deployment.apps/v1 <ns>/<name>: <messages>`,
//! joined with `\n`. Upstream reports only the first failing object of a phase; we name every
//! one, so the condition says everything that is wrong.

use olm_api::v1::{ConditionReason, ConditionStatus};
use serde_json::Value;

use super::object::ObjectRef;

/// Upstream's message when every probe passes.
pub const PROBES_SUCCEEDED_MESSAGE: &str = "Objects are available and pass all probes.";

/// The `Available` condition's status, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Availability {
    pub status: ConditionStatus,
    pub reason: ConditionReason,
    pub message: String,
}

impl Availability {
    pub fn is_available(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Probe {
    True,
    False,
    Unknown,
}

struct ProbeResult {
    status: Probe,
    messages: Vec<String>,
}

fn result(status: Probe, message: String) -> ProbeResult {
    ProbeResult {
        status,
        messages: vec![message],
    }
}

fn fields_equal(object: &Value, a: &str, b: &str) -> ProbeResult {
    let lookup = |path: &str| {
        object
            .pointer(&format!("/{}", path.replace('.', "/")))
            .cloned()
    };
    let Some(value_a) = lookup(a) else {
        return result(Probe::False, format!("\"{a}\" missing"));
    };
    let Some(value_b) = lookup(b) else {
        return result(Probe::False, format!("\"{b}\" missing"));
    };
    if value_a != value_b {
        return result(
            Probe::False,
            format!("\"{a}\" != \"{b}\" expected: {value_a} got: {value_b}"),
        );
    }
    result(Probe::True, format!("\"{a}\" == \"{b}\""))
}

fn condition_equal(object: &Value, type_: &str, want: &str) -> ProbeResult {
    let Some(conditions) = object.pointer("/status/conditions") else {
        return result(Probe::Unknown, "missing .status.conditions".into());
    };
    let Some(conditions) = conditions.as_array() else {
        return result(Probe::Unknown, "malformed .status.conditions".into());
    };
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    for condition in conditions {
        if !condition.is_object() {
            return result(Probe::Unknown, "malformed .status.conditions".into());
        }
        if condition.get("type").and_then(Value::as_str) != Some(type_) {
            continue;
        }
        if let Some(observed) = condition.get("observedGeneration").and_then(Value::as_i64)
            && observed != generation
        {
            return result(
                Probe::Unknown,
                format!(".status.condition[\"{type_}\"] outdated"),
            );
        }
        let status = condition
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("");
        return if status == want {
            result(
                Probe::True,
                format!(".status.condition[\"{type_}\"] is {want}"),
            )
        } else {
            result(
                Probe::False,
                format!(".status.condition[\"{type_}\"] is {status}"),
            )
        };
    }
    result(
        Probe::Unknown,
        format!("missing .status.condition[\"{type_}\"]"),
    )
}

fn all_of(results: Vec<ProbeResult>) -> ProbeResult {
    let pick = |status: Probe| -> Option<ProbeResult> {
        results
            .iter()
            .any(|r| r.status == status)
            .then(|| ProbeResult {
                status,
                messages: results
                    .iter()
                    .filter(|r| r.status == status)
                    .flat_map(|r| r.messages.clone())
                    .collect(),
            })
    };
    pick(Probe::Unknown)
        .or_else(|| pick(Probe::False))
        .unwrap_or_else(|| ProbeResult {
            status: Probe::True,
            messages: results.iter().flat_map(|r| r.messages.clone()).collect(),
        })
}

fn deployment_probe(object: &Value) -> ProbeResult {
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(observed) = object
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        && observed != generation
    {
        return result(Probe::Unknown, ".status outdated".into());
    }
    all_of(vec![
        fields_equal(object, "status.updatedReplicas", "status.replicas"),
        condition_equal(object, "Available", "True"),
    ])
}

/// The `Available` condition for `deployments`: each applied Deployment's reference and its
/// live object (`None` when it does not exist).
pub fn deployments_availability(deployments: &[(ObjectRef, Option<Value>)]) -> Availability {
    let mut failures = Vec::new();
    for (reference, live) in deployments {
        let gvk = reference.gvk();
        let ns = reference.namespace.as_deref().unwrap_or("");
        let messages = match live {
            None => vec!["not found".to_owned()],
            Some(object) => {
                let probe = deployment_probe(object);
                if probe.status == Probe::True {
                    continue;
                }
                probe.messages
            }
        };
        failures.push(format!(
            "Object {gvk} {ns}/{}: {}",
            reference.name,
            messages.join(" and ")
        ));
    }
    if failures.is_empty() {
        Availability {
            status: ConditionStatus::True,
            reason: ConditionReason::ProbesSucceeded,
            message: PROBES_SUCCEEDED_MESSAGE.into(),
        }
    } else {
        Availability {
            status: ConditionStatus::False,
            reason: ConditionReason::ProbeFailure,
            message: failures.join("\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reference(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    fn deployment(generation: i64, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": "ns", "generation": generation},
               "status": status})
    }

    fn available(generation: i64) -> Value {
        deployment(
            generation,
            json!({"observedGeneration": generation, "replicas": 1, "updatedReplicas": 1,
                   "conditions": [{"type": "Progressing", "status": "True"},
                                  {"type": "Available", "status": "True"}]}),
        )
    }

    #[test]
    fn all_available_is_probes_succeeded_with_upstreams_message() {
        // Source: operator-controller controllers/clusterobjectset_controller.go markAsAvailable.
        let a = deployments_availability(&[
            (reference("a"), Some(available(2))),
            (reference("b"), Some(available(1))),
        ]);
        assert_eq!(a.status, ConditionStatus::True);
        assert_eq!(a.reason, ConditionReason::ProbesSucceeded);
        assert_eq!(a.message, "Objects are available and pass all probes.");
        assert_eq!(
            deployments_availability(&[]).reason,
            ConditionReason::ProbesSucceeded
        );
    }

    #[test]
    fn every_unavailable_deployment_is_named_with_boxcutters_probe_messages() {
        // Message shapes: boxcutter v0.14 probing/{condition,fieldsequal,observedgeneration}.go
        // and the COS controller's "Object %s.%s %s/%s: %v".
        let rolling = deployment(
            3,
            json!({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 1,
                   "conditions": [{"type": "Available", "status": "False"}]}),
        );
        let stale = deployment(4, json!({"observedGeneration": 3}));
        let fresh = deployment(1, json!({}));
        let a = deployments_availability(&[
            (reference("ok"), Some(available(1))),
            (reference("rolling"), Some(rolling)),
            (reference("stale"), Some(stale)),
            (reference("fresh"), Some(fresh)),
            (reference("gone"), None),
        ]);
        assert_eq!(a.status, ConditionStatus::False);
        assert_eq!(a.reason, ConditionReason::ProbeFailure);
        assert_eq!(
            a.message,
            "Object Deployment.apps/v1 ns/rolling: \"status.updatedReplicas\" != \"status.replicas\" expected: 1 got: 2 and .status.condition[\"Available\"] is False\n\
             Object Deployment.apps/v1 ns/stale: .status outdated\n\
             Object Deployment.apps/v1 ns/fresh: missing .status.conditions\n\
             Object Deployment.apps/v1 ns/gone: not found"
        );
    }

    #[test]
    fn unknown_beats_false_and_condition_generations_are_checked() {
        let d = deployment(
            2,
            json!({"replicas": 1, "updatedReplicas": 1,
                   "conditions": [{"type": "Available", "status": "True", "observedGeneration": 1}]}),
        );
        let a = deployments_availability(&[(reference("d"), Some(d))]);
        assert_eq!(
            a.message,
            "Object Deployment.apps/v1 ns/d: .status.condition[\"Available\"] outdated"
        );
        let d = deployment(
            1,
            json!({"conditions": [{"type": "Progressing", "status": "True"}]}),
        );
        let a = deployments_availability(&[(reference("d"), Some(d))]);
        assert_eq!(
            a.message,
            "Object Deployment.apps/v1 ns/d: missing .status.condition[\"Available\"]"
        );
        let d = deployment(1, json!({"conditions": "nope", "replicas": 1}));
        let a = deployments_availability(&[(reference("d"), Some(d))]);
        assert_eq!(
            a.message,
            "Object Deployment.apps/v1 ns/d: malformed .status.conditions"
        );
    }
}
