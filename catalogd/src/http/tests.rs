//! In-process router tests: every status code, header and query case of the content API.

use std::io::Read;

use axum::body::to_bytes;
use axum::http::Request;
use tower::ServiceExt;

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    storage: Storage,
    jsonl: String,
}

/// A catalog with two packages, big enough (> 1 KiB) to be compressed, and its gzip copy.
fn fixture() -> Fixture {
    let f = fixture_before_its_gzip_copy();
    let stored = f.storage.get("cat").expect("get").expect("stored");
    stored.write_gzip_copy().expect("gzip copy");
    f
}

/// [`fixture`] in the moment after it went live, before its gzip copy is written.
fn fixture_before_its_gzip_copy() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage =
        Storage::open_with(dir.path(), crate::storage::GzipCopies::WhenAsked).expect("storage");
    let mut w = storage
        .begin("cat", "sha256:1")
        .expect("begin")
        .expect("writer");
    let mut jsonl = String::new();
    let mut push = |schema: &str, package: &str, name: &str, blob: String| {
        w.push(schema, package, name, blob.as_bytes())
            .expect("push");
        jsonl.push_str(&blob);
        jsonl.push('\n');
    };
    for pkg in ["bar", "foo"] {
        push(
            "olm.package",
            "",
            pkg,
            format!(r#"{{"name":"{pkg}","schema":"olm.package"}}"#),
        );
        push(
            "olm.channel",
            pkg,
            "stable",
            format!(
                r#"{{"entries":[{{"name":"{pkg}.v1"}}],"name":"stable","package":"{pkg}","schema":"olm.channel"}}"#
            ),
        );
        for v in 0..10 {
            let pad = "x".repeat(40);
            push(
                "olm.bundle",
                pkg,
                &format!("{pkg}.v{v}"),
                format!(
                    r#"{{"image":"quay.io/{pkg}:{v}{pad}","name":"{pkg}.v{v}","package":"{pkg}","schema":"olm.bundle"}}"#
                ),
            );
        }
    }
    w.commit().expect("commit");
    Fixture {
        _dir: dir,
        storage,
        jsonl,
    }
}

async fn send(storage: &Storage, req: Request<Body>) -> (StatusCode, HeaderMap, Vec<u8>) {
    let resp = router(storage.clone(), Metrics::new())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = to_bytes(resp.into_body(), usize::MAX).await.expect("body");
    (status, headers, body.to_vec())
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).expect("request")
}

fn get_with(uri: &str, name: &str, value: &str) -> Request<Body> {
    Request::get(uri)
        .header(name, value)
        .body(Body::empty())
        .expect("request")
}

fn h<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn gunzip(bytes: &[u8]) -> String {
    let mut out = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut out)
        .expect("gunzip");
    out
}

#[tokio::test]
async fn all_serves_the_whole_catalog_as_json_lines() {
    let f = fixture();
    let (status, headers, body) = send(&f.storage, get("/catalogs/cat/api/v1/all")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(String::from_utf8(body).expect("utf8"), f.jsonl);
    assert_eq!(h(&headers, "content-type"), Some("application/jsonl"));
    assert_eq!(h(&headers, "accept-ranges"), Some("bytes"));
    assert_eq!(
        h(&headers, "content-length"),
        Some(f.jsonl.len().to_string().as_str())
    );
    assert_eq!(h(&headers, "vary"), Some("Accept-Encoding"));
    let lm = h(&headers, "last-modified").expect("last-modified");
    assert!(httpdate::parse_http_date(lm).is_ok(), "{lm}");
}

#[tokio::test]
async fn head_on_all_sends_headers_only() {
    let f = fixture();
    let req = Request::head("/catalogs/cat/api/v1/all")
        .header("accept-encoding", "gzip")
        .body(Body::empty())
        .expect("req");
    let (status, headers, body) = send(&f.storage, req).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.is_empty());
    assert_eq!(
        h(&headers, "content-length"),
        Some(f.jsonl.len().to_string().as_str())
    );
    assert_eq!(h(&headers, "content-encoding"), None);
}

