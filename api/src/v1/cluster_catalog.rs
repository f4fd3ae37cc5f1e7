//! The `ClusterCatalog` API (group `olm.operatorframework.io`, version `v1`, cluster-scoped).
//!
//! Input: nothing. Output: types and their OpenAPI schema with upstream's validation rules. No IO.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Condition;

/// Finalizer catalogd holds on every ClusterCatalog so it can delete the served content first.
pub const DELETE_SERVER_CACHE_FINALIZER: &str = "olm.operatorframework.io/delete-server-cache";
/// Label catalogd keeps equal to `metadata.name`, so selectors can pick catalogs by name.
pub const METADATA_NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";

/// The desired state of a ClusterCatalog: where its content comes from and how it is offered.
/// catalogd unpacks the content and serves it over its catalog content HTTP API.
// Several `printcolumn(...)` entries repeat `type_`, which clippy mistakes for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "olm.operatorframework.io",
    version = "v1",
    kind = "ClusterCatalog",
    plural = "clustercatalogs",
    doc = "A ClusterCatalog makes the File-Based Catalog (FBC) content of a catalog image available inside the cluster over HTTP, so that clients can discover and install the packages it describes.",
    status = "ClusterCatalogStatus",
    printcolumn(
        name = "LastUnpacked",
        type_ = "date",
        json_path = ".status.lastUnpacked"
    ),
    printcolumn(
        name = "Serving",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Serving\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCatalogSpec {
    /// Where the catalog content comes from. Required.
    pub source: CatalogSource,

    /// Tie-breaker between catalogs that both offer what a client asked for: the higher number wins.
    /// Defaults to 0; negative values rank below the default. Clients decide what to do when
    /// catalogs of equal priority match (operator-controller reports the ambiguity).
    #[serde(default)]
    #[schemars(range(min = -2147483648, max = 2147483647))]
    pub priority: i32,

    /// Whether the catalog is offered to clients. `Available` (the default) unpacks and serves the
    /// content. `Unavailable` stops serving it and deletes the stored content, so clients treat the
    /// catalog as if it did not exist while the object is kept.
    #[serde(default)]
    pub availability_mode: AvailabilityMode,
}

/// Whether a catalog's content is served.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum AvailabilityMode {
    Unavailable,
    #[default]
    Available,
}

/// The source of a catalog's content. Exactly one source kind is set, matching `type`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "image is required when source type is Image, and forbidden otherwise",
    "rule": "has(self.type) && self.type == 'Image' ? has(self.image) : !has(self.image)"
}]))]
pub struct CatalogSource {
    /// The kind of source. The only supported value is `Image`: the content is read from an OCI
    /// image, configured in `image`.
    #[serde(rename = "type")]
    pub type_: SourceType,
    /// The OCI image holding the catalog. Required when `type` is `Image`, forbidden otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSource>,
}

/// Kinds of catalog source.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SourceType {
    #[default]
    Image,
}

/// An OCI image holding a File-Based Catalog under the directory named by its
/// `operators.operatorframework.io.index.configs.v1` label.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "cannot specify pollIntervalMinutes while using digest-based image",
    "rule": "self.ref.find('(@.*:)') != \"\" ? !has(self.pollIntervalMinutes) : true"
}]))]
pub struct ImageSource {
    /// The image reference: `<domain>[:port]/<name>` followed by `:<tag>` or `@<algorithm>:<hex>`.
    ///
    /// The domain is made of alphanumeric labels (hyphens inside a label are allowed) separated by
    /// dots, optionally followed by a port, for example `quay.io` or `registry.example.com:5000`.
    /// The name is one or more lowercase alphanumeric path components separated by `/`; inside a
    /// component `.`, `_`, `__` and `-` may separate characters, for example `operatorhubio/catalog`.
    /// A tag starts with a letter, digit or `_`, continues with those or `.` and `-`, and is at most
    /// 127 characters. A digest names its algorithm (a letter, then letters or digits, optionally
    /// joined by `-`, `_`, `+` or `.`) and at least 32 hexadecimal characters.
    /// Examples: `quay.io/operatorhubio/catalog:latest`,
    /// `quay.io/operatorhubio/catalog@sha256:200d4ddb2a73594b91358fe6397424e975205bfbe44614f5846033cad64b3f05`.
    /// At most 1000 characters.
    #[schemars(length(max = 1000))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "message": "must start with a valid domain. valid domains must be alphanumeric characters (lowercase and uppercase) separated by the \".\" character.",
            "rule": r"self.matches('^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])((\\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+)?(:[0-9]+)?\\b')"
        },
        {
            "message": "a valid name is required. valid names must contain lowercase alphanumeric characters separated only by the \".\", \"_\", \"__\", \"-\" characters.",
            "rule": r#"self.find('(\\/[a-z0-9]+((([._]|__|[-]*)[a-z0-9]+)+)?((\\/[a-z0-9]+((([._]|__|[-]*)[a-z0-9]+)+)?)+)?)') != """#
        },
        {
            "message": "must end with a digest or a tag",
            "rule": r#"self.find('(@.*:)') != "" || self.find(':.*$') != """#
        },
        {
            "message": "tag is invalid. the tag must not be more than 127 characters",
            "rule": r#"self.find('(@.*:)') == "" ? (self.find(':.*$') != "" ? self.find(':.*$').substring(1).size() <= 127 : true) : true"#
        },
        {
            "message": "tag is invalid. valid tags must begin with a word character (alphanumeric + \"_\") followed by word characters or \".\", and \"-\" characters",
            "rule": r#"self.find('(@.*:)') == "" ? (self.find(':.*$') != "" ? self.find(':.*$').matches(':[\\w][\\w.-]*$') : true) : true"#
        },
        {
            "message": "digest algorithm is not valid. valid algorithms must start with an uppercase or lowercase alpha character followed by alphanumeric characters and may contain the \"-\", \"_\", \"+\", and \".\" characters.",
            "rule": r#"self.find('(@.*:)') != "" ? self.find('(@.*:)').matches('(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*[:])') : true"#
        },
        {
            "message": "digest is not valid. the encoded string must be at least 32 characters",
            "rule": r#"self.find('(@.*:)') != "" ? self.find(':.*$').substring(1).size() >= 32 : true"#
        },
        {
            "message": "digest is not valid. the encoded string must only contain hex characters (A-F, a-f, 0-9)",
            "rule": r#"self.find('(@.*:)') != "" ? self.find(':.*$').matches(':[0-9A-Fa-f]*$') : true"#
        }
    ]))]
    #[serde(rename = "ref")]
    pub ref_: String,

    /// How often, in minutes, to check a tag-based `ref` for new content. Not allowed with a
    /// digest-based `ref`. When omitted the image is pulled once and never polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), transform = without_format)]
    pub poll_interval_minutes: Option<i64>,
}

