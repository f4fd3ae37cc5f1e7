//! OpenShift versions as upgrade gating reads them: the cluster's current minor version, a
//! bundle's `olm.maxOpenShiftVersion`, the compatibility predicate and the next minor version.
//!
//! Input: the release-version environment value, the ClusterVersion object (already fetched), the
//! raw JSON text of a property value. Output: [`ClusterMinor`], `semver::Version`s, verdicts and
//! errors whose texts are upstream's (cluster-olm-operator `internal/versionutils`, blang/semver
//! v4). No IO.
//!
//! Where the current version comes from:
//!
//! | `OPERATOR_IMAGE_VERSION` | ClusterVersion `version`                  | current version                     |
//! |--------------------------|-------------------------------------------|-------------------------------------|
//! | set, strict semver       | (not read)                                | that version's `X.Y`                |
//! | set, not strict semver   | (not read)                                | error (upstream refuses to start)   |
//! | unset or empty           | newest `Completed` entry of `status.history` with a version | its `X.Y` (strict semver) |
//! | unset or empty           | absent, or no `Completed` entry           | error                               |
//!
//! `status.desired` is never read: once an update starts it names the update's *target*, and
//! gating must judge against the version the cluster runs. Patch, prerelease and build are
//! dropped (`4.18.0-0.nightly-…` is 4.18). The un-substituted development value
//! `0.0.1-snapshot` is taken at face value (0.0), as upstream does.

use std::fmt;

use olm_api::openshift::{ClusterVersion, UpdateState};
use olm_api::version::blang::{self, VersionError};
use olm_api::version::go_text::go_quote;
use semver::Version;

/// The environment variable the cluster version operator fills with the release version
/// (upstream's v1 gating reads this one).
pub const RELEASE_VERSION_ENV: &str = "OPERATOR_IMAGE_VERSION";

/// A cluster's `major.minor` (patch, prerelease and build already dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterMinor {
    pub major: u64,
    pub minor: u64,
}

impl ClusterMinor {
    pub const fn new(major: u64, minor: u64) -> ClusterMinor {
        ClusterMinor { major, minor }
    }

    /// The minor version a cluster at this version upgrades to next, as upstream names it in
    /// its message: `X.(Y+1)`, except that 4.23 (co-released with 5.0) goes to `5.1`.
    pub fn next(self) -> String {
        if self.major == 4 && self.minor == 23 {
            return "5.1".to_string();
        }
        format!("{}.{}", self.major, self.minor.saturating_add(1))
    }

    /// The version the predicate compares against: 4.23 and 5.0 are co-released equivalents
    /// whose only upgrade target is 5.1, so 4.23 counts as 5.0.
    fn effective(self) -> (u64, u64, u64) {
        if self.major == 4 && self.minor == 23 {
            (5, 0, 0)
        } else {
            (self.major, self.minor, 0)
        }
    }
}

impl fmt::Display for ClusterMinor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl From<&Version> for ClusterMinor {
    fn from(v: &Version) -> ClusterMinor {
        ClusterMinor::new(v.major, v.minor)
    }
}

/// Where the current cluster version was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionSource {
    /// [`RELEASE_VERSION_ENV`].
    Environment,
    /// ClusterVersion `version`, newest `Completed` history entry.
    ClusterVersionHistory,
}

/// The cluster's current version, with the text it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentVersion {
    pub minor: ClusterMinor,
    pub source: VersionSource,
    pub raw: String,
}

/// Why the current cluster version is not known.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CurrentVersionError {
    #[error(
        "failed to read the cluster version from {RELEASE_VERSION_ENV}={}: {source}",
        go_quote(.value)
    )]
    InvalidEnvironment { value: String, source: VersionError },
    #[error(
        "failed to read the cluster version: {RELEASE_VERSION_ENV} is not set and ClusterVersion \"version\" does not exist"
    )]
    NoClusterVersion,
    #[error(
        "failed to read the cluster version: ClusterVersion \"version\" has no Completed update with a version in status.history"
    )]
    NoCompletedUpdate,
    #[error(
        "failed to read the cluster version from ClusterVersion \"version\" status.history version {}: {source}",
        go_quote(.value)
    )]
    InvalidHistoryVersion { value: String, source: VersionError },
}

/// The cluster's current minor version, from the environment value (`None` when unset) or else
/// the ClusterVersion singleton (`None` when it does not exist); see the module table.
pub fn current_cluster_version(
    env: Option<&str>,
    cluster_version: Option<&ClusterVersion>,
) -> Result<CurrentVersion, CurrentVersionError> {
    if let Some(value) = env.filter(|v| !v.is_empty()) {
        let v = blang::parse_version(value).map_err(|source| {
            CurrentVersionError::InvalidEnvironment {
                value: value.to_string(),
                source,
            }
        })?;
        return Ok(CurrentVersion {
            minor: ClusterMinor::from(&v),
            source: VersionSource::Environment,
            raw: value.to_string(),
        });
    }
    let cv = cluster_version.ok_or(CurrentVersionError::NoClusterVersion)?;
    // History is newest first; an entry without a version says nothing about the version.
    let value = cv
        .status
        .iter()
        .flat_map(|s| s.history.iter())
        .filter(|h| h.state == UpdateState::Completed)
        .find_map(|h| h.version.as_deref().filter(|v| !v.is_empty()))
        .ok_or(CurrentVersionError::NoCompletedUpdate)?;
    let v = blang::parse_version(value).map_err(|source| {
        CurrentVersionError::InvalidHistoryVersion {
            value: value.to_string(),
            source,
        }
    })?;
    Ok(CurrentVersion {
        minor: ClusterMinor::from(&v),
        source: VersionSource::ClusterVersionHistory,
        raw: value.to_string(),
    })
}

