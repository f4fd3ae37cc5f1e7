//! Conformance: every case of `testdata/conformance/render/` (upstream's own golden files for
//! `direct` cases, upstream's provider path for the others; see its README,
//! `testdata/conformance/render.README.md`, whose table this file transcribes case by case).
//! Each case renders to the same set of objects with the same names and equal values, or fails
//! with upstream's exact error text.
#![allow(clippy::unwrap_used)]

mod render_common;

use std::path::PathBuf;

use olm_operator_core::render::{
    self, BundleRenderParams, DeploymentConfig, RenderOptions, Rendered,
};
use render_common::*;

/// How a case is rendered.
#[derive(Clone, Copy)]
enum Path {
    /// Upstream's `generate-manifests.go`: the renderer alone, watch namespace as the target
    /// namespace, `deploymentConfig` from `deployment-config-options.yaml` when given.
    Direct,
    /// Upstream's ClusterExtension provider path.
    Provider,
}

struct Case {
    bundle: &'static str,
    case: &'static str,
    install_namespace: &'static str,
    watch_namespace: Option<&'static str>,
    /// A `configs/` file (a whole `spec.config.inline`) for provider cases, or the
    /// `deploymentConfig` value file / inline YAML for direct cases.
    config: Option<&'static str>,
    cert_provider: &'static str,
    path: Path,
}

fn root() -> PathBuf {
    testdata("conformance/render")
}

fn render_case(c: &Case) -> Result<Rendered, String> {
    let bundle = parse_dir(&root().join("bundles").join(c.bundle))?;
    match c.path {
        Path::Direct => {
            let deployment_config = c.config.map(|text| {
                let value = if text.ends_with(".yaml") {
                    yaml_value(&root().join(text))
                } else {
                    yaml_text_value(text.as_bytes())
                };
                DeploymentConfig::from_value(&value).unwrap().unwrap()
            });
            let params = BundleRenderParams {
                install_namespace: c.install_namespace.into(),
                target_namespaces: c.watch_namespace.map(|ns| vec![ns.to_owned()]),
                cert_provider: cert_provider(c.cert_provider),
                deployment_config,
            };
            render::render_bundle(&bundle, &params).map_err(|e| e.to_string())
        }
        Path::Provider => {
            let config_file = c.config.map(|f| root().join(f));
            let opts = RenderOptions {
                install_namespace: c.install_namespace.into(),
                config: inline_config(config_file.as_deref(), c.watch_namespace),
                cert_provider: cert_provider(c.cert_provider),
                ..RenderOptions::default()
            };
            render::render(&bundle, &opts).map_err(|e| e.to_string())
        }
    }
}

fn check(c: &Case) {
    let expected_dir = root()
        .join("expected-manifests")
        .join(c.bundle)
        .join(c.case);
    assert!(expected_dir.is_dir(), "{}", expected_dir.display());
    let outcome = render_case(c);
    match golden_error(&expected_dir) {
        Some(want) => match outcome {
            Err(got) => assert_eq!(got, want, "{}/{}", c.bundle, c.case),
            Ok(r) => panic!(
                "{}/{}: rendered {} objects, expected error {want:?}",
                c.bundle,
                c.case,
                r.objects.len()
            ),
        },
        None => {
            let rendered = outcome.unwrap_or_else(|e| panic!("{}/{}: {e}", c.bundle, c.case));
            let expected = golden_objects(&expected_dir);
            if let Err(diff) = compare_objects(&rendered.objects, &expected) {
                panic!("{}/{}: {diff}", c.bundle, c.case);
            }
        }
    }
}

