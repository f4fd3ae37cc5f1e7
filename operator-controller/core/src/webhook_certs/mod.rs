//! The built-in certificate provider's decisions: which serving certificates an extension
//! needs, where they are stored, and how the CA bundle gets into the objects the API server
//! calls webhooks from.
//!
//! Input: the objects an extension applies (rendered with [`crate::render::CertProvider::Builtin`]:
//! Services, webhook configurations, CRDs with conversion webhooks, the Deployments with the
//! certificate volumes already fixed up). Output: the serving certificates to keep
//! ([`serving_needs`]), the Secret names, and the same objects with `caBundle` set
//! ([`inject_ca_bundle`]). [`rotation`] decides when certificates are issued and replaced. No
//! IO: certificates are described by [`rotation::CertInfo`], which the IO side
//! (`operator-controller/src/webhook_certs`) reads from the PEM it stores.
//!
//! | what | value | why |
//! |---|---|---|
//! | serving certificate per | webhook Service named by a `clientConfig.service` of a ValidatingWebhookConfiguration, MutatingWebhookConfiguration or CRD conversion webhook in the set | the API server dials exactly these |
//! | DNS names | `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local` (no bare `<svc>`), common name `<svc>.<ns>` | upstream's cert-manager `Certificate` (install-path.md §1 item 4) |
//! | serving Secret | `object_name_for_base_and_suffix(<svc>, "cert")`, keys `tls.crt`, `tls.key`, plus `ca.crt` (the CA bundle) | the name and keys the shared volume fix-up mounts, for every provider |
//! | CA | one per extension, in Secret `object_name_for_base_and_suffix(<extension>, "webhook-ca")` of the install namespace | the extension's webhooks trust only its own CA |
//! | injection | `caBundle` (base64 of the PEM bundle) in every webhook `clientConfig` with a `service`, and in `spec.conversion.webhook.clientConfig` of CRDs whose strategy is `Webhook` | only objects of this extension's set are touched; URL-based client configs are left alone |

pub mod rotation;

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;

use crate::render::names::object_name_for_base_and_suffix;

/// Key of the serving certificate in a serving Secret (cert-manager's and service-ca's).
pub const CERTIFICATE_KEY: &str = "tls.crt";
/// Key of the serving certificate's private key.
pub const PRIVATE_KEY_KEY: &str = "tls.key";
/// Key of the CA bundle in a serving Secret (cert-manager's name for it).
pub const CA_BUNDLE_KEY: &str = "ca.crt";
/// Label marking Secrets made by the built-in provider: together with the owner labels it
/// selects what uninstall removes, and a same-named Secret without it is not ours.
pub const PROVIDER_LABEL: &str = "olm.operatorframework.io/webhook-cert-provider";
/// The value of [`PROVIDER_LABEL`].
pub const PROVIDER_BUILTIN: &str = "builtin";

const VALIDATING: &str = "ValidatingWebhookConfiguration";
const MUTATING: &str = "MutatingWebhookConfiguration";
const CRD: &str = "CustomResourceDefinition";

/// One serving certificate an extension needs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServingNeed {
    /// The webhook Service.
    pub service: String,
    /// Its namespace.
    pub namespace: String,
    /// The Secret the Deployment mounts.
    pub secret_name: String,
}

impl ServingNeed {
    /// `<svc>.<ns>`: the certificate's common name.
    pub fn common_name(&self) -> String {
        format!("{}.{}", self.service, self.namespace)
    }

    /// The three DNS names, in upstream's order.
    pub fn dns_names(&self) -> Vec<String> {
        let host = self.common_name();
        vec![
            host.clone(),
            format!("{host}.svc"),
            format!("{host}.svc.cluster.local"),
        ]
    }
}

/// The Secret of the extension's CA.
pub fn ca_secret_name(extension: &str) -> String {
    object_name_for_base_and_suffix(extension, "webhook-ca")
}

/// The serving Secret of a webhook Service (the name the volume fix-up mounts).
pub fn serving_secret_name(service: &str) -> String {
    object_name_for_base_and_suffix(service, "cert")
}

/// cert-manager's API group.
pub const CERT_MANAGER_GROUP: &str = "cert-manager.io";
/// The API group of OpenShift's operator configuration, where the service-ca operator's
/// `servicecas` resource is served.
pub const OPENSHIFT_OPERATOR_GROUP: &str = "operator.openshift.io";
/// The service-ca operator's resource in [`OPENSHIFT_OPERATOR_GROUP`].
pub const SERVICE_CA_RESOURCE: &str = "servicecas";

