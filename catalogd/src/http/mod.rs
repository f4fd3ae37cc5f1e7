//! The catalog content HTTP API: `GET|HEAD /catalogs/{name}/api/v1/all` and `/api/v1/metas`.
//!
//! Input: requests and the [`Storage`]. Output: responses with upstream catalogd's status codes,
//! headers and bytes. Reads stored content from the local filesystem; no other IO.
//!
//! Where the bytes differ from upstream on purpose: gzip responses of `/all` (and of `/metas`
//! without filters) come from the copy compressed at store time instead of being compressed per
//! request, and carry a `Content-Length`; uncompressed `/metas` responses carry one too.

// The pure parsers (`conditional`, `gotime`, `path`, `range`, `negotiate`) are also compiled
// into the fuzz targets by path (fuzz/src/http_parsers.rs): keep them free of crate-internal
// dependencies other than each other.
mod body;
mod conditional;
mod gotime;
mod negotiate;
mod path;
mod range;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use olm_runtime::server::OverTls;

use crate::metrics::Metrics;
use crate::storage::{Query, Section, Storage, StoredCatalog};
use body::Piece;
use conditional::{Rules, Verdict};
use range::{ByteRange, RangeError};

pub use negotiate::{accepts_gzip, validate_catalog_name};

const JSONL: &str = "application/jsonl";

/// Routes of the catalog content API, under `/catalogs/`, timed into `metrics`. Paths are
/// routed as Go's `ServeMux` routes them for upstream (see [`path`]): every request that no
/// other merged route takes comes through [`dispatch`].
pub fn router(storage: Storage, metrics: Metrics) -> Router {
    router_with_metas(storage, metrics, true)
}

/// [`router`], with `/api/v1/metas` answering 404 unless `metas` (upstream's
/// `APIV1MetasHandler` gate: off, upstream registers no handler for the path).
pub fn router_with_metas(storage: Storage, metrics: Metrics, metas: bool) -> Router {
    Router::new()
        .fallback(dispatch)
        .layer(axum::Extension(MetasEnabled(metas)))
        .layer(axum::middleware::map_response(vary_accept_encoding))
        .layer(axum::middleware::from_fn_with_state(
            metrics,
            crate::metrics::time_requests,
        ))
        .with_state(storage)
}

/// Operational endpoints: `/healthz`, `/readyz` (ready once `ready` is set) and `/metrics`, as
/// every OLM binary serves them (`olm_runtime::ops`).
pub fn ops_router(
    metrics: Metrics,
    ready: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Router {
    olm_runtime::ops::router(metrics.registry(), ready)
}

/// Marks a response the Go server writes itself, before any handler (and so before the gzip
/// middleware) sees the request.
#[derive(Clone, Copy)]
struct ServerLevel;

/// Upstream's gzip middleware marks every response as varying with `Accept-Encoding`.
async fn vary_accept_encoding(mut response: Response) -> Response {
    if response.extensions().get::<ServerLevel>().is_none() {
        response
            .headers_mut()
            .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    response
}

/// Whether `/api/v1/metas` is served.
#[derive(Clone, Copy)]
struct MetasEnabled(bool);

/// Routes one request as Go's `ServeMux` would (see [`path`]).
async fn dispatch(State(storage): State<Storage>, request: Request) -> Response {
    let metas_enabled = request
        .extensions()
        .get::<MetasEnabled>()
        .is_none_or(|m| m.0);
    let pacing = body::Pacing::of_connection(request.extensions().get::<OverTls>().is_some());
    let (parts, _body) = request.into_parts();
    let query = parts.uri.query();
    match path::route(parts.uri.path(), query) {
        path::Route::BadRequest => {
            // Go's server rejects the request line itself: plain text, no newline, and it
            // closes the connection.
            let mut r = (
                StatusCode::BAD_REQUEST,
                [
                    (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                    (header::CONNECTION, "close"),
                ],
                "400 Bad Request",
            )
                .into_response();
            r.extensions_mut().insert(ServerLevel);
            r
        }
        path::Route::Redirect(location) => redirect(&parts.method, &location),
        path::Route::All(catalog) => {
            all(storage, parts.method, &catalog, &parts.headers, pacing).await
        }
        path::Route::Metas(catalog) if metas_enabled => {
            metas(
                storage,
                parts.method,
                &catalog,
                query,
                &parts.headers,
                pacing,
            )
            .await
        }
        path::Route::Metas(_) => go_error(StatusCode::NOT_FOUND, "404 page not found"),
        path::Route::NotFound => go_error(StatusCode::NOT_FOUND, "404 page not found"),
    }
}

/// Go's `http.Redirect` with `307 Temporary Redirect`.
fn redirect(method: &Method, location: &str) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::TEMPORARY_REDIRECT)
        .header(header::LOCATION, location);
    if method == Method::GET || method == Method::HEAD {
        builder = builder.header(header::CONTENT_TYPE, "text/html; charset=utf-8");
    }
    let body = if method == Method::GET {
        Body::from(path::redirect_body(location))
    } else {
        Body::empty()
    };
    builder.body(body).unwrap_or_else(|_| internal_error())
}

/// An error response the way Go's `http.Error` writes one.
fn go_error(status: StatusCode, text: &str) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        format!("{text}\n"),
    )
        .into_response()
}

