//! Certificate providers for webhook bundles: the objects and annotations that get a serving
//! certificate to the operator's webhook server and its CA bundle to the API server.
//!
//! Input: the provider chosen by configuration, a webhook deployment's name and the install
//! namespace. Output: names, annotations to add to rendered objects, extra objects, and the
//! Secret the deployment mounts. No IO.
//!
//! | provider | extra objects | Service | webhook configurations, conversion CRDs |
//! |---|---|---|---|
//! | `CertManager` | self-signed `Issuer` + `Certificate` (2-year duration, renewed 24h before) | – | `cert-manager.io/inject-ca-from: <ns>/<cert>` (overwrites the bundle's value) |
//! | `OpenShiftServiceCa` | – | `service.beta.openshift.io/serving-cert-secret-name: <cert>` | `service.beta.openshift.io/inject-cabundle: "true"` |
//! | `Builtin` | – (the controller writes the Secrets beside the release: [`crate::webhook_certs`]) | – | – (the controller sets `caBundle` itself: [`crate::webhook_certs::inject_ca_bundle`]) |
//!
//! Every provider yields the same Secret (`<cert>`, keys `tls.crt`/`tls.key`), which the shared
//! volume fix-up ([`fix_cert_volumes`]) mounts in every container of a webhook deployment.
//! Names (upstream's, OLM v0's): service = `object_name_for_base_and_suffix(<deployment with '.'
//! replaced by '-'>, "service")`, cert = `object_name_for_base_and_suffix(<service>, "cert")`,
//! issuer = `object_name_for_base_and_suffix(<cert>, "selfsigned-issuer")`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::names::object_name_for_base_and_suffix;

/// Which component provisions webhook serving certificates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CertProvider {
    /// None configured: bundles with webhooks are refused.
    #[default]
    None,
    /// cert-manager (`Issuer` + `Certificate`, CA injection by annotation).
    CertManager,
    /// OpenShift's service-ca operator (annotations only).
    OpenShiftServiceCa,
    /// Certificates made by operator-controller itself ([`crate::webhook_certs`]): no extra
    /// objects and no injection annotations; the controller writes the Secrets and sets the CA
    /// bundles.
    Builtin,
}

impl CertProvider {
    /// Whether webhooks can be served at all.
    pub fn is_some(self) -> bool {
        self != CertProvider::None
    }
}

const CERT_MANAGER_INJECT_CA: &str = "cert-manager.io/inject-ca-from";
const SERVICE_CA_SERVING_CERT_SECRET: &str = "service.beta.openshift.io/serving-cert-secret-name";
const SERVICE_CA_INJECT_CABUNDLE: &str = "service.beta.openshift.io/inject-cabundle";

/// The Secret a webhook deployment mounts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertSecretInfo {
    pub secret_name: String,
    pub certificate_key: String,
    pub private_key_key: String,
}

/// Which kind of object an injection is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InjectTarget {
    WebhookConfiguration,
    Crd,
    Service,
}

/// Upstream's `CertificateProvisioner` for one webhook deployment.
#[derive(Clone, Debug)]
pub struct CertProvisioner {
    pub provider: CertProvider,
    pub service_name: String,
    pub cert_name: String,
    pub namespace: String,
}

impl CertProvisioner {
    /// Upstream's `CertProvisionerFor`.
    pub fn new(deployment_name: &str, namespace: &str, provider: CertProvider) -> CertProvisioner {
        let service_name =
            object_name_for_base_and_suffix(&deployment_name.replace('.', "-"), "service");
        let cert_name = object_name_for_base_and_suffix(&service_name, "cert");
        CertProvisioner {
            provider,
            service_name,
            cert_name,
            namespace: namespace.to_owned(),
        }
    }

    /// Adds the provider's annotations to `object` (an object with `metadata`).
    pub fn inject_ca_bundle(&self, object: &mut Value, target: InjectTarget) {
        let (key, value) = match (self.provider, target) {
            (CertProvider::CertManager, InjectTarget::WebhookConfiguration | InjectTarget::Crd) => {
                (
                    CERT_MANAGER_INJECT_CA,
                    format!("{}/{}", self.namespace, self.cert_name),
                )
            }
            (
                CertProvider::OpenShiftServiceCa,
                InjectTarget::WebhookConfiguration | InjectTarget::Crd,
            ) => (SERVICE_CA_INJECT_CABUNDLE, "true".to_owned()),
            (CertProvider::OpenShiftServiceCa, InjectTarget::Service) => {
                (SERVICE_CA_SERVING_CERT_SECRET, self.cert_name.clone())
            }
            _ => return,
        };
        set_annotation(object, key, value);
    }

