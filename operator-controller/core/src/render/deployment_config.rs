//! `spec.config.inline.deploymentConfig`: OLM v0's `SubscriptionConfig` applied to every
//! Deployment of a bundle, with upstream OLM v1's merge rules.
//!
//! Input: the `deploymentConfig` JSON value (already validated against the configuration
//! schema) and a rendered Deployment in Go's shape. Output: the parsed [`DeploymentConfig`] and
//! the edited Deployment. No IO.
//!
//! Rules (`generators.go applyCustomConfigToDeployment`), applied in this order:
//!
//! | field | rule |
//! |---|---|
//! | `env` | in every container: a variable with the same name is replaced in place, others are appended |
//! | `envFrom` | in every container: appended unless an equal entry exists |
//! | `volumes` | pod volumes: replaced by name, else appended |
//! | `volumeMounts` | in every container: replaced by name, else appended |
//! | `tolerations` | pod tolerations: appended unless an equal entry exists |
//! | `resources` | replaces every container's whole `resources`; `{}` clears them |
//! | `nodeSelector` | replaces the pod's node selector whenever set (`{}` clears it) |
//! | `affinity` | `{}` removes the pod's affinity; each set sub-affinity replaces the pod's, an empty one removes it |
//! | `annotations` | added to the Deployment and to the pod template, never overriding an existing key |
//!
//! Empty lists and maps (`env: []`, `annotations: {}`) change nothing. Values are decoded by
//! Go's `encoding/json` into `v1alpha1.SubscriptionConfig` (keys match case-insensitively,
//! unknown fields inside Kubernetes types are dropped, quantities canonicalised).

use serde_json::{Map, Value};

use crate::gotype::shapes::{Shapes, Ty};
use crate::gotype::{GoError, Mode, round_trip_type};

/// A decoded `deploymentConfig`. `None` means the field was absent or `null` (Go's nil).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeploymentConfig {
    pub env: Vec<Value>,
    pub env_from: Vec<Value>,
    pub volumes: Vec<Value>,
    pub volume_mounts: Vec<Value>,
    pub tolerations: Vec<Value>,
    pub resources: Option<Value>,
    pub node_selector: Option<Map<String, Value>>,
    pub affinity: Option<Affinity>,
    pub annotations: Map<String, Value>,
}

/// `corev1.Affinity` with Go's nil/empty distinction kept per sub-affinity.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Affinity {
    pub node_affinity: Option<Value>,
    pub pod_affinity: Option<Value>,
    pub pod_anti_affinity: Option<Value>,
}

/// encoding/json's field lookup: exact key, else case-insensitive.
fn lookup<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key)
        .or_else(|| {
            obj.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_null())
}

/// The type of a field of `v1alpha1.SubscriptionConfig` (or of `corev1.Affinity`).
fn field_type(struct_root: &str, field: &str) -> Result<usize, GoError> {
    let shapes = Shapes::get();
    let missing = || GoError {
        message: format!("internal error: no Go shape for {struct_root}.{field}"),
        path: String::new(),
    };
    let ty = match struct_root {
        "SubscriptionConfig" => shapes.root("SubscriptionConfig"),
        other => shapes.struct_type(other),
    }
    .ok_or_else(missing)?;
    let Ty::Struct(s) = shapes.types[ty] else {
        return Err(missing());
    };
    shapes.structs[s]
        .fields
        .iter()
        .find(|f| f.name == field)
        .map(|f| f.ty)
        .ok_or_else(missing)
}

fn decode(struct_root: &str, field: &str, value: &Value) -> Result<Value, GoError> {
    let ty = field_type(struct_root, field)?;
    round_trip_type(ty, value, Mode::Json).map_err(|mut e| {
        e.path = if e.path.is_empty() {
            field.to_owned()
        } else if e.path.starts_with('[') {
            format!("{field}{}", e.path)
        } else {
            format!("{field}.{}", e.path)
        };
        e
    })
}

fn decode_list(field: &str, obj: &Map<String, Value>) -> Result<Vec<Value>, GoError> {
    match lookup(obj, field) {
        None => Ok(Vec::new()),
        Some(v) => Ok(decode("SubscriptionConfig", field, v)?
            .as_array()
            .cloned()
            .unwrap_or_default()),
    }
}

const AFFINITY: &str = "k8s.io/api/core/v1.Affinity";

