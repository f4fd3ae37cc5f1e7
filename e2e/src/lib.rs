//! Test environment: a real control plane and OCI registry on loopback, shared by a test run.
//!
//! - [`control_plane`]: etcd + kube-apiserver (+ controllers, scheduler, kwok) as child processes.
//! - [`test_env`]: [`TestEnv`] bundles everything a test needs; [`shared`] starts one per process.
//! - [`process`], [`workdir`], [`assets`], [`sockets`]: child supervision, scratch directories,
//!   binary discovery and listening-socket inspection.

pub mod assets;
pub mod control_plane;
pub mod dev_env;
pub mod images;
pub mod process;
pub mod registry;
pub mod sockets;
pub mod test_env;
pub mod workdir;

pub use control_plane::{ControlPlane, Tier};
pub use test_env::{TestEnv, shared};

/// Makes aws-lc-rs the process-wide rustls crypto provider, once.
///
/// kube builds its TLS configuration with rustls' process default. When the dependency graph
/// compiles more than one provider in, there is no default and kube panics; installing one here
/// makes every client this crate builds work either way.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first, which serves as well.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}
