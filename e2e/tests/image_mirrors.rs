//! olm-image with registries.conf against a real registry (Debian docker-registry on 127.0.0.1):
//! a mirrored prefix pulled through its mirror while the primary name never resolves (`.invalid`
//! names do not resolve, and these tests have only loopback), mirrors falling back to the
//! primary location, blocked registries, and edits to the file between pulls.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use olm_e2e::images::{ImageFixture, catalog_image};
use olm_e2e::registry::{Registry, RegistryOptions};
use olm_image::registries_conf::RegistriesConfFiles;
use olm_image::{ConditionError, ExtractFilter, ImageErrorKind, Puller};

/// The catalog the tests pull, pushed to a registry of its own as `catalogs/test:v1`.
async fn fixture() -> ImageFixture {
    ImageFixture::catalog("catalogs/test:v1", &[("a.json", "{}")]).await
}

/// `text` written as `registries.conf` in a new directory (kept alive by the returned guard).
fn registries_conf(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registries.conf");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// A puller over the fixture's cache reading only `conf`. `insecure_flag` keeps the fixture's
/// `--insecure-registries` entry for its registry; without it the registry is reached only
/// because registries.conf marks it insecure.
fn puller(f: &ImageFixture, conf: &Path, insecure_flag: bool) -> Puller {
    f.puller_with(|config| {
        config.registries = RegistriesConfFiles::only(conf);
        if !insecure_flag {
            config.insecure_registries.clear();
        }
    })
}

/// Manifest requests the registry has served for `repository`.
fn manifest_gets(f: &ImageFixture, repository: &str) -> Vec<(String, u16)> {
    let prefix = format!("/v2/{repository}/manifests/");
    f.registry
        .access_log()
        .into_iter()
        .filter(|e| e.method == "GET" && e.path.starts_with(&prefix))
        .map(|e| (e.path, e.status))
        .collect()
}

#[tokio::test]
async fn mirrored_tag_is_pulled_through_an_insecure_mirror_while_the_primary_name_never_resolves() {
    let f = fixture().await;
    let (_dir, conf) = registries_conf(&format!(
        r#"
[[registry]]
prefix = "mirrored.invalid/olm"
location = "mirrored.invalid/olm"

[[registry.mirror]]
location = "{host}/catalogs"
insecure = true
"#,
        host = f.registry.host()
    ));
    let puller = puller(&f, &conf, false);
    let reference = "mirrored.invalid/olm/test:v1";
    let unpacked = puller
        .pull("cat", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unpacked.digest, f.pushed.digest);
    assert_eq!(
        unpacked.digest_ref,
        format!("mirrored.invalid/olm/test@{}", f.pushed.digest),
        "the image keeps its own name, whichever source served it"
    );
    assert!(unpacked.content_dir.join("a.json").exists());
    assert_eq!(
        puller.resolve_digest(reference).await.unwrap(),
        f.pushed.digest
    );
    assert!(
        manifest_gets(&f, "catalogs/test")
            .iter()
            .any(|(path, status)| path.ends_with("/v1") && *status == 200)
    );
}

#[tokio::test]
async fn the_digest_is_the_same_through_a_digest_only_mirror_and_the_cache_needs_no_source() {
    let mut f = fixture().await;
    let (_dir, conf) = registries_conf(&format!(
        r#"
[[registry]]
prefix = "mirrored.invalid"
location = "mirrored.invalid"

[[registry.mirror]]
location = "{host}"
pull-from-mirror = "digest-only"
"#,
        host = f.registry.host()
    ));
    let puller = puller(&f, &conf, true);
    let by_digest = format!("mirrored.invalid/catalogs/test@{}", f.pushed.digest);
    let mirrored = puller
        .pull("mirrored", &by_digest, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let direct = puller
        .pull("direct", &f.reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap();
    assert_eq!(mirrored.digest, direct.digest);
    assert_eq!(mirrored.digest_ref, by_digest);

    // The mirror is for digests only, so the tag goes to the primary name, which does not resolve.
    let by_tag = puller
        .pull(
            "tagged",
            "mirrored.invalid/catalogs/test:v1",
            ExtractFilter::CatalogConfigs,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&by_tag.kind, ImageErrorKind::Unreachable { registry, .. } if registry == "mirrored.invalid"),
        "{by_tag}"
    );

    f.registry.shut_down().await;
    let again = puller
        .pull("mirrored", &by_digest, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!again.fresh);
    assert_eq!(again.dir, mirrored.dir);
}

#[tokio::test]
async fn a_mirror_without_the_image_falls_back_to_the_next_mirror_and_then_the_primary() {
    let f = fixture().await;
    let host = f.registry.host();
    let (_dir, conf) = registries_conf(&format!(
        r#"
[[registry]]
prefix = "{host}/catalogs"
location = "{host}/catalogs"

[[registry.mirror]]
location = "{host}/empty-mirror"

[[registry.mirror]]
location = "{host}/catalogs"
"#
    ));
    let unpacked = puller(&f, &conf, true)
        .pull("cat", &f.reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unpacked.digest, f.pushed.digest);
    let empty: Vec<u16> = manifest_gets(&f, "empty-mirror/test")
        .into_iter()
        .map(|(_, status)| status)
        .collect();
    assert_eq!(empty, [404], "the first mirror was asked first");
}

#[tokio::test]
async fn when_every_source_fails_the_error_names_each_mirror_and_then_the_primary() {
    let f = fixture().await;
    let host = f.registry.host();
    let (_dir, conf) = registries_conf(&format!(
        r#"
[[registry]]
location = "mirrored.invalid"

[[registry.mirror]]
location = "{host}/nothing-here"
"#
    ));
    let reference = "mirrored.invalid/catalogs/test:v1";
    let err = puller(&f, &conf, true)
        .pull("cat", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    let message = err.to_string();
    let expected_start = format!(
        "failed to pull image \"{reference}\": (mirrors also failed: [{host}/nothing-here/catalogs/test:v1: image not found in registry {host}: "
    );
    assert!(message.starts_with(&expected_start), "{message}");
    assert!(
        message.ends_with(
            "]): mirrored.invalid/catalogs/test:v1: failed to reach registry mirrored.invalid: name resolution failed"
        ),
        "{message}"
    );
    assert!(!err.is_terminal(), "the primary may become reachable");
}

#[tokio::test]
async fn a_blocked_registry_is_refused_by_name_without_a_request() {
    let f = fixture().await;
    let host = f.registry.host();
    let (_dir, conf) = registries_conf(&format!(
        "# no pulls from the test registry\n[[registry]]\nlocation = \"{host}\"\nblocked = true\n"
    ));
    let err = puller(&f, &conf, true)
        .pull("cat", &f.reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to pull image \"{}\": registry {host} is blocked in {}, line 2",
            f.reference,
            conf.display()
        )
    );
    assert!(
        !err.is_terminal(),
        "registries.conf can change without a spec change"
    );
    assert!(manifest_gets(&f, "catalogs/test").is_empty());
}

#[tokio::test]
async fn a_blocked_registry_with_a_mirror_is_pulled_only_through_the_mirror() {
    let f = fixture().await;
    let (_dir, conf) = registries_conf(&format!(
        r#"
[[registry]]
location = "blocked.invalid"
blocked = true

[[registry.mirror]]
location = "{host}"
"#,
        host = f.registry.host()
    ));
    let unpacked = puller(&f, &conf, true)
        .pull(
            "cat",
            "blocked.invalid/catalogs/test:v1",
            ExtractFilter::CatalogConfigs,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unpacked.digest, f.pushed.digest);
}

#[tokio::test]
async fn an_edited_registries_conf_applies_to_the_next_pull_and_a_malformed_one_names_its_line() {
    let f = fixture().await;
    let (_dir, conf) = registries_conf("");
    let puller = puller(&f, &conf, true);
    let reference = "mirrored.invalid/catalogs/test:v1";
    let unmirrored = puller.resolve_digest(reference).await.unwrap_err();
    assert!(
        matches!(unmirrored.kind, ImageErrorKind::Unreachable { .. }),
        "{unmirrored}"
    );

    let mirrored = format!(
        "[[registry]]\nlocation = \"mirrored.invalid\"\n[[registry.mirror]]\nlocation = \"{}\"\n",
        f.registry.host()
    );
    std::fs::write(&conf, &mirrored).unwrap();
    assert_eq!(
        puller.resolve_digest(reference).await.unwrap(),
        f.pushed.digest
    );

    std::fs::write(
        &conf,
        mirrored.replace("[[registry.mirror]]", "[[registry.mirror]"),
    )
    .unwrap();
    let malformed = puller.resolve_digest(reference).await.unwrap_err();
    let message = malformed.to_string();
    assert!(
        message.starts_with(&format!(
            "failed to pull image \"{reference}\": invalid registries configuration {}, line 3: ",
            conf.display()
        )),
        "{message}"
    );
    assert!(!malformed.is_terminal());
}

#[tokio::test]
async fn an_insecure_mirror_with_an_untrusted_certificate_is_reached_over_unverified_tls() {
    let registry = Registry::start_with(RegistryOptions {
        htpasswd: None,
        tls: true,
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let f = ImageFixture::on(
        registry,
        "catalogs/test:v1",
        &catalog_image(&[("a.json", "{}")]),
    )
    .await;
    let conf_text = |insecure: bool| {
        format!(
            "[[registry]]\nlocation = \"mirrored.invalid\"\n[[registry.mirror]]\nlocation = \"{}\"\ninsecure = {insecure}\n",
            f.registry.host()
        )
    };
    let (_dir, conf) = registries_conf(&conf_text(true));
    // No CA bundle: the registry's certificate is trusted by nothing.
    let puller = f.puller_with(|config| {
        config.registries = RegistriesConfFiles::only(&conf);
        config.extra_ca_pem = None;
    });
    let reference = "mirrored.invalid/catalogs/test:v1";
    let unpacked = puller
        .pull("cat", reference, ExtractFilter::CatalogConfigs)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unpacked.digest, f.pushed.digest);

    std::fs::write(&conf, conf_text(false)).unwrap();
    let refused = puller.resolve_digest(reference).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("tls certificate verification failed"),
        "{refused}"
    );
}
