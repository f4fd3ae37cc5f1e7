//! A catalog tree kept in one file: its files end to end in a pack, with a listing beside it.
//!
//! Input: a pack file and its listing (each file's path relative to the catalog root, its offset
//! and length in the pack), written by the image extraction of catalog images. Output: the
//! [`Meta`]s of [`walk_metas_dir`] over the same tree extracted to `root`, in the same order and
//! with the same errors; positions and errors name each file as the path it would have under
//! `root`. Reads the pack and listing files only; no network.
//!
//! Why: extracting a catalog image file by file creates an inode per file and directory (667 for
//! the derived community catalog), and on a filesystem that has just deleted many files each new
//! inode is found by scanning past the recently deleted ones: in catalogd's ingest that took
//! 0.17–0.24 s of about 0.6 (docs/performance/issue-27.md, twenty-eighth step). A pack is one
//! inode, written in one stream.
//!
//! The walk's rules hold as on disk: files in Go's `fs.WalkDir` order (components compared by
//! bytes), `.indexignore` files read first (each within [`MAX_INDEX_IGNORE_BYTES`]) and never
//! parsed, the files they match skipped, each file within [`MAX_CATALOG_FILE_BYTES`]. A pack only
//! ever holds regular files and directories: trees with anything else are extracted to disk.
//!
//! Listing format, one line per file: `<offset> <length> <path as hex bytes>`, paths relative to
//! the catalog root, in walk order. A listing over [`MAX_LISTING_BYTES`], a malformed line, a path
//! with an empty, `.` or `..` component, or a range past the pack's end is refused.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::indexignore::{INDEX_IGNORE_FILE, IgnoreMatcher};
use super::walk::{
    Decode, MAX_CATALOG_FILE_BYTES, MAX_INDEX_IGNORE_BYTES, Meta, NullDocuments, RawObject,
    WalkError, file_error, read_stream_with,
};
use super::walk_parallel::walk_listed_parallel;
use crate::regular_file::{FileError, FileErrorKind, open_regular, read_regular};

/// Largest listing read (64 MiB: a million files with long paths).
pub const MAX_LISTING_BYTES: u64 = 64 << 20;

/// One file of a pack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedFile {
    /// Relative to the catalog root; normal components only.
    pub path: PathBuf,
    /// Where its bytes start in the pack.
    pub offset: u64,
    /// How many bytes it holds.
    pub len: u64,
}

/// An open pack and its files in walk order.
#[derive(Debug)]
pub struct PackedCatalog {
    /// The directory the files would be in if extracted: names them in positions and errors.
    root: PathBuf,
    pack: File,
    files: Vec<PackedFile>,
}

/// Writes `files` as a listing (sorted into walk order) to `to`.
pub fn write_listing(to: &Path, files: &[PackedFile]) -> io::Result<()> {
    let mut sorted: Vec<&PackedFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut text = String::new();
    for file in sorted {
        text.push_str(&format!("{} {} ", file.offset, file.len));
        for byte in file.path.as_os_str().as_bytes() {
            text.push_str(&format!("{byte:02x}"));
        }
        text.push('\n');
    }
    std::fs::write(to, text)
}

impl PackedCatalog {
    /// Opens the pack at `pack` with the listing at `listing`; `root` is where its files would be.
    pub fn open(root: PathBuf, pack: &Path, listing: &Path) -> Result<PackedCatalog, WalkError> {
        let invalid = |detail: String| WalkError::Io {
            path: listing.display().to_string(),
            source: io::Error::new(io::ErrorKind::InvalidData, detail),
        };
        let text = read_regular(listing, MAX_LISTING_BYTES).map_err(file_error)?;
        let (pack_file, pack_len) = open_regular(pack).map_err(file_error)?;
        let mut files = Vec::new();
        for (n, line) in text.split(|b| *b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let file =
                parse_line(line).ok_or_else(|| invalid(format!("line {}: malformed", n + 1)))?;
            if file
                .offset
                .checked_add(file.len)
                .is_none_or(|end| end > pack_len)
            {
                return Err(invalid(format!(
                    "line {}: bytes {}+{} are past the pack's end ({pack_len})",
                    n + 1,
                    file.offset,
                    file.len
                )));
            }
            files.push(file);
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(PackedCatalog {
            root,
            pack: pack_file,
            files,
        })
    }

    /// The files, in walk order.
    pub fn files(&self) -> &[PackedFile] {
        &self.files
    }

    /// Where `file` would be if extracted.
    fn display(&self, file: &PackedFile) -> PathBuf {
        self.root.join(&file.path)
    }

    fn too_large(&self, file: &PackedFile, limit: u64) -> WalkError {
        file_error(FileError {
            path: self.display(file),
            kind: FileErrorKind::TooLarge {
                size: file.len,
                limit,
            },
        })
    }

    fn reader(&self, file: &PackedFile) -> RangeReader<'_> {
        RangeReader {
            pack: &self.pack,
            at: file.offset,
            end: file.offset + file.len,
        }
    }

