//! Which catalogs a ClusterExtension's `spec.source.catalog.selector` picks.
//!
//! Input: a `metav1.LabelSelector` (or none) and catalog labels. Output: a [`CatalogSelector`]
//! and match verdicts, or the error apimachinery's `LabelSelectorAsSelector` reports, word for
//! word (upstream prints it after `desired catalog selector is invalid: `). No IO.
//!
//! | selector                         | catalogs selected                                     |
//! |----------------------------------|-------------------------------------------------------|
//! | absent                           | all (upstream turns "nothing" into "everything")      |
//! | `{}` (no labels, no expressions) | all                                                   |
//! | `matchLabels: {k: v}`            | label `k` present with value `v`                      |
//! | `In` / `NotIn` values            | `k` present with a listed value / `k` absent or other |
//! | `Exists` / `DoesNotExist`        | `k` present / `k` absent                              |
//!
//! Requirements are ANDed. Validation: keys must be qualified names (optional DNS-1123 subdomain
//! prefix and `/`, then at most 63 alphanumerics, `-`, `_`, `.`), values must be valid label
//! values, `In`/`NotIn` need at least one value and `Exists`/`DoesNotExist` none. `matchLabels`
//! are checked before `matchExpressions`; upstream walks `matchLabels` in Go's random map order,
//! this walks it in key order, so with several bad labels the one reported is the first by key.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use olm_api::version::go_text::go_quote;

/// A parsed, valid label selector. No requirements means every catalog matches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogSelector {
    requirements: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Equals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// Why a selector is invalid; the text is apimachinery's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(String);

impl CatalogSelector {
    /// Selects every catalog.
    pub fn everything() -> CatalogSelector {
        CatalogSelector::default()
    }

    /// `LabelSelectorAsSelector`, with an absent selector selecting everything as the resolver
    /// wants it.
    pub fn new(selector: Option<&LabelSelector>) -> Result<CatalogSelector, SelectorError> {
        let Some(selector) = selector else {
            return Ok(CatalogSelector::everything());
        };
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(key, Op::Equals, vec![value.clone()])?);
        }
        for expr in selector.match_expressions.iter().flatten() {
            let op = match expr.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                other => {
                    return Err(SelectorError(format!(
                        "{} is not a valid label selector operator",
                        go_quote(other)
                    )));
                }
            };
            let values = expr.values.clone().unwrap_or_default();
            requirements.push(Requirement::new(&expr.key, op, values)?);
        }
        Ok(CatalogSelector { requirements })
    }

    /// Whether a catalog with these labels is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl Requirement {
    /// `labels.NewRequirement`: every problem is collected, then reported as one aggregate.
    fn new(key: &str, op: Op, values: Vec<String>) -> Result<Requirement, SelectorError> {
        let mut errors = Vec::new();
        let key_problems = label_key_problems(key);
        if !key_problems.is_empty() {
            errors.push(invalid("key", &go_quote(key), &key_problems.join("; ")));
        }
        let arity = match op {
            Op::In | Op::NotIn if values.is_empty() => {
                Some("for 'in', 'notin' operators, values set can't be empty")
            }
            Op::Equals if values.len() != 1 => {
                Some("exact-match compatibility requires one single value")
            }
            Op::Exists | Op::DoesNotExist if !values.is_empty() => {
                Some("values set must be empty for exists and does not exist")
            }
            _ => None,
        };
        if let Some(detail) = arity {
            errors.push(invalid("values", &go_json_string_list(&values), detail));
        }
        for (i, value) in values.iter().enumerate() {
            let problems = label_value_problems(value);
            if !problems.is_empty() {
                errors.push(invalid(
                    &format!("values[{i}][{key}]"),
                    &go_quote(value),
                    &problems.join("; "),
                ));
            }
        }
        if errors.is_empty() {
            Ok(Requirement {
                key: key.to_owned(),
                op,
                values,
            })
        } else {
            Err(SelectorError(aggregate(errors)))
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        let listed = |v: &String| self.values.iter().any(|x| x == v);
        match self.op {
            Op::Equals | Op::In => value.is_some_and(listed),
            Op::NotIn => !value.is_some_and(listed),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
        }
    }
}

/// `field.Invalid(path, value, detail).Error()`.
fn invalid(path: &str, shown_value: &str, detail: &str) -> String {
    if detail.is_empty() {
        format!("{path}: Invalid value: {shown_value}")
    } else {
        format!("{path}: Invalid value: {shown_value}: {detail}")
    }
}

/// `utilerrors.Aggregate.Error()`: one message alone, several in brackets, duplicates once.
fn aggregate(errors: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::with_capacity(errors.len());
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    if unique.len() == 1 {
        unique.remove(0)
    } else {
        format!("[{}]", unique.join(", "))
    }
}

