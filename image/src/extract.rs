//! Applies image layers, in order, to a directory while refusing hostile tar entries.
//!
//! Input: a fresh root directory and, per layer, its digest and a reader over its (verified) blob.
//! Output: the merged file tree under the root, or an [`ExtractError`] naming the layer digest and
//! the entry. No network. Blocking IO: run it on a blocking thread.
//!
//! Entry policy (each row is checked before anything is written):
//!
//! | entry                                              | outcome                                       |
//! |----------------------------------------------------|-----------------------------------------------|
//! | path with a `..` component                         | rejected ([`ExtractErrorKind::PathTraversal`]) |
//! | path with leading `/` or `./`                      | taken relative to the root (as container runtimes do) |
//! | path outside the [`PathFilter`]                    | skipped, never written                         |
//! | path whose parent is (or goes through) a symlink   | rejected ([`ExtractErrorKind::ThroughSymlink`]) |
//! | regular file, directory                            | written; mode = tar mode & 0o777 \| 0o700 (no setuid/setgid/sticky) |
//! | symlink, absolute target                           | rewritten to the equivalent relative target    |
//! | symlink resolving outside the root (checked after the last layer, following chains) | rejected ([`ExtractErrorKind::SymlinkEscapes`]) |
//! | symlink, dangling inside the root                  | kept                                           |
//! | hardlink to a regular file already extracted       | linked                                         |
//! | hardlink to anything else (missing, filtered out, a directory, through a symlink) | rejected ([`ExtractErrorKind::InvalidHardlink`]) |
//! | char/block device, fifo, unknown type              | rejected ([`ExtractErrorKind::UnsupportedEntryType`]) |
//! | `.wh.NAME`                                         | removes NAME as left by lower layers           |
//! | `.wh..wh..opq`                                     | empties its directory of lower-layer content   |
//! | other `.wh..wh.*` (aufs bookkeeping)               | ignored                                        |
//! | more entries or bytes than [`Limits`]              | rejected                                       |
//! | a name the filesystem refuses (too long, bad bytes) | rejected ([`ExtractErrorKind::InvalidName`]), not retried |
//!
//! Ownership, xattrs, PAX records and mtimes are not applied: files belong to the running process.

use std::collections::{BTreeMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use tar::EntryType;

use crate::decompress;

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE_WHITEOUT: &str = ".wh..wh..opq";
const AUFS_META_PREFIX: &str = ".wh..wh.";
/// Same bound Linux uses for symlink resolution (ELOOP).
const MAX_SYMLINK_HOPS: u32 = 40;

/// Caps on what one image may put on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Tar entries read across all layers (skipped ones count: they cost CPU too).
    pub max_entries: u64,
    /// Bytes of regular-file content written across all layers.
    pub max_extracted_bytes: u64,
    /// Compressed bytes downloaded across all layers (enforced by the puller).
    pub max_download_bytes: u64,
}

impl Default for Limits {
    /// Generous enough for the largest public catalogs (the community catalog is under 100 MB and
    /// a few thousand files) by two orders of magnitude.
    fn default() -> Self {
        Self {
            max_entries: 1_000_000,
            max_extracted_bytes: 8 << 30,
            max_download_bytes: 4 << 30,
        }
    }
}

/// Which part of the image tree to extract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathFilter {
    /// Every entry (bundle images).
    Everything,
    /// Only the given directory (relative, normalised) and what is under it, kept at its path.
    Under(PathBuf),
}

impl PathFilter {
    /// A filter for a directory named in an image label, such as `/configs` or `configs/`.
    /// `None` when the value climbs out of the root (`..`); the root itself means everything.
    pub fn from_label_value(value: &str) -> Option<Self> {
        match normalize(value.as_bytes()) {
            Err(()) => None,
            Ok(None) => Some(Self::Everything),
            Ok(Some(dir)) => Some(Self::Under(dir)),
        }
    }

    fn includes(&self, path: &Path) -> bool {
        match self {
            Self::Everything => true,
            Self::Under(dir) => path.starts_with(dir),
        }
    }
}

/// A layer entry that could not be applied.
#[derive(Debug, thiserror::Error)]
#[error("failed to extract layer {layer_digest}: entry {entry:?}: {kind}")]
pub struct ExtractError {
    /// Digest of the layer blob the entry came from.
    pub layer_digest: String,
    /// The entry path as written in the tar (lossily decoded).
    pub entry: String,
    /// What was wrong.
    pub kind: ExtractErrorKind,
}

