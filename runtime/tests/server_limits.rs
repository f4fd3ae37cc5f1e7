//! The shared server's limits on real sockets: clients that never finish their headers (or their
//! TLS handshake, or never send anything) are disconnected, idle connections are closed, and the
//! connection cap holds while the connections already open keep working.
//!
//! Timeouts are set to a fraction of a second; waits are bounded by a generous limit that only keeps
//! a broken server from hanging the run (no test measures how fast anything happens).
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use olm_runtime::server::{ServeOptions, ServerLimits, TlsFiles, bind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

const GENEROUS: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_millis(200);
const LONG: Duration = Duration::from_secs(600);

struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), olm_runtime::server::ServerError>>,
}

impl Server {
    async fn start(limits: ServerLimits, tls: Option<TlsFiles>) -> Server {
        let bound = bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let addr = bound.addr;
        let (stop, stopped) = oneshot::channel::<()>();
        let app = Router::new().route("/", get(|| async { "hello" }));
        let options = ServeOptions {
            tls,
            limits,
            ..ServeOptions::default()
        };
        let task = tokio::spawn(bound.serve_with(app, options, async move {
            let _ = stopped.await;
        }));
        Server {
            addr,
            stop: Some(stop),
            task,
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    async fn shut_down(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(GENEROUS, self.task)
            .await
            .expect("the server stops")
            .unwrap()
            .unwrap();
    }
}

fn limits(
    header_read_timeout: Duration,
    idle_timeout: Duration,
    max_connections: u32,
) -> ServerLimits {
    ServerLimits {
        header_read_timeout,
        idle_timeout,
        max_connections,
    }
}

/// Reads until the server closes the connection; fails the test if it never does.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    tokio::time::timeout(GENEROUS, async {
        let mut received = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return received,
                Ok(n) => received.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
    .expect("the server never closed the connection")
}

/// Sends one keep-alive request and reads its whole response.
async fn get_hello(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    read_response(stream).await
}

async fn read_response(stream: &mut TcpStream) -> String {
    tokio::time::timeout(GENEROUS, async {
        let mut received = Vec::new();
        let mut chunk = [0u8; 4096];
        while !received.ends_with(b"hello") {
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed before the response was complete");
            received.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8(received).unwrap()
    })
    .await
    .expect("no response")
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let server = Server::start(limits(SHORT, LONG, 16), None).await;
    let mut slow = server.connect().await;
    slow.write_all(b"GET / HTTP/1.1\r\nHost: test\r\nX-Never: ")
        .await
        .unwrap();
    let received = read_until_closed(&mut slow).await;
    assert!(
        !String::from_utf8_lossy(&received).contains("hello"),
        "no request was served"
    );
    // A client that does finish its headers is served as usual.
    let mut good = server.connect().await;
    assert!(get_hello(&mut good).await.starts_with("HTTP/1.1 200 OK"));
    server.shut_down().await;
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_disconnected() {
    let server = Server::start(limits(SHORT, LONG, 16), None).await;
    let mut silent = server.connect().await;
    assert!(read_until_closed(&mut silent).await.is_empty());
    // Half an HTTP/2 preface leaves the protocol undecided: closed as well.
    let mut half = server.connect().await;
    half.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    assert!(read_until_closed(&mut half).await.is_empty());
    server.shut_down().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_its_response() {
    let server = Server::start(limits(SHORT, LONG, 16), None).await;
    let mut client = server.connect().await;
    let response = get_hello(&mut client).await;
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(read_until_closed(&mut client).await.is_empty());
    server.shut_down().await;
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed_gracefully() {
    let server = Server::start(limits(LONG, SHORT, 16), None).await;
    let stream = server.connect().await;
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    let connection = tokio::spawn(connection);
    let request = hyper::Request::get(format!("http://{}/", server.addr))
        .body(String::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    drop(response);
    // The server sends GOAWAY once nothing is in flight; the client side then ends cleanly.
    tokio::time::timeout(GENEROUS, connection)
        .await
        .expect("the idle HTTP/2 connection was never closed")
        .unwrap()
        .unwrap();
    server.shut_down().await;
}

#[tokio::test]
async fn the_connection_cap_holds_and_a_waiting_client_is_served_once_a_slot_frees() {
    let server = Server::start(limits(LONG, LONG, 2), None).await;
    let mut first = server.connect().await;
    let mut second = server.connect().await;
    assert!(get_hello(&mut first).await.starts_with("HTTP/1.1 200 OK"));
    assert!(get_hello(&mut second).await.starts_with("HTTP/1.1 200 OK"));

    // A third client connects (the kernel's backlog takes it) and asks, but is not served...
    let mut third = server.connect().await;
    third
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    // ...while the open connections keep working.
    assert!(get_hello(&mut first).await.starts_with("HTTP/1.1 200 OK"));
    let mut nothing = [0u8; 64];
    assert!(
        matches!(third.try_read(&mut nothing), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the third connection was served beyond the cap"
    );

    // Closing one connection frees a slot: the waiting client is served.
    drop(second);
    assert!(
        read_response(&mut third)
            .await
            .starts_with("HTTP/1.1 200 OK")
    );
    server.shut_down().await;
}

#[tokio::test]
async fn a_tls_client_that_never_completes_its_handshake_is_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = support::self_signed_tls_files(dir.path(), "127.0.0.1");
    let server = Server::start(limits(SHORT, LONG, 16), Some(files)).await;
    let mut silent = server.connect().await;
    assert!(read_until_closed(&mut silent).await.is_empty());
    server.shut_down().await;
}

#[tokio::test]
async fn shutdown_lets_an_open_connection_finish_and_refuses_new_ones() {
    let server = Server::start(limits(LONG, LONG, 16), None).await;
    let mut client = server.connect().await;
    assert!(get_hello(&mut client).await.starts_with("HTTP/1.1 200 OK"));
    let addr = server.addr;
    server.shut_down().await;
    // The idle keep-alive connection was closed gracefully and the listener is gone.
    assert!(read_until_closed(&mut client).await.is_empty());
    assert!(TcpStream::connect(addr).await.is_err());
}
