//! catalogd: ClusterCatalog controller, catalog storage and the content HTTP API.

pub mod cli;
pub mod cmd;
pub mod controller;
pub mod http;
pub mod ingest;
pub mod metrics;
pub mod server;
pub mod storage;
pub mod webhook;
