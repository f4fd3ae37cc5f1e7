//! HTTP preconditions (RFC 7232) as upstream catalogd evaluates them: Go's `http.ServeContent`
//! rules for `/api/v1/all` and upstream's copy of them for `/api/v1/metas`.
//!
//! Input: request headers and the content's modification time. Output: a [`Verdict`]. Pure.
//!
//! Catalog responses carry no ETag, so entity-tag conditions only ever match `*`.

use std::time::{SystemTime, UNIX_EPOCH};

use http::HeaderMap;
use http::header::{IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE, IF_UNMODIFIED_SINCE};

use super::gotime::{GoTime, parse_http_time};

/// What the preconditions decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Serve the content; `use_range` says whether a `Range` header (if any) still applies.
    Proceed { use_range: bool },
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    PreconditionFailed,
    /// upstream's `/metas` answers an unparseable `If-Modified-Since` with a 500 error text and
    /// then the content anyway (its handler writes the error and carries on).
    BadModifiedSince,
}

/// Which upstream code path's rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// `http.ServeContent` (`/api/v1/all`): bad dates are ignored; `If-Range` is honoured.
    ServeContent,
    /// upstream's `/api/v1/metas`: a bad `If-Modified-Since` is a server error; no ranges.
    Metas,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cond {
    None,
    True,
    False,
}

/// Evaluates the preconditions in RFC 7232 §6 order, as Go's `checkPreconditions` does.
/// Dates are read with Go's `http.ParseTime` ([`super::gotime`]), so dates before 1970 work.
///
/// | step | header | outcome |
/// |---|---|---|
/// | 1 | If-Match (only `*` matches: responses carry no ETag) | no match → 412 |
/// | 2 | If-Unmodified-Since (when no If-Match) | modified after the date → 412 |
/// | 3 | If-None-Match (only `*` matches) | match → 304 |
/// | 4 | If-Modified-Since (when no If-None-Match) | not modified since the date → 304 |
/// | 5 | If-Range (ServeContent only) | an entity tag, a bad date or another second → ignore `Range` |
pub fn evaluate(headers: &HeaderMap, modified: SystemTime, rules: Rules) -> Verdict {
    let zero = modified == UNIX_EPOCH;
    let modified = GoTime::from_system(modified);
    let mut cond = if_match(headers);
    if cond == Cond::None {
        cond = if_unmodified_since(headers, modified, zero);
    }
    if cond == Cond::False {
        return Verdict::PreconditionFailed;
    }
    match if_none_match(headers) {
        Cond::False => return Verdict::NotModified,
        Cond::None => match if_modified_since(headers, modified, zero, rules) {
            Ok(Cond::False) => return Verdict::NotModified,
            Ok(_) => {}
            Err(()) => return Verdict::BadModifiedSince,
        },
        Cond::True => {}
    }
    let use_range = match rules {
        Rules::ServeContent => {
            header(headers, http::header::RANGE).is_some() && if_range(headers, modified)
        }
        Rules::Metas => false,
    };
    Verdict::Proceed { use_range }
}

/// The first value of a header as Go's `Header.Get` returns it; empty counts as absent. Bytes
/// that are not UTF-8 are kept (lossily): the header is present, just unparseable.
fn header(headers: &HeaderMap, name: http::HeaderName) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .filter(|v| !v.is_empty())
}

/// Go's `textproto.TrimString`.
fn trim(s: &str) -> &str {
    s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
}

/// Go's `scanETag`: the entity tag at the start of `s` and what follows it; `None` when `s`
/// does not start with a well-formed one.
fn scan_etag(s: &str) -> Option<(&str, &str)> {
    let s = trim(s);
    let start = if s.starts_with("W/") { 2 } else { 0 };
    let b = s.as_bytes();
    if b.len() < start + 2 || b[start] != b'"' {
        return None;
    }
    for (i, &c) in b.iter().enumerate().skip(start + 1) {
        match c {
            b'"' => return Some((&s[..=i], &s[i + 1..])),
            0x21 | 0x23..=0x7e | 0x80..=0xff => {}
            _ => return None,
        }
    }
    None
}

