//! Masterminds/semver v3 constraints: the syntax of a ClusterExtension's
//! `spec.source.catalog.version`.
//!
//! Input: a constraint string, versions to test. Output: [`Constraints`], match verdicts, and
//! errors whose text is Masterminds' (upstream prints them after
//! `desired version range "<range>" is invalid: `). No IO.
//!
//! Syntax: `||` separates OR groups; inside a group, constraints are separated by spaces or commas
//! and ANDed. A constraint is an operator and a version that may be partial (`1`, `1.2`), carry a
//! `v` prefix, use `x`, `X` or `*` as wildcards, and carry a prerelease and build metadata (build
//! is ignored). `A - B` (spaces required) is rewritten to `>= A, <= B` first.
//!
//! | operator      | with a full version `1.2.3`    | with a partial/wildcard version        |
//! |---------------|--------------------------------|----------------------------------------|
//! | none, `=`     | equal                          | like `~`: `1.2` = `>=1.2.0 <1.3.0`     |
//! | `!=`          | not equal                      | outside the wildcard span: `!=1.x`     |
//! | `>`           | greater                        | above the span: `>1.1` needs `>=1.2.0` |
//! | `>=`, `=>`    | greater or equal               | `>=` the zero-filled version           |
//! | `<`           | less                           | `<` the zero-filled version            |
//! | `<=`, `=<`    | less or equal                  | within or below the span: `<=1.x` < 2  |
//! | `~`, `~>`     | `>=1.2.3 <1.3.0`               | `~1` = `>=1.0.0 <2.0.0`, `~0.0.0` = any |
//! | `^`           | `>=1.2.3 <2.0.0`, `^0.2.3` <0.3.0 | `^0` <1.0.0, `^0.0` <0.1.0          |
//! |               | `^0.0.3` = `0.0.3`             |                                        |
//!
//! Masterminds' quirks are kept: `^*` matches only `0.0.0`, `!=*` excludes only `0.0.0`, `<=*`
//! matches only `0.y.z`, and whatever follows a wildcard major is ignored (`x.2.3` = `*`).
//!
//! Prerelease rule: a version with a prerelease can only satisfy an AND group in which at least
//! one constraint's version has a prerelease (any major.minor.patch); otherwise the group fails.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use semver::{BuildMetadata, Prerelease, Version};

use super::comparator::{Op, precedence, prerelease_order};
use super::go_text::go_quote;

/// Why Masterminds' `NewConstraint` rejects a constraint string; the messages are Masterminds'.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintError {
    /// An OR group (after hyphen ranges were rewritten) is not a list of constraints.
    #[error("improper constraint: {}", go_quote(.0))]
    Improper(String),
    /// A constraint's version is well-formed but unusable (a number too large for `u64`, a
    /// numeric prerelease identifier with a leading zero, a wildcard mixed with digits, ...).
    #[error("constraint parser error")]
    Parser,
}

/// Why Masterminds' `NewVersion` rejects a version; the messages are Masterminds'.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("invalid semantic version")]
    Invalid,
    #[error(
        "error parsing version segment: strconv.ParseUint: parsing {}: value out of range",
        go_quote(.0)
    )]
    SegmentOutOfRange(String),
    #[error("version segment starts with 0")]
    SegmentStartsWithZero,
    /// Masterminds accepted it but `semver::Version` cannot hold it (no known input does this).
    #[error("version {} cannot be represented", go_quote(.0))]
    Unrepresentable(String),
}

/// Masterminds' `NewVersion` (with its default coercion): `1`, `1.2`, `v1.2.3`, leading zeroes in
/// numbers are accepted; missing components are zero.
pub fn parse_version_lax(s: &str) -> Result<Version, VersionError> {
    let bytes = s.as_bytes();
    let start = usize::from(bytes.first() == Some(&b'v'));
    let major_end = run_end(bytes, start, |b| b.is_ascii_digit());
    if major_end == start {
        return Err(VersionError::Invalid);
    }
    let major = &s[start..major_end];
    let (minor, at) = dotted_run(s, major_end, |b| b.is_ascii_digit());
    let (patch, at) = match minor {
        Some(_) => dotted_run(s, at, |b| b.is_ascii_digit()),
        None => (None, at),
    };
    let (pre, at) = identifiers_after(s, at, b'-');
    let (build, at) = identifiers_after(s, at, b'+');
    if at != s.len() {
        return Err(VersionError::Invalid);
    }
    let number = |digits: &str| {
        digits
            .parse::<u64>()
            .map_err(|_| VersionError::SegmentOutOfRange(digits.to_owned()))
    };
    let major = number(major)?;
    let minor = minor.map_or(Ok(0), number)?;
    let patch = patch.map_or(Ok(0), number)?;
    let pre = pre.unwrap_or("");
    let leading_zero =
        |id: &str| id.len() > 1 && id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit());
    if pre.split('.').any(leading_zero) {
        return Err(VersionError::SegmentStartsWithZero);
    }
    let unrepresentable = |_| VersionError::Unrepresentable(s.to_owned());
    Ok(Version {
        major,
        minor,
        patch,
        pre: Prerelease::new(pre).map_err(unrepresentable)?,
        build: BuildMetadata::new(build.unwrap_or("")).map_err(unrepresentable)?,
    })
}

