//! Test environment: a real control plane and OCI registry on loopback, shared by a test run.

pub mod control_plane;
pub mod images;
pub mod registry;
