//! Bundle source: a registry+v1 bundle's files read into memory from an unpacked directory or a
//! bundle image.
//!
//! Input: a directory, or an image reference plus an [`olm_image::Puller`] (digest cache,
//! hostile-layer-safe extraction). Output: a [`BundleFs`] for the pure parser
//! (`olm_operator_core::bundle::parse`). Reads local files; pulling talks to registries.
//!
//! Only what upstream reads is read: `metadata/annotations.yaml`, `metadata/properties.yaml` and
//! the entries directly inside `manifests/` (a subdirectory is recorded, not entered: the parser
//! refuses it with upstream's message). Every read is bounded ([`ReadLimits`]):
//!
//! | what is found | outcome |
//! |---|---|
//! | a regular file within the limits | read whole |
//! | a file over [`ReadLimits::max_file_bytes`], or all files over [`ReadLimits::max_total_bytes`] | error naming the file and both sizes |
//! | more than [`ReadLimits::max_manifest_entries`] entries in `manifests/` | error |
//! | a FIFO, socket or device (even behind a symlink) | error naming what it is; never opened blocking |
//! | a symlink whose target (after every hop) leaves the bundle directory | error naming link and target |
//! | a symlink inside the bundle | followed |
//! | an entry name that is not UTF-8 | error |
//!
//! Images are extracted whole into the cache (one tree per digest, shared by the extensions using
//! it: `olm_image::cache`), where olm-image already refuses path traversal, escaping symlinks,
//! devices and FIFOs; the extracted tree is then read with the same rules.

use std::io;
use std::path::{Path, PathBuf};

use olm_api::regular_file::{FileError, read_regular};
use olm_api::v1::ConditionReason;
use olm_image::{ExtractFilter, ImageError, ImageErrorKind, Limits, Puller, Unpacked};
use olm_operator_core::bundle::BundleFs;

/// Bounds on what is read from one bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// One file. The API server refuses objects over 3 MiB; a manifest file may hold many
    /// objects, and CSVs carry icons and examples.
    pub max_file_bytes: u64,
    /// All files together.
    pub max_total_bytes: u64,
    /// Entries directly inside `manifests/`.
    pub max_manifest_entries: usize,
}

impl Default for ReadLimits {
    /// 32 MiB per file, 128 MiB in total, 10 000 manifest entries: ten times the largest
    /// community bundle on every axis (see docs/PERFORMANCE.md).
    fn default() -> ReadLimits {
        ReadLimits {
            max_file_bytes: 32 << 20,
            max_total_bytes: 128 << 20,
            max_manifest_entries: 10_000,
        }
    }
}

/// Extraction limits for bundle images (catalog images are far bigger; bundles are a few MB).
pub fn bundle_image_limits() -> Limits {
    Limits {
        max_entries: 100_000,
        max_extracted_bytes: 1 << 30,
        max_download_bytes: 512 << 20,
    }
}

/// Why a bundle's files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleSourceError {
    #[error("failed to read bundle {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("failed to read bundle: {0}")]
    File(#[from] FileError),
    #[error("failed to read bundle: {path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("failed to read bundle: symlink {link} points outside the bundle (to {target})")]
    SymlinkEscapes { link: PathBuf, target: PathBuf },
    #[error("failed to read bundle: {path} has a name that is not UTF-8")]
    NonUtf8Name { path: PathBuf },
    #[error("failed to read bundle: {dir} has more than {limit} entries")]
    TooManyEntries { dir: PathBuf, limit: usize },
    #[error(
        "failed to read bundle: its files are larger than the limit of {limit} bytes in total ({size} bytes read when {path} was reached)"
    )]
    TotalTooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{0}")]
    Image(#[from] ImageError),
    #[error("failed to read bundle image: {0}")]
    Task(String),
}

impl BundleSourceError {
    /// Whether only a spec change can help: an unusable image reference (upstream's terminal
    /// `Blocked`); everything else is retried.
    pub fn is_terminal(&self) -> bool {
        matches!(self, BundleSourceError::Image(e) if matches!(e.kind, ImageErrorKind::InvalidReference { .. }))
    }

    /// The `Progressing` reason.
    pub fn reason(&self) -> ConditionReason {
        if self.is_terminal() {
            ConditionReason::Blocked
        } else {
            ConditionReason::Retrying
        }
    }