    /// The `.indexignore` patterns and the files the walk reads, as [`super::walk::catalog_files`]
    /// finds them on disk.
    fn catalog_files(&self) -> Result<Vec<&PackedFile>, WalkError> {
        let mut matcher = IgnoreMatcher::default();
        for file in &self.files {
            if file
                .path
                .file_name()
                .is_some_and(|n| n == INDEX_IGNORE_FILE)
            {
                if file.len > MAX_INDEX_IGNORE_BYTES {
                    return Err(self.too_large(file, MAX_INDEX_IGNORE_BYTES));
                }
                let mut text = Vec::new();
                self.reader(file)
                    .read_to_end(&mut text)
                    .map_err(|source| WalkError::Io {
                        path: self.display(file).display().to_string(),
                        source,
                    })?;
                let domain: Vec<String> = components(file.path.parent().unwrap_or(Path::new("")));
                matcher.add_patterns(&String::from_utf8_lossy(&text), &domain);
            }
        }
        Ok(self
            .files
            .iter()
            .filter(|file| {
                if file
                    .path
                    .file_name()
                    .is_some_and(|n| n == INDEX_IGNORE_FILE)
                {
                    return false;
                }
                let names = components(&file.path);
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                !matcher.is_ignored(&names)
            })
            .collect())
    }

    /// Streams one file's objects.
    fn read_file(
        &self,
        file: &PackedFile,
        f: &mut dyn FnMut(RawObject) -> Result<(), WalkError>,
    ) -> Result<(), WalkError> {
        if file.len > MAX_CATALOG_FILE_BYTES {
            return Err(self.too_large(file, MAX_CATALOG_FILE_BYTES));
        }
        read_stream_with(
            self.reader(file),
            Arc::from(self.display(file).display().to_string()),
            NullDocuments::Skip,
            Decode::BlobsOnly,
            f,
        )
    }
}

/// Streams every object of `packed` as [`walk_metas_dir`](super::walk_metas_dir) streams the same
/// tree on disk, encoding files on up to `threads` threads
/// ([`walk_metas_dir_parallel`](super::walk_metas_dir_parallel)'s order, memory and errors).
pub fn walk_metas_packed_parallel(
    packed: &PackedCatalog,
    threads: usize,
    mut f: impl FnMut(Meta) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    let files = packed.catalog_files()?;
    if threads <= 1 {
        for file in files {
            packed.read_file(file, &mut |raw: RawObject| f(raw.into_meta()))?;
        }
        return Ok(());
    }
    walk_listed_parallel(
        &files,
        threads,
        &|file: &&PackedFile, cb: &mut dyn FnMut(RawObject) -> Result<(), WalkError>| {
            packed.read_file(file, cb)
        },
        &|file: &&PackedFile| packed.display(file).display().to_string(),
        Ok(()),
        &mut f,
    )
}

/// Path components as the walk matches them (lossy UTF-8, as on disk).
fn components(path: &Path) -> Vec<String> {
    path.iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect()
}

