//! Splits a JSON stream into its top-level values without parsing them.
//!
//! Input: a buffered reader over a JSON stream (concatenated values, JSON Lines). Output: each
//! value's bytes with the line and column it starts at. No IO beyond the reader.
//!
//! The walk parses each value afterwards, so this only tracks strings and nesting; malformed
//! input yields a slice the parser rejects with its position. Strings, most of a catalog's
//! bytes, are skipped with `memchr`.

use std::io::{self, BufRead};

use super::walk::MAX_OBJECT_BYTES;
use super::yaml::{SplitError, YamlError};

/// Moves a 1-based line/column (columns count bytes) past `bytes`.
fn advance(line: &mut usize, column: &mut usize, bytes: &[u8]) {
    match memchr::memrchr(b'\n', bytes) {
        None => *column += bytes.len(),
        Some(last) => {
            *line += memchr::memchr_iter(b'\n', bytes).count();
            *column = bytes.len() - last;
        }
    }
}

/// Bytes that end a top-level scalar.
static SCALAR_END: [bool; 256] = {
    let mut t = [false; 256];
    let ends = b" \t\n\r{}[],:\"";
    let mut i = 0;
    while i < ends.len() {
        t[ends[i] as usize] = true;
        i += 1;
    }
    t
};

/// Bytes that matter inside an object or array (outside strings).
static STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t
};

/// Why splitting stopped inside [`JsonSplitter`].
enum Bounded {
    Io(io::Error),
    /// The value starting at this line and column is over [`MAX_OBJECT_BYTES`].
    TooLarge(usize, usize),
}

impl From<io::Error> for Bounded {
    fn from(e: io::Error) -> Self {
        Bounded::Io(e)
    }
}

/// Splits a JSON stream into top-level values without parsing them.
pub(crate) struct JsonSplitter<R> {
    pub(crate) reader: R,
    line: usize,
    column: usize,
}

impl<R: BufRead> JsonSplitter<R> {
    pub(crate) fn new(reader: R) -> JsonSplitter<R> {
        JsonSplitter {
            reader,
            line: 1,
            column: 1,
        }
    }

    /// Appends the next value's bytes to `buf`; returns its starting line/column, or `None` at
    /// the end of the stream. Malformed input yields a slice the parser will reject. A value
    /// over [`MAX_OBJECT_BYTES`] is an error at its start.
    pub(crate) fn next_value(
        &mut self,
        buf: &mut Vec<u8>,
    ) -> Result<Option<(usize, usize)>, SplitError> {
        self.next_value_bounded(buf).map_err(|e| match e {
            Bounded::Io(e) => SplitError::Io(e),
            Bounded::TooLarge(line, column) => SplitError::Syntax(YamlError::syntax(
                line,
                column,
                format!("object is larger than the limit of {MAX_OBJECT_BYTES} bytes"),
            )),
        })
    }

    fn next_value_bounded(&mut self, buf: &mut Vec<u8>) -> Result<Option<(usize, usize)>, Bounded> {
        // Skip JSON whitespace.
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(None);
            }
            let n = chunk
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(chunk.len());
            let found = n < chunk.len();
            advance(&mut self.line, &mut self.column, &chunk[..n]);
            self.reader.consume(n);
            if found {
                break;
            }
        }
        let start = (self.line, self.column);
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escape = false;
        let mut started = false;
        let mut scalar = false;
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(Some(start));
            }
            let mut end = None;
            let mut i = 0;
            while i < chunk.len() {
                if escape {
                    escape = false;
                    i += 1;
                    continue;
                }
                if !started {
                    started = true;
                    match chunk[i] {
                        b'{' | b'[' => depth = 1,
                        b'"' => in_string = true,
                        _ => scalar = true,
                    }
                    i += 1;
                    continue;
                }
                if scalar {
                    if SCALAR_END[chunk[i] as usize] {
                        end = Some(i);
                        break;
                    }
                    i += 1;
                    continue;
                }
                if in_string {
                    match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                        Some(n) => i += n,
                        // The string goes on in the next chunk.
                        None => break,
                    }
                    if chunk[i] == b'\\' {
                        escape = true;
                        i += 1;
                        continue;
                    }
                    in_string = false;
                    i += 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                    continue;
                }
                while i < chunk.len() && !STRUCTURAL[chunk[i] as usize] {
                    i += 1;
                }
                if i >= chunk.len() {
                    break;
                }
                match chunk[i] {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    _ => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                }
                i += 1;
            }
            let n = end.unwrap_or(chunk.len());
            if buf.len() + n > MAX_OBJECT_BYTES {
                return Err(Bounded::TooLarge(start.0, start.1));
            }
            buf.extend_from_slice(&chunk[..n]);
            advance(&mut self.line, &mut self.column, &chunk[..n]);
            self.reader.consume(n);
            if end.is_some() {
                return Ok(Some(start));
            }
        }
    }
}
