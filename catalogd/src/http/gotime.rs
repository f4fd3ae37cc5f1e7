//! HTTP dates parsed exactly as Go's `http.ParseTime`, which upstream catalogd uses for
//! `If-Modified-Since`, `If-Unmodified-Since` and `If-Range`.
//!
//! Input: a header value. Output: the instant it names, as seconds since the Unix epoch (negative
//! before 1970) and nanoseconds, or `None` when Go would fail to parse it. Pure.
//!
//! Go tries three layouts with `time.Parse`, in order: `Mon, 02 Jan 2006 15:04:05 GMT`
//! (IMF-fixdate), `Monday, 02-Jan-06 15:04:05 MST` (RFC 850) and `Mon Jan _2 15:04:05 2006`
//! (ANSI C). `time.Parse` is more lenient than RFC 9110, and a drop-in must be too:
//!
//! | input detail                          | Go's `time.Parse`                                            |
//! |---------------------------------------|--------------------------------------------------------------|
//! | day and month names                   | ASCII case-insensitive; the weekday is not checked against the date |
//! | a space in the layout                 | one or more spaces in the value                              |
//! | hour (`15`)                           | one or two digits; minutes, seconds, `02` days: exactly two  |
//! | `_2` day (ANSI C)                     | one or two digits, after any number of spaces                |
//! | seconds followed by `.ddd` or `,ddd`  | fractional seconds, kept (up to 9 digits; more are dropped)  |
//! | two-digit year (RFC 850)              | 69–99 → 19xx, else 20xx; a sign is accepted (`-1` → 1999)     |
//! | time zone (RFC 850 `MST`)             | `UTC`, `GMT[±h]` (h ≤ 23), `ChST`, `MeST`, `±hh`, 3–5 capitals (4 or 5 ending in `T`, or `WITA`); the instant is the wall time read as UTC |
//! | day past the month's end, hour ≥ 24, minute or second ≥ 60 | error                   |
//! | years before 1970                     | valid (httpdate and `SystemTime` reject them; that was a 500 on `/metas`) |
//!
//! These rules were checked against Go 1.26's `net/http.ParseTime` with a throwaway program; the
//! tests below list the cases.

/// An instant: whole seconds since 1970-01-01T00:00:00Z (floor) plus nanoseconds in `0..1e9`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GoTime {
    pub secs: i64,
    pub nanos: u32,
}

impl GoTime {
    /// A `SystemTime` as a [`GoTime`] (times before 1970 included).
    pub fn from_system(t: std::time::SystemTime) -> GoTime {
        match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => GoTime {
                secs: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                nanos: d.subsec_nanos(),
            },
            Err(e) => {
                let d = e.duration();
                let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                if d.subsec_nanos() == 0 {
                    GoTime {
                        secs: -secs,
                        nanos: 0,
                    }
                } else {
                    GoTime {
                        secs: -secs - 1,
                        nanos: 1_000_000_000 - d.subsec_nanos(),
                    }
                }
            }
        }
    }

    /// Go's `Truncate(time.Second)` for times after year 1 (every time here).
    pub fn truncate_to_second(self) -> GoTime {
        GoTime {
            secs: self.secs,
            nanos: 0,
        }
    }
}

/// Go's `http.ParseTime`.
pub fn parse_http_time(text: &str) -> Option<GoTime> {
    parse(IMF_FIXDATE, text)
        .or_else(|| parse(RFC850, text))
        .or_else(|| parse(ANSIC, text))
}

