//! The archives of `testdata/`: each listed one unpacks to the tree it should (file counts fixed
//! here, so a lost directory fails), the README copies beside them match, and the unpacker refuses
//! hostile or damaged input without leaving anything behind.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use olm_testdata::{ARCHIVE_SUFFIX, SUMS_FILE, archives, path, root, unpack_archive};
use sha2::{Digest, Sha256};

/// Regular files in each archive's tree.
const FILES: [(&str, usize); 6] = [
    ("catalogs/certified-operators", 48),
    ("catalogs/community-operators-prod", 47),
    ("catalogs/community-operators-prod-derived", 333),
    ("conformance/crd-upgrade", 574),
    ("conformance/render", 406),
    ("conformance/render-real", 2036),
];

fn count_files(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                count_files(&e.path())
            } else {
                assert!(kind.is_file(), "{}", e.path().display());
                1
            }
        })
        .sum()
}

#[test]
fn every_archive_is_listed_and_unpacks_to_its_whole_tree() {
    let listed = archives();
    let expected: Vec<&str> = FILES.iter().map(|(n, _)| *n).collect();
    assert_eq!(listed, expected, "testdata/{SUMS_FILE}");

    // Every .tar.zst under testdata/ is listed (an unlisted one would be unreadable).
    let root = root().unwrap();
    let mut on_disk = Vec::new();
    for dir in ["catalogs", "conformance"] {
        for e in fs::read_dir(root.join(dir)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if let Some(stem) = name.strip_suffix(ARCHIVE_SUFFIX) {
                on_disk.push(format!("{dir}/{stem}"));
            }
        }
    }
    on_disk.sort();
    assert_eq!(on_disk, expected);

    let mut total = 0;
    for (name, files) in FILES {
        let dir = path(name);
        let got = count_files(&dir);
        println!("{name}: {got} files in {}", dir.display());
        assert_eq!(got, files, "{name}");
        total += got;
        // A README inside the tree is also kept plainly beside the archive.
        let inside = dir.join("README.md");
        let beside = root.join(format!("{name}.README.md"));
        assert_eq!(inside.exists(), beside.exists(), "{name}: README.md copy");
        if inside.exists() {
            assert_eq!(
                fs::read(&inside).unwrap(),
                fs::read(&beside).unwrap(),
                "{} differs from the README.md in the archive",
                beside.display()
            );
        }
    }
    assert_eq!(total, 3444);
}

#[test]
fn paths_inside_archives_and_plain_files_resolve() {
    let v422 = path("catalogs/community-operators-prod/catalogs/v4.22");
    assert!(v422.join("hive-operator/catalog.yaml").is_file());
    let tsv = path("conformance/blang-ranges.tsv");
    assert!(tsv.is_file());
    assert!(
        tsv.starts_with(root().unwrap()),
        "plain files stay in the repository"
    );
    assert!(path("catalogs/SOURCES.md").is_file());
    assert!(path("upstream-manifests/standard.yaml").is_file());
}

#[test]
fn a_missing_path_is_named() {
    let err = olm_testdata::try_path("conformance/render/no-such-case").unwrap_err();
    assert!(
        err.contains("testdata/conformance/render/no-such-case") && err.contains("render.tar.zst"),
        "{err}"
    );
    let err = olm_testdata::try_path("nothing/here").unwrap_err();
    assert!(err.contains("testdata/nothing/here not found"), "{err}");
    for bad in ["../Cargo.toml", "/etc/passwd", ""] {
        assert!(olm_testdata::try_path(bad).is_err(), "{bad:?}");
    }
}

// ---- the unpacker on made-up archives ----

enum Entry<'a> {
    File(&'a [u8], &'a [u8]),
    Dir(&'a [u8]),
    Symlink(&'a [u8], &'a str),
    HardLink(&'a [u8], &'a str),
}

/// A zstd-compressed tar of `entries`, names written byte for byte (the tar crate's own setters
/// refuse `..` and absolute names).
fn archive(entries: &[Entry]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_old();
        let (name, data, kind): (&[u8], &[u8], _) = match entry {
            Entry::File(name, data) => (name, data, tar::EntryType::Regular),
            Entry::Dir(name) => (name, b"", tar::EntryType::Directory),
            Entry::Symlink(name, target) => {
                header.set_link_name(target).unwrap();
                (name, b"", tar::EntryType::Symlink)
            }
            Entry::HardLink(name, target) => {
                header.set_link_name(target).unwrap();
                (name, b"", tar::EntryType::Link)
            }
        };
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_entry_type(kind);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    let tar = builder.into_inner().unwrap();
    ruzstd::encoding::compress_to_vec(&tar[..], ruzstd::encoding::CompressionLevel::Fastest)
}

/// Writes `bytes` as an archive in `dir` and returns its path and sha256.
fn write(dir: &Path, bytes: &[u8]) -> (std::path::PathBuf, String) {
    let file = dir.join("a.tar.zst");
    fs::write(&file, bytes).unwrap();
    (file, hex::encode(Sha256::digest(bytes)))
}

