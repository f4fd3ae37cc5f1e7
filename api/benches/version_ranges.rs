//! Cost of parsing and matching version ranges, as the resolver uses them: parse a range once,
//! match it against every bundle version of a package. Std-only timing loop (no extra
//! dependency); run with `cargo bench -p olm-api --bench version_ranges`.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use olm_api::version::blang::{self, Range};
use olm_api::version::masterminds::Constraints;
use olm_api::version::release::VersionRelease;

/// Runs `f` repeatedly for about half a second and prints the mean time per call.
fn measure(name: &str, mut f: impl FnMut()) {
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < Duration::from_millis(500) {
        for _ in 0..100 {
            f();
        }
        calls += 100;
    }
    let per_call = start.elapsed().as_nanos() as f64 / calls as f64;
    println!("{name:<58} {per_call:>12.1} ns/call");
}

fn main() {
    let texts: Vec<String> = (0..10_000)
        .map(|i| match i % 4 {
            0 => format!("{}.{}.{}", i % 7, i % 13, i % 5),
            1 => format!("{}.{}.{}-rc.{}", i % 7, i % 13, i % 5, i % 3),
            2 => format!("{}.{}.{}+{}", i % 7, i % 13, i % 5, i % 9),
            _ => format!("{}.{}.{}-alpha.{}+build.{}", i % 7, i % 13, i % 5, i % 4, i),
        })
        .collect();
    let versions: Vec<_> = texts
        .iter()
        .map(|t| blang::parse_version(t).unwrap())
        .collect();

    measure("masterminds parse `>=1.11, <1.13 || ^2.3 || 3.x`", || {
        black_box(Constraints::parse(black_box(">=1.11, <1.13 || ^2.3 || 3.x")).unwrap());
    });
    let constraints = Constraints::parse(">=1.11, <1.13 || ^2.3 || 3.x").unwrap();
    measure("masterminds match 10k versions", || {
        black_box(versions.iter().filter(|v| constraints.matches(v)).count());
    });

    measure("blang parse `>=4.6.0 <4.12.0 || 5.x`", || {
        black_box(Range::parse(black_box(">=4.6.0 <4.12.0 || 5.x")).unwrap());
    });
    let range = Range::parse(">=4.6.0 <4.12.0 || 5.x").unwrap();
    measure("blang match 10k versions", || {
        black_box(versions.iter().filter(|v| range.matches(v)).count());
    });

    measure("blang parse_version 10k strings", || {
        for text in &texts {
            black_box(blang::parse_version(black_box(text)).unwrap());
        }
    });
    measure("legacy version+release parse 10k and sort", || {
        let mut parsed: Vec<_> = texts
            .iter()
            .map(|t| VersionRelease::from_bundle_version(t, None, false).unwrap())
            .collect();
        parsed.sort();
        black_box(parsed);
    });
}
