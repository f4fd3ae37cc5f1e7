//! `operator-controller run`: the in-cluster mode. Watches ClusterExtensions and installs,
//! upgrades, repairs and removes what they declare; watches ClusterCatalogs to re-queue the
//! extensions a catalog change concerns; on the elected leader only.
//!
//! Input: [`Args`] (flags, upstream's names where upstream has the flag) or [`RunOptions`]
//! (tests run the controller in-process through [`run`]). Output: runs until the shutdown token
//! is cancelled (SIGINT/SIGTERM for the binary). Network: the Kubernetes API, catalogd, image
//! registries, and the health and metrics listeners.
//!
//! OpenShift mode ([`RunOptions::openshift`], `--openshift=auto|true|false`) is decided once at
//! start; when on, the gating loop ([`crate::gating`]) runs beside the controller, its cluster
//! version cache goes into the reconcile's context (the per-extension `ClusterUpgradeable`
//! condition) and every change of the cluster version re-queues every ClusterExtension. When off
//! (`auto` on a cluster without `config.openshift.io/v1`), nothing of it runs.
//!
//! The webhook certificate provider is `--cert-provider`, or, when unset, detected once at start
//! ([`crate::webhook_certs::detect_provider`]: cert-manager, else OpenShift service-ca, else the
//! built-in provider).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, PredicateConfig, WatchStreamExt, controller, reflector, watcher};
use olm_api::v1::ClusterExtension;
use olm_image::{Puller, PullerConfig, RegistriesConfFiles};
use olm_runtime::exit::Exit;
use olm_runtime::flags::OptionalListenAddress;
use olm_runtime::gates::{FeatureDefaults, FeatureGates, GateSpec, PreRelease, Support};
use olm_runtime::go_flags::{KlogArgs, TlsProfileArgs};
use olm_runtime::leader::{Leadership, Timing};
use olm_runtime::logging::LogFormat;
use olm_runtime::pull_secret::SecretRef;
use olm_runtime::server::{ServerError, ServerLimits, TlsFiles};
use olm_runtime::shutdown::CancellationToken;
use tokio::sync::mpsc;

use crate::apply::{Applier, Caches, DriftWatches};
use crate::bundle_source::bundle_image_limits;
use crate::catalog_source::http::{CatalogdClient, ClientOptions, ReadIdleArgs};
use crate::cmd::render::CertProviderArg;
use crate::controller::metrics::Metrics;
use crate::controller::reconcile::{Context, Settings, error_policy, reconcile, reconcile_trigger};
use crate::controller::{availability, catalogs};
use crate::gating;
use crate::lean_watch::without_managed_fields;
use crate::webhook_certs;
use olm_operator_core::render::CertProvider;
use olm_operator_core::webhook_certs::rotation::Policy;

/// Lease name of operator-controller's leader election (upstream's).
pub const LEADER_ELECTION_ID: &str = "9c4404e7.operatorframework.io";
/// The largest CA file read from a CA directory.
const MAX_CA_FILE_BYTES: u64 = 1 << 20;