#[tokio::test]
async fn all_is_gzipped_when_the_client_accepts_it() {
    let f = fixture();
    let (status, headers, body) = send(
        &f.storage,
        get_with(
            "/catalogs/cat/api/v1/all",
            "accept-encoding",
            "gzip, deflate",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h(&headers, "content-encoding"), Some("gzip"));
    assert_eq!(h(&headers, "accept-ranges"), None);
    let stored = f.storage.get("cat").expect("get").expect("stored");
    let copy = stored.gzip_len().expect("gzip copy").to_string();
    assert_eq!(h(&headers, "content-length"), Some(copy.as_str()));
    assert_eq!(gunzip(&body), f.jsonl);
}

/// Until the gzip copy is written, `/all` and unfiltered `/metas` are compressed per request,
/// as upstream compresses every one: the same decompressed bytes, chunked.
#[tokio::test]
async fn before_its_gzip_copy_exists_a_catalog_is_compressed_per_request() {
    let f = fixture_before_its_gzip_copy();
    for path in ["/catalogs/cat/api/v1/all", "/catalogs/cat/api/v1/metas"] {
        let (status, headers, body) =
            send(&f.storage, get_with(path, "accept-encoding", "gzip")).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(h(&headers, "content-encoding"), Some("gzip"), "{path}");
        assert_eq!(h(&headers, "content-length"), None, "{path}");
        assert_eq!(gunzip(&body), f.jsonl, "{path}");
    }
    let (_, headers, body) = send(&f.storage, get("/catalogs/cat/api/v1/all")).await;
    assert_eq!(h(&headers, "content-encoding"), None);
    assert_eq!(String::from_utf8(body).expect("utf8"), f.jsonl);
}

#[tokio::test]
async fn small_catalogs_are_not_compressed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path()).expect("storage");
    let mut w = storage.begin("tiny", "d").expect("begin").expect("writer");
    w.push(
        "olm.package",
        "",
        "a",
        br#"{"name":"a","schema":"olm.package"}"#,
    )
    .expect("push");
    w.commit().expect("commit");
    let (_, headers, body) = send(
        &storage,
        get_with("/catalogs/tiny/api/v1/all", "accept-encoding", "gzip"),
    )
    .await;
    assert_eq!(h(&headers, "content-encoding"), None);
    assert_eq!(body, b"{\"name\":\"a\",\"schema\":\"olm.package\"}\n");
}

