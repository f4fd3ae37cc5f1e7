//! Test environment: a real control plane and OCI registry on loopback, shared by a test run.
//!
//! - [`control_plane`]: etcd + kube-apiserver (+ controllers, scheduler, kwok) as child processes.
//! - [`test_env`]: [`TestEnv`] bundles everything a test needs; [`shared`] starts one per process.
//! - [`catalogd`]: catalogd as a process or inside the test process, and the "serving catalog"
//!   set-up; [`images`]: fixture images and the push-then-pull set-up; [`eventually`]: waiting.
//! - [`scenario`]: the ClusterExtension scenarios' vocabulary (publish a catalog from a table,
//!   apply an extension, wait for a condition and its message, release records, snapshots).
//! - [`release`]: the product images and the install manifest (`make images`,
//!   `make release-manifest`).
//! - [`process`], [`workdir`], [`assets`], [`sockets`]: child supervision, scratch directories,
//!   binary discovery and listening-socket inspection.
//! - [`dev_env`] (`olm-dev-env run`, `make run`) and [`kubectl`]: the environment for trying OLM by
//!   hand, which watches its components.
//! - [`bench`]: shared pieces of the benchmarks in `e2e/examples/`.
//! - [`skip`]: skipping part of a test on a partial machine, a failure under `make test`.
//! - [`real_node`]: the `real` tier, one real Node (containerd, kubelet, kube-proxy, CoreDNS) and
//!   its control plane in a network namespace of their own, so the product images run as Pods.
//! - [`stalling_proxy`]: a TCP proxy that forwards until told to stall after response headers.

pub mod assets;
pub mod bench;
pub mod catalogd;
pub mod control_plane;
pub mod dev_env;
pub mod eventually;
pub mod images;
pub mod kubectl;
pub mod metrics;
pub mod operator_controller;
pub mod pod_sandbox;
pub mod process;
pub mod real_node;
pub mod registry;
pub mod release;
pub mod scenario;
pub mod skip;
pub mod sockets;
pub mod stalling_proxy;
pub mod test_env;
pub mod upstream_manifest;
pub mod workdir;

pub use control_plane::{ControlPlane, Tier};
pub use test_env::{TestEnv, shared};

/// The repository root (the directory holding `config/` and the crates).
///
/// Prefers `CARGO_MANIFEST_DIR` from the environment, which cargo sets for `cargo run`, `cargo
/// test` and `cargo bench`, over the compile-time value: a cache-shared target directory may hold a
/// build compiled from a checkout at another path, whose baked-in directory no longer exists.
/// Every crate sits one level below the root, so any crate's directory gives the same answer.
pub fn repo_root() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("..")
}

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
