//! registry+v1 bundles: the files of an unpacked bundle, parsed as upstream parses them.
//!
//! Input: a [`BundleFs`], the bundle's files already read into memory by the IO side
//! (`metadata/annotations.yaml`, optional `metadata/properties.yaml`, every entry of
//! `manifests/`). Output: a [`RegistryV1Bundle`] (package, the CSV, CRDs and other objects, all
//! decoded as upstream's Go types decode them), or a [`BundleError`] with upstream's message.
//! No IO.
//!
//! Parsing follows upstream's `fsBundleSource.GetBundle`:
//!
//! 1. `metadata/annotations.yaml` gives the package name (its absence is an error; an empty name
//!    is left to the validators).
//! 2. `manifests/` is read in lexical order; a subdirectory stops the walk with upstream's
//!    message. Each file is a YAML or JSON stream read as upstream's reader reads it
//!    ([`manifest`], with its metadata check, [`object_meta`]); every object is classified by
//!    `kind` alone as it is read: `ClusterServiceVersion` (when several, the last one read wins,
//!    as upstream), `CustomResourceDefinition`, or one of the "other" objects.
//! 3. No CSV at all is an error.
//! 4. `metadata/properties.yaml` is merged into the CSV's `olm.properties` annotation
//!    ([`properties`]).
//!
//! One deliberate difference: upstream decodes every `CustomResourceDefinition` into the
//! `apiextensions.k8s.io/v1` Go type whatever its `apiVersion`, silently mangling a `v1beta1`
//! CRD (its `spec.validation`, `spec.version`, ... are dropped). Here such a CRD is an error
//! naming the file and the CRD.

pub mod csv;
pub mod document;
pub mod manifest;
pub mod object_meta;
pub mod properties;
pub mod validate;

use std::collections::BTreeMap;

use olm_api::v1::ConditionReason;
use olm_api::version::go_text::go_quote;
use serde_json::{Map, Value};

use crate::gotype::{self, Mode};
pub use csv::Csv;

/// The bundle's files, keyed by their path relative to the bundle root (`manifests/csv.yaml`).
/// Iteration is in byte order of the paths, which is the order upstream walks `manifests/`.
#[derive(Clone, Debug, Default)]
pub struct BundleFs {
    entries: BTreeMap<String, FsEntry>,
}

/// One entry of a [`BundleFs`].
#[derive(Clone, Debug)]
pub enum FsEntry {
    File(Vec<u8>),
    /// A directory (only recorded directly below `manifests/`, where it is an error).
    Dir,
}

impl BundleFs {
    pub fn new() -> BundleFs {
        BundleFs::default()
    }

    /// Adds a file; `path` is relative, `/`-separated.
    pub fn insert_file(&mut self, path: impl Into<String>, contents: Vec<u8>) {
        self.entries.insert(path.into(), FsEntry::File(contents));
    }

    /// Records a directory (`manifests` itself, or a subdirectory of it).
    pub fn insert_dir(&mut self, path: impl Into<String>) {
        self.entries.insert(path.into(), FsEntry::Dir);
    }

    pub fn get(&self, path: &str) -> Option<&FsEntry> {
        self.entries.get(path)
    }

    /// Entries directly below `dir`, in path order.
    fn children<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = (&'a str, &'a FsEntry)> {
        let prefix = format!("{dir}/");
        self.entries
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .filter(move |(k, _)| !k[dir.len() + 1..].contains('/'))
            .map(|(k, v)| (k.as_str(), v))
    }

    /// Total bytes of file contents.
    pub fn total_bytes(&self) -> usize {
        self.entries
            .values()
            .map(|e| match e {
                FsEntry::File(b) => b.len(),
                FsEntry::Dir => 0,
            })
            .sum()
    }
}

/// A CRD of the bundle: its name and its value as the Go type marshals it.
#[derive(Clone, Debug)]
pub struct Crd {
    pub name: String,
    /// The manifest file it came from.
    pub source: String,
    pub value: Value,
}

/// A bundle object that is neither the CSV nor a CRD, kept as read (upstream keeps these
/// unstructured).
#[derive(Clone, Debug)]
pub struct OtherObject {
    pub source: String,
    pub object: Map<String, Value>,
}

