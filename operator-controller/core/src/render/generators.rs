//! Upstream's registry+v1 resource generators, in upstream's order.
//!
//! Input: a validated bundle, the install and target namespaces, the certificate provider and an
//! optional `deploymentConfig`. Output: the objects, each in Go's shape (typed objects go through
//! their Go type once more at the end, so every zero-valued field upstream writes is there).
//! No IO.
//!
//! Order and content (`render/registryv1/generators/generators.go`):
//!
//! | # | generator | objects |
//! |---|---|---|
//! | 1 | service accounts | one per distinct `serviceAccountName` of permissions and cluster permissions (`""` means `default`, never generated), sorted by name (upstream: map order) |
//! | 2 | permissions | unless AllNamespaces: per target namespace × permission, a Role and RoleBinding named `unique_name("<csv>-<sa>", permission)` |
//! | 3 | cluster permissions | per cluster permission a ClusterRole and ClusterRoleBinding; in AllNamespaces mode each permission is promoted too, with an extra `get/list/watch namespaces` rule |
//! | 4 | CRDs | as in the bundle; CRDs of a conversion webhook get `spec.conversion` pointing at the webhook Service, and the provider's CA injection |
//! | 5 | other objects | as in the bundle; namespaced kinds forced into the install namespace |
//! | 6 | deployments | the CSV's deployment specs: pod template annotations = CSV annotations ∪ template annotations + `olm.targetNamespaces` (comma-joined) + `olm.operatorNamespace`, `revisionHistoryLimit: 1`, labels from `label`, certificate volumes for webhook deployments, then `deploymentConfig` |
//! | 7 | validating webhooks | one ValidatingWebhookConfiguration per webhook, named after `generateName` minus a trailing `-`, `namespaceSelector` on the target namespaces unless AllNamespaces |
//! | 8 | mutating webhooks | likewise |
//! | 9 | services | per webhook deployment: ports (name = port number, default 443) deduplicated and sorted, selector = the deployment's `matchLabels` |
//! | 10 | certificate objects | per webhook deployment (sorted by name; upstream: map order), the provider's extra objects |
//!
//! Like upstream, a bundle that ships its own ServiceAccount or Service named like a generated
//! one yields two objects with the same kind, namespace and name; apply decides what to do.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::certs::{CertProvider, CertProvisioner, InjectTarget, fix_cert_volumes};
use super::deployment_config::DeploymentConfig;
use super::names::unique_name;
use super::string_map;
use crate::bundle::RegistryV1Bundle;
use crate::bundle::csv::{CONVERSION_WEBHOOK, MUTATING_WEBHOOK, Permission, VALIDATING_WEBHOOK};
use crate::bundle::validate::supported_kind;
use crate::gotype::{Mode, round_trip};

/// What every generator reads.
pub struct Context<'a> {
    pub bundle: &'a RegistryV1Bundle,
    pub install_namespace: &'a str,
    pub target_namespaces: &'a [String],
    pub cert_provider: CertProvider,
    pub deployment_config: Option<&'a DeploymentConfig>,
}

impl Context<'_> {
    fn all_namespaces(&self) -> bool {
        self.target_namespaces.len() == 1 && self.target_namespaces[0].is_empty()
    }

    fn provisioner(&self, deployment: &str) -> CertProvisioner {
        CertProvisioner::new(deployment, self.install_namespace, self.cert_provider)
    }
}

/// Runs every generator; the first error stops rendering.
pub fn generate(ctx: &Context<'_>) -> Result<Vec<Value>, String> {
    let mut objects = Vec::new();
    service_accounts(ctx, &mut objects)?;
    permissions(ctx, &mut objects)?;
    cluster_permissions(ctx, &mut objects)?;
    crds(ctx, &mut objects)?;
    others(ctx, &mut objects)?;
    deployments(ctx, &mut objects)?;
    webhook_configurations(ctx, VALIDATING_WEBHOOK, &mut objects)?;
    webhook_configurations(ctx, MUTATING_WEBHOOK, &mut objects)?;
    services(ctx, &mut objects)?;
    cert_objects(ctx, &mut objects);
    Ok(objects)
}

