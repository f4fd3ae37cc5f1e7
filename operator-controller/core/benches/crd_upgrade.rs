//! CRD upgrade check on the largest real pair of the conformance data (percona-xtradb-cluster
//! 1.11.0 → 1.12.0: a 2.4 MB and a 1.3 MB CRD, 6788 upstream issues): decoding, the full check,
//! and the check alone.
//!
//! Run: `cargo bench -p olm-operator-core --bench crd_upgrade`. Prints the best and median of
//! several runs; results are recorded in docs/PERFORMANCE.md.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use olm_operator_core::crd_upgrade::{CheckOptions, Crd, check_upgrade, yaml};

const RUNS: usize = 7;
const PAIR: &str = "conformance/crd-upgrade/real/percona-xtradb-cluster-operator__perconaxtradbclusters.pxc.percona.com__1.11.0__1.12.0";

fn pair_dir() -> PathBuf {
    olm_testdata::path(PAIR)
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "  {name:<32} best {:>9.3} ms   median {:>9.3} ms",
        times[0].as_secs_f64() * 1e3,
        times[times.len() / 2].as_secs_f64() * 1e3
    );
}

fn main() {
    let dir = pair_dir();
    let old_text = std::fs::read_to_string(dir.join("old.yaml")).unwrap();
    let new_text = std::fs::read_to_string(dir.join("new.yaml")).unwrap();
    let decode = |t: &str| Crd::from_value(&yaml::parse_documents(t).unwrap()[0]).unwrap();

    let mut times = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let _ = (decode(&old_text), decode(&new_text));
        times.push(t.elapsed());
    }
    report("parse + decode both CRDs", times);

    let old = decode(&old_text);
    let new = decode(&new_text);
    let mut times = Vec::new();
    let mut issues = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        let v = check_upgrade(&old, &new, &CheckOptions::default());
        times.push(t.elapsed());
        issues = v.violations.len();
    }
    report(&format!("check_upgrade ({issues} issues)"), times);
}
