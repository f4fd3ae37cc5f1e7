//! blang/semver v4: strict version parsing (bundle versions) and ranges (`skipRange`).
//!
//! Input: version and range strings from catalogs and installed-bundle records. Output:
//! `semver::Version`s, [`Range`]s, match verdicts, and errors whose text is blang's. No IO.
//!
//! Range syntax: terms separated by spaces are ANDed, `||` between terms ORs the groups (AND binds
//! tighter). A term is an operator (`<`, `<=`, `>`, `>=`, `=`, `==`, `!`, `!=`, or none for `=`)
//! followed by a full `MAJOR.MINOR.PATCH` version; `.x` wildcards are expanded into bounds
//! (`1.2.x` = `>=1.2.0 <1.3.0`, `>1.x` = `>=2.0.0`). There is no `~`, `^`, `*` or hyphen range and
//! no `v` prefix (`>=v1.9.0` is rejected; upstream then ignores the skipRange). Prereleases compare
//! plainly. blang's text handling is reproduced as it is, quirks included, because the verdict on
//! real catalogs must not change:
//!
//! | input                  | blang's reading                                                 |
//! |------------------------|-----------------------------------------------------------------|
//! | `> 1.0.0`, `>=  1.0.0` | spaces after `<`, `>`, `=` do not split terms                   |
//! | `1 >2.0.0`             | a one-character term is dropped                                 |
//! | `!=1.2.x`              | `<1.2.0 >=1.3.0` ANDed: matches nothing                         |
//! | `1.x.x`                | `>=1.0.0 <1.1.0` (treated as a patch wildcard)                  |
//! | `~1.2.x`               | an unknown operator before a wildcard is dropped: `=1.2.0`      |
//! | `>1 \|\| \|\| <0.5.0`  | accepted; the empty group never matches (blang panics on it)    |

use std::fmt;

use semver::{BuildMetadata, Prerelease, Version};

use super::comparator::{Comparator, Op};
use super::go_text::{go_quote, is_go_digit};

/// The numeric component of a version an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Major,
    Minor,
    Patch,
}

impl Component {
    fn lowercase(self) -> &'static str {
        match self {
            Component::Major => "major",
            Component::Minor => "minor",
            Component::Patch => "patch",
        }
    }

    fn capitalized(self) -> &'static str {
        match self {
            Component::Major => "Major",
            Component::Minor => "Minor",
            Component::Patch => "Patch",
        }
    }
}

/// Why blang's `Parse` rejects a version; the messages are blang's, word for word.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("Version string empty")]
    Empty,
    #[error("No Major.Minor.Patch elements found")]
    MissingComponents,
    #[error(
        "Invalid character(s) found in {} number {}",
        .component.lowercase(),
        go_quote(.value)
    )]
    InvalidNumberCharacters { component: Component, value: String },
    #[error(
        "{} number must not contain leading zeroes {}",
        .component.capitalized(),
        go_quote(.value)
    )]
    NumberLeadingZero { component: Component, value: String },
    #[error("strconv.ParseUint: parsing {}: invalid syntax", go_quote(.0))]
    NumberSyntax(String),
    #[error("strconv.ParseUint: parsing {}: value out of range", go_quote(.0))]
    NumberOutOfRange(String),
    #[error("Prerelease is empty")]
    EmptyPrerelease,
    #[error("Numeric PreRelease version must not contain leading zeroes {}", go_quote(.0))]
    PrereleaseLeadingZero(String),
    #[error("Invalid character(s) found in prerelease {}", go_quote(.0))]
    InvalidPrereleaseCharacters(String),
    #[error("Build meta data is empty")]
    EmptyBuild,
    #[error("Invalid character(s) found in build meta data {}", go_quote(.0))]
    InvalidBuildCharacters(String),
    /// blang accepted it but `semver::Version` cannot hold it (no known input does this).
    #[error("version {} cannot be represented", go_quote(.0))]
    Unrepresentable(String),
}

