//! `operator-controller explain`: why the resolver chooses a bundle, and why not each of the
//! others, from catalog directories or catalogd URLs (the inputs of `resolve`) or for a
//! ClusterExtension on a cluster.
//!
//! Input: [`Args`]. Output: an [`Exit`] status; the explanation on stdout (a table, one JSON
//! object, or the package's upgrade graph). Reads the given catalog directories and talks HTTP
//! to the given catalog URLs; with `--extension`, reads the ClusterExtension, its release
//! records and the ClusterCatalogs through the Kubernetes API and the catalogs' content from
//! catalogd, with the controller's own code ([`crate::controller::catalogs`],
//! [`crate::storage::ReleaseStore`], the release history), so it sees what the controller sees.
//!
//! | status | meaning (as `resolve`)                                                     |
//! |--------|-----------------------------------------------------------------------------|
//! | 0      | a bundle is chosen                                                          |
//! | 1      | nothing resolves; the explanation is printed all the same, with the resolver's exact message |
//! | 2      | usage error (flags, unreadable catalog path, unknown extension, no catalog source) |
//! | 3      | the explanation could not be produced (cluster API, async runtime, encoding) |
//!
//! The explanation itself is [`olm_operator_core::resolve::explain`]'s: the resolver's own walk,
//! so the chosen bundle and the failure message are exactly those of `resolve` and of the
//! controller. Unlike the resolver, `explain` also reads unselected catalogs, to list their
//! bundles; a catalog whose content cannot be read is named on stderr (table mode) and its
//! bundles are not listed.
//!
//! JSON (`-o json`), one object:
//!
//! ```text
//! {"package": P, "chosen": {"name", "version", "catalog"} | null,
//!  "message": resolve's failure message, "" when a bundle is chosen,
//!  "installed": {"name", "version"} | null,
//!  "candidates": [{"name", "version", "catalog", "chosen", "reasons": [{"code", "message"}]}],
//!  "upgradePath": [installed, ..., newest reachable] | null}
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use kube::api::Api;
use olm_api::v1::{CatalogFilter, ClusterExtension};
use olm_operator_core::release::history;
use olm_operator_core::resolve::explain::{Contents, Explanation, GraphFormat, explain};
use olm_operator_core::resolve::{CatalogInfo, InstalledBundle, PackageContent};
use olm_runtime::exit::Exit;
use serde::Serialize;

use crate::catalog_source::http::{CatalogdClient, ClientOptions, ReadIdleArgs};
use crate::cmd::resolve::{self, Policy};
use crate::controller::catalogs;
use crate::storage::ReleaseStore;

/// How the explanation is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// A table of every bundle, newest first, then the upgrade path.
    Table,
    /// One JSON object (see the module documentation).
    Json,
}

/// The upgrade graph's notation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Graph {
    Mermaid,
    Dot,
}

