//! Fixture images for tests and `make run`: catalogs and bundles built from directories by
//! olm-image's pusher and pushed to a test [`Registry`]. Talks to that registry over loopback.

use std::path::{Path, PathBuf};

use olm_image::push::{PushError, PushedImage, Pusher};

use crate::registry::Registry;

/// `shared/data/<relative>`, found by walking up from the repository root: `../shared` beside a
/// clone (as CI checks it out), or further up from a worktree nested deeper.
pub fn shared_data(relative: &str) -> PathBuf {
    let root = crate::repo_root();
    root.ancestors()
        .map(|dir| dir.join("shared/data"))
        .find(|candidate| candidate.is_dir())
        .unwrap_or_else(|| root.join("../shared/data"))
        .join(relative)
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
