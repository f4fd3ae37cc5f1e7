//! Command line of the `operator-controller` binary: the modes and their arguments; each mode
//! lives in [`crate::cmd`].
//!
//! Input: parsed arguments. Output: an [`Exit`] status and messages on stdout/stderr. The exit
//! statuses are `olm-runtime`'s, shared with catalogd and listed in `--help`.
//!
//! Adding a mode: a module `cmd/<mode>.rs` with its `Args` and `run`, one [`Command`] variant and
//! one arm in [`run_with`].

use std::io::Write;

use clap::{Parser, Subcommand};
use olm_runtime::exit::{EXIT_STATUS_HELP, Exit};

use crate::cmd;

/// operator-controller: resolves, installs and upgrades ClusterExtensions from catalog content.
#[derive(Debug, Parser)]
#[command(
    name = "operator-controller",
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
    /// Run the ClusterExtension controller against a cluster (the in-cluster mode).
    #[command(after_help = EXIT_STATUS_HELP)]
    Run(Box<cmd::run::Args>),
    /// Resolve which bundle a ClusterExtension would get, from catalog directories or catalogd URLs.
    ///
    /// Prints one JSON object (bundle, catalog, deprecations) and exits 0; on a resolution failure
    /// prints the exact status message on stderr and exits 1; usage errors exit 2.
    #[command(after_help = EXIT_STATUS_HELP)]
    Resolve(cmd::resolve::Args),
    /// Check whether replacing an installed CRD with a new one is safe (upstream's rules minus
    /// its false positives); exit 0 safe, 1 unsafe, 2 usage.
    #[command(after_help = EXIT_STATUS_HELP)]
    CrdUpgradeCheck(cmd::crd_upgrade_check::Args),
    /// Render a registry+v1 bundle (directory or image) into the objects a ClusterExtension
    /// would install, as a YAML stream; exit 1 with upstream's message for an invalid bundle or
    /// configuration, 2 for usage errors, 3 when the image cannot be pulled.
    #[command(after_help = EXIT_STATUS_HELP)]
    Render(cmd::render::RenderArgs),
    /// Print the version (upstream's `version` command).
    Version,
    /// Explain why the resolver chooses a bundle and why not each other bundle of the package
    /// (catalog directories, catalogd URLs, or `--extension NAME` on a cluster); exit 0 chosen,
    /// 1 nothing resolves (explanation printed all the same), 2 usage, 3 runtime failure.
    #[command(after_help = EXIT_STATUS_HELP)]
    Explain(Box<cmd::explain::Args>),
    /// Preview what the controller would do for a ClusterExtension (`-f FILE` or `--extension
    /// NAME`): the bundle change, each object created, updated (with a diff), deleted or left,
    /// the RBAC and webhook deltas and CRD upgrade safety, writing nothing (dry runs only);
    /// exit 0 would apply, 1 would be refused (the controller's message printed), 2 usage,
    /// 3 runtime failure.
    #[command(after_help = EXIT_STATUS_HELP)]
    Preview(Box<cmd::preview::Args>),
}

/// Runs the parsed command with the process's stdout and stderr.
pub fn run(cli: Cli) -> Exit {
    // Unlocked handles: `run` logs from other threads through the same stderr.
    run_with(cli, &mut std::io::stdout(), &mut std::io::stderr())
}

/// Runs the parsed command, writing to the given streams.
pub fn run_with(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    match cli.command {
        Command::Run(args) => cmd::run::run_from_args(*args, err),
        Command::Resolve(args) => cmd::resolve::run(&args, out, err),
        Command::CrdUpgradeCheck(args) => cmd::crd_upgrade_check::run(&args, out, err),
        Command::Render(args) => cmd::render::run(&args, out, err),
        Command::Version => {
            let _ = writeln!(out, "operator-controller {}", env!("CARGO_PKG_VERSION"));
            Exit::Ok
        }
        Command::Explain(args) => cmd::explain::run(&args, out, err),
        Command::Preview(args) => cmd::preview::run(&args, out, err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// The flags `config/manager/operator-controller.yaml` passes are the binary's.
    #[test]
    fn the_manager_manifest_passes_flags_the_binary_accepts() {
        // The run-time CARGO_MANIFEST_DIR first: a cache-shared target directory may hold this
        // test compiled from a checkout at another path, which no longer exists.
        let path = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")))
            .join("../config/manager/operator-controller.yaml");
        let text = std::fs::read_to_string(&path).expect("the manager manifest");
        let args: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter_map(|l| l.strip_prefix("- "))
            .filter(|a| *a == "run" || a.starts_with("--"))
            .collect();
        assert!(args.len() > 3, "{args:?}");
        let cli = Cli::try_parse_from(std::iter::once("operator-controller").chain(args.clone()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert!(matches!(cli.command, Command::Run(_)));
    }

    #[test]
    fn help_lists_the_exit_statuses() {
        let help = Cli::try_parse_from(["operator-controller", "resolve", "--help"])
            .expect_err("help is an early exit")
            .to_string();
        assert!(help.contains("1  invalid input"), "{help}");
        assert!(help.contains("3  runtime failure"), "{help}");
    }
}
