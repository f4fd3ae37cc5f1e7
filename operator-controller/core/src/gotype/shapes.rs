//! The wire shapes of upstream's Go API types, loaded from `shapes.json`.
//!
//! Input: the JSON file written by `gen/goshapes` (reflection over the Go modules upstream builds
//! with), embedded at compile time. Output: an arena of [`Ty`]s and [`StructShape`]s, parsed once
//! per process. No IO.
//!
//! Type expressions in the file: `bool`, `string`, `int32`, ... (optionally `/<Go type name>` for
//! named types such as `string/v1.Protocol`), `bytes` (`[]byte`), `any`, `*T`, `[]T`,
//! `map[string]T`, `@<package>.<Name>` (a struct) and `%<Name>` (a type with its own JSON form).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// Index of a type in [`Shapes::types`].
pub type TyId = usize;

/// A Go type as encoding/json and the unstructured converter see it.
#[derive(Debug, Clone)]
pub enum Ty {
    Bool,
    /// A string kind; `go` is the Go type name used in conversion errors.
    Str {
        go: String,
    },
    Int {
        bits: u8,
        go: String,
    },
    Uint {
        bits: u8,
        go: String,
    },
    Float {
        go: String,
    },
    /// `[]byte`: base64 text in JSON.
    Bytes,
    Any,
    Ptr(TyId),
    Slice(TyId),
    Map(TyId),
    Struct(usize),
    Special(Special),
}

/// Types whose JSON form is their own (they implement `json.Marshaler`/`Unmarshaler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// `resource.Quantity`: canonical quantity text.
    Quantity,
    /// `intstr.IntOrString`: a number or a string, kept as given.
    IntOrString,
    /// `metav1.Time`: RFC 3339 in UTC, `null` when zero.
    Time,
    /// `apiextensionsv1.JSON`: any JSON value, kept.
    Json,
    /// `metav1.FieldsV1`: any JSON value, kept.
    FieldsV1,
    /// `json.RawMessage`: any JSON value, kept.
    RawMessage,
    /// `apiextensionsv1.JSONSchemaPropsOrArray`.
    SchemaOrArray,
    /// `apiextensionsv1.JSONSchemaPropsOrBool`.
    SchemaOrBool,
    /// `apiextensionsv1.JSONSchemaPropsOrStringArray`.
    SchemaOrStringArray,
    /// operator-framework `version.OperatorVersion`: blang semver, parsed tolerantly.
    OperatorVersion,
    /// operator-framework `release.OperatorRelease`: dot-separated prerelease identifiers.
    OperatorRelease,
}

/// A struct's fields in declaration order.
#[derive(Debug, Clone)]
pub struct StructShape {
    /// The Go type name (`v1.DeploymentSpec`), for messages.
    pub go_name: String,
    pub fields: Vec<FieldShape>,
}

/// One struct field.
#[derive(Debug, Clone)]
pub struct FieldShape {
    /// The JSON name; empty for an inlined (embedded) struct.
    pub name: String,
    pub ty: TyId,
    pub omit_empty: bool,
    pub omit_zero: bool,
    pub inline: bool,
}

/// Every type reachable from the roots.
#[derive(Debug)]
pub struct Shapes {
    pub types: Vec<Ty>,
    pub structs: Vec<StructShape>,
    roots: HashMap<String, TyId>,
    by_struct_name: HashMap<String, TyId>,
}

impl Shapes {
    /// The shapes embedded in this crate. Panics never: the file is checked by a unit test, and a
    /// malformed file yields an empty set whose lookups fail with a clear error.
    pub fn get() -> &'static Shapes {
        static SHAPES: OnceLock<Shapes> = OnceLock::new();
        SHAPES.get_or_init(|| {
            Shapes::parse(include_str!("shapes.json")).unwrap_or_else(|_| Shapes {
                types: Vec::new(),
                structs: Vec::new(),
                roots: HashMap::new(),
                by_struct_name: HashMap::new(),
            })
        })
    }

    /// The type of a root object (`Deployment`, `ClusterServiceVersion`, ...).
    pub fn root(&self, name: &str) -> Option<TyId> {
        self.roots.get(name).copied()
    }

    /// A struct type by its Go name as written in the file (`k8s.io/api/core/v1.Volume`).
    pub fn struct_type(&self, full_name: &str) -> Option<TyId> {
        self.by_struct_name.get(full_name).copied()
    }

    pub(crate) fn parse(text: &str) -> Result<Shapes, String> {
        let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut b = Builder {
            file: &file,
            types: Vec::new(),
            structs: Vec::new(),
            interned: HashMap::new(),
            struct_index: HashMap::new(),
        };
        let mut roots = HashMap::new();
        for (name, expr) in &file.roots {
            let id = b.intern(expr)?;
            roots.insert(name.clone(), id);
        }
        let by_struct_name = b
            .interned
            .iter()
            .filter_map(|(expr, id)| expr.strip_prefix('@').map(|n| (n.to_owned(), *id)))
            .collect();
        Ok(Shapes {
            types: b.types,
            structs: b.structs,
            roots,
            by_struct_name,
        })
    }
}

