//! What an image puller is built from and may change while a controller runs: the global pull
//! secret's credentials ([`crate::pull_secret`]) and the CA directory `--pull-cas-dir`
//! ([`crate::ca_dir`]). Both binaries rebuild their puller the same way on either change.
//!
//! Input: the settings in use, the secret and directory to follow. Output: a new [`Puller`] for
//! each change, handed to `set`. Network: one watch on the Secret; reads the directory.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use olm_image::{Puller, PullerConfig};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::pull_secret::SecretRef;

/// Starts following `secret` and `cas_dir` (each when given) until `stop`; every change rebuilds
/// the puller from `config` with that change applied (the other one kept) and passes it to `set`.
/// `max_ca_file_bytes` bounds each CA file read.
pub fn follow(
    client: kube::Client,
    secret: Option<SecretRef>,
    cas_dir: Option<PathBuf>,
    max_ca_file_bytes: u64,
    config: PullerConfig,
    stop: CancellationToken,
    set: impl Fn(Puller) + Send + Sync + 'static,
) -> Vec<JoinHandle<()>> {
    let current_cas = config.extra_ca_pem.clone().unwrap_or_default();
    let settings = Arc::new(Mutex::new(config));
    let set = Arc::new(set);
    let rebuild = move |change: &dyn Fn(&mut PullerConfig)| {
        let mut config = settings.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut config);
        match Puller::new(config.clone()) {
            Ok(puller) => set(puller),
            Err(e) => tracing::warn!(error = %e, "failed to rebuild the image puller"),
        }
    };
    let mut tasks = Vec::new();
    if let Some(secret) = secret {
        let rebuild = rebuild.clone();
        tasks.push(tokio::spawn(crate::pull_secret::watch(
            client,
            secret,
            stop.clone(),
            move |auth| rebuild(&|config| config.auth = auth.clone()),
        )));
    }
    if let Some(dir) = cas_dir {
        tasks.push(tokio::spawn(crate::ca_dir::watch(
            "--pull-cas-dir",
            current_cas,
            crate::ca_dir::POLL,
            stop,
            move || olm_api::regular_file::read_pem_dir(&dir, max_ca_file_bytes),
            move |pem| rebuild(&|config| config.extra_ca_pem = Some(pem.clone())),
        )));
    }
    tasks
}
