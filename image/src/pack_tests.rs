//! Every packed tree must be exactly the catalog directory the on-disk extraction leaves; every
//! tree a pack cannot hold must be refused, so that the disk extraction decides.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;

use olm_api::fbc::packed::PackedCatalog;
use tar::EntryType;

use super::*;
use crate::extract::{Extractor, PathFilter};
use crate::test_tar::{E, gzip, tar_bytes};

const LAYER: &str = "sha256:00000000000000000000000000000000000000000000000000000000000000aa";

/// The catalog directory's regular files (relative path → content), as one way of extracting
/// left it; `None` when that way refused the layers.
type Files = Option<BTreeMap<String, Vec<u8>>>;

fn on_disk(layers: &[Vec<u8>], limits: Limits) -> Files {
    let dir = tempfile::tempdir().unwrap();
    let mut extractor = Extractor::new(dir.path(), PathFilter::Under("configs".into()), limits);
    for layer in layers {
        extractor.apply_layer(LAYER, &layer[..]).ok()?;
    }
    extractor.finish().ok()?;
    let root = dir.path().join("configs");
    if !root.is_dir() {
        return None; // the walk refuses a missing catalog directory
    }
    let mut files = BTreeMap::new();
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                walk(base, &e.path(), out);
            } else {
                let rel = e.path().strip_prefix(base).unwrap().display().to_string();
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    walk(&root, &root, &mut files);
    Some(files)
}

fn packed(layers: &[Vec<u8>], limits: Limits) -> Result<BTreeMap<String, Vec<u8>>, PackError> {
    let dir = tempfile::tempdir().unwrap();
    let (pack, listing) = (dir.path().join("pack"), dir.path().join("pack.list"));
    let mut packer = Packer::create(&pack, "configs".into(), limits).unwrap();
    for layer in layers {
        packer.apply_layer(&layer[..])?;
    }
    packer.finish(&listing)?;
    let catalog = PackedCatalog::open(PathBuf::from("/configs"), &pack, &listing).unwrap();
    let file = File::open(&pack).unwrap();
    Ok(catalog
        .files()
        .iter()
        .map(|f| {
            let mut bytes = vec![0; f.len as usize];
            file.read_exact_at(&mut bytes, f.offset).unwrap();
            (f.path.display().to_string(), bytes)
        })
        .collect())
}

/// Packs `layers` and extracts them to disk; a pack must equal the disk's tree. Returns whether
/// they were packed.
#[track_caller]
fn pack_agrees(layers: &[&[E]], limits: Limits) -> bool {
    let blobs: Vec<Vec<u8>> = layers.iter().map(|l| gzip(&tar_bytes(l))).collect();
    let disk = on_disk(&blobs, limits);
    match packed(&blobs, limits) {
        Ok(files) => {
            assert_eq!(Some(files), disk, "the pack differs from the disk's tree");
            true
        }
        Err(PackError::NotPackable(_)) => false,
        Err(e) => panic!("{e}"),
    }
}

#[track_caller]
fn packs(layers: &[&[E]]) {
    assert!(pack_agrees(layers, Limits::default()), "not packed");
}

#[test]
fn a_plain_catalog_is_packed_as_the_disk_has_it() {
    packs(&[&[
        E::Dir("configs/"),
        E::Dir("configs/a/"),
        E::File("configs/a/catalog.json", b"{\"schema\":\"olm.package\"}"),
        E::File("configs/b.yaml", b"schema: olm.package\n"),
        E::File("configs/.indexignore", b"b.yaml\n"),
        E::File("usr/bin/opm", b"binary"),
        E::Symlink("usr/lib/link", "/etc/passwd"),
        E::Special("dev/null", EntryType::Char),
    ]]);
}

#[test]
fn parents_without_entries_and_leading_slashes_are_packed() {
    packs(&[&[
        E::File("/configs/p/q/r.json", b"{}"),
        E::File("./configs/s.json", b"{}"),
    ]]);
}

