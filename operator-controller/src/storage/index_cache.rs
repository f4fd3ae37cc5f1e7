//! Release histories answered without a request: a metadata-only watch of the index Secrets in
//! the system namespace, and the histories this process last read or wrote, each with the
//! resourceVersion of every index Secret it was built from.
//!
//! Input: the watch's events, and what [`super::ReleaseStore`] lists, decodes and writes.
//! Output: a [`History`] when the watch shows exactly the index Secrets (names and
//! resourceVersions) the kept history was built from; `None` otherwise, and the store lists.
//! Network: one watch (`owner=operator-controller,type=index`, field selector
//! `type=operatorframework.io/index.v1`), metadata only.
//!
//! Read-your-writes: a write updates the kept history with the Secret the API server returned,
//! decoded as a list would decode it. Until the watch has delivered that write (same
//! resourceVersion), the two differ and the store lists. Any write by someone else changes a
//! resourceVersion the watch then shows, and the next read lists too.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use olm_operator_core::release::StoredRelease;
use olm_operator_core::release::secrets;
use olm_runtime::shutdown::CancellationToken;

use super::History;

/// Index Secret name → resourceVersion.
type Versions = BTreeMap<String, String>;

/// See the module documentation. Cheap to clone.
#[derive(Clone)]
pub struct IndexCache {
    watched: Store<PartialObjectMeta<Secret>>,
    /// Set once the watch has listed.
    synced: Arc<AtomicBool>,
    kept: Arc<Mutex<HashMap<String, Kept>>>,
}

/// A history as last read or written, and the index Secrets it was built from.
struct Kept {
    versions: Versions,
    history: History,
}

impl IndexCache {
    /// The cache and the watch that fills it (run it until `stop`; it resumes with backoff
    /// when interrupted).
    pub fn watch(
        client: kube::Client,
        namespace: &str,
        stop: CancellationToken,
    ) -> (IndexCache, impl Future<Output = ()> + Send + 'static) {
        let (cache, writer) = IndexCache::new();
        let api: Api<PartialObjectMeta<Secret>> = Api::namespaced(client, namespace);
        let config = watcher::Config::default()
            .labels(&format!("owner={},type=index", secrets::OWNER))
            .fields(&secrets::index_field_selector());
        let synced = cache.synced.clone();
        let task = async move {
            let events =
                reflector::reflector(writer, watcher::watcher(api, config)).default_backoff();
            let mut events = std::pin::pin!(events);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    event = events.next() => match event {
                        None => return,
                        Some(Err(e)) => {
                            tracing::debug!(error = %e, "release index watch interrupted; it resumes");
                        }
                        Some(Ok(watcher::Event::InitDone)) => synced.store(true, Ordering::Release),
                        Some(Ok(_)) => {}
                    },
                }
            }
        };
        (cache, task)
    }

    fn new() -> (
        IndexCache,
        reflector::store::Writer<PartialObjectMeta<Secret>>,
    ) {
        let (watched, writer) = reflector::store();
        let cache = IndexCache {
            watched,
            synced: Arc::new(AtomicBool::new(false)),
            kept: Arc::default(),
        };
        (cache, writer)
    }

    /// The history of release `name` when the watch shows exactly the index Secrets it was
    /// built from (none kept and none watched: no records).
    pub(super) fn history(&self, name: &str) -> Option<History> {
        if !self.synced.load(Ordering::Acquire) {
            return None;
        }
        let watched = self.watched_versions(name);
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        match kept.get(name) {
            Some(kept) if kept.versions == watched => Some(kept.history.copy()),
            // No records: kept as such, so that the first write updates it.
            None if watched.is_empty() => {
                kept.insert(
                    name.to_owned(),
                    Kept {
                        versions: Versions::new(),
                        history: History::default(),
                    },
                );
                Some(History::default())
            }
            _ => None,
        }
    }

    /// Keeps `history`, read from the index Secrets `versions`. A history with damaged records
    /// is not kept: it is listed again each time, as before.
    pub(super) fn listed(&self, name: &str, versions: Versions, history: &History) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if history.damaged.is_empty() {
            kept.insert(
                name.to_owned(),
                Kept {
                    versions,
                    history: history.copy(),
                },
            );
        } else {
            kept.remove(name);
        }
    }

    /// A record was created or replaced: `stored` decoded from what the API server returned,
    /// at `resource_version`. Without a kept history (or with `stored` undecodable) the next
    /// read lists.
    pub(super) fn wrote(
        &self,
        name: &str,
        resource_version: Option<&str>,
        stored: Option<StoredRelease>,
    ) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let (Some(entry), Some(resource_version), Some(stored)) =
            (kept.get_mut(name), resource_version, stored)
        else {
            // Nothing known to update exactly: forget, so the next read lists.
            kept.remove(name);
            return;
        };
        let version = stored.release.version;
        let status = stored
            .index_labels
            .get("status")
            .cloned()
            .unwrap_or_default();
        entry
            .versions
            .insert(stored.index_name.clone(), resource_version.to_owned());
        let history = &mut entry.history;
        history.records.retain(|(v, _)| *v != version);
        history.records.push((version, status));
        history.records.sort_by_key(|(v, _)| *v);
        history.releases.retain(|r| r.release.version != version);
        history.releases.push(stored);
        history.releases.sort_by_key(|r| r.release.version);
    }

    /// The record `key` (its index Secret) was deleted.
    pub(super) fn deleted(&self, key: &str) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        for (name, entry) in kept.iter_mut() {
            if entry.versions.remove(key).is_some() {
                entry
                    .history
                    .records
                    .retain(|(v, _)| secrets::release_key(name, *v) != key);
                entry.history.releases.retain(|r| r.index_name != key);
            }
        }
    }

    /// Forgets release `name` (every record deleted, or a write that failed part way).
    pub(super) fn forget(&self, name: &str) {
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
    }

    fn watched_versions(&self, name: &str) -> Versions {
        self.watched
            .state()
            .iter()
            .filter(|secret| {
                secret
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get("name"))
                    .is_some_and(|n| n == name)
            })
            .filter_map(|secret| {
                Some((
                    secret.metadata.name.clone()?,
                    secret.metadata.resource_version.clone().unwrap_or_default(),
                ))
            })
            .collect()
    }
}

