//! `Range` request header parsing with the semantics of Go's `http.ServeContent`, which upstream
//! catalogd uses for `/api/v1/all`.
//!
//! Input: the header value and the content size. Output: byte ranges or why none apply. Pure.

/// A byte range of the content, as Go's `httpRange`: `len` may be 0 (`bytes=-0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    pub len: u64,
}

impl ByteRange {
    /// The `Content-Range` header value for this range of content of `size` bytes. Go computes
    /// the last byte as `start + length - 1` in signed arithmetic, so an empty range ends at
    /// `start - 1` (`bytes 0--1/0` for `bytes=-0` on empty content): kept byte for byte.
    pub fn content_range(&self, size: u64) -> String {
        let last = i128::from(self.start) + i128::from(self.len) - 1;
        format!("bytes {}-{}/{}", self.start, last, size)
    }
}

/// Why a `Range` header cannot be served (answered with 416).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeError {
    /// The header is malformed.
    Invalid,
    /// Every range starts at or after the end of the content.
    NoOverlap,
}

impl RangeError {
    /// The 416 response body text, as Go writes it.
    pub fn message(&self) -> &'static str {
        match self {
            RangeError::Invalid => "invalid range",
            RangeError::NoOverlap => "invalid range: failed to overlap",
        }
    }
}

/// Parses `bytes=a-b, c-, -n` against content of `size` bytes exactly as Go's `parseRange`
/// (numbers are Go `strconv.ParseInt` base 10: optional sign, no overflow).
///
/// | spec | meaning |
/// |---|---|
/// | `a-b` | bytes a..=b, b clamped to the last byte; a > b (b may be negative) is invalid |
/// | `a-` | from a to the end |
/// | `-n` | the last n bytes (all of them if n > size; none for n = 0) |
/// | a ≥ size | skipped; if every range is skipped: [`RangeError::NoOverlap`] |
/// | a < 0, `--n`, `-` | invalid |
/// | empty elements | ignored |
///
/// An empty header yields no ranges. All arithmetic is on values already bounded by `size`.
pub fn parse_range(header: &str, size: u64) -> Result<Vec<ByteRange>, RangeError> {
    if header.is_empty() {
        return Ok(Vec::new());
    }
    let spec = header.strip_prefix("bytes=").ok_or(RangeError::Invalid)?;
    let mut ranges = Vec::new();
    let mut no_overlap = false;
    for part in spec.split(',') {
        let part = trim_http(part);
        if part.is_empty() {
            continue;
        }
        let (start, end) = part.split_once('-').ok_or(RangeError::Invalid)?;
        let (start, end) = (trim_http(start), trim_http(end));
        if start.is_empty() {
            if end.is_empty() || end.starts_with('-') {
                return Err(RangeError::Invalid);
            }
            let n = u64::try_from(parse_int(end).ok_or(RangeError::Invalid)?)
                .map_err(|_| RangeError::Invalid)?;
            let n = n.min(size);
            ranges.push(ByteRange {
                start: size - n,
                len: n,
            });
            continue;
        }
        let first = u64::try_from(parse_int(start).ok_or(RangeError::Invalid)?)
            .map_err(|_| RangeError::Invalid)?;
        if first >= size {
            no_overlap = true;
            continue;
        }
        let len = if end.is_empty() {
            size - first
        } else {
            let last = parse_int(end).ok_or(RangeError::Invalid)?;
            // `first < size <= u64::MAX`, and Go compares in int64: a negative `last` is below.
            let last = u64::try_from(last).map_err(|_| RangeError::Invalid)?;
            if first > last {
                return Err(RangeError::Invalid);
            }
            last.min(size - 1) - first + 1
        };
        ranges.push(ByteRange { start: first, len });
    }
    if no_overlap && ranges.is_empty() {
        return Err(RangeError::NoOverlap);
    }
    Ok(ranges)
}

/// The total length of `ranges`, saturating (Go's `sumRangesSize`; compared with the size).
pub fn total_len(ranges: &[ByteRange]) -> u64 {
    ranges.iter().fold(0u64, |sum, r| sum.saturating_add(r.len))
}

