//! Version ranges in the two dialects OLM uses, on top of `semver::Version`.
//!
//! - [`masterminds`]: `spec.source.catalog.version` of a ClusterExtension (Masterminds/semver v3).
//! - [`blang`]: a channel entry's `skipRange` (blang/semver v4 ranges) and strict version parsing.
//! - [`release`]: a bundle's version plus its legacy "release" (build metadata read as a release),
//!   and the ordering the resolver uses.
//!
//! Pure functions, no IO.
