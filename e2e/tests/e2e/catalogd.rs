//! catalogd end to end: the real `catalogd run` binary against the shared control plane and a
//! registry on loopback. Each test runs its own catalogd that manages only catalogs carrying its
//! own label, so tests run in parallel without touching each other's catalogs.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use olm_api::fbc::walk_metas_dir;
use olm_api::v1::{ClusterCatalog, ConditionType, find_condition};
use olm_e2e::assets::Assets;
use olm_e2e::images::{push_catalog, shared_data};
use olm_e2e::process::{Spec, Supervised};
use olm_e2e::registry::Registry;
use serde_json::json;

use crate::support::{create_namespace, delete_namespace, unique_name};

const INSTANCE_LABEL: &str = "e2e.olm.test/catalogd";
const WAIT: Duration = Duration::from_secs(90);

/// A `catalogd run` process managing catalogs labelled with its own instance name.
pub struct Catalogd {
    process: Supervised,
    pub instance: String,
    pub content_root: String,
    pub health_root: String,
    _logs: tempfile::TempDir,
}

pub struct Options<'a> {
    pub instance: String,
    pub registry: &'a Registry,
    pub cache: PathBuf,
    pub leader_election_namespace: Option<&'a str>,
    /// Leader-election identity (as `POD_NAME` gives it in a cluster).
    pub identity: Option<&'a str>,
    /// Kubeconfig to run with (default: the cluster admin's).
    pub kubeconfig: Option<PathBuf>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Catalogd {
    pub async fn start(opts: Options<'_>) -> Catalogd {
        let env = olm_e2e::shared().await;
        let bin = Assets::products()
            .and_then(|a| a.binary("catalogd"))
            .unwrap_or_else(|e| panic!("{e}"));
        let logs = tempfile::tempdir().unwrap();
        let (content_port, health_port) = (free_port(), free_port());
        let mut spec = Spec::new("catalogd", bin, logs.path())
            .arg("run")
            .arg("--kubeconfig")
            .arg(
                opts.kubeconfig
                    .clone()
                    .unwrap_or_else(|| env.kubeconfig_path().to_path_buf()),
            )
            .args([
                "--catalogs-server-addr",
                &format!("127.0.0.1:{content_port}"),
            ])
            .args(["--external-address", &format!("127.0.0.1:{content_port}")])
            .arg("--cache-dir")
            .arg(&opts.cache)
            .args(["--metrics-bind-address", "0"])
            .args([
                "--health-probe-bind-address",
                &format!("127.0.0.1:{health_port}"),
            ])
            .args(["--insecure-registries", &opts.registry.host()])
            .args(["--poll-interval-unit", "1s"])
            .args(["--gc-interval", "2s"])
            .args([
                "--catalog-label-selector",
                &format!("{INSTANCE_LABEL}={}", opts.instance),
            ])
            .env("RUST_LOG", "info,catalogd=debug");
        if let Some(id) = opts.identity {
            spec = spec.env("POD_NAME", id);
        }
        if let Some(ns) = opts.leader_election_namespace {
            spec = spec
                .arg("--leader-elect")
                .args(["--leader-election-namespace", ns]);
        }
        let process = Supervised::start(spec).unwrap();
        let catalogd = Catalogd {
            process,
            instance: opts.instance,
            content_root: format!("http://127.0.0.1:{content_port}"),
            health_root: format!("http://127.0.0.1:{health_port}"),
            _logs: logs,
        };
        let ready = format!("{}/readyz", catalogd.health_root);
        catalogd
            .eventually("catalogd to become ready", || {
                let ready = ready.clone();
                async move {
                    matches!(reqwest::get(&ready).await, Ok(r) if r.status() == 200).then_some(())
                }
            })
            .await;
        catalogd
    }

    pub fn log_tail(&self) -> String {
        self.process.log_tail(40)
    }

    pub fn stop(&mut self) {
        self.process.stop(Duration::from_secs(10));
    }

    /// Polls `check` until it yields a value; fails the test with catalogd's log after [`WAIT`].
    pub async fn eventually<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(v) = check().await {
                return v;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}; catalogd log:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A ClusterCatalog this instance manages.
    pub fn catalog(&self, name: &str, image: &str, poll_minutes: Option<i64>) -> ClusterCatalog {
        let mut image_source = json!({"ref": image});
        if let Some(m) = poll_minutes {
            image_source["pollIntervalMinutes"] = json!(m);
        }
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": name, "labels": {INSTANCE_LABEL: self.instance}},
            "spec": {"source": {"type": "Image", "image": image_source}}
        }))
        .unwrap()
    }

    pub async fn wait_serving(&self, api: &Api<ClusterCatalog>, name: &str) -> ClusterCatalog {
        self.eventually(&format!("catalog {name} to be served"), || async {
            let c = api.get(name).await.ok()?;
            let status = c.status.as_ref()?;
            let serving = find_condition(&status.conditions, ConditionType::Serving)?;
            let progressing = find_condition(&status.conditions, ConditionType::Progressing)?;
            (serving.status.as_str() == "True"
                && progressing.reason == "Succeeded"
                && progressing.observed_generation == c.metadata.generation)
                .then_some(c)
        })
        .await
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        reqwest::get(format!("{}{path}", self.content_root))
            .await
            .unwrap()
    }
}

