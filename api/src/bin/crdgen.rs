//! Writes the CRDs generated from the Rust types: ours into a directory (default `config/crd`), the
//! OpenShift test CRDs into another (default `config/openshift`).
//!
//! Usage: `crdgen [--check] [--openshift-dir DIR] [DIR]`. With `--check`, writes nothing and exits
//! 1 if any committed file differs from what the types generate.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

type Render = fn(&CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error>;
/// A target directory, the CRDs written there, and how each is rendered.
type CrdSet<'a> = (
    &'a Path,
    Vec<(&'static str, CustomResourceDefinition)>,
    Render,
);

fn main() -> ExitCode {
    let mut check = false;
    let mut dir = PathBuf::from("config/crd");
    let mut openshift_dir = PathBuf::from("config/openshift");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--openshift-dir" => match args.next() {
                Some(d) => openshift_dir = PathBuf::from(d),
                None => {
                    eprintln!("crdgen: --openshift-dir needs a directory");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!("usage: crdgen [--check] [--openshift-dir DIR] [DIR]");
                return ExitCode::SUCCESS;
            }
            other if other.starts_with('-') => {
                eprintln!("crdgen: unknown flag {other}");
                return ExitCode::from(2);
            }
            other => dir = PathBuf::from(other),
        }
    }
    let sets: [CrdSet; 2] = [
        (&dir, olm_api::crd::all(), olm_api::crd::to_yaml),
        (
            &openshift_dir,
            olm_api::crd::openshift(),
            olm_api::crd::openshift_to_yaml,
        ),
    ];
    let mut drift = false;
    for (dir, crds, render) in sets {
        if !check && let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("crdgen: failed to create {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
        for (file, crd) in crds {
            let yaml = match render(&crd) {
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
    }
    if drift {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
