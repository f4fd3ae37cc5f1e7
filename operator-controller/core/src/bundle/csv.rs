//! The ClusterServiceVersion fields rendering needs, read from the CSV as Go decodes it.
//!
//! Input: the CSV value after the Go round trip ([`crate::gotype`]), so every field already has
//! the shape of upstream's `v1alpha1.ClusterServiceVersion`. Output: a [`Csv`] with typed access
//! to names, annotations, install modes, the install strategy and webhook definitions; values
//! that go into rendered objects (deployment specs, policy rules, webhook rules) stay JSON in Go's
//! shape. No IO.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A CSV install mode type.
pub const ALL_NAMESPACES: &str = "AllNamespaces";
pub const OWN_NAMESPACE: &str = "OwnNamespace";
pub const SINGLE_NAMESPACE: &str = "SingleNamespace";
pub const MULTI_NAMESPACE: &str = "MultiNamespace";

/// Webhook types (`v1alpha1.WebhookAdmissionType`).
pub const VALIDATING_WEBHOOK: &str = "ValidatingAdmissionWebhook";
pub const MUTATING_WEBHOOK: &str = "MutatingAdmissionWebhook";
pub const CONVERSION_WEBHOOK: &str = "ConversionWebhook";

/// The CSV.
#[derive(Clone, Debug)]
pub struct Csv {
    pub name: String,
    pub annotations: BTreeMap<String, String>,
    /// `spec.version` as blang writes it (`0.0.0` when absent).
    pub version: String,
    pub install_modes: Vec<InstallMode>,
    pub deployments: Vec<DeploymentSpec>,
    pub permissions: Vec<Permission>,
    pub cluster_permissions: Vec<Permission>,
    pub webhooks: Vec<WebhookDescription>,
    /// Names of `spec.customresourcedefinitions.owned`.
    pub owned_crds: Vec<String>,
    /// How many `spec.apiservicedefinitions.owned` entries there are.
    pub owned_api_services: usize,
    /// The whole CSV in Go's shape.
    pub value: Value,
}

/// `v1alpha1.InstallMode`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Deserialize)]
pub struct InstallMode {
    #[serde(rename = "type")]
    pub type_: String,
    pub supported: bool,
}

/// `v1alpha1.StrategyDeploymentSpec`.
#[derive(Clone, Debug)]
pub struct DeploymentSpec {
    pub name: String,
    /// `appsv1.DeploymentSpec` in Go's shape.
    pub spec: Value,
    /// `label`: the Deployment's labels.
    pub label: Option<BTreeMap<String, String>>,
}

/// `v1alpha1.StrategyDeploymentPermissions`.
#[derive(Clone, Debug)]
pub struct Permission {
    pub service_account_name: String,
    /// `rbacv1.PolicyRule`s in Go's shape; `None` when the CSV had no `rules` (Go's nil slice).
    pub rules: Option<Vec<Value>>,
}

/// `v1alpha1.WebhookDescription`.
#[derive(Clone, Debug)]
pub struct WebhookDescription {
    pub generate_name: String,
    pub type_: String,
    pub deployment_name: String,
    pub container_port: i32,
    /// `intstr.IntOrString` JSON.
    pub target_port: Option<Value>,
    /// `[]RuleWithOperations` JSON (absent when empty).
    pub rules: Option<Value>,
    pub failure_policy: Option<Value>,
    pub match_policy: Option<Value>,
    pub object_selector: Option<Value>,
    pub side_effects: Option<Value>,
    pub timeout_seconds: Option<Value>,
    /// `[]string` (Go nil → `None`).
    pub admission_review_versions: Option<Value>,
    pub reinvocation_policy: Option<Value>,
    pub webhook_path: Option<String>,
    pub conversion_crds: Vec<String>,
}

impl WebhookDescription {
    /// The rules' `apiGroups` and `resources`, for validation.
    pub fn rule_groups_and_resources(&self) -> Vec<(Vec<String>, Vec<String>)> {
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|s| s.as_str().unwrap_or("").to_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        self.rules
            .as_ref()
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| (strings(r.get("apiGroups")), strings(r.get("resources"))))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.get(key)?;
    }
    Some(cur)
}