/// The JSON Lines catalogd must serve for an FBC directory: every blob, canonical, in walk order.
pub fn expected_jsonl(dir: &Path) -> String {
    let mut out = String::new();
    walk_metas_dir(dir, |m| {
        out.push_str(std::str::from_utf8(&m.blob).unwrap());
        out.push('\n');
        Ok(())
    })
    .unwrap();
    out
}

fn fixture(version: &str) -> PathBuf {
    shared_data(&format!(
        "catalogs/upstream-operator-controller/testdata/images/catalogs/test-catalog/{version}/configs"
    ))
}

async fn catalogs() -> Api<ClusterCatalog> {
    Api::all(olm_e2e::shared().await.client().await)
}

async fn new_catalogd(registry: &Registry, cache: &tempfile::TempDir) -> Catalogd {
    Catalogd::start(Options {
        instance: unique_name("cd"),
        registry,
        cache: cache.path().to_path_buf(),
        leader_election_namespace: None,
        identity: None,
        kubeconfig: None,
    })
    .await
}

#[tokio::test]
async fn a_catalog_is_unpacked_served_and_reported_like_upstream() {
    let env = olm_e2e::shared().await;
    let repo = unique_name("catalog");
    let pushed = push_catalog(&env.registry, &format!("{repo}:v1"), &fixture("v1"))
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let catalogd = new_catalogd(&env.registry, &cache).await;
    let api = catalogs().await;
    let name = unique_name("test-catalog");
    let image = env.registry.image(&format!("{repo}:v1"));
    api.create(
        &PostParams::default(),
        &catalogd.catalog(&name, &image, None),
    )
    .await
    .unwrap();

    let served = catalogd.wait_serving(&api, &name).await;
    let status = served.status.clone().unwrap();
    let resolved = status.resolved_source.unwrap().image.ref_;
    assert_eq!(
        resolved,
        format!("{}/{repo}@{}", env.registry.host(), pushed.digest),
        "resolvedSource is the digest"
    );
    let base = status.urls.unwrap().base;
    assert_eq!(base, format!("{}/catalogs/{name}", catalogd.content_root));
    assert!(status.last_unpacked.is_some());
    assert_eq!(
        served
            .labels()
            .get("olm.operatorframework.io/metadata.name"),
        Some(&name)
    );
    assert!(
        served
            .finalizers()
            .iter()
            .any(|f| f == "olm.operatorframework.io/delete-server-cache")
    );
    let serving = find_condition(&status.conditions, ConditionType::Serving).unwrap();
    assert_eq!(
        (serving.reason.as_str(), serving.message.as_str()),
        ("Available", "Serving desired content from resolved source")
    );
    let progressing = find_condition(&status.conditions, ConditionType::Progressing).unwrap();
    assert_eq!(
        progressing.message,
        "Successfully unpacked and stored content from resolved source"
    );

    let all = reqwest::get(format!("{base}/api/v1/all")).await.unwrap();
    assert_eq!(all.status(), 200);
    assert_eq!(all.headers()["content-type"], "application/jsonl");
    let expected = expected_jsonl(&fixture("v1"));
    assert_eq!(all.text().await.unwrap(), expected);
    let metas = reqwest::get(format!("{base}/api/v1/metas?schema=olm.package&name=test"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(metas.lines().count(), 1, "{metas}");
    assert!(metas.contains("\"name\":\"test\""), "{metas}");

    api.delete(&name, &DeleteParams::default()).await.unwrap();
    catalogd
        .eventually("the catalog to be deleted", || async {
            api.get_opt(&name).await.unwrap().is_none().then_some(())
        })
        .await;
    assert_eq!(
        catalogd
            .get(&format!("/catalogs/{name}/api/v1/all"))
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn polling_picks_up_a_new_image_pushed_under_the_same_tag() {
    let env = olm_e2e::shared().await;
    let repo = unique_name("polled");
    push_catalog(&env.registry, &format!("{repo}:latest"), &fixture("v1"))
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let catalogd = new_catalogd(&env.registry, &cache).await;
    let api = catalogs().await;
    let name = unique_name("polled");
    let image = env.registry.image(&format!("{repo}:latest"));
    api.create(
        &PostParams::default(),
        &catalogd.catalog(&name, &image, Some(1)),
    )
    .await
    .unwrap();
    let first = catalogd.wait_serving(&api, &name).await;
    let first_ref = first.status.unwrap().resolved_source.unwrap().image.ref_;

    let v2 = push_catalog(&env.registry, &format!("{repo}:latest"), &fixture("v2"))
        .await
        .unwrap();
    let expected = expected_jsonl(&fixture("v2"));
    let path = format!("/catalogs/{name}/api/v1/all");
    catalogd
        .eventually("the new image to be served", || async {
            let body = catalogd.get(&path).await.text().await.ok()?;
            (body == expected).then_some(())
        })
        .await;
    let now = api
        .get(&name)
        .await
        .unwrap()
        .status
        .unwrap()
        .resolved_source
        .unwrap()
        .image
        .ref_;
    assert_ne!(now, first_ref);
    assert!(now.ends_with(&v2.digest), "{now}");
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn availability_mode_unavailable_stops_serving_and_available_restores_it() {
    let env = olm_e2e::shared().await;
    let repo = unique_name("avail");
    push_catalog(&env.registry, &format!("{repo}:v1"), &fixture("v1"))
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let catalogd = new_catalogd(&env.registry, &cache).await;
    let api = catalogs().await;
    let name = unique_name("avail");
    api.create(
        &PostParams::default(),
        &catalogd.catalog(&name, &env.registry.image(&format!("{repo}:v1")), None),
    )
    .await
    .unwrap();
    catalogd.wait_serving(&api, &name).await;

    let patch = json!({"spec": {"availabilityMode": "Unavailable"}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let off = catalogd
        // Status is written first, then the finalizer is removed: wait for both.
        .eventually(
            "Serving False/UserSpecifiedUnavailable and the finalizer gone",
            || async {
                let c = api.get(&name).await.ok()?;
                let status = c.status.clone()?;
                let serving = find_condition(&status.conditions, ConditionType::Serving)?;
                (serving.reason == "UserSpecifiedUnavailable" && c.finalizers().is_empty())
                    .then_some(c)
            },
        )
        .await;
    let status = off.status.clone().unwrap();
    assert!(
        status.resolved_source.is_none() && status.urls.is_none() && status.last_unpacked.is_none()
    );
    let progressing = find_condition(&status.conditions, ConditionType::Progressing).unwrap();
    assert_eq!(
        (progressing.reason.as_str(), progressing.message.as_str()),
        (
            "Succeeded",
            "Catalog availability mode is set to Unavailable"
        )
    );
    assert_eq!(
        catalogd
            .get(&format!("/catalogs/{name}/api/v1/all"))
            .await
            .status(),
        404
    );

    let patch = json!({"spec": {"availabilityMode": "Available"}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    catalogd.wait_serving(&api, &name).await;
    assert_eq!(
        catalogd
            .get(&format!("/catalogs/{name}/api/v1/all"))
            .await
            .status(),
        200
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn a_registry_outage_keeps_the_last_content_served_and_reports_retrying() {
    let mut registry = Registry::start().await.unwrap();
    let repo = unique_name("outage");
    push_catalog(&registry, &format!("{repo}:latest"), &fixture("v1"))
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let catalogd = new_catalogd(&registry, &cache).await;
    let api = catalogs().await;
    let name = unique_name("outage");
    api.create(
        &PostParams::default(),
        &catalogd.catalog(&name, &registry.image(&format!("{repo}:latest")), Some(1)),
    )
    .await
    .unwrap();
    catalogd.wait_serving(&api, &name).await;

    registry.shut_down().await;
    let during = catalogd
        .eventually("Progressing to report Retrying", || async {
            let c = api.get(&name).await.ok()?;
            let status = c.status.clone()?;
            let p = find_condition(&status.conditions, ConditionType::Progressing)?;
            (p.reason == "Retrying").then_some(c)
        })
        .await;
    let status = during.status.unwrap();
    let p = find_condition(&status.conditions, ConditionType::Progressing).unwrap();
    assert_eq!(p.status.as_str(), "True");
    assert!(
        p.message.starts_with("source catalog content: "),
        "{}",
        p.message
    );
    assert!(
        !p.message.contains("127.0.0.1:") || p.message.contains(&registry.host()),
        "only the registry address appears: {}",
        p.message
    );
    let serving = find_condition(&status.conditions, ConditionType::Serving).unwrap();
    assert_eq!(
        serving.status.as_str(),
        "True",
        "the last good content is still served"
    );
    assert_eq!(
        catalogd
            .get(&format!("/catalogs/{name}/api/v1/all"))
            .await
            .status(),
        200
    );

    registry.restart().await.unwrap();
    catalogd
        .eventually("Progressing to recover", || async {
            let c = api.get(&name).await.ok()?;
            let p = find_condition(&c.status?.conditions, ConditionType::Progressing)?.clone();
            (p.reason == "Succeeded").then_some(())
        })
        .await;
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn a_restarted_catalogd_serves_stored_content_without_pulling_again() {
    let registry = Registry::start().await.unwrap();
    let repo = unique_name("restart");
    let pushed = push_catalog(&registry, &format!("{repo}:v1"), &fixture("v1"))
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let instance = unique_name("cd");
    let mut first = Catalogd::start(Options {
        instance: instance.clone(),
        registry: &registry,
        cache: cache.path().to_path_buf(),
        leader_election_namespace: None,
        identity: None,
        kubeconfig: None,
    })
    .await;
    let api = catalogs().await;
    let name = unique_name("restart");
    let by_digest = format!("{}/{repo}@{}", registry.host(), pushed.digest);
    api.create(
        &PostParams::default(),
        &first.catalog(&name, &by_digest, None),
    )
    .await
    .unwrap();
    first.wait_serving(&api, &name).await;
    let path = format!("/catalogs/{name}/api/v1/all");
    let before = first.get(&path).await;
    let last_modified = before.headers()["last-modified"].clone();
    let body = before.text().await.unwrap();
    first.stop();
    let blob_gets = || {
        registry
            .access_log()
            .iter()
            .filter(|e| e.is_blob_get())
            .count()
    };
    let gets_before = blob_gets();

    let second = Catalogd::start(Options {
        instance,
        registry: &registry,
        cache: cache.path().to_path_buf(),
        leader_election_namespace: None,
        identity: None,
        kubeconfig: None,
    })
    .await;
    let after = second.get(&path).await;
    assert_eq!(after.status(), 200, "served from disk right after start");
    assert_eq!(
        after.headers()["last-modified"],
        last_modified,
        "content not rewritten"
    );
    assert_eq!(after.text().await.unwrap(), body);
    // Let the new process reconcile the catalog, then check it downloaded nothing.
    second.wait_serving(&api, &name).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(blob_gets(), gets_before, "no layer was downloaded again");
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn an_image_without_the_catalog_label_is_reported_with_upstreams_message() {
    let env = olm_e2e::shared().await;
    let repo = unique_name("nolabel");
    let pusher = olm_e2e::images::pusher(&env.registry).unwrap();
    let layer = olm_image::push::Layer::from_dir(&fixture("v1"), "configs").unwrap();
    let spec = olm_image::push::ImageSpec {
        layers: vec![layer],
        ..olm_image::push::ImageSpec::default()
    };
    let pushed = pusher
        .push_image(&env.registry.image(&format!("{repo}:v1")), &spec)
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let catalogd = new_catalogd(&env.registry, &cache).await;
    let api = catalogs().await;
    let by_tag = unique_name("nolabel-tag");
    let by_digest = unique_name("nolabel-digest");
    api.create(
        &PostParams::default(),
        &catalogd.catalog(&by_tag, &env.registry.image(&format!("{repo}:v1")), None),
    )
    .await
    .unwrap();
    let digest_ref = format!("{}/{repo}@{}", env.registry.host(), pushed.digest);
    api.create(
        &PostParams::default(),
        &catalogd.catalog(&by_digest, &digest_ref, None),
    )
    .await
    .unwrap();
    let wanted = "source catalog content: catalog image is missing the required label \"operators.operatorframework.io.index.configs.v1\"";
    for (name, status, reason) in [
        (&by_tag, "True", "Retrying"),
        (&by_digest, "False", "Blocked"),
    ] {
        catalogd
            .eventually(&format!("{name} to report the missing label"), || async {
                let c = api.get(name).await.ok()?;
                let p = find_condition(&c.status?.conditions, ConditionType::Progressing)?.clone();
                (p.message == wanted && p.status.as_str() == status && p.reason == reason)
                    .then_some(())
            })
            .await;
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }
}

#[tokio::test]
async fn every_replica_serves_content_and_a_follower_takes_over_when_the_leader_stops() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "catalogd-ha").await;
    let repo = unique_name("ha");
    push_catalog(&env.registry, &format!("{repo}:v1"), &fixture("v1"))
        .await
        .unwrap();
    push_catalog(&env.registry, &format!("{repo}:v2"), &fixture("v2"))
        .await
        .unwrap();
    let instance = unique_name("cd");
    let (cache_a, cache_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let start = |cache: PathBuf, id: &'static str| {
        Catalogd::start(Options {
            instance: instance.clone(),
            registry: &env.registry,
            cache,
            leader_election_namespace: Some(&ns),
            identity: Some(id),
            kubeconfig: None,
        })
    };
    let a = start(cache_a.path().to_path_buf(), "replica-a").await;
    let b = start(cache_b.path().to_path_buf(), "replica-b").await;
    let api = catalogs().await;
    let name = unique_name("ha");
    api.create(
        &PostParams::default(),
        &a.catalog(&name, &env.registry.image(&format!("{repo}:v1")), None),
    )
    .await
    .unwrap();
    a.wait_serving(&api, &name).await;
    let path = format!("/catalogs/{name}/api/v1/all");
    let v1 = expected_jsonl(&fixture("v1"));
    for replica in [&a, &b] {
        replica
            .eventually("every replica to serve the content", || async {
                let r = replica.get(&path).await;
                (r.status() == 200 && r.text().await.ok()? == v1).then_some(())
            })
            .await;
    }

    // Stop whichever replica leads; the other must take over and act on a spec change.
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(env.client().await, &ns);
    let holder = |lease: k8s_openapi::api::coordination::v1::Lease| {
        lease
            .spec
            .and_then(|s| s.holder_identity)
            .unwrap_or_default()
    };
    let leader = holder(leases.get("catalogd-operator-lock").await.unwrap());
    let (mut stopped, survivor, survivor_id) = if leader.starts_with("replica-a") {
        (a, b, "replica-b")
    } else {
        assert!(
            leader.starts_with("replica-b"),
            "unexpected holder {leader:?}"
        );
        (b, a, "replica-a")
    };
    stopped.stop();
    // A graceful stop releases the Lease, so the survivor takes over without waiting it out.
    survivor
        .eventually("the survivor to hold the lease", || async {
            holder(leases.get("catalogd-operator-lock").await.ok()?)
                .starts_with(survivor_id)
                .then_some(())
        })
        .await;
    let survivor = &survivor;
    let patch =
        json!({"spec": {"source": {"image": {"ref": env.registry.image(&format!("{repo}:v2"))}}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let v2 = expected_jsonl(&fixture("v2"));
    survivor
        .eventually("the remaining replica to serve v2", || async {
            let r = survivor.get(&path).await;
            (r.text().await.ok()? == v2).then_some(())
        })
        .await;
    survivor.wait_serving(&api, &name).await;
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    survivor
        .eventually("the catalog to be deleted", || async {
            api.get_opt(&name).await.unwrap().is_none().then_some(())
        })
        .await;
    delete_namespace(&client, &ns).await;
}

/// The RBAC manifests in `config/rbac/catalogd`, moved into `namespace` and renamed with `suffix`
/// so parallel runs do not collide.
fn catalogd_rbac(namespace: &str, suffix: &str) -> Vec<serde_json::Value> {
    let dir = olm_e2e::repo_root().join("config/rbac/catalogd");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .unwrap()
                .replace("olmv1-system", namespace)
                .replace(
                    "catalogd-manager-role",
                    &format!("catalogd-manager-role-{suffix}"),
                )
                .replace(
                    "catalogd-manager-rolebinding",
                    &format!("catalogd-manager-rolebinding-{suffix}"),
                );
            serde_saphyr::from_str::<serde_json::Value>(&text).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn catalogd_works_with_only_the_permissions_its_rbac_manifests_grant() {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "catalogd-rbac").await;
    let suffix = ns.rsplit('-').next().unwrap().to_string();
    let pp = PostParams::default();
    for object in catalogd_rbac(&ns, &suffix) {
        match object["kind"].as_str().unwrap() {
            "ServiceAccount" => drop(
                Api::<ServiceAccount>::namespaced(client.clone(), &ns)
                    .create(&pp, &serde_json::from_value(object).unwrap())
                    .await
                    .unwrap(),
            ),
            "ClusterRole" => drop(
                Api::<ClusterRole>::all(client.clone())
                    .create(&pp, &serde_json::from_value(object).unwrap())
                    .await
                    .unwrap(),
            ),
            "ClusterRoleBinding" => drop(
                Api::<ClusterRoleBinding>::all(client.clone())
                    .create(&pp, &serde_json::from_value(object).unwrap())
                    .await
                    .unwrap(),
            ),
            "Role" => drop(
                Api::<Role>::namespaced(client.clone(), &ns)
                    .create(&pp, &serde_json::from_value(object).unwrap())
                    .await
                    .unwrap(),
            ),
            "RoleBinding" => drop(
                Api::<RoleBinding>::namespaced(client.clone(), &ns)
                    .create(&pp, &serde_json::from_value(object).unwrap())
                    .await
                    .unwrap(),
            ),
            other => panic!("unexpected kind {other} in config/rbac/catalogd"),
        }
    }
    let token = env
        .control_plane
        .service_account_token(&ns, "catalogd-controller-manager")
        .await
        .unwrap();
    let kubeconfig = env
        .control_plane
        .write_kubeconfig(
            &format!("{ns}.kubeconfig"),
            &olm_e2e::control_plane::kubeconfig::Credential::Token(token),
        )
        .unwrap();

    let repo = unique_name("rbac");
    push_catalog(&env.registry, &format!("{repo}:v1"), &fixture("v1"))
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let catalogd = Catalogd::start(Options {
        instance: unique_name("cd"),
        registry: &env.registry,
        cache: cache.path().to_path_buf(),
        leader_election_namespace: Some(&ns),
        identity: Some("rbac-replica"),
        kubeconfig: Some(kubeconfig),
    })
    .await;
    let api = catalogs().await;
    let name = unique_name("rbac");
    api.create(
        &pp,
        &catalogd.catalog(&name, &env.registry.image(&format!("{repo}:v1")), None),
    )
    .await
    .unwrap();
    let served = catalogd.wait_serving(&api, &name).await;
    assert!(
        served
            .finalizers()
            .iter()
            .any(|f| f == "olm.operatorframework.io/delete-server-cache")
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    catalogd
        .eventually("the catalog to be deleted", || async {
            api.get_opt(&name).await.unwrap().is_none().then_some(())
        })
        .await;
    assert!(
        !catalogd.log_tail().contains("forbidden"),
        "RBAC denial in the log:\n{}",
        catalogd.log_tail()
    );
    delete_namespace(&client, &ns).await;
    let _ = Api::<ClusterRole>::all(client.clone())
        .delete(
            &format!("catalogd-manager-role-{suffix}"),
            &DeleteParams::default(),
        )
        .await;
    let _ = Api::<ClusterRoleBinding>::all(client)
        .delete(
            &format!("catalogd-manager-rolebinding-{suffix}"),
            &DeleteParams::default(),
        )
        .await;
}
