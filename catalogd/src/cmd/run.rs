//! `catalogd run`: the in-cluster mode. Watches ClusterCatalogs, unpacks their images, serves their
//! content, and (on the elected leader) writes their status.
//!
//! Input: [`Args`] (flags) or [`RunOptions`] (tests run the controller in-process through [`run`]).
//! Output: runs until the shutdown token is cancelled (SIGINT/SIGTERM for the binary). Network: the
//! Kubernetes API, image registries, and the catalog, health and metrics listeners.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{Controller, watcher};
use olm_api::v1::ClusterCatalog;
use olm_image::{Puller, PullerConfig, RegistriesConfFiles};
use olm_runtime::exit::Exit;
use olm_runtime::flags::OptionalListenAddress;
use olm_runtime::gates::{FeatureDefaults, FeatureGates, GateSpec, PreRelease, Support};
use olm_runtime::go_flags::{KlogArgs, TlsProfileArgs};
use olm_runtime::leader::{Leadership, Timing};
use olm_runtime::logging::LogFormat;
use olm_runtime::pull_secret::SecretRef;
use olm_runtime::server::{ServeOptions, ServerError, ServerLimits, TlsFiles, bind};
use olm_runtime::shutdown::CancellationToken;

use crate::controller::gc;
use crate::controller::reconcile::{Context, error_policy, reconcile};
use crate::http::router_with_metas;
use crate::metrics::Metrics;
use crate::storage::Storage;

/// Lease name of catalogd's leader election (upstream's).
pub const LEADER_ELECTION_ID: &str = "catalogd-operator-lock";
/// The largest CA file read from `--pull-cas-dir`.
const MAX_CA_FILE_BYTES: u64 = 1 << 20;

/// Arguments of `catalogd run` (names follow upstream catalogd's flags where they exist).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Kubeconfig to use instead of the in-cluster configuration or $KUBECONFIG.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the catalog content server.
    #[arg(long, value_name = "ADDR", default_value = ":8443", value_parser = olm_runtime::flags::listen_address)]
    pub catalogs_server_addr: SocketAddr,
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
    /// Serve the catalog content (and metrics, and the webhook) over HTTPS with this PEM
    /// certificate (reloaded on change). Requires --tls-key.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Address of the metrics endpoint (HTTPS, only for callers allowed `get` on `/metrics`).
    /// Requires --tls-cert and --tls-key; with them it defaults to `:7443`. `0` disables it.
    #[arg(long, value_name = "ADDR")]
    pub metrics_bind_address: Option<String>,
    /// Address serving /healthz and /readyz (plain HTTP); `0` disables it.
    #[arg(long, value_name = "ADDR", default_value = ":8081", value_parser = olm_runtime::flags::optional_listen_address)]
    pub health_probe_bind_address: OptionalListenAddress,
    /// Address of the profiling endpoint; `0` or empty disables it.
    #[arg(long, value_name = "ADDR", default_value = "0", value_parser = olm_runtime::flags::optional_listen_address)]
    pub pprof_bind_address: OptionalListenAddress,
    /// Port of the mutating admission webhook that labels ClusterCatalogs with their name
    /// (HTTPS with --tls-cert; upstream's MutatingWebhookConfiguration calls it). `0` disables it.
    #[arg(long, value_name = "PORT", default_value_t = 9443)]
    pub webhook_server_port: u16,
    /// Elect a leader among replicas through a Lease; only the leader writes status.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = olm_runtime::go_flags::go_bool)]
    pub leader_elect: bool,
    /// Namespace of the leader Lease. Unset: $POD_NAMESPACE, else the pod's namespace (the
    /// service account's namespace file, as upstream), else olmv1-system.
    #[arg(
        long,
        alias = "leader-election-namespace",
        value_name = "NAMESPACE",
        env = "POD_NAMESPACE"
    )]
    pub system_namespace: Option<String>,
    /// Feature gates, `Name=bool,...` (repeatable): APIV1MetasHandler, GraphQLCatalogQueries
    /// (README lists defaults).
    #[arg(long, value_name = "GATES", action = clap::ArgAction::Append)]
    pub feature_gates: Vec<String>,
    /// The defaults of gates --feature-gates does not name: ours, or upstream v1.11's.
    #[arg(long, value_name = "SET", value_enum, default_value = "ours")]
    pub feature_defaults: FeatureDefaults,
    #[command(flatten)]
    pub tls_profile: TlsProfileArgs,
    #[command(flatten)]
    pub klog: KlogArgs,
    /// This replica's name in the leader Lease (a random suffix is added); defaults to the host name.
    #[arg(long, value_name = "NAME", env = "POD_NAME", hide = true)]
    pub pod_name: Option<String>,
    /// Registry credentials for every catalog image: a dockerconfigjson Secret `NAMESPACE/NAME`.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub global_pull_secret: Option<SecretRef>,
    /// Directory of PEM files with extra CA certificates trusted for registries.
    #[arg(long, value_name = "DIR")]
    pub pull_cas_dir: Option<PathBuf>,
    /// Registries (`host:port` as written in image references) spoken to over plain HTTP.
    #[arg(long, value_name = "HOST:PORT", value_delimiter = ',')]
    pub insecure_registries: Vec<String>,
    /// How often to remove content of catalogs that no longer exist (Go duration syntax).
    #[arg(long, value_name = "DURATION", default_value = "12h", value_parser = olm_runtime::flags::duration)]
    pub gc_interval: Duration,
    /// Length of one minute of `pollIntervalMinutes`. For tests and demos only.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = olm_runtime::flags::duration, hide = true)]
    pub poll_interval_unit: Duration,
    /// Manage only ClusterCatalogs matching this label selector (for sharding and tests).
    #[arg(long, value_name = "SELECTOR", hide = true)]
    pub catalog_label_selector: Option<String>,
    /// Log format.
    #[arg(long, value_name = "FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    #[command(flatten)]
    pub limits: ServerLimits,
    /// How long to keep serving after turning unready on SIGTERM (Go duration syntax). Default:
    /// 3s in a Pod (where a Service routes to it), 0s elsewhere.
    #[arg(long, value_name = "DURATION", value_parser = olm_runtime::flags::duration, hide = true)]
    pub shutdown_drain: Option<Duration>,
    /// How long a starting replica waits to serve the catalogs already serving before it
    /// reports ready regardless (Go duration syntax).
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = olm_runtime::flags::duration, hide = true)]
    pub ready_bound: Duration,
}

