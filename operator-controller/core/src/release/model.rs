//! Helm v3's release record (`helm.sh/helm/v3/pkg/release`, `pkg/chart`) as the JSON Helm
//! writes, inside helm-operator-plugins' wrapper that adds the release `labels`.
//!
//! Input: nothing. Output: types whose `Serialize` (through [`super::go_json`]) is byte for byte
//! what Go's `json.Marshal` writes for the same record, and whose `Deserialize` reads anything Go
//! wrote. No IO.
//!
//! Field order is Go's declaration order; `omitempty` fields are left out when empty, the others
//! are always written (`null` for nil slices, maps and pointers):
//!
//! | type       | always written                                   | left out when empty |
//! |------------|--------------------------------------------------|---------------------|
//! | `Release`  | `labels` (the wrapper's)                          | `name`, `info`, `chart`, `config`, `manifest`, `hooks`, `version`, `namespace` |
//! | `Info`     | `first_deployed`, `last_deployed`, `deleted` (`""` when zero) | `description`, `status`, `notes`, `resources` |
//! | `Chart`    | `metadata`, `lock`, `templates`, `values`, `schema`, `files` | – |
//! | `Metadata` | –                                                | every field          |
//! | `File`     | `name`, `data` (base64)                          | –                    |

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::time::HelmTime;

/// A release's state (`release.Status`). Unknown values are kept as read.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Status(pub String);

impl Status {
    pub const UNKNOWN: &'static str = "unknown";
    pub const DEPLOYED: &'static str = "deployed";
    pub const UNINSTALLED: &'static str = "uninstalled";
    pub const SUPERSEDED: &'static str = "superseded";
    pub const FAILED: &'static str = "failed";
    pub const UNINSTALLING: &'static str = "uninstalling";
    pub const PENDING_INSTALL: &'static str = "pending-install";
    pub const PENDING_UPGRADE: &'static str = "pending-upgrade";
    pub const PENDING_ROLLBACK: &'static str = "pending-rollback";

    pub fn new(s: &str) -> Status {
        Status(s.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is(&self, s: &str) -> bool {
        self.0 == s
    }

    /// Helm refuses to start another install/upgrade while the last release is pending.
    pub fn is_pending(&self) -> bool {
        matches!(
            self.0.as_str(),
            Status::PENDING_INSTALL | Status::PENDING_UPGRADE | Status::PENDING_ROLLBACK
        )
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One release record: what was installed, when, and in which state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Release {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Info>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<Chart>,
    /// User-supplied values; Go leaves an empty map out.
    #[serde(
        default,
        skip_serializing_if = "map_is_empty",
        deserialize_with = "nullable_map",
        serialize_with = "go_values"
    )]
    pub config: Option<Map<String, Value>>,
    /// The rendered objects, as applied (see [`super::render`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub hooks: Vec<Hook>,
    /// The revision, from 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: i64,
    /// The namespace the release's objects default to (the ClusterExtension's `spec.namespace`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// helm-operator-plugins' wrapper field: the release's custom labels (for OLM the bundle
    /// identity). Never left out; `null` when absent.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
}

/// When and how a release happened.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Info {
    #[serde(default)]
    pub first_deployed: HelmTime,
    #[serde(default)]
    pub last_deployed: HelmTime,
    #[serde(default)]
    pub deleted: HelmTime,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub description: String,
    #[serde(
        default,
        skip_serializing_if = "Status::is_empty",
        deserialize_with = "nullable"
    )]
    pub status: Status,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub notes: String,
    /// `map[string][]runtime.Object`; kept as read.
    #[serde(
        default,
        skip_serializing_if = "map_is_empty",
        deserialize_with = "nullable_map"
    )]
    pub resources: Option<Map<String, Value>>,
}

/// The chart that was released.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    #[serde(default)]
    pub metadata: Option<Metadata>,
    #[serde(default)]
    pub lock: Option<Lock>,
    #[serde(default)]
    pub templates: Option<Vec<File>>,
    #[serde(default, serialize_with = "go_values")]
    pub values: Option<Map<String, Value>>,
    #[serde(default, with = "go_bytes")]
    pub schema: Option<Vec<u8>>,
    #[serde(default)]
    pub files: Option<Vec<File>>,
}

