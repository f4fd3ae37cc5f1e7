//! Command line of the `catalogd` binary.
//!
//! Input: parsed arguments. Output: an exit status, messages on stdout/stderr. `validate` reads
//! local files only; `serve` also listens on the given address.
//!
//! Exit status of every mode:
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success (warnings may have been printed on stderr) |
//! | 1 | the catalog cannot be loaded or is invalid; each problem is printed on stderr |
//! | 2 | usage error: unknown flag, missing argument, catalog path missing or unreadable |
//!
//! Modes are subcommands of [`Command`]; adding one is a new variant plus a `match` arm in [`run_with`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use olm_api::fbc::{Checks, DeclarativeConfig, validate};

/// Exit status for success.
pub const EXIT_OK: u8 = 0;
/// Exit status for an invalid or unloadable catalog.
pub const EXIT_INVALID: u8 = 1;
/// Exit status for a usage error.
pub const EXIT_USAGE: u8 = 2;

/// catalogd: unpacks File-Based Catalog images and serves their content over HTTP.
#[derive(Debug, Parser)]
#[command(
    name = "catalogd",
    version,
    subcommand_required = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What to run.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load and validate a File-Based Catalog directory, as `opm validate` does.
    ///
    /// Every problem is reported with its file, line and object. Exit status: 0 valid (warnings
    /// are printed on stderr), 1 invalid or unloadable, 2 usage error.
    Validate(ValidateArgs),
    /// Serve a local File-Based Catalog directory over HTTP exactly as a ClusterCatalog is served.
    ///
    /// The content is at `/catalogs/NAME/api/v1/all` and `/catalogs/NAME/api/v1/metas`, with
    /// `/healthz`, `/readyz` and `/metrics` beside it. Runs until interrupted.
    Serve(ServeArgs),
    /// Run in a cluster: reconcile ClusterCatalogs, unpack their images and serve their content.
    ///
    /// Every replica unpacks and serves; the replica holding the leader Lease (with
    /// --leader-elect) writes status and finalizers.
    Run(Box<RunArgs>),
}

/// Arguments of `catalogd run` (names follow upstream catalogd's flags where they exist).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kubeconfig to use instead of the in-cluster configuration or $KUBECONFIG.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the catalog content server.
    #[arg(long, value_name = "ADDR", default_value = ":8443", value_parser = crate::run::parse_listen)]
    pub catalogs_server_addr: std::net::SocketAddr,
    /// Host (and optional port) clients use to reach the catalog server; `status.urls.base` is
    /// `<http|https>://<external-address>/catalogs/<name>`.
    #[arg(
        long,
        value_name = "HOST[:PORT]",
        default_value = "catalogd-service.olmv1-system.svc"
    )]
    pub external_address: String,
    /// Directory for unpacked images and stored catalogs; kept across restarts.
    #[arg(long, value_name = "DIR", default_value = "/var/cache/catalogd")]
    pub cache_dir: PathBuf,
    /// Serve the catalog content over HTTPS with this PEM certificate (reloaded on change).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Address serving /metrics (and /healthz, /readyz); `0` disables it.
    #[arg(long, value_name = "ADDR", default_value = ":7443")]
    pub metrics_bind_address: String,
    /// Address serving /healthz and /readyz (and /metrics); `0` disables it.
    #[arg(long, value_name = "ADDR", default_value = ":8081")]
    pub health_probe_bind_address: String,
    /// Elect a leader among replicas through a Lease; only the leader writes status.
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the leader Lease (default: $POD_NAMESPACE, else olmv1-system).
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Registry credentials for every catalog image: a dockerconfigjson Secret `NAMESPACE/NAME`.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub global_pull_secret: Option<crate::controller::pull_secret::SecretRef>,
    /// Directory of PEM files with extra CA certificates trusted for registries.
    #[arg(long, value_name = "DIR")]
    pub pull_cas_dir: Option<PathBuf>,
    /// Registries (`host:port` as written in image references) spoken to over plain HTTP.
    #[arg(long, value_name = "HOST:PORT", value_delimiter = ',')]
    pub insecure_registries: Vec<String>,
    /// How often to remove content of catalogs that no longer exist.
    #[arg(long, value_name = "DURATION", default_value = "12h", value_parser = parse_duration)]
    pub gc_interval: std::time::Duration,
    /// Length of one minute of `pollIntervalMinutes`. For tests and demos only.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration, hide = true)]
    pub poll_interval_unit: std::time::Duration,
    /// Manage only ClusterCatalogs matching this label selector (for sharding and tests).
    #[arg(long, value_name = "SELECTOR", hide = true)]
    pub catalog_label_selector: Option<String>,
    /// Log format: `text` or `json`.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub log_format: String,
}

