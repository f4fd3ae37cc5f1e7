//! The comparison core shared by both range dialects.
//!
//! Input: two `semver::Version`s. Output: their precedence, and whether a `{op, version}` pair
//! holds. No IO, no allocation.
//!
//! Precedence is the one both Go libraries implement: major, minor, patch, then prerelease, with
//! build metadata ignored. `semver::Version`'s own `Ord` breaks ties on build metadata, and its
//! prerelease order treats an all-digit identifier of any length as a number, while the Go
//! libraries only treat it as a number when it fits in a `u64`; hence this module.

use std::cmp::Ordering;

use semver::Version;

/// Precedence of `a` relative to `b`, ignoring build metadata.
pub(crate) fn precedence(a: &Version, b: &Version) -> Ordering {
    a.major
        .cmp(&b.major)
        .then(a.minor.cmp(&b.minor))
        .then(a.patch.cmp(&b.patch))
        .then_with(|| match (a.pre.is_empty(), b.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            // A version without a prerelease ranks above any prerelease of it.
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => prerelease_order(a.pre.as_str(), b.pre.as_str()),
        })
}

/// Order of two non-empty dot-separated prerelease strings, identifier by identifier; a list that
/// is a prefix of the other ranks lower.
pub(crate) fn prerelease_order(a: &str, b: &str) -> Ordering {
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => match identifier_order(x, y) {
                Ordering::Equal => {}
                unequal => return unequal,
            },
        }
    }
}

/// Numeric identifiers rank below alphanumeric ones; numbers compare by value, the rest bytewise.
fn identifier_order(a: &str, b: &str) -> Ordering {
    match (as_number(a), as_number(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.as_bytes().cmp(b.as_bytes()),
    }
}

/// An identifier counts as numeric when it is all ASCII digits and fits in a `u64`, like Go's
/// `strconv.ParseUint` decides it.
fn as_number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A plain comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    /// Whether `candidate <op> bound` holds, given `candidate`'s precedence relative to `bound`.
    pub(crate) fn holds(self, ordering: Ordering) -> bool {
        match self {
            Op::Eq => ordering == Ordering::Equal,
            Op::Ne => ordering != Ordering::Equal,
            Op::Gt => ordering == Ordering::Greater,
            Op::Ge => ordering != Ordering::Less,
            Op::Lt => ordering == Ordering::Less,
            Op::Le => ordering != Ordering::Greater,
        }
    }
}

/// `candidate <op> version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Comparator {
    pub(crate) op: Op,
    pub(crate) version: Version,
}

impl Comparator {
    pub(crate) fn matches(&self, candidate: &Version) -> bool {
        self.op.holds(precedence(candidate, &self.version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn build_metadata_does_not_affect_precedence() {
        assert_eq!(precedence(&v("1.0.0+a"), &v("1.0.0+b")), Ordering::Equal);
        assert_ne!(v("1.0.0+a").cmp(&v("1.0.0+b")), Ordering::Equal);
    }

    #[test]
    fn prerelease_identifiers_follow_semver_rules() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
        ];
        for pair in ordered.windows(2) {
            assert_eq!(
                precedence(&v(pair[0]), &v(pair[1])),
                Ordering::Less,
                "{pair:?}"
            );
            assert_eq!(
                precedence(&v(pair[1]), &v(pair[0])),
                Ordering::Greater,
                "{pair:?}"
            );
        }
    }

    #[test]
    fn digit_identifiers_beyond_u64_compare_as_text_like_go() {
        // Both overflow u64, so Go compares them as strings: "9…" > "1…".
        let big = v("1.0.0-99999999999999999999");
        let bigger = v("1.0.0-100000000000000000000");
        assert_eq!(precedence(&big, &bigger), Ordering::Greater);
        // A number that fits still ranks below one that does not (which counts as text).
        assert_eq!(precedence(&v("1.0.0-5"), &big), Ordering::Less);
    }
}
