//! catalogd end to end: the real `catalogd run` binary against the shared control plane and a
//! registry on loopback. Each test runs its own catalogd that manages only catalogs carrying its
//! own label, so tests run in parallel without touching each other's catalogs. The harness
//! (process, waits, the "serving catalog" set-up) is `olm_e2e::catalogd`.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use olm_api::v1::{ConditionType, find_condition};
use olm_e2e::catalogd::{
    Catalogd, LEADER_LEASE, Options, ServingCatalog, all_path, catalogs, expected_jsonl,
    test_catalog,
};
use olm_e2e::images::push_catalog;
use olm_e2e::registry::Registry;
use serde_json::json;

use crate::support::{create_namespace, delete_namespace, unique_name};

#[tokio::test]
async fn a_catalog_is_unpacked_served_and_reported_like_upstream() {
    let env = olm_e2e::shared().await;
    let fixture =
        ServingCatalog::start(&env.registry, "catalog", &test_catalog("v1"), "v1", None).await;
    let (catalogd, name, served) = (&fixture.catalogd, &fixture.name, &fixture.served);

    let status = served.status.clone().unwrap();
    let resolved = status.resolved_source.unwrap().image.ref_;
    assert_eq!(
        resolved,
        format!(
            "{}/{}@{}",
            env.registry.host(),
            fixture.repo,
            fixture.pushed.digest
        ),
        "resolvedSource is the digest"
    );
    let base = status.urls.unwrap().base;
    assert_eq!(base, format!("{}/catalogs/{name}", catalogd.content_root));
    assert!(status.last_unpacked.is_some());
    assert_eq!(
        served
            .labels()
            .get("olm.operatorframework.io/metadata.name"),
        Some(name)
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
    let expected = expected_jsonl(&test_catalog("v1"));
    assert_eq!(all.text().await.unwrap(), expected);
    let metas = reqwest::get(format!("{base}/api/v1/metas?schema=olm.package&name=test"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(metas.lines().count(), 1, "{metas}");
    assert!(metas.contains("\"name\":\"test\""), "{metas}");

    fixture.delete().await;
    assert_eq!(catalogd.get(&fixture.all_path()).await.status(), 404);
}

#[tokio::test]
async fn polling_picks_up_a_new_image_pushed_under_the_same_tag() {
    let env = olm_e2e::shared().await;
    let fixture = ServingCatalog::start(
        &env.registry,
        "polled",
        &test_catalog("v1"),
        "latest",
        Some(1),
    )
    .await;
    let catalogd = &fixture.catalogd;
    let first_ref = fixture
        .served
        .status
        .clone()
        .unwrap()
        .resolved_source
        .unwrap()
        .image
        .ref_;

    let v2 = push_catalog(
        &env.registry,
        &format!("{}:latest", fixture.repo),
        &test_catalog("v2"),
    )
    .await
    .unwrap();
    let expected = expected_jsonl(&test_catalog("v2"));
    let path = fixture.all_path();
    catalogd
        .eventually("the new image to be served", || async {
            let body = catalogd.get(&path).await.text().await.ok()?;
            (body == expected).then_some(())
        })
        .await;
    // catalogd serves the new content before it writes the status naming it: wait for both.
    let now = catalogd
        .eventually("the status to name the new digest", || async {
            let now = fixture
                .api
                .get(&fixture.name)
                .await
                .ok()?
                .status?
                .resolved_source?
                .image
                .ref_;
            (now != first_ref).then_some(now)
        })
        .await;
    assert!(now.ends_with(&v2.digest), "{now}");
    fixture.delete().await;
}

#[tokio::test]
async fn availability_mode_unavailable_stops_serving_and_available_restores_it() {
    let env = olm_e2e::shared().await;
    let fixture =
        ServingCatalog::start(&env.registry, "avail", &test_catalog("v1"), "v1", None).await;
    let (catalogd, api, name) = (&fixture.catalogd, &fixture.api, &fixture.name);

    let patch = json!({"spec": {"availabilityMode": "Unavailable"}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let off = catalogd
        // Status is written first, then the finalizer is removed: wait for both.
        .eventually(
            "Serving False/UserSpecifiedUnavailable and the finalizer gone",
            || async {
                let c = api.get(name).await.ok()?;
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
    assert_eq!(catalogd.get(&fixture.all_path()).await.status(), 404);

    let patch = json!({"spec": {"availabilityMode": "Available"}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    catalogd.wait_serving(api, name).await;
    assert_eq!(catalogd.get(&fixture.all_path()).await.status(), 200);
    fixture.delete().await;
}

#[tokio::test]
async fn a_registry_outage_keeps_the_last_content_served_and_reports_retrying() {
    let mut registry = Registry::start().await.unwrap();
    let fixture =
        ServingCatalog::start(&registry, "outage", &test_catalog("v1"), "latest", Some(1)).await;
    let (catalogd, api, name) = (&fixture.catalogd, &fixture.api, &fixture.name);

    registry.shut_down().await;
    let during = catalogd
        .eventually("Progressing to report Retrying", || async {
            let c = api.get(name).await.ok()?;
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
    assert_eq!(catalogd.get(&fixture.all_path()).await.status(), 200);

    registry.restart().await.unwrap();
    catalogd
        .eventually("Progressing to recover", || async {
            let c = api.get(name).await.ok()?;
            let p = find_condition(&c.status?.conditions, ConditionType::Progressing)?.clone();
            (p.reason == "Succeeded").then_some(())
        })
        .await;
    fixture.delete().await;
}

#[tokio::test]
async fn a_restarted_catalogd_serves_stored_content_without_pulling_again() {
    let registry = Registry::start().await.unwrap();
    let repo = unique_name("restart");
    let pushed = push_catalog(&registry, &format!("{repo}:v1"), &test_catalog("v1"))
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let options = || Options {
        instance: format!("cd-{repo}"),
        cache: Some(cache.path().to_path_buf()),
        ..Options::new(&registry)
    };
    let mut first = Catalogd::start(options()).await;
    let api = catalogs().await;
    let by_digest = format!("{}/{repo}@{}", registry.host(), pushed.digest);
    let name = first
        .create_catalog(&api, "restart", &by_digest, None)
        .await;
    first.wait_serving(&api, &name).await;
    let path = all_path(&name);
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

    let second = Catalogd::start(options()).await;
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
    let layer = olm_image::push::Layer::from_dir(&test_catalog("v1"), "configs").unwrap();
    let spec = olm_image::push::ImageSpec {
        layers: vec![layer],
        ..olm_image::push::ImageSpec::default()
    };
    let pushed = pusher
        .push_image(&env.registry.image(&format!("{repo}:v1")), &spec)
        .await
        .unwrap();
    let catalogd = Catalogd::start(Options::new(&env.registry)).await;
    let api = catalogs().await;
    let by_tag = catalogd
        .create_catalog(
            &api,
            "nolabel-tag",
            &env.registry.image(&format!("{repo}:v1")),
            None,
        )
        .await;
    let digest_ref = format!("{}/{repo}@{}", env.registry.host(), pushed.digest);
    let by_digest = catalogd
        .create_catalog(&api, "nolabel-digest", &digest_ref, None)
        .await;
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
    push_catalog(&env.registry, &format!("{repo}:v1"), &test_catalog("v1"))
        .await
        .unwrap();
    push_catalog(&env.registry, &format!("{repo}:v2"), &test_catalog("v2"))
        .await
        .unwrap();
    let instance = unique_name("cd");
    let start = |id: &'static str| {
        Catalogd::start(Options {
            instance: instance.clone(),
            leader_election_namespace: Some(&ns),
            identity: Some(id),
            ..Options::new(&env.registry)
        })
    };
    let a = start("replica-a").await;
    let b = start("replica-b").await;
    let api = catalogs().await;
    let name = a
        .create_catalog(&api, "ha", &env.registry.image(&format!("{repo}:v1")), None)
        .await;
    a.wait_serving(&api, &name).await;
    let path = all_path(&name);
    let v1 = expected_jsonl(&test_catalog("v1"));
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
    let leader = holder(leases.get(LEADER_LEASE).await.unwrap());
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
            holder(leases.get(LEADER_LEASE).await.ok()?)
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
    let v2 = expected_jsonl(&test_catalog("v2"));
    survivor
        .eventually("the remaining replica to serve v2", || async {
            let r = survivor.get(&path).await;
            (r.text().await.ok()? == v2).then_some(())
        })
        .await;
    survivor.wait_serving(&api, &name).await;
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    survivor.wait_deleted(&api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// Issue 24 item 8 (upstream #2819): with two replicas behind a Service, the leader reports a
/// catalog as Serving, with its URL, only once the other replica serves it too. The follower here
/// cannot pull (its registries.conf blocks the registry), so the catalog stays not Serving; once
/// it stops (and drops its replica Lease) the leader reports Serving.
#[tokio::test]
async fn a_catalog_is_reported_served_only_once_every_replica_serves_it() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "catalogd-replicas").await;
    let repo = unique_name("replicas");
    push_catalog(&env.registry, &format!("{repo}:v1"), &test_catalog("v1"))
        .await
        .unwrap();
    let instance = unique_name("cd");
    let leader = Catalogd::start(Options {
        instance: instance.clone(),
        leader_election_namespace: Some(&ns),
        identity: Some("replica-leader"),
        ..Options::new(&env.registry)
    })
    .await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), &ns);
    leader
        .eventually("the first replica to lead", || async {
            let lease = leases.get(LEADER_LEASE).await.ok()?;
            lease
                .spec?
                .holder_identity?
                .starts_with("replica-leader")
                .then_some(())
        })
        .await;
    let blocked = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        blocked.path(),
        format!(
            "[[registry]]\nlocation = \"{}\"\nblocked = true\n",
            env.registry.host()
        ),
    )
    .unwrap();
    let mut follower = Catalogd::start(Options {
        instance: instance.clone(),
        leader_election_namespace: Some(&ns),
        identity: Some("replica-blocked"),
        env: vec![(
            "CONTAINERS_REGISTRIES_CONF".into(),
            blocked.path().display().to_string(),
        )],
        ..Options::new(&env.registry)
    })
    .await;
    leader
        .eventually("the follower's replica Lease", || async {
            let list = leases
                .list(
                    &kube::api::ListParams::default()
                        .labels(catalogd::controller::replicas::GROUP_LABEL),
                )
                .await
                .ok()?;
            (list.items.len() == 2).then_some(())
        })
        .await;

    let api = catalogs().await;
    let name = leader
        .create_catalog(
            &api,
            "replicas",
            &env.registry.image(&format!("{repo}:v1")),
            None,
        )
        .await;
    let path = all_path(&name);
    leader
        .eventually("the leader to serve the content", || async {
            (leader.get(&path).await.status() == 200).then_some(())
        })
        .await;
    let waiting = leader
        .eventually("the status to say it waits for the follower", || async {
            let status = api.get(&name).await.ok()?.status?;
            let progressing = find_condition(&status.conditions, ConditionType::Progressing)?;
            progressing
                .message
                .contains("waiting for every replica to serve it")
                .then_some(status)
        })
        .await;
    let serving = find_condition(&waiting.conditions, ConditionType::Serving).unwrap();
    assert_eq!(serving.status.as_str(), "False", "{serving:?}");
    assert!(
        serving.message.contains("replica-blocked"),
        "{}",
        serving.message
    );
    assert!(waiting.urls.is_none(), "{:?}", waiting.urls);
    assert_eq!(follower.get(&path).await.status(), 404);
    // Still withheld a few renewals later: the follower never serves it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let status = api.get(&name).await.unwrap().status.unwrap();
    assert!(status.urls.is_none());

    // The follower leaves (its Lease goes with it): the leader alone serves, and says so.
    follower.stop();
    let served = leader.wait_serving(&api, &name).await;
    assert!(served.status.unwrap().urls.is_some());
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    leader.wait_deleted(&api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// Found by upstream's acceptance suite on the `real` tier (update.feature:155 with two catalogd
/// Pods): while the leader waited for the other replica to serve a new digest, the status
/// already named it, so a client that read the catalog through the Service in that window got
/// the old content from the other replica and cached it under the new digest. Now the status
/// names the new digest only once every replica serves it; the follower learns it from the
/// leader's replica Lease.
#[tokio::test]
async fn a_new_digest_is_published_only_once_every_replica_serves_it() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "catalogd-update").await;
    let (old_repo, new_repo) = (unique_name("update-old"), unique_name("update-new"));
    push_catalog(
        &env.registry,
        &format!("{old_repo}:v1"),
        &test_catalog("v1"),
    )
    .await
    .unwrap();
    push_catalog(
        &env.registry,
        &format!("{new_repo}:v1"),
        &test_catalog("v2"),
    )
    .await
    .unwrap();
    let instance = unique_name("cd");
    let leader = Catalogd::start(Options {
        instance: instance.clone(),
        leader_election_namespace: Some(&ns),
        identity: Some("replica-leader"),
        ..Options::new(&env.registry)
    })
    .await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), &ns);
    leader
        .eventually("the first replica to lead", || async {
            let lease = leases.get(LEADER_LEASE).await.ok()?;
            lease
                .spec?
                .holder_identity?
                .starts_with("replica-leader")
                .then_some(())
        })
        .await;
    // The follower cannot pull the new repository until the test lets it (registries.conf is
    // read again when its bytes change).
    let conf = tempfile::NamedTempFile::new().unwrap();
    let blocking = format!(
        "[[registry]]\nprefix = \"{host}/{new_repo}\"\nlocation = \"{host}/{new_repo}\"\nblocked = true\n",
        host = env.registry.host()
    );
    std::fs::write(conf.path(), &blocking).unwrap();
    let follower = Catalogd::start(Options {
        instance: instance.clone(),
        leader_election_namespace: Some(&ns),
        identity: Some("replica-follower"),
        env: vec![(
            "CONTAINERS_REGISTRIES_CONF".into(),
            conf.path().display().to_string(),
        )],
        ..Options::new(&env.registry)
    })
    .await;
    leader
        .eventually("the follower's replica Lease", || async {
            let list = leases
                .list(
                    &kube::api::ListParams::default()
                        .labels(catalogd::controller::replicas::GROUP_LABEL),
                )
                .await
                .ok()?;
            (list.items.len() == 2).then_some(())
        })
        .await;

    let api = catalogs().await;
    let name = leader
        .create_catalog(
            &api,
            "update",
            &env.registry.image(&format!("{old_repo}:v1")),
            None,
        )
        .await;
    let path = all_path(&name);
    let (v1, v2) = (
        expected_jsonl(&test_catalog("v1")),
        expected_jsonl(&test_catalog("v2")),
    );
    let served = leader.wait_serving(&api, &name).await.status.unwrap();
    let old_digest = served.resolved_source.clone().unwrap().image.ref_;
    for replica in [&leader, &follower] {
        replica
            .eventually("both replicas to serve v1", || async {
                (replica.get(&path).await.text().await.ok()? == v1).then_some(())
            })
            .await;
    }

    // The update: the leader stores it and waits for the follower, which cannot pull it.
    let patch = json!({"spec": {"source": {"image": {"ref": env.registry.image(&format!("{new_repo}:v1"))}}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    leader
        .eventually("the leader to serve v2", || async {
            (leader.get(&path).await.text().await.ok()? == v2).then_some(())
        })
        .await;
    let waiting = leader
        .eventually("the status to say it waits for the follower", || async {
            let status = api.get(&name).await.ok()?.status?;
            find_condition(&status.conditions, ConditionType::Progressing)?
                .message
                .contains("waiting for every replica to serve it")
                .then_some(status)
        })
        .await;
    for status in [waiting, {
        // A few renewals later, still the same.
        tokio::time::sleep(Duration::from_secs(3)).await;
        api.get(&name).await.unwrap().status.unwrap()
    }] {
        assert_eq!(
            status
                .resolved_source
                .as_ref()
                .map(|r| r.image.ref_.as_str()),
            Some(old_digest.as_str()),
            "the status names a digest the follower does not serve: {status:?}"
        );
        assert_eq!(status.last_unpacked, served.last_unpacked);
        assert_eq!(status.urls, served.urls);
        let serving = find_condition(&status.conditions, ConditionType::Serving).unwrap();
        assert_eq!(serving.status.as_str(), "True", "{serving:?}");
    }
    assert_eq!(follower.get(&path).await.text().await.unwrap(), v1);

    // Unblocked, the follower pulls what the leader serves, and only then is it published.
    std::fs::write(conf.path(), "").unwrap();
    follower
        .eventually("the follower to serve v2", || async {
            (follower.get(&path).await.text().await.ok()? == v2).then_some(())
        })
        .await;
    let published = leader
        .eventually("the new digest to be published", || async {
            let status = api.get(&name).await.ok()?.status?;
            let digest = status.resolved_source.as_ref()?.image.ref_.clone();
            (digest != old_digest
                && !status
                    .conditions
                    .iter()
                    .any(|c| c.message.contains("waiting for every replica")))
            .then_some(digest)
        })
        .await;
    assert!(published.contains(&new_repo), "{published}");
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    leader.wait_deleted(&api, &name).await;
    drop(follower);
    delete_namespace(&client, &ns).await;
}

/// catalogd's RBAC exactly as the release manifest carries it (`config/rbac/catalogd`, rendered
/// by olm_e2e::release), moved into `namespace` and renamed with `suffix` so parallel runs do not
/// collide.
fn catalogd_rbac(namespace: &str, suffix: &str) -> Vec<serde_json::Value> {
    olm_e2e::release::manifest::component_rbac(&olm_e2e::repo_root(), "catalogd")
        .unwrap()
        .iter()
        .map(|object| {
            let text = serde_json::to_string(object)
                .unwrap()
                .replace("olmv1-system", namespace)
                .replace(
                    "catalogd-manager-role",
                    &format!("catalogd-manager-role-{suffix}"),
                )
                .replace(
                    "catalogd-manager-rolebinding",
                    &format!("catalogd-manager-rolebinding-{suffix}"),
                )
                .replace(
                    "catalogd-metrics-reader",
                    &format!("catalogd-metrics-reader-{suffix}"),
                );
            serde_json::from_str::<serde_json::Value>(&text).unwrap()
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
    push_catalog(&env.registry, &format!("{repo}:v1"), &test_catalog("v1"))
        .await
        .unwrap();
    let catalogd = Catalogd::start(Options {
        leader_election_namespace: Some(&ns),
        identity: Some("rbac-replica"),
        kubeconfig: Some(kubeconfig),
        ..Options::new(&env.registry)
    })
    .await;
    let api = catalogs().await;
    let name = catalogd
        .create_catalog(
            &api,
            "rbac",
            &env.registry.image(&format!("{repo}:v1")),
            None,
        )
        .await;
    let served = catalogd.wait_serving(&api, &name).await;
    assert!(
        served
            .finalizers()
            .iter()
            .any(|f| f == "olm.operatorframework.io/delete-server-cache")
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    catalogd.wait_deleted(&api, &name).await;
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
