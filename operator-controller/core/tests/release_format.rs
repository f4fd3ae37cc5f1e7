//! Release records against what upstream's code writes (`tests/release_data/`, see its README)
//! and against helm-operator-plugins' documented chunked format (its `pkg/storage` driver's Secret layout).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use olm_operator_core::release::history::{self, NewRelease};
use olm_operator_core::release::model::Release;
use olm_operator_core::release::render::{self, ChartObject, PostRenderContext};
use olm_operator_core::release::secrets::{self, DecodeError, DecodeLimits, EncodeError, Stamps};
use serde_json::Value;

fn data_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("tests/release_data")
}

fn load_secret(name: &str) -> Secret {
    let text = std::fs::read(data_dir().join(format!("upstream-index-{name}.json"))).unwrap();
    serde_json::from_slice(&text).unwrap()
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn chunk_of(secret: &Secret) -> Vec<u8> {
    secret.data.as_ref().unwrap()["chunk"].0.clone()
}

/// Scopes of the kinds in the fixtures, as discovery reports them.
fn scopes(_api_version: &str, kind: &str) -> Option<bool> {
    match kind {
        "ClusterRole" | "ClusterRoleBinding" | "CustomResourceDefinition" | "Namespace" => {
            Some(false)
        }
        "ConfigMap" | "Secret" | "Service" | "ServiceAccount" | "Deployment" | "Role"
        | "RoleBinding" => Some(true),
        _ => None,
    }
}

struct Input {
    name: String,
    uid: String,
    namespace: String,
    objects: Vec<Value>,
    unstructured: Vec<usize>,
    annotations: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
}

fn input() -> Input {
    let v: Value = serde_json::from_slice(
        &std::fs::read(data_dir().join("upstream-input-fixture-one.json")).unwrap(),
    )
    .unwrap();
    Input {
        name: v["extensionName"].as_str().unwrap().to_string(),
        uid: v["extensionUID"].as_str().unwrap().to_string(),
        namespace: v["installNamespace"].as_str().unwrap().to_string(),
        objects: v["objects"].as_array().unwrap().clone(),
        unstructured: serde_json::from_value(v["unstructured"].clone()).unwrap(),
        annotations: serde_json::from_value(v["annotations"].clone()).unwrap(),
        labels: serde_json::from_value(v["storageLabels"].clone()).unwrap(),
    }
}

#[test]
fn an_upstream_install_is_read_as_installed_state() {
    let index = load_secret("fixture-one.v1");
    let stored = secrets::decode_release(&index, &[], DecodeLimits::default()).unwrap();
    let r = &stored.release;
    assert_eq!(r.name, "fixture-one");
    assert_eq!(r.version, 1);
    assert_eq!(r.status(), "deployed");
    assert_eq!(r.namespace, "fixture-one");
    let installed = history::installed_bundle(std::slice::from_ref(r)).unwrap();
    assert_eq!(installed.name, "fixture.v1.0.0");
    assert_eq!(installed.package, "fixture");
    assert_eq!(installed.version, "1.0.0");
    assert!(
        installed
            .image
            .starts_with("quay.io/example/fixture-bundle@sha256:")
    );
    assert_eq!(installed.bundle_release, None);
    // What OpenShift gating reads.
    assert_eq!(
        r.chart_annotation("olm.properties").unwrap(),
        r#"[{"type":"olm.maxOpenShiftVersion","value":4.1},{"type":"olm.package","value":{"packageName":"fixture","version":"1.0.0"}}]"#
    );
    // Release labels exclude the index Secret's system labels, which stay available.
    assert!(!r.labels.as_ref().unwrap().contains_key("modifiedAt"));
    assert_eq!(
        stored.index_labels["modifiedAt"],
        stored.index_labels["createdAt"]
    );
    assert_eq!(
        stored.secret_names,
        vec!["sh.helm.release.v1.fixture-one.v1"]
    );
}

#[test]
fn decoding_and_reencoding_an_upstream_record_gives_the_same_bytes() {
    for name in [
        "fixture-one.v1",
        "fixture-ext.v1",
        "fixture-ext.v2",
        "fixture-ext.v3",
    ] {
        let index = load_secret(name);
        let json = gunzip(&chunk_of(&index));
        let stored = secrets::decode_release(&index, &[], DecodeLimits::default()).unwrap();
        assert_eq!(
            String::from_utf8(stored.release.to_go_json().unwrap()).unwrap(),
            String::from_utf8(json).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn the_chart_manifest_and_record_of_an_install_match_upstream_byte_for_byte() {
    let input = input();
    let index = load_secret("fixture-one.v1");
    let upstream_json = gunzip(&chunk_of(&index));
    let upstream = secrets::decode_release(&index, &[], DecodeLimits::default())
        .unwrap()
        .release;
    let upstream_files = upstream.chart.as_ref().unwrap().files.clone().unwrap();

    // Each object is written exactly as Go writes it: sorted keys for the ones upstream keeps
    // unstructured, Go's struct field order for the typed ones.
    let objects: Vec<ChartObject> = input
        .objects
        .iter()
        .enumerate()
        .map(|(i, object)| {
            let go_bytes = upstream_files[i].data.clone().unwrap();
            let ours = if input.unstructured.contains(&i) {
                ChartObject::unstructured(object)
            } else {
                ChartObject::typed(object)
            };
            assert_eq!(
                String::from_utf8(ours.json.clone()).unwrap(),
                String::from_utf8(go_bytes).unwrap(),
                "object {i}"
            );
            ours
        })
        .collect();

    let context = PostRenderContext {
        release_namespace: input.namespace.clone(),
        owner_name: input.name.clone(),
        owner_uid: input.uid.clone(),
    };
    let (chart, manifest) =
        render::render_release(&objects, &input.annotations, &context, &scopes).unwrap();
    assert_eq!(&chart, upstream.chart.as_ref().unwrap());
    assert_eq!(manifest, upstream.manifest);

    // The record: install (pending), then deployed, with upstream's timestamps.
    let first = upstream.info.as_ref().unwrap().first_deployed;
    let mut release = history::install_release(NewRelease {
        name: &input.name,
        namespace: &input.namespace,
        chart,
        manifest,
        labels: input.labels.clone(),
        now: Timestamp::UNIX_EPOCH,
    });
    assert_eq!(release.status(), "pending-install");
    let info = release.info.as_mut().unwrap();
    info.first_deployed = first;
    info.last_deployed = first;
    history::set_status(&mut release, "deployed", history::INSTALL_COMPLETE);
    assert_eq!(
        String::from_utf8(release.to_go_json().unwrap()).unwrap(),
        String::from_utf8(upstream_json).unwrap()
    );
}

/// `testdata/<relative>` (see olm-testdata).
fn testdata(relative: &str) -> PathBuf {
    olm_testdata::path(relative)
}

#[test]
fn a_real_bundle_rendering_gives_upstreams_chart_and_manifest() {
    // upstream's rendering of webhook-operator.v0.0.5 (`all-webhook-types`, from the conformance
    // data), installed by upstream's Helm path as `wh-ext` (every object typed, as upstream's
    // renderer returns them): CRD with a conversion webhook, two ClusterRoles and bindings, a
    // Deployment, a Service, a ServiceAccount, and webhook configurations carrying a namespace
    // (kept in the chart file, dropped from the manifest as the objects are cluster-scoped).
    let dir =
        testdata("conformance/render/expected-manifests/webhook-operator.v0.0.5/all-webhook-types");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let objects: Vec<ChartObject> = files
        .iter()
        .map(|f| {
            let value: Value =
                serde_saphyr::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            ChartObject::typed(&value)
        })
        .collect();
    let index = load_secret("wh-ext.v1");
    let upstream_json = gunzip(&chunk_of(&index));
    let upstream = secrets::decode_release(&index, &[], DecodeLimits::default())
        .unwrap()
        .release;
    let scopes = |_: &str, kind: &str| match kind {
        "ClusterRole"
        | "ClusterRoleBinding"
        | "CustomResourceDefinition"
        | "ValidatingWebhookConfiguration"
        | "MutatingWebhookConfiguration" => Some(false),
        _ => Some(true),
    };
    let context = PostRenderContext {
        release_namespace: "webhook-system".into(),
        owner_name: "wh-ext".into(),
        owner_uid: "cccccccc-0000-4000-8000-000000000001".into(),
    };
    let annotations = BTreeMap::from([("olm.properties".to_string(), "[]".to_string())]);
    let (chart, manifest) =
        render::render_release(&objects, &annotations, &context, &scopes).unwrap();
    assert_eq!(&chart, upstream.chart.as_ref().unwrap());
    assert_eq!(manifest, upstream.manifest);
    for line in manifest.lines() {
        let object: Value = serde_json::from_str(line).unwrap();
        if object["kind"]
            .as_str()
            .unwrap()
            .ends_with("WebhookConfiguration")
        {
            assert!(object["metadata"].get("namespace").is_none(), "{line}");
        }
    }
    let mut release = upstream.clone();
    release.chart = Some(chart);
    release.manifest = manifest;
    assert_eq!(
        String::from_utf8(release.to_go_json().unwrap()).unwrap(),
        String::from_utf8(upstream_json).unwrap()
    );
}

#[test]
fn an_upgraded_history_reads_like_helm_reads_it() {
    let releases: Vec<Release> = ["fixture-ext.v1", "fixture-ext.v2", "fixture-ext.v3"]
        .iter()
        .map(|n| {
            secrets::decode_release(&load_secret(n), &[], DecodeLimits::default())
                .unwrap()
                .release
        })
        .collect();
    let statuses: Vec<&str> = releases.iter().map(Release::status).collect();
    assert_eq!(statuses, ["superseded", "superseded", "deployed"]);
    assert_eq!(history::last(&releases).unwrap().version, 3);
    let installed = history::installed_bundle(&releases).unwrap();
    assert_eq!(
        (installed.release_version, installed.name.as_str()),
        (3, "fixture.v1.2.0")
    );
    // Helm merges labels: v3 did not set bundle-release, v2's "2" stayed.
    assert_eq!(installed.bundle_release.as_deref(), Some("2"));
    // A superseded record keeps its description; upgrades say "Upgrade complete".
    let desc: Vec<&str> = releases
        .iter()
        .map(|r| r.info.as_ref().unwrap().description.as_str())
        .collect();
    assert_eq!(
        desc,
        ["Install complete", "Upgrade complete", "Upgrade complete"]
    );
    // Every upgrade keeps the first deployment time.
    let first = releases[0].info.as_ref().unwrap().first_deployed;
    assert!(
        releases
            .iter()
            .all(|r| r.info.as_ref().unwrap().first_deployed == first)
    );

    // Our upgrade from v2 reproduces v3's labels, number, namespace and first deployment time.
    let v3 = &releases[2];
    let (planned, from) = history::upgrade_release(
        &releases[..2],
        NewRelease {
            name: "fixture-ext",
            namespace: "ignored: an upgrade keeps the release's namespace",
            chart: v3.chart.clone().unwrap(),
            manifest: v3.manifest.clone(),
            labels: history::bundle_labels(
                "fixture",
                "fixture.v1.2.0",
                "1.2.0",
                &installed.image,
                None,
            ),
            now: Timestamp::UNIX_EPOCH,
        },
    )
    .unwrap();
    assert_eq!(from, 2);
    assert_eq!(planned.version, 3);
    assert_eq!(planned.namespace, "fixture");
    assert_eq!(planned.labels, v3.labels);
    assert_eq!(planned.status(), "pending-upgrade");
    assert_eq!(planned.info.as_ref().unwrap().first_deployed, first);
}

#[test]
fn pending_and_empty_histories_do_not_upgrade() {
    let mut r = Release {
        name: "x".into(),
        version: 4,
        ..Default::default()
    };
    history::set_status(&mut r, "pending-upgrade", "Preparing upgrade");
    let new = || NewRelease {
        name: "x",
        namespace: "ns",
        chart: Default::default(),
        manifest: String::new(),
        labels: BTreeMap::new(),
        now: Timestamp::UNIX_EPOCH,
    };
    assert_eq!(
        history::upgrade_release(std::slice::from_ref(&r), new())
            .unwrap_err()
            .to_string(),
        "another operation (install/upgrade/rollback) is in progress"
    );
    assert_eq!(
        history::upgrade_release(&[], new())
            .unwrap_err()
            .to_string(),
        "\"x\" has no deployed releases"
    );
    // A failed last release with no deployed one is upgraded from.
    history::set_status(&mut r, "failed", "Upgrade \"x\" failed: boom");
    assert_eq!(history::upgrade_release(&[r], new()).unwrap().0.version, 5);
}

fn release_with_status(version: i64, status: &str) -> Release {
    let mut r = Release {
        name: "x".into(),
        version,
        ..Default::default()
    };
    history::set_status(&mut r, status, "");
    r
}

#[test]
fn pruning_keeps_max_history_and_never_the_deployed_release() {
    // Helm's removeLeastRecent(name, 9) before writing the 11th: one goes, the oldest.
    let releases: Vec<Release> = (1..=10)
        .map(|v| release_with_status(v, if v == 10 { "deployed" } else { "superseded" }))
        .collect();
    assert_eq!(history::prune_before_create(&releases, 10), vec![1]);
    // The deployed one is the oldest: it stays, the next oldest go.
    let mut releases: Vec<Release> = (1..=12).map(|v| release_with_status(v, "failed")).collect();
    releases[0] = release_with_status(1, "deployed");
    assert_eq!(history::prune_before_create(&releases, 10), vec![2, 3, 4]);
    assert!(history::prune_before_create(&releases[..5], 10).is_empty());
}

fn stamps() -> Stamps {
    Stamps {
        created_at: 1_795_471_639,
        modified_at: Some(1_795_471_640),
    }
}

#[test]
fn our_secrets_have_upstreams_names_labels_types_and_owners() {
    let upstream_index = load_secret("fixture-one.v1");
    let release = secrets::decode_release(&upstream_index, &[], DecodeLimits::default())
        .unwrap()
        .release;
    let encoded = secrets::encode_release(&release).unwrap();
    assert_eq!(encoded.key, "sh.helm.release.v1.fixture-one.v1");
    assert_eq!(encoded.chunk_count(), 1);
    let owner = secrets::cluster_extension_owner_reference(
        "fixture-one",
        "5d2c6a54-0f6e-4b7e-9a51-8d0c3f1e2a10",
    );
    let ours = encoded.index_secret("olmv1-system", &owner, stamps());
    // Everything but the compressed bytes and timestamps equals what upstream wrote.
    assert_eq!(ours.metadata.name, upstream_index.metadata.name);
    assert_eq!(ours.metadata.namespace, upstream_index.metadata.namespace);
    assert_eq!(
        ours.metadata.owner_references,
        upstream_index.metadata.owner_references
    );
    assert_eq!(ours.type_, upstream_index.type_);
    assert_eq!(ours.immutable, upstream_index.immutable);
    let mut labels = ours.metadata.labels.clone().unwrap();
    let mut theirs = upstream_index.metadata.labels.clone().unwrap();
    for l in [&mut labels, &mut theirs] {
        l.remove("createdAt");
        l.remove("modifiedAt");
    }
    assert_eq!(labels, theirs);
    assert_eq!(ours.data.as_ref().unwrap()["extraChunks"].0, b"[]");
    // The gzip header is Go's (no name, no mtime, XFL 2 for best compression, OS unknown), and
    // the payload is the same JSON.
    assert_eq!(&chunk_of(&ours)[..10], &chunk_of(&upstream_index)[..10]);
    assert_eq!(gunzip(&chunk_of(&ours)), gunzip(&chunk_of(&upstream_index)));
    // Upstream's queries select it.
    assert_eq!(
        secrets::history_label_selector("fixture-one"),
        "name=fixture-one,owner=operator-controller,type=index"
    );
    assert_eq!(
        secrets::index_field_selector(),
        "type=operatorframework.io/index.v1"
    );
}

/// Bytes gzip cannot shrink (so the record needs several chunks).
fn noise(len: usize, seed: u64) -> String {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'!' + (x % 90) as u8)
        })
        .collect()
}

fn big_release(bytes: usize) -> Release {
    let mut r = history::install_release(NewRelease {
        name: "big",
        namespace: "big-ns",
        chart: Default::default(),
        manifest: noise(bytes, 7),
        labels: history::bundle_labels("p", "p.v1", "1.0.0", "img", None),
        now: Timestamp::UNIX_EPOCH,
    });
    history::set_status(&mut r, "deployed", history::INSTALL_COMPLETE);
    r
}

#[test]
fn a_large_release_spans_several_chunks_and_reads_back() {
    let release = big_release(3 * secrets::CHUNK_SIZE);
    let encoded = secrets::encode_release(&release).unwrap();
    assert!(encoded.chunk_count() >= 3, "{}", encoded.chunk_count());
    let owner = secrets::cluster_extension_owner_reference("big", "uid-1");
    let index = encoded.index_secret("olmv1-system", &owner, stamps());
    let chunks = encoded.chunk_secrets("olmv1-system", "index-uid", Some(stamps().created_at));
    assert_eq!(chunks.len(), encoded.chunk_count() - 1);
    for c in &chunks {
        assert_eq!(c.type_.as_deref(), Some("operatorframework.io/chunk.v1"));
        assert_eq!(c.immutable, Some(true));
        let data = chunk_of(c);
        assert!(data.len() <= secrets::CHUNK_SIZE);
        assert_eq!(
            c.metadata.name.as_deref().unwrap(),
            secrets::chunk_name(&encoded.key, &data)
        );
        let labels = c.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["type"], "chunk");
        assert_eq!(labels["key"], encoded.key);
        let owner = &c.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("Secret", encoded.key.as_str(), "index-uid")
        );
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(false))
        );
    }
    let names: Vec<String> =
        serde_json::from_slice(&index.data.as_ref().unwrap()["extraChunks"].0).unwrap();
    assert_eq!(names, encoded.extra_chunk_names());
    assert_eq!(chunk_of(&index).len(), secrets::CHUNK_SIZE);
    let stored = secrets::decode_release(&index, &chunks, DecodeLimits::default()).unwrap();
    assert_eq!(stored.release, release);
    assert_eq!(stored.secret_names.len(), chunks.len() + 1);
}

