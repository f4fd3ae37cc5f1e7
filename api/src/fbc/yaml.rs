//! YAML catalog files: split into documents and convert each to a Go-compatible JSON [`Value`].
//!
//! Input: a buffered reader over YAML text. Output: one [`Value`] per document, with its line.
//! No IO besides reading the given reader.
//!
//! Upstream reads YAML with apimachinery's `YAMLOrJSONDecoder`, which splits the stream into
//! documents line by line and converts each with sigs.k8s.io/yaml (go-yaml v2, i.e. **YAML 1.1**
//! scalar resolution) to JSON. This module reproduces both steps; the YAML syntax itself is parsed
//! by `granit-parser` (the parser inside serde-saphyr), because serde-saphyr's own typing of plain
//! scalars follows YAML 1.2 and cannot tell a plain `yes` from a quoted one.
//!
//! Document splitting (apimachinery):
//! - a line starting with `---` ends the current document; only spaces or a `# comment` may follow
//!   it, anything else is an error (`--- {a: 1}` is rejected, as upstream);
//! - `\r\n` line ends become `\n`; empty documents are skipped; a document holding only comments
//!   is treated as empty (upstream yields an empty object that `opm` rejects and catalogd serves as
//!   nothing);
//! - only the first YAML document of a chunk is read (a `...` marker followed by more YAML without
//!   `---` is ignored, as upstream).
//!
//! Plain scalar resolution (go-yaml v2):
//!
//! | plain scalar | value |
//! |---|---|
//! | `y Y yes Yes YES on On ON true True TRUE` | `true` |
//! | `n N no No NO off Off OFF false False FALSE` | `false` |
//! | empty, `~ null Null NULL` | `null` |
//! | `.inf`, `.nan` (any case listed by YAML 1.1) | error if still in the document at the end: JSON has no infinities (as upstream) |
//! | integer per Go `ParseInt(s, 0, 64)` after removing `_` (`0x1F`, `0o17`, `017` octal, `0b101`) | number |
//! | above int64 but within uint64 | number |
//! | `[-+]?(\.[0-9]+\|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` | float |
//! | anything else (timestamps included) | string |
//!
//! Quoted and block scalars are strings. Tags: `!!str` forces a string, `!!int`/`!!float`/`!!bool`/
//! `!!null` force that type (error when the text does not resolve to it), `!!binary` decodes base64,
//! any other tag is ignored (scalar stays a string). Merge keys `<<` follow go-yaml v2: merged
//! entries overwrite earlier keys, explicit keys after the merge overwrite merged ones, and in a
//! sequence of merged maps the first map wins. Non-string keys become strings as sigs.k8s.io/yaml
//! does (`1` → `"1"`, `true` → `"true"`, `1.5` → `"1.5"` via float32 formatting); `null`, large
//! unsigned, list and map keys are errors.
//!
//! Errors carry the step of upstream's reading that reports them ([`YamlStage`]): a syntax error
//! anywhere wins over a bad tag or key, which wins over a `null` key, which wins over an infinity,
//! and each has upstream's wording ([`YamlError::upstream_text`]), quoting values as Go's `%#v`
//! prints them (`map[interface {}]interface {}{"a":1}`).
//!
//! Bounds (hostile input): a document is at most [`MAX_OBJECT_BYTES`] as written, and as it
//! expands: every scalar and key counts its text plus two bytes, and an alias (also behind a
//! merge key) counts the whole expanded size of what it copies, charged before the copy is made.
//! So a 1 MB file aliasing a 1 MiB string 2,000 times stops at 16 MiB instead of taking 2 GB.
//! Alias-copied nodes are also capped at 10,000,000, and nesting at the parser's recursion limit.

use std::collections::HashMap;
use std::io::{BufRead, Read};

use base64::Engine as _;
use granit_parser::{Event, Parser, ScalarStyle, Tag};

use super::gojson::{
    Number, Object, Value, format_float32_g, format_float64_g, is_json_number, string_lossy,
};
use super::walk::MAX_OBJECT_BYTES;
use crate::version::go_text::go_quote;

/// A YAML problem at a line/column of the file (1-based line, 1-based column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YamlError {
    pub line: usize,
    pub column: usize,
    pub message: String,
    /// Which step of upstream's reading reports the problem; it decides upstream's wording
    /// ([`YamlError::upstream_text`]).
    pub stage: YamlStage,
}

/// The steps upstream's YAML reading goes through, in order. A problem of an earlier step wins
/// over one of a later step anywhere in the same document, because each step runs over the
/// whole document before the next one starts.
///
/// | stage | upstream code | upstream text after `error parsing <file>: ` |
/// |---|---|---|
/// | `Split` | apimachinery's `YAMLReader` (`---` lines) | `<message>` |
/// | `Parse` | go-yaml v2's parser (syntax) | `error converting YAML to JSON: yaml: line N: <message>` |
/// | `Decode` | go-yaml v2 building Go values (tags, merges, list or map keys) | `error converting YAML to JSON: yaml: <message>` |
/// | `Convert` | sigs.k8s.io/yaml turning keys into strings (`null`, uint64 keys) | `error converting YAML to JSON: <message>` |
/// | `Marshal` | `json.Marshal` of the result (`.inf`, `.nan`) | `error converting YAML to JSON: <message>` |
///
/// Only `Parse` problems carry a line in upstream's text. Its line is go-yaml's, counted from
/// the document's own first line and, for most parser errors, one less than the line at fault;
/// the line and message here are this parser's (the file's line, the real one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YamlStage {
    Split,
    Parse,
    Decode,
    Convert,
    Marshal,
}

