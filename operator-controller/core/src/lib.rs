//! operator-controller's pure decision logic.
//!
//! Input: values (a ClusterExtension's spec, catalog content, bundle files already read into
//! memory, cluster objects already fetched). Output: decisions (which bundle, which objects,
//! which conditions) and errors that know their condition reason. No network, no file system,
//! no async runtime, no Kubernetes client: the crate's dependencies make that a compile-time
//! rule, and the IO side (`operator-controller`) feeds it.
//!
//! - [`resolve`]: which bundle of which catalog a ClusterExtension gets, and its deprecation
//!   conditions.
//! - [`apply_plan`]: what the apply layer writes, removes and checks for an extension, and
//!   whether its Deployments are available.
//! - [`crd_upgrade`]: whether replacing installed CRDs is safe (upstream's check minus its false
//!   positives), and the data-aware validation of stored custom resources.
//! - [`release`]: installed state as Helm release records in upstream's chunked Secret format
//!   (model, chart and manifest synthesis, Secret encoding and decoding, history).
//! - [`gating`]: OpenShift upgrade gating on `olm.maxOpenShiftVersion`.
//! - [`bundle`]: a registry+v1 bundle's files parsed as upstream parses them, and its validators.
//! - [`render`]: a bundle rendered into the objects OLM v1 applies (install modes, configuration,
//!   certificate providers).
//! - [`gotype`]: Go's typed round trip of Kubernetes objects, which shapes every rendered object.
//! - [`status`]: the ClusterExtension status a reconcile publishes, and the policy after a
//!   failed resolution.
//! - [`catalog_changes`]: which ClusterExtensions a ClusterCatalog change concerns.
//! - [`fingerprint`]: which changes of watched objects are worth acting on (drift of applied
//!   objects, the ClusterExtension changes that start a reconcile).
//! - [`preview`]: what an install or upgrade would change (object diffs, RBAC and webhook
//!   deltas), for `operator-controller preview`.
//! - [`webhook_certs`]: the built-in webhook certificate provider: which certificates, when
//!   they rotate, and the CA bundle injected into webhook configurations and CRDs.

pub mod apply_plan;
pub mod bundle;
pub mod catalog_changes;
pub mod crd_upgrade;
pub mod fingerprint;
pub mod gating;
pub mod gotype;
pub mod preview;
pub mod release;
pub mod render;
pub mod resolve;
pub mod status;
pub mod webhook_certs;
