//! ClusterExtension admission against the real API server: the same inputs as upstream's
//! `clusterextension_admission_test.go`, with upstream's expected messages, plus defaults,
//! immutability and printer columns.

use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::support::{Report, cluster_extensions, create, delete};

fn extension(spec: Value) -> Value {
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": { "generateName": "test-extension-" },
        "spec": spec,
    })
}

/// `spec` as upstream's typed client sends it for a catalog source with `catalog` fields.
fn spec_with_catalog(catalog: Value) -> Value {
    json!({
        "namespace": "default",
        "source": { "sourceType": "Catalog", "catalog": catalog },
    })
}

async fn run_case(
    api: &Api<DynamicObject>,
    report: &mut Report,
    case: &str,
    spec: Value,
    wanted: Option<&[&str]>,
) {
    let result = create(api, extension(spec)).await;
    match wanted {
        None => report.expect_accepted(case, &result),
        Some(w) => report.expect_rejected(case, &result, w),
    }
    if let Ok(obj) = &result {
        delete(api, obj).await;
    }
}

#[tokio::test]
async fn source_type_and_catalog_union_is_validated_like_upstream() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let mut report = Report::default();
    let catalog = json!({ "packageName": "test-package" });
    // Upstream accepts either rendering of the null value.
    let cases: [(&str, Value, Option<&[&str]>); 4] = [
        (
            "sourceType is null",
            json!({"sourceType": "", "catalog": catalog}),
            Some(&["Invalid value: null"]),
        ),
        (
            "sourceType is invalid",
            json!({"sourceType": "Invalid", "catalog": catalog}),
            Some(&["spec.source.sourceType: Unsupported value"]),
        ),
        (
            "catalog field does not exist",
            json!({"sourceType": "Catalog"}),
            Some(&["spec.source: Invalid value"]),
        ),
        (
            "sourceConfig has required fields",
            json!({"sourceType": "Catalog", "catalog": catalog}),
            None,
        ),
    ];
    for (case, source, wanted) in cases {
        let spec = json!({ "namespace": "default", "source": source });
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    report.assert_all_passed("sourceType");
}

#[tokio::test]
async fn package_name_must_be_a_dns1123_subdomain_of_at_most_253_characters() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let too_long = "spec.source.catalog.packageName: Too long: may not be more than 253";
    let mismatch = "packageName must be a valid DNS1123 subdomain";
    let long = "x".repeat(254);
    let cases: &[(&str, &str, &str)] = &[
        ("no package name", "", mismatch),
        ("long package name", &long, too_long),
        ("leading digits with hypens", "0my-1package-9name", ""),
        ("trailing digits with hypens", "my0-package1-name9", ""),
        ("digits with hypens", "012-345-678-9", ""),
        ("letters with hypens", "abc-def-ghi-jkl", ""),
        ("letters only", "abcdefghi", ""),
        ("letters with digits", "abc123def456ghi789", ""),
        ("digits only", "1234567890", ""),
        ("single character", "a", ""),
        ("single digit", "1", ""),
        ("single hypen", "-", mismatch),
        ("uppercase letters", "ABC-DEF-GHI-JKL", mismatch),
        ("special characters", "my-$pecial-package-name", mismatch),
        ("dot separated", "some.package", ""),
        ("underscore separated", "some_package", mismatch),
        ("starts with dot", ".some.package", mismatch),
        ("multiple sequential separators", "a.-b", mismatch),
    ];
    let mut report = Report::default();
    for (case, name, err) in cases {
        let spec = spec_with_catalog(json!({ "packageName": name }));
        let wanted = [*err];
        let wanted = (!err.is_empty()).then_some(&wanted[..]);
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    report.assert_all_passed("packageName");
}

