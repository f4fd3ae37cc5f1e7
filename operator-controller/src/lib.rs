//! operator-controller: resolution, catalog content access and the offline CLI.
//!
//! - [`resolve`]: the pure resolver, re-exported from `olm-operator-core` (the crate that holds
//!   every IO-free decision).
//! - [`catalog_source`]: a package's content from catalogd over HTTP (cached) or a directory.
//! - [`bundle_source`]: a registry+v1 bundle's files from a directory or an image, bounded.
//! - [`cli`]: the `operator-controller` command line; its modes are in [`cmd`] (`resolve`, `render`, `crd-upgrade-check`).
//! - [`apply`]: writes extensions' objects to the cluster and keeps them there (server-side
//!   apply, collisions, pruning, uninstall, impersonation, drift watches, availability).
//! - [`controller`]: the ClusterExtension controller (`operator-controller run`): the reconcile
//!   pipeline, its errors, metrics and the CRD upgrade-safety preflight.
//! - [`gating`]: OpenShift cluster-upgrade gating: the `olm` ClusterOperator's `Upgradeable`
//!   condition from installed extensions' `olm.maxOpenShiftVersion`, and the cached cluster version.
//! - [`webhook_certs`]: the built-in webhook certificate provider (CA and serving certificates
//!   in Secrets beside the release, rotation, removal).
//! - [`lean_watch`]: what the watch caches keep of each object (no managedFields).
//! - [`storage`]: installed state (Helm release records in chunked Secrets) through the
//!   Kubernetes API.

pub mod apply;
pub mod bundle_source;
pub mod catalog_source;
pub mod cli;
pub mod cmd;
pub mod controller;
pub mod gating;
pub mod lean_watch;
pub mod storage;
pub mod webhook_certs;
pub use olm_operator_core::resolve;
