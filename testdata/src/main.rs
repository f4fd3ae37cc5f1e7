//! `olm-testdata PATH...` prints the plain path of each `testdata/PATH`, unpacking the archive
//! that holds it once (for hack scripts and benchmarks run by hand). `olm-testdata --all` unpacks
//! every archive and prints their directories.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!(
            "usage: olm-testdata PATH...   (relative to testdata/, e.g. catalogs/certified-operators)"
        );
        eprintln!("       olm-testdata --all");
        return ExitCode::from(2);
    }
    let paths = if args == ["--all"] {
        olm_testdata::archives()
    } else {
        args
    };
    for relative in &paths {
        match olm_testdata::try_path(relative) {
            Ok(path) => println!("{}", path.display()),
            Err(e) => {
                eprintln!("olm-testdata: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
