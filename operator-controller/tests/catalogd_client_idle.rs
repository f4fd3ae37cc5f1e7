//! The catalogd client's read idle timeout against real sockets on 127.0.0.1: a server that
//! accepts and never answers, one that sends headers and then stalls, and bodies that trickle
//! forever or pause past the idle timeout each fail with an error naming the URL, while a slow but
//! steady server (every pause within the idle timeout) is read to the end. Every server here
//! stops by itself: it holds a connection for a bounded time and sends a bounded number of bytes.
//!
//! The limits are short so the tests are quick; `--catalogd-read-idle-timeout` (default 30s) sets
//! the idle timeout of `operator-controller run` and `resolve`.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use operator_controller::catalog_source::http::{
    CatalogEndpoint, CatalogdClient, ClientOptions, FetchError,
};
use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest any server here keeps a connection open.
const HOLD: Duration = Duration::from_secs(60);

/// One package object: a valid answer to both requests the client sends for package `p`.
const PACKAGE_LINE: &[u8] = b"{\"name\":\"p\",\"schema\":\"olm.package\"}\n";

#[derive(Clone, Copy)]
enum Behaviour {
    /// Accepts the connection and never reads or writes.
    NeverAnswers,
    /// Reads the request, sends the headers of a 200 with a body, then nothing.
    HeadersThenStall,
    /// Reads the request, announces a large body and sends one byte every `every` (at most
    /// [`Behaviour::TRICKLE_BYTES`]).
    Trickle { every: Duration },
    /// Sends [`PACKAGE_LINE`] a few bytes at a time, one piece every `every`.
    SlowButSteady { every: Duration },
}

impl Behaviour {
    const TRICKLE_BYTES: usize = 120;
}

/// Serves `behaviour` to every connection; returns a catalog URL.
async fn server(behaviour: Behaviour) -> Url {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(HOLD, answer(stream, behaviour)).await;
            });
        }
    });
    Url::parse(&format!("http://{addr}/catalogs/stalling")).unwrap()
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        request.extend_from_slice(&buf[..n]);
    }
    Ok(())
}

async fn answer(mut stream: TcpStream, behaviour: Behaviour) -> std::io::Result<()> {
    match behaviour {
        Behaviour::NeverAnswers => {
            tokio::time::sleep(HOLD).await;
        }
        Behaviour::HeadersThenStall => {
            read_request(&mut stream).await?;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: 4096\r\n\r\n")
                .await?;
            tokio::time::sleep(HOLD).await;
        }
        Behaviour::Trickle { every } => {
            read_request(&mut stream).await?;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
                .await?;
            for _ in 0..Behaviour::TRICKLE_BYTES {
                stream.write_all(b" ").await?;
                tokio::time::sleep(every).await;
            }
        }
        Behaviour::SlowButSteady { every } => {
            read_request(&mut stream).await?;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                PACKAGE_LINE.len()
            );
            stream.write_all(head.as_bytes()).await?;
            for piece in PACKAGE_LINE.chunks(8) {
                tokio::time::sleep(every).await;
                stream.write_all(piece).await?;
                stream.flush().await?;
            }
        }
    }
    Ok(())
}

fn client(options: ClientOptions) -> CatalogdClient {
    CatalogdClient::new(ClientOptions {
        backoff: Duration::from_millis(10),
        ..options
    })
    .unwrap()
}

async fn package(
    client: &CatalogdClient,
    url: &Url,
) -> Result<std::sync::Arc<operator_controller::resolve::PackageContent>, FetchError> {
    let endpoint = CatalogEndpoint {
        name: "stalling".into(),
        base_url: url.clone(),
        revision: None,
    };
    // A watchdog, not a speed assertion: a regression to "never ends" must fail the test.
    tokio::time::timeout(Duration::from_secs(120), client.package(&endpoint, "p"))
        .await
        .expect("the client did not give up")
}

/// An idle-timeout failure naming one of the two `/metas` URLs of `base`.
fn assert_idle_failure(e: &FetchError, base: &Url, idle: &str) {
    assert!(matches!(e, FetchError::Idle { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("failed to fetch {base}/api/v1/metas?")),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(": no data for {idle} (read idle timeout)")),
        "{text}"
    );
}

fn one_second_idle() -> ClientOptions {
    ClientOptions {
        read_idle_timeout: Duration::from_secs(1),
        ..ClientOptions::default()
    }
}

#[tokio::test]
async fn a_server_that_accepts_and_never_answers_fails_at_the_idle_timeout_naming_the_url() {
    let url = server(Behaviour::NeverAnswers).await;
    let e = package(&client(one_second_idle()), &url).await.unwrap_err();
    assert_idle_failure(&e, &url, "1s");
}

#[tokio::test]
async fn a_server_that_sends_headers_then_stalls_fails_at_the_idle_timeout_naming_the_url() {
    let url = server(Behaviour::HeadersThenStall).await;
    let e = package(&client(one_second_idle()), &url).await.unwrap_err();
    assert_idle_failure(&e, &url, "1s");
}

#[tokio::test]
async fn a_body_pausing_longer_than_the_idle_timeout_fails_at_it_naming_the_url() {
    let url = server(Behaviour::Trickle {
        every: Duration::from_secs(3),
    })
    .await;
    let e = package(&client(one_second_idle()), &url).await.unwrap_err();
    assert_idle_failure(&e, &url, "1s");
}

#[tokio::test]
async fn a_body_trickling_a_byte_a_second_forever_stops_at_the_attempt_and_total_limits() {
    // Each byte comes within the idle timeout, so only the deadlines can end this read.
    let url = server(Behaviour::Trickle {
        every: Duration::from_secs(1),
    })
    .await;
    let c = client(ClientOptions {
        read_idle_timeout: Duration::from_secs(5),
        timeout: Duration::from_secs(3),
        total_timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    });
    let e = package(&c, &url).await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("failed to fetch {url}/api/v1/metas?")),
        "{text}"
    );
    assert!(text.contains(": no complete answer within "), "{text}");
    match e {
        FetchError::Deadline { .. } => {}
        FetchError::Exhausted { last, .. } => {
            assert!(matches!(*last, FetchError::Deadline { .. }), "{last}")
        }
        other => panic!("expected a deadline: {other}"),
    }
}

#[tokio::test]
async fn a_slow_but_steady_server_within_the_idle_timeout_is_read_to_the_end() {
    // Five pieces, 300 ms apart: the whole answer takes longer than the idle timeout, no pause
    // does.
    let url = server(Behaviour::SlowButSteady {
        every: Duration::from_millis(300),
    })
    .await;
    let content = package(&client(one_second_idle()), &url).await.unwrap();
    assert_eq!(content.name(), "p");
    assert_eq!(content.package().map(|p| p.name.as_str()), Some("p"));
}

#[tokio::test]
async fn a_zero_idle_timeout_leaves_only_the_deadlines() {
    let url = server(Behaviour::HeadersThenStall).await;
    let c = client(ClientOptions {
        read_idle_timeout: Duration::ZERO,
        timeout: Duration::from_secs(1),
        attempts: 1,
        ..ClientOptions::default()
    });
    let e = package(&c, &url).await.unwrap_err();
    assert!(matches!(e, FetchError::Deadline { .. }), "{e}");
    assert!(
        e.to_string().ends_with("no complete answer within 1s"),
        "{e}"
    );
}