/// Whether an entity-tag list contains `*` before its first malformed element (no other tag
/// can match: responses carry no ETag).
fn list_has_star(list: &str) -> bool {
    let mut rest = list;
    loop {
        rest = trim(rest);
        match rest.as_bytes().first() {
            None => return false,
            Some(b',') => rest = &rest[1..],
            Some(b'*') => return true,
            Some(_) => match scan_etag(rest) {
                Some((_, remain)) => rest = remain,
                None => return false,
            },
        }
    }
}

fn if_match(headers: &HeaderMap) -> Cond {
    match header(headers, IF_MATCH) {
        None => Cond::None,
        Some(v) if list_has_star(&v) => Cond::True,
        Some(_) => Cond::False,
    }
}

fn if_none_match(headers: &HeaderMap) -> Cond {
    match header(headers, IF_NONE_MATCH) {
        None => Cond::None,
        Some(v) if list_has_star(&v) => Cond::False,
        Some(_) => Cond::True,
    }
}

fn if_unmodified_since(headers: &HeaderMap, modified: GoTime, zero: bool) -> Cond {
    let Some(v) = header(headers, IF_UNMODIFIED_SINCE) else {
        return Cond::None;
    };
    if zero {
        return Cond::None;
    }
    match parse_http_time(&v) {
        Some(t) if modified.truncate_to_second() <= t => Cond::True,
        Some(_) => Cond::False,
        None => Cond::None,
    }
}

fn if_modified_since(
    headers: &HeaderMap,
    modified: GoTime,
    zero: bool,
    rules: Rules,
) -> Result<Cond, ()> {
    let Some(v) = header(headers, IF_MODIFIED_SINCE) else {
        return Ok(Cond::None);
    };
    if zero {
        return Ok(Cond::None);
    }
    match parse_http_time(&v) {
        Some(t) if modified.truncate_to_second() <= t => Ok(Cond::False),
        Some(_) => Ok(Cond::True),
        None if rules == Rules::Metas => Err(()),
        None => Ok(Cond::None),
    }
}

