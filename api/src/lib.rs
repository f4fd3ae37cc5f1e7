//! The OLM v1 API: Kubernetes types, File-Based Catalog model and version ranges.
//!
//! This crate performs no network IO; the catalog loader reads local files only, through
//! [`regular_file`] (regular files only, bounded in size).

pub mod condition_error;
pub mod crd;
pub mod fbc;
pub mod openshift;
pub mod regular_file;
pub mod v1;
pub mod version;