#[tokio::test]
async fn version_must_be_a_valid_range_expression_of_at_most_64_characters() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let too_long = "spec.source.catalog.version: Too long: may not be more than 64";
    let mismatch = "invalid version expression";
    let cases: &[(&str, &str, &str)] = &[
        // Upstream's client omits an empty version (omitempty).
        ("empty semver", "", ""),
        ("simple semver", "1.2.3", ""),
        (
            "semver with pre-release and metadata",
            "1.2.3-alpha.1+metadata",
            "",
        ),
        ("semver with pre-release", "1.2.3-alpha-beta", ""),
        (">= operator", ">=1.2.3", ""),
        ("=> operator", "=>1.2.3", ""),
        (">= operator with space", ">= 1.2.3", ""),
        (">= operator with 'v' prefix", ">=v1.2.3", ""),
        (">= operator with space and 'v' prefix", ">= v1.2.3", ""),
        ("<= operator", "<=1.2.3", ""),
        ("=< operator", "=<1.2.3", ""),
        ("= operator", "=1.2.3", ""),
        ("!= operator", "!=1.2.3", ""),
        ("< operator", "<1.2.3", ""),
        ("> operator", ">1.2.3", ""),
        ("~ operator", "~1.2.2", ""),
        ("~> operator", "~>1.2.3", ""),
        ("^ operator", "^1.2.3", ""),
        ("with 'v' prefix", "v1.2.3", ""),
        ("with lower-case y-stream", "1.x", ""),
        ("with upper-case Y-stream", "1.X", ""),
        ("with asterisk y-stream", "1.*", ""),
        ("with lower-case z-stream", "1.2.x", ""),
        ("with upper-case Z-stream", "1.2.X", ""),
        ("with asterisk z-stream", "1.2.*", ""),
        ("multiple operators space-separated", ">=1.2.3 <2.3.4", ""),
        ("multiple operators comma-separated", ">=1.2.3,<2.3.4", ""),
        (
            "multiple operators comma-and-space-separated",
            ">=1.2.3, <2.3.4",
            "",
        ),
        ("multiple operators OR-separated", "<1.2.3||>2.3.4", ""),
        (
            "multiple operarors OR-and-space-separated",
            "<1.2.3|| >2.3.4",
            "",
        ),
        (
            "multiple operators space-and-OR-separated",
            "<1.2.3 ||>2.3.4",
            "",
        ),
        (
            "multiple operators space-and-OR-and-space-separated",
            "<1.2.3 || >2.3.4",
            "",
        ),
        (
            "multiple operators with comma and OR separation",
            ">1.0.0,<1.2.3 || >2.1.0",
            "",
        ),
        (
            "multiple operators with pre-release data",
            "<1.2.3-abc >2.3.4-def",
            "",
        ),
        (
            "multiple operators with pre-release and metadata",
            "<1.2.3-abc+def >2.3.4-ghi+jkl",
            "",
        ),
        ("invalid characters", "invalid-semver", mismatch),
        ("too many components", "1.2.3.4", mismatch),
        ("invalid character in pre-release", "1.2.3-beta!", mismatch),
        ("invalid pre-release/4th component", "1.2.3.alpha", mismatch),
        ("extra dot", "1..2.3", mismatch),
        ("invalid metadata", "1.2.3-pre+bad_metadata", mismatch),
        ("negative component", "1.2.-3", mismatch),
        ("leading dot", ".1.2.3", mismatch),
        ("invalid << operator", "<<1.2.3", mismatch),
        ("invalid >> operator", ">>1.2.3", mismatch),
        ("invalid >~ operator", ">~1.2.3", mismatch),
        ("invalid == operator", "==1.2.3", mismatch),
        ("invalid =! operator", "=!1.2.3", mismatch),
        ("invalid ! operator", "!1.2.3", mismatch),
        ("invalid y-stream wildcard", "1.Y", mismatch),
        ("invalid AND separator", ">1.2.3 && <2.3.4", mismatch),
        ("invalid semicolon separator", ">1.2.3;<2.3.4", mismatch),
        ("leading zero in x-stream", "01.2.3", mismatch),
        ("leading zero in y-stream", "1.02.3", mismatch),
        ("leading zero in z-stream", "1.2.03", mismatch),
        (
            "unsupported hyphen (range) operator",
            "1.2.3 - 2.3.4",
            mismatch,
        ),
        (
            "valid semver, but too long",
            "1234567890.1234567890.12345678901234567890123456789012345678901234",
            too_long,
        ),
    ];
    let mut report = Report::default();
    for (case, version, err) in cases {
        let catalog = if version.is_empty() {
            json!({ "packageName": "package" })
        } else {
            json!({ "packageName": "package", "version": version })
        };
        let wanted = [*err];
        let wanted = (!err.is_empty()).then_some(&wanted[..]);
        run_case(&api, &mut report, case, spec_with_catalog(catalog), wanted).await;
    }
    report.assert_all_passed("version");
}

