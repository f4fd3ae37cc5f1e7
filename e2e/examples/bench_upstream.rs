//! Side-by-side benchmark of our catalogd and operator-controller against upstream OLM v1's
//! (issue 16). Not a test: it prints and records numbers for `docs/PERFORMANCE.md`. Talks to
//! 127.0.0.1 only; run it inside the loopback-only network namespace (`make bench-upstream` does),
//! because upstream catalogd's webhook server listens on every interface.
//!
//! Modes:
//! - `run --side ours|upstream --round N --out FILE` — one side on a fresh control plane (the
//!   `full` tier) and a fresh registry: P1 catalog ingest and the unchanged poll, P2/P3 serving
//!   under `wrk`, P4 time to a resolved bundle (cold and warm), P5 footprint with three large
//!   catalogs and 100 extensions, P6 1,000 extensions. Appends one JSON line to FILE.
//! - `report FILE` — the table: per measurement, each side's min/median/max over the rounds and
//!   the ratio ours/upstream (of the medians, and the min/max of the per-round ratios).
//!
//! Input: binaries from `OLM_BIN_DIR` (ours) and `UPSTREAM_BIN_DIR` (upstream's `catalogd` and
//! `operator-controller`, built outside this repository); `wrk` on PATH; the derived catalog in the
//! shared data. Output: the JSON line and a summary on stdout. Disk: temporary directories only.
//!
//! Equivalent settings for both sides: leader election off, the same TLS certificate for the
//! catalog server (signed by a CA both operator-controllers trust through `--catalogd-cas-dir`),
//! the same cache kind (a directory on the same disk), plain-HTTP loopback registry (ours:
//! `--insecure-registries`; upstream: `CONTAINERS_REGISTRIES_CONF` marking it insecure),
//! `/api/v1/metas` enabled (upstream: `--feature-gates APIV1MetasHandler=true`). Upstream reads a
//! ServiceAccount token from `/var/run/secrets/kubernetes.io/serviceaccount/`; each upstream
//! process runs in a private mount namespace (`unshare -m`) where a tmpfs over `/run` holds a
//! token issued by the TokenRequest API for its ServiceAccount, so the host's `/run` is untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::api::{Api, PostParams};
use olm_api::v1::{ClusterCatalog, ClusterExtension, ConditionType, find_condition};
use olm_e2e::assets::Assets;
use olm_e2e::bench::{
    RssSampler, apiserver_requests, busiest_between, cpu_seconds, create_extensions, diff,
    executable_rss_kib, extension, loadavg, machine_cpu_seconds, print_top, proc_status_kib,
    process_cpu_snapshot, push_bundle, steal_seconds, wait_all_available,
};
use olm_e2e::operator_controller::{
    CATALOG_NAME_LABEL, CatalogSpec, ChannelSpec, bundle_name, ensure_namespace, free_port,
};
use olm_e2e::process::{Spec, Supervised};
use olm_e2e::registry::Registry;
use olm_e2e::{Tier, images};
use serde_json::{Value, json};

const SYSTEM_NAMESPACE: &str = "olmv1-system";
const PACKAGES: usize = 10;
const CATALOGS: usize = 3;
const POLL_FAST: Duration = Duration::from_millis(100);
/// A P4 wait longer than this prints how the extension's conditions moved and the controller's log.
const P4_SLOW_SECONDS: f64 = 1.0;
const POLL: Duration = Duration::from_secs(1);
const SETTLE: Duration = Duration::from_secs(30);
const IDLE_WINDOW: Duration = Duration::from_secs(60);
const AVAILABLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The smallest and the largest package of the derived catalog (by `/metas` body).
const SMALL_PACKAGE: &str = "sosreport-operator";
const LARGE_PACKAGE: &str = "ember-csi-community-operator";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Ours,
    Upstream,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Ours => "ours",
            Side::Upstream => "upstream",
        }
    }
}

struct Settings {
    side: Side,
    round: u32,
    out: PathBuf,
    /// P6: namespaces × PACKAGES extensions.
    p6_namespaces: usize,
    p6_timeout: Duration,
    wrk_duration: String,
    wrk_connections: u32,
    /// Only P1's ingest (to have a catalog) and P6: for looking into P6 alone.
    only_p6: bool,
    /// Where to save kube-apiserver's CPU profile of P6's first [`P6_PROFILE_SECONDS`] (the
    /// control plane started with `OLM_APISERVER_PROFILING=1`).
    apiserver_profile: Option<PathBuf>,
    /// Where to copy the API server's audit log (every mutating request, with its timestamps)
    /// once P6 is done, to follow each extension's requests in time.
    audit_copy: Option<PathBuf>,
}

/// How much of P6 the API server's CPU profile covers: less than our side's P6 takes.
const P6_PROFILE_SECONDS: u64 = 60;

#[tokio::main]
async fn main() {
    olm_e2e::install_crypto_provider();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => run(parse_run(&args[1..])).await,
        Some("report") => {
            let file = args.get(1).expect("report FILE");
            print!(
                "{}",
                report(&std::fs::read_to_string(file).expect("the results file"))
            );
        }
        _ => {
            eprintln!(
                "usage: bench_upstream run --side ours|upstream --round N --out FILE [--p6-namespaces N] [--p6-timeout-secs S] [--wrk-duration 20s] [--wrk-connections 64] [--only-p6] [--apiserver-profile FILE] [--audit-copy FILE]\n       bench_upstream report FILE"
            );
            std::process::exit(2);
        }
    }
}

fn parse_run(args: &[String]) -> Settings {
    let mut settings = Settings {
        side: Side::Ours,
        round: 1,
        out: PathBuf::from("bench-upstream.jsonl"),
        p6_namespaces: 100,
        p6_timeout: Duration::from_secs(30 * 60),
        // 64 connections each reading the 84 MB `/all` need several seconds per request.
        wrk_duration: "20s".into(),
        wrk_connections: 64,
        only_p6: false,
        apiserver_profile: None,
        audit_copy: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--only-p6" {
            settings.only_p6 = true;
            continue;
        }
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--side" => {
                settings.side = match value.as_str() {
                    "ours" => Side::Ours,
                    "upstream" => Side::Upstream,
                    other => panic!("--side ours|upstream, not {other}"),
                }
            }
            "--round" => settings.round = value.parse().expect("--round N"),
            "--out" => settings.out = PathBuf::from(value),
            "--p6-namespaces" => settings.p6_namespaces = value.parse().expect("--p6-namespaces N"),
            "--p6-timeout-secs" => {
                settings.p6_timeout = Duration::from_secs(value.parse().expect("seconds"))
            }
            "--wrk-duration" => settings.wrk_duration = value.clone(),
            "--wrk-connections" => settings.wrk_connections = value.parse().expect("N"),
            "--apiserver-profile" => settings.apiserver_profile = Some(PathBuf::from(value)),
            "--audit-copy" => settings.audit_copy = Some(PathBuf::from(value)),
            other => panic!("unknown flag {other}"),
        }
    }
    settings
}