impl OtherObject {
    pub fn kind(&self) -> &str {
        self.object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// `metadata/annotations.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BundleAnnotations {
    /// `operators.operatorframework.io.bundle.package.v1`.
    pub package: String,
    /// `operators.operatorframework.io.bundle.channels.v1`.
    pub channels: String,
    /// `operators.operatorframework.io.bundle.channel.default.v1`.
    pub default_channel: String,
    /// `operators.operatorframework.io.bundle.mediatype.v1` (upstream does not check it).
    pub media_type: String,
}

/// A parsed registry+v1 bundle.
#[derive(Clone, Debug)]
pub struct RegistryV1Bundle {
    pub annotations: BundleAnnotations,
    /// The CSV as upstream's Go type reads it, with `olm.properties` already assembled.
    pub csv: Csv,
    pub crds: Vec<Crd>,
    pub others: Vec<OtherObject>,
    /// Things upstream accepts silently that a bundle author should know (see [`properties`]).
    pub warnings: Vec<String>,
}

impl RegistryV1Bundle {
    /// Parses a bundle's files ([`parse`]).
    pub fn parse(fs: &BundleFs) -> Result<RegistryV1Bundle, BundleError> {
        parse(fs)
    }

    /// `annotations.package`.
    pub fn package_name(&self) -> &str {
        &self.annotations.package
    }
}

/// Why a bundle could not be read. Not terminal: upstream retries (`Progressing=True/Retrying`),
/// since the same image reference may later resolve to fixed content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("open metadata/annotations.yaml: no such file or directory")]
    MissingAnnotations,
    #[error("{0}")]
    Annotations(String),
    #[error("stat manifests: no such file or directory")]
    MissingManifests,
    #[error(
        "subdirectories are not allowed within the \"manifests\" directory of the bundle image filesystem: found {}",
        go_quote(.0)
    )]
    Subdirectory(String),
    /// A manifest file upstream's reader refuses, or an object in it that does not decode into
    /// its Go type ([`manifest`]); also a `v1beta1` CRD (this project's one difference).
    #[error("error parsing objects in {}: {message}", go_quote(.path))]
    Manifest { path: String, message: String },
    #[error("no ClusterServiceVersion found in \"manifests\"")]
    NoCsv,
    #[error("failed to unmarshal csv.metadata.annotations['olm.properties']: {0}")]
    CsvProperties(String),
    #[error("failed to unmarshal metadata/properties.yaml: {0}")]
    PropertiesYaml(String),
}

impl BundleError {
    /// The `Progressing` reason upstream reports.
    pub fn reason(&self) -> ConditionReason {
        ConditionReason::Retrying
    }

    /// Never terminal (install-path.md §1 item 5).
    pub fn is_terminal(&self) -> bool {
        false
    }
}

const ANNOTATIONS_PATH: &str = "metadata/annotations.yaml";
const PROPERTIES_PATH: &str = "metadata/properties.yaml";
const MANIFESTS_DIR: &str = "manifests";

/// Parses a bundle the way upstream's `fsBundleSource.GetBundle` does.
pub fn parse(fs: &BundleFs) -> Result<RegistryV1Bundle, BundleError> {
    let annotations = match fs.get(ANNOTATIONS_PATH) {
        Some(FsEntry::File(bytes)) => parse_annotations(bytes)?,
        _ => return Err(BundleError::MissingAnnotations),
    };
    if !matches!(fs.get(MANIFESTS_DIR), Some(FsEntry::Dir)) {
        return Err(BundleError::MissingManifests);
    }

    let mut csv_value: Option<Value> = None;
    let mut crds = Vec::new();
    let mut others = Vec::new();
    for (path, entry) in fs.children(MANIFESTS_DIR) {
        let bytes = match entry {
            FsEntry::Dir => return Err(BundleError::Subdirectory(path.to_owned())),
            FsEntry::File(bytes) => bytes,
        };
        // Upstream's visitor: objects are classified by `kind` alone, as they are read.
        let mut visit = |object: Map<String, Value>| -> Result<(), String> {
            let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
            match kind {
                "ClusterServiceVersion" => {
                    let value = gotype::round_trip(
                        "ClusterServiceVersion",
                        &Value::Object(object),
                        Mode::Unstructured,
                    )
                    .map_err(|e| e.to_string())?;
                    csv_value = Some(value);
                }
                "CustomResourceDefinition" => crds.push(parse_crd(path, object)?),
                _ => others.push(OtherObject {
                    source: path.to_owned(),
                    object,
                }),
            }
            Ok(())
        };
        manifest::visit_objects(path, bytes, &mut visit).map_err(|message| {
            BundleError::Manifest {
                path: path.to_owned(),
                message,
            }
        })?;
    }
    let csv_value = csv_value.ok_or(BundleError::NoCsv)?;
    let mut csv = Csv::from_value(csv_value).map_err(|message| BundleError::Manifest {
        path: MANIFESTS_DIR.to_owned(),
        message,
    })?;

    let properties_yaml = match fs.get(PROPERTIES_PATH) {
        Some(FsEntry::File(bytes)) => Some(bytes.as_slice()),
        _ => None,
    };
    let (olm_properties, warnings) =
        properties::assemble(&csv.name, &csv.annotations, properties_yaml)?;
    if let Some(value) = olm_properties {
        csv.set_annotation(properties::OLM_PROPERTIES, value);
    }

    Ok(RegistryV1Bundle {
        annotations,
        csv,
        crds,
        others,
        warnings,
    })
}

