//! crdify's checks as upstream configures them: the CRD-wide rules, the per-property
//! comparators, the `unhandled` catch-all, and the three passes.
//!
//! Input: two [`Crd`]s. Output: [`RawIssue`]s carrying upstream's exact texts (the `unhandled`
//! text still raw, as crdify's served-version ratcheting compares it). No IO.
//!
//! Upstream's configuration (install-path.md §2): conversion policy `Ignore`, unhandled
//! enforcement `Error`, `description` enforcement `None` (it still clears descriptions), `enum`
//! with `additionPolicy: Allow`, every other rule at its default (`Disallow`).
//!
//! Where upstream is random (Go map order over comparators, properties and set members) this
//! module is deterministic: properties are visited in sorted order, set members (removed fields,
//! new required fields) are sorted. Comparators touch disjoint fields, so their order cannot
//! change a result.

use std::collections::{BTreeMap, BTreeSet};

use super::gocmp;
use super::gofmt::{format_float_v, format_strings_v, quote};
use super::model::{Crd, CrdVersion, Schema};

/// Which pass produced an issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Group {
    /// Old CRD against new CRD as a whole (`scope`, `storedVersionRemoval`, `existingFieldRemoval`).
    CrdWide,
    /// Version `X` of the old CRD against version `X` of the new one.
    SameVersion,
    /// Two served versions inside the new CRD (`v1 -> v2`), minus issues the old CRD already had.
    ServedVersion,
}

/// One error of one comparator, as crdify reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawIssue {
    pub group: Group,
    /// `v1` (same version) or `v1 -> v2` (served versions); empty for CRD-wide issues.
    pub version: String,
    /// Flattened property path (`^.spec.foo`); empty for CRD-wide issues.
    pub path: String,
    /// Comparator name (`enum`, `unhandled`, `scope`, …).
    pub rule: String,
    /// The comparator's error text (for `unhandled`: the sentinel plus the whole go-cmp report).
    pub message: String,
    /// For `existingFieldRemoval`: the removed path (without the version prefix).
    pub removed_path: String,
}

// ---------------------------------------------------------------------------------------------
// Flattening (crdify's SchemaHas walk with simple locations)

/// Every schema node of a version by its simple location (`^`, `^.spec`, `^.spec.items`,
/// `^.spec.allOf[0]`, `^.spec.patternProperties[k]`, …). Later visits win on a collision, as the
/// last write of Go's map would.
pub fn flatten(schema: Option<&Schema>) -> BTreeMap<String, &Schema> {
    let mut out = BTreeMap::new();
    if let Some(s) = schema {
        walk(s, "^".to_owned(), &mut out);
    }
    out
}

/// `field.Path.Child(name)`: an empty name prints as `[]`.
fn child(path: &str, name: &str) -> String {
    if name.is_empty() {
        format!("{path}[]")
    } else {
        format!("{path}.{name}")
    }
}

fn walk<'a>(s: &'a Schema, path: String, out: &mut BTreeMap<String, &'a Schema>) {
    out.insert(path.clone(), s);
    if let Some(items) = &s.items {
        if let Some(i) = &items.schema {
            walk(i, child(&path, "items"), out);
        }
        for (n, i) in items.schemas.iter().flatten().enumerate() {
            walk(i, format!("{}[{n}]", child(&path, "items")), out);
        }
    }
    for (name, list) in [
        ("allOf", &s.all_of),
        ("anyOf", &s.any_of),
        ("oneOf", &s.one_of),
    ] {
        for (n, i) in list.iter().flatten().enumerate() {
            walk(i, format!("{path}.{name}[{n}]"), out);
        }
    }
    if let Some(not) = &s.not {
        walk(not, child(&path, "not"), out);
    }
    for (name, p) in s.properties.iter().flatten() {
        walk(p, child(&path, name), out);
    }
    if let Some(ap) = s
        .additional_properties
        .as_ref()
        .and_then(|a| a.schema.as_ref())
    {
        walk(ap, child(&path, "additionalProperties"), out);
    }
    for (k, p) in s.pattern_properties.iter().flatten() {
        walk(p, format!("{path}.patternProperties[{k}]"), out);
    }
    if let Some(ai) = s.additional_items.as_ref().and_then(|a| a.schema.as_ref()) {
        walk(ai, child(&path, "additionalItems"), out);
    }
    for (k, p) in s.definitions.iter().flatten() {
        walk(p, format!("{path}.definitions[{k}]"), out);
    }
    for (k, d) in s.dependencies.iter().flatten() {
        if let Some(p) = &d.schema {
            walk(p, format!("{path}.dependencies[{k}]"), out);
        }
    }
}

