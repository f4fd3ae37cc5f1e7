//! Release records in Secrets, in helm-operator-plugins' chunked format (v0.9.1
//! `pkg/storage/chunked.go`) as operator-controller configures it, both ways.
//!
//! Input: a [`Release`] (to encode) or the Secrets read back (to decode). Output: `Secret`
//! objects ready to create, or the release they hold. No IO: the caller creates, lists and gets
//! the Secrets (`operator-controller`'s `storage` module).
//!
//! Format:
//!
//! | Secret | name | type | labels | data | immutable | owner |
//! |---|---|---|---|---|---|---|
//! | index | `sh.helm.release.v1.<release>.v<N>` (the *key*) | `operatorframework.io/index.v1` | `name`, `owner=operator-controller`, `status`, `version`, `key`, `type=index`, `createdAt` (Unix seconds), `modifiedAt` after an update | `chunk` = first chunk, `extraChunks` = JSON array of the other chunks' names | false | the ClusterExtension (controller, blockOwnerDeletion) |
//! | chunk 2..n | `<key>-<base32(fnv64a(chunk))>` (alphabet `a-z1-6`, no padding) | `operatorframework.io/chunk.v1` | `owner`, `key`, `type=chunk`, `createdAt` (on create only) | `chunk` | true | the index Secret (controller, no blockOwnerDeletion) |
//!
//! The chunks are consecutive slices of at most [`CHUNK_SIZE`] bytes of
//! `gzip(BestCompression, json(release) + "\n")`; at most [`MAX_CHUNKS`] are written or read.
//! The release's own labels (the bundle identity) live inside the JSON, not on the Secret.
//!
//! Decoding is bounded: at most [`MAX_CHUNKS`] chunks and [`DecodeLimits::max_decompressed`]
//! bytes of JSON (a gzip bomb gives [`DecodeError::TooLarge`], never an allocation of its full
//! size). Nothing here deletes or "repairs" anything: a damaged record is an error naming the
//! Secret.
//!
//! The compressed bytes differ from Go's (`compress/flate` and zlib choose different matches at
//! the same level) and so do the chunk names derived from them; every reader decompresses any
//! valid gzip stream and takes chunk names from `extraChunks`, so the difference is invisible.

use std::collections::BTreeMap;
use std::io::Read;

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::model::Release;

/// The storage owner label value operator-controller uses.
pub const OWNER: &str = "operator-controller";
/// Type of index Secrets.
pub const INDEX_SECRET_TYPE: &str = "operatorframework.io/index.v1";
/// Type of chunk Secrets.
pub const CHUNK_SECRET_TYPE: &str = "operatorframework.io/chunk.v1";
/// Bytes per chunk: 8 KiB under the 1 MiB Secret limit (upstream's setting).
pub const CHUNK_SIZE: usize = (1024 - 8) * 1024;
/// Chunks per release, written and read (upstream's setting).
pub const MAX_CHUNKS: usize = 11;
/// Helm's storage key prefix.
pub const HELM_STORAGE_TYPE: &str = "sh.helm.release.v1";
/// Index Secret labels that are storage metadata, not release labels; dropped from a decoded
/// release's labels, and refused as release labels on write.
pub const SYSTEM_LABELS: [&str; 8] = [
    "name",
    "owner",
    "status",
    "version",
    "key",
    "type",
    "createdAt",
    "modifiedAt",
];

/// Data keys.
const DATA_CHUNK: &str = "chunk";
const DATA_EXTRA_CHUNKS: &str = "extraChunks";

/// `sh.helm.release.v1.<name>.v<version>`: the index Secret's name.
pub fn release_key(name: &str, version: i64) -> String {
    format!("{HELM_STORAGE_TYPE}.{name}.v{version}")
}

/// The label selector that lists every index Secret of release `name` (upstream's `History`).
pub fn history_label_selector(name: &str) -> String {
    format!("name={name},owner={OWNER},type=index")
}

/// The field selector upstream's e2e lists index Secrets with.
pub fn index_field_selector() -> String {
    format!("type={INDEX_SECRET_TYPE}")
}