#[derive(Deserialize)]
struct File {
    roots: HashMap<String, String>,
    structs: HashMap<String, FileStruct>,
}

#[derive(Deserialize)]
struct FileStruct {
    go: String,
    fields: Vec<FileField>,
}

#[derive(Deserialize)]
struct FileField {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    omitempty: bool,
    #[serde(default)]
    omitzero: bool,
    #[serde(default)]
    inline: bool,
}

struct Builder<'f> {
    file: &'f File,
    types: Vec<Ty>,
    structs: Vec<StructShape>,
    interned: HashMap<String, TyId>,
    struct_index: HashMap<String, usize>,
}

impl Builder<'_> {
    fn push(&mut self, expr: &str, ty: Ty) -> TyId {
        let id = self.types.len();
        self.types.push(ty);
        self.interned.insert(expr.to_owned(), id);
        id
    }

    fn intern(&mut self, expr: &str) -> Result<TyId, String> {
        if let Some(id) = self.interned.get(expr) {
            return Ok(*id);
        }
        if let Some(inner) = expr.strip_prefix('*') {
            let inner = self.intern(inner)?;
            return Ok(self.push(expr, Ty::Ptr(inner)));
        }
        if let Some(inner) = expr.strip_prefix("[]") {
            let inner = self.intern(inner)?;
            return Ok(self.push(expr, Ty::Slice(inner)));
        }
        if let Some(inner) = expr.strip_prefix("map[string]") {
            let inner = self.intern(inner)?;
            return Ok(self.push(expr, Ty::Map(inner)));
        }
        if let Some(name) = expr.strip_prefix('@') {
            // Reserve the id first: struct types may refer to themselves through pointers.
            let struct_idx = self.structs.len();
            self.struct_index.insert(name.to_owned(), struct_idx);
            let shape = self
                .file
                .structs
                .get(name)
                .ok_or_else(|| format!("struct {name} is not described"))?;
            self.structs.push(StructShape {
                go_name: shape.go.clone(),
                fields: Vec::new(),
            });
            let id = self.push(expr, Ty::Struct(struct_idx));
            let mut fields = Vec::with_capacity(shape.fields.len());
            for f in &shape.fields {
                fields.push(FieldShape {
                    name: f.name.clone(),
                    ty: self.intern(&f.ty)?,
                    omit_empty: f.omitempty,
                    omit_zero: f.omitzero,
                    inline: f.inline,
                });
            }
            self.structs[struct_idx].fields = fields;
            return Ok(id);
        }
        if let Some(name) = expr.strip_prefix('%') {
            let special = match name {
                "Quantity" => Special::Quantity,
                "IntOrString" => Special::IntOrString,
                "Time" => Special::Time,
                "JSON" => Special::Json,
                "FieldsV1" => Special::FieldsV1,
                "RawMessage" => Special::RawMessage,
                "JSONSchemaPropsOrArray" => Special::SchemaOrArray,
                "JSONSchemaPropsOrBool" => Special::SchemaOrBool,
                "JSONSchemaPropsOrStringArray" => Special::SchemaOrStringArray,
                "OperatorVersion" => Special::OperatorVersion,
                "OperatorRelease" => Special::OperatorRelease,
                other => return Err(format!("no implementation for Go type {other}")),
            };
            return Ok(self.push(expr, Ty::Special(special)));
        }
        let (kind, go) = match expr.split_once('/') {
            Some((kind, go)) => (kind, go.to_owned()),
            None => (expr, expr.to_owned()),
        };
        let ty = match kind {
            "bool" => Ty::Bool,
            "string" => Ty::Str { go },
            "int8" => Ty::Int { bits: 8, go },
            "int16" => Ty::Int { bits: 16, go },
            "int32" => Ty::Int { bits: 32, go },
            "int64" => Ty::Int { bits: 64, go },
            "uint8" => Ty::Uint { bits: 8, go },
            "uint16" => Ty::Uint { bits: 16, go },
            "uint32" => Ty::Uint { bits: 32, go },
            "uint64" => Ty::Uint { bits: 64, go },
            "float32" | "float64" => Ty::Float { go },
            "bytes" => Ty::Bytes,
            "any" => Ty::Any,
            other => return Err(format!("unknown type expression {other:?}")),
        };
        Ok(self.push(expr, ty))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_shapes_parse_and_hold_every_root_the_renderer_uses() {
        let shapes = Shapes::parse(include_str!("shapes.json")).expect("shapes.json parses");
        for root in [
            "ClusterServiceVersion",
            "CustomResourceDefinition",
            "Deployment",
            "Service",
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
            "SubscriptionConfig",
        ] {
            assert!(shapes.root(root).is_some(), "root {root} missing");
        }
        assert!(
            shapes
                .struct_type(
                    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaProps"
                )
                .is_some()
        );
    }
}
