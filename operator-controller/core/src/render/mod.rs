//! Rendering a registry+v1 bundle into the Kubernetes objects OLM v1 applies.
//!
//! Input: a parsed [`RegistryV1Bundle`] and [`RenderOptions`] (install namespace, the raw
//! `spec.config.inline`, the certificate provider). Output: [`Rendered`]: the objects in upstream's
//! generator order as JSON in Go's shape (so `status: {}`, `strategy: {}` and friends survive),
//! plus what the release record needs; or a [`RenderError`] with upstream's message. No IO.
//!
//! [`render`] is upstream's `RegistryV1ManifestProvider.Get` after the bundle is read:
//!
//! 1. refuse owned `apiServiceDefinitions`; refuse webhooks without a certificate provider;
//!    without the Single/OwnNamespace feature, refuse bundles lacking AllNamespaces; refuse
//!    bundles supporting none of AllNamespaces/SingleNamespace/OwnNamespace
//!    (`unsupported bundle: ...`, retried);
//! 2. validate the configuration against the schema derived from the install modes
//!    ([`config`]; `invalid ClusterExtension configuration: ...`, terminal);
//! 3. decode `deploymentConfig` ([`deployment_config`]; `invalid deploymentConfig: ...`, terminal);
//! 4. [`render_bundle`]: upstream's `BundleRenderer.Render`: the bundle validators (all errors
//!    joined by newlines), the target namespaces (`invalid option(s): ...`), then the generators
//!    ([`generators`]).
//!
//! Upstream gates Single/OwnNamespace installs and `deploymentConfig` behind feature gates that
//! are off by default; both are on by default here ([`RenderOptions::default`]) and can be turned
//! off for parity.

pub mod certs;
pub mod config;
pub mod deployment_config;
pub mod generators;
pub mod names;
pub mod yaml;

use std::collections::BTreeMap;

use olm_api::v1::ConditionReason;
use serde_json::{Map, Value};

use crate::bundle::RegistryV1Bundle;
use crate::bundle::csv::{ALL_NAMESPACES, MULTI_NAMESPACE, OWN_NAMESPACE, SINGLE_NAMESPACE};
pub use certs::CertProvider;
pub use deployment_config::DeploymentConfig;

/// How to render a bundle for one ClusterExtension.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    /// `spec.namespace`.
    pub install_namespace: String,
    /// `spec.config.inline`; `None` when `spec.config` is unset.
    pub config: Option<Value>,
    pub cert_provider: CertProvider,
    /// Upstream's `SingleOwnNamespaceInstallSupport` feature gate.
    pub single_own_namespace: bool,
    /// Upstream's `DeploymentConfig` feature gate.
    pub deployment_config: bool,
}

impl Default for RenderOptions {
    fn default() -> RenderOptions {
        RenderOptions {
            install_namespace: String::new(),
            config: None,
            cert_provider: CertProvider::None,
            single_own_namespace: true,
            deployment_config: true,
        }
    }
}

impl RenderOptions {
    /// Options for `install_namespace` with everything else defaulted.
    pub fn new(install_namespace: impl Into<String>) -> RenderOptions {
        RenderOptions {
            install_namespace: install_namespace.into(),
            ..RenderOptions::default()
        }
    }
}

/// What rendering produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    /// The objects in generator order.
    pub objects: Vec<Value>,
    /// The CSV's annotations, `olm.properties` included (upstream stores them on the release).
    pub annotations: BTreeMap<String, String>,
    pub package_name: String,
    /// The CSV's name (the bundle name).
    pub bundle_name: String,
    /// `spec.version` of the CSV.
    pub bundle_version: String,
    /// Things a bundle author should know (see [`crate::bundle::properties`]).
    pub warnings: Vec<String>,
}

/// Why a bundle could not be rendered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The bundle uses something OLM v1 does not support.
    #[error("unsupported bundle: {0}")]
    Unsupported(String),
    /// `spec.config` does not fit the bundle's configuration schema.
    #[error("invalid ClusterExtension configuration: {0}")]
    InvalidConfiguration(String),
    /// `deploymentConfig` passed the schema but cannot be decoded.
    #[error("invalid deploymentConfig: {0}")]
    InvalidDeploymentConfig(String),
    /// The bundle validators' findings, in order.
    #[error("{}", .0.join("\n"))]
    InvalidBundle(Vec<String>),
    /// The target namespaces do not fit the install modes.
    #[error("invalid option(s): {0}")]
    InvalidOptions(String),
    /// A generator refused the bundle.
    #[error("{0}")]
    Generate(String),
}

impl RenderError {
    /// The `Progressing` reason (install-path.md §1 item 5: only configuration errors are
    /// `InvalidConfiguration`; everything else is retried).
    pub fn reason(&self) -> ConditionReason {
        match self {
            RenderError::InvalidConfiguration(_) | RenderError::InvalidDeploymentConfig(_) => {
                ConditionReason::InvalidConfiguration
            }
            _ => ConditionReason::Retrying,
        }
    }