/// Arguments of `operator-controller run`: upstream v1.11's flags with upstream's meaning and
/// defaults (so the command line of upstream's release manifest starts this binary), then ours.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Kubeconfig to use instead of the in-cluster configuration or $KUBECONFIG.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the metrics endpoint (HTTPS, only for callers allowed `get` on `/metrics`).
    /// Requires --tls-cert and --tls-key; with them it defaults to `:8443`. `0` disables it.
    #[arg(long, value_name = "ADDR")]
    pub metrics_bind_address: Option<String>,
    /// Certificate of the metrics endpoint (PEM, reloaded on change). Requires --tls-key.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// Key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Address serving /healthz and /readyz (plain HTTP); `0` disables it.
    #[arg(long, value_name = "ADDR", default_value = ":8081", value_parser = olm_runtime::flags::optional_listen_address)]
    pub health_probe_bind_address: OptionalListenAddress,
    /// Address of the profiling endpoint; `0` or empty disables it (see README: the Go
    /// runtime's profiles do not exist here).
    #[arg(long, value_name = "ADDR", default_value = "0", value_parser = olm_runtime::flags::optional_listen_address)]
    pub pprof_bind_address: OptionalListenAddress,
    /// Elect a leader among replicas through a Lease; only the leader reconciles.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = olm_runtime::go_flags::go_bool)]
    pub leader_elect: bool,
    /// The namespace of release Secrets and of the leader Lease. Unset: $POD_NAMESPACE, else the
    /// pod's namespace (the service account's namespace file, as upstream), else olmv1-system.
    #[arg(long, value_name = "NAMESPACE", env = "POD_NAMESPACE")]
    pub system_namespace: Option<String>,
    /// This replica's name in the leader Lease (a random suffix is added); defaults to the host name.
    #[arg(long, value_name = "NAME", env = "POD_NAME", hide = true)]
    pub pod_name: Option<String>,
    /// Directory of PEM files with the CA certificates of catalogd's HTTPS server.
    #[arg(long, value_name = "DIR")]
    pub catalogd_cas_dir: Option<PathBuf>,
    #[command(flatten)]
    pub catalogd_read: ReadIdleArgs,
    /// Directory of PEM files with extra CA certificates trusted for registries.
    #[arg(long, value_name = "DIR")]
    pub pull_cas_dir: Option<PathBuf>,
    /// Registry credentials for every bundle image: a dockerconfigjson Secret `NAMESPACE/NAME`.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub global_pull_secret: Option<SecretRef>,
    /// Directory for unpacked bundle images (kept across restarts).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "/var/cache/operator-controller"
    )]
    pub cache_path: PathBuf,
    /// Feature gates, `Name=bool,...` (repeatable): SingleOwnNamespaceInstallSupport,
    /// DeploymentConfig, WebhookProviderCertManager, WebhookProviderOpenshiftServiceCA,
    /// BoxcutterRuntime, BundleReleaseSupport (README lists defaults).
    #[arg(long, value_name = "GATES", action = clap::ArgAction::Append)]
    pub feature_gates: Vec<String>,
    /// The defaults of gates --feature-gates does not name: ours, or upstream v1.11's.
    #[arg(long, value_name = "SET", value_enum, default_value = "ours")]
    pub feature_defaults: FeatureDefaults,
    #[command(flatten)]
    pub tls_profile: TlsProfileArgs,
    #[command(flatten)]
    pub klog: KlogArgs,
    /// Registries (`host:port` as written in image references) spoken to over plain HTTP.
    #[arg(long, value_name = "HOST:PORT", value_delimiter = ',')]
    pub insecure_registries: Vec<String>,
    /// Who provisions webhook certificates of installed bundles. Unset: as the
    /// WebhookProvider* feature gates say when one is named, else cert-manager when its API is
    /// served, else OpenShift service-ca when served, else `builtin`.
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub cert_provider: Option<CertProviderArg>,
    /// Validity of certificates the built-in provider issues (Go duration syntax); renewal and
    /// CA-rotation points scale with it. For tests.
    #[arg(long, value_name = "DURATION", value_parser = olm_runtime::flags::duration, hide = true)]
    pub builtin_cert_validity: Option<Duration>,
    /// When a CRD upgrade is unsafe by the rules, allow it if no stored custom resource
    /// violates the new schema (a warning goes into the status).
    #[arg(long)]
    pub crd_upgrade_safety_data_aware: bool,
    /// Apply each extension's objects as its `spec.serviceAccount` (impersonation), reporting
    /// every missing permission in one message. Off by default: upstream v1.11 ignores the
    /// deprecated field and applies as the controller, and so does this controller without the
    /// flag.
    #[arg(long)]
    pub honor_service_account: bool,
    /// How many ClusterExtensions are reconciled at once (controller-runtime's
    /// MaxConcurrentReconciles). Bounds the API requests and memory in flight when many
    /// extensions change together.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_reconciles: u16,
    /// Bound of single API calls (Go duration syntax).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = olm_runtime::flags::duration, hide = true)]
    pub api_call_timeout: Duration,
    /// Manage only ClusterExtensions matching this label selector (for sharding and tests).
    #[arg(long, value_name = "SELECTOR", hide = true)]
    pub extension_label_selector: Option<String>,
    /// Log format.
    #[arg(long, value_name = "FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    #[command(flatten)]
    pub limits: ServerLimits,
    #[command(flatten)]
    pub gating: gating::OpenShiftArgs,
}

