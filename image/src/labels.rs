//! Image config labels OLM reads and writes. No IO.

/// Directory (inside a catalog image) holding its File-Based Catalog.
pub const CATALOG_CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";
/// Bundle format; `registry+v1` for the bundles OLM v1 installs.
pub const BUNDLE_MEDIATYPE_LABEL: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// Directory of a bundle's manifests (`manifests/`).
pub const BUNDLE_MANIFESTS_LABEL: &str = "operators.operatorframework.io.bundle.manifests.v1";
/// Directory of a bundle's metadata (`metadata/`).
pub const BUNDLE_METADATA_LABEL: &str = "operators.operatorframework.io.bundle.metadata.v1";
/// The package a bundle belongs to.
pub const BUNDLE_PACKAGE_LABEL: &str = "operators.operatorframework.io.bundle.package.v1";
/// Comma-separated channels a bundle is in.
pub const BUNDLE_CHANNELS_LABEL: &str = "operators.operatorframework.io.bundle.channels.v1";
/// The default channel of a bundle's package.
pub const BUNDLE_DEFAULT_CHANNEL_LABEL: &str =
    "operators.operatorframework.io.bundle.channel.default.v1";
/// The only bundle format OLM v1 installs.
pub const REGISTRY_V1: &str = "registry+v1";