/// Marshals `object` as the Go type `root` would.
fn typed(root: &str, object: Value) -> Result<Value, String> {
    round_trip(root, &object, Mode::Unstructured)
        .map_err(|e| format!("internal error: rendering a {root}: {e}"))
}

fn sa_name_or_default(name: &str) -> &str {
    if name.is_empty() { "default" } else { name }
}

fn service_accounts(ctx: &Context<'_>, out: &mut Vec<Value>) -> Result<(), String> {
    let csv = &ctx.bundle.csv;
    let names: BTreeSet<&str> = csv
        .permissions
        .iter()
        .chain(&csv.cluster_permissions)
        .map(|p| sa_name_or_default(&p.service_account_name))
        .collect();
    for name in names.into_iter().filter(|n| *n != "default") {
        out.push(typed(
            "ServiceAccount",
            json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": ctx.install_namespace}
            }),
        )?);
    }
    Ok(())
}

fn rules_value(permission: &Permission) -> Value {
    permission
        .rules
        .as_ref()
        .map_or(Value::Null, |r| Value::Array(r.clone()))
}

fn permissions(ctx: &Context<'_>, out: &mut Vec<Value>) -> Result<(), String> {
    if ctx.all_namespaces() {
        return Ok(());
    }
    let csv = &ctx.bundle.csv;
    for ns in ctx.target_namespaces {
        for permission in &csv.permissions {
            let sa = sa_name_or_default(&permission.service_account_name);
            let name = unique_name(
                &format!("{}-{sa}", csv.name),
                &permission.service_account_name,
                permission.rules.as_deref(),
            );
            out.push(typed(
                "Role",
                json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "Role",
                    "metadata": {"name": name, "namespace": ns},
                    "rules": rules_value(permission)
                }),
            )?);
            out.push(typed(
                "RoleBinding",
                json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": name, "namespace": ns},
                    "subjects": [{"kind": "ServiceAccount", "namespace": ctx.install_namespace, "name": sa}],
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
                }),
            )?);
        }
    }
    Ok(())
}

fn cluster_permissions(ctx: &Context<'_>, out: &mut Vec<Value>) -> Result<(), String> {
    let csv = &ctx.bundle.csv;
    let mut all: Vec<Permission> = csv.cluster_permissions.clone();
    if ctx.all_namespaces() {
        for p in &csv.permissions {
            let mut p = p.clone();
            p.rules.get_or_insert_with(Vec::new).push(json!({
                "verbs": ["get", "list", "watch"],
                "apiGroups": [""],
                "resources": ["namespaces"]
            }));
            all.push(p);
        }
    }
    for permission in &all {
        let sa = sa_name_or_default(&permission.service_account_name);
        let name = unique_name(
            &format!("{}-{sa}", csv.name),
            &permission.service_account_name,
            permission.rules.as_deref(),
        );
        out.push(typed(
            "ClusterRole",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": rules_value(permission)
            }),
        )?);
        out.push(typed(
            "ClusterRoleBinding",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "subjects": [{"kind": "ServiceAccount", "namespace": ctx.install_namespace, "name": sa}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
            }),
        )?);
    }
    Ok(())
}

