//! The text of `cmp.Diff(old, new)` (github.com/google/go-cmp v0.7.0) for two
//! `*JSONSchemaProps`, which upstream condenses into its `unhandled` messages.
//!
//! Input: two [`Schema`]s. Output: the diff text. No IO.
//!
//! Upstream's `unhandled` entry is built from the lines of this report (`Format: "int32"` →
//! `Format "int32" -> ""`), so which lines exist, how values print, where long values are cut
//! (`"…"...`) and when a record spreads over several lines all show in the message. This module
//! reimplements go-cmp's comparison tree (`valueNode`), its edit-script search for slices, and its
//! reporter (`textNode` with compact and expanded forms, verbosity limits, type elision) for the
//! Go types inside `JSONSchemaProps`.
//!
//! Two deliberate fixed choices where go-cmp is random per process: lines use regular spaces (go-cmp
//! picks U+0020 or U+00A0 at start-up; upstream's parser trims both), and the slice edit search
//! starts forwards (go-cmp picks the direction at start-up; the conformance data agrees with it).

use std::fmt::Write as _;

use super::gofmt::{format_float_v, is_print, is_space};
use super::model::{ExternalDocs, Json, Schema, SchemaOrArray, SchemaOrBool, ValidationRule};

// ---------------------------------------------------------------------------------------------
// Go types and values

/// The Go types that occur inside `JSONSchemaProps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Bool,
    Int64,
    Float64,
    String,
    Uint8,
    SchemaUrl,
    Reason,
    PtrString,
    PtrFloat64,
    PtrInt64,
    PtrBool,
    PtrReason,
    PtrJson,
    PtrSchema,
    PtrOrArray,
    PtrOrBool,
    PtrDocs,
    SliceJson,
    SliceString,
    SliceSchema,
    SliceUint8,
    Rules,
    MapSchema,
    Dependencies,
    Definitions,
    Schema,
    Json,
    OrArray,
    OrBool,
    OrStringArray,
    Rule,
    Docs,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Bool,
    Int,
    Float,
    String,
    Uint8,
    Ptr,
    Slice,
    Map,
    Struct,
}

impl Ty {
    fn kind(self) -> Kind {
        use Ty::*;
        match self {
            Bool => Kind::Bool,
            Int64 => Kind::Int,
            Float64 => Kind::Float,
            String | SchemaUrl | Reason => Kind::String,
            Uint8 => Kind::Uint8,
            PtrString | PtrFloat64 | PtrInt64 | PtrBool | PtrReason | PtrJson | PtrSchema
            | PtrOrArray | PtrOrBool | PtrDocs => Kind::Ptr,
            SliceJson | SliceString | SliceSchema | SliceUint8 | Rules => Kind::Slice,
            MapSchema | Dependencies | Definitions => Kind::Map,
            Schema | Json | OrArray | OrBool | OrStringArray | Rule | Docs => Kind::Struct,
        }
    }

    /// `reflect.Type.Name() != ""`.
    fn is_named(self) -> bool {
        use Ty::*;
        !matches!(
            self,
            PtrString
                | PtrFloat64
                | PtrInt64
                | PtrBool
                | PtrReason
                | PtrJson
                | PtrSchema
                | PtrOrArray
                | PtrOrBool
                | PtrDocs
                | SliceJson
                | SliceString
                | SliceSchema
                | SliceUint8
                | MapSchema
        )
    }

    /// go-cmp's unqualified type string.
    fn name(self) -> &'static str {
        use Ty::*;
        match self {
            Bool => "bool",
            Int64 => "int64",
            Float64 => "float64",
            String => "string",
            Uint8 => "uint8",
            SchemaUrl => "v1.JSONSchemaURL",
            Reason => "v1.FieldValueErrorReason",
            PtrString => "*string",
            PtrFloat64 => "*float64",
            PtrInt64 => "*int64",
            PtrBool => "*bool",
            PtrReason => "*v1.FieldValueErrorReason",
            PtrJson => "*v1.JSON",
            PtrSchema => "*v1.JSONSchemaProps",
            PtrOrArray => "*v1.JSONSchemaPropsOrArray",
            PtrOrBool => "*v1.JSONSchemaPropsOrBool",
            PtrDocs => "*v1.ExternalDocumentation",
            SliceJson => "[]v1.JSON",
            SliceString => "[]string",
            SliceSchema => "[]v1.JSONSchemaProps",
            SliceUint8 => "[]uint8",
            Rules => "v1.ValidationRules",
            MapSchema => "map[string]v1.JSONSchemaProps",
            Dependencies => "v1.JSONSchemaDependencies",
            Definitions => "v1.JSONSchemaDefinitions",
            Schema => "v1.JSONSchemaProps",
            Json => "v1.JSON",
            OrArray => "v1.JSONSchemaPropsOrArray",
            OrBool => "v1.JSONSchemaPropsOrBool",
            OrStringArray => "v1.JSONSchemaPropsOrStringArray",
            Rule => "v1.ValidationRule",
            Docs => "v1.ExternalDocumentation",
        }
    }

    fn elem(self) -> Ty {
        use Ty::*;
        match self {
            PtrString => String,
            PtrFloat64 => Float64,
            PtrInt64 => Int64,
            PtrBool => Bool,
            PtrReason => Reason,
            PtrJson => Json,
            PtrSchema => Schema,
            PtrOrArray => OrArray,
            PtrOrBool => OrBool,
            PtrDocs => Docs,
            SliceJson => Json,
            SliceString => String,
            SliceSchema | MapSchema | Definitions => Schema,
            SliceUint8 => Uint8,
            Rules => Rule,
            Dependencies => OrStringArray,
            other => other,
        }
    }
}

/// The receiver of a generated `String()` method, for go-cmp's `fmt.Stringer` path.
#[derive(Clone, Copy)]
enum Src<'a> {
    Schema(&'a Schema),
    Json(&'a Json),
    OrArray(&'a SchemaOrArray),
    OrBool(&'a SchemaOrBool),
    Docs(&'a ExternalDocs),
}

impl Src<'_> {
    fn gogo_string(&self) -> String {
        match self {
            Src::Schema(s) => s.gogo_string(),
            Src::Json(j) => j.gogo_string(),
            Src::OrArray(a) => {
                let mut arr = String::from("[]JSONSchemaProps{");
                for s in a.schemas.iter().flatten() {
                    arr.push_str(&s.gogo_string().replacen('&', "", 1));
                    arr.push(',');
                }
                arr.push('}');
                format!(
                    "&JSONSchemaPropsOrArray{{Schema:{},JSONSchemas:{},}}",
                    a.schema
                        .as_ref()
                        .map_or_else(|| "nil".to_owned(), |s| s.gogo_string()),
                    arr
                )
            }
            Src::OrBool(b) => format!(
                "&JSONSchemaPropsOrBool{{Allows:{},Schema:{},}}",
                b.allows,
                b.schema
                    .as_ref()
                    .map_or_else(|| "nil".to_owned(), |s| s.gogo_string())
            ),
            Src::Docs(d) => format!(
                "&ExternalDocumentation{{Description:{},URL:{},}}",
                d.description, d.url
            ),
        }
    }
}

/// A Go value of one of the types above.
#[derive(Clone)]
enum Val<'a> {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    Byte(u8),
    Ptr(Option<Box<Val<'a>>>, Option<Src<'a>>),
    Slice(Option<Vec<Val<'a>>>),
    Map(Option<Vec<(&'a str, Val<'a>)>>),
    Struct(Vec<(&'static str, Ty, Val<'a>)>),
}

impl Val<'_> {
    /// `reflect.Value.IsZero`.
    fn is_zero(&self) -> bool {
        match self {
            Val::Bool(b) => !b,
            Val::Int(i) => *i == 0,
            Val::Float(f) => f.to_bits() == 0,
            Val::Str(s) => s.is_empty(),
            Val::Byte(b) => *b == 0,
            Val::Ptr(p, _) => p.is_none(),
            Val::Slice(s) => s.is_none(),
            Val::Map(m) => m.is_none(),
            Val::Struct(fields) => fields.iter().all(|(_, _, v)| v.is_zero()),
        }
    }

    fn is_nil(&self) -> bool {
        matches!(self, Val::Ptr(None, _) | Val::Slice(None) | Val::Map(None))
    }

    fn len(&self) -> usize {
        match self {
            Val::Slice(Some(v)) => v.len(),
            Val::Map(Some(v)) => v.len(),
            Val::Str(s) => s.len(),
            _ => 0,
        }
    }
}

fn opt_ptr<'a, T>(v: &'a Option<T>, f: impl Fn(&'a T) -> Val<'a>) -> Val<'a> {
    Val::Ptr(v.as_ref().map(|x| Box::new(f(x))), None)
}

fn str_slice(v: &Option<Vec<String>>) -> Val<'_> {
    Val::Slice(
        v.as_ref()
            .map(|items| items.iter().map(|s| Val::Str(s)).collect()),
    )
}

fn json_val(j: &Json) -> Val<'_> {
    Val::Struct(vec![(
        "Raw",
        Ty::SliceUint8,
        Val::Slice(if j.raw.is_empty() {
            None
        } else {
            Some(j.raw.iter().map(|b| Val::Byte(*b)).collect())
        }),
    )])
}

