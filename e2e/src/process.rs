//! Child processes that never outlive the process that started them.
//!
//! Input: a program, its arguments and a log file path. Output: a running child whose stdout and
//! stderr go to the log file, and which is stopped by PID (SIGTERM, then SIGKILL). No network.
//!
//! Every child is launched as `setpriv --pdeathsig KILL -- PROGRAM ARGS...` (util-linux), so the
//! kernel kills it when its parent goes away, even on a panic, an abort or SIGKILL of the test
//! binary. The parent-death signal fires when the *thread* that forked the child exits, so all
//! children are forked by one dedicated spawner thread that lives as long as the process.
//! Children get a process group of their own, so a Ctrl-C in a terminal reaches only our process,
//! which then stops them in order.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// The program that sets the parent-death signal before executing the real command.
const SETPRIV: &str = "setpriv";

/// What to start.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Short name used in errors and as the log file name (`NAME.log`).
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Extra environment variables; the parent's environment is inherited otherwise.
    pub env: Vec<(OsString, OsString)>,
    /// Working directory (the log file's directory when `None`).
    pub cwd: Option<PathBuf>,
    pub log_path: PathBuf,
    /// Append to the log file instead of starting it afresh (a restarted component keeps the log
    /// of its earlier runs).
    pub append_log: bool,
}

impl Spec {
    /// A spec logging to `DIR/NAME.log`.
    pub fn new(name: &str, program: impl Into<PathBuf>, log_dir: &Path) -> Spec {
        Spec {
            name: name.to_owned(),
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            log_path: log_dir.join(format!("{name}.log")),
            append_log: false,
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Spec {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Spec
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Spec {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// Failure to start or stop a child.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("failed to create log file {path}: {source}")]
    Log {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "failed to start {name}: `setpriv` (util-linux) was not found on PATH; it is needed so children die with the test process"
    )]
    SetprivMissing { name: String },
    #[error("failed to start {name} ({program}): {source}")]
    Spawn {
        name: String,
        program: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to start {name}: the spawner thread is gone")]
    SpawnerGone { name: String },
}

struct Request {
    spec: Spec,
    reply: mpsc::SyncSender<Result<Child, ProcessError>>,
}

/// The sender half of the spawner thread's queue. It lives in a static, is never dropped, and so
/// the thread never exits before the process does.
fn spawner() -> &'static Mutex<mpsc::Sender<Request>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        // If the thread cannot be created, requests fail with SpawnerGone.
        let _ = thread::Builder::new()
            .name("olm-e2e-spawner".into())
            .spawn(move || {
                for request in rx {
                    let _ = request.reply.send(spawn_here(&request.spec));
                }
            });
        Mutex::new(tx)
    })
}

/// Starts the spawner thread now, from the calling thread, unless it runs already.
///
/// A new thread inherits the network namespace of the thread that creates it. The real tier
/// moves its own threads into a namespace of its own (`setns`); had one of them created the
/// spawner, every later child of the whole test binary (the shared control plane's etcd too)
/// would start in that namespace and die with its teardown. The tier calls this first, from a
/// thread still in the test process's namespace.
pub fn start_spawner() {
    let _ = spawner();
}

fn spawn_here(spec: &Spec) -> Result<Child, ProcessError> {
    let log_err = |source| ProcessError::Log {
        path: spec.log_path.clone(),
        source,
    };
    let log = if spec.append_log {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.log_path)
    } else {
        File::create(&spec.log_path)
    }
    .map_err(log_err)?;
    let log_err2 = log.try_clone().map_err(log_err)?;
    let cwd = spec
        .cwd
        .clone()
        .or_else(|| spec.log_path.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut cmd = Command::new(SETPRIV);
    cmd.arg("--pdeathsig")
        .arg("KILL")
        .arg("--")
        .arg(&spec.program)
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err2))
        .process_group(0);
    cmd.spawn().map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            ProcessError::SetprivMissing {
                name: spec.name.clone(),
            }
        } else {
            ProcessError::Spawn {
                name: spec.name.clone(),
                program: spec.program.clone(),
                source,
            }
        }
    })
}

/// A child that has exited: which one, how, and the end of its log.
#[derive(Clone, Debug)]
pub struct Exited {
    pub name: String,
    pub status: ExitStatus,
    pub log: PathBuf,
    /// The last lines of the log when the exit was noticed.
    pub tail: String,
}

impl std::fmt::Display for Exited {
    /// `NAME exited (STATUS); last lines of LOG:` and the lines, indented.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} exited ({}); last lines of {}:",
            self.name,
            self.status,
            self.log.display()
        )?;
        if self.tail.is_empty() {
            return write!(f, "\n    (the log is empty)");
        }
        for line in self.tail.lines() {
            write!(f, "\n    {line}")?;
        }
        Ok(())
    }
}

/// A running child. Dropping it kills the child (SIGKILL) and reaps it.
#[derive(Debug)]
pub struct Supervised {
    name: String,
    log_path: PathBuf,
    child: Option<Child>,
    exit: Option<ExitStatus>,
}

