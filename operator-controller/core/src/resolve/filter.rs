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

    /// Whether `entry` declares an upgrade edge from the installed bundle.
    fn is_edge(&self, entry: &ChannelEntry, skip_range: Option<&Range>) -> bool {
        entry.replaces.as_deref().unwrap_or("") == self.name
            || entry.skips.contains(&self.name)
            || skip_range.is_some_and(|r| r.matches(&self.version))
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
        let visible: Vec<&ChannelContent> = if self.channels.is_empty() {
            content.channels().iter().collect()
        } else {
            content
                .channels()
                .iter()
                .filter(|c| self.channels.contains(&c.channel.name))
                .collect()
        };
        let in_channels: Option<HashSet<&str>> = (!self.channels.is_empty()).then(|| {
            visible
                .iter()
                .flat_map(|c| c.channel.entries.iter().map(|e| e.name.as_str()))
                .collect()
        });
        let successors = self
            .successors
            .map(|s| (s.successor_names(&visible), &s.version_release));

        let mut out = Vec::new();
        for (index, candidate) in content.bundles().iter().enumerate() {
            let name = candidate.bundle.name.as_str();
            let version = candidate.version.as_ref().ok();
            if in_channels.as_ref().is_some_and(|set| !set.contains(name)) {
                continue;
            }
            if let Some(range) = self.range
                && !version.is_some_and(|v| range.matches(&v.version))
            {
                continue;
            }
            if let Some((names, installed)) = &successors {
                let stays = version.is_some_and(|v| v == *installed);
                if !stays && !names.contains(name) {
                    continue;
                }
            }
            out.push(Best {
                index,
                deprecated: content.is_bundle_deprecated(name),
            });
        }
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
}

/// `Less` when `a` ranks before `b`.
fn rank(a: &BundleContent, a_deprecated: bool, b: &BundleContent, b_deprecated: bool) -> Ordering {
    a_deprecated
        .cmp(&b_deprecated)
        .then_with(|| compare_optional(b.version.as_ref().ok(), a.version.as_ref().ok()))
}
