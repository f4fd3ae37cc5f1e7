//! Go-compatible JSON: the exact bytes upstream catalogd serves for a catalog blob.
//!
//! Input: JSON text (or an already decoded [`Value`] / `serde_json::Value`). Output: canonical bytes.
//! No IO.
//!
//! Upstream decodes every blob into Go's `map[string]any` (numbers become `float64`) and re-encodes it
//! with `json.Encoder` and `SetEscapeHTML(false)`. This module reproduces that round trip:
//!
//! | input | output |
//! |---|---|
//! | object keys | sorted by bytes at every level; a repeated key keeps its last value |
//! | `1.0`, `4.10`, `1e2` | `1`, `4.1`, `100` (float64, shortest digits) |
//! | abs < 1e-6 or >= 1e21 | exponent form `1e-7`, `1e+21` |
//! | integers above 2^53 | rounded to the nearest float64, as Go does |
//! | `<` `>` `&`, DEL | literal |
//! | U+2028, U+2029 | `\u2028`, `\u2029` |
//! | control characters | `\b \f \n \r \t`, others `\u00XX` (lowercase hex) |
//! | invalid UTF-8 in a string, lone surrogate escapes | U+FFFD |
//! | a number that overflows float64 (`1e400`) | error, as Go's `json.Unmarshal` |
//!
//! [`Value`] also keeps each number's source text so that code needing the literal (for example
//! `olm.maxOpenShiftVersion: 4.10`) can read it; [`Value::write_raw`] writes it back.

use std::fmt;

/// Nesting deeper than this is rejected (Go allows 10000; a lower bound keeps the recursive
/// encoder and destructor within small thread stacks).
pub const MAX_DEPTH: usize = 1000;

/// A decoded JSON value with Go `map[string]any` semantics.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Object),
}

/// A JSON number: its float64 value plus the literal it was read from.
#[derive(Clone, Debug)]
pub struct Number {
    value: f64,
    literal: Box<str>,
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.value.to_bits() == other.value.to_bits()
    }
}

impl Number {
    /// A number from a JSON literal. Fails when the literal overflows float64 or is not valid JSON.
    pub fn from_literal(literal: &str) -> Result<Number, String> {
        if !is_json_number(literal.as_bytes()) {
            return Err(format!("invalid JSON number {literal:?}"));
        }
        let value: f64 = literal
            .parse()
            .map_err(|_| format!("invalid JSON number {literal:?}"))?;
        if !value.is_finite() {
            return Err(format!(
                "cannot unmarshal number {literal} into Go value of type float64"
            ));
        }
        Ok(Number {
            value,
            literal: literal.into(),
        })
    }

    /// A number from a float; its literal is Go's formatting. Fails for NaN and infinities, which
    /// Go's encoder rejects as well.
    pub fn from_f64(value: f64) -> Result<Number, String> {
        if !value.is_finite() {
            return Err(format!(
                "json: unsupported value: {}",
                go_special_float(value)
            ));
        }
        let mut literal = Vec::new();
        write_float(value, &mut literal);
        Ok(Number {
            value,
            literal: String::from_utf8_lossy(&literal).into(),
        })
    }

    /// A number with a caller-chosen literal (which must be a valid JSON number for `value`).
    pub(crate) fn with_literal(value: f64, literal: String) -> Number {
        Number {
            value,
            literal: literal.into(),
        }
    }

    pub fn as_f64(&self) -> f64 {
        self.value
    }

    /// The literal this number was read from (for YAML: the scalar text when it is valid JSON).
    pub fn literal(&self) -> &str {
        &self.literal
    }
}

fn go_special_float(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    }
}

/// A JSON object whose keys are unique and sorted by bytes (what a Go map encodes to).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object {
    entries: Vec<(String, Value)>,
}

