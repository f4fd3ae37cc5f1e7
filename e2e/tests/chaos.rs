//! Chaos: operator-controller killed with SIGKILL at random points of install, upgrade and
//! uninstall cycles, and kube-apiserver restarted once in the middle. After every step: exactly
//! one deployed release per installed extension, nothing pending, nothing of the extension left
//! after its uninstall, and a foreign object in its namespace untouched.
//!
//! A test binary of its own: it restarts its control plane's API server, which must not disturb
//! the other end-to-end tests. `OLM_CHAOS_CYCLES` (default 50) sets the number of cycles; the
//! seed of the random points is printed so that a failing run can be replayed
//! (`OLM_CHAOS_SEED`). Written in the scenario vocabulary ([`olm_e2e::scenario`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use olm_e2e::scenario::{ExtensionSpec, INSTALLED, ObjectKey, Package, Scenario};
use rand::{Rng, SeedableRng};
use serde_json::json;

#[tokio::test]
async fn kill_nine_at_random_points_leaves_one_deployed_release_and_touches_nothing_foreign() {
    let cycles: usize = std::env::var("OLM_CHAOS_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let seed: u64 = std::env::var("OLM_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random);
    println!("chaos: {cycles} cycles, OLM_CHAOS_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);

    // One cache for every controller started: a restarted controller finds what the killed one
    // unpacked, as a Pod's volume would keep it.
    let cache = tempfile::tempdir().expect("a cache");
    let mut scenario = Scenario::builder()
        .cache(cache.path().to_path_buf())
        .start()
        .await;
    let catalog = scenario
        .publish(Package::new("chaos").versions(&["1.0.0", "1.1.0"]))
        .await;
    let ns = scenario.namespace("chaos").await;
    let foreign: Api<ConfigMap> = Api::namespaced(scenario.client.clone(), &ns);
    let body: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "users-own", "labels": {"team": "users"}},
        "data": {"keep": "me"},
    }))
    .unwrap();
    foreign
        .create(&PostParams::default(), &body)
        .await
        .expect("the foreign ConfigMap");
    let foreign = scenario
        .snapshot(ObjectKey::namespaced("v1", "ConfigMap", &ns, "users-own"))
        .await;

    let mut kills = 0;
    let started = Instant::now();
    for cycle in 0..cycles {
        let name = format!("{}-{cycle}", catalog.package());
        let kill_step = rng.random_range(0..3);
        let kill_after = Duration::from_millis(rng.random_range(0..1500));
        let restart_apiserver = cycle == cycles / 2;
        // Step 0 installs (the extension is applied here), step 1 upgrades, step 2 uninstalls.
        let ext = scenario
            .apply_extension(
                ExtensionSpec::new(&catalog, &ns)
                    .named(&name)
                    .version("1.0.0"),
            )
            .await;
        for step in 0..3 {
            match step {
                0 => {}
                1 => scenario.set_version(&ext, "1.1.0").await,
                _ => scenario.start_deleting(&ext).await,
            }
            if step == kill_step {
                tokio::time::sleep(kill_after).await;
                if restart_apiserver {
                    scenario
                        .env
                        .control_plane
                        .restart_apiserver()
                        .await
                        .expect("restart kube-apiserver");
                    println!("chaos: cycle {cycle}: kube-apiserver restarted");
                }
                scenario.kill_controller();
                kills += 1;
                scenario.start_controller().await;
            }
            match step {
                0 | 1 => {
                    let want = if step == 0 { "1.0.0" } else { "1.1.0" };
                    scenario
                        .wait_for(&ext, INSTALLED.until_bundle(catalog.bundle(want)))
                        .await;
                    let records = scenario.release_records(&ext).await;
                    let statuses = records.statuses();
                    assert_eq!(
                        statuses.iter().filter(|s| *s == "deployed").count(),
                        1,
                        "cycle {cycle} step {step}: {:?}",
                        records.by_revision()
                    );
                    assert!(
                        statuses.iter().all(|s| !s.starts_with("pending")),
                        "cycle {cycle} step {step}: {:?}",
                        records.by_revision()
                    );
                }
                _ => {
                    scenario.wait_deleted(&ext).await;
                    assert_eq!(
                        scenario.release_records(&ext).await.by_revision(),
                        BTreeMap::new(),
                        "cycle {cycle}"
                    );
                    assert_eq!(
                        scenario.labelled_objects(&ext).await,
                        Vec::new(),
                        "cycle {cycle}: orphans"
                    );
                }
            }
            foreign
                .assert_unchanged_after(&format!("cycle {cycle} step {step}"))
                .await;
        }
    }
    println!(
        "chaos: {cycles} cycles, {kills} SIGKILLs, 1 kube-apiserver restart, {:.1}s",
        started.elapsed().as_secs_f64()
    );
    scenario.finish().await;
}