/// The label selector of a key's chunk Secrets (what an update deletes before rewriting).
pub fn chunks_label_selector(key: &str) -> String {
    format!("owner={OWNER},key={key},type=chunk")
}

/// The label selector of every Secret of a key (what a delete removes).
pub fn all_for_key_label_selector(key: &str) -> String {
    format!("owner={OWNER},key={key}")
}

/// 64-bit FNV-1a.
fn fnv64a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Go's `base32.NewEncoding("abcdefghijklmnopqrstuvwxyz123456").WithPadding(NoPadding)`.
fn base32_lower(data: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz123456";
    let mut out = String::with_capacity(data.len().div_ceil(5) * 8);
    let mut buffer: u32 = 0;
    let mut bits = 0u32;
    for byte in data {
        buffer = (buffer << 8) | u32::from(*byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// The name of the chunk Secret holding `data` for `key`.
pub fn chunk_name(key: &str, data: &[u8]) -> String {
    format!("{key}-{}", base32_lower(&fnv64a(data).to_be_bytes()))
}

/// Why a release cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error(
        "release too large: {name:?} requires {chunks} chunks, which exceeds the maximum of {max}"
    )]
    TooLarge {
        name: String,
        chunks: usize,
        max: usize,
    },
    #[error("user supplied labels contains system reserved label name {0:?}")]
    SystemLabel(String),
    #[error("failed to encode release {name:?}: {source}")]
    Encode {
        name: String,
        source: std::io::Error,
    },
    #[error("failed to encode {what} of release {name:?} as JSON: {source}")]
    Json {
        name: String,
        what: &'static str,
        source: serde_json::Error,
    },
}

/// A release encoded for storage: its key and its chunks, ready to become Secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedRelease {
    pub key: String,
    /// Index labels (the system labels, without `createdAt`/`modifiedAt`).
    labels: BTreeMap<String, String>,
    /// `(name, data)`; the first is the index Secret's.
    chunks: Vec<(String, Vec<u8>)>,
    /// The index's `extraChunks`: the JSON list of the other chunks' names.
    extra_chunks_json: Vec<u8>,
}

/// Timestamps of the index Secret, in Unix seconds (upstream's `createdAt`/`modifiedAt` labels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamps {
    pub created_at: i64,
    /// Set when the record is rewritten (an update); Helm's create-then-update of every new
    /// release means stored records normally carry it.
    pub modified_at: Option<i64>,
}

/// How records are cut into Secrets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkLimits {
    pub chunk_size: usize,
    pub max_chunks: usize,
}

impl Default for ChunkLimits {
    /// upstream's: [`CHUNK_SIZE`], [`MAX_CHUNKS`].
    fn default() -> Self {
        ChunkLimits {
            chunk_size: CHUNK_SIZE,
            max_chunks: MAX_CHUNKS,
        }
    }
}

/// Encodes `release` (gzip of its JSON, split into chunks) with upstream's limits.
pub fn encode_release(release: &Release) -> Result<EncodedRelease, EncodeError> {
    encode_release_with(release, ChunkLimits::default())
}

/// [`encode_release`] with other limits (tests, or a cluster whose Secret size limit differs).
pub fn encode_release_with(
    release: &Release,
    limits: ChunkLimits,
) -> Result<EncodedRelease, EncodeError> {
    if let Some(labels) = &release.labels
        && let Some(bad) = labels.keys().find(|k| SYSTEM_LABELS.contains(&k.as_str()))
    {
        return Err(EncodeError::SystemLabel(bad.clone()));
    }
    let key = release_key(&release.name, release.version);
    let compressed = compress_record(&release.name, release)?;
    let chunks: Vec<(String, Vec<u8>)> = compressed
        .chunks(limits.chunk_size.max(1))
        .map(|c| (chunk_name(&key, c), c.to_vec()))
        .collect();
    if chunks.len() > limits.max_chunks {
        return Err(EncodeError::TooLarge {
            name: release.name.clone(),
            chunks: chunks.len(),
            max: limits.max_chunks,
        });
    }
    // `json.Marshal([]string{...})` of the chunk names after the first.
    let extra: Vec<&str> = chunks[1..].iter().map(|(n, _)| n.as_str()).collect();
    let extra_chunks_json = serde_json::to_vec(&extra).map_err(|source| EncodeError::Json {
        name: release.name.clone(),
        what: "the chunk list",
        source,
    })?;
    let info_status = release.status().to_string();
    let labels = BTreeMap::from([
        ("name".to_string(), release.name.clone()),
        ("owner".to_string(), OWNER.to_string()),
        ("status".to_string(), info_status),
        ("version".to_string(), release.version.to_string()),
        ("key".to_string(), key.clone()),
        ("type".to_string(), "index".to_string()),
    ]);
    Ok(EncodedRelease {
        key,
        labels,
        chunks,
        extra_chunks_json,
    })
}

