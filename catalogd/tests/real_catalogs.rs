//! Every real catalog in `testdata/catalogs` stored and served: each blob exactly once, in walk
//! order, as canonical compact JSON, and `/metas` filters exact.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use catalogd::http::router;
use catalogd::ingest::ingest_dir;
use catalogd::metrics::Metrics;
use catalogd::storage::Storage;
use olm_api::fbc::{gojson, walk_metas_dir};
use tower::ServiceExt;

/// `testdata/catalogs/<rel>` (see olm-testdata).
fn catalog(rel: &str) -> PathBuf {
    olm_testdata::path(&format!("catalogs/{rel}"))
}

async fn get(app: &axum::Router, uri: &str) -> String {
    let resp = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "{uri}");
    String::from_utf8(
        to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap()
}

fn query_escape(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Stores and serves one catalog directory holding `expected_blobs` blobs and checks every endpoint
/// against the walked blobs.
async fn check(dir: &Path, expected_blobs: usize) {
    let mut blobs: Vec<(String, String, String, String)> = Vec::new();
    walk_metas_dir(dir, |m| {
        blobs.push((
            m.schema,
            m.package,
            m.name,
            String::from_utf8(m.blob).unwrap(),
        ));
        Ok(())
    })
    .unwrap();
    assert!(!blobs.is_empty(), "{}", dir.display());
    println!("{}: {} blobs", dir.display(), blobs.len());
    assert_eq!(blobs.len(), expected_blobs, "blobs in {}", dir.display());

    let root = tempfile::tempdir().unwrap();
    let storage = Storage::open(root.path()).unwrap();
    ingest_dir(&storage, "cat", "test", dir).unwrap();
    let app = router(storage, Metrics::new());

    let all = get(&app, "/catalogs/cat/api/v1/all").await;
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), blobs.len(), "{}", dir.display());
    assert!(all.ends_with('\n'));
    for (line, (_, _, _, blob)) in lines.iter().zip(&blobs) {
        assert_eq!(line, blob);
        let again = gojson::canonicalize_bytes(line.as_bytes()).unwrap();
        assert_eq!(again, line.as_bytes(), "not canonical: {line:.200}");
    }

    let mut by_package: BTreeMap<&str, String> = BTreeMap::new();
    let mut by_schema: BTreeMap<&str, String> = BTreeMap::new();
    for (schema, package, _, blob) in &blobs {
        if !package.is_empty() {
            by_package
                .entry(package)
                .or_default()
                .push_str(&format!("{blob}\n"));
        }
        by_schema
            .entry(schema)
            .or_default()
            .push_str(&format!("{blob}\n"));
    }
    for (package, expected) in &by_package {
        let got = get(
            &app,
            &format!(
                "/catalogs/cat/api/v1/metas?package={}",
                query_escape(package)
            ),
        )
        .await;
        assert_eq!(&got, expected, "package {package} in {}", dir.display());
    }
    for (schema, expected) in &by_schema {
        let got = get(
            &app,
            &format!("/catalogs/cat/api/v1/metas?schema={}", query_escape(schema)),
        )
        .await;
        assert_eq!(&got, expected, "schema {schema} in {}", dir.display());
    }
    for (schema, package, name, blob) in blobs.iter().filter(|b| b.0 == "olm.package") {
        let got = get(
            &app,
            &format!(
                "/catalogs/cat/api/v1/metas?schema={schema}&name={}",
                query_escape(name)
            ),
        )
        .await;
        assert_eq!(
            got,
            format!("{blob}\n"),
            "package blob {name} ({package:?})"
        );
    }
}

#[tokio::test]
async fn certified_operators_v4_22_is_served_blob_for_blob() {
    check(&catalog("certified-operators/catalogs/v4.22"), 599).await;
}

#[tokio::test]
async fn community_operators_v4_22_is_served_blob_for_blob() {
    check(&catalog("community-operators-prod/catalogs/v4.22"), 763).await;
}

#[tokio::test]
async fn community_operators_v4_16_with_bundle_objects_is_served_blob_for_blob() {
    check(&catalog("community-operators-prod/catalogs/v4.16"), 266).await;
}

#[tokio::test]
async fn the_derived_86_mb_catalog_is_served_blob_for_blob() {
    check(&catalog("community-operators-prod-derived/catalog"), 7213).await;
}

#[tokio::test]
async fn upstream_fixture_catalogs_are_served_blob_for_blob() {
    for (dir, blobs) in [
        (
            "upstream-operator-controller/testdata/images/catalogs/test-catalog/v1/configs",
            27,
        ),
        (
            "upstream-operator-controller/testdata/images/catalogs/test-catalog/v2/configs",
            3,
        ),
        (
            "upstream-operator-controller/testdata/catalogs/test-catalog-v1",
            9,
        ),
        (
            "upstream-operator-controller/testdata/catalogs/test-catalog-v2",
            3,
        ),
        (
            "upstream-operator-controller/testdata/catalogs/test-catalog",
            7,
        ),
        (
            "upstream-operator-registry/alpha/action/testdata/index-declcfgs/latest",
            17,
        ),
        ("upstream-operator-registry/fbc-dir/file-based-catalog", 3),
        (
            "upstream-operator-registry/test/e2e/testdata/test-configs/prometheus",
            2,
        ),
    ] {
        check(&catalog(dir), blobs).await;
    }
}