fn parse_line(line: &[u8]) -> Option<PackedFile> {
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    let offset = parts.next()?.parse().ok()?;
    let len = parts.next()?.parse().ok()?;
    let hex = parts.next()?;
    if parts.next().is_some() || hex.is_empty() || hex.len() % 2 != 0 {
        return None;
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    let path = PathBuf::from(std::ffi::OsString::from_vec(bytes));
    let normal = path.components().all(|c| matches!(c, Component::Normal(_)))
        && path.components().count() > 0
        && path.as_os_str().as_bytes().first() != Some(&b'/');
    normal.then_some(PackedFile { path, offset, len })
}

/// Reads one file's bytes out of the pack, with `pread` (threads share the pack).
struct RangeReader<'a> {
    pack: &'a File,
    at: u64,
    end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end - self.at).unwrap_or(usize::MAX);
        let want = left.min(buf.len());
        if want == 0 {
            return Ok(0);
        }
        let n = self.pack.read_at(&mut buf[..want], self.at)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the pack ended inside this file",
            ));
        }
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fbc::walk_metas_dir;

    /// Packs every regular file under `root` (in the order the directory lists them, not walk
    /// order, as layers may hold them) and opens the pack as if extracted at `root`.
    fn pack_of(root: &Path, into: &Path) -> PackedCatalog {
        fn collect(base: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for e in std::fs::read_dir(dir).expect("list") {
                let e = e.expect("entry");
                if e.file_type().expect("type").is_dir() {
                    collect(base, &e.path(), out);
                } else {
                    let rel = e.path().strip_prefix(base).expect("rel").to_path_buf();
                    out.push((rel, std::fs::read(e.path()).expect("read")));
                }
            }
        }
        let mut found = Vec::new();
        collect(root, root, &mut found);
        let (mut bytes, mut files) = (Vec::new(), Vec::new());
        for (path, content) in found {
            files.push(PackedFile {
                path,
                offset: bytes.len() as u64,
                len: content.len() as u64,
            });
            bytes.extend_from_slice(&content);
        }
        let (pack, listing) = (into.join("pack"), into.join("pack.list"));
        std::fs::write(&pack, bytes).expect("pack");
        write_listing(&listing, &files).expect("listing");
        PackedCatalog::open(root.to_path_buf(), &pack, &listing).expect("open")
    }

    /// (schema, package, name, blob, origin) of one object.
    type Walked = (String, String, String, Vec<u8>, String);

    /// Every object, or the error's text.
    fn walked(
        walk: impl FnOnce(&mut dyn FnMut(Meta) -> Result<(), WalkError>) -> Result<(), WalkError>,
    ) -> Result<Vec<Walked>, String> {
        let mut out = Vec::new();
        walk(&mut |m: Meta| {
            out.push((m.schema, m.package, m.name, m.blob, m.origin.to_string()));
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        Ok(out)
    }

    fn write(root: &Path, rel: &str, text: &[u8]) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// The same tree walked on disk and from its pack, on every thread count.
    #[track_caller]
    fn agrees(root: &Path) -> Result<usize, String> {
        let scratch = tempfile::tempdir().expect("tempdir");
        let packed = pack_of(root, scratch.path());
        let on_disk = walked(|f| walk_metas_dir(root, f));
        for threads in [1, 2, 4] {
            let from_pack = walked(|f| walk_metas_packed_parallel(&packed, threads, f));
            assert_eq!(from_pack, on_disk, "{threads} threads");
        }
        on_disk.map(|objects| objects.len())
    }

    #[test]
    fn a_pack_walks_as_its_tree_on_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for p in 0..6 {
            let mut json = format!("{{\"schema\":\"olm.package\",\"name\":\"p{p}\"}}\n");
            for b in 0..(p * 30) {
                json.push_str(&format!(
                    "{{\"schema\":\"olm.bundle\",\"package\":\"p{p}\",\"name\":\"b{b}\",\"z\":\"{}\",\"a\":1}}\n",
                    "x".repeat(3000)
                ));
            }
            write(root, &format!("pkgs/p{p:02}/catalog.json"), json.as_bytes());
        }
        // Component order, not string order: `a/b` is walked before `a-b`.
        write(
            root,
            "a/b/catalog.yaml",
            b"schema: olm.package\nname: a-slash-b\n",
        );
        write(
            root,
            "a-b/catalog.json",
            b"{\"schema\":\"olm.package\",\"name\":\"a-dash-b\"}",
        );
        write(root, "pkgs/p03/notes.md", b"# only a heading\n");
        write(root, "pkgs/.indexignore", b"p05\n# a comment\n");
        write(root, ".indexignore", b"a-b\n");
        // p00–p04 (p05 ignored), each a package and 30 bundles per index; `a/b`; `a-b` ignored.
        assert_eq!(agrees(root), Ok(5 + 30 * (1 + 2 + 3 + 4) + 1));
    }

    #[test]
    fn a_broken_file_fails_as_on_disk_naming_the_same_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "a/catalog.json",
            b"{\"schema\":\"olm.package\",\"name\":\"a\"}",
        );
        write(
            dir.path(),
            "b/catalog.json",
            b"{\"schema\":\"olm.package\",\"name\":",
        );
        let err = agrees(dir.path()).expect_err("broken");
        assert!(err.contains("b/catalog.json"), "{err}");
    }

    #[test]
    fn an_oversized_indexignore_fails_as_on_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "a/catalog.json",
            b"{\"schema\":\"olm.package\",\"name\":\"a\"}",
        );
        write(
            dir.path(),
            "a/.indexignore",
            &vec![b'#'; MAX_INDEX_IGNORE_BYTES as usize + 1],
        );
        let err = agrees(dir.path()).expect_err("too large");
        assert!(
            err.contains("a/.indexignore") && err.contains("larger than the limit"),
            "{err}"
        );
    }

    #[test]
    fn a_damaged_listing_is_refused_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (pack, listing) = (dir.path().join("pack"), dir.path().join("pack.list"));
        std::fs::write(&pack, b"0123456789").expect("pack");
        for (text, says) in [
            ("0 11 61\n", "past the pack's end"),
            ("0 1\n", "malformed"),
            ("0 1 2e2e\n", "malformed"),
            ("0 1 2f61\n", "malformed"),
            ("x 1 61\n", "malformed"),
            ("0 1 6\n", "malformed"),
        ] {
            std::fs::write(&listing, text).expect("listing");
            let err = PackedCatalog::open(PathBuf::from("/c"), &pack, &listing)
                .expect_err(text)
                .to_string();
            assert!(
                err.contains("pack.list") && err.contains(says),
                "{text:?}: {err}"
            );
        }
    }
}
