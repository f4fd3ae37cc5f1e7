//! On-disk catalog content: `catalog.jsonl`, its byte-range index and a precompressed gzip copy.
//!
//! Input: a stream of blobs (schema, package, name, canonical JSON bytes) for a catalog and the
//! source digest they came from. Output: an immutable [`StoredCatalog`] that HTTP handlers read.
//! Touches the local filesystem only.
//!
//! Layout under the storage root:
//!
//! ```text
//! <catalog>/current            name of the live content directory (replaced atomically)
//! <catalog>/<content-id>/      catalog.jsonl, catalog.jsonl.gz, index.json, meta.json,
//!                              answers.gz (gzip `/metas` answers, written as they are asked)
//! <catalog>/.tmp-<id>/         a store in progress (removed at the next start)
//! ```
//!
//! Why this shape:
//! - A store writes a fresh content directory and then swaps the `current` pointer, so readers
//!   never see half-written content, and a crash leaves the previous content serving.
//! - A [`StoredCatalog`] keeps its files open and its index in memory, so requests already holding
//!   it keep reading consistent bytes even after a newer store or a delete removed its directory
//!   (an open file outlives its directory entry).
//! - Storing the digest that is already live is a no-op: the files, and so `Last-Modified`, stay
//!   exactly as they were (upstream rewrites them on every poll).
//! - Content survives restarts: the live directory is found again through `current`.

mod answers;
mod gzip_copy;
mod index;

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

pub use answers::{Answer, CompressedAnswers};
pub use index::{CompactIndex, Index, IndexBuilder, Query, Section};

use gzip_copy::GzipCopy;

const JSONL: &str = "catalog.jsonl";
const GZIP: &str = "catalog.jsonl.gz";
const INDEX: &str = "index.json";
const META: &str = "meta.json";
const CURRENT: &str = "current";
const TMP_PREFIX: &str = ".tmp-";

/// Errors of the storage step.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(
        "invalid catalog name {0:?}: must be a non-empty name without '/' that does not start with '.'"
    )]
    InvalidName(String),
    #[error("failed to {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to read stored catalog metadata {path}: {source}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StorageError + 'a {
    move |source| StorageError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// What `meta.json` records about a content directory.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct ContentMeta {
    /// Identity of the source content (for images: the resolved digest reference).
    digest: String,
    /// Size of `catalog.jsonl` in bytes.
    size: u64,
    /// Size of `catalog.jsonl.gz` in bytes, once it is written (after the content is live).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gzip_size: Option<u64>,
    /// Number of blobs.
    blobs: u64,
}

/// The catalogs stored under one root directory. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Storage {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    live: RwLock<HashMap<String, Arc<StoredCatalog>>>,
    gzip_copies: GzipCopies,
}

/// When the gzip copy of new or reloaded content is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GzipCopies {
    /// On a thread of its own, as soon as the content is live (what catalogd does).
    InBackground,
    /// Only when [`StoredCatalog::write_gzip_copy`] is called (tests of the time before it).
    WhenAsked,
}

/// One catalog's live content. Immutable; replaced as a whole by a newer store.
#[derive(Debug)]
pub struct StoredCatalog {
    name: String,
    dir: PathBuf,
    meta: ContentMeta,
    jsonl: File,
    gzip: GzipCopy,
    modified: SystemTime,
    index: CompactIndex,
    /// Compressed `/metas` answers of this content, computed on first request and kept in
    /// `answers.gz`.
    compressed: CompressedAnswers,
}

