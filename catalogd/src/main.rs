//! The `catalogd` binary: parses arguments and runs the selected mode.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // clap exits with 2 on usage errors and 0 after --help or --version.
    let cli = catalogd::cli::Cli::parse();
    catalogd::cli::run(cli).into()
}