#[tokio::test]
async fn channels_must_be_dns1123_subdomains_of_at_most_253_characters() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let too_long = "spec.source.catalog.channels[0]: Too long: may not be more than 253";
    let mismatch = "channels entries must be valid DNS1123 subdomains";
    let long = "x".repeat(254);
    let cases: &[(&str, &str, &str)] = &[
        ("no channel name", "", mismatch),
        ("hyphen-separated", "hyphenated-name", ""),
        ("dot-separated", "dotted.name", ""),
        ("includes version", "channel-has-version-1.0.1", ""),
        ("long channel name", &long, too_long),
        ("spaces", "spaces spaces", mismatch),
        ("capitalized", "Capitalized", mismatch),
        ("camel case", "camelCase", mismatch),
        (
            "invalid characters",
            "many/invalid$characters+in_name",
            mismatch,
        ),
        ("starts with hyphen", "-start-with-hyphen", mismatch),
        ("ends with hyphen", "end-with-hyphen-", mismatch),
        ("starts with period", ".start-with-period", mismatch),
        ("ends with period", "end-with-period.", mismatch),
        ("contains underscore", "some_thing", mismatch),
        ("multiple sequential separators", "a.-b", mismatch),
    ];
    let mut report = Report::default();
    for (case, channel, err) in cases {
        let spec = spec_with_catalog(json!({ "packageName": "package", "channels": [channel] }));
        let wanted = [*err];
        let wanted = (!err.is_empty()).then_some(&wanted[..]);
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    // Beyond upstream's table: the list itself is capped at 256 entries.
    let many: Vec<String> = (0..257).map(|i| format!("c{i}")).collect();
    let spec = spec_with_catalog(json!({ "packageName": "package", "channels": many }));
    run_case(
        &api,
        &mut report,
        "257 channels",
        spec,
        Some(&["spec.source.catalog.channels: Too many: 257: must have at most 256 items"]),
    )
    .await;
    report.assert_all_passed("channels");
}

#[tokio::test]
async fn install_namespace_must_be_a_dns1123_label_of_at_most_63_characters() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let too_long = "spec.namespace: Too long: may not be more than 63";
    let mismatch = "namespace must be a valid DNS1123 label";
    let x63 = "x".repeat(63);
    let x64 = "x".repeat(64);
    let cases: &[(&str, &str, &str)] = &[
        ("just alphanumeric", "justalphanumberic1", ""),
        ("hyphen-separated", "hyphenated-name", ""),
        ("no install namespace", "", mismatch),
        ("dot-separated", "dotted.name", mismatch),
        ("longest valid install namespace", &x63, ""),
        ("too long install namespace name", &x64, too_long),
        ("spaces", "spaces spaces", mismatch),
        ("capitalized", "Capitalized", mismatch),
        ("camel case", "camelCase", mismatch),
        (
            "invalid characters",
            "many/invalid$characters+in_name",
            mismatch,
        ),
        ("starts with hyphen", "-start-with-hyphen", mismatch),
        ("ends with hyphen", "end-with-hyphen-", mismatch),
        ("starts with period", ".start-with-period", mismatch),
        ("ends with period", "end-with-period.", mismatch),
    ];
    let mut report = Report::default();
    for (case, namespace, err) in cases {
        let spec = json!({
            "namespace": namespace,
            "source": { "sourceType": "Catalog", "catalog": { "packageName": "package" } },
        });
        let wanted = [*err];
        let wanted = (!err.is_empty()).then_some(&wanted[..]);
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    report.assert_all_passed("namespace");
}