/// A parsed Masterminds constraint string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraints {
    text: String,
    groups: Vec<Group>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Group {
    admits_prereleases: bool,
    constraints: Vec<Constraint>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Constraint {
    kind: Kind,
    /// The version with wildcards and missing components zero-filled, build metadata dropped.
    version: Version,
    wildcard: Wildcard,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    EqualOrTilde,
    NotEqual,
    Greater,
    GreaterEqual,
    Less,
    LessEqual,
    Tilde,
    Caret,
}

/// The first component that was a wildcard or missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wildcard {
    None,
    Major,
    Minor,
    Patch,
}

impl Constraints {
    /// Masterminds' `NewConstraint`, with the same verdict and error text.
    pub fn parse(s: &str) -> Result<Constraints, ConstraintError> {
        let rewritten = rewrite_hyphen_ranges(s);
        let mut groups = Vec::new();
        for segment in rewritten.split("||") {
            let units =
                scan_group(segment).ok_or_else(|| ConstraintError::Improper(segment.to_owned()))?;
            let constraints = units
                .into_iter()
                .map(|(kind, version)| Constraint::new(kind, &version))
                .collect::<Result<Vec<_>, _>>()?;
            let admits_prereleases = constraints.iter().any(|c| !c.version.pre.is_empty());
            groups.push(Group {
                admits_prereleases,
                constraints,
            });
        }
        Ok(Constraints {
            text: s.to_owned(),
            groups,
        })
    }

    /// Masterminds' `Check`: whether `version` satisfies some OR group.
    pub fn matches(&self, version: &Version) -> bool {
        let is_prerelease = !version.pre.is_empty();
        self.groups.iter().any(|group| {
            (group.admits_prereleases || !is_prerelease)
                && group.constraints.iter().all(|c| c.matches(version))
        })
    }

    /// The text the constraints were parsed from.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::str::FromStr for Constraints {
    type Err = ConstraintError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Constraints::parse(s)
    }
}

impl fmt::Display for Constraints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Kind {
    fn from_operator(operator: &str) -> Option<Kind> {
        Some(match operator {
            "" | "=" => Kind::EqualOrTilde,
            "!=" => Kind::NotEqual,
            ">" => Kind::Greater,
            ">=" | "=>" => Kind::GreaterEqual,
            "<" => Kind::Less,
            "<=" | "=<" => Kind::LessEqual,
            "~" | "~>" => Kind::Tilde,
            "^" => Kind::Caret,
            _ => return None,
        })
    }
}

impl Constraint {
    fn new(kind: Kind, version: &VersionText<'_>) -> Result<Constraint, ConstraintError> {
        let pre = version.pre.map(|p| format!("-{p}")).unwrap_or_default();
        let is_wild = |part: Option<&str>| part.is_none_or(is_wildcard);
        let (text, wildcard) = if is_wildcard(version.major) {
            (Cow::Owned(format!("0.0.0{pre}")), Wildcard::Major)
        } else if is_wild(version.minor) {
            (
                Cow::Owned(format!("{}.0.0{pre}", version.major)),
                Wildcard::Minor,
            )
        } else if is_wild(version.patch) {
            let minor = version.minor.unwrap_or_default();
            (
                Cow::Owned(format!("{}.{minor}.0{pre}", version.major)),
                Wildcard::Patch,
            )
        } else {
            (Cow::Borrowed(version.text), Wildcard::None)
        };
        let mut version = parse_version_lax(&text).map_err(|_| ConstraintError::Parser)?;
        version.build = BuildMetadata::EMPTY;
        Ok(Constraint {
            kind,
            version,
            wildcard,
        })
    }