impl StoredCatalog {
    /// The compressed answers of this content.
    pub fn compressed(&self) -> &CompressedAnswers {
        &self.compressed
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The source digest this content was produced from.
    pub fn digest(&self) -> &str {
        &self.meta.digest
    }
    /// Size of the JSON Lines content in bytes.
    pub fn len(&self) -> u64 {
        self.meta.size
    }
    pub fn is_empty(&self) -> bool {
        self.meta.size == 0
    }
    /// Size of the precompressed copy in bytes.
    /// Size of the gzip copy, once it is written ([`GzipCopies`]).
    pub fn gzip_len(&self) -> Option<u64> {
        self.gzip.get().map(|(_, size)| size)
    }

    /// Writes the gzip copy unless it exists (waiting for a write in progress); returns its
    /// size. Blocking.
    pub fn write_gzip_copy(&self) -> Result<u64, StorageError> {
        self.gzip.write(&self.jsonl, &self.meta)
    }
    /// Number of blobs.
    pub fn blobs(&self) -> u64 {
        self.meta.blobs
    }
    /// When the content was written (the modification time of `catalog.jsonl`).
    pub fn modified(&self) -> SystemTime {
        self.modified
    }
    pub fn index(&self) -> &CompactIndex {
        &self.index
    }
    /// Reads JSON Lines bytes at `offset`; positional, so concurrent readers do not interfere.
    pub fn read_jsonl_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.jsonl.read_at(buf, offset)
    }
    /// Reads precompressed bytes at `offset`.
    pub fn read_gzip_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.gzip_file()?.read_at(buf, offset)
    }
    /// [`Self::read_jsonl_at`] of only what the page cache holds: it never waits for the disk,
    /// and reads fewer bytes than asked (or fails with `WouldBlock`) where it would.
    pub fn read_jsonl_cached_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        read_cached_at(&self.jsonl, buf, offset)
    }
    /// [`Self::read_gzip_at`] of only what the page cache holds (as [`Self::read_jsonl_cached_at`]).
    pub fn read_gzip_cached_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        read_cached_at(self.gzip_file()?, buf, offset)
    }

    fn gzip_file(&self) -> io::Result<&File> {
        self.gzip
            .get()
            .map(|(file, _)| file)
            .ok_or_else(|| io::Error::other("the gzip copy is not written yet"))
    }
    /// Path of the JSON Lines file (for tools and tests; handlers read through the open file).
    /// Reads bytes of the kept compressed answers ([`CompressedAnswers`]).
    pub fn read_answers_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.compressed.read_at(buf, offset)
    }
    /// [`Self::read_answers_at`] of only what the page cache holds.
    pub fn read_answers_cached_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.compressed.read_cached_at(buf, offset)
    }

    pub fn jsonl_path(&self) -> PathBuf {
        self.dir.join(JSONL)
    }
}

/// `preadv2` with `RWF_NOWAIT`: a read served from the page cache alone. A kernel or filesystem
/// without it is `ErrorKind::Unsupported`, so callers can stop trying and read as usual.
fn read_cached_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use rustix::io::Errno;
    rustix::io::preadv2(
        file,
        &mut [io::IoSliceMut::new(buf)],
        offset,
        rustix::io::ReadWriteFlags::NOWAIT,
    )
    .map_err(|e| match e {
        Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL => io::ErrorKind::Unsupported.into(),
        e => e.into(),
    })
}

impl Storage {
    /// Opens (creating if needed) a storage root. Existing content is loaded lazily; gzip
    /// copies are written in the background.
    pub fn open(root: impl Into<PathBuf>) -> Result<Storage, StorageError> {
        Storage::open_with(root, GzipCopies::InBackground)
    }

