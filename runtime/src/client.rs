//! The Kubernetes client both controllers use.
//!
//! Input: an optional kubeconfig path. Output: a [`kube::Client`]. Reads the kubeconfig (or the
//! in-cluster service-account files, or `$KUBECONFIG`); no request is made until the client is used.

use std::path::{Path, PathBuf};

use olm_api::regular_file::{FileError, read_regular_to_string};

/// The largest kubeconfig read (real ones are a few KiB; embedded certificates included).
pub const MAX_KUBECONFIG_BYTES: u64 = 4 << 20;

/// Why no client could be configured.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("failed to read kubeconfig: {0}")]
    Read(#[from] FileError),
    #[error("failed to parse kubeconfig {path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("failed to configure the Kubernetes client: {0}")]
    Config(String),
    #[error("failed to create the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
}

/// Makes aws-lc-rs the process-wide rustls crypto provider, once.
///
/// kube builds its TLS configuration with rustls' process default; when the dependency graph
/// compiles more than one provider in there is no default and kube panics. Installing one up front
/// makes every client and server of the process agree.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first, which serves as well.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}

/// A client from `kubeconfig` when given (read as a bounded regular file), else from the
/// in-cluster configuration or `$KUBECONFIG`, as client-go infers it.
pub async fn client(kubeconfig: Option<&Path>) -> Result<kube::Client, ClientError> {
    install_crypto_provider();
    let config = match kubeconfig {
        Some(path) => {
            let text = read_regular_to_string(path, MAX_KUBECONFIG_BYTES)?;
            let parsed = kube::config::Kubeconfig::from_yaml(&text).map_err(|source| {
                ClientError::Parse {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
            kube::Config::from_custom_kubeconfig(
                parsed,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .map_err(|e| ClientError::Config(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| ClientError::Config(e.to_string()))?,
    };
    kube::Client::try_from(config).map_err(ClientError::Client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_kubeconfig_that_is_a_device_is_refused_without_reading_it() {
        let Err(err) = client(Some(Path::new("/dev/zero"))).await else {
            panic!("/dev/zero is not a kubeconfig");
        };
        assert_eq!(
            err.to_string(),
            "failed to read kubeconfig: failed to read /dev/zero: not a regular file (a character device)"
        );
    }

    #[tokio::test]
    async fn a_kubeconfig_that_is_not_yaml_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config");
        std::fs::write(&path, "{ not: [yaml").expect("write");
        let Err(err) = client(Some(&path)).await else {
            panic!("not YAML");
        };
        assert!(
            err.to_string()
                .starts_with(&format!("failed to parse kubeconfig {}: ", path.display())),
            "{err}"
        );
    }
}
