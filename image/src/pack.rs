//! Extracts a catalog image's FBC directory into one pack file instead of a file tree.
//!
//! Input: the layers of an image, in order, and the directory the catalog label names. Output: a
//! pack (the regular files' bytes end to end) and its listing
//! ([`olm_api::fbc::packed`]), or [`PackError::NotPackable`] when the tree needs more than a pack
//! holds. No network; blocking IO, run it on a blocking thread.
//!
//! Why: a file tree costs an inode per file and directory, which on a filesystem that has just
//! deleted many files is most of an ingest's extraction time (docs/performance/issue-27.md,
//! twenty-eighth step); a pack is one inode.
//!
//! A pack holds only what it can hold exactly: regular files and directories under the catalog
//! directory, later layers replacing earlier files. Anything the on-disk extraction treats with
//! care is [`PackError::NotPackable`], and the caller extracts the image to disk with
//! [`crate::extract::Extractor`] instead, which applies or refuses it as its table says, with its
//! errors: under the catalog directory a symlink, hardlink, device, FIFO or unknown entry type, a
//! whiteout, a file where a directory was or the reverse, the catalog directory itself a file or
//! missing, a name over 255 bytes or a path over 3,072; anywhere, a `..` path, a whiteout that names `.` or `..` or reaches the catalog
//! directory, an unreadable or corrupt layer, or more entries or bytes than [`Limits`].

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use olm_api::fbc::packed::{PackedFile, write_listing};
use tar::EntryType;

use crate::decompress;
use crate::extract::{Entry, Limits, classify};

/// Why a layer was not packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The tree needs the on-disk extraction (the reason is for the log).
    #[error("not packable: {0}")]
    NotPackable(String),
    /// Writing the pack failed.
    #[error("failed to write the pack: {0}")]
    Write(#[source] io::Error),
}

/// The copy buffer: 128 KiB, two reads of the inflater's output per write.
const COPY_BUFFER: usize = 128 << 10;

/// Longest file name most filesystems store (ext4, xfs, btrfs: 255 bytes).
const MAX_NAME_BYTES: usize = 255;
/// Longest path packed: Linux's `PATH_MAX` (4096) less room for the cache directory in front.
const MAX_PATH_BYTES: usize = 3072;

fn not_packable(why: impl Into<String>) -> PackError {
    PackError::NotPackable(why.into())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Dir,
    File { offset: u64, len: u64 },
}

/// Packs the layers of one image, one after another. Call [`Packer::finish`] after the last.
pub struct Packer {
    /// The catalog directory, relative to the image root (never empty).
    dir: PathBuf,
    limits: Limits,
    entries: u64,
    bytes: u64,
    out: File,
    /// Bytes in `out` so far.
    written: u64,
    /// One reused buffer between the layer and the pack: each entry's bytes go straight to the
    /// file, a buffer at a time (no second, buffered copy).
    buf: Vec<u8>,
    /// Everything packed under `dir` (and `dir` itself), by path relative to the image root.
    nodes: BTreeMap<PathBuf, Node>,
}