impl Supervised {
    /// Starts `spec` from the spawner thread.
    pub fn start(spec: Spec) -> Result<Supervised, ProcessError> {
        let name = spec.name.clone();
        let log_path = spec.log_path.clone();
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        let sent = spawner()
            .lock()
            .map_err(|_| ProcessError::SpawnerGone { name: name.clone() })?
            .send(Request {
                spec,
                reply: reply_tx,
            });
        if sent.is_err() {
            return Err(ProcessError::SpawnerGone { name });
        }
        let child = reply_rx
            .recv()
            .map_err(|_| ProcessError::SpawnerGone { name: name.clone() })??;
        Ok(Supervised {
            name,
            log_path,
            child: Some(child),
            exit: None,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The child's PID (that of the component itself: setpriv execs it in place).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The exit status if the child has exited, without blocking.
    pub fn try_exit_status(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none()
            && let Some(child) = self.child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            self.exit = Some(status);
        }
        self.exit
    }

    /// The last `lines` lines of the child's log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path, lines)
    }

    /// If the child has exited (it is reaped): its status and the last `lines` lines of its log.
    pub fn exited(&mut self, lines: usize) -> Option<Exited> {
        let status = self.try_exit_status()?;
        Some(Exited {
            name: self.name.clone(),
            status,
            log: self.log_path.clone(),
            tail: self.log_tail(lines),
        })
    }

    /// Stops the child: SIGTERM, up to `grace` to exit, then SIGKILL; always reaps it.
    /// Blocks the calling thread for at most `grace` plus the time to reap.
    pub fn stop(&mut self, grace: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if self.exit.is_some() || matches!(child.try_wait(), Ok(Some(_))) {
            let _ = child.wait();
            return;
        }
        if !grace.is_zero()
            && let Some(pid) = i32::try_from(child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            && rustix::process::kill_process(pid, rustix::process::Signal::TERM).is_ok()
        {
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline {
                if let Ok(Some(status)) = child.try_wait() {
                    self.exit = Some(status);
                    return;
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = child.kill();
        if let Ok(status) = child.wait() {
            self.exit = Some(status);
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop(Duration::ZERO);
    }
}

/// The last `lines` lines of a log file (at most the last 64 KiB are read).
pub fn log_tail(path: &Path, lines: usize) -> String {
    const MAX: u64 = 64 * 1024;
    let Ok(mut file) = File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX {
        let _ = file.seek(SeekFrom::Start(len - MAX));
    }
    let mut buf = Vec::new();
    let _ = file.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The PIDs of every process on the machine now (the numeric entries of `/proc`); empty when
/// `/proc` cannot be read.
pub fn running_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_pids_include_this_process() {
        assert!(running_pids().contains(&std::process::id()));
    }

    #[test]
    fn child_output_goes_to_its_log_and_exit_is_observed() {
        let dir = tempfile_dir();
        let spec = Spec::new("echo", "/bin/sh", &dir).args(["-c", "echo hello; echo oops >&2"]);
        let mut child = Supervised::start(spec).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_exit_status().is_none() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        assert!(child.try_exit_status().unwrap().success());
        assert_eq!(child.log_tail(10), "hello\noops");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn stop_terminates_a_long_running_child() {
        let dir = tempfile_dir();
        let spec = Spec::new("sleeper", "/bin/sleep", &dir).arg("600");
        let mut child = Supervised::start(spec).unwrap();
        let pid = child.pid().unwrap();
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        child.stop(Duration::from_secs(5));
        assert!(child.try_exit_status().is_some());
        // Reaped: the PID no longer names our child (it may be reused, but not as a zombie of ours).
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(!stat.contains("(sleep)"), "{stat}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_program_is_reported_in_the_log_not_as_a_hang() {
        let dir = tempfile_dir();
        let spec = Spec::new("missing", "/nonexistent/olm-e2e-binary", &dir);
        let mut child = Supervised::start(spec).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_exit_status().is_none() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        assert!(!child.try_exit_status().unwrap().success());
        assert!(child.log_tail(5).contains("/nonexistent/olm-e2e-binary"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_exit_names_the_child_its_status_and_its_last_log_lines() {
        let dir = tempfile_dir();
        let spec = Spec::new("failing", "/bin/sh", &dir).args(["-c", "echo one; echo two; exit 3"]);
        let mut child = Supervised::start(spec).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let exited = loop {
            if let Some(exited) = child.exited(1) {
                break exited;
            }
            assert!(Instant::now() < deadline, "the child did not exit");
            thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(exited.name, "failing");
        assert_eq!(exited.status.code(), Some(3));
        assert_eq!(
            exited.to_string(),
            format!(
                "failing exited (exit status: 3); last lines of {}:\n    two",
                dir.join("failing.log").display()
            )
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_restarted_child_appends_to_its_log() {
        let dir = tempfile_dir();
        let run = |append_log: bool, word: &str| {
            let mut spec =
                Spec::new("twice", "/bin/sh", &dir).args(["-c", &format!("echo {word}")]);
            spec.append_log = append_log;
            let mut child = Supervised::start(spec).unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            while child.try_exit_status().is_none() {
                assert!(Instant::now() < deadline, "the child did not exit");
                thread::sleep(Duration::from_millis(10));
            }
        };
        run(false, "first");
        run(true, "second");
        assert_eq!(
            std::fs::read_to_string(dir.join("twice.log")).unwrap(),
            "first\nsecond\n"
        );
        run(false, "fresh");
        assert_eq!(
            std::fs::read_to_string(dir.join("twice.log")).unwrap(),
            "fresh\n"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        tempfile::tempdir().unwrap().keep()
    }
}
