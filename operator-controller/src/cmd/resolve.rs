//! `operator-controller resolve`: runs the real resolver outside a cluster, against catalog
//! directories or catalogd URLs.
//!
//! Input: [`Args`]. Output: an [`Exit`] status and messages on stdout/stderr. Reads the given
//! catalog directories, and talks HTTP only to the catalog URLs it is given.
//!
//! | status | stdout / stderr                                                                   |
//! |--------|-----------------------------------------------------------------------------------|
//! | 0      | one JSON object on stdout: the bundle, its catalog, deprecation details and the four deprecation conditions |
//! | 1      | resolution failed: the exact `Progressing` condition message on stderr             |
//! | 2      | usage error (unknown flag, missing `--package`, unreadable catalog path, bad `--catalog-priority`, ...) |
//! | 3      | the process could not run the resolution (no async runtime, output not encodable)  |
//!
//! The message on failure is the resolver's error, which is what upstream writes into
//! `Progressing` (reason `Retrying`) for a failed resolution; the `Installed` condition then
//! carries `failed to resolve bundle: ` plus the same text when nothing is installed yet.
//!
//! The conditions printed on success are those the controller sets once the resolved bundle is
//! installed (upstream recomputes them after a successful rollout, for the new bundle).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::ValueEnum;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use olm_api::v1::{CatalogFilter, UpgradeConstraintPolicy};
use olm_runtime::exit::Exit;
use serde::Serialize;

use crate::catalog_source::dir::DirSource;
use crate::catalog_source::http::{CatalogEndpoint, CatalogdClient, ClientOptions, ReadIdleArgs};
use crate::catalog_source::{CatalogLocation, CatalogSource};
use crate::resolve::{
    ApplicableDeprecations, CatalogInfo, ConditionValue, InstalledBundle, Resolution, Resolver,
    deprecation_conditions,
};

/// `spec.source.catalog.upgradeConstraintPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Policy {
    #[value(name = "CatalogProvided")]
    CatalogProvided,
    #[value(name = "SelfCertified")]
    SelfCertified,
}

/// Arguments of `operator-controller resolve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A catalog: an FBC directory (or file), or a catalogd URL ending in `/catalogs/NAME`.
    /// Repeatable. The catalog's name is the last path element.
    #[arg(long = "catalog", value_name = "LOCATION", required = true)]
    pub catalogs: Vec<String>,
    /// A catalog's `spec.priority` (default 0). Repeatable.
    #[arg(long = "catalog-priority", value_name = "NAME=INT")]
    pub priorities: Vec<String>,
    /// Treat this catalog as `availabilityMode: Unavailable`. Repeatable.
    #[arg(long = "catalog-unavailable", value_name = "NAME")]
    pub unavailable: Vec<String>,
    /// `spec.source.catalog.packageName`.
    #[arg(long, value_name = "P")]
    pub package: String,
    /// `spec.source.catalog.version`: a version range (Masterminds syntax).
    #[arg(long, value_name = "RANGE")]
    pub version: Option<String>,
    /// `spec.source.catalog.channels`. Repeatable.
    #[arg(long = "channel", value_name = "C")]
    pub channels: Vec<String>,
    /// `spec.source.catalog.selector` as JSON (a `metav1.LabelSelector`); every catalog carries
    /// the label `olm.operatorframework.io/metadata.name=<its name>`.
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
    #[arg(
        long = "upgrade-constraint-policy",
        value_enum,
        value_name = "POLICY",
        default_value = "CatalogProvided"
    )]
    pub policy: Policy,
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

/// Everything `resolve` (and `explain`) needs, checked before anything is fetched.
pub(crate) struct Plan {
    pub(crate) filter: CatalogFilter,
    pub(crate) installed: Option<InstalledBundle>,
    pub(crate) catalogs: Vec<CatalogInfo>,
    pub(crate) sources: BTreeMap<String, CatalogSource>,
}

