//! registry+v1 bundle parsing, validation and rendering on arbitrary files (seeds: the render
//! conformance bundles). Input: parts split at `\0`: `metadata/annotations.yaml`, then one
//! manifest per part (`manifests/m<i>.yaml`). Must never panic; whatever parses must render or
//! fail with an error, in every install mode the bundle might ask for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_operator_core::bundle::{BundleFs, RegistryV1Bundle};
use olm_operator_core::render::{RenderOptions, render};

fuzz_target!(|data: &[u8]| {
    let parts = olm_fuzz::split_parts(data, 8);
    let mut fs = BundleFs::new();
    fs.insert_dir("manifests");
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            fs.insert_file("metadata/annotations.yaml", part.to_vec());
        } else {
            fs.insert_file(format!("manifests/m{i}.yaml"), part.to_vec());
        }
    }
    let Ok(bundle) = RegistryV1Bundle::parse(&fs) else {
        return;
    };
    // AllNamespaces (no config), then OwnNamespace and SingleNamespace through the config.
    let _ = render(&bundle, &RenderOptions::new("fuzz-install"));
    for watch in ["fuzz-install", "fuzz-other"] {
        let mut opts = RenderOptions::new("fuzz-install");
        opts.config = Some(serde_json::json!({ "watchNamespace": watch }));
        let _ = render(&bundle, &opts);
    }
});
