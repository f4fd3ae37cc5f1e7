//! Installed state in release Secrets against the real API server, both directions: records
//! written as upstream writes them (helm-operator-plugins' chunked format; the fixtures in
//! `operator-controller/core/tests/release_data/` were written by upstream's code) are read as
//! installed state, and our records are what upstream's queries find and decode.
//!
//! Each test uses its own namespace as the "system namespace" and a ClusterExtension it creates
//! as the records' owner (on the `full` tier the garbage collector would delete records whose
//! owner does not exist).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use olm_operator_core::release::history::{self, NewRelease};
use olm_operator_core::release::render::{self, ChartObject, PostRenderContext, ResourceScopes};
use olm_operator_core::release::secrets::{self, DecodeLimits};
use olm_operator_core::release::{Release, Status};
use operator_controller::storage::scopes::discover_scopes;
use operator_controller::storage::{ReleaseStore, StoreError};
use serde_json::json;

use crate::support::{
    cluster_extensions, create, create_namespace, delete, delete_namespace, unique_name,
};

/// A ClusterExtension to own the records, and its owner reference.
async fn owner(client: &kube::Client) -> (DynamicObject, OwnerReference) {
    let api = cluster_extensions(client);
    let ce = create(
        &api,
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": unique_name("release-owner")},
            "spec": {"namespace": "default", "source": {"sourceType": "Catalog", "catalog": {"packageName": "release-storage-test"}}}
        }),
    )
    .await
    .unwrap();
    let reference = secrets::cluster_extension_owner_reference(
        ce.metadata.name.as_deref().unwrap(),
        ce.metadata.uid.as_deref().unwrap(),
    );
    (ce, reference)
}

