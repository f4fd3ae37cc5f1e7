//! The inputs of `preview` besides the catalogs: the ClusterExtension (from the cluster, with
//! overrides, or from a file) and what `run` builds from the same flags (catalogd client,
//! bundle puller and its cache, webhook certificate provider).
//!
//! Input: the [`Args`] and a client. Output: the values, or a [`Failure`] (usage for a bad
//! flag or file, runtime for the cluster). Network: the Kubernetes API (reads: the
//! ClusterExtension, discovery for the certificate provider).

use std::path::{Path, PathBuf};

use kube::ResourceExt;
use kube::api::Api;
use olm_api::v1::ClusterExtension;
use olm_image::{Puller, PullerConfig, RegistriesConfFiles};
use olm_operator_core::bundle;
use olm_operator_core::render::CertProvider;
use olm_runtime::gates::FeatureGates;
use serde_json::Value;

use super::compute::{CALL_TIMEOUT, runtime};
use super::{Args, Failure};
use crate::bundle_source::bundle_image_limits;
use crate::catalog_source::http::{CatalogdClient, ClientOptions};

/// Largest ClusterExtension manifest read with `-f`.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;
/// Largest CA file read from a CA directory (as `run`).
const MAX_CA_FILE_BYTES: u64 = 1 << 20;

/// The bundle cache: `--cache-path`, or a temporary directory removed when dropped.
pub(super) struct Cache {
    pub(super) dir: PathBuf,
    remove: bool,
}

impl Drop for Cache {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The ClusterExtension to preview and whether it exists on the cluster.
pub(super) async fn extension(
    args: &Args,
    from_file: Option<ClusterExtension>,
    client: &kube::Client,
) -> Result<(ClusterExtension, bool), Failure> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let get = |name: String| {
        let api = api.clone();
        async move {
            tokio::time::timeout(CALL_TIMEOUT, api.get_opt(&name))
                .await
                .map_err(|_| Failure::Runtime("no answer from the API server".into()))?
                .map_err(|e| Failure::Runtime(format!("reading ClusterExtension {name:?}: {e}")))
        }
    };
    if let Some(name) = &args.extension {
        let Some(mut extension) = get(name.clone()).await? else {
            return Err(Failure::Usage(format!(
                "ClusterExtension {name:?} not found"
            )));
        };
        if let Some(catalog) = extension.spec.source.catalog.as_mut() {
            if let Some(version) = &args.version {
                catalog.version = Some(version.clone()).filter(|v| !v.is_empty());
            }
            if !args.channels.is_empty() {
                catalog.channels = args.channels.clone();
            }
        }
        return Ok((extension, true));
    }
    let Some(mut extension) = from_file else {
        return Err(Failure::Usage(
            "-f FILE or --extension NAME is required".into(),
        ));
    };
    let name = extension.name_any();
    match get(name).await? {
        Some(live) => {
            extension.metadata.uid = live.metadata.uid;
            Ok((extension, true))
        }
        None => {
            extension.metadata.uid = None;
            Ok((extension, false))
        }
    }
}

/// The ClusterExtension of `-f FILE` (`None` without `-f`), read before anything else so that
/// an unusable file is a usage error whatever the cluster.
pub(super) fn from_file(args: &Args) -> Result<Option<ClusterExtension>, Failure> {
    let Some(path) = args.file.as_deref() else {
        return Ok(None);
    };
    let value = read_manifest(path).map_err(Failure::Usage)?;
    let extension: ClusterExtension = serde_json::from_value(value)
        .map_err(|e| Failure::Usage(format!("{}: not a ClusterExtension: {e}", path.display())))?;
    if extension.name_any().is_empty() {
        return Err(Failure::Usage(format!(
            "{}: metadata.name is required",
            path.display()
        )));
    }
    Ok(Some(extension))
}

/// The first document of a YAML or JSON file.
fn read_manifest(path: &Path) -> Result<Value, String> {
    let bytes = olm_api::regular_file::read_regular(path, MAX_MANIFEST_BYTES)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut splitter = olm_api::fbc::yaml::DocumentSplitter::new(bytes.as_slice(), 1);
    let doc = match splitter.next_document() {
        Ok(Some(doc)) => doc,
        Ok(None) => return Err(format!("{}: empty", path.display())),
        Err(olm_api::fbc::yaml::SplitError::Io(e)) => {
            return Err(format!("{}: {e}", path.display()));
        }
        Err(olm_api::fbc::yaml::SplitError::Syntax(e)) => {
            return Err(format!(
                "{}: line {}: {}",
                path.display(),
                e.line,
                e.message
            ));
        }
    };
    match olm_api::fbc::yaml::document_to_value(&doc) {
        Ok(Some(v)) => Ok(bundle::manifest::from_go(v)),
        Ok(None) => Err(format!("{}: empty", path.display())),
        Err(e) => Err(format!(
            "{}: line {}: {}",
            path.display(),
            e.line,
            e.message
        )),
    }
}

pub(super) fn catalogd_client(args: &Args) -> Result<CatalogdClient, Failure> {
    let mut options = ClientOptions {
        read_idle_timeout: args.catalogd_read.catalogd_read_idle_timeout,
        ..ClientOptions::default()
    };
    if let Some(dir) = &args.catalogd_cas_dir {
        options.extra_ca_pem = Some(
            olm_api::regular_file::read_pem_dir(dir, MAX_CA_FILE_BYTES)
                .map_err(|e| Failure::Usage(format!("--catalogd-cas-dir: {e}")))?,
        );
    }
    CatalogdClient::new(options).map_err(|e| Failure::Runtime(e.to_string()))
}

pub(super) fn cache(args: &Args) -> Result<Cache, Failure> {
    match &args.cache_path {
        Some(dir) => Ok(Cache {
            dir: dir.clone(),
            remove: false,
        }),
        None => {
            let dir = std::env::temp_dir().join(format!(
                "operator-controller-preview-{}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).map_err(runtime("creating a temporary bundle cache"))?;
            Ok(Cache { dir, remove: true })
        }
    }
}

/// The puller `run` builds from the same flags.
pub(super) fn puller(args: &Args, cache: &Path) -> Result<Puller, Failure> {
    let mut config = PullerConfig::new(cache.join("bundles"));
    config.insecure_registries = args.insecure_registries.clone();
    config.registries = RegistriesConfFiles::from_environment();
    config.limits = bundle_image_limits();
    if let Some(dir) = &args.pull_cas_dir {
        config.extra_ca_pem = Some(
            olm_api::regular_file::read_pem_dir(dir, MAX_CA_FILE_BYTES)
                .map_err(|e| Failure::Usage(format!("--pull-cas-dir: {e}")))?,
        );
    }
    Puller::new(config).map_err(|e| Failure::Runtime(e.to_string()))
}

/// The provider `run` would use with the same flags.
pub(super) async fn cert_provider(
    args: &Args,
    gates: &FeatureGates,
    client: &kube::Client,
) -> Result<CertProvider, Failure> {
    if let Some(p) = args.cert_provider {
        return Ok(p.into());
    }
    if gates.value("WebhookProviderCertManager").is_some()
        || gates.value("WebhookProviderOpenshiftServiceCA").is_some()
    {
        return Ok(if gates.enabled_or("WebhookProviderCertManager", false) {
            CertProvider::CertManager
        } else if gates.enabled_or("WebhookProviderOpenshiftServiceCA", false) {
            CertProvider::OpenShiftServiceCa
        } else {
            CertProvider::None
        });
    }
    crate::webhook_certs::detect_provider(client, CALL_TIMEOUT)
        .await
        .map_err(runtime("detecting the webhook certificate provider"))
}
