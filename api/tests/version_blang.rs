//! blang ranges (`skipRange`) and strict versions (bundle versions): the conformance table in
//! `testdata/conformance`, blang's quirks, its differences from the `semver` crate, and error
//! texts.
#![allow(clippy::unwrap_used)]

mod common;

use olm_api::version::blang::{Range, RangeError, VersionError, parse_version};
use semver::Version;

fn r(s: &str) -> Range {
    Range::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn v(s: &str) -> Version {
    parse_version(s).unwrap()
}

#[test]
fn every_row_of_the_blang_conformance_table_holds() {
    common::check_table(
        "conformance/blang-ranges.tsv",
        82,
        |range, version| match Range::parse(range) {
            Err(e) => format!("error ({e})"),
            Ok(parsed) => match parse_version(version) {
                Ok(version) => parsed.matches(&version).to_string(),
                Err(e) => format!("version error ({e})"),
            },
        },
    );
}

#[test]
fn a_v_prefix_in_a_skip_range_is_rejected_like_blang_does() {
    // Found in real catalogs; upstream ignores such a skipRange.
    let err = Range::parse(">=v1.9.0 <v1.10.1").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Could not parse Range ">=v1.9.0": Could not parse comparator ">=v" in ">=v1.9.0""#
    );
    assert!(Range::parse("<v1.13.0").is_err());
}

#[test]
fn spaces_after_an_operator_are_allowed() {
    for range in ["> 1.0.0", ">   1.0.0 <  2.0.0", "=  1.2.0 || >= 3.0.0"] {
        assert!(
            r(range).matches(&v("1.2.0")) || r(range).matches(&v("3.0.0")),
            "{range:?}"
        );
    }
    assert!(r(">= 1.18.0 < 1.28.0").matches(&v("1.27.9")));
    assert!(!r(">= 1.18.0 < 1.28.0").matches(&v("1.28.0")));
}

#[test]
fn blang_quirks_are_kept_because_verdicts_must_not_change() {
    // A one-character term is dropped.
    assert_same_meaning("1 >2.0.0", ">2.0.0");
    // `!=` with a wildcard ANDs both sides of the span: nothing matches.
    let not_1_2 = r("!=1.2.x");
    assert!(!not_1_2.matches(&v("1.1.0")) && !not_1_2.matches(&v("1.2.5")));
    assert!(!not_1_2.matches(&v("1.3.0")));
    // `1.x.x` is read as a patch wildcard on 1.0.
    assert!(r("1.x.x").matches(&v("1.0.9")) && !r("1.x.x").matches(&v("1.1.0")));
    // An unknown operator in front of a wildcard disappears.
    assert!(r("~1.2.x").matches(&v("1.2.0")) && !r("~1.2.x").matches(&v("1.2.1")));
    // Without a wildcard, unknown operators and npm/Masterminds syntax are errors.
    for range in [
        "~1.2.3",
        "^1.2.3",
        "*",
        "1.2 - 1.4",
        "1.0",
        "1.2.X",
        ">=1.0.0,<2.0.0",
    ] {
        assert!(Range::parse(range).is_err(), "{range:?} should be rejected");
    }
}

fn assert_same_meaning(a: &str, b: &str) {
    let (a_range, b_range) = (r(a), r(b));
    for major in 0..4 {
        for minor in 0..3 {
            let probe = Version::new(major, minor, 0);
            assert_eq!(
                a_range.matches(&probe),
                b_range.matches(&probe),
                "{a:?} vs {b:?} on {probe}"
            );
        }
    }
}

#[test]
fn an_empty_group_between_ors_is_accepted_and_matches_nothing() {
    // blang accepts this and panics if matching reaches the empty group; here it never matches.
    let range = r(">1.0.0 || || <0.5.0");
    assert!(range.matches(&v("2.0.0")));
    assert!(range.matches(&v("0.1.0")));
    assert!(!range.matches(&v("0.7.0")));
}

#[test]
fn prereleases_compare_plainly_and_build_metadata_is_ignored() {
    assert!(r(">=1.0.0 <2.0.0").matches(&v("1.5.0-beta")));
    assert!(r("<1.0.0").matches(&v("1.0.0-rc.1")));
    assert!(r(">1.0.0-alpha.1").matches(&v("1.0.0-alpha.beta")));
    assert!(r("=1.0.0").matches(&v("1.0.0+build.7")));
    assert!(r("!=1.0.0+a").matches(&v("1.0.1")) && !r("!=1.0.0+a").matches(&v("1.0.0+b")));
}

