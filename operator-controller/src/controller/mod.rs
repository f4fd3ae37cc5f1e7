//! The ClusterExtension controller: one reconcile per extension, one status write at its end.
//!
//! Input: ClusterExtensions (watched), ClusterCatalogs (listed per reconcile, watched for
//! changes), catalog content from catalogd, bundle images, release Secrets. Output: the
//! extension's objects applied and kept as declared, release records, status. Network: the
//! Kubernetes API, catalogd's HTTP API and image registries.
//!
//! | module | what |
//! |---|---|
//! | [`reconcile`] | the pipeline of one reconcile (finalizers → validate → installed state → catalogs → resolve → pull → render → preflight → apply → record → availability → status) and the error policy |
//! | [`catalogs`] | ClusterCatalogs as the resolver sees them, their package content, and the watch that re-queues only the extensions a catalog change concerns |
//! | [`last_apply`] | the last apply per extension, reused while the drift watches show its objects unchanged |
//! | [`pending`] | what an install or upgrade would change, as the preview reports it (shared with `operator-controller preview`; the summary of a bundle awaiting approval) |
//! | [`preflight`] | the CRD upgrade-safety check before an install or upgrade |
//! | [`error`] | one error per step, each with its condition reason and whether it is terminal |
//! | [`metrics`] | the Prometheus metrics |
//! | [`events`] | Kubernetes Events about extensions (`UpdateAvailable`) |
//!
//! # Finalizers
//!
//! The controller puts upstream's two finalizer names on every extension,
//! `olm.operatorframework.io/cleanup-unpack-cache` and
//! `olm.operatorframework.io/cleanup-contentmanager-cache`, so an extension moves between
//! upstream and this controller in both directions without getting stuck: each side knows how
//! to release both. Under them this controller runs an explicit uninstall (the release's
//! objects in reverse apply order, then the release Secrets, then the bundle cache) before it
//! removes them, which also works where no garbage collector runs. Finalizers that upstream set
//! on an extension it installed are the same two names, so they are handled the same way;
//! upstream itself relies on garbage collection through ownerReferences, which our objects carry
//! as well.

pub mod availability;
pub mod catalogs;
pub mod error;
pub mod events;
pub mod last_apply;
pub mod metrics;
pub mod pending;
pub mod preflight;
pub mod reconcile;
pub mod status_writes;

/// Upstream's finalizer for the bundle image cache of an extension.
pub const CLEANUP_UNPACK_CACHE_FINALIZER: &str = "olm.operatorframework.io/cleanup-unpack-cache";
/// Upstream's finalizer for the watches of an extension's objects.
pub const CLEANUP_CONTENTMANAGER_CACHE_FINALIZER: &str =
    "olm.operatorframework.io/cleanup-contentmanager-cache";
/// Both, in the order upstream adds them.
pub const FINALIZERS: [&str; 2] = [
    CLEANUP_UNPACK_CACHE_FINALIZER,
    CLEANUP_CONTENTMANAGER_CACHE_FINALIZER,
];