/// Why an `olm.maxOpenShiftVersion` value is not an allowed version; texts are upstream's
/// (`ToAllowedSemver`, including its `maxOpenshiftVersion` spelling).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MaxVersionError {
    /// The value is not JSON (Go's `json.Unmarshal` message).
    #[error("{0}")]
    Json(String),
    /// A JSON number not of the form `X.Y`.
    #[error("invalid semver format {}: expected <major>.<minor>", go_quote(.0))]
    NumberFormat(String),
    /// Neither a number nor a string; `go_type` is Go's `%T` of the decoded value.
    #[error("invalid type {go_type} for olm.maxOpenshiftVersion: {raw}")]
    Type { go_type: &'static str, raw: String },
    /// A string with a `v` prefix or other than exactly one dot.
    #[error("invalid version format")]
    Format,
    /// blang's `ParseTolerant` refused the string.
    #[error("{0}")]
    Tolerant(TolerantError),
}

/// blang v4 `ParseTolerant` errors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TolerantError {
    #[error("Short version cannot contain PreRelease/Build meta data")]
    ShortWithMetadata,
    #[error("{0}")]
    Parse(VersionError),
}

/// blang v4 `ParseTolerant`: trims spaces and one leading `v`, strips leading zeroes, pads a
/// short version with `.0`, then parses strictly.
pub fn parse_tolerant(s: &str) -> Result<Version, TolerantError> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
    for part in parts.iter_mut() {
        if part.len() > 1 {
            let trimmed = part.trim_start_matches('0');
            *part = if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{trimmed}")
            } else {
                trimmed.to_string()
            };
        }
    }
    if parts.len() < 3 {
        if parts
            .last()
            .is_some_and(|p| p.contains('+') || p.contains('-'))
        {
            return Err(TolerantError::ShortWithMetadata);
        }
        parts.resize(3, "0".to_string());
    }
    blang::parse_version(&parts.join(".")).map_err(TolerantError::Parse)
}

/// upstream's `ToAllowedSemver`: the version an `olm.maxOpenShiftVersion` value (its raw JSON
/// text) allows.
///
/// | raw value                    | result                                         |
/// |------------------------------|------------------------------------------------|
/// | number matching `^[1-9][0-9]*\.(0\|[1-9][0-9]*)$` | that `X.Y` *as written* (`4.10` is 4.10) |
/// | any other number             | [`MaxVersionError::NumberFormat`]              |
/// | string with one dot, no `v`  | `ParseTolerant` of it (`" 4.18"`, `"4.018"` pass) |
/// | other string                 | [`MaxVersionError::Format`]                    |
/// | null, bool, object, array    | [`MaxVersionError::Type`]                      |
pub fn to_allowed_semver(raw: &str) -> Result<Version, MaxVersionError> {
    let value = olm_api::fbc::gojson::parse(raw.as_bytes()).map_err(|e| {
        // A type error (a number beyond float64) is an `UnmarshalTypeError`, which Go prefixes.
        MaxVersionError::Json(if e.message.starts_with("cannot unmarshal") {
            format!("json: {}", e.message)
        } else {
            e.message
        })
    })?;
    use olm_api::fbc::gojson::Value;
    let version_text = match &value {
        Value::Number(_) => {
            let Some((major, minor)) = raw.split_once('.') else {
                return Err(MaxVersionError::NumberFormat(raw.to_string()));
            };
            let major_ok = major.starts_with(|c: char| matches!(c, '1'..='9'))
                && major.bytes().all(|b| b.is_ascii_digit());
            let minor_ok = minor == "0"
                || (minor.starts_with(|c: char| matches!(c, '1'..='9'))
                    && minor.bytes().all(|b| b.is_ascii_digit()));
            if !major_ok || !minor_ok {
                return Err(MaxVersionError::NumberFormat(raw.to_string()));
            }
            raw.to_string()
        }
        Value::String(s) => s.clone(),
        other => {
            let go_type = match other {
                Value::Null => "<nil>",
                Value::Bool(_) => "bool",
                Value::Array(_) => "[]interface {}",
                _ => "map[string]interface {}",
            };
            return Err(MaxVersionError::Type {
                go_type,
                raw: raw.to_string(),
            });
        }
    };
    if version_text.starts_with('v') || version_text.matches('.').count() != 1 {
        return Err(MaxVersionError::Format);
    }
    parse_tolerant(&version_text).map_err(MaxVersionError::Tolerant)
}

/// upstream's `IsOperatorMaxOCPVersionCompatibleWithCluster`: whether a bundle allowing up to
/// `max` lets a cluster at `current` upgrade to its next minor version (`max` greater than the
/// current version, with 4.23 counted as 5.0).
///
/// | cluster | max  | upgradeable |
/// |---------|------|-------------|
/// | 4.17    | 4.18 | yes         |
/// | 4.18    | 4.18 | no          |
/// | 4.23    | 5.0  | no          |
/// | 4.23    | 5.1  | yes         |
pub fn is_upgradeable(max: &Version, current: ClusterMinor) -> bool {
    // Neither side has a prerelease (`max` comes from `X.Y` text, the cluster's is dropped), so
    // comparing the numbers is blang's `GT`.
    (max.major, max.minor, max.patch) > current.effective()
}
