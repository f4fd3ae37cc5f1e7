//! On-disk cache of unpacked images, keyed by owner (a catalog or extension name) and digest.
//!
//! Layout: `<root>/<owner>/<digest>/fs/` holds the extracted tree and `<root>/<owner>/<digest>/image.json`
//! what the pull learned (labels, digests, filter, time). An entry is built in a hidden staging
//! directory `<root>/<owner>/.unpack-*` and renamed into place when complete, so a crash mid-unpack
//! never leaves something that looks complete; stale staging directories are swept by the next
//! successful pull for that owner. One process owns a cache directory. No network.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::reference::validate_digest;

const RECORD_FILE: &str = "image.json";
const CONTENT_DIR: &str = "fs";
const STAGING_PREFIX: &str = ".unpack-";

/// What a completed unpack recorded next to its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheRecord {
    /// The reference the pull was asked for.
    pub reference: String,
    /// `registry/repository@digest`.
    pub digest_ref: String,
    /// The resolved digest (of the index when the reference names one).
    pub digest: String,
    /// Digest of the platform image manifest that was unpacked.
    pub manifest_digest: String,
    /// Image config labels.
    pub labels: BTreeMap<String, String>,
    /// Which part of the image was extracted (`everything` or `catalog`).
    pub filter: String,
    /// The directory the filter selected, relative to `fs/` (empty for everything).
    pub content_subdir: String,
    /// When the unpack completed.
    pub unpacked_at_unix_secs: u64,
    /// Sub-second part of the unpack time.
    pub unpacked_at_nanos: u32,
    /// Bytes of file content written.
    pub extracted_bytes: u64,
}

impl CacheRecord {
    /// The unpack time.
    pub fn unpacked_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::new(self.unpacked_at_unix_secs, self.unpacked_at_nanos)
    }

    /// Sets the unpack time.
    pub fn set_unpacked_at(&mut self, at: SystemTime) {
        let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        self.unpacked_at_unix_secs = since.as_secs();
        self.unpacked_at_nanos = since.subsec_nanos();
    }
}

/// A complete cache entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// `<root>/<owner>/<digest>/fs`.
    pub dir: PathBuf,
    /// What was recorded.
    pub record: CacheRecord,
}

/// A directory being filled; removed on drop unless committed.
pub struct Staging {
    dir: tempfile::TempDir,
}

impl Staging {
    /// Where the extracted tree goes.
    pub fn content_dir(&self) -> PathBuf {
        self.dir.path().join(CONTENT_DIR)
    }

    /// Scratch space for downloaded layer blobs (removed before commit).
    pub fn layers_dir(&self) -> PathBuf {
        self.dir.path().join("layers")
    }
}

/// The cache root.
#[derive(Debug, Clone)]
pub struct DiskCache {
    root: PathBuf,
}