impl YamlError {
    /// A problem found while reading the text.
    pub fn syntax(line: usize, column: usize, message: impl Into<String>) -> YamlError {
        YamlError {
            line,
            column,
            message: message.into(),
            stage: YamlStage::Parse,
        }
    }

    /// The message upstream's `YAMLToJSONDecoder` returns for this problem (see [`YamlStage`]).
    pub fn upstream_text(&self) -> String {
        match self.stage {
            YamlStage::Split => self.message.clone(),
            _ => format!("error converting YAML to JSON: {}", self.sigs_yaml_text()),
        }
    }

    /// The text of sigs.k8s.io/yaml's conversion error (what follows
    /// `error converting YAML to JSON: `).
    pub fn sigs_yaml_text(&self) -> String {
        match self.stage {
            YamlStage::Split | YamlStage::Convert | YamlStage::Marshal => self.message.clone(),
            YamlStage::Parse => format!("yaml: line {}: {}", self.line, self.message),
            YamlStage::Decode => format!("yaml: {}", self.message),
        }
    }
}

/// One `---`-separated chunk of a YAML stream.
pub struct Document {
    /// The chunk's text (lines joined with `\n`).
    pub text: Vec<u8>,
    /// 1-based line of the chunk's first line in the stream.
    pub first_line: usize,
}

/// Splits a YAML stream into documents exactly as apimachinery's `YAMLReader` does.
pub struct DocumentSplitter<R> {
    reader: R,
    /// Lines consumed so far.
    line: usize,
    line_buf: Vec<u8>,
}

impl<R: BufRead> DocumentSplitter<R> {
    /// `first_line` is the 1-based line number of the reader's first line.
    pub fn new(reader: R, first_line: usize) -> Self {
        DocumentSplitter {
            reader,
            line: first_line.saturating_sub(1),
            line_buf: Vec::new(),
        }
    }

    /// The next non-empty document, `Ok(None)` at the end of the stream. A document (or a
    /// line) longer than [`MAX_OBJECT_BYTES`] is an error at its first line, found before more
    /// than that is buffered.
    pub fn next_document(&mut self) -> Result<Option<Document>, SplitError> {
        let mut text: Vec<u8> = Vec::new();
        let mut first_line = 0;
        loop {
            self.line_buf.clear();
            // One byte past the room left tells a document that is too large.
            let room = (MAX_OBJECT_BYTES - text.len()) as u64 + 1;
            let n = (&mut self.reader)
                .take(room)
                .read_until(b'\n', &mut self.line_buf)
                .map_err(SplitError::Io)?;
            if text.len() + n > MAX_OBJECT_BYTES {
                return Err(SplitError::Syntax(YamlError::syntax(
                    if text.is_empty() {
                        self.line + 1
                    } else {
                        first_line
                    },
                    1,
                    format!("YAML document is larger than the limit of {MAX_OBJECT_BYTES} bytes"),
                )));
            }
            if n == 0 {
                return Ok(if text.is_empty() {
                    None
                } else {
                    Some(Document { text, first_line })
                });
            }
            self.line += 1;
            let mut line: &[u8] = &self.line_buf;
            if let Some(l) = line.strip_suffix(b"\n") {
                line = l;
                if let Some(l) = line.strip_suffix(b"\r") {
                    line = l;
                }
            }
            if let Some(rest) = line.strip_prefix(b"---") {
                let rest = String::from_utf8_lossy(rest);
                let trimmed = rest.trim();
                if !trimmed.is_empty() && !trimmed.starts_with('#') {
                    return Err(SplitError::Syntax(YamlError {
                        line: self.line,
                        column: 1,
                        message: format!("invalid Yaml document separator: {trimmed}"),
                        stage: YamlStage::Split,
                    }));
                }
                if !text.is_empty() {
                    return Ok(Some(Document { text, first_line }));
                }
            }
            if text.is_empty() {
                first_line = self.line;
            }
            text.extend_from_slice(line);
            text.push(b'\n');
        }
    }
}

/// Why splitting a YAML stream stopped.
#[derive(Debug)]
pub enum SplitError {
    Io(std::io::Error),
    Syntax(YamlError),
}

/// Upper bound on nodes produced by alias expansion in one document (alias bombs).
const MAX_ALIAS_EXPANDED_NODES: usize = 10_000_000;

/// What one node adds to a document's expanded size besides its text: the punctuation JSON
/// would need for it (quotes, a comma or colon). A rough floor, so that a bomb of tiny aliased
/// nodes is charged for each of them.
const NODE_OVERHEAD_BYTES: usize = 2;

/// Converts the first YAML document of `doc` to a JSON value. `Ok(None)` for an empty document.
pub fn document_to_value(doc: &Document) -> Result<Option<Value>, YamlError> {
    let text = std::str::from_utf8(&doc.text).map_err(|e| {
        let before = &doc.text[..e.valid_up_to()];
        let line = before.iter().filter(|b| **b == b'\n').count();
        YamlError::syntax(doc.first_line + line, 1, "invalid UTF-8 in YAML document")
    })?;
    let first_error = match convert_document(text, doc.first_line) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    // go-yaml accepts a quoted scalar whose continuation lines are indented no deeper than the
    // block holding it; the YAML spec (and granit-parser) does not. Inside a quoted scalar the
    // leading spaces of a continuation line are not part of the value, so indenting such lines
    // deeper changes nothing but the verdict. Each pass repairs the scalar the parser stopped
    // at; the number of passes is bounded, and if the repair does not lead to a document that
    // parses, the first error is the one reported.
    let mut repaired: Option<String> = None;
    let mut error = first_error.clone();
    for _ in 0..MAX_QUOTED_INDENT_REPAIRS {
        if error.message != QUOTED_SCALAR_INDENT_ERROR {
            break;
        }
        let current = repaired.as_deref().unwrap_or(text);
        let Some(next) = indent_quoted_continuation(current, error.line - doc.first_line) else {
            break;
        };
        match convert_document(&next, doc.first_line) {
            Ok(value) => return Ok(value),
            Err(e) => error = e,
        }
        repaired = Some(next);
    }
    Err(first_error)
}

