//! Upstream's condensed `unhandled` message: `unhandled changes found (<Field> <before> ->
//! <after>; …)` built from the lines of a go-cmp report.
//!
//! Input: the raw comparator error (`unhandled changes found :\n<go-cmp diff>`). Output: the
//! condensed text upstream puts in the condition. No IO.
//!
//! Rules (upstream `conciseUnhandledMessage`):
//! - only lines whose trimmed text starts with `-` or `+` count; the rest of the line, trimmed
//!   and without a trailing comma, splits at its first `:` into a field and a value;
//! - a field keeps the order of its first line; `-` sets the before value and `+` the after value;
//! - values: empty → `<empty>`; `v1.` removed; anything mentioning `JSONSchemaProps` → `<complex value>`;
//! - a field whose before and after are both empty, or identical in raw text, is dropped; when
//!   they render the same but differ in raw text, ` (changed)` is appended to the after value;
//! - no detail at all gives just `unhandled changes found`.

use super::gofmt::is_space;

/// The sentinel text of crdify's unhandled comparator.
pub const UNHANDLED_PREFIX: &str = "unhandled changes found";

/// The condensed form of an `unhandled` comparator error.
pub fn concise(raw: &str) -> String {
    if !raw.contains(UNHANDLED_PREFIX) {
        return raw.to_owned();
    }
    let details = details(raw);
    if details.is_empty() {
        return UNHANDLED_PREFIX.to_owned();
    }
    format!("{UNHANDLED_PREFIX} ({})", details.join("; "))
}

#[derive(Default)]
struct Entry {
    before: String,
    after: String,
    before_raw: String,
    after_raw: String,
}

fn go_trim_space(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `(field, normalised value, raw value)` parsed out of a diff line's text after its sign.
fn parse_value(fragment: &str) -> Option<(String, String, String)> {
    let cleaned = go_trim_space(fragment);
    let cleaned = cleaned.strip_prefix('\t').unwrap_or(cleaned);
    let cleaned = go_trim_space(cleaned);
    let cleaned = cleaned.strip_suffix(',').unwrap_or(cleaned);
    let (field, rest) = cleaned.split_once(':')?;
    let field = go_trim_space(field);
    let raw = go_trim_space(rest).to_owned();
    if field.is_empty() {
        return None;
    }
    Some((field.to_owned(), normalise(&raw), raw))
}

fn normalise(value: &str) -> String {
    let value = value.strip_suffix(',').unwrap_or(value);
    let value = go_trim_space(value);
    match value {
        "" => return "<empty>".into(),
        "\"\"" => return "\"\"".into(),
        _ => {}
    }
    let value = value.replace("v1.", "");
    if value.contains("JSONSchemaProps") {
        return "<complex value>".into();
    }
    value
}

fn details(raw: &str) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut entries: std::collections::HashMap<String, Entry> = std::collections::HashMap::new();
    for line in raw.split('\n') {
        let trimmed = go_trim_space(line);
        if trimmed.len() < 2 {
            continue;
        }
        let sign = trimmed.as_bytes()[0];
        if sign != b'-' && sign != b'+' {
            continue;
        }
        let Some((field, value, raw_value)) = parse_value(&trimmed[1..]) else {
            continue;
        };
        let entry = entries.entry(field.clone()).or_insert_with(|| {
            order.push(field.clone());
            Entry::default()
        });
        if sign == b'-' {
            entry.before = value;
            entry.before_raw = raw_value;
        } else {
            entry.after = value;
            entry.after_raw = raw_value;
        }
    }
    let mut out = Vec::new();
    for field in order {
        let Some(e) = entries.get(&field) else {
            continue;
        };
        if e.before.is_empty() && e.after.is_empty() {
            continue;
        }
        if e.before == e.after && e.before_raw == e.after_raw {
            continue;
        }
        let before = if e.before.is_empty() {
            "<empty>"
        } else {
            &e.before
        };
        let mut after = if e.after.is_empty() {
            "<empty>".to_owned()
        } else {
            e.after.clone()
        };
        if e.before == e.after && e.before_raw != e.after_raw {
            after.push_str(" (changed)");
        }
        out.push(format!("{field} {before} -> {after}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cases from upstream's unhandled_message_test.go (operator-controller df2c201d).
    #[test]
    fn text_without_the_sentinel_is_kept() {
        assert_eq!(concise("some other error"), "some other error");
    }

    #[test]
    fn one_change_is_condensed() {
        let raw = "unhandled changes found :\n- Format: \"\"\n+ Format: \"email\"\n";
        assert_eq!(
            concise(raw),
            "unhandled changes found (Format \"\" -> \"email\")"
        );
    }

    #[test]
    fn several_changes_keep_first_appearance_order() {
        let raw = "unhandled changes found :\n- Format: \"\"\n+ Format: \"email\"\n- Default: nil\n+ Default: \"value\"\n- Title: \"\"\n+ Title: \"Widget\"\n- Description: \"old\"\n+ Description: \"new\"\n";
        assert_eq!(
            concise(raw),
            "unhandled changes found (Format \"\" -> \"email\"; Default nil -> \"value\"; Title \"\" -> \"Widget\"; Description \"old\" -> \"new\")"
        );
    }

    #[test]
    fn schema_values_become_complex_and_changed() {
        let raw = "unhandled changes found :\n- Default: &v1.JSONSchemaProps{}\n+ Default: &v1.JSONSchemaProps{Type: \"string\"}\n";
        assert_eq!(
            concise(raw),
            "unhandled changes found (Default <complex value> -> <complex value> (changed))"
        );
    }

    #[test]
    fn non_breaking_spaces_after_the_sign_are_trimmed() {
        let raw = "unhandled changes found :\n-\u{a0}\tFormat: \"x\",\n+\u{a0}\tFormat: \"\",\n";
        assert_eq!(
            concise(raw),
            "unhandled changes found (Format \"x\" -> \"\")"
        );
    }
}
