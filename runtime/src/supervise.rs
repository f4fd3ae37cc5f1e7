//! A controller task that ends on its own ends the process.
//!
//! Input: the spawned controller task and the shutdown token. Output: `Ok` when shutdown was
//! asked for, or a [`TaskEnded`] saying how the task ended first (panicked, returned); after a
//! shutdown, [`stop_controller`] ends the task within a bound. No IO.
//!
//! Why: a controller whose task has panicked or whose watch stream ended would otherwise leave
//! the process running, Ready, holding the leader Lease and doing nothing; the caller stops
//! everything (which releases the Lease) and exits non-zero so that the kubelet restarts it.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a controller may take to finish its running reconciles once shutdown was asked: well
/// inside a Pod's default grace period (30 s), leaving room for the background tasks, the Lease
/// release and catalogd's drain after it.
pub const CONTROLLER_STOP_BOUND: Duration = Duration::from_secs(20);

/// How [`stop_controller`] stopped a controller task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It ended on its own: its running reconciles finished.
    Finished,
    /// Its cache never completed a first list, so it never started a reconcile; it was aborted.
    NeverStarted,
    /// It was still running after the bound; it was aborted.
    Aborted,
}

/// Stops a controller task after shutdown was asked (its graceful-shutdown trigger fired).
///
/// Why a bound at all: kube-runtime's controller holds its runner until the cache has completed a
/// first list, even after its trigger stream ended, so a controller that never reached the API
/// server (unreachable, refused, forbidden) never ends on its own and the process would hang at
/// SIGTERM until the kubelet kills it. Such a controller (`cache_listed` false) has started no
/// reconcile and is aborted at once; one that has waits for its reconciles up to `bound`.
pub async fn stop_controller<T>(
    name: &str,
    mut task: JoinHandle<T>,
    cache_listed: bool,
    bound: Duration,
) -> Stopped {
    let stopped = if !cache_listed {
        task.abort();
        Stopped::NeverStarted
    } else {
        match tokio::time::timeout(bound, &mut task).await {
            Ok(_) => Stopped::Finished,
            Err(_) => {
                task.abort();
                Stopped::Aborted
            }
        }
    };
    match stopped {
        Stopped::Finished => {}
        Stopped::NeverStarted => tracing::info!(
            task = name,
            "stopped; its cache never completed a first list, so no reconcile was running"
        ),
        Stopped::Aborted => tracing::warn!(
            task = name,
            bound = ?bound,
            "reconciles still running after the bound; stopping them"
        ),
    }
    stopped
}

/// [`stop_controller`] for a controller whose cache is `cache`, within [`CONTROLLER_STOP_BOUND`].
pub async fn stop_controller_with_cache<T, K>(
    name: &str,
    task: JoinHandle<T>,
    cache: &kube::runtime::reflector::Store<K>,
) -> Stopped
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    use futures::FutureExt;
    let listed = matches!(cache.wait_until_ready().now_or_never(), Some(Ok(())));
    stop_controller(name, task, listed, CONTROLLER_STOP_BOUND).await
}

/// How a supervised task ended before shutdown.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TaskEnded {
    #[error("the {task} panicked: {message}")]
    Panicked { task: String, message: String },
    #[error("the {task} ended unexpectedly")]
    Returned { task: String },
    #[error("the {task} was cancelled")]
    Cancelled { task: String },
}

/// Waits until `shutdown` is cancelled (`Ok`) or `task` ends first (`Err`, how it ended). After
/// `Ok` the task is still running; the caller stops it as usual.
pub async fn until_shutdown<T>(
    name: &str,
    task: &mut JoinHandle<T>,
    shutdown: &CancellationToken,
) -> Result<(), TaskEnded> {
    // Biased, shutdown first: a shutdown also stops the controller, and its end must then count
    // as the asked-for stop, not as an unexpected one.
    tokio::select! {
        biased;
        _ = shutdown.cancelled() => Ok(()),
        ended = task => Err(match ended {
            Ok(_) => TaskEnded::Returned { task: name.to_owned() },
            Err(e) if e.is_panic() => {
                let payload = e.into_panic();
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_owned());
                TaskEnded::Panicked { task: name.to_owned(), message }
            }
            Err(_) => TaskEnded::Cancelled { task: name.to_owned() },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shutdown_first_is_ok_and_leaves_the_task_running() {
        let shutdown = CancellationToken::new();
        let mut task = tokio::spawn(std::future::pending::<()>());
        shutdown.cancel();
        assert_eq!(
            until_shutdown("controller", &mut task, &shutdown).await,
            Ok(())
        );
        assert!(!task.is_finished());
        task.abort();
    }

    #[tokio::test]
    async fn a_task_that_ended_because_of_the_shutdown_is_the_asked_for_stop() {
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let mut task = tokio::spawn(async move { stop.cancelled().await });
        shutdown.cancel();
        while !task.is_finished() {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            until_shutdown("controller", &mut task, &shutdown).await,
            Ok(())
        );
    }

    #[tokio::test]
    async fn a_controller_whose_cache_never_listed_is_stopped_at_once() {
        let task = tokio::spawn(std::future::pending::<()>());
        let aborted = task.abort_handle();
        assert_eq!(
            stop_controller("controller", task, false, Duration::from_secs(3600)).await,
            Stopped::NeverStarted
        );
        while !aborted.is_finished() {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_controller_gets_the_bound_to_finish_its_reconciles_then_is_aborted() {
        let finishing = tokio::spawn(tokio::time::sleep(Duration::from_secs(5)));
        assert_eq!(
            stop_controller("controller", finishing, true, Duration::from_secs(20)).await,
            Stopped::Finished
        );
        let stuck = tokio::spawn(std::future::pending::<()>());
        let aborted = stuck.abort_handle();
        assert_eq!(
            stop_controller("controller", stuck, true, Duration::from_secs(20)).await,
            Stopped::Aborted
        );
        while !aborted.is_finished() {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_task_that_panics_or_returns_first_is_an_error_naming_it() {
        let shutdown = CancellationToken::new();
        let mut panics = tokio::spawn(async { panic!("fault injected") });
        assert_eq!(
            until_shutdown("controller", &mut panics, &shutdown).await,
            Err(TaskEnded::Panicked {
                task: "controller".into(),
                message: "fault injected".into()
            })
        );
        let mut returns = tokio::spawn(async {});
        assert_eq!(
            until_shutdown("controller", &mut returns, &shutdown).await,
            Err(TaskEnded::Returned {
                task: "controller".into()
            })
        );
    }
}
