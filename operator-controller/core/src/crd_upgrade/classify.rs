//! Which of upstream's refusals cannot invalidate a stored object: the false positives this
//! check allows by default (the decision table is on [`super`]).
//!
//! Input: one upstream issue and the schema pair behind it. Output: `Some(SafeChange)` when the
//! change is proven safe, `None` when it stays a refusal. No IO.

use std::collections::BTreeMap;

use super::model::{Schema, ValidationRule};
use super::rules::{PropertyContext, RawIssue, compare_property};

/// Why an issue upstream reports is allowed here.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SafeChange {
    /// `nullable: true` added: every stored value stays valid, `null` becomes valid too.
    NullableAdded,
    /// The `pattern` constraint was dropped.
    PatternRemoved,
    /// The `enum` constraint was dropped entirely (no value list any more).
    EnumConstraintRemoved,
    /// A `default` was added, changed or removed (see the decision table for why).
    DefaultChanged,
    /// `integer` → `number`, or `string`/`integer` → int-or-string.
    TypeWidened,
    /// The whole `oneOf` constraint was dropped.
    OneOfRemoved,
    /// A path inside `allOf`/`anyOf`/`oneOf`/`not` went away: no data field lives there; the
    /// composition change itself is judged at its parent.
    CompositionBranch,
    /// Only loosening or descriptive changes among the fields upstream calls unhandled; the
    /// strings name them (`format removed`, `example changed`, …).
    Loosening(Vec<String>),
}

impl SafeChange {
    /// The class name (the variant), as `docs/CRD_UPGRADE_SAFETY.md` lists it.
    pub fn class(&self) -> &'static str {
        match self {
            SafeChange::NullableAdded => "NullableAdded",
            SafeChange::PatternRemoved => "PatternRemoved",
            SafeChange::EnumConstraintRemoved => "EnumConstraintRemoved",
            SafeChange::DefaultChanged => "DefaultChanged",
            SafeChange::TypeWidened => "TypeWidened",
            SafeChange::OneOfRemoved => "OneOfRemoved",
            SafeChange::CompositionBranch => "CompositionBranch",
            SafeChange::Loosening(_) => "Loosening",
        }
    }

    /// One line for messages and the CLI.
    pub fn reason(&self) -> String {
        match self {
            SafeChange::NullableAdded => {
                "nullable added: null becomes valid, stored values stay valid".into()
            }
            SafeChange::PatternRemoved => "pattern removed: a constraint is dropped".into(),
            SafeChange::EnumConstraintRemoved => {
                "enum removed entirely: a constraint is dropped".into()
            }
            SafeChange::DefaultChanged => {
                "default changed: defaults never make a stored object invalid".into()
            }
            SafeChange::TypeWidened => {
                "type widened: every stored value of the old type is valid under the new one".into()
            }
            SafeChange::OneOfRemoved => "oneOf removed entirely: a constraint is dropped".into(),
            SafeChange::CompositionBranch => {
                "allOf/anyOf/oneOf/not branch: not a data field; judged at its parent".into()
            }
            SafeChange::Loosening(parts) => {
                format!("loosening or descriptive only: {}", parts.join(", "))
            }
        }
    }
}

/// Whether a flattened path lies inside an `allOf`/`anyOf`/`oneOf` branch or a `not`.
pub fn is_composition_path(path: &str) -> bool {
    path.contains(".allOf[")
        || path.contains(".anyOf[")
        || path.contains(".oneOf[")
        || path.ends_with(".not")
        || path.contains(".not.")
        || path.contains(".not[")
}