impl Object {
    /// Builds an object from key/value pairs in document order: the last value of a repeated key
    /// wins, as when Go decodes into a map.
    pub fn from_pairs(mut pairs: Vec<(String, Value)>) -> Object {
        // A stable sort keeps document order among equal keys, so the last of each run wins.
        pairs.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        // In place, without a second vector: `dedup_by` keeps the first of a run, so each later
        // value is swapped into it before the later entry is dropped.
        pairs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(&mut later.1, &mut kept.1);
            }
            same
        });
        // The parser grew the vector by doubling; an object lives long, its slack should not.
        pairs.shrink_to_fit();
        Object { entries: pairs }
    }

    /// The stored key equal to `key`, if any.
    pub fn get_key(&self, key: &str) -> Option<&str> {
        self.entries
            .binary_search_by(|(k, _)| k.as_bytes().cmp(key.as_bytes()))
            .ok()
            .map(|i| self.entries[i].0.as_str())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries
            .binary_search_by(|(k, _)| k.as_bytes().cmp(key.as_bytes()))
            .ok()
            .map(|i| &self.entries[i].1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn into_entries(self) -> Vec<(String, Value)> {
        self.entries
    }
}

impl Value {
    /// A short name of the JSON type, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// Appends the canonical (Go-identical) encoding.
    pub fn write_canonical(&self, out: &mut Vec<u8>) {
        self.write(out, false);
    }

    /// Appends the encoding with sorted keys and Go string escaping, but numbers as their source
    /// literal (`4.10` stays `4.10`).
    pub fn write_raw(&self, out: &mut Vec<u8>) {
        self.write(out, true);
    }

    /// The canonical encoding as a new buffer.
    pub fn to_canonical(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_canonical(&mut out);
        out
    }

    fn write(&self, out: &mut Vec<u8>, raw_numbers: bool) {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Number(n) => {
                if raw_numbers {
                    out.extend_from_slice(n.literal.as_bytes());
                } else {
                    write_float(n.value, out);
                }
            }
            Value::String(s) => write_string(s, out),
            Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out, raw_numbers);
                }
                out.push(b']');
            }
            Value::Object(obj) => {
                out.push(b'{');
                for (i, (k, v)) in obj.entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_string(k, out);
                    out.push(b':');
                    v.write(out, raw_numbers);
                }
                out.push(b'}');
            }
        }
    }
}

/// Canonicalizes JSON text holding exactly one value (surrounding whitespace allowed).
pub fn canonicalize_bytes(input: &[u8]) -> Result<Vec<u8>, ParseError> {
    Ok(parse(input)?.to_canonical())
}

/// Canonicalizes a `serde_json::Value` (numbers go through float64 as in Go). Fails only for
/// numbers that do not fit a float64, which serde_json can hold with `arbitrary_precision`.
pub fn canonicalize(input: &serde_json::Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_serde(input, &mut out);
    out
}

fn write_serde(v: &serde_json::Value, out: &mut Vec<u8>) {
    match v {
        serde_json::Value::Null => out.extend_from_slice(b"null"),
        serde_json::Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        serde_json::Value::Number(n) => {
            // Without arbitrary_precision every serde_json number converts to a finite f64.
            let f = n.as_f64().unwrap_or(0.0);
            write_float(f, out);
        }
        serde_json::Value::String(s) => write_string(s, out),
        serde_json::Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_serde(item, out);
            }
            out.push(b']');
        }
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(k, out);
                out.push(b':');
                if let Some(v) = map.get(k) {
                    write_serde(v, out);
                }
            }
            out.push(b'}');
        }
    }
}

