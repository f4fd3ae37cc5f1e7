//! `Range` request header parsing with the semantics of Go's `http.ServeContent`, which upstream
//! catalogd uses for `/api/v1/all`.
//!
//! Input: the header value and the content size. Output: byte ranges or why none apply. Pure.

/// A satisfiable byte range of the content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    pub len: u64,
}

impl ByteRange {
    /// The `Content-Range` header value for this range of content of `size` bytes.
    pub fn content_range(&self, size: u64) -> String {
        format!(
            "bytes {}-{}/{}",
            self.start,
            self.start + self.len - 1,
            size
        )
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

/// Parses `bytes=a-b, c-, -n` against content of `size` bytes.
///
/// | spec | meaning |
/// |---|---|
/// | `a-b` | bytes a..=b, b clamped to the last byte; a > b is invalid |
/// | `a-` | from a to the end |
/// | `-n` | the last n bytes (all of them if n > size) |
/// | a ≥ size | skipped; if every range is skipped: [`RangeError::NoOverlap`] |
/// | empty elements | ignored |
///
/// An empty header yields no ranges.
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
            let n = parse_int(end).ok_or(RangeError::Invalid)?;
            let n = n.min(size);
            ranges.push(ByteRange {
                start: size - n,
                len: n,
            });
            continue;
        }
        let first = parse_int(start).ok_or(RangeError::Invalid)?;
        if first >= size {
            no_overlap = true;
            continue;
        }
        let len = if end.is_empty() {
            size - first
        } else {
            let last = parse_int(end).ok_or(RangeError::Invalid)?;
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

/// Non-negative decimal as Go's `strconv.ParseInt` accepts it (optional `+`).
fn parse_int(s: &str) -> Option<u64> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i64 = digits.parse().ok()?;
    u64::try_from(v).ok()
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

    #[test]
    fn no_header_means_no_ranges() {
        assert_eq!(parse_range("", 100), Ok(vec![]));
    }
}
