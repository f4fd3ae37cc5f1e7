//! blang range and strict version parsing (the `skipRange` dialect) on arbitrary text: no panic,
//! and matching a parsed range against a parsed version never panics either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_api::version::blang::{Range, parse_version};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (range, version) = text.split_once('\n').unwrap_or((text, "1.2.3"));
    if let Ok(r) = Range::parse(range) {
        if let Ok(v) = parse_version(version) {
            let _ = r.matches(&v);
        }
    }
    let _ = parse_version(text);
});