/// Classifies one issue. `ctx` is the schema pair of its property (absent for CRD-wide issues).
pub fn classify(issue: &RawIssue, ctx: Option<&PropertyContext>) -> Option<SafeChange> {
    if issue.rule == "existingFieldRemoval" {
        return is_composition_path(&issue.removed_path).then_some(SafeChange::CompositionBranch);
    }
    let ctx = ctx?;
    if ctx.removed {
        // Everything reported at a path that disappeared belongs to that removal.
        return is_composition_path(&issue.path).then_some(SafeChange::CompositionBranch);
    }
    let (old, new) = (&ctx.old, &ctx.new);
    match issue.rule.as_str() {
        "nullable" => (!old.nullable && new.nullable).then_some(SafeChange::NullableAdded),
        "pattern" => (!old.pattern.is_empty() && new.pattern.is_empty())
            .then_some(SafeChange::PatternRemoved),
        "enum" => (old.enum_.as_ref().is_some_and(|e| !e.is_empty())
            && new.enum_.as_ref().is_none_or(Vec::is_empty))
        .then_some(SafeChange::EnumConstraintRemoved),
        "default" => Some(SafeChange::DefaultChanged),
        "type" => type_widened(old, new).then_some(SafeChange::TypeWidened),
        "oneOf" => (old.one_of.as_ref().is_some_and(|o| !o.is_empty())
            && new.one_of.as_ref().is_none_or(Vec::is_empty))
        .then_some(SafeChange::OneOfRemoved),
        "unhandled" => unhandled(old, new),
        _ => None,
    }
}

fn type_widened(old: &Schema, new: &Schema) -> bool {
    match (old.type_.as_str(), new.type_.as_str()) {
        ("integer", "number") => true,
        ("string" | "integer", "") => new.x_int_or_string && !old.x_int_or_string,
        _ => false,
    }
}

/// The field-level verdict for what upstream's comparators left unconsumed.
fn unhandled(old: &Schema, new: &Schema) -> Option<SafeChange> {
    let (_, a, b) = compare_property(old, new);
    let mut parts: Vec<String> = Vec::new();
    macro_rules! changed {
        ($f:ident) => {
            a.$f != b.$f
        };
    }
    // Fields no structural schema allows, or that change meaning: never proven safe.
    if changed!(id)
        || changed!(schema)
        || changed!(reference)
        || changed!(x_embedded_resource)
        || changed!(pattern_properties)
        || changed!(dependencies)
        || changed!(additional_items)
        || changed!(definitions)
    {
        return None;
    }
    if changed!(format) {
        if !b.format.is_empty() {
            return None;
        }
        parts.push("format removed".into());
    }
    if changed!(title) {
        parts.push("title changed".into());
    }
    if changed!(example) {
        parts.push("example changed".into());
    }
    if changed!(external_docs) {
        parts.push("externalDocs changed".into());
    }
    for (name, x, y) in [
        ("exclusiveMaximum", a.exclusive_maximum, b.exclusive_maximum),
        ("exclusiveMinimum", a.exclusive_minimum, b.exclusive_minimum),
        ("uniqueItems", a.unique_items, b.unique_items),
    ] {
        if x != y {
            if y {
                return None;
            }
            parts.push(format!("{name} removed"));
        }
    }
    if changed!(multiple_of) {
        if b.multiple_of.is_some() {
            return None;
        }
        parts.push("multipleOf removed".into());
    }
    if a.x_int_or_string != b.x_int_or_string {
        if !b.x_int_or_string {
            return None;
        }
        parts.push("x-kubernetes-int-or-string added".into());
    }
    let preserve = |s: &Schema| s.x_preserve_unknown_fields == Some(true);
    if changed!(x_preserve_unknown_fields) {
        if preserve(&a) && !preserve(&b) {
            return None;
        }
        parts.push(if preserve(&b) {
            "x-kubernetes-preserve-unknown-fields added".into()
        } else {
            "x-kubernetes-preserve-unknown-fields false made explicit".into()
        });
    }
    if changed!(x_map_type) {
        parts.push("x-kubernetes-map-type changed".into());
    }
    if changed!(x_list_type) || changed!(x_list_map_keys) {
        parts.push(list_type_change(&a, &b)?);
    }
    if changed!(x_validations) {
        parts.push(validations_change(
            a.x_validations.as_deref().unwrap_or(&[]),
            b.x_validations.as_deref().unwrap_or(&[]),
        )?);
    }
    if changed!(all_of) {
        let (x, y) = (len(&a.all_of), len(&b.all_of));
        if y > x {
            return None;
        }
        parts.push(if y < x {
            "allOf entries removed".into()
        } else {
            "allOf entries changed (judged at their own paths)".into()
        });
    }
    if changed!(any_of) {
        let (x, y) = (len(&a.any_of), len(&b.any_of));
        if y > 0 && (x == 0 || y < x) {
            return None;
        }
        parts.push(if y == 0 {
            "anyOf removed".into()
        } else if y > x {
            "anyOf entries added".into()
        } else {
            "anyOf entries changed (judged at their own paths)".into()
        });
    }
    if changed!(not) {
        if b.not.is_some() {
            return None;
        }
        parts.push("not removed".into());
    }
    if changed!(additional_properties) {
        match (&a.additional_properties, &b.additional_properties) {
            (Some(x), Some(y))
                if x.allows == y.allows && x.schema.is_some() && y.schema.is_some() =>
            {
                parts.push("additionalProperties schema changed (judged at its own path)".into());
            }
            _ => return None,
        }
    }
    if parts.is_empty() {
        // Only nil-versus-empty differences are left (e.g. `required: []`): nothing changed.
        parts.push("no effective change".into());
    }
    Some(SafeChange::Loosening(parts))
}

