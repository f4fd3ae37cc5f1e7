//! The `catalogd` binary: parses arguments and runs the selected mode.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc returns freed memory to the system soon after a burst; glibc malloc kept the
/// peak of a serving burst resident in its per-thread arenas (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // clap exits with 2 on usage errors and 0 after --help or --version.
    let cli = catalogd::cli::Cli::parse();
    catalogd::cli::run(cli).into()
}
