//! Debian's docker-registry on a free loopback port with a throwaway configuration.
//!
//! Input: the binary named by `OLM_REGISTRY_BIN` (written by `hack/ensure-tools.sh`; `make test`
//! exports it). Output: a running registry at `127.0.0.1:<port>` with filesystem storage in a
//! temporary directory, optionally with htpasswd authentication and/or TLS from a throwaway CA.
//! Starts a child process and talks to it over loopback only.
//!
//! The child is a [`Supervised`] process: it cannot outlive the test process, is killed on drop,
//! and keeps running when the test that started it ends (see [`crate::process`]).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use olm_image::DockerConfig;
use olm_image::pull::PullerConfig;
use olm_image::push::PusherConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::process::{Spec, Supervised};

/// Prefix of a registry's scratch directory, followed by the pid of the process that made it.
const DIR_PREFIX: &str = "olm-registry-";

/// Removes the scratch directories in `base` whose creating process is gone. The shared test
/// environment lives in a `static`, which is never dropped, so its registry's directory (with
/// every image pushed) outlives each test process; the next registry started cleans them up.
/// Directories without a pid in their name (older builds) count as gone.
fn remove_directories_of_dead_processes(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(DIR_PREFIX) else {
            continue;
        };
        let owner = rest
            .split_once('-')
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        let alive = owner.is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Environment variable naming the docker-registry binary.
pub const REGISTRY_BIN_ENV: &str = "OLM_REGISTRY_BIN";
/// How long a starting registry may take to answer before start fails.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Starting or restarting the registry failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No binary.
    #[error(
        "docker-registry binary not found: set {REGISTRY_BIN_ENV} (run `make tools` or \
         `hack/ensure-tools.sh ENV_FILE` and source ENV_FILE; `make test` does this){detail}"
    )]
    BinaryMissing {
        /// Where it was looked for.
        detail: String,
    },
    /// Files for the registry could not be written.
    #[error("failed to prepare the registry's {what}: {source}")]
    Setup {
        /// What was being prepared.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// Certificates could not be generated.
    #[error("failed to generate registry TLS material: {0}")]
    Tls(String),
    /// Password hashing failed.
    #[error("failed to hash the htpasswd password: {0}")]
    Htpasswd(String),
    /// The process exited or never answered.
    #[error("docker-registry did not start on {addr}: {reason}\n--- registry log ---\n{log}")]
    NotReady {
        /// The address it was given.
        addr: String,
        /// What happened.
        reason: String,
        /// The tail of its log.
        log: String,
    },
}

/// Variants of the test registry.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Require HTTP basic auth with this username and password (htpasswd, bcrypt).
    pub htpasswd: Option<(String, String)>,
    /// Serve HTTPS with a certificate for 127.0.0.1 from a fresh CA ([`Registry::ca_pem`]).
    pub tls: bool,
}

/// One line of the registry's access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessLogEntry {
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Response status.
    pub status: u16,
}

impl AccessLogEntry {
    /// A blob download (`GET /v2/<repo>/blobs/<digest>`).
    pub fn is_blob_get(&self) -> bool {
        self.method == "GET" && self.path.contains("/blobs/sha256:")
    }
}

/// A running (or stopped, restartable) registry.
#[derive(Debug)]
pub struct Registry {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    options: RegistryOptions,
    ca_pem: Option<String>,
    process: Option<Supervised>,
    /// Where `registry.log` goes (its own directory when `None`).
    log_dir: Option<PathBuf>,
}

