//! Which bundles of one catalog's package are candidates, and which candidate ranks first.
//!
//! Input: a [`PackageContent`], the requested channels and version range, and the upgrade edges
//! of the installed bundle. Output: the best candidate of that catalog. No IO.
//!
//! A bundle is a candidate when every rule that applies holds (upstream's predicates, ANDed):
//!
//! | rule        | applies when                                   | holds when                                                     |
//! |-------------|------------------------------------------------|----------------------------------------------------------------|
//! | channel     | `channels` is non-empty                        | an entry of a named channel has the bundle's name              |
//! | version     | `version` is set                               | the range matches the version (release excluded)               |
//! | successor   | installed, policy not `SelfCertified`          | an entry of a visible channel with the bundle's name replaces, skips or skipRange-covers the installed bundle, or the bundle's version and release equal the installed ones |
//!
//! Visible channels are the named ones when `channels` is non-empty, else all; so upgrade edges
//! declared only in unselected channels do not count. There is no walk along `replaces` chains:
//! every covering entry is a candidate and the highest version wins.
//!
//! Rank: bundles the catalog deprecates (bundle-level `olm.deprecations` entries) after the others,
//! then version and release descending, bundles whose version cannot be read last; ties keep
//! content order.

use std::cmp::Ordering;
use std::collections::HashSet;

use olm_api::fbc::ChannelEntry;
use olm_api::version::blang::{Range, parse_version};
use olm_api::version::masterminds::Constraints;
use olm_api::version::release::{InstalledVersionError, VersionRelease, compare_optional};
use semver::Version;

use super::InstalledBundle;
use super::content::{BundleContent, ChannelContent, PackageContent};

/// The upgrade edges out of the installed bundle.
#[derive(Clone, Debug)]
pub struct Successors {
    name: String,
    /// The installed version as blang parses it (build metadata kept), for `skipRange`.
    version: Version,
    /// The installed version and release, for "stay where you are".
    version_release: VersionRelease,
}

impl Successors {
    /// Reads the installed bundle's version; upstream fails the resolution when it cannot.
    pub fn new(installed: &InstalledBundle) -> Result<Successors, InstalledVersionError> {
        let version_release =
            VersionRelease::from_installed(&installed.version, installed.release.as_deref())?;
        // Both readings above parse the version with blang first, so this cannot fail now.
        let version = parse_version(&installed.version).map_err(InstalledVersionError::Legacy)?;
        Ok(Successors {
            name: installed.name.clone(),
            version,
            version_release,
        })
    }

    /// The installed bundle's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The installed version and release.
    pub fn version_release(&self) -> &VersionRelease {
        &self.version_release
    }

    /// Which upgrade edges from the installed bundle `entry` declares.
    pub fn edges(&self, entry: &ChannelEntry, skip_range: Option<&Range>) -> Edges {
        Edges {
            replaces: entry.replaces.as_deref().unwrap_or("") == self.name,
            skips: entry.skips.contains(&self.name),
            skip_range: skip_range.is_some_and(|r| r.matches(&self.version)),
        }
    }

    /// Whether `entry` declares an upgrade edge from the installed bundle.
    fn is_edge(&self, entry: &ChannelEntry, skip_range: Option<&Range>) -> bool {
        self.edges(entry, skip_range).any()
    }

    /// Names of the bundles some visible channel entry makes a successor.
    fn successor_names<'c>(&self, channels: &[&'c ChannelContent]) -> HashSet<&'c str> {
        let mut names = HashSet::new();
        for ch in channels {
            for (entry, range) in ch.channel.entries.iter().zip(&ch.skip_ranges) {
                if self.is_edge(entry, range.as_ref()) {
                    names.insert(entry.name.as_str());
                }
            }
        }
        names
    }
}

/// The upgrade edges one channel entry declares from the installed bundle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Edges {
    pub replaces: bool,
    pub skips: bool,
    pub skip_range: bool,
}

impl Edges {
    pub fn any(&self) -> bool {
        self.replaces || self.skips || self.skip_range
    }
}

/// How one bundle fares against each rule: the checks [`CandidateRules::candidates`] makes,
/// kept whole so that an explanation can say which rule a bundle fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Index into [`PackageContent::bundles`].
    pub index: usize,
    /// False only when channels are requested and none of them lists the bundle.
    pub in_channels: bool,
    /// False only when a range is requested and the version is outside it (or unreadable).
    pub in_range: bool,
    /// `None` when the successor rule does not apply.
    pub successor: Option<SuccessorVerdict>,
    /// Whether the catalog deprecates the bundle (bundle-level entry).
    pub deprecated: bool,
}

