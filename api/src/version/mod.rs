//! Version ranges in the two dialects OLM uses, on top of `semver::Version`.
//!
//! - [`masterminds`]: `spec.source.catalog.version` of a ClusterExtension (Masterminds/semver v3
//!   constraints, including its prerelease rule and its error texts).
//! - [`blang`]: a channel entry's `skipRange` (blang/semver v4 ranges) and the strict version
//!   parser used for bundle versions.
//! - [`release`]: a bundle's version plus its legacy "release" (build metadata read as a release),
//!   and the ordering the resolver uses to pick the highest bundle.
//!
//! Input: strings from ClusterExtension specs, catalogs and installed-bundle records. Output:
//! parsed ranges and versions, match verdicts, orderings and errors whose text is byte-identical to
//! the Go libraries upstream surfaces. Pure functions, no IO, no panics on any input.
//!
//! Both range dialects compile to OR-of-AND groups over one comparison core (module
//! `comparator`), so a range is parsed once and matching a version allocates nothing.

mod comparator;
pub mod go_text;

pub mod blang;
pub mod masterminds;
pub mod release;
