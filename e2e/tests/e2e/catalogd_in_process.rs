//! catalogd's controller run inside the test process (`olm_e2e::catalogd`, in-process tier)
//! against the shared control plane: its logs are part of the test's output and `run`'s own
//! result is checked, so a failing reconcile or start-up shows where the test fails.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use olm_e2e::catalogd::{Catalogd, LEADER_LEASE, Options, catalogs, test_catalog};
use olm_e2e::images::push_catalog;
use olm_runtime::exit::Exit;
use olm_runtime::server::TlsFiles;

use crate::support::{create_namespace, delete_namespace, unique_name};

/// `catalogd_reconciles_total{result="success"}` from catalogd's `/metrics`.
async fn successful_reconciles(catalogd: &Catalogd) -> u64 {
    let text =
        olm_e2e::metrics::read(catalogd.metrics_tls.as_ref().expect("in-process metrics")).await;
    text.lines()
        .find_map(|l| l.strip_prefix("catalogd_reconciles_total{result=\"success\"} "))
        .map(|n| n.trim().parse().unwrap())
        .unwrap_or(0)
}

/// The holder of catalogd's leader Lease in `leases`' namespace, if any.
async fn lease_holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt(LEADER_LEASE)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec?.holder_identity)
}

#[tokio::test]
async fn polls_that_find_the_same_digest_write_no_status() {
    let env = olm_e2e::shared().await;
    let repo = unique_name("quiet");
    push_catalog(&env.registry, &format!("{repo}:v1"), &test_catalog("v1"))
        .await
        .unwrap();
    let catalogd = Catalogd::start_in_process(Options::new(&env.registry)).await;
    let api = catalogs().await;
    // Polled every "minute", which is a second here: each poll resolves the tag and reconciles.
    let name = catalogd
        .create_catalog(
            &api,
            "quiet",
            &env.registry.image(&format!("{repo}:v1")),
            Some(1),
        )
        .await;
    catalogd.wait_serving(&api, &name).await;
    // Settled: serving, and the status write's own watch event reconciled too.
    let settled = catalogd
        .eventually("the status to settle", || async {
            let before = api.get(&name).await.ok()?.resource_version();
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let after = api.get(&name).await.ok()?.resource_version();
            (before == after).then_some(after)
        })
        .await;
    let reconciles = successful_reconciles(&catalogd).await;
    catalogd
        .eventually("three more polls", || async {
            (successful_reconciles(&catalogd).await >= reconciles + 3).then_some(())
        })
        .await;
    assert_eq!(
        api.get(&name).await.unwrap().resource_version(),
        settled,
        "a poll that found the same digest wrote to the ClusterCatalog"
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    catalogd.wait_deleted(&api, &name).await;
    catalogd.shut_down().await.unwrap();
}

#[tokio::test]
async fn a_stopped_leader_releases_its_lease_and_run_ends_cleanly() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "catalogd-lease").await;
    let catalogd = Catalogd::start_in_process(Options {
        leader_election_namespace: Some(&ns),
        identity: Some("in-process"),
        ..Options::new(&env.registry)
    })
    .await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let holder = || lease_holder(&leases);
    catalogd
        .eventually("the only replica to take the lease", || async {
            holder().await.filter(|h| h.starts_with("in-process_"))
        })
        .await;
    catalogd.shut_down().await.unwrap();
    assert_eq!(holder().await, None, "the lease was released on shutdown");
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn run_refuses_a_certificate_that_is_a_device_before_starting_anything() {
    let env = olm_e2e::shared().await;
    let cache = tempfile::tempdir().unwrap();
    let options = catalogd::cmd::run::RunOptions {
        kubeconfig: Some(env.kubeconfig_path().to_path_buf()),
        catalogs_server_addr: "127.0.0.1:0".parse().unwrap(),
        external_address: "127.0.0.1".into(),
        cache_dir: cache.path().to_path_buf(),
        tls: Some(TlsFiles {
            cert: PathBuf::from("/dev/zero"),
            key: PathBuf::from("/dev/zero"),
        }),
        tls_profile: Default::default(),
        limits: Default::default(),
        metrics: None,
        health_addr: None,
        pprof_addr: None,
        webhook_addr: None,
        metas: true,
        leader_elect: false,
        leader_election_namespace: "olmv1-system".into(),
        global_pull_secret: None,
        pull_cas_dir: None,
        insecure_registries: vec![],
        registries_conf: olm_image::RegistriesConfFiles::none(),
        gc_interval: Duration::from_secs(60),
        poll_unit: Duration::from_secs(60),
        identity: "refused".into(),
        label_selector: Some(format!("{}=none", olm_e2e::catalogd::INSTANCE_LABEL)),
        shutdown_drain: Duration::ZERO,
        ready_bound: Duration::ZERO,
    };
    let err = tokio::time::timeout(
        olm_e2e::eventually::BOUND,
        catalogd::cmd::run::run(options, Default::default()),
    )
    .await
    .expect("run returned instead of serving")
    .expect_err("an unusable certificate");
    assert_eq!(
        err.to_string(),
        "failed to load TLS certificate /dev/zero and key /dev/zero: failed to read /dev/zero: not a regular file (a character device)"
    );
    assert_eq!(err.exit(), Exit::Invalid);
}

