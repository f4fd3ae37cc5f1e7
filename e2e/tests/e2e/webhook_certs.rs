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

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use olm_api::v1::{ClusterExtension, ConditionType};
use olm_e2e::operator_controller::{
    BundleSpec, Catalogs, OperatorController, Options, bundle_name, message,
};
use olm_e2e::registry::Registry;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::{Value, json};

use crate::extension_install::{catalog_spec, create_extension, delete_extension, extensions};
use crate::support::{create_namespace, unique_name};

const PROVIDER_LABEL: &str = "olm.operatorframework.io/webhook-cert-provider";

/// A package whose one bundle has a validating, a mutating and a conversion webhook on its
/// Deployment; pushed and served by a catalogd of the test's own.
struct WebhookFixture {
    package: String,
    catalogs: Catalogs,
    catalog: String,
}

impl WebhookFixture {
    async fn new(registry: &Registry) -> WebhookFixture {
        let package = unique_name("hooks");
        let spec = BundleSpec::new(&package, "1.0.0");
        let dir = tempfile::tempdir().unwrap();
        spec.write(dir.path());
        // The CSV BundleSpec writes, plus the three webhook definitions.
        let csv_path = dir.path().join("manifests/csv.json");
        let mut csv: Value = serde_json::from_slice(&std::fs::read(&csv_path).unwrap()).unwrap();
        let group = format!("{package}.e2e.olm.test");
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
        csv["spec"]["webhookdefinitions"] = json!([validating, mutating, conversion]);
        std::fs::write(&csv_path, csv.to_string()).unwrap();

        let repo = unique_name("bundles");
        let tag = format!("{repo}:v1.0.0");
        olm_e2e::images::push_bundle(registry, &tag, dir.path(), &package, &["stable"])
            .await
            .unwrap_or_else(|e| panic!("push {tag}: {e}"));
        let images = BTreeMap::from([("1.0.0".to_owned(), registry.image(&tag))]);
        let catalog_image =
            catalog_spec(&package, &images, &[(bundle_name(&package, "1.0.0"), None)])
                .push(registry, &unique_name("catalog"), "latest")
                .await;
        let catalogs = Catalogs::start(registry).await;
        let catalog = catalogs.serve("cat", &catalog_image, Some(1)).await;
        WebhookFixture {
            package,
            catalogs,
            catalog,
        }
    }

    /// The webhook Service and its serving Secret (upstream's names).
    fn service(&self) -> String {
        format!("{}-controller-service", self.package)
    }

    fn secret(&self) -> String {
        format!("{}-cert", self.service())
    }

    fn crd(&self) -> String {
        format!("widgets.{}.e2e.olm.test", self.package)
    }
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
    let selector = format!("olm.operatorframework.io/owner-name={extension}");
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
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = WebhookFixture::new(&env.registry).await;
    // No --cert-provider: the test plane serves neither cert-manager nor service-ca, so the
    // built-in provider is detected. Certificates valid for 90 s: a CA rotation starts about
    // a minute after install, with overlaps of 9 s.
    let mut options = Options::new(&env.registry);
    options.args = vec!["--builtin-cert-validity=90s".into()];
    let oc = OperatorController::start(options).await;
    let ns = create_namespace(&client, "hooks").await;
    let api = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;

