//! The release manifest: one YAML with everything an install needs, rendered from `config/` by
//! [`super::kustomize`] with the product images pinned by digest. Input: the repository root, a
//! [`Variant`], the pushed image references. Output: YAML text. Reads files only.
//!
//! Two variants differ only in how catalogd's serving certificate (the `catalogd-service-cert`
//! Secret: `tls.crt`, `tls.key`, `ca.crt`) comes to exist:
//!
//! | variant        | source            | the Secret                                                       |
//! |----------------|-------------------|------------------------------------------------------------------|
//! | `standalone`   | `config/default`  | made once by `hack/install.sh` (a self-signed CA and a serving certificate from openssl), kept on re-install |
//! | `cert-manager` | `config/cert-manager` | issued and rotated by cert-manager (a self-signed CA, a `ClusterIssuer`, a `Certificate`), as upstream; operator-controller also uses cert-manager for webhook bundles |

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::kustomize::{self, ImageOverride, KustomizeError};

/// The binaries, which are also the image names `config/manager` uses (`catalogd:latest`, …).
pub const COMPONENTS: [&str; 2] = ["catalogd", "operator-controller"];

/// The kinds that make up a component's RBAC.
pub const RBAC_KINDS: [&str; 5] = [
    "ServiceAccount",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
];

/// How catalogd's serving certificate is provisioned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Variant {
    /// No cert-manager: `hack/install.sh` creates the certificate Secret.
    Standalone,
    /// cert-manager issues the certificate.
    CertManager,
}

impl Variant {
    /// The kustomization directory, relative to the repository root.
    pub fn config_dir(self) -> &'static str {
        match self {
            Variant::Standalone => "config/default",
            Variant::CertManager => "config/cert-manager",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Variant::Standalone => "standalone",
            Variant::CertManager => "cert-manager",
        }
    }
}

/// Generating the release manifest failed.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    Kustomize(#[from] KustomizeError),
    #[error("image {component}={reference:?} is not pinned by digest (`host/repo@sha256:…`)")]
    NotPinned {
        component: String,
        reference: String,
    },
    #[error("no image given for {component} (expected one for each of {COMPONENTS:?})")]
    MissingImage { component: String },
    #[error("unknown component {component:?} (expected one of {COMPONENTS:?})")]
    UnknownComponent { component: String },
    #[error("container image {image:?} in {object} was not replaced by a pinned product image")]
    Unpinned { object: String, image: String },
    #[error("failed to write YAML: {0}")]
    Yaml(#[from] serde_saphyr::ser::Error),
}

/// The objects of `variant` with `images` (component → `host/repo@sha256:…`) substituted;
/// `None` keeps `config/`'s unpinned names (as `kubectl apply -k` would apply them).
pub fn objects(
    repo_root: &Path,
    variant: Variant,
    images: Option<&BTreeMap<String, String>>,
) -> Result<Vec<Value>, ManifestError> {
    let mut overrides = Vec::new();
    if let Some(images) = images {
        if let Some(component) = images.keys().find(|c| !COMPONENTS.contains(&c.as_str())) {
            return Err(ManifestError::UnknownComponent {
                component: component.clone(),
            });
        }
        for component in COMPONENTS {
            let reference = images
                .get(component)
                .ok_or_else(|| ManifestError::MissingImage {
                    component: component.to_string(),
                })?;
            let (name, digest) = reference
                .split_once('@')
                .filter(|(_, d)| d.starts_with("sha256:") && d.len() == 71)
                .ok_or_else(|| ManifestError::NotPinned {
                    component: component.to_string(),
                    reference: reference.clone(),
                })?;
            overrides.push(ImageOverride {
                name: component.to_string(),
                new_name: Some(name.to_string()),
                new_tag: None,
                digest: Some(digest.to_string()),
            });
        }
    }
    let objects = kustomize::render(&repo_root.join(variant.config_dir()), &overrides)?;
    if images.is_some() {
        for object in &objects {
            for image in container_images(object) {
                if !image.contains("@sha256:") {
                    return Err(ManifestError::Unpinned {
                        object: kustomize::object_key(object),
                        image,
                    });
                }
            }
        }
    }
    Ok(objects)
}

/// The release manifest text of `variant` with `images` pinned.
pub fn release_manifest(
    repo_root: &Path,
    variant: Variant,
    images: &BTreeMap<String, String>,
) -> Result<String, ManifestError> {
    let objects = objects(repo_root, variant, Some(images))?;
    let mut out = format!(
        "# OLM v1 install manifest ({} variant), generated by `make release-manifest` from {}.\n\
         # Install it with hack/install.sh (see README, \"Install on a cluster\"). Do not edit.\n",
        variant.name(),
        variant.config_dir()
    );
    out.push_str(&kustomize::to_yaml(&objects)?);
    Ok(out)
}

/// `component`'s RBAC (ServiceAccount, Roles, bindings) as `config/rbac/<component>` defines it:
/// the objects the release manifest carries and the e2e tests that run the binary as its
/// ServiceAccount create.
pub fn component_rbac(repo_root: &Path, component: &str) -> Result<Vec<Value>, ManifestError> {
    if !COMPONENTS.contains(&component) {
        return Err(ManifestError::UnknownComponent {
            component: component.to_string(),
        });
    }
    Ok(kustomize::render(
        &repo_root.join("config/rbac").join(component),
        &[],
    )?)
}

/// Every `containers[].image` / `initContainers[].image` below `value`.
pub fn container_images(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_images(value, &mut out);
    out
}

fn collect_images(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "containers" || key == "initContainers" {
                    for container in child.as_array().into_iter().flatten() {
                        if let Some(image) = container.get("image").and_then(Value::as_str) {
                            out.push(image.to_string());
                        }
                    }
                } else {
                    collect_images(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_images(i, out)),
        _ => {}
    }
}
