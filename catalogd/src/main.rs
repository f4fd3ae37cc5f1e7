//! The `catalogd` binary: parses arguments and runs the chosen mode.

use clap::Parser;

fn main() -> std::process::ExitCode {
    // Usage errors exit with status 2 (clap's convention), help and version with 0.
    let cli = catalogd::cli::Cli::parse();
    catalogd::cli::run(cli)
}
