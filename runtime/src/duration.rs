//! Durations in Go's `time.ParseDuration` syntax (`300ms`, `1.5h`, `1h30m`), because the flags of
//! both binaries follow upstream's, which Go parses.
//!
//! Input: a string. Output: a signed number of nanoseconds, or Go's own error text. No IO.
//!
//! Grammar (Go's): `[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+`, or exactly `0` with no unit.
//! The total must fit an `int64` of nanoseconds, as in Go. Fractions beyond nanosecond precision
//! are truncated the way Go truncates them (through a float64 multiplication).

use std::fmt::Write as _;

/// Why a duration does not parse; `Display` is Go's message byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not in the grammar, or out of range.
    #[error("time: invalid duration {}", go_time_quote(.0))]
    Invalid(String),
    /// A number without a unit (other than a lone `0`).
    #[error("time: missing unit in duration {}", go_time_quote(.0))]
    MissingUnit(String),
    /// A unit Go does not know.
    #[error("time: unknown unit {} in duration {}", go_time_quote(.unit), go_time_quote(.input))]
    UnknownUnit { unit: String, input: String },
}

/// Nanoseconds per unit, as Go's `unitMap`.
fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        // U+00B5 MICRO SIGN and U+03BC GREEK SMALL LETTER MU are both accepted.
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3_600 * 1_000_000_000,
        _ => return None,
    })
}

const LIMIT: u64 = 1 << 63;

