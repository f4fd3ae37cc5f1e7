//! Skipping part of a test when this machine lacks a tool or privilege, and refusing to when
//! every test must run.
//!
//! `make test` (what CI runs, as root with every tool) sets `OLM_REQUIRE_ALL=1`: then a would-be
//! skip is a failure naming what is missing, so a green run means every test ran in full. Without
//! it (a developer's partial machine, `cargo test` by hand) the skip prints `SKIPPED <reason>` and
//! the caller carries on without that part.

/// Environment variable that turns every skip into a failure (`1`; unset, empty or `0`: skips
/// allowed).
pub const REQUIRE_ALL_ENV: &str = "OLM_REQUIRE_ALL";

/// Whether every test must run in full (`OLM_REQUIRE_ALL` set to anything but empty or `0`).
pub fn require_all() -> bool {
    std::env::var(REQUIRE_ALL_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Reports that part of a test cannot run here because of `reason`. Returns (after printing
/// `SKIPPED <reason>`) so the caller can skip that part.
///
/// # Panics
/// When [`require_all`]: the message names the reason and how to provide what is missing.
#[track_caller]
pub fn skip(reason: &str) {
    if require_all() {
        panic!(
            "{reason}: refusing to skip because {REQUIRE_ALL_ENV} is set (make test sets it; provide \
             what is missing, or run with {REQUIRE_ALL_ENV}=0 to allow skips)"
        );
    }
    eprintln!("SKIPPED {reason} (a failure under {REQUIRE_ALL_ENV}=1, as make test runs)");
}