/// granit-parser's message for an under-indented continuation line of a quoted scalar.
const QUOTED_SCALAR_INDENT_ERROR: &str = "invalid indentation in multiline quoted scalar";

/// Upper bound on repair passes over one document (each one re-parses it), so a hostile
/// document of many such scalars costs bounded time.
const MAX_QUOTED_INDENT_REPAIRS: usize = 256;

/// Indents line `line_index` (0-based) of `text` and the lines after it up to the first one
/// holding a quote character (where the scalar may close; never past it) one column deeper than
/// any line before it, hence deeper than the block that holds the scalar. `None` when the line
/// does not exist.
fn indent_quoted_continuation(text: &str, line_index: usize) -> Option<String> {
    let mut depth = 0;
    let mut out = String::with_capacity(text.len() + 1024);
    let mut indenting = false;
    let mut found = false;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i == line_index {
            indenting = true;
            found = true;
        }
        if indenting {
            out.extend(std::iter::repeat_n(' ', depth + 1));
            out.push_str(line);
            if line.contains(['"', '\'']) {
                indenting = false;
            }
        } else {
            if !found {
                depth = depth.max(line.len() - line.trim_start_matches(' ').len());
            }
            out.push_str(line);
        }
    }
    found.then_some(out)
}

/// Parses the first YAML document of `text` (whose first line is `first_line` of the file).
fn convert_document(text: &str, first_line: usize) -> Result<Option<Value>, YamlError> {
    let mut options = granit_parser::Options::default();
    options.set_emit_comments(false);
    let parser = Parser::new_from_str_with_options(text, options);
    let mut b = Builder {
        parser,
        first_line,
        anchors: HashMap::new(),
        expanded: 0,
        size: 0,
        later: LaterProblems::default(),
    };
    let value = b.document()?;
    b.later.into_result(value)
}

/// Problems of the steps after parsing ([`YamlStage`]), kept until the whole document has
/// parsed: a syntax error anywhere in it wins over them, as upstream runs each step over the
/// whole document before the next.
#[derive(Default)]
struct LaterProblems {
    /// The first go-yaml decoding problem, in document order (go-yaml stops at it).
    decode: Option<YamlError>,
    /// The first key sigs.k8s.io/yaml cannot turn into a string. Upstream walks a Go map, in
    /// random order; the first in document order is reported here.
    convert: Option<YamlError>,
    /// Where non-finite numbers were read, in document order, with Go's name for them.
    nonfinite: Vec<(usize, usize, &'static str)>,
}

impl LaterProblems {
    fn into_result(self, value: Option<Value>) -> Result<Option<Value>, YamlError> {
        if let Some(e) = self.decode.or(self.convert) {
            return Err(e);
        }
        // json.Marshal walks keys in sorted order and fails at the first non-finite number
        // still in the document (a later duplicate key may have replaced one).
        let Some(name) = value.as_ref().and_then(first_nonfinite) else {
            return Ok(value);
        };
        let (line, column) = self
            .nonfinite
            .iter()
            .find(|(_, _, n)| *n == name)
            .map_or((0, 0), |(l, c, _)| (*l, *c));
        Err(YamlError {
            line,
            column,
            message: format!("json: unsupported value: {name}"),
            stage: YamlStage::Marshal,
        })
    }
}

/// Go's name of the first non-finite number of `v` in `json.Marshal` order.
fn first_nonfinite(v: &Value) -> Option<&'static str> {
    match v {
        Value::Number(n) if !n.as_f64().is_finite() => Some(nonfinite_name(n.as_f64())),
        Value::Array(items) => items.iter().find_map(first_nonfinite),
        Value::Object(obj) => obj.iter().find_map(|(_, v)| first_nonfinite(v)),
        _ => None,
    }
}

fn nonfinite_name(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    }
}

struct Builder<'a> {
    parser: Parser<'a, granit_parser::StrInput<'a>>,
    first_line: usize,
    /// Anchored values, by anchor id; each holds its expanded size.
    anchors: HashMap<usize, (Value, usize)>,
    /// Nodes copied in by aliases so far.
    expanded: usize,
    /// The document's expanded size so far: text of every scalar and key, plus
    /// [`NODE_OVERHEAD_BYTES`] per node, aliased copies counted in full. Bounded by
    /// [`MAX_OBJECT_BYTES`], like a document written out in full.
    size: usize,
    later: LaterProblems,
}

/// A resolved mapping key: what go-yaml v2 produced before sigs.k8s.io/yaml stringifies it.
enum Key {
    Str(String),
    Merge,
    Value(Value),
    /// A key go-yaml refuses (a list or a map); its problem is recorded, the pair is dropped.
    Invalid,
}

impl<'a> Builder<'a> {
    fn next(&mut self) -> Result<(Event<'a>, granit_parser::Span), YamlError> {
        match self.parser.next_event() {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => Err(YamlError::syntax(
                self.first_line + e.marker().line().saturating_sub(1),
                e.marker().col() + 1,
                e.info(),
            )),
            None => Err(YamlError::syntax(
                self.first_line,
                1,
                "unexpected end of YAML stream",
            )),
        }
    }

