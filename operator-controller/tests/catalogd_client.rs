//! The catalogd content client against the real catalogd HTTP API on a 127.0.0.1 socket:
//! content equal to the directory source, caching by revision, gzip, retries, and no caching of
//! failures.
#![allow(clippy::unwrap_used)]

// One copy of the fixtures, shared with the pure crate's tests.
#[path = "../core/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use catalogd::ingest::ingest_dir;
use catalogd::metrics::Metrics;
use catalogd::storage::Storage;
use common::testdata;
use operator_controller::catalog_source::dir::DirSource;
use operator_controller::catalog_source::http::{
    CatalogEndpoint, CatalogdClient, ClientOptions, FetchError,
};
use operator_controller::resolve::PackageContent;
use reqwest::Url;

/// What the test server saw.
#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    /// `(path?query, Accept-Encoding, Content-Encoding)` of every request.
    log: Mutex<Vec<(String, String, String)>>,
}

async fn record(State(seen): State<Arc<Seen>>, req: Request, next: Next) -> Response {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    let uri = req.uri().to_string();
    let accept = header(req.headers(), "accept-encoding");
    let response = next.run(req).await;
    let encoding = header(response.headers(), "content-encoding");
    seen.log.lock().unwrap().push((uri, accept, encoding));
    response
}

fn header(h: &axum::http::HeaderMap, name: &str) -> String {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// Serves `app` on 127.0.0.1 and returns its address.
async fn serve(app: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    addr
}

/// catalogd serving `dir` as catalog `name`, behind a recording layer.
async fn catalogd(dir: &Path, name: &str) -> (Url, Arc<Seen>, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    let storage = Storage::open(root.path()).unwrap();
    ingest_dir(&storage, name, "sha256:test", dir).unwrap();
    let seen = Arc::new(Seen::default());
    let app = catalogd::http::router(storage, Metrics::new())
        .layer(axum::middleware::from_fn_with_state(seen.clone(), record));
    let addr = serve(app).await;
    let url = Url::parse(&format!("http://{addr}/catalogs/{name}")).unwrap();
    (url, seen, root)
}

fn fast_options() -> ClientOptions {
    ClientOptions {
        backoff: Duration::from_millis(5),
        ..ClientOptions::default()
    }
}

fn endpoint(name: &str, base_url: &Url, revision: Option<&str>) -> CatalogEndpoint {
    CatalogEndpoint {
        name: name.to_owned(),
        base_url: base_url.clone(),
        revision: revision.map(str::to_owned),
    }
}

/// Everything of a package's content that resolution reads, positions excluded.
fn summary(c: &PackageContent) -> String {
    let mut out = String::new();
    if let Some(p) = c.package() {
        out += &format!("package {} {:?}\n", p.name, p.default_channel);
    }
    for ch in c.channels() {
        out += &format!("channel {} {:?}\n", ch.channel.name, ch.channel.entries);
    }
    for b in c.bundles() {
        let props: Vec<_> = b
            .bundle
            .properties
            .iter()
            .map(|p| (p.type_.clone(), p.value.get().to_owned()))
            .collect();
        out += &format!(
            "bundle {} {} {:?} {:?}\n",
            b.bundle.name,
            b.bundle.image,
            b.version.as_ref().map(|v| v.to_string()),
            props
        );
    }
    if let Some(d) = c.deprecation() {
        out += &format!("deprecation {:?}\n", d.entries);
    }
    out
}

#[tokio::test]
async fn http_content_equals_the_directory_source_for_real_packages() {
    let dir = testdata("catalogs/community-operators-prod/catalogs/v4.22");
    let (url, seen, _root) = catalogd(&dir, "community").await;
    let client = CatalogdClient::new(fast_options()).unwrap();
    let source = DirSource::open(&dir).unwrap();
    for package in [
        "infinispan",
        "sailoperator",
        "konflux-operator",
        "hive-operator",
        "absent-package",
    ] {
        let over_http = client
            .package(&endpoint("community", &url, None), package)
            .await
            .unwrap();
        let from_dir = source.package(package).unwrap();
        assert_eq!(summary(&over_http), summary(&from_dir), "{package}");
        assert_eq!(over_http.is_empty(), package == "absent-package");
    }
    // Only /metas was asked, two requests per package, never /all.
    let log = seen.log.lock().unwrap();
    assert_eq!(log.len(), 10);
    assert!(log.iter().all(|(uri, _, _)| uri.contains("/api/v1/metas?")));
    assert!(
        log.iter()
            .any(|(uri, _, _)| uri.ends_with("/api/v1/metas?schema=olm.package&name=infinispan"))
    );
    assert!(
        log.iter()
            .any(|(uri, _, _)| uri.ends_with("/api/v1/metas?package=infinispan"))
    );
}

/// A catalogd that does not serve `/metas` (upstream's standard configuration:
/// `APIV1MetasHandler=false`) is read through `/all`, with the same content, package names
/// included.
#[tokio::test]
async fn without_metas_the_content_comes_from_all() {
    let dir = community_package_dir("infinispan");
    let root = tempfile::tempdir().unwrap();
    let storage = Storage::open(root.path()).unwrap();
    ingest_dir(&storage, "community", "sha256:test", &dir).unwrap();
    let seen = Arc::new(Seen::default());
    let app = catalogd::http::router_with_metas(storage, Metrics::new(), false)
        .layer(axum::middleware::from_fn_with_state(seen.clone(), record));
    let addr = serve(app).await;
    let url = Url::parse(&format!("http://{addr}/catalogs/community")).unwrap();
    let client = CatalogdClient::new(fast_options()).unwrap();
    let over_all = client
        .package(&endpoint("community", &url, None), "infinispan")
        .await
        .unwrap();
    let from_dir = DirSource::open(&dir)
        .unwrap()
        .package("infinispan")
        .unwrap();
    assert_eq!(summary(&over_all), summary(&from_dir));
    assert_eq!(over_all.bundles().len(), 49);
    let names = client.package_names(&url).await.unwrap();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["infinispan"]);
    let log = seen.log.lock().unwrap();
    let statuses: Vec<&str> = log.iter().map(|(uri, _, _)| uri.as_str()).collect();
    assert!(
        log.iter().any(|(uri, _, _)| uri.ends_with("/api/v1/all")),
        "{statuses:?}"
    );
}