    /// Whether the bundle's content (not the environment) is at fault: limits, hostile or
    /// corrupt files.
    pub fn is_content_error(&self) -> bool {
        match self {
            BundleSourceError::Io { .. } | BundleSourceError::Task(_) => false,
            BundleSourceError::Image(e) => matches!(
                e.kind,
                ImageErrorKind::Extract(_)
                    | ImageErrorKind::TooLarge { .. }
                    | ImageErrorKind::InvalidManifest { .. }
                    | ImageErrorKind::InvalidConfig { .. }
                    | ImageErrorKind::UnsupportedManifest { .. }
                    | ImageErrorKind::UnsupportedLayerMediaType { .. }
                    | ImageErrorKind::NoMatchingPlatform { .. }
            ),
            _ => true,
        }
    }
}

/// Reads the bundle directory `root`.
pub fn read_bundle_dir(root: &Path, limits: &ReadLimits) -> Result<BundleFs, BundleSourceError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BundleSourceError::Io { path, source }
    };
    let canonical_root = root.canonicalize().map_err(io_err(root))?;
    if !canonical_root.is_dir() {
        return Err(BundleSourceError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    let mut reader = Reader {
        root: &canonical_root,
        limits,
        total: 0,
        fs: BundleFs::new(),
    };
    for name in ["metadata/annotations.yaml", "metadata/properties.yaml"] {
        let path = canonical_root.join(name);
        if let Some(target) = reader.inside(&path)? {
            reader.read_file(name, &path, &target)?;
        }
    }
    let manifests = canonical_root.join("manifests");
    if let Some(target) = reader.inside(&manifests)? {
        if !target.is_dir() {
            return Err(BundleSourceError::NotADirectory { path: manifests });
        }
        reader.fs.insert_dir("manifests");
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&target).map_err(io_err(&manifests))? {
            let entry = entry.map_err(io_err(&manifests))?;
            if entries.len() >= limits.max_manifest_entries {
                return Err(BundleSourceError::TooManyEntries {
                    dir: manifests,
                    limit: limits.max_manifest_entries,
                });
            }
            entries.push(entry.path());
        }
        entries.sort();
        for path in entries {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or_else(|| BundleSourceError::NonUtf8Name { path: path.clone() })?
                .to_owned();
            let relative = format!("manifests/{name}");
            let Some(target) = reader.inside(&path)? else {
                continue;
            };
            if target.is_dir() {
                reader.fs.insert_dir(relative);
            } else {
                reader.read_file(&relative, &path, &target)?;
            }
        }
    }
    Ok(reader.fs)
}

struct Reader<'a> {
    root: &'a Path,
    limits: &'a ReadLimits,
    total: u64,
    fs: BundleFs,
}

