use super::*;
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;

const LAYER: &str = "sha256:00000000000000000000000000000000000000000000000000000000000000aa";

use crate::test_tar::{E, gzip, tar_bytes};

/// A sandbox: `parent/` holds `root/` (the extraction target) and a sentinel file; every test
/// checks that `parent/` holds exactly these afterwards.
struct Sandbox {
    parent: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let parent = tempfile::tempdir().unwrap();
        fs::create_dir(parent.path().join("root")).unwrap();
        fs::write(parent.path().join("outside.txt"), "untouched").unwrap();
        Self { parent }
    }

    fn root(&self) -> PathBuf {
        self.parent.path().join("root")
    }

    fn extract_with(
        &self,
        filter: PathFilter,
        limits: Limits,
        layers: &[Vec<u8>],
    ) -> Result<(), ExtractError> {
        let mut extractor = Extractor::new(self.root(), filter, limits);
        for (i, layer) in layers.iter().enumerate() {
            let digest = format!("{}{i}", &LAYER[..LAYER.len() - 1]);
            extractor.apply_layer(&digest, &layer[..])?;
        }
        extractor.finish()
    }

    fn extract(&self, layers: &[&[E]]) -> Result<(), ExtractError> {
        let blobs: Vec<Vec<u8>> = layers.iter().map(|l| gzip(&tar_bytes(l))).collect();
        self.extract_with(PathFilter::Everything, Limits::default(), &blobs)
    }

    fn assert_nothing_outside(&self) {
        let names: BTreeSet<String> = fs::read_dir(self.parent.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            BTreeSet::from(["root".to_string(), "outside.txt".to_string()])
        );
        assert_eq!(
            fs::read_to_string(self.parent.path().join("outside.txt")).unwrap(),
            "untouched"
        );
    }

    fn tree(&self) -> BTreeSet<String> {
        fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
            for e in fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let rel = e
                    .path()
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let ft = e.file_type().unwrap();
                if ft.is_dir() {
                    out.insert(format!("{rel}/"));
                    walk(base, &e.path(), out);
                } else {
                    out.insert(rel);
                }
            }
        }
        let mut out = BTreeSet::new();
        walk(&self.root(), &self.root(), &mut out);
        out
    }
}