    fn err_at(&self, span: &granit_parser::Span, message: impl Into<String>) -> YamlError {
        YamlError::syntax(
            self.first_line + span.start.line().saturating_sub(1),
            span.start.col() + 1,
            message,
        )
    }

    /// Records a problem of a later stage (the first of each stage is kept).
    fn later_at(&mut self, span: &granit_parser::Span, stage: YamlStage, message: String) {
        let mut e = self.err_at(span, message);
        e.stage = stage;
        let slot = match stage {
            YamlStage::Decode => &mut self.later.decode,
            _ => &mut self.later.convert,
        };
        if slot.is_none() {
            *slot = Some(e);
        }
    }

    fn document(&mut self) -> Result<Option<Value>, YamlError> {
        loop {
            let (ev, span) = self.next()?;
            match ev {
                Event::StreamStart => continue,
                Event::StreamEnd => return Ok(None),
                Event::DocumentStart(..) => break,
                _ => return Err(self.err_at(&span, "unexpected YAML event before document")),
            }
        }
        let (ev, span) = self.next()?;
        if matches!(ev, Event::DocumentEnd) {
            return Ok(None);
        }
        let v = self.node(ev, span)?;
        // Only the first document counts; what follows it is not read (as upstream).
        // A `null` document is no object at all, like an empty one.
        Ok(if v == Value::Null { None } else { Some(v) })
    }

    /// Adds `bytes` to the document's expanded size, failing at `span` past the limit.
    fn grow(&mut self, bytes: usize, span: &granit_parser::Span) -> Result<(), YamlError> {
        self.size = self.size.saturating_add(bytes);
        if self.size > MAX_OBJECT_BYTES {
            return Err(self.err_at(
                span,
                format!(
                    "document expands to more than {MAX_OBJECT_BYTES} bytes (aliases and merge keys included)"
                ),
            ));
        }
        Ok(())
    }

    fn node(&mut self, ev: Event<'a>, span: granit_parser::Span) -> Result<Value, YamlError> {
        let start = self.size;
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                self.grow(text.len() + NODE_OVERHEAD_BYTES, &span)?;
                let v = self.scalar(&text, style, tag.as_deref(), &span);
                if anchor != 0 {
                    self.anchors.insert(anchor, (v.clone(), self.size - start));
                }
                Ok(v)
            }
            Event::SequenceStart(_, anchor, _) => {
                self.grow(NODE_OVERHEAD_BYTES, &span)?;
                let mut items = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(ev, span)?);
                }
                let v = Value::Array(items);
                if anchor != 0 {
                    self.anchors.insert(anchor, (v.clone(), self.size - start));
                }
                Ok(v)
            }
            Event::MappingStart(_, anchor, _) => {
                self.grow(NODE_OVERHEAD_BYTES, &span)?;
                let v = self.mapping()?;
                if anchor != 0 {
                    self.anchors.insert(anchor, (v.clone(), self.size - start));
                }
                Ok(v)
            }
            Event::Alias(id) => {
                let size = self
                    .anchors
                    .get(&id)
                    .map(|(_, size)| *size)
                    .ok_or_else(|| self.err_at(&span, "unknown anchor"))?;
                // Charged before the copy is made: a bomb fails before it takes memory.
                self.grow(size, &span)?;
                let v = self
                    .anchors
                    .get(&id)
                    .map(|(v, _)| v.clone())
                    .ok_or_else(|| self.err_at(&span, "unknown anchor"))?;
                self.expanded += count_nodes(&v);
                if self.expanded > MAX_ALIAS_EXPANDED_NODES {
                    return Err(self.err_at(&span, "document contains excessive aliasing"));
                }
                Ok(v)
            }
            _ => Err(self.err_at(&span, "unexpected YAML event")),
        }
    }

    fn mapping(&mut self) -> Result<Value, YamlError> {
        let mut pairs: Vec<(String, Value)> = Vec::new();
        loop {
            let (ev, span) = self.next()?;
            if matches!(ev, Event::MappingEnd) {
                break;
            }
            let key = self.key(ev, &span)?;
            let (vev, vspan) = self.next()?;
            let value = self.node(vev, vspan)?;
            match key {
                Key::Merge => self.merge(value, &vspan, &mut pairs),
                Key::Str(k) => pairs.push((k, value)),
                Key::Value(k) => match stringify_key(&k) {
                    Ok(k) => pairs.push((k, value)),
                    Err(key) => self.later_at(
                        &span,
                        YamlStage::Convert,
                        format!(
                            "unsupported map key of type: {key}, value: {}",
                            go_syntax(&value, false)
                        ),
                    ),
                },
                Key::Invalid => {}
            }
        }
        Ok(Value::Object(Object::from_pairs(pairs)))
    }

    fn key(&mut self, ev: Event<'a>, span: &granit_parser::Span) -> Result<Key, YamlError> {
        match ev {
            Event::Scalar(ref text, style, anchor, ref tag) => {
                let is_merge = text == "<<"
                    && ((style == ScalarStyle::Plain && tag.is_none())
                        || tag.as_deref().is_some_and(|t| core_tag(t) == Some("merge")));
                if is_merge {
                    return Ok(Key::Merge);
                }
                self.grow(text.len() + NODE_OVERHEAD_BYTES, span)?;
                let v = self.scalar(text, style, tag.as_deref(), span);
                if anchor != 0 {
                    self.anchors
                        .insert(anchor, (v.clone(), text.len() + NODE_OVERHEAD_BYTES));
                }
                Ok(match v {
                    Value::String(s) => Key::Str(s),
                    other => Key::Value(other),
                })
            }
            Event::SequenceStart(..) | Event::MappingStart(..) | Event::Alias(_) => {
                match self.node(ev, *span)? {
                    Value::String(s) => Ok(Key::Str(s)),
                    v @ (Value::Array(_) | Value::Object(_)) => {
                        let message = format!("invalid map key: {}", go_syntax(&v, false));
                        self.later_at(span, YamlStage::Decode, message);
                        Ok(Key::Invalid)
                    }
                    other => Ok(Key::Value(other)),
                }
            }
            _ => Err(self.err_at(span, "unexpected YAML event for a map key")),
        }
    }

    fn merge(
        &mut self,
        value: Value,
        span: &granit_parser::Span,
        pairs: &mut Vec<(String, Value)>,
    ) {
        const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";
        match value {
            Value::Object(obj) => pairs.extend(obj.into_entries()),
            Value::Array(items) => {
                // Earlier maps take precedence, so they are applied last.
                for item in items.into_iter().rev() {
                    match item {
                        Value::Object(obj) => pairs.extend(obj.into_entries()),
                        _ => return self.later_at(span, YamlStage::Decode, WANT_MAP.into()),
                    }
                }
            }
            _ => self.later_at(span, YamlStage::Decode, WANT_MAP.into()),
        }
    }

    /// A scalar's value. A tag it does not fit is go-yaml's decoding problem (recorded; the
    /// scalar reads as `null` meanwhile); a non-finite number is `json.Marshal`'s, found later
    /// if the number is still in the document then.
    fn scalar(
        &mut self,
        text: &str,
        style: ScalarStyle,
        tag: Option<&Tag>,
        span: &granit_parser::Span,
    ) -> Value {
        match resolve_scalar(text, style, tag) {
            Ok(v) => {
                if let Value::Number(n) = &v
                    && !n.as_f64().is_finite()
                {
                    let at = self.err_at(span, "");
                    let name = nonfinite_name(n.as_f64());
                    self.later.nonfinite.push((at.line, at.column, name));
                }
                v
            }
            Err(message) => {
                self.later_at(span, YamlStage::Decode, message);
                Value::Null
            }
        }
    }
}

