//! The Kubernetes client both controllers use.
//!
//! Input: an optional kubeconfig path. Output: a [`kube::Client`]. Reads the kubeconfig (or the
//! in-cluster service-account files, or `$KUBECONFIG`); no request is made until the client is used.
//!
//! Every write names who made it. The name is the executable's file name ([`field_manager`]:
//! `catalogd`, `operator-controller`), the rule client-go uses for its user agent and the API
//! server for the field manager of writes that name none:
//!
//! | write | field manager in `managedFields` |
//! |---|---|
//! | this crate's (Lease, finalizer patch, status patch) | [`field_manager`], set on the request |
//! | a binary's own, with an explicit manager (server-side apply, release Secrets) | that manager |
//! | any other request of a client made here | the prefix of the `User-Agent` this client sends, `<field_manager>/<version>` |
//!
//! Without a `User-Agent` (kube's default) the API server records the manager `unknown`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use olm_api::regular_file::{FileError, read_regular_to_string};

/// The largest kubeconfig read (real ones are a few KiB; embedded certificates included).
pub const MAX_KUBECONFIG_BYTES: u64 = 4 << 20;

/// The longest field manager the API server accepts.
const MAX_FIELD_MANAGER_CHARS: usize = 128;

/// The name this process's writes are recorded under: the file name of the executable it was
/// started as (`argv[0]`), as client-go derives its user agent. See the module table.
pub fn field_manager() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| field_manager_from(std::env::args_os().next().as_deref()))
}

/// [`field_manager`] of a process started as `argv0`: its file name, with anything but visible
/// ASCII replaced by `_` (the name goes into a header and the API server refuses unprintable
/// managers), at most 128 characters; `olm` when there is no name. Pure.
pub fn field_manager_from(argv0: Option<&OsStr>) -> String {
    let file_name = argv0
        .map(Path::new)
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = file_name
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .take(MAX_FIELD_MANAGER_CHARS)
        .collect();
    if name.is_empty() {
        "olm".to_owned()
    } else {
        name
    }
}

/// PATCH parameters naming [`field_manager`] (not for server-side apply, which names its own).
pub fn patch_params() -> kube::api::PatchParams {
    kube::api::PatchParams {
        field_manager: Some(field_manager().to_owned()),
        ..kube::api::PatchParams::default()
    }
}

/// Create and replace parameters naming [`field_manager`].
pub fn post_params() -> kube::api::PostParams {
    kube::api::PostParams {
        field_manager: Some(field_manager().to_owned()),
        ..kube::api::PostParams::default()
    }
}

/// The `User-Agent` of Kubernetes clients made here: `<field_manager>/<version>`.
pub fn user_agent() -> String {
    format!("{}/{}", field_manager(), env!("CARGO_PKG_VERSION"))
}

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
    kube::Client::try_from(with_user_agent(config)?).map_err(ClientError::Client)
}

/// `config` sending [`user_agent`] with every request (replacing any `User-Agent` it had).
pub fn with_user_agent(mut config: kube::Config) -> Result<kube::Config, ClientError> {
    let value = http::HeaderValue::from_str(&user_agent())
        .map_err(|e| ClientError::Config(format!("invalid user agent: {e}")))?;
    config
        .headers
        .retain(|(name, _)| name != http::header::USER_AGENT);
    config.headers.push((http::header::USER_AGENT, value));
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_manager_is_the_executables_file_name() {
        let name = |s: &str| field_manager_from(Some(OsStr::new(s)));
        assert_eq!(
            name("/usr/local/bin/operator-controller"),
            "operator-controller"
        );
        assert_eq!(name("catalogd"), "catalogd");
        assert_eq!(name("./target/debug/catalogd"), "catalogd");
        assert_eq!(name("bin/with space\u{e9}"), "with_space_");
        assert_eq!(name(&"x".repeat(300)).len(), 128);
        assert_eq!(name(""), "olm");
        assert_eq!(name("/"), "olm");
        assert_eq!(field_manager_from(None), "olm");
    }

    #[test]
    fn clients_send_the_field_manager_as_user_agent() {
        let config = kube::Config::new("https://127.0.0.1:1".parse().expect("a URL"));
        let config = with_user_agent(with_user_agent(config).expect("valid")).expect("valid");
        let agents: Vec<_> = config
            .headers
            .iter()
            .filter(|(n, _)| n == http::header::USER_AGENT)
            .map(|(_, v)| v.to_str().expect("ASCII").to_owned())
            .collect();
        assert_eq!(
            agents,
            vec![format!("{}/{}", field_manager(), env!("CARGO_PKG_VERSION"))]
        );
        assert!(agents[0].starts_with(field_manager()));
    }

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