/// blang's `Parse`: strict `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`, no `v` prefix, no leading
/// zeroes in numbers, numbers (including numeric prerelease identifiers) must fit in a `u64`,
/// build identifiers may have leading zeroes.
pub fn parse_version(s: &str) -> Result<Version, VersionError> {
    if s.is_empty() {
        return Err(VersionError::Empty);
    }
    let mut parts = s.splitn(3, '.');
    let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(VersionError::MissingComponents);
    };
    let major = parse_number(major, Component::Major)?;
    let minor = parse_number(minor, Component::Minor)?;
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    let patch = parse_number(patch, Component::Patch)?;
    for identifier in pre.iter().flat_map(|pre| pre.split('.')) {
        prerelease_identifier(identifier)?;
    }
    for identifier in build.iter().flat_map(|build| build.split('.')) {
        if identifier.is_empty() {
            return Err(VersionError::EmptyBuild);
        }
        if !is_identifier(identifier) {
            return Err(VersionError::InvalidBuildCharacters(identifier.to_owned()));
        }
    }
    let unrepresentable = |_| VersionError::Unrepresentable(s.to_owned());
    Ok(Version {
        major,
        minor,
        patch,
        pre: Prerelease::new(pre.unwrap_or("")).map_err(unrepresentable)?,
        build: BuildMetadata::new(build.unwrap_or("")).map_err(unrepresentable)?,
    })
}

fn parse_number(s: &str, component: Component) -> Result<u64, VersionError> {
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(VersionError::InvalidNumberCharacters {
            component,
            value: s.to_owned(),
        });
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(VersionError::NumberLeadingZero {
            component,
            value: s.to_owned(),
        });
    }
    parse_u64(s)
}

/// Go's `strconv.ParseUint(s, 10, 64)` on a string of ASCII digits.
fn parse_u64(digits: &str) -> Result<u64, VersionError> {
    if digits.is_empty() {
        return Err(VersionError::NumberSyntax(String::new()));
    }
    digits
        .parse()
        .map_err(|_| VersionError::NumberOutOfRange(digits.to_owned()))
}

/// blang's `NewPRVersion`: `Some(n)` for a numeric identifier, `None` for an alphanumeric one.
pub(crate) fn prerelease_identifier(s: &str) -> Result<Option<u64>, VersionError> {
    if s.is_empty() {
        return Err(VersionError::EmptyPrerelease);
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        if s.len() > 1 && s.starts_with('0') {
            return Err(VersionError::PrereleaseLeadingZero(s.to_owned()));
        }
        return parse_u64(s).map(Some);
    }
    if is_identifier(s) {
        Ok(None)
    } else {
        Err(VersionError::InvalidPrereleaseCharacters(s.to_owned()))
    }
}

fn is_identifier(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Why blang's `ParseRange` rejects a range; the messages are blang's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("First element in range is '||'")]
    LeadingOr,
    #[error("Last element in range is '||'")]
    TrailingOr,
    #[error("Could not get version from string: {}", go_quote(.0))]
    NoVersion(String),
    #[error(
        "Could not parse Range {}: Could not parse comparator {} in {}",
        go_quote(.term), go_quote(.operator), go_quote(&format!("{}{}", .operator, .version))
    )]
    UnknownOperator {
        term: String,
        operator: String,
        version: String,
    },
    #[error(
        "Could not parse Range {}: Could not parse version {} in {}: {source}",
        go_quote(.term), go_quote(.version), go_quote(&format!("{}{}", .operator, .version))
    )]
    InvalidVersion {
        term: String,
        operator: String,
        version: String,
        source: VersionError,
    },
}

/// A parsed blang range: OR of AND groups of comparators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    text: String,
    groups: Vec<Vec<Comparator>>,
}

impl Range {
    /// blang's `ParseRange`, with the same accept/reject verdict and error text.
    pub fn parse(s: &str) -> Result<Range, RangeError> {
        let groups = split_or_groups(split_terms(s))?;
        let groups = groups
            .into_iter()
            .map(expand_wildcards)
            .collect::<Result<Vec<_>, _>>()?;
        let groups = groups
            .iter()
            .map(|group| group.iter().map(|term| comparator(term)).collect())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Range {
            text: s.to_owned(),
            groups,
        })
    }

    /// Whether `version` is in the range (build metadata ignored).
    pub fn matches(&self, version: &Version) -> bool {
        self.groups
            .iter()
            .any(|group| !group.is_empty() && group.iter().all(|c| c.matches(version)))
    }

    /// The text the range was parsed from.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::str::FromStr for Range {
    type Err = RangeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Range::parse(s)
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Splits on spaces, except right after `<`, `>` or `=`; drops terms of one character; then
/// removes every space left inside a term.
fn split_terms(s: &str) -> Vec<String> {
    let bytes = s.as_bytes();
    let mut terms = Vec::new();
    let mut last = 0;
    let mut last_char = 0u8;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if last + 1 < i {
                terms.push(&s[last..i]);
            }
            last = i + 1;
        } else if b != b' ' {
            last_char = b;
        }
    }
    if last + 1 < bytes.len() {
        terms.push(&s[last..]);
    }
    terms.into_iter().map(|t| t.replace(' ', "")).collect()
}