/// Arguments of `operator-controller explain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A catalog: an FBC directory (or file), or a catalogd URL ending in `/catalogs/NAME`.
    /// Repeatable. The catalog's name is the last path element.
    #[arg(
        long = "catalog",
        value_name = "LOCATION",
        required_unless_present = "extension"
    )]
    pub catalogs: Vec<String>,
    /// A catalog's `spec.priority` (default 0). Repeatable.
    #[arg(long = "catalog-priority", value_name = "NAME=INT")]
    pub priorities: Vec<String>,
    /// Treat this catalog as `availabilityMode: Unavailable`. Repeatable.
    #[arg(long = "catalog-unavailable", value_name = "NAME")]
    pub unavailable: Vec<String>,
    /// `spec.source.catalog.packageName`.
    #[arg(long, value_name = "P", required_unless_present = "extension")]
    pub package: Option<String>,
    /// `spec.source.catalog.version`: a version range (Masterminds syntax).
    #[arg(long, value_name = "RANGE")]
    pub version: Option<String>,
    /// `spec.source.catalog.channels`. Repeatable.
    #[arg(long = "channel", value_name = "C")]
    pub channels: Vec<String>,
    /// `spec.source.catalog.selector` as JSON (a `metav1.LabelSelector`).
    #[arg(long, value_name = "JSON")]
    pub selector: Option<String>,
    /// The installed bundle's name.
    #[arg(
        long = "installed-bundle",
        value_name = "NAME",
        requires = "installed_version"
    )]
    pub installed_bundle: Option<String>,
    /// The installed bundle's version.
    #[arg(
        long = "installed-version",
        value_name = "V",
        requires = "installed_bundle"
    )]
    pub installed_version: Option<String>,
    /// The installed bundle's explicitly recorded release, if any.
    #[arg(
        long = "installed-release",
        value_name = "R",
        requires = "installed_bundle"
    )]
    pub installed_release: Option<String>,
    /// `spec.source.catalog.upgradeConstraintPolicy`.
    #[arg(long = "upgrade-constraint-policy", value_enum, value_name = "POLICY")]
    pub policy: Option<Policy>,
    /// Explain the ClusterExtension NAME on the cluster: its spec, its installed release and the
    /// ClusterCatalogs, read as the controller reads them. `--version`, `--channel` and
    /// `--upgrade-constraint-policy` then replace the spec's values ("what if I widened the
    /// range?"); nothing is written.
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with_all = [
            "catalogs", "priorities", "unavailable", "package", "selector",
            "installed_bundle", "installed_version", "installed_release"
        ]
    )]
    pub extension: Option<String>,
    /// Kubeconfig for `--extension`, instead of $KUBECONFIG or the in-cluster configuration.
    #[arg(long, value_name = "FILE", requires = "extension")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace of the controller's release Secrets, for `--extension`.
    #[arg(
        long,
        value_name = "NAMESPACE",
        default_value = "olmv1-system",
        requires = "extension"
    )]
    pub system_namespace: String,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: Output,
    /// Print the package's upgrade graph instead (replaces, skips and skipRange edges grouped
    /// by channel; installed, chosen and rejected bundles marked).
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "output")]
    pub graph: Option<Graph>,
    /// PEM file of CAs to trust for `https://` catalog URLs, besides the system's.
    #[arg(long = "catalogd-ca-file", value_name = "FILE")]
    pub catalogd_ca_file: Option<PathBuf>,
    /// Largest answer accepted from catalogd, in bytes, before and after gzip decoding.
    #[arg(
        long = "catalogd-max-body-bytes",
        value_name = "BYTES",
        default_value_t = crate::catalog_source::http::DEFAULT_MAX_BODY_BYTES
    )]
    pub catalogd_max_body_bytes: u64,
    #[command(flatten)]
    pub catalogd_read: ReadIdleArgs,
}

/// What went wrong before an explanation existed.
enum Failure {
    Usage(String),
    Runtime(String),
}

/// The inputs of one explanation, read from flags or from the cluster.
struct Inputs {
    filter: CatalogFilter,
    installed: Option<InstalledBundle>,
    catalogs: Vec<CatalogInfo>,
    contents: Contents,
}

/// Runs `explain`: see the module table for the exit statuses.
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
    let inputs = match &args.extension {
        Some(name) => runtime.block_on(from_cluster(args, name)),
        None => from_flags(args, &runtime),
    };
    let inputs = match inputs {
        Ok(inputs) => inputs,
        Err(Failure::Usage(message)) => {
            let _ = writeln!(err, "error: {message}");
            return Exit::Usage;
        }
        Err(Failure::Runtime(message)) => {
            let _ = writeln!(err, "error: {message}");
            return Exit::Failed;
        }
    };
    let e = explain(
        &inputs.filter,
        inputs.installed.as_ref(),
        &inputs.catalogs,
        &inputs.contents,
    );
    let printed = match (args.graph, args.output) {
        (Some(Graph::Mermaid), _) => write!(out, "{}", e.graph(GraphFormat::Mermaid)),
        (Some(Graph::Dot), _) => write!(out, "{}", e.graph(GraphFormat::Dot)),
        (None, Output::Json) => match serde_json::to_string(&Report::new(&e)) {
            Ok(json) => writeln!(out, "{json}"),
            Err(e) => {
                let _ = writeln!(err, "failed to encode the explanation: {e}");
                return Exit::Failed;
            }
        },
        (None, Output::Table) => {
            for (catalog, why) in &e.unread {
                let _ = writeln!(
                    err,
                    "note: catalog {catalog:?} could not be read ({why}); its bundles are not listed"
                );
            }
            out.write_all(table(&e).as_bytes())
        }
    };
    if let Err(e) = printed {
        let _ = writeln!(err, "failed to write the explanation: {e}");
        return Exit::Failed;
    }
    match e.outcome {
        Ok(_) => Exit::Ok,
        Err(_) => Exit::Invalid,
    }
}

