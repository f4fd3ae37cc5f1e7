//! The ClusterCatalog controller: decisions in [`plan`], IO in [`reconcile`], background sweeps in
//! [`gc`].

pub mod gc;
pub mod plan;
pub mod reconcile;
