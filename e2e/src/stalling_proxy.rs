//! A TCP proxy on 127.0.0.1 that forwards to a server until told to stall, for tests of what a
//! client does when that server stops answering mid-way (catalogd behind `status.urls.base`).
//!
//! Input: the address to forward to. Output: a listening address and the switch between the two
//! behaviours. Network: 127.0.0.1 only.
//!
//! | mode | a new connection | a connection being forwarded |
//! |---|---|---|
//! | forward | forwarded to the target, both ways | stays |
//! | stall | its request is read, the headers of a `200` with a 4096-byte body are sent, then nothing (until forwarding resumes, at most [`HOLD`]) | closed at the switch, so a pooled client connection cannot bypass the stall |
//!
//! Every task stops by itself: a stalled connection is held at most [`HOLD`], and the proxy's
//! accept loop ends when the [`StallingProxy`] is dropped.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The longest a stalled connection is held open.
pub const HOLD: Duration = Duration::from_secs(120);

/// The largest request head read from a stalled connection.
const MAX_REQUEST_HEAD: usize = 64 << 10;

/// A running proxy (see the module table). Dropping it stops accepting connections.
pub struct StallingProxy {
    addr: SocketAddr,
    stalled: watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl StallingProxy {
    /// Starts forwarding to `target`.
    pub async fn start(target: SocketAddr) -> StallingProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a listener on 127.0.0.1");
        let addr = listener.local_addr().expect("a local address");
        let (stalled, _) = watch::channel(false);
        let modes = stalled.clone();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                tokio::spawn(connection(inbound, target, modes.subscribe()));
            }
        });
        StallingProxy {
            addr,
            stalled,
            accept,
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on, new connections stall after the response headers and forwarded ones are closed.
    pub fn stall(&self) {
        self.stalled.send_replace(true);
    }

    /// From now on, new connections are forwarded again (stalled ones are released).
    pub fn forward(&self) {
        self.stalled.send_replace(false);
    }
}

impl Drop for StallingProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn connection(
    mut inbound: TcpStream,
    target: SocketAddr,
    mut stalled: watch::Receiver<bool>,
) {
    if *stalled.borrow_and_update() {
        let _ = tokio::time::timeout(HOLD, stall(inbound, stalled)).await;
        return;
    }
    let Ok(mut outbound) = TcpStream::connect(target).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
        _ = stalled.wait_for(|s| *s) => {}
    }
}

/// Reads the request head, sends response headers, then waits for forwarding to resume.
async fn stall(mut inbound: TcpStream, mut stalled: watch::Receiver<bool>) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST_HEAD {
        let n = inbound.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    inbound
        .write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: 4096\r\n\r\n",
        )
        .await?;
    let _ = stalled.wait_for(|s| !*s).await;
    Ok(())
}