/// One package's directory of the community tree (a small catalog of its own).
fn community_package_dir(name: &str) -> std::path::PathBuf {
    testdata("catalogs/community-operators-prod/catalogs/v4.22").join(name)
}

#[tokio::test]
async fn answers_are_requested_and_decoded_as_gzip() {
    let dir = community_package_dir("infinispan");
    let (url, seen, _root) = catalogd(&dir, "community").await;
    let client = CatalogdClient::new(fast_options()).unwrap();
    let content = client
        .package(&endpoint("community", &url, None), "infinispan")
        .await
        .unwrap();
    assert_eq!(content.bundles().len(), 49);
    {
        let log = seen.log.lock().unwrap();
        assert!(
            log.iter().all(|(_, accept, _)| accept.contains("gzip")),
            "{log:?}"
        );
        // The bundles answer is far above catalogd's 1 KiB compression threshold.
        assert!(
            log.iter()
                .any(|(uri, _, enc)| uri.ends_with("package=infinispan") && enc == "gzip"),
            "{log:?}"
        );
    }

    // Without gzip the same content arrives uncompressed.
    let plain = CatalogdClient::new(ClientOptions {
        accept_gzip: false,
        ..fast_options()
    })
    .unwrap();
    let again = plain
        .package(&endpoint("community", &url, None), "infinispan")
        .await
        .unwrap();
    assert_eq!(summary(&again), summary(&content));
    let log = seen.log.lock().unwrap();
    assert!(
        log[2..]
            .iter()
            .all(|(_, accept, enc)| !accept.contains("gzip") && enc.is_empty()),
        "{log:?}"
    );
}

