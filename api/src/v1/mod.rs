//! Version `v1` of the `olm.operatorframework.io` API group.

mod cluster_catalog;
mod cluster_extension;
mod condition;

pub use cluster_catalog::*;
pub use cluster_extension::*;
pub use condition::*;

/// The API group both kinds belong to.
pub const GROUP: &str = "olm.operatorframework.io";