/// Appends a float64 exactly as Go's `encoding/json` formats it. `f` must be finite.
pub fn write_float(f: f64, out: &mut Vec<u8>) {
    if f == 0.0 {
        out.extend_from_slice(if f.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    // Rust's `{:e}` yields the shortest digits that round-trip, as Go's 'f'/'e' with precision -1.
    let sci = format!("{:e}", f);
    let (neg, rest) = match sci.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, sci.as_str()),
    };
    let (mantissa, exp) = rest.split_once('e').unwrap_or((rest, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if neg {
        out.push(b'-');
    }
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        out.extend_from_slice(&digits.as_bytes()[..1]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits.as_bytes()[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        out.extend_from_slice(exp.unsigned_abs().to_string().as_bytes());
        return;
    }
    // Decimal point position relative to the start of `digits`.
    let dp = exp + 1;
    let nd = digits.len() as i32;
    if dp <= 0 {
        out.extend_from_slice(b"0.");
        for _ in 0..(-dp) {
            out.push(b'0');
        }
        out.extend_from_slice(digits.as_bytes());
    } else if dp >= nd {
        out.extend_from_slice(digits.as_bytes());
        for _ in 0..(dp - nd) {
            out.push(b'0');
        }
    } else {
        let dp = dp as usize;
        out.extend_from_slice(&digits.as_bytes()[..dp]);
        out.push(b'.');
        out.extend_from_slice(&digits.as_bytes()[dp..]);
    }
}

/// Formats a float64 the way Go's `strconv.FormatFloat(f, 'g', -1, 32)` does (used by
/// sigs.k8s.io/yaml for float map keys), with YAML's names for infinities and NaN.
pub fn format_float32_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    let f32v = f as f32;
    if f32v == 0.0 {
        return if f32v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    shortest_g(&format!("{:e}", f32v))
}

/// Formats a float64 exactly as Go's `strconv.FormatFloat(f, 'g', -1, 64)` does (`+Inf`,
/// `-Inf`, `NaN` for the non-finite values). go-yaml v2 writes floats this way, and `fmt`'s
/// `%v` prints them this way.
pub fn format_float64_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    shortest_g(&format!("{:e}", f))
}

/// Go's shortest `'g'` layout from Rust's `{:e}` text (which has the shortest round-trip digits):
/// the exponent form when the exponent is below -4 or at least 6 (Go decides with precision 6
/// when the precision is the shortest), with at least two exponent digits.
fn shortest_g(sci: &str) -> String {
    let (neg, rest) = match sci.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, sci),
    };
    let (mantissa, exp) = rest.split_once('e').unwrap_or((rest, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if !(-4..6).contains(&exp) {
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        s.push(if exp < 0 { '-' } else { '+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            s.push('0');
        }
        s.push_str(&e.to_string());
        return s;
    }
    let dp = exp + 1;
    let nd = digits.len() as i32;
    if dp <= 0 {
        s.push_str("0.");
        for _ in 0..(-dp) {
            s.push('0');
        }
        s.push_str(&digits);
    } else if dp >= nd {
        s.push_str(&digits);
        for _ in 0..(dp - nd) {
            s.push('0');
        }
    } else {
        s.push_str(&digits[..dp as usize]);
        s.push('.');
        s.push_str(&digits[dp as usize..]);
    }
    s
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes that need attention when writing a string: controls, `"`, `\\`, and 0xE2 (the first byte
/// of U+2028/U+2029).
static WRITE_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0xE2] = true;
    t
};

/// Appends a JSON string exactly as Go's encoder with `SetEscapeHTML(false)` writes it.
pub fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    loop {
        while i < bytes.len() && !WRITE_SPECIAL[bytes[i] as usize] {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        let b = bytes[i];
        if b == 0xE2 {
            // U+2028 and U+2029 are E2 80 A8 / E2 80 A9 in UTF-8.
            if i + 2 < bytes.len() && bytes[i + 1] == 0x80 && (bytes[i + 2] & 0xFE) == 0xA8 {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(b"\\u202");
                out.push(HEX[(bytes[i + 2] & 0xF) as usize]);
                i += 3;
                start = i;
            } else {
                i += 1;
            }
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A JSON syntax or conversion error with its byte offset in the parsed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte offset {}", self.message, self.offset)
    }
}

impl std::error::Error for ParseError {}

/// Parses exactly one JSON value (surrounding JSON whitespace allowed) with Go's decoding rules.
pub fn parse(input: &[u8]) -> Result<Value, ParseError> {
    let mut p = Parser {
        input,
        pos: 0,
        syntax_only: false,
    };
    p.skip_ws();
    let v = p.value(0)?;
    p.skip_ws();
    if p.pos < input.len() {
        return Err(p.err_char("after top-level value"));
    }
    Ok(v)
}

/// Scans the JSON value that starts at `start` (JSON whitespace before it allowed) as Go's
/// `json.Decoder` reads one value of a stream, and returns the index just past it. A syntax
/// error carries Go's message and the index of the offending byte; input that ends inside the
/// value is `unexpected end of JSON input` at `input.len()`. Numbers are checked for syntax only
/// (`1e400` passes: converting it is the decoder's next step, not the scanner's).
pub fn scan_value(input: &[u8], start: usize) -> Result<usize, ParseError> {
    let mut p = Parser {
        input,
        pos: start,
        syntax_only: true,
    };
    p.skip_ws();
    p.value(0)?;
    Ok(p.pos)
}

/// Decodes the JSON string whose opening quote is at `start` with Go's rules (escapes, U+FFFD for
/// invalid UTF-8 and lone surrogates); returns it and the index just past its closing quote.
pub(crate) fn decode_string_at(input: &[u8], start: usize) -> Result<(String, usize), ParseError> {
    let mut p = Parser {
        input,
        pos: start,
        syntax_only: false,
    };
    let s = p.string()?;
    Ok((s, p.pos))
}

/// True when `s` matches the JSON number grammar.
pub fn is_json_number(s: &[u8]) -> bool {
    scan_number(s, 0) == Ok(s.len())
}

/// Scans a JSON number starting at `start`: the index just past it, or the index of the offending
/// byte and the context Go's decoder names in its error ("in numeric literal", ...).
pub(crate) fn scan_number(s: &[u8], start: usize) -> Result<usize, (usize, &'static str)> {
    let digits = |mut i: usize| {
        while matches!(s.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
        i
    };
    let mut i = start;
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(i),
        _ => return Err((i, "in numeric literal")),
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        if !matches!(s.get(i), Some(b'0'..=b'9')) {
            return Err((i, "after decimal point in numeric literal"));
        }
        i = digits(i);
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !matches!(s.get(i), Some(b'0'..=b'9')) {
            return Err((i, "in exponent of numeric literal"));
        }
        i = digits(i);
    }
    Ok(i)
}

struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
    /// Accept numbers that overflow float64 (a scan for value boundaries, see [`scan_value`]).
    syntax_only: bool,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.input.get(self.pos) {
            self.pos += 1;
        }
    }

    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            offset: self.pos,
            message: message.into(),
        }
    }

    fn err_char(&self, context: &str) -> ParseError {
        match self.input.get(self.pos) {
            None => self.err("unexpected end of JSON input"),
            Some(&b) => self.err(format!("invalid character {} {context}", quote_char(b))),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err(format!("exceeded max depth of {MAX_DEPTH}")));
        }
        match self.input.get(self.pos) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.err_char("looking for beginning of value")),
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> Result<Value, ParseError> {
        for &expected in word {
            match self.input.get(self.pos) {
                Some(&b) if b == expected => self.pos += 1,
                _ => return Err(self.err_char("in literal")),
            }
        }
        Ok(v)
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let s = self.input;
        let i = match scan_number(s, start) {
            Ok(end) => end,
            Err((at, context)) => {
                self.pos = at;
                return Err(self.err_char(context));
            }
        };
        self.pos = i;
        // The slice is ASCII by construction.
        let lit = std::str::from_utf8(&s[start..i]).unwrap_or("0");
        let value: f64 = lit.parse().map_err(|_| ParseError {
            offset: start,
            message: format!("invalid number {lit}"),
        })?;
        if !value.is_finite() && !self.syntax_only {
            return Err(ParseError {
                offset: start,
                message: format!("cannot unmarshal number {lit} into Go value of type float64"),
            });
        }
        Ok(Value::Number(Number {
            value,
            literal: lit.into(),
        }))
    }

    fn string(&mut self) -> Result<String, ParseError> {
        debug_assert_eq!(self.input.get(self.pos), Some(&b'"'));
        self.pos += 1;
        let s = self.input;
        // Fast path: no escapes before the closing quote.
        let mut end = self.pos;
        while end < s.len() && !matches!(s[end], b'"' | b'\\' | 0..=0x1f) {
            end += 1;
        }
        if s.get(end) == Some(&b'"') {
            let text = string_lossy(&s[self.pos..end]);
            self.pos = end + 1;
            return Ok(text);
        }
        let mut out: Vec<u8> = Vec::with_capacity(end - self.pos + 16);
        let mut run_start = self.pos;
        loop {
            let Some(&b) = s.get(self.pos) else {
                return Err(self.err("unexpected end of JSON input"));
            };
            match b {
                b'"' => {
                    push_lossy(&mut out, &s[run_start..self.pos]);
                    self.pos += 1;
                    // push_lossy only ever appends valid UTF-8.
                    return Ok(String::from_utf8(out)
                        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()));
                }
                b'\\' => {
                    push_lossy(&mut out, &s[run_start..self.pos]);
                    self.pos += 1;
                    let Some(&e) = s.get(self.pos) else {
                        return Err(self.err("unexpected end of JSON input"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let cp = self.hex4()?;
                            let ch = if (0xD800..0xDC00).contains(&cp) {
                                // A high surrogate pairs only with an immediately following
                                // low-surrogate escape; anything else becomes U+FFFD and the
                                // following text is decoded on its own.
                                if s.get(self.pos) == Some(&b'\\')
                                    && s.get(self.pos + 1) == Some(&b'u')
                                {
                                    let save = self.pos;
                                    self.pos += 2;
                                    match self.hex4() {
                                        Ok(lo) if (0xDC00..0xE000).contains(&lo) => {
                                            let c = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                            char::from_u32(c).unwrap_or('\u{FFFD}')
                                        }
                                        _ => {
                                            self.pos = save;
                                            '\u{FFFD}'
                                        }
                                    }
                                } else {
                                    '\u{FFFD}'
                                }
                            } else {
                                char::from_u32(cp).unwrap_or('\u{FFFD}')
                            };
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        other => {
                            self.pos -= 1;
                            return Err(self.err(format!(
                                "invalid character {} in string escape code",
                                quote_char(other)
                            )));
                        }
                    }
                    run_start = self.pos;
                }
                0..=0x1f => {
                    return Err(self.err(format!(
                        "invalid character {} in string literal",
                        quote_char(b)
                    )));
                }
                _ => self.pos += 1,
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let Some(&b) = self.input.get(self.pos) else {
                return Err(self.err("unexpected end of JSON input"));
            };
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return Err(self.err_char("in \\u hexadecimal character escape")),
            };
            v = v * 16 + u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.input.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.input.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    items.shrink_to_fit();
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.err_char("after array element")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.pos += 1;
        let mut pairs = Vec::new();
        self.skip_ws();
        if self.input.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Object(Object::default()));
        }
        loop {
            self.skip_ws();
            if self.input.get(self.pos) != Some(&b'"') {
                return Err(self.err_char("looking for beginning of object key string"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.input.get(self.pos) != Some(&b':') {
                return Err(self.err_char("after object key"));
            }
            self.pos += 1;
            self.skip_ws();
            let v = self.value(depth + 1)?;
            pairs.push((key, v));
            self.skip_ws();
            match self.input.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(Object::from_pairs(pairs)));
                }
                _ => return Err(self.err_char("after object key:value pair")),
            }
        }
    }
}