/// The certificate provider when none is configured, from what API discovery lists: the
/// served API group names, and the resource names of [`OPENSHIFT_OPERATOR_GROUP`] (empty when
/// not read).
///
/// | served | provider |
/// |---|---|
/// | API group `cert-manager.io` (cert-manager's CRDs are installed) | cert-manager (upstream's preference when both are possible) |
/// | resource `servicecas` in `operator.openshift.io` (OpenShift's service-ca operator) | OpenShift service-ca |
/// | neither | built-in |
///
/// `config.openshift.io` alone is not taken as service-ca: clusters (and our test plane) serve
/// the OpenShift config API without the service-ca operator.
pub fn detected_provider(
    groups: &[String],
    openshift_operator_resources: &[String],
) -> crate::render::CertProvider {
    use crate::render::CertProvider;
    if groups.iter().any(|g| g == CERT_MANAGER_GROUP) {
        CertProvider::CertManager
    } else if groups.iter().any(|g| g == OPENSHIFT_OPERATOR_GROUP)
        && openshift_operator_resources
            .iter()
            .any(|r| r == SERVICE_CA_RESOURCE)
    {
        CertProvider::OpenShiftServiceCa
    } else {
        CertProvider::Builtin
    }
}

/// The serving certificates `objects` need: one per Service a webhook client config of the set
/// names (namespace defaulted to `install_namespace`), sorted and without duplicates.
pub fn serving_needs(objects: &[Value], install_namespace: &str) -> Vec<ServingNeed> {
    let mut needs = BTreeMap::new();
    for object in objects {
        for config in client_configs(object) {
            if let Some(need) = need_of(config, install_namespace) {
                needs.insert((need.namespace.clone(), need.service.clone()), need);
            }
        }
    }
    needs.into_values().collect()
}

fn need_of(client_config: &Value, install_namespace: &str) -> Option<ServingNeed> {
    let service = client_config.get("service")?;
    let name = service.get("name").and_then(Value::as_str)?;
    if name.is_empty() {
        return None;
    }
    let namespace = service
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
        .unwrap_or(install_namespace);
    Some(ServingNeed {
        service: name.to_owned(),
        namespace: namespace.to_owned(),
        secret_name: serving_secret_name(name),
    })
}

