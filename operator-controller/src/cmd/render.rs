//! `operator-controller render`: a registry+v1 bundle rendered offline, exactly as the
//! ClusterExtension controller renders it, for bundle authors.
//!
//! Input: arguments (a bundle directory or image, install namespace, watch namespace,
//! configuration file, certificate provider, registry settings). Output: the objects as a YAML
//! stream on stdout, sorted by kind, namespace and name (the order of upstream's golden files),
//! warnings on stderr. Reads local files; talks to a registry only for an image reference.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | rendered; the YAML stream is on stdout |
//! | 1 | the bundle or the configuration is invalid: upstream's exact message on stderr |
//! | 2 | usage: unknown flag, unreadable configuration file, `--bundle` neither a directory nor an image reference |
//! | 3 | the image could not be pulled (registry unreachable, denied, ...) or the cache is unusable |
//!
//! `--config` is a `spec.config.inline` document (JSON or YAML); `--watch-namespace` sets its
//! `watchNamespace`. Images are cached by digest under `--cache-dir` (default
//! `$XDG_CACHE_HOME/operator-controller/bundles`, else `~/.cache/...`), so a second render of
//! the same digest reads no layer.
//!
//! `--cert-provider builtin` issues, offline and once, what the controller's built-in provider
//! would (`crate::webhook_certs`): a CA (its key is not printed), one serving Secret per webhook
//! Service, and the CA bundle in the webhook configurations and conversion CRDs.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use olm_image::{DockerConfig, ImageErrorKind, Puller, PullerConfig};
use olm_operator_core::bundle;
use olm_operator_core::render::{self, CertProvider, RenderOptions, yaml::to_yaml};
use serde_json::Value;
use sha2::Digest as _;

use olm_runtime::exit::Exit;

use crate::bundle_source::{
    BundleSourceError, ReadLimits, bundle_image_limits, pull_bundle, read_bundle_dir,
};

/// Configuration files are small; this bounds what a mistaken path can make us read.
const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// `--cert-provider`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CertProviderArg {
    #[value(name = "none")]
    None,
    #[value(name = "cert-manager")]
    CertManager,
    #[value(name = "openshift-service-ca")]
    OpenshiftServiceCa,
    /// operator-controller's own certificates (`crate::webhook_certs`).
    #[value(name = "builtin")]
    Builtin,
}

impl From<CertProviderArg> for CertProvider {
    fn from(arg: CertProviderArg) -> CertProvider {
        match arg {
            CertProviderArg::None => CertProvider::None,
            CertProviderArg::CertManager => CertProvider::CertManager,
            CertProviderArg::OpenshiftServiceCa => CertProvider::OpenShiftServiceCa,
            CertProviderArg::Builtin => CertProvider::Builtin,
        }
    }
}

/// Arguments of `operator-controller render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The bundle: a directory holding `manifests/` and `metadata/`, or a bundle image reference
    /// (pulled as `run` pulls: mirrors and blocked registries from registries.conf apply).
    #[arg(long, value_name = "DIR|IMAGE")]
    pub bundle: String,
    /// `spec.namespace`: where the operator is installed.
    #[arg(long = "install-namespace", value_name = "NS")]
    pub install_namespace: String,
    /// `spec.config.inline.watchNamespace` (overrides the one in --config).
    #[arg(long = "watch-namespace", value_name = "NS")]
    pub watch_namespace: Option<String>,
    /// `spec.config.inline` as a JSON or YAML file (`watchNamespace`, `deploymentConfig`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Who provisions webhook certificates.
    #[arg(
        long = "cert-provider",
        value_enum,
        value_name = "PROVIDER",
        default_value = "none"
    )]
    pub cert_provider: CertProviderArg,
    /// Where pulled bundle images are unpacked (reused across runs, keyed by digest).
    #[arg(long = "cache-dir", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Directory of PEM files with extra CA certificates trusted for registries.
    #[arg(long = "pull-cas-dir", value_name = "DIR")]
    pub pull_cas_dir: Option<PathBuf>,
    /// Registries (`host:port` as written in image references) spoken to over plain HTTP.
    #[arg(
        long = "insecure-registries",
        value_name = "HOST:PORT",
        value_delimiter = ','
    )]
    pub insecure_registries: Vec<String>,
    /// Registry credentials: a `.dockerconfigjson` file (the content of a pull secret).
    #[arg(long = "pull-secret", value_name = "FILE")]
    pub pull_secret: Option<PathBuf>,
}

