//! Pull-secret credentials: parses `.dockerconfigjson` (and legacy `.dockercfg`) documents and
//! picks the credentials for a registry. No network.
//!
//! Matching (most specific wins):
//!
//! | secret key                                   | matches images in                           |
//! |----------------------------------------------|---------------------------------------------|
//! | `host:port`                                  | that host and port only                     |
//! | `host`                                       | that host on its default port only          |
//! | `https://host/v1/`, `http://host` (URL form) | same as `host` (scheme and path `/v1/`, `/v2/` ignored) |
//! | `host/ns/repo` (path form)                   | repositories under `ns/repo` on `host`      |
//! | `docker.io`, `index.docker.io`, `registry-1.docker.io`, `https://index.docker.io/v1/` | Docker Hub |
//!
//! Host names compare case-insensitively. Entries without usable credentials (for example only an
//! `identitytoken`) are ignored, and the pull is anonymous.

use std::collections::BTreeMap;

use base64::Engine;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_ALIASES: [&str; 3] = [
    "index.docker.io",
    "registry-1.docker.io",
    "registry.hub.docker.com",
];

/// A pull secret's content that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Not JSON, or not the expected shape.
    #[error("failed to parse pull secret: {0}")]
    Parse(String),
    /// `auths[key].auth` is not base64 of `user:password`.
    #[error("failed to parse pull secret: auths[{key:?}].auth is {reason}")]
    BadAuthField {
        /// The registry key.
        key: String,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Username and password for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// Username.
    pub username: String,
    /// Password or token.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Credentials by registry, from one or more pull secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DockerConfig {
    /// (host, path prefix) → credentials.
    entries: BTreeMap<(String, String), Credentials>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

impl DockerConfig {
    /// Parses a `.dockerconfigjson` (`{"auths": {...}}`) or `.dockercfg` (`{...}`) document.
    pub fn from_json(bytes: &[u8]) -> Result<Self, AuthError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| AuthError::Parse(e.to_string()))?;
        let auths = match value.get("auths") {
            Some(auths) => auths.clone(),
            None => value,
        };
        let auths: BTreeMap<String, AuthEntry> =
            serde_json::from_value(auths).map_err(|e| AuthError::Parse(e.to_string()))?;
        let mut config = Self::default();
        for (key, entry) in auths {
            let credentials = match (&entry.username, &entry.password) {
                (Some(u), Some(p)) if !u.is_empty() => Some(Credentials {
                    username: u.clone(),
                    password: p.clone(),
                }),
                _ => match entry.auth.as_deref().filter(|a| !a.is_empty()) {
                    Some(auth) => Some(decode_auth(&key, auth)?),
                    None => None,
                },
            };
            if let Some(credentials) = credentials {
                config.entries.insert(normalize_key(&key), credentials);
            }
        }
        Ok(config)
    }

    /// Adds `username`/`password` for `registry` (a secret key, in any of the accepted forms).
    pub fn insert(&mut self, registry: &str, username: &str, password: &str) {
        self.entries.insert(
            normalize_key(registry),
            Credentials {
                username: username.to_string(),
                password: password.to_string(),
            },
        );
    }

    /// Adds every entry of `other`, replacing entries for the same key.
    pub fn merge(&mut self, other: DockerConfig) {
        self.entries.extend(other.entries);
    }

    /// True when no credentials are configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The credentials for `repository` on `registry` (host\[:port\] as written in the reference).
    pub fn credentials_for(&self, registry: &str, repository: &str) -> Option<&Credentials> {
        let host = canonical_host(registry);
        self.entries
            .iter()
            .filter(|((h, prefix), _)| *h == host && path_has_prefix(repository, prefix))
            .max_by_key(|((_, prefix), _)| prefix.len())
            .map(|(_, c)| c)
    }

    /// oci-client authentication for `repository` on `registry`: basic auth or anonymous.
    pub fn registry_auth(&self, registry: &str, repository: &str) -> RegistryAuth {
        match self.credentials_for(registry, repository) {
            Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
            None => RegistryAuth::Anonymous,
        }
    }
}

fn decode_auth(key: &str, auth: &str) -> Result<Credentials, AuthError> {
    let bad = |reason| AuthError::BadAuthField {
        key: key.to_string(),
        reason,
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .map_err(|_| bad("not valid base64"))?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad("not valid UTF-8 once decoded"))?;
    let (username, password) = decoded
        .split_once(':')
        .ok_or_else(|| bad("not of the form user:password"))?;
    Ok(Credentials {
        username: username.to_string(),
        password: password.to_string(),
    })
}

