//! `operator-controller preview`: what the controller would do for a ClusterExtension —
//! install, upgrade or leave it — object by object, without writing anything.
//!
//! Input: [`Args`]: a ClusterExtension from a file (`-f`, new or changed) or one on the
//! cluster (`--extension NAME`, with optional `--version`/`--channel` overrides), and the
//! controller's settings that shape the outcome (puller, feature gates, certificate provider,
//! data-aware CRD upgrade safety, `--honor-service-account`). Output: an [`Exit`] status; the
//! report on stdout (human text, coloured only on a terminal, or one JSON object). Network: the
//! Kubernetes API (reads, and server-side applies with `dryRun=All` only), catalogd, the bundle's
//! registry; the bundle is unpacked under `--cache-path` (a temporary directory, removed
//! afterwards, when unset).
//!
//! It runs the reconcile's steps with the controller's own code ([`compute`]): installed state
//! from the release Secrets, ClusterCatalogs and resolution, pull, parse, render, the release
//! plan, the CRD upgrade-safety preflight ([`crate::controller::preflight`]) and
//! [`crate::apply::Applier::preview`] (the checks of `Applier::check` — plan, namespaces,
//! permissions, live reads, collisions, dry run — keeping the live and dry-run objects). The
//! comparison is [`olm_operator_core::preview`]'s. The only mutating requests are the dry runs
//! and, with `--honor-service-account` and a `spec.serviceAccount`, SubjectAccessReviews (which
//! store nothing). Not done: the built-in webhook certificate provider's Secrets and CA bundles
//! (its CA bundles are not compared), and the writes themselves.
//!
//! `spec.install.approval` (issue 26): when the controller would hold the bundle for approval
//! (`Manual` without that `approvedVersion`, or `AutomaticUnlessEscalation` with a widening or a
//! CRD warning), a note says so and why; the exit status and `wouldApply` still describe the
//! change itself, as it would be applied once approved.
//!
//! | status | meaning |
//! |--------|---------|
//! | 0      | the controller would apply the change (or keep the installed release applied) |
//! | 1      | the controller would refuse it; the message it would write is printed |
//! | 2      | usage error (flags, unreadable file, unknown extension) |
//! | 3      | the preview could not be made (cluster API, catalogd, registry, encoding) |
//!
//! JSON (`-o json`), one object ([`olm_operator_core::preview::report::Report`]):
//!
//! ```text
//! {"extension": NAME, "package": P,
//!  "installed": {"name", "version"} | null,
//!  "target": {"name", "version", "catalog", "image"} | null,
//!  "action": "install" | "upgrade" | "retry" | "unchanged" | "keep-installed" | "none",
//!  "wouldApply": bool, "message": the controller's refusal ("" when it would apply),
//!  "newerNotChosen": [{"name", "version", "catalog", "reasons": [text]}],
//!  "objects": [{"apiVersion", "kind", "namespace"?, "name",
//!               "change": "create" | "update" | "unchanged" | "delete" | "kept" | "unknown",
//!               "diff"?: unified diff of our fields, live -> after apply,
//!               "keptFields"?: [{"manager", "fields": [path]}], "reason"?: text}],
//!  "rbac": [{"kind", "namespace"?, "name", "replaces"?: the deleted role it takes the place of,
//!            "added": [rule], "removed": [rule],
//!            "widening": [{"kind": "Wildcard" | "Escalation" | "NewResource" | "NewVerb" |
//!                          "WiderNames", "what": "verb group/resource"}]}],
//!  "crds": [{"name", "verdict": "safe" | "unsafe" | "allowed" | "skipped", "upstream"?: text}],
//!  "dataAware": [text], "crdsKeptForCustomResources": [name],
//!  "webhooks": [{"kind", "configuration", "added", "removed", "changed"}],
//!  "notes": [text]}
//! ```
//!
//! A rule is `{"apiGroups"?, "resources"?, "resourceNames"?, "nonResourceURLs"?, "verbs"}`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::ValueEnum;
use olm_runtime::exit::Exit;
use olm_runtime::gates::FeatureDefaults;

use crate::catalog_source::http::ReadIdleArgs;
use crate::cmd::render::CertProviderArg;

mod compute;
mod inputs;

/// How the report is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Text for people (coloured on a terminal unless NO_COLOR is set).
    Human,
    /// One JSON object (see the module documentation).
    Json,
}

