#![allow(clippy::unwrap_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::parse::parse_file;
use super::*;

const DIGEST: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn conf(text: &str) -> RegistriesConf {
    RegistriesConf::merge([
        parse_file(Path::new("/etc/containers/registries.conf"), text, false)
            .unwrap_or_else(|e| panic!("{e}")),
    ])
}

fn error(text: &str) -> RegistriesConfError {
    parse_file(Path::new("/conf/registries.conf"), text, false).unwrap_err()
}

fn image(reference: &str) -> ImageRef {
    ImageRef::parse(reference).unwrap()
}

/// `reference [insecure] [mirror] [blocked by PREFIX]` per source.
fn sources(conf: &RegistriesConf, reference: &str) -> Vec<String> {
    conf.pull_sources(&image(reference))
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|s| {
            let mut line = s.reference.to_string();
            if s.insecure {
                line.push_str(" insecure");
            }
            if s.mirror {
                line.push_str(" mirror");
            }
            if let Some(b) = s.blocked {
                line.push_str(&format!(" blocked by {}", b.prefix));
            }
            line
        })
        .collect()
}

#[test]
fn prefix_defaults_to_location_and_trailing_slashes_are_dropped() {
    let conf = conf(
        r#"
[[registry]]
location = "registry.example.com/team/"
insecure = true

[[registry]]
prefix = "*.example.org"
"#,
    );
    let r = &conf.registries()[1];
    assert_eq!(r.prefix, "registry.example.com/team");
    assert_eq!(r.location, "registry.example.com/team");
    assert!(r.insecure && !r.blocked && r.mirrors.is_empty());
    assert_eq!(r.origin.line, 2);
    let wildcard = &conf.registries()[0];
    assert_eq!(
        (wildcard.prefix.as_str(), wildcard.location.as_str()),
        ("*.example.org", "")
    );
    assert_eq!(wildcard.origin.line, 6);
}

#[test]
fn invalid_files_are_reported_with_file_line_and_upstreams_words() {
    let cases: &[(&str, Option<usize>, &str)] = &[
        (
            "[[registry]]\nlocation = \"a.io\"\ninsecure = \"yes\"\n",
            Some(3),
            "invalid type",
        ),
        ("[[registry]\n", Some(1), ""),
        (
            "\n\n[[registry]]\nprefix = \"a.io\"\nlocation = 'https://b.io'\n",
            Some(5),
            "invalid location 'https://b.io': URI schemes are not supported",
        ),
        (
            "[[registry]]\ninsecure = true\n",
            Some(1),
            "invalid condition: both location and prefix are unset",
        ),
        (
            "\n[[registry]]\nprefix = \"a.io/x\"\n",
            Some(2),
            "invalid condition: location is unset and prefix is not in the format: *.example.com",
        ),
        (
            "[[registry]]\nlocation = \"a.io\"\npull-from-mirror = \"all\"\n",
            Some(3),
            "pull-from-mirror must not be set for a non-mirror registry \"a.io\"",
        ),
        (
            "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\ninsecure = true\n",
            Some(3),
            "invalid condition: mirror location is unset",
        ),
        (
            "[[registry]]\nlocation = \"a.io\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"tag-only\"\n",
            Some(6),
            "cannot set mirror usage mirror-by-digest-only for the registry (\"a.io\") and pull-from-mirror for per-mirror (\"m.io\") at the same time",
        ),
        (
            "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"sometimes\"\n",
            Some(5),
            "unsupported pull-from-mirror value \"sometimes\" for mirror \"m.io\"",
        ),
        (
            "[[registry]]\nprefix = \"a.io/x\"\nlocation = \"b.io\"\n[[registry]]\nprefix = \"a.io/y\"\nlocation = \"b.io\"\ninsecure = true\n",
            Some(4),
            "registry 'b.io' is defined multiple times with conflicting 'insecure' setting",
        ),
        (
            "[[registry]]\nlocation = \"b.io\"\n[[registry]]\nprefix = \"c.io\"\nlocation = \"b.io\"\nblocked = true\n",
            Some(3),
            "registry 'b.io' is defined multiple times with conflicting 'blocked' setting",
        ),
        (
            "[[registry]]\nprefix = \"*.example.com:5000\"\n",
            Some(1),
            "Wildcarded prefix should be in the format: *.example.com. Current prefix \"*.example.com:5000\" is incorrectly formatted",
        ),
        (
            "[registries.search]\nregistries = [\"a.io\"]\n[[registry]]\nlocation = \"b.io\"\n",
            None,
            "mixing sysregistry v1/v2 is not supported",
        ),
    ];
    for (text, line, message) in cases {
        let RegistriesConfError::Invalid {
            path,
            line: got_line,
            message: got,
        } = error(text)
        else {
            panic!("{text:?}: not an Invalid error");
        };
        assert_eq!(path, Path::new("/conf/registries.conf"), "{text:?}");
        assert_eq!(got_line, *line, "{text:?}: {got}");
        assert!(got.contains(message), "{text:?}: {got:?} lacks {message:?}");
    }
    let shown = error("[[registry]]\nlocation = \"a.io\"\n\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"never\"\n").to_string();
    assert_eq!(
        shown,
        "invalid registries configuration /conf/registries.conf, line 6: unsupported pull-from-mirror value \"never\" for mirror \"m.io\""
    );
}