/// Go's `checkIfRange`: the range applies when the header is absent or names exactly the
/// content's modification second. An entity tag never matches because responses have none.
fn if_range(headers: &HeaderMap, modified: GoTime) -> bool {
    let Some(v) = header(headers, IF_RANGE) else {
        return true;
    };
    if scan_etag(&v).is_some() {
        return false;
    }
    matches!(parse_http_time(&v), Some(t) if t.secs == modified.secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("header value"));
        }
        h
    }

    fn date(secs: u64) -> String {
        httpdate::fmt_http_date(at(secs))
    }

    const MOD: u64 = 1_700_000_000;

    #[test]
    fn if_modified_since_at_or_after_modification_is_not_modified() {
        let mtime = at(MOD) + Duration::from_millis(700);
        for rules in [Rules::ServeContent, Rules::Metas] {
            let h = headers(&[("if-modified-since", date(MOD))]);
            assert_eq!(evaluate(&h, mtime, rules), Verdict::NotModified);
            let h = headers(&[("if-modified-since", date(MOD - 1))]);
            assert_eq!(
                evaluate(&h, mtime, rules),
                Verdict::Proceed { use_range: false }
            );
        }
    }

    #[test]
    fn a_bad_if_modified_since_is_ignored_by_serve_content_but_fails_metas() {
        let h = headers(&[("if-modified-since", "yesterday".into())]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::ServeContent),
            Verdict::Proceed { use_range: false }
        );
        assert_eq!(
            evaluate(&h, at(MOD), Rules::Metas),
            Verdict::BadModifiedSince
        );
    }

    #[test]
    fn if_none_match_overrides_if_modified_since() {
        let h = headers(&[
            ("if-none-match", "\"abc\"".into()),
            ("if-modified-since", date(MOD)),
        ]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::ServeContent),
            Verdict::Proceed { use_range: false }
        );
        let h = headers(&[("if-none-match", "*".into())]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::ServeContent),
            Verdict::NotModified
        );
    }

    #[test]
    fn if_match_and_if_unmodified_since_can_fail_the_request() {
        let h = headers(&[("if-match", "\"abc\"".into())]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::ServeContent),
            Verdict::PreconditionFailed
        );
        let h = headers(&[
            ("if-match", "*".into()),
            ("if-unmodified-since", date(MOD - 10)),
        ]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::Metas),
            Verdict::Proceed { use_range: false }
        );
        let h = headers(&[("if-unmodified-since", date(MOD - 10))]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::Metas),
            Verdict::PreconditionFailed
        );
        let h = headers(&[("if-unmodified-since", date(MOD))]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::Metas),
            Verdict::Proceed { use_range: false }
        );
    }

    #[test]
    fn if_range_keeps_the_range_only_for_the_exact_date() {
        let base = [("range", "bytes=0-1".to_string())];
        let h = headers(&base);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::ServeContent),
            Verdict::Proceed { use_range: true }
        );
        let mut with = base.to_vec();
        with.push(("if-range", date(MOD)));
        assert_eq!(
            evaluate(&headers(&with), at(MOD), Rules::ServeContent),
            Verdict::Proceed { use_range: true }
        );
        with[1].1 = date(MOD + 1);
        assert_eq!(
            evaluate(&headers(&with), at(MOD), Rules::ServeContent),
            Verdict::Proceed { use_range: false }
        );
        with[1].1 = "\"etag\"".into();
        assert_eq!(
            evaluate(&headers(&with), at(MOD), Rules::ServeContent),
            Verdict::Proceed { use_range: false }
        );
        assert_eq!(
            evaluate(&headers(&base), at(MOD), Rules::Metas),
            Verdict::Proceed { use_range: false }
        );
    }

    // Go 1.26's `http.ParseTime` reads dates before 1970; upstream's `/metas` used to get a 500
    // here because the date parser refused them.
    #[test]
    fn dates_before_1970_are_dates_not_errors() {
        let h = headers(&[("if-modified-since", "Mon, 02 Jan 1950 15:04:05 GMT".into())]);
        for rules in [Rules::ServeContent, Rules::Metas] {
            assert_eq!(
                evaluate(&h, at(MOD), rules),
                Verdict::Proceed { use_range: false }
            );
        }
        let h = headers(&[(
            "if-unmodified-since",
            "Mon, 02 Jan 1950 15:04:05 GMT".into(),
        )]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::Metas),
            Verdict::PreconditionFailed
        );
    }

    #[test]
    fn fractional_seconds_in_the_date_count_as_go_compares_them() {
        // The content's second is truncated; the date keeps its fraction: MOD <= MOD.5.
        let h = headers(&[(
            "if-modified-since",
            "Tue, 14 Nov 2023 22:13:20.5 GMT".into(),
        )]);
        assert_eq!(evaluate(&h, at(MOD), Rules::Metas), Verdict::NotModified);
    }

    #[test]
    fn a_star_after_other_entity_tags_still_matches() {
        let h = headers(&[("if-match", "\"a\", W/\"b\", *".into())]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::ServeContent),
            Verdict::Proceed { use_range: false }
        );
        let h = headers(&[("if-match", "\"a\" garbage, *".into())]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::ServeContent),
            Verdict::PreconditionFailed
        );
        let h = headers(&[("if-none-match", "\"a\",*".into())]);
        assert_eq!(
            evaluate(&h, at(MOD), Rules::ServeContent),
            Verdict::NotModified
        );
    }

    #[test]
    fn an_undecodable_date_is_present_but_invalid() {
        let mut h = HeaderMap::new();
        h.insert(
            "if-modified-since",
            HeaderValue::from_bytes(b"Tue, 14 Nov 2023 22:13:20 GMT\xff").expect("value"),
        );
        assert_eq!(
            evaluate(&h, at(MOD), Rules::Metas),
            Verdict::BadModifiedSince
        );
    }
}
