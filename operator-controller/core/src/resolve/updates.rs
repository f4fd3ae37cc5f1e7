//! Which newer bundles an installed extension is not getting, and why: the data of
//! `status.availableUpdates` (issue 25 part 3).
//!
//! Input: an [`Explanation`] of the extension's current resolution (its spec, its installed
//! bundle, the selected catalogs' content). Output: at most [`MAX_UPDATES`] [`AvailableUpdate`]s,
//! newest first. No IO.
//!
//! A bundle is listed when it is in a selected catalog, newer than both the installed bundle
//! and what the controller would install, and blocked by the spec or the catalog's graph:
//!
//! | `blockedBy` (first that applies) | what would lift it |
//! |---|---|
//! | `OutsideVersionRange` | widening `spec.source.catalog.version` (a pin, a range) |
//! | `NotInRequestedChannel` | adding a channel that lists it to `spec.source.catalog.channels` |
//! | `NotASuccessor` | a catalog edge from the installed bundle, or `upgradeConstraintPolicy: SelfCertified` |

use olm_api::version::release::VersionRelease;

use super::explain::{Explanation, ReasonCode};

/// The most entries listed.
pub const MAX_UPDATES: usize = 10;

/// The codes that block an update, in the order `blockedBy` names them.
pub const BLOCKING: [ReasonCode; 3] = [
    ReasonCode::OutsideVersionRange,
    ReasonCode::NotInRequestedChannel,
    ReasonCode::NotASuccessor,
];

/// One newer bundle the spec or graph keeps from being installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AvailableUpdate {
    pub name: String,
    pub version: String,
    pub catalog: String,
    /// The first channel (by name) of the catalog that lists the bundle; empty when none does.
    pub channel: String,
    pub blocked_by: ReasonCode,
    /// Whether the catalog deprecates the bundle.
    pub deprecated: bool,
}

/// The available updates of `explanation` for the installed `installed` version.
pub fn available_updates(
    explanation: &Explanation,
    installed: &VersionRelease,
) -> Vec<AvailableUpdate> {
    let chosen = explanation
        .chosen()
        .and_then(|c| c.version_release().cloned());
    let floor = match chosen {
        Some(chosen) if &chosen > installed => chosen,
        _ => installed.clone(),
    };
    explanation
        .candidates
        .iter()
        .filter(|c| !c.chosen && !c.has(ReasonCode::CatalogNotSelected))
        .filter(|c| c.version_release().is_some_and(|v| v > &floor))
        .filter_map(|c| {
            let blocked_by = BLOCKING.into_iter().find(|code| c.has(*code))?;
            Some(AvailableUpdate {
                name: c.name.clone(),
                version: c.version.clone(),
                catalog: c.catalog.clone(),
                channel: explanation
                    .channels_of(&c.catalog, &c.name)
                    .into_iter()
                    .next()
                    .unwrap_or_default(),
                blocked_by,
                deprecated: c.deprecated,
            })
        })
        .take(MAX_UPDATES)
        .collect()
}
