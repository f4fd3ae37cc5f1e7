//! HTTP preconditions (RFC 7232) as upstream catalogd evaluates them: Go's `http.ServeContent`
//! rules for `/api/v1/all` and upstream's copy of them for `/api/v1/metas`.
//!
//! Input: request headers and the content's modification time. Output: a [`Verdict`]. Pure.
//!
//! Catalog responses carry no ETag, so entity-tag conditions only ever match `*`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderMap;
use http::header::{IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE, IF_UNMODIFIED_SINCE};

/// What the preconditions decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Serve the content; `use_range` says whether a `Range` header (if any) still applies.
    Proceed { use_range: bool },
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    PreconditionFailed,
    /// 500: upstream's `/metas` answers an unparseable `If-Modified-Since` this way.
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

/// Evaluates the preconditions in RFC 7232 §6 order.
///
/// | step | header | outcome |
/// |---|---|---|
/// | 1 | If-Match (only `*` matches) | no match → 412 |
/// | 2 | If-Unmodified-Since (when no If-Match) | modified after the date → 412 |
/// | 3 | If-None-Match (only `*` matches) | match → 304 |
/// | 4 | If-Modified-Since (when no If-None-Match) | not modified since the date → 304 |
/// | 5 | If-Range (ServeContent only) | not the content's date → ignore `Range` |
pub fn evaluate(headers: &HeaderMap, modified: SystemTime, rules: Rules) -> Verdict {
    let modified = truncate_to_seconds(modified);
    let mut cond = if_match(headers);
    if cond == Cond::None {
        cond = if_unmodified_since(headers, modified);
    }
    if cond == Cond::False {
        return Verdict::PreconditionFailed;
    }
    match if_none_match(headers) {
        Cond::False => return Verdict::NotModified,
        Cond::None => match if_modified_since(headers, modified, rules) {
            Ok(Cond::False) => return Verdict::NotModified,
            Ok(_) => {}
            Err(()) => return Verdict::BadModifiedSince,
        },
        Cond::True => {}
    }
    let use_range = match rules {
        Rules::ServeContent => {
            headers.contains_key(http::header::RANGE) && if_range(headers, modified)
        }
        Rules::Metas => false,
    };
    Verdict::Proceed { use_range }
}

fn header(headers: &HeaderMap, name: http::HeaderName) -> Option<&str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
}

/// Go ignores the Unix epoch as "no modification time".
fn is_zero(t: SystemTime) -> bool {
    t == UNIX_EPOCH
}

fn truncate_to_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(_) => t,
    }
}

fn if_match(headers: &HeaderMap) -> Cond {
    match header(headers, IF_MATCH) {
        None => Cond::None,
        Some(v) if first_tag_is_star(v) => Cond::True,
        Some(_) => Cond::False,
    }
}

fn if_none_match(headers: &HeaderMap) -> Cond {
    match header(headers, IF_NONE_MATCH) {
        None => Cond::None,
        Some(v) if first_tag_is_star(v) => Cond::False,
        Some(_) => Cond::True,
    }
}

/// Whether the first entity tag of a list is `*` (our responses have no ETag for others to match).
fn first_tag_is_star(list: &str) -> bool {
    list.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace())
        .starts_with('*')
}

fn if_unmodified_since(headers: &HeaderMap, modified: SystemTime) -> Cond {
    let Some(v) = header(headers, IF_UNMODIFIED_SINCE) else {
        return Cond::None;
    };
    if is_zero(modified) {
        return Cond::None;
    }
    match httpdate::parse_http_date(v) {
        Ok(t) if modified <= t => Cond::True,
        Ok(_) => Cond::False,
        Err(_) => Cond::None,
    }
}

fn if_modified_since(headers: &HeaderMap, modified: SystemTime, rules: Rules) -> Result<Cond, ()> {
    let Some(v) = header(headers, IF_MODIFIED_SINCE) else {
        return Ok(Cond::None);
    };
    if is_zero(modified) {
        return Ok(Cond::None);
    }
    match httpdate::parse_http_date(v) {
        Ok(t) if modified <= t => Ok(Cond::False),
        Ok(_) => Ok(Cond::True),
        Err(_) if rules == Rules::Metas => Err(()),
        Err(_) => Ok(Cond::None),
    }
}

/// `If-Range` holds when it names exactly the content's modification second. An entity tag never
/// matches because responses have none.
fn if_range(headers: &HeaderMap, modified: SystemTime) -> bool {
    let Some(v) = header(headers, IF_RANGE) else {
        return true;
    };
    if v.starts_with('"') || v.starts_with("W/") || is_zero(modified) {
        return false;
    }
    matches!(httpdate::parse_http_date(v), Ok(t) if t == modified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

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
}
