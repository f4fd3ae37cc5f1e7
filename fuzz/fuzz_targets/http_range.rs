//! The `Range` header parser of `/api/v1/all` on arbitrary headers and sizes: no panic, no
//! arithmetic overflow, and every range it returns lies inside the content.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_fuzz::http_parsers::range::{parse_range, total_len};

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (size, header) = data.split_at(8);
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(size);
    // Both small sizes (where the edges are) and huge ones (where overflow hides).
    let raw = u64::from_le_bytes(bytes);
    let size = if raw & 1 == 0 { raw % 4096 } else { raw >> 1 };
    let Ok(header) = std::str::from_utf8(header) else {
        return;
    };
    if let Ok(ranges) = parse_range(header, size) {
        for r in &ranges {
            assert!(
                r.start <= size && r.len <= size - r.start,
                "{r:?} outside {size}"
            );
            let _ = r.content_range(size);
        }
        let _ = total_len(&ranges);
    }
});