#[test]
fn the_first_entry_of_a_prefix_wins_and_entries_are_sorted_by_prefix() {
    let conf = conf(
        r#"
[[registry]]
prefix = "z.io"
location = "first.io"
[[registry]]
prefix = "a.io"
location = "a.io"
[[registry]]
prefix = "z.io"
location = "second.io"
"#,
    );
    let prefixes: Vec<(&str, &str)> = conf
        .registries()
        .iter()
        .map(|r| (r.prefix.as_str(), r.location.as_str()))
        .collect();
    assert_eq!(prefixes, [("a.io", "a.io"), ("z.io", "first.io")]);
}

#[test]
fn keys_for_unqualified_names_and_unknown_keys_are_ignored() {
    let conf = conf(
        r#"
unqualified-search-registries = ["docker.io"]
short-name-mode = "enforcing"
credential-helpers = ["containers-auth.json"]
something-new = 1
[aliases]
"busybox" = "docker.io/library/busybox"
[[registry]]
location = "a.io"
colour = "blue"
"#,
    );
    assert_eq!(conf.registries().len(), 1);
}

#[test]
fn v1_lists_become_blocked_and_insecure_registries_but_not_in_drop_ins() {
    let text = r#"
[registries.search]
registries = ['search.io']
[registries.insecure]
registries = ['plain.io', 'both.io']
[registries.block]
registries = ['bad.io', 'both.io/']
"#;
    let conf = conf(text);
    let flags: Vec<(&str, bool, bool)> = conf
        .registries()
        .iter()
        .map(|r| (r.prefix.as_str(), r.insecure, r.blocked))
        .collect();
    assert_eq!(
        flags,
        [
            ("bad.io", false, true),
            ("both.io", true, true),
            ("plain.io", true, false)
        ]
    );
    let err = parse_file(Path::new("/d/10-old.conf"), text, true).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid registries configuration /d/10-old.conf: registry must be in v2 format but is in v1"
    );
}

#[test]
fn prefixes_match_at_component_boundaries_and_wildcards_match_subdomains() {
    let cases = [
        ("docker.io/library/busybox", "docker.io", true),
        ("docker.io/library/busybox", "docker.io/library", true),
        (
            "docker.io/library/busybox",
            "docker.io/library/busybox",
            true,
        ),
        ("docker.io/libraryy/busybox", "docker.io/library", false),
        (
            "docker.io/library/busybox2",
            "docker.io/library/busybox",
            false,
        ),
        ("example.com:5000/foo", "example.com:5000", true),
        ("example.com:50000/foo", "example.com:5000", false),
        ("example.com:5000/foo", "example.com", false),
        ("example.com/foo", "example.com/foo:bar", false),
        ("sub.example.com/foo", "*.example.com", true),
        ("a.sub.example.com:5000/foo", "*.example.com", true),
        ("example.com/foo", "*.example.com", false),
        ("example.net/x.example.com/foo", "*.example.com", false),
        ("sub.example.com/foo", "**.example.com", false),
        ("sub.example.com/foo", "*", false),
    ];
    for (name, prefix, matches) in cases {
        assert_eq!(
            super::matched_len(name, prefix).is_some(),
            matches,
            "{name} vs {prefix}"
        );
    }
}

#[test]
fn the_longest_matching_prefix_is_chosen() {
    let conf = conf(
        r#"
[[registry]]
location = "example.com"
[[registry]]
prefix = "example.com/team"
location = "mirror.io/team"
[[registry]]
prefix = "*.com"
[[registry]]
prefix = "example.com/team/app"
location = "mirror.io/app"
"#,
    );
    let found = |name: &str| conf.find(name).map(|r| r.prefix.clone());
    assert_eq!(
        found("example.com/team/app").as_deref(),
        Some("example.com/team/app")
    );
    assert_eq!(
        found("example.com/team/other").as_deref(),
        Some("example.com/team")
    );
    assert_eq!(
        found("example.com/teamx/app").as_deref(),
        Some("example.com")
    );
    assert_eq!(found("other.com/x").as_deref(), Some("*.com"));
    assert_eq!(found("other.org/x"), None);
}

