//! olm-image against a real registry (Debian docker-registry on 127.0.0.1): tags and digests,
//! indexes, labels, corrupted and hostile content, outages, re-tagging, auth, TLS and the cache.
//! Each test starts its own registry; a missing registry binary fails the test with a message
//! saying how to get it.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use olm_e2e::images::{self, ImageFixture, catalog_image};
use olm_e2e::registry::{Registry, RegistryOptions};
use olm_image::labels::{BUNDLE_MEDIATYPE_LABEL, BUNDLE_PACKAGE_LABEL, CATALOG_CONFIGS_LABEL};
use olm_image::push::{ImageSpec, Layer, Pusher, catalog_labels};
use olm_image::{
    ConditionError, DockerConfig, ExtractErrorKind, ExtractFilter, ImageError, ImageErrorKind,
    Platform, Puller, PullerConfig,
};

async fn registry() -> Registry {
    Registry::start().await.unwrap_or_else(|e| panic!("{e}"))
}

fn pusher(registry: &Registry) -> Pusher {
    images::pusher(registry).unwrap()
}

fn puller(registry: &Registry, cache: &Path) -> Puller {
    Puller::new(registry.puller_config(cache)).unwrap()
}

/// The catalog most tests pull: one file in its FBC, pushed as `catalogs/test:v1`.
async fn test_catalog() -> ImageFixture {
    ImageFixture::catalog("catalogs/test:v1", &[("a.json", "{}")]).await
}