    /// Whether only a spec change can fix it.
    pub fn is_terminal(&self) -> bool {
        self.reason() == ConditionReason::InvalidConfiguration
    }
}

/// Renders `bundle` for one ClusterExtension, as upstream's controller does.
pub fn render(bundle: &RegistryV1Bundle, opts: &RenderOptions) -> Result<Rendered, RenderError> {
    let csv = &bundle.csv;
    if csv.owned_api_services > 0 {
        // "Defintions": upstream's spelling.
        return Err(RenderError::Unsupported(
            "apiServiceDefintions are not supported".into(),
        ));
    }
    if !csv.webhooks.is_empty() && !opts.cert_provider.is_some() {
        return Err(RenderError::Unsupported(
            "webhookDefinitions are not supported".into(),
        ));
    }
    if !opts.single_own_namespace && !csv.supports(ALL_NAMESPACES) {
        return Err(RenderError::Unsupported(
            "bundle does not support AllNamespaces install mode".into(),
        ));
    }
    if !(csv.supports(ALL_NAMESPACES)
        || csv.supports(SINGLE_NAMESPACE)
        || csv.supports(OWN_NAMESPACE))
    {
        return Err(RenderError::Unsupported(
            "bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] install modes".into(),
        ));
    }

    let mut params = BundleRenderParams {
        install_namespace: opts.install_namespace.clone(),
        target_namespaces: None,
        cert_provider: opts.cert_provider,
        deployment_config: None,
    };
    if opts.single_own_namespace || opts.config.is_some() {
        let schema = config::config_schema(&csv.supported_install_modes(), opts.deployment_config);
        let validated =
            config::validate_config(opts.config.as_ref(), &schema, &opts.install_namespace)
                .map_err(RenderError::InvalidConfiguration)?;
        if let Some(ns) = validated.watch_namespace {
            params.target_namespaces = Some(vec![ns]);
        }
        if opts.deployment_config
            && let Some(value) = &validated.deployment_config
        {
            params.deployment_config = DeploymentConfig::from_value(value).map_err(|e| {
                RenderError::InvalidDeploymentConfig(format!(
                    "failed to unmarshal deploymentConfig: {e}"
                ))
            })?;
        }
    }
    render_bundle(bundle, &params)
}

/// The inputs of upstream's `BundleRenderer.Render` (no install-mode gating, no configuration
/// schema: what upstream's own golden files are made with).
#[derive(Clone, Debug, Default)]
pub struct BundleRenderParams {
    pub install_namespace: String,
    /// `WithTargetNamespaces`; `None` for the bundle's default (`[""]` when it supports
    /// AllNamespaces).
    pub target_namespaces: Option<Vec<String>>,
    pub cert_provider: CertProvider,
    pub deployment_config: Option<DeploymentConfig>,
}

/// Upstream's `BundleRenderer.Render`: validators, target namespaces, generators.
pub fn render_bundle(
    bundle: &RegistryV1Bundle,
    params: &BundleRenderParams,
) -> Result<Rendered, RenderError> {
    let findings = crate::bundle::validate::validate(bundle);
    if !findings.is_empty() {
        return Err(RenderError::InvalidBundle(findings));
    }
    let csv = &bundle.csv;
    let target_namespaces = match &params.target_namespaces {
        Some(ns) if !ns.is_empty() => ns.clone(),
        _ if csv.supports(ALL_NAMESPACES) => vec![String::new()],
        _ => Vec::new(),
    };
    if let Err(e) = validate_target_namespaces(
        &csv.supported_install_modes(),
        &params.install_namespace,
        &target_namespaces,
    ) {
        return Err(RenderError::InvalidOptions(format!(
            "invalid target namespaces {}: {e}",
            go_list(&target_namespaces)
        )));
    }
    let ctx = generators::Context {
        bundle,
        install_namespace: &params.install_namespace,
        target_namespaces: &target_namespaces,
        cert_provider: params.cert_provider,
        deployment_config: params.deployment_config.as_ref(),
    };
    let objects = generators::generate(&ctx).map_err(RenderError::Generate)?;
    Ok(Rendered {
        objects,
        annotations: csv.annotations.clone(),
        package_name: bundle.annotations.package.clone(),
        bundle_name: csv.name.clone(),
        bundle_version: csv.version.clone(),
        warnings: bundle.warnings.clone(),
    })
}

