//! Canonical encoding straight from JSON text, without building a tree.
//!
//! Input: the bytes of one JSON object. Output: the bytes [`super::gojson`] produces for it
//! (`parse` then `write_canonical`), appended to a buffer, plus where the top-level `schema`,
//! `package` and `name` values sit in them. No IO.
//!
//! Why: catalogd stores every object of a catalog in canonical form. Building a [`Value`] tree
//! for each (one allocation per string, per array and per object, then a second walk to write it)
//! was most of ingest's walk; most of a real catalog's bytes are strings that need no change.
//! Here a string without escapes is copied as it stands, an integer literal of up to 15 digits
//! is copied too (float64 holds it exactly, so Go prints the same digits), and an object's
//! members are written in document order, then moved into key order only when the document's
//! order was not already sorted.
//!
//! Anything this path does not decide by itself returns `None`, and the caller takes the full
//! parser, which gives the same bytes or the exact error: malformed text, nesting past
//! [`MAX_DEPTH`], a number that overflows float64, a top level that is not an object, a
//! top-level key that is not its own case fold (those need the walk's folding rules), and a
//! `schema`/`package`/`name` that is not a string.
//!
//! [`Value`]: super::gojson::Value

use std::ops::Range;

use super::gojson::{self, MAX_DEPTH};

/// Where the top-level meta keys' values are in the canonical output (each a JSON string).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaValues {
    pub schema: Option<Range<usize>>,
    pub package: Option<Range<usize>>,
    pub name: Option<Range<usize>>,
}

/// Reusable scratch space for [`Canonicalizer::encode`]; keep one per reader.
#[derive(Debug, Default)]
pub struct Canonicalizer {
    /// Members of the objects currently open, innermost last.
    members: Vec<Member>,
    /// Decoded keys that could not be borrowed from the input (they had escapes).
    keys: Vec<u8>,
    /// A copy of an object's members while they are written back in key order.
    scratch: Vec<u8>,
}

#[derive(Clone, Copy, Debug)]
struct Member {
    key: Key,
    /// The member (`"key":value`) in the output.
    start: usize,
    end: usize,
    /// Offset of the value from `start`.
    value_offset: usize,
}

/// A decoded key: a range of the input, or of [`Canonicalizer::keys`].
#[derive(Clone, Copy, Debug)]
enum Key {
    Input(usize, usize),
    Decoded(usize, usize),
}

impl Key {
    fn bytes<'a>(self, input: &'a [u8], decoded: &'a [u8]) -> &'a [u8] {
        match self {
            Key::Input(s, e) => &input[s..e],
            Key::Decoded(s, e) => &decoded[s..e],
        }
    }
}

struct Pass<'a, 'b> {
    input: &'a [u8],
    pos: usize,
    out: &'b mut Vec<u8>,
    members: &'b mut Vec<Member>,
    keys: &'b mut Vec<u8>,
    scratch: &'b mut Vec<u8>,
    meta: MetaValues,
}

impl Canonicalizer {
    pub fn new() -> Canonicalizer {
        Canonicalizer::default()
    }

    /// Appends the canonical encoding of the JSON object in `input` (JSON whitespace around it
    /// allowed) to `out`, or returns `None` (with `out` as it was) for the full parser to decide.
    pub fn encode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Option<MetaValues> {
        let before = out.len();
        self.members.clear();
        self.keys.clear();
        let mut pass = Pass {
            input,
            pos: 0,
            out,
            members: &mut self.members,
            keys: &mut self.keys,
            scratch: &mut self.scratch,
            meta: MetaValues::default(),
        };
        pass.skip_ws();
        let done = if pass.peek() == Some(b'{') {
            pass.object(0).and_then(|()| {
                pass.skip_ws();
                (pass.pos == input.len()).then_some(())
            })
        } else {
            None
        };
        match done {
            Some(()) => Some(pass.meta),
            None => {
                out.truncate(before);
                None
            }
        }
    }
}

