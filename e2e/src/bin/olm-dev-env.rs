//! `olm-dev-env run`: starts a local control plane, a registry, the sample catalog and bundles,
//! catalogd and operator-controller, prints how to reach them, watches them (see
//! `olm_e2e::dev_env::after_exit`), and tears it all down on Ctrl-C. Exit 0 after Ctrl-C or
//! SIGTERM, 1 when a step fails or a component that cannot be restarted exits.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use olm_e2e::Tier;

#[derive(Parser)]
#[command(about = "A local OLM environment on loopback for trying things by hand")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start everything, print `export KUBECONFIG=...`, and watch the components until Ctrl-C.
    Run {
        /// `full` adds kube-controller-manager, kube-scheduler and a kwok Node, so Deployments
        /// become Available and garbage collection works.
        #[arg(long, value_enum, default_value_t = TierArg::Full)]
        tier: TierArg,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum TierArg {
    Apiserver,
    Full,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { tier } => {
            let tier = match tier {
                TierArg::Apiserver => Tier::ApiServer,
                TierArg::Full => Tier::Full,
            };
            olm_e2e::dev_env::run(olm_e2e::dev_env::Options { tier }).await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("olm-dev-env: {e}");
            ExitCode::FAILURE
        }
    }
}
