//! A package's content read from a local File-Based Catalog directory.
//!
//! Input: a catalog root (directory or single file) and a package name. Output: that package's
//! [`PackageContent`], identical to what the same catalog served by catalogd yields. Reads local
//! files only; blocking.
//!
//! Files are visited in catalogd's order (names bytewise, depth first, `.indexignore` honoured),
//! so duplicates resolve the same way. To stay fast on large catalogs (one resolution must not
//! parse 86 MB), each file is first searched for the package name as raw bytes and is parsed
//! only when the name could be in it:
//!
//! | file contains                                                  | parsed |
//! |----------------------------------------------------------------|--------|
//! | the name's bytes                                               | yes    |
//! | a `\u`, `\U` or `\x` escape decoding to a character of the name | yes    |
//! | a backslash before a line break (YAML line continuation)       | yes    |
//! | none of these                                                  | no: no object of it can name the package |
//!
//! The search is only used for names made of ASCII letters, digits, `.`, `-` and `_` (every valid
//! package name); any other name parses every file. A skipped file is not validated: a syntax
//! error in an unrelated file goes unnoticed here, while catalogd would refuse the whole catalog
//! (`catalogd validate DIR` checks everything).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use memchr::memmem;
use olm_api::fbc::WalkError;
use olm_api::fbc::walk::{MAX_CATALOG_FILE_BYTES, catalog_files};
use olm_api::fbc::{DeclarativeConfig, LoadError};
use olm_api::regular_file::{open_regular, read_regular};

use crate::resolve::PackageContent;

/// A catalog directory (or single catalog file).
#[derive(Clone, Debug)]
pub struct DirSource {
    root: PathBuf,
}

/// Why a directory catalog could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("failed to read {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("failed to load package {package:?} from {path}: {source}")]
    Load {
        package: String,
        path: String,
        source: LoadError,
    },
}

/// Enumerating catalog files only fails on IO.
impl From<WalkError> for DirError {
    fn from(e: WalkError) -> Self {
        match e {
            WalkError::Io { path, source } => DirError::Io { path, source },
            other => DirError::Io {
                path: other.origin().map(|o| o.to_string()).unwrap_or_default(),
                source: io::Error::other(other.to_string()),
            },
        }
    }
}

impl DirSource {
    /// A source for the catalog at `root`, which must exist and be readable.
    pub fn open(root: impl Into<PathBuf>) -> Result<DirSource, DirError> {
        let root = root.into();
        let meta = fs::metadata(&root).map_err(|source| DirError::Io {
            path: root.display().to_string(),
            source,
        })?;
        if meta.is_dir() {
            fs::read_dir(&root).map_err(|source| DirError::Io {
                path: root.display().to_string(),
                source,
            })?;
        } else {
            // A FIFO would block the open, `/dev/zero` would never end: regular files only.
            open_regular(&root).map_err(|e| DirError::Io {
                path: root.display().to_string(),
                source: e.into_io_error(),
            })?;
        }
        Ok(DirSource { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reads `package`'s objects from the catalog.
    pub fn package(&self, package: &str) -> Result<PackageContent, DirError> {
        let mut builder = PackageContent::builder(package);
        let needle = Needle::new(package);
        let mut visit = |path: &Path| -> Result<(), DirError> {
            // Read whole (sized from the file length: one allocation, one read, measured faster
            // than re-using a buffer), but only a regular file within the catalog file limit.
            let buf = read_regular(path, MAX_CATALOG_FILE_BYTES).map_err(|e| DirError::Io {
                path: path.display().to_string(),
                source: e.into_io_error(),
            })?;
            if !needle.may_occur_in(&buf) {
                return Ok(());
            }
            let shown = path.display().to_string();
            let cfg = DeclarativeConfig::from_reader(&buf[..], &shown).map_err(|source| {
                DirError::Load {
                    package: package.to_owned(),
                    path: shown.clone(),
                    source,
                }
            })?;
            builder.push_config(cfg);
            Ok(())
        };
        catalog_files(&self.root, &mut visit)?;
        Ok(builder.finish())
    }
}

/// The per-file pre-filter of the module table.
struct Needle<'a> {
    name: &'a str,
    /// False when the name has characters the filter does not reason about.
    usable: bool,
}

impl<'a> Needle<'a> {
    fn new(name: &'a str) -> Needle<'a> {
        let usable = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        Needle { name, usable }
    }

    fn may_occur_in(&self, bytes: &[u8]) -> bool {
        if !self.usable || memmem::find(bytes, self.name.as_bytes()).is_some() {
            return true;
        }
        for at in memchr::memchr_iter(b'\\', bytes) {
            let rest = &bytes[at + 1..];
            let hex_digits = match rest.first() {
                Some(b'u') => 4,
                Some(b'U') => 8,
                Some(b'x') => 2,
                Some(b'\n' | b'\r') => return true,
                _ => continue,
            };
            let decoded = rest
                .get(1..1 + hex_digits)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32);
            if let Some(c) = decoded
                && c.is_ascii()
                && self.name.as_bytes().contains(&(c as u8))
            {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn files_that_cannot_name_the_package_are_not_parsed() {
        let needle = Needle::new("foo-operator");
        assert!(needle.may_occur_in(br#"{"package":"foo-operator"}"#));
        assert!(!needle.may_occur_in(br#"{"package":"bar","description":"\u003cb\u003e"}"#));
        // JSON escapes that spell a letter of the name, and YAML line continuations, force a parse.
        assert!(needle.may_occur_in(br#"{"package":"f\u006fo-operator"}"#));
        assert!(needle.may_occur_in(b"package: \"foo-\\\n  operator\"\n"));
        // Names outside the filter's alphabet are never filtered.
        assert!(Needle::new("a b").may_occur_in(b"nothing"));
    }

    #[test]
    fn escaped_names_and_ignored_files_are_handled_like_catalogd() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a/catalog.json",
            r#"{"schema":"olm.package","name":"f\u006fo"}
{"schema":"olm.bundle","name":"foo.v1","package":"foo","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]}"#,
        );
        write(
            dir.path(),
            "b/ignored.yaml",
            "schema: olm.bundle\nname: foo.v9\npackage: foo\n",
        );
        write(dir.path(), ".indexignore", "b/\n");
        write(
            dir.path(),
            "c/other.yaml",
            "schema: olm.package\nname: bar\n",
        );
        let content = DirSource::open(dir.path()).unwrap().package("foo").unwrap();
        assert_eq!(content.package().unwrap().name, "foo");
        let names: Vec<_> = content
            .bundles()
            .iter()
            .map(|b| b.bundle.name.as_str())
            .collect();
        assert_eq!(names, ["foo.v1"]);
    }

    #[test]
    fn a_broken_file_that_may_hold_the_package_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "x.json",
            "{\"schema\":\"olm.package\",\"name\":\"foo\"",
        );
        write(dir.path(), "y.json", "{\"schema\": broken bar");
        let source = DirSource::open(dir.path()).unwrap();
        let err = source.package("foo").unwrap_err().to_string();
        assert!(err.contains("x.json"), "{err}");
        // The broken file without the name is skipped for another package.
        assert!(source.package("zzz").unwrap().is_empty());
    }

    #[test]
    fn a_missing_directory_is_reported_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = DirSource::open(&missing).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("failed to read {}: ", missing.display())),
            "{err}"
        );
    }
}