impl Pass<'_, '_> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.input.get(self.pos) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string_value(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.input[self.pos..].starts_with(word) {
            self.pos += word.len();
            self.out.extend_from_slice(word);
            Some(())
        } else {
            None
        }
    }

    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        let end = gojson::scan_number(self.input, start).ok()?;
        self.pos = end;
        let literal = &self.input[start..end];
        if is_exact_integer(literal) {
            self.out.extend_from_slice(literal);
            return Some(());
        }
        let value: f64 = std::str::from_utf8(literal).ok()?.parse().ok()?;
        if !value.is_finite() {
            return None;
        }
        gojson::write_float(value, self.out);
        Some(())
    }

    /// Writes the string value at `pos` in canonical form. Go writes `\"`, `\\`, `\n`, `\r`,
    /// `\t`, `\b` and `\f` as they are read, and `\/` as `/`, so text with only those escapes is
    /// copied around them; a `\u` escape (rare in real catalogs) takes [`Self::string`].
    fn string_value(&mut self) -> Option<()> {
        let started = self.out.len();
        let mut at = self.pos + 1;
        self.out.push(b'"');
        loop {
            let rest = &self.input[at..];
            let stop = memchr::memchr2(b'"', b'\\', rest)?;
            let text = &rest[..stop];
            if !needs_no_change(text) {
                break;
            }
            self.out.extend_from_slice(text);
            at += stop;
            if self.input[at] == b'"' {
                self.out.push(b'"');
                self.pos = at + 1;
                return Some(());
            }
            match self.input.get(at + 1) {
                Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f') => {
                    self.out.extend_from_slice(&self.input[at..at + 2]);
                }
                Some(b'/') => self.out.push(b'/'),
                _ => break,
            }
            at += 2;
        }
        self.out.truncate(started);
        // A value's decoded text is not needed (only keys are compared).
        let keys = self.keys.len();
        self.string()?;
        self.keys.truncate(keys);
        Some(())
    }

    /// Writes the string at `pos` in canonical form and returns its decoded text as a key.
    fn string(&mut self) -> Option<Key> {
        let start = self.pos + 1;
        let rest = &self.input[start..];
        let stop = memchr::memchr2(b'"', b'\\', rest)?;
        let text = &rest[..stop];
        if rest[stop] == b'"' && needs_no_change(text) {
            self.out.push(b'"');
            self.out.extend_from_slice(text);
            self.out.push(b'"');
            self.pos = start + stop + 1;
            return Some(Key::Input(start, start + stop));
        }
        // Escapes, control characters, invalid UTF-8 or U+2028/U+2029: Go's decoding and
        // encoding rules, as the full parser applies them.
        let (decoded, end) = gojson::decode_string_at(self.input, self.pos).ok()?;
        self.pos = end;
        gojson::write_string(&decoded, self.out);
        let from = self.keys.len();
        self.keys.extend_from_slice(decoded.as_bytes());
        Some(Key::Decoded(from, self.keys.len()))
    }

    /// After an element or member: a `,` (written; `Some(false)`) or the closing `close`
    /// (consumed, not written; `Some(true)`).
    fn separator(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        let b = self.peek()?;
        self.pos += 1;
        if b == b',' {
            self.out.push(b',');
            Some(false)
        } else if b == close {
            Some(true)
        } else {
            None
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        self.pos += 1;
        self.out.push(b'[');
        self.skip_ws();
        if self.expect(b']').is_some() {
            self.out.push(b']');
            return Some(());
        }
        loop {
            self.skip_ws();
            self.value(depth + 1)?;
            if self.separator(b']')? {
                self.out.push(b']');
                return Some(());
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        self.pos += 1;
        self.out.push(b'{');
        let content_start = self.out.len();
        let base = self.members.len();
        let keys_base = self.keys.len();
        self.skip_ws();
        if self.expect(b'}').is_some() {
            self.out.push(b'}');
            return Some(());
        }
        let mut in_order = true;
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return None;
            }
            let start = self.out.len();
            let key = self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            self.out.push(b':');
            let value_offset = self.out.len() - start;
            self.skip_ws();
            self.value(depth + 1)?;
            if let Some(previous) = self.members[base..].last() {
                let (input, decoded) = (self.input, &self.keys[..]);
                if previous.key.bytes(input, decoded) >= key.bytes(input, decoded) {
                    in_order = false;
                }
            }
            self.members.push(Member {
                key,
                start,
                end: self.out.len(),
                value_offset,
            });
            if self.separator(b'}')? {
                break;
            }
        }
        if !in_order {
            self.write_in_key_order(base, content_start);
        }
        self.out.push(b'}');
        if depth == 0 {
            self.find_meta_values(base)?;
        }
        self.members.truncate(base);
        self.keys.truncate(keys_base);
        Some(())
    }

    /// Rewrites the members of the object from `base` on in key-byte order, the last of equal
    /// keys winning (Go decodes into a map, then sorts its keys).
    fn write_in_key_order(&mut self, base: usize, content_start: usize) {
        let (input, decoded) = (self.input, &self.keys[..]);
        let members = &mut self.members[base..];
        // Stable, so equal keys stay in document order and the last of each run is the latest.
        members.sort_by(|a, b| a.key.bytes(input, decoded).cmp(b.key.bytes(input, decoded)));
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.out[content_start..]);
        self.out.truncate(content_start);
        let mut kept = 0;
        for i in 0..members.len() {
            let member = members[i];
            if let Some(next) = members.get(i + 1)
                && next.key.bytes(input, decoded) == member.key.bytes(input, decoded)
            {
                continue;
            }
            if kept > 0 {
                self.out.push(b',');
            }
            let start = self.out.len();
            self.out.extend_from_slice(
                &self.scratch[member.start - content_start..member.end - content_start],
            );
            members[kept] = Member {
                start,
                end: self.out.len(),
                ..member
            };
            kept += 1;
        }
        self.members.truncate(base + kept);
    }

    /// Records where the top-level `schema`, `package` and `name` values are. `None` when the
    /// walk's case-folding rules have something to decide: a non-ASCII key, a key that differs
    /// only in case from another or from a meta key, or a meta value that is not a string.
    fn find_meta_values(&mut self, base: usize) -> Option<()> {
        let members = &self.members[base..];
        let (input, decoded) = (self.input, &self.keys[..]);
        for member in members {
            let key = member.key.bytes(input, decoded);
            if !key.is_ascii() {
                return None;
            }
            if key.iter().any(u8::is_ascii_uppercase) {
                // Not its own fold: it must not fold onto a meta key or onto any other key.
                let collides = |other: &[u8]| other != key && other.eq_ignore_ascii_case(key);
                if [&b"schema"[..], b"package", b"name"]
                    .into_iter()
                    .any(collides)
                    || members
                        .iter()
                        .any(|m| collides(m.key.bytes(input, decoded)))
                {
                    return None;
                }
                continue;
            }
            let slot = match key {
                b"schema" => &mut self.meta.schema,
                b"package" => &mut self.meta.package,
                b"name" => &mut self.meta.name,
                _ => continue,
            };
            let value = member.start + member.value_offset..member.end;
            if self.out[value.start] != b'"' {
                return None;
            }
            *slot = Some(value);
        }
        Some(())
    }
}