/// Go's JSON text of `record` (a [`Release`]), gzip-compressed as Helm stores it. Any failure is
/// an error naming the release: an empty or partial record is never stored.
fn compress_record<T: serde::Serialize + ?Sized>(
    name: &str,
    record: &T,
) -> Result<Vec<u8>, EncodeError> {
    let json = super::go_json::to_vec_line(record).map_err(|source| EncodeError::Json {
        name: name.to_owned(),
        what: "the record",
        source,
    })?;
    let mut gz = flate2::GzBuilder::new()
        .operating_system(255)
        .write(Vec::new(), Compression::best());
    std::io::Write::write_all(&mut gz, &json)
        .and_then(|()| gz.finish())
        .map_err(|source| EncodeError::Encode {
            name: name.to_owned(),
            source,
        })
}

impl EncodedRelease {
    /// Number of Secrets (index plus chunks).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Names of the chunk Secrets after the index, in order (`extraChunks`).
    pub fn extra_chunk_names(&self) -> Vec<&str> {
        self.chunks[1..].iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The index Secret, owned by `owner` (the ClusterExtension), in `namespace`.
    pub fn index_secret(&self, namespace: &str, owner: &OwnerReference, stamps: Stamps) -> Secret {
        let mut labels = self.labels.clone();
        labels.insert("createdAt".to_string(), stamps.created_at.to_string());
        if let Some(m) = stamps.modified_at {
            labels.insert("modifiedAt".to_string(), m.to_string());
        }
        let extra_json = self.extra_chunks_json.clone();
        Secret {
            metadata: ObjectMeta {
                name: Some(self.key.clone()),
                namespace: Some(namespace.to_string()),
                labels: Some(labels),
                owner_references: Some(vec![owner.clone()]),
                ..Default::default()
            },
            type_: Some(INDEX_SECRET_TYPE.to_string()),
            immutable: Some(false),
            data: Some(BTreeMap::from([
                (DATA_EXTRA_CHUNKS.to_string(), ByteString(extra_json)),
                (DATA_CHUNK.to_string(), ByteString(self.chunks[0].1.clone())),
            ])),
            ..Default::default()
        }
    }

    /// The chunk Secrets after the index, owned by the index Secret (whose UID is known once it
    /// exists). `created_at` is set when written together with a new index (Helm's create path;
    /// its update path leaves it out).
    pub fn chunk_secrets(
        &self,
        namespace: &str,
        index_uid: &str,
        created_at: Option<i64>,
    ) -> Vec<Secret> {
        self.chunks[1..]
            .iter()
            .map(|(name, data)| {
                let mut labels = BTreeMap::from([
                    ("owner".to_string(), OWNER.to_string()),
                    ("key".to_string(), self.key.clone()),
                    ("type".to_string(), "chunk".to_string()),
                ]);
                if let Some(c) = created_at {
                    labels.insert("createdAt".to_string(), c.to_string());
                }
                Secret {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(namespace.to_string()),
                        labels: Some(labels),
                        owner_references: Some(vec![OwnerReference {
                            api_version: "v1".to_string(),
                            kind: "Secret".to_string(),
                            name: self.key.clone(),
                            uid: index_uid.to_string(),
                            controller: Some(true),
                            block_owner_deletion: Some(false),
                        }]),
                        ..Default::default()
                    },
                    type_: Some(CHUNK_SECRET_TYPE.to_string()),
                    immutable: Some(true),
                    data: Some(BTreeMap::from([(
                        DATA_CHUNK.to_string(),
                        ByteString(data.clone()),
                    )])),
                    ..Default::default()
                }
            })
            .collect()
    }
}