fn len<T>(v: &Option<Vec<T>>) -> usize {
    v.as_ref().map_or(0, Vec::len)
}

/// `x-kubernetes-list-type` and `-list-map-keys`: absent means `atomic`; `atomic` constrains
/// nothing; `set` and `map` add uniqueness (and key) constraints.
fn list_type_change(a: &Schema, b: &Schema) -> Option<String> {
    let ta = a.x_list_type.as_deref().unwrap_or("atomic");
    let tb = b.x_list_type.as_deref().unwrap_or("atomic");
    if tb == "atomic" {
        return Some(if ta == "atomic" {
            "x-kubernetes-list-type atomic made explicit".into()
        } else {
            format!("x-kubernetes-list-type {ta} -> atomic")
        });
    }
    if ta != tb {
        return None;
    }
    if tb == "map" {
        let ka: std::collections::BTreeSet<&String> = a.x_list_map_keys.iter().flatten().collect();
        let kb: std::collections::BTreeSet<&String> = b.x_list_map_keys.iter().flatten().collect();
        if ka != kb {
            return None;
        }
    }
    Some("x-kubernetes-list-map-keys reordered".into())
}

/// `x-kubernetes-validations`: rules are matched by their text. A new rule text is a new
/// constraint (refused); a removed rule loosens; message-only edits change no verdict.
fn validations_change(old: &[ValidationRule], new: &[ValidationRule]) -> Option<String> {
    let by_text: BTreeMap<&str, &ValidationRule> =
        old.iter().map(|r| (r.rule.as_str(), r)).collect();
    let mut removed = 0;
    let mut reworded = 0;
    for r in new {
        let o = by_text.get(r.rule.as_str())?;
        if o.optional_old_self != r.optional_old_self {
            return None;
        }
        if *o != r {
            reworded += 1;
        }
    }
    let new_texts: std::collections::BTreeSet<&str> = new.iter().map(|r| r.rule.as_str()).collect();
    for r in old {
        if !new_texts.contains(r.rule.as_str()) {
            removed += 1;
        }
    }
    let mut parts = Vec::new();
    if removed > 0 {
        parts.push(format!(
            "{removed} x-kubernetes-validations rule(s) removed"
        ));
    }
    if reworded > 0 {
        parts.push(format!(
            "{reworded} x-kubernetes-validations message(s) changed"
        ));
    }
    if parts.is_empty() {
        parts.push("x-kubernetes-validations reordered".into());
    }
    Some(parts.join(", "))
}