    let installed = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        message(&installed, ConditionType::Progressing),
        "Desired state reached\nwebhook certificates are issued by operator-controller's built-in provider (neither cert-manager nor OpenShift service-ca was detected)"
    );
    let service = fixture.service();
    let dns_names = [
        format!("{service}.{ns}"),
        format!("{service}.{ns}.svc"),
        format!("{service}.{ns}.svc.cluster.local"),
    ];

    // The Deployment mounts the serving Secret (the shared volume fix-up).
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment = deployments
        .get(&format!("{}-controller", fixture.package))
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
    assert_eq!(mounted, vec![fixture.secret(), fixture.secret()]);

    // Each bundle verifies the mounted serving certificate for each DNS name.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let cert = serving_cert(&secrets, &fixture.secret()).await.unwrap();
    let bundle = oc
        .eventually("all three CA bundles injected", || async {
            one_bundle(&client, &name, &fixture.crd()).await
        })
        .await;
    assert_eq!(certificates_in(&bundle).len(), 1);
    for dns in &dns_names {
        assert!(verifies(&bundle, &cert, dns), "{dns}");
    }
    assert!(!verifies(&bundle, &cert, &format!("other.{ns}.svc")));
    let secret = secrets.get(&fixture.secret()).await.unwrap();
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
        .list(&ListParams::default().labels(&format!("olm.operatorframework.io/owner-name={name}")))
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
    oc.eventually("the cleared caBundle restored", || async {
        let vwc = vwcs.get(&vwc_name).await.ok()?;
        let restored = vwc.webhooks?.first()?.client_config.ca_bundle.clone()?;
        let cert = serving_cert(&secrets, &fixture.secret()).await?;
        verifies(&restored.0, &cert, &dns_names[1]).then_some(())
    })
    .await;

    // Someone deletes the serving Secret: a new serving certificate of the same CA is written.
    secrets
        .delete(&fixture.secret(), &Default::default())
        .await
        .unwrap();
    oc.eventually("the deleted serving Secret restored", || async {
        let restored = serving_cert(&secrets, &fixture.secret()).await?;
        (restored != cert && verifies(&bundle, &restored, &dns_names[1])).then_some(())
    })
    .await;
    let cert = serving_cert(&secrets, &fixture.secret()).await.unwrap();

    // Rotation: a second CA joins the bundle while the first still signs the serving
    // certificate; the serving certificate moves to the second CA while both are trusted;
    // then the first CA leaves the bundle. At every observation the mounted certificate
    // verifies against every injected bundle.
    let first_ca = certificates_in(&bundle).remove(0);
    let overlap = oc
        .eventually("a second CA in all three bundles", || async {
            let bundle = one_bundle(&client, &name, &fixture.crd()).await?;
            let cert = serving_cert(&secrets, &fixture.secret()).await?;
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
    oc.eventually(
        "the serving certificate signed by the second CA, both trusted",
        || async {
            let bundle = one_bundle(&client, &name, &fixture.crd()).await?;
            let cert = serving_cert(&secrets, &fixture.secret()).await?;
            assert!(verifies(&bundle, &cert, &dns_names[1]), "trust broken");
            (verifies(&second_pem, &cert, &dns_names[1]) && certificates_in(&bundle).len() == 2)
                .then_some(())
        },
    )
    .await;
    let rotated = serving_cert(&secrets, &fixture.secret()).await.unwrap();
    assert_ne!(rotated, cert, "the serving certificate was renewed");
    assert!(!verifies(&first_pem, &rotated, &dns_names[1]));
    oc.eventually("the first CA dropped from all three bundles", || async {
        let bundle = one_bundle(&client, &name, &fixture.crd()).await?;
        let cert = serving_cert(&secrets, &fixture.secret()).await?;
        assert!(verifies(&bundle, &cert, &dns_names[1]), "trust broken");
        let cas = certificates_in(&bundle);
        (cas.len() == 1 && cas[0] != first_ca).then_some(())
    })
    .await;

    // Uninstall removes the provider's Secrets.
    delete_extension(&oc, &api, &name).await;
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
    let _ = &fixture.catalogs;
}

#[tokio::test]
async fn a_foreign_secret_of_the_serving_secrets_name_is_a_collision_and_left_alone() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = WebhookFixture::new(&env.registry).await;
    let mut options = Options::new(&env.registry);
    options.args = vec!["--cert-provider=builtin".into()];
    let oc = OperatorController::start(options).await;
    let ns = create_namespace(&client, "hooks").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let foreign: Secret = serde_json::from_value(json!({
        "metadata": {"name": fixture.secret()},
        "stringData": {"tls.crt": "mine", "tls.key": "mine"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();

    let api: Api<ClusterExtension> = extensions().await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    let expected = format!(
        "Secret '{}' already exists in namespace '{ns}' and cannot be managed by operator-controller",
        fixture.secret()
    );
    oc.wait_progressing(&api, &name, "Retrying", |m| m.contains(&expected))
        .await;
    let kept = secrets.get(&fixture.secret()).await.unwrap();
    assert_eq!(
        kept.data.unwrap().get("tls.crt").map(|b| b.0.clone()),
        Some(b"mine".to_vec()),
        "the foreign Secret is not overwritten"
    );

    // Once it is gone, the extension installs with the provider's Secret.
    secrets
        .delete(&fixture.secret(), &Default::default())
        .await
        .unwrap();
    let installed = oc
        .wait_condition(&api, &name, ConditionType::Progressing, "True", "Succeeded")
        .await;
    assert_eq!(
        message(&installed, ConditionType::Progressing),
        "Desired state reached\nwebhook certificates are issued by operator-controller's built-in provider"
    );
    let cert = serving_cert(&secrets, &fixture.secret()).await.unwrap();
    let bundle = oc
        .eventually("all three CA bundles injected", || async {
            one_bundle(&client, &name, &fixture.crd()).await
        })
        .await;
    let dns = format!("{}.{ns}.svc", fixture.service());
    assert!(verifies(&bundle, &cert, &dns));

    // The CA Secret deleted: its key is gone, so a new CA replaces it in every bundle and
    // signs a new serving certificate.
    let ca_secret = format!("{name}-webhook-ca");
    assert!(secrets.get_opt(&ca_secret).await.unwrap().is_some());
    secrets
        .delete(&ca_secret, &Default::default())
        .await
        .unwrap();
    oc.eventually(
        "a new CA in every bundle, signing the serving certificate",
        || async {
            let new_bundle = one_bundle(&client, &name, &fixture.crd()).await?;
            let new_cert = serving_cert(&secrets, &fixture.secret()).await?;
            secrets.get_opt(&ca_secret).await.ok()??;
            (new_bundle != bundle
                && verifies(&new_bundle, &new_cert, &dns)
                && !verifies(&bundle, &new_cert, &dns))
            .then_some(())
        },
    )
    .await;
    delete_extension(&oc, &api, &name).await;
    assert!(secrets.get_opt(&ca_secret).await.unwrap().is_none());
    assert!(secrets.get_opt(&fixture.secret()).await.unwrap().is_none());
}
