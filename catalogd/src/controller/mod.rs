//! The ClusterCatalog controller: decisions in [`plan`], IO in [`reconcile`], step errors in
//! [`error`], background sweeps in [`gc`], replica presence in [`replicas`], a starting replica's
//! readiness in [`ready_gate`].

pub mod error;
pub mod gc;
pub mod plan;
pub mod ready_gate;
pub mod reconcile;
pub mod replicas;