fn json_ptr(j: &Option<Json>) -> Val<'_> {
    match j {
        None => Val::Ptr(None, None),
        Some(j) => Val::Ptr(Some(Box::new(json_val(j))), Some(Src::Json(j))),
    }
}

fn schema_ptr(s: Option<&Schema>) -> Val<'_> {
    match s {
        None => Val::Ptr(None, None),
        Some(s) => Val::Ptr(Some(Box::new(schema_val(s))), Some(Src::Schema(s))),
    }
}

fn or_bool_ptr(v: &Option<Box<SchemaOrBool>>) -> Val<'_> {
    match v {
        None => Val::Ptr(None, None),
        Some(b) => Val::Ptr(
            Some(Box::new(Val::Struct(vec![
                ("Allows", Ty::Bool, Val::Bool(b.allows)),
                ("Schema", Ty::PtrSchema, schema_ptr(b.schema.as_deref())),
            ]))),
            Some(Src::OrBool(b)),
        ),
    }
}

fn schema_list(v: &Option<Vec<Schema>>) -> Val<'_> {
    Val::Slice(
        v.as_ref()
            .map(|items| items.iter().map(schema_val).collect()),
    )
}

fn schema_map(v: &Option<std::collections::BTreeMap<String, Schema>>) -> Val<'_> {
    Val::Map(
        v.as_ref()
            .map(|m| m.iter().map(|(k, s)| (k.as_str(), schema_val(s))).collect()),
    )
}

fn rule_val(r: &ValidationRule) -> Val<'_> {
    Val::Struct(vec![
        ("Rule", Ty::String, Val::Str(&r.rule)),
        ("Message", Ty::String, Val::Str(&r.message)),
        (
            "MessageExpression",
            Ty::String,
            Val::Str(&r.message_expression),
        ),
        ("Reason", Ty::PtrReason, opt_ptr(&r.reason, |s| Val::Str(s))),
        ("FieldPath", Ty::String, Val::Str(&r.field_path)),
        (
            "OptionalOldSelf",
            Ty::PtrBool,
            opt_ptr(&r.optional_old_self, |b| Val::Bool(*b)),
        ),
    ])
}

fn schema_val(s: &Schema) -> Val<'_> {
    let f = |v: &Option<f64>| opt_ptr_copy(v.map(Val::Float));
    let i = |v: &Option<i64>| opt_ptr_copy(v.map(Val::Int));
    Val::Struct(vec![
        ("ID", Ty::String, Val::Str(&s.id)),
        ("Schema", Ty::SchemaUrl, Val::Str(&s.schema)),
        ("Ref", Ty::PtrString, opt_ptr(&s.reference, |x| Val::Str(x))),
        ("Description", Ty::String, Val::Str(&s.description)),
        ("Type", Ty::String, Val::Str(&s.type_)),
        ("Format", Ty::String, Val::Str(&s.format)),
        ("Title", Ty::String, Val::Str(&s.title)),
        ("Default", Ty::PtrJson, json_ptr(&s.default)),
        ("Maximum", Ty::PtrFloat64, f(&s.maximum)),
        ("ExclusiveMaximum", Ty::Bool, Val::Bool(s.exclusive_maximum)),
        ("Minimum", Ty::PtrFloat64, f(&s.minimum)),
        ("ExclusiveMinimum", Ty::Bool, Val::Bool(s.exclusive_minimum)),
        ("MaxLength", Ty::PtrInt64, i(&s.max_length)),
        ("MinLength", Ty::PtrInt64, i(&s.min_length)),
        ("Pattern", Ty::String, Val::Str(&s.pattern)),
        ("MaxItems", Ty::PtrInt64, i(&s.max_items)),
        ("MinItems", Ty::PtrInt64, i(&s.min_items)),
        ("UniqueItems", Ty::Bool, Val::Bool(s.unique_items)),
        ("MultipleOf", Ty::PtrFloat64, f(&s.multiple_of)),
        (
            "Enum",
            Ty::SliceJson,
            Val::Slice(s.enum_.as_ref().map(|e| e.iter().map(json_val).collect())),
        ),
        ("MaxProperties", Ty::PtrInt64, i(&s.max_properties)),
        ("MinProperties", Ty::PtrInt64, i(&s.min_properties)),
        ("Required", Ty::SliceString, str_slice(&s.required)),
        (
            "Items",
            Ty::PtrOrArray,
            match &s.items {
                None => Val::Ptr(None, None),
                Some(a) => Val::Ptr(
                    Some(Box::new(Val::Struct(vec![
                        ("Schema", Ty::PtrSchema, schema_ptr(a.schema.as_deref())),
                        ("JSONSchemas", Ty::SliceSchema, schema_list(&a.schemas)),
                    ]))),
                    Some(Src::OrArray(a)),
                ),
            },
        ),
        ("AllOf", Ty::SliceSchema, schema_list(&s.all_of)),
        ("OneOf", Ty::SliceSchema, schema_list(&s.one_of)),
        ("AnyOf", Ty::SliceSchema, schema_list(&s.any_of)),
        ("Not", Ty::PtrSchema, schema_ptr(s.not.as_deref())),
        ("Properties", Ty::MapSchema, schema_map(&s.properties)),
        (
            "AdditionalProperties",
            Ty::PtrOrBool,
            or_bool_ptr(&s.additional_properties),
        ),
        (
            "PatternProperties",
            Ty::MapSchema,
            schema_map(&s.pattern_properties),
        ),
        (
            "Dependencies",
            Ty::Dependencies,
            Val::Map(s.dependencies.as_ref().map(|m| {
                m.iter()
                    .map(|(k, d)| {
                        (
                            k.as_str(),
                            Val::Struct(vec![
                                ("Schema", Ty::PtrSchema, schema_ptr(d.schema.as_deref())),
                                ("Property", Ty::SliceString, str_slice(&d.property)),
                            ]),
                        )
                    })
                    .collect()
            })),
        ),
        (
            "AdditionalItems",
            Ty::PtrOrBool,
            or_bool_ptr(&s.additional_items),
        ),
        ("Definitions", Ty::Definitions, schema_map(&s.definitions)),
        (
            "ExternalDocs",
            Ty::PtrDocs,
            match &s.external_docs {
                None => Val::Ptr(None, None),
                Some(d) => Val::Ptr(
                    Some(Box::new(Val::Struct(vec![
                        ("Description", Ty::String, Val::Str(&d.description)),
                        ("URL", Ty::String, Val::Str(&d.url)),
                    ]))),
                    Some(Src::Docs(d)),
                ),
            },
        ),
        ("Example", Ty::PtrJson, json_ptr(&s.example)),
        ("Nullable", Ty::Bool, Val::Bool(s.nullable)),
        (
            "XPreserveUnknownFields",
            Ty::PtrBool,
            opt_ptr_copy(s.x_preserve_unknown_fields.map(Val::Bool)),
        ),
        (
            "XEmbeddedResource",
            Ty::Bool,
            Val::Bool(s.x_embedded_resource),
        ),
        ("XIntOrString", Ty::Bool, Val::Bool(s.x_int_or_string)),
        (
            "XListMapKeys",
            Ty::SliceString,
            str_slice(&s.x_list_map_keys),
        ),
        (
            "XListType",
            Ty::PtrString,
            opt_ptr(&s.x_list_type, |x| Val::Str(x)),
        ),
        (
            "XMapType",
            Ty::PtrString,
            opt_ptr(&s.x_map_type, |x| Val::Str(x)),
        ),
        (
            "XValidations",
            Ty::Rules,
            Val::Slice(
                s.x_validations
                    .as_ref()
                    .map(|r| r.iter().map(rule_val).collect()),
            ),
        ),
    ])
}