/// containers-registries.conf(5)'s example, plus mirrors restricted to digests or tags.
const MIRRORS: &str = r#"
[[registry]]
prefix = "example.com/foo"
location = "internal-registry-for-example.com/bar"

[[registry.mirror]]
location = "example-mirror-0.local/mirror-for-foo"

[[registry.mirror]]
location = "example-mirror-1.local/mirrors/foo"
insecure = true

[[registry]]
location = "registry.com"

[[registry.mirror]]
location = "mirror.registry.com"

[[registry]]
location = "digests.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "m1.digests.io"

[[registry]]
location = "mixed.io"
insecure = true
[[registry.mirror]]
location = "digest.mixed.io"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "tag.mixed.io"
pull-from-mirror = "tag-only"
[[registry.mirror]]
location = "all.mixed.io"
pull-from-mirror = "all"
"#;

#[test]
fn mirrors_come_first_in_order_then_the_primary_location() {
    let conf = conf(MIRRORS);
    let digest = format!("@{DIGEST}");
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            "example.com/foo/image:latest".into(),
            vec![
                "example-mirror-0.local/mirror-for-foo/image:latest mirror".into(),
                "example-mirror-1.local/mirrors/foo/image:latest insecure mirror".into(),
                "internal-registry-for-example.com/bar/image:latest".into(),
            ],
        ),
        (
            "registry.com/image:v1".into(),
            vec![
                "mirror.registry.com/image:v1 mirror".into(),
                "registry.com/image:v1".into(),
            ],
        ),
        ("digests.io/a/b:v1".into(), vec!["digests.io/a/b:v1".into()]),
        (
            format!("digests.io/a/b{digest}"),
            vec![
                format!("m1.digests.io/a/b{digest} mirror"),
                format!("digests.io/a/b{digest}"),
            ],
        ),
        (
            "mixed.io/x:v1".into(),
            vec![
                "tag.mixed.io/x:v1 mirror".into(),
                "all.mixed.io/x:v1 mirror".into(),
                "mixed.io/x:v1 insecure".into(),
            ],
        ),
        (
            format!("mixed.io/x:v1{digest}"),
            vec![
                format!("digest.mixed.io/x:v1{digest} mirror"),
                format!("all.mixed.io/x:v1{digest} mirror"),
                format!("mixed.io/x:v1{digest} insecure"),
            ],
        ),
        ("unlisted.io/x:v1".into(), vec!["unlisted.io/x:v1".into()]),
        // A bare name is Docker Hub's `library/NAME:latest`.
        (
            "busybox".into(),
            vec!["docker.io/library/busybox:latest".into()],
        ),
    ];
    for (reference, expected) in cases {
        assert_eq!(sources(&conf, &reference), expected, "{reference}");
    }
}

#[test]
fn a_blocked_registry_is_refused_by_name_but_its_mirrors_are_still_tried() {
    let conf = conf(
        r#"
[[registry]]
location = "blocked.io"
blocked = true

[[registry]]
location = "mirrored-and-blocked.io"
blocked = true
[[registry.mirror]]
location = "mirror.local:5000/cache"
[[registry.mirror]]
location = "blocked.io/copy"

[[registry]]
prefix = "*.forbidden.org"
blocked = true
"#,
    );
    assert_eq!(
        sources(&conf, "blocked.io/x:v1"),
        ["blocked.io/x:v1 blocked by blocked.io"]
    );
    assert_eq!(
        sources(&conf, "mirrored-and-blocked.io/ns/x:v1"),
        [
            "mirror.local:5000/cache/ns/x:v1 mirror",
            "blocked.io/copy/ns/x:v1 mirror blocked by blocked.io",
            "mirrored-and-blocked.io/ns/x:v1 blocked by mirrored-and-blocked.io",
        ]
    );
    assert_eq!(
        sources(&conf, "a.b.forbidden.org/x"),
        ["a.b.forbidden.org/x:latest blocked by *.forbidden.org"]
    );
    let blocked = conf.pull_sources(&image("blocked.io/x:v1")).unwrap()[0]
        .blocked
        .clone()
        .unwrap();
    assert_eq!(
        blocked.origin.file,
        Path::new("/etc/containers/registries.conf")
    );
    assert_eq!(blocked.origin.line, 2);
}

#[test]
fn a_wildcard_prefix_rewrites_only_the_host_and_keeps_the_reference_without_a_location() {
    let conf = conf(
        r#"
[[registry]]
prefix = "*.corp.example"
insecure = true
[[registry.mirror]]
location = "cache.local"
"#,
    );
    assert_eq!(
        sources(&conf, "reg.corp.example:5000/team/app:v2"),
        [
            "cache.local:5000/team/app:v2 mirror",
            "reg.corp.example:5000/team/app:v2 insecure"
        ]
    );
}

