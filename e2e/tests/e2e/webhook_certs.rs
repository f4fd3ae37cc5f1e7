//! The built-in webhook certificate provider end to end (issue 12), on the `full` tier: a
//! bundle with validating, mutating and conversion webhooks (built by the project's image code,
//! served by catalogd) installs with no cert-manager and no service-ca; the CA bundle in the
//! webhook configurations and the CRD verifies the serving certificate in the Secret the
//! Deployment mounts (rustls' WebPKI verifier, as the API server's TLS client would check it);
//! a cleared `caBundle` is restored; a short validity rotates the serving certificate and the CA
//! with both CAs in the bundle during the switch; uninstall removes the Secrets; a foreign
//! Secret of the serving Secret's name is a collision and is left alone.
//!
//! kwok runs no containers, so no webhook server answers: the certificates and bundles are
//! checked, not admission calls. Exact strings: the collision message is upstream's
//! (`action/error/errors.go`, install-path.md §1 and `apply_plan::ownership`).

use std::sync::Arc;

use base64::Engine as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use olm_e2e::operator_controller::BundleSpec;
use olm_e2e::scenario::{
    DESIRED_STATE, ExtensionSpec, Message, OWNER_NAME_LABEL, Package, Published, RETRYING, Scenario,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::json;

const PROVIDER_LABEL: &str = "olm.operatorframework.io/webhook-cert-provider";

/// The bundle gets a validating, a mutating and a conversion webhook on its Deployment.
fn with_webhooks(spec: &mut BundleSpec) {
    let group = format!("{}.e2e.olm.test", spec.package);
    let rules = json!([{"apiGroups": [group], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["widgets"]}]);
    let common = |type_: &str, name: &str, path: &str| {
        json!({"type": type_, "generateName": format!("{name}.{group}"),
            "deploymentName": spec.deployment_name(), "containerPort": 443, "targetPort": 9443,
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "webhookPath": path})
    };
    let mut validating = common("ValidatingAdmissionWebhook", "vwidget", "/validate");
    validating["rules"] = rules.clone();
    validating["failurePolicy"] = json!("Ignore");
    let mut mutating = common("MutatingAdmissionWebhook", "mwidget", "/mutate");
    mutating["rules"] = rules;
    mutating["failurePolicy"] = json!("Ignore");
    let mut conversion = common("ConversionWebhook", "cwidget", "/convert");
    conversion["conversionCRDs"] = json!([format!("widgets.{group}")]);
    spec.csv_spec.insert(
        "webhookdefinitions".into(),
        json!([validating, mutating, conversion]),
    );
}

/// A package whose one bundle has webhooks ([`with_webhooks`]), published in the scenario.
async fn publish_webhook_package(scenario: &Scenario) -> Published {
    scenario
        .publish(Package::new("hooks").bundle_with("1.0.0", with_webhooks))
        .await
}

/// The webhook Service of the package's Deployment (upstream's name).
fn service(catalog: &Published) -> String {
    format!("{}-controller-service", catalog.package())
}

/// The webhook Service's serving Secret (upstream's name).
fn serving_secret(catalog: &Published) -> String {
    format!("{}-cert", service(catalog))
}

fn crd(catalog: &Published) -> String {
    format!("widgets.{}.e2e.olm.test", catalog.package())
}

/// Whether `bundle_pem` makes a TLS client accept `cert_pem` as a server certificate for
/// `dns_name` now.
fn verifies(bundle_pem: &[u8], cert_pem: &[u8], dns_name: &str) -> bool {
    let mut roots = rustls::RootCertStore::empty();
    for der in CertificateDer::pem_slice_iter(bundle_pem) {
        let Ok(der) = der else { return false };
        if roots.add(der).is_err() {
            return false;
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let Ok(verifier) =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build()
    else {
        return false;
    };
    let Ok(leaf) = CertificateDer::from_pem_slice(cert_pem) else {
        return false;
    };
    let Ok(name) = ServerName::try_from(dns_name.to_owned()) else {
        return false;
    };
    verifier
        .verify_server_cert(&leaf, &[], &name, &[], UnixTime::now())
        .is_ok()
}

fn certificates_in(bundle: &[u8]) -> Vec<Vec<u8>> {
    CertificateDer::pem_slice_iter(bundle)
        .filter_map(Result::ok)
        .map(|c| c.to_vec())
        .collect()
}

/// The CA bundles (decoded) of the extension's webhook configurations and CRD, in the order
/// validating, mutating, conversion; `None` where a bundle is missing.
async fn injected(client: &kube::Client, extension: &str, crd_name: &str) -> Vec<Option<Vec<u8>>> {
    let selector = format!("{OWNER_NAME_LABEL}={extension}");
    let decode = |b: Option<&k8s_openapi::ByteString>| b.map(|b| b.0.clone());
    let mut out = Vec::new();
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let list = vwcs
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap();
    out.push(
        list.items
            .first()
            .and_then(|v| v.webhooks.as_ref()?.first())
            .and_then(|w| decode(w.client_config.ca_bundle.as_ref())),
    );
    let mwcs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let list = mwcs
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap();
    out.push(
        list.items
            .first()
            .and_then(|v| v.webhooks.as_ref()?.first())
            .and_then(|w| decode(w.client_config.ca_bundle.as_ref())),
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    out.push(crds.get_opt(crd_name).await.unwrap().and_then(|crd| {
        let webhook = crd.spec.conversion?.webhook?;
        decode(webhook.client_config?.ca_bundle.as_ref())
    }));
    out
}

/// The serving Secret's `tls.crt`, if the Secret exists.
async fn serving_cert(secrets: &Api<Secret>, name: &str) -> Option<Vec<u8>> {
    let secret = secrets.get_opt(name).await.unwrap()?;
    secret.data?.get("tls.crt").map(|b| b.0.clone())
}

/// All three bundles, when they are present and equal.
async fn one_bundle(client: &kube::Client, extension: &str, crd: &str) -> Option<Vec<u8>> {
    let bundles = injected(client, extension, crd).await;
    let first = bundles.first()?.clone()?;
    bundles
        .iter()
        .all(|b| b.as_ref() == Some(&first))
        .then_some(first)
}

#[tokio::test]
async fn builtin_provider_installs_webhooks_repairs_rotates_and_removes_its_secrets() {
    // No --cert-provider: the test plane serves neither cert-manager nor service-ca, so the
    // built-in provider is detected. Certificates valid for 90 s: a CA rotation starts about
    // a minute after install, with overlaps of 9 s.
    let mut scenario = Scenario::builder()
        .controller_arg("--builtin-cert-validity=90s")
        .start()
        .await;
    let catalog = publish_webhook_package(&scenario).await;
    let client = scenario.client.clone();
    let ns = scenario.namespace("hooks").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    let name = ext.name.clone();

    let installed = scenario
        .wait_for(
            &ext,
            DESIRED_STATE.message(Message::exact(
                "Desired state reached\nwebhook certificates are issued by operator-controller's built-in provider (neither cert-manager nor OpenShift service-ca was detected)",
            )),
        )
        .await;
    let service = service(&catalog);
    let dns_names = [
        format!("{service}.{ns}"),
        format!("{service}.{ns}.svc"),
        format!("{service}.{ns}.svc.cluster.local"),
    ];

    // The Deployment mounts the serving Secret (the shared volume fix-up).
    let deployment = scenario
        .deployments(&ext)
        .get(&format!("{}-controller", catalog.package()))
        .await
        .unwrap();
    let volumes = deployment
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .volumes
        .unwrap();
    let mounted: Vec<String> = volumes
        .iter()
        .filter(|v| v.name == "webhook-cert" || v.name == "apiservice-cert")
        .filter_map(|v| v.secret.as_ref()?.secret_name.clone())
        .collect();
    assert_eq!(
        mounted,
        vec![serving_secret(&catalog), serving_secret(&catalog)]
    );

    // Each bundle verifies the mounted serving certificate for each DNS name.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let cert = serving_cert(&secrets, &serving_secret(&catalog))
        .await
        .unwrap();
    let bundle = scenario
        .eventually("all three CA bundles injected", || async {
            one_bundle(&client, &name, &crd(&catalog)).await
        })
        .await;
    assert_eq!(certificates_in(&bundle).len(), 1);
    for dns in &dns_names {
        assert!(verifies(&bundle, &cert, dns), "{dns}");
    }
    assert!(!verifies(&bundle, &cert, &format!("other.{ns}.svc")));
    let secret = secrets.get(&serving_secret(&catalog)).await.unwrap();
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let owner = &secret.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("ClusterExtension", name.as_str())
    );
    // Keys stay out of the status.
    let status = serde_json::to_string(&installed.status).unwrap();
    assert!(!status.contains("PRIVATE KEY"));

    // Someone clears the validating webhook's caBundle: it is restored.
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let vwc = vwcs
        .list(&ListParams::default().labels(&format!("{OWNER_NAME_LABEL}={name}")))
        .await
        .unwrap()
        .items
        .remove(0);
    let vwc_name = vwc.metadata.name.clone().unwrap();
    vwcs.patch(
        &vwc_name,
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(
                json!([{"op": "remove", "path": "/webhooks/0/clientConfig/caBundle"}]),
            )
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    scenario
        .eventually("the cleared caBundle restored", || async {
            let vwc = vwcs.get(&vwc_name).await.ok()?;
            let restored = vwc.webhooks?.first()?.client_config.ca_bundle.clone()?;
            let cert = serving_cert(&secrets, &serving_secret(&catalog)).await?;
            verifies(&restored.0, &cert, &dns_names[1]).then_some(())
        })
        .await;

    // Someone deletes the serving Secret: a new serving certificate of the same CA is written.
    secrets
        .delete(&serving_secret(&catalog), &Default::default())
        .await
        .unwrap();
    scenario
        .eventually("the deleted serving Secret restored", || async {
            let restored = serving_cert(&secrets, &serving_secret(&catalog)).await?;
            (restored != cert && verifies(&bundle, &restored, &dns_names[1])).then_some(())
        })
        .await;
    let cert = serving_cert(&secrets, &serving_secret(&catalog))
        .await
        .unwrap();

    // Rotation: a second CA joins the bundle while the first still signs the serving
    // certificate; the serving certificate moves to the second CA while both are trusted;
    // then the first CA leaves the bundle. At every observation the mounted certificate
    // verifies against every injected bundle.
    let first_ca = certificates_in(&bundle).remove(0);
    let overlap = scenario
        .eventually("a second CA in all three bundles", || async {
            let bundle = one_bundle(&client, &name, &crd(&catalog)).await?;
            let cert = serving_cert(&secrets, &serving_secret(&catalog)).await?;
            assert!(verifies(&bundle, &cert, &dns_names[1]), "trust broken");
            (certificates_in(&bundle).len() == 2).then_some(bundle)
        })
        .await;
    let cas = certificates_in(&overlap);
    assert!(cas.contains(&first_ca));
    let second_ca = cas.into_iter().find(|c| c != &first_ca).unwrap();
    let pem_of = |der: &[u8]| {
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            lines.join("\n")
        )
        .into_bytes()
    };
    let (first_pem, second_pem) = (pem_of(&first_ca), pem_of(&second_ca));
    scenario
        .eventually(
            "the serving certificate signed by the second CA, both trusted",
            || async {
                let bundle = one_bundle(&client, &name, &crd(&catalog)).await?;
                let cert = serving_cert(&secrets, &serving_secret(&catalog)).await?;
                assert!(verifies(&bundle, &cert, &dns_names[1]), "trust broken");
                (verifies(&second_pem, &cert, &dns_names[1]) && certificates_in(&bundle).len() == 2)
                    .then_some(())
            },
        )
        .await;
    let rotated = serving_cert(&secrets, &serving_secret(&catalog))
        .await
        .unwrap();
    assert_ne!(rotated, cert, "the serving certificate was renewed");
    assert!(!verifies(&first_pem, &rotated, &dns_names[1]));
    scenario
        .eventually("the first CA dropped from all three bundles", || async {
            let bundle = one_bundle(&client, &name, &crd(&catalog)).await?;
            let cert = serving_cert(&secrets, &serving_secret(&catalog)).await?;
            assert!(verifies(&bundle, &cert, &dns_names[1]), "trust broken");
            let cas = certificates_in(&bundle);
            (cas.len() == 1 && cas[0] != first_ca).then_some(())
        })
        .await;

    // Uninstall removes the provider's Secrets.
    scenario.delete_extension(&ext).await;
    let left = secrets
        .list(&ListParams::default().labels(PROVIDER_LABEL))
        .await
        .unwrap()
        .items;
    assert!(
        left.is_empty(),
        "{:?}",
        left.iter()
            .map(|s| s.metadata.name.clone())
            .collect::<Vec<_>>()
    );
    scenario.finish().await;
}

#[tokio::test]
async fn a_foreign_secret_of_the_serving_secrets_name_is_a_collision_and_left_alone() {
    let mut scenario = Scenario::builder()
        .controller_arg("--cert-provider=builtin")
        .start()
        .await;
    let catalog = publish_webhook_package(&scenario).await;
    let client = scenario.client.clone();
    let ns = scenario.namespace("hooks").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let foreign: Secret = serde_json::from_value(json!({
        "metadata": {"name": serving_secret(&catalog)},
        "stringData": {"tls.crt": "mine", "tls.key": "mine"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();

    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    let name = ext.name.clone();
    scenario
        .wait_for(
            &ext,
            RETRYING.until_message(Message::contains(format!(
                "Secret '{}' already exists in namespace '{ns}' and cannot be managed by operator-controller",
                serving_secret(&catalog)
            ))),
        )
        .await;
    let kept = secrets.get(&serving_secret(&catalog)).await.unwrap();
    assert_eq!(
        kept.data.unwrap().get("tls.crt").map(|b| b.0.clone()),
        Some(b"mine".to_vec()),
        "the foreign Secret is not overwritten"
    );

    // Once it is gone, the extension installs with the provider's Secret.
    secrets
        .delete(&serving_secret(&catalog), &Default::default())
        .await
        .unwrap();
    scenario
        .wait_for(
            &ext,
            DESIRED_STATE.message(Message::exact(
                "Desired state reached\nwebhook certificates are issued by operator-controller's built-in provider",
            )),
        )
        .await;
    let cert = serving_cert(&secrets, &serving_secret(&catalog))
        .await
        .unwrap();
    let bundle = scenario
        .eventually("all three CA bundles injected", || async {
            one_bundle(&client, &name, &crd(&catalog)).await
        })
        .await;
    let dns = format!("{}.{ns}.svc", service(&catalog));
    assert!(verifies(&bundle, &cert, &dns));

    // The CA Secret deleted: its key is gone, so a new CA replaces it in every bundle and
    // signs a new serving certificate.
    let ca_secret = format!("{name}-webhook-ca");
    assert!(secrets.get_opt(&ca_secret).await.unwrap().is_some());
    secrets
        .delete(&ca_secret, &Default::default())
        .await
        .unwrap();
    scenario
        .eventually(
            "a new CA in every bundle, signing the serving certificate",
            || async {
                let new_bundle = one_bundle(&client, &name, &crd(&catalog)).await?;
                let new_cert = serving_cert(&secrets, &serving_secret(&catalog)).await?;
                secrets.get_opt(&ca_secret).await.ok()??;
                (new_bundle != bundle
                    && verifies(&new_bundle, &new_cert, &dns)
                    && !verifies(&bundle, &new_cert, &dns))
                .then_some(())
            },
        )
        .await;
    scenario.delete_extension(&ext).await;
    assert!(secrets.get_opt(&ca_secret).await.unwrap().is_none());
    assert!(
        secrets
            .get_opt(&serving_secret(&catalog))
            .await
            .unwrap()
            .is_none()
    );
    scenario.finish().await;
}
