//! Which ClusterExtensions a ClusterCatalog change concerns.
//!
//! Input: a catalog as the resolver sees it before and after a watch event ([`CatalogView`]),
//! the packages the catalog holds at each of its revisions (when known), and the extensions
//! with their package names. Output: the extensions to reconcile again. No IO: the controller
//! watches catalogs and fetches their package lists.
//!
//! Upstream re-queues every ClusterExtension on any catalog creation, deletion or change of its
//! resolved image. Here a change re-queues only the extensions whose package the catalog held
//! before or holds after it (a package that appears, disappears or changes is each covered),
//! and only when something the resolver reads changed:
//!
//! | event | resolver-visible change | packages known before and after | re-queued |
//! |---|---|---|---|
//! | seen during the initial list | – | – | nobody (every extension is reconciled at start anyway) |
//! | created or deleted | yes | yes | extensions of the packages it holds (or held) |
//! | changed: resolved image, serving state, base URL, priority, labels, availability mode | yes | yes | extensions of the packages of the old and new revisions |
//! | changed: anything else (conditions' times, annotations, ...) | no | – | nobody |
//! | any resolver-visible change | yes | a side unknown (content unreachable) | every extension (upstream's behaviour) |

use std::collections::{BTreeMap, BTreeSet};

/// What the resolver reads of a ClusterCatalog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogView {
    pub name: String,
    pub priority: i32,
    pub labels: BTreeMap<String, String>,
    /// `spec.availabilityMode` is `Available`.
    pub available: bool,
    /// `Serving` is True.
    pub serving: bool,
    /// `status.resolvedSource.image.ref`: the revision of the content.
    pub resolved_ref: Option<String>,
    /// `status.urls.base`.
    pub base_url: Option<String>,
}

/// Whether the catalog's change can change a resolution: created, deleted, or any field of
/// [`CatalogView`] changed.
pub fn resolver_visible(before: Option<&CatalogView>, after: Option<&CatalogView>) -> bool {
    before != after
}

/// The packages whose extensions a change concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Affected {
    /// Every extension (a package list could not be read).
    All,
    /// The extensions of these packages.
    Packages(BTreeSet<String>),
}

/// The packages a change concerns: those held before and after. `None` for a side that
/// existed but whose package list is unknown; `Some(empty)` for a side where the catalog did
/// not exist or served nothing.
pub fn affected_packages(
    before: Option<&BTreeSet<String>>,
    after: Option<&BTreeSet<String>>,
) -> Affected {
    match (before, after) {
        (Some(b), Some(a)) => Affected::Packages(b.union(a).cloned().collect()),
        _ => Affected::All,
    }
}

/// The extensions (name, package) to reconcile for `affected`, sorted by name.
pub fn extensions_to_requeue<'a>(
    affected: &Affected,
    extensions: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<String> {
    let mut names: Vec<String> = extensions
        .into_iter()
        .filter(|(_, package)| match affected {
            Affected::All => true,
            Affected::Packages(set) => set.contains(*package),
        })
        .map(|(name, _)| name.to_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(resolved: &str) -> CatalogView {
        CatalogView {
            name: "cat".into(),
            priority: 0,
            labels: BTreeMap::new(),
            available: true,
            serving: true,
            resolved_ref: Some(resolved.into()),
            base_url: Some("https://catalogd/catalogs/cat".into()),
        }
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_changes_the_resolver_reads_count() {
        let a = view("reg/cat@sha256:1");
        assert!(!resolver_visible(Some(&a), Some(&a.clone())));
        assert!(resolver_visible(None, Some(&a)));
        assert!(resolver_visible(Some(&a), None));
        for change in [
            CatalogView {
                resolved_ref: Some("reg/cat@sha256:2".into()),
                ..a.clone()
            },
            CatalogView {
                serving: false,
                ..a.clone()
            },
            CatalogView {
                priority: 5,
                ..a.clone()
            },
            CatalogView {
                available: false,
                ..a.clone()
            },
            CatalogView {
                labels: BTreeMap::from([("k".into(), "v".into())]),
                ..a.clone()
            },
        ] {
            assert!(resolver_visible(Some(&a), Some(&change)), "{change:?}");
        }
    }

    #[test]
    fn a_change_concerns_the_packages_of_both_revisions_or_everyone_when_one_is_unknown() {
        assert_eq!(
            affected_packages(Some(&set(&["a", "b"])), Some(&set(&["b", "c"]))),
            Affected::Packages(set(&["a", "b", "c"]))
        );
        assert_eq!(
            affected_packages(Some(&set(&[])), Some(&set(&["new"]))),
            Affected::Packages(set(&["new"]))
        );
        assert_eq!(affected_packages(None, Some(&set(&["a"]))), Affected::All);
        assert_eq!(affected_packages(Some(&set(&["a"])), None), Affected::All);
    }

    #[test]
    fn only_extensions_of_affected_packages_are_requeued() {
        let extensions = [("e1", "a"), ("e2", "b"), ("e3", "c"), ("e0", "a")];
        assert_eq!(
            extensions_to_requeue(&Affected::Packages(set(&["a", "c"])), extensions),
            ["e0", "e1", "e3"]
        );
        assert_eq!(
            extensions_to_requeue(&Affected::All, extensions),
            ["e0", "e1", "e2", "e3"]
        );
        assert!(extensions_to_requeue(&Affected::Packages(set(&[])), extensions).is_empty());
    }
}
