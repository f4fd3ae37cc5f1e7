//! Command line of the `catalogd` binary: the modes and their arguments; each mode lives in
//! [`crate::cmd`].
//!
//! Input: parsed arguments. Output: an [`Exit`] status, messages on stdout/stderr. The exit
//! statuses are `olm-runtime`'s, shared with operator-controller and listed in `--help`.
//!
//! Adding a mode: a module `cmd/<mode>.rs` with its `Args` and `run`, one [`Command`] variant and
//! one arm in [`run_with`].

use std::io::Write;

use clap::{Parser, Subcommand};
use olm_runtime::exit::{EXIT_STATUS_HELP, Exit};

use crate::cmd;

/// catalogd: unpacks File-Based Catalog images and serves their content over HTTP.
#[derive(Debug, Parser)]
#[command(
    name = "catalogd",
    version,
    subcommand_required = true,
    arg_required_else_help = true,
    after_help = EXIT_STATUS_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What to run.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load and validate a File-Based Catalog directory, as `opm validate` does.
    ///
    /// Every problem is reported with its file, line and object. Exit status: 0 valid (warnings
    /// are printed on stderr), 1 invalid or unloadable, 2 usage error.
    #[command(after_help = EXIT_STATUS_HELP)]
    Validate(cmd::validate::Args),
    /// Serve a local File-Based Catalog directory over HTTP exactly as a ClusterCatalog is served.
    ///
    /// The content is at `/catalogs/NAME/api/v1/all` and `/catalogs/NAME/api/v1/metas`, with
    /// `/healthz`, `/readyz` and `/metrics` beside it. Runs until interrupted.
    #[command(after_help = EXIT_STATUS_HELP)]
    Serve(cmd::serve::Args),
    /// Run in a cluster: reconcile ClusterCatalogs, unpack their images and serve their content.
    ///
    /// Every replica unpacks and serves; the replica holding the leader Lease (with
    /// --leader-elect) writes status and finalizers.
    #[command(after_help = EXIT_STATUS_HELP)]
    Run(Box<cmd::run::Args>),
    /// Print the version (upstream's `version` command).
    Version,
}

/// Runs the parsed command with the process's stdout and stderr.
pub fn run(cli: Cli) -> Exit {
    // Unlocked handles: long-running modes log from other threads through the same stderr.
    run_with(cli, &mut std::io::stdout(), &mut std::io::stderr())
}

/// Runs the parsed command, writing to the given streams.
pub fn run_with(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    match cli.command {
        Command::Validate(args) => cmd::validate::run(&args, out, err),
        Command::Serve(args) => cmd::serve::run(args, err),
        Command::Run(args) => cmd::run::run_from_args(*args, err),
        Command::Version => {
            let _ = writeln!(out, "catalogd {}", env!("CARGO_PKG_VERSION"));
            Exit::Ok
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn clap_rejects_unknown_flags_and_missing_arguments() {
        assert!(Cli::try_parse_from(["catalogd", "validate"]).is_err());
        assert!(Cli::try_parse_from(["catalogd", "validate", "d", "--bogus"]).is_err());
        assert!(Cli::try_parse_from(["catalogd"]).is_err());
        let cli = Cli::try_parse_from(["catalogd", "validate", "some/dir"]).unwrap();
        assert!(
            matches!(cli.command, Command::Validate(cmd::validate::Args { ref dir, lenient: false }) if dir == Path::new("some/dir"))
        );
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["catalogd", "run"]).expect("every run flag has a default");
        let Command::Run(args) = cli.command else {
            panic!("run");
        };
        let opts = cmd::run::RunOptions::from_args(*args).expect("valid");
        // Upstream: no certificate, no metrics listener.
        assert!(opts.metrics.is_none());
        assert_eq!(opts.webhook_addr, None);
        assert!(opts.metas, "our default serves /metas");
        assert_eq!(opts.gc_interval, std::time::Duration::from_secs(12 * 3600));
        let cli = Cli::try_parse_from(olm_runtime::flags::with_default_mode(
            [
                "catalogd",
                "--tls-cert=/c",
                "--tls-key=/k",
                "--gc-interval",
                "1h30m",
            ]
            .map(Into::into)
            .to_vec(),
            "run",
        ))
        .expect("parses");
        let Command::Run(args) = cli.command else {
            panic!("run");
        };
        let opts = cmd::run::RunOptions::from_args(*args).expect("valid");
        assert_eq!(opts.metrics.map(|m| m.0), Some(([0, 0, 0, 0], 7443).into()));
        assert_eq!(opts.webhook_addr, Some(([0, 0, 0, 0], 9443).into()));
        assert_eq!(opts.gc_interval, std::time::Duration::from_secs(5400));
    }

    #[test]
    fn help_lists_the_exit_statuses() {
        let help = Cli::try_parse_from(["catalogd", "serve", "--help"])
            .expect_err("help is an early exit")
            .to_string();
        assert!(help.contains("3  runtime failure"), "{help}");
    }
}