impl History {
    /// A copy of a history without damaged records (those are never kept).
    fn copy(&self) -> History {
        History {
            releases: self.releases.clone(),
            damaged: Vec::new(),
            records: self.records.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::api::ObjectMeta;
    use olm_operator_core::release::Release;

    use super::*;

    fn index(name: &str, version: i64, resource_version: &str) -> PartialObjectMeta<Secret> {
        PartialObjectMeta {
            metadata: ObjectMeta {
                name: Some(secrets::release_key(name, version)),
                resource_version: Some(resource_version.to_owned()),
                labels: Some(BTreeMap::from([
                    ("name".to_owned(), name.to_owned()),
                    ("owner".to_owned(), secrets::OWNER.to_owned()),
                    ("type".to_owned(), "index".to_owned()),
                ])),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn stored(name: &str, version: i64, status: &str) -> StoredRelease {
        StoredRelease {
            release: Release {
                name: name.to_owned(),
                version,
                ..Default::default()
            },
            index_name: secrets::release_key(name, version),
            index_labels: BTreeMap::from([("status".to_owned(), status.to_owned())]),
            secret_names: vec![secrets::release_key(name, version)],
        }
    }

    fn synced() -> (
        IndexCache,
        reflector::store::Writer<PartialObjectMeta<Secret>>,
    ) {
        let (cache, mut writer) = IndexCache::new();
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitDone);
        cache.synced.store(true, Ordering::Release);
        (cache, writer)
    }

    fn versions(history: &History) -> Vec<(i64, String)> {
        history.records.clone()
    }

    #[test]
    fn nothing_is_answered_before_the_watch_has_listed() {
        let (cache, _writer) = IndexCache::new();
        assert!(cache.history("e").is_none());
    }

    #[test]
    fn a_write_is_answered_only_once_the_watch_shows_it_at_the_written_resource_version() {
        let (cache, mut writer) = synced();
        // No records anywhere: an empty history, no list.
        assert_eq!(cache.history("e").map(|h| h.records.len()), Some(0));

        cache.wrote("e", Some("10"), Some(stored("e", 1, "pending-install")));
        // The watch has not delivered the create yet: the store must list.
        assert!(cache.history("e").is_none());
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "10")));
        let history = cache.history("e").unwrap();
        assert_eq!(versions(&history), [(1, "pending-install".to_owned())]);

        // The update to deployed: answered once the watch shows the replace.
        cache.wrote("e", Some("11"), Some(stored("e", 1, "deployed")));
        assert!(cache.history("e").is_none());
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "11")));
        let history = cache.history("e").unwrap();
        assert_eq!(versions(&history), [(1, "deployed".to_owned())]);
        assert_eq!(history.releases.len(), 1);
        assert_eq!(history.releases[0].index_labels["status"], "deployed");
    }

    #[test]
    fn a_change_by_anyone_else_makes_the_store_list_again() {
        let (cache, mut writer) = synced();
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "10")));
        // Records this process never read: listed.
        assert!(cache.history("e").is_none());
        let mut listed = History::default();
        listed.records.push((1, "deployed".to_owned()));
        listed.releases.push(stored("e", 1, "deployed"));
        let versions_listed = Versions::from([(secrets::release_key("e", 1), "10".to_owned())]);
        cache.listed("e", versions_listed, &listed);
        assert!(cache.history("e").is_some());

        // Someone else rewrites the record, or adds one: listed again.
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "12")));
        assert!(cache.history("e").is_none());
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "10")));
        assert!(cache.history("e").is_some());
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 2, "13")));
        assert!(cache.history("e").is_none());
        // Another extension's records do not matter.
        writer.apply_watcher_event(&watcher::Event::Delete(index("e", 2, "13")));
        writer.apply_watcher_event(&watcher::Event::Apply(index("other", 1, "14")));
        assert!(cache.history("e").is_some());
    }

    #[test]
    fn a_delete_is_answered_once_the_watch_shows_the_record_gone_and_a_failed_write_forgets() {
        let (cache, mut writer) = synced();
        assert!(cache.history("e").is_some());
        cache.wrote("e", Some("10"), Some(stored("e", 1, "superseded")));
        cache.wrote("e", Some("11"), Some(stored("e", 2, "deployed")));
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "10")));
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 2, "11")));
        assert_eq!(cache.history("e").unwrap().records.len(), 2);

        cache.deleted(&secrets::release_key("e", 1));
        assert!(cache.history("e").is_none());
        writer.apply_watcher_event(&watcher::Event::Delete(index("e", 1, "10")));
        let history = cache.history("e").unwrap();
        assert_eq!(versions(&history), [(2, "deployed".to_owned())]);

        // A write whose result is not known exactly (not decodable): forgotten, listed next.
        cache.wrote("e", Some("15"), None);
        assert!(cache.history("e").is_none());
        // A history with damaged records is never kept.
        let mut damaged = History::default();
        damaged.damaged.push((
            "x".to_owned(),
            secrets::DecodeError::MissingIndexChunk("x".to_owned()),
        ));
        cache.listed("e", Versions::new(), &damaged);
        writer.apply_watcher_event(&watcher::Event::Delete(index("e", 2, "11")));
        assert!(cache.history("e").is_some_and(|h| h.records.is_empty()));
    }
}
