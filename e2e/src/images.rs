//! Fixture images for tests and `make run`: catalogs and bundles built from directories by
//! olm-image's pusher and pushed to a test [`Registry`], and [`ImageFixture`], the push-then-pull
//! set-up of the image tests. Talks to that registry over loopback.

use std::path::{Path, PathBuf};

use olm_image::push::{ImageSpec, Layer, PushError, PushedImage, Pusher, catalog_labels};
use olm_image::{Platform, Puller, PullerConfig};

use crate::registry::Registry;

/// `testdata/<relative>` of the repository, as a plain path (large trees unpacked once into the
/// cache; see olm-testdata). Panics naming the file when it is missing.
pub fn testdata(relative: &str) -> PathBuf {
    olm_testdata::path(relative)
}

/// A pusher for `registry`.
pub fn pusher(registry: &Registry) -> Result<Pusher, PushError> {
    Pusher::new(registry.pusher_config())
}

/// Pushes `fbc_dir` as a catalog image (FBC in `/configs`, labelled) to `registry/name`.
pub async fn push_catalog(
    registry: &Registry,
    name: &str,
    fbc_dir: &Path,
) -> Result<PushedImage, PushError> {
    pusher(registry)?
        .push_catalog_dir(&registry.image(name), fbc_dir)
        .await
}

/// Pushes `bundle_dir` (with `manifests/` and `metadata/`) as a registry+v1 bundle image.
pub async fn push_bundle(
    registry: &Registry,
    name: &str,
    bundle_dir: &Path,
    package: &str,
    channels: &[&str],
) -> Result<PushedImage, PushError> {
    pusher(registry)?
        .push_bundle_dir(&registry.image(name), bundle_dir, package, channels)
        .await
}

/// A catalog image spec whose FBC (in `/configs`, labelled) holds `files`, plus a file outside
/// `/configs` that a catalog pull must not extract.
pub fn catalog_image(files: &[(&str, &str)]) -> ImageSpec {
    let mut all: Vec<(String, String)> = files
        .iter()
        .map(|(p, c)| (format!("configs/{p}"), c.to_string()))
        .collect();
    all.push(("bin/opm".to_string(), "not extracted".to_string()));
    ImageSpec {
        layers: vec![Layer::from_files(&all).expect("catalog files are relative paths")],
        labels: catalog_labels("/configs"),
        platform: Platform::default(),
    }
}

/// A registry of the test's own, one image pushed to it, and an empty image cache: where most
/// image tests start. Panics on failure, as test code does.
pub struct ImageFixture {
    pub registry: Registry,
    pub pushed: PushedImage,
    /// The reference the image was pushed under (`host:port/name:tag`).
    pub reference: String,
    /// An empty directory for a puller's cache.
    pub cache: tempfile::TempDir,
}

impl ImageFixture {
    /// A new plain-HTTP registry with [`catalog_image`]`(files)` pushed as `name`.
    pub async fn catalog(name: &str, files: &[(&str, &str)]) -> ImageFixture {
        ImageFixture::image(name, &catalog_image(files)).await
    }

    /// A new plain-HTTP registry with `spec` pushed as `name`.
    pub async fn image(name: &str, spec: &ImageSpec) -> ImageFixture {
        let registry = Registry::start().await.unwrap_or_else(|e| panic!("{e}"));
        ImageFixture::on(registry, name, spec).await
    }

    /// `spec` pushed as `name` to `registry` (for registries with auth or TLS).
    pub async fn on(registry: Registry, name: &str, spec: &ImageSpec) -> ImageFixture {
        let reference = registry.image(name);
        let pushed = pusher(&registry)
            .unwrap_or_else(|e| panic!("{e}"))
            .push_image(&reference, spec)
            .await
            .unwrap_or_else(|e| panic!("push {reference}: {e}"));
        let cache = tempfile::tempdir().expect("a cache directory");
        ImageFixture {
            registry,
            pushed,
            reference,
            cache,
        }
    }

    /// A puller over the fixture's cache, configured for its registry.
    pub fn puller(&self) -> Puller {
        Puller::new(self.registry.puller_config(self.cache.path()))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A puller with the given configuration changes, over the fixture's cache.
    pub fn puller_with(&self, change: impl FnOnce(&mut PullerConfig)) -> Puller {
        let mut config = self.registry.puller_config(self.cache.path());
        change(&mut config);
        Puller::new(config).unwrap_or_else(|e| panic!("{e}"))
    }
}
