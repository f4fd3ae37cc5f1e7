//! Operational endpoints every binary serves: `/healthz`, `/readyz` and `/metrics`.
//!
//! Input: the binary's prometheus-client registry and its readiness flag. Output: an axum router.
//! No IO of its own (the server in [`crate::server`] does the listening).
//!
//! | path | answer |
//! |---|---|
//! | `/healthz` | 200 `ok` while the process runs |
//! | `/readyz` | 200 `ok` once `ready` is set, 503 `not ready` before and during shutdown |
//! | `/metrics` | the registry in the OpenMetrics text format |

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

/// Routes of `/healthz`, `/readyz` and `/metrics`.
pub fn router(registry: Arc<Registry>, ready: Arc<AtomicBool>) -> Router {
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
        .route(
            "/metrics",
            get(move || async move { ([(header::CONTENT_TYPE, OPENMETRICS)], encode(&registry)) }),
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
    }
}
