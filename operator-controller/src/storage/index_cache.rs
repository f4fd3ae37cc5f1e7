//! Release records answered without a request: a metadata-only watch of the index Secrets in
//! the system namespace, and the records this process last listed or wrote, each with the
//! resourceVersion of every index Secret.
//!
//! Input: the watch's events, and what [`super::ReleaseStore`] lists and writes. Output: the
//! stored Secrets of a release's records when the watch shows exactly the index Secrets
//! (names and resourceVersions) they were read or written as; `None` otherwise, and the store
//! lists. The Secrets are kept as stored (gzip-compressed releases) and decoded on each read,
//! as a listed record is: a decoded history of 1,000 extensions cost 20 MiB more at the peak.
//! Network: one watch (`owner=operator-controller,type=index`, field selector
//! `type=operatorframework.io/index.v1`), metadata only.
//!
//! Read-your-writes: a write replaces the kept record with the Secrets the API server
//! returned. Until the watch has delivered that write (same resourceVersion), the two differ
//! and the store lists. Any write by someone else changes a resourceVersion the watch then
//! shows, and the next read lists too.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use olm_operator_core::release::secrets;
use olm_runtime::shutdown::CancellationToken;

use crate::lean_watch::without_managed_fields;

/// Index Secret name → resourceVersion.
pub(super) type Versions = BTreeMap<String, String>;

/// A release's kept records, by index Secret name.
type Records = BTreeMap<String, Arc<RawRecord>>;

/// One record as stored: its index Secret and its chunk Secrets (without managedFields).
#[derive(Clone, Debug)]
pub(super) struct RawRecord {
    pub(super) index: Secret,
    pub(super) chunks: Vec<Secret>,
}

impl RawRecord {
    pub(super) fn new(mut index: Secret, mut chunks: Vec<Secret>) -> RawRecord {
        index.metadata.managed_fields = None;
        for chunk in &mut chunks {
            chunk.metadata.managed_fields = None;
        }
        RawRecord { index, chunks }
    }

    /// A label of the index Secret.
    fn label(&self, key: &str) -> Option<&str> {
        self.index
            .metadata
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    /// The release version its index Secret's `version` label gives (0 when absent or not a
    /// number, as Helm reads it).
    pub(super) fn version(&self) -> i64 {
        self.label("version")
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or_default()
    }

    /// Its index Secret's `status` label (`deployed`, `superseded`, ...), empty when absent.
    pub(super) fn status(&self) -> &str {
        self.label("status").unwrap_or_default()
    }

    fn name(&self) -> &str {
        self.index.metadata.name.as_deref().unwrap_or_default()
    }

    fn resource_version(&self) -> &str {
        self.index
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default()
    }
}

/// See the module documentation. Cheap to clone.
#[derive(Clone)]
pub struct IndexCache {
    watched: Store<PartialObjectMeta<Secret>>,
    /// Set once the watch has listed.
    synced: Arc<AtomicBool>,
    /// Release name → its records, by index Secret name.
    kept: Arc<Mutex<HashMap<String, Records>>>,
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
            let events = reflector::reflector(
                writer,
                without_managed_fields(watcher::watcher(api, config)),
            )
            .default_backoff();
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

    /// The records of release `name` when the watch shows exactly the index Secrets they were
    /// read or written as (none kept and none watched: no records).
    pub(super) fn records(&self, name: &str) -> Option<Vec<Arc<RawRecord>>> {
        if !self.synced.load(Ordering::Acquire) {
            return None;
        }
        let watched = self.watched_versions(name);
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        match kept.get(name) {
            Some(records) => {
                let same = records.len() == watched.len()
                    && records.iter().all(|(key, r)| {
                        watched.get(key).map(String::as_str) == Some(r.resource_version())
                    });
                same.then(|| records.values().cloned().collect())
            }
            // No records: kept as such, so that the first write adds to it.
            None if watched.is_empty() => {
                kept.insert(name.to_owned(), BTreeMap::new());
                Some(Vec::new())
            }
            None => None,
        }
    }

    /// Keeps the records of release `name` as just listed.
    pub(super) fn listed(&self, name: &str, records: Vec<RawRecord>) {
        let records = records
            .into_iter()
            .map(|r| (r.name().to_owned(), Arc::new(r)))
            .collect();
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_owned(), records);
    }

