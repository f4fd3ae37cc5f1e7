//! A Deployment's container run as a process the way a kubelet would run it, without a
//! container runtime: its own network namespace (so two pods may both listen on `:8081`), its
//! own mount namespace with the image's root read-only (`readOnlyRootFilesystem`), emptyDir
//! volumes as tmpfs, Secret volumes as files at the mount paths the manifest names, the
//! ServiceAccount token where client libraries look for it, the command and args exactly as the
//! manifest gives them, as the image's non-root user. Root only (namespaces and mounts).
//!
//! Input: the pod root (an image root staged by [`crate::release::image::stage_root`]), the
//! container and volumes of a Deployment, the Secrets it mounts, a token. Output: a running
//! [`Supervised`] process and [`PodNet`] (the pod's network namespace) with forwarders that
//! carry the pod's connections to the API server and registry on the test's loopback, and the
//! test's connections into the pod. Network: loopback in namespaces this test creates.
//!
//! Nothing outlives the test: the network namespace lives only as long as its file descriptor
//! and the process; mounts live in the process's private mount namespace; the root is a
//! temporary directory.

use std::collections::BTreeMap;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::task::JoinHandle;

use crate::process::{Spec, Supervised};

/// The user and group the images run as (`release::image::USER`).
pub const POD_USER: &str = "65532:65532";

/// A network namespace of its own, with loopback up.
pub struct PodNet {
    fd: OwnedFd,
    forwarders: Vec<JoinHandle<()>>,
}

impl Drop for PodNet {
    fn drop(&mut self) {
        for f in &self.forwarders {
            f.abort();
        }
    }
}

/// Runs `f` on a thread that has entered the namespace `fd`.
fn inside<T: Send + 'static>(
    fd: &OwnedFd,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let fd = fd.try_clone()?;
    std::thread::spawn(move || {
        rustix::thread::move_into_link_name_space(
            fd.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )?;
        f()
    })
    .join()
    .map_err(|_| io::Error::other("namespace thread panicked"))?
}

impl PodNet {
    /// A new network namespace with `lo` up.
    pub fn new() -> io::Result<PodNet> {
        let fd = std::thread::spawn(|| -> io::Result<OwnedFd> {
            // Deprecated in rustix for the flags that unshare file descriptors or filesystem
            // state under other code's feet; only this short-lived thread's network namespace
            // changes here.
            #[allow(deprecated)]
            rustix::thread::unshare(rustix::thread::UnshareFlags::NEWNET)?;
            let fd = rustix::fs::open(
                "/proc/thread-self/ns/net",
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?;
            // Forked from this thread, `ip` runs in the new namespace.
            let status = std::process::Command::new("ip")
                .args(["link", "set", "lo", "up"])
                .status()?;
            if !status.success() {
                return Err(io::Error::other(format!("ip link set lo up: {status}")));
            }
            Ok(fd)
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))??;
        Ok(PodNet {
            fd,
            forwarders: Vec::new(),
        })
    }

    /// The namespace as a path `nsenter --net=` accepts.
    pub fn path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.fd.as_raw_fd())
    }

    /// A connection to `127.0.0.1:port` inside this namespace.
    pub fn connect(&self, port: u16) -> io::Result<TcpStream> {
        inside(&self.fd, move || {
            TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        })
    }

    /// Makes `127.0.0.1:port` inside the pod reach `target` (on the test's network): how the
    /// pod reaches the API server and the registry.
    pub fn expose_outside(&mut self, port: u16, target: SocketAddr) -> io::Result<()> {
        let listener = inside(&self.fd, move || {
            TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
        })?;
        let connect = Arc::new(move || TcpStream::connect(target));
        self.forwarders.push(forward(listener, connect)?);
        Ok(())
    }

    /// A port on the test's `127.0.0.1` that reaches `127.0.0.1:port` inside the pod: how the
    /// test probes the pod.
    pub fn expose_inside(&mut self, port: u16) -> io::Result<SocketAddr> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let fd = self.fd.try_clone()?;
        let connect = Arc::new(move || {
            let fd = fd.try_clone()?;
            inside(&fd, move || {
                TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
            })
        });
        self.forwarders.push(forward(listener, connect)?);
        Ok(addr)
    }

    /// Makes `127.0.0.1:port` inside this pod reach `127.0.0.1:target_port` inside `other`: a
    /// Service's port mapping between two pods.
    pub fn expose_pod(&mut self, port: u16, other: &PodNet, target_port: u16) -> io::Result<()> {
        let listener = inside(&self.fd, move || {
            TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
        })?;
        let fd = other.fd.try_clone()?;
        let connect = Arc::new(move || {
            let fd = fd.try_clone()?;
            inside(&fd, move || {
                TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], target_port)))
            })
        });
        self.forwarders.push(forward(listener, connect)?);
        Ok(())
    }
}

type Connect = Arc<dyn Fn() -> io::Result<TcpStream> + Send + Sync>;

/// Accepts on `listener` and joins each connection to a fresh one from `connect`.
fn forward(listener: TcpListener, connect: Connect) -> io::Result<JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    Ok(tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            let connect = connect.clone();
            tokio::spawn(async move {
                let Ok(Ok(outbound)) = tokio::task::spawn_blocking(move || connect()).await else {
                    return;
                };
                if outbound.set_nonblocking(true).is_err() {
                    return;
                }
                let Ok(mut outbound) = tokio::net::TcpStream::from_std(outbound) else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    }))
}

/// What goes into the pod's filesystem.
pub struct PodFiles {
    /// Files by absolute path inside the pod (written before the root turns read-only).
    pub files: BTreeMap<String, Vec<u8>>,
    /// emptyDir mount paths (tmpfs, writable by the pod's user).
    pub empty_dirs: Vec<String>,
}