/// Arguments of `operator-controller preview`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A ClusterExtension manifest (YAML or JSON): a new extension, or a changed spec of one
    /// on the cluster (same name).
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        required_unless_present = "extension",
        conflicts_with = "extension"
    )]
    pub file: Option<PathBuf>,
    /// The ClusterExtension NAME on the cluster, as it is (or with the overrides below).
    #[arg(long, value_name = "NAME")]
    pub extension: Option<String>,
    /// Override `spec.source.catalog.version` of `--extension` (empty: no range).
    #[arg(long, value_name = "RANGE", conflicts_with = "file")]
    pub version: Option<String>,
    /// Override `spec.source.catalog.channels` of `--extension`. Repeatable.
    #[arg(long = "channel", value_name = "C", conflicts_with = "file")]
    pub channels: Vec<String>,
    /// Kubeconfig, instead of $KUBECONFIG or the in-cluster configuration.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace of the controller's release Secrets.
    #[arg(long, value_name = "NAMESPACE", default_value = "olmv1-system")]
    pub system_namespace: String,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "human")]
    pub output: Output,
    /// Directory of PEM files with the CA certificates of catalogd's HTTPS server (as `run`).
    #[arg(long, value_name = "DIR")]
    pub catalogd_cas_dir: Option<PathBuf>,
    #[command(flatten)]
    pub catalogd_read: ReadIdleArgs,
    /// Directory of PEM files with extra CA certificates trusted for registries (as `run`).
    #[arg(long, value_name = "DIR")]
    pub pull_cas_dir: Option<PathBuf>,
    /// Registries (`host:port`) spoken to over plain HTTP (as `run`).
    #[arg(long, value_name = "HOST:PORT", value_delimiter = ',')]
    pub insecure_registries: Vec<String>,
    /// Directory for the unpacked bundle; unset: a temporary directory, removed afterwards.
    #[arg(long, value_name = "DIR")]
    pub cache_path: Option<PathBuf>,
    /// Feature gates, `Name=bool,...`, as `run` takes them (rendering follows them).
    #[arg(long, value_name = "GATES", action = clap::ArgAction::Append)]
    pub feature_gates: Vec<String>,
    /// The defaults of gates --feature-gates does not name: ours, or upstream v1.11's.
    #[arg(long, value_name = "SET", value_enum, default_value = "ours")]
    pub feature_defaults: FeatureDefaults,
    /// The webhook certificate provider, as `run` takes it (unset: detected as `run` does).
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub cert_provider: Option<CertProviderArg>,
    /// Run the data-aware step of the CRD upgrade-safety preflight, as the controller does
    /// with this flag.
    #[arg(long)]
    pub crd_upgrade_safety_data_aware: bool,
    /// Check as `spec.serviceAccount`, as the controller does with this flag.
    #[arg(long)]
    pub honor_service_account: bool,
}

/// What went wrong before a report existed.
pub(crate) enum Failure {
    Usage(String),
    Runtime(String),
}

/// Runs `preview`: see the module table for the exit statuses.
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(err, "failed to start the async runtime: {e}");
            return Exit::Failed;
        }
    };
    let report = match runtime.block_on(compute::preview(args)) {
        Ok(report) => report,
        Err(Failure::Usage(message)) => {
            let _ = writeln!(err, "error: {message}");
            return Exit::Usage;
        }
        Err(Failure::Runtime(message)) => {
            let _ = writeln!(err, "error: {message}");
            return Exit::Failed;
        }
    };
    let printed = match args.output {
        Output::Json => match serde_json::to_string(&report) {
            Ok(json) => writeln!(out, "{json}"),
            Err(e) => {
                let _ = writeln!(err, "failed to encode the report: {e}");
                return Exit::Failed;
            }
        },
        Output::Human => {
            let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            out.write_all(report.human(colour).as_bytes())
        }
    };
    if let Err(e) = printed {
        let _ = writeln!(err, "failed to write the report: {e}");
        return Exit::Failed;
    }
    if report.would_apply {
        Exit::Ok
    } else {
        Exit::Invalid
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(["operator-controller", "preview"].iter().chain(args))
    }

    #[test]
    fn a_file_or_an_extension_is_required_and_not_both() {
        assert!(parse(&[]).is_err());
        assert!(parse(&["-f", "x.yaml", "--extension", "e"]).is_err());
        let cli = parse(&["-f", "x.yaml"]).expect("a file");
        assert!(matches!(cli.command, Command::Preview(a) if a.file.is_some()));
    }

    #[test]
    fn overrides_apply_to_an_extension_on_the_cluster_only() {
        assert!(parse(&["-f", "x.yaml", "--version", "1.0.0"]).is_err());
        assert!(parse(&["-f", "x.yaml", "--channel", "fast"]).is_err());
        let cli = parse(&[
            "--extension",
            "e",
            "--version",
            ">=1.0.0",
            "--channel",
            "fast",
            "--channel",
            "stable",
            "-o",
            "json",
            "--insecure-registries",
            "a:5000,b:5000",
        ])
        .expect("an extension with overrides");
        let Command::Preview(args) = cli.command else {
            panic!("not preview");
        };
        assert_eq!(args.version.as_deref(), Some(">=1.0.0"));
        assert_eq!(args.channels, ["fast", "stable"]);
        assert_eq!(args.output, super::Output::Json);
        assert_eq!(args.insecure_registries, ["a:5000", "b:5000"]);
        assert!(args.cache_path.is_none());
    }
}