/// Runs `render`; returns the exit status.
pub fn run(args: &RenderArgs, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let opts = match render_options(args) {
        Ok(opts) => opts,
        Err(message) => {
            let _ = writeln!(err, "error: {message}");
            return Exit::Usage;
        }
    };
    let fs = match load(args) {
        Ok(fs) => fs,
        Err(Failure { status, message }) => {
            let _ = writeln!(err, "{message}");
            return status;
        }
    };
    let parsed = match bundle::parse(&fs) {
        Ok(parsed) => parsed,
        Err(e) => {
            let _ = writeln!(err, "{e}");
            return Exit::Invalid;
        }
    };
    let mut rendered = match render::render(&parsed, &opts) {
        Ok(rendered) => rendered,
        Err(e) => {
            let _ = writeln!(err, "{e}");
            return Exit::Invalid;
        }
    };
    if opts.cert_provider == CertProvider::Builtin
        && let Err(e) = add_builtin_certificates(&mut rendered.objects, &opts.install_namespace)
    {
        let _ = writeln!(err, "error: {e}");
        return Exit::Failed;
    }
    for warning in &rendered.warnings {
        let _ = writeln!(err, "warning: {warning}");
    }
    let mut text = String::new();
    for object in render::sorted_like_goldens(&rendered.objects) {
        text.push_str("---\n");
        text.push_str(&to_yaml(object));
    }
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return Exit::Failed;
    }
    Exit::Ok
}

/// `--cert-provider builtin`: what the controller's built-in provider would add, issued once
/// offline: a fresh CA (not printed: nothing could renew from it) signs one serving certificate
/// per webhook Service, whose Secret is added, and the CA bundle is set in the webhook
/// configurations and conversion CRDs.
fn add_builtin_certificates(
    objects: &mut Vec<Value>,
    install_namespace: &str,
) -> Result<(), crate::webhook_certs::WebhookCertError> {
    let needs = olm_operator_core::webhook_certs::serving_needs(objects, install_namespace);
    if needs.is_empty() {
        return Ok(());
    }
    let policy = olm_operator_core::webhook_certs::rotation::Policy::default();
    let (secrets, bundle) = crate::webhook_certs::issue_offline(&policy, &needs)?;
    olm_operator_core::webhook_certs::inject_ca_bundle(objects, &bundle);
    for (need, data) in needs.iter().zip(&secrets) {
        objects.push(crate::webhook_certs::serving_secret_object(need, data));
    }
    Ok(())
}

fn render_options(args: &RenderArgs) -> Result<RenderOptions, String> {
    let mut config = match &args.config {
        None => None,
        Some(path) => Some(read_config(path)?),
    };
    if let Some(ns) = &args.watch_namespace {
        let config = config.get_or_insert_with(|| Value::Object(Default::default()));
        let Some(obj) = config.as_object_mut() else {
            return Err("--watch-namespace needs --config to hold a mapping".into());
        };
        obj.insert("watchNamespace".into(), Value::String(ns.clone()));
    }
    Ok(RenderOptions {
        install_namespace: args.install_namespace.clone(),
        config,
        cert_provider: args.cert_provider.into(),
        ..RenderOptions::default()
    })
}

