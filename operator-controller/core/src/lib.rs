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
//! - [`release`]: installed state as Helm release records in upstream's chunked Secret format
//!   (model, chart and manifest synthesis, Secret encoding and decoding, history).
//! - [`gating`]: OpenShift upgrade gating on `olm.maxOpenShiftVersion`.

pub mod gating;
pub mod release;
pub mod resolve;