#[test]
fn a_rewritten_reference_that_does_not_parse_names_the_entry() {
    let conf = conf("[[registry]]\nprefix = \"a.io/team\"\nlocation = \"b.io/UPPER\"\n");
    let err = conf.pull_sources(&image("a.io/team/app:v1")).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.starts_with(
            "failed to rewrite a.io/team/app:v1 for location \"b.io/UPPER\" of /etc/containers/registries.conf, line 1: invalid image reference"
        ),
        "{shown}"
    );
}

#[test]
fn files_are_located_as_upstreams_image_library_locates_them() {
    let home = Path::new("/home/u");
    let user_file = PathBuf::from("/home/u/.config/containers/registries.conf");
    let user_dir = PathBuf::from("/home/u/.config/containers/registries.conf.d");
    let system_dir = PathBuf::from(load::SYSTEM_DROP_IN_DIR);
    let named = Some(OsString::from("/config/registries.conf"));
    let cases = [
        (
            named.clone(),
            true,
            RegistriesConfFiles {
                file: Some("/config/registries.conf".into()),
                file_required: true,
                drop_in_dirs: vec![system_dir.clone(), user_dir.clone()],
            },
        ),
        (
            None,
            true,
            RegistriesConfFiles {
                file: Some(user_file.clone()),
                file_required: false,
                drop_in_dirs: vec![user_dir.clone()],
            },
        ),
        (
            None,
            false,
            RegistriesConfFiles {
                file: Some(load::SYSTEM_FILE.into()),
                file_required: false,
                drop_in_dirs: vec![system_dir.clone(), user_dir.clone()],
            },
        ),
    ];
    for (named, user_file_exists, expected) in cases {
        let located = RegistriesConfFiles::locate(named.clone(), Some(home), |p| {
            user_file_exists && p == user_file
        });
        assert_eq!(located, expected, "{named:?} {user_file_exists}");
    }
    assert_eq!(
        RegistriesConfFiles::locate(None, None, |_| true).drop_in_dirs,
        vec![system_dir]
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn drop_ins_are_read_in_name_order_and_replace_whole_entries_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("registries.conf");
    let drop_ins = dir.path().join("registries.conf.d");
    write(
        &main,
        "[[registry]]\nlocation = \"a.io\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"m.io\"\n\n[[registry]]\nlocation = \"b.io\"\n",
    );
    write(
        &drop_ins.join("20-b.conf"),
        "[[registry]]\nlocation = \"a.io\"\nblocked = true\n",
    );
    write(
        &drop_ins.join("10-a.conf"),
        "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"n.io\"\n",
    );
    write(&drop_ins.join("30-c.conf.disabled"), "not toml [");
    std::fs::create_dir_all(drop_ins.join("40-dir.conf")).unwrap();
    let files = RegistriesConfFiles {
        file: Some(main),
        file_required: true,
        drop_in_dirs: vec![drop_ins.clone(), dir.path().join("missing.d")],
    };
    let read: Vec<String> = files
        .read()
        .unwrap()
        .iter()
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(read, ["registries.conf", "10-a.conf", "20-b.conf"]);
    let conf = files.load().unwrap();
    let a = conf.find("a.io/x").unwrap();
    assert!(a.blocked && !a.insecure && a.mirrors.is_empty(), "{a:?}");
    assert_eq!(a.origin.file, drop_ins.join("20-b.conf"));
    assert!(conf.find("b.io/x").is_some());
}

#[test]
fn a_missing_default_file_means_no_configuration_but_a_named_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("registries.conf");
    let optional = RegistriesConfFiles {
        file: Some(missing.clone()),
        file_required: false,
        drop_in_dirs: vec![dir.path().join("registries.conf.d")],
    };
    assert_eq!(optional.load().unwrap(), RegistriesConf::empty());
    let err = RegistriesConfFiles::only(&missing).load().unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "failed to read registries configuration {}: ",
            missing.display()
        )),
        "{err}"
    );
}

#[test]
fn the_reloader_follows_edits_and_reports_a_broken_file_until_it_is_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registries.conf");
    write(&path, "[[registry]]\nlocation = \"a.io\"\n");
    let reloader = RegistriesConfReloader::new(RegistriesConfFiles::only(&path));
    let first = reloader.current().unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &reloader.current().unwrap()));
    write(&path, "[[registry]]\nlocation = \"a.io\"\nblocked = true\n");
    assert!(reloader.current().unwrap().find("a.io/x").unwrap().blocked);
    write(
        &path,
        "[[registry]]\nlocation = \"a.io\"\nblocked = maybe\n",
    );
    let err = reloader.current().unwrap_err().to_string();
    assert!(err.contains(", line 3: "), "{err}");
    write(&path, "");
    assert_eq!(*reloader.current().unwrap(), RegistriesConf::empty());
}