/// The first document of a JSON or YAML file.
fn read_config(path: &Path) -> Result<Value, String> {
    let bytes = olm_api::regular_file::read_regular(path, MAX_CONFIG_BYTES)
        .map_err(|e| format!("invalid --config: {e}"))?;
    let mut splitter = olm_api::fbc::yaml::DocumentSplitter::new(bytes.as_slice(), 1);
    let doc = match splitter.next_document() {
        Ok(Some(doc)) => doc,
        Ok(None) => return Ok(Value::Null),
        Err(olm_api::fbc::yaml::SplitError::Io(e)) => {
            return Err(format!("invalid --config {}: {e}", path.display()));
        }
        Err(olm_api::fbc::yaml::SplitError::Syntax(e)) => {
            return Err(format!(
                "invalid --config {}: line {}: {}",
                path.display(),
                e.line,
                e.message
            ));
        }
    };
    match olm_api::fbc::yaml::document_to_value(&doc) {
        Ok(v) => Ok(v.map(bundle::manifest::from_go).unwrap_or(Value::Null)),
        Err(e) => Err(format!(
            "invalid --config {}: line {}: {}",
            path.display(),
            e.line,
            e.message
        )),
    }
}

struct Failure {
    status: Exit,
    message: String,
}

fn source_failure(e: BundleSourceError) -> Failure {
    let status = match &e {
        BundleSourceError::Image(image) => match image.kind {
            ImageErrorKind::InvalidReference { .. } => Exit::Usage,
            _ if e.is_content_error() => Exit::Invalid,
            _ => Exit::Failed,
        },
        _ if e.is_content_error() => Exit::Invalid,
        _ => Exit::Failed,
    };
    Failure {
        status,
        message: e.to_string(),
    }
}

fn load(args: &RenderArgs) -> Result<bundle::BundleFs, Failure> {
    let limits = ReadLimits::default();
    let path = Path::new(&args.bundle);
    if path.is_dir() {
        return read_bundle_dir(path, &limits).map_err(source_failure);
    }
    let image = olm_image::ImageRef::parse(&args.bundle).map_err(|reason| Failure {
        status: Exit::Usage,
        message: format!(
            "error: --bundle {:?} is neither a directory nor an image reference ({reason})",
            args.bundle
        ),
    })?;
    let mut config = PullerConfig::new(cache_dir(args.cache_dir.as_deref()));
    config.insecure_registries = args.insecure_registries.clone();
    config.registries = olm_image::RegistriesConfFiles::from_environment();
    config.limits = bundle_image_limits();
    if let Some(dir) = &args.pull_cas_dir {
        config.extra_ca_pem = Some(
            olm_api::regular_file::read_pem_dir(dir, MAX_CONFIG_BYTES).map_err(|e| Failure {
                status: Exit::Usage,
                message: format!("error: invalid --pull-cas-dir: {e}"),
            })?,
        );
    }
    if let Some(file) = &args.pull_secret {
        let bytes =
            olm_api::regular_file::read_regular(file, MAX_CONFIG_BYTES).map_err(|e| Failure {
                status: Exit::Usage,
                message: format!("error: invalid --pull-secret: {e}"),
            })?;
        config.auth = Some(DockerConfig::from_json(&bytes).map_err(|e| Failure {
            status: Exit::Usage,
            message: format!("error: invalid --pull-secret {}: {e}", file.display()),
        })?);
    }
    let puller = Puller::new(config).map_err(|e| Failure {
        status: Exit::Usage,
        message: format!("error: {e}"),
    })?;
    // One cache owner per repository: a new digest of the same repository replaces the old one.
    let owner = format!(
        "render-{}",
        &hex::encode(sha2::Sha256::digest(format!(
            "{}/{}",
            image.registry(),
            image.repository()
        )))[..16]
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure {
            status: Exit::Failed,
            message: format!("failed to start the async runtime: {e}"),
        })?;
    runtime
        .block_on(pull_bundle(&puller, &owner, &args.bundle, &limits))
        .map(|pulled| pulled.fs)
        .map_err(source_failure)
}

/// `--cache-dir`, else `$XDG_CACHE_HOME/operator-controller/bundles`, else
/// `$HOME/.cache/operator-controller/bundles`, else a directory under the system's temp dir.
fn cache_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(dir) = flag {
        return dir.to_path_buf();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })
        .unwrap_or_else(std::env::temp_dir);
    base.join("operator-controller/bundles")
}