fn fixture(name: &str) -> Secret {
    let path = olm_e2e::repo_root()
        .join("operator-controller/core/tests/release_data")
        .join(format!("upstream-index-{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// An upstream-written Secret moved into `namespace` and owned by `owner`.
fn relocated(mut secret: Secret, namespace: &str, owner: &OwnerReference) -> Secret {
    secret.metadata.namespace = Some(namespace.to_string());
    secret.metadata.owner_references = Some(vec![owner.clone()]);
    secret
}

fn chunk(s: &Secret) -> Vec<u8> {
    s.data.as_ref().unwrap()["chunk"].0.clone()
}

fn labels(s: &Secret) -> BTreeMap<String, String> {
    s.metadata.labels.clone().unwrap_or_default()
}

#[tokio::test]
async fn an_upstream_history_is_read_as_installed_state() {
    let client = olm_e2e::shared().await.client().await;
    let ns = create_namespace(&client, "release-upstream").await;
    let (ce, owner) = owner(&client).await;
    let secrets_api: Api<Secret> = Api::namespaced(client.clone(), &ns);
    for v in ["fixture-ext.v1", "fixture-ext.v2", "fixture-ext.v3"] {
        secrets_api
            .create(&PostParams::default(), &relocated(fixture(v), &ns, &owner))
            .await
            .unwrap();
    }
    let store = ReleaseStore::new(client.clone(), &ns);

    let installed = store.installed("fixture-ext").await.unwrap().unwrap();
    assert_eq!(installed.release.version, 3);
    assert_eq!(installed.release.status(), "deployed");
    let bundle = history::installed_bundle(std::slice::from_ref(&installed.release)).unwrap();
    assert_eq!(
        (
            bundle.package.as_str(),
            bundle.name.as_str(),
            bundle.version.as_str()
        ),
        ("fixture", "fixture.v1.2.0", "1.2.0")
    );
    // The manifest is what the controller adopts and keeps applied.
    assert!(
        installed.release.manifest.lines().count() == 5,
        "{}",
        installed.release.manifest
    );
    // OpenShift gating reads the chart's olm.properties.
    assert!(
        installed
            .release
            .chart_annotation("olm.properties")
            .unwrap()
            .contains("olm.maxOpenShiftVersion")
    );

    let history = store.history("fixture-ext").await.unwrap();
    assert!(history.damaged.is_empty());
    let versions: Vec<(i64, String)> = history
        .releases
        .iter()
        .map(|r| (r.release.version, r.release.status().to_string()))
        .collect();
    assert_eq!(
        versions,
        vec![
            (1, "superseded".into()),
            (2, "superseded".into()),
            (3, "deployed".into())
        ]
    );
    // Upstream's records carry modifiedAt; they are read as they are.
    assert!(
        history
            .releases
            .iter()
            .all(|r| r.index_labels.contains_key("modifiedAt"))
    );

    delete(&cluster_extensions(&client), &ce).await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn an_upstream_record_over_several_chunk_secrets_is_read() {
    // Built from the documented format: Go's gzip stream of a record cut in three, an index
    // Secret holding the first piece and naming the others in `extraChunks`, immutable chunk
    // Secrets `<key>-<base32 fnv64a>` owned by the index.
    let client = olm_e2e::shared().await.client().await;
    let ns = create_namespace(&client, "release-chunks").await;
    let (ce, owner) = owner(&client).await;
    let api: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let source = fixture("fixture-one.v1");
    let key = source.metadata.name.clone().unwrap();
    let gz = chunk(&source);
    let third = gz.len() / 3;
    let pieces = [&gz[..third], &gz[third..2 * third], &gz[2 * third..]];
    let names: Vec<String> = pieces[1..]
        .iter()
        .map(|p| secrets::chunk_name(&key, p))
        .collect();
    let mut index = relocated(source.clone(), &ns, &owner);
    index.data = Some(BTreeMap::from([
        ("chunk".to_string(), ByteString(pieces[0].to_vec())),
        (
            "extraChunks".to_string(),
            ByteString(serde_json::to_vec(&names).unwrap()),
        ),
    ]));
    let index = api.create(&PostParams::default(), &index).await.unwrap();
    for (name, piece) in names.iter().zip(&pieces[1..]) {
        let chunk: Secret = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {
                "name": name, "namespace": ns,
                "labels": {"owner": "operator-controller", "key": key, "type": "chunk", "createdAt": "1795472084"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Secret", "name": key, "uid": index.metadata.uid,
                                     "controller": true, "blockOwnerDeletion": false}]
            },
            "type": "operatorframework.io/chunk.v1",
            "immutable": true,
            "data": {"chunk": ByteString(piece.to_vec())}
        }))
        .unwrap();
        api.create(&PostParams::default(), &chunk).await.unwrap();
    }
    let store = ReleaseStore::new(client.clone(), &ns);
    let installed = store.installed("fixture-one").await.unwrap().unwrap();
    let want = secrets::decode_release(&source, &[], DecodeLimits::default()).unwrap();
    assert_eq!(installed.release, want.release);
    assert_eq!(installed.secret_names.len(), 3);

    delete(&cluster_extensions(&client), &ce).await;
    delete_namespace(&client, &ns).await;
}

