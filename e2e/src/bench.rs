//! Shared pieces of the benchmarks in `e2e/examples/` (not tests): the generated "bench"
//! bundles whose objects are all namespaced, the ClusterExtension installing one, and readings
//! of a process (`/proc`: RSS, CPU seconds, bytes written) and of kube-apiserver
//! (`apiserver_request_total`).
//!
//! Input: a registry, process ids, a client. Output: numbers and pushed images. Network: the
//! loopback registry and API server only. Panics on failure, as benchmark set-up does.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use crate::images;
use crate::operator_controller::bundle_name;
use crate::registry::Registry;

/// How often the benchmarks poll while waiting.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Extensions created concurrently (the API calls in flight at once while creating).
pub const CREATE_CONCURRENCY: usize = 50;

/// Creates every ClusterExtension of `bodies` at once, [`CREATE_CONCURRENCY`] calls in flight;
/// panics listing the failures.
pub async fn create_extensions(api: &Api<olm_api::v1::ClusterExtension>, bodies: Vec<Value>) {
    use futures::StreamExt;
    let created = futures::stream::iter(bodies)
        .map(|body| {
            let api = api.clone();
            async move {
                let ce: olm_api::v1::ClusterExtension = serde_json::from_value(body).unwrap();
                api.create(&kube::api::PostParams::default(), &ce).await
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    let errors: Vec<String> = created
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect();
    assert!(errors.is_empty(), "creating extensions failed: {errors:?}");
}

/// Prints the `count` largest (verb, resource) request counts of `delta`, also per extension
/// when `per` (the number of extensions) is given.
pub fn print_top(
    title: &str,
    delta: &BTreeMap<(String, String), f64>,
    count: usize,
    per: Option<usize>,
) {
    let mut rows: Vec<_> = delta.iter().filter(|(_, v)| **v >= 1.0).collect();
    rows.sort_by(|a, b| b.1.total_cmp(a.1));
    println!("{title}");
    for ((verb, resource), v) in rows.into_iter().take(count) {
        match per {
            Some(n) => println!(
                "    {resource:<40} {verb:<8} {v:>8.0} ({:.2}/extension)",
                v / n as f64
            ),
            None => println!("    {resource:<40} {verb:<8} {v:>8.0}"),
        }
    }
}

/// Waits until `total` Deployments named `bench-p*-controller` are Available; returns the time
/// since `started`, or None after `timeout`.
pub async fn wait_all_available(
    client: &kube::Client,
    total: usize,
    started: Instant,
    timeout: Duration,
) -> Option<Duration> {
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    loop {
        let available = api
            .list(&ListParams::default())
            .await
            .map(|l| {
                l.items
                    .iter()
                    .filter(|d| {
                        d.metadata
                            .name
                            .as_deref()
                            .is_some_and(|n| n.starts_with("bench-p"))
                            && d.status
                                .as_ref()
                                .and_then(|s| s.conditions.as_ref())
                                .is_some_and(|c| {
                                    c.iter()
                                        .any(|c| c.type_ == "Available" && c.status == "True")
                                })
                    })
                    .count()
            })
            .unwrap_or(0);
        if available >= total {
            return Some(started.elapsed());
        }
        if Instant::now() > deadline {
            println!("bench: {available}/{total} Deployments Available at the deadline");
            return None;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Writes and pushes the bundle of `package` at 1.0.0: a CSV supporting only OwnNamespace and
/// SingleNamespace, with namespaced `permissions`, one Deployment, and a ConfigMap.
pub async fn push_bundle(registry: &Registry, package: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    write_bundle(dir.path(), package);
    let tag = format!("bench/{package}-bundle:v1.0.0");
    images::push_bundle(registry, &tag, dir.path(), package, &["stable"])
        .await
        .unwrap();
    registry.image(&tag)
}

pub fn write_bundle(dir: &Path, package: &str) {
    let manifests = dir.join("manifests");
    let metadata = dir.join("metadata");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::create_dir_all(&metadata).unwrap();
    std::fs::write(
        metadata.join("annotations.yaml"),
        format!(
            "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: {package}\n  operators.operatorframework.io.bundle.channels.v1: stable\n"
        ),
    )
    .unwrap();
    let modes: Vec<Value> = [
        ("OwnNamespace", true),
        ("SingleNamespace", true),
        ("MultiNamespace", false),
        ("AllNamespaces", false),
    ]
    .iter()
    .map(|(m, s)| json!({"type": m, "supported": s}))
    .collect();
    let app = format!("{package}-op");
    let sa = format!("{package}-sa");
    let csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": bundle_name(package, "1.0.0"), "annotations": {"capabilities": "Basic Install"}},
        "spec": {
            "displayName": package,
            "version": "1.0.0",
            "provider": {"name": "bench"},
            "installModes": modes,
            "install": {"strategy": "deployment", "spec": {
                "permissions": [{"serviceAccountName": sa, "rules": [
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
                ]}],
                "deployments": [{
                    "name": format!("{package}-controller"),
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": app}},
                        "template": {
                            "metadata": {"labels": {"app": app}},
                            "spec": {
                                "serviceAccountName": sa,
                                "containers": [{"name": "manager", "image": "example.invalid/bench/manager:v1"}],
                            },
                        },
                    },
                }],
            }},
        },
    });
    std::fs::write(manifests.join("csv.json"), csv.to_string()).unwrap();
    std::fs::write(
        manifests.join("configmap.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {package}-config\ndata:\n  version: \"1.0.0\"\n"),
    )
    .unwrap();
}

/// The ClusterExtension installing `package` into `namespace`, watching that namespace.
pub fn extension(namespace: &str, package: &str, catalog: &str) -> Value {
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": format!("{namespace}-{package}")},
        "spec": {
            "namespace": namespace,
            "config": {"configType": "Inline", "inline": {"watchNamespace": namespace}},
            "source": {"sourceType": "Catalog", "catalog": {
                "packageName": package,
                "selector": {"matchLabels": {crate::operator_controller::CATALOG_NAME_LABEL: catalog}},
            }},
        },
    })
}

/// `apiserver_request_total` by (verb, resource), read through the admin client.
pub async fn apiserver_requests(client: &kube::Client) -> BTreeMap<(String, String), f64> {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(request).await.unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        let mut resource = label("resource");
        let sub = label("subresource");
        if !sub.is_empty() {
            resource = format!("{resource}/{sub}");
        }
        if resource.is_empty() {
            resource = "(non-resource)".into();
        }
        // Refused writes apart: a conflict (409) costs a request and usually a retry.
        if label("code") == "409" {
            resource.push_str(" (409)");
        }
        *out.entry((label("verb"), resource)).or_default() += value;
    }
    out
}