#[test]
fn a_release_over_the_chunk_limit_is_refused() {
    // The same rule at a smaller scale: more than 11 chunks of 4 KiB.
    let limits = secrets::ChunkLimits {
        chunk_size: 4096,
        max_chunks: 11,
    };
    let release = big_release(12 * 4096 * 5 / 4);
    let Err(err) = secrets::encode_release_with(&release, limits) else {
        panic!("a record of more than 11 chunks was accepted");
    };
    let EncodeError::TooLarge { chunks, max, .. } = &err else {
        panic!("unexpected error {err}");
    };
    assert!(*chunks > 11 && *max == 11);
    assert_eq!(
        err.to_string(),
        format!(
            "release too large: \"big\" requires {chunks} chunks, which exceeds the maximum of 11"
        )
    );
}

fn secret(name: &str, type_: &str, data: Vec<(&str, Vec<u8>)>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        type_: Some(type_.to_string()),
        data: Some(
            data.into_iter()
                .map(|(k, v)| (k.to_string(), ByteString(v)))
                .collect(),
        ),
        ..Default::default()
    }
}

#[test]
fn an_upstream_record_split_over_chunk_secrets_reads_back() {
    // Go's gzip stream, cut as helm-operator-plugins cuts it (here in three), stored in an index
    // and two chunk Secrets named `<key>-<base32(fnv64a(chunk))>`.
    let upstream = load_secret("fixture-one.v1");
    let gz = chunk_of(&upstream);
    let key = "sh.helm.release.v1.fixture-one.v1";
    let (a, rest) = gz.split_at(gz.len() / 3);
    let (b, c) = rest.split_at(rest.len() / 2);
    let names = [secrets::chunk_name(key, b), secrets::chunk_name(key, c)];
    let index = secret(
        key,
        secrets::INDEX_SECRET_TYPE,
        vec![
            ("chunk", a.to_vec()),
            ("extraChunks", serde_json::to_vec(&names).unwrap()),
        ],
    );
    let chunks = [
        secret(
            &names[1],
            secrets::CHUNK_SECRET_TYPE,
            vec![("chunk", c.to_vec())],
        ),
        secret(
            &names[0],
            secrets::CHUNK_SECRET_TYPE,
            vec![("chunk", b.to_vec())],
        ),
    ];
    let got = secrets::decode_release(&index, &chunks, DecodeLimits::default()).unwrap();
    let want = secrets::decode_release(&upstream, &[], DecodeLimits::default()).unwrap();
    assert_eq!(got.release, want.release);
    assert_eq!(
        got.secret_names,
        vec![key.to_string(), names[0].clone(), names[1].clone()]
    );
}