#[tokio::test]
async fn a_known_revision_is_served_from_the_cache_without_any_request() {
    let root = tempfile::tempdir().unwrap();
    for package in ["infinispan", "konflux"] {
        let from = community_package_dir(package).join("catalog.yaml");
        std::fs::create_dir(root.path().join(package)).unwrap();
        std::fs::copy(from, root.path().join(package).join("catalog.yaml")).unwrap();
    }
    let dir = root.path().to_path_buf();
    let (url, seen, _root) = catalogd(&dir, "community").await;
    let client = CatalogdClient::new(fast_options()).unwrap();
    let ep = endpoint("community", &url, Some("sha256:aaa"));
    let first = client.package(&ep, "infinispan").await.unwrap();
    assert_eq!(seen.requests.load(Ordering::SeqCst), 2);
    let second = client.package(&ep, "infinispan").await.unwrap();
    assert!(
        Arc::ptr_eq(&first, &second),
        "the parsed content is shared, not re-parsed"
    );
    assert_eq!(seen.requests.load(Ordering::SeqCst), 2);
    assert_eq!(client.stats().cache_hits, 1);

    // Another package of the same revision is its own entry.
    client.package(&ep, "konflux-operator").await.unwrap();
    assert_eq!(seen.requests.load(Ordering::SeqCst), 4);

    // A new revision fetches again and drops the old revision's entries.
    let newer = endpoint("community", &url, Some("sha256:bbb"));
    let third = client.package(&newer, "infinispan").await.unwrap();
    assert!(!Arc::ptr_eq(&first, &third));
    assert_eq!(seen.requests.load(Ordering::SeqCst), 6);
    client.package(&ep, "konflux-operator").await.unwrap();
    assert_eq!(
        seen.requests.load(Ordering::SeqCst),
        8,
        "old revision was dropped"
    );

    // Without a revision nothing is cached.
    let none = endpoint("community", &url, None);
    client.package(&none, "infinispan").await.unwrap();
    client.package(&none, "infinispan").await.unwrap();
    assert_eq!(seen.requests.load(Ordering::SeqCst), 12);
}

#[tokio::test]
async fn concurrent_calls_for_one_key_share_one_fetch() {
    let dir = community_package_dir("sailoperator");
    let (url, seen, _root) = catalogd(&dir, "community").await;
    let client = Arc::new(CatalogdClient::new(fast_options()).unwrap());
    let ep = endpoint("community", &url, Some("sha256:aaa"));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (client, ep) = (client.clone(), ep.clone());
        tasks.push(tokio::spawn(async move {
            client.package(&ep, "sailoperator").await.unwrap()
        }));
    }
    let results: Vec<_> = futures_join(tasks).await;
    assert!(results.iter().all(|r| Arc::ptr_eq(r, &results[0])));
    assert_eq!(seen.requests.load(Ordering::SeqCst), 2);
}

async fn futures_join<T>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// A server answering `failures` requests with `status`, then serving a one-bundle package.
async fn flaky(status: StatusCode, failures: usize) -> (Url, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let state = (count.clone(), status, failures);
    let app = Router::new()
        .route(
            "/catalogs/flaky/api/v1/metas",
            axum::routing::get(
                |State((count, status, failures)): State<(Arc<AtomicUsize>, StatusCode, usize)>,
                 req: Request| async move {
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    if n < failures {
                        return (status, "nope").into_response();
                    }
                    let query = req.uri().query().unwrap_or("").to_owned();
                    let body = if query.starts_with("schema=olm.package") {
                        "{\"name\":\"p\",\"schema\":\"olm.package\"}\n"
                    } else {
                        "{\"image\":\"img\",\"name\":\"p.v1.0.0\",\"package\":\"p\",\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"p\",\"version\":\"1.0.0\"}}],\"schema\":\"olm.bundle\"}\n"
                    };
                    (StatusCode::OK, body).into_response()
                },
            ),
        )
        .with_state(state);
    let addr = serve(app).await;
    (
        Url::parse(&format!("http://{addr}/catalogs/flaky")).unwrap(),
        count,
    )
}