    /// The provider's extra objects (cert-manager: an `Issuer` and a `Certificate`).
    pub fn additional_objects(&self) -> Vec<Value> {
        if self.provider != CertProvider::CertManager {
            return Vec::new();
        }
        let issuer_name = object_name_for_base_and_suffix(&self.cert_name, "selfsigned-issuer");
        let issuer = json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {"name": issuer_name, "namespace": self.namespace},
            "spec": {"selfSigned": {}},
            "status": {}
        });
        let host = format!("{}.{}", self.service_name, self.namespace);
        let certificate = json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": self.cert_name, "namespace": self.namespace},
            "spec": {
                "secretName": self.cert_name,
                "commonName": host,
                "usages": ["server auth"],
                "dnsNames": [host.clone(), format!("{host}.svc"), format!("{host}.svc.cluster.local")],
                "issuerRef": {"name": issuer_name},
                // 730 days and 24 hours as Go's time.Duration prints them.
                "duration": "17520h0m0s",
                "renewBefore": "24h0m0s"
            },
            "status": {}
        });
        vec![issuer, certificate]
    }

    /// The Secret holding the serving certificate; `None` without a provider.
    pub fn cert_secret_info(&self) -> Option<CertSecretInfo> {
        if !self.provider.is_some() {
            return None;
        }
        Some(CertSecretInfo {
            secret_name: self.cert_name.clone(),
            certificate_key: "tls.crt".into(),
            private_key_key: "tls.key".into(),
        })
    }
}

/// Sets `metadata.annotations[key] = value`, creating maps as needed (upstream's `MergeMaps`
/// of the existing annotations with the new one: the new value wins).
pub fn set_annotation(object: &mut Value, key: &str, value: String) {
    let Some(obj) = object.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Some(map) = annotations.as_object_mut() {
        map.insert(key.to_owned(), Value::String(value));
    }
}

/// The certificate volumes every provider mounts: name, mount path, file names of the
/// certificate and the key.
const CERT_VOLUMES: [(&str, &str, &str, &str); 2] = [
    (
        "webhook-cert",
        "/tmp/k8s-webhook-server/serving-certs",
        "tls.crt",
        "tls.key",
    ),
    (
        "apiservice-cert",
        "/apiserver.local.config/certificates",
        "apiserver.crt",
        "apiserver.key",
    ),
];