/// A CRD as upstream's Go type reads it; a `v1beta1` one is refused (upstream would decode it
/// into the `v1` type and drop what only `v1beta1` has).
fn parse_crd(path: &str, object: Map<String, Value>) -> Result<Crd, String> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if api_version != "apiextensions.k8s.io/v1" {
        return Err(format!(
            "CustomResourceDefinition {} has apiVersion {}; only apiextensions.k8s.io/v1 CustomResourceDefinitions are supported",
            go_quote(&name),
            go_quote(&api_version)
        ));
    }
    let value = gotype::round_trip(
        "CustomResourceDefinition",
        &Value::Object(object),
        Mode::Unstructured,
    )
    .map_err(|e| e.to_string())?;
    Ok(Crd {
        name,
        source: path.to_owned(),
        value,
    })
}

/// `yaml.Unmarshal(annotations.yaml, &registry.AnnotationsFile{})`.
fn parse_annotations(bytes: &[u8]) -> Result<BundleAnnotations, BundleError> {
    use olm_api::fbc::yaml::{DocumentSplitter, SplitError, document_to_value};
    let yaml_err = |e: &olm_api::fbc::yaml::YamlError| {
        BundleError::Annotations(format!(
            "error converting YAML to JSON: {}",
            e.sigs_yaml_text()
        ))
    };
    let mut splitter = DocumentSplitter::new(bytes, 1);
    let doc = match splitter.next_document() {
        Ok(Some(doc)) => doc,
        Ok(None) => return Ok(BundleAnnotations::default()),
        Err(SplitError::Io(e)) => return Err(BundleError::Annotations(e.to_string())),
        Err(SplitError::Syntax(e)) => return Err(yaml_err(&e)),
    };
    let value = document_to_value(&doc).map_err(|e| yaml_err(&e))?;
    let value = value.map(manifest::from_go).unwrap_or(Value::Null);
    let type_error = |what: &str, field: &str, got: &Value| {
        BundleError::Annotations(format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go {what}{field} of type {}",
            json_kind(got),
            if field.is_empty() {
                "registry.AnnotationsFile"
            } else if field == "annotations" {
                "registry.Annotations"
            } else {
                "string"
            }
        ))
    };
    let annotations = match &value {
        Value::Null => return Ok(BundleAnnotations::default()),
        Value::Object(top) => match lookup(top, "annotations") {
            None | Some(Value::Null) => return Ok(BundleAnnotations::default()),
            Some(Value::Object(a)) => a,
            Some(other) => {
                return Err(type_error(
                    "struct field AnnotationsFile.",
                    "annotations",
                    other,
                ));
            }
        },
        other => return Err(type_error("value", "", other)),
    };
    let string_field = |key: &str| -> Result<String, BundleError> {
        match lookup(annotations, key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(type_error(
                "struct field Annotations.annotations.",
                key,
                other,
            )),
        }
    };
    Ok(BundleAnnotations {
        package: string_field("operators.operatorframework.io.bundle.package.v1")?,
        channels: string_field("operators.operatorframework.io.bundle.channels.v1")?,
        default_channel: string_field("operators.operatorframework.io.bundle.channel.default.v1")?,
        media_type: match lookup(
            annotations,
            "operators.operatorframework.io.bundle.mediatype.v1",
        ) {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        },
    })
}

/// encoding/json's field lookup: exact key, else case-insensitive.
fn lookup<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).or_else(|| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