fn set<const N: usize>(items: [&str; N]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[track_caller]
fn expect_kind(
    result: Result<(), ExtractError>,
    entry: &str,
    check: impl Fn(&ExtractErrorKind) -> bool,
) {
    let err = result.expect_err("extraction should fail");
    assert_eq!(err.entry, entry, "{err}");
    assert!(err.layer_digest.starts_with("sha256:"), "{err}");
    assert!(check(&err.kind), "unexpected kind: {err}");
}

#[test]
fn parent_directory_entry_is_rejected_and_nothing_escapes() {
    let sb = Sandbox::new();
    expect_kind(sb.extract(&[&[E::File("../evil", b"x")]]), "../evil", |k| {
        matches!(k, ExtractErrorKind::PathTraversal)
    });
    sb.assert_nothing_outside();
}

#[test]
fn nested_parent_directory_entry_is_rejected() {
    let sb = Sandbox::new();
    expect_kind(
        sb.extract(&[&[E::File("a/../../evil", b"x")]]),
        "a/../../evil",
        |k| matches!(k, ExtractErrorKind::PathTraversal),
    );
    sb.assert_nothing_outside();
}

#[test]
fn absolute_entry_path_lands_inside_the_root() {
    let sb = Sandbox::new();
    sb.extract(&[&[E::File("/abs/file", b"x"), E::File("./dot/file", b"y")]])
        .unwrap();
    assert_eq!(sb.tree(), set(["abs/", "abs/file", "dot/", "dot/file"]));
    sb.assert_nothing_outside();
}

#[test]
fn symlink_pointing_outside_the_root_is_rejected() {
    let sb = Sandbox::new();
    expect_kind(
        sb.extract(&[&[E::Symlink("a/link", "../../outside.txt")]]),
        "a/link",
        |k| matches!(k, ExtractErrorKind::SymlinkEscapes { target } if target == "../../outside.txt"),
    );
    sb.assert_nothing_outside();
}

#[test]
fn absolute_symlink_is_rewritten_relative_to_the_root() {
    let sb = Sandbox::new();
    sb.extract(&[&[
        E::File("etc/passwd", b"image"),
        E::Symlink("a/b/link", "/etc/passwd"),
    ]])
    .unwrap();
    let link = sb.root().join("a/b/link");
    assert_eq!(
        fs::read_link(&link).unwrap(),
        PathBuf::from("../../etc/passwd")
    );
    assert_eq!(fs::read_to_string(&link).unwrap(), "image");
    sb.assert_nothing_outside();
}

#[test]
fn in_root_and_dangling_symlinks_are_kept() {
    let sb = Sandbox::new();
    sb.extract(&[&[
        E::File("data/v1.json", b"{}"),
        E::Symlink("data/latest.json", "v1.json"),
        E::Symlink("data/missing", "../nowhere/file"),
    ]])
    .unwrap();
    assert_eq!(
        fs::read_to_string(sb.root().join("data/latest.json")).unwrap(),
        "{}"
    );
    assert!(
        fs::symlink_metadata(sb.root().join("data/missing"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    sb.assert_nothing_outside();
}

#[test]
fn writing_through_a_symlink_is_rejected() {
    let sb = Sandbox::new();
    expect_kind(
        sb.extract(&[&[E::Symlink("escape", ".."), E::File("escape/pwned", b"x")]]),
        "escape/pwned",
        |k| matches!(k, ExtractErrorKind::ThroughSymlink { ancestor } if ancestor == "escape"),
    );
    sb.assert_nothing_outside();
}

#[test]
fn writing_through_a_symlink_from_a_lower_layer_is_rejected() {
    let sb = Sandbox::new();
    expect_kind(
        sb.extract(&[
            &[E::Dir("d"), E::Symlink("d/up", "..")],
            &[E::File("d/up/x", b"x")],
        ]),
        "d/up/x",
        |k| matches!(k, ExtractErrorKind::ThroughSymlink { .. }),
    );
    sb.assert_nothing_outside();
}

#[test]
fn symlink_chain_that_escapes_is_rejected() {
    // `a/b/root` resolves to the root (fine on its own); `a/b/x` goes one step above it.
    let sb = Sandbox::new();
    expect_kind(
        sb.extract(&[&[
            E::Symlink("a/b/root", "../.."),
            E::Symlink("a/b/x", "root/.."),
        ]]),
        "a/b/x",
        |k| matches!(k, ExtractErrorKind::SymlinkEscapes { .. }),
    );
    sb.assert_nothing_outside();
}

#[test]
fn symlink_made_to_escape_by_a_later_layer_is_rejected() {
    // `a/link -> b/../..` resolves to the root while `a/b` is a directory; once layer 2 turns
    // `a/b` into a link to `..` (itself harmless), `a/link` resolves one level above the root.
    let sb = Sandbox::new();
    let result = sb.extract(&[
        &[E::Dir("a/b"), E::Symlink("a/link", "b/../..")],
        &[E::Symlink("a/b", "..")],
    ]);
    let err = result.expect_err("escape through a replaced directory");
    assert_eq!(err.entry, "a/link");
    assert!(
        matches!(err.kind, ExtractErrorKind::SymlinkEscapes { .. }),
        "{err}"
    );
    sb.assert_nothing_outside();
}

#[test]
fn hardlink_to_a_path_outside_the_root_is_rejected() {
    for target in ["../outside.txt", "/etc/passwd", "/outside.txt"] {
        let sb = Sandbox::new();
        expect_kind(sb.extract(&[&[E::Hardlink("hl", target)]]), "hl", |k| {
            matches!(k, ExtractErrorKind::InvalidHardlink { .. })
        });
        sb.assert_nothing_outside();
    }
}

#[test]
fn hardlink_through_a_symlink_is_rejected() {
    let sb = Sandbox::new();
    expect_kind(
        sb.extract(&[&[
            E::File("real/f", b"x"),
            E::Symlink("s", "real"),
            E::Hardlink("hl", "s/f"),
        ]]),
        "hl",
        |k| matches!(k, ExtractErrorKind::InvalidHardlink { .. }),
    );
    sb.assert_nothing_outside();
}

#[test]
fn hardlink_to_an_extracted_file_shares_its_content() {
    let sb = Sandbox::new();
    sb.extract(&[&[E::File("f", b"same"), E::Hardlink("g", "f")]])
        .unwrap();
    let (f, g) = (
        fs::metadata(sb.root().join("f")).unwrap(),
        fs::metadata(sb.root().join("g")).unwrap(),
    );
    assert_eq!(f.ino(), g.ino());
    assert_eq!(fs::read_to_string(sb.root().join("g")).unwrap(), "same");
}

#[test]
fn device_and_fifo_entries_are_rejected() {
    for (kind, name) in [
        (EntryType::Char, "character device"),
        (EntryType::Block, "block device"),
        (EntryType::Fifo, "fifo"),
    ] {
        let sb = Sandbox::new();
        expect_kind(
            sb.extract(&[&[E::Special("dev/thing", kind)]]),
            "dev/thing",
            |k| matches!(k, ExtractErrorKind::UnsupportedEntryType(t) if t == name),
        );
        assert!(!sb.root().join("dev/thing").exists());
        sb.assert_nothing_outside();
    }
}

#[test]
fn entry_count_limit_is_enforced() {
    let sb = Sandbox::new();
    let layer = gzip(&tar_bytes(&[
        E::File("a", b"1"),
        E::File("b", b"2"),
        E::File("c", b"3"),
    ]));
    let limits = Limits {
        max_entries: 2,
        ..Limits::default()
    };
    expect_kind(
        sb.extract_with(PathFilter::Everything, limits, &[layer]),
        "c",
        |k| matches!(k, ExtractErrorKind::TooManyEntries { limit: 2 }),
    );
    sb.assert_nothing_outside();
}

#[test]
fn extracted_byte_limit_is_enforced_across_layers() {
    let sb = Sandbox::new();
    let l1 = gzip(&tar_bytes(&[E::File("a", &[0u8; 600])]));
    let l2 = gzip(&tar_bytes(&[E::File("b", &[0u8; 600])]));
    let limits = Limits {
        max_extracted_bytes: 1000,
        ..Limits::default()
    };
    expect_kind(
        sb.extract_with(PathFilter::Everything, limits, &[l1, l2]),
        "b",
        |k| matches!(k, ExtractErrorKind::TooManyBytes { limit: 1000 }),
    );
    assert!(!sb.root().join("b").exists());
}

#[test]
fn modes_keep_owner_rwx_and_drop_setuid_setgid_sticky() {
    let sb = Sandbox::new();
    sb.extract(&[&[
        E::FileMode("suid", b"x", 0o4755),
        E::FileMode("locked", b"x", 0o000),
        E::FileMode("plain", b"x", 0o644),
    ]])
    .unwrap();
    let mode = |n: &str| fs::metadata(sb.root().join(n)).unwrap().mode() & 0o7777;
    assert_eq!(mode("suid"), 0o755);
    assert_eq!(mode("locked"), 0o700);
    assert_eq!(mode("plain"), 0o744);
}

#[test]
fn whiteouts_remove_lower_layer_content_only() {
    let sb = Sandbox::new();
    sb.extract(&[
        &[
            E::File("a/x", b"1"),
            E::File("a/y", b"1"),
            E::File("b/old", b"1"),
            E::File("c/keep", b"1"),
        ],
        &[
            E::File("a/.wh.x", b""),
            E::File("b/.wh..wh..opq", b""),
            E::File("b/new", b"2"),
            E::File("c/.wh..wh.plnk", b""),
        ],
    ])
    .unwrap();
    assert_eq!(sb.tree(), set(["a/", "a/y", "b/", "b/new", "c/", "c/keep"]));
}

#[test]
fn opaque_whiteout_after_new_content_in_the_same_layer_keeps_that_content() {
    let sb = Sandbox::new();
    sb.extract(&[
        &[
            E::File("d/old", b"1"),
            E::File("d/sub/old", b"1"),
            E::File("d/sub2/old", b"1"),
        ],
        &[
            E::File("d/new", b"2"),
            E::File("d/sub/new", b"2"),
            E::File("d/.wh..wh..opq", b""),
        ],
    ])
    .unwrap();
    assert_eq!(sb.tree(), set(["d/", "d/new", "d/sub/", "d/sub/new"]));
}

#[test]
fn whiteout_of_a_directory_removes_the_whole_tree() {
    let sb = Sandbox::new();
    sb.extract(&[
        &[E::File("gone/deep/file", b"1"), E::File("stay", b"1")],
        &[E::File(".wh.gone", b"")],
    ])
    .unwrap();
    assert_eq!(sb.tree(), set(["stay"]));
}

#[test]
fn whiteout_naming_dot_or_dotdot_is_rejected() {
    let sb = Sandbox::new();
    expect_kind(sb.extract(&[&[E::File("a/.wh..", b"")]]), "a/.wh..", |k| {
        matches!(k, ExtractErrorKind::InvalidWhiteout)
    });
    sb.assert_nothing_outside();
}

#[test]
fn later_layers_replace_files_with_directories_and_back() {
    let sb = Sandbox::new();
    sb.extract(&[
        &[E::File("x", b"file"), E::File("y/inner", b"1")],
        &[
            E::Dir("x"),
            E::File("x/child", b"c"),
            E::File("y", b"now a file"),
        ],
    ])
    .unwrap();
    assert_eq!(sb.tree(), set(["x/", "x/child", "y"]));
    assert_eq!(
        fs::read_to_string(sb.root().join("y")).unwrap(),
        "now a file"
    );
}

#[test]
fn entry_below_a_file_is_rejected() {
    let sb = Sandbox::new();
    expect_kind(
        sb.extract(&[&[E::File("f", b"1"), E::File("f/child", b"2")]]),
        "f/child",
        |k| matches!(k, ExtractErrorKind::NotADirectory { ancestor } if ancestor == "f"),
    );
}

#[test]
fn path_filter_extracts_only_the_catalog_directory_at_its_path() {
    let sb = Sandbox::new();
    let layer = gzip(&tar_bytes(&[
        E::File("bin/opm", b"binary"),
        E::Special("dev/console", EntryType::Char),
        E::Symlink("etc/ssl", "/usr/share/ssl"),
        E::File("configs/pkg/catalog.json", b"{}"),
        E::File("configsX/not-this", b"x"),
    ]));
    let filter = PathFilter::from_label_value("/configs").unwrap();
    sb.extract_with(filter, Limits::default(), &[layer])
        .unwrap();
    assert_eq!(
        sb.tree(),
        set(["configs/", "configs/pkg/", "configs/pkg/catalog.json"])
    );
}

#[test]
fn hostile_entry_inside_the_filtered_directory_is_still_rejected() {
    let sb = Sandbox::new();
    let layer = gzip(&tar_bytes(&[E::Symlink(
        "configs/x",
        "../../../outside.txt",
    )]));
    let err = sb
        .extract_with(
            PathFilter::from_label_value("configs/").unwrap(),
            Limits::default(),
            &[layer],
        )
        .unwrap_err();
    assert!(
        matches!(err.kind, ExtractErrorKind::SymlinkEscapes { .. }),
        "{err}"
    );
    sb.assert_nothing_outside();
}

#[test]
fn label_values_climbing_out_of_the_image_are_refused() {
    assert_eq!(PathFilter::from_label_value("../etc"), None);
    assert_eq!(
        PathFilter::from_label_value("/"),
        Some(PathFilter::Everything)
    );
    assert_eq!(
        PathFilter::from_label_value("./configs/"),
        Some(PathFilter::Under(PathBuf::from("configs")))
    );
}

#[test]
fn corrupt_gzip_is_a_typed_error_naming_the_layer() {
    let sb = Sandbox::new();
    let mut blob = gzip(&tar_bytes(&[E::File("a", &[7u8; 4096])]));
    let len = blob.len();
    blob.truncate(len / 2);
    let err = sb
        .extract_with(PathFilter::Everything, Limits::default(), &[blob])
        .unwrap_err();
    assert!(
        matches!(err.kind, ExtractErrorKind::Corrupt { .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("failed to extract layer sha256:"),
        "{err}"
    );
    assert!(err.is_hostile_or_corrupt());
}

#[test]
fn zstd_and_uncompressed_layers_are_extracted() {
    let sb = Sandbox::new();
    let zstd = ruzstd::encoding::compress_to_vec(
        &tar_bytes(&[E::File("z", b"zstd")])[..],
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    let plain = tar_bytes(&[E::File("p", b"plain")]);
    sb.extract_with(PathFilter::Everything, Limits::default(), &[zstd, plain])
        .unwrap();
    assert_eq!(fs::read_to_string(sb.root().join("z")).unwrap(), "zstd");
    assert_eq!(fs::read_to_string(sb.root().join("p")).unwrap(), "plain");
}

#[test]
fn error_message_names_layer_digest_and_entry() {
    let sb = Sandbox::new();
    let err = sb.extract(&[&[E::File("../evil", b"x")]]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to extract layer {}0: entry \"../evil\": path contains a \"..\" component",
            &LAYER[..LAYER.len() - 1]
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile cases of issue 14 item 6: each is handled by the policy table of `extract.rs`; these
// tests pin the outcome. Entries are built byte by byte where the tar crate's builder would
// refuse them (non-UTF-8 and `..` long names, absolute PAX paths).

/// One raw tar header block (ustar magic, checksum computed) for `name` (≤ 100 bytes).
fn raw_header(name: &[u8], kind: EntryType, mode: u32, size: u64, link: &[u8]) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    {
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name);
        old.linkname[..link.len()].copy_from_slice(link);
    }
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_cksum();
    header
}

/// Appends a GNU long-name record for `name`, then a regular file whose header name is cut.
fn gnu_long_file(out: &mut Vec<u8>, name: &[u8], data: &[u8]) {
    let mut long = name.to_vec();
    long.push(0);
    append(
        out,
        raw_header(
            b"././@LongLink",
            EntryType::GNULongName,
            0o644,
            long.len() as u64,
            b"",
        ),
        &long,
    );
    let cut = &name[..name.len().min(100)];
    append(
        out,
        raw_header(cut, EntryType::Regular, 0o644, data.len() as u64, b""),
        data,
    );
}

/// Appends a PAX extended header carrying `path`, then a regular file named `placeholder`.
fn pax_file(out: &mut Vec<u8>, path: &[u8], data: &[u8]) {
    let mut record = b" path=".to_vec();
    record.extend_from_slice(path);
    record.push(b'\n');
    // The length prefix counts itself.
    let mut len = record.len() + 1;
    while format!("{len}").len() + record.len() != len {
        len += 1;
    }
    let mut pax = format!("{len}").into_bytes();
    pax.extend_from_slice(&record);
    append(
        out,
        raw_header(
            b"PaxHeader",
            EntryType::XHeader,
            0o644,
            pax.len() as u64,
            b"",
        ),
        &pax,
    );
    append(
        out,
        raw_header(
            b"placeholder",
            EntryType::Regular,
            0o644,
            data.len() as u64,
            b"",
        ),
        data,
    );
}

fn append(out: &mut Vec<u8>, header: tar::Header, data: &[u8]) {
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
}

fn finish_tar(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&[0u8; 1024]);
    out
}

#[test]
fn whiteouts_under_a_symlinked_parent_are_rejected_and_touch_nothing() {
    for (whiteout, kept) in [
        ("link/.wh.keep", "real/keep"),
        ("link/.wh..wh..opq", "real/keep"),
        ("up/.wh.outside.txt", "real/keep"),
    ] {
        let sb = Sandbox::new();
        let result = sb.extract(&[
            &[
                E::Dir("real"),
                E::File("real/keep", b"k"),
                E::Symlink("link", "real"),
                E::Symlink("up", ".."),
            ],
            &[E::File(whiteout, b"")],
        ]);
        let ancestor = whiteout.split('/').next().unwrap_or_default().to_string();
        expect_kind(
            result,
            whiteout,
            |k| matches!(k, ExtractErrorKind::ThroughSymlink { ancestor: a } if *a == ancestor),
        );
        assert!(sb.root().join(kept).exists(), "{whiteout} removed {kept}");
        sb.assert_nothing_outside();
    }
}

#[test]
fn hardlinks_to_directories_missing_later_or_root_entries_are_rejected() {
    for (entries, link_target, reason) in [
        (vec![E::Dir("d")], "d", "is not an extracted regular file"),
        (vec![], "missing", "is not an extracted regular file"),
        (
            vec![E::Dir("d")],
            "d/missing",
            "is not an extracted regular file",
        ),
        (vec![], ".", "is the image root"),
        (vec![], "./", "is the image root"),
        (vec![], "a/../../x", "contains a \"..\" component"),
    ] {
        let sb = Sandbox::new();
        let mut layer = entries;
        layer.push(E::Hardlink("h", link_target));
        layer.push(E::File("later", b"x"));
        expect_kind(sb.extract(&[&layer]), "h", |k| {
            matches!(k, ExtractErrorKind::InvalidHardlink { target, reason: r }
                if target == link_target && *r == reason)
        });
        assert!(!sb.root().join("h").exists());
        sb.assert_nothing_outside();
    }
    // A link to an entry that comes later in the same layer.
    let sb = Sandbox::new();
    expect_kind(
        sb.extract(&[&[E::Hardlink("h", "later"), E::File("later", b"x")]]),
        "h",
        |k| matches!(k, ExtractErrorKind::InvalidHardlink { .. }),
    );
}

#[test]
fn a_hardlink_to_itself_is_skipped_and_one_outside_the_filter_is_rejected() {
    let sb = Sandbox::new();
    sb.extract(&[&[E::Hardlink("self", "self")]]).unwrap();
    assert!(sb.tree().is_empty(), "{:?}", sb.tree());
    let sb = Sandbox::new();
    let layer = gzip(&tar_bytes(&[
        E::File("other/secret", b"x"),
        E::Hardlink("configs/h", "other/secret"),
    ]));
    expect_kind(
        sb.extract_with(
            PathFilter::Under(PathBuf::from("configs")),
            Limits::default(),
            &[layer],
        ),
        "configs/h",
        |k| {
            matches!(k, ExtractErrorKind::InvalidHardlink { reason, .. }
                if *reason == "is outside the extracted directory")
        },
    );
    sb.assert_nothing_outside();
}

#[test]
fn symlink_loops_and_chains_past_the_hop_limit_cannot_reach_outside() {
    let names: Vec<String> = (0..=MAX_SYMLINK_HOPS + 4)
        .map(|i| format!("l{i}"))
        .collect();
    let chain = |end: &'static str| {
        let mut layer: Vec<E> = vec![
            E::Symlink("loop-a", "loop-b"),
            E::Symlink("loop-b", "loop-a"),
            E::File("file", b"end"),
        ];
        for pair in names.windows(2) {
            layer.push(E::Symlink(&pair[0], &pair[1]));
        }
        layer.push(E::Symlink(names.last().unwrap(), end));
        layer
    };
    // A loop, and a chain of 45 links ending inside: kept. The kernel refuses to follow the loop
    // or the whole chain (ELOOP); the chain's tail still works.
    let sb = Sandbox::new();
    sb.extract(&[&chain("file")]).unwrap();
    for start in ["loop-a", "l0"] {
        let e = fs::read(sb.root().join(start)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(40), "{start}: {e} (expected ELOOP)");
    }
    assert_eq!(fs::read(sb.root().join("l10")).unwrap(), b"end");
    sb.assert_nothing_outside();
    // The same chain ending outside: every link is checked, and the links within the hop limit
    // of the end reach outside, so the image is refused.
    let sb = Sandbox::new();
    let err = sb.extract(&[&chain("../outside.txt")]).unwrap_err();
    assert!(
        matches!(err.kind, ExtractErrorKind::SymlinkEscapes { .. }),
        "{err}"
    );
    sb.assert_nothing_outside();
}

#[test]
fn gnu_and_pax_long_names_with_dotdot_are_rejected_and_absolute_ones_land_inside() {
    let deep = format!("a/{}/../../../../evil", "b".repeat(150));
    let mut gnu = Vec::new();
    gnu_long_file(&mut gnu, deep.as_bytes(), b"x");
    let sb = Sandbox::new();
    let err = sb
        .extract_with(
            PathFilter::Everything,
            Limits::default(),
            &[finish_tar(gnu)],
        )
        .unwrap_err();
    assert_eq!(err.entry, deep);
    assert!(matches!(err.kind, ExtractErrorKind::PathTraversal), "{err}");
    sb.assert_nothing_outside();

    let mut pax = Vec::new();
    pax_file(&mut pax, b"../pax-evil", b"x");
    let sb = Sandbox::new();
    let err = sb
        .extract_with(
            PathFilter::Everything,
            Limits::default(),
            &[finish_tar(pax)],
        )
        .unwrap_err();
    assert_eq!(err.entry, "../pax-evil");
    assert!(matches!(err.kind, ExtractErrorKind::PathTraversal), "{err}");
    sb.assert_nothing_outside();

    let long_abs = format!("/{}/file", "c".repeat(150));
    let mut both = Vec::new();
    pax_file(&mut both, long_abs.as_bytes(), b"pax");
    gnu_long_file(
        &mut both,
        format!("/abs/{}", "d".repeat(150)).as_bytes(),
        b"gnu",
    );
    let sb = Sandbox::new();
    sb.extract_with(
        PathFilter::Everything,
        Limits::default(),
        &[finish_tar(both)],
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(sb.root().join(&long_abs[1..])).unwrap(),
        "pax"
    );
    assert_eq!(
        fs::read_to_string(sb.root().join(format!("abs/{}", "d".repeat(150)))).unwrap(),
        "gnu"
    );
    sb.assert_nothing_outside();
}

#[test]
fn setuid_and_setgid_are_dropped_from_directories() {
    let mut out = Vec::new();
    append(
        &mut out,
        raw_header(b"s/", EntryType::Directory, 0o6777, 0, b""),
        b"",
    );
    append(
        &mut out,
        raw_header(b"t/", EntryType::Directory, 0o1000, 0, b""),
        b"",
    );
    let sb = Sandbox::new();
    sb.extract_with(
        PathFilter::Everything,
        Limits::default(),
        &[finish_tar(out)],
    )
    .unwrap();
    let mode = |n: &str| fs::metadata(sb.root().join(n)).unwrap().mode() & 0o7777;
    assert_eq!(mode("s"), 0o777);
    assert_eq!(mode("t"), 0o700);
}

#[test]
fn a_directory_replaces_a_symlink_instead_of_writing_through_it() {
    // Across layers, with a link that escapes (gone before the final check)...
    let sb = Sandbox::new();
    sb.extract(&[
        &[E::Symlink("d", "..")],
        &[E::Dir("d"), E::File("d/x", b"inside")],
    ])
    .unwrap();
    let meta = fs::symlink_metadata(sb.root().join("d")).unwrap();
    assert!(meta.is_dir() && !meta.file_type().is_symlink());
    assert_eq!(fs::read_to_string(sb.root().join("d/x")).unwrap(), "inside");
    sb.assert_nothing_outside();
    // ...and within one layer.
    let sb = Sandbox::new();
    sb.extract(&[&[E::Symlink("e", "/"), E::Dir("e"), E::File("e/y", b"inside")]])
        .unwrap();
    assert!(fs::symlink_metadata(sb.root().join("e")).unwrap().is_dir());
    sb.assert_nothing_outside();
}

#[test]
fn non_utf8_names_are_kept_byte_for_byte() {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    append(
        &mut out,
        raw_header(b"caf\xe9", EntryType::Regular, 0o644, 2, b""),
        b"ok",
    );
    let sb = Sandbox::new();
    sb.extract_with(
        PathFilter::Everything,
        Limits::default(),
        &[finish_tar(out)],
    )
    .unwrap();
    let names: Vec<Vec<u8>> = fs::read_dir(sb.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect();
    assert_eq!(names, vec![b"caf\xe9".to_vec()]);
}

#[test]
fn names_the_filesystem_refuses_are_a_hostile_image_not_an_io_error() {
    // A 300-byte component is over NAME_MAX (255).
    let name = "n".repeat(300);
    let mut out = Vec::new();
    gnu_long_file(&mut out, name.as_bytes(), b"x");
    let sb = Sandbox::new();
    let err = sb
        .extract_with(
            PathFilter::Everything,
            Limits::default(),
            &[finish_tar(out)],
        )
        .unwrap_err();
    assert!(
        matches!(err.kind, ExtractErrorKind::InvalidName { .. }),
        "{err}"
    );
    assert!(
        err.is_hostile_or_corrupt(),
        "must not be retried as a disk error"
    );
    assert!(
        err.to_string()
            .contains("entry name refused by the filesystem: File name too long"),
        "{err}"
    );
    sb.assert_nothing_outside();
}

/// A tar header declaring a 9 GiB file (over the default 8 GiB limit), followed by as many
/// zeros as `tail` gives.
fn bomb_header() -> Vec<u8> {
    raw_header(b"bomb", EntryType::Regular, 0o644, 9 << 30, b"")
        .as_bytes()
        .to_vec()
}

#[test]
fn a_gzip_bomb_is_refused_at_the_default_byte_limit_before_writing() {
    // 64 MiB of zeros after the header compress to about 64 KiB.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bomb_header()).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        gz.write_all(&zeros).unwrap();
    }
    let blob = gz.finish().unwrap();
    assert!(blob.len() < 1 << 20);
    let sb = Sandbox::new();
    let err = sb
        .extract_with(PathFilter::Everything, Limits::default(), &[blob])
        .unwrap_err();
    assert!(
        matches!(err.kind, ExtractErrorKind::TooManyBytes { limit } if limit == 8 << 30),
        "{err}"
    );
    assert!(sb.tree().is_empty(), "wrote {:?}", sb.tree());
}

#[test]
fn a_zstd_bomb_is_refused_at_the_default_byte_limit_before_writing() {
    // A handmade zstd frame: the header as a raw block, then RLE blocks of zeros (4 bytes
    // each for 128 KiB): about 300 KB that would decode to 9 GiB.
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x38];
    let block = |last: bool, kind: u32, size: u32| {
        let v = u32::from(last) | (kind << 1) | (size << 3);
        v.to_le_bytes()[..3].to_vec()
    };
    let header = bomb_header();
    frame.extend(block(false, 0, header.len() as u32));
    frame.extend(&header);
    let blocks = (9u64 << 30) / (128 << 10);
    for i in 0..blocks {
        frame.extend(block(i + 1 == blocks, 1, 128 << 10));
        frame.push(0);
    }
    let sb = Sandbox::new();
    let err = sb
        .extract_with(PathFilter::Everything, Limits::default(), &[frame])
        .unwrap_err();
    assert!(
        matches!(err.kind, ExtractErrorKind::TooManyBytes { limit } if limit == 8 << 30),
        "{err}"
    );
    assert!(sb.tree().is_empty(), "wrote {:?}", sb.tree());
}

/// A plain tar of `count` empty files under `junk/`, generated while it is read.
struct ManyEntries {
    next: u64,
    count: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for ManyEntries {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            if self.next < self.count {
                let name = format!("junk/{}", self.next);
                self.buf.extend_from_slice(
                    raw_header(name.as_bytes(), EntryType::Regular, 0o644, 0, b"").as_bytes(),
                );
                self.next += 1;
            } else if self.next == self.count {
                self.buf.extend_from_slice(&[0u8; 1024]);
                self.next += 1;
            } else {
                return Ok(0);
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[test]
fn a_layer_of_a_million_and_one_entries_stops_at_the_default_entry_limit() {
    let limit = Limits::default().max_entries;
    let sb = Sandbox::new();
    // Entries outside the filter are skipped but still counted, so no inode is spent here.
    let mut extractor = Extractor::new(
        sb.root(),
        PathFilter::Under(PathBuf::from("configs")),
        Limits::default(),
    );
    let err = extractor
        .apply_layer(
            LAYER,
            ManyEntries {
                next: 0,
                count: limit + 1,
                buf: Vec::new(),
                pos: 0,
            },
        )
        .unwrap_err();
    assert!(
        matches!(err.kind, ExtractErrorKind::TooManyEntries { limit: l } if l == limit),
        "{err}"
    );
    assert_eq!(err.entry, format!("junk/{limit}"));
    assert!(sb.tree().is_empty());
}