fn status_text(status: StatusCode) -> String {
    format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
}

/// Checks method and catalog name and loads the catalog, or says which error to answer with.
#[allow(clippy::result_large_err)] // The error is the response itself, built once per request.
fn open(
    storage: &Storage,
    method: &Method,
    catalog: &[u8],
) -> Result<std::sync::Arc<StoredCatalog>, Response> {
    if method != Method::GET && method != Method::HEAD {
        return Err(go_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed",
        ));
    }
    negotiate::validate_catalog_name_bytes(catalog)
        .map_err(|msg| go_error(StatusCode::BAD_REQUEST, &msg))?;
    // A valid name is ASCII.
    let catalog = std::str::from_utf8(catalog).unwrap_or_default();
    match storage.get(catalog) {
        Ok(Some(stored)) => Ok(stored),
        Ok(None) => Err(go_error(
            StatusCode::NOT_FOUND,
            &status_text(StatusCode::NOT_FOUND),
        )),
        Err(e) => {
            tracing::error!(catalog, error = %e, "failed to open stored catalog");
            Err(go_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &status_text(StatusCode::INTERNAL_SERVER_ERROR),
            ))
        }
    }
}

fn last_modified(stored: &StoredCatalog) -> HeaderValue {
    HeaderValue::from_str(&httpdate::fmt_http_date(stored.modified()))
        .unwrap_or_else(|_| HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"))
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A 304 carries `Last-Modified` but no content headers (Go's `writeNotModified`).
fn not_modified(stored: &StoredCatalog) -> Response {
    let mut r = StatusCode::NOT_MODIFIED.into_response();
    r.headers_mut()
        .insert(header::LAST_MODIFIED, last_modified(stored));
    r
}

/// `GET|HEAD /catalogs/{catalog}/api/v1/all`: the whole catalog, with conditional requests,
/// byte ranges (single and multipart) and gzip, as Go's `http.ServeContent` behind gzhttp.
async fn all(
    storage: Storage,
    method: Method,
    catalog: &[u8],
    headers: &HeaderMap,
    pacing: body::Pacing,
) -> Response {
    let stored = match open(&storage, &method, catalog) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let size = stored.len();
    let use_range = match conditional::evaluate(headers, stored.modified(), Rules::ServeContent) {
        Verdict::NotModified => return not_modified(&stored),
        Verdict::PreconditionFailed => {
            let mut r = StatusCode::PRECONDITION_FAILED.into_response();
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSONL));
            r.headers_mut()
                .insert(header::LAST_MODIFIED, last_modified(&stored));
            return r;
        }
        Verdict::BadModifiedSince => return unreachable_for_serve_content(),
        Verdict::Proceed { use_range } => use_range,
    };

    let range_header = if use_range {
        header_str(headers, header::RANGE).unwrap_or("")
    } else {
        ""
    };
    let mut ranges = match range::parse_range(range_header, size) {
        Ok(r) => r,
        // Some clients send a range with every request; an empty file is served whole.
        Err(RangeError::NoOverlap) if size == 0 => Vec::new(),
        Err(e) => {
            let mut r = go_error(StatusCode::RANGE_NOT_SATISFIABLE, e.message());
            if e == RangeError::NoOverlap
                && let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}"))
            {
                r.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return r;
        }
    };
    if range::total_len(&ranges) > size {
        // More bytes than the file: an attack or a confused client; serve the whole file.
        ranges.clear();
    }

    let mut builder = Response::builder().header(header::LAST_MODIFIED, last_modified(&stored));
    let head = method == Method::HEAD;
    // Compressed per request: only while the stored gzip copy is still being written.
    let mut on_the_fly = false;
    let (status, pieces, content_type) = match ranges.as_slice() {
        [] => {
            let gzip = !head
                && size >= negotiate::GZIP_MIN_SIZE
                && accepts_gzip(header_str(headers, header::ACCEPT_ENCODING));
            if gzip {
                builder = builder.header(header::CONTENT_ENCODING, "gzip");
                let piece = match stored.gzip_len() {
                    Some(len) => Piece::Gzip(Section { offset: 0, len }),
                    None => {
                        on_the_fly = true;
                        Piece::Jsonl(Section {
                            offset: 0,
                            len: size,
                        })
                    }
                };
                (StatusCode::OK, vec![piece], JSONL.to_string())
            } else {
                builder = builder.header(header::ACCEPT_RANGES, "bytes");
                (
                    StatusCode::OK,
                    vec![Piece::Jsonl(Section {
                        offset: 0,
                        len: size,
                    })],
                    JSONL.to_string(),
                )
            }
        }
        [one] => {
            builder = builder
                .header(header::ACCEPT_RANGES, "bytes")
                .header(header::CONTENT_RANGE, one.content_range(size));
            let section = Section {
                offset: one.start,
                len: one.len,
            };
            (
                StatusCode::PARTIAL_CONTENT,
                vec![Piece::Jsonl(section)],
                JSONL.to_string(),
            )
        }
        many => {
            builder = builder.header(header::ACCEPT_RANGES, "bytes");
            let boundary = random_boundary();
            let pieces = multipart_pieces(many, size, &boundary);
            (
                StatusCode::PARTIAL_CONTENT,
                pieces,
                format!("multipart/byteranges; boundary={boundary}"),
            )
        }
    };
    builder = builder
        .status(status)
        .header(header::CONTENT_TYPE, content_type);
    if !on_the_fly {
        builder = builder.header(header::CONTENT_LENGTH, body::total_len(&pieces));
    }
    let body = if head {
        Body::empty()
    } else {
        body::stream(stored, pieces, on_the_fly, pacing)
    };
    builder.body(body).unwrap_or_else(|_| internal_error())
}

fn unreachable_for_serve_content() -> Response {
    // ServeContent rules never produce this verdict; answer as a server error rather than panic.
    internal_error()
}

fn internal_error() -> Response {
    go_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        &status_text(StatusCode::INTERNAL_SERVER_ERROR),
    )
}

