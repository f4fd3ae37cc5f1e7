//! Removing a `real` tier instance and checking that nothing of it is left.
//!
//! Input: what the instance made (its scratch directory, namespace file, cgroups named after it,
//! `/run/netns` entries containerd added). Output: the removal, and a list of what is left. IO:
//! `/proc`, `/sys/fs/cgroup`, mounts, signals to processes of the instance only (found by their
//! network namespace, cgroup or a command line naming the instance's directory).

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::process::Supervised;

use super::{CGROUP_CONTROLLERS, POD_NETNS_DIR, PREFIX};

/// What an instance made.
#[derive(Clone, Debug)]
pub struct Instance {
    pub id: String,
    pub root: PathBuf,
    pub netns_file: PathBuf,
    /// The namespace's inode (0 when it was never made).
    pub netns_inode: u64,
    /// `/run/netns` before the instance started (`None`: it did not exist).
    pub netns_dir_before: Option<BTreeSet<String>>,
    /// crictl and containerd's socket, to remove the Pods through the CRI first.
    pub crictl: Option<(PathBuf, PathBuf)>,
    /// Fixed paths ([`FIXED_FILES`], [`FIXED_DIRS`]) that did not exist before the instance:
    /// files are removed, directories removed again when empty.
    pub created_dirs: Vec<PathBuf>,
}

/// Fixed directories the node's components create whatever their configuration says, children
/// before parents: containerd 1.6's Pod sandbox network namespaces, its shims' sockets and its
/// CNI result cache; the kubelet's device-plugin socket directory and its `/var/log/containers`
/// links. Each is emptied by the teardown of the Pods and components that use it.
pub const FIXED_DIRS: &[&str] = &[
    "/run/containerd/s",
    "/run/containerd",
    POD_NETNS_DIR,
    "/var/lib/cni/results",
    "/var/lib/cni",
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet",
    "/var/log/containers",
];

/// Fixed files the kubelet creates and leaves behind: its device-plugin socket.
pub const FIXED_FILES: &[&str] = &["/var/lib/kubelet/device-plugins/kubelet.sock"];
/// Where the kubelet links each container's log (into the instance's Pod-log directory).
pub const CONTAINER_LOG_LINKS: &str = "/var/log/containers";

/// The [`FIXED_FILES`] and [`FIXED_DIRS`] that do not exist now (files first).
pub fn missing_fixed_paths() -> Vec<PathBuf> {
    FIXED_FILES
        .iter()
        .chain(FIXED_DIRS)
        .map(PathBuf::from)
        .filter(|d| std::fs::symlink_metadata(d).is_err())
        .collect()
}

/// Links in [`CONTAINER_LOG_LINKS`] that point into the instance's directory.
fn container_log_links(instance: &Instance) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(CONTAINER_LOG_LINKS) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::read_link(p).is_ok_and(|t| t.starts_with(&instance.root)))
        .collect()
}

impl Instance {
    fn cgroup_dirs(&self) -> Vec<PathBuf> {
        CGROUP_CONTROLLERS
            .iter()
            .map(|c| Path::new("/sys/fs/cgroup").join(c).join(&self.id))
            .collect()
    }
}

