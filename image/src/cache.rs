//! On-disk cache of unpacked images, shared by digest between owners (catalogs or extensions).
//!
//! Layout under `<root>`:
//!
//! | path | what |
//! |---|---|
//! | `.shared/<filter>/<digest>/fs/` | the extracted tree, written once per digest and filter (the puller's filter names what was extracted and the platform: `catalog-linux-amd64`, since an index digest names one tree per platform) |
//! | `.shared/<filter>/<digest>/catalog.pack`, `catalog.pack.list` | a catalog directory kept as one pack file and its listing instead of files under `fs/` (`catalog-pack-*` filters, when the image could be packed: [`crate::pack`]); `fs/` is then empty |
//! | `.shared/<filter>/<digest>/image.json` | what the pull that unpacked it learned (labels, digests) |
//! | `.shared/<filter>/<digest>/owners/<owner>` | an empty marker per owner using the entry |
//! | `<owner>/<digest>` | the owner's own record: the reference it asked for, the digest reference in its repository, when it got the image |
//!
//! An image is unpacked once however many owners use it: 1,000 extensions of ten bundles unpack
//! ten times, and an owner that comes to a digest another owner holds writes only its marker and
//! its record, without any registry request when the reference is a digest. A shared entry is
//! removed when its last marker goes. Content is addressed by the manifest digest the pull
//! verified, so sharing never mixes images; every owner pulls with the same credentials (one
//! puller per process), so sharing grants no owner an image it could not have pulled itself.
//!
//! A shared entry is built in a hidden staging directory `.shared/.unpack-*` and renamed into place
//! when complete, so a crash mid-unpack never leaves something that looks complete. What a crash
//! can leave (staging directories, markers without an owner record, entries without markers) is
//! removed by [`DiskCache::sweep`], which the controllers run at start-up. An owner record whose
//! entry is gone, or a directory at `<owner>/<digest>` (the per-owner layout of earlier versions),
//! is removed and reported as absent. One process owns a cache directory: marker changes and the
//! removal of shared entries are serialised by one lock in this process. No network.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::reference::validate_digest;

const RECORD_FILE: &str = "image.json";
const CONTENT_DIR: &str = "fs";
/// A packed catalog directory ([`crate::pack`]) and its listing, beside `fs/`.
const PACK_FILE: &str = "catalog.pack";
const PACK_LISTING_FILE: &str = "catalog.pack.list";
const OWNERS_DIR: &str = "owners";
const SHARED_DIR: &str = ".shared";
const STAGING_PREFIX: &str = ".unpack-";
const RECORD_TEMP_PREFIX: &str = ".record-";

/// Serialises marker changes with the removal of shared entries (see the module header).
static SHARED_LOCK: Mutex<()> = Mutex::new(());

fn shared_lock() -> MutexGuard<'static, ()> {
    SHARED_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

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
    /// The catalog directory is a pack ([`CacheEntry::pack_path`]) rather than files under `fs/`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub packed: bool,
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

impl CacheEntry {
    /// The pack of a packed entry ([`CacheRecord::packed`]).
    pub fn pack_path(&self) -> PathBuf {
        self.dir.with_file_name(PACK_FILE)
    }

    /// The pack's listing.
    pub fn pack_listing_path(&self) -> PathBuf {
        self.dir.with_file_name(PACK_LISTING_FILE)
    }
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

    /// Where a packed catalog directory goes ([`crate::pack`]).
    pub fn pack_path(&self) -> PathBuf {
        self.dir.path().join(PACK_FILE)
    }

    /// Where the pack's listing goes.
    pub fn pack_listing_path(&self) -> PathBuf {
        self.dir.path().join(PACK_LISTING_FILE)
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
        check_plain_name("cache owner", owner)?;
        Ok(self.root.join(owner))
    }

    fn record_path(&self, owner: &str, digest: &str) -> io::Result<PathBuf> {
        validate_digest(digest).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(self.owner_dir(owner)?.join(digest))
    }

    fn shared_root(&self) -> PathBuf {
        self.root.join(SHARED_DIR)
    }

    fn shared_entry(&self, digest: &str, filter: &str) -> io::Result<PathBuf> {
        validate_digest(digest).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        check_plain_name("cache filter", filter)?;
        Ok(self.shared_root().join(filter).join(digest))
    }

