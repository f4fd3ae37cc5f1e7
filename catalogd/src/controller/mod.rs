//! The ClusterCatalog controller: decisions in [`plan`], IO in [`reconcile`], background sweeps in
//! [`gc`], and the global pull secret in [`pull_secret`].

pub mod gc;
pub mod plan;
pub mod pull_secret;
pub mod reconcile;
