//! Why the resolver chose a bundle, and why every other bundle of the package was not chosen.
//!
//! Input: the same as [`Resolver`] (catalog filter, installed bundle, catalogs) plus the
//! package's content from every catalog, selected or not (unselected catalogs are only listed;
//! the resolver never reads them). Output: an [`Explanation`]: the resolver's own outcome (the
//! chosen bundle or its exact failure), one [`Candidate`] per bundle per catalog with the
//! [`Reason`]s it was not chosen, and the upgrade path from the installed bundle. No IO.
//!
//! The outcome comes from the resolver's walk itself ([`Resolver`]'s `walk_fetched`, the code
//! path of [`Resolver::resolve_fetched`]); the per-bundle verdicts from
//! [`CandidateRules::verdicts`], the checks [`CandidateRules::candidates`] filters by. So the
//! explanation cannot disagree with `resolve` or the controller.
//!
//! | code | when (several may apply to one candidate) |
//! |---|---|
//! | `CatalogNotSelected` | the catalog is unavailable or the selector does not match it (or the selector is invalid) |
//! | `NotInRequestedChannel` | channels are requested and none lists the bundle |
//! | `OutsideVersionRange` | the version is outside the requested range (or unreadable, or the range is invalid) |
//! | `NotASuccessor` | installed, policy `CatalogProvided`: no visible entry replaces, skips or skipRange-covers the installed bundle and the version is not the installed one |
//! | `HigherVersionChosen` | eligible, but a bundle with a higher (or equal, earlier listed) version ranks first in its catalog |
//! | `SameVersionInstalled` | eligible as the installed version ("stay where you are"), but a newer eligible bundle ranks first |
//! | `LowerCatalogPriority` | eligible, but another catalog offering a bundle has a higher priority, or several share the top priority (ambiguous) |
//! | `Deprecated` | the catalog deprecates the bundle; informational (deprecated bundles are eligible, ranked after the others), saying so when that is why it lost |
//! | `ResolutionFailed` | eligible, but the resolution failed for a reason outside these rules (a catalog could not be read, the best bundle declares dependencies or its version is unreadable); the message carries the resolver's |
//!
//! The chosen bundle has no reason; every other candidate has at least one.
//!
//! The upgrade path starts at the installed bundle and resolves again from each chosen bundle
//! as if it were installed (same spec, same content), until the answer stays put: the bundles an
//! admin passes through, ending at the newest reachable.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use olm_api::v1::{CatalogFilter, UpgradeConstraintPolicy};
use olm_api::version::go_text::go_quote;
use olm_api::version::release::{VersionRelease, compare_optional};
use serde::Serialize;

use super::content::{BundleContent, PackageContent};
use super::filter::{CandidateRules, Successors, Verdict};
use super::{CatalogInfo, FetchError, InstalledBundle, Resolution, ResolveError, Resolver, Walk};

/// The package's content per catalog name; `Err` holds why it could not be read. A catalog
/// missing from the map is treated as unreadable.
pub type Contents = BTreeMap<String, Result<Arc<PackageContent>, String>>;

/// Why a bundle was not chosen (a closed set; see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ReasonCode {
    NotInRequestedChannel,
    OutsideVersionRange,
    NotASuccessor,
    HigherVersionChosen,
    LowerCatalogPriority,
    CatalogNotSelected,
    Deprecated,
    SameVersionInstalled,
    ResolutionFailed,
}

impl ReasonCode {
    /// Every code, in declaration order.
    pub const ALL: [ReasonCode; 9] = [
        ReasonCode::NotInRequestedChannel,
        ReasonCode::OutsideVersionRange,
        ReasonCode::NotASuccessor,
        ReasonCode::HigherVersionChosen,
        ReasonCode::LowerCatalogPriority,
        ReasonCode::CatalogNotSelected,
        ReasonCode::Deprecated,
        ReasonCode::SameVersionInstalled,
        ReasonCode::ResolutionFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::NotInRequestedChannel => "NotInRequestedChannel",
            ReasonCode::OutsideVersionRange => "OutsideVersionRange",
            ReasonCode::NotASuccessor => "NotASuccessor",
            ReasonCode::HigherVersionChosen => "HigherVersionChosen",
            ReasonCode::LowerCatalogPriority => "LowerCatalogPriority",
            ReasonCode::CatalogNotSelected => "CatalogNotSelected",
            ReasonCode::Deprecated => "Deprecated",
            ReasonCode::SameVersionInstalled => "SameVersionInstalled",
            ReasonCode::ResolutionFailed => "ResolutionFailed",
        }
    }
}

