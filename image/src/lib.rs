//! OCI images for OLM: pull by tag or digest into a digest-keyed disk cache with hostile-input-safe
//! layer extraction, and push fixture images built from directories. Shared by catalogd (catalog
//! images, only the FBC directory extracted) and operator-controller (bundle images, everything).
//!
//! Entry points: [`Puller`] (network: registries), [`push`] (network: registries),
//! [`extract::Extractor`], [`pack::Packer`] (a catalog directory as one file) and
//! [`cache::DiskCache`] (local disk only), [`registries_conf`] (mirrors and blocked registries from
//! registries.conf; reads its files).

pub mod auth;
pub mod cache;
mod decompress;
pub mod error;
pub mod extract;
pub mod labels;
mod layers;
pub mod manifest;
pub mod pack;
pub mod pull;
pub mod push;
pub mod reference;
pub mod registries_conf;
pub mod registry_client;
#[cfg(test)]
mod test_tar;

pub use auth::{AuthError, Credentials, DockerConfig};
pub use error::{ImageError, ImageErrorKind};
pub use extract::{ExtractError, ExtractErrorKind, Limits, PathFilter};
pub use manifest::Platform;
/// The trait giving [`ImageError`] its condition reason and whether it is terminal.
pub use olm_api::condition_error::ConditionError;
pub use pull::{ExtractFilter, PackFiles, Puller, PullerConfig, Unpacked};
pub use reference::ImageRef;
pub use registries_conf::{RegistriesConfError, RegistriesConfFiles};
pub use registry_client::ConnectionError;
