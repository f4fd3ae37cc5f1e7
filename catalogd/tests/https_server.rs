//! Real-socket tests of the catalog server over HTTPS, including certificate rotation.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use catalogd::http::router;
use catalogd::metrics::Metrics;
use catalogd::server::{TlsFiles, bind};
use catalogd::storage::Storage;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(params, key),
    }
}

fn leaf(ca: &Ca, dir: &std::path::Path) -> TlsFiles {
    let params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let files = TlsFiles {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    // Write the key first: the server reloads once both files changed.
    std::fs::write(&files.key, key.serialize_pem()).unwrap();
    std::fs::write(&files.cert, cert.pem()).unwrap();
    files
}

fn client_trusting(ca: &Ca) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca.pem.as_bytes()).unwrap()])
        .build()
        .unwrap()
}

#[tokio::test]
async fn https_serves_content_and_picks_up_a_rotated_certificate() {
    let data = tempfile::tempdir().unwrap();
    let storage = Storage::open(data.path().join("catalogs")).unwrap();
    let mut w = storage.begin("cat", "sha256:1").unwrap().unwrap();
    w.push(
        "olm.package",
        "",
        "a",
        br#"{"name":"a","schema":"olm.package"}"#,
    )
    .unwrap();
    w.commit().unwrap();

    let first_ca = ca("first");
    let files = leaf(&first_ca, data.path());
    let bound = bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let url = format!(
        "https://127.0.0.1:{}/catalogs/cat/api/v1/all",
        bound.addr.port()
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(bound.serve_with_cert_poll(
        router(storage, Metrics::new()),
        Some(files.clone()),
        async move {
            let _ = stop_rx.await;
        },
        Duration::from_millis(50),
    ));

    let body = client_trusting(&first_ca)
        .get(&url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(body, "{\"name\":\"a\",\"schema\":\"olm.package\"}\n");

    // Rotate to a certificate from another CA; clients trusting only the new CA must get through.
    let second_ca = ca("second");
    tokio::time::sleep(Duration::from_millis(20)).await;
    leaf(&second_ca, data.path());
    let new_client = client_trusting(&second_ca);
    let mut rotated = false;
    for _ in 0..200 {
        if new_client.get(&url).send().await.is_ok() {
            rotated = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(rotated, "the rotated certificate was never served");
    assert!(
        client_trusting(&first_ca).get(&url).send().await.is_err(),
        "the old certificate is still served"
    );

    stop_tx.send(()).unwrap();
    server.await.unwrap().unwrap();
}