fn string_at(v: &Value, path: &[&str]) -> String {
    get(v, path)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn string_map(v: Option<&Value>) -> Option<BTreeMap<String, String>> {
    v.and_then(Value::as_object).map(|m| {
        m.iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
            .collect()
    })
}

fn non_null(v: Option<&Value>) -> Option<Value> {
    v.filter(|v| !v.is_null()).cloned()
}

impl Csv {
    /// Reads the fields from a CSV in Go's shape. Fails only if the value is not such a CSV.
    pub fn from_value(value: Value) -> Result<Csv, String> {
        let install_modes: Vec<InstallMode> = match get(&value, &["spec", "installModes"]) {
            Some(v) if !v.is_null() => {
                serde_json::from_value(v.clone()).map_err(|e| format!("spec.installModes: {e}"))?
            }
            _ => Vec::new(),
        };
        let strategy = get(&value, &["spec", "install", "spec"]);
        let deployments = strategy
            .and_then(|s| s.get("deployments"))
            .and_then(Value::as_array)
            .map(|deps| {
                deps.iter()
                    .map(|d| DeploymentSpec {
                        name: string_at(d, &["name"]),
                        spec: d.get("spec").cloned().unwrap_or(Value::Null),
                        label: string_map(d.get("label")),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let permissions = |key: &str| -> Vec<Permission> {
            strategy
                .and_then(|s| s.get(key))
                .and_then(Value::as_array)
                .map(|ps| {
                    ps.iter()
                        .map(|p| Permission {
                            service_account_name: string_at(p, &["serviceAccountName"]),
                            rules: p.get("rules").and_then(Value::as_array).cloned(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let webhooks = get(&value, &["spec", "webhookdefinitions"])
            .and_then(Value::as_array)
            .map(|whs| {
                whs.iter()
                    .map(|w| WebhookDescription {
                        generate_name: string_at(w, &["generateName"]),
                        type_: string_at(w, &["type"]),
                        deployment_name: string_at(w, &["deploymentName"]),
                        container_port: w
                            .get("containerPort")
                            .and_then(Value::as_i64)
                            .and_then(|p| i32::try_from(p).ok())
                            .unwrap_or(0),
                        target_port: non_null(w.get("targetPort")),
                        rules: non_null(w.get("rules")),
                        failure_policy: non_null(w.get("failurePolicy")),
                        match_policy: non_null(w.get("matchPolicy")),
                        object_selector: non_null(w.get("objectSelector")),
                        side_effects: non_null(w.get("sideEffects")),
                        timeout_seconds: non_null(w.get("timeoutSeconds")),
                        admission_review_versions: non_null(w.get("admissionReviewVersions")),
                        reinvocation_policy: non_null(w.get("reinvocationPolicy")),
                        webhook_path: w
                            .get("webhookPath")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        conversion_crds: w
                            .get("conversionCRDs")
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .map(|s| s.as_str().unwrap_or("").to_owned())
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let owned_crds = get(&value, &["spec", "customresourcedefinitions", "owned"])
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|c| string_at(c, &["name"])).collect())
            .unwrap_or_default();
        let owned_api_services = get(&value, &["spec", "apiservicedefinitions", "owned"])
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        Ok(Csv {
            name: string_at(&value, &["metadata", "name"]),
            annotations: string_map(get(&value, &["metadata", "annotations"])).unwrap_or_default(),
            version: get(&value, &["spec", "version"])
                .and_then(Value::as_str)
                .unwrap_or("0.0.0")
                .to_owned(),
            install_modes,
            deployments,
            permissions: permissions("permissions"),
            cluster_permissions: permissions("clusterPermissions"),
            webhooks,
            owned_crds,
            owned_api_services,
            value,
        })
    }

    /// Sets an annotation on both the typed view and the CSV value.
    pub fn set_annotation(&mut self, key: &str, value: String) {
        self.annotations.insert(key.to_owned(), value.clone());
        if let Some(meta) = self
            .value
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            let annotations = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if !annotations.is_object() {
                *annotations = Value::Object(Default::default());
            }
            if let Some(map) = annotations.as_object_mut() {
                map.insert(key.to_owned(), Value::String(value));
            }
        }
    }

    /// Install mode types with `supported: true`, deduplicated and sorted (Go's
    /// `sets.List` order, used in messages).
    pub fn supported_install_modes(&self) -> Vec<String> {
        let mut modes: Vec<String> = self
            .install_modes
            .iter()
            .filter(|m| m.supported)
            .map(|m| m.type_.clone())
            .collect();
        modes.sort();
        modes.dedup();
        modes
    }

    /// Whether `mode` is listed with `supported: true`.
    pub fn supports(&self, mode: &str) -> bool {
        self.install_modes
            .iter()
            .any(|m| m.supported && m.type_ == mode)
    }
}
