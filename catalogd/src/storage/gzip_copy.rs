//! The precompressed copy of a stored content, `catalog.jsonl.gz`, written after it is live.
//!
//! Input: a content directory whose `catalog.jsonl` and `meta.json` are complete. Output:
//! `catalog.jsonl.gz` next to them and its size in `meta.json`. Touches the local filesystem only.
//!
//! Why after: on two cores the ingest is CPU-bound, and compressing the copy took as long as
//! parsing and writing the content itself (0.5 s of 0.9 CPU s for an 84 MB catalog), so with the
//! copy in the ingest's path a catalog became `Serving` only once both were done. Written after
//! the content is live, the copy costs the same CPU but no longer delays serving. Until it
//! exists, gzip requests are compressed on the fly as upstream compresses every one (chunked, no
//! `Content-Length`); the decompressed bytes are the same either way. A content directory whose
//! copy is missing or unfinished (a restart in the middle) gets it written again when loaded.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::{ContentMeta, GZIP, META, TMP_PREFIX, io_err, write_json};
use crate::storage::StorageError;

/// Bytes of `catalog.jsonl` read per step.
const READ: usize = 256 * 1024;

/// The gzip copy of one stored content: present, or still to be written.
#[derive(Debug)]
pub(super) struct GzipCopy {
    dir: PathBuf,
    /// The finished copy and its size.
    done: OnceLock<(File, u64)>,
    /// Held while writing, so the copy is written once however many callers ask.
    writing: Mutex<()>,
}

impl GzipCopy {
    /// The copy `meta` records for `dir`, if its file is there with that size; else one still
    /// to be written.
    pub(super) fn open(dir: &Path, meta: &ContentMeta) -> GzipCopy {
        let copy = GzipCopy {
            dir: dir.to_path_buf(),
            done: OnceLock::new(),
            writing: Mutex::new(()),
        };
        if let Some(size) = meta.gzip_size
            && let Ok(file) = File::open(dir.join(GZIP))
            && file.metadata().is_ok_and(|m| m.len() == size)
        {
            let _ = copy.done.set((file, size));
        }
        copy
    }

    /// The finished copy and its size.
    pub(super) fn get(&self) -> Option<(&File, u64)> {
        self.done.get().map(|(file, size)| (file, *size))
    }

    /// Writes the copy of `jsonl` unless it exists, and records its size in `meta.json` (a copy
    /// of `meta` with the size). Returns the size. Blocking; a second caller waits for the first.
    pub(super) fn write(&self, jsonl: &File, meta: &ContentMeta) -> Result<u64, StorageError> {
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, size)) = self.get() {
            return Ok(size);
        }
        let partial = self.partial("gzip");
        let size = compress(jsonl, &partial).map_err(io_err("write", &partial))?;
        let path = self.dir.join(GZIP);
        fs::rename(&partial, &path).map_err(io_err("rename", &partial))?;
        // meta.json is replaced atomically: a restart finds either the old one (and writes the
        // copy again) or the new one.
        let meta_partial = self.partial("meta");
        let recorded = ContentMeta {
            gzip_size: Some(size),
            ..meta.clone()
        };
        write_json(&meta_partial, &recorded)?;
        fs::rename(&meta_partial, self.dir.join(META)).map_err(io_err("rename", &meta_partial))?;
        let file = File::open(&path).map_err(io_err("open", &path))?;
        let _ = self.done.set((file, size));
        Ok(size)
    }

    /// A file being written for this content, beside its directory rather than in it: a
    /// temporary name the catalog's next sweep removes (after a crash, or when the content is
    /// superseded meanwhile), and never a file left in a directory being removed.
    fn partial(&self, what: &str) -> PathBuf {
        let id = self.dir.file_name().unwrap_or_default().to_string_lossy();
        let catalog_dir = self.dir.parent().unwrap_or(&self.dir);
        catalog_dir.join(format!("{TMP_PREFIX}{id}-{what}"))
    }
}

/// Compresses all of `jsonl` into a new file at `to` and syncs it; returns the file's size.
///
/// Level 6, zlib's default (and Go's, which upstream's on-the-fly gzip uses): on the 84 MB
/// derived catalog level 9 took 0.80-0.87 s against 0.49-0.53 s for level 6, for a copy 12%
/// smaller (9.5 vs 10.8 MB) (docs/performance/issue-27.md, "Issue 27: sixth step").
fn compress(jsonl: &File, to: &Path) -> io::Result<u64> {
    let out = File::create(to)?;
    let mut gz = GzEncoder::new(BufWriter::with_capacity(READ, out), Compression::new(6));
    let mut buf = vec![0; READ];
    let mut offset = 0u64;
    loop {
        let n = jsonl.read_at(&mut buf, offset)?;
        if n == 0 {
            break;
        }
        gz.write_all(&buf[..n])?;
        offset += n as u64;
    }
    let mut out = gz.finish()?;
    out.flush()?;
    let file = out.get_ref();
    file.sync_all()?;
    Ok(file.metadata()?.len())
}