#[test]
fn a_later_layer_replaces_files_and_whiteouts_elsewhere_are_ignored() {
    packs(&[
        &[
            E::File("configs/a/catalog.json", b"old"),
            E::File("configs/keep.json", b"kept"),
            E::File("etc/x", b"x"),
        ],
        &[
            E::File("configs/a/catalog.json", b"new"),
            E::File("configs/c.json", b"added"),
            E::File(".wh.etc", b""),
            E::File("usr/.wh..wh..opq", b""),
            E::File("configs/.wh..wh.plnk", b""),
        ],
    ]);
}

#[test]
fn what_only_the_disk_extraction_decides_is_left_to_it() {
    let base = E::File("configs/a.json", b"{}");
    for (why, layers) in [
        (
            "a symlink",
            vec![vec![base.clone(), E::Symlink("configs/l", "a.json")]],
        ),
        (
            "a hardlink",
            vec![vec![
                base.clone(),
                E::Hardlink("configs/h", "configs/a.json"),
            ]],
        ),
        (
            "a FIFO",
            vec![vec![base.clone(), E::Special("configs/f", EntryType::Fifo)]],
        ),
        (
            "a device",
            vec![vec![
                base.clone(),
                E::Special("configs/d", EntryType::Block),
            ]],
        ),
        (
            "a `..` path outside",
            vec![vec![base.clone(), E::File("../x", b"")]],
        ),
        (
            "a `..` path inside",
            vec![vec![E::File("configs/../../x", b"")]],
        ),
        (
            "a whiteout inside",
            vec![vec![base.clone()], vec![E::File("configs/.wh.a.json", b"")]],
        ),
        (
            "an opaque whiteout inside",
            vec![
                vec![base.clone()],
                vec![E::File("configs/.wh..wh..opq", b"")],
            ],
        ),
        (
            "a whiteout of the directory",
            vec![vec![base.clone()], vec![E::File(".wh.configs", b"")]],
        ),
        (
            "an opaque whiteout above",
            vec![vec![base.clone()], vec![E::File(".wh..wh..opq", b"")]],
        ),
        (
            "an invalid whiteout",
            vec![vec![base.clone(), E::File("x/.wh...", b"")]],
        ),
        (
            "a file over a directory",
            vec![
                vec![E::File("configs/a/x.json", b"")],
                vec![E::File("configs/a", b"")],
            ],
        ),
        (
            "a directory over a file",
            vec![vec![E::File("configs/a", b"")], vec![E::Dir("configs/a/")]],
        ),
        (
            "a path through a file",
            vec![vec![E::File("configs/a", b""), E::File("configs/a/b", b"")]],
        ),
        (
            "no catalog directory",
            vec![vec![E::File("other/a.json", b"")]],
        ),
        (
            "a catalog directory that is a file",
            vec![vec![E::File("configs", b"{}")]],
        ),
    ] {
        let layers: Vec<&[E]> = layers.iter().map(Vec::as_slice).collect();
        assert!(!pack_agrees(&layers, Limits::default()), "{why}: packed");
    }
}

#[test]
fn limits_are_left_to_the_disk_extraction() {
    let layer: &[E] = &[
        E::File("configs/a.json", b"0123456789"),
        E::File("configs/b.json", b""),
    ];
    let entries = Limits {
        max_entries: 1,
        ..Limits::default()
    };
    assert!(!pack_agrees(&[layer], entries));
    let bytes = Limits {
        max_extracted_bytes: 9,
        ..Limits::default()
    };
    assert!(!pack_agrees(&[layer], bytes));
}

#[test]
fn a_corrupt_layer_is_left_to_the_disk_extraction() {
    let dir = tempfile::tempdir().unwrap();
    let mut packer =
        Packer::create(&dir.path().join("p"), "configs".into(), Limits::default()).unwrap();
    let mut truncated = gzip(&tar_bytes(&[E::File("configs/a.json", &[b'x'; 4096])]));
    truncated.truncate(truncated.len() / 2);
    assert!(matches!(
        packer.apply_layer(&truncated[..]),
        Err(PackError::NotPackable(_))
    ));
    assert!(matches!(
        packer.apply_layer(&b"not a layer at all"[..]),
        Err(PackError::NotPackable(_))
    ));
}