/// The observed state of a ClusterCatalog.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCatalogStatus {
    /// The catalog's state as two conditions.
    ///
    /// `Serving`: True/`Available` while content is served; False/`Unavailable` when there is no
    /// content to serve yet; False/`UserSpecifiedUnavailable` when `availabilityMode` is
    /// `Unavailable`.
    ///
    /// `Progressing`: True/`Succeeded` once the desired content is stored; True/`Retrying` after an
    /// error that a later attempt may fix (previously unpacked content keeps being served);
    /// False/`Blocked` after an error that needs a change to the ClusterCatalog.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// The exact source the served content came from (for an image: its digest reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_source: Option<ResolvedCatalogSource>,

    /// Where clients fetch the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<ClusterCatalogUrls>,

    /// When the content was last extracted from its source (for an image: pulled and unpacked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_unpacked: Option<Time>,
}

/// The resolved source of a catalog's content.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "image is required when source type is Image, and forbidden otherwise",
    "rule": "has(self.type) && self.type == 'Image' ? has(self.image) : !has(self.image)"
}]))]
pub struct ResolvedCatalogSource {
    /// The kind of source; only `Image`, whose resolution is in `image`.
    #[serde(rename = "type")]
    pub type_: SourceType,
    /// The image the content was unpacked from.
    pub image: ResolvedImageSource,
}

/// A catalog image resolved to a digest.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedImageSource {
    /// The digest-based reference of the unpacked image, usable with any OCI tool to fetch exactly
    /// the manifests the content came from.
    #[schemars(length(max = 1000))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "message": "must start with a valid domain. valid domains must be alphanumeric characters (lowercase and uppercase) separated by the \".\" character.",
            "rule": r"self.matches('^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])((\\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+)?(:[0-9]+)?\\b')"
        },
        {
            "message": "a valid name is required. valid names must contain lowercase alphanumeric characters separated only by the \".\", \"_\", \"__\", \"-\" characters.",
            "rule": r#"self.find('(\\/[a-z0-9]+((([._]|__|[-]*)[a-z0-9]+)+)?((\\/[a-z0-9]+((([._]|__|[-]*)[a-z0-9]+)+)?)+)?)') != """#
        },
        {
            "message": "must end with a digest",
            "rule": r#"self.find('(@.*:)') != """#
        },
        {
            "message": "digest algorithm is not valid. valid algorithms must start with an uppercase or lowercase alpha character followed by alphanumeric characters and may contain the \"-\", \"_\", \"+\", and \".\" characters.",
            "rule": r#"self.find('(@.*:)') != "" ? self.find('(@.*:)').matches('(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*[:])') : true"#
        },
        {
            "message": "digest is not valid. the encoded string must be at least 32 characters",
            "rule": r#"self.find('(@.*:)') != "" ? self.find(':.*$').substring(1).size() >= 32 : true"#
        },
        {
            "message": "digest is not valid. the encoded string must only contain hex characters (A-F, a-f, 0-9)",
            "rule": r#"self.find('(@.*:)') != "" ? self.find(':.*$').matches(':[0-9A-Fa-f]*$') : true"#
        }
    ]))]
    #[serde(rename = "ref")]
    pub ref_: String,
}

/// URLs at which a catalog's content is served.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCatalogUrls {
    /// The cluster-internal base URL of this catalog's content API. Append an endpoint path:
    /// `/api/v1/all` returns the whole catalog as JSON Lines and `/api/v1/metas` returns the
    /// objects matching its `schema`, `package` and `name` query parameters.
    #[schemars(length(max = 525))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"message": "must be a valid URL", "rule": "isURL(self)"},
        {
            "message": "scheme must be either http or https",
            "rule": "isURL(self) ? (url(self).getScheme() == \"http\" || url(self).getScheme() == \"https\") : true"
        }
    ]))]
    pub base: String,
}

impl ClusterCatalog {
    /// The catalog's availability mode (defaulted when absent).
    pub fn is_available(&self) -> bool {
        self.spec.availability_mode == AvailabilityMode::Available
    }
}

/// Upstream's field is a Go `*int`, which its generator gives no `format`: the schema stays
/// node-for-node upstream's.
fn without_format(schema: &mut schemars::Schema) {
    schema.remove("format");
}
