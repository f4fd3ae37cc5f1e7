//! `olm-dev-env run`: starts a local control plane (and, as they are added, a registry, a sample
//! catalog, catalogd and operator-controller), prints how to reach it, and tears it all down on
//! Ctrl-C.

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
    /// Start everything, print `export KUBECONFIG=...`, and wait for Ctrl-C.
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