impl Registry {
    /// The registry process's PID while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(Supervised::pid)
    }

    /// An anonymous plain-HTTP registry.
    pub async fn start() -> Result<Registry, RegistryError> {
        Self::start_with(RegistryOptions::default()).await
    }

    /// A registry with the given options.
    pub async fn start_with(options: RegistryOptions) -> Result<Registry, RegistryError> {
        Self::start_logging_in(options, None).await
    }

    /// A registry with the given options whose log is `LOG_DIR/registry.log` (beside the logs of
    /// other components) instead of a file in its own directory.
    pub async fn start_logging_in(
        options: RegistryOptions,
        log_dir: Option<&Path>,
    ) -> Result<Registry, RegistryError> {
        let bin = registry_binary()?;
        remove_directories_of_dead_processes(&std::env::temp_dir());
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
            .tempdir()
            .map_err(|source| RegistryError::Setup {
                what: "directory",
                source,
            })?;
        let mut registry = Registry {
            bin,
            dir,
            port: 0,
            options,
            ca_pem: None,
            process: None,
            log_dir: log_dir.map(Path::to_path_buf),
        };
        registry.write_auth_and_tls()?;
        // A port picked by binding :0 can be taken by someone else before the registry binds it.
        let mut last_error = None;
        for _ in 0..3 {
            registry.port = free_port().map_err(|source| RegistryError::Setup {
                what: "port",
                source,
            })?;
            registry.write_config()?;
            match registry.spawn_and_wait().await {
                Ok(()) => return Ok(registry),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| RegistryError::NotReady {
            addr: registry.host(),
            reason: "no attempt made".into(),
            log: String::new(),
        }))
    }

    /// `127.0.0.1:<port>`, the registry part of image references.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `host/name`, e.g. `image("catalogs/test:v1")`.
    pub fn image(&self, name: &str) -> String {
        format!("{}/{}", self.host(), name)
    }

    /// The registry's filesystem storage root.
    pub fn storage_dir(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// Where the registry keeps a blob's bytes (to corrupt it in tests).
    pub fn blob_data_path(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.storage_dir()
            .join("docker/registry/v2/blobs/sha256")
            .join(hex.get(..2).unwrap_or(hex))
            .join(hex)
            .join("data")
    }

    /// The CA certificate (PEM) that signed the serving certificate, for TLS registries.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The htpasswd username and password, for registries with auth.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.options
            .htpasswd
            .as_ref()
            .map(|(u, p)| (u.as_str(), p.as_str()))
    }

    /// A pull secret for this registry (empty without auth).
    pub fn docker_config(&self) -> DockerConfig {
        let mut config = DockerConfig::default();
        if let Some((user, password)) = self.credentials() {
            config.insert(&self.host(), user, password);
        }
        config
    }

    /// Pusher settings that reach this registry (plain HTTP or its CA, its credentials).
    pub fn pusher_config(&self) -> PusherConfig {
        PusherConfig {
            insecure_registries: if self.options.tls {
                Vec::new()
            } else {
                vec![self.host()]
            },
            auth: Some(self.docker_config()),
            extra_ca_pem: self.ca_pem.clone().map(String::into_bytes),
        }
    }

    /// Puller settings that reach this registry, caching in `cache_dir`.
    pub fn puller_config(&self, cache_dir: &Path) -> PullerConfig {
        let mut config = PullerConfig::new(cache_dir);
        let pusher = self.pusher_config();
        config.insecure_registries = pusher.insecure_registries;
        config.auth = pusher.auth;
        config.extra_ca_pem = pusher.extra_ca_pem;
        config
    }

    /// Requests served so far (all runs of this registry), parsed from its access log.
    pub fn access_log(&self) -> Vec<AccessLogEntry> {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        log.lines().filter_map(parse_access_line).collect()
    }

    /// Stops serving (connections are refused) but keeps storage and port for [`Registry::restart`].
    pub async fn shut_down(&mut self) {
        if let Some(mut process) = self.process.take() {
            // SIGKILL: an outage test wants the registry gone at once; reaping is immediate.
            process.stop(Duration::ZERO);
        }
    }

    /// Starts again on the same port with the same storage.
    pub async fn restart(&mut self) -> Result<(), RegistryError> {
        self.shut_down().await;
        self.spawn_and_wait().await
    }

    /// Stops the registry and deletes its storage.
    pub async fn stop(mut self) {
        self.shut_down().await;
    }

    /// The registry's log (its access log included).
    pub fn log_path(&self) -> PathBuf {
        self.log_dir
            .as_deref()
            .unwrap_or(self.dir.path())
            .join("registry.log")
    }

    /// If the registry process has exited: its status and the last `lines` lines of its log.
    pub fn exited(&mut self, lines: usize) -> Option<crate::process::Exited> {
        self.process.as_mut()?.exited(lines)
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.yml")
    }

    fn write_auth_and_tls(&mut self) -> Result<(), RegistryError> {
        let setup = |what| move |source| RegistryError::Setup { what, source };
        if let Some((user, password)) = &self.options.htpasswd {
            let hash = bcrypt::hash_with_result(password, 5)
                .map_err(|e| RegistryError::Htpasswd(e.to_string()))?
                .format_for_version(bcrypt::Version::TwoY);
            std::fs::write(self.dir.path().join("htpasswd"), format!("{user}:{hash}\n"))
                .map_err(setup("htpasswd file"))?;
        }
        if self.options.tls {
            let (ca, cert, key) = throwaway_tls().map_err(RegistryError::Tls)?;
            std::fs::write(self.dir.path().join("tls.crt"), cert).map_err(setup("certificate"))?;
            std::fs::write(self.dir.path().join("tls.key"), key).map_err(setup("key"))?;
            self.ca_pem = Some(ca);
        }
        Ok(())
    }

    fn write_config(&self) -> Result<(), RegistryError> {
        let dir = self.dir.path();
        let mut config = format!(
            "version: 0.1\n\
             log:\n  level: warn\n  formatter: text\n\
             storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n  secret: olm-e2e-fixed-secret\n",
            storage = self.storage_dir().display(),
            port = self.port,
        );
        if self.options.tls {
            let _ = write!(
                config,
                "  tls:\n    certificate: {}\n    key: {}\n",
                dir.join("tls.crt").display(),
                dir.join("tls.key").display()
            );
        }
        if self.options.htpasswd.is_some() {
            let _ = write!(
                config,
                "auth:\n  htpasswd:\n    realm: olm-e2e\n    path: {}\n",
                dir.join("htpasswd").display()
            );
        }
        std::fs::write(self.config_path(), config).map_err(|source| RegistryError::Setup {
            what: "configuration",
            source,
        })
    }

    async fn spawn_and_wait(&mut self) -> Result<(), RegistryError> {
        let log_dir = self.log_dir.clone();
        let mut spec = Spec::new(
            "registry",
            &self.bin,
            log_dir.as_deref().unwrap_or(self.dir.path()),
        )
        .arg("serve")
        .arg(self.config_path());
        spec.cwd = Some(self.dir.path().to_path_buf());
        let process = Supervised::start(spec).map_err(|e| RegistryError::Setup {
            what: "process",
            source: std::io::Error::other(e),
        })?;
        self.process = Some(process);
        match self.wait_ready().await {
            Ok(()) => Ok(()),
            Err(reason) => {
                self.shut_down().await;
                Err(RegistryError::NotReady {
                    addr: self.host(),
                    reason,
                    log: tail(
                        &std::fs::read_to_string(self.log_path()).unwrap_or_default(),
                        20,
                    ),
                })
            }
        }
    }

    /// Waits until `/v2/` answers (plain HTTP) or the TLS port accepts connections.
    async fn wait_ready(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = tokio::time::Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Some(status) = self.process.as_mut().and_then(Supervised::try_exit_status) {
                return Err(format!("process exited with {status}"));
            }
            if let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await {
                if self.options.tls {
                    return Ok(());
                }
                let request = format!("GET /v2/ HTTP/1.0\r\nHost: {}\r\n\r\n", self.host());
                let mut response = Vec::new();
                if stream.write_all(request.as_bytes()).await.is_ok()
                    && stream.read_to_end(&mut response).await.is_ok()
                    && (response.starts_with(b"HTTP/1.0 200")
                        || response.starts_with(b"HTTP/1.0 401"))
                {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("no answer on /v2/ within {STARTUP_TIMEOUT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn registry_binary() -> Result<PathBuf, RegistryError> {
    if let Some(path) = std::env::var_os(REGISTRY_BIN_ENV).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(RegistryError::BinaryMissing {
                detail: format!("; {REGISTRY_BIN_ENV}={} does not exist", path.display()),
            })
        };
    }
    // The location hack/ensure-tools.sh installs to, so `cargo test` works after `make tools`.
    if let Some(candidate) =
        crate::assets::cache_root().map(|root| root.join("bin/docker-registry"))
        && candidate.is_file()
    {
        return Ok(candidate);
    }
    Err(RegistryError::BinaryMissing {
        detail: format!("; {REGISTRY_BIN_ENV} is unset and no tools cache has bin/docker-registry"),
    })
}

fn free_port() -> std::io::Result<u16> {
    crate::ports::free_port()
}

/// (CA PEM, serving certificate PEM, serving key PEM) for 127.0.0.1 and localhost.
pub fn throwaway_tls() -> Result<(String, String, String), String> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let err = |e: rcgen::Error| e.to_string();
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "olm-e2e registry CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().map_err(err)?;
    let mut server_params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .map_err(err)?;
    server_params
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let server_cert = server_params.signed_by(&server_key, &issuer).map_err(err)?;
    Ok((ca_cert.pem(), server_cert.pem(), server_key.serialize_pem()))
}