impl ExtractError {
    /// True when the image content itself is at fault (as opposed to local disk trouble).
    pub fn is_hostile_or_corrupt(&self) -> bool {
        !matches!(self.kind, ExtractErrorKind::Io { .. })
    }
}

/// Why an entry was refused.
#[derive(Debug, thiserror::Error)]
pub enum ExtractErrorKind {
    /// The path contains `..`.
    #[error("path contains a \"..\" component")]
    PathTraversal,
    /// A whiteout names `.` or `..`.
    #[error("whiteout names an invalid file")]
    InvalidWhiteout,
    /// The entry would be written through a symlink.
    #[error("path goes through symlink {ancestor:?}")]
    ThroughSymlink {
        /// The symlink, relative to the image root.
        ancestor: String,
    },
    /// A parent of the entry is a file.
    #[error("parent {ancestor:?} is not a directory")]
    NotADirectory {
        /// The non-directory, relative to the image root.
        ancestor: String,
    },
    /// A symlink whose target resolves outside the image root.
    #[error("symlink target {target:?} resolves outside the image root")]
    SymlinkEscapes {
        /// The link target as stored.
        target: String,
    },
    /// A hardlink whose target is not an extracted regular file inside the root.
    #[error("hardlink target {target:?} {reason}")]
    InvalidHardlink {
        /// The link target as written in the tar.
        target: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A name the filesystem refuses: a component over 255 bytes, a path over `PATH_MAX`, bytes
    /// the filesystem cannot store. The image is at fault, not the disk (so it is not retried).
    #[error("entry name refused by the filesystem: {source}")]
    InvalidName {
        /// The OS error (`ENAMETOOLONG`, `EILSEQ`).
        source: io::Error,
    },
    /// Devices, fifos and unknown entry types.
    #[error("unsupported entry type {0}")]
    UnsupportedEntryType(String),
    /// [`Limits::max_entries`] exceeded.
    #[error("image has more than {limit} entries")]
    TooManyEntries {
        /// The limit.
        limit: u64,
    },
    /// [`Limits::max_extracted_bytes`] exceeded.
    #[error("image content exceeds {limit} bytes")]
    TooManyBytes {
        /// The limit.
        limit: u64,
    },
    /// The blob is not a readable (compressed) tar stream.
    #[error("layer is not a valid tar stream: {reason}")]
    Corrupt {
        /// What the decoder reported.
        reason: String,
    },
    /// Local filesystem failure.
    #[error("failed to {op}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },
}

/// Applies layers one after another to `root`. Call [`Extractor::finish`] after the last layer.
pub struct Extractor {
    root: PathBuf,
    filter: PathFilter,
    limits: Limits,
    entries: u64,
    bytes: u64,
    /// Every symlink created (path relative to root → layer digest and raw entry name), checked
    /// once all layers are applied, because later layers can change what a link resolves to.
    symlinks: BTreeMap<PathBuf, (String, String)>,
}

/// Per-layer bookkeeping for whiteouts, which only ever hide content of lower layers.
#[derive(Default)]
struct LayerState {
    /// Paths written by this layer.
    created: HashSet<PathBuf>,
    /// Ancestors of paths written by this layer.
    touched_dirs: HashSet<PathBuf>,
}

impl LayerState {
    fn record(&mut self, path: &Path) {
        self.created.insert(path.to_path_buf());
        let mut parent = path.parent();
        while let Some(p) = parent {
            if p.as_os_str().is_empty() || !self.touched_dirs.insert(p.to_path_buf()) {
                break;
            }
            parent = p.parent();
        }
    }
}

impl Extractor {
    /// `root` must be an existing, empty directory owned by the caller.
    pub fn new(root: impl Into<PathBuf>, filter: PathFilter, limits: Limits) -> Self {
        Self {
            root: root.into(),
            filter,
            limits,
            entries: 0,
            bytes: 0,
            symlinks: BTreeMap::new(),
        }
    }

    /// Bytes of file content written so far.
    pub fn extracted_bytes(&self) -> u64 {
        self.bytes
    }

