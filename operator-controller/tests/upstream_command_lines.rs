//! Upstream v1.11's release manifests start our binaries unchanged (issue 24 items 1–2): the
//! `command` and `args` of every Deployment in `standard.yaml` and `experimental.yaml` parse,
//! name the controller mode, and mean what upstream's flags mean — or, for gates we do not
//! implement, refuse by name.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use clap::Parser;
use olm_e2e::upstream_manifest::{
    MANIFESTS, binary_name, command_line, deployments, manager, objects,
};
use olm_operator_core::render::CertProvider;

fn addr(s: &str) -> Option<SocketAddr> {
    Some(s.parse().unwrap())
}

#[test]
fn every_deployment_of_upstreams_manifests_starts_our_binaries() {
    let mut checked = 0;
    for manifest in MANIFESTS {
        let objects = objects(manifest);
        for deployment in deployments(&objects) {
            let line = command_line(manager(deployment));
            let argv =
                olm_runtime::flags::with_default_mode(line.iter().map(Into::into).collect(), "run");
            let experimental = manifest == "experimental.yaml";
            match binary_name(&line) {
                "operator-controller" => {
                    let cli = operator_controller::cli::Cli::try_parse_from(argv)
                        .unwrap_or_else(|e| panic!("{manifest}: {line:?}: {e}"));
                    let operator_controller::cli::Command::Run(args) = cli.command else {
                        panic!("{manifest}: {line:?} is not the controller mode");
                    };
                    let opts = operator_controller::cmd::run::RunOptions::from_args(*args);
                    if experimental {
                        let Err(operator_controller::cmd::run::ArgsError::Refused(why)) = opts
                        else {
                            panic!("{manifest}: BoxcutterRuntime=true must be refused");
                        };
                        assert!(
                            why.starts_with("feature gate BoxcutterRuntime=true is not supported"),
                            "{why}"
                        );
                    } else {
                        let opts = opts.unwrap();
                        assert_eq!(opts.metrics_addr, addr("0.0.0.0:8443"));
                        assert_eq!(opts.health_addr, addr("0.0.0.0:8081"));
                        assert_eq!(opts.pprof_addr, None);
                        assert_eq!(
                            opts.metrics_tls.as_ref().unwrap().cert.to_str(),
                            Some("/var/certs/tls.crt")
                        );
                        assert!(opts.leader_elect);
                        assert_eq!(
                            opts.cache_dir.to_str(),
                            Some("/var/cache/operator-controller")
                        );
                        assert_eq!(opts.cert_provider, Some(CertProvider::CertManager));
                        assert!(!opts.single_own_namespace);
                        assert!(!opts.deployment_config);
                        assert_eq!(
                            opts.catalogd_cas_dir.as_ref().and_then(|p| p.to_str()),
                            Some("/var/ca-certs")
                        );
                    }
                }
                "catalogd" => {
                    let cli = catalogd::cli::Cli::try_parse_from(argv)
                        .unwrap_or_else(|e| panic!("{manifest}: {line:?}: {e}"));
                    let catalogd::cli::Command::Run(args) = cli.command else {
                        panic!("{manifest}: {line:?} is not the controller mode");
                    };
                    let opts = catalogd::cmd::run::RunOptions::from_args(*args);
                    if experimental {
                        let Err(catalogd::cmd::run::ArgsError::Refused(why)) = opts else {
                            panic!("{manifest}: GraphQLCatalogQueries=true must be refused");
                        };
                        assert!(
                            why.starts_with(
                                "feature gate GraphQLCatalogQueries=true is not supported"
                            ),
                            "{why}"
                        );
                    } else {
                        let opts = opts.unwrap();
                        assert!(!opts.metas, "APIV1MetasHandler=false");
                        assert_eq!(opts.metrics.as_ref().map(|m| m.0), addr("0.0.0.0:7443"));
                        assert_eq!(opts.catalogs_server_addr, "0.0.0.0:8443".parse().unwrap());
                        assert_eq!(opts.webhook_addr, addr("0.0.0.0:9443"));
                        assert_eq!(opts.external_address, "catalogd-service.olmv1-system.svc");
                        assert_eq!(opts.cache_dir.to_str(), Some("/var/cache/catalogd"));
                        assert!(opts.leader_elect);
                    }
                }
                other => panic!("{manifest}: unexpected binary {other:?}"),
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "two Deployments in each of two manifests");
}

#[test]
fn feature_gate_errors_are_upstreams_usage_errors() {
    let parse = |gates: &str| {
        let cli = operator_controller::cli::Cli::try_parse_from([
            "operator-controller",
            "run",
            &format!("--feature-gates={gates}"),
        ])
        .unwrap();
        let operator_controller::cli::Command::Run(args) = cli.command else {
            panic!("run")
        };
        operator_controller::cmd::run::RunOptions::from_args(*args).err()
    };
    assert_eq!(
        parse("NoSuchGate=true"),
        Some(operator_controller::cmd::run::ArgsError::Usage(
            r#"invalid argument "NoSuchGate=true" for "--feature-gates" flag: unrecognized feature gate: NoSuchGate"#
                .into()
        ))
    );
    assert!(matches!(
        parse("BundleReleaseSupport=true"),
        Some(operator_controller::cmd::run::ArgsError::Refused(_))
    ));
    assert_eq!(
        parse("BundleReleaseSupport=false,DeploymentConfig=true"),
        None
    );
}

#[test]
fn metrics_flags_follow_upstreams_rules() {
    let parse = |extra: &[&str]| {
        let mut argv = vec!["operator-controller", "run"];
        argv.extend(extra);
        let cli = operator_controller::cli::Cli::try_parse_from(argv).unwrap();
        let operator_controller::cli::Command::Run(args) = cli.command else {
            panic!("run")
        };
        operator_controller::cmd::run::RunOptions::from_args(*args)
    };
    // Without a certificate there is no metrics listener at all (never plain HTTP).
    assert_eq!(parse(&[]).unwrap().metrics_addr, None);
    assert_eq!(
        parse(&["--metrics-bind-address=:8443"]).err(),
        Some(operator_controller::cmd::run::ArgsError::Usage(
            "metrics-bind-address requires tls-cert and tls-key flags to be set".into()
        ))
    );
    assert_eq!(
        parse(&["--tls-cert=/c"]).err(),
        Some(operator_controller::cmd::run::ArgsError::Usage(
            "unable to configure TLS certificates: tls-cert and tls-key flags must be used together"
                .into()
        ))
    );
    // --feature-defaults=upstream: upstream's standard feature set.
    let upstream = parse(&["--feature-defaults=upstream"]).unwrap();
    assert!(!upstream.single_own_namespace && !upstream.deployment_config);
    assert_eq!(upstream.cert_provider, Some(CertProvider::CertManager));
    // Ours: both on, the certificate provider detected at start.
    let ours = parse(&[]).unwrap();
    assert!(ours.single_own_namespace && ours.deployment_config);
    assert_eq!(ours.cert_provider, None);
}