impl Packer {
    /// A packer writing to a new file at `pack`, for the catalog directory `dir` (relative,
    /// normalised, not empty).
    pub fn create(pack: &Path, dir: PathBuf, limits: Limits) -> io::Result<Packer> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(pack)?;
        Ok(Packer {
            dir,
            limits,
            entries: 0,
            bytes: 0,
            out: file,
            written: 0,
            buf: vec![0; COPY_BUFFER],
            nodes: BTreeMap::new(),
        })
    }

    /// Bytes of file content packed so far (replaced files included, as on disk).
    pub fn extracted_bytes(&self) -> u64 {
        self.bytes
    }

    /// Packs one layer blob (gzip, zstd or plain tar).
    pub fn apply_layer<R: Read>(&mut self, blob: R) -> Result<(), PackError> {
        let unreadable = |e: io::Error| not_packable(format!("layer not readable: {e}"));
        let buffered = io::BufReader::with_capacity(256 * 1024, blob);
        let tar_stream = decompress::decompressing_reader(buffered).map_err(unreadable)?;
        let mut archive = tar::Archive::new(tar_stream);
        for entry in archive.entries().map_err(unreadable)? {
            let mut entry = entry.map_err(unreadable)?;
            self.entries += 1;
            if self.entries > self.limits.max_entries {
                return Err(not_packable("too many entries"));
            }
            let raw_path = entry.path_bytes().into_owned();
            self.apply_entry(&mut entry, &raw_path)?;
        }
        Ok(())
    }

    fn apply_entry<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        raw_path: &[u8],
    ) -> Result<(), PackError> {
        let entry_type = entry.header().entry_type();
        let path = match classify(entry_type, raw_path) {
            Err(()) => return Err(not_packable("a \"..\" path")),
            Ok(Entry::Skipped) => return Ok(()),
            Ok(Entry::OpaqueWhiteout(dir)) => return self.outside(&dir, "an opaque whiteout"),
            Ok(Entry::InvalidWhiteout) => return Err(not_packable("an invalid whiteout")),
            Ok(Entry::Whiteout(target)) => return self.outside(&target, "a whiteout"),
            Ok(Entry::Path(path)) => path,
        };
        if !path.starts_with(&self.dir) {
            return Ok(());
        }
        // Names the filesystem would refuse on disk (ENAMETOOLONG) are the disk's to report; a
        // path is taken as too long well before PATH_MAX, leaving room for the cache root.
        if path.iter().any(|c| c.len() > MAX_NAME_BYTES) || path.as_os_str().len() > MAX_PATH_BYTES
        {
            return Err(not_packable("a name or path the filesystem may refuse"));
        }
        match entry_type {
            EntryType::Directory => {
                self.parents(&path)?;
                match self.nodes.get(&path) {
                    Some(Node::File { .. }) => return Err(not_packable("a directory over a file")),
                    Some(Node::Dir) => {}
                    None => {
                        self.nodes.insert(path, Node::Dir);
                    }
                }
            }
            EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
                if self.bytes.saturating_add(entry.size()) > self.limits.max_extracted_bytes {
                    return Err(not_packable("too many bytes"));
                }
                self.parents(&path)?;
                if self.nodes.get(&path) == Some(&Node::Dir) {
                    return Err(not_packable("a file over a directory"));
                }
                let offset = self.written;
                let len = self.copy(entry)?;
                self.nodes.insert(path, Node::File { offset, len });
            }
            _ => return Err(not_packable("an entry that is not a file or directory")),
        }
        Ok(())
    }

    /// Ok when a whiteout of `target` cannot touch the catalog directory: it is neither in it nor
    /// one of its parents.
    fn outside(&self, target: &Path, what: &str) -> Result<(), PackError> {
        if target.starts_with(&self.dir) || self.dir.starts_with(target) {
            return Err(not_packable(format!("{what} in the catalog directory")));
        }
        Ok(())
    }

    /// Records the directories above `path`, down from the catalog directory; a file among them
    /// is not packable.
    fn parents(&mut self, path: &Path) -> Result<(), PackError> {
        for parent in path.ancestors().skip(1) {
            if !parent.starts_with(&self.dir) {
                break;
            }
            match self.nodes.get(parent) {
                Some(Node::File { .. }) => return Err(not_packable("a path through a file")),
                Some(Node::Dir) => {}
                None => {
                    self.nodes.insert(parent.to_path_buf(), Node::Dir);
                }
            }
        }
        Ok(())
    }

    /// Appends the entry's bytes to the pack; returns how many.
    fn copy<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<u64, PackError> {
        let mut len = 0u64;
        loop {
            let n = match entry.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(not_packable(format!("entry not readable: {e}"))),
            };
            self.bytes += n as u64;
            if self.bytes > self.limits.max_extracted_bytes {
                return Err(not_packable("too many bytes"));
            }
            self.out
                .write_all(&self.buf[..n])
                .map_err(PackError::Write)?;
            len += n as u64;
        }
        self.written += len;
        Ok(len)
    }

    /// Completes the pack and writes its listing to `listing`; the catalog directory must be a
    /// directory.
    pub fn finish(self, listing: &Path) -> Result<(), PackError> {
        if self.nodes.get(&self.dir) != Some(&Node::Dir) {
            return Err(not_packable("no catalog directory"));
        }
        let files: Vec<PackedFile> = self
            .nodes
            .iter()
            .filter_map(|(path, node)| match *node {
                Node::File { offset, len } => Some(PackedFile {
                    path: path.strip_prefix(&self.dir).ok()?.to_path_buf(),
                    offset,
                    len,
                }),
                Node::Dir => None,
            })
            .collect();
        write_listing(listing, &files).map_err(PackError::Write)
    }
}

#[cfg(test)]
#[path = "pack_tests.rs"]
mod tests;
