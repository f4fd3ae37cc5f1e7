//! registries.conf in both binaries (upstream's `@mirrored-registry` scenario, and more): given
//! to each process through `CONTAINERS_REGISTRIES_CONF`, it sends a catalog image named after a
//! registry that does not exist to a mirror (the test registry), remaps the bundles' registry to
//! the test registry, and refuses blocked registries by name in status. Names under `.invalid`
//! never resolve, and the tests have only loopback.

use std::path::{Path, PathBuf};

use kube::api::Api;
use olm_api::v1::{ClusterCatalog, ClusterExtension, ConditionType, find_condition};
use olm_e2e::catalogd::{Catalogd, Options as CatalogdOptions, catalogs};
use olm_e2e::images::push_catalog;
use olm_e2e::operator_controller::{
    BundleSpec, OperatorController, Options, bundle_name, installed_bundle, message,
};
use olm_e2e::registry::Registry;
use olm_e2e::scenario::{ExtensionSpec, INSTALLED, Message, Package, RETRYING, wait_for};

use crate::support::{create_namespace, unique_name};

const CONF_VAR: &str = "CONTAINERS_REGISTRIES_CONF";

/// `text` as `registries.conf` in a new directory (kept alive by the returned guard).
fn registries_conf(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registries.conf");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn conf_env(path: &Path) -> Vec<(String, String)> {
    vec![(CONF_VAR.to_string(), path.display().to_string())]
}

/// Pushes one catalog image holding, for each (package, listed image), that package with one
/// bundle (1.0.0) whose image is listed as the listed image (each package in a directory of its
/// own).
async fn push_catalog_of(registry: &Registry, repo: &str, packages: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (package, listed_image) in packages {
        let images = [("1.0.0".to_string(), listed_image.to_string())].into();
        Package::named(package)
            .bundle("1.0.0")
            .write_fbc(&dir.path().join(package), &images);
    }
    let reference = format!("{repo}:latest");
    push_catalog(registry, &reference, dir.path())
        .await
        .unwrap_or_else(|e| panic!("push {reference}: {e}"));
    registry.image(&reference)
}

#[tokio::test]
async fn mirrored_catalog_serves_and_its_remapped_bundle_installs_while_blocked_bundles_are_refused()
 {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let registry = &env.registry;
    let host = registry.host();

    // The bundle is pushed to the test registry; the catalog lists it under `remapped.invalid`.
    let package = unique_name("mirrored");
    let bundle_repo = unique_name("bundles");
    let pushed = BundleSpec::new(&package, "1.0.0")
        .push(registry, &bundle_repo)
        .await;
    let listed = pushed.replacen(&host, "remapped.invalid", 1);
    // A second package whose bundle exists but lives under a blocked prefix.
    let blocked_package = unique_name("blocked");
    let blocked_repo = unique_name("blocked-bundles");
    let blocked_image = BundleSpec::new(&blocked_package, "1.0.0")
        .push(registry, &blocked_repo)
        .await;
    let catalog_repo = unique_name("catalog");
    let pushed_catalog = push_catalog_of(
        registry,
        &catalog_repo,
        &[(&package, &listed), (&blocked_package, &blocked_image)],
    )
    .await;
    let (_dir, conf) = registries_conf(&format!(
        r#"# catalogs: only a mirror has them
[[registry]]
location = "mirrored.invalid"

[[registry.mirror]]
location = "{host}"

# bundles: the prefix lives at another registry
[[registry]]
prefix = "remapped.invalid"
location = "{host}"

[[registry]]
location = "{host}/{blocked_repo}"
blocked = true
"#
    ));

    let mut catalogd_options = CatalogdOptions::new(registry);
    catalogd_options.env = conf_env(&conf);
    let catalogd = Catalogd::start(catalogd_options).await;
    let api = catalogs().await;
    let catalog_image = pushed_catalog.replacen(&host, "mirrored.invalid", 1);
    let catalog = catalogd
        .create_catalog(&api, "mirrored", &catalog_image, None)
        .await;
    let served = catalogd.wait_serving(&api, &catalog).await;
    let resolved = served
        .status
        .and_then(|s| s.resolved_source)
        .map(|s| s.image.ref_)
        .unwrap();
    assert!(
        resolved.starts_with(&format!("mirrored.invalid/{catalog_repo}@sha256:")),
        "the catalog keeps its own name: {resolved}"
    );

    let mut oc_options = Options::new(registry);
    oc_options.env = conf_env(&conf);
    let oc = OperatorController::start(oc_options).await;
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let ns = create_namespace(&client, "mirrored").await;
    let ext = ExtensionSpec::of_package(&package, &catalog, &ns)
        .create(&extensions, &oc.instance)
        .await;
    let installed = wait_for(&extensions, &ext.name, &oc, INSTALLED).await;
    assert_eq!(
        installed_bundle(&installed),
        Some((bundle_name(&package, "1.0.0"), "1.0.0".into()))
    );
    assert_eq!(
        message(&installed, ConditionType::Installed),
        format!("Installed bundle {listed} successfully")
    );

    let refused = ExtensionSpec::of_package(&blocked_package, &catalog, &ns)
        .create(&extensions, &oc.instance)
        .await;
    let expected = format!(
        "registry {host}/{blocked_repo} is blocked in {}, line 13",
        conf.display()
    );
    wait_for(
        &extensions,
        &refused.name,
        &oc,
        RETRYING.until_message(Message::contains(expected)),
    )
    .await;
}

#[tokio::test]
async fn catalog_from_a_blocked_registry_is_refused_by_name_in_its_status() {
    let env = olm_e2e::shared().await;
    let registry = &env.registry;
    let host = registry.host();
    let package = unique_name("pkg");
    let catalog_repo = unique_name("blocked-catalog");
    let image = push_catalog_of(
        registry,
        &catalog_repo,
        &[(&package, "example.invalid/b:v1")],
    )
    .await;
    let (_dir, conf) = registries_conf(&format!(
        "[[registry]]\nprefix = \"{host}/{catalog_repo}\"\nlocation = \"{host}/{catalog_repo}\"\nblocked = true\n"
    ));
    let mut options = CatalogdOptions::new(registry);
    options.env = conf_env(&conf);
    let catalogd = Catalogd::start(options).await;
    let api: Api<ClusterCatalog> = catalogs().await;
    let name = catalogd.create_catalog(&api, "blocked", &image, None).await;
    let expected = format!(
        "source catalog content: failed to pull image \"{image}\": registry {host}/{catalog_repo} is blocked in {}, line 1",
        conf.display()
    );
    let progressing = catalogd
        .eventually("the catalog to report its registry blocked", || async {
            let c = api.get(&name).await.ok()?;
            let p = find_condition(&c.status?.conditions, ConditionType::Progressing)?.clone();
            (p.message == expected).then_some(p)
        })
        .await;
    assert_eq!(progressing.status.as_str(), "True");
    assert_eq!(progressing.reason, "Retrying");
}
