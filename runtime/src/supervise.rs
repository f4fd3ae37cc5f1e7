//! A controller task that ends on its own ends the process.
//!
//! Input: the spawned controller task and the shutdown token. Output: `Ok` when shutdown was
//! asked for, or a [`TaskEnded`] saying how the task ended first (panicked, returned). No IO.
//!
//! Why: a controller whose task has panicked or whose watch stream ended would otherwise leave
//! the process running, Ready, holding the leader Lease and doing nothing; the caller stops
//! everything (which releases the Lease) and exits non-zero so that the kubelet restarts it.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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