/// Upstream's table for `spec.serviceAccount.name`. Upstream also attaches a deprecation warning
/// (a ValidatingAdmissionPolicy); this project honours the field instead, so no warning is checked.
#[tokio::test]
async fn service_account_name_must_be_a_dns1123_subdomain_of_at_most_253_characters() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let too_long = "spec.serviceAccount.name: Too long: may not be more than 253";
    let mismatch = "name must be a valid DNS1123 subdomain";
    let x253 = "x".repeat(253);
    let x254 = "x".repeat(254);
    let cases: &[(&str, &str, &str)] = &[
        ("just alphanumeric", "justalphanumeric1", ""),
        ("hyphen-separated", "hyphenated-name", ""),
        ("dot-separated", "dotted.name", ""),
        ("longest valid service account name", &x253, ""),
        ("too long service account name", &x254, too_long),
        // Upstream's client drops an empty reference entirely (omitzero).
        (
            "empty service account name (omitzero drops the field)",
            "",
            "",
        ),
        ("spaces", "spaces spaces", mismatch),
        ("capitalized", "Capitalized", mismatch),
        ("camel case", "camelCase", mismatch),
        (
            "invalid characters",
            "many/invalid$characters+in_name",
            mismatch,
        ),
        ("starts with hyphen", "-start-with-hyphen", mismatch),
        ("ends with hyphen", "end-with-hyphen-", mismatch),
        ("starts with period", ".start-with-period", mismatch),
        ("ends with period", "end-with-period.", mismatch),
        ("multiple sequential separators", "a.-b", mismatch),
    ];
    let mut report = Report::default();
    for (case, name, err) in cases {
        let mut spec = spec_with_catalog(json!({ "packageName": "package" }));
        if !name.is_empty() {
            spec["serviceAccount"] = json!({ "name": name });
        }
        let wanted = [*err];
        let wanted = (!err.is_empty()).then_some(&wanted[..]);
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    // Upstream notes this case cannot be sent by its typed client; a raw body can.
    let mut spec = spec_with_catalog(json!({ "packageName": "package" }));
    spec["serviceAccount"] = json!({});
    run_case(
        &api,
        &mut report,
        "empty serviceAccount object",
        spec,
        Some(&["spec.serviceAccount in body should have at least 1 properties"]),
    )
    .await;
    report.assert_all_passed("serviceAccount.name");
}