/// A copy without `properties` and `items`: a parent is compared without its children, which
/// are compared at their own paths.
pub fn drop_children(s: &Schema) -> Schema {
    let mut c = s.clone();
    c.properties = None;
    c.items = None;
    c
}

/// `equality.Semantic.DeepEqual`: like `==`, but a nil and an empty slice or map are equal.
pub fn semantic_eq(a: &Schema, b: &Schema) -> bool {
    normalised(a) == normalised(b)
}

fn normalised(s: &Schema) -> Schema {
    let mut c = s.clone();
    normalise_in_place(&mut c);
    c
}

fn normalise_in_place(s: &mut Schema) {
    fn empty_vec<T>(v: &mut Option<Vec<T>>) {
        if v.as_ref().is_some_and(Vec::is_empty) {
            *v = None;
        }
    }
    fn empty_map<K, V>(v: &mut Option<BTreeMap<K, V>>) {
        if v.as_ref().is_some_and(BTreeMap::is_empty) {
            *v = None;
        }
    }
    empty_vec(&mut s.enum_);
    empty_vec(&mut s.required);
    empty_vec(&mut s.all_of);
    empty_vec(&mut s.one_of);
    empty_vec(&mut s.any_of);
    empty_vec(&mut s.x_list_map_keys);
    empty_vec(&mut s.x_validations);
    empty_map(&mut s.properties);
    empty_map(&mut s.pattern_properties);
    empty_map(&mut s.definitions);
    empty_map(&mut s.dependencies);
    if let Some(items) = &mut s.items {
        empty_vec(&mut items.schemas);
    }
    for d in s.dependencies.iter_mut().flatten().map(|(_, d)| d) {
        empty_vec(&mut d.property);
    }
    s.for_each_child_mut(&mut normalise_in_place);
}