#[test]
fn damaged_records_give_errors_naming_the_secret() {
    let upstream = load_secret("fixture-one.v1");
    let gz = chunk_of(&upstream);
    let key = "sh.helm.release.v1.fixture-one.v1";
    let decode = |index: &Secret, chunks: &[Secret]| {
        secrets::decode_release(index, chunks, DecodeLimits::default()).unwrap_err()
    };

    // A listed chunk that does not exist.
    let index = secret(
        key,
        secrets::INDEX_SECRET_TYPE,
        vec![
            ("chunk", gz.clone()),
            ("extraChunks", br#"["gone"]"#.to_vec()),
        ],
    );
    assert_eq!(
        decode(&index, &[]).to_string(),
        format!("index secret {key:?}: failed to get chunk 2 secret \"gone\": not found")
    );
    // A chunk Secret without data.
    let empty = secret("gone", secrets::CHUNK_SECRET_TYPE, vec![]);
    assert!(matches!(
        decode(&index, &[empty]),
        DecodeError::MissingChunkData { position: 2, .. }
    ));
    // No extraChunks, or not a list of names.
    let index = secret(key, secrets::INDEX_SECRET_TYPE, vec![("chunk", gz.clone())]);
    assert_eq!(
        decode(&index, &[]).to_string(),
        format!("index secret {key:?} missing chunks data")
    );
    let index = secret(
        key,
        secrets::INDEX_SECRET_TYPE,
        vec![("chunk", gz.clone()), ("extraChunks", b"{".to_vec())],
    );
    assert!(matches!(
        decode(&index, &[]),
        DecodeError::BadExtraChunks { .. }
    ));
    // More than eleven chunks.
    let many: Vec<String> = (0..11).map(|i| format!("c{i}")).collect();
    let index = secret(
        key,
        secrets::INDEX_SECRET_TYPE,
        vec![
            ("chunk", gz.clone()),
            ("extraChunks", serde_json::to_vec(&many).unwrap()),
        ],
    );
    assert_eq!(
        decode(&index, &[]).to_string(),
        format!(
            "release too large: {key:?} consists of 12 chunks, which exceeds the maximum of 11"
        )
    );
    // Truncated gzip, not gzip, and gzip of something that is not a release.
    for bad in [gz[..gz.len() / 2].to_vec(), b"not gzip".to_vec()] {
        let index = secret(
            key,
            secrets::INDEX_SECRET_TYPE,
            vec![("chunk", bad), ("extraChunks", b"[]".to_vec())],
        );
        let err = decode(&index, &[]);
        assert!(matches!(err, DecodeError::Gzip { .. }), "{err}");
        assert!(err.to_string().starts_with(&format!(
            "index secret {key:?}: failed to decompress release"
        )));
    }
    let mut gz_garbage = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz_garbage, b"[1,2]").unwrap();
    let index = secret(
        key,
        secrets::INDEX_SECRET_TYPE,
        vec![
            ("chunk", gz_garbage.finish().unwrap()),
            ("extraChunks", b"[]".to_vec()),
        ],
    );
    assert!(matches!(decode(&index, &[]), DecodeError::Json { .. }));
}