fn count_nodes(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        Value::Object(obj) => 1 + obj.iter().map(|(_, v)| count_nodes(v)).sum::<usize>(),
        _ => 1,
    }
}

/// The suffix of a `tag:yaml.org,2002:` tag (`str`, `int`, `merge`, ...), if it is one.
fn core_tag(tag: &Tag) -> Option<&str> {
    let (handle, suffix) = tag.parts();
    if handle == "tag:yaml.org,2002:" {
        Some(suffix)
    } else {
        None
    }
}

/// sigs.k8s.io/yaml's conversion of a non-string map key to a JSON object key. The error is
/// the key's Go type and value as its message prints them (`%!s(<nil>), key: <nil>`).
fn stringify_key(k: &Value) -> Result<String, String> {
    match k {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(if *b { "true" } else { "false" }.into()),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => Ok(i.to_string()),
            GoNumber::Uint(u) => Err(format!("uint64, key: {u:#x}")),
            GoNumber::Float(f) => Ok(format_float32_g(f)),
        },
        Value::Null => Err("%!s(<nil>), key: <nil>".into()),
        // go-yaml refuses these itself (`Key::Invalid`).
        Value::Array(_) | Value::Object(_) => {
            Err(format!("{}, key: {}", go_type_name(k), go_syntax(k, false)))
        }
    }
}

/// The Go type go-yaml v2 gives a number when decoding into `interface{}`.
enum GoNumber {
    Int(i64),
    Uint(u64),
    Float(f64),
}

/// Integers keep their decimal text as literal ([`resolve_typed`]); anything else was a float.
fn go_number(n: &Number) -> GoNumber {
    let lit = n.literal();
    if is_int_literal(lit) {
        if let Ok(i) = lit.parse::<i64>() {
            return GoNumber::Int(i);
        }
        if let Ok(u) = lit.parse::<u64>() {
            return GoNumber::Uint(u);
        }
    }
    GoNumber::Float(n.as_f64())
}

fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[interface {}]interface {}",
        _ => "interface {}",
    }
}

/// A go-yaml value as Go's `%#v` prints it (`map[interface {}]interface {}{"a":1}`), for the
/// messages that quote one. `nested` values are inside a list or map, where a nil prints as
/// `interface {}(nil)`. Keys are the already stringified ones, in sorted order.
fn go_syntax(v: &Value, nested: bool) -> String {
    match v {
        Value::Null if nested => "interface {}(nil)".into(),
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => i.to_string(),
            GoNumber::Uint(u) => format!("{u:#x}"),
            GoNumber::Float(f) => format_float64_g(f),
        },
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|i| go_syntax(i, true)).collect();
            format!("{}{{{}}}", go_type_name(v), items.join(", "))
        }
        Value::Object(obj) => {
            let entries: Vec<String> = obj
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_syntax(v, true)))
                .collect();
            format!("{}{{{}}}", go_type_name(v), entries.join(", "))
        }
    }
}