/// One reason: the code and one sentence naming the rule and the values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub code: ReasonCode,
    pub message: String,
}

/// One bundle of the package in one catalog.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub name: String,
    /// The version as the status shows it; empty when unreadable.
    pub version: String,
    pub catalog: String,
    pub chosen: bool,
    /// Empty exactly when chosen.
    pub reasons: Vec<Reason>,
    /// Whether its catalog deprecates it.
    pub deprecated: bool,
    parsed: Option<VersionRelease>,
}

impl Candidate {
    /// The parsed version and release (`None`: unreadable).
    pub fn version_release(&self) -> Option<&VersionRelease> {
        self.parsed.as_ref()
    }

    /// Whether one of the reasons has this code.
    pub fn has(&self, code: ReasonCode) -> bool {
        self.reasons.iter().any(|r| r.code == code)
    }
}

/// The whole explanation of one resolution.
#[derive(Debug)]
pub struct Explanation {
    pub package: String,
    /// Exactly what the resolver returns for these inputs.
    pub outcome: Result<Resolution, ResolveError>,
    pub installed: Option<InstalledBundle>,
    /// Every bundle of every readable catalog, newest version first (then catalog, name).
    pub candidates: Vec<Candidate>,
    /// Bundle names from the installed one to the newest reachable; `None` when nothing is
    /// installed.
    pub upgrade_path: Option<Vec<String>>,
    /// Catalogs whose content could not be read (name, why): their bundles are not listed.
    pub unread: Vec<(String, String)>,
    /// Readable content by catalog name, for [`Explanation::graph`].
    content: BTreeMap<String, Arc<PackageContent>>,
}

impl Explanation {
    /// The channels of `catalog` that list bundle `name`, by name.
    pub fn channels_of(&self, catalog: &str, name: &str) -> Vec<String> {
        let Some(content) = self.content.get(catalog) else {
            return Vec::new();
        };
        let mut channels: Vec<String> = content
            .channels()
            .iter()
            .filter(|c| c.channel.entries.iter().any(|e| e.name == name))
            .map(|c| c.channel.name.clone())
            .collect();
        channels.sort();
        channels
    }

    /// The catalog's bundle named `name`, if its content was read.
    pub fn bundle(&self, catalog: &str, name: &str) -> Option<&olm_api::fbc::Bundle> {
        self.content
            .get(catalog)?
            .bundles()
            .iter()
            .find(|b| b.bundle.name == name)
            .map(|b| &b.bundle)
    }

    /// The chosen candidate, if any.
    pub fn chosen(&self) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.chosen)
    }
}

/// Explains the resolution of `filter` (see the module header).
pub fn explain(
    filter: &CatalogFilter,
    installed: Option<&InstalledBundle>,
    catalogs: &[CatalogInfo],
    contents: &Contents,
) -> Explanation {
    let mut sorted: Vec<&CatalogInfo> = catalogs.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut readable: BTreeMap<String, Arc<PackageContent>> = BTreeMap::new();
    let mut unread = Vec::new();
    for c in &sorted {
        match contents.get(&c.name) {
            Some(Ok(content)) => {
                readable.insert(c.name.clone(), content.clone());
            }
            Some(Err(e)) => unread.push((c.name.clone(), e.clone())),
            None => unread.push((c.name.clone(), "not read".to_owned())),
        }
    }
    let (outcome, candidates) = match Resolver::new(filter, installed) {
        Err(error) => {
            // Nothing but the parse happened; say so on every bundle.
            let candidates = unparsed_request(&error, &sorted, &readable);
            (Err(error), candidates)
        }
        Ok(resolver) => {
            let (walk, outcome) = resolver.walk_fetched(fetched(&resolver, catalogs, contents));
            let candidates =
                Judge::new(&resolver, installed, &walk, &outcome).all(&sorted, &readable);
            (outcome, candidates)
        }
    };
    let mut candidates = candidates;
    candidates.sort_by(|a, b| {
        compare_optional(b.parsed.as_ref(), a.parsed.as_ref())
            .then_with(|| a.catalog.cmp(&b.catalog))
            .then_with(|| a.name.cmp(&b.name))
    });
    let upgrade_path = installed.map(|i| upgrade_path(filter, i, &outcome, catalogs, contents));
    Explanation {
        package: filter.package_name.clone(),
        outcome,
        installed: installed.cloned(),
        candidates,
        upgrade_path,
        unread,
        content: readable,
    }
}

