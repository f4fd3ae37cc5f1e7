//! OpenShift upgrade gating against upstream's test tables.
//!
//! Every case comes from upstream's own tests and documentation of the gating: (cluster-olm-operator
//! `TestIsOperatorMaxOCPVersionCompatibleWithCluster`, `TestNextOCPMinorVersion`), §1.3 (the
//! `ToAllowedSemver` table), §3.2 (`TestIncompatibleOperatorController_Sync`, Helm mode; the
//! Boxcutter-only cases 7 and 8 pick a revision before gating, which is the controller's job) and
//! §3.3 (OLM classic `TestIncompatibleOperators`, with v1's verdicts where v1 differs, see §2's
//! "v1 vs classic" table). Exact strings are cluster-olm-operator's
//! (`pkg/controller/incompatible_operator_controller.go`, `internal/versionutils`) and library-go's
//! `status.UnionClusterCondition`.
#![allow(clippy::unwrap_used)]

use olm_api::openshift::ClusterVersion;
use olm_api::v1::ConditionStatus;
use olm_operator_core::gating::{
    ClusterMinor, CurrentVersionError, ExtensionMetadata, InstalledExtension, MaxVersionError,
    Verdict, VersionSource, current_cluster_version, evaluate, is_upgradeable, to_allowed_semver,
};
use serde_json::json;

fn minor(text: &str) -> ClusterMinor {
    let (a, b) = text.split_once('.').unwrap();
    ClusterMinor::new(a.parse().unwrap(), b.parse().unwrap())
}

fn max(text: &str) -> semver::Version {
    to_allowed_semver(&format!("\"{text}\"")).unwrap()
}

