//! Resolution over the real catalogs of `testdata/catalogs` (see its SOURCES.md), for
//! graph-rich packages. Every expected answer is derived by hand from the catalog data; the
//! reasoning is written next to each assertion. Catalogs are read with the directory source, as
//! `operator-controller resolve --catalog DIR` reads them.
#![allow(clippy::unwrap_used)]

// One copy of the fixtures, shared with the pure crate's tests.
#[path = "../core/tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use common::*;
use olm_api::v1::UpgradeConstraintPolicy::{CatalogProvided as CP, SelfCertified as SC};
use operator_controller::catalog_source::dir::DirSource;
use operator_controller::resolve::{
    CatalogInfo, InstalledBundle, PackageContent, Resolution, ResolveError,
};

fn certified() -> DirSource {
    DirSource::open(testdata("catalogs/certified-operators/catalogs/v4.22")).unwrap()
}

fn community() -> DirSource {
    DirSource::open(testdata("catalogs/community-operators-prod/catalogs/v4.22")).unwrap()
}

type Loaded = Mutex<HashMap<(PathBuf, String), Arc<PackageContent>>>;

/// Each package is read once per test binary.
fn load(source: &DirSource, package: &str) -> Arc<PackageContent> {
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    let key = (source.root().to_path_buf(), package.to_owned());
    let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap();
    loaded
        .entry(key)
        .or_insert_with(|| Arc::new(source.package(package).unwrap()))
        .clone()
}

/// Resolves `package` from one catalog; `installed` is a version, the bundle name being
/// `<prefix>.v<version>`.
struct One {
    package: &'static str,
    prefix: &'static str,
    catalogs: Vec<(CatalogInfo, Arc<PackageContent>)>,
}

impl One {
    fn new(source: DirSource, package: &'static str, prefix: &'static str) -> One {
        let content = load(&source, package);
        assert!(!content.bundles().is_empty(), "{package} not found");
        One {
            package,
            prefix,
            catalogs: vec![cat("v4.22", content)],
        }
    }

    fn installed(&self, version: &str) -> InstalledBundle {
        installed(&format!("{}.v{version}", self.prefix), version)
    }

    fn run(
        &self,
        channels: &[&str],
        range: &str,
        policy: olm_api::v1::UpgradeConstraintPolicy,
        from: Option<&str>,
    ) -> Result<Resolution, ResolveError> {
        let inst = from.map(|v| self.installed(v));
        resolve_in(
            &filter(self.package, channels, range, policy),
            inst.as_ref(),
            &self.catalogs,
        )
    }

    fn version(&self, channels: &[&str], range: &str, from: Option<&str>) -> String {
        version_of(&self.run(channels, range, CP, from))
    }
}

/// Both trees are whole (48 and 29 packages, as SOURCES.md counts them): a lost package directory
/// fails here instead of surfacing as a "not found" elsewhere or not at all.
#[test]
fn both_catalogs_hold_every_package() {
    for (dir, packages) in [
        ("catalogs/certified-operators/catalogs/v4.22", 48),
        ("catalogs/community-operators-prod/catalogs/v4.22", 29),
    ] {
        let found = std::fs::read_dir(testdata(dir))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir())
            .count();
        println!("{dir}: {found} packages");
        assert_eq!(found, packages, "{dir}");
    }
}

// ---------------------------------------------------------------------------------------------
// certified-operators/kubecost-operator: a skips-only graph. Channel alpha holds 2.5.4..2.8.2,
// each entry skipping every earlier alpha bundle; channel stable holds 3.0.0..3.2.4 (no 3.2.2
// bundle), each entry skipping every earlier 3.x name, 3.2.3 and 3.2.4 also skipping 3.2.2.
// No entry mentions an alpha bundle from stable.

fn kubecost() -> One {
    One::new(certified(), "kubecost-operator", "kubecost-operator")
}

#[test]
fn kubecost_fresh_install_takes_the_highest_version_of_any_channel() {
    let k = kubecost();
    let r = k.run(&[], "", CP, None).unwrap();
    assert_eq!(r.bundle.name, "kubecost-operator.v3.2.4");
    assert_eq!(r.catalog, "v4.22");
    assert_eq!(
        r.bundle.image,
        "registry.connect.redhat.com/kubecost/operator@sha256:b5fb77e59a5af6b581dcedafc98d167cbfd4e50e1d9de5d630bb2a634d67d088"
    );
    // Restricted to alpha, the highest alpha bundle.
    assert_eq!(k.version(&["alpha"], "", None), "2.8.2");
}

