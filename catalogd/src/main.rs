//! The `catalogd` binary: parses arguments and runs the selected mode.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Before anything else: it may execute the binary again (olm_runtime::allocator).
    olm_runtime::allocator::tune();
    // clap exits with 2 on usage errors and 0 after --help or --version.
    // Upstream's command line names no mode: flags first mean `run`.
    let args = olm_runtime::flags::with_default_mode(std::env::args_os().collect(), "run");
    let cli = catalogd::cli::Cli::parse_from(args);
    catalogd::cli::run(cli).into()
}
