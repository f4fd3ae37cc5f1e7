//! ClusterCatalog admission against the real API server: the inputs of upstream's
//! `clustercatalog_types_test.go` with upstream's messages and error counts, plus defaults and
//! printer columns.
//!
//! Upstream runs each CEL rule set alone and names fields by schema path
//! (`openAPIV3Schema.properties.spec.properties.source.properties.image.ref`); the API server names
//! the same field `spec.source.image.ref` and quotes the value's type (`"string"`) instead of the
//! value, which is how the expected messages below are written.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::{Report, cluster_catalogs, create, delete};

const DOMAIN: &str = "must start with a valid domain. valid domains must be alphanumeric characters (lowercase and uppercase) separated by the \".\" character.";
const NAME: &str = "a valid name is required. valid names must contain lowercase alphanumeric characters separated only by the \".\", \"_\", \"__\", \"-\" characters.";
const ALGORITHM: &str = "digest algorithm is not valid. valid algorithms must start with an uppercase or lowercase alpha character followed by alphanumeric characters and may contain the \"-\", \"_\", \"+\", and \".\" characters.";
const SHORT_DIGEST: &str = "digest is not valid. the encoded string must be at least 32 characters";
const HEX_DIGEST: &str =
    "digest is not valid. the encoded string must only contain hex characters (A-F, a-f, 0-9)";
const TAG_OR_DIGEST: &str = "must end with a digest or a tag";
const DIGEST_ONLY: &str = "must end with a digest";
const LONG_TAG: &str = "tag is invalid. the tag must not be more than 127 characters";
const BAD_TAG: &str = "tag is invalid. valid tags must begin with a word character (alphanumeric + \"_\") followed by word characters or \".\", and \"-\" characters";
const POLL_WITH_DIGEST: &str = "cannot specify pollIntervalMinutes while using digest-based image";
const IMAGE_UNION: &str = "image is required when source type is Image, and forbidden otherwise";

fn catalog(source: Value) -> Value {
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": { "generateName": "test-catalog-" },
        "spec": { "source": source },
    })
}

fn string_error(path: &str, message: &str) -> String {
    format!("{path}: Invalid value: \"string\": {message}")
}

fn object_error(path: &str, message: &str) -> String {
    format!("{path}: Invalid value: \"object\": {message}")
}

#[tokio::test]
async fn image_source_ref_and_poll_interval_are_validated_like_upstream() {
    let api = cluster_catalogs(&olm_e2e::shared().await.client().await);
    let r = |m: &str| vec![string_error("spec.source.image.ref", m)];
    let long_tag = format!("docker.io/foo/bar:{}", "x".repeat(128));
    let cases: Vec<(&str, &str, Option<i64>, Vec<String>)> = vec![
        (
            "valid digest based image ref, poll interval not allowed, poll interval specified",
            "docker.io/test-image@sha256:abcdef123456789abcdef123456789abc",
            Some(1),
            vec![object_error("spec.source.image", POLL_WITH_DIGEST)],
        ),
        (
            "valid digest based image ref, poll interval not allowed, poll interval not specified",
            "docker.io/test-image@sha256:abcdef123456789abcdef123456789abc",
            None,
            vec![],
        ),
        (
            "invalid digest based image ref, invalid domain",
            "-quay+docker/foo/bar@sha256:abcdef123456789abcdef123456789abc",
            None,
            r(DOMAIN),
        ),
        (
            "invalid digest based image ref, invalid name",
            "docker.io/FOO/BAR@sha256:abcdef123456789abcdef123456789abc",
            None,
            r(NAME),
        ),
        (
            "invalid digest based image ref, invalid digest algorithm",
            "docker.io/foo/bar@99-problems:abcdef123456789abcdef123456789abc",
            None,
            r(ALGORITHM),
        ),
        (
            "invalid digest based image ref, too short digest encoding",
            "docker.io/foo/bar@sha256:abcdef123456789",
            None,
            r(SHORT_DIGEST),
        ),
        (
            "invalid digest based image ref, invalid characters in digest encoding",
            "docker.io/foo/bar@sha256:XYZxy123456789abcdef123456789abc",
            None,
            r(HEX_DIGEST),
        ),
        (
            "invalid image ref, no tag or digest",
            "docker.io/foo/bar",
            None,
            r(TAG_OR_DIGEST),
        ),
        (
            "invalid tag based image ref, tag too long",
            &long_tag,
            None,
            r(LONG_TAG),
        ),
        (
            "invalid tag based image ref, tag contains invalid characters",
            "docker.io/foo/bar:-foo_bar-",
            None,
            r(BAD_TAG),
        ),
        (
            "valid tag based image ref",
            "docker.io/foo/bar:v1.0.0",
            None,
            vec![],
        ),
        (
            "valid tag based image ref, pollIntervalMinutes specified",
            "docker.io/foo/bar:v1.0.0",
            Some(5),
            vec![],
        ),
        (
            "invalid image ref, only domain with port",
            "docker.io:8080",
            None,
            r(NAME),
        ),
        (
            "valid image ref, domain with port",
            "my-subdomain.docker.io:8080/foo/bar:latest",
            None,
            vec![],
        ),
        (
            "valid image ref, tag ends with hyphen",
            "my-subdomain.docker.io:8080/foo/bar:latest-",
            None,
            vec![],
        ),
    ];
    let mut report = Report::default();
    for (case, reference, poll, wanted) in cases {
        let mut image = json!({ "ref": reference });
        if let Some(minutes) = poll {
            image["pollIntervalMinutes"] = json!(minutes);
        }
        let result = create(&api, catalog(json!({ "type": "Image", "image": image }))).await;
        report.expect_exact_causes(case, &result, &wanted);
        if let Ok(obj) = &result {
            delete(&api, obj).await;
        }
    }
    report.assert_all_passed("spec.source.image");
}