#[test]
fn kubecost_upgrades_follow_skips_to_the_highest_skipping_entry() {
    let k = kubecost();
    // Every later alpha entry skips 2.5.4: the highest, 2.8.2, wins.
    assert_eq!(k.version(&[], "", Some("2.5.4")), "2.8.2");
    // Every stable entry from 3.0.1 up skips 3.0.0: straight to 3.2.4.
    assert_eq!(k.version(&[], "", Some("3.0.0")), "3.2.4");
    // 3.2.2 is not in the catalog, but 3.2.3 and 3.2.4 skip it by name.
    assert_eq!(k.version(&[], "", Some("3.2.2")), "3.2.4");
    // Nothing in stable names an alpha bundle: 2.8.2 stays where it is.
    assert_eq!(k.version(&[], "", Some("2.8.2")), "2.8.2");
}

#[test]
fn kubecost_range_restricted_and_forced_upgrades() {
    let k = kubecost();
    // Successors of 3.0.0 below 3.2.0: 3.0.1..3.1.8, highest 3.1.8. `~3.0` is >=3.0.0 <3.1.0.
    assert_eq!(k.version(&[], "<3.2.0", Some("3.0.0")), "3.1.8");
    assert_eq!(k.version(&[], "~3.0", Some("3.0.0")), "3.0.6");
    // 2.8.2 -> 3.x has no catalog edge...
    assert_eq!(
        error_of(k.run(&[], ">=3.0.0", CP, Some("2.8.2"))),
        r#"error upgrading from currently installed version "2.8.2": no bundles found for package "kubecost-operator" matching version ">=3.0.0""#
    );
    // ...unless the user certifies it; and a downgrade the same way (3.0.x = >=3.0.0 <3.1.0).
    assert_eq!(
        version_of(&k.run(&[], ">=3.0.0", SC, Some("2.8.2"))),
        "3.2.4"
    );
    assert_eq!(version_of(&k.run(&[], "3.0.x", SC, Some("3.2.4"))), "3.0.6");
    assert_eq!(
        version_of(&k.run(&[], "<3.0.0", SC, Some("3.2.4"))),
        "2.8.2"
    );
}

#[test]
fn kubecost_not_found_errors() {
    let k = kubecost();
    assert_eq!(
        error_of(k.run(&["beta"], "", CP, None)),
        r#"no bundles found for package "kubecost-operator" in channels [beta]"#
    );
    assert_eq!(
        error_of(k.run(&["alpha"], ">=3.0.0", CP, None)),
        r#"no bundles found for package "kubecost-operator" matching version ">=3.0.0" in channels [alpha]"#
    );
    let missing = vec![cat("v4.22", load(&certified(), "no-such-operator"))];
    assert_eq!(
        error_of(resolve_in(
            &filter("no-such-operator", &[], "", CP),
            None,
            &missing
        )),
        r#"no bundles found for package "no-such-operator""#
    );
}

// ---------------------------------------------------------------------------------------------
// certified-operators/gpu-operator-certified: 14 channels; every entry after 1.10.0 replaces its
// predecessor and has skipRange ">=1.9.0 <itself". Versions: 1.10.0 .. 26.7.0, where 25.10.x
// sorts above 25.3.x. Channel vX.Y holds everything up to X.Y.z; v26.3 holds only 26.3.0-26.3.3,
// v26.7 only 26.7.0.

fn gpu() -> One {
    One::new(
        certified(),
        "gpu-operator-certified",
        "gpu-operator-certified",
    )
}

#[test]
fn gpu_fresh_install_and_channel_heads() {
    let g = gpu();
    assert_eq!(g.version(&[], "", None), "26.7.0");
    assert_eq!(g.version(&["v26.3"], "", None), "26.3.3");
    // Semver, not text: 25.10.1 is above 25.3.4 in channel v25.10.
    assert_eq!(g.version(&["v25.10"], "", None), "25.10.1");
}

#[test]
fn gpu_an_old_install_jumps_to_the_highest_entry_whose_skip_range_covers_it() {
    let g = gpu();
    // Every entry above 1.10.0 has ">=1.9.0 <X" with X > 1.10.0: all are successors.
    assert_eq!(g.version(&[], "", Some("1.10.0")), "26.7.0");
    // Only the edges of channel v22.9 count when it alone is selected.
    assert_eq!(g.version(&["v22.9"], "", Some("1.10.0")), "22.9.2");
    // Range-restricted: the highest successor of 22.9.0 below 24.
    assert_eq!(g.version(&[], "<24.0.0", Some("22.9.0")), "23.9.2");
    // 25.3.4 -> channel v25.10: 25.10.0 replaces it, 25.10.1 covers it by skipRange.
    assert_eq!(g.version(&["v25.10"], "", Some("25.3.4")), "25.10.1");
}

