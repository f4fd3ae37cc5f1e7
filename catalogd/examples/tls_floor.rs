//! The least a TLS server on our stack spends per byte served: one body held in memory, sent
//! through the same listener catalogd serves with (`olm_runtime::server`: rustls, the same
//! cipher suites and AES-GCM code, hyper, axum), with no file read and no catalog logic.
//!
//! Input: a file (read once, at start, into one buffer) and a listen address on loopback.
//! Output: every GET or HEAD of any path answers the file's bytes, `Content-Type:
//! application/jsonl`, as `/api/v1/all` is answered. Network: the listener only.
//!
//! Why: issue 27's P2 row asks for half of upstream's CPU per GB of `/all`. What encryption,
//! HTTP framing and TCP over loopback cost without any reading is the floor under any server
//! built on this stack; `hack/bench-catalogd-rss.sh` with `FLOOR=` measures it beside
//! `catalogd serve` (docs/performance/issue-27.md, sixteenth step).
//!
//! Usage: `tls_floor BODY_FILE LISTEN_ADDR [CERT_PEM KEY_PEM]` (plain HTTP without the pair).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use axum::Router;
use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use bytes::Bytes;
use olm_runtime::server::{ServeOptions, TlsFiles, bind};

fn main() {
    // As catalogd does first: the same allocator settings.
    olm_runtime::allocator::tune();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (body, listen, tls) = match args.as_slice() {
        [body, listen] => (body, listen, None),
        [body, listen, cert, key] => (
            body,
            listen,
            Some(TlsFiles {
                cert: PathBuf::from(cert),
                key: PathBuf::from(key),
            }),
        ),
        _ => {
            eprintln!("usage: tls_floor BODY_FILE LISTEN_ADDR [CERT_PEM KEY_PEM]");
            std::process::exit(2);
        }
    };
    let bytes = Bytes::from(std::fs::read(body).unwrap());
    let addr = listen.parse().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let bound = bind(addr).unwrap();
        let len = bytes.len();
        let app = Router::new().fallback(move || {
            let bytes = bytes.clone();
            async move {
                Response::builder()
                    .header(CONTENT_TYPE, "application/jsonl")
                    .body(Body::from(bytes))
                    .unwrap()
            }
        });
        eprintln!("serving {len} bytes from memory at {}", bound.addr);
        let options = ServeOptions {
            tls,
            ..ServeOptions::default()
        };
        let shutdown = olm_runtime::shutdown::on_signal();
        bound
            .serve_with(app, options, shutdown.cancelled_owned())
            .await
            .unwrap();
    });
}
