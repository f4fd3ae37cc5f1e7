//! The repository's test data (`testdata/`, see its README.md) for tests, benchmarks and hack
//! scripts.
//!
//! [`path`] maps a path relative to `testdata/` to a plain path on disk. Small files are stored in
//! the repository as they are; large trees are `testdata/<name>.tar.zst` archives, listed with their
//! sha256 in `testdata/SHA256SUMS`, unpacked once into `$OLM_CACHE_DIR/testdata/<name>-<sha>/`
//! (default `$XDG_CACHE_HOME/olm-rs`, else `$HOME/.cache/olm-rs`, as the Makefile). The archive's
//! checksum is verified before anything is used; unpacking goes to a temporary sibling that is
//! renamed into place, so parallel test processes never see a half-written tree.
//!
//! Input: the files of `testdata/`, found above the running crate's `CARGO_MANIFEST_DIR` (read
//! at run time: the shared target directory may hold a build made from another checkout).
//! Output: paths; the only writes are into the cache directory. No network.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// The checksum file beside the archives (`sha256sum -c` format, names relative to `testdata/`).
pub const SUMS_FILE: &str = "SHA256SUMS";

/// Suffix of an archive's file name.
pub const ARCHIVE_SUFFIX: &str = ".tar.zst";

/// Hex digits of the archive's sha256 in the name of its unpacked directory.
const SHA_PREFIX: usize = 16;

/// `testdata/<relative>` as a plain path: the file or directory in the repository, or inside the
/// unpacked archive that holds it (`catalogs/community-operators-prod/catalogs/v4.22` lies in
/// `catalogs/community-operators-prod.tar.zst`).
///
/// # Panics
/// When the path exists neither in the repository nor in an archive, when an archive is missing or
/// its sha256 differs from `testdata/SHA256SUMS`, or when it cannot be unpacked; the message names
/// the file.
pub fn path(relative: &str) -> PathBuf {
    try_path(relative).unwrap_or_else(|e| panic!("test data: {e}"))
}

/// [`path`], returning the reason instead of panicking.
pub fn try_path(relative: &str) -> Result<PathBuf, String> {
    let parts = relative_components(Path::new(relative))
        .map_err(|e| format!("testdata/{relative}: {e}"))?;
    let root = root()?;
    let sums = read_sums(&root)?;
    // The shortest prefix that is an archive: archives are never nested.
    for i in 1..=parts.len() {
        let name = parts[..i].join("/");
        let archive = root.join(format!("{name}{ARCHIVE_SUFFIX}"));
        let Some(sha) = sums.get(&name) else {
            if archive.exists() {
                return Err(format!(
                    "{} is not listed in testdata/{SUMS_FILE} (pack it with hack/pack-testdata.sh)",
                    display(&name)
                ));
            }
            continue;
        };
        let dir = unpacked(&root, &name, sha)?;
        let found = parts[i..].iter().fold(dir, |p, c| p.join(c));
        return if found.exists() {
            Ok(found)
        } else {
            Err(format!(
                "testdata/{relative} not found: not in {}",
                display(&name)
            ))
        };
    }
    let plain = root.join(relative);
    if plain.exists() {
        Ok(plain)
    } else {
        Err(format!(
            "testdata/{relative} not found: neither in the repository nor in an archive listed in testdata/{SUMS_FILE}"
        ))
    }
}

/// The names of every archive (`catalogs/certified-operators`, ...), as listed in
/// `testdata/SHA256SUMS`.
///
/// # Panics
/// When `testdata/` or its checksum file cannot be read.
pub fn archives() -> Vec<String> {
    root()
        .and_then(|root| read_sums(&root))
        .unwrap_or_else(|e| panic!("test data: {e}"))
        .into_keys()
        .collect()
}

/// The repository's `testdata/` directory: the nearest one holding `SHA256SUMS` above the running
/// crate's `CARGO_MANIFEST_DIR` (at run time), else above the working directory, else above this
/// crate as it was compiled.
pub fn root() -> Result<PathBuf, String> {
    static ROOT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let starts: Vec<PathBuf> = [
            std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
            std::env::current_dir().ok(),
            Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
        ]
        .into_iter()
        .flatten()
        .collect();
        starts
            .iter()
            .flat_map(|start| start.ancestors())
            .map(|dir| dir.join("testdata"))
            .find(|dir| dir.join(SUMS_FILE).is_file())
            .ok_or_else(|| {
                format!(
                    "no testdata/{SUMS_FILE} above {}",
                    starts
                        .iter()
                        .map(|s| s.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" or ")
                )
            })
    })
    .clone()
}

/// The cache directory: `$OLM_CACHE_DIR`, else `$XDG_CACHE_HOME/olm-rs`, else
/// `$HOME/.cache/olm-rs` (the Makefile's rule).
pub fn cache_dir() -> Result<PathBuf, String> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("OLM_CACHE_DIR") {
        return Ok(dir.into());
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("olm-rs"));
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".cache/olm-rs"))
        .ok_or_else(|| "set OLM_CACHE_DIR, XDG_CACHE_HOME or HOME for unpacked test data".into())
}