/// The inputs of `resolve` (catalog directories or URLs, the spec in flags).
fn from_flags(args: &Args, runtime: &tokio::runtime::Runtime) -> Result<Inputs, Failure> {
    let as_resolve = resolve::Args {
        catalogs: args.catalogs.clone(),
        priorities: args.priorities.clone(),
        unavailable: args.unavailable.clone(),
        package: args.package.clone().unwrap_or_default(),
        version: args.version.clone(),
        channels: args.channels.clone(),
        selector: args.selector.clone(),
        installed_bundle: args.installed_bundle.clone(),
        installed_version: args.installed_version.clone(),
        installed_release: args.installed_release.clone(),
        policy: args.policy.unwrap_or(Policy::CatalogProvided),
        catalogd_ca_file: args.catalogd_ca_file.clone(),
        catalogd_max_body_bytes: args.catalogd_max_body_bytes,
        catalogd_read: ReadIdleArgs {
            catalogd_read_idle_timeout: args.catalogd_read.catalogd_read_idle_timeout,
        },
    };
    let plan = resolve::plan(&as_resolve).map_err(Failure::Usage)?;
    // Every catalog, selected or not: unselected ones are listed too.
    let all: Vec<&CatalogInfo> = plan.catalogs.iter().collect();
    let fetched = runtime.block_on(resolve::fetch_all(
        &plan.sources,
        &all,
        &plan.filter.package_name,
    ));
    Ok(Inputs {
        contents: contents(fetched),
        filter: plan.filter,
        installed: plan.installed,
        catalogs: plan.catalogs,
    })
}

fn contents(
    fetched: Vec<(
        &CatalogInfo,
        Result<Arc<PackageContent>, olm_operator_core::resolve::FetchError>,
    )>,
) -> Contents {
    fetched
        .into_iter()
        .map(|(c, r)| (c.name.clone(), r.map_err(|e| e.to_string())))
        .collect()
}

/// Bound on each Kubernetes API call of `--extension`.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The controller's view of ClusterExtension `name`: its catalog filter, the bundle its
/// deployed release records, the ClusterCatalogs and their content.
async fn from_cluster(args: &Args, name: &str) -> Result<Inputs, Failure> {
    let client = olm_runtime::client::client(args.kubeconfig.as_deref())
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let extension = match tokio::time::timeout(CALL_TIMEOUT, extensions.get_opt(name)).await {
        Err(_) => {
            return Err(Failure::Runtime(format!(
                "no answer from the API server within {}s",
                CALL_TIMEOUT.as_secs()
            )));
        }
        Ok(Err(e)) => {
            return Err(Failure::Runtime(format!(
                "reading ClusterExtension {name:?}: {e}"
            )));
        }
        Ok(Ok(None)) => {
            return Err(Failure::Usage(format!(
                "ClusterExtension {name:?} not found"
            )));
        }
        Ok(Ok(Some(extension))) => extension,
    };
    let mut filter = extension.spec.source.catalog.clone().ok_or_else(|| {
        Failure::Usage(format!(
            "ClusterExtension {name:?} has no catalog source (spec.source.catalog)"
        ))
    })?;
    // What-if overrides of the spec (nothing is written).
    if let Some(version) = &args.version {
        filter.version = Some(version.clone());
    }
    if !args.channels.is_empty() {
        filter.channels = args.channels.clone();
    }
    if let Some(policy) = args.policy {
        filter.upgrade_constraint_policy = match policy {
            Policy::CatalogProvided => olm_api::v1::UpgradeConstraintPolicy::CatalogProvided,
            Policy::SelfCertified => olm_api::v1::UpgradeConstraintPolicy::SelfCertified,
        };
    }
    // As the reconcile reads it: the deployed release's labels. (The reconcile first marks a
    // record left pending as failed; a pending record is not deployed either way.)
    let store = ReleaseStore::new(client.clone(), &args.system_namespace);
    let releases = store
        .history(name)
        .await
        .map_err(|e| Failure::Runtime(format!("reading the installed release: {e}")))?
        .releases();
    let installed = history::installed_bundle(&releases).map(|b| InstalledBundle {
        name: b.name,
        version: b.version,
        release: b.bundle_release,
    });
    let views = catalogs::list_catalogs(&client, None, CALL_TIMEOUT)
        .await
        .map_err(|e| Failure::Runtime(format!("listing ClusterCatalogs: {e}")))?;
    let infos: Vec<CatalogInfo> = views.iter().map(catalogs::catalog_info).collect();
    let by_name: BTreeMap<String, _> = views.iter().map(|v| (v.name.clone(), v.clone())).collect();
    let mut options = ClientOptions {
        max_body_bytes: args.catalogd_max_body_bytes,
        max_decoded_bytes: args.catalogd_max_body_bytes,
        read_idle_timeout: args.catalogd_read.catalogd_read_idle_timeout,
        ..ClientOptions::default()
    };
    if let Some(path) = &args.catalogd_ca_file {
        options = options
            .with_ca_file(path)
            .map_err(|e| Failure::Usage(e.to_string()))?;
    }
    let catalogd = CatalogdClient::new(options).map_err(|e| Failure::Runtime(e.to_string()))?;
    let all: Vec<&CatalogInfo> = infos.iter().collect();
    let fetched = catalogs::fetch_packages(&catalogd, &by_name, &all, &filter.package_name).await;
    Ok(Inputs {
        contents: contents(fetched),
        filter,
        installed,
        catalogs: infos,
    })
}