/// Upstream's `ensureCorrectDeploymentCertVolumes`, on a Deployment in Go's shape: removes the
/// volumes named like the certificate volumes and every volume mounted at a certificate path,
/// then appends both certificate volumes and mounts them in every container.
pub fn fix_cert_volumes(deployment: &mut Value, secret: &CertSecretInfo) {
    let Some(pod) = deployment.pointer_mut("/spec/template/spec") else {
        return;
    };
    let mut remove: BTreeSet<String> = CERT_VOLUMES.iter().map(|v| v.0.to_owned()).collect();
    let protected_paths: BTreeSet<&str> = CERT_VOLUMES.iter().map(|v| v.1).collect();
    if let Some(containers) = pod.get("containers").and_then(Value::as_array) {
        for c in containers {
            for m in c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let path = m.get("mountPath").and_then(Value::as_str).unwrap_or("");
                if protected_paths.contains(path) {
                    remove.insert(
                        m.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    );
                }
            }
        }
    }
    let named = |v: &Value| {
        v.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| remove.contains(n))
    };
    let Some(pod) = pod.as_object_mut() else {
        return;
    };
    let mut volumes: Vec<Value> = pod
        .get("volumes")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().filter(|v| !named(v)).cloned().collect())
        .unwrap_or_default();
    for (name, _, cert_path, key_path) in CERT_VOLUMES {
        volumes.push(json!({
            "name": name,
            "secret": {
                "secretName": secret.secret_name,
                "items": [
                    {"key": secret.certificate_key, "path": cert_path},
                    {"key": secret.private_key_key, "path": key_path}
                ]
            }
        }));
    }
    pod.insert("volumes".into(), Value::Array(volumes));
    if let Some(containers) = pod.get_mut("containers").and_then(Value::as_array_mut) {
        for c in containers {
            let Some(c) = c.as_object_mut() else { continue };
            let mut mounts: Vec<Value> = c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .map(|ms| ms.iter().filter(|m| !named(m)).cloned().collect())
                .unwrap_or_default();
            for (name, path, _, _) in CERT_VOLUMES {
                mounts.push(json!({"name": name, "mountPath": path}));
            }
            c.insert("volumeMounts".into(), Value::Array(mounts));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_olm_v0() {
        let p = CertProvisioner::new("my.deployment", "ns", CertProvider::CertManager);
        assert_eq!(p.service_name, "my-deployment-service");
        assert_eq!(p.cert_name, "my-deployment-service-cert");
    }

    #[test]
    fn cert_manager_overwrites_the_bundles_injection_annotation() {
        let p = CertProvisioner::new("dep", "ns", CertProvider::CertManager);
        let mut crd = json!({"metadata": {"annotations": {"cert-manager.io/inject-ca-from": "x/y", "a": "b"}}});
        p.inject_ca_bundle(&mut crd, InjectTarget::Crd);
        assert_eq!(
            crd["metadata"]["annotations"],
            json!({"cert-manager.io/inject-ca-from": "ns/dep-service-cert", "a": "b"})
        );
        let mut svc = json!({"metadata": {}});
        p.inject_ca_bundle(&mut svc, InjectTarget::Service);
        assert_eq!(svc, json!({"metadata": {}}));
    }

    #[test]
    fn service_ca_annotates_the_service_and_injection_targets() {
        let p = CertProvisioner::new("dep", "ns", CertProvider::OpenShiftServiceCa);
        let mut svc = json!({"metadata": {"name": "s"}});
        p.inject_ca_bundle(&mut svc, InjectTarget::Service);
        assert_eq!(
            svc["metadata"]["annotations"],
            json!({"service.beta.openshift.io/serving-cert-secret-name": "dep-service-cert"})
        );
        let mut vwc = json!({});
        p.inject_ca_bundle(&mut vwc, InjectTarget::WebhookConfiguration);
        assert_eq!(
            vwc["metadata"]["annotations"],
            json!({"service.beta.openshift.io/inject-cabundle": "true"})
        );
        assert!(p.additional_objects().is_empty());
    }

    #[test]
    fn no_provider_means_no_secret_and_no_objects() {
        let p = CertProvisioner::new("dep", "ns", CertProvider::None);
        assert_eq!(p.cert_secret_info(), None);
        assert!(p.additional_objects().is_empty());
        let mut obj = json!({"metadata": {}});
        p.inject_ca_bundle(&mut obj, InjectTarget::Crd);
        assert_eq!(obj, json!({"metadata": {}}));
    }

    #[test]
    fn volume_fix_up_replaces_protected_volumes_in_every_container() {
        let mut dep = json!({"spec": {"template": {"spec": {
            "volumes": [{"name": "certs", "secret": {"secretName": "x"}}, {"name": "keep", "emptyDir": {}}, {"name": "webhook-cert", "emptyDir": {}}],
            "containers": [
                {"name": "a", "volumeMounts": [{"name": "certs", "mountPath": "/tmp/k8s-webhook-server/serving-certs"}, {"name": "keep", "mountPath": "/k"}]},
                {"name": "b"}
            ]
        }}}});
        let secret = CertSecretInfo {
            secret_name: "s".into(),
            certificate_key: "tls.crt".into(),
            private_key_key: "tls.key".into(),
        };
        fix_cert_volumes(&mut dep, &secret);
        let pod = &dep["spec"]["template"]["spec"];
        let names: Vec<&str> = pod["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .map(|v| v["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(names, ["keep", "webhook-cert", "apiservice-cert"]);
        assert_eq!(
            pod["containers"][0]["volumeMounts"]
                .as_array()
                .map(Vec::len),
            Some(3)
        );
        assert_eq!(
            pod["containers"][1]["volumeMounts"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
        assert_eq!(
            pod["volumes"][2]["secret"]["items"],
            json!([{"key": "tls.crt", "path": "apiserver.crt"}, {"key": "tls.key", "path": "apiserver.key"}])
        );
    }
}