impl DiskCache {
    /// A cache rooted at `root` (created on first use).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/<owner>`, after checking `owner` is a plain name.
    pub fn owner_dir(&self, owner: &str) -> io::Result<PathBuf> {
        let valid = !owner.is_empty()
            && owner.len() <= 253
            && !owner.starts_with('.')
            && owner
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        if !valid {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid cache owner name {owner:?}"),
            ));
        }
        Ok(self.root.join(owner))
    }

    fn entry_dir(&self, owner: &str, digest: &str) -> io::Result<PathBuf> {
        validate_digest(digest).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(self.owner_dir(owner)?.join(digest))
    }

    /// The complete entry for `digest`, if any. An entry whose record is unreadable, or was
    /// extracted with a different `filter`, is removed and reported as absent.
    pub fn lookup(
        &self,
        owner: &str,
        digest: &str,
        filter: &str,
    ) -> io::Result<Option<CacheEntry>> {
        let entry = self.entry_dir(owner, digest)?;
        let record = match fs::read(entry.join(RECORD_FILE)) {
            Ok(bytes) => serde_json::from_slice::<CacheRecord>(&bytes).ok(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !entry.exists() {
                    return Ok(None);
                }
                None
            }
            Err(e) => return Err(e),
        };
        let content = entry.join(CONTENT_DIR);
        match record {
            Some(record)
                if record.filter == filter && record.digest == digest && content.is_dir() =>
            {
                Ok(Some(CacheEntry {
                    dir: content,
                    record,
                }))
            }
            _ => {
                fs::remove_dir_all(&entry)?;
                Ok(None)
            }
        }
    }

    /// A fresh staging directory for `owner`.
    pub fn staging(&self, owner: &str) -> io::Result<Staging> {
        let owner_dir = self.owner_dir(owner)?;
        fs::create_dir_all(&owner_dir)?;
        let dir = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(&owner_dir)?;
        fs::create_dir(dir.path().join(CONTENT_DIR))?;
        Ok(Staging { dir })
    }

    /// Writes the record and moves the staging directory into place as the entry for
    /// `record.digest`, replacing an earlier (unusable) entry of the same digest.
    pub fn commit(
        &self,
        owner: &str,
        staging: Staging,
        record: &CacheRecord,
    ) -> io::Result<CacheEntry> {
        let entry = self.entry_dir(owner, &record.digest)?;
        let layers = staging.layers_dir();
        if layers.exists() {
            fs::remove_dir_all(&layers)?;
        }
        let record_path = staging.dir.path().join(RECORD_FILE);
        let mut file = fs::File::create(&record_path)?;
        file.write_all(&serde_json::to_vec_pretty(record).map_err(io::Error::other)?)?;
        file.sync_all()?;
        if entry.exists() {
            fs::remove_dir_all(&entry)?;
        }
        let staged = staging.dir.keep();
        if let Err(e) = fs::rename(&staged, &entry) {
            let _ = fs::remove_dir_all(&staged);
            return Err(e);
        }
        if let Some(owner_dir) = entry.parent() {
            // Persist the rename itself.
            if let Ok(dir) = fs::File::open(owner_dir) {
                let _ = dir.sync_all();
            }
        }
        Ok(CacheEntry {
            dir: entry.join(CONTENT_DIR),
            record: record.clone(),
        })
    }

    /// Removes every entry of `owner` except `keep`, and stale staging directories.
    pub fn retain_only(&self, owner: &str, keep: &str) -> io::Result<()> {
        let owner_dir = self.owner_dir(owner)?;
        let children = match fs::read_dir(&owner_dir) {
            Ok(children) => children,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for child in children {
            let child = child?;
            if child.file_name() == keep {
                continue;
            }
            let path = child.path();
            if child.file_type()?.is_dir() {
                fs::remove_dir_all(&path)?;
            } else {
                fs::remove_file(&path)?;
            }
        }
        Ok(())
    }

    /// Removes everything cached for `owner`.
    pub fn delete_owner(&self, owner: &str) -> io::Result<()> {
        match fs::remove_dir_all(self.owner_dir(owner)?) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Owners with something cached (for sweeping owners that no longer exist).
    pub fn owners(&self) -> io::Result<Vec<String>> {
        let mut owners = Vec::new();
        let children = match fs::read_dir(&self.root) {
            Ok(children) => children,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(owners),
            Err(e) => return Err(e),
        };
        for child in children {
            let child = child?;
            if child.file_type()?.is_dir()
                && let Some(name) = child.file_name().to_str()
                && self.owner_dir(name).is_ok()
            {
                owners.push(name.to_string());
            }
        }
        owners.sort();
        Ok(owners)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn record(digest: &str) -> CacheRecord {
        CacheRecord {
            reference: "r".into(),
            digest_ref: format!("r@{digest}"),
            digest: digest.into(),
            manifest_digest: digest.into(),
            labels: BTreeMap::new(),
            filter: "everything".into(),
            content_subdir: String::new(),
            unpacked_at_unix_secs: 1,
            unpacked_at_nanos: 0,
            extracted_bytes: 0,
        }
    }

    fn commit(cache: &DiskCache, owner: &str, digest: &str) -> CacheEntry {
        let staging = cache.staging(owner).unwrap();
        fs::write(staging.content_dir().join("file"), digest).unwrap();
        cache.commit(owner, staging, &record(digest)).unwrap()
    }

    #[test]
    fn committed_entry_is_found_again_by_a_new_cache_on_the_same_root() {
        let tmp = tempfile::tempdir().unwrap();
        let entry = commit(&DiskCache::new(tmp.path()), "cat", D1);
        let again = DiskCache::new(tmp.path())
            .lookup("cat", D1, "everything")
            .unwrap()
            .unwrap();
        assert_eq!(again, entry);
        assert_eq!(fs::read_to_string(again.dir.join("file")).unwrap(), D1);
    }

    #[test]
    fn unfinished_staging_is_never_a_hit_and_is_removed_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        let staging = cache.staging("cat").unwrap();
        fs::write(staging.content_dir().join("half"), "x").unwrap();
        assert!(cache.lookup("cat", D1, "everything").unwrap().is_none());
        drop(staging);
        assert_eq!(fs::read_dir(tmp.path().join("cat")).unwrap().count(), 0);
    }

    #[test]
    fn entry_without_record_or_with_other_filter_is_discarded() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        fs::create_dir_all(tmp.path().join("cat").join(D1).join("fs")).unwrap();
        assert!(cache.lookup("cat", D1, "everything").unwrap().is_none());
        assert!(!tmp.path().join("cat").join(D1).exists());
        commit(&cache, "cat", D2);
        assert!(cache.lookup("cat", D2, "catalog").unwrap().is_none());
    }

    #[test]
    fn retain_only_removes_other_digests_and_stale_staging_of_that_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        commit(&cache, "cat", D1);
        commit(&cache, "cat", D2);
        commit(&cache, "other", D1);
        let stale = cache.staging("cat").unwrap().dir.keep();
        cache.retain_only("cat", D2).unwrap();
        assert!(cache.lookup("cat", D1, "everything").unwrap().is_none());
        assert!(cache.lookup("cat", D2, "everything").unwrap().is_some());
        assert!(cache.lookup("other", D1, "everything").unwrap().is_some());
        assert!(!stale.exists());
        cache.delete_owner("cat").unwrap();
        assert_eq!(cache.owners().unwrap(), vec!["other".to_string()]);
        cache.delete_owner("never-existed").unwrap();
    }

    #[test]
    fn owner_and_digest_cannot_escape_the_root() {
        let cache = DiskCache::new("/nonexistent");
        for owner in ["", "..", ".hidden", "a/b", "a\\b"] {
            assert!(cache.owner_dir(owner).is_err(), "{owner}");
        }
        assert!(cache.lookup("cat", "sha256:../../x", "everything").is_err());
    }
}
