//! Scale benchmark: many ClusterExtensions installed at once on the `full` tier of the e2e
//! control plane, measuring operator-controller. Not a test: it asserts nothing about timings,
//! it prints numbers for `docs/PERFORMANCE.md`. Talks to 127.0.0.1 only.
//!
//! Input: `[NAMESPACES] [PACKAGES]` (default 100 × 10 = 1,000 extensions), the binaries named by
//! the environment (`source tools.env`, `OLM_BIN_DIR`), `OLM_TEST_TIER` (default `full`).
//! Output: a report on stdout. Disk: temporary directories only.
//!
//! Set-up (not measured): the control plane and a registry; PACKAGES generated registry+v1
//! bundles whose objects are all namespaced (OwnNamespace/SingleNamespace only, `permissions`
//! and no `clusterPermissions`, no CRDs; one ServiceAccount, one ConfigMap and one Deployment
//! named after the package) pushed to the registry; one catalog image listing them, served by a
//! catalogd process; operator-controller as a process (`RUST_LOG=info`); NAMESPACES install
//! namespaces.
//!
//! Measured: every extension (package × namespace, `watchNamespace` = its install namespace, so
//! permissions render as Roles and RoleBindings) is created at once; the clock stops when every
//! one reports `Installed=True`. Then: operator-controller's peak RSS (VmHWM), its RSS after 30 s
//! of settling, its CPU (utime+stime) during the run and over 60 s idle afterwards (idle starts
//! once every installed Deployment is Available, so the cluster has stopped changing), and the delta
//! of kube-apiserver's `apiserver_request_total` over the run (all clients: operator-controller,
//! the controller-manager and kwok acting on the installed Deployments, catalogd, and this
//! program's own creates and polls, which are counted and reported separately).
//!
//! Usage: `make bench-extensions` (release build), or
//! `source tools.env; OLM_BIN_DIR=… cargo run --release -p olm-e2e --example extensions_1000 -- 100 10`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::api::{Api, ListParams, PostParams};
use olm_api::v1::{ClusterExtension, ConditionType, find_condition};
use olm_e2e::assets::Assets;
use olm_e2e::bench::{
    POLL_INTERVAL, apiserver_requests, cpu_seconds, create_extensions, diff, extension, loadavg,
    print_top, proc_status_kib, push_bundle, wait_all_available,
};
use olm_e2e::operator_controller::{CatalogSpec, Catalogs, ChannelSpec, bundle_name};
use olm_e2e::process::{Spec, Supervised};
use olm_e2e::registry::Registry;
use olm_e2e::{Tier, images};
use serde_json::{Value, json};

/// How long to wait for every extension to be installed before giving up (and reporting that).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(45 * 60);
/// How long to wait, after all are installed, for every Deployment to become Available. The
/// `full` tier's one kwok node runs at most 110 pods, so beyond that many extensions the rest stay
/// Pending and the idle window starts after this timeout instead.
const AVAILABLE_TIMEOUT: Duration = Duration::from_secs(90);
const SETTLE: Duration = Duration::from_secs(30);
const IDLE_WINDOW: Duration = Duration::from_secs(60);
const SYSTEM_NAMESPACE: &str = "olmv1-system";