impl DeploymentConfig {
    /// Decodes a `deploymentConfig` value. `Ok(None)` for `null`.
    pub fn from_value(value: &Value) -> Result<Option<DeploymentConfig>, GoError> {
        let obj = match value {
            Value::Null => return Ok(None),
            Value::Object(obj) => obj,
            _ => {
                return Err(GoError {
                    message: format!(
                        "json: cannot unmarshal {} into Go value of type v1alpha1.SubscriptionConfig",
                        match value {
                            Value::Array(_) => "array",
                            Value::String(_) => "string",
                            Value::Number(_) => "number",
                            _ => "bool",
                        }
                    ),
                    path: String::new(),
                });
            }
        };
        let resources = lookup(obj, "resources")
            .map(|v| decode("SubscriptionConfig", "resources", v))
            .transpose()?;
        let node_selector = lookup(obj, "nodeSelector")
            .map(|v| decode("SubscriptionConfig", "nodeSelector", v))
            .transpose()?
            .map(|v| v.as_object().cloned().unwrap_or_default());
        let affinity = match lookup(obj, "affinity") {
            None => None,
            Some(Value::Object(a)) => {
                let sub = |name: &str| -> Result<Option<Value>, GoError> {
                    lookup(a, name)
                        .map(|v| decode(AFFINITY, name, v))
                        .transpose()
                };
                Some(Affinity {
                    node_affinity: sub("nodeAffinity")?,
                    pod_affinity: sub("podAffinity")?,
                    pod_anti_affinity: sub("podAntiAffinity")?,
                })
            }
            Some(other) => {
                // Let the decoder produce its type error.
                decode("SubscriptionConfig", "affinity", other)?;
                None
            }
        };
        let annotations = match lookup(obj, "annotations") {
            None => Map::new(),
            Some(v) => decode("SubscriptionConfig", "annotations", v)?
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        Ok(Some(DeploymentConfig {
            env: decode_list("env", obj)?,
            env_from: decode_list("envFrom", obj)?,
            volumes: decode_list("volumes", obj)?,
            volume_mounts: decode_list("volumeMounts", obj)?,
            tolerations: decode_list("tolerations", obj)?,
            resources,
            node_selector,
            affinity,
            annotations,
        }))
    }

    /// Applies the configuration to a Deployment in Go's shape.
    pub fn apply(&self, deployment: &mut Value) {
        self.apply_env(deployment);
        self.apply_env_from(deployment);
        self.apply_volumes(deployment);
        self.apply_volume_mounts(deployment);
        self.apply_tolerations(deployment);
        self.apply_resources(deployment);
        self.apply_node_selector(deployment);
        self.apply_affinity(deployment);
        self.apply_annotations(deployment);
    }

    fn apply_env(&self, deployment: &mut Value) {
        if self.env.is_empty() {
            return;
        }
        for container in containers(deployment) {
            let Some(list) = list_field(container, "env") else {
                continue;
            };
            // Indexes of existing names (the last one of a repeated name), as upstream's map.
            let existing: std::collections::HashMap<String, usize> = list
                .iter()
                .enumerate()
                .map(|(i, e)| (name_of(e), i))
                .collect();
            for env in &self.env {
                match existing.get(&name_of(env)) {
                    Some(&i) => list[i] = env.clone(),
                    None => list.push(env.clone()),
                }
            }
        }
    }

    fn apply_env_from(&self, deployment: &mut Value) {
        if self.env_from.is_empty() {
            return;
        }
        for container in containers(deployment) {
            let Some(list) = list_field(container, "envFrom") else {
                continue;
            };
            for source in &self.env_from {
                if !list.contains(source) {
                    list.push(source.clone());
                }
            }
        }
    }

    fn apply_volumes(&self, deployment: &mut Value) {
        if self.volumes.is_empty() {
            return;
        }
        let Some(pod) = pod_spec(deployment) else {
            return;
        };
        if let Some(list) = list_field(pod, "volumes") {
            merge_by_name(list, &self.volumes);
        }
    }

    fn apply_volume_mounts(&self, deployment: &mut Value) {
        if self.volume_mounts.is_empty() {
            return;
        }
        for container in containers(deployment) {
            if let Some(list) = list_field(container, "volumeMounts") {
                merge_by_name(list, &self.volume_mounts);
            }
        }
    }

    fn apply_tolerations(&self, deployment: &mut Value) {
        if self.tolerations.is_empty() {
            return;
        }
        let Some(pod) = pod_spec(deployment) else {
            return;
        };
        let Some(list) = list_field(pod, "tolerations") else {
            return;
        };
        for t in &self.tolerations {
            if !list.contains(t) {
                list.push(t.clone());
            }
        }
    }

    fn apply_resources(&self, deployment: &mut Value) {
        let Some(resources) = &self.resources else {
            return;
        };
        for container in containers(deployment) {
            container.insert("resources".into(), resources.clone());
        }
    }

    fn apply_node_selector(&self, deployment: &mut Value) {
        let Some(selector) = &self.node_selector else {
            return;
        };
        if let Some(pod) = pod_spec(deployment) {
            pod.insert("nodeSelector".into(), Value::Object(selector.clone()));
        }
    }

    fn apply_affinity(&self, deployment: &mut Value) {
        let Some(config) = &self.affinity else {
            return;
        };
        let Some(pod) = pod_spec(deployment) else {
            return;
        };
        if config.node_affinity.is_none()
            && config.pod_affinity.is_none()
            && config.pod_anti_affinity.is_none()
        {
            pod.remove("affinity");
            return;
        }
        let affinity = pod
            .entry("affinity")
            .or_insert_with(|| Value::Object(Map::new()));
        if !affinity.is_object() {
            *affinity = Value::Object(Map::new());
        }
        let Some(aff) = affinity.as_object_mut() else {
            return;
        };
        for (key, value, empty) in [
            (
                "nodeAffinity",
                &config.node_affinity,
                is_node_affinity_empty as fn(Option<&Value>) -> bool,
            ),
            ("podAffinity", &config.pod_affinity, is_pod_affinity_empty),
            (
                "podAntiAffinity",
                &config.pod_anti_affinity,
                is_pod_affinity_empty,
            ),
        ] {
            if let Some(v) = value {
                if empty(Some(v)) {
                    aff.remove(key);
                } else {
                    aff.insert(key.into(), v.clone());
                }
            }
        }
        let all_empty = is_node_affinity_empty(aff.get("nodeAffinity"))
            && is_pod_affinity_empty(aff.get("podAffinity"))
            && is_pod_affinity_empty(aff.get("podAntiAffinity"));
        if all_empty {
            pod.remove("affinity");
        }
    }

    fn apply_annotations(&self, deployment: &mut Value) {
        if self.annotations.is_empty() {
            return;
        }
        let add = |target: &mut Value| {
            let Some(obj) = target.as_object_mut() else {
                return;
            };
            let annotations = obj
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if !annotations.is_object() {
                *annotations = Value::Object(Map::new());
            }
            if let Some(map) = annotations.as_object_mut() {
                for (k, v) in &self.annotations {
                    map.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        };
        if let Some(meta) = deployment.get_mut("metadata") {
            add(meta);
        }
        if let Some(meta) = deployment.pointer_mut("/spec/template/metadata") {
            add(meta);
        }
    }
}

fn name_of(v: &Value) -> String {
    v.get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn merge_by_name(list: &mut Vec<Value>, updates: &[Value]) {
    let existing: std::collections::HashMap<String, usize> = list
        .iter()
        .enumerate()
        .map(|(i, v)| (name_of(v), i))
        .collect();
    for update in updates {
        match existing.get(&name_of(update)) {
            Some(&i) => list[i] = update.clone(),
            None => list.push(update.clone()),
        }
    }
}

fn is_node_affinity_empty(v: Option<&Value>) -> bool {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return true;
    };
    let terms_empty = v
        .get("requiredDuringSchedulingIgnoredDuringExecution")
        .filter(|r| !r.is_null())
        .and_then(|r| r.get("nodeSelectorTerms"))
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    terms_empty && is_empty_list(v.get("preferredDuringSchedulingIgnoredDuringExecution"))
}

fn is_pod_affinity_empty(v: Option<&Value>) -> bool {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return true;
    };
    is_empty_list(v.get("requiredDuringSchedulingIgnoredDuringExecution"))
        && is_empty_list(v.get("preferredDuringSchedulingIgnoredDuringExecution"))
}

fn is_empty_list(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_none_or(Vec::is_empty)
}

fn pod_spec(deployment: &mut Value) -> Option<&mut Map<String, Value>> {
    deployment
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
}

fn containers(deployment: &mut Value) -> Vec<&mut Map<String, Value>> {
    match pod_spec(deployment)
        .and_then(|p| p.get_mut("containers"))
        .and_then(Value::as_array_mut)
    {
        Some(list) => list.iter_mut().filter_map(Value::as_object_mut).collect(),
        None => Vec::new(),
    }
}

/// The list at `obj[key]`, created (or replaced when not a list) as needed.
fn list_field<'a>(obj: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Vec<Value>> {
    let entry = obj
        .entry(key.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        *entry = Value::Array(Vec::new());
    }
    entry.as_array_mut()
}
