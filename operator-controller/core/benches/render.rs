//! Bundle parse and render benchmark on the largest bundle of the conformance data
//! (`testdata/conformance/render-real/bundles/alloydb-omni-operator.1.7.0`, 1.7 MB) or the bundle
//! directories given as arguments.
//!
//! Run: `cargo bench -p olm-operator-core --bench render [-- DIR...]`. A std-only timing loop, as
//! the project's other benchmarks: the files are read once, then parse (`bundle::parse`: YAML,
//! Go round trip of the CSV and CRDs, `olm.properties`), render (`render::render`: validators,
//! configuration, generators, Go round trip of every object) and the YAML text of the result
//! are timed separately; the best and the median of the runs are printed. Results are recorded in
//! docs/PERFORMANCE.md.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use olm_operator_core::bundle::{self, BundleFs};
use olm_operator_core::render::{self, CertProvider, RenderOptions, yaml::to_yaml};

const RUNS: usize = 15;

fn default_bundle() -> PathBuf {
    olm_testdata::path("conformance/render-real/bundles/alloydb-omni-operator.1.7.0")
}

fn load(dir: &Path) -> BundleFs {
    let mut fs = BundleFs::new();
    for name in ["metadata/annotations.yaml", "metadata/properties.yaml"] {
        if let Ok(bytes) = std::fs::read(dir.join(name)) {
            fs.insert_file(name, bytes);
        }
    }
    fs.insert_dir("manifests");
    let mut entries: Vec<_> = std::fs::read_dir(dir.join("manifests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = format!("manifests/{}", path.file_name().unwrap().to_string_lossy());
        fs.insert_file(name, std::fs::read(&path).unwrap());
    }
    fs
}

fn time<T>(mut f: impl FnMut() -> T) -> (Duration, Duration) {
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed()
        })
        .collect();
    samples.sort();
    (samples[0], samples[RUNS / 2])
}

fn main() {
    let dirs: Vec<PathBuf> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .collect();
    let dirs = if dirs.is_empty() {
        vec![default_bundle()]
    } else {
        dirs
    };
    for dir in dirs {
        let fs = load(&dir);
        let parsed = bundle::parse(&fs).unwrap();
        let opts = RenderOptions {
            cert_provider: if parsed.csv.webhooks.is_empty() {
                CertProvider::None
            } else {
                CertProvider::CertManager
            },
            ..RenderOptions::new("bench-system")
        };
        let rendered = render::render(&parsed, &opts).unwrap();
        let yaml_bytes: usize = rendered.objects.iter().map(|o| to_yaml(o).len()).sum();
        println!(
            "{}: {} input bytes, {} objects, {} bytes of YAML",
            dir.display(),
            fs.total_bytes(),
            rendered.objects.len(),
            yaml_bytes
        );
        let report = |what: &str, (best, median): (Duration, Duration)| {
            println!("  {what:<28} best {best:>10.2?}   median {median:>10.2?}");
        };
        report("parse", time(|| bundle::parse(&fs).unwrap()));
        report("render", time(|| render::render(&parsed, &opts).unwrap()));
        report(
            "YAML text",
            time(|| rendered.objects.iter().map(to_yaml).collect::<Vec<_>>()),
        );
        report(
            "parse + render + YAML",
            time(|| {
                let parsed = bundle::parse(&fs).unwrap();
                let rendered = render::render(&parsed, &opts).unwrap();
                rendered.objects.iter().map(to_yaml).collect::<Vec<_>>()
            }),
        );
    }
}