/// Go's `%v` of a `[]string`.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Upstream's `validateTargetNamespaces`.
fn validate_target_namespaces(
    supported: &[String],
    install_namespace: &str,
    targets: &[String],
) -> Result<(), String> {
    let has = |m: &str| supported.iter().any(|s| s == m);
    let set: std::collections::BTreeSet<&str> = targets.iter().map(String::as_str).collect();
    let modes = go_list(supported);
    match set.len() {
        0 => {
            return Err(if has(MULTI_NAMESPACE) {
                "at least one target namespace must be specified".into()
            } else {
                "exactly one target namespace must be specified".into()
            });
        }
        1 if set.contains("") => {
            if has(ALL_NAMESPACES) {
                return Ok(());
            }
            return Err(format!(
                "supported install modes {modes} do not support targeting all namespaces"
            ));
        }
        1 => {
            if targets[0] == install_namespace {
                if !has(OWN_NAMESPACE) {
                    return Err(format!(
                        "supported install modes {modes} do not support targeting own namespace"
                    ));
                }
                return Ok(());
            }
            if has(SINGLE_NAMESPACE) {
                return Ok(());
            }
        }
        _ => {
            if !has(OWN_NAMESPACE) && set.contains(install_namespace) {
                return Err(format!(
                    "supported install modes {modes} do not support targeting own namespace"
                ));
            }
            if has(MULTI_NAMESPACE) && !set.contains("") {
                return Ok(());
            }
        }
    }
    Err(format!(
        "supported install modes {modes} do not support target namespaces {}",
        go_list(targets)
    ))
}

/// `metadata.name` of a rendered object.
pub fn object_name(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `kind` of a rendered object.
pub fn object_kind(object: &Value) -> &str {
    object.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// `metadata.namespace` of a rendered object (empty when cluster-scoped).
pub fn object_namespace(object: &Value) -> &str {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Objects sorted as upstream's golden files list them: by kind, then namespace, then name
/// (a stable sort, so same-named duplicates keep their generator order).
pub fn sorted_like_goldens(objects: &[Value]) -> Vec<&Value> {
    let mut sorted: Vec<&Value> = objects.iter().collect();
    sorted.sort_by(|a, b| {
        (object_kind(a), object_namespace(a), object_name(a)).cmp(&(
            object_kind(b),
            object_namespace(b),
            object_name(b),
        ))
    });
    sorted
}

/// A map of strings as JSON.
fn string_map(map: &BTreeMap<String, String>) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modes(m: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = m.iter().map(|s| (*s).to_owned()).collect();
        v.sort();
        v
    }

    // Cases from upstream's render_test.go (Test_BundleRenderer_ValidatesRenderOptions and
    // friends), with their messages.
    #[test]
    fn target_namespaces_are_checked_against_install_modes() {
        let all = modes(&["AllNamespaces"]);
        assert_eq!(
            validate_target_namespaces(&all, "ns", &[String::new()]),
            Ok(())
        );
        assert_eq!(
            validate_target_namespaces(&all, "ns", &["ns".into()]),
            Err(
                "supported install modes [AllNamespaces] do not support targeting own namespace"
                    .into()
            )
        );
        assert_eq!(
            validate_target_namespaces(&all, "ns", &["other".into()]),
            Err(
                "supported install modes [AllNamespaces] do not support target namespaces [other]"
                    .into()
            )
        );
        let own = modes(&["OwnNamespace"]);
        assert_eq!(
            validate_target_namespaces(&own, "ns", &[String::new()]),
            Err(
                "supported install modes [OwnNamespace] do not support targeting all namespaces"
                    .into()
            )
        );
        assert_eq!(
            validate_target_namespaces(&own, "ns", &[]),
            Err("exactly one target namespace must be specified".into())
        );
        let multi = modes(&["MultiNamespace"]);
        assert_eq!(
            validate_target_namespaces(&multi, "ns", &[]),
            Err("at least one target namespace must be specified".into())
        );
        assert_eq!(
            validate_target_namespaces(&multi, "ns", &["a".into(), "b".into()]),
            Ok(())
        );
        assert_eq!(
            validate_target_namespaces(&multi, "ns", &["a".into(), "ns".into()]),
            Err(
                "supported install modes [MultiNamespace] do not support targeting own namespace"
                    .into()
            )
        );
        let single = modes(&["SingleNamespace"]);
        assert_eq!(
            validate_target_namespaces(&single, "ns", &["a".into()]),
            Ok(())
        );
        assert_eq!(
            validate_target_namespaces(&single, "ns", &["a".into(), "b".into()]),
            Err(
                "supported install modes [SingleNamespace] do not support target namespaces [a b]"
                    .into()
            )
        );
    }

    #[test]
    fn only_configuration_errors_are_terminal() {
        assert!(RenderError::InvalidConfiguration("x".into()).is_terminal());
        assert!(RenderError::InvalidDeploymentConfig("x".into()).is_terminal());
        assert!(!RenderError::Unsupported("x".into()).is_terminal());
        assert_eq!(
            RenderError::InvalidBundle(vec!["a".into(), "b".into()]).to_string(),
            "a\nb"
        );
        assert_eq!(
            RenderError::Unsupported("x".into()).reason(),
            ConditionReason::Retrying
        );
    }
}