/// The successor rule's two ways of holding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuccessorVerdict {
    /// A visible channel entry with the bundle's name replaces, skips or skipRange-covers the
    /// installed bundle.
    pub edge: bool,
    /// The bundle's version and release equal the installed ones ("stay where you are").
    pub stays: bool,
}

impl Verdict {
    /// Whether every rule that applies holds: the bundle is a candidate.
    pub fn eligible(&self) -> bool {
        self.in_channels && self.in_range && self.successor.is_none_or(|s| s.edge || s.stays)
    }
}

/// The rules of one resolution, applied to one catalog's content at a time.
#[derive(Clone, Copy, Debug)]
pub struct CandidateRules<'r> {
    /// The requested channels; empty means no channel rule.
    pub channels: &'r [String],
    pub range: Option<&'r Constraints>,
    /// `Some` when upgrades are constrained to catalog edges and something is installed.
    pub successors: Option<&'r Successors>,
}

/// The best candidate of one catalog.
#[derive(Clone, Copy, Debug)]
pub struct Best {
    /// Index into [`PackageContent::bundles`].
    pub index: usize,
    pub deprecated: bool,
}

impl CandidateRules<'_> {
    /// The bundle this catalog offers, if any: the first of [`CandidateRules::candidates`].
    pub fn best(&self, content: &PackageContent) -> Option<Best> {
        self.candidates(content).into_iter().next()
    }

    /// Every candidate of this catalog, best first (upstream's stable sort).
    pub fn candidates(&self, content: &PackageContent) -> Vec<Best> {
        let mut out: Vec<Best> = self
            .evaluate(content, false)
            .filter(Verdict::eligible)
            .map(|v| Best {
                index: v.index,
                deprecated: v.deprecated,
            })
            .collect();
        let bundles = content.bundles();
        out.sort_by(|a, b| {
            rank(
                &bundles[a.index],
                a.deprecated,
                &bundles[b.index],
                b.deprecated,
            )
        });
        out
    }

    /// The channels whose entries count: the requested ones, or all when none is requested.
    pub fn visible_channels<'c>(&self, content: &'c PackageContent) -> Vec<&'c ChannelContent> {
        if self.channels.is_empty() {
            content.channels().iter().collect()
        } else {
            content
                .channels()
                .iter()
                .filter(|c| self.channels.contains(&c.channel.name))
                .collect()
        }
    }

    /// Every bundle of this catalog against every rule, in content order.
    pub fn verdicts(&self, content: &PackageContent) -> Vec<Verdict> {
        self.evaluate(content, true).collect()
    }

    /// The verdicts; unless `complete`, the rules after the first that fails are not checked
    /// (reported as holding), which decides eligibility alike at a lower cost.
    fn evaluate<'c>(
        &'c self,
        content: &'c PackageContent,
        complete: bool,
    ) -> impl Iterator<Item = Verdict> + 'c {
        let visible = self.visible_channels(content);
        let in_channels: Option<HashSet<&str>> = (!self.channels.is_empty()).then(|| {
            visible
                .iter()
                .flat_map(|c| c.channel.entries.iter().map(|e| e.name.as_str()))
                .collect()
        });
        let successors = self
            .successors
            .map(|s| (s.successor_names(&visible), &s.version_release));

        content
            .bundles()
            .iter()
            .enumerate()
            .map(move |(index, candidate)| {
                let name = candidate.bundle.name.as_str();
                let version = candidate.version.as_ref().ok();
                let in_channels = in_channels.as_ref().is_none_or(|set| set.contains(name));
                let in_range = (!complete && !in_channels)
                    || self
                        .range
                        .is_none_or(|range| version.is_some_and(|v| range.matches(&v.version)));
                let skip = !(complete || (in_channels && in_range));
                let successor = successors
                    .as_ref()
                    .map(|(names, installed)| SuccessorVerdict {
                        edge: skip || names.contains(name),
                        stays: !skip && version.is_some_and(|v| v == *installed),
                    });
                let skip = skip || (!complete && successor.is_some_and(|s| !s.edge && !s.stays));
                Verdict {
                    index,
                    in_channels,
                    in_range,
                    successor,
                    deprecated: !skip && content.is_bundle_deprecated(name),
                }
            })
    }
}

/// `Less` when `a` ranks before `b`.
pub fn rank(
    a: &BundleContent,
    a_deprecated: bool,
    b: &BundleContent,
    b_deprecated: bool,
) -> Ordering {
    a_deprecated
        .cmp(&b_deprecated)
        .then_with(|| compare_optional(b.version.as_ref().ok(), a.version.as_ref().ok()))
}
