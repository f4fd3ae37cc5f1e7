//! The `operator-controller` binary: parses arguments and runs the selected mode.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // clap exits with 2 on usage errors and 0 after --help or --version.
    let cli = operator_controller::cli::Cli::parse();
    operator_controller::cli::run(cli).into()
}