fn tree(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"));
                walk(base, &e.path(), out);
            } else {
                out.insert(rel);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

fn set<const N: usize>(items: [&str; N]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The digests cached for `owner` (complete entries only).
fn cached_digests(cache: &Path, owner: &str) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(cache.join(owner))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("sha256:"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Directories in the cache that are not a complete entry (staging of unfinished pulls).
fn staging_left(cache: &Path) -> usize {
    fs::read_dir(cache.join(".shared"))
        .map(|rd| {
            rd.filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn catalog_pulled_by_tag_extracts_only_the_configs_directory() {
    let f = ImageFixture::catalog("catalogs/test:v1", &[("pkg/catalog.json", "{}")]).await;
    let unpacked = f
        .puller()
        .pull("test-catalog", &f.reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert_eq!(unpacked.digest, f.pushed.digest);
    assert_eq!(
        unpacked.digest_ref,
        format!("{}/catalogs/test@{}", f.registry.host(), f.pushed.digest)
    );
    assert!(unpacked.fresh);
    assert_eq!(unpacked.labels[CATALOG_CONFIGS_LABEL], "/configs");
    assert_eq!(
        tree(&unpacked.dir),
        set(["configs/", "configs/pkg/", "configs/pkg/catalog.json"])
    );
    assert_eq!(unpacked.content_dir, unpacked.dir.join("configs"));
    assert_eq!(
        unpacked.dir,
        f.cache
            .path()
            .join(".shared/catalog-linux-amd64")
            .join(&f.pushed.digest)
            .join("fs")
    );
    assert_eq!(
        fs::read_dir(f.cache.path().join("test-catalog"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect::<Vec<_>>(),
        vec![f.pushed.digest.clone()],
        "the owner holds its record only"
    );
}

/// Every object of a catalog tree, walked on disk or from a pack.
fn objects(
    walk: impl FnOnce(
        &mut dyn FnMut(olm_api::fbc::Meta) -> Result<(), olm_api::fbc::WalkError>,
    ) -> Result<(), olm_api::fbc::WalkError>,
) -> Vec<(String, String, Vec<u8>)> {
    let mut out = Vec::new();
    walk(&mut |m| {
        out.push((m.schema, m.name, m.blob));
        Ok(())
    })
    .unwrap();
    out
}

#[tokio::test]
async fn a_catalog_packed_by_its_pull_walks_as_its_directory_and_is_reused_from_the_cache() {
    let fbc = tempfile::tempdir().unwrap();
    let files = [
        ("b/catalog.yaml", "schema: olm.package\nname: b\n"),
        ("a/catalog.json", r#"{"schema":"olm.package","name":"a"}"#),
        (
            "a-z/catalog.json",
            r#"{"schema":"olm.package","name":"a-z"}"#,
        ),
        (
            "ignored/catalog.json",
            r#"{"schema":"olm.package","name":"ignored"}"#,
        ),
        (".indexignore", "ignored\n"),
    ];
    for (path, text) in files {
        let path = fbc.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let spec = ImageSpec {
        layers: vec![Layer::from_dir(fbc.path(), "configs").unwrap()],
        labels: catalog_labels("/configs"),
        platform: Platform::default(),
    };
    let f = ImageFixture::image("catalogs/packed:v1", &spec).await;
    let unpacked = f
        .puller()
        .pull("cat", &f.reference, ExtractFilter::CatalogPack)
        .await
        .unwrap();
    let pack = unpacked.pack.clone().expect("packed");
    assert!(unpacked.fresh);
    assert!(!unpacked.content_dir.exists(), "nothing extracted to disk");
    let packed = olm_api::fbc::packed::PackedCatalog::open(
        unpacked.content_dir.clone(),
        &pack.pack,
        &pack.listing,
    )
    .unwrap();
    let from_pack = objects(|f| olm_api::fbc::packed::walk_metas_packed_parallel(&packed, 2, f));
    let names: Vec<&str> = from_pack.iter().map(|(_, name, _)| name.as_str()).collect();
    assert_eq!(names, ["a", "a-z", "b"]);
    assert_eq!(
        from_pack,
        objects(|f| olm_api::fbc::walk_metas_dir(fbc.path(), f))
    );

    // A new puller on the same cache finds the pack without downloading anything.
    let again = f
        .puller()
        .pull("cat", &f.pushed.digest_ref, ExtractFilter::CatalogPack)
        .await
        .unwrap();
    assert!(!again.fresh);
    assert_eq!(again.pack, Some(pack));
}

#[tokio::test]
async fn a_catalog_a_pack_cannot_hold_is_extracted_to_disk() {
    use tar::EntryType::{Regular, Symlink};
    // A symlink inside the catalog directory, kept by the disk extraction.
    let layer = Layer::gzip_tar(&hostile_tar(&[
        ("configs/a.json", Regular, ""),
        ("configs/b.json", Symlink, "a.json"),
    ]))
    .unwrap();
    let spec = ImageSpec {
        layers: vec![layer],
        labels: catalog_labels("/configs"),
        platform: Platform::default(),
    };
    let f = ImageFixture::image("catalogs/linked:v1", &spec).await;
    let unpacked = f
        .puller()
        .pull("cat", &f.reference, ExtractFilter::CatalogPack)
        .await
        .unwrap();
    assert_eq!(unpacked.pack, None);
    assert_eq!(tree(&unpacked.content_dir), set(["a.json", "b.json"]));
    assert_eq!(staging_left(f.cache.path()), 0);
}

#[tokio::test]
async fn digest_reference_pull_hits_the_cache_without_any_network() {
    let mut f = test_catalog().await;
    let puller = f.puller();
    let first = puller
        .pull("cat", &f.pushed.digest_ref, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert!(first.fresh);
    assert_eq!(
        puller.resolve_digest(&f.pushed.digest_ref).await.unwrap(),
        f.pushed.digest
    );
    f.registry.shut_down().await;
    let again = puller
        .pull("cat", &f.pushed.digest_ref, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert!(!again.fresh);
    assert_eq!(again.dir, first.dir);
    assert_eq!(again.unpacked_at, first.unpacked_at);
}

#[tokio::test]
async fn new_puller_on_the_same_cache_does_not_download_layers_again() {
    let f = test_catalog().await;
    let first = f
        .puller()
        .pull("cat", &f.reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    let blob_gets_before = f
        .registry
        .access_log()
        .iter()
        .filter(|e| e.is_blob_get())
        .count();
    assert!(
        blob_gets_before >= 2,
        "config and layer were downloaded once"
    );

    // A "restarted" process: a new puller over the same cache directory.
    let second = f
        .puller()
        .pull("cat", &f.reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert!(!second.fresh);
    assert_eq!(second.digest, first.digest);
    assert_eq!(second.labels, first.labels);
    let log = f.registry.access_log();
    assert_eq!(
        log.iter().filter(|e| e.is_blob_get()).count(),
        blob_gets_before,
        "no blob downloaded"
    );
    assert!(
        log.last().unwrap().path.contains("/manifests/v1"),
        "only the tag was resolved"
    );
}

#[tokio::test]
async fn image_index_resolves_to_the_configured_platform() {
    let registry = registry().await;
    let pusher = pusher(&registry);
    let repo = registry.image("catalogs/multi");
    let amd64 = pusher
        .push_image(&repo, &catalog_image(&[("amd64.json", "{}")]))
        .await
        .unwrap();
    let mut arm_spec = catalog_image(&[("arm64.json", "{}")]);
    arm_spec.platform = "linux/arm64".parse().unwrap();
    let arm64 = pusher.push_image(&repo, &arm_spec).await.unwrap();
    let index = pusher
        .push_index(
            &registry.image("catalogs/multi:v1"),
            &[
                ("linux/arm64".parse().unwrap(), arm64),
                (Platform::default(), amd64),
            ],
        )
        .await
        .unwrap();

    let cache = tempfile::tempdir().unwrap();
    let default = puller(&registry, cache.path())
        .pull(
            "amd",
            &registry.image("catalogs/multi:v1"),
            ExtractFilter::CatalogConfigs,
        )
        .await
        .unwrap();
    assert_eq!(
        default.digest, index.digest,
        "the index digest identifies the image"
    );
    assert!(default.content_dir.join("amd64.json").exists());

    let mut config = registry.puller_config(cache.path());
    config.platform = "linux/arm64".parse().unwrap();
    let arm = Puller::new(config)
        .unwrap()
        .pull(
            "arm",
            &registry.image("catalogs/multi:v1"),
            ExtractFilter::CatalogConfigs,
        )
        .await
        .unwrap();
    assert!(arm.content_dir.join("arm64.json").exists());
    assert!(!arm.content_dir.join("amd64.json").exists());

    let mut config = registry.puller_config(cache.path());
    config.platform = "linux/s390x".parse().unwrap();
    let err = Puller::new(config)
        .unwrap()
        .pull("s390x", &index.digest_ref, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("image index has no manifest for platform linux/s390x (available: linux/arm64, linux/amd64)"),
        "{err}"
    );
    assert!(err.is_terminal(), "a pinned index never gains platforms");
}

#[tokio::test]
async fn catalog_without_the_configs_label_fails_with_upstream_message() {
    let spec = ImageSpec {
        layers: vec![Layer::from_files(&[("configs/a.json", "{}")]).unwrap()],
        ..ImageSpec::default()
    };
    let f = ImageFixture::image("catalogs/nolabel:v1", &spec).await;
    let puller = f.puller();

    let by_tag = puller
        .pull("cat", &f.reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert!(matches!(by_tag.kind, ImageErrorKind::MissingCatalogLabel));
    assert_eq!(
        by_tag.kind.to_string(),
        r#"catalog image is missing the required label "operators.operatorframework.io.index.configs.v1""#
    );
    assert!(
        !by_tag.is_terminal(),
        "a tag may be re-pushed with the label"
    );

    let by_digest = puller
        .pull("cat", &f.pushed.digest_ref, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert!(by_digest.is_terminal(), "a digest can never gain the label");
    assert!(cached_digests(f.cache.path(), "cat").is_empty());
}

#[tokio::test]
async fn layer_corrupted_in_registry_storage_is_rejected_as_digest_mismatch() {
    let spec = catalog_image(&[("a.json", "{}")]);
    let layer_digest = spec.layers[0].digest();
    let f = ImageFixture::image("catalogs/bad:v1", &spec).await;
    let blob = f.registry.blob_data_path(&layer_digest);
    let mut bytes = fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&blob, &bytes).unwrap();

    let err = f
        .puller()
        .pull("cat", &f.reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    match &err.kind {
        ImageErrorKind::DigestMismatch { what, expected, .. } => {
            assert_eq!(*what, "layer");
            assert_eq!(expected, &layer_digest);
        }
        other => panic!("expected a digest mismatch, got {other}"),
    }
    assert!(!err.is_terminal());
    assert!(
        cached_digests(f.cache.path(), "cat").is_empty(),
        "nothing is cached"
    );
    assert_eq!(staging_left(f.cache.path()), 0, "staging was removed");
}

/// Hand-made tar entries with raw names (the tar crate's builder refuses hostile ones).
fn hostile_tar(entries: &[(&str, tar::EntryType, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, kind, link) in entries {
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        header.set_entry_type(*kind);
        header.set_mode(0o644);
        let data: &[u8] = if *kind == tar::EntryType::Regular {
            b"pwned"
        } else {
            b""
        };
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap()
}

#[tokio::test]
async fn hostile_layers_are_rejected_and_nothing_is_written_outside_the_cache() {
    use tar::EntryType::{Char, Fifo, Link, Regular, Symlink};
    type Case<'a> = (
        &'a str,
        Vec<(&'a str, tar::EntryType, &'a str)>,
        &'a str,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        (
            "dotdot",
            vec![("configs/../../../escaped", Regular, "")],
            "configs/../../../escaped",
            "path contains a \"..\" component",
        ),
        (
            "symlink-out",
            vec![("configs/link", Symlink, "../../../../../escaped")],
            "configs/link",
            "symlink target \"../../../../../escaped\" resolves outside the image root",
        ),
        (
            "through-symlink",
            vec![
                ("configs/up", Symlink, ".."),
                ("configs/up/escaped", Regular, ""),
            ],
            "configs/up/escaped",
            "path goes through symlink \"configs/up\"",
        ),
        (
            "hardlink-out",
            vec![("configs/hl", Link, "../../../sentinel")],
            "configs/hl",
            "hardlink target \"../../../sentinel\" contains a \"..\" component",
        ),
        (
            "chardev",
            vec![("configs/dev", Char, "")],
            "configs/dev",
            "unsupported entry type character device",
        ),
        (
            "fifo",
            vec![("configs/fifo", Fifo, "")],
            "configs/fifo",
            "unsupported entry type fifo",
        ),
    ];
    let registry = registry().await;
    let pusher = pusher(&registry);
    for (name, entries, bad_entry, reason) in cases {
        let layer = Layer::gzip_tar(&hostile_tar(&entries)).unwrap();
        let layer_digest = layer.digest();
        let spec = ImageSpec {
            layers: vec![layer],
            labels: catalog_labels("/configs"),
            platform: Platform::default(),
        };
        let pushed = pusher
            .push_image(&registry.image(&format!("hostile/{name}:v1")), &spec)
            .await
            .unwrap();

        // A pack refuses what it cannot hold and leaves it to the disk extraction: the same
        // error either way.
        for filter in [ExtractFilter::CatalogConfigs, ExtractFilter::CatalogPack] {
            let name = format!("{name} ({filter:?})");
            let parent = tempfile::tempdir().unwrap();
            fs::write(parent.path().join("sentinel"), "untouched").unwrap();
            let cache = parent.path().join("cache");
            let err: ImageError = puller(&registry, &cache)
                .pull("victim", &pushed.digest_ref, filter)
                .await
                .unwrap_err();
            let ImageErrorKind::Extract(extract) = &err.kind else {
                panic!("{name}: expected an extraction error, got {err}");
            };
            assert_eq!(extract.layer_digest, layer_digest, "{name}");
            assert_eq!(extract.entry, bad_entry, "{name}: {err}");
            assert!(
                !matches!(extract.kind, ExtractErrorKind::Io { .. }),
                "{name}: {err}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "failed to pull image {:?}: failed to extract layer {layer_digest}: entry {bad_entry:?}: {reason}",
                    pushed.digest_ref
                )
            );
            assert!(
                err.is_terminal(),
                "{name}: hostile content behind a digest is terminal"
            );
            let names: BTreeSet<String> = fs::read_dir(parent.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names, set(["cache", "sentinel"]), "{name}");
            assert_eq!(
                fs::read_to_string(parent.path().join("sentinel")).unwrap(),
                "untouched"
            );
            assert!(cached_digests(&cache, "victim").is_empty(), "{name}");
            assert_eq!(staging_left(&cache), 0, "{name}: staging removed");
        }
    }
}

#[tokio::test]
async fn registry_outage_is_retryable_and_the_pull_succeeds_after_restart() {
    let mut f = test_catalog().await;
    let reference = f.reference.clone();
    let puller = f.puller();

    f.registry.shut_down().await;
    let err = puller
        .pull("cat", &reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert!(!err.is_terminal());
    assert_eq!(
        err.sanitize(),
        format!(
            "failed to pull image {reference:?}: failed to reach registry {}: connection refused",
            f.registry.host()
        )
    );

    f.registry.restart().await.unwrap();
    let unpacked = puller
        .pull("cat", &reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert!(unpacked.content_dir.join("a.json").exists());
}

#[tokio::test]
async fn retagged_image_is_pulled_as_a_new_digest_and_the_old_one_is_removed() {
    let f = ImageFixture::catalog("catalogs/test:latest", &[("v1.json", "{}")]).await;
    let (reference, old) = (&f.reference, &f.pushed);
    let puller = f.puller();
    let first = puller
        .pull("cat", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert_eq!(first.digest, old.digest);

    let new = pusher(&f.registry)
        .push_image(reference, &catalog_image(&[("v2.json", "{}")]))
        .await
        .unwrap();
    assert_ne!(new.digest, old.digest);
    assert_eq!(puller.resolve_digest(reference).await.unwrap(), new.digest);
    let second = puller
        .pull("cat", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert!(second.fresh);
    assert_eq!(second.digest, new.digest);
    assert!(second.content_dir.join("v2.json").exists());
    assert_eq!(
        cached_digests(f.cache.path(), "cat"),
        vec![new.digest.clone()],
        "old digest collected"
    );
    assert!(!first.dir.exists());
}

#[tokio::test]
async fn registry_with_auth_rejects_anonymous_pulls_and_accepts_the_pull_secret() {
    let registry = Registry::start_with(RegistryOptions {
        htpasswd: Some(("olm".into(), "s3cret".into())),
        tls: false,
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let f = ImageFixture::on(
        registry,
        "private/cat:v1",
        &catalog_image(&[("a.json", "{}")]),
    )
    .await;
    let (registry, reference) = (&f.registry, &f.reference);

    let err = f
        .puller_with(|c| c.auth = None)
        .pull("cat", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind.to_string(),
        format!(
            "registry {} requires authentication (HTTP 401 Unauthorized) and no pull secret has credentials for it",
            registry.host()
        )
    );
    assert!(
        !err.is_terminal(),
        "fixing the pull secret needs no spec change"
    );

    let mut bad_secret = DockerConfig::default();
    bad_secret.insert(&registry.host(), "olm", "wrong");
    let err = f
        .puller_with(|c| c.auth = Some(bad_secret))
        .pull("cat", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.kind,
            ImageErrorKind::Unauthorized {
                had_credentials: true,
                ..
            }
        ),
        "{err}"
    );

    let secret = format!(
        r#"{{"auths":{{"{}":{{"username":"olm","password":"s3cret"}}}}}}"#,
        registry.host()
    );
    let with_secret = DockerConfig::from_json(secret.as_bytes()).unwrap();
    let unpacked = f
        .puller_with(|c| c.auth = Some(with_secret))
        .pull("cat", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert_eq!(unpacked.digest, f.pushed.digest);
}

#[tokio::test]
async fn tls_registry_is_trusted_only_with_its_ca_bundle() {
    let registry = Registry::start_with(RegistryOptions {
        htpasswd: None,
        tls: true,
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let f = ImageFixture::on(
        registry,
        "secure/cat:v1",
        &catalog_image(&[("a.json", "{}")]),
    )
    .await;

    let err = f
        .puller_with(|c| c.extra_ca_pem = None)
        .pull("cat", &f.pushed.digest_ref, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("tls certificate verification failed"),
        "{err}"
    );
    assert!(!err.is_terminal());

    let unpacked = f
        .puller()
        .pull("cat", &f.pushed.digest_ref, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert!(unpacked.content_dir.join("a.json").exists());
}

#[tokio::test]
async fn plain_http_registry_not_listed_as_insecure_fails_with_a_hint() {
    let registry = registry().await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = PullerConfig::new(cache.path());
    config.insecure_registries = vec!["127.0.0.1:1".into()];
    let err = Puller::new(config)
        .unwrap()
        .pull(
            "cat",
            &registry.image("catalogs/test:v1"),
            ExtractFilter::CatalogConfigs,
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("list it as an insecure registry"),
        "{err}"
    );
}

#[tokio::test]
async fn bundle_image_is_extracted_entirely_with_its_labels() {
    let registry = registry().await;
    let bundle = tempfile::tempdir().unwrap();
    fs::create_dir_all(bundle.path().join("manifests")).unwrap();
    fs::create_dir_all(bundle.path().join("metadata")).unwrap();
    fs::write(
        bundle.path().join("manifests/csv.yaml"),
        "kind: ClusterServiceVersion\n",
    )
    .unwrap();
    fs::write(
        bundle.path().join("metadata/annotations.yaml"),
        "annotations: {}\n",
    )
    .unwrap();
    let pushed = images::push_bundle(
        &registry,
        "bundles/etcd:v0.9.4",
        bundle.path(),
        "etcd",
        &["alpha"],
    )
    .await
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let unpacked = puller(&registry, cache.path())
        .pull(
            "my-extension",
            &pushed.digest_ref,
            ExtractFilter::Everything,
        )
        .await
        .unwrap();
    assert_eq!(unpacked.labels[BUNDLE_MEDIATYPE_LABEL], "registry+v1");
    assert_eq!(unpacked.labels[BUNDLE_PACKAGE_LABEL], "etcd");
    assert_eq!(unpacked.content_dir, unpacked.dir);
    assert_eq!(
        tree(&unpacked.dir),
        set([
            "manifests/",
            "manifests/csv.yaml",
            "metadata/",
            "metadata/annotations.yaml"
        ])
    );
}

#[tokio::test]
async fn layer_with_a_non_tar_media_type_is_rejected() {
    let spec = ImageSpec {
        layers: vec![Layer::raw(
            "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
            b"chart".to_vec(),
        )],
        labels: catalog_labels("/configs"),
        platform: Platform::default(),
    };
    let f = ImageFixture::image("charts/x:v1", &spec).await;
    let err = f
        .puller()
        .pull("cat", &f.pushed.digest_ref, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind, ImageErrorKind::UnsupportedLayerMediaType { .. }),
        "{err}"
    );
    assert!(err.is_terminal());
}

#[tokio::test]
async fn missing_tag_is_retryable_but_missing_digest_is_terminal() {
    let f = test_catalog().await;
    let (registry, pushed) = (&f.registry, &f.pushed);
    let puller = f.puller();
    let err = puller
        .pull(
            "cat",
            &registry.image("catalogs/test:nope"),
            ExtractFilter::CatalogConfigs,
        )
        .await
        .unwrap_err();
    assert!(matches!(err.kind, ImageErrorKind::NotFound { .. }), "{err}");
    assert!(!err.is_terminal());
    let absent = format!(
        "{}/catalogs/test@sha256:{}",
        registry.host(),
        "0".repeat(64)
    );
    let err = puller
        .pull("cat", &absent, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert!(matches!(err.kind, ImageErrorKind::NotFound { .. }), "{err}");
    assert!(err.is_terminal());
    assert_ne!(pushed.digest, format!("sha256:{}", "0".repeat(64)));
}

#[tokio::test]
async fn owners_of_one_digest_share_one_unpack_and_the_first_download() {
    let f = test_catalog().await;
    let puller = f.puller();
    let blob_gets = || {
        f.registry
            .access_log()
            .iter()
            .filter(|e| e.is_blob_get())
            .count()
    };
    // Eight owners at once, by tag: one of them downloads, the others wait and share.
    let pulls = (0..8).map(|i| {
        let owner = format!("owner-{i}");
        let puller = &puller;
        let reference = f.reference.clone();
        async move {
            puller
                .pull(&owner, &reference, ExtractFilter::CatalogConfigs)
                .await
                .unwrap()
        }
    });
    let unpacked = futures::future::join_all(pulls).await;
    assert_eq!(unpacked.iter().filter(|u| u.fresh).count(), 1);
    assert!(
        unpacked.iter().all(|u| u.dir == unpacked[0].dir),
        "one tree"
    );
    let after_tags = blob_gets();
    assert_eq!(after_tags, 2, "config and layer, once");
    // A ninth owner by digest: no request at all.
    let log_before = f.registry.access_log().len();
    let by_digest = puller
        .pull(
            "by-digest",
            &f.pushed.digest_ref,
            ExtractFilter::CatalogConfigs,
        )
        .await
        .unwrap();
    assert!(!by_digest.fresh);
    assert_eq!(by_digest.dir, unpacked[0].dir);
    assert_eq!(by_digest.digest_ref, f.pushed.digest_ref);
    assert_eq!(f.registry.access_log().len(), log_before, "no network");
    // The tree stays while any owner holds it, and goes with the last.
    for i in 0..8 {
        puller.delete_owner(&format!("owner-{i}")).await.unwrap();
    }
    assert!(by_digest.content_dir.join("a.json").is_file());
    puller.delete_owner("by-digest").await.unwrap();
    assert!(!by_digest.dir.exists());
    assert_eq!(staging_left(f.cache.path()), 0);
}

#[tokio::test]
async fn deleting_an_owner_removes_its_cache_only() {
    let f = test_catalog().await;
    let (cache, pushed) = (&f.cache, &f.pushed);
    let puller = f.puller();
    for owner in ["one", "two"] {
        puller
            .pull(owner, &pushed.digest_ref, ExtractFilter::CatalogConfigs)
            .await
            .unwrap();
    }
    puller.delete_owner("one").await.unwrap();
    assert!(!cache.path().join("one").exists());
    assert!(
        puller
            .cached("two", &pushed.digest, ExtractFilter::CatalogConfigs)
            .unwrap()
            .is_some()
    );
    assert!(
        puller
            .cached("one", &pushed.digest, ExtractFilter::CatalogConfigs)
            .unwrap()
            .is_none()
    );
}

#[test]
fn registry_started_on_a_thread_that_has_exited_keeps_serving() {
    // The parent-death signal is tied to the forking thread; a registry shared across tests must
    // not die when the test (thread) that started it ends.
    let mut registry = std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(Registry::start())
            .unwrap_or_else(|e| panic!("{e}"))
    })
    .join()
    .unwrap();
    // Give a (wrongly) delivered SIGKILL time to land before probing.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let pushed = pusher(&registry)
            .push_image(
                &registry.image("catalogs/test:v1"),
                &catalog_image(&[("a.json", "{}")]),
            )
            .await
            .unwrap();
        let cache = tempfile::tempdir().unwrap();
        let resolved = puller(&registry, cache.path())
            .resolve_digest(&registry.image("catalogs/test:v1"))
            .await
            .unwrap();
        assert_eq!(resolved, pushed.digest);
        registry.shut_down().await;
    });
}