macro_rules! cases {
    ($($test:ident: $bundle:literal / $case:literal, ns $ns:literal, watch $watch:expr, config $config:expr, provider $provider:literal, $path:ident;)*) => {
        $(
            #[test]
            fn $test() {
                check(&Case {
                    bundle: $bundle,
                    case: $case,
                    install_namespace: $ns,
                    watch_namespace: $watch,
                    config: $config,
                    cert_provider: $provider,
                    path: Path::$path,
                });
            }
        )*

        /// The table above covers every golden directory of the data set.
        #[test]
        fn every_golden_directory_is_a_case() {
            let listed: std::collections::BTreeSet<String> =
                [$(format!("{}/{}", $bundle, $case)),*].into_iter().collect();
            let mut on_disk = std::collections::BTreeSet::new();
            for bundle in std::fs::read_dir(root().join("expected-manifests")).unwrap() {
                let bundle = bundle.unwrap();
                for case in std::fs::read_dir(bundle.path()).unwrap() {
                    on_disk.insert(format!(
                        "{}/{}",
                        bundle.file_name().to_string_lossy(),
                        case.unwrap().file_name().to_string_lossy()
                    ));
                }
            }
            println!("conformance/render: {} cases", listed.len());
            assert_eq!(listed, on_disk);
            assert_eq!(listed.len(), 38);
        }
    };
}