/// A deployed release whose manifest gzip cannot shrink much, so it spans `chunks` chunks.
fn large_release(name: &str, chunks: usize) -> Release {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let manifest: String = (0..chunks * secrets::CHUNK_SIZE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect();
    let mut r = history::install_release(NewRelease {
        name,
        namespace: "operators",
        chart: Default::default(),
        manifest,
        labels: history::bundle_labels(
            "pkg",
            "pkg.v1.0.0",
            "1.0.0",
            "registry.example/pkg@sha256:00",
            None,
        ),
        now: Timestamp::now(),
    });
    history::set_status(&mut r, Status::DEPLOYED, history::INSTALL_COMPLETE);
    r
}

#[tokio::test]
async fn our_records_are_what_upstreams_queries_find() {
    let client = olm_e2e::shared().await.client().await;
    let ns = create_namespace(&client, "release-ours").await;
    let (ce, owner) = owner(&client).await;
    let store = ReleaseStore::new(client.clone(), &ns);
    let name = "big-ext";
    let release = large_release(name, 2);
    store.create(&release, &owner, 1_800_000_000).await.unwrap();

    let api: Api<Secret> = Api::namespaced(client.clone(), &ns);
    // upstream's e2e query, and Helm's `Deployed` query (helm-operator-plugins pass 1).
    for selector in [
        format!("name={name},status=deployed"),
        format!("owner=operator-controller,type=index,name={name},status=deployed"),
    ] {
        let listed = api
            .list(
                &ListParams::default()
                    .labels(&selector)
                    .fields("type=operatorframework.io/index.v1"),
            )
            .await
            .unwrap();
        assert_eq!(listed.items.len(), 1, "{selector}");
    }
    let index = api.get("sh.helm.release.v1.big-ext.v1").await.unwrap();
    assert_eq!(
        index.type_.as_deref(),
        Some("operatorframework.io/index.v1")
    );
    assert_eq!(index.immutable, Some(false));
    assert_eq!(
        index.metadata.owner_references.as_deref(),
        Some(std::slice::from_ref(&owner))
    );
    let l = labels(&index);
    for (k, v) in [
        ("name", name),
        ("owner", "operator-controller"),
        ("status", "deployed"),
        ("version", "1"),
        ("key", "sh.helm.release.v1.big-ext.v1"),
        ("type", "index"),
        ("createdAt", "1800000000"),
    ] {
        assert_eq!(l.get(k).map(String::as_str), Some(v), "label {k}");
    }
    // The chunk Secrets, by the names the index lists, as helm-operator-plugins reads them.
    let names: Vec<String> =
        serde_json::from_slice(&index.data.as_ref().unwrap()["extraChunks"].0).unwrap();
    assert!(!names.is_empty());
    let mut chunks = Vec::new();
    for n in &names {
        let c = api.get(n).await.unwrap();
        assert_eq!(c.type_.as_deref(), Some("operatorframework.io/chunk.v1"));
        assert_eq!(c.immutable, Some(true));
        assert_eq!(labels(&c)["key"], "sh.helm.release.v1.big-ext.v1");
        assert_eq!(labels(&c)["type"], "chunk");
        let o = &c.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (o.kind.as_str(), o.name.as_str()),
            ("Secret", "sh.helm.release.v1.big-ext.v1")
        );
        assert_eq!(Some(o.uid.as_str()), index.metadata.uid.as_deref());
        assert_eq!(
            n,
            &secrets::chunk_name("sh.helm.release.v1.big-ext.v1", &chunk(&c))
        );
        chunks.push(c);
    }
    let decoded = secrets::decode_release(&index, &chunks, DecodeLimits::default()).unwrap();
    assert_eq!(decoded.release, {
        let mut r = release.clone();
        r.labels = Some(r.labels.clone().unwrap_or_default());
        r
    });
    // The API server keeps chunk Secrets immutable.
    let mut changed = chunks[0].clone();
    changed.data = Some(BTreeMap::from([(
        "chunk".to_string(),
        ByteString(b"x".to_vec()),
    )]));
    let err = api
        .replace(
            changed.metadata.name.as_deref().unwrap(),
            &PostParams::default(),
            &changed,
        )
        .await
        .unwrap_err();
    assert!(
        crate::support::api_status(&err)
            .message
            .contains("immutable"),
        "{err}"
    );

    // Deleting a record removes all of its Secrets.
    store.delete("sh.helm.release.v1.big-ext.v1").await.unwrap();
    let left = api.list(&ListParams::default()).await.unwrap();
    assert!(
        left.items.iter().all(|s| !s
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .starts_with("sh.helm.release.v1.big-ext")),
        "{:?}",
        left.items
            .iter()
            .map(|s| s.metadata.name.clone())
            .collect::<Vec<_>>()
    );

    delete(&cluster_extensions(&client), &ce).await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn install_upgrade_and_pruning_keep_helms_history_rules() {
    let client = olm_e2e::shared().await.client().await;
    let ns = create_namespace(&client, "release-history").await;
    let (ce, owner) = owner(&client).await;
    let store = ReleaseStore::new(client.clone(), &ns);
    let name = "hist-ext";
    let new = |n: usize| NewRelease {
        name,
        namespace: "operators",
        chart: Default::default(),
        manifest: format!("{{\"revision\":{n}}}\n"),
        labels: history::bundle_labels(
            "pkg",
            &format!("pkg.v1.0.{n}"),
            &format!("1.0.{n}"),
            "img",
            None,
        ),
        now: Timestamp::now(),
    };

    // Install as Helm does it: pending-install, then deployed.
    let mut r1 = history::install_release(new(1));
    store.create(&r1, &owner, 1_000).await.unwrap();
    assert!(store.installed(name).await.unwrap().is_none());
    history::set_status(&mut r1, Status::DEPLOYED, history::INSTALL_COMPLETE);
    store.update(&r1, &owner, 1_005).await.unwrap();
    let api: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let index = api.get("sh.helm.release.v1.hist-ext.v1").await.unwrap();
    assert_eq!(
        (
            labels(&index)["createdAt"].as_str(),
            labels(&index)["modifiedAt"].as_str()
        ),
        ("1000", "1005")
    );
    assert_eq!(
        store
            .installed(name)
            .await
            .unwrap()
            .unwrap()
            .release
            .version,
        1
    );

    // Eleven upgrades: each supersedes the last; the history never exceeds ten records and
    // keeps the deployed one.
    for n in 2..=12 {
        let releases = store.history(name).await.unwrap().releases();
        let (mut next, from) = history::upgrade_release(&releases, new(n)).unwrap();
        store.create(&next, &owner, 1_000 + n as i64).await.unwrap();
        let mut old = releases.into_iter().find(|r| r.version == from).unwrap();
        history::mark_superseded(&mut old);
        store.update(&old, &owner, 1_000 + n as i64).await.unwrap();
        history::set_status(&mut next, Status::DEPLOYED, history::UPGRADE_COMPLETE);
        store.update(&next, &owner, 1_000 + n as i64).await.unwrap();
    }
    let history = store.history(name).await.unwrap();
    let versions: Vec<i64> = history.releases.iter().map(|r| r.release.version).collect();
    assert_eq!(versions, (3..=12).collect::<Vec<_>>());
    let deployed: Vec<i64> = history
        .releases
        .iter()
        .filter(|r| r.release.status() == Status::DEPLOYED)
        .map(|r| r.release.version)
        .collect();
    assert_eq!(deployed, vec![12]);
    let installed = history::installed_bundle(&history.releases()).unwrap();
    assert_eq!(installed.name, "pkg.v1.0.12");
    // No chunk Secret is left behind by updates (none of these records needs chunks beyond the index).
    let all = api
        .list(&ListParams::default().labels("owner=operator-controller"))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 10);

    assert_eq!(store.delete_all(name).await.unwrap(), 10);
    assert!(store.history(name).await.unwrap().releases.is_empty());

    delete(&cluster_extensions(&client), &ce).await;
    delete_namespace(&client, &ns).await;
}

