//! The catalog pack against the disk extraction, from arbitrary bytes (one or two layers, as
//! `image_layer` splits them; seeds: small catalog and hostile tars under `configs/`): packing
//! either refuses (the disk extraction then decides) or holds exactly the regular files the disk
//! extraction leaves under `configs/`, and the packed walk then gives the directory walk's objects
//! or error.
#![no_main]

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use olm_api::fbc::packed::{PackedCatalog, walk_metas_packed_parallel};
use olm_api::fbc::walk_metas_dir;
use olm_image::extract::Extractor;
use olm_image::pack::{PackError, Packer};
use olm_image::{Limits, PathFilter};

type Files = BTreeMap<PathBuf, Vec<u8>>;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let limits = Limits {
        max_entries: 2_000,
        max_extracted_bytes: 4 << 20,
        max_download_bytes: 4 << 20,
    };
    let layers: Vec<&[u8]> = match data.split_first() {
        Some((b'2', rest)) => {
            let (a, b) = rest.split_at(rest.len() / 2);
            vec![a, b]
        }
        _ => vec![data],
    };
    let (pack, listing) = (dir.path().join("pack"), dir.path().join("pack.list"));
    let Ok(mut packer) = Packer::create(&pack, "configs".into(), limits) else {
        return;
    };
    let packed = layers
        .iter()
        .try_for_each(|layer| packer.apply_layer(*layer))
        .and_then(|()| packer.finish(&listing));
    match packed {
        Err(PackError::NotPackable(_)) => return,
        Err(e) => panic!("{e}"),
        Ok(()) => {}
    }
    // Packed: the disk extraction must succeed and leave the same files.
    let root = dir.path().join("root");
    std::fs::create_dir(&root).expect("root");
    let mut extractor = Extractor::new(&root, PathFilter::Under("configs".into()), limits);
    for (i, layer) in layers.iter().enumerate() {
        if let Err(e) = extractor.apply_layer(&format!("sha256:{i}"), *layer) {
            panic!("packed, but the disk extraction refused it: {e}");
        }
    }
    extractor
        .finish()
        .expect("packed, but the disk extraction refused it");
    let content = root.join("configs");
    let catalog = PackedCatalog::open(content.clone(), &pack, &listing).expect("our own listing");
    let file = std::fs::File::open(&pack).expect("pack");
    let from_pack: Files = catalog
        .files()
        .iter()
        .map(|f| {
            let mut bytes = vec![0; f.len as usize];
            file.read_exact_at(&mut bytes, f.offset).expect("range");
            (f.path.clone(), bytes)
        })
        .collect();
    let mut on_disk = Files::new();
    collect(&content, &content, &mut on_disk);
    assert_eq!(from_pack, on_disk, "the pack differs from the disk's tree");
    assert_eq!(
        walked(|f| walk_metas_packed_parallel(&catalog, 2, f)),
        walked(|f| walk_metas_dir(&content, f)),
        "the packed walk differs from the directory walk"
    );
});

fn collect(base: &Path, dir: &Path, out: &mut Files) {
    for entry in std::fs::read_dir(dir).expect("list").flatten() {
        let path = entry.path();
        if entry.file_type().expect("type").is_dir() {
            collect(base, &path, out);
        } else {
            let bytes = std::fs::read(&path).expect("read");
            out.insert(path.strip_prefix(base).expect("rel").to_path_buf(), bytes);
        }
    }
}

type Walk<'a> = &'a mut dyn FnMut(olm_api::fbc::Meta) -> Result<(), olm_api::fbc::WalkError>;

fn walked(
    walk: impl FnOnce(Walk<'_>) -> Result<(), olm_api::fbc::WalkError>,
) -> Result<Vec<(String, String, String, Vec<u8>, String)>, String> {
    let mut out = Vec::new();
    walk(&mut |m| {
        out.push((m.schema, m.package, m.name, m.blob, m.origin.to_string()));
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(out)
}
