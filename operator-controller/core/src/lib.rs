//! operator-controller's pure decision logic.
//!
//! Input: values (a ClusterExtension's spec, catalog content, bundle files already read into
//! memory, cluster objects already fetched). Output: decisions (which bundle, which objects,
//! which conditions) and errors that know their condition reason. No network, no file system,
//! no async runtime, no Kubernetes client: the crate's dependencies make that a compile-time
//! rule, and the IO side (`operator-controller`) feeds it.
//!
//! - [`resolve`]: which bundle of which catalog a ClusterExtension gets, and its deprecation
//!   conditions.
//! - [`bundle`]: a registry+v1 bundle's files parsed as upstream parses them, and its validators.
//! - [`render`]: a bundle rendered into the objects OLM v1 applies (install modes, configuration,
//!   certificate providers).
//! - [`gotype`]: Go's typed round trip of Kubernetes objects, which shapes every rendered object.

pub mod bundle;
pub mod gotype;
pub mod render;
pub mod resolve;