#[tokio::main]
async fn main() {
    olm_e2e::install_crypto_provider();
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .expect("arguments: [NAMESPACES] [PACKAGES], integers")
        })
        .collect();
    let namespaces = args.first().copied().unwrap_or(100);
    let packages = args.get(1).copied().unwrap_or(10);
    let total = namespaces * packages;
    println!(
        "bench: {namespaces} namespaces x {packages} packages = {total} ClusterExtensions; load before set-up: {}",
        loadavg()
    );

    let env = olm_e2e::shared().await;
    if env.control_plane.tier() != Tier::Full {
        println!(
            "bench: WARNING: tier {:?}, not full (Deployments never become Available)",
            env.control_plane.tier()
        );
    }
    let client = env.client().await;
    let registry = &env.registry;

    // Bundles and the catalog.
    let setup_started = Instant::now();
    let catalog_dir = tempfile::tempdir().unwrap();
    for p in 0..packages {
        let package = format!("bench-p{p:02}");
        let image = push_bundle(registry, &package).await;
        CatalogSpec {
            package: package.clone(),
            default_channel: "stable".into(),
            channels: vec![ChannelSpec {
                name: "stable".into(),
                entries: vec![(bundle_name(&package, "1.0.0"), None)],
            }],
            bundles: vec![(bundle_name(&package, "1.0.0"), "1.0.0".into(), image)],
        }
        .write(&catalog_dir.path().join(&package));
    }
    images::push_catalog(registry, "bench/catalog:latest", catalog_dir.path())
        .await
        .unwrap();
    let catalogs = Catalogs::start(registry).await;
    let catalog = catalogs
        .serve("bench", &registry.image("bench/catalog:latest"), None)
        .await;
    println!(
        "bench: {packages} bundles and catalog {catalog} pushed and served in {:.1}s",
        setup_started.elapsed().as_secs_f64()
    );

    // Install namespaces.
    let ns_api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns_names: Vec<String> = (0..namespaces)
        .map(|n| format!("bench-ns-{n:03}"))
        .collect();
    for name in ns_names.iter().chain([&SYSTEM_NAMESPACE.to_string()]) {
        let ns = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        match ns_api.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => panic!("create namespace {name}: {e}"),
        }
    }

    let (mut controller, _scratch) = start_operator_controller(registry).await;
    let pid = controller.pid().expect("operator-controller's pid");
    println!(
        "bench: operator-controller pid {pid} ({}), RSS before the run {} KiB",
        Assets::products()
            .and_then(|a| a.binary("operator-controller"))
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        proc_status_kib(pid, "VmRSS")
    );

    // The run.
    let load_before = loadavg();
    let metrics_before = apiserver_requests(&client).await;
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    let ce_api: Api<ClusterExtension> = Api::all(client.clone());
    let catalog_ref = catalog.as_str();
    let bodies: Vec<Value> = ns_names
        .iter()
        .flat_map(|ns| {
            (0..packages).map(move |p| extension(ns, &format!("bench-p{p:02}"), catalog_ref))
        })
        .collect();
    create_extensions(&ce_api, bodies).await;
    let created_in = started.elapsed();
    println!(
        "bench: {total} ClusterExtensions created in {:.1}s",
        created_in.as_secs_f64()
    );

    let mut own_requests = total as u64; // the creates
    let mut last_report = Instant::now();
    let installed_in = loop {
        let list = ce_api.list(&ListParams::default()).await;
        own_requests += 1;
        let mut installed = 0usize;
        let mut waiting: BTreeMap<String, usize> = BTreeMap::new();
        if let Ok(list) = list {
            for ce in &list.items {
                let conditions = ce
                    .status
                    .as_ref()
                    .map(|s| s.conditions.as_slice())
                    .unwrap_or(&[]);
                let is_installed = find_condition(conditions, ConditionType::Installed)
                    .is_some_and(|c| c.status.as_str() == "True");
                if is_installed {
                    installed += 1;
                } else {
                    let reason = find_condition(conditions, ConditionType::Progressing)
                        .map(|c| c.reason.clone())
                        .unwrap_or_else(|| "(no status yet)".into());
                    *waiting.entry(reason).or_default() += 1;
                }
            }
        }
        if installed >= total {
            break Some(started.elapsed());
        }
        if last_report.elapsed() >= Duration::from_secs(15) {
            println!(
                "bench: {:>6.1}s {installed}/{total} installed; waiting by Progressing reason: {waiting:?}; operator-controller RSS {} KiB",
                started.elapsed().as_secs_f64(),
                proc_status_kib(pid, "VmRSS")
            );
            last_report = Instant::now();
        }
        if started.elapsed() > INSTALL_TIMEOUT {
            println!(
                "bench: NOT all installed within {}s: {installed}/{total}; {waiting:?}",
                INSTALL_TIMEOUT.as_secs()
            );
            break None;
        }
        if let Some(status) = controller.try_exit_status() {
            panic!(
                "operator-controller exited ({status}):\n{}",
                controller.log_tail(40)
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    };
    let run_elapsed = started.elapsed();
    let cpu_run = cpu_seconds(pid) - cpu_before;
    let metrics_after = apiserver_requests(&client).await;
    own_requests += 1; // the second /metrics GET is counted before it answers, or not; at most 1
    let peak_after_run = proc_status_kib(pid, "VmHWM");
    let load_after_run = loadavg();

    // The rest of the cluster catches up (the controller-manager creates ReplicaSets and Pods,
    // kwok runs them) and operator-controller sees each Deployment's status change; "idle" only
    // starts once every installed Deployment is Available.
    let available_in = wait_all_available(&client, total, started, AVAILABLE_TIMEOUT).await;

    // Settling, then idle.
    tokio::time::sleep(SETTLE).await;
    let steady_rss = proc_status_kib(pid, "VmRSS");
    let idle_before = cpu_seconds(pid);
    let metrics_idle_before = apiserver_requests(&client).await;
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle_cpu = cpu_seconds(pid) - idle_before;
    let metrics_idle_after = apiserver_requests(&client).await;
    let peak = proc_status_kib(pid, "VmHWM");

    let delta = diff(&metrics_before, &metrics_after);
    let all: f64 = delta.values().sum();
    let idle_delta = diff(&metrics_idle_before, &metrics_idle_after);
    let idle_requests: f64 = idle_delta.values().sum();
    println!(
        "\n==== results ({namespaces} namespaces x {packages} packages = {total} ClusterExtensions, tier {:?}) ====",
        env.control_plane.tier()
    );
    match installed_in {
        Some(t) => println!(
            "wall time, create start -> all Installed=True: {:.1}s (creates took {:.1}s; poll every {}s)",
            t.as_secs_f64(),
            created_in.as_secs_f64(),
            POLL_INTERVAL.as_secs()
        ),
        None => println!(
            "wall time: NOT all Installed after {:.1}s",
            run_elapsed.as_secs_f64()
        ),
    }
    match available_in {
        Some(t) => println!(
            "every installed Deployment Available (kwok) at {:.1}s after the creates began",
            t.as_secs_f64()
        ),
        None => println!(
            "NOT every installed Deployment became Available within {}s; idle measured anyway",
            AVAILABLE_TIMEOUT.as_secs()
        ),
    }
    println!(
        "operator-controller CPU during the run (utime+stime): {cpu_run:.1}s ({:.2} cores average)",
        cpu_run / run_elapsed.as_secs_f64()
    );
    println!(
        "operator-controller peak RSS (VmHWM): {} KiB at all-Installed, {peak} KiB at the end",
        peak_after_run
    );
    println!(
        "operator-controller steady RSS (VmRSS after {}s settling): {steady_rss} KiB",
        SETTLE.as_secs()
    );
    println!(
        "operator-controller CPU while idle: {idle_cpu:.2}s over {}s ({:.2}% of a core); apiserver requests in that window (all clients, incl. 2 /metrics GETs): {idle_requests:.0}",
        IDLE_WINDOW.as_secs(),
        idle_cpu / IDLE_WINDOW.as_secs_f64() * 100.0
    );
    print_top(
        "  idle window by resource and verb (top 8):",
        &idle_delta,
        8,
        None,
    );
    println!(
        "kube-apiserver requests during the run (apiserver_request_total delta, all clients): {all:.0} = {:.1} per extension",
        all / total as f64
    );
    println!(
        "  of which this benchmark's own (creates, list polls, /metrics): about {own_requests}; the rest per extension: {:.1}",
        (all - own_requests as f64) / total as f64
    );
    print_top("  by resource and verb (top 25):", &delta, 25, Some(total));
    println!(
        "load average (1/5/15 min): before the run {load_before}; at all-Installed {load_after_run}; at the end {}",
        loadavg()
    );

    controller.stop(Duration::from_secs(10));
    drop(catalogs);
}

/// Starts `operator-controller run` managing every ClusterExtension, logging at info.
async fn start_operator_controller(registry: &Registry) -> (Supervised, tempfile::TempDir) {
    let env = olm_e2e::shared().await;
    let bin = Assets::products()
        .and_then(|a| a.binary("operator-controller"))
        .unwrap_or_else(|e| panic!("{e}"));
    let scratch = tempfile::tempdir().unwrap();
    let health = olm_e2e::ports::free_port().expect("a free port on 127.0.0.1");
    let spec = Spec::new("operator-controller", bin, scratch.path())
        .arg("run")
        .arg("--kubeconfig")
        .arg(env.kubeconfig_path())
        .args(["--system-namespace", SYSTEM_NAMESPACE])
        .arg("--cache-path")
        .arg(scratch.path().join("cache"))
        .args([
            "--health-probe-bind-address",
            &format!("127.0.0.1:{health}"),
        ])
        .args(["--insecure-registries", &registry.host()])
        .env("RUST_LOG", "info");
    let mut process = Supervised::start(spec).unwrap_or_else(|e| panic!("{e}"));
    let ready = format!("http://127.0.0.1:{health}/readyz");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if matches!(reqwest::get(&ready).await, Ok(r) if r.status() == 200) {
            break;
        }
        if let Some(status) = process.try_exit_status() {
            panic!(
                "operator-controller exited ({status}):\n{}",
                process.log_tail(40)
            );
        }
        assert!(
            Instant::now() < deadline,
            "operator-controller not ready:\n{}",
            process.log_tail(40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (process, scratch)
}
