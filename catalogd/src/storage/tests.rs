use std::io::Read;

use super::*;

/// A storage that writes gzip copies only when asked, so tests see the files they create.
fn open(root: &Path) -> Result<Storage, StorageError> {
    Storage::open_with(root, GzipCopies::WhenAsked)
}

fn store(
    storage: &Storage,
    catalog: &str,
    digest: &str,
    blobs: &[(&str, &str, &str, &str)],
) -> Arc<StoredCatalog> {
    let mut w = storage
        .begin(catalog, digest)
        .expect("begin")
        .expect("new digest");
    for (schema, package, name, blob) in blobs {
        w.push(schema, package, name, blob.as_bytes())
            .expect("push");
    }
    w.commit().expect("commit")
}

fn read_all(c: &StoredCatalog) -> String {
    let mut buf = vec![0; c.len() as usize];
    let n = c.read_jsonl_at(&mut buf, 0).expect("read");
    buf.truncate(n);
    String::from_utf8(buf).expect("utf8")
}

const FOO: &[(&str, &str, &str, &str)] = &[
    (
        "olm.package",
        "",
        "foo",
        r#"{"name":"foo","schema":"olm.package"}"#,
    ),
    (
        "olm.bundle",
        "foo",
        "foo.v1",
        r#"{"name":"foo.v1","package":"foo","schema":"olm.bundle"}"#,
    ),
];

#[test]
fn stored_content_is_json_lines_with_an_index_covering_each_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = open(dir.path()).expect("open");
    let c = store(&storage, "cat", "sha256:1", FOO);
    let text = read_all(&c);
    assert_eq!(
        text,
        "{\"name\":\"foo\",\"schema\":\"olm.package\"}\n{\"name\":\"foo.v1\",\"package\":\"foo\",\"schema\":\"olm.bundle\"}\n"
    );
    let bundle = c.index().query(Query {
        schema: "olm.bundle",
        ..Query::default()
    });
    assert_eq!(bundle.len(), 1);
    let s = bundle[0];
    assert_eq!(
        &text[s.offset as usize..s.end() as usize],
        format!("{}\n", FOO[1].3)
    );
    assert_eq!(c.blobs(), 2);
}

fn gunzip(c: &StoredCatalog) -> String {
    let mut gz = vec![0; c.gzip_len().expect("the gzip copy") as usize];
    c.read_gzip_at(&mut gz, 0).expect("read gz");
    let mut out = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut out)
        .expect("gunzip");
    out
}

fn recorded_gzip_size(c: &StoredCatalog) -> Option<u64> {
    let meta: ContentMeta = read_json(&c.dir.join(META)).expect("meta.json");
    meta.gzip_size
}

#[test]
fn the_gzip_copy_is_written_after_commit_and_decompresses_to_the_same_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = open(dir.path()).expect("open");
    let c = store(&storage, "cat", "sha256:1", FOO);
    assert_eq!(c.gzip_len(), None, "live before its gzip copy");
    assert_eq!(recorded_gzip_size(&c), None);
    assert!(c.read_gzip_at(&mut [0; 4], 0).is_err());
    let size = c.write_gzip_copy().expect("gzip copy");
    assert_eq!(c.gzip_len(), Some(size));
    assert_eq!(recorded_gzip_size(&c), Some(size));
    assert_eq!(gunzip(&c), read_all(&c));
    assert_eq!(c.write_gzip_copy().expect("written once"), size);
    let names: Vec<String> = fs::read_dir(dir.path().join("cat"))
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(TMP_PREFIX))
        .collect();
    assert!(names.is_empty(), "partial files left: {names:?}");
}

/// catalogd's storage writes the copy on a thread of its own; a caller asking for it waits
/// for that one write.
#[test]
fn in_the_background_the_copy_follows_without_being_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path()).expect("open");
    let c = store(&storage, "cat", "sha256:1", FOO);
    let size = c.write_gzip_copy().expect("gzip copy");
    assert_eq!(recorded_gzip_size(&c), Some(size));
    assert_eq!(gunzip(&c), read_all(&c));
}

/// A restart before the copy was finished (or with its file lost) writes it again; a complete
/// one is used as it is.
#[test]
fn a_missing_or_unrecorded_copy_is_written_again_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let content_dir = {
        let storage = open(dir.path()).expect("open");
        let c = store(&storage, "cat", "sha256:1", FOO);
        c.write_gzip_copy().expect("gzip copy");
        c.dir.clone()
    };
    let reopened = |gzip_copies| {
        let storage = Storage::open_with(dir.path(), gzip_copies).expect("reopen");
        storage.get("cat").expect("get").expect("survived")
    };
    let c = reopened(GzipCopies::WhenAsked);
    assert!(c.gzip_len().is_some(), "a recorded copy is used");
    drop(c);

    fs::remove_file(content_dir.join(GZIP)).expect("lose the copy");
    let c = reopened(GzipCopies::WhenAsked);
    assert_eq!(c.gzip_len(), None, "a lost copy is not served");
    drop(c);
    let c = reopened(GzipCopies::InBackground);
    c.write_gzip_copy().expect("written again");
    assert_eq!(gunzip(&c), read_all(&c));
    assert!(content_dir.join(GZIP).is_file());
}

