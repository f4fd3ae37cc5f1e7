//! Test layers: tar streams built from raw header fields, so hostile names survive.
#![allow(clippy::unwrap_used)]

use std::io::Write;

use tar::EntryType;

/// One tar entry, written with raw header fields so hostile names survive (the tar crate's
/// builder refuses `..` and absolute paths).
#[derive(Clone)]
pub(crate) enum E<'a> {
    File(&'a str, &'a [u8]),
    FileMode(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    Hardlink(&'a str, &'a str),
    Special(&'a str, EntryType),
}

pub(crate) fn tar_bytes(entries: &[E]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let (name, kind, mode, data, link): (&str, EntryType, u32, &[u8], Option<&str>) =
            match entry {
                E::File(n, d) => (n, EntryType::Regular, 0o644, d, None),
                E::FileMode(n, d, m) => (n, EntryType::Regular, *m, d, None),
                E::Dir(n) => (n, EntryType::Directory, 0o755, b"", None),
                E::Symlink(n, t) => (n, EntryType::Symlink, 0o777, b"", Some(t)),
                E::Hardlink(n, t) => (n, EntryType::Link, 0o644, b"", Some(t)),
                E::Special(n, k) => (n, *k, 0o644, b"", None),
            };
        let mut header = tar::Header::new_old();
        {
            let old = header.as_old_mut();
            old.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(link) = link {
                old.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
        }
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap()
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}