#[test]
fn a_gzip_bomb_stops_at_the_decompression_limit() {
    // 8 MiB of zeros compresses to a few KiB.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..8 {
        std::io::Write::write_all(&mut gz, &zeros).unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < secrets::CHUNK_SIZE);
    let index = secret(
        "k",
        secrets::INDEX_SECRET_TYPE,
        vec![("chunk", bomb), ("extraChunks", b"[]".to_vec())],
    );
    let err = secrets::decode_release(
        &index,
        &[],
        DecodeLimits {
            max_decompressed: 2 << 20,
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "index secret \"k\": release too large: its decompressed JSON exceeds the limit of 2097152 bytes"
    );
}

#[test]
fn extra_labels_and_system_labels_in_the_json_are_tolerated() {
    // Upstream's index carries modifiedAt; someone else may add labels. Release labels never
    // include system labels, even if a writer put them in the JSON.
    let mut r = big_release(10);
    r.labels
        .as_mut()
        .unwrap()
        .insert("custom".into(), "yes".into());
    let encoded = secrets::encode_release(&r).unwrap();
    let owner = secrets::cluster_extension_owner_reference("big", "u");
    let mut index = encoded.index_secret("ns", &owner, stamps());
    index
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("team".into(), "a".into());
    let stored = secrets::decode_release(&index, &[], DecodeLimits::default()).unwrap();
    assert_eq!(stored.release.label("custom"), Some("yes"));
    assert_eq!(stored.index_labels["team"], "a");

    let mut with_system = r.clone();
    with_system
        .labels
        .as_mut()
        .unwrap()
        .insert("owner".into(), "helm".into());
    assert!(
        matches!(secrets::encode_release(&with_system), Err(EncodeError::SystemLabel(l)) if l == "owner")
    );
}