    /// Applies one layer blob (gzip, zstd or plain tar, detected from its first bytes).
    pub fn apply_layer<R: Read>(
        &mut self,
        layer_digest: &str,
        blob: R,
    ) -> Result<(), ExtractError> {
        let fail = |entry: &str, kind| ExtractError {
            layer_digest: layer_digest.to_string(),
            entry: entry.to_string(),
            kind,
        };
        let corrupt = |e: io::Error| ExtractErrorKind::Corrupt {
            reason: e.to_string(),
        };
        let buffered = io::BufReader::with_capacity(256 * 1024, blob);
        let tar_stream =
            decompress::decompressing_reader(buffered).map_err(|e| fail("", corrupt(e)))?;
        let mut archive = tar::Archive::new(tar_stream);
        let mut layer = LayerState::default();
        let entries = archive.entries().map_err(|e| fail("", corrupt(e)))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| fail("", corrupt(e)))?;
            let raw_path = entry.path_bytes().into_owned();
            let name = String::from_utf8_lossy(&raw_path).into_owned();
            self.entries += 1;
            if self.entries > self.limits.max_entries {
                return Err(fail(
                    &name,
                    ExtractErrorKind::TooManyEntries {
                        limit: self.limits.max_entries,
                    },
                ));
            }
            self.apply_entry(layer_digest, &mut entry, &raw_path, &mut layer)
                .map_err(|kind| fail(&name, kind))?;
        }
        Ok(())
    }

    /// Checks every symlink left in the tree against the root, following chains of links.
    pub fn finish(self) -> Result<(), ExtractError> {
        for (link, (layer_digest, entry)) in &self.symlinks {
            // Later layers may have replaced the link or one of its parents.
            if self.real_parent_dirs(link).is_err() {
                continue;
            }
            match fs::symlink_metadata(self.root.join(link)) {
                Ok(meta) if meta.file_type().is_symlink() => {}
                _ => continue,
            }
            let target = fs::read_link(self.root.join(link)).map_err(|source| ExtractError {
                layer_digest: layer_digest.clone(),
                entry: entry.clone(),
                kind: ExtractErrorKind::Io {
                    op: "read symlink",
                    source,
                },
            })?;
            let parent: Vec<OsString> = link
                .parent()
                .map(|p| p.iter().map(OsStr::to_os_string).collect())
                .unwrap_or_default();
            let mut hops = 0;
            if resolve_in_root(&self.root, parent, &target, &mut hops).is_err() {
                return Err(ExtractError {
                    layer_digest: layer_digest.clone(),
                    entry: entry.clone(),
                    kind: ExtractErrorKind::SymlinkEscapes {
                        target: target.to_string_lossy().into_owned(),
                    },
                });
            }
        }
        Ok(())
    }

    fn apply_entry<R: Read>(
        &mut self,
        layer_digest: &str,
        entry: &mut tar::Entry<'_, R>,
        raw_path: &[u8],
        layer: &mut LayerState,
    ) -> Result<(), ExtractErrorKind> {
        let entry_type = entry.header().entry_type();
        let path = match classify(entry_type, raw_path) {
            Err(()) => return Err(ExtractErrorKind::PathTraversal),
            Ok(Entry::Skipped) => return Ok(()),
            Ok(Entry::OpaqueWhiteout(dir)) => return self.opaque_whiteout(&dir, layer),
            Ok(Entry::InvalidWhiteout) => return Err(ExtractErrorKind::InvalidWhiteout),
            Ok(Entry::Whiteout(target)) => return self.whiteout(&target, layer),
            Ok(Entry::Path(path)) => path,
        };
        if !self.filter.includes(&path) {
            return Ok(());
        }
        let mode = (entry.header().mode().unwrap_or(0o644) & 0o777) | 0o700;
        match entry_type {
            EntryType::Directory => {
                self.create_parent_dirs(&path, layer)?;
                let full = self.root.join(&path);
                match fs::symlink_metadata(&full) {
                    Ok(meta) if meta.is_dir() => {}
                    Ok(_) => {
                        remove_any(&full)?;
                        create_dir(&full)?;
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => create_dir(&full)?,
                    Err(source) => return Err(io_err("inspect directory", source)),
                }
                set_mode(&full, mode)?;
            }
            EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
                let size = entry.size();
                if self.bytes.saturating_add(size) > self.limits.max_extracted_bytes {
                    return Err(ExtractErrorKind::TooManyBytes {
                        limit: self.limits.max_extracted_bytes,
                    });
                }
                self.create_parent_dirs(&path, layer)?;
                let full = self.root.join(&path);
                self.remove_existing(&full)?;
                self.write_file(entry, &full, mode)?;
            }
            EntryType::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| ExtractErrorKind::Corrupt {
                        reason: "symlink without a target".to_string(),
                    })?;
                let target = relative_symlink_target(&path, &target);
                self.create_parent_dirs(&path, layer)?;
                let full = self.root.join(&path);
                self.remove_existing(&full)?;
                std::os::unix::fs::symlink(&target, &full)
                    .map_err(|e| io_err("create symlink", e))?;
                self.symlinks.insert(
                    path.clone(),
                    (
                        layer_digest.to_string(),
                        String::from_utf8_lossy(raw_path).into_owned(),
                    ),
                );
            }
            EntryType::Link => {
                let raw_target = entry
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                let invalid = |reason| ExtractErrorKind::InvalidHardlink {
                    target: String::from_utf8_lossy(&raw_target).into_owned(),
                    reason,
                };
                let target = match normalize(&raw_target) {
                    Err(()) => return Err(invalid("contains a \"..\" component")),
                    Ok(None) => return Err(invalid("is the image root")),
                    Ok(Some(t)) => t,
                };
                if target == path {
                    return Ok(());
                }
                if !self.filter.includes(&target) {
                    return Err(invalid("is outside the extracted directory"));
                }
                if self.real_parent_dirs(&target).is_err() {
                    return Err(invalid("is not an extracted regular file"));
                }
                let target_full = self.root.join(&target);
                match fs::symlink_metadata(&target_full) {
                    Ok(meta) if meta.file_type().is_file() => {}
                    _ => return Err(invalid("is not an extracted regular file")),
                }
                self.create_parent_dirs(&path, layer)?;
                let full = self.root.join(&path);
                self.remove_existing(&full)?;
                fs::hard_link(&target_full, &full).map_err(|e| io_err("create hardlink", e))?;
            }
            other => {
                return Err(ExtractErrorKind::UnsupportedEntryType(entry_type_name(
                    other,
                )));
            }
        }
        layer.record(&path);
        Ok(())
    }

    fn write_file<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        full: &Path,
        mode: u32,
    ) -> Result<(), ExtractErrorKind> {
        // create_new refuses to follow a symlink planted at the final component.
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(full)
            .map_err(|e| io_err("create file", e))?;
        let mut out = io::BufWriter::with_capacity(128 * 1024, file);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match entry.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(ExtractErrorKind::Corrupt {
                        reason: e.to_string(),
                    });
                }
            };
            self.bytes += n as u64;
            if self.bytes > self.limits.max_extracted_bytes {
                return Err(ExtractErrorKind::TooManyBytes {
                    limit: self.limits.max_extracted_bytes,
                });
            }
            out.write_all(&buf[..n])
                .map_err(|e| io_err("write file", e))?;
        }
        let file = out
            .into_inner()
            .map_err(|e| io_err("write file", e.into_error()))?;
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|e| io_err("set file mode", e))?;
        Ok(())
    }

    /// Creates missing parents of `path` (mode 0755) and checks none of them is a symlink or file.
    fn create_parent_dirs(
        &self,
        path: &Path,
        layer: &mut LayerState,
    ) -> Result<(), ExtractErrorKind> {
        self.walk_parent_dirs(path, Some(layer))
    }

    /// Ok when every parent of `path` exists as a real directory (no symlink on the way).
    fn real_parent_dirs(&self, path: &Path) -> Result<(), ExtractErrorKind> {
        self.walk_parent_dirs(path, None)
    }

    /// Checks each ancestor of `path`, from the root down: it must be a real directory, never a
    /// symlink (the entry would land outside what the tree shows) or a file. A missing ancestor is
    /// created when `create` holds the layer to record it in, and an error otherwise.
    fn walk_parent_dirs(
        &self,
        path: &Path,
        mut create: Option<&mut LayerState>,
    ) -> Result<(), ExtractErrorKind> {
        let mut current = PathBuf::new();
        for component in path.parent().unwrap_or(Path::new("")).iter() {
            current.push(component);
            let full = self.root.join(&current);
            match fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(ExtractErrorKind::ThroughSymlink {
                        ancestor: current.to_string_lossy().into_owned(),
                    });
                }
                Ok(_) => {
                    return Err(ExtractErrorKind::NotADirectory {
                        ancestor: current.to_string_lossy().into_owned(),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => match create.as_deref_mut() {
                    Some(layer) => {
                        create_dir(&full)?;
                        set_mode(&full, 0o755)?;
                        layer.record(&current);
                    }
                    None => return Err(io_err("inspect directory", e)),
                },
                Err(source) => return Err(io_err("inspect directory", source)),
            }
        }
        Ok(())
    }

    fn remove_existing(&mut self, full: &Path) -> Result<(), ExtractErrorKind> {
        match fs::symlink_metadata(full) {
            Ok(_) => remove_any(full),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(io_err("inspect path", source)),
        }
    }

    /// `.wh.NAME`: removes NAME as left by lower layers (content this layer wrote is kept).
    fn whiteout(&mut self, target: &Path, layer: &LayerState) -> Result<(), ExtractErrorKind> {
        if !self.lower_content_possible(target)? {
            return Ok(());
        }
        if layer.created.contains(target) && !layer.touched_dirs.contains(target) {
            return Ok(());
        }
        let full = self.root.join(target);
        match fs::symlink_metadata(&full) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(io_err("inspect path", source)),
            Ok(meta) if meta.is_dir() && layer.touched_dirs.contains(target) => {
                self.purge_lower_content(target, layer)
            }
            Ok(_) => remove_any(&full),
        }
    }

    /// `.wh..wh..opq` in `dir`: hides everything lower layers put in `dir`.
    fn opaque_whiteout(&mut self, dir: &Path, layer: &LayerState) -> Result<(), ExtractErrorKind> {
        if !dir.as_os_str().is_empty() && !self.lower_content_possible(&dir.join("x"))? {
            return Ok(());
        }
        self.purge_lower_content(dir, layer)
    }

    /// Whether anything can exist at `path` for a whiteout to hide: false below a missing or
    /// non-directory parent; an error when a parent is a symlink (the whiteout would reach
    /// through it) or cannot be inspected.
    fn lower_content_possible(&self, path: &Path) -> Result<bool, ExtractErrorKind> {
        match self.real_parent_dirs(path) {
            Ok(()) => Ok(true),
            Err(ExtractErrorKind::Io { source, .. })
                if source.kind() == io::ErrorKind::NotFound =>
            {
                Ok(false)
            }
            Err(ExtractErrorKind::NotADirectory { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Removes children of `dir` that the current layer did not write, descending into
    /// directories that hold some of the current layer's content.
    fn purge_lower_content(
        &mut self,
        dir: &Path,
        layer: &LayerState,
    ) -> Result<(), ExtractErrorKind> {
        let full = self.root.join(dir);
        let children = match fs::read_dir(&full) {
            Ok(children) => children,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(io_err("list directory", source)),
        };
        for child in children {
            let child = child.map_err(|e| io_err("list directory", e))?;
            let rel = dir.join(child.file_name());
            let is_real_dir = child
                .file_type()
                .map_err(|e| io_err("inspect path", e))?
                .is_dir();
            if is_real_dir && (layer.created.contains(&rel) || layer.touched_dirs.contains(&rel)) {
                self.purge_lower_content(&rel, layer)?;
            } else if !layer.created.contains(&rel) {
                remove_any(&child.path())?;
            }
        }
        Ok(())
    }
}

/// What one tar entry is, before any filter: the same for the disk extraction and the pack.
pub(crate) enum Entry {
    /// Nothing to apply: a PAX or GNU long-name header, the root itself, aufs bookkeeping.
    Skipped,
    /// `.wh..wh..opq` in this directory.
    OpaqueWhiteout(PathBuf),
    /// `.wh.NAME`: hides this path.
    Whiteout(PathBuf),
    /// A whiteout naming nothing, `.` or `..`.
    InvalidWhiteout,
    /// Content at this normalised path.
    Path(PathBuf),
}

/// Classifies an entry by its type and raw path; `Err` for a `..` component.
pub(crate) fn classify(entry_type: EntryType, raw_path: &[u8]) -> Result<Entry, ()> {
    if matches!(
        entry_type,
        EntryType::XGlobalHeader
            | EntryType::XHeader
            | EntryType::GNULongName
            | EntryType::GNULongLink
    ) {
        return Ok(Entry::Skipped);
    }
    let Some(path) = normalize(raw_path)? else {
        return Ok(Entry::Skipped); // the root directory itself
    };
    let file_name = path.file_name().map(OsStr::as_bytes).unwrap_or_default();
    let Some(hidden) = file_name.strip_prefix(WHITEOUT_PREFIX.as_bytes()) else {
        return Ok(Entry::Path(path));
    };
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    Ok(if file_name == OPAQUE_WHITEOUT.as_bytes() {
        Entry::OpaqueWhiteout(dir)
    } else if file_name.starts_with(AUFS_META_PREFIX.as_bytes()) {
        Entry::Skipped
    } else if hidden.is_empty() || hidden == b"." || hidden == b".." {
        Entry::InvalidWhiteout
    } else {
        Entry::Whiteout(dir.join(OsStr::from_bytes(hidden)))
    })
}

/// Splits a tar path into normal components. `Err` for `..`; `Ok(None)` for the root itself.
fn normalize(raw: &[u8]) -> Result<Option<PathBuf>, ()> {
    let mut out = PathBuf::new();
    for component in Path::new(OsStr::from_bytes(raw)).components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => return Err(()),
            Component::Normal(name) => out.push(name),
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Absolute targets mean "from the image root" inside a container; on the host they would mean
/// the host's root, so they become the equivalent path relative to the link's directory.
fn relative_symlink_target(link: &Path, target: &[u8]) -> PathBuf {
    let target = Path::new(OsStr::from_bytes(target));
    if !target.is_absolute() {
        return target.to_path_buf();
    }
    let mut inside: Vec<&OsStr> = Vec::new();
    for component in target.components() {
        match component {
            Component::Normal(name) => inside.push(name),
            // `/..` is `/` in a container.
            Component::ParentDir => {
                inside.pop();
            }
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
        }
    }
    let depth = link.parent().map(|p| p.iter().count()).unwrap_or(0);
    let mut relative = PathBuf::new();
    for _ in 0..depth {
        relative.push("..");
    }
    for name in inside {
        relative.push(name);
    }
    if relative.as_os_str().is_empty() {
        relative.push(".");
    }
    relative
}

/// Resolves `target` (relative to the directory `dir`, given as components under `root`) the way
/// the kernel would, following symlinks found on disk, and fails if any step leaves the root.
/// Missing components are resolved lexically. Loops are not escapes (they fail with ELOOP).
fn resolve_in_root(
    root: &Path,
    dir: Vec<OsString>,
    target: &Path,
    hops: &mut u32,
) -> Result<Vec<OsString>, ()> {
    let mut stack = dir;
    for component in target.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return Err(()),
            Component::CurDir => {}
            Component::ParentDir => {
                if stack.pop().is_none() {
                    return Err(());
                }
            }
            Component::Normal(name) => {
                stack.push(name.to_os_string());
                let on_disk: PathBuf = std::iter::once(root.as_os_str())
                    .chain(stack.iter().map(OsString::as_os_str))
                    .collect();
                let is_link = fs::symlink_metadata(&on_disk)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if is_link {
                    *hops += 1;
                    if *hops > MAX_SYMLINK_HOPS {
                        return Ok(stack);
                    }
                    let Ok(next) = fs::read_link(&on_disk) else {
                        return Err(());
                    };
                    stack.pop();
                    stack = resolve_in_root(root, stack, &next, hops)?;
                }
            }
        }
    }
    Ok(stack)
}

fn entry_type_name(t: EntryType) -> String {
    match t {
        EntryType::Char => "character device".to_string(),
        EntryType::Block => "block device".to_string(),
        EntryType::Fifo => "fifo".to_string(),
        other => format!("{:?} ({})", other, other.as_byte() as char),
    }
}

/// `EILSEQ` on Linux: a name the filesystem's encoding cannot store.
const EILSEQ: i32 = 84;

fn io_err(op: &'static str, source: io::Error) -> ExtractErrorKind {
    // Names come from the image: a name the filesystem refuses is the image's fault.
    if source.kind() == io::ErrorKind::InvalidFilename || source.raw_os_error() == Some(EILSEQ) {
        return ExtractErrorKind::InvalidName { source };
    }
    ExtractErrorKind::Io { op, source }
}

fn create_dir(full: &Path) -> Result<(), ExtractErrorKind> {
    fs::create_dir(full).map_err(|e| io_err("create directory", e))
}

fn set_mode(full: &Path, mode: u32) -> Result<(), ExtractErrorKind> {
    fs::set_permissions(full, fs::Permissions::from_mode(mode))
        .map_err(|e| io_err("set directory mode", e))
}

/// Removes a file, symlink (not its target) or directory tree. Every directory we create keeps
/// owner rwx, so no permission fix-up is needed first.
fn remove_any(full: &Path) -> Result<(), ExtractErrorKind> {
    let meta = fs::symlink_metadata(full).map_err(|e| io_err("inspect path", e))?;
    if meta.is_dir() {
        fs::remove_dir_all(full).map_err(|e| io_err("remove directory", e))
    } else {
        fs::remove_file(full).map_err(|e| io_err("remove file", e))
    }
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