/// The JSON printed by `-o json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    package: &'a str,
    chosen: Option<BundleRef<'a>>,
    message: String,
    installed: Option<Installed<'a>>,
    candidates: Vec<CandidateReport<'a>>,
    upgrade_path: Option<&'a [String]>,
}

#[derive(Serialize)]
struct BundleRef<'a> {
    name: &'a str,
    version: &'a str,
    catalog: &'a str,
}

#[derive(Serialize)]
struct Installed<'a> {
    name: &'a str,
    version: &'a str,
}

#[derive(Serialize)]
struct CandidateReport<'a> {
    name: &'a str,
    version: &'a str,
    catalog: &'a str,
    chosen: bool,
    reasons: &'a [olm_operator_core::resolve::explain::Reason],
}

impl<'a> Report<'a> {
    fn new(e: &'a Explanation) -> Report<'a> {
        Report {
            package: &e.package,
            chosen: e.chosen().map(|c| BundleRef {
                name: &c.name,
                version: &c.version,
                catalog: &c.catalog,
            }),
            message: match &e.outcome {
                Ok(_) => String::new(),
                Err(err) => err.to_string(),
            },
            installed: e.installed.as_ref().map(|i| Installed {
                name: &i.name,
                version: &i.version,
            }),
            candidates: e
                .candidates
                .iter()
                .map(|c| CandidateReport {
                    name: &c.name,
                    version: &c.version,
                    catalog: &c.catalog,
                    chosen: c.chosen,
                    reasons: &c.reasons,
                })
                .collect(),
            upgrade_path: e.upgrade_path.as_deref(),
        }
    }
}

/// The human table: a headline, every bundle newest first, then the upgrade path.
fn table(e: &Explanation) -> String {
    let mut s = String::new();
    match &e.outcome {
        Ok(r) => s.push_str(&format!(
            "Package {}: chosen {} (version {}) from catalog {}\n",
            e.package,
            r.bundle.name,
            r.status_version(),
            r.catalog
        )),
        Err(err) => s.push_str(&format!("Package {}: nothing resolves: {err}\n", e.package)),
    }
    if let Some(i) = &e.installed {
        s.push_str(&format!("Installed: {} (version {})\n", i.name, i.version));
    }
    s.push('\n');
    let header = ["VERSION", "BUNDLE", "CATALOG", "CHOSEN / WHY NOT"];
    let rows: Vec<[String; 3]> = e
        .candidates
        .iter()
        .map(|c| {
            [
                if c.version.is_empty() {
                    "?".to_owned()
                } else {
                    c.version.clone()
                },
                c.name.clone(),
                c.catalog.clone(),
            ]
        })
        .collect();
    let mut width = [header[0].len(), header[1].len(), header[2].len()];
    for r in &rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let pad = |cells: [&str; 3]| -> String {
        format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  ",
            cells[0],
            cells[1],
            cells[2],
            w0 = width[0],
            w1 = width[1],
            w2 = width[2]
        )
    };
    s.push_str(&pad([header[0], header[1], header[2]]));
    s.push_str(header[3]);
    s.push('\n');
    let indent = " ".repeat(width.iter().sum::<usize>() + 6);
    for (c, r) in e.candidates.iter().zip(&rows) {
        s.push_str(&pad([&r[0], &r[1], &r[2]]));
        if c.chosen {
            s.push_str("chosen\n");
            continue;
        }
        for (i, reason) in c.reasons.iter().enumerate() {
            if i > 0 {
                s.push_str(&indent);
            }
            s.push_str(&format!("{}: {}\n", reason.code.as_str(), reason.message));
        }
    }
    if e.candidates.is_empty() {
        s.push_str("(no bundle of this package in any readable catalog)\n");
    }
    s.push('\n');
    match &e.upgrade_path {
        None => s.push_str("Upgrade path: nothing installed\n"),
        Some(path) if path.len() == 1 => s.push_str(&format!(
            "Upgrade path: {} (no upgrade reachable)\n",
            path[0]
        )),
        Some(path) => s.push_str(&format!("Upgrade path: {}\n", path.join(" -> "))),
    }
    s
}