/// The selected catalogs' content as the resolver takes it.
fn fetched<'c>(
    resolver: &Resolver<'_>,
    catalogs: &'c [CatalogInfo],
    contents: &Contents,
) -> Vec<(&'c CatalogInfo, Result<Arc<PackageContent>, FetchError>)> {
    resolver
        .catalogs_to_search(catalogs)
        .into_iter()
        .map(|c| {
            let content = match contents.get(&c.name) {
                Some(Ok(content)) => Ok(content.clone()),
                Some(Err(e)) => Err(FetchError::from(e.clone())),
                None => Err(FetchError::from("not read")),
            };
            (c, content)
        })
        .collect()
}

/// Every bundle, when the request itself (selector or range) could not be parsed.
fn unparsed_request(
    error: &ResolveError,
    catalogs: &[&CatalogInfo],
    readable: &BTreeMap<String, Arc<PackageContent>>,
) -> Vec<Candidate> {
    let reason = match error {
        ResolveError::InvalidSelector(e) => Reason {
            code: ReasonCode::CatalogNotSelected,
            message: format!("The catalog selector is invalid ({e}), so no catalog is searched."),
        },
        ResolveError::InvalidVersionRange { range, source } => Reason {
            code: ReasonCode::OutsideVersionRange,
            message: format!(
                "The requested version range {} is invalid ({source}), so no version is inside it.",
                go_quote(range)
            ),
        },
        other => Reason {
            code: ReasonCode::ResolutionFailed,
            message: format!("The resolution failed: {other}."),
        },
    };
    let mut out = Vec::new();
    for c in catalogs {
        if let Some(content) = readable.get(&c.name) {
            for b in content.bundles() {
                let mut candidate = candidate(&c.name, b, content);
                candidate.reasons.push(reason.clone());
                out.push(candidate);
            }
        }
    }
    out
}

fn candidate(catalog: &str, b: &BundleContent, content: &PackageContent) -> Candidate {
    let parsed = b.version.as_ref().ok().cloned();
    Candidate {
        name: b.bundle.name.clone(),
        version: parsed.as_ref().map(ToString::to_string).unwrap_or_default(),
        catalog: catalog.to_owned(),
        chosen: false,
        reasons: Vec::new(),
        deprecated: content.is_bundle_deprecated(&b.bundle.name),
        parsed,
    }
}

/// What a catalog's pick became in the walk.
enum Fate<'w> {
    /// Not selected; the sentence says why.
    NotSelected(String),
    /// Supplied the outcome (chosen, or failed after the choice), or had no pick.
    Plain,
    /// Its deprecated pick was set aside for `preferred`'s non-deprecated one.
    PassedOver { preferred: &'w str },
    /// Lost to `winner`'s higher priority.
    Outranked {
        priority: i32,
        winner: &'w str,
        top: i32,
    },
    /// Among the picks of an ambiguous result.
    Ambiguous {
        priority: i32,
        top: i32,
        tied: &'w [String],
    },
}

/// Reasons for every bundle, from the resolver's walk.
struct Judge<'a> {
    resolver: &'a Resolver<'a>,
    outcome: &'a Result<Resolution, ResolveError>,
    walk: &'a Walk,
    /// The successor rule's inputs, or why the installed version cannot be read.
    successors: Result<Option<Successors>, String>,
    selected: BTreeSet<String>,
}

