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
//! - [`process`], [`workdir`], [`assets`], [`sockets`], [`ports`]: child supervision, scratch
//!   directories, binary discovery, listening-socket inspection and the loopback ports children
//!   are given.
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
pub mod ports;
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
/// A built example run outside cargo (`bench_upstream`) has neither when its baked-in directory
/// is gone: then the first directory from the current one upwards that holds `config/crd`.
pub fn repo_root() -> std::path::PathBuf {
    root_from(
        std::env::var_os("CARGO_MANIFEST_DIR"),
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        std::env::current_dir().ok(),
    )
}

/// [`repo_root`] from its inputs: cargo's variable, the baked-in crate directory, the current
/// directory.
fn root_from(
    manifest_dir: Option<std::ffi::OsString>,
    compiled: &std::path::Path,
    cwd: Option<std::path::PathBuf>,
) -> std::path::PathBuf {
    if let Some(dir) = manifest_dir {
        return std::path::PathBuf::from(dir).join("..");
    }
    let compiled = compiled.join("..");
    if compiled.join("config/crd").is_dir() {
        return compiled;
    }
    cwd.and_then(|cwd| {
        cwd.ancestors()
            .find(|dir| dir.join("config/crd").is_dir())
            .map(std::path::Path::to_path_buf)
    })
    .unwrap_or(compiled)
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

#[cfg(test)]
mod repo_root_tests {
    use super::root_from;

    #[test]
    fn a_gone_build_directory_falls_back_to_the_checkout_around_the_current_directory() {
        let checkout = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(checkout.path().join("config/crd")).unwrap();
        std::fs::create_dir_all(checkout.path().join("e2e/src")).unwrap();
        let gone = std::path::Path::new("/nonexistent-checkout/e2e");
        // cargo's variable wins; then the baked-in directory if it still holds config/crd.
        assert_eq!(
            root_from(Some("/x/e2e".into()), gone, None),
            std::path::PathBuf::from("/x/e2e/..")
        );
        assert_eq!(
            root_from(None, &checkout.path().join("e2e"), None),
            checkout.path().join("e2e/..")
        );
        // Gone: the checkout around the current directory.
        assert_eq!(
            root_from(None, gone, Some(checkout.path().join("e2e/src"))),
            checkout.path()
        );
        assert_eq!(root_from(None, gone, None), gone.join(".."));
    }
}
