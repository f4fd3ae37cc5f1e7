//! Graceful shutdown: one [`CancellationToken`] per process, cancelled on SIGINT or SIGTERM and
//! passed down to every server, controller and background task, which stop when it is cancelled.
//!
//! Input: the process's signals. Output: the token. No other IO.

pub use tokio_util::sync::CancellationToken;

/// Resolves on SIGINT or SIGTERM.
pub async fn signal() {
    let interrupt = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = interrupt => {}
                _ = term.recv() => {}
            }
        }
        // No SIGTERM handler (never on Linux in practice): Ctrl-C still stops the process.
        Err(_) => {
            let _ = interrupt.await;
        }
    }
}

/// A token cancelled by the first SIGINT or SIGTERM. Call inside a tokio runtime.
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        signal().await;
        tracing::info!("shutdown signal received");
        cancel.cancel();
    });
    token
}