pub fn diff(
    before: &BTreeMap<(String, String), f64>,
    after: &BTreeMap<(String, String), f64>,
) -> BTreeMap<(String, String), f64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .collect()
}

/// A `/proc/PID/status` field in KiB.
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status_field(&status, field).unwrap_or(0)
}

/// One `Name:   value kB` field of a `/proc/PID/status` text.
fn status_field(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The largest resident set seen by an [`RssSampler`], in KiB, and what it was made of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RssSample {
    pub anon_kib: u64,
    pub file_kib: u64,
}

impl RssSample {
    fn read(pid: u32) -> Option<Self> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        Some(Self {
            anon_kib: status_field(&status, "RssAnon")?,
            file_kib: status_field(&status, "RssFile")?,
        })
    }

    pub fn total_kib(&self) -> u64 {
        self.anon_kib + self.file_kib
    }
}

/// Reads a process's resident memory every `every` on a thread of its own until [`Self::stop`],
/// keeping the largest sample: `VmHWM` says how high RSS went, not whether heap or mapped files
/// made the peak. A peak shorter than `every` can be missed, so the sample is at most the peak.
pub struct RssSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<RssSample>,
}

impl RssSampler {
    pub fn start(pid: u32, every: Duration) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut largest = RssSample::default();
            loop {
                // One more reading after the stop, so the state at the stop is counted too.
                let last = stopped.load(std::sync::atomic::Ordering::Relaxed);
                if let Some(sample) = RssSample::read(pid)
                    && sample.total_kib() > largest.total_kib()
                {
                    largest = sample;
                }
                if last {
                    return largest;
                }
                std::thread::sleep(every);
            }
        });
        Self { stop, thread }
    }

    pub fn stop(self) -> RssSample {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// utime + stime of `pid`, in seconds (clock ticks from `getconf CLK_TCK`, 100 when unknown).
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some((_, after_comm)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `after_comm` starts at field 3.
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i)?.parse::<u64>().ok())
        .sum();
    ticks as f64 / clock_ticks()
}

