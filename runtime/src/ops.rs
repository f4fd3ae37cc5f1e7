//! Operational endpoints every binary serves: `/healthz`, `/readyz` and `/metrics`.
//!
//! Input: the binary's prometheus-client registry and its readiness flag. Output: axum routers.
//! No IO of its own (the server in [`crate::server`] does the listening).
//!
//! | path | router | answer |
//! |---|---|---|
//! | `/healthz` | [`health_router`] (the probe listener, plain HTTP as upstream) | 200 `ok` while the process runs |
//! | `/readyz` | [`health_router`] | 200 `ok` once `ready` is set, 503 `not ready` before and during shutdown |
//! | `/metrics` | [`metrics_router`] (the metrics listener: HTTPS behind [`crate::metrics_auth`]) | the registry in the OpenMetrics text format |
//! | `/debug/pprof/`, `/debug/pprof/cmdline` | [`pprof_router`] (`--pprof-bind-address`) | an index naming what exists, and the command line as Go's pprof gives it; the Go runtime's profiles do not exist in this implementation (404 `Unknown profile`, Go's answer for a name it does not know) |
//!
//! [`router`] serves all three of the first rows on one listener, for `catalogd serve` (a local
//! tool, not an in-cluster listener).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;
use prometheus_client::registry::Registry;

/// The content type of the OpenMetrics text exposition.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The registry in the OpenMetrics text format.
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}

/// Routes of `/healthz`, `/readyz` and `/metrics` on one listener.
pub fn router(registry: Arc<Registry>, ready: Arc<AtomicBool>) -> Router {
    health_router(ready).merge(metrics_router(registry))
}

/// `/metrics` alone (wrap it in [`crate::metrics_auth::filter`] for an in-cluster listener).
pub fn metrics_router(registry: Arc<Registry>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || async move { ([(header::CONTENT_TYPE, OPENMETRICS)], encode(&registry)) }),
    )
}

/// The `--pprof-bind-address` listener's routes (see the module table).
pub fn pprof_router() -> Router {
    const INDEX: &str = "/debug/pprof/\n\nProfiles:\n\tcmdline: the command line of this process\n\nThe Go runtime's profiles (heap, goroutine, profile, trace, ...) do not exist in this implementation.\n";
    Router::new()
        .route("/debug/pprof/", get(|| async { INDEX }))
        .route(
            "/debug/pprof/cmdline",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    std::env::args().collect::<Vec<_>>().join("\u{0}"),
                )
            }),
        )
        .route(
            "/debug/pprof/{*profile}",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "Unknown profile\n",
                )
            }),
        )
}

/// `/healthz` and `/readyz`.
pub fn health_router(ready: Arc<AtomicBool>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || async move {
                if ready.load(Ordering::Acquire) {
                    (StatusCode::OK, "ok")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "not ready")
                }
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use prometheus_client::metrics::counter::Counter;
    use tower::ServiceExt;

    async fn get_path(app: &Router, uri: &str) -> (StatusCode, String) {
        let resp = app
            .clone()
            .oneshot(Request::get(uri).body(Body::empty()).expect("request"))
            .await
            .expect("infallible");
        let status = resp.status();
        let body = to_bytes(resp.into_body(), 1 << 20).await.expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn health_readiness_and_metrics() {
        let mut registry = Registry::default();
        let counter = Counter::<u64>::default();
        registry.register("things", "Things counted", counter.clone());
        counter.inc();
        let ready = Arc::new(AtomicBool::new(false));
        let app = router(Arc::new(registry), ready.clone());
        assert_eq!(
            get_path(&app, "/healthz").await,
            (StatusCode::OK, "ok".into())
        );
        assert_eq!(
            get_path(&app, "/readyz").await,
            (StatusCode::SERVICE_UNAVAILABLE, "not ready".into())
        );
        ready.store(true, Ordering::Release);
        assert_eq!(
            get_path(&app, "/readyz").await,
            (StatusCode::OK, "ok".into())
        );
        let (status, text) = get_path(&app, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(text.contains("things_total 1"), "{text}");
        let health = health_router(ready);
        assert_eq!(get_path(&health, "/metrics").await.0, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn pprof_names_what_exists() {
        let app = pprof_router();
        let (status, index) = get_path(&app, "/debug/pprof/").await;
        assert_eq!(status, StatusCode::OK);
        assert!(index.contains("cmdline"), "{index}");
        assert_eq!(
            get_path(&app, "/debug/pprof/cmdline").await.0,
            StatusCode::OK
        );
        assert_eq!(
            get_path(&app, "/debug/pprof/heap").await,
            (StatusCode::NOT_FOUND, "Unknown profile\n".into())
        );
    }
}
