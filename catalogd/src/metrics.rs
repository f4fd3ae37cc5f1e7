//! Prometheus metrics of catalogd, and the middleware that times content requests.
//!
//! Input: observations from the HTTP layer and the controller. Output: the text exposition served
//! at `/metrics`. No IO of its own.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Upstream's buckets for `catalogd_http_request_duration_seconds`.
const REQUEST_BUCKETS: [f64; 19] = [
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2, 3.6, 4.0, 10.0,
];
const UNPACK_BUCKETS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CatalogLabel {
    catalog: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: String,
}

/// Every metric catalogd exposes. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Arc<Registry>,
    request_duration: Family<CodeLabel, Histogram>,
    unpack_duration: Family<CatalogLabel, Histogram>,
    stored_bytes: Family<CatalogLabel, Gauge>,
    catalogs_served: Gauge,
    reconciles: Family<ResultLabel, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let request_duration = Family::<CodeLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(REQUEST_BUCKETS.iter().copied())
        });
        registry.register(
            "catalogd_http_request_duration_seconds",
            "Time to answer catalog content requests, until the last body byte, by status code",
            request_duration.clone(),
        );
        let unpack_duration = Family::<CatalogLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(UNPACK_BUCKETS.iter().copied())
        });
        registry.register(
            "catalogd_unpack_duration_seconds",
            "Time to pull, unpack and store a catalog's content",
            unpack_duration.clone(),
        );
        let stored_bytes = Family::<CatalogLabel, Gauge>::default();
        registry.register(
            "catalogd_catalog_content_bytes",
            "Size of each served catalog's JSON Lines content",
            stored_bytes.clone(),
        );
        let catalogs_served = Gauge::default();
        registry.register(
            "catalogd_catalogs_served",
            "Number of catalogs whose content is being served",
            catalogs_served.clone(),
        );
        let reconciles = Family::<ResultLabel, Counter>::default();
        registry.register(
            "catalogd_reconciles",
            "ClusterCatalog reconciles by result (success, error, terminal)",
            reconciles.clone(),
        );
        Metrics {
            inner: Arc::new(Inner {
                registry: Arc::new(registry),
                request_duration,
                unpack_duration,
                stored_bytes,
                catalogs_served,
                reconciles,
            }),
        }
    }

    /// The registry every metric is registered in, for the `/metrics` endpoint.
    pub fn registry(&self) -> Arc<Registry> {
        self.inner.registry.clone()
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        olm_runtime::ops::encode(&self.inner.registry)
    }

    pub fn observe_request(&self, code: u16, seconds: f64) {
        self.inner
            .request_duration
            .get_or_create(&CodeLabel {
                code: code.to_string(),
            })
            .observe(seconds);
    }

    pub fn observe_unpack(&self, catalog: &str, seconds: f64, stored_bytes: u64) {
        let label = CatalogLabel {
            catalog: catalog.to_string(),
        };
        self.inner
            .unpack_duration
            .get_or_create(&label)
            .observe(seconds);
        self.inner
            .stored_bytes
            .get_or_create(&label)
            .set(i64::try_from(stored_bytes).unwrap_or(i64::MAX));
    }

    pub fn forget_catalog(&self, catalog: &str) {
        let label = CatalogLabel {
            catalog: catalog.to_string(),
        };
        self.inner.stored_bytes.remove(&label);
        self.inner.unpack_duration.remove(&label);
    }

    pub fn set_catalogs_served(&self, n: usize) {
        self.inner
            .catalogs_served
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub fn count_reconcile(&self, result: &str) {
        self.inner
            .reconciles
            .get_or_create(&ResultLabel {
                result: result.to_string(),
            })
            .inc();
    }
}

/// Middleware recording each response's duration, measured when its body has been fully sent
/// (or dropped), because catalog bodies stream long after the headers.
pub async fn time_requests(
    State(metrics): State<Metrics>,
    request: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let response = next.run(request).await;
    let code = response.status().as_u16();
    let (parts, body) = response.into_parts();
    let guard = Observe {
        metrics,
        code,
        start,
    };
    let stream = body.into_data_stream().map(move |chunk| {
        let _keep = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

struct Observe {
    metrics: Metrics,
    code: u16,
    start: Instant,
}

impl Drop for Observe {
    fn drop(&mut self) {
        self.metrics
            .observe_request(self.code, self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_names_the_upstream_request_histogram() {
        let m = Metrics::new();
        m.observe_request(200, 0.05);
        m.observe_unpack("operatorhubio", 1.5, 1234);
        m.set_catalogs_served(1);
        m.count_reconcile("success");
        let text = m.encode();
        assert!(
            text.contains(
                "catalogd_http_request_duration_seconds_bucket{le=\"0.1\",code=\"200\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("catalogd_catalog_content_bytes{catalog=\"operatorhubio\"} 1234"),
            "{text}"
        );
        assert!(text.contains("catalogd_catalogs_served 1"), "{text}");
        assert!(
            text.contains("catalogd_reconciles_total{result=\"success\"} 1"),
            "{text}"
        );
    }
}