/// The inode of a namespace file (or bind mount of one).
pub fn inode(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// Removes everything of `instance`, in an order that lets each part go cleanly: the kubelet
/// first (nothing restarts Pods), the Pods through the CRI (containerd unmounts their roots and
/// removes their network namespaces), the other components, any process still in the
/// namespace or the cgroups, mounts under the directory, the namespace, the cgroups, the directory.
/// Returns [`leftovers`].
pub fn teardown(instance: &Instance, mut processes: Vec<Supervised>) -> Vec<String> {
    if let Some(kubelet) = processes.iter_mut().find(|p| p.name() == "kubelet") {
        kubelet.stop(super::STOP_GRACE);
    }
    let containerd_running = processes
        .iter_mut()
        .any(|p| p.name() == "containerd" && p.try_exit_status().is_none());
    if containerd_running && let Some((crictl, socket)) = &instance.crictl {
        let endpoint = format!("--runtime-endpoint=unix://{}", socket.display());
        let _ = std::process::Command::new(crictl)
            .args([
                endpoint.as_str(),
                "--timeout=30s",
                "rmp",
                "--all",
                "--force",
            ])
            .output();
    }
    for process in processes.iter_mut().rev() {
        process.stop(super::STOP_GRACE);
    }
    drop(processes);
    kill_instance_processes(instance);
    unmount_all(instance);
    let _ = std::fs::remove_file(&instance.netns_file);
    remove_cgroups(instance);
    if instance.root.exists() && mounts_under(instance).is_empty() {
        let _ = std::fs::remove_dir_all(&instance.root);
    }
    for link in container_log_links(instance) {
        let _ = std::fs::remove_file(link);
    }
    for path in &instance.created_dirs {
        if FIXED_FILES.iter().any(|f| Path::new(f) == path) {
            let _ = std::fs::remove_file(path);
        } else {
            // Only when empty: another node may have started using it meanwhile.
            let _ = std::fs::remove_dir(path);
        }
    }
    leftovers(instance)
}

/// Processes of the instance: in its network namespace, in one of its cgroups, or with its
/// directory in their command line. Never this process.
pub fn instance_processes(instance: &Instance) -> Vec<(u32, String)> {
    let me = std::process::id();
    let root = instance.root.display().to_string();
    let netns = format!("net:[{}]", instance.netns_inode);
    let cgroup_part = format!("/{}", instance.id);
    let mut out = Vec::new();
    for pid in crate::process::running_pids() {
        if pid == me {
            continue;
        }
        let dir = std::path::PathBuf::from(format!("/proc/{pid}"));
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        if status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
        {
            continue;
        }
        let cmdline = std::fs::read(dir.join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let in_netns = instance.netns_inode != 0
            && std::fs::read_link(dir.join("ns/net")).is_ok_and(|l| l.to_string_lossy() == netns);
        let in_cgroup = std::fs::read_to_string(dir.join("cgroup"))
            .unwrap_or_default()
            .lines()
            .any(|l| {
                l.split(':')
                    .nth(2)
                    .is_some_and(|p| p == cgroup_part || p.starts_with(&format!("{cgroup_part}/")))
            });
        if in_netns || in_cgroup || cmdline.contains(&root) {
            out.push((pid, cmdline.trim().to_owned()));
        }
    }
    out
}

fn kill_instance_processes(instance: &Instance) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = instance_processes(instance);
        if left.is_empty() || Instant::now() > deadline {
            return;
        }
        for (pid, _) in left {
            if let Some(pid) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Mount points of the instance: under its directory, and `/run/netns` entries that appeared
/// after it started.
pub fn mounts_under(instance: &Instance) -> Vec<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let new_pod_netns = |p: &Path| {
        p.parent() == Some(Path::new(POD_NETNS_DIR))
            && p.file_name().is_some_and(|n| {
                !instance
                    .netns_dir_before
                    .as_ref()
                    .is_some_and(|before| before.contains(&*n.to_string_lossy()))
            })
    };
    let mut out: Vec<PathBuf> = mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|m| PathBuf::from(m.replace("\\040", " ")))
        .filter(|m| m.starts_with(&instance.root) || new_pod_netns(m))
        .collect();
    out.sort();
    out.dedup();
    out
}

fn unmount_all(instance: &Instance) {
    for _ in 0..5 {
        let mut mounts = mounts_under(instance);
        if mounts.is_empty() {
            return;
        }
        // Deepest first.
        mounts.sort_by_key(|m| std::cmp::Reverse(m.components().count()));
        for mount in mounts {
            let _ = rustix::mount::unmount(&mount, rustix::mount::UnmountFlags::DETACH);
            if mount.parent() == Some(Path::new(POD_NETNS_DIR)) {
                let _ = std::fs::remove_file(&mount);
            }
        }
    }
}

fn remove_cgroups(instance: &Instance) {
    for dir in instance.cgroup_dirs() {
        if !dir.exists() {
            continue;
        }
        // Children before parents.
        let mut dirs = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            if let Ok(entries) = std::fs::read_dir(&d) {
                for e in entries.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(e.path());
                    }
                }
            }
            dirs.push(d);
        }
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in dirs {
            for _ in 0..20 {
                if std::fs::remove_dir(&d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// What is left of `instance`: processes, mounts, the namespace file, cgroups, the directory,
/// `/run/netns` entries it added. Empty after a complete teardown.
pub fn leftovers(instance: &Instance) -> Vec<String> {
    let mut out = Vec::new();
    for (pid, cmdline) in instance_processes(instance) {
        out.push(format!("process {pid}: {cmdline}"));
    }
    for mount in mounts_under(instance) {
        out.push(format!("mount {}", mount.display()));
    }
    if instance.netns_file.exists() {
        out.push(format!("namespace file {}", instance.netns_file.display()));
    }
    for dir in instance.cgroup_dirs() {
        if dir.exists() {
            out.push(format!("cgroup {}", dir.display()));
        }
    }
    if instance.root.exists() {
        out.push(format!("directory {}", instance.root.display()));
    }
    for path in &instance.created_dirs {
        if std::fs::symlink_metadata(path).is_ok() {
            out.push(format!("{} (created by the instance)", path.display()));
        }
    }
    for link in container_log_links(instance) {
        out.push(format!("container log link {}", link.display()));
    }
    if let Ok(entries) = std::fs::read_dir(POD_NETNS_DIR) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let before = instance
                .netns_dir_before
                .as_ref()
                .is_some_and(|b| b.contains(&name));
            if !before && name.starts_with("cni-") {
                out.push(format!("pod network namespace {POD_NETNS_DIR}/{name}"));
            }
        }
    }
    out
}

/// Removes the remains of instances under `base` whose process is gone (a test killed before
/// its teardown). Returns what it removed.
pub fn remove_stale(base: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let mut ids: BTreeSet<String> = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir(base) {
        ids.extend(
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(PREFIX)),
        );
    }
    for controller in CGROUP_CONTROLLERS {
        if let Ok(entries) = std::fs::read_dir(Path::new("/sys/fs/cgroup").join(controller)) {
            ids.extend(
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(PREFIX)),
            );
        }
    }
    for id in ids {
        let owner = id
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        let alive = owner.is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if alive {
            continue;
        }
        let root = base.join(&id);
        let netns_file = root.join("netns");
        let instance = Instance {
            netns_inode: inode(&netns_file)
                .filter(|_| is_mounted(&netns_file))
                .unwrap_or(0),
            id: id.clone(),
            root,
            netns_file,
            // Unknown: only mounts under the directory are removed.
            netns_dir_before: Some(
                std::fs::read_dir(POD_NETNS_DIR)
                    .map(|e| {
                        e.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            crictl: None,
            created_dirs: Vec::new(),
        };
        let left = teardown(&instance, Vec::new());
        removed.push(if left.is_empty() {
            id
        } else {
            format!("{id} (left: {left:?})")
        });
    }
    removed
}

fn is_mounted(path: &Path) -> bool {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let path = path.display().to_string();
    mountinfo
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(path.as_str()))
}
