//! Release records of ClusterExtensions in the system namespace, read and written through the
//! Kubernetes API in upstream's chunked Secret format (`olm_operator_core::release::secrets`).
//!
//! Input: a `kube::Client`, the system namespace, release records. Output: the records stored
//! there, the installed one. Network: the Kubernetes API only, every call bounded by
//! [`ReleaseStore::timeout`]; lists are paged and capped at [`MAX_RECORDS`] records.
//!
//! Queries are upstream's: index Secrets by label selector `name=<ce>,owner=operator-controller,type=index`
//! and field selector `type=operatorframework.io/index.v1`; chunk Secrets by name as the index lists
//! them. The installed release is chosen from the index labels (`status=deployed`, highest
//! `version`) and only that record is decoded, so a damaged old record never hides the installed
//! one. A damaged record is reported, never deleted or rewritten.
//!
//! Writes follow helm-operator-plugins:
//!
//! | operation | steps |
//! |---|---|
//! | create | create the index Secret (owner: the ClusterExtension; `createdAt`), then each chunk Secret (owner: the index). If a chunk cannot be created, the index just created is deleted again (it is ours and unreadable without its chunks). |
//! | update | read the index (not when this store has just written it); replace the index (same `createdAt`, new `modifiedAt`, the read `resourceVersion`, so a concurrent writer gets a conflict and nothing is changed); delete its old chunk Secrets (if it had any); create the new chunks |
//! | delete | delete every Secret labelled with the record's key |
//! | prune | before a create, delete the oldest records until `MAX_HISTORY - 1` remain, never the deployed one |
//!
//! Every create and replace names the field manager `operator-controller` ([`FIELD_MANAGER`]), as
//! upstream's writes of these Secrets are recorded; deletes record nothing.
//!
//! [`scopes`] asks discovery which kinds are namespaced, for rendering a release's manifest.

mod index_cache;
pub mod scopes;

pub use index_cache::IndexCache;
use index_cache::RawRecord;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use olm_operator_core::release::history::{self, MAX_HISTORY};
use olm_operator_core::release::secrets::{self, DecodeError, DecodeLimits, EncodeError, Stamps};
use olm_operator_core::release::{Release, StoredRelease};

/// The field manager of every write of a release Secret (upstream's: its binary's name).
pub const FIELD_MANAGER: &str = olm_operator_core::apply_plan::managed_fields::FIELD_MANAGER;

/// Most index Secrets read for one ClusterExtension. Helm keeps [`MAX_HISTORY`]; anything far
/// beyond that is not a history this controller (or upstream) wrote.
pub const MAX_RECORDS: usize = 100;

/// Page size of list calls (index Secrets are up to 1 MiB each).
const PAGE: u32 = 10;

/// Why the store could not do what was asked. Each names the Secret or query involved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("failed to {action} release secret {name:?} in namespace {namespace:?}: {source}")]
    Api {
        action: &'static str,
        name: String,
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "timed out after {seconds}s trying to {action} release secret {name:?} in namespace {namespace:?}"
    )]
    Timeout {
        action: &'static str,
        name: String,
        namespace: String,
        seconds: u64,
    },
    #[error("failed to read release {name:?}: {source}")]
    Decode {
        name: String,
        #[source]
        source: DecodeError,
    },
    #[error("failed to store release {name:?}: {source}")]
    Encode {
        name: String,
        #[source]
        source: EncodeError,
    },
    #[error(
        "release {name:?} has more than {MAX_RECORDS} records in namespace {namespace:?}; refusing to read them"
    )]
    TooManyRecords { name: String, namespace: String },
    #[error("release {key:?} already exists in namespace {namespace:?}")]
    Exists { key: String, namespace: String },
    #[error("release {key:?} not found in namespace {namespace:?}")]
    NotFound { key: String, namespace: String },
    #[error("index secret {name:?} has no {label:?} label it can be selected by")]
    BadIndexLabel { name: String, label: &'static str },
}

impl StoreError {
    /// Whether trying again later may succeed without anything else changing (API errors and
    /// timeouts); a damaged record or an oversized release needs a person.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Api { .. }
                | StoreError::Timeout { .. }
                | StoreError::Exists { .. }
                | StoreError::NotFound { .. }
        )
    }
}

