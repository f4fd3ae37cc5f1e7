//! The FBC stream reader on arbitrary bytes (seeds: JSON catalogs), then the typed loader and
//! validation on whatever loads. Must never panic; every error must name a position.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_api::fbc::{Checks, DeclarativeConfig, validate, walk_metas_reader};

fuzz_target!(|data: &[u8]| {
    let _ = walk_metas_reader(data, "fuzz", |m| {
        // An object's blob is compact canonical JSON: re-reading it must give the same blob.
        // (A `null` in a JSON stream is served as the blob `null`; alone it is not a JSON
        // stream, as upstream reads it too.)
        if !m.blob.starts_with(b"{") {
            return Ok(());
        }
        let mut again = Vec::new();
        walk_metas_reader(&m.blob[..], "blob", |n| {
            again.push(n.blob);
            Ok(())
        })
        .expect("a served blob must parse again");
        assert_eq!(again, vec![m.blob.clone()], "canonical form is stable");
        Ok(())
    });
    if let Ok(cfg) = DeclarativeConfig::from_reader(data, "fuzz") {
        let _ = validate(&cfg, &Checks::default());
    }
});