/// operator-controller's feature gates: upstream v1.11's names, defaults and maturity, and ours.
pub const FEATURE_GATES: &[GateSpec] = &[
    GateSpec {
        name: "SingleOwnNamespaceInstallSupport",
        pre_release: PreRelease::Alpha,
        upstream_default: false,
        our_default: Some(true),
        our_default_note: "bundles without AllNamespaces install into one watched namespace; off, such bundles fail as upstream's",
        support: Support::Implemented,
    },
    GateSpec {
        name: "WebhookProviderCertManager",
        pre_release: PreRelease::Ga,
        upstream_default: true,
        our_default: None,
        our_default_note: "unnamed: the provider is detected at start (cert-manager, else service-ca, else built-in)",
        support: Support::Implemented,
    },
    GateSpec {
        name: "WebhookProviderOpenshiftServiceCA",
        pre_release: PreRelease::Ga,
        upstream_default: true,
        our_default: None,
        our_default_note: "unnamed: the provider is detected at start (cert-manager, else service-ca, else built-in)",
        support: Support::Implemented,
    },
    GateSpec {
        name: "BoxcutterRuntime",
        pre_release: PreRelease::Alpha,
        upstream_default: false,
        our_default: Some(false),
        our_default_note: "",
        support: Support::RefusedWhenEnabled(
            "the Boxcutter runtime (ClusterObjectSet revisions instead of Helm release Secrets) is not implemented; this controller keeps Helm-compatible release records",
        ),
    },
    GateSpec {
        name: "DeploymentConfig",
        pre_release: PreRelease::Alpha,
        upstream_default: false,
        our_default: Some(true),
        our_default_note: "spec.config.inline.deploymentConfig is applied; off, it is an unknown field as upstream's",
        support: Support::Implemented,
    },
    GateSpec {
        name: "BundleReleaseSupport",
        pre_release: PreRelease::Alpha,
        upstream_default: false,
        our_default: Some(false),
        our_default_note: "",
        support: Support::RefusedWhenEnabled(
            "the olm.package release field is not implemented; releases are read from version build metadata as registry+v1 defines",
        ),
    },
];

/// Settings of `operator-controller run`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub kubeconfig: Option<PathBuf>,
    /// The metrics listener (HTTPS with `metrics_tls`, authenticated and authorized).
    pub metrics_addr: Option<SocketAddr>,
    pub metrics_tls: Option<TlsFiles>,
    pub tls_profile: olm_runtime::go_flags::TlsProfile,
    pub health_addr: Option<SocketAddr>,
    pub pprof_addr: Option<SocketAddr>,
    /// Upstream's SingleOwnNamespaceInstallSupport and DeploymentConfig gates.
    pub single_own_namespace: bool,
    pub deployment_config: bool,
    pub leader_elect: bool,
    pub system_namespace: String,
    pub identity: String,
    pub catalogd_cas_dir: Option<PathBuf>,
    /// catalogd's longest silence while content is read (zero: no limit but the total).
    pub catalogd_read_idle_timeout: Duration,
    pub pull_cas_dir: Option<PathBuf>,
    pub global_pull_secret: Option<SecretRef>,
    pub cache_dir: PathBuf,
    pub insecure_registries: Vec<String>,
    /// registries.conf files for bundle pulls (mirrors, insecure and blocked registries).
    pub registries_conf: RegistriesConfFiles,
    /// The certificate provider for bundles with webhooks; `None`: detected at start.
    pub cert_provider: Option<CertProvider>,
    /// Validity of the built-in provider's certificates (`None`: 730 days).
    pub builtin_cert_validity: Option<Duration>,
    pub data_aware_crd_upgrade_safety: bool,
    pub honor_service_account: bool,
    pub call_timeout: Duration,
    /// Reconciles running at once.
    pub max_concurrent_reconciles: u16,
    pub limits: ServerLimits,
    /// Only ClusterExtensions matching this label selector are managed.
    pub label_selector: Option<String>,
    /// Whether OpenShift cluster-upgrade gating runs.
    pub openshift: gating::OpenShiftMode,
}