fn is_int_literal(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Resolves one scalar the way go-yaml v2 does when decoding into `interface{}`.
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    let tag_name: Option<&str> = match tag {
        None => None,
        Some(t) => match core_tag(t) {
            Some(s) => Some(s),
            // The non-specific tag `!` and application tags leave the scalar a string.
            None => return Ok(Value::String(text.to_owned())),
        },
    };
    match tag_name {
        None if style != ScalarStyle::Plain => Ok(Value::String(text.to_owned())),
        None => resolve_plain(text),
        Some("str") => Ok(Value::String(text.to_owned())),
        Some("binary") => {
            let cleaned: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
            let data = base64::engine::general_purpose::STANDARD
                .decode(cleaned.as_bytes())
                .map_err(|_| "!!binary value contains invalid base64 data".to_string())?;
            Ok(Value::String(string_lossy(&data)))
        }
        Some(t @ ("int" | "float" | "bool" | "null" | "timestamp")) => {
            let (rtag, v) = resolve_typed(text);
            let ok = rtag == t || (t == "float" && rtag == "int");
            if !ok {
                return Err(format!("cannot decode !!{rtag} `{text}` as a !!{t}"));
            }
            match (t, v) {
                ("float", Value::Number(n)) => {
                    let lit = n.literal().to_owned();
                    Ok(Value::Number(Number::with_literal(n.as_f64(), lit)))
                }
                ("timestamp", _) => Ok(Value::String(text.to_owned())),
                (_, v) => Ok(v),
            }
        }
        // Other core-schema names (`map`, `seq`, `merge`, ...) on a scalar: keep the text.
        Some(_) => Ok(Value::String(text.to_owned())),
    }
}

fn resolve_plain(text: &str) -> Result<Value, String> {
    Ok(resolve_typed(text).1)
}

/// The YAML 1.1 type go-yaml v2 infers for `text`, with its value. Non-finite floats are
/// returned as numbers with a NaN/infinite value for the caller to reject.
fn resolve_typed(text: &str) -> (&'static str, Value) {
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return ("bool", Value::Bool(true));
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return ("bool", Value::Bool(false));
        }
        "" | "~" | "null" | "Null" | "NULL" => return ("null", Value::Null),
        ".nan" | ".NaN" | ".NAN" => return ("float", nonfinite(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return ("float", nonfinite(f64::INFINITY));
        }
        "-.inf" | "-.Inf" | "-.INF" => return ("float", nonfinite(f64::NEG_INFINITY)),
        _ => {}
    }
    let first = text.as_bytes()[0];
    match first {
        b'.' => {
            if let Some(n) = go_parse_float(text) {
                return ("float", float_value(n, text));
            }
        }
        b'0'..=b'9' | b'+' | b'-' => {
            if looks_like_timestamp(text) {
                return ("timestamp", Value::String(text.to_owned()));
            }
            let plain: String = text.chars().filter(|c| *c != '_').collect();
            if let Some(i) = go_parse_int(&plain) {
                return ("int", int_value(i as f64, i.to_string()));
            }
            if let Some(u) = go_parse_uint(&plain) {
                return ("int", int_value(u as f64, u.to_string()));
            }
            if yaml_style_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return ("float", float_value(f, &plain));
            }
            if let Some(rest) = plain.strip_prefix("0b") {
                if let Some(i) = parse_signed_radix(rest, 2) {
                    return ("int", int_value(i as f64, i.to_string()));
                }
                if let Some(u) = parse_unsigned_radix(rest, 2) {
                    return ("int", int_value(u as f64, u.to_string()));
                }
            } else if let Some(rest) = plain.strip_prefix("-0b")
                && let Some(i) = parse_signed_radix(&format!("-{rest}"), 2)
            {
                return ("int", int_value(i as f64, i.to_string()));
            }
        }
        _ => {}
    }
    ("str", Value::String(text.to_owned()))
}

fn nonfinite(f: f64) -> Value {
    Value::Number(Number::with_literal(f, String::new()))
}

fn int_value(f: f64, decimal: String) -> Value {
    Value::Number(Number::with_literal(f, decimal))
}

/// A float from YAML keeps its text as literal when that text is valid JSON, so a raw reader
/// sees `4.10` rather than Go's `4.1`.
fn float_value(f: f64, text: &str) -> Value {
    if is_json_number(text.as_bytes()) {
        Value::Number(Number::with_literal(f, text.to_owned()))
    } else {
        match Number::from_f64(f) {
            Ok(n) => Value::Number(n),
            Err(_) => nonfinite(f),
        }
    }
}

/// Go's `time.Parse` accepts more than this, but a timestamp-looking scalar never resolves to a
/// number either way; this only keeps `2001-12-14` from being tried as one.
fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` restricted to decimal syntax: `None` on syntax or range error.
fn go_parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    // Decimal digits, one optional dot, optional exponent; Rust's parser accepts the same set
    // once `inf`/`nan` words (not reachable here) and underscores (removed by callers) are out.
    if body.is_empty()
        || !body
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == b'.')
    {
        return None;
    }
    if !body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    if f.is_finite() { Some(f) } else { None }
}

/// Go's `strconv.ParseInt(s, 0, 64)` (underscores already removed).
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let u = go_parse_uint(body)?;
    if neg {
        if u <= (i64::MAX as u64) + 1 {
            Some((u as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else if u <= i64::MAX as u64 {
        Some(u as i64)
    } else {
        None
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` (no sign allowed).
fn go_parse_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (radix, digits) = if b[0] == b'0' && b.len() > 1 {
        match b[1] {
            b'x' | b'X' => (16, &s[2..]),
            b'o' | b'O' => (8, &s[2..]),
            b'b' | b'B' => (2, &s[2..]),
            _ => (8, &s[1..]),
        }
    } else {
        (10, s)
    };
    parse_unsigned_radix(digits, radix)
}

