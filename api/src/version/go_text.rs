//! Go's text conventions that leak into upstream's behaviour and error messages.
//!
//! Input: strings. Output: Go `%q` quoting (`strconv.Quote`) and Go's `unicode.IsDigit`. No IO.
//!
//! Quoting is exact for ASCII. For other characters Go's `unicode.IsPrint` is approximated:
//! control, format, separator and private-use characters are escaped, unassigned ones are not.

use std::fmt::Write as _;

/// `fmt.Sprintf("%q", s)`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_go_printable(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

fn is_go_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !(c.is_control() || c.is_whitespace() || is_format(c) || is_private_use(c))
}

/// Unicode 15 general category Cf (what Go 1.2x ships), outside ASCII.
fn is_format(c: char) -> bool {
    const CF: &[(u32, u32)] = &[
        (0xAD, 0xAD),
        (0x600, 0x605),
        (0x61C, 0x61C),
        (0x6DD, 0x6DD),
        (0x70F, 0x70F),
        (0x890, 0x891),
        (0x8E2, 0x8E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFEFF, 0xFEFF),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ];
    let c = c as u32;
    CF.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

fn is_private_use(c: char) -> bool {
    matches!(c as u32, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD)
}

/// Go's `unicode.IsDigit`: general category Nd (Unicode 15), which blang uses to find where the
/// version starts in a range term.
pub(crate) fn is_go_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    // Nd characters come in runs of ten starting at a zero, except the mathematical digits.
    const ZEROS: &[u32] = &[
        0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
        0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
        0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
        0xFF10, 0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0,
        0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x11F50, 0x16A60,
        0x16AC0, 0x16B50, 0x1E140, 0x1E2F0, 0x1E4F0, 0x1E950, 0x1FBF0,
    ];
    let c = c as u32;
    (0x1D7CE..=0x1D7FF).contains(&c) || ZEROS.iter().any(|&zero| (zero..zero + 10).contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_matches_go_for_ascii_and_escapes() {
        assert_eq!(go_quote("foobar"), r#""foobar""#);
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("\t\n\u{1}\u{7f}"), r#""\t\n\x01\x7f""#);
        assert_eq!(
            go_quote("é\u{a0}\u{200b}\u{e000}\u{f0000}"),
            r#""é\u00a0\u200b\ue000\U000f0000""#
        );
    }

    #[test]
    fn digits_include_other_scripts_but_not_other_numerals() {
        assert!(is_go_digit('7'));
        assert!(is_go_digit('\u{663}')); // ARABIC-INDIC DIGIT THREE
        assert!(is_go_digit('\u{1D7FF}'));
        assert!(!is_go_digit('²'));
        assert!(!is_go_digit('Ⅳ'));
        assert!(!is_go_digit('a'));
    }
}