#[test]
fn release_state_follows_upstreams_get_release_state() {
    use history::ReleaseState;
    assert_eq!(
        history::release_state(&[], "m").unwrap(),
        ReleaseState::NeedsInstall
    );
    let mut r = release_with_status(3, "deployed");
    r.manifest = "m".into();
    let older = release_with_status(2, "superseded");
    let both = [older.clone(), r.clone()];
    assert_eq!(
        history::release_state(&both, "m").unwrap(),
        ReleaseState::Unchanged
    );
    assert_eq!(
        history::release_state(&both, "n").unwrap(),
        ReleaseState::NeedsUpgrade
    );
    for status in ["failed", "superseded"] {
        let mut x = r.clone();
        history::set_status(&mut x, status, "");
        assert_eq!(
            history::release_state(&[x], "m").unwrap(),
            ReleaseState::NeedsUpgrade,
            "{status}"
        );
    }
    let mut pending = r.clone();
    history::set_status(&mut pending, "pending-upgrade", "Preparing upgrade");
    assert!(history::release_state(&[older, pending], "m").is_err());
}

#[test]
fn an_interrupted_install_is_marked_failed_and_upgraded_from() {
    let mut stuck = history::install_release(NewRelease {
        name: "x",
        namespace: "ns",
        chart: Default::default(),
        manifest: "m".into(),
        labels: BTreeMap::new(),
        now: Timestamp::UNIX_EPOCH,
    });
    assert!(history::release_state(std::slice::from_ref(&stuck), "m").is_err());
    assert!(history::interrupt_pending(&mut stuck));
    assert!(!history::interrupt_pending(&mut stuck));
    assert_eq!(stuck.status(), "failed");
    assert_eq!(
        history::release_state(std::slice::from_ref(&stuck), "m").unwrap(),
        history::ReleaseState::NeedsUpgrade
    );
    let (next, from) = history::upgrade_release(
        std::slice::from_ref(&stuck),
        NewRelease {
            name: "x",
            namespace: "ns",
            chart: Default::default(),
            manifest: "m".into(),
            labels: BTreeMap::new(),
            now: Timestamp::UNIX_EPOCH,
        },
    )
    .unwrap();
    assert_eq!((next.version, from), (2, 1));
}