fn parse_unsigned_radix(digits: &str, radix: u32) -> Option<u64> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseInt(s, radix, 64)`: an optional sign, then digits of that radix.
fn parse_signed_radix(s: &str, radix: u32) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let u = parse_unsigned_radix(body, radix)?;
    if neg {
        if u <= (i64::MAX as u64) + 1 {
            Some((u as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else if u <= i64::MAX as u64 {
        Some(u as i64)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        Document {
            text: text.as_bytes().to_vec(),
            first_line: 1,
        }
    }

    fn canon(text: &str) -> String {
        let v = document_to_value(&doc(text)).unwrap().unwrap();
        String::from_utf8(v.to_canonical()).unwrap()
    }

    fn err(text: &str) -> YamlError {
        document_to_value(&doc(text)).unwrap_err()
    }

    fn split(text: &str) -> Result<Vec<(usize, String)>, SplitError> {
        let mut s = DocumentSplitter::new(text.as_bytes(), 1);
        let mut out = Vec::new();
        while let Some(d) = s.next_document()? {
            out.push((d.first_line, String::from_utf8(d.text).unwrap()));
        }
        Ok(out)
    }

    /// Old kubebuilder CRDs (54 bundle directories of community-operators-prod) continue a
    /// quoted description at its key's indentation; go-yaml reads them, so must we.
    #[test]
    fn under_indented_quoted_continuations_read_as_go_yaml_reads_them() {
        let written = "spec:\n  properties:\n    apiVersion:\n      description: \"APIVersion defines\n      the schema. More info: https://x\"\n      type: string\n    kind:\n      description: 'Kind is\n      a string, it''s\n\n      CamelCase'\n      type: string\n";
        let indented = "spec:\n  properties:\n    apiVersion:\n      description: \"APIVersion defines\n        the schema. More info: https://x\"\n      type: string\n    kind:\n      description: 'Kind is\n        a string, it''s\n\n        CamelCase'\n      type: string\n";
        assert_eq!(canon(written), canon(indented));
        assert_eq!(
            canon(written),
            r#"{"spec":{"properties":{"apiVersion":{"description":"APIVersion defines the schema. More info: https://x","type":"string"},"kind":{"description":"Kind is a string, it's\nCamelCase","type":"string"}}}}"#
        );
    }

    #[test]
    fn the_repair_stops_at_the_closing_quote() {
        // `c` after the scalar keeps its indentation: it stays a key of `a`.
        assert_eq!(
            canon("a:\n  b: \"x\n  y\"\n  c: 1\n"),
            r#"{"a":{"b":"x y","c":1}}"#
        );
    }

    #[test]
    fn a_document_the_repair_cannot_save_reports_the_first_error() {
        let e = err("a:\n  b: \"x\n  y\"\n c: [\n");
        assert_eq!(e.message, QUOTED_SCALAR_INDENT_ERROR);
        assert_eq!((e.line, e.column), (3, 3));
    }

    #[test]
    fn yaml_1_1_booleans_and_nulls_resolve_like_go_yaml_v2() {
        assert_eq!(
            canon("a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: N\ng: ~\nh:\ni: True\n"),
            r#"{"a":true,"b":false,"c":true,"d":false,"e":true,"f":false,"g":null,"h":null,"i":true}"#
        );
    }

    #[test]
    fn quoted_and_block_scalars_stay_strings() {
        assert_eq!(
            canon("a: 'yes'\nb: \"1.0\"\nc: |\n  1\nd: >-\n  on\n"),
            r#"{"a":"yes","b":"1.0","c":"1\n","d":"on"}"#
        );
    }

    #[test]
    fn integers_follow_go_parse_int_with_base_prefixes() {
        assert_eq!(
            canon("a: 0x1F\nb: 017\nc: 0o17\nd: 0b101\ne: 1_000\nf: -42\ng: +7\nh: 09\n"),
            r#"{"a":31,"b":15,"c":15,"d":5,"e":1000,"f":-42,"g":7,"h":9}"#
        );
    }

    #[test]
    fn floats_go_through_float64_and_yaml_1_1_float_syntax() {
        assert_eq!(
            canon("a: 4.10\nb: 1.0\nc: .5\nd: 1e3\ne: 1.\nf: -0.0\ng: 12345678901234567890\n"),
            r#"{"a":4.1,"b":1,"c":0.5,"d":1000,"e":1,"f":-0,"g":12345678901234567000}"#
        );
    }

    #[test]
    fn float_literal_text_is_kept_for_raw_readers() {
        let v = document_to_value(&doc("v: 4.10\n")).unwrap().unwrap();
        let mut raw = Vec::new();
        v.write_raw(&mut raw);
        assert_eq!(String::from_utf8(raw).unwrap(), r#"{"v":4.10}"#);
    }

    #[test]
    fn things_that_are_not_numbers_stay_strings() {
        assert_eq!(
            canon("a: 1.2.3\nb: 2001-12-14\nc: 0xZZ\nd: 1e\ne: v1.0\nf: 1e400\ng: '-'\nh: +\n"),
            r#"{"a":"1.2.3","b":"2001-12-14","c":"0xZZ","d":"1e","e":"v1.0","f":"1e400","g":"-","h":"+"}"#
        );
    }

    #[test]
    fn infinities_and_nan_are_rejected_like_go_json_marshal() {
        assert!(err("a: .inf\n").message.contains("unsupported value: +Inf"));
        assert!(err("a: .nan\n").message.contains("NaN"));
        assert_eq!(err("x: 1\na: -.inf\n").line, 2);
    }

    #[test]
    fn explicit_tags_force_or_check_the_type() {
        assert_eq!(
            canon("a: !!str 1.0\nb: !!float 1\nc: !!int \"12\"\nd: !!binary aGk=\ne: !custom 5\n"),
            r#"{"a":"1.0","b":1,"c":12,"d":"hi","e":"5"}"#
        );
        assert!(
            err("a: !!int abc\n")
                .message
                .contains("cannot decode !!str `abc` as a !!int")
        );
    }

    #[test]
    fn non_string_keys_are_stringified_like_sigs_yaml() {
        assert_eq!(
            canon("1: a\ntrue: b\n1.5: c\nyes: d\n0.1: e\n1000000.0: f\n"),
            r#"{"0.1":"e","1":"a","1.5":"c","1e+06":"f","true":"d"}"#
        );
        assert!(err("~: a\n").message.contains("unsupported map key"));
        assert!(err("18446744073709551615: a\n").message.contains("uint64"));
        assert!(err("? [a]\n: b\n").message.contains("invalid map key"));
    }

    #[test]
    fn merge_keys_follow_go_yaml_v2_precedence() {
        let y = "base: &b {x: 1, w: 2}\nother: &o {w: 3, z: 4}\n\
                 m1: {x: 0, <<: *b}\nm2: {<<: *b, x: 9}\nm3: {<<: [*b, *o]}\n";
        assert_eq!(
            canon(y),
            r#"{"base":{"w":2,"x":1},"m1":{"w":2,"x":1},"m2":{"w":2,"x":9},"m3":{"w":2,"x":1,"z":4},"other":{"w":3,"z":4}}"#
        );
        // In YAML 1.1 a plain `y` is a boolean, also as a key.
        assert_eq!(canon("y: 1\n"), r#"{"true":1}"#);
        assert!(err("a: {<<: 1}\n").message.contains("map merge requires"));
    }

    /// Messages and precedence recorded from sigs.k8s.io/yaml v1.6.0 (the syntax error's text
    /// and line are this parser's; go-yaml says `line 2: did not find expected ',' or '}'`).
    #[test]
    fn later_steps_report_in_upstreams_order_and_words() {
        let text = |y: &str| err(y).upstream_text();
        assert_eq!(
            text("a: .inf\nb: {c: 1\n"),
            "error converting YAML to JSON: yaml: line 2: unclosed bracket '{'"
        );
        assert_eq!(
            text("a: .inf\nz:\n  ~: 1\n"),
            "error converting YAML to JSON: unsupported map key of type: %!s(<nil>), key: <nil>, value: 1"
        );
        assert_eq!(
            text("b: !!int abc\nz:\n  ~: 1\n"),
            "error converting YAML to JSON: yaml: cannot decode !!str `abc` as a !!int"
        );
        assert_eq!(
            text("b: .inf\na: [-.inf]\n"),
            "error converting YAML to JSON: json: unsupported value: -Inf"
        );
        assert_eq!(err("b: .inf\na: [-.inf]\n").line, 2);
        assert_eq!(
            text("a: {? {b: [1, x, null]} : 1}\n"),
            "error converting YAML to JSON: yaml: invalid map key: map[interface {}]interface {}{\"b\":[]interface {}{1, \"x\", interface {}(nil)}}"
        );
        assert_eq!(
            text("a:\n  -9223372036854775808: 1\n  9223372036854775808: {x: 1.5e6}\n"),
            "error converting YAML to JSON: unsupported map key of type: uint64, key: 0x8000000000000000, value: map[interface {}]interface {}{\"x\":1.5e+06}"
        );
        // A number beyond int64 and uint64 is a float64 key, not a uint64 one.
        assert_eq!(canon("-9223372036854775809: 1\n"), r#"{"-9.223372e+18":1}"#);
        // An infinity a later duplicate key replaced is no problem.
        assert_eq!(canon("a: .inf\na: 1\n"), r#"{"a":1}"#);
        assert_eq!(canon("a: !!float .inf\na: 2\n"), r#"{"a":2}"#);
        assert!(err("a: !!float .inf\n").message.contains("+Inf"));
    }

    #[test]
    fn duplicate_keys_keep_the_last_value() {
        assert_eq!(canon("a: 1\na: 2\n"), r#"{"a":2}"#);
    }

    #[test]
    fn empty_and_comment_only_documents_have_no_value() {
        assert!(
            document_to_value(&doc("# just a comment\n"))
                .unwrap()
                .is_none()
        );
        assert!(document_to_value(&doc("---\n")).unwrap().is_none());
    }

    #[test]
    fn syntax_errors_report_the_absolute_line() {
        let d = Document {
            text: b"a: 1\nb: [1, 2\n".to_vec(),
            first_line: 10,
        };
        let e = document_to_value(&d).unwrap_err();
        assert!(e.line >= 10, "{e:?}");
    }

    #[test]
    fn splitter_cuts_at_separator_lines_and_skips_empty_documents() {
        let docs = split("---\na: 1\n---\n---\nb: 2\r\n--- # note\nc: 3").unwrap();
        assert_eq!(
            docs,
            vec![
                (1, "---\na: 1\n".to_string()),
                (4, "---\nb: 2\n".to_string()),
                (7, "c: 3\n".to_string()),
            ]
        );
    }

    #[test]
    fn splitter_rejects_content_after_a_separator() {
        match split("a: 1\n--- {b: 2}\n") {
            Err(SplitError::Syntax(e)) => {
                assert_eq!(e.line, 2);
                assert_eq!(e.message, "invalid Yaml document separator: {b: 2}");
            }
            other => panic!("unexpected {:?}", other.map(|_| ())),
        }
    }
}