fn crds(ctx: &Context<'_>, out: &mut Vec<Value>) -> Result<(), String> {
    let csv = &ctx.bundle.csv;
    let mut conversion = BTreeMap::new();
    for wh in csv
        .webhooks
        .iter()
        .filter(|w| w.type_ == CONVERSION_WEBHOOK)
    {
        for crd in &wh.conversion_crds {
            if conversion.insert(crd.as_str(), wh).is_some() {
                return Err(format!(
                    "custom resource definition '{crd}' is referenced by multiple conversion webhook definitions"
                ));
            }
        }
    }
    for crd in &ctx.bundle.crds {
        let mut value = crd.value.clone();
        if let Some(wh) = conversion.get(crd.name.as_str()) {
            let preserve = value
                .pointer("/spec/preserveUnknownFields")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if preserve {
                return Err(format!(
                    "custom resource definition '{}' must have .spec.preserveUnknownFields set to false to let API Server call webhook to do the conversion",
                    crd.name
                ));
            }
            let provisioner = ctx.provisioner(&wh.deployment_name);
            let conversion = json!({
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "service": {
                            "namespace": ctx.install_namespace,
                            "name": provisioner.service_name,
                            "path": wh.webhook_path.clone().unwrap_or_else(|| "/".into()),
                            "port": wh.container_port
                        }
                    },
                    "conversionReviewVersions": wh.admission_review_versions.clone().unwrap_or(Value::Null)
                }
            });
            if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("conversion".into(), conversion);
            }
            provisioner.inject_ca_bundle(&mut value, InjectTarget::Crd);
        }
        out.push(typed("CustomResourceDefinition", value)?);
    }
    Ok(())
}

fn others(ctx: &Context<'_>, out: &mut Vec<Value>) -> Result<(), String> {
    for other in &ctx.bundle.others {
        let Some(namespaced) = supported_kind(other.kind()) else {
            return Err(format!(
                "bundle contains unsupported resource: Name: {}, Kind: {}",
                other.name(),
                other.kind()
            ));
        };
        let mut object = other.object.clone();
        if namespaced {
            set_namespace(&mut object, ctx.install_namespace);
        }
        out.push(Value::Object(object));
    }
    Ok(())
}

/// `unstructured.SetNamespace`: sets `metadata.namespace` unless `metadata` is not an object.
fn set_namespace(object: &mut Map<String, Value>, namespace: &str) {
    let meta = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        if namespace.is_empty() {
            meta.remove("namespace");
        } else {
            meta.insert("namespace".into(), Value::String(namespace.to_owned()));
        }
    }
}

fn deployments(ctx: &Context<'_>, out: &mut Vec<Value>) -> Result<(), String> {
    let csv = &ctx.bundle.csv;
    let webhook_deployments: BTreeSet<&str> = csv
        .webhooks
        .iter()
        .map(|w| w.deployment_name.as_str())
        .collect();
    for dep in &csv.deployments {
        let mut spec = dep.spec.clone();
        if let Some(spec_obj) = spec.as_object_mut() {
            let template = spec_obj
                .entry("template")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(template) = template.as_object_mut() {
                let meta = template
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(meta) = meta.as_object_mut() {
                    let mut annotations = string_map(&csv.annotations);
                    if let Some(Value::Object(existing)) = meta.get("annotations") {
                        for (k, v) in existing {
                            annotations.insert(k.clone(), v.clone());
                        }
                    }
                    annotations.insert(
                        "olm.targetNamespaces".into(),
                        Value::String(ctx.target_namespaces.join(",")),
                    );
                    annotations.insert(
                        "olm.operatorNamespace".into(),
                        Value::String(ctx.install_namespace.to_owned()),
                    );
                    meta.insert("annotations".into(), Value::Object(annotations));
                }
            }
            spec_obj.insert("revisionHistoryLimit".into(), json!(1));
        }
        let mut metadata = json!({"name": dep.name, "namespace": ctx.install_namespace});
        if let Some(labels) = &dep.label {
            metadata["labels"] = Value::Object(string_map(labels));
        }
        let mut deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": spec
        });
        if webhook_deployments.contains(dep.name.as_str())
            && let Some(secret) = ctx.provisioner(&dep.name).cert_secret_info()
        {
            fix_cert_volumes(&mut deployment, &secret);
        }
        if let Some(config) = ctx.deployment_config {
            config.apply(&mut deployment);
        }
        out.push(typed("Deployment", deployment)?);
    }
    Ok(())
}