    /// One constraint, once the group's prerelease rule has let `v` through. Each arm follows
    /// Masterminds' per-operator rules, including their treatment of wildcards.
    fn matches(&self, v: &Version) -> bool {
        let c = &self.version;
        let order = precedence(v, c);
        match (self.kind, self.wildcard) {
            (Kind::EqualOrTilde, Wildcard::None) => Op::Eq.holds(order),
            (Kind::EqualOrTilde, _) | (Kind::Tilde, _) => self.tilde(v, order),
            (Kind::NotEqual, _) => self.not_equal(v, order),
            (Kind::Greater, Wildcard::None) => Op::Gt.holds(order),
            (Kind::Greater, wildcard) => match v.major.cmp(&c.major) {
                Ordering::Equal => match wildcard {
                    Wildcard::Minor => false,
                    Wildcard::Patch => v.minor > c.minor,
                    _ => Op::Gt.holds(order),
                },
                unequal => unequal == Ordering::Greater,
            },
            (Kind::GreaterEqual, _) => Op::Ge.holds(order),
            (Kind::Less, _) => Op::Lt.holds(order),
            (Kind::LessEqual, Wildcard::None) => Op::Le.holds(order),
            (Kind::LessEqual, wildcard) => {
                v.major < c.major
                    || (v.major == c.major && (v.minor <= c.minor || wildcard == Wildcard::Minor))
            }
            (Kind::Caret, _) => self.caret(v, order),
        }
    }

    fn not_equal(&self, v: &Version, order: Ordering) -> bool {
        let c = &self.version;
        if self.wildcard != Wildcard::None {
            if v.major != c.major {
                return true;
            }
            if self.wildcard == Wildcard::Minor {
                return false;
            }
            if v.minor != c.minor {
                return true;
            }
            if self.wildcard == Wildcard::Patch {
                return match (v.pre.is_empty(), c.pre.is_empty()) {
                    (true, true) => false,
                    (false, false) => prerelease_order(v.pre.as_str(), c.pre.as_str()).is_ne(),
                    _ => true,
                };
            }
            if v.patch != c.patch {
                return true;
            }
        }
        Op::Ne.holds(order)
    }

    fn tilde(&self, v: &Version, order: Ordering) -> bool {
        let c = &self.version;
        if order == Ordering::Less {
            return false;
        }
        let spans_minor = self.wildcard == Wildcard::Minor;
        let is_zero = c.major == 0 && c.minor == 0 && c.patch == 0;
        if is_zero && !spans_minor && self.wildcard != Wildcard::Patch {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || spans_minor)
    }

    fn caret(&self, v: &Version, order: Ordering) -> bool {
        let c = &self.version;
        if order == Ordering::Less {
            return false;
        }
        if c.major > 0 || self.wildcard == Wildcard::Minor {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.wildcard == Wildcard::Patch {
            return v.minor == c.minor;
        }
        v.minor == 0 && v.patch == c.patch
    }
}

fn is_wildcard(part: &str) -> bool {
    matches!(part, "x" | "X" | "*")
}

/// The pieces of a constraint's version as written, before zero-filling.
struct VersionText<'a> {
    text: &'a str,
    major: &'a str,
    minor: Option<&'a str>,
    patch: Option<&'a str>,
    pre: Option<&'a str>,
}

/// Whitespace as Go's regexp `\s` sees it.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// Characters Masterminds' constraint pattern accepts in a version number; `|` is among them, so a
/// lone `|` is read as (an invalid) number rather than rejected outright.
fn is_number_char(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'x' | b'X' | b'*' | b'|')
}

fn is_identifier_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn is_operator_char(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'<' | b'>' | b'~' | b'^')
}

fn run_end(bytes: &[u8], from: usize, accept: impl Fn(u8) -> bool) -> usize {
    from + bytes
        .get(from..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| accept(b))
        .count()
}

/// `.RUN` at `at`, if present: the run without its dot, and where it ends.
fn dotted_run(s: &str, at: usize, accept: impl Fn(u8) -> bool) -> (Option<&str>, usize) {
    let bytes = s.as_bytes();
    if bytes.get(at) == Some(&b'.') && bytes.get(at + 1).is_some_and(|&b| accept(b)) {
        let end = run_end(bytes, at + 1, accept);
        (Some(&s[at + 1..end]), end)
    } else {
        (None, at)
    }
}

/// `<marker>ID(.ID)*` at `at`, if present: the identifiers without the marker, and where they end.
fn identifiers_after(s: &str, at: usize, marker: u8) -> (Option<&str>, usize) {
    let bytes = s.as_bytes();
    if bytes.get(at) != Some(&marker) || !bytes.get(at + 1).is_some_and(|&b| is_identifier_char(b))
    {
        return (None, at);
    }
    let mut end = run_end(bytes, at + 1, is_identifier_char);
    while let (Some(_), next) = dotted_run(s, end, is_identifier_char) {
        end = next;
    }
    (Some(&s[at + 1..end]), end)
}