fn props_max(value_json: &str) -> String {
    format!(r#"[{{"type":"olm.maxOpenShiftVersion","value":{value_json}}}]"#)
}

#[test]
fn predicate_matches_upstream_table() {
    // §3.1 TestIsOperatorMaxOCPVersionCompatibleWithCluster
    let table = [
        ("4.17", "4.18", true),
        ("4.18", "4.18", false),
        ("4.19", "4.18", false),
        ("4.22", "4.23", true),
        ("4.23", "4.23", false),
        ("4.23", "5.0", false),
        ("4.23", "5.1", true),
        ("5.0", "4.23", false),
        ("5.0", "5.0", false),
        ("5.0", "5.1", true),
        ("5.1", "4.23", false),
        ("5.1", "5.0", false),
        ("5.1", "5.1", false),
    ];
    for (cluster, m, want) in table {
        assert_eq!(
            is_upgradeable(&max(m), minor(cluster)),
            want,
            "cluster {cluster} max {m}"
        );
    }
}

#[test]
fn next_minor_version_matches_upstream_table() {
    // §3.1 TestNextOCPMinorVersion
    for (cluster, next) in [
        ("4.22", "4.23"),
        ("4.23", "5.1"),
        ("5.0", "5.1"),
        ("5.1", "5.2"),
    ] {
        assert_eq!(minor(cluster).next(), next);
    }
}

#[test]
fn to_allowed_semver_matches_upstream_table() {
    // §1.3: tested and code-derived rows.
    let ok = [
        ("4.18", "4.18.0"),
        ("4.19", "4.19.0"),
        ("\"4.18\"", "4.18.0"),
        ("5.0", "5.0.0"),
        ("\"5.0\"", "5.0.0"),
        ("\"5.1\"", "5.1.0"),
        ("4.10", "4.10.0"),
        ("\" 4.18\"", "4.18.0"),
        ("\"4.018\"", "4.18.0"),
    ];
    for (raw, want) in ok {
        assert_eq!(to_allowed_semver(raw).unwrap().to_string(), want, "{raw}");
    }
    let err = [
        (
            "4.19e1",
            r#"invalid semver format "4.19e1": expected <major>.<minor>"#,
        ),
        (
            "5.00",
            r#"invalid semver format "5.00": expected <major>.<minor>"#,
        ),
        (
            "4",
            r#"invalid semver format "4": expected <major>.<minor>"#,
        ),
        ("4.18.0", "invalid character '.' after top-level value"),
        (
            "1e400",
            "json: cannot unmarshal number 1e400 into Go value of type float64",
        ),
        ("\"4.18.0\"", "invalid version format"),
        ("\"v4.18\"", "invalid version format"),
        ("\"v4.18.0\"", "invalid version format"),
        ("\"\"", "invalid version format"),
        ("\"4\"", "invalid version format"),
        (
            "\"4.18-rc\"",
            "Short version cannot contain PreRelease/Build meta data",
        ),
        (
            "null",
            "invalid type <nil> for olm.maxOpenshiftVersion: null",
        ),
        (
            "true",
            "invalid type bool for olm.maxOpenshiftVersion: true",
        ),
        (
            "{\"a\":1}",
            "invalid type map[string]interface {} for olm.maxOpenshiftVersion: {\"a\":1}",
        ),
    ];
    for (raw, want) in err {
        assert_eq!(
            to_allowed_semver(raw).unwrap_err().to_string(),
            want,
            "{raw}"
        );
    }
    assert!(matches!(
        to_allowed_semver("\"x.y\""),
        Err(MaxVersionError::Tolerant(_))
    ));
}

/// One §3.2 case: the condition upstream writes for one extension `op` -> `bundle`.
fn single(
    cluster: &str,
    bundle: &str,
    olm_properties: Option<&str>,
) -> olm_operator_core::gating::GatingCondition {
    let ext = [InstalledExtension {
        name: "op",
        metadata: ExtensionMetadata::Deployed {
            bundle,
            olm_properties,
        },
    }];
    evaluate(minor(cluster), &ext).olm_operator_condition()
}

#[test]
fn controller_sync_cases_match_upstream() {
    // §3.2 #1: no extensions.
    let c = evaluate(minor("4.17"), &[]).olm_operator_condition();
    assert_eq!(
        (c.status, c.reason.as_str(), c.message.as_str()),
        (ConditionStatus::True, "", "")
    );

    // #2: max "4.18" on 4.17.
    let c = single("4.17", "test-bundle-1.0", Some(&props_max("\"4.18\"")));
    assert_eq!(c.status, ConditionStatus::True);

    // #3: no olm.properties annotation.
    assert_eq!(
        single("4.17", "test-bundle-1.0", None).status,
        ConditionStatus::True
    );

    // #4, #5: olm.properties "" and "abcd".
    for (text, json_err) in [
        ("", "unexpected end of JSON input"),
        (
            "abcd",
            "invalid character 'a' looking for beginning of value",
        ),
    ] {
        let c = single("4.17", "test-bundle-1.0", Some(text));
        assert_eq!(c.status, ConditionStatus::False);
        assert_eq!(c.reason, "FailureGettingExtensionMetadata");
        assert_eq!(
            c.message,
            format!(
                "error with cluster extension op: error in bundle test-bundle-1.0: could not convert olm.properties: failed to unmarshal properties annotation: {json_err}"
            )
        );
    }

    // #6: max "4.17" on 4.17 blocks.
    let c = single("4.17", "test-bundle-1.0", Some(&props_max("\"4.17\"")));
    assert_eq!(c.status, ConditionStatus::False);
    assert_eq!(c.reason, "IncompatibleOperatorsInstalled");
    assert_eq!(
        c.message,
        r#"Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.18: bundle "test-bundle-1.0" for ClusterExtension "op"."#
    );

    // #9 (Helm): op -> test-bundle-1.0 "4.17" blocks, op-2 -> test-bundle-2.0 "4.18" does not.
    let p1 = props_max("\"4.17\"");
    let p2 = props_max("\"4.18\"");
    let exts = [
        InstalledExtension {
            name: "op",
            metadata: ExtensionMetadata::Deployed {
                bundle: "test-bundle-1.0",
                olm_properties: Some(&p1),
            },
        },
        InstalledExtension {
            name: "op-2",
            metadata: ExtensionMetadata::Deployed {
                bundle: "test-bundle-2.0",
                olm_properties: Some(&p2),
            },
        },
    ];
    let c = evaluate(minor("4.17"), &exts).olm_operator_condition();
    assert_eq!(c.reason, "IncompatibleOperatorsInstalled");
    assert!(c.message.contains("test-bundle-1.0"));
    assert!(!c.message.contains("test-bundle-2.0"));

    // #10-#17: the 4.23 / 5.0 rules, and the version the message names.
    let table = [
        ("4.23", "5.0", false, "5.1"),
        ("4.23", "5.1", true, ""),
        ("5.0", "5.1", true, ""),
        ("5.0", "5.0", false, "5.1"),
        ("5.0", "4.23", false, "5.1"),
        ("5.1", "5.1", false, "5.2"),
    ];
    for (cluster, m, upgradeable, next) in table {
        let c = single(cluster, "b-1.0", Some(&props_max(&format!("\"{m}\""))));
        if upgradeable {
            assert_eq!(c.status, ConditionStatus::True, "{cluster} {m}");
        } else {
            assert_eq!(c.status, ConditionStatus::False, "{cluster} {m}");
            assert_eq!(c.reason, "IncompatibleOperatorsInstalled");
            assert_eq!(
                c.message,
                format!(
                    "Found ClusterExtensions that require upgrades prior to upgrading cluster to version {next}: bundle \"b-1.0\" for ClusterExtension \"op\"."
                )
            );
        }
    }
}

#[test]
fn boxcutter_cases_pick_the_highest_active_revision() {
    use olm_operator_core::gating::ObjectSetRevision;
    let p17 = props_max("\"4.17\"");
    let p18 = props_max("\"4.18\"");
    fn rev<'a>(
        state: &'a str,
        revision: i64,
        bundle: &'a str,
        props: &'a str,
    ) -> ObjectSetRevision<'a> {
        ObjectSetRevision {
            lifecycle_state: state,
            revision,
            bundle: Some(bundle),
            olm_properties: Some(props),
        }
    }
    let (p17, p18) = (p17.as_str(), p18.as_str());
    // §3.2 #7: op rev3 Active test-bundle-1.2 "4.17"; op-2 rev1 Active "4.18".
    let op = [rev("Active", 3, "test-bundle-1.2", p17)];
    let op2 = [rev("Active", 1, "test-bundle-2.0", p18)];
    let exts = [
        InstalledExtension {
            name: "op",
            metadata: ExtensionMetadata::from_object_sets(&op),
        },
        InstalledExtension {
            name: "op-2",
            metadata: ExtensionMetadata::from_object_sets(&op2),
        },
    ];
    let c = evaluate(minor("4.17"), &exts).olm_operator_condition();
    assert_eq!(c.reason, "IncompatibleOperatorsInstalled");
    assert!(c.message.contains("test-bundle-1.2"), "{}", c.message);
    assert!(!c.message.contains("test-bundle-2.0"), "{}", c.message);

    // #8: rev1 Archived "4.17", rev2 Active test-bundle-1.1 "4.18", rev3 Active test-bundle-1.2 "4.17".
    let op = [
        rev("Archived", 1, "test-bundle-1.0", p17),
        rev("Active", 2, "test-bundle-1.1", p18),
        rev("Active", 3, "test-bundle-1.2", p17),
    ];
    let exts = [InstalledExtension {
        name: "op",
        metadata: ExtensionMetadata::from_object_sets(&op),
    }];
    let c = evaluate(minor("4.17"), &exts).olm_operator_condition();
    assert_eq!(
        c.message,
        r#"Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.18: bundle "test-bundle-1.2" for ClusterExtension "op"."#
    );
    // Only archived revisions: not deployed.
    let archived = [rev("Archived", 4, "x", p17)];
    assert_eq!(
        ExtensionMetadata::from_object_sets(&archived),
        ExtensionMetadata::NotDeployed
    );
}