impl Reader<'_> {
    /// The fully resolved target of `path` when it exists and stays inside the bundle; `None`
    /// when nothing is there (or a dangling symlink inside the bundle).
    fn inside(&self, path: &Path) -> Result<Option<PathBuf>, BundleSourceError> {
        match path.canonicalize() {
            Ok(target) if target.starts_with(self.root) => Ok(Some(target)),
            Ok(target) => Err(BundleSourceError::SymlinkEscapes {
                link: path.to_path_buf(),
                target,
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A dangling symlink: refuse it when it points out of the bundle.
                if let Ok(link) = std::fs::read_link(path) {
                    let target = path.parent().unwrap_or(self.root).join(link);
                    if !lexically_inside(&target, self.root) {
                        return Err(BundleSourceError::SymlinkEscapes {
                            link: path.to_path_buf(),
                            target,
                        });
                    }
                }
                Ok(None)
            }
            Err(source) => Err(BundleSourceError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    fn read_file(
        &mut self,
        relative: &str,
        path: &Path,
        target: &Path,
    ) -> Result<(), BundleSourceError> {
        let remaining = self.limits.max_total_bytes.saturating_sub(self.total);
        let limit = self.limits.max_file_bytes.min(remaining);
        let bytes = match read_regular(target, limit) {
            Ok(bytes) => bytes,
            Err(FileError {
                kind: olm_api::regular_file::FileErrorKind::TooLarge { size, .. },
                ..
            }) if limit < self.limits.max_file_bytes => {
                return Err(BundleSourceError::TotalTooLarge {
                    path: path.to_path_buf(),
                    size: self.total + size,
                    limit: self.limits.max_total_bytes,
                });
            }
            Err(mut e) => {
                e.path = path.to_path_buf();
                return Err(e.into());
            }
        };
        self.total += bytes.len() as u64;
        self.fs.insert_file(relative, bytes);
        Ok(())
    }
}

/// Whether `path`, normalised without touching the disk, stays under `root`.
fn lexically_inside(path: &Path, root: &Path) -> bool {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.starts_with(root)
}

/// A bundle image pulled into the cache and read.
#[derive(Debug)]
pub struct PulledBundle {
    pub unpacked: Unpacked,
    pub fs: BundleFs,
}

/// Pulls `reference` for `owner` (one cache directory per owner; a new digest replaces the
/// owner's previous one) and reads the extracted bundle.
pub async fn pull_bundle(
    puller: &Puller,
    owner: &str,
    reference: &str,
    limits: &ReadLimits,
) -> Result<PulledBundle, BundleSourceError> {
    let unpacked = puller
        .pull(owner, reference, ExtractFilter::Everything)
        .await?;
    let dir = unpacked.dir.clone();
    let limits = *limits;
    let fs = tokio::task::spawn_blocking(move || read_bundle_dir(&dir, &limits))
        .await
        .map_err(|e| BundleSourceError::Task(e.to_string()))??;
    Ok(PulledBundle { unpacked, fs })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::symlink;

    fn bundle_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("metadata")).unwrap();
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::write(
            dir.path().join("metadata/annotations.yaml"),
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("manifests/a.yaml"), "kind: A\n").unwrap();
        dir
    }

    #[test]
    fn reads_metadata_and_manifest_entries_only() {
        let dir = bundle_dir();
        std::fs::write(dir.path().join("other.txt"), "ignored").unwrap();
        std::fs::create_dir(dir.path().join("manifests/sub")).unwrap();
        std::fs::write(dir.path().join("manifests/sub/x.yaml"), "kind: X\n").unwrap();
        let fs = read_bundle_dir(dir.path(), &ReadLimits::default()).unwrap();
        assert!(fs.get("metadata/annotations.yaml").is_some());
        assert!(fs.get("manifests/a.yaml").is_some());
        assert!(matches!(
            fs.get("manifests/sub"),
            Some(olm_operator_core::bundle::FsEntry::Dir)
        ));
        assert!(fs.get("manifests/sub/x.yaml").is_none());
        assert!(fs.get("other.txt").is_none());
    }

    #[test]
    fn a_symlink_out_of_the_bundle_is_refused_and_one_inside_is_followed() {
        let dir = bundle_dir();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.yaml"), "kind: Secret\n").unwrap();
        symlink(
            dir.path().join("manifests/a.yaml"),
            dir.path().join("manifests/b.yaml"),
        )
        .unwrap();
        let fs = read_bundle_dir(dir.path(), &ReadLimits::default()).unwrap();
        assert!(fs.get("manifests/b.yaml").is_some());
        symlink(
            outside.path().join("secret.yaml"),
            dir.path().join("manifests/c.yaml"),
        )
        .unwrap();
        let err = read_bundle_dir(dir.path(), &ReadLimits::default()).unwrap_err();
        assert!(
            matches!(err, BundleSourceError::SymlinkEscapes { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("c.yaml"), "{err}");
    }

    #[test]
    fn a_dangling_symlink_pointing_out_is_refused() {
        let dir = bundle_dir();
        symlink(
            "../../../nowhere/x.yaml",
            dir.path().join("manifests/d.yaml"),
        )
        .unwrap();
        let err = read_bundle_dir(dir.path(), &ReadLimits::default()).unwrap_err();
        assert!(
            matches!(err, BundleSourceError::SymlinkEscapes { .. }),
            "{err}"
        );
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = bundle_dir();
        let fifo = dir.path().join("manifests/pipe.yaml");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let err = read_bundle_dir(dir.path(), &ReadLimits::default()).unwrap_err();
        assert!(err.to_string().contains("a FIFO"), "{err}");
        assert!(err.to_string().contains("pipe.yaml"), "{err}");
    }

    #[test]
    fn files_over_the_limits_are_refused_with_sizes() {
        let dir = bundle_dir();
        std::fs::write(dir.path().join("manifests/big.yaml"), vec![b'#'; 2000]).unwrap();
        let limits = ReadLimits {
            max_file_bytes: 1000,
            ..ReadLimits::default()
        };
        let err = read_bundle_dir(dir.path(), &limits)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("big.yaml") && err.contains("2000") && err.contains("1000"),
            "{err}"
        );
        let limits = ReadLimits {
            max_total_bytes: 1500,
            ..ReadLimits::default()
        };
        let err = read_bundle_dir(dir.path(), &limits).unwrap_err();
        assert!(
            matches!(err, BundleSourceError::TotalTooLarge { .. }),
            "{err}"
        );
        let limits = ReadLimits {
            max_manifest_entries: 1,
            ..ReadLimits::default()
        };
        let err = read_bundle_dir(dir.path(), &limits).unwrap_err();
        assert!(
            matches!(err, BundleSourceError::TooManyEntries { .. }),
            "{err}"
        );
    }
}