/// [`Args::shutdown_drain`] when the flag is not given, in a Pod.
///
/// On SIGTERM the Pod's endpoint is marked terminating at once, but each node's kube-proxy
/// learns of it a moment later; until then it still sends new connections here. Serving for a
/// few seconds after turning unready lets those connections be answered instead of reset (the
/// real tier's failover test saw one reset in 121 reads without it). Well inside the default
/// 30 s termination grace period.
pub const POD_SHUTDOWN_DRAIN: Duration = Duration::from_secs(3);

/// The drain period: the flag's value, else [`POD_SHUTDOWN_DRAIN`] when running in a Pod (the
/// kubelet sets `KUBERNETES_SERVICE_HOST` in every container), else none.
pub fn shutdown_drain(flag: Option<Duration>, in_pod: bool) -> Duration {
    flag.unwrap_or(if in_pod {
        POD_SHUTDOWN_DRAIN
    } else {
        Duration::ZERO
    })
}

/// Settings of `catalogd run`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub kubeconfig: Option<PathBuf>,
    pub catalogs_server_addr: SocketAddr,
    pub external_address: String,
    pub cache_dir: PathBuf,
    pub tls: Option<TlsFiles>,
    pub tls_profile: olm_runtime::go_flags::TlsProfile,
    pub limits: ServerLimits,
    /// The metrics listener and its certificate (HTTPS, authenticated and authorized); the
    /// flags give it `tls`'s files, as upstream serves both with one certificate.
    pub metrics: Option<(SocketAddr, TlsFiles)>,
    pub health_addr: Option<SocketAddr>,
    pub pprof_addr: Option<SocketAddr>,
    /// The ClusterCatalog labelling webhook (HTTPS with `tls`).
    pub webhook_addr: Option<SocketAddr>,
    /// Upstream's APIV1MetasHandler gate: serve `/api/v1/metas`.
    pub metas: bool,
    pub leader_elect: bool,
    pub leader_election_namespace: String,
    pub global_pull_secret: Option<SecretRef>,
    pub pull_cas_dir: Option<PathBuf>,
    pub insecure_registries: Vec<String>,
    /// registries.conf files for catalog pulls (mirrors, insecure and blocked registries).
    pub registries_conf: RegistriesConfFiles,
    pub gc_interval: Duration,
    pub poll_unit: Duration,
    pub identity: String,
    /// Only ClusterCatalogs matching this label selector are managed.
    pub label_selector: Option<String>,
    /// How long the servers keep serving after catalogd turned unready at shutdown.
    pub shutdown_drain: Duration,
    /// How long a starting replica waits to serve the catalogs that were serving when it
    /// started before it reports ready regardless ([`crate::controller::ready_gate`]).
    pub ready_bound: Duration,
}