/// Properties of one version pair whose (childless) schemas differ: path → (old, new). A path
/// missing from the new version compares against an empty schema.
pub fn version_diff(old: &CrdVersion, new: &CrdVersion) -> Vec<(String, Schema, Schema)> {
    let old_flat = flatten(old.schema.as_ref());
    let new_flat = flatten(new.schema.as_ref());
    let mut out = Vec::new();
    for (path, old_schema) in &old_flat {
        let old_copy = drop_children(old_schema);
        match new_flat.get(path) {
            None => out.push((path.clone(), old_copy, Schema::default())),
            Some(new_schema) => {
                let new_copy = drop_children(new_schema);
                if !semantic_eq(&old_copy, &new_copy) {
                    out.push((path.clone(), old_copy, new_copy));
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Property comparators. Each consumes (clears) its fields on both copies and returns at most one
// error text, exactly as crdify words it.

type Comparator = fn(&mut Schema, &mut Schema) -> Option<String>;

/// The comparators upstream runs (crdify's default registry minus `description`, whose
/// enforcement is None but which still clears the field).
pub const COMPARATORS: &[(&str, Comparator)] = &[
    ("default", cmp_default),
    ("description", cmp_description),
    ("enum", cmp_enum),
    ("maxItems", cmp_max_items),
    ("maxLength", cmp_max_length),
    ("maxProperties", cmp_max_properties),
    ("maximum", cmp_maximum),
    ("minItems", cmp_min_items),
    ("minLength", cmp_min_length),
    ("minProperties", cmp_min_properties),
    ("minimum", cmp_minimum),
    ("nullable", cmp_nullable),
    ("oneOf", cmp_one_of),
    ("pattern", cmp_pattern),
    ("required", cmp_required),
    ("type", cmp_type),
];

fn cmp_default(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let out = match (&a.default, &b.default) {
        (None, Some(n)) => Some(format!(
            "default added when there was none previously : {}",
            quote(&n.text())
        )),
        (Some(o), None) => Some(format!("default value removed : {}", quote(&o.text()))),
        (Some(o), Some(n)) if o.raw != n.raw => Some(format!(
            "default value changed : {} -> {}",
            quote(&o.text()),
            quote(&n.text())
        )),
        _ => None,
    };
    a.default = None;
    b.default = None;
    out
}

fn cmp_description(a: &mut Schema, b: &mut Schema) -> Option<String> {
    // Enforcement None: the difference is never reported.
    a.description.clear();
    b.description.clear();
    None
}

fn cmp_enum(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let old: BTreeSet<String> = a.enum_.iter().flatten().map(|j| j.text()).collect();
    let new: BTreeSet<String> = b.enum_.iter().flatten().map(|j| j.text()).collect();
    let out = if old.is_empty() && !new.is_empty() {
        let list: Vec<&String> = new.iter().collect();
        Some(format!(
            "enum constraint added when there was none previously : {}",
            format_strings_v(&list)
        ))
    } else {
        let removed: Vec<&String> = old.difference(&new).collect();
        // Additions are allowed by upstream's configuration (additionPolicy: Allow).
        (!removed.is_empty()).then(|| {
            format!(
                "allowed enum values removed : {}",
                format_strings_v(&removed)
            )
        })
    };
    a.enum_ = None;
    b.enum_ = None;
    out
}

fn max_verification<T: PartialOrd + Copy>(
    old: Option<T>,
    new: Option<T>,
    show: impl Fn(T) -> String,
) -> Option<String> {
    match (old, new) {
        (None, Some(n)) => Some(format!(
            "maximum constraint added when there was none previously : {}",
            show(n)
        )),
        (Some(o), Some(n)) if n < o => {
            Some(format!("maximum decreased : {} -> {}", show(o), show(n)))
        }
        _ => None,
    }
}

fn min_verification<T: PartialOrd + Copy>(
    old: Option<T>,
    new: Option<T>,
    show: impl Fn(T) -> String,
) -> Option<String> {
    match (old, new) {
        (None, Some(n)) => Some(format!(
            "minimum constraint added when there was none previously : {}",
            show(n)
        )),
        (Some(o), Some(n)) if n > o => {
            Some(format!("minimum increased : {} -> {}", show(o), show(n)))
        }
        _ => None,
    }
}

macro_rules! int_bound {
    ($name:ident, $field:ident, $verify:ident) => {
        fn $name(a: &mut Schema, b: &mut Schema) -> Option<String> {
            let out = $verify(a.$field, b.$field, |v: i64| v.to_string());
            a.$field = None;
            b.$field = None;
            out
        }
    };
}

int_bound!(cmp_max_items, max_items, max_verification);
int_bound!(cmp_max_length, max_length, max_verification);
int_bound!(cmp_max_properties, max_properties, max_verification);
int_bound!(cmp_min_items, min_items, min_verification);
int_bound!(cmp_min_length, min_length, min_verification);
int_bound!(cmp_min_properties, min_properties, min_verification);

fn cmp_maximum(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let out = max_verification(a.maximum, b.maximum, format_float_v);
    a.maximum = None;
    b.maximum = None;
    out
}

fn cmp_minimum(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let out = min_verification(a.minimum, b.minimum, format_float_v);
    a.minimum = None;
    b.minimum = None;
    out
}

fn cmp_nullable(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let out = match (a.nullable, b.nullable) {
        (false, true) => Some("nullable added : false -> true".to_owned()),
        (true, false) => Some("nullable removed : true -> false".to_owned()),
        _ => None,
    };
    a.nullable = false;
    b.nullable = false;
    out
}

/// The pinned crdify's `oneOf` rule: variants compared as a set of their descriptions-free
/// `String()` forms, listed sorted; addition and removal both disallowed.
fn cmp_one_of(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let set = |s: &Schema| -> BTreeSet<String> {
        s.one_of
            .iter()
            .flatten()
            .map(|v| v.without_descriptions().gogo_string())
            .collect()
    };
    let old = set(a);
    let new = set(b);
    let list = |items: Vec<&String>| -> String {
        let joined: Vec<&str> = items.iter().map(|s| s.as_str()).collect();
        format!("[{}]", joined.join(" "))
    };
    let out = if old.is_empty() && !new.is_empty() {
        Some(format!(
            "oneOf constraint added when there was none previously: {}",
            list(new.iter().collect())
        ))
    } else {
        let removed: Vec<&String> = old.difference(&new).collect();
        let added: Vec<&String> = new.difference(&old).collect();
        if !removed.is_empty() {
            Some(format!("allowed oneOf schemas removed: {}", list(removed)))
        } else if !added.is_empty() {
            Some(format!("allowed oneOf schemas added: {}", list(added)))
        } else {
            None
        }
    };
    a.one_of = None;
    b.one_of = None;
    out
}

fn cmp_pattern(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let (o, n) = (&a.pattern, &b.pattern);
    let out = if o == n {
        None
    } else if o.is_empty() {
        Some(format!("pattern added : {} -> {}", quote(o), quote(n)))
    } else if n.is_empty() {
        Some(format!("pattern removed : {} -> {}", quote(o), quote(n)))
    } else {
        Some(format!("pattern changed : {} -> {}", quote(o), quote(n)))
    };
    a.pattern.clear();
    b.pattern.clear();
    out
}

fn cmp_required(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let old: BTreeSet<&String> = a.required.iter().flatten().collect();
    let new: BTreeSet<&String> = b.required.iter().flatten().collect();
    let added: Vec<&&String> = new.difference(&old).collect();
    let out = (!added.is_empty()).then(|| {
        format!(
            "new required fields: {}",
            format_strings_v(&added.iter().map(|s| s.as_str()).collect::<Vec<_>>())
        )
    });
    a.required = None;
    b.required = None;
    out
}

fn cmp_type(a: &mut Schema, b: &mut Schema) -> Option<String> {
    let out = (a.type_ != b.type_)
        .then(|| format!("type changed : {} -> {}", quote(&a.type_), quote(&b.type_)));
    a.type_.clear();
    b.type_.clear();
    out
}

/// Runs every comparator on copies of one property pair, then the unhandled check on what they
/// left. Returns `(rule, error)` pairs and the consumed copies (for the false-positive analysis).
pub fn compare_property(
    old: &Schema,
    new: &Schema,
) -> (Vec<(&'static str, String)>, Schema, Schema) {
    let mut a = old.clone();
    let mut b = new.clone();
    let mut out = Vec::new();
    for (name, cmp) in COMPARATORS {
        if let Some(e) = cmp(&mut a, &mut b) {
            out.push((*name, e));
        }
    }
    if !semantic_eq(&a, &b) {
        out.push((
            "unhandled",
            format!(
                "{} :\n{}",
                super::unhandled::UNHANDLED_PREFIX,
                gocmp::diff(&a, &b)
            ),
        ));
    }
    (out, a, b)
}

// ---------------------------------------------------------------------------------------------
// CRD-wide rules

fn scope_issue(old: &Crd, new: &Crd) -> Option<String> {
    (old.scope != new.scope).then(|| {
        format!(
            "scope changed : {} -> {}",
            quote(&old.scope),
            quote(&new.scope)
        )
    })
}

fn stored_version_removal(old: &Crd, new: &Crd) -> Option<String> {
    let names: BTreeSet<&str> = new.versions.iter().map(|v| v.name.as_str()).collect();
    let removed: Vec<&str> = old
        .stored_versions
        .iter()
        .map(String::as_str)
        .filter(|v| !names.contains(v))
        .collect();
    (!removed.is_empty())
        .then(|| format!("stored versions removed : {}", format_strings_v(&removed)))
}

/// Removed paths per version (for every version of the new CRD that the old one has).
fn existing_field_removals(old: &Crd, new: &Crd) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for nv in &new.versions {
        let Some(ov) = old.version(&nv.name) else {
            continue;
        };
        let old_paths = flatten(ov.schema.as_ref());
        let new_paths = flatten(nv.schema.as_ref());
        for path in old_paths.keys() {
            if !new_paths.contains_key(path) {
                out.push((nv.name.clone(), path.clone()));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Passes

/// Orders version names as apimachinery's `CompareKubeAwareVersionStrings` does (ascending:
/// alpha before beta before GA, then by numbers; names that are not kube-like come first, in
/// reverse lexical order).
pub fn compare_kube_versions(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((am, at, an)), Some((bm, bt, bn))) => at.cmp(&bt).then(am.cmp(&bm)).then(an.cmp(&bn)),
    }
}

/// `v<major>[(alpha|beta)<minor>]` → (major, type (0 alpha, 1 beta, 2 GA), minor).
fn parse_kube_version(v: &str) -> Option<(i64, u8, i64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let major: i64 = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((major, 2, 0));
    }
    let (kind, num) = if let Some(n) = tail.strip_prefix("alpha") {
        (0, n)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (1, n)
    } else {
        return None;
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((major, kind, num.parse().ok()?))
}

/// Issues of every pair of served versions of one CRD: (pair label, path, rule, text).
fn served_pairs(crd: &Crd) -> Vec<(String, String, &'static str, String)> {
    let mut served: Vec<&CrdVersion> = crd.versions.iter().filter(|v| v.served).collect();
    if served.len() < 2 {
        return Vec::new();
    }
    served.sort_by(|a, b| compare_kube_versions(&a.name, &b.name));
    let mut out = Vec::new();
    for (i, a) in served.iter().enumerate() {
        for b in &served[i + 1..] {
            let label = format!("{} -> {}", a.name, b.name);
            for (path, old, new) in version_diff(a, b) {
                let (issues, _, _) = compare_property(&old, &new);
                for (rule, text) in issues {
                    out.push((label.clone(), path.clone(), rule, text));
                }
            }
        }
    }
    out
}

/// The consumed schema pair behind a property issue, for the false-positive analysis.
#[derive(Clone, Debug)]
pub struct PropertyContext {
    /// The property's schema in the old version (children dropped), before any comparator ran.
    pub old: Schema,
    /// The same in the new version (an empty schema when the path was removed).
    pub new: Schema,
    /// Whether the path no longer exists in the new version.
    pub removed: bool,
}

/// Property contexts keyed by (group, version label, path).
pub type Contexts = BTreeMap<(Group, String, String), PropertyContext>;

/// Every issue upstream would report for `old` → `new`, with the schema pair behind each
/// property issue (keyed by group, version label and path).
pub fn run(old: &Crd, new: &Crd) -> (Vec<RawIssue>, Contexts) {
    let mut issues = Vec::new();
    let mut contexts = BTreeMap::new();

    if let Some(e) = scope_issue(old, new) {
        issues.push(crd_wide("scope", e, String::new()));
    }
    if let Some(e) = stored_version_removal(old, new) {
        issues.push(crd_wide("storedVersionRemoval", e, String::new()));
    }
    for (version, path) in existing_field_removals(old, new) {
        issues.push(crd_wide(
            "existingFieldRemoval",
            format!("removed field : {version}.{path}"),
            path,
        ));
    }

    for ov in &old.versions {
        let Some(nv) = new.version(&ov.name) else {
            continue;
        };
        let new_paths = flatten(nv.schema.as_ref());
        for (path, a, b) in version_diff(ov, nv) {
            let (found, _, _) = compare_property(&a, &b);
            for (rule, text) in found {
                issues.push(RawIssue {
                    group: Group::SameVersion,
                    version: ov.name.clone(),
                    path: path.clone(),
                    rule: rule.to_owned(),
                    message: text,
                    removed_path: String::new(),
                });
            }
            let removed = !new_paths.contains_key(&path);
            contexts.insert(
                (Group::SameVersion, ov.name.clone(), path),
                PropertyContext {
                    old: a,
                    new: b,
                    removed,
                },
            );
        }
    }

    // Served versions are skipped when the new CRD converts by webhook (conversion policy Ignore).
    if new.conversion_strategy != "Webhook" {
        let known = served_pairs(old);
        for (label, path, rule, text) in served_pairs(new) {
            let already = known
                .iter()
                .any(|(l, p, r, t)| *l == label && *p == path && *r == rule && *t == text);
            if already {
                continue;
            }
            issues.push(RawIssue {
                group: Group::ServedVersion,
                version: label,
                path,
                rule: rule.to_owned(),
                message: text,
                removed_path: String::new(),
            });
        }
        // Contexts for served issues: the pair inside the new CRD.
        let mut served: Vec<&CrdVersion> = new.versions.iter().filter(|v| v.served).collect();
        served.sort_by(|a, b| compare_kube_versions(&a.name, &b.name));
        for (i, a) in served.iter().enumerate() {
            for b in &served[i + 1..] {
                let label = format!("{} -> {}", a.name, b.name);
                let b_paths = flatten(b.schema.as_ref());
                for (path, x, y) in version_diff(a, b) {
                    let removed = !b_paths.contains_key(&path);
                    contexts.insert(
                        (Group::ServedVersion, label.clone(), path),
                        PropertyContext {
                            old: x,
                            new: y,
                            removed,
                        },
                    );
                }
            }
        }
    }
    (issues, contexts)
}

fn crd_wide(rule: &str, message: String, removed_path: String) -> RawIssue {
    RawIssue {
        group: Group::CrdWide,
        version: String::new(),
        path: String::new(),
        rule: rule.to_owned(),
        message,
        removed_path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn kube_versions_sort_alpha_beta_ga() {
        let mut v = vec![
            "v1", "v1alpha1", "v2beta1", "v1beta2", "foo", "v1beta1", "bar",
        ];
        v.sort_by(|a, b| compare_kube_versions(a, b));
        assert_eq!(
            v,
            vec![
                "foo", "bar", "v1alpha1", "v1beta1", "v1beta2", "v2beta1", "v1"
            ]
        );
        assert_eq!(compare_kube_versions("v10", "v2"), Ordering::Greater);
    }

    #[test]
    fn property_names_build_simple_locations() {
        assert_eq!(child("^.spec", "a"), "^.spec.a");
        assert_eq!(child("^.spec", ""), "^.spec[]");
    }
}