/// Whether string text between quotes (no `"` or `\` in it) is written back unchanged: no
/// control characters, valid UTF-8, and no U+2028/U+2029 (which Go escapes).
fn needs_no_change(text: &[u8]) -> bool {
    !text.iter().any(|&b| b < 0x20)
        && (text.is_ascii()
            || (std::str::from_utf8(text).is_ok()
                && !memchr::memmem::find_iter(text, b"\xE2\x80")
                    .any(|i| matches!(text.get(i + 2), Some(0xA8 | 0xA9)))))
}

/// An integer literal Go's float64 encoding writes back unchanged: at most 15 digits (exact in
/// a float64, far below 1e21) without a leading zero, optionally negative (`-0` stays `-0`).
fn is_exact_integer(literal: &[u8]) -> bool {
    let digits = literal.strip_prefix(b"-").unwrap_or(literal);
    !digits.is_empty()
        && digits.len() <= 15
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || digits.len() == 1)
}

/// The strings at `values` in `canonical`, decoded (empty when absent).
pub fn meta_strings(canonical: &[u8], values: &MetaValues) -> Option<(String, String, String)> {
    let text = |range: &Option<Range<usize>>| -> Option<String> {
        match range {
            None => Some(String::new()),
            Some(r) => match gojson::decode_string_at(&canonical[..r.end], r.start) {
                Ok((s, end)) if end == r.end => Some(s),
                _ => None,
            },
        }
    };
    Some((
        text(&values.schema)?,
        text(&values.package)?,
        text(&values.name)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast encoding, which must equal the full parser's whenever it answers.
    fn fast(json: &str) -> Option<String> {
        let mut out = b"prefix".to_vec();
        let answer = Canonicalizer::new().encode(json.as_bytes(), &mut out);
        match answer {
            Some(_) => Some(String::from_utf8(out[6..].to_vec()).expect("utf8")),
            None => {
                assert_eq!(out, b"prefix", "a refusal leaves the output as it was");
                None
            }
        }
    }

    fn full(json: &str) -> Option<String> {
        gojson::canonicalize_bytes(json.as_bytes())
            .ok()
            .map(|b| String::from_utf8(b).expect("utf8"))
    }

    fn same_as_full(json: &str) -> String {
        let fast = fast(json).unwrap_or_else(|| panic!("fast path refused {json:?}"));
        assert_eq!(Some(&fast), full(json).as_ref(), "for {json:?}");
        fast
    }

    #[test]
    fn unsorted_and_repeated_keys_are_written_as_go_writes_a_map() {
        assert_eq!(
            same_as_full(r#"{"schema":"olm.package","name":"a","defaultChannel":"s"}"#),
            r#"{"defaultChannel":"s","name":"a","schema":"olm.package"}"#
        );
        assert_eq!(
            same_as_full(r#"{"b":1,"a":2,"b":3,"a":{"y":1,"x":2,"y":4}}"#),
            r#"{"a":{"x":2,"y":4},"b":3}"#
        );
        assert_eq!(
            same_as_full(r#"{"a":1,"a":2}"#),
            r#"{"a":2}"#,
            "a repeated key in order still keeps the last"
        );
        same_as_full(r#"{"z":[{"b":1,"a":[{"d":1,"c":2}]}],"y":{},"x":[]}"#);
    }

    #[test]
    fn whitespace_goes_and_sorted_input_is_copied() {
        assert_eq!(
            same_as_full(" {\n  \"a\" : [ 1 , true , null , false ] ,\r\n\t\"b\" : \"c\" } \n"),
            r#"{"a":[1,true,null,false],"b":"c"}"#
        );
    }

    #[test]
    fn strings_follow_gos_escaping_whether_copied_or_decoded() {
        for json in [
            r#"{"a":"plain <html> & more"}"#,
            r#"{"a":"line\nbreak \"quoted\" \/ \u00e9 \u0041"}"#,
            r#"{"a":"only \"simple\" escapes: \\ \n\r\t\b\f \/ caf\u00e9"}"#,
            r#"{"a":["\n\"","\\","x\/y","\u2028\n"]}"#,
            "{\"a\":\"\\n then \u{2028}\"}",
            "{\"a\":\"caf\u{e9} \u{2028} \u{2029} \u{1F600}\"}",
            r#"{"a":"\ud83d\ude00 lone \ud800 x \udc00"}"#,
            r#"{"\u0062":1,"a":2,"\u0061":3}"#,
            r#"{"k\"ey":1,"k":2}"#,
            "{\"a\":\"\u{7f}\"}",
        ] {
            same_as_full(json);
        }
        // Invalid UTF-8 becomes U+FFFD, one per byte, as Go decodes it, also after an escape.
        for input in [&b"{\"a\":\"x\xff\xfey\"}"[..], b"{\"a\":\"\\n x\xffy\"}"] {
            let mut out = Vec::new();
            Canonicalizer::new()
                .encode(input, &mut out)
                .expect("encoded");
            assert_eq!(out, gojson::canonicalize_bytes(input).expect("full"));
        }
    }

    #[test]
    fn numbers_are_copied_only_when_go_prints_the_same_digits() {
        assert_eq!(
            same_as_full(
                r#"{"a":[0,-0,7,-12,123456789012345,1234567890123456,9007199254740993,1.0,4.10,1e2,1E-7,-2.5e+30,0.000001]}"#
            ),
            r#"{"a":[0,-0,7,-12,123456789012345,1234567890123456,9007199254740992,1,4.1,100,1e-7,-2.5e+30,0.000001]}"#
        );
    }

    #[test]
    fn what_the_full_parser_must_decide_is_refused() {
        for json in [
            r#"{"a":1e400}"#,
            r#"{"a":01}"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":tru}"#,
            r#"{"a":"unterminated}"#,
            "{\"a\":\"raw\ncontrol\"}",
            "{\"a\":\"\\t then a raw\ttab\"}",
            r#"{"a":"bad \x escape"}"#,
            r#"{"a":1} trailing"#,
            r#"[1,2]"#,
            r#"null"#,
            r#""text""#,
            r#"{"Schema":"x"}"#,
            r#"{"NAME":"x","name":"y"}"#,
            r#"{"relatedImages":[],"relatedimages":[]}"#,
            r#"{"sch\u00e9ma":1}"#,
            r#"{"schema":1}"#,
            r#"{"name":{"a":1}}"#,
            "",
        ] {
            assert_eq!(fast(json), None, "for {json:?}");
        }
        let deep = format!(
            "{{\"a\":{}1{}}}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(fast(&deep), None);
        assert!(full(&deep).is_none());
    }

    #[test]
    fn meta_values_are_found_after_sorting() {
        let mut out = Vec::new();
        let meta = Canonicalizer::new()
            .encode(
                br#"{"schema":"olm.bundle","name":"a.v1","package":"\u0061","relatedImages":[],"x":{"name":1}}"#,
                &mut out,
            )
            .expect("encoded");
        assert_eq!(
            meta_strings(&out, &meta),
            Some(("olm.bundle".into(), "a".into(), "a.v1".into()))
        );
        let meta = Canonicalizer::new()
            .encode(br#"{"other":true}"#, &mut out)
            .expect("encoded");
        assert_eq!(
            meta_strings(&out, &meta),
            Some((String::new(), String::new(), String::new()))
        );
    }

    #[test]
    fn one_canonicalizer_encodes_many_objects() {
        let mut c = Canonicalizer::new();
        for json in [
            r#"{"b":"x\n","a":1}"#,
            r#"{"a" : 2}"#,
            r#"{"c":[{"b":1,"a":2}]}"#,
        ] {
            let mut out = Vec::new();
            c.encode(json.as_bytes(), &mut out).expect("encoded");
            assert_eq!(
                String::from_utf8(out).expect("utf8"),
                full(json).expect("full")
            );
        }
    }
}

/// The whole catalogs of the test data, walked both ways.
#[cfg(test)]
mod real_catalogs {
    use crate::fbc::walk::{Decode, NullDocuments, RawObject, WalkError, walk_objects_dir};

    type Metas = Vec<(String, String, String, Vec<u8>)>;

    /// The objects, and how many were encoded straight from their text.
    fn walk(root: &std::path::Path, decode: Decode) -> (Metas, usize) {
        let mut metas = Vec::new();
        let mut direct = 0;
        walk_objects_dir::<WalkError>(root, NullDocuments::Skip, decode, &mut |raw: RawObject| {
            direct += usize::from(raw.canonical.is_some());
            let meta = raw.into_meta();
            metas.push((meta.schema, meta.package, meta.name, meta.blob));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()));
        (metas, direct)
    }

    #[test]
    fn every_object_of_the_real_catalogs_is_encoded_as_the_full_parser_encodes_it() {
        // (catalog, whether it is JSON): YAML takes the full parser whichever way it is walked.
        for (rel, json) in [
            ("catalogs/community-operators-prod-derived/catalog", true),
            ("catalogs/community-operators-prod/catalogs", false),
            ("catalogs/certified-operators/catalogs", false),
        ] {
            let root = olm_testdata::path(rel);
            let (direct, encoded_directly) = walk(&root, Decode::BlobsOnly);
            let (full, none) = walk(&root, Decode::Values);
            assert_eq!(none, 0);
            assert!(direct.len() > 500, "{rel}: {} objects", direct.len());
            assert!(
                !json || encoded_directly * 10 >= direct.len() * 9,
                "{rel}: {encoded_directly} of {} objects encoded directly",
                direct.len()
            );
            assert_eq!(direct.len(), full.len(), "{rel}");
            for (d, f) in direct.iter().zip(&full) {
                assert!(d == f, "{rel}: {}/{}/{} differs", f.0, f.1, f.2);
            }
        }
    }
}