/// One index Secret as listed, before its record is decoded.
#[derive(Clone, Debug)]
pub struct IndexEntry {
    pub key: String,
    pub version: i64,
    pub status: String,
    secret: Secret,
}

/// A record as this store just wrote it, so the next update of the same record need not read
/// it back (the index's resourceVersion, `createdAt`) nor delete chunks it knows are absent.
#[derive(Clone, Debug)]
pub struct Written {
    key: String,
    resource_version: Option<String>,
    created_at: i64,
    /// Chunk Secrets beside the index.
    chunks: usize,
}

/// The history of one ClusterExtension, decoded where possible.
#[derive(Debug, Default)]
pub struct History {
    /// Decoded records, by ascending version.
    pub releases: Vec<StoredRelease>,
    /// Records that could not be decoded (left as they are).
    pub damaged: Vec<(String, DecodeError)>,
    /// `(version, status)` of every record, damaged ones included, from the index labels: what
    /// [`ReleaseStore::create_after`] prunes by.
    pub records: Vec<(i64, String)>,
}

impl History {
    pub fn releases(&self) -> Vec<Release> {
        self.releases.iter().map(|s| s.release.clone()).collect()
    }
}

/// Release records in one namespace.
#[derive(Clone)]
pub struct ReleaseStore {
    api: Api<Secret>,
    namespace: String,
    limits: DecodeLimits,
    /// Bound on every API call.
    pub timeout: Duration,
    /// Histories answered without a list when the watch allows ([`IndexCache`]).
    index: Option<IndexCache>,
}

impl ReleaseStore {
    /// A store over `namespace` (the system namespace, `olmv1-system` by default).
    pub fn new(client: kube::Client, namespace: &str) -> ReleaseStore {
        ReleaseStore {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            limits: DecodeLimits::default(),
            timeout: Duration::from_secs(30),
            index: None,
        }
    }

    /// The same store answering histories from `cache` when it can (its watch must cover this
    /// store's namespace).
    pub fn with_index_cache(mut self, cache: IndexCache) -> ReleaseStore {
        self.index = Some(cache);
        self
    }

