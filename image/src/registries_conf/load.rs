//! Which registries.conf files apply, reading them, and keeping the parsed result while their
//! bytes do not change. Input: environment and file system. Output: [`RegistriesConf`]. Reads
//! files; no network.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::parse::parse_file;
use super::{RegistriesConf, RegistriesConfError};

/// The system-wide file, read when no other is named and no per-user file exists.
pub const SYSTEM_FILE: &str = "/etc/containers/registries.conf";
/// The system-wide drop-in directory.
pub const SYSTEM_DROP_IN_DIR: &str = "/etc/containers/registries.conf.d";
/// The per-user file and drop-in directory, under `$HOME`.
const USER_FILE: &str = ".config/containers/registries.conf";
const USER_DROP_IN_DIR: &str = ".config/containers/registries.conf.d";
/// The variables naming the file, in priority order (those containers tools read).
pub const ENV_VARS: [&str; 2] = ["CONTAINERS_REGISTRIES_CONF", "REGISTRIES_CONFIG_PATH"];

/// Where the configuration comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistriesConfFiles {
    /// The main file, if any.
    pub file: Option<PathBuf>,
    /// Whether a missing main file is an error (it is when a variable names it).
    pub file_required: bool,
    /// Drop-in directories, in order; missing ones are skipped.
    pub drop_in_dirs: Vec<PathBuf>,
}

impl RegistriesConfFiles {
    /// No files: no mirrors, nothing blocked.
    pub fn none() -> RegistriesConfFiles {
        RegistriesConfFiles::default()
    }

    /// Exactly `file` (which must exist), without drop-ins.
    pub fn only(file: impl Into<PathBuf>) -> RegistriesConfFiles {
        RegistriesConfFiles {
            file: Some(file.into()),
            file_required: true,
            drop_in_dirs: Vec::new(),
        }
    }

    /// The files upstream's image library reads, from this process's environment (see the
    /// module documentation of [`super`]).
    pub fn from_environment() -> RegistriesConfFiles {
        let named = ENV_VARS
            .iter()
            .find_map(|var| std::env::var_os(var).filter(|v| !v.is_empty()));
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        RegistriesConfFiles::locate(named, home.as_deref(), |p| p.exists())
    }

    /// [`RegistriesConfFiles::from_environment`] with its inputs given: the file a variable
    /// names, the home directory, and how to tell whether a path exists.
    pub fn locate(
        named: Option<OsString>,
        home: Option<&Path>,
        exists: impl Fn(&Path) -> bool,
    ) -> RegistriesConfFiles {
        let user_file = home.map(|h| h.join(USER_FILE));
        let user_dir = home.map(|h| h.join(USER_DROP_IN_DIR));
        let system_dirs = || {
            std::iter::once(PathBuf::from(SYSTEM_DROP_IN_DIR))
                .chain(user_dir.clone())
                .collect()
        };
        if let Some(named) = named {
            return RegistriesConfFiles {
                file: Some(PathBuf::from(named)),
                file_required: true,
                drop_in_dirs: system_dirs(),
            };
        }
        if let Some(user_file) = user_file.filter(|f| exists(f)) {
            return RegistriesConfFiles {
                file: Some(user_file),
                file_required: false,
                drop_in_dirs: user_dir.into_iter().collect(),
            };
        }
        RegistriesConfFiles {
            file: Some(PathBuf::from(SYSTEM_FILE)),
            file_required: false,
            drop_in_dirs: system_dirs(),
        }
    }

    /// True when no file or directory is read.
    pub fn is_none(&self) -> bool {
        self.file.is_none() && self.drop_in_dirs.is_empty()
    }