/// Parses durations like `90s`, `5m`, `12h`, `250ms`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("invalid duration {s:?}"))?;
    let secs = |m: u64| std::time::Duration::from_secs(n.saturating_mul(m));
    match unit {
        "ms" => Ok(std::time::Duration::from_millis(n)),
        "s" | "" => Ok(secs(1)),
        "m" => Ok(secs(60)),
        "h" => Ok(secs(3600)),
        _ => Err(format!("invalid duration {s:?}: use ms, s, m or h")),
    }
}

fn optional_addr(s: &str) -> Result<Option<std::net::SocketAddr>, String> {
    if s == "0" || s.is_empty() {
        Ok(None)
    } else {
        crate::run::parse_listen(s).map(Some)
    }
}

/// Arguments of `catalogd serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The catalog directory (a single catalog file is accepted too).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The catalog name in URLs; defaults to the directory's name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Address to listen on; port 0 picks a free port (printed on start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// Serve HTTPS with this PEM certificate (reloaded when the file changes).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// Arguments of `catalogd validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The catalog directory (a single catalog file is accepted too).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Report as warnings, not errors, what `opm validate` rejects but catalogd serves and
    /// operator-controller resolves: an unparsable skipRange, an icon that is not base64.
    #[arg(long)]
    pub lenient: bool,
}

/// Runs the parsed command with the process's stdout and stderr.
pub fn run(cli: Cli) -> ExitCode {
    // Unlocked handles: long-running modes log from other threads through the same stderr.
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    ExitCode::from(run_with(cli, &mut out, &mut err))
}

/// Runs the parsed command, writing to the given streams; returns the exit status.
pub fn run_with(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match cli.command {
        Command::Validate(args) => {
            let checks = Checks {
                lenient: args.lenient,
                ..Checks::default()
            };
            validate_catalog(&args.dir, &checks, out, err)
        }
        Command::Serve(args) => {
            let tls = match (args.tls_cert, args.tls_key) {
                (Some(cert), Some(key)) => Some(crate::server::TlsFiles { cert, key }),
                _ => None,
            };
            let opts = crate::serve::ServeOptions {
                dir: args.dir,
                name: args.name,
                listen: args.listen,
                tls,
            };
            crate::serve::run(opts, err)
        }
        Command::Run(args) => run_controller(*args, err),
    }
}

/// `catalogd run`: converts flags to options and runs until SIGINT/SIGTERM.
fn run_controller(args: RunArgs, err: &mut dyn Write) -> u8 {
    init_logging(&args.log_format);
    let (metrics_addr, health_addr) = match (
        optional_addr(&args.metrics_bind_address),
        optional_addr(&args.health_probe_bind_address),
    ) {
        (Ok(m), Ok(h)) => (m, h),
        (Err(e), _) | (_, Err(e)) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_USAGE;
        }
    };
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(crate::server::TlsFiles { cert, key }),
        _ => None,
    };
    let namespace = args
        .leader_election_namespace
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .unwrap_or_else(|| "olmv1-system".to_string());
    let identity = std::env::var("POD_NAME")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .map(|h| format!("{h}_{:08x}", rand::random::<u32>()))
        .unwrap_or_else(|| format!("catalogd_{:08x}", rand::random::<u32>()));
    let opts = crate::run::RunOptions {
        kubeconfig: args.kubeconfig,
        catalogs_server_addr: args.catalogs_server_addr,
        external_address: args.external_address,
        cache_dir: args.cache_dir,
        tls,
        metrics_addr,
        health_addr,
        leader_elect: args.leader_elect,
        leader_election_namespace: namespace,
        global_pull_secret: args.global_pull_secret,
        pull_cas_dir: args.pull_cas_dir,
        insecure_registries: args.insecure_registries,
        gc_interval: args.gc_interval,
        poll_unit: args.poll_interval_unit,
        identity,
        label_selector: args.catalog_label_selector,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "error: failed to start the runtime: {e}");
            return EXIT_INVALID;
        }
    };
    match runtime.block_on(crate::run::run(opts, crate::serve::shutdown_signal())) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            EXIT_INVALID
        }
    }
}

