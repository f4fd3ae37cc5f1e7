//! `operator-controller render --cert-provider builtin` against `--cert-provider cert-manager`
//! on the conformance webhook bundle (issue 12): the same objects minus cert-manager's Issuer and
//! Certificate, plus the serving Secret; the injected CA bundle verifies the Secret's serving
//! certificate for the Service's DNS names (checked with rustls' WebPKI verifier).
#![allow(clippy::unwrap_used)]

#[path = "../core/tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::sync::Arc;

use base64::Engine as _;
use common::testdata;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::Value;

fn render(provider: &str) -> Vec<Value> {
    let bundle = testdata("conformance/render/bundles/webhook-operator.v0.0.5");
    let out: Output = Command::new(env!("CARGO_BIN_EXE_operator-controller"))
        .args(["render", "--bundle"])
        .arg(&bundle)
        .args(["--install-namespace", "webhook-system"])
        .args(["--cert-provider", provider])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut splitter = olm_api::fbc::yaml::DocumentSplitter::new(text.as_bytes(), 1);
    let mut docs = Vec::new();
    while let Some(doc) = splitter.next_document().unwrap() {
        if let Some(v) = olm_api::fbc::yaml::document_to_value(&doc).unwrap() {
            docs.push(olm_operator_core::bundle::manifest::from_go(v));
        }
    }
    docs
}

fn key(o: &Value) -> (String, String, String) {
    let s = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    (s("/kind"), s("/metadata/namespace"), s("/metadata/name"))
}

/// The object with what each provider adds to it removed: cert-manager's injection annotation,
/// the built-in provider's `caBundle` values.
fn without_provider_marks(o: &Value) -> Value {
    let mut o = o.clone();
    if let Some(annotations) = o
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove("cert-manager.io/inject-ca-from");
        if annotations.is_empty()
            && let Some(meta) = o.pointer_mut("/metadata").and_then(Value::as_object_mut)
        {
            meta.remove("annotations");
        }
    }
    if let Some(hooks) = o.get_mut("webhooks").and_then(Value::as_array_mut) {
        for hook in hooks {
            if let Some(c) = hook.get_mut("clientConfig").and_then(Value::as_object_mut) {
                c.remove("caBundle");
            }
        }
    }
    if let Some(c) = o
        .pointer_mut("/spec/conversion/webhook/clientConfig")
        .and_then(Value::as_object_mut)
    {
        c.remove("caBundle");
    }
    o
}

fn verify(bundle_pem: &[u8], cert_pem: &[u8], dns_name: &str) -> Result<(), rustls::Error> {
    let mut roots = rustls::RootCertStore::empty();
    for der in CertificateDer::pem_slice_iter(bundle_pem) {
        roots.add(der.unwrap())?;
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .unwrap();
    let leaf = CertificateDer::from_pem_slice(cert_pem).unwrap();
    verifier
        .verify_server_cert(
            &leaf,
            &[],
            &ServerName::try_from(dns_name.to_owned()).unwrap(),
            &[],
            UnixTime::now(),
        )
        .map(|_| ())
}

fn decode(s: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s.as_str().unwrap())
        .unwrap()
}

#[test]
fn builtin_renders_the_cert_manager_objects_minus_issuer_and_certificate_plus_the_secret() {
    let cert_manager = render("cert-manager");
    let builtin = render("builtin");

    let cm_keys: BTreeSet<_> = cert_manager
        .iter()
        .map(key)
        .filter(|k| k.0 != "Issuer" && k.0 != "Certificate")
        .collect();
    let builtin_keys: BTreeSet<_> = builtin.iter().map(key).collect();
    let added: Vec<_> = builtin_keys.difference(&cm_keys).cloned().collect();
    let certificate = cert_manager
        .iter()
        .find(|o| key(o).0 == "Certificate")
        .unwrap();
    let secret_name = certificate["spec"]["secretName"].as_str().unwrap();
    assert_eq!(
        added,
        vec![(
            "Secret".to_owned(),
            "webhook-system".to_owned(),
            secret_name.to_owned()
        )]
    );
    assert!(cm_keys.is_subset(&builtin_keys));

    // Every common object is the same apart from the providers' marks (volume fix-up included).
    for o in &builtin {
        if let Some(twin) = cert_manager.iter().find(|c| key(c) == key(o)) {
            assert_eq!(
                without_provider_marks(o),
                without_provider_marks(twin),
                "{:?}",
                key(o)
            );
        }
    }

    // The Secret's certificate verifies against every injected bundle for each DNS name
    // cert-manager's Certificate asks for.
    let secret = builtin.iter().find(|o| key(o).0 == "Secret").unwrap();
    assert_eq!(secret["type"], "kubernetes.io/tls");
    let cert = decode(&secret["data"]["tls.crt"]);
    assert!(!decode(&secret["data"]["tls.key"]).is_empty());
    let mut bundles = Vec::new();
    for o in &builtin {
        for hook in o["webhooks"].as_array().into_iter().flatten() {
            bundles.push(decode(&hook["clientConfig"]["caBundle"]));
        }
        if let Some(b) = o.pointer("/spec/conversion/webhook/clientConfig/caBundle") {
            bundles.push(decode(b));
        }
    }
    let kinds: BTreeSet<String> = builtin
        .iter()
        .filter(|o| o.get("webhooks").is_some() || o.pointer("/spec/conversion/webhook").is_some())
        .map(|o| key(o).0)
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            "CustomResourceDefinition".to_owned(),
            "MutatingWebhookConfiguration".to_owned(),
            "ValidatingWebhookConfiguration".to_owned()
        ])
    );
    assert!(bundles.len() >= 3);
    for bundle in &bundles {
        assert_eq!(bundle, &decode(&secret["data"]["ca.crt"]));
        for name in certificate["spec"]["dnsNames"].as_array().unwrap() {
            verify(bundle, &cert, name.as_str().unwrap()).unwrap();
        }
        // Not for another Service's name.
        assert!(verify(bundle, &cert, "other-service.webhook-system.svc").is_err());
    }
    // A bundle of another CA does not verify it.
    let other = render("builtin");
    let other_secret = other.iter().find(|o| key(o).0 == "Secret").unwrap();
    assert!(
        verify(
            &decode(&other_secret["data"]["ca.crt"]),
            &cert,
            certificate["spec"]["dnsNames"][0].as_str().unwrap()
        )
        .is_err()
    );
}