#[tokio::test]
async fn image_ref_length_and_poll_interval_minimum_are_enforced() {
    let api = cluster_catalogs(&olm_e2e::shared().await.client().await);
    let mut report = Report::default();
    let long_ref = format!("docker.io/foo/{}:latest", "x".repeat(1000));
    let result = create(
        &api,
        catalog(json!({ "type": "Image", "image": { "ref": long_ref } })),
    )
    .await;
    report.expect_rejected(
        "ref longer than 1000 characters",
        &result,
        &["spec.source.image.ref: Too long: may not be more than 1000"],
    );
    let result = create(
        &api,
        catalog(json!({ "type": "Image", "image": { "ref": "docker.io/foo/bar:latest", "pollIntervalMinutes": 0 } })),
    )
    .await;
    report.expect_rejected(
        "pollIntervalMinutes of 0",
        &result,
        &["spec.source.image.pollIntervalMinutes: Invalid value: 0: spec.source.image.pollIntervalMinutes in body should be greater than or equal to 1"],
    );
    report.assert_all_passed("spec.source.image limits");
}

#[tokio::test]
async fn source_requires_image_when_type_is_image() {
    let api = cluster_catalogs(&olm_e2e::shared().await.client().await);
    let mut report = Report::default();
    let result = create(&api, catalog(json!({ "type": "Image" }))).await;
    report.expect_exact_causes(
        "image source missing required image field",
        &result,
        &[object_error("spec.source", IMAGE_UNION)],
    );
    let result = create(
        &api,
        catalog(json!({ "type": "Image", "image": { "ref": "docker.io/foo/bar:latest" } })),
    )
    .await;
    report.expect_exact_causes("image source with required image field", &result, &[]);
    if let Ok(obj) = &result {
        delete(&api, obj).await;
    }
    let result = create(
        &api,
        catalog(json!({ "type": "Git", "image": { "ref": "docker.io/foo/bar:latest" } })),
    )
    .await;
    report.expect_rejected(
        "unknown source type",
        &result,
        &[r#"spec.source.type: Unsupported value: "Git""#],
    );
    report.assert_all_passed("spec.source");
}

/// Creates a valid catalog, applies `status` through the status subresource, deletes the catalog.
async fn try_status(api: &Api<DynamicObject>, status: Value) -> Result<DynamicObject, kube::Error> {
    let created = create(
        api,
        catalog(json!({ "type": "Image", "image": { "ref": "docker.io/foo/bar:latest" } })),
    )
    .await
    .unwrap();
    let name = created.metadata.name.clone().unwrap();
    let result = api
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await;
    delete(api, &created).await;
    result
}

#[tokio::test]
async fn resolved_image_ref_must_be_digest_based_like_upstream() {
    let api = cluster_catalogs(&olm_e2e::shared().await.client().await);
    let path = "status.resolvedSource.image.ref";
    let r = |ms: &[&str]| ms.iter().map(|m| string_error(path, m)).collect::<Vec<_>>();
    let cases: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "valid digest based image ref",
            "docker.io/test-image@sha256:abcdef123456789abcdef123456789abc",
            vec![],
        ),
        (
            "invalid digest based image ref, invalid domain",
            "-quay+docker/foo/bar@sha256:abcdef123456789abcdef123456789abc",
            r(&[DOMAIN]),
        ),
        (
            "invalid digest based image ref, invalid name",
            "docker.io/FOO/BAR@sha256:abcdef123456789abcdef123456789abc",
            r(&[NAME]),
        ),
        (
            "invalid digest based image ref, invalid digest algorithm",
            "docker.io/foo/bar@99-problems:abcdef123456789abcdef123456789abc",
            r(&[ALGORITHM]),
        ),
        (
            "invalid digest based image ref, too short digest encoding",
            "docker.io/foo/bar@sha256:abcdef123456789",
            r(&[SHORT_DIGEST]),
        ),
        (
            "invalid digest based image ref, invalid characters in digest encoding",
            "docker.io/foo/bar@sha256:XYZxy123456789abcdef123456789abc",
            r(&[HEX_DIGEST]),
        ),
        (
            "invalid image ref, no digest",
            "docker.io/foo/bar",
            r(&[DIGEST_ONLY]),
        ),
        (
            "invalid image ref, only domain with port",
            "docker.io:8080",
            r(&[NAME, DIGEST_ONLY]),
        ),
        (
            "invalid image ref, tag-based ref",
            "docker.io/foo/bar:latest",
            r(&[DIGEST_ONLY]),
        ),
    ];
    let mut report = Report::default();
    for (case, reference, wanted) in cases {
        let status =
            json!({ "resolvedSource": { "type": "Image", "image": { "ref": reference } } });
        let result = try_status(&api, status).await;
        report.expect_exact_causes(case, &result, &wanted);
    }
    report.assert_all_passed("status.resolvedSource.image.ref");
}

