//! The catalogd client against hostile servers on 127.0.0.1 (issue 14): an endless body, a gzip
//! bomb, a server that never answers, one that trickles, one that announces a huge body. Each
//! used to cost unbounded memory or time; each now stops at its limit with an error naming the
//! URL and the limit. Limits are set small here so the tests are quick; the defaults are in
//! docs/SECURITY.md.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use operator_controller::catalog_source::http::{
    CatalogEndpoint, CatalogdClient, ClientOptions, FetchError,
};
use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Copy)]
enum Behaviour {
    /// A chunked body that never ends.
    EndlessBody,
    /// 16 MiB of zeros, gzip-compressed (about 16 KiB on the wire).
    GzipBomb,
    /// Reads the request and never answers.
    Silent,
    /// Announces 1 MB and sends a byte every 50 ms.
    Trickle,
    /// Announces a terabyte, then closes.
    HugeLength,
    /// Answers 503 Service Unavailable.
    Unavailable,
}

/// Serves `behaviour` to every connection; returns the catalog URL and a connection counter.
async fn hostile(behaviour: Behaviour) -> (Url, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    let bomb = Arc::new(gzip_zeros(16 << 20));
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            let bomb = bomb.clone();
            tokio::spawn(async move {
                let _ = answer(stream, behaviour, &bomb).await;
            });
        }
    });
    let url = Url::parse(&format!("http://{addr}/catalogs/hostile")).unwrap();
    (url, connections)
}

fn gzip_zeros(n: usize) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let block = vec![0u8; 1 << 20];
    for _ in 0..n / block.len() {
        gz.write_all(&block).unwrap();
    }
    gz.finish().unwrap()
}

async fn answer(mut stream: TcpStream, behaviour: Behaviour, bomb: &[u8]) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        request.extend_from_slice(&buf[..n]);
    }
    match behaviour {
        Behaviour::EndlessBody => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await?;
            let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
            loop {
                stream.write_all(chunk.as_bytes()).await?;
            }
        }
        Behaviour::GzipBomb => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                bomb.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(bomb).await?;
            std::future::pending::<()>().await;
        }
        Behaviour::Silent => std::future::pending::<()>().await,
        Behaviour::Trickle => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
                .await?;
            loop {
                stream.write_all(b"x").await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Behaviour::HugeLength => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n")
                .await?;
        }
        Behaviour::Unavailable => {
            stream
                .write_all(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await?;
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

async fn fetch(client: &CatalogdClient, url: &Url) -> FetchError {
    let endpoint = CatalogEndpoint {
        name: "hostile".into(),
        base_url: url.clone(),
        revision: None,
    };
    // A watchdog, not a speed assertion: a regression to "never ends" must fail the test.
    tokio::time::timeout(Duration::from_secs(300), client.package(&endpoint, "p"))
        .await
        .expect("the client did not give up")
        .unwrap_err()
}

#[tokio::test]
async fn an_endless_body_stops_at_the_body_cap() {
    let (url, _) = hostile(Behaviour::EndlessBody).await;
    let c = client(ClientOptions {
        max_body_bytes: 1 << 20,
        ..ClientOptions::default()
    });
    let e = fetch(&c, &url).await;
    assert!(
        matches!(
            e,
            FetchError::TooLarge {
                limit: 1_048_576,
                ..
            }
        ),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("failed to fetch {url}/api/v1/metas?")),
        "{text}"
    );
    assert!(
        text.ends_with("the answer is larger than the limit of 1048576 bytes"),
        "{text}"
    );
}

#[tokio::test]
async fn a_gzip_bomb_stops_at_the_decompressed_cap() {
    let (url, _) = hostile(Behaviour::GzipBomb).await;
    let c = client(ClientOptions {
        max_decoded_bytes: 1 << 20,
        ..ClientOptions::default()
    });
    let e = fetch(&c, &url).await;
    assert!(
        matches!(
            e,
            FetchError::DecodedTooLarge {
                limit: 1_048_576,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .ends_with("the decompressed answer is larger than the limit of 1048576 bytes"),
        "{e}"
    );
}

#[tokio::test]
async fn a_silent_server_fails_at_the_idle_timeout_without_further_attempts() {
    let (url, connections) = hostile(Behaviour::Silent).await;
    let c = client(ClientOptions {
        read_idle_timeout: Duration::from_millis(200),
        total_timeout: Duration::from_secs(2),
        attempts: 1_000,
        ..ClientOptions::default()
    });
    let e = fetch(&c, &url).await;
    assert!(matches!(e, FetchError::Idle { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.ends_with(": no data for 0.2s (read idle timeout)"),
        "{text}"
    );
    // The two requests of one package, each tried once: a stalled server is not asked again
    // within the call (the caller's next reconcile is).
    let tried = connections.load(Ordering::SeqCst);
    assert!((1..=2).contains(&tried), "{tried} connections");
}

#[tokio::test]
async fn an_unavailable_server_is_retried_until_the_total_budget() {
    let (url, connections) = hostile(Behaviour::Unavailable).await;
    let c = client(ClientOptions {
        total_timeout: Duration::from_secs(2),
        attempts: 1_000,
        ..ClientOptions::default()
    });
    let e = fetch(&c, &url).await;
    assert!(matches!(e, FetchError::Exhausted { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(": unexpected status 503 Service Unavailable (retries stopped after "),
        "{text}"
    );
    assert!(text.ends_with(" attempts at the 2s limit)"), "{text}");
    // 1,000 attempts were allowed; the two-second budget (with doubling backoff) allows a few.
    let tried = connections.load(Ordering::SeqCst);
    assert!((2..100).contains(&tried), "{tried} connections");
}

#[tokio::test]
async fn a_trickling_body_is_cut_at_the_attempt_deadline() {
    let (url, _) = hostile(Behaviour::Trickle).await;
    let c = client(ClientOptions {
        read_idle_timeout: Duration::from_secs(5),
        timeout: Duration::from_millis(500),
        attempts: 1,
        ..ClientOptions::default()
    });
    let e = fetch(&c, &url).await;
    assert!(matches!(e, FetchError::Deadline { .. }), "{e}");
    assert!(
        e.to_string().ends_with("no complete answer within 0.5s"),
        "{e}"
    );
}

#[tokio::test]
async fn an_announced_huge_body_is_refused_before_reading_it() {
    let (url, connections) = hostile(Behaviour::HugeLength).await;
    let c = client(ClientOptions::default());
    let e = fetch(&c, &url).await;
    assert!(
        e.to_string().ends_with(&format!(
            "the answer is larger than the limit of {} bytes",
            operator_controller::catalog_source::http::DEFAULT_MAX_BODY_BYTES
        )),
        "{e}"
    );
    // Not retried: a size error does not heal by itself.
    assert!(connections.load(Ordering::SeqCst) <= 2);
}