/// The tick counts of `/proc/stat`'s `cpu` line (the whole machine since boot): user nice system
/// idle iowait irq softirq steal ... (guest time is counted in user already).
fn machine_ticks() -> Vec<u64> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .find_map(|l| l.strip_prefix("cpu "))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|t| t.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// (busy, all) CPU seconds of the whole machine since boot: busy is everything but `idle` and
/// `iowait`.
pub fn machine_cpu_seconds() -> (f64, f64) {
    let ticks = machine_ticks();
    let all: u64 = ticks.iter().take(8).sum();
    let idle: u64 = ticks.iter().skip(3).take(2).sum();
    let hz = clock_ticks();
    ((all - idle) as f64 / hz, all as f64 / hz)
}

/// CPU seconds the hypervisor ran something else while this machine's CPUs were ready to run
/// (`steal`), summed over CPUs since boot.
pub fn steal_seconds() -> f64 {
    machine_ticks().get(7).copied().unwrap_or(0) as f64 / clock_ticks()
}

fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100.0)
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// CPU seconds (utime + stime) of every process now, by pid, with its command name: what else
/// ran on the machine during a measurement ([`busiest_between`]).
pub fn process_cpu_snapshot() -> BTreeMap<u32, (String, f64)> {
    crate::process::running_pids()
        .into_iter()
        .map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            (pid, (comm.trim().to_string(), cpu_seconds(pid)))
        })
        .collect()
}

/// The `count` processes that used the most CPU between two snapshots, as `name(pid) seconds`;
/// processes that started in between count from zero.
pub fn busiest_between(
    before: &BTreeMap<u32, (String, f64)>,
    after: &BTreeMap<u32, (String, f64)>,
    count: usize,
) -> String {
    let mut used: Vec<(f64, String, u32)> = after
        .iter()
        .map(|(pid, (name, cpu))| {
            let was = before.get(pid).map_or(0.0, |(_, c)| *c);
            (cpu - was, name.clone(), *pid)
        })
        .filter(|(s, _, _)| *s >= 0.05)
        .collect();
    used.sort_by(|a, b| b.0.total_cmp(&a.0));
    used.iter()
        .take(count)
        .map(|(s, name, pid)| format!("{name}({pid}) {s:.1}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// KiB of `pid`'s memory that maps its own executable file (the `Rss:` of every `/proc/PID/smaps`
/// entry whose path is `/proc/PID/exe`): code, read-only data and relocated data that the kernel
/// mapped from the page cache, part of `VmHWM` but not of the heap.
pub fn executable_rss_kib(pid: u32) -> u64 {
    let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
        return 0;
    };
    let exe = exe.to_string_lossy().into_owned();
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut in_exe = false;
    let mut total = 0;
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            // A mapping's header: range, permissions, offset, device, inode, path.
            in_exe = line.split_whitespace().nth(5) == Some(exe.as_str());
        } else if in_exe && first == "Rss:" {
            total += words
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampler_keeps_a_peak_of_heap_that_is_gone_when_it_stops() {
        let pid = std::process::id();
        let before = RssSample::read(pid).unwrap();
        let sampler = RssSampler::start(pid, Duration::from_millis(1));
        // 64 MiB touched page by page, held long enough for several samples, then freed.
        let mut block = vec![0u8; 64 << 20];
        for page in block.chunks_mut(4096) {
            page[0] = 1;
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            block.iter().step_by(4096).filter(|b| **b == 1).count(),
            16384
        );
        drop(block);
        let largest = sampler.stop();
        assert!(
            largest.anon_kib >= before.anon_kib + (60 << 10),
            "largest sample {largest:?}, before {before:?}"
        );
        assert!(RssSample::read(pid).unwrap().anon_kib < largest.anon_kib);
    }
}