#[test]
fn gpu_an_install_below_every_skip_range_has_no_upgrade() {
    let g = gpu();
    // 1.8.0 is below ">=1.9.0" and no entry replaces or skips gpu-operator-certified.v1.8.0.
    assert_eq!(
        error_of(g.run(&[], "", CP, Some("1.8.0"))),
        r#"error upgrading from currently installed version "1.8.0": no bundles found for package "gpu-operator-certified""#
    );
    // SelfCertified downgrade from 26.7.0 into 25.3.x (~25.3 = >=25.3.0 <25.4.0).
    assert_eq!(
        version_of(&g.run(&[], "~25.3", SC, Some("26.7.0"))),
        "25.3.4"
    );
}

// ---------------------------------------------------------------------------------------------
// community-operators-prod/infinispan: all three edge kinds. Channel 2.2.x: 2.2.0 replaces 2.1.5
// (absent), 2.2.1..2.2.5 replace their predecessor and have skipRange ">=2.1.x <2.2.1" (blang:
// >=2.1.0 <2.2.1). 2.3.8 skips every other 2.3.x and the absent 1.1.2. Stable: 2.4.x replaces chain from 2.3.8, 2.5.0 replaces 2.4.18,
// 2.5.1..2.5.6 replaces chain, 2.5.7..2.5.14 replace their predecessor with skipRange
// ">=2.4.18 <itself".

fn infinispan() -> One {
    One::new(community(), "infinispan", "infinispan-operator")
}

#[test]
fn infinispan_fresh_install_and_channels() {
    let i = infinispan();
    assert_eq!(i.version(&[], "", None), "2.5.14");
    // 2.4.18 is the highest of 2.4.x (2.4.10+ sort above 2.4.9).
    assert_eq!(i.version(&["2.4.x"], "", None), "2.4.18");
    assert_eq!(i.version(&["2.2.x"], "", None), "2.2.5");
}

#[test]
fn infinispan_upgrades_use_replaces_skips_and_skip_range() {
    let i = infinispan();
    // 2.2.0: 2.2.1 replaces it and 2.2.1..2.2.5 cover it by skipRange -> 2.2.5.
    assert_eq!(i.version(&[], "", Some("2.2.0")), "2.2.5");
    // 2.1.5 is absent; 2.2.0 replaces it and the 2.2.x skipRange (>=2.1.0) covers it -> 2.2.5.
    assert_eq!(i.version(&[], "", Some("2.1.5")), "2.2.5");
    // 1.1.2 is absent and only skipped by 2.3.8.
    assert_eq!(i.version(&[], "", Some("1.1.2")), "2.3.8");
    assert_eq!(i.version(&[], "", Some("2.3.0")), "2.3.8");
    // A plain replaces step: 2.4.0 -> 2.4.1 only (no chain walk to the head).
    assert_eq!(i.version(&[], "", Some("2.4.0")), "2.4.1");
    // 2.4.17 -> 2.4.18 only: the 2.5.x skipRanges start at 2.4.18.
    assert_eq!(i.version(&[], "", Some("2.4.17")), "2.4.18");
    // 2.4.18: 2.5.0 replaces it and 2.5.7..2.5.14 cover it -> 2.5.14.
    assert_eq!(i.version(&[], "", Some("2.4.18")), "2.5.14");
    // 2.5.3: 2.5.4 replaces it, 2.5.7..2.5.14 cover it -> 2.5.14.
    assert_eq!(i.version(&[], "", Some("2.5.3")), "2.5.14");
    // Nothing leads out of 2.2.5: it stays.
    assert_eq!(i.version(&[], "", Some("2.2.5")), "2.2.5");
}

#[test]
fn infinispan_channel_and_range_restricted_upgrades() {
    let i = infinispan();
    // Channel 2.4.x has no 2.5.x entries, so no edge out of 2.4.18 there.
    assert_eq!(i.version(&["2.4.x"], "", Some("2.4.18")), "2.4.18");
    // The highest successor of 2.4.18 below 2.5.10 is 2.5.9 (skipRange ">=2.4.18 <2.5.9").
    assert_eq!(i.version(&[], "<2.5.10", Some("2.4.18")), "2.5.9");
    // Between 2.5.1 and 2.5.6 only 2.5.0's replaces edge leaves 2.4.18, and 2.5.0 is excluded.
    assert_eq!(
        error_of(i.run(&[], ">=2.5.1 <2.5.7", CP, Some("2.4.18"))),
        r#"error upgrading from currently installed version "2.4.18": no bundles found for package "infinispan" matching version ">=2.5.1 <2.5.7""#
    );
    assert_eq!(
        version_of(&i.run(&["2.2.x"], "", SC, Some("2.5.14"))),
        "2.2.5"
    );
}