/// Go quotes the offending byte like `'x'`; non-printable bytes are shown escaped.
fn quote_char(b: u8) -> String {
    match b {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        0x20..=0x7e => format!("'{}'", b as char),
        _ => format!("'\\x{b:02x}'"),
    }
}

/// Appends `bytes`, replacing every byte that does not start a valid UTF-8 sequence with U+FFFD
/// (one replacement per byte, as Go's decoder does).
pub(crate) fn push_lossy(out: &mut Vec<u8>, mut bytes: &[u8]) {
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.extend_from_slice(s.as_bytes());
                return;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                out.extend_from_slice(&bytes[..valid]);
                out.extend_from_slice("\u{FFFD}".as_bytes());
                bytes = &bytes[valid + 1..];
            }
        }
    }
}

/// A `String` from bytes with Go's per-byte U+FFFD replacement of invalid UTF-8.
pub(crate) fn string_lossy(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => {
            let mut out = Vec::with_capacity(bytes.len() + 8);
            push_lossy(&mut out, bytes);
            String::from_utf8(out).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(json: &str) -> String {
        String::from_utf8(canonicalize_bytes(json.as_bytes()).unwrap()).unwrap()
    }

    fn float(f: f64) -> String {
        let mut out = Vec::new();
        write_float(f, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_are_reencoded_as_go_float64() {
        for (input, want) in [
            ("1.0", "1"),
            ("4.10", "4.1"),
            ("100", "100"),
            ("-0", "-0"),
            ("-0.0", "-0"),
            ("0", "0"),
            ("1e2", "100"),
            ("1E+2", "100"),
            ("0.1", "0.1"),
            ("12345.678", "12345.678"),
            ("1e20", "100000000000000000000"),
            ("1e21", "1e+21"),
            ("123456789012345678901234", "1.2345678901234569e+23"),
            ("0.000001", "0.000001"),
            ("1e-6", "0.000001"),
            ("1e-7", "1e-7"),
            ("0.0000001", "1e-7"),
            ("2.5e-5", "0.000025"),
            ("-1.25e-8", "-1.25e-8"),
            ("1.5e300", "1.5e+300"),
            ("1e-100", "1e-100"),
            ("5e-324", "5e-324"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("9007199254740993", "9007199254740992"),
            ("18446744073709551615", "18446744073709552000"),
            ("0.30000000000000004", "0.30000000000000004"),
            ("999999999999999999999", "1e+21"),
        ] {
            assert_eq!(canon(input), want, "input {input}");
        }
    }

    #[test]
    fn write_float_matches_go_around_the_format_switch() {
        assert_eq!(float(999999999999999900000.0), "999999999999999900000");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(0.000001), "0.000001");
        assert_eq!(float(0.00000099), "9.9e-7");
        assert_eq!(float(1e-10), "1e-10");
        assert_eq!(float(-123.5), "-123.5");
    }

    #[test]
    fn numbers_overflowing_float64_are_rejected_like_go() {
        let e = parse(b"1e400").unwrap_err();
        assert!(e.message.contains("cannot unmarshal number 1e400"), "{e}");
        assert!(parse(b"-1e400").is_err());
        assert!(Number::from_f64(f64::NAN).is_err());
    }

    #[test]
    fn json_number_grammar_is_strict() {
        for bad in [
            "01", "1.", ".5", "+1", "1e", "0x10", "-", "1.e5", "NaN", "Infinity",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad} should be rejected");
        }
        assert!(is_json_number(b"-0.5e-3"));
        assert!(!is_json_number(b"4.10.1"));
    }

    #[test]
    fn malformed_numbers_are_described_as_go_describes_them() {
        for (input, message) in [
            ("[-x]", "invalid character 'x' in numeric literal"),
            (
                "[1.x]",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            (
                "[1ex]",
                "invalid character 'x' in exponent of numeric literal",
            ),
            (
                "[1e+]",
                "invalid character ']' in exponent of numeric literal",
            ),
            ("1.", "unexpected end of JSON input"),
        ] {
            let err = parse(input.as_bytes()).expect_err(input);
            assert_eq!(err.message, message, "{input}");
        }
    }

    #[test]
    fn strings_escape_like_go_without_html_escaping() {
        assert_eq!(
            canon(r#""<a href='x'>&amp;</a>""#),
            r#""<a href='x'>&amp;</a>""#
        );
        assert_eq!(canon(r#""\u2028\u2029""#), r#""\u2028\u2029""#);
        assert_eq!(canon("\"\u{2028}x\u{2029}\""), r#""\u2028x\u2029""#);
        assert_eq!(canon(r#""\b\f\n\r\t""#), r#""\b\f\n\r\t""#);
        assert_eq!(
            canon(r#""\u0000\u0001\u001f\u000b""#),
            r#""\u0000\u0001\u001f\u000b""#
        );
        assert_eq!(canon(r#""\"\\\/""#), r#""\"\\/""#);
        assert_eq!(canon("\"\u{7f}é😀\""), "\"\u{7f}é😀\"");
        assert_eq!(canon(r#""\u00e9\uD83D\uDE00""#), "\"é😀\"");
    }

    #[test]
    fn invalid_utf8_and_lone_surrogates_become_replacement_characters() {
        let out = canonicalize_bytes(b"\"a\xffb\xe2\x82c\"").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\u{FFFD}b\u{FFFD}\u{FFFD}c\""
        );
        assert_eq!(canon(r#""\ud800x""#), "\"\u{FFFD}x\"");
        assert_eq!(canon(r#""\udc00""#), "\"\u{FFFD}\"");
        assert_eq!(canon(r#""\ud800\u0041""#), "\"\u{FFFD}A\"");
        assert_eq!(canon(r#""\ud800\ud800\udc00""#), "\"\u{FFFD}\u{10000}\"");
    }

    #[test]
    fn raw_control_characters_in_strings_are_rejected() {
        let e = parse(b"\"a\nb\"").unwrap_err();
        assert!(e.message.contains("in string literal"), "{e}");
        assert!(parse(br#""\x""#).is_err());
        assert!(parse(br#""\u12""#).is_err());
    }

    #[test]
    fn object_keys_are_sorted_by_bytes_at_every_level_and_last_duplicate_wins() {
        assert_eq!(
            canon(r#"{"b":1,"a":{"z":[{"y":1,"x":2}],"a":null},"B":true,"é":"x","a1":false}"#),
            r#"{"B":true,"a":{"a":null,"z":[{"x":2,"y":1}]},"a1":false,"b":1,"é":"x"}"#
        );
        assert_eq!(
            canon(r#"{"a":1,"b":2,"a":{"c":3}}"#),
            r#"{"a":{"c":3},"b":2}"#
        );
    }

    #[test]
    fn whitespace_is_dropped_and_syntax_errors_carry_offsets() {
        assert_eq!(canon(" {\n\t\"a\" : [ 1 , 2 ] }\r\n"), r#"{"a":[1,2]}"#);
        let e = parse(br#"{"a":1,}"#).unwrap_err();
        assert_eq!(e.offset, 7);
        assert!(
            e.message
                .contains("looking for beginning of object key string")
        );
        assert!(parse(b"{} {}").is_err());
        assert_eq!(
            parse(b"").unwrap_err().message,
            "unexpected end of JSON input"
        );
    }

    #[test]
    fn nesting_beyond_the_limit_is_rejected() {
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert!(
            parse(deep.as_bytes())
                .unwrap_err()
                .message
                .contains("max depth")
        );
        let ok = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(ok.as_bytes()).is_ok());
    }

    #[test]
    fn raw_encoding_keeps_number_literals() {
        let v = parse(br#"{"v":4.10,"w":1e2,"s":"<"}"#).unwrap();
        let mut raw = Vec::new();
        v.write_raw(&mut raw);
        assert_eq!(raw, br#"{"s":"<","v":4.10,"w":1e2}"#);
        assert_eq!(v.to_canonical(), br#"{"s":"<","v":4.1,"w":100}"#);
    }

    #[test]
    fn serde_json_values_canonicalize_the_same_way() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"b":[1.0,2.5e21,"<\u2028>"],"a":1e-7}"#).unwrap();
        assert_eq!(
            canonicalize(&v),
            br#"{"a":1e-7,"b":[1,2.5e+21,"<\u2028>"]}"#
        );
    }

    #[test]
    fn float32_g_formatting_matches_go_for_yaml_map_keys() {
        assert_eq!(format_float32_g(0.1), "0.1");
        assert_eq!(format_float32_g(1.5), "1.5");
        assert_eq!(format_float32_g(100000.0), "100000");
        assert_eq!(format_float32_g(1e6), "1e+06");
        assert_eq!(format_float32_g(1.23456789), "1.2345679");
        assert_eq!(format_float32_g(0.0001), "0.0001");
        assert_eq!(format_float32_g(0.00001), "1e-05");
        assert_eq!(format_float32_g(-2.0), "-2");
        assert_eq!(format_float32_g(f64::INFINITY), ".inf");
    }
}