/// Parses a combined-log-format line: `... "GET /v2/ HTTP/1.1" 200 2 "..." "..."`.
fn parse_access_line(line: &str) -> Option<AccessLogEntry> {
    let (_, rest) = line.split_once('"')?;
    let (request, rest) = rest.split_once('"')?;
    let mut parts = request.split(' ');
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    if !parts.next()?.starts_with("HTTP/") {
        return None;
    }
    let status = rest.split_whitespace().next()?.parse().ok()?;
    Some(AccessLogEntry {
        method,
        path,
        status,
    })
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_directories_of_dead_processes_are_removed_and_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        let live = base
            .path()
            .join(format!("{DIR_PREFIX}{}-abc", std::process::id()));
        // Pid 0 is never a process of its own in /proc; a name without a pid is an old one.
        let dead = base.path().join(format!("{DIR_PREFIX}0-abc"));
        let old = base.path().join(format!("{DIR_PREFIX}XyZ12"));
        let other = base.path().join("unrelated-dir");
        for dir in [&live, &dead, &old, &other] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("blob"), b"x").unwrap();
        }
        remove_directories_of_dead_processes(base.path());
        assert!(live.exists());
        assert!(!dead.exists());
        assert!(!old.exists());
        assert!(other.exists());
    }

    #[test]
    fn access_log_lines_are_parsed() {
        let line = r#"127.0.0.1 - - [22/Nov/2026:03:51:00 +0000] "GET /v2/cat/blobs/sha256:ab HTTP/1.1" 200 12 "" "oci-client/0.18""#;
        let entry = parse_access_line(line).unwrap();
        assert_eq!(entry.method, "GET");
        assert_eq!(entry.status, 200);
        assert!(entry.is_blob_get());
        assert!(parse_access_line("time=\"x\" level=warning msg=\"hello\"").is_none());
    }
}