fn split_or_groups(terms: Vec<String>) -> Result<Vec<Vec<String>>, RangeError> {
    let mut groups = Vec::new();
    let mut current = Vec::new();
    for (i, term) in terms.into_iter().enumerate() {
        if term == "||" {
            if i == 0 {
                return Err(RangeError::LeadingOr);
            }
            groups.push(std::mem::take(&mut current));
        } else {
            current.push(term);
        }
    }
    if current.is_empty() {
        return Err(RangeError::TrailingOr);
    }
    groups.push(current);
    Ok(groups)
}

/// Rewrites every term containing `x` the way blang does, string operations included.
fn expand_wildcards(group: Vec<String>) -> Result<Vec<String>, RangeError> {
    let mut expanded = Vec::with_capacity(group.len());
    for term in group {
        if !term.contains('x') {
            expanded.push(term);
            continue;
        }
        let (operator, version) = split_operator(&term)?;
        // Which component to bump when the wildcard becomes an exclusive bound: the major for
        // `1.x`, the minor for `1.2.x` (and, as in blang, for `1.x.x`).
        let parts: Vec<&str> = version.split('.').collect();
        let bump = match (parts.len(), parts.last()) {
            (2, Some(&"x")) => Some(0),
            (3, Some(&"x")) => Some(1),
            _ => None,
        };
        let mut flat = version.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
        if flat.split('.').count() == 2 {
            flat.push_str(".0");
        }
        let (new_operator, bumped) = match operator {
            ">" => (">=", true),
            ">=" => (">=", false),
            "<" => ("<", false),
            "<=" => ("<", true),
            "" | "=" | "==" => {
                expanded.push(format!(">={flat}"));
                ("<", true)
            }
            "!=" | "!" => {
                expanded.push(format!("<{flat}"));
                (">=", true)
            }
            _ => ("", false),
        };
        let new_version = if bumped {
            bump.and_then(|index| increment(&flat, index))
                .unwrap_or_default()
        } else {
            flat
        };
        expanded.push(format!("{new_operator}{new_version}"));
    }
    Ok(expanded)
}

/// Adds one to the dot-separated part `index`, read like Go's `strconv.Atoi` (sign allowed).
fn increment(version: &str, index: usize) -> Option<String> {
    let mut parts: Vec<String> = version.split('.').map(str::to_owned).collect();
    let part = parts.get_mut(index)?;
    let number: i64 = part.parse().ok()?;
    *part = number.wrapping_add(1).to_string();
    Some(parts.join("."))
}

/// The operator is whatever precedes the first digit, trimmed.
fn split_operator(term: &str) -> Result<(&str, &str), RangeError> {
    let index = term
        .char_indices()
        .find(|&(_, c)| is_go_digit(c))
        .map(|(i, _)| i)
        .ok_or_else(|| RangeError::NoVersion(term.to_owned()))?;
    Ok((term[..index].trim(), &term[index..]))
}

fn comparator(term: &str) -> Result<Comparator, RangeError> {
    let (operator, version) = split_operator(term)?;
    let op = match operator {
        "" | "=" | "==" => Op::Eq,
        "!" | "!=" => Op::Ne,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        _ => {
            return Err(RangeError::UnknownOperator {
                term: term.to_owned(),
                operator: operator.to_owned(),
                version: version.to_owned(),
            });
        }
    };
    let version = parse_version(version).map_err(|source| RangeError::InvalidVersion {
        term: term.to_owned(),
        operator: operator.to_owned(),
        version: version.to_owned(),
        source,
    })?;
    Ok(Comparator { op, version })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_split_on_spaces_except_after_operators_and_drop_single_characters() {
        assert_eq!(split_terms(">= 1.0.0  <2.0.0"), [">=1.0.0", "<2.0.0"]);
        assert_eq!(split_terms("1 >2.0.0 x"), [">2.0.0"]);
        assert_eq!(split_terms(""), Vec::<String>::new());
    }

    #[test]
    fn wildcards_expand_into_bounds() {
        let expand = |s: &str| expand_wildcards(vec![s.to_owned()]).unwrap();
        assert_eq!(expand("1.2.x"), [">=1.2.0", "<1.3.0"]);
        assert_eq!(expand(">1.x"), [">=2.0.0"]);
        assert_eq!(expand("<=1.2.x"), ["<1.3.0"]);
        assert_eq!(expand("!=1.x"), ["<1.0.0", ">=2.0.0"]);
        assert_eq!(expand("1.x.x"), [">=1.0.0", "<1.1.0"]);
        assert_eq!(expand("~1.2.x"), ["1.2.0"]);
        assert_eq!(expand(">1.2.3-x"), [">="]);
    }
}
