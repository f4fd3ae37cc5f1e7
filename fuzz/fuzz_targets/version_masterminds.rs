//! Masterminds constraint and version parsing (the `spec.source.catalog.version` dialect) on
//! arbitrary text: no panic, and a parsed constraint prints as text that parses again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_api::version::masterminds::{Constraints, parse_version_lax};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (range, version) = text.split_once('\n').unwrap_or((text, "1.2.3"));
    if let Ok(c) = Constraints::parse(range) {
        let printed = c.to_string();
        Constraints::parse(&printed).expect("a printed constraint parses again");
        if let Ok(v) = parse_version_lax(version) {
            let _ = c.matches(&v);
        }
    }
    let _ = parse_version_lax(text);
});