/// The parts of a `multipart/byteranges` body, laid out as Go's `mime/multipart` writes them.
fn multipart_pieces(ranges: &[ByteRange], size: u64, boundary: &str) -> Vec<Piece> {
    let mut pieces = Vec::with_capacity(ranges.len() * 2 + 1);
    for (i, r) in ranges.iter().enumerate() {
        let lead = if i == 0 { "" } else { "\r\n" };
        let head = format!(
            "{lead}--{boundary}\r\nContent-Range: {}\r\nContent-Type: {JSONL}\r\n\r\n",
            r.content_range(size)
        );
        pieces.push(Piece::Static(Bytes::from(head)));
        pieces.push(Piece::Jsonl(Section {
            offset: r.start,
            len: r.len,
        }));
    }
    pieces.push(Piece::Static(Bytes::from(format!(
        "\r\n--{boundary}--\r\n"
    ))));
    pieces
}

fn random_boundary() -> String {
    let bytes: [u8; 30] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `GET|HEAD /catalogs/{catalog}/api/v1/metas?schema=&package=&name=`: the blobs matching every
/// given field, in catalog order. Unknown parameters are a 400; no parameters mean every blob.
/// Parameters are read as Go's `URL.Query()` reads them ([`negotiate::parse_metas_query`]).
///
/// An unparseable `If-Modified-Since` gets what upstream's handler writes: `http.Error`'s 500
/// text, then (its handler does not stop) the content it would have served, under the error's
/// headers.
async fn metas(
    storage: Storage,
    method: Method,
    catalog: &[u8],
    query: Option<&str>,
    headers: &HeaderMap,
    pacing: body::Pacing,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return go_error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    }
    if let Err(msg) = negotiate::validate_catalog_name_bytes(catalog) {
        return go_error(StatusCode::BAD_REQUEST, &msg);
    }
    let params = match negotiate::parse_metas_query(query) {
        Ok(p) => p,
        Err(_) => {
            return go_error(
                StatusCode::BAD_REQUEST,
                &status_text(StatusCode::BAD_REQUEST),
            );
        }
    };
    let stored = match open(&storage, &method, catalog) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let mut error_prefix = None;
    match conditional::evaluate(headers, stored.modified(), Rules::Metas) {
        Verdict::NotModified => return not_modified(&stored),
        Verdict::PreconditionFailed => {
            let mut r = StatusCode::PRECONDITION_FAILED.into_response();
            r.headers_mut()
                .insert(header::LAST_MODIFIED, last_modified(&stored));
            return r;
        }
        Verdict::BadModifiedSince => {
            error_prefix = Some(format!(
                "{}\n",
                status_text(StatusCode::INTERNAL_SERVER_ERROR)
            ));
        }
        Verdict::Proceed { .. } => {}
    }

    let query = Query {
        schema: &params.schema,
        package: &params.package,
        name: &params.name,
    };
    let head = method == Method::HEAD;
    let gzip_ok = !head && accepts_gzip(header_str(headers, header::ACCEPT_ENCODING));
    let mut builder = Response::builder().header(header::LAST_MODIFIED, last_modified(&stored));
    builder = match &error_prefix {
        None => builder
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, JSONL),
        Some(_) => {
            let b = builder
                .status(StatusCode::INTERNAL_SERVER_ERROR)
                .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
                .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
            // Behind gzhttp the header write is delayed, so the handler's later
            // `Content-Type: application/jsonl` is sent too, as a second value.
            if gzip_ok {
                b.header(header::CONTENT_TYPE, JSONL)
            } else {
                b
            }
        }
    };
    let (mut pieces, mut compress) = if params.matches_nothing {
        (Vec::new(), false)
    } else if query.is_empty() {
        let size = stored.len();
        // Without the stored copy (still being written), compressed per request below.
        let stored_gzip = stored
            .gzip_len()
            .filter(|_| gzip_ok && size >= negotiate::GZIP_MIN_SIZE && error_prefix.is_none());
        if let Some(len) = stored_gzip {
            builder = builder.header(header::CONTENT_ENCODING, "gzip");
            (vec![Piece::Gzip(Section { offset: 0, len })], false)
        } else {
            (
                vec![Piece::Jsonl(Section {
                    offset: 0,
                    len: size,
                })],
                false,
            )
        }
    } else {
        let sections = body::coalesce(&stored.index().query(query));
        let pieces: Vec<Piece> = sections.into_iter().map(Piece::Jsonl).collect();
        (pieces, false)
    };
    if let Some(text) = error_prefix {
        if head {
            // Go's `http.Error` output is all a HEAD answer gets.
            pieces.clear();
        }
        pieces.insert(0, Piece::Static(Bytes::from(text)));
    }
    if !matches!(pieces.first(), Some(Piece::Gzip(_))) {
        compress = gzip_ok && body::total_len(&pieces) >= negotiate::GZIP_MIN_SIZE;
        if compress {
            builder = builder.header(header::CONTENT_ENCODING, "gzip");
        }
    }
    if !compress {
        builder = builder.header(header::CONTENT_LENGTH, body::total_len(&pieces));
    }
    let body = if head {
        Body::empty()
    } else {
        body::stream(stored, pieces, compress, pacing)
    };
    builder.body(body).unwrap_or_else(|_| internal_error())
}

#[cfg(test)]
mod tests;
