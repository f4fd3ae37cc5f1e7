//! Certificate authorities from a directory that changes under a running process: a mounted
//! Secret or ConfigMap (`--catalogd-cas-dir`, `--pull-cas-dir`), which the kubelet rewrites in
//! place when cert-manager rotates a CA. Without a re-read, a rotated CA is trusted only after a
//! restart (upstream re-reads these directories too, with its certificate pool watcher).
//!
//! Input: a function reading the directory into one PEM bundle, the bundle in use. Output: each
//! new bundle, once, when the bytes read differ. Reads files only, every [`POLL`].

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How often the directory is read again (the kubelet itself updates mounted Secrets about once
/// a minute, so a rotation is picked up within about a minute and ten seconds).
pub const POLL: Duration = Duration::from_secs(10);

/// Reads with `read` every `poll` until `stop`, calling `on_change` with each bundle that differs
/// from the one before (`current` at first). A failed read (the directory being swapped, an
/// oversized file) is logged and the bundle in use is kept.
pub async fn watch<R, E, F>(
    what: &'static str,
    current: Vec<u8>,
    poll: Duration,
    stop: CancellationToken,
    read: R,
    mut on_change: F,
) where
    R: Fn() -> Result<Vec<u8>, E> + Send + Sync + Clone + 'static,
    E: std::fmt::Display + Send + 'static,
    F: FnMut(Vec<u8>) + Send,
{
    let mut current = current;
    let mut failing = false;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(poll) => {}
        }
        let read = read.clone();
        match tokio::task::spawn_blocking(read).await {
            Ok(Ok(bundle)) => {
                failing = false;
                if bundle != current {
                    tracing::info!(
                        what,
                        bytes = bundle.len(),
                        "certificate authorities changed; trusting the new ones"
                    );
                    current = bundle.clone();
                    on_change(bundle);
                }
            }
            Ok(Err(e)) => {
                if !failing {
                    tracing::warn!(what, error = %e, "cannot read the certificate authorities again; keeping those in use");
                }
                failing = true;
            }
            Err(e) => {
                tracing::warn!(what, error = %e, "reading the certificate authorities panicked")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn each_change_of_the_bytes_is_handed_on_once_and_failed_reads_keep_the_old() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ca.crt");
        std::fs::write(&file, b"one").unwrap();
        let seen = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
        let stop = CancellationToken::new();
        let read_file = file.clone();
        let task = tokio::spawn(watch(
            "test",
            b"one".to_vec(),
            Duration::from_millis(10),
            stop.clone(),
            move || std::fs::read(&read_file),
            {
                let seen = seen.clone();
                move |bundle| seen.lock().unwrap().push(bundle)
            },
        ));
        let wait_for = |n: usize| {
            let seen = seen.clone();
            async move {
                while seen.lock().unwrap().len() < n {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        };
        // Unchanged: nothing; then a change, then a failed read (kept), then the same bytes
        // again (no second call), then another change.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(seen.lock().unwrap().is_empty());
        std::fs::write(&file, b"two").unwrap();
        wait_for(1).await;
        std::fs::remove_file(&file).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        std::fs::write(&file, b"two").unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        std::fs::write(&file, b"three").unwrap();
        wait_for(2).await;
        stop.cancel();
        task.await.unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            vec![b"two".to_vec(), b"three".to_vec()]
        );
    }
}