/// The longest constraint version at `at` (`v?N(.N)?(.N)?(-PRE)?(+BUILD)?`), and where it ends.
fn scan_version(s: &str, at: usize) -> Option<(VersionText<'_>, usize)> {
    let bytes = s.as_bytes();
    let start = at;
    let at = if bytes.get(at) == Some(&b'v') {
        at + 1
    } else {
        at
    };
    let major_end = run_end(bytes, at, is_number_char);
    if major_end == at {
        return None;
    }
    let (minor, end) = dotted_run(s, major_end, is_number_char);
    let (patch, end) = match minor {
        Some(_) => dotted_run(s, end, is_number_char),
        None => (None, end),
    };
    let (pre, end) = identifiers_after(s, end, b'-');
    let (_build, end) = identifiers_after(s, end, b'+');
    let text = VersionText {
        text: &s[start..end],
        major: &s[at..major_end],
        minor,
        patch,
        pre,
    };
    Some((text, end))
}

/// One OR group: constraints separated by whitespace or a comma, each an operator, optional
/// whitespace and a version. `None` when the group does not have that shape.
fn scan_group(group: &str) -> Option<Vec<(Kind, VersionText<'_>)>> {
    let bytes = group.as_bytes();
    let mut at = run_end(bytes, 0, is_space);
    let mut units = Vec::new();
    loop {
        let operator_end = run_end(bytes, at, is_operator_char);
        let kind = Kind::from_operator(&group[at..operator_end])?;
        let (version, version_end) = scan_version(group, run_end(bytes, operator_end, is_space))?;
        units.push((kind, version));
        let after = run_end(bytes, version_end, is_space);
        match bytes.get(after) {
            None => return Some(units),
            Some(b',') => at = run_end(bytes, after + 1, is_space),
            Some(_) if after > version_end => at = after,
            Some(_) => return None,
        }
    }
}

/// Rewrites each `A - B` (whitespace on both sides of the dash) into `>= A, <= B `, finding the
/// ranges in the original text and replacing first occurrences in turn, as Masterminds does.
fn rewrite_hyphen_ranges(s: &str) -> Cow<'_, str> {
    let bytes = s.as_bytes();
    // Cheap exit (and no quadratic scan) when no dash follows whitespace.
    if !bytes.windows(2).any(|w| is_space(w[0]) && w[1] == b'-') {
        return Cow::Borrowed(s);
    }
    let mut ranges = Vec::new();
    let mut from = 0;
    // Leftmost match first, then search on from its end, like Go's `FindAllStringSubmatch`.
    while let Some((start, (end, low, high))) =
        (from..bytes.len()).find_map(|start| Some((start, hyphen_range_at(s, start)?)))
    {
        ranges.push((&s[start..end], low, high));
        from = end;
    }
    if ranges.is_empty() {
        return Cow::Borrowed(s);
    }
    let mut out = s.to_owned();
    for (whole, low, high) in ranges {
        out = out.replacen(whole, &format!(">= {low}, <= {high} "), 1);
    }
    Cow::Owned(out)
}

fn hyphen_range_at(s: &str, start: usize) -> Option<(usize, &str, &str)> {
    let bytes = s.as_bytes();
    let (low, low_end) = scan_version(s, run_end(bytes, start, is_space))?;
    let dash = run_end(bytes, low_end, is_space);
    if dash == low_end || bytes.get(dash) != Some(&b'-') {
        return None;
    }
    let high_start = run_end(bytes, dash + 1, is_space);
    if high_start == dash + 1 {
        return None;
    }
    let (high, high_end) = scan_version(s, high_start)?;
    Some((run_end(bytes, high_end, is_space), low.text, high.text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyphen_ranges_are_rewritten_like_masterminds() {
        assert_eq!(rewrite_hyphen_ranges("1.2 - 1.4.5"), ">= 1.2, <= 1.4.5 ");
        assert_eq!(rewrite_hyphen_ranges("1.1-3"), "1.1-3");
        assert_eq!(
            rewrite_hyphen_ranges("1 - 2 || 3 - 4"),
            ">= 1, <= 2 ||>= 3, <= 4 "
        );
        assert_eq!(rewrite_hyphen_ranges("1.2.3.4 - 5"), "1.>= 2.3.4, <= 5 ");
    }

    #[test]
    fn groups_split_into_operator_and_version() {
        let units = scan_group(" >= 1.2 , <3 !=2.0.0-rc.1+b").unwrap();
        let ops: Vec<_> = units.iter().map(|(kind, v)| (*kind, v.text)).collect();
        let expected = [
            (Kind::GreaterEqual, "1.2"),
            (Kind::Less, "3"),
            (Kind::NotEqual, "2.0.0-rc.1+b"),
        ];
        assert_eq!(ops, expected);
        assert!(scan_group("1.2>3").is_none());
        assert!(scan_group("==1").is_none());
        assert!(scan_group("").is_none());
    }
}