impl<'a> Judge<'a> {
    fn new(
        resolver: &'a Resolver<'a>,
        installed: Option<&InstalledBundle>,
        walk: &'a Walk,
        outcome: &'a Result<Resolution, ResolveError>,
    ) -> Judge<'a> {
        let constrained =
            resolver.filter.upgrade_constraint_policy != UpgradeConstraintPolicy::SelfCertified;
        // The walk computes the same value at the first catalog with the package; it may not
        // have reached one.
        let successors = match (&walk.successors, installed) {
            (Some(s), _) => Ok(Some(s.clone())),
            (None, Some(i)) if constrained => Successors::new(i)
                .map(Some)
                .map_err(|e| format!("{} ({e})", go_quote(&i.version))),
            _ => Ok(None),
        };
        Judge {
            resolver,
            outcome,
            walk,
            successors,
            selected: BTreeSet::new(),
        }
    }

    fn all(
        mut self,
        catalogs: &[&CatalogInfo],
        readable: &BTreeMap<String, Arc<PackageContent>>,
    ) -> Vec<Candidate> {
        let all: Vec<CatalogInfo> = catalogs.iter().map(|c| (*c).clone()).collect();
        self.selected = self
            .resolver
            .catalogs_to_search(&all)
            .into_iter()
            .map(|c| c.name.clone())
            .collect();
        let mut out = Vec::new();
        for c in catalogs {
            if let Some(content) = readable.get(&c.name) {
                out.extend(self.catalog(c, content));
            }
        }
        out
    }

    fn fate(&self, catalog: &CatalogInfo) -> Fate<'_> {
        if !self.selected.contains(&catalog.name) {
            return Fate::NotSelected(if catalog.available {
                format!(
                    "Catalog {} is not selected by the catalog selector, so it is not searched.",
                    go_quote(&catalog.name)
                )
            } else {
                format!(
                    "Catalog {} is unavailable (availabilityMode Unavailable), so it is not searched.",
                    go_quote(&catalog.name)
                )
            });
        }
        if let Some(p) = self
            .walk
            .passed_over
            .iter()
            .find(|p| p.catalog == catalog.name)
        {
            return Fate::PassedOver {
                preferred: &p.preferred,
            };
        }
        if let Some(winner) = self.walk.picks.first()
            && self
                .walk
                .outranked
                .iter()
                .any(|p| p.catalog == catalog.name)
        {
            return Fate::Outranked {
                priority: catalog.priority,
                winner: &winner.catalog,
                top: winner.priority,
            };
        }
        if let Err(ResolveError::Ambiguous(f)) = self.outcome
            && f.catalogs.contains(&catalog.name)
        {
            let top = self.walk.picks.iter().map(|p| p.priority).max();
            return Fate::Ambiguous {
                priority: catalog.priority,
                top: top.unwrap_or(catalog.priority),
                tied: &f.catalogs,
            };
        }
        Fate::Plain
    }

    fn catalog(&self, catalog: &CatalogInfo, content: &PackageContent) -> Vec<Candidate> {
        let successors = self.successors.as_ref().ok().and_then(Option::as_ref);
        let rules = self.resolver.rules(successors);
        let verdicts = rules.verdicts(content);
        let ranked = rules.candidates(content);
        let best = ranked.first().map(|b| &content.bundles()[b.index]);
        let best_deprecated = ranked.first().is_some_and(|b| b.deprecated);
        let fate = self.fate(catalog);
        let chosen = self
            .outcome
            .as_ref()
            .ok()
            .filter(|r| r.catalog == catalog.name)
            .map(|r| r.bundle.name.as_str());
        verdicts
            .iter()
            .map(|v| {
                let b = &content.bundles()[v.index];
                let mut c = candidate(&catalog.name, b, content);
                c.chosen = chosen == Some(b.bundle.name.as_str());
                if !c.chosen {
                    c.reasons =
                        self.reasons(catalog, &rules, content, v, b, &fate, best, best_deprecated);
                }
                c
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn reasons(
        &self,
        catalog: &CatalogInfo,
        rules: &CandidateRules<'_>,
        content: &PackageContent,
        v: &Verdict,
        b: &BundleContent,
        fate: &Fate<'_>,
        best: Option<&BundleContent>,
        best_deprecated: bool,
    ) -> Vec<Reason> {
        let mut reasons = Vec::new();
        let mut push = |code, message: String| reasons.push(Reason { code, message });
        let name = &b.bundle.name;
        let cat = go_quote(&catalog.name);
        let version = b.version.as_ref().ok();
        let shown = version.map_or_else(|| "(unreadable)".to_owned(), ToString::to_string);
        if let Fate::NotSelected(why) = fate {
            push(ReasonCode::CatalogNotSelected, why.clone());
        }
        if !v.in_channels {
            push(
                ReasonCode::NotInRequestedChannel,
                format!(
                    "Bundle {} is not an entry of the requested channels [{}].",
                    go_quote(name),
                    rules.channels.join(" ")
                ),
            );
        }
        if !v.in_range {
            let range = rules.range.map(|r| r.as_str()).unwrap_or_default();
            push(
                ReasonCode::OutsideVersionRange,
                match &b.version {
                    Ok(version) => format!(
                        "Version {version} is outside the requested version range {}.",
                        go_quote(range)
                    ),
                    Err(e) => format!(
                        "The bundle's version cannot be read ({e}), so it cannot match the requested version range {}.",
                        go_quote(range)
                    ),
                },
            );
        }
        let mut successor_ok = true;
        match (&self.successors, v.successor) {
            (Err(why), _) => {
                successor_ok = false;
                push(
                    ReasonCode::NotASuccessor,
                    format!(
                        "The installed version {why} cannot be read, so no bundle can be checked for an upgrade edge (replaces, skips, skipRange) from it."
                    ),
                );
            }
            (Ok(Some(s)), Some(sv)) if !sv.edge && !sv.stays => {
                successor_ok = false;
                push(
                    ReasonCode::NotASuccessor,
                    not_a_successor(s, rules, content, name, &shown),
                );
            }
            _ => {}
        }
        let selected = !matches!(fate, Fate::NotSelected(_));
        let eligible = v.eligible() && successor_ok && selected;
        let mut deprecation_told = false;
        if eligible {
            // Within the catalog: did a better-ranked bundle win?
            if let Some(best) = best.filter(|best| best.bundle.name != *name) {
                let best_version = best.version.as_ref().ok();
                let higher = compare_optional(version, best_version) == Ordering::Greater;
                let best_shown =
                    best_version.map_or_else(|| "(unreadable)".to_owned(), ToString::to_string);
                if v.deprecated && !best_deprecated && higher {
                    deprecation_told = true;
                    push(
                        ReasonCode::Deprecated,
                        format!(
                            "Bundle {} is deprecated in catalog {cat}, so the non-deprecated bundle {} ranks first although its version {best_shown} is lower than {shown}.",
                            go_quote(name),
                            go_quote(&best.bundle.name)
                        ),
                    );
                } else if v.successor.is_some_and(|s| s.stays && !s.edge) {
                    push(
                        ReasonCode::SameVersionInstalled,
                        format!(
                            "Version {shown} is the installed version, which stays eligible, but bundle {} (version {best_shown}) in catalog {cat} ranks higher.",
                            go_quote(&best.bundle.name)
                        ),
                    );
                } else if compare_optional(version, best_version) == Ordering::Equal {
                    push(
                        ReasonCode::HigherVersionChosen,
                        format!(
                            "Version {shown} is eligible but bundle {} has the same version and comes first in catalog {cat}.",
                            go_quote(&best.bundle.name)
                        ),
                    );
                } else {
                    push(
                        ReasonCode::HigherVersionChosen,
                        format!(
                            "Version {shown} is eligible but bundle {} in catalog {cat} has the higher version {best_shown}.",
                            go_quote(&best.bundle.name)
                        ),
                    );
                }
            }
            match fate {
                Fate::PassedOver { preferred }
                    if best.is_some_and(|best| best.bundle.name == *name) =>
                {
                    deprecation_told = true;
                    push(
                        ReasonCode::Deprecated,
                        format!(
                            "Bundle {} is deprecated in catalog {cat} and catalog {} offers a non-deprecated bundle, which is preferred.",
                            go_quote(name),
                            go_quote(preferred)
                        ),
                    );
                }
                Fate::Outranked {
                    priority,
                    winner,
                    top,
                } => push(
                    ReasonCode::LowerCatalogPriority,
                    format!(
                        "Catalog {cat} has priority {priority}, lower than the priority {top} of catalog {}, which supplied the chosen bundle.",
                        go_quote(winner)
                    ),
                ),
                Fate::Ambiguous {
                    priority,
                    top,
                    tied,
                } => push(
                    ReasonCode::LowerCatalogPriority,
                    if priority < top {
                        format!(
                            "Catalog {cat} has priority {priority}, lower than {top}, and the catalogs offering a bundle [{}] share the highest priority, so none is chosen.",
                            tied.join(" ")
                        )
                    } else {
                        format!(
                            "Catalog {cat} shares the highest priority {top} with another catalog offering a bundle (of [{}]), so none is chosen.",
                            tied.join(" ")
                        )
                    },
                ),
                _ => {}
            }
        }
        if v.deprecated && !deprecation_told {
            push(
                ReasonCode::Deprecated,
                format!(
                    "Bundle {} is deprecated in catalog {cat}; deprecated bundles stay eligible but rank after the others.",
                    go_quote(name)
                ),
            );
        }
        // Only informational reasons (or none): the bundle lost for a reason outside the rules.
        if reasons.iter().all(|r| r.code == ReasonCode::Deprecated) && !deprecation_told {
            let message = match self.outcome {
                Err(e) => format!("The bundle is eligible but the resolution failed: {e}."),
                Ok(r) => format!(
                    "The bundle is eligible but bundle {} from catalog {} was chosen.",
                    go_quote(&r.bundle.name),
                    go_quote(&r.catalog)
                ),
            };
            reasons.push(Reason {
                code: ReasonCode::ResolutionFailed,
                message,
            });
        }
        reasons
    }
}

/// The `NotASuccessor` sentence: the installed bundle, the edges looked for, and the edges the
/// bundle's visible entries do declare.
fn not_a_successor(
    s: &Successors,
    rules: &CandidateRules<'_>,
    content: &PackageContent,
    name: &str,
    shown: &str,
) -> String {
    let mut declared = Vec::new();
    for ch in rules.visible_channels(content) {
        for e in ch.channel.entries.iter().filter(|e| e.name == name) {
            if let Some(r) = e.replaces.as_deref().filter(|r| !r.is_empty()) {
                declared.push(format!("replaces {r} in {}", ch.channel.name));
            }
            if !e.skips.is_empty() {
                declared.push(format!(
                    "skips {} in {}",
                    e.skips.join(","),
                    ch.channel.name
                ));
            }
            if let Some(r) = &e.skip_range {
                declared.push(format!("skipRange {r} in {}", ch.channel.name));
            }
        }
    }
    let declared = if declared.is_empty() {
        "it declares no edges there".to_owned()
    } else {
        format!("it declares {}", declared.join("; "))
    };
    let installed = s.version_release();
    format!(
        "No entry of bundle {} in {} replaces or skips the installed bundle {} or has a skipRange covering {installed}, and version {shown} is not the installed one ({declared}).",
        go_quote(name),
        if rules.channels.is_empty() {
            "any channel".to_owned()
        } else {
            format!("channels [{}]", rules.channels.join(" "))
        },
        go_quote(s.name()),
    )
}

/// Resolves again from each chosen bundle as if it were installed, until the answer stays put.
fn upgrade_path(
    filter: &CatalogFilter,
    installed: &InstalledBundle,
    first: &Result<Resolution, ResolveError>,
    catalogs: &[CatalogInfo],
    contents: &Contents,
) -> Vec<String> {
    let mut path = vec![installed.name.clone()];
    let mut next = match first {
        Ok(r) => Some((r.bundle.name.clone(), r.status_version())),
        Err(_) => None,
    };
    // A path visits each bundle at most once; the bound only guards against a cycle of
    // deprecated bundles.
    while let Some((name, version)) = next.take() {
        if path.contains(&name) {
            break;
        }
        path.push(name.clone());
        let from = InstalledBundle {
            name,
            version,
            release: None,
        };
        let Ok(resolver) = Resolver::new(filter, Some(&from)) else {
            break;
        };
        if let (_, Ok(r)) = resolver.walk_fetched(fetched(&resolver, catalogs, contents)) {
            next = Some((r.bundle.name.clone(), r.status_version()));
        }
    }
    path
}

/// How [`Explanation::graph`] writes the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

/// One upgrade edge of the graph: from a bundle to the entry that upgrades it.
struct GraphEdge {
    from: String,
    to: String,
    kind: &'static str,
}

impl Explanation {
    /// The package's upgrade graph: one node per bundle (per catalog), edges for replaces, skips
    /// and skipRange grouped by channel, the installed, chosen and rejected bundles marked.
    pub fn graph(&self, format: GraphFormat) -> String {
        let mut ids: BTreeMap<(String, String), String> = BTreeMap::new();
        let mut node_id = |catalog: &str, name: &str| -> String {
            let n = ids.len();
            ids.entry((catalog.to_owned(), name.to_owned()))
                .or_insert_with(|| format!("n{n}"))
                .clone()
        };
        // Nodes: every candidate, in table order, then referenced names that are no bundle.
        let mut nodes: Vec<(String, String, String, &'static str)> = Vec::new(); // id, label, catalog/channel group, class
        let installed = self.installed.as_ref().map(|i| i.name.as_str());
        let mut group_of: BTreeMap<(String, String), String> = BTreeMap::new();
        for (catalog, content) in &self.content {
            for ch in content.channels() {
                for e in &ch.channel.entries {
                    group_of
                        .entry((catalog.clone(), e.name.clone()))
                        .or_insert_with(|| format!("{catalog}/{}", ch.channel.name));
                }
            }
        }
        for c in &self.candidates {
            let id = node_id(&c.catalog, &c.name);
            let class = if c.chosen {
                "chosen"
            } else if installed == Some(c.name.as_str()) {
                "installed"
            } else {
                "rejected"
            };
            let mut label = format!("{} {}", c.name, c.version);
            if installed == Some(c.name.as_str()) {
                label.push_str(" (installed)");
            }
            if !c.reasons.is_empty() {
                let codes: BTreeSet<&str> = c.reasons.iter().map(|r| r.code.as_str()).collect();
                let codes: Vec<&str> = codes.into_iter().collect();
                let _ = write!(label, " [{}]", codes.join(","));
            }
            let group = group_of
                .get(&(c.catalog.clone(), c.name.clone()))
                .cloned()
                .unwrap_or_else(|| format!("{}/(no channel)", c.catalog));
            nodes.push((id, label, group, class));
        }
        let mut edges: BTreeMap<String, Vec<GraphEdge>> = BTreeMap::new();
        for (catalog, content) in &self.content {
            let bundles: Vec<(&str, Option<Successors>)> = content
                .bundles()
                .iter()
                .map(|b| {
                    let s = b.version.as_ref().ok().and_then(|v| {
                        Successors::new(&InstalledBundle {
                            name: b.bundle.name.clone(),
                            version: v.to_string(),
                            release: None,
                        })
                        .ok()
                    });
                    (b.bundle.name.as_str(), s)
                })
                .collect();
            for ch in content.channels() {
                let group = format!("{catalog}/{}", ch.channel.name);
                let list = edges.entry(group).or_default();
                for (e, range) in ch.channel.entries.iter().zip(&ch.skip_ranges) {
                    let to = node_id(catalog, &e.name);
                    if let Some(r) = e.replaces.as_deref().filter(|r| !r.is_empty()) {
                        list.push(GraphEdge {
                            from: node_id(catalog, r),
                            to: to.clone(),
                            kind: "replaces",
                        });
                    }
                    for s in &e.skips {
                        list.push(GraphEdge {
                            from: node_id(catalog, s),
                            to: to.clone(),
                            kind: "skips",
                        });
                    }
                    if range.is_some() {
                        for (name, s) in &bundles {
                            if *name != e.name
                                && s.as_ref()
                                    .is_some_and(|s| s.edges(e, range.as_ref()).skip_range)
                            {
                                list.push(GraphEdge {
                                    from: node_id(catalog, name),
                                    to: to.clone(),
                                    kind: "skipRange",
                                });
                            }
                        }
                    }
                }
            }
        }
        // Names referenced by edges that are no bundle of the catalog.
        let known: BTreeSet<String> = nodes.iter().map(|n| n.0.clone()).collect();
        for ((catalog, name), id) in &ids {
            if !known.contains(id) {
                nodes.push((
                    id.clone(),
                    format!("{name} (not in catalog)"),
                    format!("{catalog}/(referenced)"),
                    "missing",
                ));
            }
        }
        let mut groups: BTreeMap<&str, Vec<&(String, String, String, &'static str)>> =
            BTreeMap::new();
        for n in &nodes {
            groups.entry(n.2.as_str()).or_default().push(n);
        }
        let mut out = String::new();
        match format {
            GraphFormat::Mermaid => {
                let _ = writeln!(out, "flowchart LR");
                for (i, (group, members)) in groups.iter().enumerate() {
                    let _ = writeln!(out, "  subgraph g{i}[\"{}\"]", mermaid_text(group));
                    for (id, label, _, class) in members {
                        let _ = writeln!(out, "    {id}[\"{}\"]:::{class}", mermaid_text(label));
                    }
                    let _ = writeln!(out, "  end");
                }
                for (group, list) in &edges {
                    if list.is_empty() {
                        continue;
                    }
                    let _ = writeln!(out, "  %% channel {group}");
                    for e in list {
                        let _ = writeln!(out, "  {} -->|{}| {}", e.from, e.kind, e.to);
                    }
                }
                let _ = writeln!(
                    out,
                    "  classDef chosen fill:#c8f7c5,stroke:#2e7d32,stroke-width:3px"
                );
                let _ = writeln!(
                    out,
                    "  classDef installed fill:#cfe3ff,stroke:#1565c0,stroke-width:3px"
                );
                let _ = writeln!(out, "  classDef rejected fill:#eeeeee,stroke:#9e9e9e");
                let _ = writeln!(
                    out,
                    "  classDef missing fill:#ffffff,stroke:#9e9e9e,stroke-dasharray:4"
                );
            }
            GraphFormat::Dot => {
                let _ = writeln!(out, "digraph {} {{", dot_text(&self.package));
                let _ = writeln!(out, "  rankdir=LR;");
                let _ = writeln!(
                    out,
                    "  node [shape=box, style=filled, fillcolor=\"#eeeeee\"];"
                );
                for (i, (group, members)) in groups.iter().enumerate() {
                    let _ = writeln!(out, "  subgraph cluster_{i} {{");
                    let _ = writeln!(out, "    label={};", dot_text(group));
                    for (id, label, _, class) in members {
                        let style = match *class {
                            "chosen" => ", fillcolor=\"#c8f7c5\", penwidth=3",
                            "installed" => ", fillcolor=\"#cfe3ff\", penwidth=3",
                            "missing" => ", fillcolor=\"#ffffff\", style=\"dashed\"",
                            _ => "",
                        };
                        let _ = writeln!(out, "    {id} [label={}{style}];", dot_text(label));
                    }
                    let _ = writeln!(out, "  }}");
                }
                for (group, list) in &edges {
                    if list.is_empty() {
                        continue;
                    }
                    let _ = writeln!(out, "  // channel {group}");
                    for e in list {
                        let _ = writeln!(
                            out,
                            "  {} -> {} [label={}];",
                            e.from,
                            e.to,
                            dot_text(&format!("{} ({group})", e.kind))
                        );
                    }
                }
                let _ = writeln!(out, "}}");
            }
        }
        out
    }
}

fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;")
}

fn dot_text(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests;