/// The webhook client configs of one object (read only).
fn client_configs(object: &Value) -> Vec<&Value> {
    match object.get("kind").and_then(Value::as_str) {
        Some(VALIDATING | MUTATING) => object
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("clientConfig"))
            .collect(),
        Some(CRD) if is_webhook_conversion(object) => object
            .pointer("/spec/conversion/webhook/clientConfig")
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

fn is_webhook_conversion(crd: &Value) -> bool {
    crd.pointer("/spec/conversion/strategy")
        .and_then(Value::as_str)
        == Some("Webhook")
}

/// Sets `caBundle` (base64 of `bundle_pem`) in every webhook client config with a `service`
/// of the webhook configurations and conversion-webhook CRDs among `objects`; returns how many
/// client configs were set. Other objects and URL-based client configs are left as they are.
pub fn inject_ca_bundle(objects: &mut [Value], bundle_pem: &str) -> usize {
    let encoded = base64::engine::general_purpose::STANDARD.encode(bundle_pem.as_bytes());
    let mut count = 0;
    for object in objects {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let configs: Vec<&mut Value> = match kind {
            VALIDATING | MUTATING => object
                .get_mut("webhooks")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
                .filter_map(|w| w.get_mut("clientConfig"))
                .collect(),
            CRD if is_webhook_conversion(object) => object
                .pointer_mut("/spec/conversion/webhook/clientConfig")
                .into_iter()
                .collect(),
            _ => Vec::new(),
        };
        for config in configs {
            if config.get("service").is_none() {
                continue;
            }
            if let Some(map) = config.as_object_mut() {
                map.insert("caBundle".into(), Value::String(encoded.clone()));
                count += 1;
            }
        }
    }
    count
}

/// The `caBundle` values (decoded; `None`: absent or not base64) of the client configs of
/// `object` that [`inject_ca_bundle`] sets; for tests and diagnostics.
pub fn injected_bundles(object: &Value) -> Vec<Option<Vec<u8>>> {
    client_configs(object)
        .into_iter()
        .filter(|c| c.get("service").is_some())
        .map(|c| {
            c.get("caBundle")
                .and_then(Value::as_str)
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vwc() -> Value {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "v"},
        "webhooks": [
            {"name": "a", "clientConfig": {"service": {"name": "dep-service", "namespace": "ns", "path": "/v"}}},
            {"name": "b", "clientConfig": {"url": "https://example.invalid/x"}}
        ]})
    }

    fn crd(strategy: &str) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "c"},
            "spec": {"conversion": {"strategy": strategy, "webhook": {"clientConfig": {"service": {"name": "other-service", "namespace": "ns"}}, "conversionReviewVersions": ["v1"]}}}})
    }

    #[test]
    fn needs_come_from_service_client_configs_only() {
        let objects = vec![
            vwc(),
            crd("Webhook"),
            crd("None"),
            json!({"kind": "Service", "metadata": {"name": "x"}}),
        ];
        let needs = serving_needs(&objects, "ns");
        assert_eq!(
            needs,
            vec![
                ServingNeed {
                    service: "dep-service".into(),
                    namespace: "ns".into(),
                    secret_name: "dep-service-cert".into()
                },
                ServingNeed {
                    service: "other-service".into(),
                    namespace: "ns".into(),
                    secret_name: "other-service-cert".into()
                },
            ]
        );
        assert_eq!(
            needs[0].dns_names(),
            [
                "dep-service.ns",
                "dep-service.ns.svc",
                "dep-service.ns.svc.cluster.local"
            ]
        );
        assert_eq!(needs[0].common_name(), "dep-service.ns");
    }

    #[test]
    fn the_secret_name_is_the_one_the_volume_fix_up_mounts() {
        use crate::render::certs::{CertProvider, CertProvisioner};
        let p = CertProvisioner::new("my.dep", "ns", CertProvider::Builtin);
        let info = p.cert_secret_info().expect("builtin mounts a Secret");
        assert_eq!(serving_secret_name(&p.service_name), info.secret_name);
        assert_eq!(info.certificate_key, CERTIFICATE_KEY);
        assert_eq!(info.private_key_key, PRIVATE_KEY_KEY);
    }

    #[test]
    fn a_missing_service_namespace_defaults_to_the_install_namespace() {
        let objects = vec![json!({"kind": "MutatingWebhookConfiguration",
            "webhooks": [{"clientConfig": {"service": {"name": "s"}}}]})];
        assert_eq!(serving_needs(&objects, "inst")[0].namespace, "inst");
    }

    #[test]
    fn injection_sets_service_configs_of_webhook_configurations_and_webhook_crds() {
        let mut objects = vec![
            vwc(),
            crd("Webhook"),
            crd("None"),
            json!({"kind": "Secret"}),
        ];
        let untouched_crd = objects[2].clone();
        let n = inject_ca_bundle(&mut objects, "PEM");
        assert_eq!(n, 2);
        assert_eq!(
            objects[0]["webhooks"][0]["clientConfig"]["caBundle"],
            "UEVN"
        );
        assert!(
            objects[0]["webhooks"][1]["clientConfig"]
                .get("caBundle")
                .is_none()
        );
        assert_eq!(
            objects[1]["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"],
            "UEVN"
        );
        assert_eq!(objects[2], untouched_crd);
        assert_eq!(objects[3], json!({"kind": "Secret"}));
        assert_eq!(injected_bundles(&objects[0]), vec![Some(b"PEM".to_vec())]);
        // A second injection replaces the value (a rotated bundle).
        inject_ca_bundle(&mut objects, "NEW");
        assert_eq!(injected_bundles(&objects[1]), vec![Some(b"NEW".to_vec())]);
    }

    #[test]
    fn detection_prefers_cert_manager_then_service_ca_then_builtin() {
        use crate::render::CertProvider;
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let openshift = v(&["config.openshift.io", "operator.openshift.io"]);
        assert_eq!(
            detected_provider(&v(&["apps", "cert-manager.io"]), &[]),
            CertProvider::CertManager
        );
        let mut both = openshift.clone();
        both.push("cert-manager.io".into());
        assert_eq!(
            detected_provider(&both, &v(&["servicecas"])),
            CertProvider::CertManager
        );
        assert_eq!(
            detected_provider(&openshift, &v(&["servicecas", "consoles"])),
            CertProvider::OpenShiftServiceCa
        );
        // The OpenShift config API alone (our test plane) or operator.openshift.io without
        // the service-ca operator: built-in.
        assert_eq!(
            detected_provider(&v(&["config.openshift.io"]), &[]),
            CertProvider::Builtin
        );
        assert_eq!(
            detected_provider(&openshift, &v(&["consoles"])),
            CertProvider::Builtin
        );
        assert_eq!(
            detected_provider(&v(&["apps"]), &v(&["servicecas"])),
            CertProvider::Builtin
        );
    }

    #[test]
    fn ca_secret_names_are_bounded() {
        assert_eq!(ca_secret_name("ext"), "ext-webhook-ca");
        assert!(ca_secret_name(&"x".repeat(200)).len() <= 63);
    }
}