/// The controller reference upstream puts on index Secrets: `metav1.NewControllerRef(ce, gvk)`.
pub fn cluster_extension_owner_reference(name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "olm.operatorframework.io/v1".to_string(),
        kind: "ClusterExtension".to_string(),
        name: name.to_string(),
        uid: uid.to_string(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Why a stored record cannot be read. Every variant names the Secret; nothing is deleted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("index secret {0:?} missing chunks data")]
    MissingExtraChunks(String),
    #[error("index secret {index:?}: failed to parse chunk names from index: {message}")]
    BadExtraChunks { index: String, message: String },
    #[error(
        "release too large: {index:?} consists of {chunks} chunks, which exceeds the maximum of {MAX_CHUNKS}"
    )]
    TooManyChunks { index: String, chunks: usize },
    #[error("index secret {0:?} missing chunk 1 data")]
    MissingIndexChunk(String),
    #[error("index secret {index:?}: failed to get chunk {position} secret {name:?}: not found")]
    ChunkNotFound {
        index: String,
        position: usize,
        name: String,
    },
    #[error("index secret {index:?}: chunk {position} secret {name:?} missing chunk data")]
    MissingChunkData {
        index: String,
        position: usize,
        name: String,
    },
    #[error("index secret {index:?}: failed to decompress release: {message}")]
    Gzip { index: String, message: String },
    #[error(
        "index secret {index:?}: release too large: its decompressed JSON exceeds the limit of {limit} bytes"
    )]
    TooLarge { index: String, limit: usize },
    #[error("index secret {index:?}: failed to decode release: {message}")]
    Json { index: String, message: String },
}

/// Bounds on decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest release JSON accepted after decompression.
    pub max_decompressed: usize,
}

impl Default for DecodeLimits {
    /// 256 MiB: a record of [`MAX_CHUNKS`] full chunks of ordinary JSON inflates to well under
    /// that; a deflate bomb of the same size would inflate to over 10 GiB.
    fn default() -> Self {
        DecodeLimits {
            max_decompressed: 256 << 20,
        }
    }
}

fn secret_name(s: &Secret) -> String {
    s.metadata.name.clone().unwrap_or_default()
}

fn data<'a>(s: &'a Secret, key: &str) -> Option<&'a [u8]> {
    s.data.as_ref()?.get(key).map(|b| b.0.as_slice())
}

/// The names of the chunk Secrets an index Secret lists (to fetch before [`decode_release`]).
pub fn extra_chunk_names(index: &Secret) -> Result<Vec<String>, DecodeError> {
    let name = secret_name(index);
    let raw = data(index, DATA_EXTRA_CHUNKS)
        .ok_or_else(|| DecodeError::MissingExtraChunks(name.clone()))?;
    // `json.Unmarshal` into `[]string`: `null` is no chunks.
    let names: Option<Vec<String>> =
        serde_json::from_slice(raw).map_err(|e| DecodeError::BadExtraChunks {
            index: name.clone(),
            message: e.to_string(),
        })?;
    let names = names.unwrap_or_default();
    if names.len() + 1 > MAX_CHUNKS {
        return Err(DecodeError::TooManyChunks {
            index: name,
            chunks: names.len() + 1,
        });
    }
    Ok(names)
}

/// A release read from storage, with the index Secret's labels (the system labels Helm's `List`
/// reports instead of the release's own).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRelease {
    /// The release; its `labels` are the custom labels from the JSON, system labels removed
    /// (what Helm's `Get`/`History`/`Deployed` return).
    pub release: Release,
    pub index_name: String,
    pub index_labels: BTreeMap<String, String>,
    /// Names of the Secrets holding it, index first.
    pub secret_names: Vec<String>,
}

