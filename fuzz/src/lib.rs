//! Helpers shared by the fuzz targets in `fuzz_targets/`.
//!
//! Input: the fuzzer's bytes. Output: nothing; a target fails only by panicking (which the
//! product must never do on any input) or by breaking an invariant it asserts. The image target
//! writes into a temporary directory; nothing touches the network.

pub mod http_parsers;

/// Splits fuzzer input into at most `n` parts at `\0` bytes (the last part keeps the rest), so
/// one input can drive a function of several string arguments.
pub fn split_parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.splitn(n, |b| *b == 0).collect()
}