/// Parses a duration exactly as Go's `time.ParseDuration` does, into signed nanoseconds.
pub fn parse_go_duration(input: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(input.to_string());
    let mut s = input.as_bytes();
    let mut negative = false;
    if let Some(&c) = s.first()
        && (c == b'-' || c == b'+')
    {
        negative = c == b'-';
        s = &s[1..];
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let before = s.len();
        let (mut value, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let had_integer = before != s.len();
        let mut fraction = 0u64;
        let mut scale = 1f64;
        let mut had_fraction = false;
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let before = s.len();
            let (f, sc, rest) = leading_fraction(s);
            (fraction, scale, s) = (f, sc, rest);
            had_fraction = before != s.len();
        }
        if !had_integer && !had_fraction {
            return Err(invalid());
        }
        let unit_len = s
            .iter()
            .position(|&c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(input.to_string()));
        }
        let unit_bytes = &s[..unit_len];
        s = &s[unit_len..];
        // The unit ends at an ASCII byte or at the end, so it is a whole UTF-8 substring.
        let unit = std::str::from_utf8(unit_bytes).unwrap_or_default();
        let Some(nanos) = unit_nanos(unit) else {
            return Err(DurationError::UnknownUnit {
                unit: String::from_utf8_lossy(unit_bytes).into_owned(),
                input: input.to_string(),
            });
        };
        if value > LIMIT / nanos {
            return Err(invalid());
        }
        value *= nanos;
        if fraction > 0 {
            // Go: v += uint64(float64(f) * (float64(unit) / scale)), truncating toward zero.
            value = value.saturating_add((fraction as f64 * (nanos as f64 / scale)) as u64);
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total = total.saturating_add(value);
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if negative {
        // total ≤ 2^63, so the negation fits an i64 (−2^63 is the smallest value).
        return Ok(0i64.wrapping_sub_unsigned(total));
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Go's `leadingInt`: the leading decimal digits, or `None` on overflow past 2^63.
fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let mut x: u64 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(s[i] - b'0');
        if x > LIMIT {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Go's `leadingFraction`: the digits after a `.`, as a value and its power-of-ten scale; digits
/// past what fits are consumed and ignored.
fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let mut x: u64 = 0;
    let mut scale = 1f64;
    let mut overflow = false;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        if !overflow {
            if x > (LIMIT - 1) / 10 {
                overflow = true;
            } else {
                let y = x * 10 + u64::from(s[i] - b'0');
                if y > LIMIT {
                    overflow = true;
                } else {
                    x = y;
                    scale *= 10.0;
                }
            }
        }
        i += 1;
    }
    (x, scale, &s[i..])
}

/// The `quote` of Go's `time` package (not `strconv.Quote`): printable ASCII as is, `"` and `\`
/// escaped, every byte of any other character as `\xNN`.
fn go_time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "\\x{b:02x}");
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// A non-negative duration for a flag: Go's syntax, negative values refused with a clear message.
pub fn parse_flag_duration(input: &str) -> Result<std::time::Duration, String> {
    let nanos = parse_go_duration(input).map_err(|e| e.to_string())?;
    u64::try_from(nanos)
        .map(std::time::Duration::from_nanos)
        .map_err(|_| format!("invalid duration {input:?}: must not be negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: i64 = 1;
    const US: i64 = 1_000;
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    /// Go's `parseDurationTests` (src/time/time_test.go), every row.
    #[test]
    fn go_parse_duration_table() {
        let cases: &[(&str, i64)] = &[
            // simple
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            // sign
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            // decimal
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            // different units
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12\u{b5}s", 12 * US),
            ("12\u{3bc}s", 12 * US),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            // composite durations
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            (
                "1h2m3s4ms5us6ns",
                H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS,
            ),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            // large value
            ("52763797000ns", 52763797000 * NS),
            // more than 9 digits after decimal point, see https://golang.org/issue/6617
            ("0.3333333333333333333h", 20 * M),
            // 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
            ("9007199254740993ns", ((1 << 53) + 1) * NS),
            // largest duration that can be represented by int64 in nanoseconds
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            // largest negative round trip value, see https://golang.org/issue/48629
            ("-2562047h47m16.854775808s", i64::MIN),
            // huge string; issue 15011.
            ("0.100000000000000000000h", 6 * M),
            // This value tests the first overflow check in leadingFraction.
            (
                "0.830103483285477580700h",
                49 * M + 48 * S + 372_539_827 * NS,
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_go_duration(input), Ok(*want), "{input:?}");
        }
    }

    /// Go's `parseDurationErrorTests`: the message quotes the input as Go's `time.quote` does.
    /// (Go's rows with invalid UTF-8 cannot reach a flag: the command line is decoded first.)
    #[test]
    fn go_parse_duration_error_table() {
        let cases: &[(&str, &str)] = &[
            // invalid
            ("", r#""""#),
            ("3", r#""3""#),
            ("-", r#""-""#),
            ("s", r#""s""#),
            (".", r#"".""#),
            ("-.", r#""-.""#),
            (".s", r#"".s""#),
            ("+.s", r#""+.s""#),
            ("1d", r#""1d""#),
            ("\u{FFFD}", r#""\xef\xbf\xbd""#),
            (
                "\u{FFFD} hello \u{FFFD} world",
                r#""\xef\xbf\xbd hello \xef\xbf\xbd world""#,
            ),
            // overflow
            ("9223372036854775810ns", r#""9223372036854775810ns""#),
            ("9223372036854775808ns", r#""9223372036854775808ns""#),
            // largest negative value of type int64 in nanoseconds should fail
            ("-9223372036854775809ns", r#""-9223372036854775809ns""#),
            ("9223372036854776us", r#""9223372036854776us""#),
            ("3000000h", r#""3000000h""#),
            ("9223372036854775.808us", r#""9223372036854775.808us""#),
            (
                "9223372036854ms775us808ns",
                r#""9223372036854ms775us808ns""#,
            ),
        ];
        for (input, quoted) in cases {
            let err = parse_go_duration(input).expect_err(input).to_string();
            assert!(err.contains(quoted), "{input:?}: {err}");
        }
    }

    /// Exact texts of Go 1.2x: `time.ParseDuration("1")`, `("1d")`, `("x")`.
    #[test]
    fn error_messages_are_gos_words() {
        let msg = |s: &str| parse_go_duration(s).expect_err(s).to_string();
        assert_eq!(msg("1"), r#"time: missing unit in duration "1""#);
        assert_eq!(msg("1d"), r#"time: unknown unit "d" in duration "1d""#);
        assert_eq!(msg("x"), r#"time: invalid duration "x""#);
        assert_eq!(
            msg("1h\"x"),
            r#"time: unknown unit "h\"x" in duration "1h\"x""#
        );
    }

    #[test]
    fn flag_durations_are_non_negative_std_durations() {
        use std::time::Duration;
        assert_eq!(parse_flag_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_flag_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_flag_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(
            parse_flag_duration("-1s"),
            Err("invalid duration \"-1s\": must not be negative".to_string())
        );
        assert_eq!(
            parse_flag_duration("12"),
            Err(r#"time: missing unit in duration "12""#.to_string())
        );
    }
}