    /// The same store with other decoding bounds.
    pub fn with_limits(mut self, limits: DecodeLimits) -> ReleaseStore {
        self.limits = limits;
        self
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    async fn call<T>(
        &self,
        action: &'static str,
        name: &str,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(source)) => Err(StoreError::Api {
                action,
                name: name.to_string(),
                namespace: self.namespace.clone(),
                source,
            }),
            Err(_) => Err(StoreError::Timeout {
                action,
                name: name.to_string(),
                namespace: self.namespace.clone(),
                seconds: self.timeout.as_secs(),
            }),
        }
    }

    /// The index Secrets of release `name`, by ascending version (no record decoded).
    pub async fn index_entries(&self, name: &str) -> Result<Vec<IndexEntry>, StoreError> {
        let selector = secrets::history_label_selector(name);
        let mut params = ListParams::default()
            .labels(&selector)
            .fields(&secrets::index_field_selector())
            .limit(PAGE);
        let mut entries = Vec::new();
        loop {
            let page = self.call("list", &selector, self.api.list(&params)).await?;
            for secret in page.items {
                let index_name = secret.metadata.name.clone().unwrap_or_default();
                let labels = secret.metadata.labels.clone().unwrap_or_default();
                let version = labels
                    .get("version")
                    .and_then(|v| v.parse::<i64>().ok())
                    .ok_or_else(|| StoreError::BadIndexLabel {
                        name: index_name.clone(),
                        label: "version",
                    })?;
                entries.push(IndexEntry {
                    key: index_name,
                    version,
                    status: labels.get("status").cloned().unwrap_or_default(),
                    secret,
                });
                if entries.len() > MAX_RECORDS {
                    return Err(StoreError::TooManyRecords {
                        name: name.to_string(),
                        namespace: self.namespace.clone(),
                    });
                }
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
        entries.sort_by_key(|e| e.version);
        Ok(entries)
    }

    /// Decodes one listed record, fetching its chunk Secrets.
    pub async fn decode(&self, entry: &IndexEntry) -> Result<StoredRelease, StoreError> {
        let names =
            secrets::extra_chunk_names(&entry.secret).map_err(|source| StoreError::Decode {
                name: entry.key.clone(),
                source,
            })?;
        // A missing chunk is reported by the decoder, naming its position.
        let chunks = self.read_chunks(&names).await?;
        secrets::decode_release(&entry.secret, &chunks, self.limits).map_err(|source| {
            StoreError::Decode {
                name: entry.key.clone(),
                source,
            }
        })
    }

    /// Every record of release `name` (Helm's `History`); damaged ones are listed apart.
    pub async fn history(&self, name: &str) -> Result<History, StoreError> {
        let records = match self.index.as_ref().and_then(|cache| cache.records(name)) {
            Some(records) => records,
            None => self.list_records(name).await?,
        };
        Ok(self.decode_all(&records))
    }

    /// Every record of release `name` as stored (index and chunk Secrets), by ascending
    /// version; kept in the index cache when there is one.
    async fn list_records(&self, name: &str) -> Result<Vec<Arc<RawRecord>>, StoreError> {
        let mut records = Vec::new();
        for entry in self.index_entries(name).await? {
            // A chunk the index names but that cannot be read is left to the decoder, which
            // names its position.
            let chunks = match secrets::extra_chunk_names(&entry.secret) {
                Ok(names) => self.read_chunks(&names).await?,
                Err(_) => Vec::new(),
            };
            records.push(RawRecord::new(entry.secret, chunks));
        }
        if let Some(cache) = &self.index {
            cache.listed(name, records.clone());
        }
        Ok(records.into_iter().map(Arc::new).collect())
    }

    /// The chunk Secrets `names` that exist.
    async fn read_chunks(&self, names: &[String]) -> Result<Vec<Secret>, StoreError> {
        let mut chunks = Vec::with_capacity(names.len());
        for chunk in names {
            if let Some(secret) = self.call("get", chunk, self.api.get_opt(chunk)).await? {
                chunks.push(secret);
            }
        }
        Ok(chunks)
    }

    /// Decodes stored records (by ascending version) into a history.
    fn decode_all(&self, records: &[Arc<RawRecord>]) -> History {
        let mut out = History::default();
        for record in records {
            let index = &record.index;
            out.records
                .push((record.version(), record.status().to_owned()));
            match secrets::decode_release(index, &record.chunks, self.limits) {
                Ok(r) => out.releases.push(r),
                Err(source) => out
                    .damaged
                    .push((index.metadata.name.clone().unwrap_or_default(), source)),
            }
        }
        out.records.sort_by_key(|(v, _)| *v);
        out.releases.sort_by_key(|r| r.release.version);
        out
    }

    /// The deployed record with the highest version (the installed bundle), decoding only it.
    pub async fn installed(&self, name: &str) -> Result<Option<StoredRelease>, StoreError> {
        if let Some(records) = self.index.as_ref().and_then(|cache| cache.records(name)) {
            let deployed = records
                .iter()
                .filter(|r| r.status() == "deployed")
                .max_by_key(|r| r.version());
            return match deployed {
                Some(record) => secrets::decode_release(&record.index, &record.chunks, self.limits)
                    .map(Some)
                    .map_err(|source| StoreError::Decode {
                        name: record.index.metadata.name.clone().unwrap_or_default(),
                        source,
                    }),
                None => Ok(None),
            };
        }
        let entries = self.index_entries(name).await?;
        match entries
            .iter()
            .filter(|e| e.status == "deployed")
            .max_by_key(|e| e.version)
        {
            Some(entry) => self.decode(entry).await.map(Some),
            None => Ok(None),
        }
    }

    /// The highest-version record, any status (Helm's `Get`/`Last`).
    pub async fn last(&self, name: &str) -> Result<Option<StoredRelease>, StoreError> {
        let entries = self.index_entries(name).await?;
        match entries.last() {
            Some(entry) => self.decode(entry).await.map(Some),
            None => Ok(None),
        }
    }

    /// Deletes the oldest records of `name` so that a new one keeps the history at
    /// [`MAX_HISTORY`]; returns the versions deleted.
    pub async fn prune(&self, name: &str) -> Result<Vec<i64>, StoreError> {
        let records: Vec<(i64, String)> = self
            .index_entries(name)
            .await?
            .into_iter()
            .map(|e| (e.version, e.status))
            .collect();
        self.prune_records(name, &records).await
    }

    /// [`Self::prune`] over records already listed.
    async fn prune_records(
        &self,
        name: &str,
        records: &[(i64, String)],
    ) -> Result<Vec<i64>, StoreError> {
        let records: Vec<(i64, &str)> = records.iter().map(|(v, s)| (*v, s.as_str())).collect();
        let versions = history::prune_versions(&records, MAX_HISTORY);
        for v in &versions {
            self.delete(&secrets::release_key(name, *v)).await?;
        }
        Ok(versions)
    }

    /// Stores a new record: prunes, then creates the index and chunk Secrets. `owner` is the
    /// ClusterExtension; `now` is Unix seconds.
    pub async fn create(
        &self,
        release: &Release,
        owner: &OwnerReference,
        now: i64,
    ) -> Result<(), StoreError> {
        self.create_after(release, owner, now, None).await.map(drop)
    }

    /// [`Self::create`], pruning by `records` ([`History::records`] of a history just read by
    /// the only writer, which spares listing them again) when given.
    pub async fn create_after(
        &self,
        release: &Release,
        owner: &OwnerReference,
        now: i64,
        records: Option<&[(i64, String)]>,
    ) -> Result<Written, StoreError> {
        let encoded = secrets::encode_release(release).map_err(|source| StoreError::Encode {
            name: release.name.clone(),
            source,
        })?;
        match records {
            Some(records) => self.prune_records(&release.name, records).await?,
            None => self.prune(&release.name).await?,
        };
        let index = encoded.index_secret(
            &self.namespace,
            owner,
            Stamps {
                created_at: now,
                modified_at: None,
            },
        );
        let created = match self
            .call(
                "create",
                &encoded.key,
                self.api.create(&write_params(), &index),
            )
            .await
        {
            Ok(s) => s,
            Err(StoreError::Api {
                source: kube::Error::Api(status),
                ..
            }) if status.code == 409 => {
                return Err(StoreError::Exists {
                    key: encoded.key.clone(),
                    namespace: self.namespace.clone(),
                });
            }
            Err(e) => return Err(e),
        };
        let uid = created.metadata.uid.clone().unwrap_or_default();
        let mut chunks = Vec::new();
        for chunk in encoded.chunk_secrets(&self.namespace, &uid, Some(now)) {
            let chunk_name = chunk.metadata.name.clone().unwrap_or_default();
            match self
                .call(
                    "create",
                    &chunk_name,
                    self.api.create(&write_params(), &chunk),
                )
                .await
            {
                Ok(created_chunk) => chunks.push(created_chunk),
                Err(e) => {
                    // Best effort: without its chunks the new record is unreadable.
                    let _ = self.delete(&encoded.key).await;
                    return Err(e);
                }
            }
        }
        self.wrote(&release.name, &created, &chunks);
        let chunks = chunks.len();
        Ok(Written {
            key: encoded.key,
            resource_version: created.metadata.resource_version,
            created_at: now,
            chunks,
        })
    }

    /// Rewrites an existing record (a status change: deployed, superseded, failed).
    pub async fn update(
        &self,
        release: &Release,
        owner: &OwnerReference,
        now: i64,
    ) -> Result<(), StoreError> {
        self.update_after(release, owner, now, None).await.map(drop)
    }

    /// [`Self::update`] of a record this store has just written (`written`, from
    /// [`Self::create_after`] or an earlier update): the index is not read back, and its chunks
    /// are deleted only if it had any. The write still carries the known resourceVersion, so a
    /// change by anyone else in between fails it with a conflict.
    pub async fn update_after(
        &self,
        release: &Release,
        owner: &OwnerReference,
        now: i64,
        written: Option<&Written>,
    ) -> Result<Written, StoreError> {
        let encoded = secrets::encode_release(release).map_err(|source| StoreError::Encode {
            name: release.name.clone(),
            source,
        })?;
        let (resource_version, created_at, had_chunks) =
            match written.filter(|w| w.key == encoded.key) {
                Some(w) => (w.resource_version.clone(), w.created_at, w.chunks > 0),
                None => {
                    let existing = self
                        .call("get", &encoded.key, self.api.get_opt(&encoded.key))
                        .await?
                        .ok_or_else(|| StoreError::NotFound {
                            key: encoded.key.clone(),
                            namespace: self.namespace.clone(),
                        })?;
                    let created_at = existing
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("createdAt"))
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(now);
                    (existing.metadata.resource_version, created_at, true)
                }
            };
        let mut index = encoded.index_secret(
            &self.namespace,
            owner,
            Stamps {
                created_at,
                modified_at: Some(now),
            },
        );
        index.metadata.resource_version = resource_version;
        let replaced = self
            .call(
                "replace",
                &encoded.key,
                self.api.replace(&encoded.key, &write_params(), &index),
            )
            .await;
        let replaced = match replaced {
            Ok(replaced) => replaced,
            Err(e) => {
                self.forget(&release.name);
                return Err(e);
            }
        };
        // Only after the guarded replace succeeded: a conflict leaves the record as it was.
        let chunks = match self.rewrite_chunks(&encoded, &replaced, had_chunks).await {
            Ok(chunks) => chunks,
            Err(e) => {
                // The record is part-written: the next read lists.
                self.forget(&release.name);
                return Err(e);
            }
        };
        self.wrote(&release.name, &replaced, &chunks);
        Ok(Written {
            key: encoded.key,
            resource_version: replaced.metadata.resource_version,
            created_at,
            chunks: chunks.len(),
        })
    }

    /// The chunks of a replaced index: the old ones deleted (if it had any), the new ones
    /// created. Returns the created chunk Secrets.
    async fn rewrite_chunks(
        &self,
        encoded: &secrets::EncodedRelease,
        replaced: &Secret,
        had_chunks: bool,
    ) -> Result<Vec<Secret>, StoreError> {
        if had_chunks {
            let chunk_selector = secrets::chunks_label_selector(&encoded.key);
            self.call(
                "delete chunks of",
                &encoded.key,
                self.api.delete_collection(
                    &DeleteParams::default(),
                    &ListParams::default().labels(&chunk_selector),
                ),
            )
            .await?;
        }
        let uid = replaced.metadata.uid.clone().unwrap_or_default();
        // Helm's update path writes chunks without `createdAt`.
        let mut chunks = Vec::new();
        for chunk in encoded.chunk_secrets(&self.namespace, &uid, None) {
            let chunk_name = chunk.metadata.name.clone().unwrap_or_default();
            chunks.push(
                self.call(
                    "create",
                    &chunk_name,
                    self.api.create(&write_params(), &chunk),
                )
                .await?,
            );
        }
        Ok(chunks)
    }

    /// Tells the index cache what a write stored: the index and chunk Secrets as the API
    /// server returned them.
    fn wrote(&self, name: &str, index: &Secret, chunks: &[Secret]) {
        if let Some(cache) = &self.index {
            cache.wrote(name, RawRecord::new(index.clone(), chunks.to_vec()));
        }
    }

    fn forget(&self, name: &str) {
        if let Some(cache) = &self.index {
            cache.forget(name);
        }
    }

    /// Deletes one record: every Secret labelled with its key (index and chunks).
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        // Whether or not the delete succeeds, the kept history no longer matches what the
        // watch will show: the next read lists unless the watch shows the record gone.
        if let Some(cache) = &self.index {
            cache.deleted(key);
        }
        let selector = secrets::all_for_key_label_selector(key);
        self.call(
            "delete",
            key,
            self.api.delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels(&selector),
            ),
        )
        .await?;
        Ok(())
    }

    /// Deletes every record of release `name` (uninstall, after its objects are gone).
    pub async fn delete_all(&self, name: &str) -> Result<usize, StoreError> {
        let entries = self.index_entries(name).await?;
        for e in &entries {
            self.delete(&e.key).await?;
        }
        Ok(entries.len())
    }
}

/// Creates and replaces of release Secrets, under [`FIELD_MANAGER`].
fn write_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}
