//! Opening and reading files that must be regular files, with a size bound.
//!
//! Input: a path (symlinks are followed, as `open(2)` does) and, for reads, a byte limit. Output:
//! an open [`File`] or the file's bytes, or a [`FileError`] naming the path and what was wrong.
//! Local disk only.
//!
//! Every file the product reads from a catalog, a bundle, a flag or an unpacked image goes through
//! here, because a plain `File::open` + `read_to_end` trusts the path too much:
//!
//! | what is at the path            | plain open + read                   | here                                   |
//! |--------------------------------|-------------------------------------|----------------------------------------|
//! | a FIFO with no writer          | `open` blocks forever               | opened non-blocking, refused as a FIFO |
//! | `/dev/zero`, `/dev/urandom`    | reads until memory runs out         | refused as a character device          |
//! | a block device or a socket     | reads device data / fails oddly     | refused, naming the kind               |
//! | a directory                    | `EISDIR` on read                    | refused as a directory                 |
//! | a regular file over the limit  | read whole                          | refused before reading, with the sizes |
//! | a regular file growing while read | read whole                       | reading stops at the limit: refused    |
//!
//! The type is checked with `fstat` on the opened descriptor, not with a `stat` of the path
//! before opening, so a path swapped between the check and the open cannot slip through.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `O_NONBLOCK`: opening a FIFO for reading must not wait for a writer. It changes nothing for a
/// regular file (reads of regular files never block in the non-blocking sense).
const O_NONBLOCK: i32 = rustix::fs::OFlags::NONBLOCK.bits() as i32;

/// Why a file could not be opened or read as a regular file.
#[derive(Debug)]
pub struct FileError {
    pub path: PathBuf,
    pub kind: FileErrorKind,
}

/// What was wrong with the file.
#[derive(Debug)]
pub enum FileErrorKind {
    /// `open`, `fstat` or `read` failed.
    Io(io::Error),
    /// The path is not a regular file; the value names what it is ("a FIFO", "a directory", ...).
    NotRegular(&'static str),
    /// The file holds more bytes than allowed.
    TooLarge { size: u64, limit: u64 },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            FileErrorKind::Io(e) => write!(f, "failed to read {path}: {e}"),
            FileErrorKind::NotRegular(what) => {
                write!(f, "failed to read {path}: not a regular file ({what})")
            }
            FileErrorKind::TooLarge { size, limit } => write!(
                f,
                "failed to read {path}: file is larger than the limit of {limit} bytes ({size} bytes)"
            ),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            FileErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl FileError {
    fn io(path: &Path, e: io::Error) -> FileError {
        FileError {
            path: path.to_path_buf(),
            kind: FileErrorKind::Io(e),
        }
    }
}

/// What a non-regular file type is, in words for an error message.
fn describe(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Opens `path` for reading, following symlinks, and fails unless it is a regular file. Returns
/// the file and its size at open time.
pub fn open_regular(path: &Path) -> Result<(File, u64), FileError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(|e| FileError::io(path, e))?;
    let meta = file.metadata().map_err(|e| FileError::io(path, e))?;
    let t = meta.file_type();
    if !t.is_file() {
        return Err(FileError {
            path: path.to_path_buf(),
            kind: FileErrorKind::NotRegular(describe(t)),
        });
    }
    Ok((file, meta.len()))
}

/// Reads the whole regular file at `path`, refusing it when it holds more than `limit` bytes
/// (checked before reading, and again while reading in case the file grows).
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let (file, size) = open_regular(path)?;
    let too_large = |size| FileError {
        path: path.to_path_buf(),
        kind: FileErrorKind::TooLarge { size, limit },
    };
    if size > limit {
        return Err(too_large(size));
    }
    // The size is at most `limit`, which callers keep far below memory; +1 detects growth.
    let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| FileError::io(path, e))?;
    if buf.len() as u64 > limit {
        return Err(too_large(buf.len() as u64));
    }
    Ok(buf)
}

/// Concatenates the regular files directly in `dir` in name order, each read with
/// [`read_regular`] under `file_limit` and followed by a newline: a directory of PEM CA
/// certificates (`--pull-cas-dir`, `--catalogd-cas-dir`) becomes one bundle. Entries that are
/// not regular files (subdirectories, FIFOs, devices) are skipped without being opened; an
/// oversized file is an error naming it.
pub fn read_pem_dir(dir: &Path, file_limit: u64) -> Result<Vec<u8>, FileError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| FileError::io(dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    let mut bundle = Vec::new();
    for path in entries {
        bundle.extend_from_slice(&read_regular(&path, file_limit)?);
        bundle.push(b'\n');
    }
    Ok(bundle)
}

/// A regular file opened by [`open_regular_bounded`]: reads fail once more than the limit has
/// come out of it (the file grew after it was opened).
#[derive(Debug)]
pub struct BoundedFile {
    file: File,
    remaining: u64,
    limit: u64,
    path: PathBuf,
}