#[tokio::test]
async fn a_404_is_returned_at_once_and_never_cached() {
    // Two 404s: one per URL of the first call, which fails without retrying.
    let (url, count) = flaky(StatusCode::NOT_FOUND, 2).await;
    let client = CatalogdClient::new(fast_options()).unwrap();
    let ep = endpoint("flaky", &url, Some("sha256:1"));
    let err = client.package(&ep, "p").await.unwrap_err();
    assert!(matches!(err, FetchError::Status { status, .. } if status == StatusCode::NOT_FOUND));
    assert!(
        err.to_string().contains("unexpected status 404 Not Found"),
        "{err}"
    );
    assert_eq!(count.load(Ordering::SeqCst), 2);
    // The same revision is asked again: the failure was not cached.
    let content = client.package(&ep, "p").await.unwrap();
    assert_eq!(content.bundles()[0].bundle.name, "p.v1.0.0");
    assert_eq!(count.load(Ordering::SeqCst), 4);
    client.package(&ep, "p").await.unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    // Three 503s spread over the two URLs: each is retried within its three attempts.
    let (url, count) = flaky(StatusCode::SERVICE_UNAVAILABLE, 3).await;
    let client = CatalogdClient::new(fast_options()).unwrap();
    let content = client
        .package(&endpoint("flaky", &url, Some("sha256:1")), "p")
        .await
        .unwrap();
    assert_eq!(content.bundles().len(), 1);
    assert_eq!(count.load(Ordering::SeqCst), 5);
    assert_eq!(client.stats().requests, 5);
}

#[tokio::test]
async fn persistent_server_errors_give_up_after_the_attempts() {
    let (url, count) = flaky(StatusCode::INTERNAL_SERVER_ERROR, usize::MAX).await;
    let client = CatalogdClient::new(fast_options()).unwrap();
    let ep = endpoint("flaky", &url, Some("sha256:1"));
    let err = client.package(&ep, "p").await.unwrap_err();
    assert!(
        err.to_string().contains("500 Internal Server Error"),
        "{err}"
    );
    // try_join stops at the first URL to fail; the other may have used some of its attempts.
    let after_first = count.load(Ordering::SeqCst);
    assert!((3..=6).contains(&after_first), "{after_first}");
    client.package(&ep, "p").await.unwrap_err();
    assert!(
        count.load(Ordering::SeqCst) >= after_first + 3,
        "not cached"
    );
}

#[tokio::test]
async fn an_unreachable_catalogd_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = CatalogdClient::new(fast_options()).unwrap();
    let url = Url::parse(&format!("http://{addr}/catalogs/gone")).unwrap();
    let err = client
        .package(&endpoint("gone", &url, None), "p")
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Transport { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "failed to fetch http://{addr}/catalogs/gone/api/v1/metas?"
        )),
        "{text}"
    );
    assert!(
        client.stats().requests >= 3,
        "connection failures are retried"
    );
}

#[tokio::test]
async fn an_unparseable_answer_names_the_url() {
    let app = Router::new().route(
        "/catalogs/bad/api/v1/metas",
        axum::routing::get(|| async {
            "{\"schema\":\"olm.bundle\",\"package\":\"p\",\"name\":5}\n"
        }),
    );
    let addr = serve(app).await;
    let client = CatalogdClient::new(fast_options()).unwrap();
    let url = Url::parse(&format!("http://{addr}/catalogs/bad")).unwrap();
    let err = client
        .package(&endpoint("bad", &url, Some("sha256:1")), "p")
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Parse { .. }), "{err}");
    assert!(
        err.to_string().contains("/catalogs/bad/api/v1/metas?"),
        "{err}"
    );
}