#[test]
fn blocking_extensions_are_sorted_by_their_list_entry_and_errors_are_appended() {
    let blocks = props_max("\"4.18\"");
    let bad = props_max("\"v4.18\"");
    let exts = [
        InstalledExtension {
            name: "d",
            metadata: ExtensionMetadata::Deployed {
                bundle: "c-2.0",
                olm_properties: Some(&blocks),
            },
        },
        InstalledExtension {
            name: "z",
            metadata: ExtensionMetadata::Unreadable,
        },
        InstalledExtension {
            name: "a",
            metadata: ExtensionMetadata::Deployed {
                bundle: "b-1.0",
                olm_properties: Some(&blocks),
            },
        },
        InstalledExtension {
            name: "e",
            metadata: ExtensionMetadata::Deployed {
                bundle: "e-1.0",
                olm_properties: Some(&bad),
            },
        },
        InstalledExtension {
            name: "n",
            metadata: ExtensionMetadata::NotDeployed,
        },
    ];
    let eval = evaluate(minor("4.18"), &exts);
    assert_eq!(eval.extensions[4].verdict, Verdict::NotCounted);
    let c = eval.olm_operator_condition();
    assert_eq!(c.reason, "IncompatibleOperatorsInstalled");
    let want = "Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: \
bundle \"b-1.0\" for ClusterExtension \"a\",bundle \"c-2.0\" for ClusterExtension \"d\".\n \
Additionally the following errors were encountered while getting extension metadata: \
error returning the last deployed release for z\n\
error(s) with cluster extension e: error in bundle e-1.0: error converting to semver for version \"v4.18\": invalid version format";
    assert_eq!(c.message, want);

    // The ClusterOperator's condition is library-go's union of it.
    let co = eval.cluster_operator_condition();
    assert_eq!(co.type_, "Upgradeable");
    assert_eq!(co.status, ConditionStatus::False);
    assert_eq!(
        co.reason,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled"
    );
    assert_eq!(
        co.message,
        want.split('\n')
            .map(|l| format!("InstalledOLMOperatorsUpgradeable: {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn errors_alone_give_failure_getting_extension_metadata() {
    let two = r#"[{"type":"olm.maxOpenShiftVersion","value":"4.20"},{"type":"olm.maxOpenShiftVersion","value":"4.21"}]"#;
    let exts = [InstalledExtension {
        name: "op",
        metadata: ExtensionMetadata::Deployed {
            bundle: "b-1.0",
            olm_properties: Some(two),
        },
    }];
    let eval = evaluate(minor("4.18"), &exts);
    let c = eval.olm_operator_condition();
    assert_eq!(c.status, ConditionStatus::False);
    assert_eq!(c.reason, "FailureGettingExtensionMetadata");
    assert_eq!(
        c.message,
        "error(s) with cluster extension op: error in bundle b-1.0: more than one olm.maxOpenShiftVersion found in bundle"
    );
    let co = eval.cluster_operator_condition();
    assert_eq!(
        co.reason,
        "InstalledOLMOperators_FailureGettingExtensionMetadata"
    );

    // A parse error and then a second property: both errors, joined with a newline.
    let bad_then_second = r#"[{"type":"olm.maxOpenShiftVersion","value":4.19e1},{"type":"olm.maxOpenShiftVersion","value":"4.21"}]"#;
    let exts = [InstalledExtension {
        name: "op",
        metadata: ExtensionMetadata::Deployed {
            bundle: "b-1.0",
            olm_properties: Some(bad_then_second),
        },
    }];
    assert_eq!(
        evaluate(minor("4.18"), &exts)
            .olm_operator_condition()
            .message,
        "error(s) with cluster extension op: error in bundle b-1.0: error converting to semver for version 4.19e1: invalid semver format \"4.19e1\": expected <major>.<minor>\nmore than one olm.maxOpenShiftVersion found in bundle"
    );

    let listing = olm_operator_core::gating::Evaluation::listing_failed(minor("4.18"), "boom");
    assert_eq!(listing.olm_operator_condition().message, "boom");
}

#[test]
fn compatible_cluster_operator_condition_is_as_expected() {
    let co = evaluate(minor("4.18"), &[]).cluster_operator_condition();
    assert_eq!(
        (co.status, co.reason.as_str(), co.message.as_str()),
        (ConditionStatus::True, "AsExpected", "All is well")
    );
}

#[test]
fn classic_cases_under_v1_rules() {
    // §3.3 TestIncompatibleOperators, judged with v1's parser and predicate. Each row: cluster
    // (patch/prerelease dropped as v1 does), the max value's JSON, and v1's verdict. Where v1
    // differs from classic (`X.Y.Z` strings are errors in v1, see §2 "v1 vs classic"), the row says so.
    enum Want {
        Ok,
        Blocks,
        Error,
    }
    use Want::*;
    let table = [
        // "Compatible": 1.0.0 with 1.1.0 / 1.1.0+build / 2.0.0: classic compatible, v1 errors (two dots).
        ("1.0", "\"1.1.0\"", Error),
        ("1.0", "\"2.0.0\"", Error),
        // "Mixed": chestnut 1.0 blocks in both.
        ("1.0", "\"1.0\"", Blocks),
        ("1.0", "\"1.1\"", Ok),
        // "Mixed/BadVersion": bad_version is an error in both (v1: not X.Y).
        ("1.0", "\"bad_version\"", Error),
        // "ClusterZ": 1.0.1 cluster is 1.0, next 1.1: max 1.1 passes.
        ("1.0", "\"1.1\"", Ok),
        // "ClusterPre": 1.1.0-pre cluster is 1.1: max 1.1 blocks.
        ("1.1", "\"1.1\"", Blocks),
        // OCP 4.22 / 4.23 / 5.0 / 5.1 with 4.23, 5.0, 5.1.
        ("4.22", "\"4.23\"", Ok),
        ("4.22", "\"5.0\"", Ok),
        ("4.22", "\"5.1\"", Ok),
        ("4.23", "\"4.23\"", Blocks),
        ("4.23", "\"5.0\"", Blocks),
        ("4.23", "\"5.1\"", Ok),
        ("5.0", "\"4.23\"", Blocks),
        ("5.0", "\"5.0\"", Blocks),
        ("5.0", "\"5.1\"", Ok),
        ("5.1", "\"4.23\"", Blocks),
        ("5.1", "\"5.0\"", Blocks),
        ("5.1", "\"5.1\"", Blocks),
        // TestMaxOpenShiftVersion: "" errors; unquoted 4.8 is 4.8.
        ("4.7", "\"\"", Error),
        ("4.7", "4.8", Ok),
        ("4.8", "4.8", Blocks),
    ];
    for (cluster, value, want) in table {
        let p = props_max(value);
        let exts = [InstalledExtension {
            name: "x",
            metadata: ExtensionMetadata::Deployed {
                bundle: "b",
                olm_properties: Some(&p),
            },
        }];
        let verdict = &evaluate(minor(cluster), &exts).extensions[0].verdict;
        let ok = match want {
            Ok => matches!(verdict, Verdict::Compatible { max: Some(_) }),
            Blocks => matches!(verdict, Verdict::Blocking { .. }),
            Error => matches!(verdict, Verdict::Error { .. }),
        };
        assert!(ok, "cluster {cluster} value {value}: {verdict:?}");
    }
}

#[test]
fn unquoted_one_digit_minor_is_judged_as_written_and_warned_about() {
    // install-path.md §6: an unquoted 4.10 in properties.yaml reaches olm.properties as 4.1.
    let p = r#"[{"type":"olm.maxOpenShiftVersion","value":4.1}]"#;
    let exts = [InstalledExtension {
        name: "argocd",
        metadata: ExtensionMetadata::Deployed {
            bundle: "argocd-operator.v0.6.0",
            olm_properties: Some(p),
        },
    }];
    let eval = evaluate(minor("4.9"), &exts);
    // Upstream's verdict: 4.1 < 4.9, so it blocks.
    assert!(matches!(
        eval.extensions[0].verdict,
        Verdict::Blocking { .. }
    ));
    let warnings: Vec<&str> = eval.warnings().collect();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("\"argocd-operator.v0.6.0\""),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains(r#"{"type":"olm.maxOpenShiftVersion","value":4.1}"#),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("4.10"), "{}", warnings[0]);

    // Quoted values and two-digit minors get no warning.
    for value in ["\"4.1\"", "4.18", "4.10"] {
        let p = props_max(value);
        let exts = [InstalledExtension {
            name: "x",
            metadata: ExtensionMetadata::Deployed {
                bundle: "b",
                olm_properties: Some(&p),
            },
        }];
        assert_eq!(
            evaluate(minor("4.9"), &exts).warnings().count(),
            0,
            "{value}"
        );
    }
}

fn cluster_version(history: serde_json::Value) -> ClusterVersion {
    serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "spec": {"clusterID": "c0ffee"},
        "status": {"desired": {"version": "4.19.0"}, "history": history}
    }))
    .unwrap()
}

#[test]
fn current_version_prefers_the_environment_then_the_newest_completed_update() {
    let cv = cluster_version(json!([
        {"state": "Partial", "version": "4.19.0"},
        {"state": "Completed", "version": "4.18.3"},
        {"state": "Completed", "version": "4.17.9"}
    ]));
    let env =
        current_cluster_version(Some("4.16.0-0.nightly-2026-01-01-000000"), Some(&cv)).unwrap();
    assert_eq!(
        (env.minor, env.source),
        (minor("4.16"), VersionSource::Environment)
    );

    // Unset or empty: the newest Completed entry, never status.desired (4.19, the update target).
    for env in [None, Some("")] {
        let v = current_cluster_version(env, Some(&cv)).unwrap();
        assert_eq!(v.minor, minor("4.18"));
        assert_eq!(v.source, VersionSource::ClusterVersionHistory);
        assert_eq!(v.raw, "4.18.3");
    }
}

#[test]
fn current_version_errors_name_their_source() {
    // Upstream parses the environment value strictly (blang Parse) and refuses to start.
    let e = current_cluster_version(Some("4.18"), None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "failed to read the cluster version from OPERATOR_IMAGE_VERSION=\"4.18\": No Major.Minor.Patch elements found"
    );
    assert_eq!(
        current_cluster_version(None, None).unwrap_err(),
        CurrentVersionError::NoClusterVersion
    );
    let partial = cluster_version(json!([{"state": "Partial", "version": "4.19.0"}]));
    assert_eq!(
        current_cluster_version(None, Some(&partial)).unwrap_err(),
        CurrentVersionError::NoCompletedUpdate
    );
    let bad = cluster_version(json!([{"state": "Completed", "version": "v4.18"}]));
    assert!(matches!(
        current_cluster_version(None, Some(&bad)).unwrap_err(),
        CurrentVersionError::InvalidHistoryVersion { .. }
    ));
}

#[test]
fn a_release_written_by_upstream_is_judged_from_its_labels_and_chart_annotations() {
    // tests/release_data/upstream-index-fixture-one.v1.json: bundle fixture.v1.0.0 whose
    // olm.properties declares the unquoted number 4.1 (what an unquoted 4.10 in
    // properties.yaml becomes).
    let path = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
        .join("tests/release_data/upstream-index-fixture-one.v1.json");
    let index: k8s_openapi::api::core::v1::Secret =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let stored = olm_operator_core::release::secrets::decode_release(
        &index,
        &[],
        olm_operator_core::release::DecodeLimits::default(),
    )
    .unwrap();
    let exts = [InstalledExtension {
        name: "fixture-one",
        metadata: ExtensionMetadata::from_release(Some(&stored.release)),
    }];
    let eval = evaluate(minor("4.18"), &exts);
    assert_eq!(
        eval.olm_operator_condition().message,
        r#"Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle "fixture.v1.0.0" for ClusterExtension "fixture-one"."#
    );
    assert_eq!(eval.warnings().count(), 1);
    assert_eq!(
        ExtensionMetadata::from_release(None),
        ExtensionMetadata::NotDeployed
    );
}

#[test]
fn go_decoding_and_blang_texts_match_go() {
    // Outputs of Go's encoding/json into []property.Property and blang/semver v4, recorded by
    // running them (go 1.26, operator-registry v1.60.0, blang/semver v4.0.0).
    use olm_operator_core::gating::decode_properties;
    use olm_operator_core::gating::version::parse_tolerant;
    let props = [
        (
            "[1]",
            Err("json: cannot unmarshal number into Go value of type property.Property"),
        ),
        (
            "[true]",
            Err("json: cannot unmarshal bool into Go value of type property.Property"),
        ),
        (
            r#"[{"type":"a"},{"type":2}]"#,
            Err("json: cannot unmarshal number into Go struct field Property.type of type string"),
        ),
        // RawMessage is not decoded, so an overflowing number is fine.
        (r#"[{"type":"a","value":1e400}]"#, Ok(vec![("a", "1e400")])),
    ];
    for (input, want) in props {
        let got = decode_properties(input).map(|ps| {
            ps.into_iter()
                .map(|p| (p.type_, p.value))
                .collect::<Vec<_>>()
        });
        let want = want
            .map(|v| {
                v.into_iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect::<Vec<_>>()
            })
            .map_err(str::to_string);
        assert_eq!(got, want, "{input}");
    }
    let tolerant = [
        (
            "x.y",
            Err(r#"Invalid character(s) found in major number "x""#),
        ),
        (
            "4.18-rc",
            Err("Short version cannot contain PreRelease/Build meta data"),
        ),
        (" 4.18", Ok("4.18.0")),
        ("4.018", Ok("4.18.0")),
        ("", Err(r#"strconv.ParseUint: parsing "": invalid syntax"#)),
        ("4", Ok("4.0.0")),
        ("00.01", Ok("0.1.0")),
        (
            "4.a",
            Err(r#"Invalid character(s) found in minor number "a""#),
        ),
        (
            "4.-1",
            Err("Short version cannot contain PreRelease/Build meta data"),
        ),
        (
            "-4.1",
            Err(r#"Invalid character(s) found in major number "0-4""#),
        ),
        (
            "4.1a",
            Err(r#"Invalid character(s) found in minor number "1a""#),
        ),
    ];
    for (input, want) in tolerant {
        let got = parse_tolerant(input)
            .map(|v| v.to_string())
            .map_err(|e| e.to_string());
        assert_eq!(
            got,
            want.map(str::to_string).map_err(str::to_string),
            "{input:?}"
        );
    }
}