pub(crate) fn plan(args: &Args) -> Result<Plan, String> {
    let mut priorities: BTreeMap<String, i32> = BTreeMap::new();
    for p in &args.priorities {
        let (name, value) = p
            .split_once('=')
            .ok_or_else(|| format!("invalid --catalog-priority {p:?}: expected NAME=INT"))?;
        let value: i32 = value
            .trim()
            .parse()
            .map_err(|e| format!("invalid --catalog-priority {p:?}: {e}"))?;
        priorities.insert(name.to_owned(), value);
    }
    let selector = match &args.selector {
        None => None,
        Some(json) => Some(
            serde_json::from_str::<LabelSelector>(json)
                .map_err(|e| format!("invalid --selector {json:?}: {e}"))?,
        ),
    };
    let needs_http = args
        .catalogs
        .iter()
        .any(|c| matches!(CatalogLocation::parse(c), Ok(CatalogLocation::Url(_))));
    let client = if needs_http {
        let mut options = ClientOptions {
            max_body_bytes: args.catalogd_max_body_bytes,
            max_decoded_bytes: args.catalogd_max_body_bytes,
            read_idle_timeout: args.catalogd_read.catalogd_read_idle_timeout,
            ..ClientOptions::default()
        };
        if let Some(path) = &args.catalogd_ca_file {
            options = options.with_ca_file(path).map_err(|e| e.to_string())?;
        }
        Some(Arc::new(
            CatalogdClient::new(options).map_err(|e| e.to_string())?,
        ))
    } else {
        None
    };

    let mut catalogs = Vec::new();
    let mut sources = BTreeMap::new();
    for location in &args.catalogs {
        let parsed = CatalogLocation::parse(location).map_err(|e| e.to_string())?;
        let name = parsed.catalog_name().map_err(|e| e.to_string())?;
        let source = match parsed {
            CatalogLocation::Dir(path) => CatalogSource::Dir(
                DirSource::open(path).map_err(|e| format!("invalid --catalog: {e}"))?,
            ),
            CatalogLocation::Url(base_url) => CatalogSource::Http {
                client: client
                    .clone()
                    .ok_or_else(|| "internal error: no HTTP client".to_owned())?,
                endpoint: CatalogEndpoint {
                    name: name.clone(),
                    base_url,
                    revision: None,
                },
            },
        };
        if sources.insert(name.clone(), source).is_some() {
            return Err(format!(
                "two --catalog locations are both named {name:?} (the last path element)"
            ));
        }
        let mut info = CatalogInfo::new(&name, priorities.remove(&name).unwrap_or(0));
        info.available = !args.unavailable.contains(&name);
        catalogs.push(info);
    }
    if let Some(name) = priorities.keys().next() {
        return Err(format!("--catalog-priority names unknown catalog {name:?}"));
    }
    let known: BTreeSet<&str> = catalogs.iter().map(|c| c.name.as_str()).collect();
    if let Some(name) = args
        .unavailable
        .iter()
        .find(|n| !known.contains(n.as_str()))
    {
        return Err(format!(
            "--catalog-unavailable names unknown catalog {name:?}"
        ));
    }

    let filter = CatalogFilter {
        package_name: args.package.clone(),
        version: args.version.clone(),
        channels: args.channels.clone(),
        selector,
        upgrade_constraint_policy: match args.policy {
            Policy::CatalogProvided => UpgradeConstraintPolicy::CatalogProvided,
            Policy::SelfCertified => UpgradeConstraintPolicy::SelfCertified,
        },
    };
    let installed = match (&args.installed_bundle, &args.installed_version) {
        (Some(name), Some(version)) => Some(InstalledBundle {
            name: name.clone(),
            version: version.clone(),
            release: args.installed_release.clone(),
        }),
        _ => None,
    };
    Ok(Plan {
        filter,
        installed,
        catalogs,
        sources,
    })
}