/// An update right after our own write skips reading the index back and deletes chunks only
/// when the written record had some; the result is the same record as a plain update makes,
/// and a change by anyone else in between is a conflict, not overwritten.
#[tokio::test]
async fn updates_after_our_own_writes_give_the_same_records_and_never_overwrite_others() {
    let client = olm_e2e::shared().await.client().await;
    let ns = create_namespace(&client, "release-after").await;
    let (ce, owner) = owner(&client).await;
    let store = ReleaseStore::new(client.clone(), &ns);
    let api: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let chunks_of = |key: &'static str| {
        let api = api.clone();
        async move {
            api.list(&ListParams::default().labels(&secrets::chunks_label_selector(key)))
                .await
                .unwrap()
                .items
                .len()
        }
    };

    // Chunk Secrets beside the index, then an update after that write: the old chunks go,
    // new ones come, and the record reads back as updated.
    let mut big = large_release("after-ext", 3);
    let written = store
        .create_after(&big, &owner, 2_000, Some(&[]))
        .await
        .unwrap();
    let chunks = chunks_of("sh.helm.release.v1.after-ext.v1").await;
    assert!(chunks >= 1, "the record needs chunk Secrets for this test");
    history::set_status(&mut big, Status::SUPERSEDED, "Superseded");
    let written = store
        .update_after(&big, &owner, 2_005, Some(&written))
        .await
        .unwrap();
    assert_eq!(chunks_of("sh.helm.release.v1.after-ext.v1").await, chunks);
    // Created, replaced, and chunks deleted then created again: every write is recorded under
    // upstream's field manager, whoever's client made it.
    for secret in api
        .list(&ListParams::default().labels("owner=operator-controller"))
        .await
        .unwrap()
        .items
    {
        let mut managers: Vec<&str> = secret
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|m| m.manager.as_deref())
            .collect();
        managers.dedup();
        assert_eq!(
            managers,
            vec!["operator-controller"],
            "{:?}",
            secret.metadata.name
        );
    }
    let read = store.last("after-ext").await.unwrap().unwrap();
    assert_eq!(read.release.status(), Status::SUPERSEDED);
    let index = api.get("sh.helm.release.v1.after-ext.v1").await.unwrap();
    assert_eq!(
        (
            labels(&index)["createdAt"].as_str(),
            labels(&index)["modifiedAt"].as_str()
        ),
        ("2000", "2005")
    );

    // Someone else changes the index: an update after our stale write conflicts and leaves
    // their change in place.
    let mut theirs = index.clone();
    theirs
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("example.com/touched".into(), "yes".into());
    api.replace(
        &index.metadata.name.clone().unwrap(),
        &PostParams::default(),
        &theirs,
    )
    .await
    .unwrap();
    history::set_status(&mut big, Status::DEPLOYED, "Again");
    let stale = store
        .update_after(&big, &owner, 2_010, Some(&written))
        .await
        .expect_err("a conflict");
    assert!(stale.to_string().contains("replace"), "{stale}");
    let after = api.get("sh.helm.release.v1.after-ext.v1").await.unwrap();
    assert_eq!(
        after.metadata.annotations.unwrap_or_default()["example.com/touched"],
        "yes"
    );
    assert_eq!(
        chunks_of("sh.helm.release.v1.after-ext.v1").await,
        chunks,
        "a refused update deletes no chunk"
    );
    assert_eq!(
        store
            .last("after-ext")
            .await
            .unwrap()
            .unwrap()
            .release
            .status(),
        Status::SUPERSEDED
    );
    // Without a known write the update reads the record first and succeeds.
    store.update_after(&big, &owner, 2_015, None).await.unwrap();
    assert_eq!(
        store
            .last("after-ext")
            .await
            .unwrap()
            .unwrap()
            .release
            .status(),
        Status::DEPLOYED
    );

    assert_eq!(store.delete_all("after-ext").await.unwrap(), 1);
    delete(&cluster_extensions(&client), &ce).await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn damaged_records_are_reported_and_never_repaired() {
    let client = olm_e2e::shared().await.client().await;
    let ns = create_namespace(&client, "release-damaged").await;
    let (ce, owner) = owner(&client).await;
    let store = ReleaseStore::new(client.clone(), &ns);
    let api: Api<Secret> = Api::namespaced(client.clone(), &ns);

    // A record whose second chunk Secret is gone.
    store
        .create(&large_release("torn", 2), &owner, 1)
        .await
        .unwrap();
    let index = api.get("sh.helm.release.v1.torn.v1").await.unwrap();
    let names: Vec<String> =
        serde_json::from_slice(&index.data.as_ref().unwrap()["extraChunks"].0).unwrap();
    api.delete(&names[0], &Default::default()).await.unwrap();
    let err = store.installed("torn").await.unwrap_err();
    assert!(matches!(err, StoreError::Decode { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "failed to read release \"sh.helm.release.v1.torn.v1\": index secret \"sh.helm.release.v1.torn.v1\": failed to get chunk 2 secret {:?}: not found",
            names[0]
        )
    );
    assert!(!err.is_retryable());
    // history() lists it as damaged; nothing was deleted.
    let history = store.history("torn").await.unwrap();
    assert_eq!(history.damaged.len(), 1);
    assert!(
        api.get_opt("sh.helm.release.v1.torn.v1")
            .await
            .unwrap()
            .is_some()
    );
    for n in &names[1..] {
        assert!(api.get_opt(n).await.unwrap().is_some());
    }

    // A decompression bomb in an index Secret: refused at the limit, left in place.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &vec![b' '; 4 << 20]).unwrap();
    let bomb: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "sh.helm.release.v1.bomb.v1", "namespace": ns,
                     "labels": {"name": "bomb", "owner": "operator-controller", "status": "deployed", "version": "1",
                                "key": "sh.helm.release.v1.bomb.v1", "type": "index", "createdAt": "1"},
                     "ownerReferences": [owner]},
        "type": "operatorframework.io/index.v1",
        "data": {"chunk": ByteString(gz.finish().unwrap()), "extraChunks": ByteString(b"[]".to_vec())}
    }))
    .unwrap();
    api.create(&PostParams::default(), &bomb).await.unwrap();
    let small = store.clone().with_limits(DecodeLimits {
        max_decompressed: 1 << 20,
    });
    let err = small.installed("bomb").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("exceeds the limit of 1048576 bytes"),
        "{err}"
    );
    assert!(
        api.get_opt("sh.helm.release.v1.bomb.v1")
            .await
            .unwrap()
            .is_some()
    );

    delete(&cluster_extensions(&client), &ce).await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn discovered_scopes_render_upstreams_manifest() {
    // The fixture `fixture-one` (input and the record upstream's Helm path wrote for it): with
    // scopes from this API server's discovery, our chart and manifest are upstream's, byte for byte.
    let client = olm_e2e::shared().await.client().await;
    let data = olm_e2e::repo_root().join("operator-controller/core/tests/release_data");
    let input: serde_json::Value = serde_json::from_slice(
        &std::fs::read(data.join("upstream-input-fixture-one.json")).unwrap(),
    )
    .unwrap();
    let objects = input["objects"].as_array().unwrap().clone();
    let unstructured: Vec<usize> = serde_json::from_value(input["unstructured"].clone()).unwrap();

    let mut probe = objects.clone();
    probe.push(json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension"}));
    probe.push(json!({"apiVersion": "example.invalid/v1", "kind": "Widget"}));
    let scopes = discover_scopes(&client, &probe, std::time::Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(scopes.is_namespaced("v1", "ConfigMap"), Some(true));
    assert_eq!(
        scopes.is_namespaced("rbac.authorization.k8s.io/v1", "ClusterRole"),
        Some(false)
    );
    assert_eq!(
        scopes.is_namespaced("olm.operatorframework.io/v1", "ClusterExtension"),
        Some(false)
    );
    assert_eq!(scopes.is_namespaced("example.invalid/v1", "Widget"), None);

    let chart_objects: Vec<ChartObject> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            if unstructured.contains(&i) {
                ChartObject::unstructured(o)
            } else {
                ChartObject::typed(o)
            }
        })
        .collect();
    let annotations: BTreeMap<String, String> =
        serde_json::from_value(input["annotations"].clone()).unwrap();
    let context = PostRenderContext {
        release_namespace: input["installNamespace"].as_str().unwrap().to_string(),
        owner_name: input["extensionName"].as_str().unwrap().to_string(),
        owner_uid: input["extensionUID"].as_str().unwrap().to_string(),
    };
    let (chart, manifest) =
        render::render_release(&chart_objects, &annotations, &context, &scopes).unwrap();
    let upstream =
        secrets::decode_release(&fixture("fixture-one.v1"), &[], DecodeLimits::default())
            .unwrap()
            .release;
    assert_eq!(Some(&chart), upstream.chart.as_ref());
    assert_eq!(manifest, upstream.manifest);

    // A kind the server does not serve fails as Helm's builder fails.
    let widget = ChartObject::unstructured(
        &json!({"apiVersion": "example.invalid/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    );
    let err = render::render_release(&[widget], &annotations, &context, &scopes).unwrap_err();
    assert_eq!(
        err.to_string(),
        "resource mapping not found for name: \"w\" namespace: \"\" from \"\": no matches for kind \"Widget\" in version \"example.invalid/v1\"\nensure CRDs are installed first"
    );
}

/// What a history says, to compare a cached answer with a listed one.
fn summary(history: &operator_controller::storage::History) -> Vec<(i64, String, String)> {
    history
        .releases
        .iter()
        .map(|r| {
            (
                r.release.version,
                r.index_labels.get("status").cloned().unwrap_or_default(),
                r.release.manifest.clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_store_with_the_index_cache_answers_as_a_listing_store_through_our_writes_and_anyone_elses()
 {
    let client = olm_e2e::shared().await.client().await;
    let ns = create_namespace(&client, "release-cache").await;
    let (ce, owner) = owner(&client).await;
    let stop = olm_runtime::shutdown::CancellationToken::new();
    let (cache, watch) =
        operator_controller::storage::IndexCache::watch(client.clone(), &ns, stop.clone());
    let watching = tokio::spawn(watch);
    let cached = ReleaseStore::new(client.clone(), &ns).with_index_cache(cache);
    let listing = ReleaseStore::new(client.clone(), &ns);
    let name = "cached-ext";
    // Right after our own writes, the cached store answers what a list finds (read-your-writes:
    // until its watch shows a write, it lists).
    let agree_now = |what: &'static str| {
        let (cached, listing) = (cached.clone(), listing.clone());
        async move {
            let a = cached.history(name).await.unwrap();
            let b = listing.history(name).await.unwrap();
            assert_eq!(a.records, b.records, "{what}");
            assert_eq!(summary(&a), summary(&b), "{what}");
        }
    };
    agree_now("no records").await;

    // Our writes: install, then marked deployed (a small release: the index holds it all).
    let mut release = large_release(name, 0);
    history::set_status(&mut release, Status::PENDING_INSTALL, "Install");
    let written = cached
        .create_after(&release, &owner, 1_800_000_000, Some(&[]))
        .await
        .unwrap();
    agree_now("the created record").await;
    history::set_status(&mut release, Status::DEPLOYED, history::INSTALL_COMPLETE);
    cached
        .update_after(&release, &owner, 1_800_000_001, Some(&written))
        .await
        .unwrap();
    agree_now("the record marked deployed").await;
    assert_eq!(
        cached
            .installed(name)
            .await
            .unwrap()
            .map(|r| r.release.version),
        Some(1)
    );

    // Someone else's write (the listing store stands for another writer, as upstream would).
    history::set_status(&mut release, Status::SUPERSEDED, "superseded by hand");
    listing
        .update(&release, &owner, 1_800_000_002)
        .await
        .unwrap();
    // Someone else's write shows once the watch delivers it.
    crate::support::eventually("a record changed by someone else", || async {
        let a = cached.history(name).await.unwrap();
        (a.records == [(1, "superseded".to_owned())]).then_some(())
    })
    .await;
    assert_eq!(cached.installed(name).await.unwrap(), None);
    assert_eq!(
        cached.history(name).await.unwrap().records,
        [(1, "superseded".to_owned())]
    );

    // Deleted by us: the history is empty again.
    cached.delete_all(name).await.unwrap();
    agree_now("every record deleted").await;
    assert!(cached.history(name).await.unwrap().records.is_empty());

    stop.cancel();
    watching.await.unwrap();
    delete(&cluster_extensions(&client), &ce).await;
    delete_namespace(&client, &ns).await;
}