/// One element of a layout.
#[derive(Clone, Copy)]
enum Chunk {
    /// Literal text (spaces match one or more spaces).
    Lit(&'static str),
    WeekDay,
    LongWeekDay,
    ZeroDay,
    UnderDay,
    Month,
    LongYear,
    Year,
    Hour,
    ZeroMinute,
    ZeroSecond,
    Zone,
}

use Chunk::*;

const IMF_FIXDATE: &[Chunk] = &[
    WeekDay,
    Lit(", "),
    ZeroDay,
    Lit(" "),
    Month,
    Lit(" "),
    LongYear,
    Lit(" "),
    Hour,
    Lit(":"),
    ZeroMinute,
    Lit(":"),
    ZeroSecond,
    Lit(" GMT"),
];
const RFC850: &[Chunk] = &[
    LongWeekDay,
    Lit(", "),
    ZeroDay,
    Lit("-"),
    Month,
    Lit("-"),
    Year,
    Lit(" "),
    Hour,
    Lit(":"),
    ZeroMinute,
    Lit(":"),
    ZeroSecond,
    Lit(" "),
    Zone,
];
const ANSIC: &[Chunk] = &[
    WeekDay,
    Lit(" "),
    Month,
    Lit(" "),
    UnderDay,
    Lit(" "),
    Hour,
    Lit(":"),
    ZeroMinute,
    Lit(":"),
    ZeroSecond,
    Lit(" "),
    LongYear,
];

const SHORT_DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const SHORT_MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn parse(layout: &[Chunk], value: &str) -> Option<GoTime> {
    let mut v = value.as_bytes();
    let (mut year, mut month, mut day) = (0i64, 1u32, 1i64);
    let (mut hour, mut min, mut sec, mut nsec) = (0i64, 0i64, 0i64, 0u32);
    for chunk in layout {
        match *chunk {
            Lit(text) => v = skip(v, text.as_bytes())?,
            WeekDay => v = lookup(&SHORT_DAYS, v)?.1,
            LongWeekDay => v = lookup(&LONG_DAYS, v)?.1,
            Month => {
                let (i, rest) = lookup(&SHORT_MONTHS, v)?;
                month = u32::try_from(i + 1).ok()?;
                v = rest;
            }
            ZeroDay => (day, v) = getnum(v, true)?,
            UnderDay => {
                if v.first() == Some(&b' ') {
                    v = &v[1..];
                }
                (day, v) = getnum(v, false)?;
            }
            LongYear => {
                if v.len() < 4 || !v[0].is_ascii_digit() {
                    return None;
                }
                year = atoi(&v[..4])?;
                v = &v[4..];
            }
            Year => {
                if v.len() < 2 {
                    return None;
                }
                let y = atoi(&v[..2])?;
                year = if y >= 69 { y + 1900 } else { y + 2000 };
                v = &v[2..];
            }
            Hour => {
                (hour, v) = getnum(v, false)?;
                if hour >= 24 {
                    return None;
                }
            }
            ZeroMinute => {
                (min, v) = getnum(v, true)?;
                if min >= 60 {
                    return None;
                }
            }
            ZeroSecond => {
                (sec, v) = getnum(v, true)?;
                if sec >= 60 {
                    return None;
                }
                // Go reads a fractional second the layout does not mention.
                if v.len() >= 2 && matches!(v[0], b'.' | b',') && v[1].is_ascii_digit() {
                    let n = 1 + v[1..].iter().take_while(|b| b.is_ascii_digit()).count();
                    let digits = &v[1..n.min(10)];
                    let mut ns: u32 = 0;
                    for d in digits {
                        ns = ns * 10 + u32::from(d - b'0');
                    }
                    for _ in digits.len()..9 {
                        ns *= 10;
                    }
                    nsec = ns;
                    v = &v[n..];
                }
            }
            Zone => {
                if v.starts_with(b"UTC") {
                    v = &v[3..];
                } else {
                    let n = zone_length(v)?;
                    v = &v[n..];
                }
            }
        }
    }
    if !v.is_empty() {
        return None;
    }
    if day < 1 || day > days_in(month, year) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(GoTime {
        secs: days * 86_400 + hour * 3600 + min * 60 + sec,
        nanos: nsec,
    })
}

/// Go's `skip`: a layout space matches one or more spaces (or the end of the value).
fn skip<'v>(mut v: &'v [u8], mut prefix: &[u8]) -> Option<&'v [u8]> {
    while let Some(&p) = prefix.first() {
        if p == b' ' {
            if v.first().is_some_and(|c| *c != b' ') {
                return None;
            }
            prefix = trim_spaces(prefix);
            v = trim_spaces(v);
            continue;
        }
        if v.first() != Some(&p) {
            return None;
        }
        prefix = &prefix[1..];
        v = &v[1..];
    }
    Some(v)
}