fn opt_ptr_copy(v: Option<Val<'_>>) -> Val<'_> {
    Val::Ptr(v.map(Box::new), None)
}

// ---------------------------------------------------------------------------------------------
// Comparison tree (go-cmp's valueNode)

#[derive(Clone, Copy)]
enum Key<'a> {
    None,
    Field(&'static str),
    Map(&'a str),
}

struct Node<'v, 'a> {
    ty: Ty,
    x: Option<&'v Val<'a>>,
    y: Option<&'v Val<'a>>,
    num_same: usize,
    num_diff: usize,
    num_children: usize,
    max_depth: usize,
    records: Vec<(Key<'a>, Node<'v, 'a>)>,
    value: Option<Box<Node<'v, 'a>>>,
}

impl<'v, 'a> Node<'v, 'a> {
    fn new(ty: Ty, x: Option<&'v Val<'a>>, y: Option<&'v Val<'a>>) -> Self {
        Node {
            ty,
            x,
            y,
            num_same: 0,
            num_diff: 0,
            num_children: 0,
            max_depth: 0,
            records: Vec::new(),
            value: None,
        }
    }

    fn leaf(mut self, eq: bool) -> Self {
        if eq {
            self.num_same = 1;
        } else {
            self.num_diff = 1;
        }
        self
    }

    fn absorb(&mut self, child: &Node<'v, 'a>) {
        self.num_same += child.num_same;
        self.num_diff += child.num_diff;
        self.num_children += child.num_children + 1;
        self.max_depth = self.max_depth.max(child.max_depth + 1);
    }

    fn push_record(&mut self, key: Key<'a>, child: Node<'v, 'a>) {
        self.absorb(&child);
        self.records.push((key, child));
    }
}

fn compare<'v, 'a>(ty: Ty, x: Option<&'v Val<'a>>, y: Option<&'v Val<'a>>) -> Node<'v, 'a> {
    let node = Node::new(ty, x, y);
    let (Some(vx), Some(vy)) = (x, y) else {
        // A missing slice element or map entry.
        let eq = x.is_some() == y.is_some();
        return node.leaf(eq);
    };
    match (vx, vy) {
        (Val::Bool(a), Val::Bool(b)) => node.leaf(a == b),
        (Val::Int(a), Val::Int(b)) => node.leaf(a == b),
        (Val::Float(a), Val::Float(b)) => node.leaf(a == b),
        (Val::Str(a), Val::Str(b)) => node.leaf(a == b),
        (Val::Byte(a), Val::Byte(b)) => node.leaf(a == b),
        (Val::Struct(fx), Val::Struct(fy)) => {
            let mut node = node;
            for ((name, fty, a), (_, _, b)) in fx.iter().zip(fy.iter()) {
                let child = compare(*fty, Some(a), Some(b));
                node.push_record(Key::Field(name), child);
            }
            node
        }
        (Val::Ptr(a, _), Val::Ptr(b, _)) => match (a, b) {
            (Some(a), Some(b)) => {
                let mut node = node;
                let child = compare(ty.elem(), Some(a), Some(b));
                node.absorb(&child);
                node.value = Some(Box::new(child));
                node
            }
            _ => node.leaf(a.is_none() && b.is_none()),
        },
        (Val::Slice(a), Val::Slice(b)) => match (a, b) {
            (Some(a), Some(b)) => compare_slice(node, ty.elem(), a, b),
            _ => node.leaf(a.is_none() && b.is_none()),
        },
        (Val::Map(a), Val::Map(b)) => match (a, b) {
            (Some(a), Some(b)) => {
                let mut node = node;
                let mut keys: Vec<&'a str> = a.iter().chain(b.iter()).map(|(k, _)| *k).collect();
                keys.sort_unstable();
                keys.dedup();
                for k in keys {
                    let xa = a.iter().find(|(kk, _)| *kk == k).map(|(_, v)| v);
                    let yb = b.iter().find(|(kk, _)| *kk == k).map(|(_, v)| v);
                    let child = compare(ty.elem(), xa, yb);
                    node.push_record(Key::Map(k), child);
                }
                node
            }
            _ => node.leaf(a.is_none() && b.is_none()),
        },
        _ => node.leaf(false),
    }
}

fn compare_slice<'v, 'a>(
    mut node: Node<'v, 'a>,
    elem: Ty,
    x: &'v [Val<'a>],
    y: &'v [Val<'a>],
) -> Node<'v, 'a> {
    let edits = difference(x.len(), y.len(), &mut |ix, iy| {
        let n = compare(elem, Some(&x[ix]), Some(&y[iy]));
        DiffResult {
            num_same: n.num_same,
            num_diff: n.num_diff,
        }
    });
    let (mut ix, mut iy) = (0, 0);
    for e in edits {
        let child = match e {
            Edit::UniqueX => {
                ix += 1;
                compare(elem, Some(&x[ix - 1]), None)
            }
            Edit::UniqueY => {
                iy += 1;
                compare(elem, None, Some(&y[iy - 1]))
            }
            Edit::Identity | Edit::Modified => {
                ix += 1;
                iy += 1;
                compare(elem, Some(&x[ix - 1]), Some(&y[iy - 1]))
            }
        };
        node.push_record(Key::None, child);
    }
    node
}

// ---------------------------------------------------------------------------------------------
// Edit scripts (go-cmp's internal/diff, forward search first)

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edit {
    Identity,
    UniqueX,
    UniqueY,
    Modified,
}

#[derive(Clone, Copy)]
struct DiffResult {
    num_same: usize,
    num_diff: usize,
}

impl DiffResult {
    fn equal(self) -> bool {
        self.num_diff == 0
    }
    fn similar(self) -> bool {
        self.num_same + 1 >= self.num_diff
    }
    fn from_bool(b: bool) -> DiffResult {
        if b {
            DiffResult {
                num_same: 1,
                num_diff: 0,
            }
        } else {
            DiffResult {
                num_same: 0,
                num_diff: 2,
            }
        }
    }
}

struct Path {
    dir: i64,
    x: i64,
    y: i64,
    es: Vec<Edit>,
}

impl Path {
    fn append(&mut self, t: Edit) {
        self.es.push(t);
        match t {
            Edit::Identity | Edit::Modified => {
                self.x += self.dir;
                self.y += self.dir;
            }
            Edit::UniqueX => self.x += self.dir,
            Edit::UniqueY => self.y += self.dir,
        }
    }

    fn connect(&mut self, dx: i64, dy: i64, f: &mut dyn FnMut(usize, usize) -> DiffResult) {
        if self.dir > 0 {
            while dx > self.x && dy > self.y {
                let r = f(self.x as usize, self.y as usize);
                if r.equal() {
                    self.append(Edit::Identity);
                } else if r.similar() {
                    self.append(Edit::Modified);
                } else if dx - self.x >= dy - self.y {
                    self.append(Edit::UniqueX);
                } else {
                    self.append(Edit::UniqueY);
                }
            }
            while dx > self.x {
                self.append(Edit::UniqueX);
            }
            while dy > self.y {
                self.append(Edit::UniqueY);
            }
        } else {
            while self.x > dx && self.y > dy {
                let r = f((self.x - 1) as usize, (self.y - 1) as usize);
                if r.equal() {
                    self.append(Edit::Identity);
                } else if r.similar() {
                    self.append(Edit::Modified);
                } else if self.y - dy >= self.x - dx {
                    self.append(Edit::UniqueY);
                } else {
                    self.append(Edit::UniqueX);
                }
            }
            while self.x > dx {
                self.append(Edit::UniqueX);
            }
            while self.y > dy {
                self.append(Edit::UniqueY);
            }
        }
    }
}

fn zigzag(x: i64) -> i64 {
    let x = if x & 1 != 0 { !x } else { x };
    x >> 1
}

/// go-cmp's `diff.Difference`: a greedy, budgeted edit script alternating forward and reverse
/// searches (forward first).
fn difference(nx: usize, ny: usize, f: &mut dyn FnMut(usize, usize) -> DiffResult) -> Vec<Edit> {
    let (nx, ny) = (nx as i64, ny as i64);
    let mut fwd = Path {
        dir: 1,
        x: 0,
        y: 0,
        es: Vec::new(),
    };
    let mut rev = Path {
        dir: -1,
        x: nx,
        y: ny,
        es: Vec::new(),
    };
    let (mut ffx, mut ffy) = (0i64, 0i64);
    let (mut rfx, mut rfy) = (nx, ny);
    let mut budget = 4 * (nx + ny);
    let mut forward = true;
    loop {
        if ffx >= rfx || ffy >= rfy || budget == 0 {
            break;
        }
        if forward {
            let (mut stop1, mut stop2) = (false, false);
            let mut i = 0;
            while !(stop1 && stop2) && budget > 0 {
                let z = zigzag(i);
                let (px, py) = (ffx + z, ffy - z);
                if px >= rev.x || py < fwd.y {
                    stop1 = true;
                } else if py >= rev.y || px < fwd.x {
                    stop2 = true;
                } else if f(px as usize, py as usize).equal() {
                    fwd.connect(px, py, f);
                    fwd.append(Edit::Identity);
                    while fwd.x < rev.x && fwd.y < rev.y {
                        if !f(fwd.x as usize, fwd.y as usize).equal() {
                            break;
                        }
                        fwd.append(Edit::Identity);
                    }
                    ffx = fwd.x;
                    ffy = fwd.y;
                    stop1 = true;
                    stop2 = true;
                } else {
                    budget -= 1;
                }
                i += 1;
            }
            if rev.x - ffx >= rev.y - ffy {
                ffx += 1;
            } else {
                ffy += 1;
            }
        } else {
            let (mut stop1, mut stop2) = (false, false);
            let mut i = 0;
            while !(stop1 && stop2) && budget > 0 {
                let z = zigzag(i);
                let (px, py) = (rfx - z, rfy + z);
                if fwd.x >= px || rev.y < py {
                    stop1 = true;
                } else if fwd.y >= py || rev.x < px {
                    stop2 = true;
                } else if f((px - 1) as usize, (py - 1) as usize).equal() {
                    rev.connect(px, py, f);
                    rev.append(Edit::Identity);
                    while fwd.x < rev.x && fwd.y < rev.y {
                        if !f((rev.x - 1) as usize, (rev.y - 1) as usize).equal() {
                            break;
                        }
                        rev.append(Edit::Identity);
                    }
                    rfx = rev.x;
                    rfy = rev.y;
                    stop1 = true;
                    stop2 = true;
                } else {
                    budget -= 1;
                }
                i += 1;
            }
            if rfx - fwd.x >= rfy - fwd.y {
                rfx -= 1;
            } else {
                rfy -= 1;
            }
        }
        forward = !forward;
    }
    let (rx, ry) = (rev.x, rev.y);
    fwd.connect(rx, ry, f);
    while let Some(t) = rev.es.pop() {
        fwd.append(t);
    }
    fwd.es
}

// ---------------------------------------------------------------------------------------------
// Text tree (go-cmp's textNode)

const DIFF_UNKNOWN: u8 = 0;
const DIFF_IDENTICAL: u8 = b' ';
const DIFF_REMOVED: u8 = b'-';
const DIFF_INSERTED: u8 = b'+';
const MAX_COLUMN_LENGTH: usize = 80;
const NUM_CONTEXT_RECORDS: usize = 2;
const MAX_VERBOSITY_PRESET: i32 = 6;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct DiffStats {
    name: &'static str,
    ignored: usize,
    identical: usize,
    removed: usize,
    inserted: usize,
    modified: usize,
}

impl DiffStats {
    fn named(name: &'static str) -> Self {
        DiffStats {
            name,
            ..Default::default()
        }
    }
    fn is_zero(&self) -> bool {
        self.ignored + self.identical + self.removed + self.inserted + self.modified == 0
    }
    fn num_diff(&self) -> usize {
        self.removed + self.inserted + self.modified
    }
    fn append(&self, o: &DiffStats) -> DiffStats {
        DiffStats {
            name: self.name,
            ignored: self.ignored + o.ignored,
            identical: self.identical + o.identical,
            removed: self.removed + o.removed,
            inserted: self.inserted + o.inserted,
            modified: self.modified + o.modified,
        }
    }
    fn text(&self) -> String {
        let labels = ["ignored", "identical", "removed", "inserted", "modified"];
        let counts = [
            self.ignored,
            self.identical,
            self.removed,
            self.inserted,
            self.modified,
        ];
        let mut parts = Vec::new();
        let mut sum = 0;
        for (label, n) in labels.iter().zip(counts) {
            if n > 0 {
                parts.push(format!("{n} {label}"));
            }
            sum += n;
        }
        let mut name = self.name.to_owned();
        if sum > 1 {
            name.push('s');
            if name.ends_with("ys") {
                name.truncate(name.len() - 2);
                name.push_str("ies");
            }
        }
        match parts.len() {
            0 => String::new(),
            1 | 2 => format!("{} {name}", parts.join(" and ")),
            n => format!("{}, and {} {name}", parts[..n - 1].join(", "), parts[n - 1]),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Comment {
    Stats(DiffStats),
    Text(String),
}

impl Comment {
    fn text(&self) -> String {
        match self {
            Comment::Stats(s) => s.text(),
            Comment::Text(t) => t.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Record {
    diff: u8,
    key: String,
    value: Text,
    elide_comma: bool,
    comment: Option<Comment>,
}

impl Record {
    fn value(value: Text) -> Record {
        Record {
            diff: 0,
            key: String::new(),
            value,
            elide_comma: false,
            comment: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Text {
    Line(String),
    Wrap(Box<(String, Text, String)>),
    List(Vec<Record>),
}

fn line(s: impl Into<String>) -> Text {
    Text::Line(s.into())
}

fn wrap(prefix: impl Into<String>, value: Text, suffix: impl Into<String>) -> Text {
    Text::Wrap(Box::new((prefix.into(), value, suffix.into())))
}

fn nil_text() -> Text {
    line("nil")
}

fn ellipsis() -> Text {
    line("...")
}

fn append_ellipsis(list: &mut Vec<Record>, ds: Option<DiffStats>) {
    let has_stats = ds.as_ref().is_some_and(|d| !d.is_zero());
    let last_is_ellipsis = list.last().is_some_and(|r| r.value == ellipsis());
    if !last_is_ellipsis {
        list.push(Record {
            diff: 0,
            key: String::new(),
            value: ellipsis(),
            elide_comma: true,
            comment: if has_stats {
                ds.map(Comment::Stats)
            } else {
                None
            },
        });
        return;
    }
    if has_stats
        && let (Some(last), Some(ds)) = (list.last_mut(), ds)
        && let Some(Comment::Stats(prev)) = &last.comment
    {
        last.comment = Some(Comment::Stats(prev.append(&ds)));
    }
}

impl Text {
    fn len(&self) -> usize {
        match self {
            Text::Line(s) => s.len(),
            Text::Wrap(w) => w.0.len() + w.1.len() + w.2.len(),
            Text::List(list) => {
                let mut n = 0;
                for (i, r) in list.iter().enumerate() {
                    n += r.key.len();
                    if !r.key.is_empty() {
                        n += 2;
                    }
                    n += r.value.len();
                    if i + 1 < list.len() {
                        n += 2;
                    }
                }
                n
            }
        }
    }

    fn is_line(&self) -> bool {
        matches!(self, Text::Line(_))
    }

    /// Formats as one line into `b`; returns the node with every collapsible part collapsed.
    fn compact(&self, b: &mut String, d: u8) -> Text {
        match self {
            Text::Line(s) => {
                b.push_str(s);
                self.clone()
            }
            Text::Wrap(w) => {
                let n0 = b.len();
                b.push_str(&w.0);
                let inner = w.1.compact(b, d);
                b.push_str(&w.2);
                if inner.is_line() {
                    Text::Line(b[n0..].to_owned())
                } else {
                    wrap(w.0.clone(), inner, w.2.clone())
                }
            }
            Text::List(list) => {
                let n0 = b.len();
                let mut multi = false;
                let mut out = Vec::with_capacity(list.len());
                for (i, r) in list.iter().enumerate() {
                    if r.diff == DIFF_INSERTED || r.diff == DIFF_REMOVED {
                        multi = true;
                    }
                    b.push_str(&r.key);
                    if !r.key.is_empty() {
                        b.push_str(": ");
                    }
                    let v = r.value.compact(b, d | r.diff);
                    if !v.is_line() {
                        multi = true;
                    }
                    if r.comment.is_some() {
                        multi = true;
                    }
                    if i + 1 < list.len() {
                        b.push_str(", ");
                    }
                    out.push(Record {
                        value: v,
                        ..r.clone()
                    });
                }
                if (d == DIFF_INSERTED || d == DIFF_REMOVED) && b.len() - n0 > MAX_COLUMN_LENGTH {
                    multi = true;
                }
                if !multi {
                    return Text::Line(b[n0..].to_owned());
                }
                Text::List(out)
            }
        }
    }

    fn expand(&self, b: &mut String, d: u8, n: usize) {
        match self {
            Text::Line(s) => b.push_str(s),
            Text::Wrap(w) => {
                b.push_str(&w.0);
                w.1.expand(b, d, n);
                b.push_str(&w.2);
            }
            Text::List(list) => expand_list(list, b, d, n),
        }
    }

    fn render(&self) -> String {
        let compacted = self.compact(&mut String::new(), DIFF_UNKNOWN);
        let mut b = String::new();
        append_indent(&mut b, DIFF_UNKNOWN, 0);
        compacted.expand(&mut b, DIFF_UNKNOWN, 0);
        b.push('\n');
        b
    }
}

fn append_indent(b: &mut String, d: u8, n: usize) {
    b.push_str(match d {
        DIFF_REMOVED => "- ",
        DIFF_INSERTED => "+ ",
        _ => "  ",
    });
    for _ in 0..n {
        b.push('\t');
    }
}

fn align_lens(
    list: &[Record],
    skip: impl Fn(&Record) -> bool,
    len: impl Fn(&Record) -> usize,
) -> Vec<usize> {
    let (mut start, mut end, mut max) = (0usize, 0usize, 0usize);
    let mut lens = vec![0usize; list.len()];
    for (i, r) in list.iter().enumerate() {
        if skip(r) {
            for j in start..end.min(list.len()) {
                lens[j] = max - len(&list[j]);
            }
            start = i + 1;
            end = i + 1;
            max = 0;
        } else {
            max = max.max(len(r));
            end = i + 1;
        }
    }
    for j in start..end.min(list.len()) {
        lens[j] = max - len(&list[j]);
    }
    lens
}

fn expand_list(list: &[Record], b: &mut String, d: u8, n: usize) {
    let key_lens = align_lens(
        list,
        |r| r.key.is_empty() || !r.value.is_line(),
        |r| r.key.chars().count(),
    );
    let value_lens = align_lens(
        list,
        |r| !r.value.is_line() || r.value == ellipsis() || r.comment.is_none(),
        |r| match &r.value {
            Text::Line(s) => s.chars().count(),
            _ => 0,
        },
    );
    let simple = !list.is_empty()
        && list
            .iter()
            .all(|r| r.diff == 0 && r.key.is_empty() && r.value.is_line() && r.comment.is_none());
    if simple {
        let n1 = n + 1;
        let mut batch = String::new();
        let emit = |b: &mut String, batch: &mut String| {
            if !batch.is_empty() {
                b.push('\n');
                append_indent(b, d, n1);
                b.push_str(batch.trim_end_matches(' '));
                batch.clear();
            }
        };
        for r in list {
            let Text::Line(l) = &r.value else { continue };
            if batch.len() + l.len() + 2 > MAX_COLUMN_LENGTH {
                emit(b, &mut batch);
            }
            batch.push_str(l);
            batch.push_str(", ");
        }
        emit(b, &mut batch);
        b.push('\n');
        append_indent(b, d, n);
        return;
    }
    let n1 = n + 1;
    for (i, r) in list.iter().enumerate() {
        b.push('\n');
        append_indent(b, d | r.diff, n1);
        if !r.key.is_empty() {
            b.push_str(&r.key);
            b.push_str(": ");
        }
        for _ in 0..key_lens[i] {
            b.push(' ');
        }
        r.value.expand(b, d | r.diff, n1);
        if !r.elide_comma {
            b.push(',');
        }
        for _ in 0..value_lens[i] {
            b.push(' ');
        }
        if let Some(c) = &r.comment {
            b.push_str(" // ");
            b.push_str(&c.text());
        }
    }
    b.push('\n');
    append_indent(b, d, n);
}

// ---------------------------------------------------------------------------------------------
// Reporter (go-cmp's formatOptions)

#[derive(Clone, Copy, PartialEq, Eq)]
enum TypeMode {
    Emit,
    Elide,
    Auto,
}

#[derive(Clone, Copy)]
struct Opts {
    diff_mode: u8,
    type_mode: TypeMode,
    avoid_stringer: bool,
    verbosity_level: i32,
    limit_verbosity: bool,
}

impl Opts {
    fn with_diff_mode(mut self, d: u8) -> Opts {
        self.diff_mode = d;
        self
    }
    fn with_type_mode(mut self, t: TypeMode) -> Opts {
        self.type_mode = t;
        self
    }
    fn with_verbosity(mut self, level: i32) -> Opts {
        self.verbosity_level = level;
        self.limit_verbosity = true;
        self
    }
    fn verbosity(&self) -> u32 {
        self.verbosity_level.clamp(0, 16) as u32
    }
    fn preset(self, i: i32) -> Opts {
        let mut o = self;
        o.verbosity_level = self.verbosity() as i32 + 2 * i;
        if i > 0 {
            o.avoid_stringer = true;
        }
        o
    }

    fn format_type(&self, ty: Ty, s: Text) -> Text {
        match self.type_mode {
            TypeMode::Auto => {
                match ty.kind() {
                    Kind::Struct | Kind::Slice | Kind::Map => {
                        if s == nil_text() {
                            return s;
                        }
                    }
                    _ => return s,
                }
                if self.diff_mode == DIFF_IDENTICAL {
                    return s;
                }
            }
            TypeMode::Elide => return s,
            TypeMode::Emit => {}
        }
        let mut name = ty.name().to_owned();
        if !ty.is_named() && ty.kind() == Kind::Ptr {
            name = format!("({name})");
        }
        wrap(name, wrap_parens(s), "")
    }

    fn format_diff(&self, v: &Node<'_, '_>) -> Text {
        let mut opts = *self;
        if opts.diff_mode == DIFF_IDENTICAL {
            opts = opts.with_verbosity(1);
        } else if opts.verbosity() < 3 {
            opts = opts.with_verbosity(3);
        }
        if opts.can_format_diff_slice(v) {
            return opts.format_diff_slice(v);
        }
        let parent_kind = None;
        let is_bytes = v.ty == Ty::SliceUint8;
        let equal_bytes = is_bytes && v.num_diff == 0;
        if v.max_depth == 0 || equal_bytes {
            match opts.diff_mode {
                DIFF_UNKNOWN | DIFF_IDENTICAL => {
                    if v.num_diff == 0 {
                        let outx = opts.format_value(v.ty, v.x, parent_kind);
                        let outy = opts.format_value(v.ty, v.y, parent_kind);
                        return match (outx, outy) {
                            (Some(a), Some(b)) => {
                                if a.len() < b.len() {
                                    a
                                } else {
                                    b
                                }
                            }
                            (a, b) => a.or(b).unwrap_or_else(ellipsis),
                        };
                    }
                    let e = opts.with_type_mode(TypeMode::Elide);
                    let mut outx = e.format_value(v.ty, v.x, parent_kind);
                    let mut outy = e.format_value(v.ty, v.y, parent_kind);
                    let mut i = 0;
                    while i <= MAX_VERBOSITY_PRESET
                        && outx.is_some()
                        && outy.is_some()
                        && outx == outy
                    {
                        let o2 = opts.preset(i).with_type_mode(TypeMode::Elide);
                        outx = o2.format_value(v.ty, v.x, parent_kind);
                        outy = o2.format_value(v.ty, v.y, parent_kind);
                        i += 1;
                    }
                    let mut list = Vec::new();
                    if let Some(x) = outx {
                        list.push(Record {
                            diff: DIFF_REMOVED,
                            ..Record::value(x)
                        });
                    }
                    if let Some(y) = outy {
                        list.push(Record {
                            diff: DIFF_INSERTED,
                            ..Record::value(y)
                        });
                    }
                    return opts
                        .with_type_mode(TypeMode::Emit)
                        .format_type(v.ty, Text::List(list));
                }
                DIFF_REMOVED => {
                    return opts
                        .format_value(v.ty, v.x, parent_kind)
                        .unwrap_or_else(nil_text);
                }
                _ => {
                    return opts
                        .format_value(v.ty, v.y, parent_kind)
                        .unwrap_or_else(nil_text);
                }
            }
        }
        match v.ty.kind() {
            Kind::Struct | Kind::Slice | Kind::Map => {
                let out = opts.format_diff_list(&v.records, v.ty.kind());
                opts.format_type(v.ty, out)
            }
            Kind::Ptr => {
                let inner = match &v.value {
                    Some(child) => opts.format_diff(child),
                    None => nil_text(),
                };
                wrap("&", inner, "")
            }
            _ => nil_text(),
        }
    }

    fn format_diff_list(&self, recs: &[(Key<'_>, Node<'_, '_>)], k: Kind) -> Text {
        let mut opts = *self;
        let name = match k {
            Kind::Struct => {
                opts = opts.with_type_mode(TypeMode::Auto);
                "field"
            }
            Kind::Slice => {
                opts = opts.with_type_mode(TypeMode::Elide);
                "element"
            }
            _ => {
                opts = opts.with_type_mode(TypeMode::Elide);
                "entry"
            }
        };
        let format_key = |key: &Key<'_>| -> String {
            match key {
                Key::None => String::new(),
                Key::Field(f) => (*f).to_owned(),
                Key::Map(m) => format_map_key(m),
            }
        };
        let mut max_len: i64 = -1;
        if opts.limit_verbosity {
            if opts.diff_mode == DIFF_IDENTICAL {
                max_len = ((1i64 << opts.verbosity()) >> 1) << 2;
            } else {
                max_len = (1i64 << opts.verbosity()) << 1;
            }
            opts.verbosity_level -= 1;
        }

        match opts.diff_mode {
            DIFF_IDENTICAL | DIFF_REMOVED | DIFF_INSERTED => {
                let mut list: Vec<Record> = Vec::new();
                let mut deferred = false;
                for (key, r) in recs {
                    if list.len() as i64 == max_len {
                        deferred = true;
                        break;
                    }
                    if k == Kind::Struct {
                        let zero = |v: Option<&Val<'_>>| v.is_none_or(|v| v.is_zero());
                        let is_zero = match opts.diff_mode {
                            DIFF_IDENTICAL => zero(r.x) || zero(r.y),
                            DIFF_REMOVED => zero(r.x),
                            _ => zero(r.y),
                        };
                        if is_zero {
                            continue;
                        }
                    }
                    let out = opts.format_diff(r);
                    list.push(Record {
                        key: format_key(key),
                        ..Record::value(out)
                    });
                }
                if deferred {
                    append_ellipsis(&mut list, None);
                }
                return wrap("{", Text::List(list), "}");
            }
            _ => {}
        }

        let groups = coalesce_adjacent_records(name, recs);
        let mut num_diffs: i64 = 0;
        let mut list: Vec<Record> = Vec::new();
        let mut max_group = DiffStats::named(name);
        let mut recs = recs;
        let group_count = groups.len();
        for (i, mut ds) in groups.into_iter().enumerate() {
            if max_len >= 0 && num_diffs >= max_len {
                max_group = max_group.append(&ds);
                continue;
            }
            if ds.num_diff() == 0 {
                let num_equal = ds.ignored + ds.identical;
                let (mut lo, mut hi) = (0usize, 0usize);
                while lo < NUM_CONTEXT_RECORDS && lo + hi < num_equal && i != 0 {
                    lo += 1;
                }
                while hi < NUM_CONTEXT_RECORDS && lo + hi < num_equal && i != group_count - 1 {
                    hi += 1;
                }
                if num_equal - (lo + hi) == 1 && ds.ignored == 0 {
                    hi += 1;
                }
                for (key, r) in &recs[..lo] {
                    let out = opts.with_diff_mode(DIFF_IDENTICAL).format_diff(r);
                    list.push(Record {
                        key: format_key(key),
                        ..Record::value(out)
                    });
                }
                if num_equal > lo + hi {
                    ds.identical -= lo + hi;
                    append_ellipsis(&mut list, Some(ds.clone()));
                }
                for (key, r) in &recs[num_equal - hi..num_equal] {
                    let out = opts.with_diff_mode(DIFF_IDENTICAL).format_diff(r);
                    list.push(Record {
                        key: format_key(key),
                        ..Record::value(out)
                    });
                }
                recs = &recs[num_equal..];
                continue;
            }
            let nd = ds.num_diff();
            for (key, r) in &recs[..nd] {
                if opts.can_format_diff_slice(r) {
                    let out = opts.format_diff_slice(r);
                    list.push(Record {
                        key: format_key(key),
                        ..Record::value(out)
                    });
                } else if r.num_children == r.max_depth {
                    let mut outx = opts.with_diff_mode(DIFF_REMOVED).format_diff(r);
                    let mut outy = opts.with_diff_mode(DIFF_INSERTED).format_diff(r);
                    let mut j = 0;
                    while j <= MAX_VERBOSITY_PRESET
                        && r.x.is_some()
                        && r.y.is_some()
                        && outx == outy
                    {
                        let o2 = opts.preset(j);
                        outx = o2.with_diff_mode(DIFF_REMOVED).format_diff(r);
                        outy = o2.with_diff_mode(DIFF_INSERTED).format_diff(r);
                        j += 1;
                    }
                    // A missing element formats as nothing in go-cmp (nil textNode).
                    if r.x.is_some() {
                        list.push(Record {
                            diff: DIFF_REMOVED,
                            key: format_key(key),
                            ..Record::value(outx)
                        });
                    }
                    if r.y.is_some() {
                        list.push(Record {
                            diff: DIFF_INSERTED,
                            key: format_key(key),
                            ..Record::value(outy)
                        });
                    }
                } else {
                    let out = opts.format_diff(r);
                    list.push(Record {
                        key: format_key(key),
                        ..Record::value(out)
                    });
                }
            }
            recs = &recs[nd..];
            num_diffs += nd as i64;
        }
        if !max_group.is_zero() {
            append_ellipsis(&mut list, Some(max_group));
        }
        wrap("{", Text::List(list), "}")
    }

    fn format_value(&self, ty: Ty, v: Option<&Val<'_>>, _parent: Option<Kind>) -> Option<Text> {
        let v = v?;
        let mut opts = *self;
        if !opts.avoid_stringer
            && let Val::Ptr(Some(_), Some(src)) = v
        {
            return Some(opts.format_string("s", &src.gogo_string()));
        }
        let mut skip_type = false;
        let out = match v {
            Val::Bool(b) => line(b.to_string()),
            Val::Int(i) => line(i.to_string()),
            Val::Float(f) => line(format_float_v(*f)),
            Val::Byte(b) => {
                if matches!(_parent, Some(Kind::Slice)) {
                    line(format!("0x{b:02x}"))
                } else {
                    line(b.to_string())
                }
            }
            Val::Str(s) => opts.format_string("", s),
            Val::Struct(fields) => {
                let mut list = Vec::new();
                let mut max_len = fields.len();
                if opts.limit_verbosity {
                    max_len = ((1usize << opts.verbosity()) >> 1) << 2;
                    opts.verbosity_level -= 1;
                }
                for (name, fty, fv) in fields {
                    if fv.is_zero() {
                        continue;
                    }
                    if list.len() == max_len {
                        append_ellipsis(&mut list, None);
                        break;
                    }
                    let s = opts
                        .with_type_mode(TypeMode::Auto)
                        .format_value(*fty, Some(fv), Some(Kind::Struct))
                        .unwrap_or_else(nil_text);
                    list.push(Record {
                        key: (*name).to_owned(),
                        ..Record::value(s)
                    });
                }
                wrap("{", Text::List(list), "}")
            }
            Val::Slice(None) | Val::Map(None) | Val::Ptr(None, _) => nil_text(),
            Val::Slice(Some(items)) => {
                if ty == Ty::SliceUint8 && !items.is_empty() {
                    let bytes: Vec<u8> = items
                        .iter()
                        .map(|b| if let Val::Byte(b) = b { *b } else { 0 })
                        .collect();
                    if let Ok(text) = std::str::from_utf8(&bytes)
                        && text.chars().all(|c| is_print(c) || is_space(c))
                    {
                        let out = opts.format_string("", text);
                        return Some(opts.format_type(ty, out));
                    }
                }
                let mut max_len = items.len();
                if opts.limit_verbosity {
                    max_len = ((1usize << opts.verbosity()) >> 1) << 2;
                    opts.verbosity_level -= 1;
                }
                let mut list = Vec::new();
                for item in items {
                    if list.len() == max_len {
                        append_ellipsis(&mut list, None);
                        break;
                    }
                    let s = opts
                        .with_type_mode(TypeMode::Elide)
                        .format_value(ty.elem(), Some(item), Some(Kind::Slice))
                        .unwrap_or_else(nil_text);
                    list.push(Record::value(s));
                }
                wrap("{", Text::List(list), "}")
            }
            Val::Map(Some(entries)) => {
                let mut max_len = entries.len();
                if opts.limit_verbosity {
                    max_len = ((1usize << opts.verbosity()) >> 1) << 2;
                    opts.verbosity_level -= 1;
                }
                let mut list = Vec::new();
                for (k, item) in entries {
                    if list.len() == max_len {
                        append_ellipsis(&mut list, None);
                        break;
                    }
                    let s = opts
                        .with_type_mode(TypeMode::Elide)
                        .format_value(ty.elem(), Some(item), Some(Kind::Map))
                        .unwrap_or_else(nil_text);
                    list.push(Record {
                        key: format_map_key(k),
                        ..Record::value(s)
                    });
                }
                wrap("{", Text::List(list), "}")
            }
            Val::Ptr(Some(inner), _) => {
                if !ty.is_named() {
                    skip_type = true;
                }
                let out = opts
                    .format_value(ty.elem(), Some(inner), Some(Kind::Ptr))
                    .unwrap_or_else(nil_text);
                wrap("&", out, "")
            }
        };
        if skip_type {
            Some(out)
        } else {
            Some(opts.format_type(ty, out))
        }
    }

    fn format_string(&self, prefix: &str, s: &str) -> Text {
        let mut max_len = s.len();
        let mut max_lines = s.matches('\n').count() + 1;
        if self.limit_verbosity {
            max_len = (1usize << self.verbosity()) << 5;
            max_lines = (1usize << self.verbosity()) << 2;
        }
        let trimmed = s.strip_suffix('\n').unwrap_or(s);
        let mut lines: Vec<&str> = trimmed.split('\n').collect();
        let mut triple =
            lines.len() >= 4 && (self.diff_mode == DIFF_REMOVED || self.diff_mode == DIFF_INSERTED);
        let mut i = 0;
        while i < lines.len() && triple {
            let l = lines[i];
            let l = l.strip_suffix('\r').unwrap_or(l);
            let l = l.strip_prefix('\r').unwrap_or(l);
            lines[i] = l;
            let printable = |c: char| is_print(c) || c == '\t';
            let without_prefix = l.strip_prefix(prefix).unwrap_or(l);
            triple = !without_prefix.starts_with("\"\"\"")
                && !l.starts_with("...")
                && l.trim_matches(printable).is_empty()
                && l.len() <= max_len;
            i += 1;
        }
        if triple {
            let mut list = vec![Record {
                diff: self.diff_mode,
                elide_comma: true,
                ..Record::value(line(format!("{prefix}\"\"\"")))
            }];
            for (i, l) in lines.iter().enumerate() {
                let elided = lines.len() - i;
                if i == max_lines.saturating_sub(1) && elided > 1 {
                    list.push(Record {
                        diff: self.diff_mode,
                        elide_comma: true,
                        comment: Some(Comment::Text(format!("{elided} elided lines"))),
                        ..Record::value(ellipsis())
                    });
                    break;
                }
                list.push(Record {
                    diff: self.diff_mode,
                    elide_comma: true,
                    ..Record::value(line(*l))
                });
            }
            list.push(Record {
                diff: self.diff_mode,
                elide_comma: true,
                ..Record::value(line(format!("{prefix}\"\"\"")))
            });
            return wrap("(", Text::List(list), ")");
        }
        if s.len() > max_len + 3 {
            return line(format!(
                "{prefix}{}...",
                format_go_string(&s.as_bytes()[..max_len])
            ));
        }
        line(format!("{prefix}{}", format_go_string(s.as_bytes())))
    }

    fn can_format_diff_slice(&self, v: &Node<'_, '_>) -> bool {
        if self.diff_mode != DIFF_UNKNOWN || v.num_diff == 0 {
            return false;
        }
        let (Some(x), Some(y)) = (v.x, v.y) else {
            return false;
        };
        match v.ty.kind() {
            Kind::String => {}
            Kind::Slice => {
                if !matches!(
                    v.ty.elem().kind(),
                    Kind::Int | Kind::Uint8 | Kind::Bool | Kind::Float
                ) {
                    return false;
                }
                if x.len() == 0 || y.len() == 0 || x.is_nil() || y.is_nil() {
                    return false;
                }
                if v.num_diff > v.num_same {
                    return true;
                }
            }
            _ => return false,
        }
        x.len() >= 32 && y.len() >= 32
    }

    fn format_diff_slice(&self, v: &Node<'_, '_>) -> Text {
        let (Some(x), Some(y)) = (v.x, v.y) else {
            return nil_text();
        };
        let (sx, sy): (Vec<u8>, Vec<u8>) = match (x, y) {
            (Val::Str(a), Val::Str(b)) => (a.as_bytes().to_vec(), b.as_bytes().to_vec()),
            (Val::Slice(Some(a)), Val::Slice(Some(b))) => (bytes_of(a), bytes_of(b)),
            _ => return nil_text(),
        };
        let is_string = true; // only strings and []byte reach here for these types
        let joined: String =
            String::from_utf8_lossy(&[sx.as_slice(), sy.as_slice()].concat()).into_owned();
        let (mut total, mut valid, mut lines, mut last_idx, mut max_line) = (0usize, 0, 0, 0, 0);
        for (i, c) in joined.char_indices() {
            total += 1;
            if (is_print(c) || is_space(c)) && c != '\u{fffd}' {
                valid += 1;
            }
            if c == '\n' {
                max_line = max_line.max(i - last_idx);
                last_idx = i + 1;
                lines += 1;
            }
        }
        let pure_text = valid == total;
        let mostly_text = (valid as f64) > (0.90 * total as f64).floor();
        let mut pure_lined = is_string && pure_text && lines >= 4 && max_line <= 1024;
        let sx_s = String::from_utf8_lossy(&sx).into_owned();
        let sy_s = String::from_utf8_lossy(&sy).into_owned();
        let ssx: Vec<&str> = sx_s.split('\n').collect();
        let ssy: Vec<&str> = sy_s.split('\n').collect();
        if pure_lined {
            let es_lines = difference(ssx.len(), ssy.len(), &mut |i, j| {
                DiffResult::from_bool(ssx[i] == ssy[j])
            });
            let es_bytes = difference(sx.len(), sy.len(), &mut |i, j| {
                DiffResult::from_bool(sx[i] == sy[j])
            });
            let dist = |es: &[Edit]| es.iter().filter(|e| **e != Edit::Identity).count();
            let eff_lines = dist(&es_lines) as f64 / es_lines.len() as f64;
            let eff_bytes = dist(&es_bytes) as f64 / es_bytes.len() as f64;
            let quoted = super::gofmt::quote(&format!("{sx_s}{sy_s}")).len();
            let ratio = quoted as f64 / (sx.len() + sy.len()) as f64;
            pure_lined = eff_lines < 4.0 * eff_bytes || ratio > 1.1;
        }
        let mut opts = *self;
        let mut lines_list = None;
        if pure_lined {
            let list = opts.format_diff_chunks(
                &ssx.iter()
                    .map(|s| s.as_bytes().to_vec())
                    .collect::<Vec<_>>(),
                &ssy.iter()
                    .map(|s| s.as_bytes().to_vec())
                    .collect::<Vec<_>>(),
                1,
                "line",
                &|items: &[Vec<u8>], d| Record {
                    diff: d,
                    ..Record::value(line(format_go_string(&items[0])))
                },
            );
            let mut triple = true;
            let mut prev_removed = std::collections::HashSet::new();
            let mut prev_inserted = std::collections::HashSet::new();
            let mut list2 = vec![Record {
                elide_comma: true,
                ..Record::value(line("\"\"\""))
            }];
            for mut r in list.clone() {
                if r.value != ellipsis() {
                    let Text::Line(quoted) = &r.value else {
                        continue;
                    };
                    let l = go_unquote(quoted);
                    let l = l.strip_suffix('\r').unwrap_or(&l).to_owned();
                    let l = l.strip_prefix('\r').unwrap_or(&l).to_owned();
                    let norm: String = l.chars().filter(|c| !is_space(*c)).collect();
                    let printable = |c: char| is_print(c) || c == '\t';
                    triple = !l.starts_with("\"\"\"")
                        && !l.starts_with("...")
                        && l.trim_matches(printable).is_empty();
                    match r.diff {
                        DIFF_REMOVED => {
                            triple = triple && !prev_inserted.contains(&norm);
                            prev_removed.insert(norm);
                        }
                        DIFF_INSERTED => {
                            triple = triple && !prev_removed.contains(&norm);
                            prev_inserted.insert(norm);
                        }
                        _ => {}
                    }
                    if !triple {
                        break;
                    }
                    r.value = line(l);
                    r.elide_comma = true;
                }
                if !(r.diff == DIFF_REMOVED || r.diff == DIFF_INSERTED) {
                    prev_removed.clear();
                    prev_inserted.clear();
                }
                list2.push(r);
            }
            if let Some(last) = list2.last()
                && last.diff == DIFF_IDENTICAL
                && last.value == line("")
            {
                list2.pop();
            }
            list2.push(Record {
                elide_comma: true,
                ..Record::value(line("\"\"\""))
            });
            if triple {
                let out = wrap("(", Text::List(list2), ")");
                return match v.ty.kind() {
                    Kind::Slice => opts.with_type_mode(TypeMode::Emit).format_type(v.ty, out),
                    _ => {
                        if v.ty != Ty::String {
                            opts.format_type(v.ty, out)
                        } else {
                            out
                        }
                    }
                };
            }
            // Not triple-quotable: go-cmp keeps the per-line records, joined with "\n".
            lines_list = Some(list);
        }
        let delim = if lines_list.is_some() { "\\n" } else { "" };
        let list = if let Some(list) = lines_list {
            list
        } else if mostly_text {
            opts.format_diff_chunks(
                &sx.iter().map(|b| vec![*b]).collect::<Vec<_>>(),
                &sy.iter().map(|b| vec![*b]).collect::<Vec<_>>(),
                64,
                "byte",
                &|items: &[Vec<u8>], d| {
                    let bytes: Vec<u8> = items.iter().flatten().copied().collect();
                    Record {
                        diff: d,
                        ..Record::value(line(format_go_string(&bytes)))
                    }
                },
            )
        } else {
            opts.format_diff_chunks(
                &sx.iter().map(|b| vec![*b]).collect::<Vec<_>>(),
                &sy.iter().map(|b| vec![*b]).collect::<Vec<_>>(),
                16,
                "byte",
                &|items: &[Vec<u8>], d| {
                    let bytes: Vec<u8> = items.iter().flatten().copied().collect();
                    let hex: Vec<String> = bytes.iter().map(|b| format!("0x{b:02x}")).collect();
                    let ascii: String = bytes
                        .iter()
                        .map(|b| {
                            if (b' '..=b'~').contains(b) {
                                *b as char
                            } else {
                                '.'
                            }
                        })
                        .collect();
                    Record {
                        diff: d,
                        comment: Some(Comment::Text(format!("{}|{ascii}|", d as char))),
                        ..Record::value(line(hex.join(", ")))
                    }
                },
            )
        };
        let out = wrap("{", Text::List(list), "}");
        if !mostly_text {
            if v.ty.kind() == Kind::String {
                opts = opts.with_type_mode(TypeMode::Emit);
            }
            return opts.format_type(v.ty, out);
        }
        match v.ty.kind() {
            Kind::String => {
                let out = wrap("strings.Join(", out, format!(", \"{delim}\")"));
                if v.ty != Ty::String {
                    opts.format_type(v.ty, out)
                } else {
                    out
                }
            }
            _ => {
                let out = wrap("bytes.Join(", out, format!(", \"{delim}\")"));
                if v.ty != Ty::SliceUint8 {
                    opts.format_type(v.ty, out)
                } else {
                    out
                }
            }
        }
    }

    /// go-cmp's `formatDiffSlice`: chunks of equal and differing runs of `x` and `y`.
    fn format_diff_chunks(
        &self,
        x: &[Vec<u8>],
        y: &[Vec<u8>],
        chunk: usize,
        name: &'static str,
        make: &dyn Fn(&[Vec<u8>], u8) -> Record,
    ) -> Vec<Record> {
        let eq = |ix: usize, iy: usize| x[ix] == y[iy];
        let es = difference(x.len(), y.len(), &mut |i, j| {
            DiffResult::from_bool(eq(i, j))
        });
        let mut list: Vec<Record> = Vec::new();
        let append_chunks = |list: &mut Vec<Record>, v: &[Vec<u8>], d: u8| -> usize {
            let mut rest = v;
            while !rest.is_empty() {
                let n = chunk.min(rest.len());
                list.push(make(&rest[..n], d));
                rest = &rest[n..];
            }
            v.len()
        };
        let mut num_diffs = 0usize;
        let mut max_len: i64 = -1;
        if self.limit_verbosity {
            max_len = (1i64 << self.verbosity()) << 2;
        }
        let groups = coalesce_adjacent_edits(name, &es);
        let groups = coalesce_intervening_identical(groups, chunk / 4);
        let groups = cleanup_surrounding_identical(groups, &eq);
        let mut max_group = DiffStats::named(name);
        let (mut vx, mut vy) = (x, y);
        let count = groups.len();
        for (i, mut ds) in groups.into_iter().enumerate() {
            if max_len >= 0 && num_diffs as i64 >= max_len {
                max_group = max_group.append(&ds);
                continue;
            }
            if ds.num_diff() == 0 {
                let num_equal = ds.ignored + ds.identical;
                let (mut lo, mut hi) = (0usize, 0usize);
                while lo < chunk * NUM_CONTEXT_RECORDS && lo + hi < num_equal && i != 0 {
                    lo += 1;
                }
                while hi < chunk * NUM_CONTEXT_RECORDS && lo + hi < num_equal && i != count - 1 {
                    hi += 1;
                }
                if num_equal - (lo + hi) <= chunk && ds.ignored == 0 {
                    hi = num_equal - lo;
                }
                append_chunks(&mut list, clamp(vx, 0, lo), DIFF_IDENTICAL);
                if num_equal > lo + hi {
                    ds.identical -= lo + hi;
                    append_ellipsis(&mut list, Some(ds.clone()));
                }
                append_chunks(
                    &mut list,
                    clamp(vx, num_equal - hi, num_equal),
                    DIFF_IDENTICAL,
                );
                vx = clamp(vx, num_equal, vx.len());
                vy = clamp(vy, num_equal, vy.len());
                continue;
            }
            let len0 = list.len();
            let nx = append_chunks(
                &mut list,
                clamp(vx, 0, ds.identical + ds.removed + ds.modified),
                DIFF_REMOVED,
            );
            vx = clamp(vx, nx, vx.len());
            let ny = append_chunks(
                &mut list,
                clamp(vy, 0, ds.identical + ds.inserted + ds.modified),
                DIFF_INSERTED,
            );
            vy = clamp(vy, ny, vy.len());
            num_diffs += list.len() - len0;
        }
        if !max_group.is_zero() {
            append_ellipsis(&mut list, Some(max_group));
        }
        list
    }
}

/// `&v[a..b]` clamped to the slice (go-cmp would panic on an inconsistent edit script; here the
/// report just shows less).
fn clamp<T>(v: &[T], a: usize, b: usize) -> &[T] {
    let b = b.min(v.len());
    &v[a.min(b)..b]
}

fn bytes_of(items: &[Val<'_>]) -> Vec<u8> {
    items
        .iter()
        .map(|b| if let Val::Byte(b) = b { *b } else { 0 })
        .collect()
}

fn wrap_parens(s: Text) -> Text {
    if let Text::Wrap(w) = &s {
        let parens = w.0.starts_with('(') && w.2.ends_with(')');
        let braces = w.0.starts_with('{') && w.2.ends_with('}');
        if parens || braces {
            return s;
        }
    }
    wrap("(", s, ")")
}

fn format_map_key(k: &str) -> String {
    // Map keys here are strings: go-cmp formats them at verbosity 6 (2048 bytes before cutting).
    let opts = Opts {
        diff_mode: DIFF_IDENTICAL,
        type_mode: TypeMode::Elide,
        avoid_stringer: false,
        verbosity_level: MAX_VERBOSITY_PRESET,
        limit_verbosity: true,
    };
    let t = opts.format_string("", k);
    let mut s = String::new();
    t.expand(&mut s, DIFF_IDENTICAL, 0);
    s.trim().to_owned()
}

/// go-cmp's `formatString`: a double-quoted string, or a backquoted one when that is shorter to
/// read (the text needs escaping but has no backquote, newline or unprintable character).
fn format_go_string(s: &[u8]) -> String {
    let qs = quote_bytes(s);
    if qs.len() == s.len() + 2 {
        return qs;
    }
    if let Ok(text) = std::str::from_utf8(s)
        && !text
            .chars()
            .any(|c| c == '`' || c == '\n' || !(is_print(c) || c == '\t'))
    {
        return format!("`{text}`");
    }
    qs
}

/// `strconv.Quote` of bytes that may not be valid UTF-8 (each invalid byte becomes `\xNN`).
fn quote_bytes(s: &[u8]) -> String {
    let mut out = String::from("\"");
    for chunk in s.utf8_chunks() {
        let q = super::gofmt::quote(chunk.valid());
        out.push_str(&q[1..q.len() - 1]);
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

/// The inverse of [`format_go_string`] for the lines go-cmp quoted itself.
fn go_unquote(s: &str) -> String {
    if let Some(inner) = s.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        return inner.to_owned();
    }
    let inner = s
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(s);
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some('x') => {
                let h: String = chars.by_ref().take(2).collect();
                if let Ok(v) = u32::from_str_radix(&h, 16) {
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
            }
            Some('u') => {
                let h: String = chars.by_ref().take(4).collect();
                if let Ok(v) = u32::from_str_radix(&h, 16) {
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
            }
            Some('U') => {
                let h: String = chars.by_ref().take(8).collect();
                if let Ok(v) = u32::from_str_radix(&h, 16) {
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

fn coalesce_adjacent_records(
    name: &'static str,
    recs: &[(Key<'_>, Node<'_, '_>)],
) -> Vec<DiffStats> {
    let mut groups: Vec<DiffStats> = Vec::new();
    let mut prev = 0;
    for (_, r) in recs {
        let case = if r.num_diff == 0 { 1 } else { 2 };
        if prev != case {
            groups.push(DiffStats::named(name));
            prev = case;
        }
        let Some(g) = groups.last_mut() else { continue };
        if r.num_diff == 0 {
            g.identical += 1;
        } else if r.y.is_none() {
            g.removed += 1;
        } else if r.x.is_none() {
            g.inserted += 1;
        } else {
            g.modified += 1;
        }
    }
    groups
}

fn coalesce_adjacent_edits(name: &'static str, es: &[Edit]) -> Vec<DiffStats> {
    let mut groups: Vec<DiffStats> = Vec::new();
    let mut prev = 0u8;
    for e in es {
        let mode = if *e == Edit::Identity { b'=' } else { b'!' };
        if prev != mode {
            groups.push(DiffStats::named(name));
            prev = mode;
        }
        let Some(g) = groups.last_mut() else { continue };
        match e {
            Edit::Identity => g.identical += 1,
            Edit::UniqueX => g.removed += 1,
            Edit::UniqueY => g.inserted += 1,
            Edit::Modified => g.modified += 1,
        }
    }
    groups
}

fn coalesce_intervening_identical(orig: Vec<DiffStats>, window: usize) -> Vec<DiffStats> {
    let mut groups: Vec<DiffStats> = Vec::new();
    for ds in orig {
        if groups.len() >= 2 && ds.num_diff() > 0 {
            let n = groups.len();
            let prev = &groups[n - 2];
            let curr = &groups[n - 1];
            let (had_x, had_y) = (prev.removed > 0, prev.inserted > 0);
            let (has_x, has_y) = (ds.removed > 0, ds.inserted > 0);
            if (had_x || has_x) && (had_y || has_y) && curr.identical <= window {
                let merged = prev.append(curr).append(&ds);
                groups.truncate(n - 1);
                groups[n - 2] = merged;
                continue;
            }
        }
        groups.push(ds);
    }
    groups
}

fn cleanup_surrounding_identical(
    mut groups: Vec<DiffStats>,
    eq: &dyn Fn(usize, usize) -> bool,
) -> Vec<DiffStats> {
    let (mut ix, mut iy) = (0usize, 0usize);
    let count = groups.len();
    for i in 0..count {
        let ds = groups[i].clone();
        if ds.num_diff() == 0 {
            ix += ds.identical;
            iy += ds.identical;
            continue;
        }
        let mut nx = ds.identical + ds.removed + ds.modified;
        let mut ny = ds.identical + ds.inserted + ds.modified;
        let mut lead = 0;
        let mut j = 0;
        while j < nx && j < ny && eq(ix + j, iy + j) {
            lead += 1;
            j += 1;
        }
        let mut trail = 0;
        let mut j = 0;
        while j < nx && j < ny && eq(ix + nx - 1 - j, iy + ny - 1 - j) {
            trail += 1;
            j += 1;
        }
        let num_identical = lead + trail;
        if num_identical > 0 {
            // At either end go-cmp adds the identical run in a deferred call that cannot reach
            // its (already evaluated) return value, so there the run is simply dropped.
            if lead > 0 {
                if i >= 1 {
                    groups[i - 1].identical += lead;
                }
                ix += lead;
                iy += lead;
            }
            if trail > 0 && i + 1 < count {
                groups[i + 1].identical += trail;
            }
            nx -= num_identical;
            ny -= num_identical;
            groups[i] = DiffStats {
                removed: nx,
                inserted: ny,
                ..DiffStats::named(ds.name)
            };
        }
        ix += nx;
        iy += ny;
    }
    groups
}

/// `cmp.Diff(old, new)` for two `*JSONSchemaProps` (empty when they are equal for go-cmp).
pub fn diff(old: &Schema, new: &Schema) -> String {
    let x = schema_ptr(Some(old));
    let y = schema_ptr(Some(new));
    let root = compare(Ty::PtrSchema, Some(&x), Some(&y));
    if root.num_diff == 0 {
        return String::new();
    }
    let opts = Opts {
        diff_mode: DIFF_UNKNOWN,
        type_mode: TypeMode::Emit,
        avoid_stringer: false,
        verbosity_level: 0,
        limit_verbosity: false,
    };
    opts.format_diff(&root).render()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_changed_scalar_field_prints_as_removed_and_inserted_lines() {
        let old = Schema {
            type_: "integer".into(),
            format: "int32".into(),
            ..Default::default()
        };
        let new = Schema {
            type_: "integer".into(),
            ..Default::default()
        };
        // go-cmp's report: two context records around the change, aligned values, the rest elided.
        let want = "  &v1.JSONSchemaProps{\n  \t... // 3 identical fields\n  \tDescription: \"\",\n  \tType:        \"integer\",\n- \tFormat:      \"int32\",\n+ \tFormat:      \"\",\n  \tTitle:       \"\",\n  \tDefault:     nil,\n  \t... // 36 identical fields\n  }\n";
        assert_eq!(diff(&old, &new), want);
    }

    #[test]
    fn equal_schemas_have_no_diff() {
        let s = Schema {
            type_: "string".into(),
            ..Default::default()
        };
        assert_eq!(diff(&s, &s.clone()), "");
    }

    #[test]
    fn edit_script_of_identical_sequences_is_all_identity() {
        let es = difference(3, 3, &mut |i, j| DiffResult::from_bool(i == j));
        assert_eq!(es, vec![Edit::Identity; 3]);
        let es = difference(2, 3, &mut |i, j| DiffResult::from_bool(i == j));
        assert_eq!(es, vec![Edit::Identity, Edit::Identity, Edit::UniqueY]);
    }
}