#[tokio::test]
async fn unknown_catalogs_are_404() {
    let f = fixture();
    for uri in ["/catalogs/nope/api/v1/all", "/catalogs/nope/api/v1/metas"] {
        let (status, headers, body) = send(&f.storage, get(uri)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(body, b"404 Not Found\n");
        assert_eq!(
            h(&headers, "content-type"),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(h(&headers, "x-content-type-options"), Some("nosniff"));
    }
}

#[tokio::test]
async fn unknown_paths_get_the_mux_404() {
    let f = fixture();
    for uri in [
        "/",
        "/catalogs/cat",
        "/catalogs/cat/api/v1/other",
        "/catalogs/cat/api/v1/all/",
    ] {
        let (status, headers, body) = send(&f.storage, get(uri)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(body, b"404 page not found\n");
        assert_eq!(h(&headers, "vary"), Some("Accept-Encoding"));
    }
}

#[tokio::test]
async fn invalid_catalog_names_are_400_with_the_validation_message() {
    let f = fixture();
    for uri in [
        "/catalogs/Bad_Name/api/v1/all",
        "/catalogs/..%2F..%2Fetc/api/v1/metas",
    ] {
        let (status, _, body) = send(&f.storage, get(uri)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        let text = String::from_utf8(body).expect("utf8");
        assert!(
            text.starts_with("invalid catalog name: a lowercase RFC 1123 subdomain"),
            "{text}"
        );
        assert!(text.ends_with("')\n"), "{text}");
    }
}

#[tokio::test]
async fn other_methods_are_405() {
    let f = fixture();
    for uri in ["/catalogs/cat/api/v1/all", "/catalogs/cat/api/v1/metas"] {
        for method in [Method::POST, Method::PUT, Method::DELETE] {
            let req = Request::builder()
                .method(method.clone())
                .uri(uri)
                .body(Body::empty())
                .expect("req");
            let (status, _, body) = send(&f.storage, req).await;
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
            assert_eq!(body, b"Method Not Allowed\n");
        }
    }
}

#[tokio::test]
async fn if_modified_since_answers_304_on_both_endpoints() {
    let f = fixture();
    let (_, headers, _) = send(&f.storage, get("/catalogs/cat/api/v1/all")).await;
    let lm = h(&headers, "last-modified").expect("lm").to_string();
    for uri in [
        "/catalogs/cat/api/v1/all",
        "/catalogs/cat/api/v1/metas?package=foo",
    ] {
        let (status, headers, body) =
            send(&f.storage, get_with(uri, "if-modified-since", &lm)).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{uri}");
        assert!(body.is_empty());
        assert_eq!(h(&headers, "content-type"), None);
        assert_eq!(h(&headers, "last-modified"), Some(lm.as_str()));
    }
    let old = "Mon, 01 Jan 2001 00:00:00 GMT";
    let (status, _, _) = send(
        &f.storage,
        get_with("/catalogs/cat/api/v1/all", "if-modified-since", old),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_single_range_is_206_with_the_exact_bytes() {
    let f = fixture();
    let (status, headers, body) = send(
        &f.storage,
        get_with("/catalogs/cat/api/v1/all", "range", "bytes=10-19"),
    )
    .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(body, f.jsonl.as_bytes()[10..20]);
    assert_eq!(
        h(&headers, "content-range"),
        Some(format!("bytes 10-19/{}", f.jsonl.len()).as_str())
    );
    assert_eq!(h(&headers, "content-length"), Some("10"));
    // A range is never compressed (upstream's gzip middleware skips Content-Range responses).
    let req = Request::get("/catalogs/cat/api/v1/all")
        .header("range", "bytes=-5")
        .header("accept-encoding", "gzip")
        .body(Body::empty())
        .expect("req");
    let (status, headers, body) = send(&f.storage, req).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(h(&headers, "content-encoding"), None);
    assert_eq!(body, f.jsonl.as_bytes()[f.jsonl.len() - 5..]);
}

#[tokio::test]
async fn several_ranges_are_a_multipart_body() {
    let f = fixture();
    let (status, headers, body) = send(
        &f.storage,
        get_with("/catalogs/cat/api/v1/all", "range", "bytes=0-4,20-24"),
    )
    .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    let ct = h(&headers, "content-type").expect("ct");
    let boundary = ct
        .strip_prefix("multipart/byteranges; boundary=")
        .expect("multipart");
    let size = f.jsonl.len();
    let expected = format!(
        "--{b}\r\nContent-Range: bytes 0-4/{size}\r\nContent-Type: application/jsonl\r\n\r\n{p1}\r\n--{b}\r\nContent-Range: bytes 20-24/{size}\r\nContent-Type: application/jsonl\r\n\r\n{p2}\r\n--{b}--\r\n",
        b = boundary,
        p1 = &f.jsonl[0..5],
        p2 = &f.jsonl[20..25],
    );
    assert_eq!(String::from_utf8(body).expect("utf8"), expected);
    assert_eq!(
        h(&headers, "content-length"),
        Some(expected.len().to_string().as_str())
    );
}

#[tokio::test]
async fn unsatisfiable_ranges_are_416() {
    let f = fixture();
    let size = f.jsonl.len();
    let (status, headers, body) = send(
        &f.storage,
        get_with(
            "/catalogs/cat/api/v1/all",
            "range",
            &format!("bytes={size}-"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        h(&headers, "content-range"),
        Some(format!("bytes */{size}").as_str())
    );
    assert_eq!(body, b"invalid range: failed to overlap\n");
    let (status, _, body) = send(
        &f.storage,
        get_with("/catalogs/cat/api/v1/all", "range", "bytes=5-1"),
    )
    .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(body, b"invalid range\n");
}

#[tokio::test]
async fn a_stale_if_range_serves_the_whole_catalog() {
    let f = fixture();
    let req = Request::get("/catalogs/cat/api/v1/all")
        .header("range", "bytes=0-1")
        .header("if-range", "Mon, 01 Jan 2001 00:00:00 GMT")
        .body(Body::empty())
        .expect("req");
    let (status, _, body) = send(&f.storage, req).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.len(), f.jsonl.len());
}

fn lines_matching(jsonl: &str, pred: impl Fn(&serde_json::Value) -> bool) -> String {
    jsonl
        .lines()
        .filter(|l| pred(&serde_json::from_str(l).expect("json")))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[tokio::test]
async fn metas_filters_by_schema_package_and_name() {
    let f = fixture();
    let field = |v: &serde_json::Value, k: &str| {
        v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string()
    };
    type Predicate<'a> = Box<dyn Fn(&serde_json::Value) -> bool + 'a>;
    let cases: Vec<(&str, Predicate)> = vec![
        (
            "schema=olm.package",
            Box::new(|v| field(v, "schema") == "olm.package"),
        ),
        ("package=foo", Box::new(|v| field(v, "package") == "foo")),
        (
            "schema=olm.package&name=foo",
            Box::new(|v| field(v, "schema") == "olm.package" && field(v, "name") == "foo"),
        ),
        (
            "schema=olm.bundle&package=bar&name=bar.v3",
            Box::new(|v| field(v, "name") == "bar.v3"),
        ),
        ("name=stable", Box::new(|v| field(v, "name") == "stable")),
        ("package=nope", Box::new(|_| false)),
        ("schema=", Box::new(|_| true)),
        ("", Box::new(|_| true)),
    ];
    for (query, pred) in cases {
        let (status, headers, body) = send(
            &f.storage,
            get(&format!("/catalogs/cat/api/v1/metas?{query}")),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{query}");
        assert_eq!(
            h(&headers, "content-type"),
            Some("application/jsonl"),
            "{query}"
        );
        assert_eq!(
            String::from_utf8(body).expect("utf8"),
            lines_matching(&f.jsonl, pred),
            "{query}"
        );
    }
}

#[tokio::test]
async fn metas_rejects_unknown_parameters() {
    let f = fixture();
    let (status, _, body) = send(
        &f.storage,
        get("/catalogs/cat/api/v1/metas?package=foo&pkg=bar"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body, b"400 Bad Request\n");
}

#[tokio::test]
async fn metas_compresses_large_answers_on_the_fly() {
    let f = fixture();
    let (status, headers, body) = send(
        &f.storage,
        get_with(
            "/catalogs/cat/api/v1/metas?package=foo",
            "accept-encoding",
            "gzip",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h(&headers, "content-encoding"), Some("gzip"));
    assert_eq!(h(&headers, "content-length"), None);
    let field = |v: &serde_json::Value| v.get("package").and_then(|x| x.as_str()) == Some("foo");
    assert_eq!(gunzip(&body), lines_matching(&f.jsonl, field));
    let (_, headers, body) = send(
        &f.storage,
        get_with(
            "/catalogs/cat/api/v1/metas?schema=olm.package&name=foo",
            "accept-encoding",
            "gzip",
        ),
    )
    .await;
    assert_eq!(
        h(&headers, "content-encoding"),
        None,
        "answers under 1 KiB stay plain"
    );
    assert_eq!(body, b"{\"name\":\"foo\",\"schema\":\"olm.package\"}\n");
}

// Upstream's `/metas` handler writes `http.Error`'s 500 text and carries on serving the content
// under the error's headers (observed on upstream's handler code run under Go 1.26).
#[tokio::test]
async fn metas_answers_a_bad_if_modified_since_with_500_then_the_content_like_upstream() {
    let f = fixture();
    let (status, headers, body) = send(
        &f.storage,
        get_with(
            "/catalogs/cat/api/v1/metas?name=foo&schema=olm.package",
            "if-modified-since",
            "not a date",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        h(&headers, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(h(&headers, "x-content-type-options"), Some("nosniff"));
    assert!(h(&headers, "last-modified").is_some());
    assert_eq!(
        String::from_utf8(body).expect("utf8"),
        "500 Internal Server Error\n{\"name\":\"foo\",\"schema\":\"olm.package\"}\n"
    );
    let req = Request::get("/catalogs/cat/api/v1/metas?name=foo&schema=olm.package")
        .header("if-modified-since", "not a date")
        .header("accept-encoding", "gzip")
        .body(Body::empty())
        .expect("req");
    let (_, headers, _) = send(&f.storage, req).await;
    let types: Vec<&str> = headers
        .get_all("content-type")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(types, ["text/plain; charset=utf-8", "application/jsonl"]);
}

// Issue 14: a valid date before 1970 is a date (Go's `http.ParseTime` reads it), not a 500.
#[tokio::test]
async fn a_pre_1970_if_modified_since_serves_the_content() {
    let f = fixture();
    for uri in [
        "/catalogs/cat/api/v1/metas?package=foo",
        "/catalogs/cat/api/v1/all",
    ] {
        let (status, _, body) = send(
            &f.storage,
            get_with(uri, "if-modified-since", "Mon, 02 Jan 1950 15:04:05 GMT"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert!(!body.is_empty(), "{uri}");
    }
}

// Issue 15 item 1: Go's `URL.Query()` drops a pair holding `;` and a pair with a bad escape, so
// upstream answers as if the parameter were absent: the whole catalog.
#[tokio::test]
async fn metas_drops_query_pairs_the_way_go_does() {
    let f = fixture();
    for uri in [
        "/catalogs/cat/api/v1/metas?package=foo;name=x",
        "/catalogs/cat/api/v1/metas?schema=%zz",
        "/catalogs/cat/api/v1/metas?schema=%4",
        "/catalogs/cat/api/v1/metas?bogus;=1",
    ] {
        let (status, headers, body) = send(&f.storage, get(uri)).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert_eq!(h(&headers, "content-type"), Some("application/jsonl"));
        assert_eq!(String::from_utf8(body).expect("utf8"), f.jsonl, "{uri}");
    }
    // Other pairs still count: `+` is a space, and an undecodable byte matches nothing.
    let (_, _, body) = send(
        &f.storage,
        get("/catalogs/cat/api/v1/metas?schema=%zz&name=foo&schema=olm.package"),
    )
    .await;
    assert_eq!(body, b"{\"name\":\"foo\",\"schema\":\"olm.package\"}\n");
    let (status, _, body) = send(&f.storage, get("/catalogs/cat/api/v1/metas?package=%ff")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.is_empty());
    let (status, _, _) = send(&f.storage, get("/catalogs/cat/api/v1/metas?=x")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

// Issue 15 item 2: Go's `ServeMux` answers a path that is not clean with a 307 to the clean one.
#[tokio::test]
async fn unclean_paths_are_redirected_with_307_like_go_serve_mux() {
    let f = fixture();
    for (uri, location) in [
        ("/catalogs/cat//api/v1/all", "/catalogs/cat/api/v1/all"),
        ("/catalogs/cat/api/v1/./all", "/catalogs/cat/api/v1/all"),
        ("/catalogs/cat/api/v1/x/../all", "/catalogs/cat/api/v1/all"),
        (
            "/catalogs/cat/api/v1//metas?package=foo",
            "/catalogs/cat/api/v1/metas?package=foo",
        ),
    ] {
        let (status, headers, body) = send(&f.storage, get(uri)).await;
        assert_eq!(status, StatusCode::TEMPORARY_REDIRECT, "{uri}");
        assert_eq!(h(&headers, "location"), Some(location), "{uri}");
        assert_eq!(
            h(&headers, "content-type"),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(h(&headers, "vary"), Some("Accept-Encoding"));
        let expected = format!(
            "<a href=\"{}\">Temporary Redirect</a>.\n\n",
            location.replace('&', "&amp;")
        );
        assert_eq!(String::from_utf8(body).expect("utf8"), expected);
    }
    let req = Request::head("/catalogs/cat//api/v1/all")
        .body(Body::empty())
        .expect("req");
    let (status, headers, body) = send(&f.storage, req).await;
    assert_eq!(status, StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(h(&headers, "location"), Some("/catalogs/cat/api/v1/all"));
    assert!(body.is_empty());
    // Segments are compared after decoding, as Go's mux does.
    let (status, _, body) = send(&f.storage, get("/catalogs/cat/api/v1/%61ll")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(String::from_utf8(body).expect("utf8"), f.jsonl);
    let (status, headers, body) = send(&f.storage, get("/catalogs/cat/api/v1/%zz")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body, b"400 Bad Request");
    assert_eq!(h(&headers, "vary"), None);
}

// Issue 14: `bytes=-0` on empty content was `bytes 0-18446744073709551615/0` (a panic in debug
// builds); Go's ServeContent answers 206 with `bytes 0--1/0` and no body.
#[tokio::test]
async fn a_zero_suffix_range_on_an_empty_catalog_is_gos_206() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path()).expect("storage");
    let w = storage
        .begin("empty", "sha256:0")
        .expect("begin")
        .expect("writer");
    w.commit().expect("commit");
    let (status, headers, body) = send(
        &storage,
        get_with("/catalogs/empty/api/v1/all", "range", "bytes=-0"),
    )
    .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(h(&headers, "content-range"), Some("bytes 0--1/0"));
    assert_eq!(h(&headers, "content-length"), Some("0"));
    assert!(body.is_empty());
    let f = fixture();
    let size = f.jsonl.len();
    let (status, headers, _) = send(
        &f.storage,
        get_with("/catalogs/cat/api/v1/all", "range", "bytes=-0"),
    )
    .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        h(&headers, "content-range"),
        Some(format!("bytes {size}-{}/{size}", size - 1).as_str())
    );
}

#[tokio::test]
async fn head_on_metas_sends_headers_only() {
    let f = fixture();
    let req = Request::head("/catalogs/cat/api/v1/metas?package=foo")
        .body(Body::empty())
        .expect("req");
    let (status, headers, body) = send(&f.storage, req).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.is_empty());
    assert_eq!(h(&headers, "content-type"), Some("application/jsonl"));
}

#[tokio::test]
async fn request_durations_are_recorded_by_status_code() {
    let f = fixture();
    let metrics = Metrics::new();
    let app = router(f.storage.clone(), metrics.clone());
    let resp = app
        .clone()
        .oneshot(get("/catalogs/cat/api/v1/all"))
        .await
        .expect("infallible");
    to_bytes(resp.into_body(), usize::MAX).await.expect("body");
    let resp = app
        .oneshot(get("/catalogs/nope/api/v1/all"))
        .await
        .expect("infallible");
    to_bytes(resp.into_body(), usize::MAX).await.expect("body");
    let text = metrics.encode();
    assert!(
        text.contains("catalogd_http_request_duration_seconds_count{code=\"200\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("catalogd_http_request_duration_seconds_count{code=\"404\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn ops_endpoints_report_health_readiness_and_metrics() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let ready = Arc::new(AtomicBool::new(false));
    let app = ops_router(Metrics::new(), ready.clone());
    let status = |uri: &'static str| {
        let app = app.clone();
        async move { app.oneshot(get(uri)).await.expect("infallible").status() }
    };
    assert_eq!(status("/healthz").await, StatusCode::OK);
    assert_eq!(status("/readyz").await, StatusCode::SERVICE_UNAVAILABLE);
    ready.store(true, Ordering::Release);
    assert_eq!(status("/readyz").await, StatusCode::OK);
    assert_eq!(status("/metrics").await, StatusCode::OK);
}
