//! Bundle versions and releases: upstream's parsing table, ordering, installed-version errors and
//! how the version is printed back.
#![allow(clippy::unwrap_used)]

use std::cmp::Ordering;

use olm_api::version::release::{
    Identifier, InstalledVersionError, Release, ReleaseError, VersionRelease, compare_optional,
};

fn release(ids: &[&str]) -> Release {
    Release::parse(&ids.join(".")).unwrap()
}

fn legacy(version: &str) -> VersionRelease {
    VersionRelease::from_bundle_version(version, None, false).unwrap()
}

/// Version text (with build) and release text, to compare with upstream's table exactly.
fn parts(vr: &VersionRelease) -> (String, Option<String>) {
    (
        vr.version.to_string(),
        vr.release.as_ref().map(Release::to_string),
    )
}

/// olm.package version, explicit release, BundleReleaseSupport, expected version, expected release.
type SplitCase = (
    &'static str,
    Option<&'static str>,
    bool,
    &'static str,
    Option<&'static str>,
);

#[test]
fn bundle_versions_split_into_version_and_release_as_upstream_does() {
    let cases: [SplitCase; 7] = [
        (
            "1.0.0-pre+1.alpha.2",
            None,
            false,
            "1.0.0-pre",
            Some("1.alpha.2"),
        ),
        ("1.0.0+001", None, false, "1.0.0+001", None),
        ("1.0.0+ignored", Some("2"), true, "1.0.0+ignored", Some("2")),
        ("2.1.0", Some("1.alpha.3"), true, "2.1.0", Some("1.alpha.3")),
        ("1.0.0+2", Some(""), true, "1.0.0+2", Some("")),
        ("1.0.0+2", Some("999"), false, "1.0.0", Some("2")),
        ("1.0.0+git", None, true, "1.0.0", Some("git")),
    ];
    for (version, explicit, support, want_version, want_release) in cases {
        let vr = VersionRelease::from_bundle_version(version, explicit, support).unwrap();
        assert_eq!(
            parts(&vr),
            (want_version.to_owned(), want_release.map(str::to_owned)),
            "{version:?} {explicit:?} {support}"
        );
    }
    let identifiers = legacy("1.0.0-pre+1.alpha.2").release.unwrap();
    assert_eq!(
        identifiers.identifiers(),
        [
            Identifier::Numeric(1),
            Identifier::Alphanumeric("alpha".into()),
            Identifier::Numeric(2)
        ]
    );
}

#[test]
fn build_metadata_that_is_not_a_release_stays_build_metadata() {
    // Leading zero, empty-looking, or longer than a release may be.
    for version in ["1.0.0+001", "1.0.0+abcdef0123456789abcdef", "1.0.0+1.01"] {
        let vr = legacy(version);
        assert_eq!(vr.release, None, "{version}");
        assert_eq!(vr.version.to_string(), version);
    }
}

#[test]
fn invalid_bundle_versions_and_releases_report_upstreams_words() {
    let err = VersionRelease::from_bundle_version("abcd", None, false).unwrap_err();
    assert_eq!(err.to_string(), "No Major.Minor.Patch elements found");
    let err = VersionRelease::from_bundle_version("1.0.0", Some("001"), true).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"error parsing release "001": invalid release "001": segment 0: Numeric PreRelease version must not contain leading zeroes "001""#
    );
    let err = VersionRelease::from_bundle_version("1.0", Some("1"), true).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"error parsing version "1.0": No Major.Minor.Patch elements found"#
    );
    // Without the gate an explicit release is not even looked at.
    assert!(VersionRelease::from_bundle_version("1.0.0", Some("001"), false).is_ok());
}

#[test]
fn releases_are_validated_segment_by_segment() {
    assert!(release(&[]).is_empty());
    assert_eq!(
        Release::parse("01..a_b").unwrap_err().to_string(),
        "invalid release \"01..a_b\": segment 0: Numeric PreRelease version must not contain \
         leading zeroes \"01\"\nsegment 1: Prerelease is empty\nsegment 2: Invalid character(s) \
         found in prerelease \"a_b\""
    );
    assert_eq!(
        Release::parse("aaaaaaaaaaaaaaaaaaaaa").unwrap_err(),
        ReleaseError::TooLong("aaaaaaaaaaaaaaaaaaaaa".into())
    );
    assert_eq!(
        Release::parse("aaaaaaaaaaaaaaaaaaaaa")
            .unwrap_err()
            .to_string(),
        r#"invalid release "aaaaaaaaaaaaaaaaaaaaa": exceeds maximum length of 20 characters"#
    );
    assert_eq!(release(&["1", "alpha", "2"]).to_string(), "1.alpha.2");
}