/// Archive name to expected sha256 (lower-case hex), from `testdata/SHA256SUMS`.
fn read_sums(root: &Path) -> Result<BTreeMap<String, String>, String> {
    let file = root.join(SUMS_FILE);
    let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut sums = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || format!("testdata/{SUMS_FILE} line {}: {line:?}", index + 1);
        let (sha, file_name) = line.split_once("  ").ok_or_else(bad)?;
        let name = file_name.strip_suffix(ARCHIVE_SUFFIX).ok_or_else(bad)?;
        let valid_sha =
            sha.len() == 64 && sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !valid_sha || relative_components(Path::new(name)).is_err() {
            return Err(bad());
        }
        sums.insert(name.to_owned(), sha.to_owned());
    }
    Ok(sums)
}

/// The unpacked directory of archive `name`, unpacking it on first use in this process (threads
/// wait for each other; processes race safely through [`unpack_archive`]).
fn unpacked(root: &Path, name: &str, sha: &str) -> Result<PathBuf, String> {
    static DONE: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut done = DONE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(dir) = done.get(name) {
        return Ok(dir.clone());
    }
    let dest = cache_dir()?.join("testdata").join(format!(
        "{}-{}",
        name.replace('/', "-"),
        &sha[..SHA_PREFIX]
    ));
    let archive = root.join(format!("{name}{ARCHIVE_SUFFIX}"));
    unpack_archive(&archive, sha, &dest).map_err(|e| format!("{}: {e}", display(name)))?;
    done.insert(name.to_owned(), dest.clone());
    Ok(dest)
}

/// Verifies that `archive` (a zstd-compressed tar) has sha256 `sha256`, then, unless `dest` already
/// exists, unpacks it into a temporary sibling of `dest` and renames that into place. Losing the
/// rename to another process is success. Entries must be regular files or directories with
/// relative paths inside the archive (no absolute path, no `..`); anything else fails the unpack
/// and leaves nothing behind.
pub fn unpack_archive(archive: &Path, sha256: &str, dest: &Path) -> Result<(), String> {
    let bytes = fs::read(archive).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            "missing (it is listed in testdata/SHA256SUMS; restore it from the repository)"
                .to_owned()
        }
        _ => format!("cannot read: {e}"),
    })?;
    let actual = hex::encode(Sha256::digest(&bytes));
    if actual != sha256 {
        return Err(format!(
            "sha256 {actual}, but testdata/{SUMS_FILE} says {sha256} (a damaged or replaced archive; restore it, or repack with hack/pack-testdata.sh)"
        ));
    }
    if dest.is_dir() {
        return Ok(());
    }
    let (Some(parent), Some(file_name)) = (dest.parent(), dest.file_name()) else {
        return Err(format!(
            "{}: not a directory to unpack into",
            dest.display()
        ));
    };
    fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let tmp = parent.join(format!(
        ".{}.tmp-{}-{nanos}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    fs::create_dir(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let result = extract(&bytes, &tmp).and_then(|()| match fs::rename(&tmp, dest) {
        Ok(()) => Ok(()),
        // Another process finished first: its tree is the same.
        Err(_) if dest.is_dir() => Ok(()),
        Err(e) => Err(format!("rename to {}: {e}", dest.display())),
    });
    if tmp.exists() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result
}

/// Unpacks the zstd-compressed tar `compressed` into the empty directory `into`.
fn extract(compressed: &[u8], into: &Path) -> Result<(), String> {
    let decoder = ruzstd::decoding::StreamingDecoder::new(compressed)
        .map_err(|e| format!("not a zstd stream: {e}"))?;
    let mut archive = tar::Archive::new(decoder);
    let entries = archive.entries().map_err(|e| format!("tar: {e}"))?;
    let mut count = 0usize;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("tar: {e}"))?;
        let raw = entry
            .path()
            .map_err(|e| format!("tar entry name: {e}"))?
            .into_owned();
        let parts =
            relative_components(&raw).map_err(|e| format!("entry {}: {e}", raw.display()))?;
        let target = parts.iter().fold(into.to_path_buf(), |p, c| p.join(c));
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
        } else if kind.is_file() {
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            let mut file = fs::File::create_new(&target)
                .map_err(|e| format!("entry {}: {e}", raw.display()))?;
            io::copy(&mut entry, &mut file).map_err(|e| format!("entry {}: {e}", raw.display()))?;
        } else {
            return Err(format!(
                "entry {}: type {kind:?} refused (regular files and directories only)",
                raw.display()
            ));
        }
        count += 1;
    }
    if count == 0 {
        return Err("no entries".into());
    }
    Ok(())
}

/// The normal components of a relative path (`.` dropped); an absolute path, `..` or an empty path
/// is an error.
fn relative_components(path: &Path) -> Result<Vec<String>, String> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(c) => {
                parts.push(c.to_str().ok_or_else(|| "not UTF-8".to_owned())?.to_owned())
            }
            Component::CurDir => {}
            Component::ParentDir => return Err("`..` refused".into()),
            Component::RootDir | Component::Prefix(_) => {
                return Err("absolute path refused".into());
            }
        }
    }
    if parts.is_empty() {
        return Err("empty path".into());
    }
    Ok(parts)
}

fn display(name: &str) -> String {
    format!("testdata/{name}{ARCHIVE_SUFFIX}")
}