#[test]
fn storing_the_live_digest_again_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = open(dir.path()).expect("open");
    let first = store(&storage, "cat", "sha256:1", FOO);
    assert!(storage.begin("cat", "sha256:1").expect("begin").is_none());
    let again = storage.get("cat").expect("get").expect("present");
    assert!(Arc::ptr_eq(&first, &again));
    assert_eq!(again.modified(), first.modified());
}

#[test]
fn content_survives_a_restart_without_rewriting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let before = {
        let storage = open(dir.path()).expect("open");
        let c = store(&storage, "cat", "sha256:1", FOO);
        (read_all(&c), c.modified(), c.jsonl_path())
    };
    let storage = open(dir.path()).expect("reopen");
    let c = storage.get("cat").expect("get").expect("survived");
    assert_eq!(read_all(&c), before.0);
    assert_eq!(c.modified(), before.1);
    assert_eq!(c.jsonl_path(), before.2);
    assert_eq!(c.digest(), "sha256:1");
    assert!(storage.begin("cat", "sha256:1").expect("begin").is_none());
    assert_eq!(storage.catalogs().expect("list"), vec!["cat".to_string()]);
}

#[test]
fn a_new_digest_replaces_content_and_readers_of_the_old_one_keep_reading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = open(dir.path()).expect("open");
    let old = store(&storage, "cat", "sha256:1", FOO);
    let old_text = read_all(&old);
    let new = store(&storage, "cat", "sha256:2", &FOO[..1]);
    assert_eq!(
        storage.get("cat").expect("get").expect("live").digest(),
        "sha256:2"
    );
    assert_eq!(read_all(&new), format!("{}\n", FOO[0].3));
    // The superseded directory is gone, but an in-flight reader still has its bytes.
    assert!(!old.jsonl_path().exists());
    assert_eq!(read_all(&old), old_text);
}

#[test]
fn an_interrupted_store_leaves_the_previous_content_live_and_is_swept() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let storage = open(dir.path()).expect("open");
        store(&storage, "cat", "sha256:1", FOO);
        let mut w = storage
            .begin("cat", "sha256:2")
            .expect("begin")
            .expect("writer");
        w.push("olm.package", "", "x", b"{}").expect("push");
        // Simulate a crash: the writer's files stay on disk.
        std::mem::forget(w);
    }
    let leftovers = || {
        fs::read_dir(dir.path().join("cat"))
            .expect("list")
            .filter(|e| {
                e.as_ref()
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .starts_with(TMP_PREFIX)
            })
            .count()
    };
    assert_eq!(leftovers(), 1);
    let storage = open(dir.path()).expect("reopen");
    assert_eq!(
        storage.get("cat").expect("get").expect("live").digest(),
        "sha256:1"
    );
    assert_eq!(leftovers(), 0);
}

#[test]
fn dropping_an_uncommitted_writer_removes_its_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = open(dir.path()).expect("open");
    let w = storage
        .begin("cat", "sha256:1")
        .expect("begin")
        .expect("writer");
    drop(w);
    assert!(storage.get("cat").expect("get").is_none());
    let entries: Vec<_> = fs::read_dir(dir.path().join("cat"))
        .expect("list")
        .collect();
    assert!(entries.is_empty());
}

#[test]
fn delete_removes_content_but_not_from_readers_in_flight() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = open(dir.path()).expect("open");
    let c = store(&storage, "cat", "sha256:1", FOO);
    let text = read_all(&c);
    storage.delete("cat").expect("delete");
    assert!(storage.get("cat").expect("get").is_none());
    assert!(!dir.path().join("cat").exists());
    assert_eq!(read_all(&c), text);
    storage.delete("cat").expect("deleting twice is fine");
}

#[test]
fn names_that_could_escape_the_root_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = open(dir.path()).expect("open");
    for bad in ["", "../x", "a/b", ".hidden"] {
        assert!(
            matches!(storage.get(bad), Err(StorageError::InvalidName(_))),
            "{bad:?}"
        );
        assert!(storage.begin(bad, "d").is_err(), "{bad:?}");
    }
}