    /// `owner`'s complete entry for `digest`, if any. A record that is unreadable, was extracted
    /// with a different `filter`, or whose shared entry is gone is removed and reported as absent.
    pub fn lookup(
        &self,
        owner: &str,
        digest: &str,
        filter: &str,
    ) -> io::Result<Option<CacheEntry>> {
        let path = self.record_path(owner, digest)?;
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            // A directory: an entry of the earlier per-owner layout (removed by `release`).
            Err(_) if path.is_dir() => Vec::new(),
            Err(e) => return Err(e),
        };
        let shared = self.shared_entry(digest, filter)?;
        let content = shared.join(CONTENT_DIR);
        match serde_json::from_slice::<CacheRecord>(&bytes) {
            Ok(record)
                if record.filter == filter
                    && record.digest == digest
                    && content.is_dir()
                    && shared.join(OWNERS_DIR).join(owner).is_file() =>
            {
                Ok(Some(CacheEntry {
                    dir: content,
                    record,
                }))
            }
            _ => {
                self.release(owner, digest)?;
                Ok(None)
            }
        }
    }

    /// The record of the complete shared entry for `digest` and `filter`, whichever owner
    /// unpacked it, if there is one.
    pub fn lookup_shared(&self, digest: &str, filter: &str) -> io::Result<Option<CacheRecord>> {
        let entry = self.shared_entry(digest, filter)?;
        Ok(read_shared_record(&entry, digest, filter))
    }

    /// Makes the shared entry for `record.digest` and `record.filter` `owner`'s, with `record` as
    /// the owner's record. `None` when there is no complete shared entry to attach to.
    pub fn attach(&self, owner: &str, record: &CacheRecord) -> io::Result<Option<CacheEntry>> {
        let entry = self.shared_entry(&record.digest, &record.filter)?;
        let owner_dir = self.owner_dir(owner)?;
        {
            let _guard = shared_lock();
            if read_shared_record(&entry, &record.digest, &record.filter).is_none() {
                return Ok(None);
            }
            let owners = entry.join(OWNERS_DIR);
            fs::create_dir_all(&owners)?;
            fs::File::create(owners.join(owner))?;
        }
        self.write_owner_record(&owner_dir, record)?;
        Ok(Some(CacheEntry {
            dir: entry.join(CONTENT_DIR),
            record: record.clone(),
        }))
    }

    /// The owner's record, written whole or not at all. Not synced: a record lost in a crash
    /// only costs the owner a re-attach to the shared entry, which is synced.
    fn write_owner_record(&self, owner_dir: &Path, record: &CacheRecord) -> io::Result<()> {
        fs::create_dir_all(owner_dir)?;
        let path = owner_dir.join(&record.digest);
        if path.is_dir() {
            fs::remove_dir_all(&path)?;
        }
        let mut file = tempfile::Builder::new()
            .prefix(RECORD_TEMP_PREFIX)
            .tempfile_in(owner_dir)?;
        file.write_all(&serde_json::to_vec_pretty(record).map_err(io::Error::other)?)?;
        file.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }

    /// A fresh staging directory for an entry.
    pub fn staging(&self) -> io::Result<Staging> {
        let shared = self.shared_root();
        fs::create_dir_all(&shared)?;
        let dir = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(&shared)?;
        fs::create_dir(dir.path().join(CONTENT_DIR))?;
        Ok(Staging { dir })
    }

    /// Writes the record, moves the staging directory into place as the shared entry for
    /// `record.digest` and `record.filter` and makes it `owner`'s. A complete entry already there
    /// (another owner's pull of the same digest finished first) is kept and the staging
    /// directory dropped; an unusable one is replaced, keeping its owners' markers.
    pub fn commit(
        &self,
        owner: &str,
        staging: Staging,
        record: &CacheRecord,
    ) -> io::Result<CacheEntry> {
        let entry = self.shared_entry(&record.digest, &record.filter)?;
        let owner_dir = self.owner_dir(owner)?;
        let layers = staging.layers_dir();
        if layers.exists() {
            fs::remove_dir_all(&layers)?;
        }
        let record_path = staging.dir.path().join(RECORD_FILE);
        let mut file = fs::File::create(&record_path)?;
        file.write_all(&serde_json::to_vec_pretty(record).map_err(io::Error::other)?)?;
        file.sync_all()?;
        // The marker goes in before the rename, so the entry is never in place without one.
        let owners = staging.dir.path().join(OWNERS_DIR);
        fs::create_dir(&owners)?;
        fs::File::create(owners.join(owner))?;
        let replaced = {
            let _guard = shared_lock();
            let parent = entry.parent().unwrap_or(&self.root);
            fs::create_dir_all(parent)?;
            if read_shared_record(&entry, &record.digest, &record.filter).is_some() {
                fs::File::create(entry.join(OWNERS_DIR).join(owner))?;
                None
            } else {
                let replaced = if entry.exists() {
                    let old_owners = entry.join(OWNERS_DIR);
                    if old_owners.is_dir() {
                        for marker in fs::read_dir(&old_owners)? {
                            let marker = marker?;
                            fs::rename(marker.path(), owners.join(marker.file_name()))?;
                        }
                    }
                    Some(self.move_to_trash(&entry)?)
                } else {
                    None
                };
                let staged = staging.dir.keep();
                if let Err(e) = fs::rename(&staged, &entry) {
                    let _ = fs::remove_dir_all(&staged);
                    return Err(e);
                }
                // Persist the rename itself.
                if let Ok(dir) = fs::File::open(parent) {
                    let _ = dir.sync_all();
                }
                replaced
            }
        };
        if let Some(trash) = replaced {
            trash.close()?;
        }
        self.write_owner_record(&owner_dir, record)?;
        Ok(CacheEntry {
            dir: entry.join(CONTENT_DIR),
            record: record.clone(),
        })
    }

    /// Renames `entry` out of the way (under the lock), so that removing its files, which can
    /// take long for a large catalog, happens outside the lock.
    fn move_to_trash(&self, entry: &Path) -> io::Result<tempfile::TempDir> {
        let trash = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(self.shared_root())?;
        fs::rename(entry, trash.path())?;
        Ok(trash)
    }

    /// Removes `owner`'s record for `digest` and its marker; a shared entry left without
    /// markers is removed.
    fn release(&self, owner: &str, digest: &str) -> io::Result<()> {
        let path = self.record_path(owner, digest)?;
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&path)?,
            Ok(_) => fs::remove_file(&path)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let Some(filters) = read_dir_if_exists(&self.shared_root())? else {
            return Ok(());
        };
        let mut unused = Vec::new();
        {
            let _guard = shared_lock();
            for filter in filters {
                let filter = filter?;
                if filter.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let entry = filter.path().join(digest);
                let owners = entry.join(OWNERS_DIR);
                match fs::remove_file(owners.join(owner)) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
                if fs::read_dir(&owners)?.next().is_none() {
                    unused.push(self.move_to_trash(&entry)?);
                }
            }
        }
        for trash in unused {
            trash.close()?;
        }
        Ok(())
    }

    /// Removes every entry of `owner` except `keep`, and anything else in its directory.
    pub fn retain_only(&self, owner: &str, keep: &str) -> io::Result<()> {
        self.remove_entries_except(owner, Some(keep))
    }

    fn remove_entries_except(&self, owner: &str, keep: Option<&str>) -> io::Result<()> {
        let Some(children) = read_dir_if_exists(&self.owner_dir(owner)?)? else {
            return Ok(());
        };
        for child in children {
            let child = child?;
            if keep.is_some_and(|keep| child.file_name() == keep) {
                continue;
            }
            self.remove_child(owner, &child)?;
        }
        Ok(())
    }

    fn remove_child(&self, owner: &str, child: &fs::DirEntry) -> io::Result<()> {
        let name = child.file_name();
        match name.to_str().filter(|n| validate_digest(n).is_ok()) {
            Some(digest) => self.release(owner, digest),
            None if child.file_type()?.is_dir() => fs::remove_dir_all(child.path()),
            None => fs::remove_file(child.path()),
        }
    }

    /// Removes everything cached for `owner` (shared entries other owners use stay).
    pub fn delete_owner(&self, owner: &str) -> io::Result<()> {
        self.remove_entries_except(owner, None)?;
        let owner_dir = self.owner_dir(owner)?;
        match fs::remove_dir(&owner_dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Owners with something cached (for sweeping owners that no longer exist).
    pub fn owners(&self) -> io::Result<Vec<String>> {
        let mut owners = Vec::new();
        let Some(children) = read_dir_if_exists(&self.root)? else {
            return Ok(owners);
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

    /// Removes what a crash can leave: staging directories, markers of owners without a record
    /// for that digest, and shared entries no owner uses. For start-up, before any pull: a
    /// staging directory of a pull in progress would be removed too.
    pub fn sweep(&self) -> io::Result<SweepReport> {
        let mut report = SweepReport::default();
        let Some(children) = read_dir_if_exists(&self.shared_root())? else {
            return Ok(report);
        };
        let _guard = shared_lock();
        for child in children {
            let child = child?;
            let path = child.path();
            if child.file_name().to_string_lossy().starts_with('.') {
                fs::remove_dir_all(&path)?;
                report.staging += 1;
                continue;
            }
            if !child.file_type()?.is_dir() {
                continue;
            }
            for entry in fs::read_dir(&path)? {
                let entry = entry?;
                let digest = entry.file_name().to_string_lossy().into_owned();
                let owners = entry.path().join(OWNERS_DIR);
                let mut used = false;
                if let Ok(markers) = fs::read_dir(&owners) {
                    for marker in markers {
                        let marker = marker?;
                        let owner = marker.file_name().to_string_lossy().into_owned();
                        let held = self
                            .record_path(&owner, &digest)
                            .is_ok_and(|record| record.is_file());
                        if held {
                            used = true;
                        } else {
                            fs::remove_file(marker.path())?;
                            report.markers += 1;
                        }
                    }
                }
                if !used {
                    fs::remove_dir_all(entry.path())?;
                    report.entries += 1;
                }
            }
        }
        Ok(report)
    }
}

/// What [`DiskCache::sweep`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    /// Staging (or half-removed) directories.
    pub staging: usize,
    /// Markers of owners without a record.
    pub markers: usize,
    /// Shared entries no owner uses.
    pub entries: usize,
}

/// The entries of `dir`, or `None` when it does not exist.
fn read_dir_if_exists(dir: &Path) -> io::Result<Option<fs::ReadDir>> {
    match fs::read_dir(dir) {
        Ok(children) => Ok(Some(children)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The record of a complete shared entry at `entry`, or `None`.
fn read_shared_record(entry: &Path, digest: &str, filter: &str) -> Option<CacheRecord> {
    let bytes = fs::read(entry.join(RECORD_FILE)).ok()?;
    let record = serde_json::from_slice::<CacheRecord>(&bytes).ok()?;
    (record.filter == filter && record.digest == digest && entry.join(CONTENT_DIR).is_dir())
        .then_some(record)
}

/// Owners and filters name directories: plain names only, never hidden, never a path.
fn check_plain_name(what: &str, name: &str) -> io::Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if valid {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid {what} name {name:?}"),
        ))
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
            packed: false,
        }
    }

    fn commit(cache: &DiskCache, owner: &str, digest: &str) -> CacheEntry {
        let staging = cache.staging().unwrap();
        fs::write(staging.content_dir().join("file"), digest).unwrap();
        cache.commit(owner, staging, &record(digest)).unwrap()
    }

    /// What another owner does when the digest is already unpacked: attach with its own record.
    fn attach(cache: &DiskCache, owner: &str, digest: &str) -> CacheEntry {
        let shared = cache.lookup_shared(digest, "everything").unwrap().unwrap();
        let mine = CacheRecord {
            reference: format!("{owner}-ref"),
            unpacked_at_unix_secs: 2,
            ..shared
        };
        cache.attach(owner, &mine).unwrap().unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
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
        assert_eq!(
            again.dir,
            tmp.path().join(".shared/everything").join(D1).join("fs")
        );
    }

    #[test]
    fn unfinished_staging_is_never_a_hit_and_is_removed_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        let staging = cache.staging().unwrap();
        fs::write(staging.content_dir().join("half"), "x").unwrap();
        assert!(cache.lookup("cat", D1, "everything").unwrap().is_none());
        assert!(cache.lookup_shared(D1, "everything").unwrap().is_none());
        drop(staging);
        assert!(names(&tmp.path().join(".shared")).is_empty());
    }

    #[test]
    fn an_entry_of_the_per_owner_layout_or_of_another_filter_is_discarded() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        fs::create_dir_all(tmp.path().join("cat").join(D1).join("fs")).unwrap();
        fs::write(tmp.path().join("cat").join(D1).join(RECORD_FILE), "{}").unwrap();
        assert!(cache.lookup("cat", D1, "everything").unwrap().is_none());
        assert!(!tmp.path().join("cat").join(D1).exists());
        commit(&cache, "cat", D2);
        assert!(cache.lookup("cat", D2, "catalog").unwrap().is_none());
        assert!(names(&tmp.path().join("cat")).is_empty(), "record removed");
        assert!(
            cache.lookup_shared(D2, "everything").unwrap().is_none(),
            "its last owner gone, the entry went too"
        );
    }

    #[test]
    fn a_record_whose_shared_entry_is_gone_is_a_miss() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        commit(&cache, "cat", D1);
        fs::remove_dir_all(tmp.path().join(".shared")).unwrap();
        assert!(cache.lookup("cat", D1, "everything").unwrap().is_none());
        assert!(names(&tmp.path().join("cat")).is_empty());
    }

    #[test]
    fn owners_of_one_digest_share_one_tree_until_the_last_one_goes() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        let first = commit(&cache, "one", D1);
        let second = attach(&cache, "two", D1);
        assert_eq!(second.dir, first.dir, "one tree on disk");
        let two = cache.lookup("two", D1, "everything").unwrap().unwrap();
        assert_eq!(
            two.record.reference, "two-ref",
            "each owner keeps its own record"
        );
        assert_eq!(two.record.unpacked_at_unix_secs, 2);
        assert_eq!(
            cache
                .lookup("one", D1, "everything")
                .unwrap()
                .unwrap()
                .record
                .reference,
            "r"
        );
        cache.delete_owner("one").unwrap();
        assert!(!tmp.path().join("one").exists());
        assert!(cache.lookup("one", D1, "everything").unwrap().is_none());
        assert!(cache.lookup("two", D1, "everything").unwrap().is_some());
        assert_eq!(fs::read_to_string(first.dir.join("file")).unwrap(), D1);
        cache.retain_only("two", D2).unwrap();
        assert!(!first.dir.exists(), "the last owner let go");
        assert!(names(&tmp.path().join(".shared/everything")).is_empty());
        assert!(
            names(&tmp.path().join(".shared")) == ["everything"],
            "nothing left behind: {:?}",
            names(&tmp.path().join(".shared"))
        );
    }

    #[test]
    fn a_second_unpack_of_a_digest_keeps_the_tree_already_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        let first = commit(&cache, "one", D1);
        let staging = cache.staging().unwrap();
        fs::write(staging.content_dir().join("other"), "x").unwrap();
        let second = cache.commit("two", staging, &record(D1)).unwrap();
        assert_eq!(second.dir, first.dir);
        assert_eq!(names(&first.dir), ["file"]);
        assert_eq!(
            names(&tmp.path().join(".shared")),
            ["everything"],
            "staging dropped"
        );
        cache.delete_owner("one").unwrap();
        assert!(cache.lookup("two", D1, "everything").unwrap().is_some());
    }

    #[test]
    fn attach_without_a_complete_shared_entry_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        assert!(cache.attach("cat", &record(D1)).unwrap().is_none());
        assert!(!tmp.path().join("cat").exists());
    }

    #[test]
    fn retain_only_removes_other_digests_of_that_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        commit(&cache, "cat", D1);
        commit(&cache, "cat", D2);
        commit(&cache, "other", D1);
        fs::write(tmp.path().join("cat/.record-left"), "").unwrap();
        cache.retain_only("cat", D2).unwrap();
        assert!(cache.lookup("cat", D1, "everything").unwrap().is_none());
        assert!(cache.lookup("cat", D2, "everything").unwrap().is_some());
        assert!(cache.lookup("other", D1, "everything").unwrap().is_some());
        assert_eq!(names(&tmp.path().join("cat")), [D2]);
        cache.delete_owner("cat").unwrap();
        assert_eq!(cache.owners().unwrap(), vec!["other".to_string()]);
        cache.delete_owner("never-existed").unwrap();
    }

    #[test]
    fn sweep_removes_what_a_crash_leaves_and_keeps_what_is_used() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(tmp.path());
        let used = commit(&cache, "cat", D1);
        // An owner whose record was lost after its marker was written.
        attach(&cache, "lost", D1);
        fs::remove_file(tmp.path().join("lost").join(D1)).unwrap();
        // An entry whose only owner record was lost.
        let orphan = commit(&cache, "gone", D2);
        fs::remove_file(tmp.path().join("gone").join(D2)).unwrap();
        // A pull that crashed mid-unpack.
        let staging = cache.staging().unwrap().dir.keep();
        let report = cache.sweep().unwrap();
        assert_eq!(
            report,
            SweepReport {
                staging: 1,
                markers: 2,
                entries: 1
            }
        );
        assert!(!staging.exists());
        assert!(!orphan.dir.exists());
        assert!(used.dir.exists());
        assert_eq!(names(&used.dir.parent().unwrap().join(OWNERS_DIR)), ["cat"]);
        assert_eq!(cache.sweep().unwrap(), SweepReport::default());
    }

    #[test]
    fn owner_filter_and_digest_cannot_escape_the_root() {
        let cache = DiskCache::new("/nonexistent");
        for owner in ["", "..", ".hidden", ".shared", "a/b", "a\\b"] {
            assert!(cache.owner_dir(owner).is_err(), "{owner}");
        }
        assert!(cache.lookup("cat", "sha256:../../x", "everything").is_err());
        assert!(cache.lookup_shared(D1, "../x").is_err());
        assert!(cache.lookup_shared(D1, ".unpack-x").is_err());
    }
}
