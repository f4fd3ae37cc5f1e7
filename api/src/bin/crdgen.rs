//! Writes the CRDs generated from the Rust types into a directory (default `config/crd`).
//!
//! Usage: `crdgen [--check] [DIR]`. With `--check`, writes nothing and exits 1 if any committed
//! file differs from what the types generate.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut check = false;
    let mut dir = PathBuf::from("config/crd");
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                println!("usage: crdgen [--check] [DIR]");
                return ExitCode::SUCCESS;
            }
            other if other.starts_with('-') => {
                eprintln!("crdgen: unknown flag {other}");
                return ExitCode::from(2);
            }
            other => dir = PathBuf::from(other),
        }
    }
    let mut drift = false;
    for (file, crd) in olm_api::crd::all() {
        let yaml = match olm_api::crd::to_yaml(&crd) {
            Ok(y) => y,
            Err(e) => {
                eprintln!("crdgen: failed to render {file}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let path = dir.join(file);
        if check {
            let current = std::fs::read_to_string(&path).unwrap_or_default();
            if current != yaml {
                eprintln!(
                    "crdgen: {} is out of date; run `make manifests`",
                    path.display()
                );
                drift = true;
            }
        } else if let Err(e) = std::fs::write(&path, yaml) {
            eprintln!("crdgen: failed to write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if drift {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