fn trim_spaces(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| **b == b' ').count();
    &s[n..]
}

/// Go's `lookup`: the first name that prefixes the value, ASCII case-insensitively.
fn lookup<'v>(names: &[&str], v: &'v [u8]) -> Option<(usize, &'v [u8])> {
    names.iter().enumerate().find_map(|(i, name)| {
        let name = name.as_bytes();
        (v.len() >= name.len() && v[..name.len()].eq_ignore_ascii_case(name))
            .then(|| (i, &v[name.len()..]))
    })
}

/// Go's `getnum`: one or two digits (`fixed`: exactly two).
fn getnum(v: &[u8], fixed: bool) -> Option<(i64, &[u8])> {
    let d0 = *v.first().filter(|c| c.is_ascii_digit())?;
    match v.get(1).filter(|c| c.is_ascii_digit()) {
        Some(d1) => Some((i64::from(d0 - b'0') * 10 + i64::from(d1 - b'0'), &v[2..])),
        None if fixed => None,
        None => Some((i64::from(d0 - b'0'), &v[1..])),
    }
}

/// Go's `atoi` on a short field: an optional sign, then only digits.
fn atoi(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut x: i64 = 0;
    for d in digits {
        x = x.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if neg { -x } else { x })
}

/// Go's `parseTimeZone`: the length of the zone name at the start of `v`.
fn zone_length(v: &[u8]) -> Option<usize> {
    if v.len() < 3 {
        return None;
    }
    if v.starts_with(b"ChST") || v.starts_with(b"MeST") {
        return Some(4);
    }
    if v.starts_with(b"GMT") {
        return Some(3 + signed_offset_length(&v[3..]));
    }
    if matches!(v[0], b'+' | b'-') {
        let n = signed_offset_length(v);
        return (n > 0).then_some(n);
    }
    let upper = v
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_uppercase())
        .count();
    match upper {
        3 => Some(3),
        4 if v[3] == b'T' || v.starts_with(b"WITA") => Some(4),
        5 if v[4] == b'T' => Some(5),
        _ => None,
    }
}