/// Structured logs on stderr; `RUST_LOG` filters (default `info`).
pub fn init_logging(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// `catalogd validate DIR`: load, validate, report. Write failures on the streams are ignored
/// (there is nowhere left to report them).
pub fn validate_catalog(
    dir: &Path,
    checks: &Checks<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    if let Err(e) = check_readable(dir) {
        let _ = writeln!(err, "error: cannot read catalog {}: {e}", dir.display());
        return EXIT_USAGE;
    }
    let cfg = match DeclarativeConfig::load_dir(dir) {
        Ok(cfg) => cfg,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            let _ = writeln!(err, "catalog {} could not be loaded", dir.display());
            return EXIT_INVALID;
        }
    };
    let report = validate(&cfg, checks);
    for w in &report.warnings {
        let _ = writeln!(err, "warning: {w}");
    }
    for e in &report.errors {
        let _ = writeln!(err, "error: {e}");
    }
    let summary = format!(
        "{} packages, {} channels, {} bundles, {} deprecations, {} other objects",
        cfg.packages.len(),
        cfg.channels.len(),
        cfg.bundles.len(),
        cfg.deprecations.len(),
        cfg.others.len()
    );
    if report.is_valid() {
        let _ = writeln!(
            out,
            "catalog {} is valid: {summary} ({} warnings)",
            dir.display(),
            report.warnings.len()
        );
        EXIT_OK
    } else {
        let _ = writeln!(
            err,
            "catalog {} is invalid: {} errors, {} warnings ({summary})",
            dir.display(),
            report.errors.len(),
            report.warnings.len()
        );
        EXIT_INVALID
    }
}

/// The catalog root must exist and be readable (a directory, or a regular file: a FIFO would
/// block the open); problems below it are catalog errors instead.
fn check_readable(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(dir)?;
    if meta.is_dir() {
        std::fs::read_dir(dir).map(drop)
    } else {
        olm_api::regular_file::open_regular(dir)
            .map(drop)
            .map_err(|e| e.into_io_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_validate(dir: &Path) -> (u8, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = validate_catalog(dir, &Checks::default(), &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn a_valid_catalog_exits_zero_with_a_summary() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("c.yaml"),
            "schema: olm.package\nname: p\ndefaultChannel: s\n---\nschema: olm.channel\nname: s\npackage: p\nentries: [{name: p.v1}]\n---\nschema: olm.bundle\nname: p.v1\npackage: p\nimage: quay.io/p:v1\nproperties: [{type: olm.package, value: {packageName: p, version: 1.0.0}}]\n",
        )
        .unwrap();
        let (code, out, err) = run_validate(tmp.path());
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(
            out.contains("is valid: 1 packages, 1 channels, 1 bundles"),
            "{out}"
        );
        assert_eq!(err, "");
    }

    #[test]
    fn an_invalid_catalog_exits_one_naming_file_line_and_object() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("c.yaml"),
            "schema: olm.package\nname: p\ndefaultChannel: s\n---\nschema: olm.channel\nname: s\npackage: p\nentries: [{name: a}, {name: b}]\n",
        )
        .unwrap();
        let (code, out, err) = run_validate(tmp.path());
        assert_eq!(code, EXIT_INVALID);
        assert_eq!(out, "");
        let file = tmp.path().join("c.yaml");
        assert!(
            err.contains(&format!(
                "error: {}:5:1: olm.channel \"s\" (package \"p\"): multiple channel heads found in graph: a, b",
                file.display()
            )),
            "{err}"
        );
        assert!(err.contains("is invalid: 2 errors"), "{err}");
    }

    #[test]
    fn an_unparsable_file_exits_one_with_its_position() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("c.json"),
            "{\"schema\":\"olm.package\",\n\"name\": }\n",
        )
        .unwrap();
        let (code, _, err) = run_validate(tmp.path());
        assert_eq!(code, EXIT_INVALID);
        assert!(err.contains("c.json:2:"), "{err}");
        assert!(err.contains("could not be loaded"), "{err}");
    }

    #[test]
    fn a_missing_catalog_path_is_a_usage_error() {
        let tmp = tempfile::tempdir().unwrap();
        let (code, _, err) = run_validate(&tmp.path().join("nope"));
        assert_eq!(code, EXIT_USAGE);
        assert!(err.starts_with("error: cannot read catalog"), "{err}");
    }

    #[test]
    fn clap_rejects_unknown_flags_and_missing_arguments() {
        assert!(Cli::try_parse_from(["catalogd", "validate"]).is_err());
        assert!(Cli::try_parse_from(["catalogd", "validate", "d", "--bogus"]).is_err());
        assert!(Cli::try_parse_from(["catalogd"]).is_err());
        let cli = Cli::try_parse_from(["catalogd", "validate", "some/dir"]).unwrap();
        assert!(
            matches!(cli.command, Command::Validate(ValidateArgs { ref dir, lenient: false }) if dir == Path::new("some/dir"))
        );
    }
}