/// The results of one run, by measurement name.
type Results = BTreeMap<String, f64>;

async fn run(settings: Settings) {
    let side = settings.side;
    let bins = binaries(side);
    println!(
        "bench-upstream: side {} round {}; catalogd {} operator-controller {}; load {}",
        side.name(),
        settings.round,
        bins.0.display(),
        bins.1.display(),
        loadavg()
    );
    let env = olm_e2e::shared().await;
    assert_eq!(
        env.control_plane.tier(),
        Tier::Full,
        "the benchmark needs the full tier (OLM_TEST_TIER=full)"
    );
    let client = env.client().await;
    let registry = &env.registry;
    let scratch = tempfile::tempdir().unwrap();
    let mut results = Results::new();

    ensure_namespace(&client, SYSTEM_NAMESPACE).await;
    let tls = write_tls(scratch.path());
    let registries_conf = scratch.path().join("registries.conf");
    std::fs::write(
        &registries_conf,
        format!(
            "[[registry]]\nlocation = \"{}\"\ninsecure = true\n",
            registry.host()
        ),
    )
    .unwrap();

    // Images: the bench bundles, and CATALOGS variants of (derived catalog + bench packages).
    let setup = Instant::now();
    let mut bench_fbc = Vec::new();
    for p in 0..PACKAGES {
        let package = format!("bench-p{p:02}");
        let image = push_bundle(registry, &package).await;
        bench_fbc.push(CatalogSpec {
            package: package.clone(),
            default_channel: "stable".into(),
            channels: vec![ChannelSpec {
                name: "stable".into(),
                entries: vec![(bundle_name(&package, "1.0.0"), None)],
            }],
            bundles: vec![(bundle_name(&package, "1.0.0"), "1.0.0".into(), image)],
        });
    }
    let derived = images::testdata("catalogs/community-operators-prod-derived/catalog");
    let mut catalog_images = Vec::new();
    for v in 0..CATALOGS {
        let dir = scratch.path().join(format!("fbc-{v}"));
        copy_dir(&derived, &dir);
        for spec in &bench_fbc {
            spec.write(&dir.join(&spec.package));
        }
        // A package only this variant has, so the three images differ in digest.
        let marker = CatalogSpec {
            package: format!("bench-variant-{v}"),
            ..bench_fbc[0].clone()
        };
        marker.write(&dir.join(&marker.package));
        let tag = format!("bench/catalog-{v}:v1");
        images::push_catalog(registry, &tag, &dir).await.unwrap();
        catalog_images.push(registry.image(&tag));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    println!(
        "bench-upstream: images pushed in {:.1}s",
        setup.elapsed().as_secs_f64()
    );

    let tokens = if side == Side::Upstream {
        Some((
            service_account_token(&client, "catalogd-controller-manager", scratch.path()).await,
            service_account_token(
                &client,
                "operator-controller-controller-manager",
                scratch.path(),
            )
            .await,
        ))
    } else {
        None
    };

    // catalogd.
    let catalogd_cache = scratch.path().join("catalogd-cache");
    std::fs::create_dir_all(&catalogd_cache).unwrap();
    let server_port = free_port();
    let mut catalogd = start_catalogd(
        side,
        &bins.0,
        env.kubeconfig_path(),
        registry,
        &tls,
        &catalogd_cache,
        server_port,
        &registries_conf,
        tokens.as_ref().map(|t| t.0.as_path()),
        scratch.path(),
    )
    .await;
    let catalogd_pid = catalogd.pid().unwrap();
    let catalogs: Api<ClusterCatalog> = Api::all(client.clone());

    // P1: ingest.
    let written_before = write_bytes(catalogd_pid);
    let sampler = RssSampler::start(catalogd_pid, Duration::from_millis(5));
    let ingest = create_until_serving(&catalogs, "bench-0", &catalog_images[0], &mut catalogd)
        .await
        .as_secs_f64();
    results.insert("p1_ingest_seconds".into(), ingest);
    // Work catalogd does after Serving (ours writes the gzip copy then) belongs to the ingest,
    // not to the unchanged poll measured next: wait until its disk writes stop, and take the
    // peak and the bytes written after that.
    let settled = settle_writes(catalogd_pid).await;
    results.insert("p1_settled_after_serving_seconds".into(), settled);
    let largest = sampler.stop();
    results.insert(
        "p1_sampled_peak_anon_mib".into(),
        largest.anon_kib as f64 / 1024.0,
    );
    results.insert(
        "p1_sampled_peak_file_mib".into(),
        largest.file_kib as f64 / 1024.0,
    );
    results.insert(
        "p1_peak_rss_mib".into(),
        proc_status_kib(catalogd_pid, "VmHWM") as f64 / 1024.0,
    );
    // What the peak is made of: the kernel maps the executable from the page cache in whole
    // folios, so its resident part depends on how the file got there, not only on the code
    // that ran; the heap is the rest.
    for (key, kib) in [
        ("p1_rss_anon_mib", proc_status_kib(catalogd_pid, "RssAnon")),
        ("p1_rss_file_mib", proc_status_kib(catalogd_pid, "RssFile")),
        ("p1_executable_rss_mib", executable_rss_kib(catalogd_pid)),
    ] {
        results.insert(key.into(), kib as f64 / 1024.0);
    }
    results.insert(
        "p1_written_mib".into(),
        (write_bytes(catalogd_pid) - written_before) as f64 / 1048576.0,
    );
    results.insert(
        "p1_cache_mib".into(),
        dir_size(&catalogd_cache) as f64 / 1048576.0,
    );
    println!(
        "bench-upstream: P1 Serving after {ingest:.2}s; writes settled {settled:.2}s later; peak RSS {:.1} MiB (largest sample every 5 ms: {:.1} anonymous, {:.1} file; now {:.1} anonymous, {:.1} file of which {:.1} the executable); written {:.1} MiB",
        results["p1_peak_rss_mib"],
        results["p1_sampled_peak_anon_mib"],
        results["p1_sampled_peak_file_mib"],
        results["p1_rss_anon_mib"],
        results["p1_rss_file_mib"],
        results["p1_executable_rss_mib"],
        results["p1_written_mib"]
    );

    if !settings.only_p6 {
        // P1: the unchanged poll (pollIntervalMinutes 1): wait for the next manifest request.
        let repo = "bench/catalog-0";
        let log_before = registry.access_log().len();
        let written_before = write_bytes(catalogd_pid);
        let cpu_before = cpu_seconds(catalogd_pid);
        let deadline = Instant::now() + Duration::from_secs(150);
        loop {
            let polled = registry.access_log()[log_before..]
                .iter()
                .any(|e| e.path.contains(repo) && e.path.contains("/manifests/"));
            if polled || Instant::now() > deadline {
                if !polled {
                    println!("bench-upstream: P1 no poll seen within 150 s");
                }
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        let window = registry.access_log();
        let window = &window[log_before.min(window.len())..];
        let of_repo = || window.iter().filter(|e| e.path.contains(repo));
        results.insert("p1_poll_requests".into(), of_repo().count() as f64);
        results.insert(
            "p1_poll_blob_gets".into(),
            of_repo().filter(|e| e.is_blob_get()).count() as f64,
        );
        results.insert(
            "p1_poll_written_kib".into(),
            (write_bytes(catalogd_pid) - written_before) as f64 / 1024.0,
        );
        results.insert(
            "p1_poll_cpu_seconds".into(),
            cpu_seconds(catalogd_pid) - cpu_before,
        );
        println!(
            "bench-upstream: P1 unchanged poll: {} registry requests ({} blob GETs), {:.1} KiB written",
            results["p1_poll_requests"],
            results["p1_poll_blob_gets"],
            results["p1_poll_written_kib"]
        );

        // P2/P3: serving.
        let base = format!("https://127.0.0.1:{server_port}/catalogs/bench-0/api/v1");
        let cases = [
            ("all", format!("{base}/all"), false),
            ("all_gz", format!("{base}/all"), true),
            (
                "metas_small",
                format!("{base}/metas?package={SMALL_PACKAGE}"),
                false,
            ),
            (
                "metas_large",
                format!("{base}/metas?package={LARGE_PACKAGE}"),
                false,
            ),
            (
                "metas_large_gz",
                format!("{base}/metas?package={LARGE_PACKAGE}"),
                true,
            ),
        ];
        for (case, url, gzip) in &cases {
            check_served(url, *gzip, &tls.ca_pem).await;
            let cpu_before = cpu_seconds(catalogd_pid);
            let (machine_before, steal_before) = (machine_cpu_seconds().0, steal_seconds());
            let processes_before = process_cpu_snapshot();
            let load = wrk(url, *gzip, &settings.wrk_duration, settings.wrk_connections);
            let cpu = cpu_seconds(catalogd_pid) - cpu_before;
            let machine = machine_cpu_seconds().0 - machine_before;
            let steal = steal_seconds() - steal_before;
            // Everything that ran beside the server (wrk, the control plane, anything left
            // over): a slower round with the same binaries is read against this.
            println!(
                "bench-upstream: P2/P3 {case}: machine {machine:.1} CPU s (catalogd {cpu:.1}), steal {steal:.2} s; busiest: {}",
                busiest_between(&processes_before, &process_cpu_snapshot(), 6)
            );
            results.insert(format!("p23_{case}_machine_cpu_s"), machine);
            results.insert(format!("p23_{case}_steal_s"), steal);
            let rss = proc_status_kib(catalogd_pid, "VmHWM") as f64 / 1024.0;
            println!(
                "bench-upstream: P2/P3 {case}: {:.1} req/s, {:.1} MB/s, p50 {:.1} ms, p99 {:.1} ms, {cpu:.1} CPU s ({:.2} per GB), {} errors",
                load.requests_per_second,
                load.bytes / load.seconds / 1e6,
                load.p50_ms,
                load.p99_ms,
                cpu / (load.bytes / 1e9),
                load.errors
            );
            results.insert(format!("p23_{case}_rps"), load.requests_per_second);
            results.insert(
                format!("p23_{case}_mb_per_s"),
                load.bytes / load.seconds / 1e6,
            );
            results.insert(format!("p23_{case}_p50_ms"), load.p50_ms);
            results.insert(format!("p23_{case}_p99_ms"), load.p99_ms);
            results.insert(format!("p23_{case}_cpu_s_per_gb"), cpu / (load.bytes / 1e9));
            results.insert(format!("p23_{case}_errors"), load.errors);
            results.insert(format!("p23_{case}_peak_rss_mib"), rss);
        }

        // Two more large catalogs for P5.
        for (v, image) in catalog_images.iter().enumerate().skip(1) {
            let name = format!("bench-{v}");
            create_until_serving(&catalogs, &name, image, &mut catalogd).await;
        }
    }

    // operator-controller.
    let oc_cache = scratch.path().join("operator-controller-cache");
    std::fs::create_dir_all(&oc_cache).unwrap();
    let mut controller = start_operator_controller(
        side,
        &bins.1,
        env.kubeconfig_path(),
        registry,
        &tls,
        &oc_cache,
        &registries_conf,
        tokens.as_ref().map(|t| t.1.as_path()),
        scratch.path(),
    )
    .await;
    let oc_pid = controller.pid().unwrap();
    let extensions: Api<ClusterExtension> = Api::all(client.clone());

    if !settings.only_p6 {
        // P4: one extension with nothing cached in operator-controller, then another.
        for (i, label) in ["cold", "warm"].iter().enumerate() {
            let ns = format!("bench4-ns-{i}");
            ensure_namespace(&client, &ns).await;
            let body = extension(&ns, &format!("bench-p{i:02}"), "bench-0");
            let name = body["metadata"]["name"].as_str().unwrap().to_owned();
            let started = Instant::now();
            extensions
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(body).unwrap(),
                )
                .await
                .unwrap();
            // Each change of the extension's conditions while waiting, printed when the wait is
            // slow, so a slow P4 says which step it waited in.
            let mut timeline: Vec<(f64, String)> = Vec::new();
            let resolved = loop {
                let ce = extensions.get(&name).await.unwrap();
                let conditions = ce
                    .status
                    .as_ref()
                    .map(|s| {
                        s.conditions
                            .iter()
                            .map(|c| {
                                format!("{}={:?} {}: {}", c.type_, c.status, c.reason, c.message)
                            })
                            .collect::<Vec<_>>()
                            .join(" | ")
                    })
                    .unwrap_or_default();
                if timeline.last().map(|(_, c)| c) != Some(&conditions) {
                    timeline.push((started.elapsed().as_secs_f64(), conditions));
                }
                let has_bundle = ce
                    .status
                    .as_ref()
                    .and_then(|s| s.install.as_ref())
                    .is_some_and(|i| !i.bundle.name.is_empty());
                if has_bundle {
                    break started.elapsed().as_secs_f64();
                }
                assert!(
                    started.elapsed() < Duration::from_secs(300),
                    "P4 {label}: no bundle in the status of {name} after 300 s: {:?}\n{}",
                    ce.status,
                    controller.log_tail(30)
                );
                tokio::time::sleep(POLL_FAST).await;
            };
            println!("bench-upstream: P4 {label}: bundle in status after {resolved:.2}s");
            if resolved > P4_SLOW_SECONDS {
                println!(
                    "bench-upstream: P4 {label} was slow; conditions of {name} while waiting:"
                );
                for (at, conditions) in &timeline {
                    println!("  {at:6.2}s {conditions}");
                }
                println!(
                    "bench-upstream: operator-controller's log:\n{}",
                    controller.log_tail(80)
                );
            }
            results.insert(format!("p4_{label}_seconds"), resolved);
        }

        // P5: 100 extensions installed, three large catalogs served; steady RSS and idle CPU.
        let p5_names: Vec<String> = (0..10).map(|n| format!("bench5-ns-{n:02}")).collect();
        let (p5_installed, _) =
            install_many(&client, &p5_names, &controller, Duration::from_secs(600)).await;
        assert!(
            p5_installed.is_some(),
            "P5: the 100 extensions did not install"
        );
        wait_all_available(&client, 102, Instant::now(), AVAILABLE_TIMEOUT).await;
        tokio::time::sleep(SETTLE).await;
        let oc_cpu = cpu_seconds(oc_pid);
        let cd_cpu = cpu_seconds(catalogd_pid);
        let idle_requests_before = apiserver_requests(&client).await;
        tokio::time::sleep(IDLE_WINDOW).await;
        let idle_requests = diff(&idle_requests_before, &apiserver_requests(&client).await)
            .values()
            .sum::<f64>();
        for (who, pid, cpu) in [
            ("catalogd", catalogd_pid, cd_cpu),
            ("operator_controller", oc_pid, oc_cpu),
        ] {
            // RSS, and what it is made of: anonymous memory (heap, stacks) is the process's own;
            // file pages are its code and data mapped from the binary, clean and reclaimable, and
            // mapped by the kernel around each page fault.
            for (field, key) in [
                ("VmRSS", "rss"),
                ("RssAnon", "rss_anon"),
                ("RssFile", "rss_file"),
            ] {
                results.insert(
                    format!("p5_{who}_{key}_mib"),
                    proc_status_kib(pid, field) as f64 / 1024.0,
                );
            }
            results.insert(
                format!("p5_{who}_idle_cpu_percent"),
                (cpu_seconds(pid) - cpu) / IDLE_WINDOW.as_secs_f64() * 100.0,
            );
        }
        results.insert("p5_idle_apiserver_requests_per_min".into(), idle_requests);
        println!(
            "bench-upstream: P5 RSS catalogd {:.1} MiB ({:.1} anonymous, {:.1} file), operator-controller {:.1} MiB ({:.1} anonymous, {:.1} file); idle CPU {:.2}% / {:.2}%; {idle_requests:.0} apiserver requests in the idle minute",
            results["p5_catalogd_rss_mib"],
            results["p5_catalogd_rss_anon_mib"],
            results["p5_catalogd_rss_file_mib"],
            results["p5_operator_controller_rss_mib"],
            results["p5_operator_controller_rss_anon_mib"],
            results["p5_operator_controller_rss_file_mib"],
            results["p5_catalogd_idle_cpu_percent"],
            results["p5_operator_controller_idle_cpu_percent"]
        );
    }

    // P6: many more extensions at once.
    if settings.p6_namespaces > 0 {
        let names: Vec<String> = (0..settings.p6_namespaces)
            .map(|n| format!("bench6-ns-{n:03}"))
            .collect();
        let total = names.len() * PACKAGES;
        let requests_before = apiserver_requests(&client).await;
        let cpu_before = cpu_seconds(oc_pid);
        // The benchmark's own work (creating the extensions, watching them) competes with the
        // side it measures for the same two cores.
        let bench_before = cpu_seconds(std::process::id());
        // Where the machine's time goes meanwhile: the control plane (API server, etcd,
        // controller-manager, scheduler, kwok) serves both sides' requests and runs the Pods.
        let control_plane: Vec<(String, u32)> = env
            .control_plane
            .components()
            .iter()
            .map(|c| (c.name.clone(), c.pid))
            .collect();
        let component_cpu = || {
            control_plane
                .iter()
                .map(|(_, pid)| cpu_seconds(*pid))
                .collect::<Vec<f64>>()
        };
        let components_before = component_cpu();
        let control_plane_before = components_before.iter().sum::<f64>();
        let machine_before = machine_cpu_seconds();
        let steal_before = steal_seconds();
        let profile = settings.apiserver_profile.clone().map(|path| {
            let client = client.clone();
            tokio::spawn(async move {
                save_apiserver_profile(&client, &path, P6_PROFILE_SECONDS).await;
            })
        });
        let (installed, own_requests) =
            install_many(&client, &names, &controller, settings.p6_timeout).await;
        if let Some(profile) = profile {
            profile.await.unwrap();
        }
        if let Some(copy) = &settings.audit_copy {
            std::fs::copy(env.control_plane.audit_log_path(), copy).unwrap();
            println!(
                "bench-upstream: the API server's audit log in {}",
                copy.display()
            );
        }
        let delta = diff(&requests_before, &apiserver_requests(&client).await);
        let requests = delta.values().sum::<f64>();
        print_top(
            "bench-upstream: P6 apiserver requests by resource and verb (all clients, top 40):",
            &delta,
            40,
            Some(total),
        );
        let cpu = cpu_seconds(oc_pid) - cpu_before;
        let components_after = component_cpu();
        let control_plane_cpu = components_after.iter().sum::<f64>() - control_plane_before;
        let machine = machine_cpu_seconds();
        let busy_percent =
            100.0 * (machine.0 - machine_before.0) / (machine.1 - machine_before.1).max(1e-9);
        let steal = steal_seconds() - steal_before;
        let bench_cpu = cpu_seconds(std::process::id()) - bench_before;
        results.insert("p6_bench_cpu_seconds".into(), bench_cpu);
        results.insert("p6_control_plane_cpu_seconds".into(), control_plane_cpu);
        results.insert("p6_machine_busy_percent".into(), busy_percent);
        // CPU time the hypervisor gave to others while this machine wanted it: a noisy host makes
        // the same work take longer.
        results.insert("p6_steal_seconds".into(), steal);
        let mut split = Vec::new();
        for (((name, _), before), after) in control_plane
            .iter()
            .zip(&components_before)
            .zip(&components_after)
        {
            results.insert(format!("p6_cpu_seconds_{name}"), after - before);
            split.push(format!("{name} {:.1}", after - before));
        }
        println!(
            "bench-upstream: P6 control plane CPU s by component: {}; steal {steal:.1} s; the benchmark itself {bench_cpu:.1} CPU s",
            split.join(", ")
        );
        results.insert("p6_extensions".into(), total as f64);
        match installed {
            Some(t) => {
                results.insert("p6_seconds".into(), t.as_secs_f64());
            }
            None => println!("bench-upstream: P6 NOT all installed within the timeout"),
        }
        results.insert(
            "p6_peak_rss_mib".into(),
            proc_status_kib(oc_pid, "VmHWM") as f64 / 1024.0,
        );
        results.insert(
            "p6_requests_per_extension".into(),
            (requests - own_requests as f64) / total as f64,
        );
        results.insert("p6_cpu_seconds".into(), cpu);
        println!(
            "bench-upstream: P6 {total} extensions: {:?}s; peak RSS {:.1} MiB; {:.1} apiserver requests per extension (without the benchmark's own); {cpu:.1} CPU s; control plane {control_plane_cpu:.1} CPU s; machine {busy_percent:.0}% busy",
            results.get("p6_seconds"),
            results["p6_peak_rss_mib"],
            results["p6_requests_per_extension"]
        );
    }

    if let Some(status) = controller.try_exit_status() {
        println!("bench-upstream: operator-controller exited early ({status})");
    }
    controller.stop(Duration::from_secs(10));
    catalogd.stop(Duration::from_secs(10));
    let line = json!({
        "side": side.name(),
        "round": settings.round,
        "load": loadavg(),
        "results": results,
    });
    use std::io::Write;
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&settings.out)
        .unwrap();
    writeln!(out, "{line}").unwrap();
    println!("bench-upstream: recorded in {}", settings.out.display());
}

/// Saves kube-apiserver's CPU profile over the next `seconds` to `path` (Go's pprof format:
/// `go tool pprof -top FILE` reads it); says so when the API server does not serve profiles.
async fn save_apiserver_profile(client: &kube::Client, path: &Path, seconds: u64) {
    use futures::AsyncReadExt;
    let request = http::Request::get(format!("/debug/pprof/profile?seconds={seconds}"))
        .body(Vec::new())
        .unwrap();
    let mut body = Vec::new();
    let read = match client.request_stream(request).await {
        Ok(stream) => {
            let mut stream = std::pin::pin!(stream);
            stream.read_to_end(&mut body).await.map(|_| ())
        }
        Err(e) => Err(std::io::Error::other(e.to_string())),
    };
    match read {
        Ok(()) => {
            std::fs::write(path, &body).unwrap();
            println!(
                "bench-upstream: kube-apiserver's CPU profile of P6's first {seconds} s in {}",
                path.display()
            );
        }
        Err(e) => println!(
            "bench-upstream: no kube-apiserver profile ({e}); start with OLM_APISERVER_PROFILING=1"
        ),
    }
}

/// (catalogd, operator-controller) of `side`.
fn binaries(side: Side) -> (PathBuf, PathBuf) {
    match side {
        Side::Ours => {
            let assets = Assets::products().unwrap_or_else(|e| panic!("{e}"));
            (
                assets.binary("catalogd").unwrap_or_else(|e| panic!("{e}")),
                assets
                    .binary("operator-controller")
                    .unwrap_or_else(|e| panic!("{e}")),
            )
        }
        Side::Upstream => {
            let dir = std::env::var_os("UPSTREAM_BIN_DIR")
                .map(PathBuf::from)
                .expect("UPSTREAM_BIN_DIR is not set: it names the directory holding upstream's catalogd and operator-controller");
            let pair = (dir.join("catalogd"), dir.join("operator-controller"));
            for bin in [&pair.0, &pair.1] {
                assert!(bin.is_file(), "{} does not exist", bin.display());
            }
            pair
        }
    }
}

struct Tls {
    cert: PathBuf,
    key: PathBuf,
    ca_dir: PathBuf,
    ca_pem: String,
}

/// A CA and a serving certificate for 127.0.0.1 and localhost, as files.
fn write_tls(dir: &Path) -> Tls {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "bench-upstream CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let cert = params.signed_by(&key, &issuer).unwrap();
    let tls_dir = dir.join("tls");
    let ca_dir = dir.join("ca");
    std::fs::create_dir_all(&tls_dir).unwrap();
    std::fs::create_dir_all(&ca_dir).unwrap();
    std::fs::write(tls_dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(tls_dir.join("tls.key"), key.serialize_pem()).unwrap();
    std::fs::write(ca_dir.join("ca.crt"), ca.pem()).unwrap();
    Tls {
        cert: tls_dir.join("tls.crt"),
        key: tls_dir.join("tls.key"),
        ca_dir,
        ca_pem: ca.pem(),
    }
}

/// A token for ServiceAccount `name` in the system namespace (created when missing), from the
/// TokenRequest API, written to a file.
async fn service_account_token(client: &kube::Client, name: &str, scratch: &Path) -> PathBuf {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let sa = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    match api.create(&PostParams::default(), &sa).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create ServiceAccount {name}: {e}"),
    }
    let request: TokenRequest = serde_json::from_value(json!({
        "spec": {"audiences": [], "expirationSeconds": 86400}
    }))
    .unwrap();
    let issued = api
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .unwrap();
    let token = issued.status.expect("a token").token;
    let dir = scratch.join(format!("token-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("token"), token).unwrap();
    std::fs::write(dir.join("namespace"), SYSTEM_NAMESPACE).unwrap();
    dir
}

/// The process spec of an upstream binary: in a private mount namespace whose `/run` is a tmpfs
/// holding `token_dir` at `/run/secrets/kubernetes.io/serviceaccount`.
fn upstream_spec(name: &str, bin: &Path, token_dir: &Path, logs: &Path, args: Vec<String>) -> Spec {
    let script = format!(
        "set -e; mount -t tmpfs tmpfs /run; mkdir -p /run/secrets/kubernetes.io/serviceaccount; cp {}/token {}/namespace /run/secrets/kubernetes.io/serviceaccount/; exec \"$@\"",
        token_dir.display(),
        token_dir.display()
    );
    Spec::new(name, "unshare", logs)
        .args([
            "-m",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            &script,
            "sh",
        ])
        .arg(bin)
        .args(args)
}

#[allow(clippy::too_many_arguments)]
async fn start_catalogd(
    side: Side,
    bin: &Path,
    kubeconfig: &Path,
    registry: &Registry,
    tls: &Tls,
    cache: &Path,
    server_port: u16,
    registries_conf: &Path,
    token_dir: Option<&Path>,
    logs: &Path,
) -> Supervised {
    let health = free_port();
    let server = format!("127.0.0.1:{server_port}");
    let common = vec![
        "--catalogs-server-addr".to_owned(),
        server.clone(),
        "--external-address".to_owned(),
        server.clone(),
        "--cache-dir".to_owned(),
        cache.display().to_string(),
        "--tls-cert".to_owned(),
        tls.cert.display().to_string(),
        "--tls-key".to_owned(),
        tls.key.display().to_string(),
        "--health-probe-bind-address".to_owned(),
        format!("127.0.0.1:{health}"),
    ];
    let spec = match side {
        Side::Ours => Spec::new("catalogd", bin, logs)
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(common)
            // Metrics on, over HTTPS with the shared certificate, as upstream's side runs.
            .arg(format!("--metrics-bind-address=127.0.0.1:{}", free_port()))
            .args(["--webhook-server-port", &free_port().to_string()])
            .args(["--insecure-registries", &registry.host()])
            .env("RUST_LOG", "info"),
        Side::Upstream => {
            let mut args = common;
            args.extend([
                "--kubeconfig".to_owned(),
                kubeconfig.display().to_string(),
                "--system-namespace".to_owned(),
                SYSTEM_NAMESPACE.to_owned(),
                "--metrics-bind-address".to_owned(),
                format!("127.0.0.1:{}", free_port()),
                "--webhook-server-port".to_owned(),
                free_port().to_string(),
                "--feature-gates".to_owned(),
                "APIV1MetasHandler=true".to_owned(),
            ]);
            upstream_spec("catalogd", bin, token_dir.unwrap(), logs, args)
                .env("CONTAINERS_REGISTRIES_CONF", registries_conf)
        }
    };
    let process = Supervised::start(spec).unwrap_or_else(|e| panic!("{e}"));
    wait_ready(process, health).await
}

#[allow(clippy::too_many_arguments)]
async fn start_operator_controller(
    side: Side,
    bin: &Path,
    kubeconfig: &Path,
    registry: &Registry,
    tls: &Tls,
    cache: &Path,
    registries_conf: &Path,
    token_dir: Option<&Path>,
    logs: &Path,
) -> Supervised {
    let health = free_port();
    let common = vec![
        "--kubeconfig".to_owned(),
        kubeconfig.display().to_string(),
        "--system-namespace".to_owned(),
        SYSTEM_NAMESPACE.to_owned(),
        "--cache-path".to_owned(),
        cache.display().to_string(),
        "--catalogd-cas-dir".to_owned(),
        tls.ca_dir.display().to_string(),
        "--health-probe-bind-address".to_owned(),
        format!("127.0.0.1:{health}"),
    ];
    let spec = match side {
        Side::Ours => Spec::new("operator-controller", bin, logs)
            .arg("run")
            .args(common)
            // Metrics on, over HTTPS with the shared certificate, as upstream's side runs.
            .arg(format!("--metrics-bind-address=127.0.0.1:{}", free_port()))
            .arg(format!("--tls-cert={}", tls.cert.display()))
            .arg(format!("--tls-key={}", tls.key.display()))
            .args(["--insecure-registries", &registry.host()])
            .arg("--openshift=false")
            .env("RUST_LOG", "info"),
        Side::Upstream => {
            let mut args = common;
            args.extend([
                // The bench bundles support only OwnNamespace and SingleNamespace (so 1,000
                // installs do not collide on cluster-scoped objects); upstream gates those modes.
                "--feature-gates".to_owned(),
                "SingleOwnNamespaceInstallSupport=true".to_owned(),
                "--metrics-bind-address".to_owned(),
                format!("127.0.0.1:{}", free_port()),
                "--tls-cert".to_owned(),
                tls.cert.display().to_string(),
                "--tls-key".to_owned(),
                tls.key.display().to_string(),
            ]);
            upstream_spec("operator-controller", bin, token_dir.unwrap(), logs, args)
                .env("CONTAINERS_REGISTRIES_CONF", registries_conf)
        }
    };
    let process = Supervised::start(spec).unwrap_or_else(|e| panic!("{e}"));
    wait_ready(process, health).await
}

async fn wait_ready(mut process: Supervised, health: u16) -> Supervised {
    let ready = format!("http://127.0.0.1:{health}/readyz");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if matches!(reqwest::get(&ready).await, Ok(r) if r.status() == 200) {
            return process;
        }
        if let Some(status) = process.try_exit_status() {
            panic!(
                "{} exited ({status}):\n{}",
                process.name(),
                process.log_tail(40)
            );
        }
        assert!(
            Instant::now() < deadline,
            "{} not ready:\n{}",
            process.name(),
            process.log_tail(40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether `conditions` hold a condition of `type_` whose status is `True`.
fn condition_is_true(conditions: &[olm_api::v1::Condition], type_: ConditionType) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status.as_str() == "True")
}

/// Creates the catalog and returns the time from its create to the first status that says
/// Serving. The time comes from a watch of that one catalog, opened before the create: a GET every
/// 100 ms would add up to 100 ms and a request's latency to an ingest of under half a second.
async fn create_until_serving(
    api: &Api<ClusterCatalog>,
    name: &str,
    image: &str,
    catalogd: &mut Supervised,
) -> Duration {
    use kube::runtime::watcher::{self, Event};
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher::watcher(api.clone(), config);
    let mut events = std::pin::pin!(events);
    // The watch is open once its initial list is done: from then on no status update is missed.
    loop {
        match futures::StreamExt::next(&mut events).await {
            Some(Ok(Event::InitDone)) => break,
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                println!("bench-upstream: watch of catalog {name}: {e}; the watcher retries")
            }
            None => panic!("watch of catalog {name} ended before its initial list"),
        }
    }
    let body = json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        // The name label is set here because upstream's mutating webhook, which would set it, is
        // not registered with this API server.
        "metadata": {"name": name, "labels": {CATALOG_NAME_LABEL: name}},
        "spec": {"source": {"type": "Image", "image": {"ref": image, "pollIntervalMinutes": 1}}},
    });
    let started = Instant::now();
    api.create(
        &PostParams::default(),
        &serde_json::from_value(body).unwrap(),
    )
    .await
    .unwrap();
    let mut alive = tokio::time::interval(Duration::from_millis(500));
    let deadline = tokio::time::sleep(Duration::from_secs(600));
    let mut deadline = std::pin::pin!(deadline);
    loop {
        tokio::select! {
            event = futures::StreamExt::next(&mut events) => {
                let catalog = match event {
                    Some(Ok(Event::Apply(c) | Event::InitApply(c))) => c,
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => {
                        println!("bench-upstream: watch of catalog {name}: {e}; the watcher retries");
                        continue;
                    }
                    None => panic!("watch of catalog {name} ended"),
                };
                let serving = catalog
                    .status
                    .as_ref()
                    .is_some_and(|s| condition_is_true(&s.conditions, ConditionType::Serving));
                if serving {
                    return started.elapsed();
                }
            }
            _ = alive.tick() => {
                if let Some(status) = catalogd.try_exit_status() {
                    panic!("catalogd exited ({status}):\n{}", catalogd.log_tail(40));
                }
            }
            _ = &mut deadline => panic!("catalog {name} not serving:\n{}", catalogd.log_tail(40)),
        }
    }
}

/// Creates PACKAGES extensions in each of `namespaces` at once; returns the time until all are
/// `Installed=True` (None after `timeout`) and the number of API requests this made.
async fn install_many(
    client: &kube::Client,
    namespaces: &[String],
    controller: &Supervised,
    timeout: Duration,
) -> (Option<Duration>, u64) {
    for ns in namespaces {
        ensure_namespace(client, ns).await;
    }
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let names: Vec<String> = namespaces
        .iter()
        .flat_map(|ns| (0..PACKAGES).map(move |p| format!("{ns}-bench-p{p:02}")))
        .collect();
    let bodies: Vec<Value> = namespaces
        .iter()
        .flat_map(|ns| {
            (0..PACKAGES).map(move |p| extension(ns, &format!("bench-p{p:02}"), "bench-0"))
        })
        .collect();
    let started = Instant::now();
    create_extensions(&api, bodies).await;
    let wanted: std::collections::HashSet<&String> = names.iter().collect();
    // A watch, not a LIST every few seconds: the time is the moment the last extension's status
    // said Installed, not the next poll after it, and watching costs both sides next to nothing
    // of the two cores they share with the benchmark. Its own requests: the creates, the
    // watcher's LIST and its WATCH (a WATCH the API server ends, every few minutes, adds one).
    let own = names.len() as u64 + 2;
    let mut installed = std::collections::HashSet::new();
    let events = kube::runtime::watcher(api, kube::runtime::watcher::Config::default());
    let mut events = std::pin::pin!(events);
    let mut report = tokio::time::interval(Duration::from_secs(15));
    report.tick().await;
    let deadline = tokio::time::sleep(timeout.saturating_sub(started.elapsed()));
    let mut deadline = std::pin::pin!(deadline);
    loop {
        tokio::select! {
            event = futures::StreamExt::next(&mut events) => {
                let ce = match event {
                    Some(Ok(kube::runtime::watcher::Event::Apply(ce) | kube::runtime::watcher::Event::InitApply(ce))) => ce,
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => {
                        println!("bench-upstream: watch of ClusterExtensions: {e}; the watcher retries");
                        continue;
                    }
                    None => return (None, own),
                };
                let Some(name) = ce.metadata.name.as_ref().filter(|n| wanted.contains(n)) else {
                    continue;
                };
                let is_installed = ce
                    .status
                    .as_ref()
                    .is_some_and(|s| condition_is_true(&s.conditions, ConditionType::Installed));
                if is_installed {
                    installed.insert(name.clone());
                } else {
                    installed.remove(name);
                }
                if installed.len() >= names.len() {
                    return (Some(started.elapsed()), own);
                }
            }
            _ = report.tick() => {
                println!(
                    "bench-upstream: {:.0}s {}/{} installed; operator-controller RSS {} KiB",
                    started.elapsed().as_secs_f64(),
                    installed.len(),
                    names.len(),
                    controller
                        .pid()
                        .map(|p| proc_status_kib(p, "VmRSS"))
                        .unwrap_or(0)
                );
            }
            _ = &mut deadline => return (None, own),
        }
    }
}

struct Load {
    requests_per_second: f64,
    bytes: f64,
    seconds: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: f64,
}

/// Runs `wrk` against `url` and reads its summary.
fn wrk(url: &str, gzip: bool, duration: &str, connections: u32) -> Load {
    let mut cmd = std::process::Command::new("wrk");
    cmd.args(["-t2", &format!("-c{connections}"), &format!("-d{duration}")])
        .args(["--timeout", "60s", "--latency"]);
    if gzip {
        cmd.args(["-H", "Accept-Encoding: gzip"]);
    }
    let output = cmd
        .arg(url)
        .output()
        .expect("wrk on PATH (apt-get install wrk)");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    parse_wrk(&text).unwrap_or_else(|| panic!("unreadable wrk output:\n{text}"))
}

fn parse_wrk(text: &str) -> Option<Load> {
    let mut load = Load {
        requests_per_second: 0.0,
        bytes: 0.0,
        seconds: 0.0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        errors: 0.0,
    };
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("Requests/sec:") {
            load.requests_per_second = v.trim().parse().ok()?;
        } else if let Some(v) = line.strip_prefix("50%") {
            load.p50_ms = duration_ms(v.trim())?;
        } else if let Some(v) = line.strip_prefix("99%") {
            load.p99_ms = duration_ms(v.trim())?;
        } else if line.contains("requests in") && line.ends_with("read") {
            // "1234 requests in 10.00s, 2.53GB read"
            let (_, rest) = line.split_once("requests in ")?;
            let (secs, read) = rest.split_once(", ")?;
            load.seconds = duration_ms(secs)? / 1000.0;
            load.bytes = size_bytes(read.trim_end_matches(" read"))?;
        } else if let Some(v) = line.strip_prefix("Socket errors:") {
            load.errors += v
                .split(',')
                .filter_map(|kv| kv.split_whitespace().last()?.parse::<f64>().ok())
                .sum::<f64>();
        } else if let Some(v) = line.strip_prefix("Non-2xx or 3xx responses:") {
            load.errors += v.trim().parse::<f64>().ok()?;
        }
    }
    (load.seconds > 0.0).then_some(load)
}

