//! Masterminds constraints (`spec.source.catalog.version`): the conformance table in
//! `testdata/conformance`, the product documentation's tables, upstream's scenarios and error
//! texts.
#![allow(clippy::unwrap_used)]

mod common;

use olm_api::version::blang;
use olm_api::version::masterminds::{
    ConstraintError, Constraints, VersionError, parse_version_lax,
};
use semver::Version;

fn c(s: &str) -> Constraints {
    Constraints::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn v(s: &str) -> Version {
    parse_version_lax(s).unwrap()
}

#[test]
fn every_row_of_the_masterminds_conformance_table_holds() {
    common::check_table(
        "conformance/masterminds-constraints.tsv",
        256,
        |constraint, version| match Constraints::parse(constraint) {
            Err(e) => format!("error ({e})"),
            Ok(parsed) => match parse_version_lax(version) {
                Ok(version) => parsed.matches(&version).to_string(),
                Err(e) => format!("version error ({e})"),
            },
        },
    );
}

/// Release versions around the documented bounds, plus a few prereleases.
fn grid() -> Vec<Version> {
    let mut versions = Vec::new();
    for major in 0..4 {
        for minor in 0..15 {
            for patch in 0..6 {
                versions.push(Version::new(major, minor, patch));
            }
        }
    }
    for pre in ["1.11.0-rc.1", "1.12.0-0", "2.0.0-alpha", "0.0.3-beta"] {
        versions.push(v(pre));
    }
    versions
}

fn assert_equivalent(table: &[(&str, &str)]) {
    let versions = grid();
    for (written, meaning) in table {
        let (written_c, meaning_c) = (c(written), c(meaning));
        for version in &versions {
            assert_eq!(
                written_c.matches(version),
                meaning_c.matches(version),
                "{written:?} and {meaning:?} disagree on {version}"
            );
        }
    }
}

#[test]
fn wildcards_mean_what_the_documentation_table_says() {
    assert_equivalent(&[
        ("1.11.x", ">=1.11.0, <1.12.0"),
        (">=1.12.X", ">=1.12.0"),
        ("<=2.x", "<3"),
        ("*", ">=0.0.0"),
    ]);
}

#[test]
fn tilde_allows_patch_releases_as_the_documentation_table_says() {
    assert_equivalent(&[
        ("~1.11.0", ">=1.11.0, <1.12.0"),
        ("~1", ">=1, <2"),
        ("~1.12", ">=1.12, <1.13"),
        ("~1.12.x", ">=1.12.0, <1.13.0"),
        ("~1.x", ">=1, <2"),
    ]);
}

#[test]
fn caret_allows_compatible_releases_as_the_documentation_table_says() {
    assert_equivalent(&[
        ("^0", ">=0.0.0, <1.0.0"),
        ("^0.0", ">=0.0.0, <0.1.0"),
        ("^0.0.3", ">=0.0.3, <0.0.4"),
        ("^0.2", ">=0.2.0, <0.3.0"),
        ("^0.2.3", ">=0.2.3, <0.3.0"),
        ("^1.2.x", ">= 1.2.0, < 2.0.0"),
        ("^1.2.3", ">= 1.2.3, < 2.0.0"),
        ("^2.x", ">= 2.0.0, < 3"),
        ("^2.3", ">= 2.3, < 3"),
    ]);
}

#[test]
fn documented_examples_select_the_expected_versions() {
    let range = c(">=1.11, <1.13");
    assert!(range.matches(&v("1.11.0")) && range.matches(&v("1.12.9")));
    assert!(!range.matches(&v("1.13.0")) && !range.matches(&v("1.10.9")));
    assert!(c("1.11.1").matches(&v("1.11.1")) && !c("1.11.1").matches(&v("1.11.2")));
    assert!(c(">1.11.1").matches(&v("1.11.2")) && !c(">1.11.1").matches(&v("1.11.1")));
    assert!(c("1.14.x").matches(&v("1.14.7")) && !c("1.14.x").matches(&v("1.15.0")));
    assert!(c(">=1.16").matches(&v("2.0.0")) && !c(">=1.16").matches(&v("1.15.9")));
    for op in ["=", "!=", ">", "<", ">=", "<="] {
        c(&format!("{op}1.2.3"));
    }
}

#[test]
fn partial_versions_and_v_prefix_are_accepted() {
    assert!(c("v1.2.3").matches(&v("1.2.3")));
    assert!(c("1.2").matches(&v("1.2.9")) && !c("1.2").matches(&v("1.3.0")));
    assert!(c("=> 1.2, =< 1.4").matches(&v("1.4.9")));
    assert!(c("~> 1.2").matches(&v("1.2.4")));
    assert!(c("1.2 - 1.4.5").matches(&v("1.4.5")) && !c("1.2 - 1.4.5").matches(&v("1.4.6")));
}

#[test]
fn prereleases_only_match_groups_that_mention_a_prerelease() {
    let beta = v("1.5.0-beta");
    assert!(!c(">=1.0.0 <2.0.0").matches(&beta));
    assert!(c(">=1.0.0-0 <2.0.0").matches(&beta));
    // The prerelease may be on any comparator of the group and of any version.
    assert!(c("<2.0.0 >=0.1.0-0").matches(&beta));
    // Not on a comparator of another OR group.
    assert!(!c(">=1.0.0 || <0.1.0-0").matches(&beta));
    // `!=` obeys the same rule.
    assert!(!c("!=1.0.0").matches(&beta));
    assert!(c("!=1.0.0").matches(&v("1.5.0")));
}

#[test]
fn build_metadata_is_ignored_on_both_sides() {
    // Upstream TestNewVersionRange; the versions are bundle versions, parsed strictly.
    let bundle = |s: &str| blang::parse_version(s).unwrap();
    for version in ["1.0.0", "1.0.0+2", "1.0.0+1"] {
        assert!(
            c("1.0.0+1").matches(&bundle(version)),
            "1.0.0+1 on {version}"
        );
    }
    assert!(c("1.0.0").matches(&bundle("1.0.0")));
    assert!(c("1.0.0").matches(&bundle("1.0.0+1")));
    assert!(!c(">=2.0.0").matches(&bundle("1.0.0")));
    assert!(Constraints::parse("not-a-valid-version").is_err());
}

#[test]
fn an_invalid_range_reports_masterminds_words() {
    let err = Constraints::parse("foobar").unwrap_err();
    assert_eq!(err, ConstraintError::Improper("foobar".into()));
    // How the resolver surfaces it.
    assert_eq!(
        format!("desired version range {:?} is invalid: {err}", "foobar"),
        r#"desired version range "foobar" is invalid: improper constraint: "foobar""#
    );
    let cases = [
        ("", r#"improper constraint: """#),
        (">= bar", r#"improper constraint: ">= bar""#),
        ("12.3.4.1234", r#"improper constraint: "12.3.4.1234""#),
        (">=1.0 || 2.0 ||", r#"improper constraint: """#),
        ("==1.0", r#"improper constraint: "==1.0""#),
        ("1.0 || <\"2", r#"improper constraint: " <\"2""#),
        // The hyphen range is rewritten before the group is checked.
        (">=1.1 - 2", r#"improper constraint: ">=>= 1.1, <= 2 ""#),
        ("v1.2.3-beta.01", "constraint parser error"),
        ("99999999999999999999", "constraint parser error"),
        ("1x", "constraint parser error"),
    ];
    for (input, message) in cases {
        assert_eq!(
            Constraints::parse(input).unwrap_err().to_string(),
            message,
            "{input:?}"
        );
    }
}

#[test]
fn constraints_print_and_round_trip_as_written() {
    for text in [">=1.11, <1.13", " 1.2 - 1.4.5 ", "^1 || ~0.2"] {
        let parsed: Constraints = text.parse().unwrap();
        assert_eq!(parsed.to_string(), text);
        assert_eq!(parsed.as_str(), text);
        assert_eq!(Constraints::parse(&parsed.to_string()).unwrap(), parsed);
    }
}

#[test]
fn lax_versions_fill_missing_components_and_accept_leading_zeroes() {
    let cases = [
        ("1", "1.0.0"),
        ("1.2", "1.2.0"),
        ("v1.2.3", "1.2.3"),
        ("01.02.03", "1.2.3"),
        ("1.2-rc.1+b.01", "1.2.0-rc.1+b.01"),
    ];
    for (input, expected) in cases {
        assert_eq!(v(input).to_string(), expected, "{input:?}");
    }
    let errors = [
        ("", VersionError::Invalid),
        ("V1.2.3", VersionError::Invalid),
        ("1.2.3.4", VersionError::Invalid),
        ("1.2.3-", VersionError::Invalid),
        ("1.2.3-beta.01", VersionError::SegmentStartsWithZero),
        (
            "18446744073709551616",
            VersionError::SegmentOutOfRange("18446744073709551616".into()),
        ),
    ];
    for (input, expected) in errors {
        assert_eq!(parse_version_lax(input).unwrap_err(), expected, "{input:?}");
    }
    assert_eq!(
        parse_version_lax("1.18446744073709551616")
            .unwrap_err()
            .to_string(),
        r#"error parsing version segment: strconv.ParseUint: parsing "18446744073709551616": value out of range"#
    );
}
