//! `olm_runtime::allocator::release_free_memory` gives back memory freed below a live allocation,
//! which glibc's trim threshold cannot (it only shrinks an arena's top). One test in a process of
//! its own, so that no other test allocates in between.
#![cfg(all(target_os = "linux", target_env = "gnu"))]
#![allow(clippy::unwrap_used)]

/// `RssAnon` of this process, in KiB.
fn anonymous_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn memory_freed_below_a_live_allocation_is_returned() {
    // 32 MiB in 64 KiB blocks: below glibc's 128 KiB mapping threshold, so all from the arena.
    const BLOCK: usize = 64 * 1024;
    const BLOCKS: usize = 512;
    let mut blocks: Vec<Vec<u8>> = (0..BLOCKS)
        .map(|i| vec![(i % 251) as u8 + 1; BLOCK])
        .collect();
    // The last block stays live above the freed ones, so the arena's top cannot shrink.
    let kept = blocks.pop().unwrap();
    let filled = anonymous_kib();
    drop(blocks);
    let freed = anonymous_kib();
    olm_runtime::allocator::release_free_memory();
    let trimmed = anonymous_kib();
    println!("RssAnon: filled {filled} KiB, freed {freed} KiB, trimmed {trimmed} KiB");
    assert_eq!(kept.len(), BLOCK);
    // Without the trim almost nothing of the 32 MiB is returned; with it, nearly all of it.
    assert!(
        trimmed + 24 * 1024 < freed,
        "the trim returned only {} KiB of 32 MiB (filled {filled}, freed {freed}, trimmed {trimmed})",
        freed.saturating_sub(trimmed)
    );
}