/// At shutdown catalogd turns unready first and keeps serving content for its drain period, so
/// a client routed to it before its endpoint was withdrawn is still answered; then `run` ends
/// and the content server is closed.
#[tokio::test]
async fn a_stopping_catalogd_turns_unready_and_keeps_serving_for_its_drain_period() {
    let env = olm_e2e::shared().await;
    let repo = unique_name("drain");
    push_catalog(&env.registry, &format!("{repo}:v1"), &test_catalog("v1"))
        .await
        .unwrap();
    let mut catalogd = Catalogd::start_in_process(Options {
        // Long enough that the reads below fall inside it on a busy machine.
        shutdown_drain: Duration::from_secs(5),
        ..Options::new(&env.registry)
    })
    .await;
    let api = catalogs().await;
    let name = catalogd
        .create_catalog(
            &api,
            "drain",
            &env.registry.image(&format!("{repo}:v1")),
            None,
        )
        .await;
    catalogd.wait_serving(&api, &name).await;
    let path = olm_e2e::catalogd::all_path(&name);
    let served = catalogd.get(&path).await.text().await.unwrap();
    assert!(!served.is_empty());

    catalogd.stop();
    let readyz = format!("{}/readyz", catalogd.health_root);
    catalogd
        .eventually("catalogd to turn unready", || async {
            matches!(reqwest::get(&readyz).await, Ok(r) if r.status() == 503).then_some(())
        })
        .await;
    // Unready, and still answering content requests on fresh connections.
    let during = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
        .get(format!("{}{path}", catalogd.content_root))
        .send()
        .await
        .expect("content is served during the drain period");
    assert_eq!(during.status(), 200);
    assert_eq!(during.text().await.unwrap(), served);

    let content_root = catalogd.content_root.clone();
    catalogd.shut_down().await.unwrap();
    let after = reqwest::get(format!("{content_root}{path}")).await;
    assert!(
        after.is_err(),
        "the content server still answers after run ended: {after:?}"
    );
    // No catalogd manages it any more: its finalizer goes with it.
    api.patch(
        &name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}

/// A Service sends reads to a replica as soon as it is ready, so a starting replica turns ready
/// only once it serves every catalog that was already serving; one that cannot unpack stays
/// unready (answering 404 for the catalog) until its bound, then turns ready as upstream's would
/// have at once.
#[tokio::test]
async fn a_starting_replica_turns_ready_only_once_it_serves_the_catalogs_already_serving() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "catalogd-gate").await;
    let repo = unique_name("gate");
    push_catalog(&env.registry, &format!("{repo}:v1"), &test_catalog("v1"))
        .await
        .unwrap();
    // Replicas elect a leader, so only the first writes status: the others' failures cannot
    // turn the catalog's Serving condition.
    let replica = |identity: &'static str, instance: &str| Options {
        instance: instance.to_string(),
        leader_election_namespace: Some(&ns),
        identity: Some(identity),
        ..Options::new(&env.registry)
    };
    let leader = Catalogd::start_in_process(Options {
        leader_election_namespace: Some(&ns),
        identity: Some("gate-leader"),
        ..Options::new(&env.registry)
    })
    .await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    leader
        .eventually("the first replica to lead", || async {
            lease_holder(&leases)
                .await
                .filter(|h| h.starts_with("gate-leader_"))
        })
        .await;
    let api = catalogs().await;
    let name = leader
        .create_catalog(
            &api,
            "gate",
            &env.registry.image(&format!("{repo}:v1")),
            None,
        )
        .await;
    leader.wait_serving(&api, &name).await;
    let path = olm_e2e::catalogd::all_path(&name);
    let served = leader.get(&path).await.text().await.unwrap();

    // A replica that unpacks: the moment it is ready, it answers for the catalog.
    let unpacking =
        Catalogd::start_in_process_unready(replica("gate-second", &leader.instance)).await;
    unpacking.wait_ready().await;
    let answer = reqwest::get(format!("{}{path}", unpacking.content_root))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "ready before serving the catalog");
    assert_eq!(answer.text().await.unwrap(), served);

    // A replica that cannot pull: unready, and answering 404, for as long as its bound.
    let bound = Duration::from_secs(8);
    let started = std::time::Instant::now();
    let stuck = Catalogd::start_in_process_unready(Options {
        can_pull: false,
        ready_bound: bound,
        ..replica("gate-third", &leader.instance)
    })
    .await;
    let mut samples = 0;
    while started.elapsed() < bound.saturating_sub(Duration::from_secs(1)) {
        assert!(
            !stuck.is_ready().await,
            "ready after {:?} without serving the catalog",
            started.elapsed()
        );
        let answer = reqwest::get(format!("{}{path}", stuck.content_root)).await;
        if let Ok(answer) = answer {
            assert_eq!(answer.status(), 404);
        }
        samples += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(samples > 0);
    // Past the bound it is ready regardless, still without the content.
    stuck.wait_ready().await;
    let answer = reqwest::get(format!("{}{path}", stuck.content_root))
        .await
        .unwrap();
    assert_eq!(answer.status(), 404);

    api.delete(&name, &DeleteParams::default()).await.unwrap();
    leader.wait_deleted(&api, &name).await;
    stuck.shut_down().await.unwrap();
    unpacking.shut_down().await.unwrap();
    leader.shut_down().await.unwrap();
    delete_namespace(&client, &ns).await;
}