fn webhook_configurations(
    ctx: &Context<'_>,
    type_: &str,
    out: &mut Vec<Value>,
) -> Result<(), String> {
    let (kind, root) = if type_ == VALIDATING_WEBHOOK {
        (
            "ValidatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        )
    } else {
        (
            "MutatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        )
    };
    let namespace_selector = if !ctx.target_namespaces.is_empty()
        && !ctx.target_namespaces.iter().any(String::is_empty)
    {
        Some(json!({
            "matchExpressions": [{
                "key": "kubernetes.io/metadata.name",
                "operator": "In",
                "values": ctx.target_namespaces
            }]
        }))
    } else {
        None
    };
    for wh in ctx.bundle.csv.webhooks.iter().filter(|w| w.type_ == type_) {
        let provisioner = ctx.provisioner(&wh.deployment_name);
        let name = wh
            .generate_name
            .strip_suffix('-')
            .unwrap_or(&wh.generate_name);
        let mut service = json!({
            "namespace": ctx.install_namespace,
            "name": provisioner.service_name,
            "port": wh.container_port
        });
        if let Some(path) = &wh.webhook_path {
            service["path"] = json!(path);
        }
        let mut webhook = Map::new();
        webhook.insert("name".into(), json!(name));
        webhook.insert("clientConfig".into(), json!({"service": service}));
        let optional = [
            ("rules", &wh.rules),
            ("failurePolicy", &wh.failure_policy),
            ("matchPolicy", &wh.match_policy),
            ("objectSelector", &wh.object_selector),
            ("sideEffects", &wh.side_effects),
            ("timeoutSeconds", &wh.timeout_seconds),
            ("admissionReviewVersions", &wh.admission_review_versions),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                webhook.insert(key.into(), v.clone());
            }
        }
        if type_ == MUTATING_WEBHOOK
            && let Some(v) = &wh.reinvocation_policy
        {
            webhook.insert("reinvocationPolicy".into(), v.clone());
        }
        if let Some(selector) = &namespace_selector {
            webhook.insert("namespaceSelector".into(), selector.clone());
        }
        let mut object = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": ctx.install_namespace},
            "webhooks": [Value::Object(webhook)]
        });
        provisioner.inject_ca_bundle(&mut object, InjectTarget::WebhookConfiguration);
        out.push(typed(root, object)?);
    }
    Ok(())
}

/// `intstr.IntOrString.IntValue()`.
fn int_value(target: &Value) -> i64 {
    match target {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => s.parse().unwrap_or(0),
        _ => 0,
    }
}

fn services(ctx: &Context<'_>, out: &mut Vec<Value>) -> Result<(), String> {
    let csv = &ctx.bundle.csv;
    let mut ports: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for wh in &csv.webhooks {
        let port = if wh.container_port > 0 {
            wh.container_port
        } else {
            443
        };
        let target = wh.target_port.clone().unwrap_or_else(|| json!(port));
        let service_port = json!({"name": port.to_string(), "port": port, "targetPort": target});
        let list = ports.entry(wh.deployment_name.as_str()).or_default();
        if !list.contains(&service_port) {
            list.push(service_port);
        }
    }
    for dep in &csv.deployments {
        let Some(list) = ports.get(dep.name.as_str()) else {
            continue;
        };
        let mut list = list.clone();
        list.sort_by_key(|p| {
            (
                p.get("port").and_then(Value::as_i64).unwrap_or(0),
                int_value(p.get("targetPort").unwrap_or(&Value::Null)),
            )
        });
        let selector = dep
            .spec
            .pointer("/selector/matchLabels")
            .filter(|v| !v.is_null())
            .cloned();
        let provisioner = ctx.provisioner(&dep.name);
        let mut spec = json!({"ports": list});
        if let Some(selector) = selector {
            spec["selector"] = selector;
        }
        let mut service = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": provisioner.service_name, "namespace": ctx.install_namespace},
            "spec": spec
        });
        provisioner.inject_ca_bundle(&mut service, InjectTarget::Service);
        out.push(typed("Service", service)?);
    }
    Ok(())
}

fn cert_objects(ctx: &Context<'_>, out: &mut Vec<Value>) {
    let deployments: BTreeSet<&str> = ctx
        .bundle
        .csv
        .webhooks
        .iter()
        .map(|w| w.deployment_name.as_str())
        .collect();
    for dep in deployments {
        out.extend(ctx.provisioner(dep).additional_objects());
    }
}