/// Turns a secret key (`https://host:port/path/`, `host/ns`, `host`) into (host, path prefix).
fn normalize_key(key: &str) -> (String, String) {
    let without_scheme = key
        .trim()
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let (host, path) = without_scheme
        .split_once('/')
        .unwrap_or((without_scheme, ""));
    let path = path.trim_matches('/');
    // Docker's legacy keys carry the API version as a path; it is not a repository prefix.
    let path = if matches!(path, "v1" | "v2") {
        ""
    } else {
        path
    };
    (canonical_host(host), path.to_string())
}

fn canonical_host(host: &str) -> String {
    let host = host.to_ascii_lowercase();
    if DOCKER_HUB_ALIASES.contains(&host.as_str()) {
        DOCKER_HUB.to_string()
    } else {
        host
    }
}

fn path_has_prefix(repository: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || repository == prefix
        || repository
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn auth_field_is_decoded_and_matched_by_host_and_port() {
        let json = format!(
            r#"{{"auths":{{"127.0.0.1:5000":{{"auth":"{}"}}}}}}"#,
            b64("alice:s3:cret")
        );
        let config = DockerConfig::from_json(json.as_bytes()).unwrap();
        let c = config
            .credentials_for("127.0.0.1:5000", "catalogs/x")
            .unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("alice", "s3:cret")
        );
        assert!(
            config
                .credentials_for("127.0.0.1:5001", "catalogs/x")
                .is_none()
        );
        assert!(config.credentials_for("127.0.0.1", "catalogs/x").is_none());
    }

    #[test]
    fn username_and_password_fields_win_over_auth() {
        let json = format!(
            r#"{{"auths":{{"quay.io":{{"username":"bob","password":"pw","auth":"{}"}}}}}}"#,
            b64("other:x")
        );
        let config = DockerConfig::from_json(json.as_bytes()).unwrap();
        assert_eq!(
            config.credentials_for("quay.io", "a/b").unwrap().username,
            "bob"
        );
    }

    #[test]
    fn docker_hub_aliases_and_url_keys_match_docker_io() {
        let json = format!(
            r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{}"}}}}}}"#,
            b64("u:p")
        );
        let config = DockerConfig::from_json(json.as_bytes()).unwrap();
        assert!(
            config
                .credentials_for("docker.io", "library/busybox")
                .is_some()
        );
        assert!(
            config
                .credentials_for("registry-1.docker.io", "library/busybox")
                .is_some()
        );
    }

    #[test]
    fn legacy_dockercfg_without_auths_wrapper_is_accepted() {
        let json = format!(r#"{{"Registry.Example.com":{{"auth":"{}"}}}}"#, b64("u:p"));
        let config = DockerConfig::from_json(json.as_bytes()).unwrap();
        assert!(
            config
                .credentials_for("registry.example.com", "x")
                .is_some()
        );
    }

    #[test]
    fn most_specific_path_key_wins() {
        let json = format!(
            r#"{{"auths":{{"quay.io":{{"auth":"{}"}},"quay.io/team":{{"auth":"{}"}}}}}}"#,
            b64("general:1"),
            b64("team:2")
        );
        let config = DockerConfig::from_json(json.as_bytes()).unwrap();
        assert_eq!(
            config
                .credentials_for("quay.io", "team/cat")
                .unwrap()
                .username,
            "team"
        );
        assert_eq!(
            config
                .credentials_for("quay.io", "teamx/cat")
                .unwrap()
                .username,
            "general"
        );
    }

    #[test]
    fn malformed_auth_field_is_a_clear_error() {
        let err = DockerConfig::from_json(br#"{"auths":{"quay.io":{"auth":"%%%"}}}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"failed to parse pull secret: auths["quay.io"].auth is not valid base64"#
        );
        let err = DockerConfig::from_json(
            format!(r#"{{"auths":{{"q":{{"auth":"{}"}}}}}}"#, b64("nocolon")).as_bytes(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("not of the form user:password"));
        assert!(DockerConfig::from_json(b"[1,2]").is_err());
    }

    #[test]
    fn entries_without_credentials_mean_anonymous() {
        let config =
            DockerConfig::from_json(br#"{"auths":{"quay.io":{"identitytoken":"t"}}}"#).unwrap();
        assert!(matches!(
            config.registry_auth("quay.io", "a"),
            RegistryAuth::Anonymous
        ));
    }

    #[test]
    fn debug_output_never_shows_passwords() {
        let mut config = DockerConfig::default();
        config.insert("quay.io", "u", "hunter2");
        assert!(!format!("{config:?}").contains("hunter2"));
    }
}