/// The pod's files from a container's `volumeMounts` and the pod's `volumes`: Secret volumes
/// from `secrets` (name → data), honouring `items`; emptyDirs as tmpfs.
pub fn volume_files(
    container: &Value,
    pod_spec: &Value,
    secrets: &BTreeMap<String, BTreeMap<String, Vec<u8>>>,
) -> Result<PodFiles, String> {
    let mut out = PodFiles {
        files: BTreeMap::new(),
        empty_dirs: Vec::new(),
    };
    let volumes = pod_spec["volumes"].as_array().cloned().unwrap_or_default();
    for mount in container["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let name = mount["name"].as_str().unwrap_or_default();
        let path = mount["mountPath"]
            .as_str()
            .unwrap_or_default()
            .trim_end_matches('/');
        let volume = volumes
            .iter()
            .find(|v| v["name"] == name)
            .ok_or_else(|| format!("volumeMount {name} names no volume"))?;
        if volume.get("emptyDir").is_some() {
            out.empty_dirs.push(path.to_owned());
        } else if let Some(secret) = volume.get("secret") {
            let secret_name = secret["secretName"].as_str().unwrap_or_default();
            let data = secrets
                .get(secret_name)
                .ok_or_else(|| format!("volume {name}: Secret {secret_name} is missing"))?;
            match secret["items"].as_array() {
                Some(items) => {
                    for item in items {
                        let key = item["key"].as_str().unwrap_or_default();
                        let value = data
                            .get(key)
                            .ok_or_else(|| format!("Secret {secret_name} has no key {key}"))?;
                        let file = item["path"].as_str().unwrap_or(key);
                        out.files.insert(format!("{path}/{file}"), value.clone());
                    }
                }
                None => {
                    for (key, value) in data {
                        out.files.insert(format!("{path}/{key}"), value.clone());
                    }
                }
            }
        } else {
            return Err(format!(
                "volume {name}: only emptyDir and secret volumes are run here"
            ));
        }
    }
    Ok(out)
}

/// The shell commands that build the pod's mounts in its private mount namespace and exec the
/// command as the pod's user with only `env` set. `root` is the staged image root.
fn setup_script(
    root: &Path,
    files: &PodFiles,
    env: &[(String, String)],
    command: &[String],
) -> String {
    let q = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let r = root.display().to_string();
    let mut script = vec![
        "set -eu".to_owned(),
        "mount --make-rprivate /".to_owned(),
        format!("mount --bind {} {}", q(&r), q(&r)),
        format!("mkdir -p {}/proc {}/dev", q(&r), q(&r)),
        format!("mount -t proc proc {}/proc", q(&r)),
        format!("mount --rbind /dev {}/dev", q(&r)),
        // readOnlyRootFilesystem: everything but the volumes is read-only.
        format!("mount -o remount,bind,ro {}", q(&r)),
    ];
    for dir in &files.empty_dirs {
        script.push(format!(
            "mount -t tmpfs -o mode=1777 tmpfs {}",
            q(&format!("{r}{dir}"))
        ));
    }
    let mut exec = vec!["exec".to_owned(), "env".to_owned(), "-i".to_owned()];
    exec.extend(env.iter().map(|(k, v)| q(&format!("{k}={v}"))));
    exec.push("/usr/sbin/chroot".to_owned());
    exec.push(format!("--userspec={POD_USER}"));
    exec.push(q(&r));
    exec.extend(command.iter().map(|c| q(c)));
    script.push(exec.join(" "));
    script.join("\n")
}

/// A pod: its root directory, network and process.
pub struct Pod {
    pub net: PodNet,
    pub process: Supervised,
    _root: tempfile::TempDir,
}

/// How to start a [`Pod`].
pub struct PodSpec<'a> {
    pub name: &'a str,
    /// Stages the image root into the given empty directory.
    pub stage_image: &'a dyn Fn(&Path) -> Result<(), String>,
    pub files: PodFiles,
    pub env: Vec<(String, String)>,
    pub command: Vec<String>,
    pub logs: &'a Path,
}

impl Pod {
    /// Stages the root, writes the files, and starts the process in `net`.
    pub fn start(spec: PodSpec<'_>, net: PodNet) -> Result<Pod, String> {
        let root = tempfile::Builder::new()
            .prefix(&format!("pod-{}-", spec.name))
            .tempdir()
            .map_err(|e| e.to_string())?;
        (spec.stage_image)(root.path())?;
        let mut dirs: Vec<&str> = spec.files.empty_dirs.iter().map(String::as_str).collect();
        dirs.extend(
            spec.files
                .files
                .keys()
                .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d)),
        );
        for dir in dirs {
            let at = root.path().join(dir.trim_start_matches('/'));
            std::fs::create_dir_all(&at).map_err(|e| format!("{}: {e}", at.display()))?;
        }
        for (file, bytes) in &spec.files.files {
            let at = root.path().join(file.trim_start_matches('/'));
            std::fs::write(&at, bytes).map_err(|e| format!("{}: {e}", at.display()))?;
        }
        // The pod's user must be able to enter its root.
        let _ = std::process::Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(root.path())
            .status();
        let script = setup_script(root.path(), &spec.files, &spec.env, &spec.command);
        let process_spec = Spec::new(spec.name, "nsenter", spec.logs)
            .arg(format!("--net={}", net.path()))
            .args(["unshare", "--mount", "--", "sh", "-c"])
            .arg(script);
        let process = Supervised::start(process_spec).map_err(|e| e.to_string())?;
        Ok(Pod {
            net,
            process,
            _root: root,
        })
    }
}

/// `PathBuf` of a pod path inside a staged root.
pub fn in_root(root: &Path, pod_path: &str) -> PathBuf {
    root.join(pod_path.trim_start_matches('/'))
}