#[test]
fn malformed_ranges_report_blangs_words() {
    let cases = [
        ("", RangeError::TrailingOr.to_string()),
        (">1.0.0 ||", "Last element in range is '||'".into()),
        ("|| >1.0.0", "First element in range is '||'".into()),
        ("foox", r#"Could not get version from string: "foox""#.into()),
        (">>1.2.3", r#"Could not parse Range ">>1.2.3": Could not parse comparator ">>" in ">>1.2.3""#.into()),
        (
            "=invalid",
            r#"Could not get version from string: "=invalid""#.into(),
        ),
        (
            ">=1.2.3-01",
            r#"Could not parse Range ">=1.2.3-01": Could not parse version "1.2.3-01" in ">=1.2.3-01": Numeric PreRelease version must not contain leading zeroes "01""#.into(),
        ),
    ];
    for (input, message) in cases {
        assert_eq!(
            Range::parse(input).unwrap_err().to_string(),
            message,
            "{input:?}"
        );
    }
}

#[test]
fn strict_versions_report_blangs_words() {
    let cases = [
        ("", "Version string empty"),
        ("invalid-version", "No Major.Minor.Patch elements found"),
        ("1.2", "No Major.Minor.Patch elements found"),
        (
            "v1.2.3",
            r#"Invalid character(s) found in major number "v1""#,
        ),
        ("1.b.3", r#"Invalid character(s) found in minor number "b""#),
        (
            "1.2.3.4",
            r#"Invalid character(s) found in patch number "3.4""#,
        ),
        (
            "01.2.3",
            r#"Major number must not contain leading zeroes "01""#,
        ),
        (
            "1.2.03",
            r#"Patch number must not contain leading zeroes "03""#,
        ),
        (
            "1.2.-rc",
            r#"strconv.ParseUint: parsing "": invalid syntax"#,
        ),
        ("1.2.3-", "Prerelease is empty"),
        (
            "1.2.3-01",
            r#"Numeric PreRelease version must not contain leading zeroes "01""#,
        ),
        (
            "1.2.3-a_b",
            r#"Invalid character(s) found in prerelease "a_b""#,
        ),
        ("1.2.3+a..b", "Build meta data is empty"),
        (
            "1.2.3+a_b",
            r#"Invalid character(s) found in build meta data "a_b""#,
        ),
        (
            "18446744073709551616.0.0",
            r#"strconv.ParseUint: parsing "18446744073709551616": value out of range"#,
        ),
    ];
    for (input, message) in cases {
        assert_eq!(
            parse_version(input).unwrap_err().to_string(),
            message,
            "{input:?}"
        );
    }
}

#[test]
fn strict_parsing_differs_from_the_semver_crate_only_where_blang_is_stricter() {
    // Numeric prerelease identifiers must fit in a u64 for blang, not for the semver crate.
    let huge = "1.2.3-18446744073709551616";
    assert!(Version::parse(huge).is_ok());
    assert_eq!(
        parse_version(huge).unwrap_err(),
        VersionError::NumberOutOfRange("18446744073709551616".into())
    );
    // Same verdict on the usual suspects.
    let cases = [
        ("1.0.0+001", true),
        ("1.0.0-alpha-1.x-y+build-7", true),
        ("1.0.0-0", true),
        ("18446744073709551615.0.0", true),
        ("01.0.0", false),
        ("1.0.0-01", false),
        ("v1.0.0", false),
        ("1.0", false),
        ("1.0.0-", false),
        ("1.0.0+", false),
        ("1.0.0-a..b", false),
        (" 1.0.0", false),
        ("1.0.0 ", false),
        ("1.0.0-é", false),
    ];
    for (input, accepted) in cases {
        assert_eq!(parse_version(input).is_ok(), accepted, "blang on {input:?}");
        assert_eq!(
            Version::parse(input).is_ok(),
            accepted,
            "semver on {input:?}"
        );
        if accepted {
            assert_eq!(
                parse_version(input).unwrap(),
                Version::parse(input).unwrap()
            );
        }
    }
}

#[test]
fn ranges_print_as_written() {
    let range: Range = ">= 1.18.0 < 1.28.0".parse().unwrap();
    assert_eq!(range.to_string(), ">= 1.18.0 < 1.28.0");
    assert_eq!(range.as_str(), ">= 1.18.0 < 1.28.0");
}