// ---------------------------------------------------------------------------------------------
// community-operators-prod/sailoperator: prereleases. Channel 1.31-nightly holds
// 1.31.0-nightly-2026-08-10 .. -08-22, each with skipRange ">=1.0.0 <itself"; stable holds
// 1.25.0..1.30.3 (skipRange ">=1.0.0 <itself"); candidates holds 0.1.0-rc.1 and 0.1.0 (replaces
// the rc).

fn sail() -> One {
    One::new(community(), "sailoperator", "sailoperator")
}

#[test]
fn sail_prereleases_win_without_a_range_and_lose_with_one() {
    let s = sail();
    // 1.31.0-nightly-* > 1.30.3 in semver, and no channel filter means every channel.
    assert_eq!(s.version(&[], "", None), "1.31.0-nightly-2026-08-22");
    // A range without a prerelease excludes prereleases (Masterminds).
    assert_eq!(s.version(&[], ">=1.0.0", None), "1.30.3");
    assert_eq!(s.version(&["stable"], "", None), "1.30.3");
    // A range naming a prerelease admits them.
    assert_eq!(
        s.version(&[], ">=1.31.0-0", None),
        "1.31.0-nightly-2026-08-22"
    );
}

#[test]
fn sail_upgrades_by_skip_range_within_the_selected_channels() {
    let s = sail();
    assert_eq!(s.version(&["stable"], "", Some("1.25.0")), "1.30.3");
    // Without a channel, the nightly skipRanges (">=1.0.0 <1.31.0-nightly-...") cover 1.30.3.
    assert_eq!(
        s.version(&[], "", Some("1.30.3")),
        "1.31.0-nightly-2026-08-22"
    );
    assert_eq!(s.version(&["stable"], "", Some("1.30.3")), "1.30.3");
    // 0.1.0-rc.1 -> 0.1.0 by replaces; the ">=1.0.0" skipRanges do not cover it.
    assert_eq!(s.version(&[], "", Some("0.1.0-rc.1")), "0.1.0");
}

// ---------------------------------------------------------------------------------------------
// trident-operator is in both trees: certified has 26.6.0 (skipRange ">=25.6.0 <26.6.0"),
// community has 26.2.0 and 26.2.1 (replaces 26.2.0). Loaded as two catalogs.

fn trident(
    certified_priority: i32,
    community_priority: i32,
) -> Vec<(CatalogInfo, Arc<PackageContent>)> {
    vec![
        (
            CatalogInfo::new("certified", certified_priority),
            load(&certified(), "trident-operator"),
        ),
        (
            CatalogInfo::new("community", community_priority),
            load(&community(), "trident-operator"),
        ),
    ]
}

#[test]
fn trident_in_two_catalogs_of_equal_priority_is_ambiguous() {
    let f = filter("trident-operator", &[], "", CP);
    assert_eq!(
        error_of(resolve_in(&f, None, &trident(0, 0))),
        r#"found bundles for package "trident-operator" in multiple catalogs with the same priority [certified community]"#
    );
    // From 26.2.0 both catalogs offer a successor (26.6.0 by skipRange, 26.2.1 by replaces).
    assert_eq!(
        error_of(resolve_in(
            &f,
            Some(&installed("trident-operator.v26.2.0", "26.2.0")),
            &trident(0, 0)
        )),
        r#"error upgrading from currently installed version "26.2.0": found bundles for package "trident-operator" in multiple catalogs with the same priority [certified community]"#
    );
}

#[test]
fn trident_priority_or_a_range_or_a_selector_disambiguates() {
    let f = filter("trident-operator", &[], "", CP);
    let r = resolve_in(&f, None, &trident(0, 1)).unwrap();
    assert_eq!(
        (r.catalog.as_str(), r.status_version()),
        ("community", "26.2.1".to_owned())
    );
    let r = resolve_in(&f, None, &trident(5, -1)).unwrap();
    assert_eq!(
        (r.catalog.as_str(), r.status_version()),
        ("certified", "26.6.0".to_owned())
    );
    // Only community has a bundle below 26.3.
    let r = resolve_in(
        &filter("trident-operator", &[], "<26.3.0", CP),
        None,
        &trident(0, 0),
    )
    .unwrap();
    assert_eq!(
        (r.catalog.as_str(), r.status_version()),
        ("community", "26.2.1".to_owned())
    );
    let mut by_name = f.clone();
    by_name.selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some(
                [(
                    olm_api::v1::METADATA_NAME_LABEL.to_owned(),
                    "certified".to_owned(),
                )]
                .into(),
            ),
            match_expressions: None,
        },
    );
    let r = resolve_in(&by_name, None, &trident(0, 0)).unwrap();
    assert_eq!(
        (r.catalog.as_str(), r.status_version()),
        ("certified", "26.6.0".to_owned())
    );
}
