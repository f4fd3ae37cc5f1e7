//! operator-controller: resolution, catalog content access and the offline CLI.
//!
//! - [`resolve`]: the pure resolver (which bundle of which catalog) and deprecation conditions.
//! - [`catalog_source`]: a package's content from catalogd over HTTP (cached) or a directory.
//! - [`cli`]: the `operator-controller` command line (`resolve` mode).

pub mod catalog_source;
pub mod cli;
pub mod resolve;