/// Go's `strconv.ParseInt(s, 10, 64)`: optional `+`/`-`, then decimal digits, within `i64`.
fn parse_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude: u64 = digits.parse().ok()?;
    if neg {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Trims the ASCII whitespace Go's `textproto.TrimString` trims.
fn trim_http(s: &str) -> &str {
    s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u64, len: u64) -> ByteRange {
        ByteRange { start, len }
    }

    #[test]
    fn single_ranges_follow_go_semantics() {
        assert_eq!(parse_range("bytes=0-9", 100), Ok(vec![r(0, 10)]));
        assert_eq!(parse_range("bytes=90-", 100), Ok(vec![r(90, 10)]));
        assert_eq!(parse_range("bytes=-10", 100), Ok(vec![r(90, 10)]));
        assert_eq!(parse_range("bytes=-1000", 100), Ok(vec![r(0, 100)]));
        assert_eq!(parse_range("bytes=95-200", 100), Ok(vec![r(95, 5)]));
        assert_eq!(parse_range("bytes= 1 - 2 ", 100), Ok(vec![r(1, 2)]));
        assert_eq!(parse_range("bytes=+1-2", 100), Ok(vec![r(1, 2)]));
    }

    #[test]
    fn multiple_ranges_keep_their_order() {
        assert_eq!(
            parse_range("bytes=50-59, 0-9,,", 100),
            Ok(vec![r(50, 10), r(0, 10)])
        );
        assert_eq!(parse_range("bytes=200-300, 0-0", 100), Ok(vec![r(0, 1)]));
    }

    #[test]
    fn malformed_ranges_are_invalid() {
        for bad in [
            "items=0-1",
            "bytes=5",
            "bytes=9-1",
            "bytes=--1",
            "bytes=-",
            "bytes=a-b",
            "bytes=1-x",
            "bytes=-1-2",
            "bytes=-+-1",
            "bytes=1--5",
            "bytes=-9223372036854775808",
            "bytes=99999999999999999999-",
            "bytes=1_0-20",
        ] {
            assert_eq!(parse_range(bad, 100), Err(RangeError::Invalid), "{bad}");
        }
    }

    #[test]
    fn ranges_past_the_end_do_not_overlap() {
        assert_eq!(parse_range("bytes=100-", 100), Err(RangeError::NoOverlap));
        assert_eq!(
            parse_range("bytes=150-200,300-", 100),
            Err(RangeError::NoOverlap)
        );
    }

    #[test]
    fn content_range_is_inclusive() {
        assert_eq!(r(0, 10).content_range(100), "bytes 0-9/100");
    }

    // Go 1.26's `http.ServeContent` answers `bytes=-0` with 206 and these exact headers (checked
    // with a throwaway Go server); the unsigned `start + len - 1` underflowed here before.
    #[test]
    fn an_empty_suffix_range_ends_before_its_start_as_in_go() {
        assert_eq!(parse_range("bytes=-0", 0), Ok(vec![r(0, 0)]));
        assert_eq!(r(0, 0).content_range(0), "bytes 0--1/0");
        assert_eq!(parse_range("bytes=-0", 10), Ok(vec![r(10, 0)]));
        assert_eq!(r(10, 0).content_range(10), "bytes 10-9/10");
    }

    #[test]
    fn go_parse_int_signs_are_accepted_where_go_accepts_them() {
        // `0--0`: the end is ParseInt("-0") = 0, so the range is byte 0.
        assert_eq!(parse_range("bytes=0--0", 10), Ok(vec![r(0, 1)]));
        assert_eq!(parse_range("bytes=-+3", 10), Ok(vec![r(7, 3)]));
        assert_eq!(
            parse_range("bytes=0-18446744073709551615", 10),
            Err(RangeError::Invalid)
        );
        assert_eq!(
            parse_range("bytes=0-9223372036854775807", 10),
            Ok(vec![r(0, 10)])
        );
    }

    #[test]
    fn huge_sizes_and_many_ranges_do_not_overflow() {
        let max = u64::MAX;
        assert_eq!(parse_range("bytes=-1", max), Ok(vec![r(max - 1, 1)]));
        let many = vec![r(0, max), r(0, max)];
        assert_eq!(total_len(&many), max);
    }

    #[test]
    fn no_header_means_no_ranges() {
        assert_eq!(parse_range("", 100), Ok(vec![]));
    }
}
