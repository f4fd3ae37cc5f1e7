//! The FBC stream reader on arbitrary bytes read as YAML (a leading `---` forces the YAML path;
//! seeds: YAML catalogs and alias/merge-key documents). Must never panic, and alias expansion
//! must stay within its byte and node limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_api::fbc::{Checks, DeclarativeConfig, validate, walk_metas_reader};

fuzz_target!(|data: &[u8]| {
    let mut input = b"---\n".to_vec();
    input.extend_from_slice(data);
    let _ = walk_metas_reader(&input[..], "fuzz", |_| Ok(()));
    if let Ok(cfg) = DeclarativeConfig::from_reader(&input[..], "fuzz") {
        let _ = validate(&cfg, &Checks::default());
    }
});
