//! A bundle's version and release, and the order the resolver ranks bundles by.
//!
//! Input: the `version` (and optional `release`) of a bundle's `olm.package` property, or of an
//! installed bundle's record. Output: [`VersionRelease`] values, their order, and errors worded as
//! upstream words them. No IO.
//!
//! How a version string becomes a version and a release:
//!
//! | explicit release | support gate | version     | read as                                   |
//! |------------------|--------------|-------------|-------------------------------------------|
//! | none             | any          | `1.0.0+2`   | `1.0.0`, release `2` (build is release)   |
//! | none             | any          | `1.0.0+001` | `1.0.0+001`, no release (`001` is none)   |
//! | `"2"`            | on           | `1.0.0+x`   | `1.0.0+x`, release `2` (build kept)       |
//! | `""`             | on           | `1.0.0+2`   | `1.0.0+2`, empty release (explicit)       |
//! | `"999"`          | off          | `1.0.0+2`   | `1.0.0`, release `2` (explicit ignored)   |
//!
//! Order: version precedence (build ignored), then release; no release (or an empty one) ranks
//! below any release, releases compare like prerelease identifier lists. Equality is this order's
//! equality, which is what "same version and release" means for upgrade edges.

use std::cmp::Ordering;
use std::fmt;

use semver::Version;

use super::blang::{self, parse_version};
use super::comparator::precedence;
use super::go_text::go_quote;

/// Longest release upstream accepts (the ClusterServiceVersion schema's limit).
const MAX_RELEASE_LEN: usize = 20;

/// One dot-separated release identifier.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Identifier {
    /// All digits, no leading zero, fits in a `u64`; ranks below any alphanumeric identifier.
    Numeric(u64),
    /// Letters, digits and hyphens, not all digits; compared bytewise.
    Alphanumeric(String),
}

impl fmt::Display for Identifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Identifier::Numeric(n) => write!(f, "{n}"),
            Identifier::Alphanumeric(s) => f.write_str(s),
        }
    }
}

/// A release: dot-separated identifiers with prerelease syntax. The derived order is the one
/// upstream uses: empty first, then identifier by identifier, a prefix ranking lower.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release(Vec<Identifier>);

impl Release {
    /// Upstream's `NewRelease`; `""` gives an empty release.
    pub fn parse(s: &str) -> Result<Release, ReleaseError> {
        if s.is_empty() {
            return Ok(Release::default());
        }
        if s.len() > MAX_RELEASE_LEN {
            return Err(ReleaseError::TooLong(s.to_owned()));
        }
        let mut identifiers = Vec::new();
        let mut problems = Vec::new();
        for (index, segment) in s.split('.').enumerate() {
            match blang::prerelease_identifier(segment) {
                Ok(Some(n)) => identifiers.push(Identifier::Numeric(n)),
                Ok(None) => identifiers.push(Identifier::Alphanumeric(segment.to_owned())),
                Err(error) => problems.push(SegmentError { index, error }),
            }
        }
        if problems.is_empty() {
            Ok(Release(identifiers))
        } else {
            Err(ReleaseError::InvalidSegments {
                release: s.to_owned(),
                problems,
            })
        }
    }

    pub fn identifiers(&self) -> &[Identifier] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, identifier) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{identifier}")?;
        }
        Ok(())
    }
}

/// One bad segment of a release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentError {
    pub index: usize,
    pub error: blang::VersionError,
}

/// Why a bundle's version or release cannot be read; messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseError {
    #[error(
        "invalid release {}: exceeds maximum length of {MAX_RELEASE_LEN} characters",
        go_quote(.0)
    )]
    TooLong(String),
    #[error("invalid release {}: {}", go_quote(.release), join_segment_errors(.problems))]
    InvalidSegments {
        release: String,
        problems: Vec<SegmentError>,
    },
    /// The legacy path reports blang's error as it is.
    #[error(transparent)]
    Version(#[from] blang::VersionError),
    #[error("error parsing version {}: {source}", go_quote(.version))]
    ExplicitVersion {
        version: String,
        source: blang::VersionError,
    },
    #[error("error parsing release {}: {source}", go_quote(.release))]
    ExplicitRelease {
        release: String,
        source: Box<ReleaseError>,
    },
}