cases! {
    argocd_all_namespaces: "argocd-operator.v0.6.0" / "all-namespaces", ns "argocd-system", watch None, config None, provider "none", Direct;
    argocd_single_namespace: "argocd-operator.v0.6.0" / "single-namespace", ns "argocd-system", watch Some("argocd-watch"), config None, provider "none", Direct;
    argocd_own_namespace: "argocd-operator.v0.6.0" / "own-namespace", ns "argocd-system", watch Some("argocd-system"), config None, provider "none", Direct;
    webhook_all_webhook_types: "webhook-operator.v0.0.5" / "all-webhook-types", ns "webhook-system", watch None, config None, provider "none", Direct;
    argocd_with_deploymentconfig_options: "argocd-operator.v0.6.0" / "with-deploymentconfig-options", ns "argocd-system", watch None, config Some("deployment-config-options.yaml"), provider "none", Direct;
    argocd_with_empty_affinity: "argocd-operator.v0.6.0" / "with-empty-affinity", ns "argocd-system", watch None, config Some("affinity: {}\n"), provider "none", Direct;
    argocd_with_empty_affinity_subtype: "argocd-operator.v0.6.0" / "with-empty-affinity-subtype", ns "argocd-system", watch None, config Some("affinity: {nodeAffinity: {}}\n"), provider "none", Direct;
    webhook_cert_manager: "webhook-operator.v0.0.5" / "cert-manager", ns "webhook-system", watch None, config None, provider "cert-manager", Provider;
    webhook_openshift_service_ca: "webhook-operator.v0.0.5" / "openshift-service-ca", ns "webhook-system", watch None, config None, provider "openshift-service-ca", Provider;
    webhook_cert_manager_deploymentconfig_cert_volume: "webhook-operator.v0.0.5" / "cert-manager-deploymentconfig-cert-volume", ns "webhook-system", watch None, config Some("configs/webhook-cert-volume-override.yaml"), provider "cert-manager", Provider;
    webhook_no_cert_provider: "webhook-operator.v0.0.5" / "no-cert-provider", ns "webhook-system", watch None, config None, provider "none", Provider;
    webhook_watch_namespace_on_all_namespaces_only: "webhook-operator.v0.0.5" / "watch-namespace-on-all-namespaces-only", ns "webhook-system", watch Some("webhook-watch"), config None, provider "cert-manager", Provider;
    nocw_single_namespace: "webhook-operator-nocw.v0.0.5" / "single-namespace", ns "webhook-system", watch Some("webhook-watch"), config None, provider "cert-manager", Provider;
    nocw_own_namespace: "webhook-operator-nocw.v0.0.5" / "own-namespace", ns "webhook-system", watch Some("webhook-system"), config None, provider "cert-manager", Provider;
    nocw_missing_watch_namespace: "webhook-operator-nocw.v0.0.5" / "missing-watch-namespace", ns "webhook-system", watch None, config None, provider "cert-manager", Provider;
    apiservice_definitions: "webhook-operator-apiservice.v0.0.5" / "apiservice-definitions", ns "webhook-system", watch None, config None, provider "cert-manager", Provider;
    conversion_webhook_with_single_namespace: "webhook-operator-cw-single.v0.0.5" / "conversion-webhook-with-single-namespace", ns "webhook-system", watch None, config None, provider "cert-manager", Provider;
    forbidden_webhook_rules: "webhook-operator-forbidden-rule.v0.0.5" / "forbidden-webhook-rules", ns "webhook-system", watch None, config None, provider "cert-manager", Provider;
    preserve_unknown_fields: "webhook-operator-preserve-unknown.v0.0.5" / "preserve-unknown-fields", ns "webhook-system", watch None, config None, provider "cert-manager", Provider;
    manifests_subdirectory: "webhook-operator-subdir.v0.0.5" / "manifests-subdirectory", ns "webhook-system", watch None, config None, provider "cert-manager", Provider;
    single_only_single_namespace: "single-only-operator.v0.0.1" / "single-namespace", ns "single-system", watch Some("single-watch"), config None, provider "none", Provider;
    single_only_missing_watch_namespace: "single-only-operator.v0.0.1" / "missing-watch-namespace", ns "single-system", watch None, config None, provider "none", Provider;
    single_only_watch_namespace_is_install_namespace: "single-only-operator.v0.0.1" / "watch-namespace-is-install-namespace", ns "single-system", watch Some("single-system"), config None, provider "none", Provider;
    own_only_own_namespace: "own-only-operator.v0.0.1" / "own-namespace", ns "own-system", watch Some("own-system"), config None, provider "none", Provider;
    own_only_no_watch_namespace: "own-only-operator.v0.0.1" / "no-watch-namespace", ns "own-system", watch None, config None, provider "none", Provider;
    own_only_watch_namespace_not_install_namespace: "own-only-operator.v0.0.1" / "watch-namespace-not-install-namespace", ns "own-system", watch Some("other-ns"), config None, provider "none", Provider;
    argocd_bad_watch_namespace_pattern: "argocd-operator.v0.6.0" / "bad-watch-namespace-pattern", ns "argocd-system", watch Some("Argo_Watch"), config None, provider "none", Provider;
    argocd_empty_watch_namespace: "argocd-operator.v0.6.0" / "empty-watch-namespace", ns "argocd-system", watch None, config Some("configs/empty-watch-namespace.yaml"), provider "none", Provider;
    argocd_deploymentconfig_wrong_type: "argocd-operator.v0.6.0" / "deploymentconfig-wrong-type", ns "argocd-system", watch None, config Some("configs/deploymentconfig-wrong-type.yaml"), provider "none", Provider;
    argocd_properties_all_namespaces: "argocd-operator-properties.v0.6.0" / "all-namespaces", ns "argocd-system", watch None, config None, provider "none", Provider;
    argocd_maxocp_unquoted_all_namespaces: "argocd-operator-maxocp-unquoted.v0.6.0" / "all-namespaces", ns "argocd-system", watch None, config None, provider "none", Provider;
    multi_sa_all_namespaces: "multi-sa-operator.v0.1.0" / "all-namespaces", ns "multi-system", watch None, config None, provider "none", Provider;
    multi_sa_single_namespace: "multi-sa-operator.v0.1.0" / "single-namespace", ns "multi-system", watch Some("multi-watch"), config None, provider "none", Provider;
    multi_sa_deploymentconfig_env_override: "multi-sa-operator.v0.1.0" / "deploymentconfig-env-override", ns "multi-system", watch None, config Some("configs/env-override.yaml"), provider "none", Provider;
    multi_sa_deploymentconfig_volume_override: "multi-sa-operator.v0.1.0" / "deploymentconfig-volume-override", ns "multi-system", watch None, config Some("configs/volume-override.yaml"), provider "none", Provider;
    multi_sa_deploymentconfig_empty_resources: "multi-sa-operator.v0.1.0" / "deploymentconfig-empty-resources", ns "multi-system", watch None, config Some("configs/empty-resources.yaml"), provider "none", Provider;
    multi_sa_deploymentconfig_annotation_collision: "multi-sa-operator.v0.1.0" / "deploymentconfig-annotation-collision", ns "multi-system", watch None, config Some("configs/annotation-collision.yaml"), provider "none", Provider;
    name_length_edge_all_namespaces: "nle.v0.0.1" / "all-namespaces", ns "nle-system", watch None, config None, provider "cert-manager", Provider;
}
