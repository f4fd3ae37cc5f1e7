//! Helpers shared by the `olm-api` integration tests (each test file uses a subset).
#![allow(dead_code)]

use std::path::PathBuf;

/// The crate's directory. Read at run time, not with `env!`: the cached target dir may hold a
/// build made from a checkout at another path.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .expect("set by cargo")
        .into()
}

/// `testdata/<relative>` (see olm-testdata).
pub fn testdata(relative: &str) -> PathBuf {
    olm_testdata::path(relative)
}

/// Checks every row of a conformance table `range<TAB>version<TAB>expected` (after a header
/// line), where `expected` is `true`, `false` or `error` (the range does not parse). `evaluate`
/// answers `true`/`false`, or a text starting with `error` when the range is rejected. Fails
/// with every disagreeing row, or when the table does not have exactly `expected_rows` rows.
pub fn check_table(relative: &str, expected_rows: usize, evaluate: impl Fn(&str, &str) -> String) {
    let path = testdata(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut failures = Vec::new();
    let mut rows = 0;
    for (index, line) in text.lines().enumerate().skip(1) {
        let line_number = index + 1;
        let [range, version, expected] = line.split('\t').collect::<Vec<_>>()[..] else {
            failures.push(format!("line {line_number}: not three columns: {line:?}"));
            continue;
        };
        rows += 1;
        let got = evaluate(range, version);
        let agrees = if expected == "error" {
            got.starts_with("error")
        } else {
            got == expected
        };
        if !agrees {
            failures.push(format!(
                "line {line_number}: {range:?} on {version:?}: expected {expected}, got {got}"
            ));
        }
    }
    println!("{relative}: {rows} rows");
    assert_eq!(rows, expected_rows, "rows of {}", path.display());
    assert!(
        failures.is_empty(),
        "{} of {rows} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