#[test]
fn releases_order_like_prerelease_identifiers_with_none_lowest() {
    let ordered = [
        release(&[]),
        release(&["1"]),
        release(&["1", "0"]),
        release(&["2"]),
        release(&["10"]),
    ];
    for pair in ordered.windows(2) {
        assert!(pair[0] < pair[1], "{} < {}", pair[0], pair[1]);
    }
    assert!(release(&["10"]) < release(&["alpha"]));
    assert!(release(&["alpha"]) < release(&["beta"]));
}

#[test]
fn bundles_sort_by_version_then_release_with_unparseable_versions_last() {
    // Upstream TestByVersionAndRelease: b4 and b5 have no usable version.
    let bundles = [
        ("b3_1", Some("1.0.0-alpha+1")),
        ("b4", None),
        ("b2", Some("0.0.1")),
        ("b3_2", Some("1.0.0-alpha+2")),
        ("b5", None),
        ("b1", Some("1.0.0")),
    ];
    let mut parsed: Vec<(&str, Option<VersionRelease>)> = bundles
        .iter()
        .map(|(name, v)| (*name, v.map(legacy)))
        .collect();
    parsed.sort_by(|(_, a), (_, b)| compare_optional(b.as_ref(), a.as_ref()));
    let names: Vec<&str> = parsed.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["b1", "b3_2", "b3_1", "b2", "b4", "b5"]);
    assert_eq!(compare_optional(None, None), Ordering::Equal);
}

#[test]
fn a_release_makes_bundles_with_equal_versions_distinct() {
    // Successor scenario 4: 2.0.0+1 is its own bundle, above 2.0.0.
    let installed = VersionRelease::from_installed("2.0.0+1", None).unwrap();
    assert_eq!(installed, legacy("2.0.0+1"));
    assert_ne!(installed, legacy("2.0.0"));
    assert!(installed > legacy("2.0.0"));
    // Build metadata that is not a release does not count; an explicit empty release ranks as none.
    assert_eq!(legacy("2.0.0+001"), legacy("2.0.0"));
    let explicit_empty = VersionRelease::from_installed("1.0.0+git", Some("")).unwrap();
    assert_eq!(explicit_empty.release, Some(Release::default()));
    assert_eq!(explicit_empty, legacy("1.0.0"));
    assert_ne!(
        VersionRelease::from_installed("1.0.0", Some("2")).unwrap(),
        legacy("1.0.0")
    );
}

#[test]
fn unreadable_installed_versions_fail_with_upstreams_words() {
    let err = VersionRelease::from_installed("invalid-version", None).unwrap_err();
    assert!(matches!(err, InstalledVersionError::Legacy(_)));
    assert_eq!(
        err.to_string(),
        "failed to get version and release of installed bundle: No Major.Minor.Patch elements found"
    );
    let err = VersionRelease::from_installed("invalid-version", Some("1")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to parse installed bundle version and release: error parsing version \
         \"invalid-version\": No Major.Minor.Patch elements found"
    );
    let err = VersionRelease::from_installed("1.0.0", Some("001")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("failed to parse installed bundle version and release: "),
        "{err}"
    );
}

#[test]
fn the_installed_version_prints_with_its_release_folded_into_build_metadata() {
    let cases = [
        (legacy("1.0.0+2"), "1.0.0+2"),
        (legacy("1.0.0+001"), "1.0.0+001"),
        (legacy("1.0.0-pre+1.alpha.2"), "1.0.0-pre+1.alpha.2"),
        (legacy("3.1.4"), "3.1.4"),
        (
            VersionRelease::from_bundle_version("1.0.0+ignored", Some("2"), true).unwrap(),
            "1.0.0+2",
        ),
        (
            VersionRelease::from_bundle_version("1.0.0+2", Some(""), true).unwrap(),
            "1.0.0+2",
        ),
    ];
    for (vr, printed) in cases {
        assert_eq!(vr.to_string(), printed);
    }
}
