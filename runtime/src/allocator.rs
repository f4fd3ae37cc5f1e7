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
//!
//! The thresholds only shrink an arena from its top. Memory freed below a live allocation stays
//! resident (3–3.7 MiB per binary in P5's idle window, ninth step of issue 27), and only glibc's
//! `malloc_trim` gives it back. So a thread of its own calls it every [`DEFAULT_TRIM_INTERVAL`]
//! (`OLM_MALLOC_TRIM_SECONDS` sets another period, `0` none). That call is the workspace's one
//! exception to its `unsafe_code` lint (a foreign function; `runtime/tests/unsafe_code.rs` keeps
//! it the only one): it takes no pointers, and glibc locks each arena while it trims it, so any
//! thread may call it at any time. The cost is a walk of the arenas' free lists, and a page
//! fault for each returned page that is used again.

use std::time::Duration;

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
/// them all, then starts the thread that trims the allocator (see the module header). Call it
/// first in `main`, before any thread starts. Returns when it did not execute the binary again
/// (every variable is set, not a glibc system, or the executable cannot be executed again, in
/// which case the process goes on with the allocator's defaults and says so on stderr).
pub fn tune() {
    let missing = missing(|name| std::env::var_os(name).is_some());
    if !missing.is_empty() {
        execute_again_with(&missing);
    }
    let interval =
        trim_interval(std::env::var(TRIM_INTERVAL_ENV).ok().as_deref()).unwrap_or_else(|error| {
            eprintln!("{error}; trimming every {DEFAULT_TRIM_INTERVAL:?}");
            Some(DEFAULT_TRIM_INTERVAL)
        });
    if let Some(interval) = interval {
        start_trimming(interval);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn execute_again_with(missing: &[(&str, &str)]) {
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

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn execute_again_with(_missing: &[(&str, &str)]) {}

/// The variable naming the trim period in whole seconds; `0` turns trimming off.
pub const TRIM_INTERVAL_ENV: &str = "OLM_MALLOC_TRIM_SECONDS";

/// The trim period without [`TRIM_INTERVAL_ENV`]: well inside a minute of idleness, and rare
/// enough that the walk costs nothing measurable (P5's idle CPU).
pub const DEFAULT_TRIM_INTERVAL: Duration = Duration::from_secs(30);

/// The trim period [`TRIM_INTERVAL_ENV`]'s `value` asks for: `None` for no trimming.
pub fn trim_interval(value: Option<&str>) -> Result<Option<Duration>, String> {
    let Some(value) = value else {
        return Ok(Some(DEFAULT_TRIM_INTERVAL));
    };
    match value.trim().parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(seconds) => Ok(Some(Duration::from_secs(seconds))),
        Err(_) => Err(format!(
            "{TRIM_INTERVAL_ENV}={value:?} is not a whole number of seconds"
        )),
    }
}

/// Starts a thread that gives the allocator's free memory back every `interval`.
fn start_trimming(interval: Duration) {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("malloc-trim".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            loop {
                std::thread::sleep(interval);
                release_free_memory();
            }
        });
    if let Err(error) = spawned {
        eprintln!("could not start the allocator trim thread ({error}); going on without it");
    }
}

/// Gives every free page inside the allocator's arenas back to the system (glibc's
/// `malloc_trim(0)`). Returns whether any memory was returned; `false` off glibc.
pub fn release_free_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        glibc::malloc_trim(0) == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// The workspace's one reviewed exception to `unsafe_code` (see the module header).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
mod glibc {
    unsafe extern "C" {
        /// Returns free memory at the top of every arena and every whole free page inside them
        /// (`madvise(MADV_DONTNEED)`) to the system, keeping `pad` bytes at the main arena's top;
        /// 1 when any was returned. Declared `safe`: it takes no pointers and locks each arena
        /// itself, so no call can break an invariant of ours or of the allocator's.
        pub safe fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trim_period_is_thirty_seconds_unless_named_and_zero_turns_it_off() {
        assert_eq!(trim_interval(None), Ok(Some(Duration::from_secs(30))));
        assert_eq!(trim_interval(Some("5")), Ok(Some(Duration::from_secs(5))));
        assert_eq!(
            trim_interval(Some(" 120 ")),
            Ok(Some(Duration::from_secs(120)))
        );
        assert_eq!(trim_interval(Some("0")), Ok(None));
        assert_eq!(
            trim_interval(Some("30s")),
            Err("OLM_MALLOC_TRIM_SECONDS=\"30s\" is not a whole number of seconds".to_owned())
        );
        assert!(trim_interval(Some("-1")).is_err());
    }

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