/// catalogd's feature gates: upstream v1.11's names, defaults and maturity, and ours.
pub const FEATURE_GATES: &[GateSpec] = &[
    GateSpec {
        name: "APIV1MetasHandler",
        pre_release: PreRelease::Alpha,
        upstream_default: false,
        our_default: Some(true),
        our_default_note: "/api/v1/metas is served (operator-controller reads packages through it); off, it answers 404 as upstream's",
        support: Support::Implemented,
    },
    GateSpec {
        name: "GraphQLCatalogQueries",
        pre_release: PreRelease::Alpha,
        upstream_default: false,
        our_default: Some(false),
        our_default_note: "",
        support: Support::RefusedWhenEnabled(
            "the GraphQL catalog query endpoint is not implemented; /api/v1/all and /api/v1/metas are",
        ),
    },
];

pub use olm_runtime::gates::ArgsError;

impl RunOptions {
    /// The options the flags describe, checked as upstream checks them.
    pub fn from_args(args: Args) -> Result<RunOptions, ArgsError> {
        let gates =
            FeatureGates::parse_checked(FEATURE_GATES, &args.feature_gates, args.feature_defaults)?;
        let (metrics_addr, tls) = olm_runtime::go_flags::metrics_and_tls(
            args.metrics_bind_address.as_deref(),
            args.tls_cert,
            args.tls_key,
            ":7443",
            "tls-cert and tls-key flags must be used together",
            "metrics-bind-address requires tls-cert and tls-key flags",
        )?;
        // Upstream's webhook server needs a certificate; without one it has none to serve.
        let webhook_addr = (args.webhook_server_port != 0 && tls.is_some())
            .then(|| SocketAddr::from(([0, 0, 0, 0], args.webhook_server_port)));
        tracing::info!(gates = %gates.states(), "catalogd feature gate status");
        Ok(RunOptions {
            kubeconfig: args.kubeconfig,
            catalogs_server_addr: args.catalogs_server_addr,
            external_address: args.external_address,
            cache_dir: args.cache_dir,
            tls_profile: args.tls_profile.profile(),
            limits: args.limits,
            metrics: metrics_addr.zip(tls.clone()),
            tls,
            health_addr: args.health_probe_bind_address.0,
            pprof_addr: args.pprof_bind_address.0,
            webhook_addr,
            metas: gates.enabled_or("APIV1MetasHandler", true),
            leader_elect: args.leader_elect,
            leader_election_namespace: olm_runtime::flags::system_namespace(args.system_namespace),
            global_pull_secret: args.global_pull_secret,
            pull_cas_dir: args.pull_cas_dir,
            insecure_registries: args.insecure_registries,
            registries_conf: RegistriesConfFiles::from_environment(),
            gc_interval: args.gc_interval,
            poll_unit: args.poll_interval_unit,
            identity: olm_runtime::leader::identity(args.pod_name.as_deref(), "catalogd"),
            label_selector: args.catalog_label_selector,
            shutdown_drain: shutdown_drain(
                args.shutdown_drain,
                std::env::var_os("KUBERNETES_SERVICE_HOST").is_some(),
            ),
            ready_bound: args.ready_bound,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Client(#[from] olm_runtime::client::ClientError),
    /// The controller task panicked or ended before shutdown.
    #[error(transparent)]
    ControllerEnded(olm_runtime::supervise::TaskEnded),
    #[error("failed to prepare the cache directory: {0}")]
    Storage(#[from] crate::storage::StorageError),
    #[error("failed to read registry CA certificates: {0}")]
    CaFile(#[from] olm_api::regular_file::FileError),
    #[error("failed to create the image puller: {0}")]
    Puller(#[from] olm_image::ConnectionError),
    #[error(transparent)]
    Server(#[from] ServerError),
}

impl RunError {
    /// Files named by flags that cannot be used are invalid input; the rest are runtime failures.
    pub fn exit(&self) -> Exit {
        match self {
            RunError::Client(olm_runtime::client::ClientError::Read(_))
            | RunError::Client(olm_runtime::client::ClientError::Parse { .. })
            | RunError::CaFile(_)
            | RunError::Server(ServerError::Tls { .. }) => Exit::Invalid,
            _ => Exit::Failed,
        }
    }
}

/// `catalogd run` from its flags: sets up logging and a runtime, runs until SIGINT/SIGTERM.
pub fn run_from_args(args: Args, err: &mut dyn Write) -> Exit {
    olm_runtime::logging::init_with_level(args.log_format, args.klog.level());
    let opts = match RunOptions::from_args(args) {
        Ok(opts) => opts,
        Err(e) => return e.report(err),
    };
    olm_runtime::shutdown::run_until_signal(err, |shutdown| run(opts, shutdown), RunError::exit)
}

/// Runs until `shutdown` is cancelled.
pub async fn run(opts: RunOptions, shutdown: CancellationToken) -> Result<(), RunError> {
    if let Some(files) = &opts.tls {
        olm_runtime::server::check_tls_files(files)?;
    }
    let client = olm_runtime::client::client(opts.kubeconfig.as_deref()).await?;
    let storage = Storage::open(opts.cache_dir.join("catalogs"))?;
    let mut puller_config = PullerConfig::new(opts.cache_dir.join("unpack"));
    puller_config.insecure_registries = opts.insecure_registries.clone();
    puller_config.registries = opts.registries_conf.clone();
    puller_config.registries.log_summary();
    if let Some(dir) = &opts.pull_cas_dir {
        puller_config.extra_ca_pem =
            Some(olm_api::regular_file::read_pem_dir(dir, MAX_CA_FILE_BYTES)?);
    }
    let puller = Arc::new(Puller::new(puller_config.clone())?);
    // Before any pull: what a crash left in the image cache (olm_image::cache).
    match puller.cache().sweep() {
        Ok(swept) => tracing::debug!(?swept, "catalog image cache swept"),
        Err(e) => tracing::warn!(error = %e, "failed to sweep the catalog image cache"),
    }
    let metrics = Metrics::new();
    metrics.set_catalogs_served(storage.catalogs().map(|c| c.len()).unwrap_or(0));

    // Stops the controller, background tasks and the election before the servers, so content
    // keeps being served until the very end.
    let stop_work = shutdown.child_token();
    let leadership = if opts.leader_elect {
        Leadership::elect(
            client.clone(),
            &opts.leader_election_namespace,
            LEADER_ELECTION_ID,
            &opts.identity,
            Timing::default(),
            stop_work.clone(),
        )
    } else {
        Leadership::always()
    };

    let mut ctx = Context::new(
        client.clone(),
        storage.clone(),
        puller,
        leadership.receiver(),
        opts.external_address.clone(),
        opts.tls.is_some(),
        opts.poll_unit,
        metrics.clone(),
    );
    // Replicas say what they serve, so the leader reports content as served only once every
    // replica behind the Service can answer for it.
    let presence = opts.leader_elect.then(|| {
        crate::controller::replicas::Presence::new(
            client.clone(),
            &opts.leader_election_namespace,
            LEADER_ELECTION_ID,
            &opts.identity,
            crate::controller::replicas::group(opts.label_selector.as_deref()),
            storage.clone(),
        )
    });
    if let Some(presence) = &presence {
        ctx = ctx.with_replicas(presence.clone());
    }
    let ctx = Arc::new(ctx);

    // Every replica serves content, leader or not.
    let ready = Arc::new(AtomicBool::new(false));
    let stop_servers = CancellationToken::new();
    let catalog_server = bind(opts.catalogs_server_addr)?;
    let gate_storage = storage.clone();
    tracing::info!(addr = %catalog_server.addr, "catalog content server listening");
    let content_options = ServeOptions {
        tls: opts.tls.clone(),
        tls_profile: opts.tls_profile.clone(),
        limits: opts.limits,
        ..ServeOptions::default()
    };
    let mut servers = vec![tokio::spawn(catalog_server.serve_with(
        router_with_metas(storage, metrics.clone(), opts.metas),
        content_options,
        stop_servers.clone().cancelled_owned(),
    ))];
    if let (Some(addr), Some(tls)) = (opts.webhook_addr, opts.tls.clone()) {
        let bound = bind(addr)?;
        tracing::info!(addr = %bound.addr, "ClusterCatalog labelling webhook listening");
        let options = ServeOptions {
            tls: Some(tls),
            tls_profile: opts.tls_profile.clone(),
            limits: opts.limits,
            ..ServeOptions::default()
        };
        servers.push(tokio::spawn(bound.serve_with(
            crate::webhook::router(),
            options,
            stop_servers.clone().cancelled_owned(),
        )));
    }
    servers.extend(olm_runtime::listeners::start(
        olm_runtime::listeners::Listeners {
            health: opts.health_addr,
            metrics: opts.metrics.clone(),
            pprof: opts.pprof_addr,
            tls_profile: opts.tls_profile.clone(),
            limits: opts.limits,
        },
        metrics.registry(),
        ready.clone(),
        client.clone(),
        stop_servers.clone(),
    )?);

    let mut background = Vec::new();
    // Ready once this replica serves what a Service may already route to it.
    background.push(tokio::spawn(
        crate::controller::ready_gate::open_when_served(
            Api::all(client.clone()),
            opts.label_selector.clone(),
            gate_storage,
            ready.clone(),
            opts.ready_bound,
            stop_work.clone(),
        ),
    ));
    if let Some(presence) = presence {
        background.push(tokio::spawn(presence.run(stop_work.clone())));
    }
    background.push(tokio::spawn(gc::run(
        ctx.clone(),
        opts.label_selector.clone(),
        opts.gc_interval,
        stop_work.clone().cancelled_owned(),
    )));
    // The puller is rebuilt when its credentials (the global pull secret) or its CAs
    // (`--pull-cas-dir`, re-read so that a CA rotated by cert-manager is trusted without a
    // restart) change.
    background.extend(olm_runtime::puller_inputs::follow(
        client.clone(),
        opts.global_pull_secret.clone(),
        opts.pull_cas_dir.clone(),
        MAX_CA_FILE_BYTES,
        puller_config.clone(),
        stop_work.clone(),
        {
            let ctx = ctx.clone();
            move |puller| ctx.set_puller(Arc::new(puller))
        },
    ));

    // A change of leadership re-examines every catalog (the new leader owns their status).
    let api: Api<ClusterCatalog> = Api::all(client);
    let mut watch_config = watcher::Config::default();
    if let Some(selector) = &opts.label_selector {
        watch_config = watch_config.labels(selector);
    }
    let controller = Controller::new(api, watch_config);
    let cache = controller.store();
    let controller = controller
        .reconcile_all_on(leadership.changes())
        .graceful_shutdown_on(stop_work.clone().cancelled_owned())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "controller event");
            }
        });
    let mut controller = tokio::spawn(controller);

    let ended =
        olm_runtime::supervise::until_shutdown("controller", &mut controller, &shutdown).await;
    if let Err(e) = &ended {
        tracing::error!(error = %e, "stopping: the controller is not running");
        stop_work.cancel();
    }
    tracing::info!("shutting down");
    ready.store(false, Ordering::Release);
    let drained = tokio::time::Instant::now() + opts.shutdown_drain;
    if ended.is_ok() {
        olm_runtime::supervise::stop_controller_with_cache("controller", controller, &cache).await;
    }
    for task in background {
        let _ = task.await;
    }
    leadership.stopped().await;
    // Serving until the drain period ends (counted from turning unready, so the stops above
    // are part of it).
    tokio::time::sleep_until(drained).await;
    stop_servers.cancel();
    for server in servers {
        if let Ok(Err(e)) = server.await {
            tracing::warn!(error = %e, "server stopped with an error");
        }
    }
    ended.map_err(RunError::ControllerEnded)
}

#[cfg(test)]
mod drain_tests {
    use super::*;

    #[test]
    fn the_drain_is_the_flags_value_else_three_seconds_in_a_pod_else_none() {
        let flag = Some(Duration::from_millis(1500));
        assert_eq!(shutdown_drain(flag, true), Duration::from_millis(1500));
        assert_eq!(shutdown_drain(flag, false), Duration::from_millis(1500));
        assert_eq!(shutdown_drain(Some(Duration::ZERO), true), Duration::ZERO);
        assert_eq!(shutdown_drain(None, true), POD_SHUTDOWN_DRAIN);
        assert_eq!(shutdown_drain(None, false), Duration::ZERO);
    }
}
