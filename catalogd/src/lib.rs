//! catalogd: ClusterCatalog controller, catalog storage and the content HTTP API.

pub mod cli;