    /// A record of release `name` was created or replaced: `record` as the API server returned
    /// it. Without kept records the next read lists anyway.
    pub(super) fn wrote(&self, name: &str, record: RawRecord) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(records) = kept.get_mut(name) {
            records.insert(record.name().to_owned(), Arc::new(record));
        }
    }

    /// The record `key` (its index Secret) was deleted, or its delete was attempted.
    pub(super) fn deleted(&self, key: &str) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        for records in kept.values_mut() {
            records.remove(key);
        }
    }

    /// Forgets release `name` (a write that failed part way): the next read lists.
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::api::ObjectMeta;

    use super::*;

    fn meta(name: &str, version: i64, resource_version: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(secrets::release_key(name, version)),
            resource_version: Some(resource_version.to_owned()),
            labels: Some(BTreeMap::from([
                ("name".to_owned(), name.to_owned()),
                ("owner".to_owned(), secrets::OWNER.to_owned()),
                ("type".to_owned(), "index".to_owned()),
            ])),
            ..Default::default()
        }
    }

    fn index(name: &str, version: i64, resource_version: &str) -> PartialObjectMeta<Secret> {
        PartialObjectMeta {
            metadata: meta(name, version, resource_version),
            ..Default::default()
        }
    }

    fn record(name: &str, version: i64, resource_version: &str) -> RawRecord {
        RawRecord::new(
            Secret {
                metadata: meta(name, version, resource_version),
                ..Default::default()
            },
            Vec::new(),
        )
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

    fn versions(records: Option<Vec<Arc<RawRecord>>>) -> Option<Vec<(String, String)>> {
        records.map(|records| {
            records
                .iter()
                .map(|r| (r.name().to_owned(), r.resource_version().to_owned()))
                .collect()
        })
    }

    fn v(key: &str, rv: &str) -> (String, String) {
        (key.to_owned(), rv.to_owned())
    }

    #[test]
    fn a_records_version_and_status_come_from_its_index_labels_as_helm_reads_them() {
        let mut deployed = record("e", 3, "1");
        let labels = deployed.index.metadata.labels.get_or_insert_default();
        labels.insert("version".to_owned(), "3".to_owned());
        labels.insert("status".to_owned(), "deployed".to_owned());
        assert_eq!((deployed.version(), deployed.status()), (3, "deployed"));

        // Not Helm's: no labels to read, so version 0 and no status.
        let mut foreign = record("e", 4, "2");
        foreign.index.metadata.labels =
            Some(BTreeMap::from([("version".to_owned(), "four".to_owned())]));
        assert_eq!((foreign.version(), foreign.status()), (0, ""));
    }

    #[test]
    fn nothing_is_answered_before_the_watch_has_listed() {
        let (cache, _writer) = IndexCache::new();
        assert!(cache.records("e").is_none());
    }

    #[test]
    fn a_write_is_answered_only_once_the_watch_shows_it_at_the_written_resource_version() {
        let (cache, mut writer) = synced();
        // No records anywhere: none, without a list.
        assert_eq!(versions(cache.records("e")), Some(vec![]));

        cache.wrote("e", record("e", 1, "10"));
        // The watch has not delivered the create yet: the store must list.
        assert!(cache.records("e").is_none());
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "10")));
        assert_eq!(
            versions(cache.records("e")),
            Some(vec![v("sh.helm.release.v1.e.v1", "10")])
        );

        // The update to deployed: answered once the watch shows the replace.
        cache.wrote("e", record("e", 1, "11"));
        assert!(cache.records("e").is_none());
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "11")));
        assert_eq!(
            versions(cache.records("e")),
            Some(vec![v("sh.helm.release.v1.e.v1", "11")])
        );
    }

    #[test]
    fn a_change_by_anyone_else_makes_the_store_list_again() {
        let (cache, mut writer) = synced();
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "10")));
        // Records this process never read: listed.
        assert!(cache.records("e").is_none());
        cache.listed("e", vec![record("e", 1, "10")]);
        assert!(cache.records("e").is_some());

        // Someone else rewrites the record, or adds one: listed again.
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "12")));
        assert!(cache.records("e").is_none());
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "10")));
        assert!(cache.records("e").is_some());
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 2, "13")));
        assert!(cache.records("e").is_none());
        // Another extension's records do not matter.
        writer.apply_watcher_event(&watcher::Event::Delete(index("e", 2, "13")));
        writer.apply_watcher_event(&watcher::Event::Apply(index("other", 1, "14")));
        assert!(cache.records("e").is_some());
    }

    #[test]
    fn a_delete_is_answered_once_the_watch_shows_the_record_gone_and_a_failed_write_forgets() {
        let (cache, mut writer) = synced();
        assert!(cache.records("e").is_some());
        cache.wrote("e", record("e", 1, "10"));
        cache.wrote("e", record("e", 2, "11"));
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 1, "10")));
        writer.apply_watcher_event(&watcher::Event::Apply(index("e", 2, "11")));
        assert_eq!(cache.records("e").map(|r| r.len()), Some(2));

        cache.deleted(&secrets::release_key("e", 1));
        assert!(cache.records("e").is_none());
        writer.apply_watcher_event(&watcher::Event::Delete(index("e", 1, "10")));
        assert_eq!(
            versions(cache.records("e")),
            Some(vec![v("sh.helm.release.v1.e.v2", "11")])
        );

        cache.forget("e");
        assert!(cache.records("e").is_none());
        // A write to a release with nothing kept is not guessed at: still listed.
        cache.wrote("e", record("e", 2, "11"));
        assert!(cache.records("e").is_none());
    }

    #[test]
    fn kept_records_carry_no_managed_fields() {
        let mut index = Secret {
            metadata: meta("e", 1, "10"),
            ..Default::default()
        };
        index.metadata.managed_fields = Some(vec![Default::default()]);
        let kept = RawRecord::new(index.clone(), vec![index]);
        assert!(kept.index.metadata.managed_fields.is_none());
        assert!(kept.chunks[0].metadata.managed_fields.is_none());
    }
}