    /// [`Storage::open`], choosing when gzip copies are written.
    pub fn open_with(
        root: impl Into<PathBuf>,
        gzip_copies: GzipCopies,
    ) -> Result<Storage, StorageError> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(io_err("create storage root", &root))?;
        Ok(Storage {
            inner: Arc::new(Inner {
                root,
                live: RwLock::new(HashMap::new()),
                gzip_copies,
            }),
        })
    }

    /// Starts writing `stored`'s gzip copy on a thread of its own, when this storage does and
    /// the copy is missing. A failure is logged: gzip requests keep being compressed on the fly.
    fn start_gzip_copy(&self, stored: &Arc<StoredCatalog>) {
        if self.inner.gzip_copies != GzipCopies::InBackground || stored.gzip_len().is_some() {
            return;
        }
        let stored = stored.clone();
        let spawned = std::thread::Builder::new()
            .name("catalogd-gzip".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                match stored.write_gzip_copy() {
                    Ok(size) => tracing::debug!(
                        catalog = stored.name(),
                        size,
                        seconds = started.elapsed().as_secs_f64(),
                        "gzip copy written"
                    ),
                    // Superseded or deleted content (its directory gone) ends here too.
                    Err(e) => tracing::info!(
                        catalog = stored.name(),
                        error = %e,
                        "gzip copy not written; gzip requests are compressed on the fly"
                    ),
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no thread for the gzip copy; gzip requests are compressed on the fly");
        }
    }

    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The live content of `catalog`, loading it from disk after a restart.
    pub fn get(&self, catalog: &str) -> Result<Option<Arc<StoredCatalog>>, StorageError> {
        validate_name(catalog)?;
        if let Some(found) = self.read_live().get(catalog) {
            return Ok(Some(found.clone()));
        }
        let Some(loaded) = self.load_from_disk(catalog)? else {
            return Ok(None);
        };
        let kept = {
            let mut live = self.write_live();
            // Another caller may have loaded or stored it meanwhile; keep theirs.
            live.entry(catalog.to_string()).or_insert(loaded).clone()
        };
        self.start_gzip_copy(&kept);
        Ok(Some(kept))
    }

    /// Names of every catalog with content on disk.
    pub fn catalogs(&self) -> Result<Vec<String>, StorageError> {
        let root = &self.inner.root;
        let mut names = Vec::new();
        for entry in fs::read_dir(root).map_err(io_err("list", root))? {
            let entry = entry.map_err(io_err("list", root))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if validate_name(&name).is_ok() && entry.path().join(CURRENT).is_file() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Starts storing new content for `catalog` from source `digest`. Returns `None` when that
    /// digest is already live, in which case nothing is written.
    ///
    /// Stores of one catalog must not overlap (the controller reconciles a catalog at a time):
    /// committing removes every other content directory of that catalog.
    pub fn begin(
        &self,
        catalog: &str,
        digest: &str,
    ) -> Result<Option<CatalogWriter>, StorageError> {
        if let Some(current) = self.get(catalog)?
            && current.digest() == digest
        {
            return Ok(None);
        }
        let catalog_dir = self.inner.root.join(catalog);
        fs::create_dir_all(&catalog_dir).map_err(io_err("create", &catalog_dir))?;
        let id = random_id();
        let tmp = catalog_dir.join(format!("{TMP_PREFIX}{id}"));
        fs::create_dir(&tmp).map_err(io_err("create", &tmp))?;
        let jsonl_path = tmp.join(JSONL);
        let jsonl = File::create(&jsonl_path).map_err(io_err("create", &jsonl_path))?;
        Ok(Some(CatalogWriter {
            storage: self.clone(),
            catalog: catalog.to_string(),
            digest: digest.to_string(),
            id,
            tmp,
            jsonl: BufWriter::with_capacity(256 * 1024, jsonl),
            index: IndexBuilder::default(),
            offset: 0,
            blobs: 0,
            committed: false,
        }))
    }

    /// Removes `catalog`'s content. Requests already holding it finish reading it first.
    pub fn delete(&self, catalog: &str) -> Result<(), StorageError> {
        validate_name(catalog)?;
        self.write_live().remove(catalog);
        let dir = self.inner.root.join(catalog);
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err("remove", &dir)(e)),
        }
    }

    fn read_live(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<StoredCatalog>>> {
        self.inner
            .live
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_live(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<StoredCatalog>>> {
        self.inner
            .live
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn load_from_disk(&self, catalog: &str) -> Result<Option<Arc<StoredCatalog>>, StorageError> {
        let catalog_dir = self.inner.root.join(catalog);
        let pointer = catalog_dir.join(CURRENT);
        let id = match fs::read_to_string(&pointer) {
            Ok(s) => s.trim().to_string(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err("read", &pointer)(e)),
        };
        if id.is_empty() || id.contains('/') || id.starts_with('.') {
            return Ok(None);
        }
        // Leftovers of interrupted stores or superseded content from before the restart.
        sweep(&catalog_dir, Some(&id));
        let stored = open_content(catalog, &catalog_dir.join(&id))?;
        Ok(Some(Arc::new(stored)))
    }
}

/// Appends blobs to a catalog being stored; [`CatalogWriter::commit`] makes them live. Dropping an
/// uncommitted writer removes its temporary directory.
pub struct CatalogWriter {
    storage: Storage,
    catalog: String,
    digest: String,
    id: String,
    tmp: PathBuf,
    jsonl: BufWriter<File>,
    index: IndexBuilder,
    offset: u64,
    blobs: u64,
    committed: bool,
}

impl CatalogWriter {
    /// Appends one blob (canonical JSON without a trailing newline) as one line.
    pub fn push(
        &mut self,
        schema: &str,
        package: &str,
        name: &str,
        blob: &[u8],
    ) -> Result<(), StorageError> {
        let len = blob.len() as u64 + 1;
        let write = |w: &mut dyn Write| -> io::Result<()> {
            w.write_all(blob)?;
            w.write_all(b"\n")
        };
        write(&mut self.jsonl).map_err(io_err("write", &self.tmp.join(JSONL)))?;
        self.index.add(
            schema,
            package,
            name,
            Section {
                offset: self.offset,
                len,
            },
        );
        self.offset += len;
        self.blobs += 1;
        Ok(())
    }

    /// Flushes everything to disk and atomically makes this content live. Its gzip copy follows
    /// ([`GzipCopies`]).
    pub fn commit(mut self) -> Result<Arc<StoredCatalog>, StorageError> {
        let tmp = self.tmp.clone();
        let jsonl_path = tmp.join(JSONL);
        self.jsonl.flush().map_err(io_err("write", &jsonl_path))?;
        self.jsonl
            .get_ref()
            .sync_all()
            .map_err(io_err("sync", &jsonl_path))?;

        let meta = ContentMeta {
            digest: self.digest.clone(),
            size: self.offset,
            gzip_size: None,
            blobs: self.blobs,
        };
        let index = std::mem::take(&mut self.index).build();
        write_json(&tmp.join(INDEX), &index)?;
        write_json(&tmp.join(META), &meta)?;

        let catalog_dir = self.storage.inner.root.join(&self.catalog);
        let final_dir = catalog_dir.join(&self.id);
        fs::rename(&tmp, &final_dir).map_err(io_err("rename", &tmp))?;
        self.committed = true;
        let pointer_tmp = catalog_dir.join(format!("{TMP_PREFIX}{}-current", self.id));
        fs::write(&pointer_tmp, format!("{}\n", self.id)).map_err(io_err("write", &pointer_tmp))?;
        File::open(&pointer_tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err("sync", &pointer_tmp))?;
        fs::rename(&pointer_tmp, catalog_dir.join(CURRENT))
            .map_err(io_err("rename", &pointer_tmp))?;

        let stored = Arc::new(open_content_with_index(
            &self.catalog,
            &final_dir,
            meta,
            index,
        )?);
        self.storage
            .write_live()
            .insert(self.catalog.clone(), stored.clone());
        // The previous content (and any leftovers) can go now: readers hold open files.
        sweep(&catalog_dir, Some(&self.id));
        self.storage.start_gzip_copy(&stored);
        Ok(stored)
    }
}

impl Drop for CatalogWriter {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), StorageError> {
    let file = File::create(path).map_err(io_err("create", path))?;
    let mut w = BufWriter::new(file);
    serde_json::to_writer(&mut w, value).map_err(|e| io_err("write", path)(io::Error::other(e)))?;
    w.flush().map_err(io_err("write", path))?;
    w.get_ref().sync_all().map_err(io_err("sync", path))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, StorageError> {
    let file = File::open(path).map_err(io_err("open", path))?;
    serde_json::from_reader(io::BufReader::new(file)).map_err(|source| StorageError::Corrupt {
        path: path.to_path_buf(),
        source,
    })
}

fn open_content(catalog: &str, dir: &Path) -> Result<StoredCatalog, StorageError> {
    let meta: ContentMeta = read_json(&dir.join(META))?;
    let index: Index = read_json(&dir.join(INDEX))?;
    open_content_with_index(catalog, dir, meta, index.freeze())
}

fn open_content_with_index(
    catalog: &str,
    dir: &Path,
    meta: ContentMeta,
    index: CompactIndex,
) -> Result<StoredCatalog, StorageError> {
    let jsonl_path = dir.join(JSONL);
    let jsonl = File::open(&jsonl_path).map_err(io_err("open", &jsonl_path))?;
    let gzip = GzipCopy::open(dir, &meta);
    let stat = jsonl.metadata().map_err(io_err("stat", &jsonl_path))?;
    let modified = stat.modified().map_err(io_err("stat", &jsonl_path))?;
    Ok(StoredCatalog {
        name: catalog.to_string(),
        dir: dir.to_path_buf(),
        meta,
        jsonl,
        gzip,
        modified,
        index,
        compressed: CompressedAnswers::new(dir.to_path_buf()),
    })
}

/// Removes every entry of a catalog directory except `keep` and the `current` pointer.
fn sweep(catalog_dir: &Path, keep: Option<&str>) {
    let Ok(entries) = fs::read_dir(catalog_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == CURRENT || Some(name.as_str()) == keep {
            continue;
        }
        let path = entry.path();
        let _ = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
    }
}

fn validate_name(name: &str) -> Result<(), StorageError> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') || name.contains('\0') {
        return Err(StorageError::InvalidName(name.to_string()));
    }
    Ok(())
}

fn random_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

#[cfg(test)]
mod tests;
