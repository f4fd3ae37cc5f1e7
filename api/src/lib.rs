//! The OLM v1 API: Kubernetes types, File-Based Catalog model and version ranges.
//!
//! This crate performs no network IO; the catalog loader reads local files only.

pub mod crd;
pub mod fbc;
pub mod openshift;
pub mod v1;
pub mod version;
