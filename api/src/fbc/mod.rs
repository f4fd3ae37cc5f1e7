//! File-Based Catalogs (FBC): the model, a streaming loader, Go-compatible JSON re-encoding and
//! validation.
//!
//! Input: a catalog directory, a JSON/YAML stream, or single objects. Output: [`Meta`] blobs in the
//! exact bytes upstream catalogd serves ([`walk_metas_dir`]), the typed [`DeclarativeConfig`], and a
//! validation [`validate::Report`]. Reads local files only; no network.
//!
//! - [`gojson`]: Go `encoding/json` canonical encoding (the byte contract of served blobs).
//! - [`canonical`]: the same encoding straight from JSON text, for catalogd's ingest.
//! - [`walk`]: directory walk in upstream order, `.indexignore`, JSON and YAML streams.
//! - [`yaml`]: YAML 1.1 document conversion as sigs.k8s.io/yaml does it.
//! - [`model`]: typed packages, channels, bundles and deprecations.
//! - [`property`]: typed property readers.
//! - [`validate`]: what `opm validate` checks, as a separate verdict.

pub mod canonical;
pub mod gojson;
pub mod image_ref;
pub mod indexignore;
mod json_split;
pub mod model;
pub mod packed;
pub mod property;
pub mod validate;
pub mod walk;
mod walk_parallel;
pub mod yaml;

pub use model::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, Deprecation, DeprecationEntry, Icon,
    LoadError, ObjectRef, Package, PackageScopedReference, RelatedImage, SCHEMA_BUNDLE,
    SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE,
};
pub use property::{
    BundleObject, Constraint, CsvMetadata, Gvk, MaxOpenShiftVersion, PackageProperty,
    PackageRequired, Property, PropertyError,
};
pub use validate::{Checks, Finding, Report, validate};
pub use walk::{Meta, Origin, WalkError, walk_metas_dir, walk_metas_reader};
pub use walk_parallel::walk_metas_dir_parallel;