/// Every name in `dir` (recursive), relative.
fn listing(dir: &Path) -> BTreeMap<String, bool> {
    let mut out = BTreeMap::new();
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, bool>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(base).unwrap().display().to_string();
            let is_dir = e.file_type().unwrap().is_dir();
            out.insert(rel, is_dir);
            if is_dir {
                walk(base, &e.path(), out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

#[test]
fn a_good_archive_unpacks_once_and_again_is_a_no_op() {
    let tmp = tempfile::tempdir().unwrap();
    let (file, sha) = write(
        tmp.path(),
        &archive(&[
            Entry::Dir(b"d/"),
            Entry::File(b"d/a.txt", b"alpha"),
            Entry::File(b"./b.txt", b"beta"),
            Entry::File(b"e/f/g.txt", b"gamma"),
        ]),
    );
    let dest = tmp.path().join("cache/x");
    unpack_archive(&file, &sha, &dest).unwrap();
    assert_eq!(fs::read(dest.join("d/a.txt")).unwrap(), b"alpha");
    assert_eq!(fs::read(dest.join("b.txt")).unwrap(), b"beta");
    assert_eq!(fs::read(dest.join("e/f/g.txt")).unwrap(), b"gamma");
    fs::write(dest.join("marker"), "kept").unwrap();
    unpack_archive(&file, &sha, &dest).unwrap();
    assert!(
        dest.join("marker").exists(),
        "an existing tree is not unpacked again"
    );
    assert_eq!(
        listing(&tmp.path().join("cache")).len(),
        8,
        "no temporary left"
    );
}

#[test]
fn racing_unpackers_all_succeed_with_one_whole_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let files: Vec<(String, Vec<u8>)> = (0..200)
        .map(|i| {
            (
                format!("p/{i:03}.json"),
                format!("{{\"i\":{i}}}").into_bytes(),
            )
        })
        .collect();
    let entries: Vec<Entry> = files
        .iter()
        .map(|(n, d)| Entry::File(n.as_bytes(), d))
        .collect();
    let (file, sha) = write(tmp.path(), &archive(&entries));
    let dest = tmp.path().join("cache/x");
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| unpack_archive(&file, &sha, &dest)))
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
    });
    for (name, data) in &files {
        assert_eq!(&fs::read(dest.join(name)).unwrap(), data);
    }
    assert_eq!(
        fs::read_dir(tmp.path().join("cache")).unwrap().count(),
        1,
        "only the unpacked tree, no temporary left"
    );
}

/// Unpacking `entries` fails with a message containing `needle` and leaves nothing in the cache.
fn refused(entries: &[Entry], needle: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (file, sha) = write(tmp.path(), &archive(entries));
    let cache = tmp.path().join("cache");
    let err = unpack_archive(&file, &sha, &cache.join("x")).unwrap_err();
    assert!(err.contains(needle), "{err}");
    assert!(listing(&cache).is_empty(), "{:?}", listing(&cache));
    assert!(!tmp.path().join("escaped").exists());
}

#[test]
fn hostile_entries_are_refused() {
    refused(
        &[Entry::File(b"ok", b"1"), Entry::File(b"../escaped", b"x")],
        "`..` refused",
    );
    refused(&[Entry::File(b"a/../../escaped", b"x")], "`..` refused");
    refused(
        &[Entry::File(b"/tmp/escaped-abs", b"x")],
        "absolute path refused",
    );
    refused(&[Entry::Symlink(b"link", "/etc")], "Symlink");
    refused(&[Entry::HardLink(b"link", "ok")], "Link");
    refused(
        &[Entry::File(b"same", b"1"), Entry::File(b"same", b"2")],
        "entry same",
    );
    refused(&[], "no entries");
}

#[test]
fn a_damaged_or_missing_archive_is_refused_before_unpacking() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = archive(&[Entry::File(b"a", b"1")]);
    let (file, sha) = write(tmp.path(), &bytes);
    let mut damaged = bytes.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    fs::write(&file, &damaged).unwrap();
    let dest = tmp.path().join("cache/x");
    let err = unpack_archive(&file, &sha, &dest).unwrap_err();
    assert!(err.contains(&format!("says {sha}")), "{err}");
    assert!(!tmp.path().join("cache").exists());

    // Checked even when the tree is already there.
    fs::create_dir_all(&dest).unwrap();
    assert!(unpack_archive(&file, &sha, &dest).is_err());

    let err = unpack_archive(&tmp.path().join("gone.tar.zst"), &sha, &dest).unwrap_err();
    assert!(err.contains("missing"), "{err}");

    let (file, sha) = write(tmp.path(), b"not zstd at all");
    let err = unpack_archive(&file, &sha, &tmp.path().join("cache/y")).unwrap_err();
    assert!(err.contains("not a zstd stream"), "{err}");
}
