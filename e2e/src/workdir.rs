//! Scratch directories for test environments, and removal of the ones their owners left behind.
//!
//! Input: the environment (`OLM_TEST_TMPDIR`, `OLM_TEST_KEEP`). Output: a directory named after the
//! owning process (`olm-e2e-<pid>-<start time>-<random>`), removed on drop. No network.
//!
//! A test binary's shared environment lives in a `static` and is never dropped, so its directory
//! outlives the process. Every new environment therefore first removes the directories whose
//! owner process no longer runs. The owner's start time is part of the name, so a recycled PID
//! does not keep a dead owner's directory alive.

use std::io;
use std::path::{Path, PathBuf};

/// Prefix of every scratch directory.
pub const PREFIX: &str = "olm-e2e-";

/// Environment variable naming the parent directory of scratch directories.
pub const TMPDIR_ENV: &str = "OLM_TEST_TMPDIR";
/// Environment variable that, when set to a non-empty value other than `0`, keeps scratch
/// directories after the environment stops (for reading component logs).
pub const KEEP_ENV: &str = "OLM_TEST_KEEP";

/// Free space /dev/shm must have before it is used: etcd preallocates 64 MiB WAL segments.
const MIN_SHM_FREE: u64 = 1 << 30;

/// A scratch directory owned by this process.
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl WorkDir {
    /// Creates a fresh directory under [`base_dir`] after removing stale ones there.
    pub fn create() -> io::Result<WorkDir> {
        let base = base_dir();
        remove_stale(&base);
        let prefix = format!("{PREFIX}{}-{}-", std::process::id(), own_start_time()?);
        let path = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(&base)?
            .keep();
        let keep = std::env::var(KEEP_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
        Ok(WorkDir { path, keep })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the directory when this value is dropped (used after a failed start, so its logs
    /// can be read; the next run's stale cleanup removes it).
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// `$OLM_TEST_TMPDIR`, else `/dev/shm` when it has room (etcd then never touches a disk), else the
/// system temporary directory.
pub fn base_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(TMPDIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let shm = Path::new("/dev/shm");
    if let Ok(stat) = rustix::fs::statvfs(shm)
        && stat.f_bavail.saturating_mul(stat.f_frsize) >= MIN_SHM_FREE
        && tempfile::tempdir_in(shm).is_ok()
    {
        return shm.to_path_buf();
    }
    std::env::temp_dir()
}

/// Removes scratch directories in `base` whose owner process is gone. Returns what it removed.
pub fn remove_stale(base: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(base) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(parse_owner) else {
            continue;
        };
        if !owner_alive(pid, start) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// `olm-e2e-<pid>-<start>-<random>` → `(pid, start)`.
fn parse_owner(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((pid, start))
}

fn owner_alive(pid: u32, start: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => start_time_from_stat(&stat) == Some(start),
        Err(_) => false,
    }
}

fn own_start_time() -> io::Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    start_time_from_stat(&stat)
        .ok_or_else(|| io::Error::other("failed to read the start time from /proc/self/stat"))
}

/// Field 22 (`starttime`) of `/proc/PID/stat`. The command name (field 2) may contain spaces and
/// parentheses, so fields are counted after its closing parenthesis.
fn start_time_from_stat(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_read_after_the_command_name() {
        let stat =
            "1234 (a) b (c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(start_time_from_stat(stat), Some(987654));
    }

    #[test]
    fn owner_is_parsed_from_the_directory_name() {
        assert_eq!(parse_owner("olm-e2e-42-1000-abc123"), Some((42, 1000)));
        assert_eq!(parse_owner("olm-e2e-42-1000"), None);
        assert_eq!(parse_owner("other-42-1000-x"), None);
        assert_eq!(parse_owner("olm-e2e-x-1000-y"), None);
    }

    #[test]
    fn stale_directories_of_dead_owners_are_removed_and_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        let mine = base.path().join(format!(
            "{PREFIX}{}-{}-live",
            std::process::id(),
            own_start_time().unwrap()
        ));
        // PID 1 runs, but not since this start time: that is a recycled PID, so a dead owner.
        let dead = base.path().join(format!("{PREFIX}1-{}-dead", u64::MAX));
        let unrelated = base.path().join("something-else");
        for d in [&mine, &dead, &unrelated] {
            std::fs::create_dir(d).unwrap();
        }
        let removed = remove_stale(base.path());
        assert_eq!(removed, vec![dead.clone()]);
        assert!(mine.exists() && unrelated.exists() && !dead.exists());
    }
}