pub use olm_runtime::gates::ArgsError;

impl RunOptions {
    /// The options the flags describe, checked as upstream checks them.
    pub fn from_args(args: Args) -> Result<RunOptions, ArgsError> {
        let gates =
            FeatureGates::parse_checked(FEATURE_GATES, &args.feature_gates, args.feature_defaults)?;
        let (metrics_addr, metrics_tls) = olm_runtime::go_flags::metrics_and_tls(
            args.metrics_bind_address.as_deref(),
            args.tls_cert,
            args.tls_key,
            ":8443",
            "unable to configure TLS certificates: tls-cert and tls-key flags must be used together",
            "metrics-bind-address requires tls-cert and tls-key flags to be set",
        )?;
        // The WebhookProvider* gates decide the provider as upstream's do when either is named;
        // unnamed, ours is detected at start.
        let gate_provider = || {
            if gates.enabled_or("WebhookProviderCertManager", false) {
                CertProvider::CertManager
            } else if gates.enabled_or("WebhookProviderOpenshiftServiceCA", false) {
                CertProvider::OpenShiftServiceCa
            } else {
                CertProvider::None
            }
        };
        let gates_name_provider = gates.value("WebhookProviderCertManager").is_some()
            || gates.value("WebhookProviderOpenshiftServiceCA").is_some();
        let cert_provider = match args.cert_provider {
            Some(p) => Some(p.into()),
            None if gates_name_provider => Some(gate_provider()),
            None => None,
        };
        tracing::info!(gates = %gates.states(), "feature gate status");
        Ok(RunOptions {
            kubeconfig: args.kubeconfig,
            metrics_addr,
            metrics_tls,
            tls_profile: args.tls_profile.profile(),
            health_addr: args.health_probe_bind_address.0,
            pprof_addr: args.pprof_bind_address.0,
            single_own_namespace: gates.enabled_or("SingleOwnNamespaceInstallSupport", true),
            deployment_config: gates.enabled_or("DeploymentConfig", true),
            leader_elect: args.leader_elect,
            system_namespace: olm_runtime::flags::system_namespace(args.system_namespace),
            identity: olm_runtime::leader::identity(
                args.pod_name.as_deref(),
                "operator-controller",
            ),
            catalogd_cas_dir: args.catalogd_cas_dir,
            catalogd_read_idle_timeout: args.catalogd_read.catalogd_read_idle_timeout,
            pull_cas_dir: args.pull_cas_dir,
            global_pull_secret: args.global_pull_secret,
            cache_dir: args.cache_path,
            insecure_registries: args.insecure_registries,
            registries_conf: RegistriesConfFiles::from_environment(),
            cert_provider,
            builtin_cert_validity: args.builtin_cert_validity,
            data_aware_crd_upgrade_safety: args.crd_upgrade_safety_data_aware,
            honor_service_account: args.honor_service_account,
            call_timeout: args.api_call_timeout,
            max_concurrent_reconciles: args.max_concurrent_reconciles,
            limits: args.limits,
            label_selector: args.extension_label_selector,
            openshift: args.gating.openshift,
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
    #[error("failed to read CA certificates from {path}: {source}")]
    Cas {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read CA certificates: {0}")]
    CaFile(#[from] olm_api::regular_file::FileError),
    #[error("failed to create the image puller: {0}")]
    Puller(#[from] olm_image::ConnectionError),
    #[error(transparent)]
    Catalogd(#[from] crate::catalog_source::http::ClientError),
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("failed to decide OpenShift mode: {0}")]
    OpenShift(#[from] gating::GatingError),
    #[error("failed to detect the webhook certificate provider: {0}")]
    CertProvider(crate::apply::ApiFailure),
}

impl RunError {
    /// Files named by flags that cannot be used are invalid input; the rest are runtime failures.
    pub fn exit(&self) -> Exit {
        match self {
            RunError::Client(olm_runtime::client::ClientError::Read(_))
            | RunError::Client(olm_runtime::client::ClientError::Parse { .. })
            | RunError::CaFile(_)
            | RunError::Catalogd(_) => Exit::Invalid,
            _ => Exit::Failed,
        }
    }
}

/// `operator-controller run` from its flags: sets up logging and a runtime, runs until
/// SIGINT/SIGTERM.
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
    let client = olm_runtime::client::client(opts.kubeconfig.as_deref()).await?;
    let mut puller_config = PullerConfig::new(opts.cache_dir.join("bundles"));
    puller_config.insecure_registries = opts.insecure_registries.clone();
    puller_config.registries = opts.registries_conf.clone();
    puller_config.registries.log_summary();
    puller_config.limits = bundle_image_limits();
    if let Some(dir) = &opts.pull_cas_dir {
        puller_config.extra_ca_pem =
            Some(olm_api::regular_file::read_pem_dir(dir, MAX_CA_FILE_BYTES)?);
    }
    let puller = Arc::new(Puller::new(puller_config.clone())?);
    // Before any pull: what a crash left in the image cache (olm_image::cache).
    match puller.cache().sweep() {
        Ok(swept) => tracing::debug!(?swept, "bundle image cache swept"),
        Err(e) => tracing::warn!(error = %e, "failed to sweep the bundle image cache"),
    }
    let mut catalogd_options = ClientOptions {
        read_idle_timeout: opts.catalogd_read_idle_timeout,
        ..ClientOptions::default()
    };
    if let Some(dir) = &opts.catalogd_cas_dir {
        catalogd_options.extra_ca_pem =
            Some(olm_api::regular_file::read_pem_dir(dir, MAX_CA_FILE_BYTES)?);
    }
    let catalogd_cas_in_use = catalogd_options.extra_ca_pem.clone().unwrap_or_default();
    let catalogd = Arc::new(CatalogdClient::new(catalogd_options)?);
    let catalogd_for_cas = catalogd.clone();
    let metrics = Metrics::new();

    let stop_work = shutdown.child_token();
    let leadership = if opts.leader_elect {
        Leadership::elect(
            client.clone(),
            &opts.system_namespace,
            LEADER_ELECTION_ID,
            &opts.identity,
            Timing::default(),
            stop_work.clone(),
        )
    } else {
        Leadership::always()
    };

    // Release index Secrets (metadata only), so that a reconcile or a gating evaluation whose
    // records did not change needs no list of them.
    let (release_index_cache, release_index_watch) = crate::storage::IndexCache::watch(
        client.clone(),
        &opts.system_namespace,
        stop_work.clone(),
    );

    // OpenShift mode, decided once: the gating loop and its cluster version cache.
    let gating = gating::openshift_enabled(&client, opts.openshift, opts.call_timeout)
        .await?
        .then(|| {
            gating::Gating::new(
                client.clone(),
                gating::GatingOptions::from_env(&opts.system_namespace),
            )
            .with_release_index_cache(release_index_cache.clone())
        });
    let versions = gating.as_ref().map(gating::Gating::cluster_version);
    tracing::info!(
        mode = %opts.openshift,
        enabled = gating.is_some(),
        "OpenShift cluster-upgrade gating"
    );

    let (cert_provider, cert_provider_detected) = match opts.cert_provider {
        Some(provider) => (provider, false),
        None => (
            webhook_certs::detect_provider(&client, opts.call_timeout)
                .await
                .map_err(RunError::CertProvider)?,
            true,
        ),
    };
    tracing::info!(provider = ?cert_provider, detected = cert_provider_detected, "webhook certificate provider");
    let cert_policy = match opts.builtin_cert_validity {
        Some(validity) => {
            Policy::with_validity(i64::try_from(validity.as_secs()).unwrap_or(i64::MAX))
        }
        None => Policy::default(),
    };

    let (drift, mut drift_events) = DriftWatches::new(client.clone(), 1024);
    let (availability_changes, availability_changes_rx) = mpsc::channel(1024);
    let deployment_watch = availability::DeploymentWatch::start(
        client.clone(),
        availability_changes.clone(),
        stop_work.clone(),
    );
    let (catalog_cache, catalog_cache_writer) = reflector::store();
    // Namespaces (metadata only), so that an apply into a namespace that exists needs no GET.
    let (namespace_cache, namespace_cache_writer) = reflector::store();
    let settings = Settings {
        system_namespace: opts.system_namespace.clone(),
        cert_provider,
        cert_provider_detected,
        data_aware_crd_upgrade_safety: opts.data_aware_crd_upgrade_safety,
        honor_service_account: opts.honor_service_account,
        call_timeout: opts.call_timeout,
        single_own_namespace: opts.single_own_namespace,
        deployment_config: opts.deployment_config,
    };
    let ctx = Arc::new(
        Context::new(
            client.clone(),
            settings,
            Applier::new(client.clone()).with_caches(Caches {
                drift: Some(drift.clone()),
                namespaces: Some(namespace_cache),
            }),
            drift,
            catalogd.clone(),
            puller,
            leadership.receiver(),
            metrics.clone(),
        )
        .with_cluster_versions(versions.clone())
        .with_catalog_cache(catalog_cache)
        .with_release_index_cache(release_index_cache)
        .with_deployment_watch(deployment_watch.clone())
        .with_publisher_input(availability_changes)
        .with_builtin_certs(webhook_certs::BuiltinCerts::new(
            client.clone(),
            cert_policy,
            opts.call_timeout,
        )),
    );

    let ready = Arc::new(AtomicBool::new(false));
    let stop_servers = CancellationToken::new();
    let servers = olm_runtime::listeners::start(
        olm_runtime::listeners::Listeners {
            health: opts.health_addr,
            metrics: opts.metrics_addr.zip(opts.metrics_tls.clone()),
            pprof: opts.pprof_addr,
            tls_profile: opts.tls_profile.clone(),
            limits: opts.limits,
        },
        metrics.registry(),
        ready.clone(),
        client.clone(),
        stop_servers.clone(),
    )?;

    // Re-queues from drift events and catalog changes share one channel into the controller.
    let (requeue, requeue_rx) = mpsc::channel::<ObjectRef<ClusterExtension>>(1024);
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let mut watch_config = watcher::Config::default();
    if let Some(selector) = &opts.label_selector {
        watch_config = watch_config.labels(selector);
    }
    // Only changes a reconcile acts on start one: the status this controller writes (and our own
    // finalizer patch) would otherwise reconcile every extension once or twice more.
    let (store, writer) = reflector::store();
    let triggers = without_managed_fields(watcher(api, watch_config))
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(reconcile_trigger, PredicateConfig::default());
    let controller = Controller::for_stream(triggers, store.clone())
        .with_config(controller::Config::default().concurrency(opts.max_concurrent_reconciles));
    let mut background = Vec::new();
    {
        let requeue = requeue.clone();
        let stop = stop_work.clone();
        background.push(tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => return,
                    event = drift_events.recv() => event,
                };
                let Some(event) = event else { return };
                tracing::debug!(extension = %event.extension, object = %event.object, change = ?event.change, "drift");
                if requeue
                    .send(ObjectRef::new(&event.extension))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }));
    }
    background.push(tokio::spawn(availability::publish(
        availability::Publisher {
            client: client.clone(),
            extensions: store.clone(),
            watch: deployment_watch,
            deployed: ctx.deployed.clone(),
            leader: leadership.receiver(),
            requeue: requeue.clone(),
            own_writes: ctx.own_writes.clone(),
            in_flight: ctx.in_flight.clone(),
        },
        availability_changes_rx,
        stop_work.clone(),
    )));
    background.push(tokio::spawn(catalogs::watch(
        client.clone(),
        catalogd,
        store.clone(),
        catalog_cache_writer,
        requeue,
        stop_work.clone(),
    )));
    background.push(tokio::spawn(release_index_watch));
    background.push(tokio::spawn(watch_namespaces(
        client.clone(),
        namespace_cache_writer,
        stop_work.clone(),
    )));
    // The puller is rebuilt when its credentials (the global pull secret) or its CAs
    // (`--pull-cas-dir`) change. Certificate authorities rotated under a running process
    // (cert-manager renews its CA) are trusted without a restart.
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
    if let Some(dir) = opts.catalogd_cas_dir.clone() {
        let catalogd = catalogd_for_cas.clone();
        background.push(tokio::spawn(olm_runtime::ca_dir::watch(
            "--catalogd-cas-dir",
            catalogd_cas_in_use.clone(),
            olm_runtime::ca_dir::POLL,
            stop_work.clone(),
            move || olm_api::regular_file::read_pem_dir(&dir, MAX_CA_FILE_BYTES),
            move |pem| {
                if let Err(e) = catalogd.trust(pem) {
                    tracing::warn!(error = %e, "the new catalogd CAs are not usable; keeping those in use");
                }
            },
        )));
    }

    if let Some(gating) = gating {
        background.push(tokio::spawn(
            gating.run(leadership.receiver(), stop_work.clone()),
        ));
    }
    // A new cluster version changes every extension's `ClusterUpgradeable` condition.
    let version_changes = match &versions {
        Some(versions) => versions.changes().boxed(),
        None => futures::stream::pending().boxed(),
    };

    let requeues = futures::stream::unfold(requeue_rx, |mut rx| async move {
        rx.recv().await.map(|r| (r, rx))
    });
    let controller = controller
        .reconcile_all_on(leadership.changes())
        .reconcile_all_on(version_changes)
        .reconcile_on(requeues)
        .graceful_shutdown_on(stop_work.clone().cancelled_owned())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "controller event");
            }
        });
    let mut controller = tokio::spawn(controller);
    ready.store(true, Ordering::Release);

    let ended =
        olm_runtime::supervise::until_shutdown("controller", &mut controller, &shutdown).await;
    if let Err(e) = &ended {
        tracing::error!(error = %e, "stopping: the controller is not running");
        stop_work.cancel();
    }
    tracing::info!("shutting down");
    ready.store(false, Ordering::Release);
    if ended.is_ok() {
        olm_runtime::supervise::stop_controller_with_cache("controller", controller, &store).await;
    }
    for task in background {
        let _ = task.await;
    }
    leadership.stopped().await;
    stop_servers.cancel();
    for server in servers {
        if let Ok(Err(e)) = server.await {
            tracing::warn!(error = %e, "server stopped with an error");
        }
    }
    ended.map_err(RunError::ControllerEnded)
}

/// Keeps `cache` (the namespaces' metadata) current until `stop`; a broken watch resumes with
/// backoff. Until it has listed, the cache is empty and appliers ask the API server.
async fn watch_namespaces(
    client: kube::Client,
    cache: reflector::store::Writer<
        kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::Namespace>,
    >,
    stop: CancellationToken,
) {
    let api: Api<kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::Namespace>> =
        Api::all(client);
    let events = reflector(
        cache,
        without_managed_fields(watcher(api, watcher::Config::default())),
    )
    .default_backoff();
    let mut events = std::pin::pin!(events);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            event = events.next() => {
                match event {
                    None => return,
                    Some(Err(e)) => tracing::debug!(error = %e, "namespace watch interrupted; it resumes"),
                    Some(Ok(_)) => {}
                }
            }
        }
    }
}
