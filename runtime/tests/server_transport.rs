//! The shared server tells each request how its connection is carried: a handler finds
//! [`OverTls`] in the request's extensions exactly when the request arrived over TLS (catalogd
//! paces its plain-HTTP downloads by it), on real sockets, over HTTP/1.1.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::routing::get;
use olm_runtime::server::{OverTls, ServeOptions, TlsFiles, bind};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

const GENEROUS: Duration = Duration::from_secs(60);

/// Answers `tls` or `plain`, as the handler sees the request.
async fn transport(request: Request) -> &'static str {
    if request.extensions().get::<OverTls>().is_some() {
        "tls"
    } else {
        "plain"
    }
}

/// A server on a free loopback port answering [`transport`] at `/`.
async fn start(
    tls: Option<TlsFiles>,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), olm_runtime::server::ServerError>>,
) {
    let bound = bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let addr = bound.addr;
    let (stop, stopped) = oneshot::channel::<()>();
    let app = Router::new().route("/", get(transport));
    let options = ServeOptions {
        tls,
        ..ServeOptions::default()
    };
    let task = tokio::spawn(bound.serve_with(app, options, async move {
        let _ = stopped.await;
    }));
    (addr, stop, task)
}

/// One `GET /` with `Connection: close`, and the body of its answer.
async fn ask<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) -> String {
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(GENEROUS, stream.read_to_end(&mut response))
        .await
        .expect("no response")
        .unwrap();
    let response = String::from_utf8(response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap()
}

#[tokio::test]
async fn a_request_over_plain_tcp_carries_no_tls_mark() {
    let (addr, stop, task) = start(None).await;
    let body = ask(TcpStream::connect(addr).await.unwrap()).await;
    assert_eq!(body, "plain");
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_request_over_tls_carries_the_tls_mark() {
    olm_runtime::client::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let (files, cert) = support::self_signed_tls_files(dir.path(), "localhost");
    let (addr, stop, task) = start(Some(files)).await;

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let tls = connector
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    assert_eq!(ask(tls).await, "tls");

    // The same server's plain requests are told apart from those over TLS only by how they
    // came: a plain request to the TLS port is not served as one over TLS.
    let mut plain = TcpStream::connect(addr).await.unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(GENEROUS, plain.read_to_end(&mut answer)).await;
    assert!(!String::from_utf8_lossy(&answer).contains("plain"));

    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