/// `json.Marshal` of the `[]string` upstream passes: an empty list is a nil slice there.
fn go_json_string_list(values: &[String]) -> String {
    if values.is_empty() {
        return "null".to_owned();
    }
    let mut out = Vec::new();
    out.push(b'[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let mut s = Vec::new();
        olm_api::fbc::gojson::write_string(v, &mut s);
        // json.Marshal escapes HTML characters, unlike the encoder catalogd uses.
        for b in s {
            match b {
                b'<' => out.extend_from_slice(b"\\u003c"),
                b'>' => out.extend_from_slice(b"\\u003e"),
                b'&' => out.extend_from_slice(b"\\u0026"),
                b => out.push(b),
            }
        }
    }
    out.push(b']');
    String::from_utf8_lossy(&out).into_owned()
}

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// apimachinery's `RegexError`, examples and their odd double spaces included.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `content.IsLabelKey` (a qualified name).
fn label_key_problems(key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_owned());
            } else {
                problems.extend(
                    dns1123_subdomain_problems(prefix)
                        .into_iter()
                        .map(|p| format!("prefix part {p}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_MSG,
                    LABEL_KEY_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_KEY_NAME_MAX {
        problems.push(format!("name part {}", max_len_error(LABEL_KEY_NAME_MAX)));
    }
    if !is_label_token(name) {
        problems.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    problems
}

/// `content.IsLabelValue`.
fn label_value_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        problems.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !is_label_token(value) {
        problems.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    problems
}

/// `content.IsDNS1123Subdomain`.
fn dns1123_subdomain_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        problems.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    let label_ok = |label: &str| {
        let b = label.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty()
            && b.first().is_some_and(edge)
            && b.last().is_some_and(edge)
            && b.iter().all(|c| edge(c) || *c == b'-')
    };
    if !value.split('.').all(label_ok) {
        problems.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    problems
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`.
fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_alphanumeric();
    b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn match_labels(pairs: &[(&str, &str)]) -> LabelSelector {
        LabelSelector {
            match_labels: Some(labels(pairs)),
            match_expressions: None,
        }
    }

    fn expr(key: &str, op: &str, values: Option<&[&str]>) -> LabelSelector {
        LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: values.map(|v| v.iter().map(|s| s.to_string()).collect()),
            }]),
        }
    }

    fn error(selector: &LabelSelector) -> String {
        CatalogSelector::new(Some(selector))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn an_absent_or_empty_selector_selects_every_catalog() {
        let any = labels(&[("x", "y")]);
        assert!(CatalogSelector::new(None).unwrap().matches(&any));
        assert!(
            CatalogSelector::new(Some(&LabelSelector::default()))
                .unwrap()
                .matches(&any)
        );
    }

    #[test]
    fn match_labels_and_every_operator_select_as_apimachinery_does() {
        let cat = labels(&[
            ("olm.operatorframework.io/metadata.name", "b"),
            ("tier", "x"),
        ]);
        let yes = |s: LabelSelector| CatalogSelector::new(Some(&s)).unwrap().matches(&cat);
        assert!(yes(match_labels(&[(
            "olm.operatorframework.io/metadata.name",
            "b"
        )])));
        assert!(!yes(match_labels(&[(
            "olm.operatorframework.io/metadata.name",
            "a"
        )])));
        assert!(yes(expr("tier", "In", Some(&["y", "x"]))));
        assert!(!yes(expr("tier", "NotIn", Some(&["x"]))));
        assert!(yes(expr("missing", "NotIn", Some(&["x"]))));
        assert!(yes(expr("tier", "Exists", None)));
        assert!(!yes(expr("tier", "DoesNotExist", None)));
        assert!(yes(expr("missing", "DoesNotExist", Some(&[]))));
    }

    #[test]
    fn an_unknown_operator_is_reported_with_upstreams_text() {
        assert_eq!(
            error(&expr("name", "bad", Some(&["value"]))),
            r#""bad" is not a valid label selector operator"#
        );
    }

    #[test]
    fn an_empty_label_key_is_reported_with_upstreams_text() {
        assert_eq!(
            error(&match_labels(&[("", "value")])),
            "key: Invalid value: \"\": name part must be non-empty; name part must consist of \
             alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
             character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
             '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
    }

    #[test]
    fn an_invalid_label_value_is_reported_with_its_path() {
        assert_eq!(
            error(&match_labels(&[("name", "&value")])),
            "values[0][name]: Invalid value: \"&value\": a valid label must be an empty string or \
             consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for \
             validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
    }

    #[test]
    fn several_problems_of_one_requirement_are_aggregated_in_brackets() {
        assert_eq!(
            error(&expr("a/b/c", "In", None)),
            "[key: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric \
             characters, '-', '_' or '.', and must start and end with an alphanumeric character \
             (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
             '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and \
             '/' (e.g. 'example.com/MyName'), values: Invalid value: null: for 'in', 'notin' \
             operators, values set can't be empty]"
        );
    }

    #[test]
    fn values_for_exists_are_shown_as_go_json() {
        assert_eq!(
            error(&expr("k", "Exists", Some(&["<a&b>"]))),
            "[values: Invalid value: [\"\\u003ca\\u0026b\\u003e\"]: values set must be empty for \
             exists and does not exist, values[0][k]: Invalid value: \"<a&b>\": a valid label must \
             be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must \
             start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or \
             '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]"
        );
    }

    #[test]
    fn a_bad_key_prefix_and_long_name_are_both_reported() {
        let long = "n".repeat(64);
        let key = format!("Bad_Prefix/{long}");
        assert_eq!(
            error(&expr(&key, "Exists", None)),
            format!(
                "key: Invalid value: \"{key}\": prefix part a lowercase RFC 1123 subdomain must \
                 consist of lower case alphanumeric characters, '-' or '.', and must start and end \
                 with an alphanumeric character (e.g. 'example.com', regex used for validation is \
                 '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'); name part \
                 must be no more than 63 bytes"
            )
        );
        assert_eq!(
            error(&expr("/x", "Exists", None)),
            "key: Invalid value: \"/x\": prefix part must be non-empty"
        );
    }
}
