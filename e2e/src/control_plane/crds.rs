//! Installing CustomResourceDefinitions from YAML files and waiting until they are served.
//!
//! Input: directories of CRD YAML files (`*.yaml`, one or more documents each). Output: the CRDs
//! applied with server-side apply and `Established`. Talks to the API server only.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};

/// Field manager used for everything the test environment applies.
pub const FIELD_MANAGER: &str = "olm-e2e";

/// Failure to install CRDs.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("failed to read CRD directory {path}: {source}")]
    ReadDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read CRD file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse CRD file {path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    #[error("failed to install CRDs: {dir} holds no *.yaml files")]
    Empty { dir: PathBuf },
    #[error("failed to apply CRD {name} from {path}: {source}")]
    Apply {
        name: String,
        path: PathBuf,
        #[source]
        source: kube::Error,
    },
    #[error("failed to wait for CRD {name} to be established: {detail}")]
    NotEstablished { name: String, detail: String },
}

/// Reads every CRD in `dirs` (files sorted by name), in order.
pub fn load(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, CustomResourceDefinition)>, CrdError> {
    let mut out = Vec::new();
    for dir in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|source| CrdError::ReadDir {
                path: dir.clone(),
                source,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        if files.is_empty() {
            return Err(CrdError::Empty { dir: dir.clone() });
        }
        files.sort();
        for path in files {
            for crd in parse_file(&path)? {
                out.push((path.clone(), crd));
            }
        }
    }
    Ok(out)
}

fn parse_file(path: &Path) -> Result<Vec<CustomResourceDefinition>, CrdError> {
    let text = std::fs::read_to_string(path).map_err(|source| CrdError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_saphyr::from_multiple(&text).map_err(|source| CrdError::Parse {
        path: path.to_path_buf(),
        source: Box::new(source),
    })
}

/// Applies every CRD of `dirs` and waits until each is `Established`. Returns their names.
pub async fn install(
    client: &kube::Client,
    dirs: &[PathBuf],
    timeout: Duration,
) -> Result<Vec<String>, CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::new();
    for (path, crd) in load(dirs)? {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(|source| CrdError::Apply {
                name: name.clone(),
                path: path.clone(),
                source,
            })?;
        names.push(name);
    }
    for name in &names {
        wait_established(&api, name, timeout).await?;
    }
    Ok(names)
}

async fn wait_established(
    api: &Api<CustomResourceDefinition>,
    name: &str,
    timeout: Duration,
) -> Result<(), CrdError> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match api.get(name).await {
            Ok(crd) => {
                let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
                if conditions
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
                {
                    return Ok(());
                }
                conditions
                    .iter()
                    .map(|c| {
                        format!(
                            "{}={} ({})",
                            c.type_,
                            c.status,
                            c.message.as_deref().unwrap_or("")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            }
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(CrdError::NotEstablished {
                name: name.to_owned(),
                detail: last,
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_crds_load_with_their_names() {
        let dir = crate::repo_root().join("config/crd");
        let crds = load(&[dir]).unwrap();
        let names: Vec<_> = crds
            .iter()
            .map(|(_, c)| c.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "clustercatalogs.olm.operatorframework.io",
                "clusterextensions.olm.operatorframework.io"
            ]
        );
    }

    #[test]
    fn a_broken_file_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "kind: [unclosed").unwrap();
        let err = load(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(err.to_string().contains("bad.yaml"), "{err}");
    }

    #[test]
    fn a_directory_without_yaml_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(matches!(err, CrdError::Empty { .. }), "{err}");
    }
}
