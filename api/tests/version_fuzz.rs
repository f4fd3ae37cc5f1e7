//! Deterministic random inputs through every parser and matcher: nothing panics, and a few
//! properties hold on whatever parses.
#![allow(clippy::unwrap_used)]

use std::cmp::Ordering;

use olm_api::version::blang::{self, Range};
use olm_api::version::masterminds::{self, Constraints};
use olm_api::version::release::{Release, VersionRelease};
use semver::Version;

/// xorshift64*: reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// Mostly syntax-shaped text, sometimes arbitrary characters.
    fn text(&mut self) -> String {
        const PIECES: &[&str] = &[
            "0",
            "1",
            "2",
            "10",
            "01",
            "x",
            "X",
            "*",
            ".",
            ".",
            ".",
            "-",
            "+",
            " ",
            "  ",
            ",",
            "||",
            "|",
            "<",
            ">",
            "=",
            "!",
            "~",
            "^",
            "v",
            "alpha",
            "rc",
            "\t",
            "\n",
            "٣",
            "é",
            "\u{a0}",
            "18446744073709551616",
            " - ",
            "a_b",
            "\"",
            "\\",
        ];
        let mut s = String::new();
        for _ in 0..self.below(14) {
            if self.below(10) == 0 {
                s.push(char::from_u32(self.below(0x3000) as u32).unwrap_or('?'));
            } else {
                s.push_str(self.pick(PIECES));
            }
        }
        s
    }

    /// Operators, versions and separators in a plausible order, with occasional damage.
    fn shaped(&mut self) -> String {
        const OPS: &[&str] = &["", "", "=", "!=", ">", ">=", "<", "<=", "~", "^", "> ", "!"];
        const NUMS: &[&str] = &["0", "1", "2", "10", "x", "01", "18446744073709551615"];
        const PRE: &[&str] = &["alpha", "0", "1", "beta.2", "rc-1", "01", "a..b", ""];
        const SEPS: &[&str] = &[" ", ", ", " || ", " - ", "||", "  "];
        let mut s = String::new();
        for term in 0..1 + self.below(3) {
            if term > 0 {
                s.push_str(self.pick(SEPS));
            }
            s.push_str(self.pick(OPS));
            let components = if self.below(4) == 0 {
                1 + self.below(4)
            } else {
                3
            };
            for c in 0..components {
                if c > 0 {
                    s.push('.');
                }
                s.push_str(self.pick(NUMS));
            }
            if self.below(3) == 0 {
                s.push('-');
                s.push_str(self.pick(PRE));
            }
            if self.below(4) == 0 {
                s.push('+');
                s.push_str(self.pick(PRE));
            }
        }
        if self.below(8) == 0 {
            let damage = self.text();
            let at = (0..=s.len())
                .filter(|&i| s.is_char_boundary(i))
                .nth(self.below(s.len() + 1));
            s.insert_str(at.unwrap_or(0), &damage);
        }
        s
    }
}

fn probes() -> Vec<Version> {
    [
        "0.0.0",
        "0.1.0",
        "1.0.0",
        "1.2.3",
        "1.2.3-alpha",
        "2.0.0-0",
        "10.0.0+b",
    ]
    .iter()
    .map(|s| Version::parse(s).unwrap())
    .collect()
}

#[test]
fn random_inputs_never_panic_and_parsed_values_are_consistent() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let probes = probes();
    let mut parsed = [0usize; 4];
    let mut releases = Vec::new();
    for _ in 0..30_000 {
        let s = if rng.below(2) == 0 {
            rng.text()
        } else {
            rng.shaped()
        };

        if let Ok(constraints) = Constraints::parse(&s) {
            parsed[0] += 1;
            for probe in &probes {
                constraints.matches(probe);
            }
            assert_eq!(
                Constraints::parse(&constraints.to_string()).unwrap(),
                constraints
            );
        }
        if let Ok(range) = Range::parse(&s) {
            parsed[1] += 1;
            for probe in &probes {
                range.matches(probe);
            }
        }
        match masterminds::parse_version_lax(&s) {
            Ok(v) => {
                parsed[2] += 1;
                assert_eq!(
                    masterminds::parse_version_lax(&v.to_string()).unwrap(),
                    v,
                    "{s:?}"
                );
            }
            Err(e) => assert!(
                !matches!(e, masterminds::VersionError::Unrepresentable(_)),
                "{s:?}"
            ),
        }
        match blang::parse_version(&s) {
            Ok(v) => {
                parsed[3] += 1;
                // Whatever blang accepts, the semver crate reads the same way.
                assert_eq!(Version::parse(&s).unwrap(), v, "{s:?}");
            }
            Err(e) => assert!(
                !matches!(e, blang::VersionError::Unrepresentable(_)),
                "{s:?}"
            ),
        }
        let _ = Release::parse(&s);
        let _ = VersionRelease::from_installed("1.0.0", Some(&s));
        let _ = VersionRelease::from_bundle_version(&s, Some(&s), true);
        if let Ok(vr) = VersionRelease::from_bundle_version(&s, None, false) {
            // Printing folds the release back into build metadata; reading that gives it back.
            let again = VersionRelease::from_bundle_version(&vr.to_string(), None, false).unwrap();
            assert_eq!(again, vr);
            assert_eq!(again.release, vr.release);
            releases.push(vr);
        }
    }
    assert!(
        parsed.iter().all(|&n| n > 50),
        "too few inputs parsed: {parsed:?}"
    );

    // Ord is antisymmetric and transitive on what was parsed.
    releases.sort();
    for pair in releases.windows(2) {
        assert_ne!(pair[0].cmp(&pair[1]), Ordering::Greater);
        assert_eq!(pair[1].cmp(&pair[0]), pair[0].cmp(&pair[1]).reverse());
    }
}

#[test]
fn long_inputs_parse_without_blowing_up() {
    let long_constraint = ">=1.0.0 - 2.0.0 ".repeat(500);
    let _ = Constraints::parse(&long_constraint);
    let long_chain = "1.".repeat(5_000);
    assert!(Constraints::parse(&long_chain).is_err());
    let many_terms = ">=1.0.0 <2.0.0 || ".repeat(1_000) + "1.x";
    let range = Range::parse(&many_terms).unwrap();
    assert!(range.matches(&Version::new(1, 5, 0)));
}
