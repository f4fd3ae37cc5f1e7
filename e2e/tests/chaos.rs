//! Chaos: operator-controller killed with SIGKILL at random points of install, upgrade and
//! uninstall cycles, and kube-apiserver restarted once in the middle. After every step: exactly
//! one deployed release per installed extension, nothing pending, nothing of the extension left
//! after its uninstall, and a foreign object in its namespace untouched.
//!
//! A test binary of its own: it restarts its control plane's API server, which must not disturb
//! the other end-to-end tests. `OLM_CHAOS_CYCLES` (default 50) sets the number of cycles; the
//! seed of the random points is printed so that a failing run can be replayed
//! (`OLM_CHAOS_SEED`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use olm_api::v1::{ClusterExtension, find_condition};
use olm_e2e::eventually::eventually;
use olm_e2e::operator_controller::{
    BundleSpec, CatalogSpec, Catalogs, ChannelSpec, OperatorController, Options, bundle_name,
    ensure_namespace, installed_bundle,
};
use olm_e2e::test_env::unique_name;
use rand::{Rng, SeedableRng};
use serde_json::json;

/// The release index Secrets of `extension`: (version, status).
async fn records(client: &kube::Client, system_ns: &str, extension: &str) -> Vec<(String, String)> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), system_ns);
    let list = secrets
        .list(
            &ListParams::default()
                .labels(&format!("name={extension},owner=operator-controller"))
                .fields("type=operatorframework.io/index.v1"),
        )
        .await
        .expect("list release Secrets");
    let mut out: Vec<(String, String)> = list
        .items
        .iter()
        .map(|s| {
            let l = s.metadata.labels.clone().unwrap_or_default();
            (
                l.get("version").cloned().unwrap_or_default(),
                l.get("status").cloned().unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

/// ConfigMaps labelled as `extension`'s (the test bundle's own kind of object).
async fn labelled(client: &kube::Client, ns: &str, extension: &str) -> usize {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    cms.list(
        &ListParams::default().labels(&format!("olm.operatorframework.io/owner-name={extension}")),
    )
    .await
    .map(|l| l.items.len())
    .unwrap_or(usize::MAX)
}

fn kill_nine(oc: &OperatorController) {
    if let Some(pid) = oc.pid()
        && let Some(pid) = rustix::process::Pid::from_raw(pid as i32)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

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

    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let package = unique_name("chaos");
    let repo = unique_name("bundles");
    let mut images = BTreeMap::new();
    for version in ["1.0.0", "1.1.0"] {
        let image = BundleSpec::new(&package, version)
            .push(&env.registry, &repo)
            .await;
        images.insert(version.to_owned(), image);
    }
    let catalog = CatalogSpec {
        package: package.clone(),
        default_channel: "stable".into(),
        channels: vec![ChannelSpec {
            name: "stable".into(),
            entries: vec![
                (bundle_name(&package, "1.0.0"), None),
                (
                    bundle_name(&package, "1.1.0"),
                    Some(bundle_name(&package, "1.0.0")),
                ),
            ],
        }],
        bundles: images
            .iter()
            .map(|(v, image)| (bundle_name(&package, v), v.clone(), image.clone()))
            .collect(),
    };
    let catalog_image = catalog
        .push(&env.registry, &unique_name("catalog"), "latest")
        .await;
    let catalogs = Catalogs::start(&env.registry).await;
    let catalog_name = catalogs.serve("chaos", &catalog_image, None).await;

    let ns = unique_name("chaos");
    ensure_namespace(&client, &ns).await;
    let foreign: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let body: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "users-own", "labels": {"team": "users"}},
        "data": {"keep": "me"},
    }))
    .unwrap();
    let foreign_before = serde_json::to_string(
        &foreign
            .create(&PostParams::default(), &body)
            .await
            .expect("the foreign ConfigMap"),
    )
    .unwrap();

    let cache = tempfile::tempdir().expect("a cache");
    let options = Options::new(&env.registry);
    let (instance, system_ns) = (options.instance.clone(), options.system_namespace.clone());
    let start = |instance: String, system_ns: String| {
        let mut options = Options::new(&env.registry);
        options.instance = instance;
        options.system_namespace = system_ns;
        options.cache = Some(cache.path().to_path_buf());
        OperatorController::start(options)
    };
    let mut oc = start(instance.clone(), system_ns.clone()).await;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let mut kills = 0;
    let started = Instant::now();

    for cycle in 0..cycles {
        let name = format!("{package}-{cycle}");
        let kill_step = rng.random_range(0..3);
        let kill_after = Duration::from_millis(rng.random_range(0..1500));
        let restart_apiserver = cycle == cycles / 2;
        for step in 0..3 {
            match step {
                0 => {
                    let body = oc.extension(&name, &ns, &package, &catalog_name, Some("1.0.0"));
                    api.create(
                        &PostParams::default(),
                        &serde_json::from_value(body).unwrap(),
                    )
                    .await
                    .expect("create the extension");
                }
                1 => {
                    api.patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(
                            json!({"spec": {"source": {"catalog": {"version": "1.1.0"}}}}),
                        ),
                    )
                    .await
                    .expect("upgrade");
                }
                _ => {
                    api.delete(&name, &DeleteParams::default())
                        .await
                        .expect("delete");
                }
            }
            if step == kill_step {
                tokio::time::sleep(kill_after).await;
                if restart_apiserver {
                    env.control_plane
                        .restart_apiserver()
                        .await
                        .expect("restart kube-apiserver");
                    println!("chaos: cycle {cycle}: kube-apiserver restarted");
                }
                kill_nine(&oc);
                kills += 1;
                drop(oc);
                oc = start(instance.clone(), system_ns.clone()).await;
            }
            let client = &client;
            let (api, name, ns, system_ns) = (&api, &name, &ns, &system_ns);
            match step {
                0 | 1 => {
                    let want = if step == 0 { "1.0.0" } else { "1.1.0" };
                    eventually(
                        &format!("cycle {cycle}: {name} installed at {want}"),
                        || async move {
                            let e = api.get(name).await.ok()?;
                            let installed = find_condition(
                                &e.status.as_ref()?.conditions,
                                olm_api::v1::ConditionType::Installed,
                            )?;
                            (installed.status.as_str() == "True" && installed_bundle(&e)?.1 == want)
                                .then_some(())
                        },
                    )
                    .await;
                    let found = records(client, system_ns, name).await;
                    assert_eq!(
                        found.iter().filter(|(_, s)| s == "deployed").count(),
                        1,
                        "cycle {cycle} step {step}: {found:?}"
                    );
                    assert!(
                        found.iter().all(|(_, s)| !s.starts_with("pending")),
                        "cycle {cycle} step {step}: {found:?}"
                    );
                }
                _ => {
                    eventually(
                        &format!("cycle {cycle}: {name} uninstalled"),
                        || async move { matches!(api.get_opt(name).await, Ok(None)).then_some(()) },
                    )
                    .await;
                    assert_eq!(
                        records(client, system_ns, name).await,
                        vec![],
                        "cycle {cycle}"
                    );
                    assert_eq!(
                        labelled(client, ns, name).await,
                        0,
                        "cycle {cycle}: orphans"
                    );
                }
            }
            let foreign_now =
                serde_json::to_string(&foreign.get("users-own").await.unwrap()).unwrap();
            assert_eq!(
                foreign_now, foreign_before,
                "cycle {cycle}: the foreign ConfigMap"
            );
        }
    }
    println!(
        "chaos: {cycles} cycles, {kills} SIGKILLs, 1 kube-apiserver restart, {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
