//! The real catalogs in `testdata/catalogs` load and get the verdict their SOURCES.md predicts,
//! and the served bytes match upstream's golden output.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use olm_api::fbc::{Checks, DeclarativeConfig, Meta, Report, validate, walk_metas_dir};

/// `testdata/catalogs/<rel>`.
fn data(rel: &str) -> PathBuf {
    common::testdata(&format!("catalogs/{rel}"))
}

fn load(rel: &str) -> DeclarativeConfig {
    DeclarativeConfig::load_dir(&data(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn verdict(cfg: &DeclarativeConfig) -> Report {
    validate(cfg, &Checks::default())
}

fn counts(cfg: &DeclarativeConfig) -> (usize, usize, usize) {
    (cfg.packages.len(), cfg.channels.len(), cfg.bundles.len())
}

fn messages(r: &Report) -> Vec<String> {
    r.errors.iter().map(|f| f.message.clone()).collect()
}

#[test]
fn catalogd_golden_catalog_canonicalizes_to_expected_all_json() {
    let dir = data("upstream-operator-controller/catalogd/testdata/catalogs/test-catalog");
    let mut served = Vec::new();
    walk_metas_dir(&dir.join("catalog.yaml"), |m: Meta| {
        served.extend_from_slice(&m.blob);
        served.push(b'\n');
        Ok(())
    })
    .unwrap();
    let expected = std::fs::read(dir.join("expected_all.json")).unwrap();
    assert_eq!(
        String::from_utf8(served).unwrap(),
        String::from_utf8(expected).unwrap()
    );
}

#[test]
fn catalogd_test_catalog_directory_with_its_expected_output_sees_the_package_twice() {
    let cfg = load("upstream-operator-controller/catalogd/testdata/catalogs/test-catalog");
    assert_eq!(counts(&cfg), (2, 2, 2));
    let r = verdict(&cfg);
    assert!(
        messages(&r)
            .iter()
            .any(|m| m.starts_with("duplicate package \"prometheus\"")),
        "{:?}",
        r.errors
    );
    let alone = DeclarativeConfig::load_dir(&data(
        "upstream-operator-controller/catalogd/testdata/catalogs/test-catalog/catalog.yaml",
    ))
    .unwrap();
    assert!(verdict(&alone).is_valid());
}

#[test]
fn certified_operators_v4_22_loads_and_is_valid() {
    let cfg = load("certified-operators/catalogs/v4.22");
    assert_eq!(counts(&cfg), (48, 138, 413));
    let r = verdict(&cfg);
    assert!(r.is_valid(), "{:#?}", r.errors);
}

#[test]
fn community_operators_v4_22_loads_and_is_valid() {
    let cfg = load("community-operators-prod/catalogs/v4.22");
    assert_eq!(counts(&cfg), (29, 68, 666));
    let r = verdict(&cfg);
    assert!(r.is_valid(), "{:#?}", r.errors);
}

#[test]
fn community_operators_v4_16_with_bundle_objects_loads_and_is_valid() {
    let cfg = load("community-operators-prod/catalogs/v4.16");
    assert_eq!(counts(&cfg), (18, 27, 221));
    assert!(cfg.bundles.iter().all(|b| {
        b.properties
            .iter()
            .any(|p| p.bundle_object().is_some_and(|o| o.is_ok()))
    }));
    let r = verdict(&cfg);
    assert!(r.is_valid(), "{:#?}", r.errors);
}

// `opm validate` (operator-registry v1.73.0) rejects this catalog at load time with `parse
// package: illegal base64 data at input byte 1988`: the verdict is the same, and every problem is
// listed here, not only the first.
#[test]
fn derived_community_catalog_passes_channel_rules_and_fails_where_opm_does() {
    let cfg = load("community-operators-prod-derived/catalog");
    assert_eq!(counts(&cfg), (333, 630, 6250));
    let r = verdict(&cfg);
    let of_kind = |list: &[olm_api::fbc::Finding], needle: &str| {
        list.iter().filter(|f| f.message.contains(needle)).count()
    };
    // The derivation copied CSV related images verbatim: 14 `oci://…` references and one
    // `…/draingo@` are not valid pull specs; three icons are not base64; entries of several
    // channels carry skipRanges with a `v` prefix (`<v1.12.0`), which blang cannot parse.
    let related = of_kind(&r.errors, "invalid image pull spec");
    let icons = of_kind(
        &r.errors,
        "icon.base64data: parse package: illegal base64 data",
    );
    let ranges = of_kind(&r.errors, "invalid skipRange");
    assert_eq!((related, icons, ranges), (15, 3, RANGES), "{:#?}", r.errors);
    assert_eq!(r.errors.len(), 15 + 3 + RANGES, "{:#?}", r.errors);
    assert!(
        r.errors
            .iter()
            .any(|f| f.message.contains("illegal base64 data at input byte 1988")),
        "opm's first error is among ours"
    );
    // Lenient: only what this project cannot serve or resolve either stays an error.
    let lenient = validate(
        &cfg,
        &Checks {
            lenient: true,
            ..Checks::default()
        },
    );
    assert_eq!(lenient.errors.len(), 15);
    assert_eq!(lenient.warnings.len(), 3 + RANGES);
}

/// Channel entries of the derived catalog whose `skipRange` blang rejects.
const RANGES: usize = 31;

#[test]
fn upstream_e2e_catalog_loads_but_fails_on_multi_head_channels() {
    let cfg = load("upstream-operator-controller/testdata/images/catalogs/test-catalog/v1/configs");
    assert_eq!(counts(&cfg), (7, 8, 12));
    let r = verdict(&cfg);
    assert_eq!(
        messages(&r),
        vec![
            "multiple channel heads found in graph: test-operator.1.0.0, test-operator.1.0.2, test-operator.1.0.3",
            "multiple channel heads found in graph: test-operator.1.0.4, test-operator.1.2.0",
        ]
    );
    assert!(r.errors.iter().all(|f| f.object.package == "test"));
}

#[test]
fn upstream_updated_and_older_fixture_catalogs_are_valid() {
    for rel in [
        "upstream-operator-controller/testdata/images/catalogs/test-catalog/v2/configs",
        "upstream-operator-controller/testdata/catalogs/test-catalog-v1",
        "upstream-operator-controller/testdata/catalogs/test-catalog-v2",
        "upstream-operator-controller/testdata/catalogs/test-catalog",
    ] {
        let r = verdict(&load(rel));
        assert!(r.is_valid(), "{rel}: {:#?}", r.errors);
    }
}

#[test]
fn operator_registry_fixture_catalogs_are_valid() {
    for rel in [
        "upstream-operator-registry/alpha/action/testdata/index-declcfgs/latest",
        "upstream-operator-registry/alpha/action/testdata/index-declcfgs/old",
        "upstream-operator-registry/alpha/action/testdata/index-declcfgs/exp-headsonly",
        "upstream-operator-registry/alpha/action/testdata/index-declcfgs/exp-include-channel",
        "upstream-operator-registry/alpha/action/testdata/index-declcfgs/exp-include-pkg",
        "upstream-operator-registry/alpha/action/testdata/index-declcfgs/exp-latest",
        "upstream-operator-registry/alpha/action/testdata/list-index",
        "upstream-operator-registry/alpha/action/testdata/foo-index-v0.2.0-declcfg",
        "upstream-operator-registry/fbc-dir/file-based-catalog",
    ] {
        let cfg = load(rel);
        let r = verdict(&cfg);
        assert!(r.is_valid(), "{rel}: {:#?}", r.errors);
    }
    let latest = load("upstream-operator-registry/alpha/action/testdata/index-declcfgs/latest");
    assert_eq!(counts(&latest), (3, 4, 10));
}

#[test]
fn legacy_prometheus_json_fails_modern_validation() {
    let cfg = load("upstream-operator-registry/test/e2e/testdata/test-configs/prometheus");
    assert_eq!(counts(&cfg), (1, 0, 1));
    let r = verdict(&cfg);
    assert_eq!(
        messages(&r),
        vec![
            "package must contain at least one channel",
            "default channel \"alpha\" not found in the package's channels",
            "bundle not found in any channel entries",
        ]
    );
    let at = r.errors[2].object.origin.as_ref().unwrap();
    assert!(at.file.ends_with("prometheus/prometheus.json"));
}

#[test]
fn walk_visits_files_in_lexical_order_and_matches_the_typed_load() {
    let root = data("community-operators-prod/catalogs/v4.22");
    let mut package_order = Vec::new();
    let mut n = 0;
    walk_metas_dir(&root, |m| {
        n += 1;
        if m.schema == "olm.package" {
            package_order.push(m.name);
        }
        Ok(())
    })
    .unwrap();
    let mut sorted = package_order.clone();
    sorted.sort();
    assert_eq!(package_order, sorted);
    let cfg = load("community-operators-prod/catalogs/v4.22");
    assert_eq!(
        n,
        cfg.packages.len() + cfg.channels.len() + cfg.bundles.len()
    );
}

#[test]
fn index_ignore_hides_expected_output_next_to_a_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let src = data("upstream-operator-controller/catalogd/testdata/catalogs/test-catalog");
    for f in ["catalog.yaml", "expected_all.json"] {
        std::fs::copy(src.join(f), tmp.path().join(f)).unwrap();
    }
    std::fs::write(tmp.path().join(".indexignore"), "/expected_all.json\n").unwrap();
    let cfg = DeclarativeConfig::load_dir(tmp.path()).unwrap();
    assert_eq!(counts(&cfg), (1, 1, 1));
    assert!(verdict(&cfg).is_valid());
}

#[test]
fn max_openshift_version_keeps_its_literal_from_a_json_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("c.json"),
        r#"{"schema":"olm.bundle","name":"b","package":"p","properties":[{"type":"olm.maxOpenShiftVersion","value":4.10}]}"#,
    )
    .unwrap();
    let cfg = DeclarativeConfig::load_dir(tmp.path()).unwrap();
    assert_eq!(
        cfg.bundles[0].properties[0].max_openshift_version(),
        Some(olm_api::fbc::MaxOpenShiftVersion::Number("4.10"))
    );
    let mut served = Vec::new();
    walk_metas_dir(tmp.path(), |m| {
        served = m.blob;
        Ok(())
    })
    .unwrap();
    assert!(
        String::from_utf8(served)
            .unwrap()
            .contains(r#""value":4.1}"#)
    );
}