#[tokio::test]
async fn install_requires_preflight_when_present() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let one_of =
        "at least one of [preflight, approval, rollback] are required when install is specified";
    type Case<'a> = (&'a str, Option<Value>, Option<&'a [&'a str]>);
    let cases: [Case; 5] = [
        (
            "install specified, nothing configured",
            Some(json!({})),
            Some(&[one_of]),
        ),
        (
            "install specified, preflight configured",
            Some(json!({"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}})),
            None,
        ),
        ("install not specified", None, None),
        // Beyond upstream's table: `crdUpgradeSafety` is required (the schema answers before the
        // CEL rule does) and the enforcement enum.
        (
            "preflight without crdUpgradeSafety",
            Some(json!({"preflight": {}})),
            Some(&["spec.install.preflight.crdUpgradeSafety: Required value"]),
        ),
        (
            "unknown enforcement",
            Some(json!({"preflight": {"crdUpgradeSafety": {"enforcement": "Lax"}}})),
            Some(&[
                r#"spec.install.preflight.crdUpgradeSafety.enforcement: Unsupported value: "Lax""#,
            ]),
        ),
    ];
    let mut report = Report::default();
    for (case, install, wanted) in cases {
        let mut spec = spec_with_catalog(json!({ "packageName": "package" }));
        if let Some(install) = install {
            spec["install"] = install;
        }
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    report.assert_all_passed("install");
}

/// Ours (issue 26): `spec.install.approval`: the mode enum, `approvedVersion` only with
/// `Manual` and only as a semantic version.
#[tokio::test]
async fn approval_mode_is_an_enum_and_approved_version_a_semver_only_with_manual() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let only_manual = "approvedVersion is only allowed when mode is Manual";
    let semver = "approvedVersion must be well-formed semver";
    type Case<'a> = (&'a str, Value, Option<&'a [&'a str]>);
    let cases: [Case; 9] = [
        ("approval alone satisfies install", json!({}), None),
        ("Manual", json!({"mode": "Manual"}), None),
        (
            "Manual with a version",
            json!({"mode": "Manual", "approvedVersion": "1.2.0"}),
            None,
        ),
        (
            "Manual with a pre-release and build",
            json!({"mode": "Manual", "approvedVersion": "1.2.0-rc.1+build.5"}),
            None,
        ),
        (
            "AutomaticUnlessEscalation",
            json!({"mode": "AutomaticUnlessEscalation"}),
            None,
        ),
        (
            "unknown mode",
            json!({"mode": "Sometimes"}),
            Some(&[r#"spec.install.approval.mode: Unsupported value: "Sometimes""#]),
        ),
        (
            "approvedVersion with the default mode",
            json!({"approvedVersion": "1.2.0"}),
            Some(&[only_manual]),
        ),
        (
            "approvedVersion with AutomaticUnlessEscalation",
            json!({"mode": "AutomaticUnlessEscalation", "approvedVersion": "1.2.0"}),
            Some(&[only_manual]),
        ),
        (
            "approvedVersion not a semantic version",
            json!({"mode": "Manual", "approvedVersion": "1.2"}),
            Some(&[semver]),
        ),
    ];
    let mut report = Report::default();
    for (case, approval, wanted) in cases {
        let mut spec = spec_with_catalog(json!({ "packageName": "package" }));
        spec["install"] = json!({ "approval": approval });
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    report.assert_all_passed("approval");
}

/// Ours (issue 26): `spec.install.rollback`: the mode enum and `progressDeadlineMinutes` from 1
/// to 720.
#[tokio::test]
async fn rollback_mode_is_an_enum_and_the_progress_deadline_from_1_to_720_minutes() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let range = "progressDeadlineMinutes must be between 1 and 720 (inclusive)";
    type Case<'a> = (&'a str, Value, Option<&'a [&'a str]>);
    let cases: [Case; 8] = [
        ("rollback alone satisfies install", json!({}), None),
        ("OnFailure", json!({"mode": "OnFailure"}), None),
        ("None", json!({"mode": "None"}), None),
        (
            "the shortest deadline",
            json!({"mode": "OnFailure", "progressDeadlineMinutes": 1}),
            None,
        ),
        (
            "the longest deadline",
            json!({"mode": "OnFailure", "progressDeadlineMinutes": 720}),
            None,
        ),
        (
            "a deadline of 0",
            json!({"mode": "OnFailure", "progressDeadlineMinutes": 0}),
            Some(&[range]),
        ),
        (
            "a deadline over 12 hours",
            json!({"mode": "OnFailure", "progressDeadlineMinutes": 721}),
            Some(&[range]),
        ),
        (
            "unknown mode",
            json!({"mode": "Always"}),
            Some(&[r#"spec.install.rollback.mode: Unsupported value: "Always""#]),
        ),
    ];
    let mut report = Report::default();
    for (case, rollback, wanted) in cases {
        let mut spec = spec_with_catalog(json!({ "packageName": "package" }));
        spec["install"] = json!({ "rollback": rollback });
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    report.assert_all_passed("rollback");
}

#[tokio::test]
async fn inline_config_must_be_a_non_empty_object() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let cases: [(&str, Value, Option<&[&str]>); 5] = [
        (
            "rejects valid json that is not of an object type",
            json!(true),
            Some(&["spec.config.inline in body must be of type object"]),
        ),
        (
            "rejects empty json object",
            json!({}),
            Some(&["spec.config.inline in body should have at least 1 properties"]),
        ),
        (
            "accepts valid json object with configuration",
            json!({"key": "value"}),
            None,
        ),
        (
            "accepts valid json object with nested configuration",
            json!({"key": {"foo": ["bar", "baz"], "h4x0r": 1337}}),
            None,
        ),
        (
            "configType Inline without inline",
            Value::Null,
            Some(&["inline is required when configType is Inline, and forbidden otherwise"]),
        ),
    ];
    let mut report = Report::default();
    for (case, inline, wanted) in cases {
        let mut spec = spec_with_catalog(json!({ "packageName": "package" }));
        spec["config"] = if inline.is_null() {
            json!({ "configType": "Inline" })
        } else {
            json!({ "configType": "Inline", "inline": inline })
        };
        run_case(&api, &mut report, case, spec, wanted).await;
    }
    report.assert_all_passed("config.inline");
}

#[tokio::test]
async fn upgrade_constraint_policy_defaults_to_catalog_provided_and_is_an_enum() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let created = create(
        &api,
        extension(spec_with_catalog(json!({ "packageName": "package" }))),
    )
    .await
    .unwrap();
    assert_eq!(
        created.data["spec"]["source"]["catalog"]["upgradeConstraintPolicy"],
        "CatalogProvided"
    );
    delete(&api, &created).await;

    let mut report = Report::default();
    let spec =
        spec_with_catalog(json!({"packageName": "package", "upgradeConstraintPolicy": "Anything"}));
    run_case(
        &api,
        &mut report,
        "unknown policy",
        spec,
        Some(&[r#"spec.source.catalog.upgradeConstraintPolicy: Unsupported value: "Anything""#]),
    )
    .await;
    let spec = spec_with_catalog(
        json!({"packageName": "package", "upgradeConstraintPolicy": "SelfCertified"}),
    );
    run_case(&api, &mut report, "SelfCertified", spec, None).await;
    report.assert_all_passed("upgradeConstraintPolicy");
}

/// Replaces the object's spec after `edit`, returning the API server's answer.
async fn update_spec(
    api: &Api<DynamicObject>,
    name: &str,
    edit: impl FnOnce(&mut Value),
) -> Result<DynamicObject, kube::Error> {
    let mut current = api.get(name).await.unwrap();
    edit(&mut current.data["spec"]);
    api.replace(name, &PostParams::default(), &current).await
}

#[tokio::test]
async fn namespace_package_name_and_service_account_name_are_immutable() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let mut spec = spec_with_catalog(json!({ "packageName": "package" }));
    spec["serviceAccount"] = json!({ "name": "original-sa" });
    let created = create(&api, extension(spec)).await.unwrap();
    let name = created.metadata.name.clone().unwrap();
    let mut report = Report::default();

    let r = update_spec(&api, &name, |s| s["namespace"] = json!("other")).await;
    report.expect_rejected("change namespace", &r, &["namespace is immutable"]);
    let r = update_spec(&api, &name, |s| {
        s["source"]["catalog"]["packageName"] = json!("other")
    })
    .await;
    report.expect_rejected("change packageName", &r, &["packageName is immutable"]);
    let r = update_spec(&api, &name, |s| {
        s["serviceAccount"]["name"] = json!("different-sa")
    })
    .await;
    report.expect_rejected(
        "change serviceAccount.name",
        &r,
        &["name is immutable once set but may be cleared"],
    );
    let r = update_spec(&api, &name, |s| {
        s.as_object_mut().unwrap().remove("serviceAccount");
    })
    .await;
    report.expect_accepted("clear serviceAccount", &r);
    let r = update_spec(&api, &name, |s| {
        s["source"]["catalog"]["version"] = json!(">=1.0.0")
    })
    .await;
    report.expect_accepted("change version (mutable)", &r);

    delete(&api, &created).await;
    report.assert_all_passed("immutability");
}

#[tokio::test]
async fn creating_without_a_service_account_and_with_one_both_succeed() {
    let api = cluster_extensions(&olm_e2e::shared().await.client().await);
    let mut report = Report::default();
    let spec = spec_with_catalog(json!({ "packageName": "package" }));
    run_case(
        &api,
        &mut report,
        "without serviceAccount",
        spec.clone(),
        None,
    )
    .await;
    let mut with = spec;
    with["serviceAccount"] = json!({ "name": "my-sa" });
    run_case(&api, &mut report, "with serviceAccount", with, None).await;
    report.assert_all_passed("serviceAccount lifecycle");
}

#[tokio::test]
async fn cluster_extension_printer_columns_match_upstream() {
    let client = olm_e2e::shared().await.client().await;
    let request = http::Request::get("/apis/olm.operatorframework.io/v1/clusterextensions")
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let table: Value = client.request(request).await.unwrap();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "Name",
            "Installed Bundle",
            "Version",
            "Installed",
            "Progressing",
            "Age",
            "Latest"
        ]
    );
    // Ours (issue 25), shown only with `-o wide`: `kubectl get` keeps upstream's five columns.
    let latest = &table["columnDefinitions"][6];
    assert_eq!(latest["priority"], 1, "{latest}");
}