/// Decodes the release an index Secret holds; `chunks` must contain the Secrets
/// [`extra_chunk_names`] listed (others are ignored).
pub fn decode_release(
    index: &Secret,
    chunks: &[Secret],
    limits: DecodeLimits,
) -> Result<StoredRelease, DecodeError> {
    let index_name = secret_name(index);
    let names = extra_chunk_names(index)?;
    let first = data(index, DATA_CHUNK)
        .ok_or_else(|| DecodeError::MissingIndexChunk(index_name.clone()))?;
    let mut compressed: Vec<&[u8]> = vec![first];
    for (i, name) in names.iter().enumerate() {
        let position = i + 2;
        let secret = chunks
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(name.as_str()))
            .ok_or_else(|| DecodeError::ChunkNotFound {
                index: index_name.clone(),
                position,
                name: name.clone(),
            })?;
        compressed.push(
            data(secret, DATA_CHUNK).ok_or_else(|| DecodeError::MissingChunkData {
                index: index_name.clone(),
                position,
                name: name.clone(),
            })?,
        );
    }
    let json =
        gunzip_bounded(&compressed.concat(), limits.max_decompressed).map_err(|e| match e {
            GunzipError::TooLarge => DecodeError::TooLarge {
                index: index_name.clone(),
                limit: limits.max_decompressed,
            },
            GunzipError::Io(message) => DecodeError::Gzip {
                index: index_name.clone(),
                message,
            },
        })?;
    // `json.Decoder.Decode`: the first value; whatever follows is ignored.
    let mut stream = serde_json::Deserializer::from_slice(&json).into_iter::<Release>();
    let mut release = match stream.next() {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            return Err(DecodeError::Json {
                index: index_name,
                message: e.to_string(),
            });
        }
        None => {
            return Err(DecodeError::Json {
                index: index_name,
                message: "EOF".to_string(),
            });
        }
    };
    let labels = release.labels.take().unwrap_or_default();
    release.labels = Some(
        labels
            .into_iter()
            .filter(|(k, _)| !SYSTEM_LABELS.contains(&k.as_str()))
            .collect(),
    );
    let mut secret_names = vec![index_name.clone()];
    secret_names.extend(names);
    Ok(StoredRelease {
        release,
        index_labels: index.metadata.labels.clone().unwrap_or_default(),
        index_name,
        secret_names,
    })
}

enum GunzipError {
    TooLarge,
    Io(String),
}

/// Decompresses concatenated gzip members (as Go's `gzip.Reader` does), refusing to produce more
/// than `limit` bytes.
fn gunzip_bounded(compressed: &[u8], limit: usize) -> Result<Vec<u8>, GunzipError> {
    let mut out = Vec::new();
    let mut reader = MultiGzDecoder::new(compressed).take(limit as u64 + 1);
    reader
        .read_to_end(&mut out)
        .map_err(|e| GunzipError::Io(e.to_string()))?;
    if out.len() > limit {
        return Err(GunzipError::TooLarge);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_names_use_fnv64a_in_lowercase_base32() {
        // FNV-1a of "" is the offset basis; 8 bytes give 13 characters without padding.
        assert_eq!(fnv64a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(base32_lower(&[0]), "aa");
        assert_eq!(base32_lower(&[0xff; 5]), "66666666");
        let name = chunk_name("sh.helm.release.v1.x.v1", b"");
        assert_eq!(name.len(), "sh.helm.release.v1.x.v1-".len() + 13);
    }

    #[test]
    fn a_record_that_cannot_be_encoded_is_an_error_naming_the_release_not_an_empty_record() {
        // JSON has only string keys: a map keyed by pairs cannot be encoded.
        let unencodable = BTreeMap::from([((1, 2), "value")]);
        let err = compress_record("my-ext", &unencodable).expect_err("not encodable");
        assert!(matches!(err, EncodeError::Json { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "failed to encode the record of release \"my-ext\" as JSON: key must be a string"
        );
        // The same path encodes what it can.
        let encoded = compress_record("my-ext", &BTreeMap::from([("k", "v")])).expect("encodes");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&encoded[..]), &mut text)
            .expect("gzip");
        assert_eq!(text, "{\"k\":\"v\"}\n");
    }
}
