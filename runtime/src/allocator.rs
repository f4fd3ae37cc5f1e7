//! The C library allocator, set up to give memory back after a burst.
//!
//! Input: the environment. Output: none; the process is executed again with the settings of
//! [`SETTINGS`] that the environment does not name. Network: none.
//!
//! Why: glibc keeps what a burst freed. Each thread that contends for the allocator gets an
//! arena of its own (up to eight per core), and after a large block is freed glibc raises its
//! thresholds, so that later large blocks come from the arenas and freed space stays there
//! instead of going back to the system. Both binaries are bursty: catalogd ingests and serves
//! large catalogs, operator-controller parses a catalog's package and reconciles many extensions
//! at once, then both sit idle. The benchmark's P5 (steady RSS after the bursts) measured:
//!
//! | | catalogd | operator-controller |
//! |---|---|---|
//! | glibc's defaults | 74.5 MiB | 56.3 MiB (30.5 anonymous) |
//! | two arenas | 54.8 MiB | 51.2 MiB |
//! | two arenas, thresholds fixed at 128 KiB | 45.4–47.0 MiB | 38.3 MiB (12.4 anonymous; 6.6 MiB live heap) |
//!
//! Fixed thresholds mean a block of 128 KiB or more is its own mapping, returned when freed,
//! and free space at the top of an arena beyond 128 KiB is returned too. glibc reads these
//! variables when the process starts, before `main`, and the workspace forbids `unsafe` (so no
//! `mallopt`): setting them needs a new `exec` of the same binary. The process keeps its PID,
//! arguments and environment; a value the operator set (any value) is kept as it is.

/// The variables glibc reads at start-up and the values set when the environment names none.
pub const SETTINGS: [(&str, &str); 3] = [
    // Two arenas instead of up to eight per core.
    ("MALLOC_ARENA_MAX", "2"),
    // Blocks of 128 KiB or more are mapped on their own and unmapped when freed; setting it
    // also stops glibc from raising it (and the trim threshold) after a large free.
    ("MALLOC_MMAP_THRESHOLD_", "131072"),
    // Free space above 128 KiB at the top of an arena goes back to the system.
    ("MALLOC_TRIM_THRESHOLD_", "131072"),
];

/// The settings of [`SETTINGS`] that `lookup` (the environment) does not name.
pub fn missing(lookup: impl Fn(&str) -> bool) -> Vec<(&'static str, &'static str)> {
    SETTINGS
        .iter()
        .copied()
        .filter(|(name, _)| !lookup(name))
        .collect()
}

/// Executes this binary again with the settings the environment does not name, unless it names
/// them all. Call it first in `main`, before any thread starts. Returns when nothing was done
/// (every variable is set, not a glibc system, or the executable cannot be executed again, in
/// which case the process goes on with the allocator's defaults and says so on stderr).
pub fn tune() {
    let missing = missing(|name| std::env::var_os(name).is_some());
    if missing.is_empty() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        let Ok(executable) = std::env::current_exe() else {
            return;
        };
        let mut args = std::env::args_os();
        let mut command = std::process::Command::new(executable);
        if let Some(name) = args.next() {
            command.arg0(name);
        }
        let error = command.args(args).envs(missing.iter().copied()).exec();
        eprintln!(
            "could not start again with {missing:?} ({error}); going on with the allocator's defaults"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_environment_does_not_name_is_set() {
        assert_eq!(missing(|_| false), SETTINGS.to_vec());
        assert_eq!(missing(|_| true), vec![]);
        assert_eq!(
            missing(|name| name == "MALLOC_ARENA_MAX"),
            vec![
                ("MALLOC_MMAP_THRESHOLD_", "131072"),
                ("MALLOC_TRIM_THRESHOLD_", "131072")
            ]
        );
    }
}
