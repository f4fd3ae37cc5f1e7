//! Locating the prebuilt binaries the test environment runs.
//!
//! Input: environment variables. Output: paths of executables, or an error that says how to get
//! them. No network.
//!
//! | variable            | holds                                                              |
//! |---------------------|--------------------------------------------------------------------|
//! | `OLM_TEST_ASSETS`   | etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok |
//! | `KUBEBUILDER_ASSETS`| fallback for the above (envtest's convention)                      |
//! | `OLM_REGISTRY_BIN`  | Debian's `docker-registry`                                         |
//! | `OLM_BIN_DIR`       | the product binaries (`catalogd`, `operator-controller`)           |
//!
//! `make test` and `make run` set all of them (see `hack/ensure-tools.sh`). A missing binary is an
//! error, never a reason to skip a test.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// Environment variable naming the control-plane binary directory.
pub const ASSETS_ENV: &str = "OLM_TEST_ASSETS";
/// Fallback environment variable for the control-plane binary directory.
pub const KUBEBUILDER_ASSETS_ENV: &str = "KUBEBUILDER_ASSETS";
/// Environment variable naming the product binary directory.
pub const BIN_DIR_ENV: &str = "OLM_BIN_DIR";

const HOW_TO_FIX: &str = "run the tests through `make test` (or `make e2e`), which builds the \
     control plane once into the cache with hack/build-control-plane.sh and exports the variable; \
     by hand: `hack/ensure-tools.sh /tmp/tools.env && source /tmp/tools.env`";

/// The cache directory the `hack/` scripts build into: `$OLM_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/olm-rs`, else `~/.cache/olm-rs`.
pub fn cache_root() -> Option<PathBuf> {
    let set = |var| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    set("OLM_CACHE_DIR")
        .or_else(|| set("XDG_CACHE_HOME").map(|x| x.join("olm-rs")))
        .or_else(|| set("HOME").map(|h| h.join(".cache/olm-rs")))
}

/// A binary could not be found.
#[derive(Debug, thiserror::Error)]
pub enum AssetsError {
    #[error(
        "failed to find the control-plane binaries: neither {ASSETS_ENV} nor {KUBEBUILDER_ASSETS_ENV} is set; {HOW_TO_FIX}"
    )]
    NotConfigured,
    #[error(
        "failed to find {binary}: {path} is missing or not executable (from ${var}); {HOW_TO_FIX}"
    )]
    Missing {
        binary: String,
        path: PathBuf,
        var: &'static str,
    },
    #[error(
        "failed to find the product binaries: {BIN_DIR_ENV} is not set; run `make test` or set it to cargo's target/debug directory after `cargo build --workspace --bins`"
    )]
    BinDirNotConfigured,
}

/// A directory of executables named by an environment variable.
#[derive(Clone, Debug)]
pub struct Assets {
    dir: PathBuf,
    var: &'static str,
}

impl Assets {
    /// The control-plane binaries: `$OLM_TEST_ASSETS`, else `$KUBEBUILDER_ASSETS`.
    pub fn control_plane() -> Result<Assets, AssetsError> {
        for var in [ASSETS_ENV, KUBEBUILDER_ASSETS_ENV] {
            if let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                return Ok(Assets {
                    dir: dir.into(),
                    var,
                });
            }
        }
        Err(AssetsError::NotConfigured)
    }

    /// The product binaries: `$OLM_BIN_DIR`.
    pub fn products() -> Result<Assets, AssetsError> {
        std::env::var_os(BIN_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(|dir| Assets {
                dir: dir.into(),
                var: BIN_DIR_ENV,
            })
            .ok_or(AssetsError::BinDirNotConfigured)
    }

    /// Binaries in an explicit directory.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Assets {
        Assets {
            dir: dir.into(),
            var: ASSETS_ENV,
        }
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The path of executable `name` in this directory.
    pub fn binary(&self, name: &str) -> Result<PathBuf, AssetsError> {
        let path = self.dir.join(name);
        let executable = std::fs::metadata(&path)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false);
        if executable {
            Ok(path)
        } else {
            Err(AssetsError::Missing {
                binary: name.to_owned(),
                path,
                var: self.var,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_binary_error_names_the_file_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let err = Assets::in_dir(dir.path()).binary("etcd").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("etcd"), "{msg}");
        assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
        assert!(msg.contains("make test"), "{msg}");
    }

    #[test]
    fn non_executable_file_is_not_a_binary() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("etcd"), "").unwrap();
        assert!(Assets::in_dir(dir.path()).binary("etcd").is_err());
        std::fs::set_permissions(
            dir.path().join("etcd"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert!(Assets::in_dir(dir.path()).binary("etcd").is_ok());
    }
}
