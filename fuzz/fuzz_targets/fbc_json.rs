//! The FBC stream reader on arbitrary bytes (seeds: JSON catalogs), then the typed loader and
//! validation on whatever loads. Must never panic; every error must name a position. The
//! direct canonical encoder must agree with the full parser whenever it answers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_api::fbc::canonical::Canonicalizer;
use olm_api::fbc::{Checks, DeclarativeConfig, gojson, validate, walk_metas_reader};

fuzz_target!(|data: &[u8]| {
    let mut direct = Vec::new();
    if Canonicalizer::new().encode(data, &mut direct).is_some() {
        let full = gojson::canonicalize_bytes(data)
            .expect("the full parser accepts what the direct encoder does");
        assert_eq!(direct, full, "direct and full canonical encodings agree");
    }
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
