//! `olm-dev-env run`: a local environment for trying OLM by hand.
//!
//! Input: the binaries named by the environment (see [`crate::assets`]). Output: running
//! components on loopback, instructions on stdout, and a clean teardown on Ctrl-C or SIGTERM.
//! Network: 127.0.0.1 only.
//!
//! The environment is a list of steps ([`STEPS`]) run in order; teardown stops what they started
//! in reverse order. Later steps (registry, sample catalog image, catalogd, operator-controller)
//! are added to the list.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use crate::control_plane::{ControlPlane, ControlPlaneError, Tier};

/// Failure of a step.
#[derive(Debug, thiserror::Error)]
pub enum DevEnvError {
    #[error("failed to start the {step}: {source}")]
    Step {
        step: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("failed to wait for a shutdown signal: {0}")]
    Signal(#[source] std::io::Error),
}

impl DevEnvError {
    fn step<E>(step: &'static str) -> impl FnOnce(E) -> DevEnvError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        move |e| DevEnvError::Step {
            step,
            source: Box::new(e),
        }
    }
}

/// Options of `olm-dev-env run`.
#[derive(Clone, Debug)]
pub struct Options {
    pub tier: Tier,
}

/// What the steps started, and what to tell the user.
#[derive(Default)]
pub struct DevEnv {
    pub control_plane: Option<ControlPlane>,
    /// Shell lines printed once every step has run.
    pub exports: Vec<String>,
    /// Commands to suggest.
    pub try_commands: Vec<String>,
}

type StepFuture<'a> = Pin<Box<dyn Future<Output = Result<(), DevEnvError>> + 'a>>;
type StepFn = for<'a> fn(&'a mut DevEnv, &'a Options) -> StepFuture<'a>;

/// The steps, in start order.
pub const STEPS: &[(&str, StepFn)] = &[("control plane", |env, opts| {
    Box::pin(start_control_plane(env, opts))
})];

async fn start_control_plane(env: &mut DevEnv, opts: &Options) -> Result<(), DevEnvError> {
    let cp = ControlPlane::builder()
        .tier(opts.tier)
        .start()
        .await
        .map_err(DevEnvError::step::<ControlPlaneError>("control plane"))?;
    env.exports.push(format!(
        "export KUBECONFIG={}",
        cp.kubeconfig_path().display()
    ));
    env.try_commands.extend(
        [
            "kubectl get nodes -o wide",
            "kubectl get crds",
            "kubectl explain clusterextension.spec.source.catalog",
            "kubectl create deployment hello --image=registry.invalid/hello:1 && kubectl rollout status deployment/hello",
        ]
        .map(String::from),
    );
    println!(
        "olm-dev-env: control plane start-up: {}",
        cp.startup_summary()
    );
    println!(
        "olm-dev-env: components: {}; logs in {}",
        cp.components()
            .iter()
            .map(|c| format!("{} (pid {})", c.name, c.pid))
            .collect::<Vec<_>>()
            .join(", "),
        cp.log_dir().display()
    );
    env.control_plane = Some(cp);
    Ok(())
}

impl DevEnv {
    /// Stops everything started, newest first.
    pub async fn stop(&mut self) {
        if let Some(cp) = self.control_plane.take() {
            cp.stop().await;
        }
    }
}

/// Runs every step, prints how to use the environment, waits for Ctrl-C or SIGTERM, tears down.
/// A signal during start-up stops what was started so far.
pub async fn run(opts: Options) -> Result<(), DevEnvError> {
    // Listen before starting anything, so no signal is missed (or left to its default action).
    let mut shutdown = ShutdownSignals::listen()?;
    let mut env = DevEnv::default();
    let started = Instant::now();
    for (name, step) in STEPS {
        let step_started = Instant::now();
        let outcome = tokio::select! {
            result = step(&mut env, &opts) => Some(result),
            () = shutdown.recv() => None,
        };
        match outcome {
            Some(Ok(())) => println!(
                "olm-dev-env: {name} ready in {:.1}s",
                step_started.elapsed().as_secs_f64()
            ),
            Some(Err(e)) => {
                env.stop().await;
                return Err(e);
            }
            None => {
                println!("olm-dev-env: interrupted while starting the {name}; stopping");
                env.stop().await;
                println!("olm-dev-env: stopped");
                return Ok(());
            }
        }
    }
    println!(
        "olm-dev-env: ready in {:.1}s. In another shell:\n",
        started.elapsed().as_secs_f64()
    );
    for line in &env.exports {
        println!("  {line}");
    }
    for line in &env.try_commands {
        println!("  {line}");
    }
    println!("\nolm-dev-env: press Ctrl-C to stop");
    shutdown.recv().await;
    println!("olm-dev-env: stopping");
    env.stop().await;
    println!("olm-dev-env: stopped");
    Ok(())
}

/// SIGINT and SIGTERM, registered up front.
struct ShutdownSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    fn listen() -> Result<ShutdownSignals, DevEnvError> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(ShutdownSignals {
            interrupt: signal(SignalKind::interrupt()).map_err(DevEnvError::Signal)?,
            terminate: signal(SignalKind::terminate()).map_err(DevEnvError::Signal)?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