fn join_segment_errors(problems: &[SegmentError]) -> String {
    problems
        .iter()
        .map(|p| format!("segment {}: {}", p.index, p.error))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why an installed bundle's recorded version cannot be read; messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstalledVersionError {
    #[error("failed to get version and release of installed bundle: {0}")]
    Legacy(blang::VersionError),
    #[error("failed to parse installed bundle version and release: {0}")]
    Explicit(ReleaseError),
}

/// A bundle version and its optional release. `release` is `None` when there is none, and
/// `Some` of an empty release only when one was given explicitly as `""`; both rank the same.
#[derive(Clone, Debug)]
pub struct VersionRelease {
    pub version: Version,
    pub release: Option<Release>,
}

impl VersionRelease {
    /// From the `olm.package` property's version string and optional explicit release; the
    /// explicit release is honoured only when `explicit_release_support` (upstream's
    /// `BundleReleaseSupport` gate, off by default) is on. See the module table.
    pub fn from_bundle_version(
        version: &str,
        explicit_release: Option<&str>,
        explicit_release_support: bool,
    ) -> Result<VersionRelease, ReleaseError> {
        match explicit_release {
            Some(release) if explicit_release_support => Self::explicit(version, release),
            _ => Ok(Self::legacy(version)?),
        }
    }

    /// From an installed bundle's record: with a recorded release (even `""`) the version and
    /// release are read separately, otherwise the legacy rule applies.
    pub fn from_installed(
        version: &str,
        release: Option<&str>,
    ) -> Result<VersionRelease, InstalledVersionError> {
        match release {
            Some(release) => {
                Self::explicit(version, release).map_err(InstalledVersionError::Explicit)
            }
            None => Self::legacy(version).map_err(InstalledVersionError::Legacy),
        }
    }

    /// Build metadata that reads as a non-empty release becomes the release.
    fn legacy(version: &str) -> Result<VersionRelease, blang::VersionError> {
        let mut version = parse_version(version)?;
        let release = match Release::parse(version.build.as_str()) {
            Ok(release) if !release.is_empty() => {
                version.build = semver::BuildMetadata::EMPTY;
                Some(release)
            }
            _ => None,
        };
        Ok(VersionRelease { version, release })
    }

    fn explicit(version: &str, release: &str) -> Result<VersionRelease, ReleaseError> {
        let parsed = parse_version(version).map_err(|source| ReleaseError::ExplicitVersion {
            version: version.to_owned(),
            source,
        })?;
        let release = Release::parse(release).map_err(|source| ReleaseError::ExplicitRelease {
            release: release.to_owned(),
            source: Box::new(source),
        })?;
        Ok(VersionRelease {
            version: parsed,
            release: Some(release),
        })
    }

    fn release_identifiers(&self) -> &[Identifier] {
        self.release.as_ref().map_or(&[], |r| r.identifiers())
    }
}

impl Ord for VersionRelease {
    fn cmp(&self, other: &Self) -> Ordering {
        precedence(&self.version, &other.version)
            .then_with(|| self.release_identifiers().cmp(other.release_identifiers()))
    }
}

impl PartialOrd for VersionRelease {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for VersionRelease {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for VersionRelease {}

/// As upstream reports an installed version without explicit release support: a non-empty
/// release is folded back in as build metadata (`1.0.0+2`), otherwise the version's own build.
impl fmt::Display for VersionRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = &self.version;
        write!(f, "{}.{}.{}", v.major, v.minor, v.patch)?;
        if !v.pre.is_empty() {
            write!(f, "-{}", v.pre)?;
        }
        match &self.release {
            Some(release) if !release.is_empty() => write!(f, "+{release}"),
            _ if !v.build.is_empty() => write!(f, "+{}", v.build),
            _ => Ok(()),
        }
    }
}

/// Order for bundles whose version may not have parsed: `None` (unparseable) ranks lowest.
pub fn compare_optional(a: Option<&VersionRelease>, b: Option<&VersionRelease>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(b),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => Ordering::Equal,
    }
}
