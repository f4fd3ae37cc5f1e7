//! Turns a File-Based Catalog directory into stored, servable content.
//!
//! Input: an FBC directory (from an unpacked image or a local path) or a packed one
//! ([`olm_api::fbc::packed`]), and the digest identifying it.
//! Output: the live [`StoredCatalog`]. Reads the directory and writes the storage root; blocking,
//! so async callers run it on a blocking thread. Files are parsed on up to [`MAX_WALK_THREADS`]
//! threads (no more than the cores this process may use) and stored in walk order.

use std::path::Path;
use std::sync::Arc;

use olm_api::fbc::packed::{PackedCatalog, walk_metas_packed_parallel};
use olm_api::fbc::{Meta, WalkError, walk_metas_dir_parallel};
use olm_image::pull::PackFiles;

use crate::storage::{Storage, StorageError, StoredCatalog};

/// Most threads one ingest parses files on. Parsing is CPU-bound and the writer is one thread, so
/// more than a few threads only add memory.
pub const MAX_WALK_THREADS: usize = 4;

/// The threads an ingest walks with: the cores this process may use (its CPU quota included), at
/// most [`MAX_WALK_THREADS`].
fn walk_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_WALK_THREADS)
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("failed to read catalog content: {0}")]
    Walk(WalkError),
    #[error("failed to store catalog content: {0}")]
    Storage(#[from] StorageError),
}

/// Stores the FBC under `dir` as `catalog`'s content from source `digest`. When that digest is
/// already live nothing is read or written and the existing content is returned.
pub fn ingest_dir(
    storage: &Storage,
    catalog: &str,
    digest: &str,
    dir: &Path,
) -> Result<Arc<StoredCatalog>, IngestError> {
    ingest(storage, catalog, digest, &mut |push| {
        walk_metas_dir_parallel(dir, walk_threads(), push)
    })
}

/// [`ingest_dir`] of a catalog directory kept as a pack (`root` is where its files would be on
/// disk; errors name them there).
pub fn ingest_pack(
    storage: &Storage,
    catalog: &str,
    digest: &str,
    root: &Path,
    files: &PackFiles,
) -> Result<Arc<StoredCatalog>, IngestError> {
    ingest(storage, catalog, digest, &mut |push| {
        let packed = PackedCatalog::open(root.to_path_buf(), &files.pack, &files.listing)?;
        walk_metas_packed_parallel(&packed, walk_threads(), push)
    })
}

/// A walk handing each object to the callback it is given.
type Walk<'a> =
    dyn FnMut(&mut dyn FnMut(Meta) -> Result<(), WalkError>) -> Result<(), WalkError> + 'a;

fn ingest(
    storage: &Storage,
    catalog: &str,
    digest: &str,
    walk: &mut Walk<'_>,
) -> Result<Arc<StoredCatalog>, IngestError> {
    let Some(mut writer) = storage.begin(catalog, digest)? else {
        return match storage.get(catalog)? {
            Some(stored) => Ok(stored),
            // Deleted between the two calls: store it after all.
            None => ingest(storage, catalog, digest, walk),
        };
    };
    let walked = walk(&mut |meta: Meta| {
        writer
            .push(&meta.schema, &meta.package, &meta.name, &meta.blob)
            .map_err(WalkError::callback)
    });
    match walked {
        Ok(()) => Ok(writer.commit()?),
        Err(e) => Err(IngestError::Walk(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_stored_as_canonical_json_lines() {
        let src = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            src.path().join("catalog.yaml"),
            "schema: olm.package\nname: foo\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: foo\nname: stable\nentries:\n- name: foo.v1.0.0\n",
        )
        .expect("write");
        let root = tempfile::tempdir().expect("tempdir");
        let storage = Storage::open(root.path()).expect("storage");
        let stored = ingest_dir(&storage, "cat", "dir:1", src.path()).expect("ingest");
        let mut buf = vec![0; stored.len() as usize];
        stored.read_jsonl_at(&mut buf, 0).expect("read");
        assert_eq!(
            String::from_utf8(buf).expect("utf8"),
            "{\"defaultChannel\":\"stable\",\"name\":\"foo\",\"schema\":\"olm.package\"}\n\
             {\"entries\":[{\"name\":\"foo.v1.0.0\"}],\"name\":\"stable\",\"package\":\"foo\",\"schema\":\"olm.channel\"}\n"
        );
        // The same digest again is a no-op returning the same content.
        let again = ingest_dir(&storage, "cat", "dir:1", src.path()).expect("ingest");
        assert!(Arc::ptr_eq(&stored, &again));
    }

    #[test]
    fn a_broken_catalog_names_the_file_and_keeps_the_previous_content() {
        let root = tempfile::tempdir().expect("tempdir");
        let storage = Storage::open(root.path()).expect("storage");
        let good = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            good.path().join("c.json"),
            r#"{"schema":"olm.package","name":"a"}"#,
        )
        .expect("write");
        ingest_dir(&storage, "cat", "d1", good.path()).expect("ingest");
        let bad = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            bad.path().join("broken.json"),
            r#"{"schema":"olm.package","name":"#,
        )
        .expect("write");
        let err = ingest_dir(&storage, "cat", "d2", bad.path()).expect_err("broken");
        assert!(err.to_string().contains("broken.json"), "{err}");
        assert_eq!(
            storage.get("cat").expect("get").expect("live").digest(),
            "d1"
        );
    }
}