    /// Reads the main file and the drop-ins (in order). A missing optional file, a missing
    /// directory and a drop-in removed while listing are skipped.
    pub fn read(&self) -> Result<Vec<SourceFile>, RegistriesConfError> {
        let mut files = Vec::new();
        if let Some(path) = &self.file {
            match std::fs::read_to_string(path) {
                Ok(text) => files.push(SourceFile {
                    path: path.clone(),
                    text,
                    drop_in: false,
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !self.file_required => {}
                Err(source) => {
                    return Err(RegistriesConfError::Read {
                        path: path.clone(),
                        source,
                    });
                }
            }
        }
        for dir in &self.drop_in_dirs {
            for path in drop_ins(dir)? {
                match std::fs::read_to_string(&path) {
                    Ok(text) => files.push(SourceFile {
                        path,
                        text,
                        drop_in: true,
                    }),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => return Err(RegistriesConfError::Read { path, source }),
                }
            }
        }
        Ok(files)
    }

    /// Reads and parses everything.
    pub fn load(&self) -> Result<RegistriesConf, RegistriesConfError> {
        parse_sources(&self.read()?)
    }

    /// Reads the files once (at start) and logs what they configure, or why they cannot be
    /// used. Not fatal: the files are read again before each pull, whose error then names the
    /// problem in status, and content already unpacked keeps being served meanwhile.
    pub fn log_summary(&self) {
        if self.is_none() {
            return;
        }
        match self.load() {
            Ok(conf) => {
                let registries = conf.registries();
                let count =
                    |f: fn(&super::Registry) -> bool| registries.iter().filter(|r| f(r)).count();
                tracing::info!(
                    files = %self,
                    registries = registries.len(),
                    mirrored = count(|r| !r.mirrors.is_empty()),
                    blocked = count(|r| r.blocked),
                    insecure = count(|r| r.insecure || r.mirrors.iter().any(|m| m.insecure)),
                    "registries configuration loaded"
                );
            }
            Err(error) => {
                tracing::error!(files = %self, %error, "registries configuration unusable: image pulls fail until it is fixed");
            }
        }
    }
}

/// `file, dir, dir` (what a log line says was read).
impl fmt::Display for RegistriesConfFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .file
            .iter()
            .chain(&self.drop_in_dirs)
            .map(|p| p.display().to_string())
            .collect();
        if parts.is_empty() {
            f.write_str("(none)")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// The `*.conf` entries of `dir` that are not directories, by name; none if `dir` is missing.
fn drop_ins(dir: &Path) -> Result<Vec<PathBuf>, RegistriesConfError> {
    let read_error = |source| RegistriesConfError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_error(e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(read_error)?;
        let is_dir = entry.file_type().map_err(read_error)?.is_dir();
        if !is_dir && entry.file_name().to_string_lossy().ends_with(".conf") {
            paths.push(entry.path());
        }
    }
    paths.sort();
    Ok(paths)
}

/// One file's text as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its content.
    pub text: String,
    /// Read from a drop-in directory (v2 format required).
    pub drop_in: bool,
}

/// Parses files read by [`RegistriesConfFiles::read`] and merges them in order.
pub fn parse_sources(files: &[SourceFile]) -> Result<RegistriesConf, RegistriesConfError> {
    let parsed = files
        .iter()
        .map(|f| parse_file(&f.path, &f.text, f.drop_in))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RegistriesConf::merge(parsed))
}

/// The configuration for each pull: the files are read again every time (upstream's puller
/// invalidates its cache before each pull, so an edited ConfigMap applies without a restart) and
/// parsed again only when their bytes changed.
#[derive(Debug)]
pub struct RegistriesConfReloader {
    files: RegistriesConfFiles,
    last: Mutex<Option<(Vec<SourceFile>, Arc<RegistriesConf>)>>,
}

impl RegistriesConfReloader {
    /// Reads nothing yet.
    pub fn new(files: RegistriesConfFiles) -> RegistriesConfReloader {
        RegistriesConfReloader {
            files,
            last: Mutex::new(None),
        }
    }

    /// The files it reads.
    pub fn files(&self) -> &RegistriesConfFiles {
        &self.files
    }

    /// The configuration as the files say now.
    pub fn current(&self) -> Result<Arc<RegistriesConf>, RegistriesConfError> {
        let sources = self.files.read()?;
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((read, conf)) = last.as_ref()
            && *read == sources
        {
            return Ok(conf.clone());
        }
        let conf = Arc::new(parse_sources(&sources)?);
        *last = Some((sources, conf.clone()));
        Ok(conf)
    }
}