#[tokio::test]
async fn resolved_source_requires_its_image() {
    let api = cluster_catalogs(&olm_e2e::shared().await.client().await);
    let mut report = Report::default();
    // Upstream checks the CEL rule alone; on a real server the schema's `required` answers first.
    let result = try_status(&api, json!({ "resolvedSource": { "type": "Image" } })).await;
    report.expect_rejected(
        "image source missing required image field",
        &result,
        &["status.resolvedSource.image: Required value"],
    );
    let status = json!({ "resolvedSource": { "type": "Image", "image": {
        "ref": "docker.io/foo/bar@sha256:abcdef123456789abcdef123456789abc" } } });
    let result = try_status(&api, status).await;
    report.expect_accepted("image source with required image field", &result);
    report.assert_all_passed("status.resolvedSource");
}

#[tokio::test]
async fn base_url_must_be_an_http_or_https_url_like_upstream() {
    let api = cluster_catalogs(&olm_e2e::shared().await.client().await);
    let path = "status.urls.base";
    let cases: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "base is valid",
            "https://catalogd-service.olmv1-system.svc/catalogs/operatorhubio",
            vec![],
        ),
        (
            "base is invalid, scheme is not one of http or https",
            "file://somefilepath",
            vec![string_error(path, "scheme must be either http or https")],
        ),
        (
            "base is invalid",
            "notevenarealURL",
            vec![string_error(path, "must be a valid URL")],
        ),
    ];
    let mut report = Report::default();
    for (case, base, wanted) in cases {
        let result = try_status(&api, json!({ "urls": { "base": base } })).await;
        report.expect_exact_causes(case, &result, &wanted);
    }
    report.assert_all_passed("status.urls.base");
}

#[tokio::test]
async fn priority_defaults_to_zero_and_availability_mode_to_available() {
    let api = cluster_catalogs(&olm_e2e::shared().await.client().await);
    let created = create(
        &api,
        catalog(json!({ "type": "Image", "image": { "ref": "docker.io/foo/bar:latest" } })),
    )
    .await
    .unwrap();
    assert_eq!(created.data["spec"]["priority"], 0);
    assert_eq!(created.data["spec"]["availabilityMode"], "Available");
    delete(&api, &created).await;

    let mut report = Report::default();
    let mut body =
        catalog(json!({ "type": "Image", "image": { "ref": "docker.io/foo/bar:latest" } }));
    body["spec"]["availabilityMode"] = json!("Paused");
    let result = create(&api, body).await;
    report.expect_rejected(
        "unknown availabilityMode",
        &result,
        &[r#"spec.availabilityMode: Unsupported value: "Paused""#],
    );
    let mut body =
        catalog(json!({ "type": "Image", "image": { "ref": "docker.io/foo/bar:latest" } }));
    body["spec"]["priority"] = json!(-5);
    body["spec"]["availabilityMode"] = json!("Unavailable");
    let result = create(&api, body).await;
    report.expect_accepted("negative priority, Unavailable", &result);
    if let Ok(obj) = &result {
        delete(&api, obj).await;
    }
    report.assert_all_passed("ClusterCatalog defaults");
}

#[tokio::test]
async fn cluster_catalog_printer_columns_match_upstream() {
    let client = olm_e2e::shared().await.client().await;
    let request = http::Request::get("/apis/olm.operatorframework.io/v1/clustercatalogs")
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let table: Value = client.request(request).await.unwrap();
    let columns: Vec<(&str, &str)> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        columns,
        [
            ("Name", "string"),
            ("LastUnpacked", "date"),
            ("Serving", "string"),
            ("Age", "date")
        ]
    );
}