/// Go's `parseSignedOffset`: `±h` with at most 23 hours; 0 when there is none.
fn signed_offset_length(v: &[u8]) -> usize {
    if !matches!(v.first(), Some(b'+' | b'-')) {
        return 0;
    }
    let digits = v[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return 0;
    }
    match atoi(&v[1..1 + digits]) {
        Some(h) if h <= 23 => 1 + digits,
        _ => 0,
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in(month: u32, year: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(text: &str) -> Option<i64> {
        parse_http_time(text).map(|t| t.secs)
    }

    // Expected values printed by Go 1.26: `t, err := http.ParseTime(s); t.Unix(), t.Nanosecond()`.
    #[test]
    fn the_three_layouts_parse() {
        assert_eq!(secs("Tue, 14 Nov 2023 22:13:20 GMT"), Some(1_700_000_000));
        assert_eq!(secs("Tuesday, 14-Nov-23 22:13:20 GMT"), Some(1_700_000_000));
        assert_eq!(secs("Tue Nov 14 22:13:20 2023"), Some(1_700_000_000));
        assert_eq!(secs("Thu Jan  1 00:00:00 1970"), Some(0));
    }

    #[test]
    fn dates_before_1970_are_valid() {
        assert_eq!(secs("Mon, 02 Jan 1950 15:04:05 GMT"), Some(-631_011_355));
        assert_eq!(secs("Sat, 01 Jan 0000 00:00:00 GMT"), Some(-62_167_219_200));
        assert_eq!(secs("Wed, 31 Dec 1969 23:59:59 GMT"), Some(-1));
        assert_eq!(secs("Fri, 31 Dec 9999 23:59:59 GMT"), Some(253_402_300_799));
    }

    #[test]
    fn go_leniencies_are_kept() {
        // Wrong weekday, lower case names, several spaces, one-digit hour.
        assert_eq!(secs("Sun, 14 Nov 2023 22:13:20 GMT"), Some(1_700_000_000));
        assert_eq!(secs("tue, 14 nov 2023 22:13:20 GMT"), Some(1_700_000_000));
        assert_eq!(
            secs("Tue,   14  Nov 2023 22:13:20   GMT"),
            Some(1_700_000_000)
        );
        assert_eq!(secs("Tue, 14 Nov 2023 2:13:20 GMT"), Some(1_699_928_000));
        // Fractional seconds.
        assert_eq!(
            parse_http_time("Tue, 14 Nov 2023 22:13:20.5 GMT"),
            Some(GoTime {
                secs: 1_700_000_000,
                nanos: 500_000_000
            })
        );
        assert_eq!(
            parse_http_time("Tue, 14 Nov 2023 22:13:20,1234567891 GMT").map(|t| t.nanos),
            Some(123_456_789)
        );
        // Two-digit years and zones.
        assert_eq!(secs("Monday, 02-Jan-69 00:00:00 GMT"), Some(-31_449_600));
        assert_eq!(secs("Monday, 02-Jan-68 00:00:00 PST"), Some(3_092_688_000));
        assert_eq!(
            secs("Monday, 02-Jan-06 00:00:00 GMT+3"),
            Some(1_136_160_000)
        );
        assert_eq!(
            secs("Monday, 02-Jan-06 00:00:00 GMT+13"),
            Some(1_136_160_000)
        );
        assert_eq!(secs("Monday, 02-Jan-06 00:00:00 -07"), Some(1_136_160_000));
        assert_eq!(secs("Monday, 02-Jan-06 00:00:00 CEST"), Some(1_136_160_000));
        assert_eq!(secs("Monday, 02-Jan--1 00:00:00 UTC"), Some(915_235_200));
        // ANSI C day: spaces then one or two digits.
        assert_eq!(secs("Mon Jan 2 15:04:05 2006"), Some(1_136_214_245));
    }

    #[test]
    fn what_go_rejects_is_rejected() {
        for bad in [
            "",
            "yesterday",
            "Tue, 14 Nov 2023 22:13:20 gmt",
            "Tue, 14 Nov 2023 22:13:20 GMT ",
            "Tue, 4 Nov 2023 22:13:20 GMT",
            "Tue, 31 Nov 2023 22:13:20 GMT",
            "Tue, 29 Feb 2023 22:13:20 GMT",
            "Tue, 14 Nov 2023 24:00:00 GMT",
            "Tue, 14 Nov 2023 22:60:00 GMT",
            "Tue, 14 Nov 2023 22:13:60 GMT",
            "Tue, 14 Nov 2023 22:13:2 GMT",
            "Tue, 14 Nov 23 22:13:20 GMT",
            "Tue, 14 Nov +023 22:13:20 GMT",
            "Monday, 02-Jan-06 00:00:00 GMT+24",
            "Monday, 02-Jan-06 00:00:00 Pst",
            "Monday, 02-Jan-06 00:00:00 ABCDEF",
            "Monday, 02-Jan-06 00:00:00 ABCD",
            "Tue, 00 Nov 2023 22:13:20 GMT",
        ] {
            assert_eq!(parse_http_time(bad), None, "{bad:?}");
        }
        assert_eq!(secs("Tue, 29 Feb 2000 00:00:00 GMT"), Some(951_782_400));
    }

    #[test]
    fn system_times_convert_with_floor_seconds() {
        use std::time::{Duration, UNIX_EPOCH};
        let t = GoTime::from_system(UNIX_EPOCH - Duration::from_millis(1500));
        assert_eq!(
            t,
            GoTime {
                secs: -2,
                nanos: 500_000_000
            }
        );
        let t = GoTime::from_system(UNIX_EPOCH + Duration::from_millis(1500));
        assert_eq!(
            t,
            GoTime {
                secs: 1,
                nanos: 500_000_000
            }
        );
    }
}
