//! An admission policy in the scenario vocabulary: a ValidatingAdmissionPolicy and its binding
//! that make the API server refuse the real writes of one ConfigMap name and let their dry runs
//! through, so that an install passes every pre-apply check and fails only once its writes began.
//!
//! Input: the ConfigMap name to refuse. Output: the policy and its binding (both named
//! `refuse-real-writes-<random>`), in force when [`Scenario::refuse_real_writes_of_configmap`]
//! returns; deleted by [`Scenario::lift`] or [`Scenario::finish`]. Network: 127.0.0.1 only (the
//! API server).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

use super::Scenario;
use crate::operator_controller::ensure_namespace;
use crate::test_env::unique_name;

/// The message with which the API server refuses a write the policy refuses.
pub const REFUSED_BY_POLICY: &str = "this ConfigMap is refused by the test's admission policy";

/// A ValidatingAdmissionPolicy and its binding of the same name, in force.
#[derive(Debug)]
pub struct AdmissionPolicy {
    pub name: String,
}

/// The API resource of the `admissionregistration.k8s.io/v1` kind `kind`.
fn admission_resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "admissionregistration.k8s.io",
        "v1",
        kind,
    ))
}

impl Scenario {
    /// Creates a ValidatingAdmissionPolicy (and its binding) refusing real creates and updates
    /// of the ConfigMaps named `configmap`, in any namespace, with [`REFUSED_BY_POLICY`], and
    /// letting their dry runs through. Returns once the API server enforces it: a real create of
    /// that name is refused and its dry run passes (in a namespace of its own, deleted again).
    pub async fn refuse_real_writes_of_configmap(&mut self, configmap: &str) -> AdmissionPolicy {
        let name = unique_name("refuse-real-writes");
        let create = |kind: &str, body: serde_json::Value| {
            let api: Api<DynamicObject> =
                Api::all_with(self.client.clone(), &admission_resource(kind));
            let object: DynamicObject = serde_json::from_value(body).expect("a policy object");
            async move {
                api.create(&PostParams::default(), &object)
                    .await
                    .unwrap_or_else(|e| panic!("create the admission policy: {e}"));
            }
        };
        create(
            "ValidatingAdmissionPolicy",
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": name},
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": {"resourceRules": [{
                        "apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"],
                    }]},
                    "validations": [{
                        "expression": format!("request.dryRun == true || object.metadata.name != '{configmap}'"),
                        "message": REFUSED_BY_POLICY,
                    }],
                },
            }),
        )
        .await;
        create(
            "ValidatingAdmissionPolicyBinding",
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": name},
                "spec": {"policyName": name, "validationActions": ["Deny"]},
            }),
        )
        .await;
        self.policies.push(name.clone());

        // The API server enforces a new policy after a moment: wait until it refuses a real
        // write of that name (and lets its dry run through).
        let probe_ns = unique_name("policy-probe");
        ensure_namespace(&self.client, &probe_ns).await;
        let probe: Api<ConfigMap> = Api::namespaced(self.client.clone(), &probe_ns);
        let object: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": configmap}})).expect("a ConfigMap");
        self.eventually("the admission policy to be enforced", || async {
            let refused_for_real = match probe.create(&PostParams::default(), &object).await {
                Ok(_) => {
                    // Not enforced yet: remove it and look again.
                    let _ = probe.delete(configmap, &DeleteParams::default()).await;
                    false
                }
                Err(e) => e.to_string().contains(REFUSED_BY_POLICY),
            };
            let dry_run = PostParams {
                dry_run: true,
                ..PostParams::default()
            };
            let dry_run_passes = probe.create(&dry_run, &object).await.is_ok();
            (refused_for_real && dry_run_passes).then_some(())
        })
        .await;
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let _ = namespaces.delete(&probe_ns, &DeleteParams::default()).await;
        AdmissionPolicy { name }
    }

    /// Deletes the policy and its binding: the writes it refused pass again.
    pub async fn lift(&mut self, policy: AdmissionPolicy) {
        self.policies.retain(|name| name != &policy.name);
        self.delete_policy(&policy.name).await;
    }

    /// Deletes the binding and the policy named `name`.
    pub(super) async fn delete_policy(&self, name: &str) {
        for kind in [
            "ValidatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",
        ] {
            let api: Api<DynamicObject> =
                Api::all_with(self.client.clone(), &admission_resource(kind));
            api.delete(name, &DeleteParams::default())
                .await
                .unwrap_or_else(|e| panic!("delete {kind} {name}: {e}"));
        }
    }
}
