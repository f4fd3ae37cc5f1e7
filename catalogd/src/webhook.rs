//! The mutating admission webhook upstream's release manifest registers for ClusterCatalogs
//! (`catalogd-mutating-webhook-configuration`, path
//! `/mutate-olm-operatorframework-io-v1-clustercatalog`): every created or updated
//! ClusterCatalog gets the label `olm.operatorframework.io/metadata.name` set to its name, so
//! that ClusterExtensions can select catalogs by name.
//!
//! Input: an `admission.k8s.io/v1` AdmissionReview (at most [`MAX_REVIEW_BYTES`]). Output: the
//! AdmissionReview response, allowed, with a JSON patch when the label is missing or wrong. No IO
//! beyond the request.

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine as _;
use serde_json::{Value, json};

/// The path upstream's MutatingWebhookConfiguration calls.
pub const PATH: &str = "/mutate-olm-operatorframework-io-v1-clustercatalog";
/// The label the webhook maintains.
pub const NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";
/// Largest AdmissionReview read (a ClusterCatalog is a few KiB; the API server caps requests at
/// 3 MiB).
pub const MAX_REVIEW_BYTES: usize = 4 << 20;

/// The webhook's routes.
pub fn router() -> Router {
    Router::new()
        .route(PATH, post(|body: Bytes| async move { review(&body) }))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REVIEW_BYTES))
}

fn bad_request(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

/// Answers one AdmissionReview.
pub fn review(body: &[u8]) -> Response {
    let review: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return bad_request(format!("invalid AdmissionReview: {e}")),
    };
    let Some(request) = review.get("request") else {
        return bad_request("invalid AdmissionReview: no request".into());
    };
    let uid = request.get("uid").cloned().unwrap_or(Value::Null);
    let mut response = json!({"uid": uid, "allowed": true});
    if let Some(patch) = request.get("object").and_then(label_patch) {
        let encoded = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(encoded);
    }
    axum::Json(json!({
        "apiVersion": review.get("apiVersion").cloned().unwrap_or(json!("admission.k8s.io/v1")),
        "kind": "AdmissionReview",
        "response": response,
    }))
    .into_response()
}

/// The JSON patch that sets the name label, or `None` when it is already right.
pub fn label_patch(object: &Value) -> Option<Value> {
    let name = object.pointer("/metadata/name")?.as_str()?;
    let labels = object.pointer("/metadata/labels");
    match labels {
        Some(Value::Object(labels)) => {
            if labels.get(NAME_LABEL).and_then(Value::as_str) == Some(name) {
                return None;
            }
            Some(json!([{"op": "add",
                "path": format!("/metadata/labels/{}", NAME_LABEL.replace('~', "~0").replace('/', "~1")),
                "value": name}]))
        }
        _ => Some(json!([{"op": "add", "path": "/metadata/labels", "value": {NAME_LABEL: name}}])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(object: Value) -> Value {
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "object": object}});
        let response = review(body.to_string().as_bytes());
        assert_eq!(response.status(), StatusCode::OK);
        let bytes =
            futures::executor::block_on(axum::body::to_bytes(response.into_body(), 1 << 20))
                .expect("body");
        serde_json::from_slice(&bytes).expect("json")
    }

    fn patched(object: Value) -> Value {
        let a = answer(object.clone());
        assert_eq!(a["response"]["uid"], "u-1");
        assert_eq!(a["response"]["allowed"], true);
        let Some(patch) = a["response"]["patch"].as_str() else {
            return object;
        };
        let patch: json_patch::Patch = serde_json::from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(patch)
                .unwrap(),
        )
        .unwrap();
        let mut doc = object;
        json_patch::patch(&mut doc, &patch).unwrap();
        doc
    }

    #[test]
    fn the_name_label_is_added_corrected_or_left_alone() {
        let no_labels = json!({"metadata": {"name": "c1"}});
        assert_eq!(patched(no_labels)["metadata"]["labels"][NAME_LABEL], "c1");
        let other = json!({"metadata": {"name": "c1", "labels": {"a": "b", NAME_LABEL: "x"}}});
        let out = patched(other);
        assert_eq!(out["metadata"]["labels"][NAME_LABEL], "c1");
        assert_eq!(out["metadata"]["labels"]["a"], "b");
        let right = json!({"metadata": {"name": "c1", "labels": {NAME_LABEL: "c1"}}});
        assert!(answer(right)["response"].get("patch").is_none());
    }

    #[test]
    fn a_malformed_review_is_a_bad_request() {
        assert_eq!(review(b"{").status(), StatusCode::BAD_REQUEST);
        assert_eq!(review(b"{}").status(), StatusCode::BAD_REQUEST);
    }
}
