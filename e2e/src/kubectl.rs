//! The kubectl `olm-dev-env` tells the user to run: which one PATH finds, its version, and the one
//! `hack/build-kubectl.sh` builds for the control plane's version.
//!
//! Input: `PATH`, the cache directory, and `kubectl version --client -o json` of the kubectl found.
//! Output: paths and versions. No network.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The kubectl a shell would run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnPath {
    /// No `kubectl` on PATH.
    Missing,
    /// One whose client version could not be read.
    Unreadable { path: PathBuf },
    /// One reporting this `gitVersion` (e.g. `v1.32.4`).
    Found { path: PathBuf, version: String },
}

/// The first executable `kubectl` on PATH, and its client version.
pub async fn find_on_path() -> OnPath {
    let Some(path) = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubectl"))
            .find(|p| is_executable(p))
    }) else {
        return OnPath::Missing;
    };
    let output = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::process::Command::new(&path)
            .args(["version", "--client", "-o", "json"])
            .kill_on_drop(true)
            .output(),
    )
    .await;
    let version = output
        .ok()
        .and_then(Result::ok)
        .and_then(|out| serde_json::from_slice::<serde_json::Value>(&out.stdout).ok())
        .and_then(|v| v["clientVersion"]["gitVersion"].as_str().map(str::to_owned));
    match version {
        Some(version) => OnPath::Found { path, version },
        None => OnPath::Unreadable { path },
    }
}

/// Where `hack/build-kubectl.sh` puts the kubectl of `version` (e.g. `v1.34.4`), built or not:
/// `<cache>/kubectl/<version>/bin/kubectl`.
pub fn built_path(version: &str) -> Option<PathBuf> {
    Some(
        crate::assets::cache_root()?
            .join("kubectl")
            .join(version)
            .join("bin/kubectl"),
    )
}

/// `(major, minor)` of a Kubernetes version such as `v1.32.4-dispatcher` or `1.34`.
pub fn minor_version(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}

/// An executable regular file.
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minor_versions_are_read_from_git_versions_with_suffixes() {
        assert_eq!(minor_version("v1.32.4-dispatcher"), Some((1, 32)));
        assert_eq!(minor_version("v1.34.4"), Some((1, 34)));
        assert_eq!(minor_version("1.30+"), Some((1, 30)));
        assert_eq!(minor_version("v1"), None);
        assert_eq!(minor_version("unknown"), None);
    }
}
