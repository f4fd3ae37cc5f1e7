//! The C library allocator's arena count, limited for the process.
//!
//! Input: the environment. Output: none; the process is executed again with
//! `MALLOC_ARENA_MAX=2` when the variable is not set. Network: none.
//!
//! Why: glibc gives each thread that contends for the allocator an arena of its own, up to
//! eight per core, and keeps what a burst freed in each. catalogd's steady RSS after ingest and
//! serving (the benchmark's P5) was 74.5 MiB with the default and 54.8 MiB with two arenas, at
//! no measured cost in serving throughput or CPU per GB. glibc reads the variable when the
//! process starts, before `main`, so setting it needs a new `exec` of the same binary: the
//! process keeps its PID, arguments and environment. An operator's own `MALLOC_ARENA_MAX`
//! (any value) is kept as it is.

/// The variable glibc reads at start-up.
pub const ARENA_MAX_ENV: &str = "MALLOC_ARENA_MAX";

/// The arena count set when the environment names none.
pub const ARENA_MAX: &str = "2";

/// Executes this binary again with [`ARENA_MAX_ENV`] set to [`ARENA_MAX`], unless it is set
/// already. Call it first in `main`, before any thread starts. Returns when nothing was done
/// (the variable is set, not a glibc system, or the executable cannot be executed again, in
/// which case the process goes on with the default arenas and says so on stderr).
pub fn limit_arenas() {
    if std::env::var_os(ARENA_MAX_ENV).is_some() {
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
        let error = command.args(args).env(ARENA_MAX_ENV, ARENA_MAX).exec();
        eprintln!(
            "could not start again with {ARENA_MAX_ENV}={ARENA_MAX} ({error}); going on with the allocator's default arenas"
        );
    }
}