/// Runs `resolve`: exit 0 with the JSON report, 1 on a resolution failure, 2 on a usage error.
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let plan = match plan(args) {
        Ok(plan) => plan,
        Err(message) => {
            let _ = writeln!(err, "error: {message}");
            return Exit::Usage;
        }
    };
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
    let outcome = Resolver::new(&plan.filter, plan.installed.as_ref()).and_then(|resolver| {
        let selected = resolver.catalogs_to_search(&plan.catalogs);
        let fetched = runtime.block_on(fetch_all(&plan.sources, &selected, resolver.package()));
        resolver.resolve_fetched(fetched)
    });
    match outcome {
        Ok(resolution) => {
            let report = Report::new(&resolution, &plan.filter.channels);
            match serde_json::to_string(&report) {
                Ok(json) => {
                    let _ = writeln!(out, "{json}");
                    Exit::Ok
                }
                Err(e) => {
                    let _ = writeln!(err, "failed to encode the result: {e}");
                    Exit::Failed
                }
            }
        }
        Err(e) => {
            let _ = writeln!(err, "{e}");
            Exit::Invalid
        }
    }
}

/// Fetches the package from every selected catalog at once.
pub(crate) async fn fetch_all<'c>(
    sources: &BTreeMap<String, CatalogSource>,
    selected: &[&'c CatalogInfo],
    package: &str,
) -> Vec<(
    &'c CatalogInfo,
    Result<Arc<crate::resolve::PackageContent>, crate::resolve::FetchError>,
)> {
    let mut tasks = Vec::with_capacity(selected.len());
    for catalog in selected {
        let source = sources.get(&catalog.name).cloned();
        let package = package.to_owned();
        tasks.push(tokio::spawn(async move {
            match source {
                Some(source) => source.package(&package).await,
                None => Err("internal error: no source for this catalog".into()),
            }
        }));
    }
    let mut out = Vec::with_capacity(tasks.len());
    for (catalog, task) in selected.iter().zip(tasks) {
        let result = match task.await {
            Ok(result) => result,
            Err(e) => Err(e.to_string().into()),
        };
        out.push((*catalog, result));
    }
    out
}

/// The JSON printed on success.
#[derive(Serialize)]
struct Report<'a> {
    bundle: BundleReport<'a>,
    catalog: &'a str,
    /// `null` when the catalog has no `olm.deprecations` object for the package.
    deprecation: Option<DeprecationReport>,
    conditions: [ConditionValue; 4],
}

#[derive(Serialize)]
struct BundleReport<'a> {
    name: &'a str,
    version: String,
    image: &'a str,
    package: &'a str,
}

/// The deprecation entries that apply to this extension with the resolved bundle installed.
#[derive(Serialize)]
struct DeprecationReport {
    package: Vec<String>,
    channels: Vec<ChannelDeprecation>,
    bundle: Vec<String>,
}

#[derive(Serialize)]
struct ChannelDeprecation {
    name: String,
    message: String,
}

impl<'a> Report<'a> {
    fn new(resolution: &'a Resolution, channels: &[String]) -> Report<'a> {
        let bundle = &resolution.bundle;
        let deprecation = resolution.deprecation.as_ref().map(|d| {
            let applicable = ApplicableDeprecations::select(Some(d), channels, Some(&bundle.name));
            DeprecationReport {
                package: applicable
                    .package
                    .iter()
                    .map(|e| e.message.clone())
                    .collect(),
                channels: applicable
                    .channels
                    .iter()
                    .map(|e| ChannelDeprecation {
                        name: e.reference.name.clone(),
                        message: e.message.clone(),
                    })
                    .collect(),
                bundle: applicable
                    .bundle
                    .iter()
                    .map(|e| e.message.clone())
                    .collect(),
            }
        });
        Report {
            bundle: BundleReport {
                name: &bundle.name,
                version: resolution.status_version(),
                image: &bundle.image,
                package: &bundle.package,
            },
            catalog: &resolution.catalog,
            deprecation,
            conditions: deprecation_conditions(
                resolution.deprecation.as_ref(),
                true,
                channels,
                Some(&bundle.name),
            ),
        }
    }
}
