//! The `operator-controller` binary: parses arguments and runs the selected mode.

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = operator_controller::cli::run(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(code)
}