/// wrk's durations: `12.34ms`, `1.20s`, `850.00us`, `2.00m`.
fn duration_ms(v: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().ok()?;
    Some(match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        "h" => n * 3_600_000.0,
        _ => return None,
    })
}

/// wrk's sizes: `2.53GB`, `812.00MB`, `10.00KB`, `100B` (binary multiples).
fn size_bytes(v: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().ok()?;
    Some(match unit {
        "B" => n,
        "KB" => n * 1024.0,
        "MB" => n * 1048576.0,
        "GB" => n * 1073741824.0,
        "TB" => n * 1099511627776.0,
        _ => return None,
    })
}

/// Fails unless `url` answers 200 with a body (gzip-encoded when asked), trusting only the
/// benchmark's CA, so both servers are measured serving the same thing.
async fn check_served(url: &str, gzip: bool, ca_pem: &str) {
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap())
        .no_gzip()
        .build()
        .unwrap();
    let mut request = client.get(url);
    if gzip {
        request = request.header("Accept-Encoding", "gzip");
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    let encoding = response
        .headers()
        .get("content-encoding")
        .map(|v| v.to_str().unwrap_or("").to_owned());
    assert_eq!(
        encoding.as_deref() == Some("gzip"),
        gzip,
        "{url}: Content-Encoding {encoding:?}"
    );
    let body = response.bytes().await.unwrap();
    assert!(!body.is_empty(), "{url}: empty body");
}