impl Read for BoundedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte past the limit tells "exactly at the limit" from "over it".
        let want = usize::try_from(self.remaining.saturating_add(1))
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.file.read(&mut buf[..want])?;
        if n as u64 > self.remaining {
            let e = FileError {
                path: self.path.clone(),
                kind: FileErrorKind::TooLarge {
                    size: self.limit.saturating_add(1),
                    limit: self.limit,
                },
            };
            return Err(e.into_io_error());
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// Opens `path` as [`open_regular`] does, for streaming at most `limit` bytes: a file larger than
/// `limit` is refused before reading, and one that grows past it fails the read that crosses it.
pub fn open_regular_bounded(path: &Path, limit: u64) -> Result<BoundedFile, FileError> {
    let (file, size) = open_regular(path)?;
    if size > limit {
        return Err(FileError {
            path: path.to_path_buf(),
            kind: FileErrorKind::TooLarge { size, limit },
        });
    }
    Ok(BoundedFile {
        file,
        remaining: limit,
        limit,
        path: path.to_path_buf(),
    })
}

impl FileError {
    /// What is wrong, without the path (for errors that name the path themselves).
    pub fn detail(&self) -> String {
        match &self.kind {
            FileErrorKind::Io(e) => e.to_string(),
            FileErrorKind::NotRegular(what) => format!("not a regular file ({what})"),
            FileErrorKind::TooLarge { size, limit } => {
                format!("file is larger than the limit of {limit} bytes ({size} bytes)")
            }
        }
    }

    /// The error as an `io::Error` carrying [`FileError::detail`] (the OS error itself for IO).
    pub fn into_io_error(self) -> io::Error {
        let detail = self.detail();
        match self.kind {
            FileErrorKind::Io(e) => e,
            FileErrorKind::NotRegular(_) => io::Error::new(io::ErrorKind::InvalidInput, detail),
            FileErrorKind::TooLarge { .. } => io::Error::new(io::ErrorKind::FileTooLarge, detail),
        }
    }
}

/// [`read_regular`] as UTF-8 text; invalid UTF-8 is an error naming the path.
pub fn read_regular_to_string(path: &Path, limit: u64) -> Result<String, FileError> {
    let bytes = read_regular(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        FileError::io(
            path,
            io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()),
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixListener;
    use std::process::Command;

    #[test]
    fn a_pem_directory_is_concatenated_in_name_order_skipping_special_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.pem"), b"B").unwrap();
        std::fs::write(dir.path().join("a.pem"), b"A").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        assert_eq!(read_pem_dir(dir.path(), 10).unwrap(), b"A\nB\n");

        let missing = read_pem_dir(&dir.path().join("nope"), 10).unwrap_err();
        assert_eq!(missing.path, dir.path().join("nope"));
        // A FIFO is skipped, not opened (opening it would block).
        let fifo = dir.path().join("c.pem");
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(read_pem_dir(dir.path(), 10).unwrap(), b"A\nB\n");
        std::fs::write(dir.path().join("d.pem"), b"0123456789X").unwrap();
        let e = read_pem_dir(dir.path(), 10).unwrap_err();
        assert_eq!(e.path, dir.path().join("d.pem"));
        assert!(matches!(e.kind, FileErrorKind::TooLarge { .. }), "{e}");
    }

    #[test]
    fn a_regular_file_within_the_limit_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.yaml");
        std::fs::write(&p, b"hello").unwrap();
        assert_eq!(read_regular(&p, 5).unwrap(), b"hello");
        assert_eq!(read_regular_to_string(&p, 100).unwrap(), "hello");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_with_both_sizes_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.json");
        std::fs::write(&p, vec![b'x'; 11]).unwrap();
        let e = read_regular(&p, 10).unwrap_err();
        assert!(matches!(
            e.kind,
            FileErrorKind::TooLarge {
                size: 11,
                limit: 10
            }
        ));
        let text = e.to_string();
        assert!(text.contains("big.json"), "{text}");
        assert!(text.contains("limit of 10 bytes (11 bytes)"), "{text}");
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pipe");
        let status = Command::new("mkfifo").arg(&p).status().unwrap();
        assert!(status.success());
        let e = read_regular(&p, 1024).unwrap_err();
        assert!(matches!(e.kind, FileErrorKind::NotRegular("a FIFO")), "{e}");
        assert!(e.to_string().ends_with("pipe: not a regular file (a FIFO)"));
    }

    #[test]
    fn a_symlink_to_dev_zero_is_refused_as_a_character_device() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
        let e = read_regular(&p, u64::MAX).unwrap_err();
        assert!(
            matches!(e.kind, FileErrorKind::NotRegular("a character device")),
            "{e}"
        );
    }

    #[test]
    fn directories_sockets_and_missing_paths_are_errors_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_regular(dir.path(), 10).unwrap_err();
        assert!(matches!(e.kind, FileErrorKind::NotRegular("a directory")));
        let sock = dir.path().join("sock");
        let _l = UnixListener::bind(&sock).unwrap();
        let e = read_regular(&sock, 10).unwrap_err();
        // Opening a socket path fails with ENXIO before fstat can name it; either way it fails.
        assert!(e.to_string().contains("sock"), "{e}");
        let missing = dir.path().join("missing");
        let e = read_regular(&missing, 10).unwrap_err();
        assert!(matches!(e.kind, FileErrorKind::Io(_)));
        assert!(e.to_string().contains("missing"));
    }

    #[test]
    fn invalid_utf8_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bin");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        let e = read_regular_to_string(&p, 10).unwrap_err();
        assert!(e.to_string().contains("bin"));
    }

    #[test]
    fn a_bounded_file_streams_up_to_its_limit_and_refuses_more() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let mut out = Vec::new();
        open_regular_bounded(&p, 10)
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"0123456789");
        let e = open_regular_bounded(&p, 9).unwrap_err();
        assert_eq!(
            e.detail(),
            "file is larger than the limit of 9 bytes (10 bytes)"
        );
        // Growth after opening: the read that crosses the limit fails.
        let mut f = open_regular_bounded(&p, 10).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        let e = f.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        let fifo = dir.path().join("pipe");
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let e = open_regular_bounded(&fifo, 10).unwrap_err();
        assert_eq!(e.into_io_error().to_string(), "not a regular file (a FIFO)");
    }
}
