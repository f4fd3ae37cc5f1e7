//! Names of generated objects, byte-identical to upstream's.
//!
//! Input: a base name and a suffix, or a CSV permission. Output: object names. No IO.
//!
//! - [`object_name_for_base_and_suffix`]: `<base>-<suffix>`, the base cut so that the result is
//!   at most 63 characters, except that upstream only cuts when `len(base)+len(suffix) > 63`:
//!   at exactly 63 the result is **64** characters long (an upstream off-by-one kept for
//!   parity; such names are rejected by the API server for kinds that require DNS labels).
//! - [`unique_name`]: `object_name_for_base_and_suffix(base, base36(sha224(json(permission))))`,
//!   where the JSON is what Go's `json.NewEncoder(h).Encode` writes for the
//!   `StrategyDeploymentPermissions` struct (fields in struct order, `omitempty` honoured, HTML
//!   escaping on, trailing newline). The base36 text has no zero padding (43 or 44 characters).

use serde_json::Value;
use sha2::{Digest, Sha224};

use crate::gotype::encode::write_string_html;

/// Upstream's `maxNameLength`.
const MAX_NAME_LENGTH: usize = 63;

/// Upstream's `util.ObjectNameForBaseAndSuffix`.
pub fn object_name_for_base_and_suffix(base: &str, suffix: &str) -> String {
    let mut base = base;
    if base.len() + suffix.len() > MAX_NAME_LENGTH {
        // Go slices bytes; a cut inside a multi-byte character keeps the partial bytes. Names
        // reaching here come from validated CSV fields (ASCII), so cutting at a char boundary
        // below the byte index gives the same result for every real input.
        let mut cut = MAX_NAME_LENGTH.saturating_sub(suffix.len() + 1);
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base = &base[..cut];
    }
    format!("{base}-{suffix}")
}

/// Upstream's `DefaultUniqueNameGenerator` for a CSV permission.
pub fn unique_name(base: &str, service_account_name: &str, rules: Option<&[Value]>) -> String {
    let json = permission_json(service_account_name, rules);
    let digest = Sha224::digest(&json);
    object_name_for_base_and_suffix(base, &base36(&digest))
}

/// The JSON Go's encoder writes for `v1alpha1.StrategyDeploymentPermissions`, newline included.
pub fn permission_json(service_account_name: &str, rules: Option<&[Value]>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"serviceAccountName\":");
    write_string_html(service_account_name, &mut out);
    out.extend_from_slice(b",\"rules\":");
    match rules {
        None => out.extend_from_slice(b"null"),
        Some(rules) => {
            out.push(b'[');
            for (i, rule) in rules.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_policy_rule(rule, &mut out);
            }
            out.push(b']');
        }
    }
    out.extend_from_slice(b"}\n");
    out
}

/// `rbacv1.PolicyRule`: `verbs` always (null when nil), the other lists only when non-empty.
fn write_policy_rule(rule: &Value, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"verbs\":");
    write_string_list(rule.get("verbs"), out);
    for key in ["apiGroups", "resources", "resourceNames", "nonResourceURLs"] {
        let present = rule
            .get(key)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if present {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
            write_string_list(rule.get(key), out);
        }
    }
    out.push(b'}');
}

fn write_string_list(list: Option<&Value>, out: &mut Vec<u8>) {
    match list.and_then(Value::as_array) {
        None => out.extend_from_slice(b"null"),
        Some(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string_html(item.as_str().unwrap_or(""), out);
            }
            out.push(b']');
        }
    }
}

/// Go's `big.Int.SetBytes(b).Text(36)`.
fn base36(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut number: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    if number.is_empty() {
        return "0".into();
    }
    let mut out = Vec::new();
    while !number.is_empty() {
        let mut remainder: u32 = 0;
        let mut quotient = Vec::with_capacity(number.len());
        for byte in &number {
            let acc = (remainder << 8) | u32::from(*byte);
            let q = acc / 36;
            remainder = acc % 36;
            if !(quotient.is_empty() && q == 0) {
                quotient.push(q as u8);
            }
        }
        out.push(DIGITS[remainder as usize]);
        number = quotient;
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_cut_only_beyond_63_characters() {
        // Upstream's util_test cases.
        assert_eq!(
            object_name_for_base_and_suffix("my.object", "service"),
            "my.object-service"
        );
        let base = "a".repeat(60);
        assert_eq!(
            object_name_for_base_and_suffix(&base, "service"),
            format!("{}-service", "a".repeat(55))
        );
        // len(base)+len(suffix) == 63: not cut, 64 characters (upstream's off-by-one).
        let base = "b".repeat(56);
        let name = object_name_for_base_and_suffix(&base, "service");
        assert_eq!(name.len(), 64);
        assert_eq!(name, format!("{base}-service"));
        let base = "b".repeat(57);
        assert_eq!(object_name_for_base_and_suffix(&base, "service").len(), 63);
    }

    #[test]
    fn base36_matches_go_big_int_text() {
        assert_eq!(base36(&[0]), "0");
        assert_eq!(base36(&[35]), "z");
        assert_eq!(base36(&[36]), "10");
        assert_eq!(base36(&[1, 0]), "74");
        assert_eq!(base36(&[0, 0, 255, 255]), "1ekf");
    }

    #[test]
    fn permission_json_follows_go_struct_order_and_omitempty() {
        let rules = vec![
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}),
            json!({"verbs": null, "nonResourceURLs": ["/m<"]}),
        ];
        let json = permission_json("sa", Some(&rules));
        assert_eq!(
            String::from_utf8(json).expect("utf8"),
            "{\"serviceAccountName\":\"sa\",\"rules\":[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]},{\"verbs\":null,\"nonResourceURLs\":[\"/m\\u003c\"]}]}\n"
        );
        assert_eq!(
            String::from_utf8(permission_json("", None)).expect("utf8"),
            "{\"serviceAccountName\":\"\",\"rules\":null}\n"
        );
    }
}