/// `write_bytes` of `/proc/PID/io`: bytes this process caused to be written to storage.
/// Waits until `pid` has written nothing (`wchar` of `/proc/PID/io`) for a second, at most 30 s;
/// returns how long after the call its last write was seen.
async fn settle_writes(pid: u32) -> f64 {
    let started = Instant::now();
    let written = || {
        std::fs::read_to_string(format!("/proc/{pid}/io"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("wchar:")?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (mut last, mut last_change) = (written(), Duration::ZERO);
    while started.elapsed() < Duration::from_secs(30)
        && started.elapsed() - last_change < Duration::from_secs(1)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = written();
        if now != last {
            (last, last_change) = (now, started.elapsed());
        }
    }
    last_change.as_secs_f64()
}

fn write_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("write_bytes:")?.trim().parse().ok())
        .unwrap_or(0)
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Which direction is better for a measurement: true when lower is better.
fn lower_is_better(name: &str) -> bool {
    !(name.ends_with("_rps") || name.ends_with("_mb_per_s"))
}

/// Issue 27's goals, as the ratio ours / upstream of the medians each row must reach: at most
/// this for lower-is-better rows, at least this for the others.
const GOALS: &[(&str, f64, &str)] = &[
    ("p1_ingest_seconds", 0.2, "≥ 5× faster"),
    ("p1_peak_rss_mib", 0.25, "≤ ¼ RSS"),
    ("p23_all_cpu_s_per_gb", 0.5, "≤ ½ CPU per GB"),
    ("p23_all_mb_per_s", 1.0, "no regression"),
    ("p5_catalogd_rss_mib", 0.25, "≤ ¼ RSS"),
    ("p5_operator_controller_rss_mib", 0.25, "≤ ¼ RSS"),
    ("p6_requests_per_extension", 0.25, "≤ ¼ requests"),
    ("p6_seconds", 0.1, "≥ 10× faster"),
];

/// The goal column of a row: the goal and whether the median ratio meets it.
fn goal(name: &str, ratio: Option<f64>) -> String {
    let Some((_, target, text)) = GOALS.iter().find(|(n, _, _)| *n == name) else {
        return "–".into();
    };
    let verdict = match ratio {
        None => "not measured",
        Some(r) if lower_is_better(name) && r <= *target => "met",
        Some(r) if !lower_is_better(name) && r >= *target => "met",
        Some(_) => "NOT met",
    };
    format!("{text} ({target}): {verdict}")
}

/// The markdown table of a results file.
fn report(text: &str) -> String {
    let mut by: BTreeMap<(String, String), BTreeMap<u64, f64>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        let side = v["side"].as_str().unwrap_or_default().to_owned();
        let round = v["round"].as_u64().unwrap_or(0);
        if let Some(results) = v["results"].as_object() {
            for (k, x) in results {
                if let Some(x) = x.as_f64() {
                    by.entry((k.clone(), side.clone()))
                        .or_default()
                        .insert(round, x);
                }
            }
        }
    }
    let names: std::collections::BTreeSet<String> = by.keys().map(|(k, _)| k.clone()).collect();
    let mut out = String::from(
        "| measurement | ours min / median / max | upstream min / median / max | ours / upstream (median; per-round min–max) | goal (issue 27) | rounds |\n|---|---|---|---|---|---|\n",
    );
    let summary = |m: Option<&BTreeMap<u64, f64>>| -> (String, Option<f64>) {
        let Some(m) = m else {
            return ("–".into(), None);
        };
        let mut v: Vec<f64> = m.values().copied().collect();
        v.sort_by(f64::total_cmp);
        let median = if v.len() % 2 == 1 {
            v[v.len() / 2]
        } else {
            (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
        };
        (
            format!("{} / {} / {}", fmt(v[0]), fmt(median), fmt(v[v.len() - 1])),
            Some(median),
        )
    };
    for name in names {
        let ours = by.get(&(name.clone(), "ours".into()));
        let upstream = by.get(&(name.clone(), "upstream".into()));
        let (o, om) = summary(ours);
        let (u, um) = summary(upstream);
        let ratio = match (om, um, ours, upstream) {
            (Some(a), Some(b), Some(ours), Some(upstream)) if b != 0.0 => {
                let per_round: Vec<f64> = ours
                    .iter()
                    .filter_map(|(r, x)| upstream.get(r).filter(|y| **y != 0.0).map(|y| x / y))
                    .collect();
                let lo = per_round.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = per_round.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let better = if lower_is_better(&name) {
                    "lower is better"
                } else {
                    "higher is better"
                };
                if per_round.is_empty() {
                    format!("{:.2} ({better})", a / b)
                } else {
                    format!("{:.2}; {:.2}–{:.2} ({better})", a / b, lo, hi)
                }
            }
            _ => "–".into(),
        };
        let rounds = ours
            .map(|m| m.len())
            .unwrap_or(0)
            .max(upstream.map(|m| m.len()).unwrap_or(0));
        let median_ratio = match (om, um) {
            (Some(a), Some(b)) if b != 0.0 => Some(a / b),
            _ => None,
        };
        let goal = goal(&name, median_ratio);
        out.push_str(&format!(
            "| {name} | {o} | {u} | {ratio} | {goal} | {rounds} |\n"
        ));
    }
    out
}

fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_says_per_row_whether_the_goal_is_met() {
        let results = [
            r#"{"side":"ours","round":1,"results":{"p6_seconds":10.0,"p1_peak_rss_mib":30.0,"p23_all_mb_per_s":1100.0,"p4_x_seconds":1.0}}"#,
            r#"{"side":"upstream","round":1,"results":{"p6_seconds":140.0,"p1_peak_rss_mib":80.0,"p23_all_mb_per_s":900.0,"p4_x_seconds":9.0}}"#,
        ]
        .join("\n");
        let table = report(&results);
        let row = |name: &str| {
            table
                .lines()
                .find(|l| l.starts_with(&format!("| {name} |")))
                .unwrap_or_else(|| panic!("{name} in\n{table}"))
                .to_owned()
        };
        assert!(
            row("p6_seconds").contains("≥ 10× faster (0.1): met"),
            "{table}"
        );
        assert!(
            row("p1_peak_rss_mib").contains("≤ ¼ RSS (0.25): NOT met"),
            "{table}"
        );
        assert!(
            row("p23_all_mb_per_s").contains("no regression (1): met"),
            "{table}"
        );
        assert!(row("p4_x_seconds").contains("| – |"), "{table}");
        assert_eq!(
            goal("p5_catalogd_rss_mib", None),
            "≤ ¼ RSS (0.25): not measured"
        );
    }
}