/// `Chart.yaml` contents. For OLM only `annotations` is set: the bundle CSV's annotations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub home: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub sources: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub version: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub description: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub keywords: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub maintainers: Vec<Maintainer>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub icon: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub api_version: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub condition: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub tags: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub app_version: String,
    #[serde(
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "nullable"
    )]
    pub deprecated: bool,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub annotations: BTreeMap<String, String>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub kube_version: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub dependencies: Vec<Dependency>,
    #[serde(
        default,
        rename = "type",
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub type_: String,
}

/// A chart maintainer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Maintainer {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub email: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub url: String,
}

/// A chart dependency.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dependency {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub version: String,
    #[serde(default, deserialize_with = "nullable")]
    pub repository: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub condition: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub tags: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "nullable"
    )]
    pub enabled: bool,
    #[serde(
        rename = "import-values",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub import_values: Vec<Value>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub alias: String,
}

/// `Chart.lock` contents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    #[serde(default)]
    pub generated: HelmTime,
    #[serde(default, deserialize_with = "nullable")]
    pub digest: String,
    #[serde(default)]
    pub dependencies: Option<Vec<Dependency>>,
}

/// A file of the chart (a template or a plain file); `data` is base64 in JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct File {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, with = "go_bytes")]
    pub data: Option<Vec<u8>>,
}

/// A Helm hook (objects annotated `helm.sh/hook`). OLM never renders any; kept for records
/// written by other tools.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hook {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub kind: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub path: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub manifest: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub events: Vec<String>,
    #[serde(default)]
    pub last_run: HookExecution,
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "nullable"
    )]
    pub weight: i64,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub delete_policies: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub output_log_policies: Vec<String>,
}

/// When a hook last ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HookExecution {
    #[serde(default)]
    pub started_at: HelmTime,
    #[serde(default)]
    pub completed_at: HelmTime,
    #[serde(default, deserialize_with = "nullable")]
    pub phase: String,
}

impl Release {
    /// The release's status (`""` when it has no `info`).
    pub fn status(&self) -> &str {
        self.info.as_ref().map_or("", |i| i.status.as_str())
    }

    /// A release label (`olm.operatorframework.io/bundle-name`, ...).
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref()?.get(key).map(String::as_str)
    }

    /// A chart annotation (`olm.properties`, ...).
    pub fn chart_annotation(&self, key: &str) -> Option<&str> {
        self.chart
            .as_ref()?
            .metadata
            .as_ref()?
            .annotations
            .get(key)
            .map(String::as_str)
    }

    /// The record as helm-operator-plugins stores it: `json.NewEncoder(w).Encode(wrapper)`.
    /// An encoding error is returned, never turned into an empty record (which, stored, would
    /// read back as a release with no manifest).
    pub fn to_go_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        super::go_json::to_vec_line(self)
    }
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn map_is_empty(v: &Option<Map<String, Value>>) -> bool {
    v.as_ref().is_none_or(Map::is_empty)
}

/// Go decodes `null` into a non-pointer field by leaving its zero value.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn nullable_map<'de, D>(d: D) -> Result<Option<Map<String, Value>>, D::Error>
where
    D: Deserializer<'de>,
{
    Option::<Map<String, Value>>::deserialize(d)
}

/// `map[string]interface{}` values: Go decodes every number as float64 and writes it back that
/// way, so integers beyond 2^53 come back rounded, as in Go.
fn go_values<S: Serializer>(v: &Option<Map<String, Value>>, s: S) -> Result<S::Ok, S::Error> {
    fn floats(v: &Value) -> Value {
        match v {
            Value::Number(n) => n
                .as_f64()
                .and_then(serde_json::Number::from_f64)
                .map_or(Value::Null, Value::Number),
            Value::Array(a) => Value::Array(a.iter().map(floats).collect()),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, v)| (k.clone(), floats(v))).collect())
            }
            other => other.clone(),
        }
    }
    match v {
        None => s.serialize_none(),
        Some(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), floats(v))).collect()).serialize(s)
        }
    }
}

/// Go's `[]byte` JSON form: standard base64 with padding, `null` for nil.
mod go_bytes {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            None => s.serialize_none(),
            Some(b) => s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b)),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => {
                // Go's decoder ignores CR and LF inside base64 and requires padding.
                let cleaned: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
                base64::engine::general_purpose::STANDARD
                    .decode(cleaned)
                    .map(Some)
                    .map_err(serde::de::Error::custom)
            }
        }
    }
}
