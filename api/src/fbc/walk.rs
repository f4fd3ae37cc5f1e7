//! Streaming catalog reader: every FBC object of a directory tree or a byte stream, in upstream order.
//!
//! Input: a catalog root directory (or any `Read`). Output: one [`Meta`] per object, handed to a
//! callback. Reads local files only; no network.
//!
//! Order and selection match operator-registry's `WalkMetasFS` with concurrency 1, which is what
//! catalogd serves:
//! - directories are walked depth first, entries in byte order of their names (Go's `fs.WalkDir`);
//! - `.indexignore` files are never read as catalog content, and the files they match are skipped
//!   (see [`super::indexignore`]); symbolic links are opened as files, like upstream;
//! - each file is JSON when its first non-whitespace character (within the first 4096 bytes) is
//!   `{`, else YAML; a JSON file may hold several concatenated objects (JSON Lines included);
//! - as in apimachinery, a JSON stream whose first or second object fails to decode is retried as
//!   YAML from that object on (a YAML flow mapping such as `{schema: olm.package}` loads); when that
//!   also fails, the JSON error is reported.
//!
//! Memory: one object at a time. JSON is split into objects on the fly; YAML is split into
//! documents line by line; no file is read whole.
//!
//! Hostile input (every limit is also in docs/SECURITY.md):
//!
//! | input | outcome |
//! |---|---|
//! | a FIFO, device or socket (directly or through a symlink, e.g. to `/dev/zero`) | error naming it: `not a regular file (a FIFO)`; never opened blocking, never read |
//! | a `.indexignore` that is not a regular file, or over [`MAX_INDEX_IGNORE_BYTES`] | the same error, naming the `.indexignore` |
//! | a catalog file over [`MAX_CATALOG_FILE_BYTES`] (or growing past it while read) | error naming the file and both sizes |
//! | one JSON value or YAML document over [`MAX_OBJECT_BYTES`] | error at the object's line and column |
//! | a YAML document whose aliases and merge keys expand it past [`MAX_OBJECT_BYTES`] | error at the alias (see [`super::yaml`]) |
//! | a path the OS refuses (longer than `PATH_MAX`) | error naming that path, not the catalog root |
//!
//! Each object's top-level keys `schema`, `package` and `name` are found case-insensitively (upstream
//! matches them with Unicode case folding); two top-level keys that differ only in case are an error,
//! and so is a non-string value for one of those three keys.

use std::fmt;
use std::fs::{self, DirEntry};
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::Arc;

use super::canonical::{self, Canonicalizer};
use super::gojson::{self, Object, Value};
use super::indexignore::{INDEX_IGNORE_FILE, IgnoreMatcher};
use super::json_split::JsonSplitter;
use super::yaml::{self, DocumentSplitter, SplitError};
use crate::regular_file::{FileError, open_regular_bounded};

/// Largest catalog file read (1 GiB). Files are streamed, so this bounds time, not memory; the
/// largest real catalog file seen is 4.3 MB, and a whole index rendered into one file stays far
/// below it.
pub const MAX_CATALOG_FILE_BYTES: u64 = 1 << 30;

/// Largest single object: one JSON value, or one YAML document as written and as its aliases
/// expand it (16 MiB; the largest real object, a bundle embedding its manifests, is 1.2 MB).
/// Memory per object is a small multiple of this.
pub const MAX_OBJECT_BYTES: usize = 16 << 20;

/// Largest `.indexignore` read (1 MiB).
pub const MAX_INDEX_IGNORE_BYTES: u64 = 1 << 20;

/// A [`FileError`] as the walk reports it: the path, and what is wrong with the file.
pub(crate) fn file_error(e: FileError) -> WalkError {
    WalkError::Io {
        path: e.path.display().to_string(),
        source: e.into_io_error(),
    }
}

/// Where an object was read from (`Default`: nowhere in particular, line 0).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The file path (the root joined with the path inside it), or the stream's source name.
    pub file: Arc<str>,
    /// 1-based line of the object's first character.
    pub line: usize,
    /// 1-based column (in bytes) of the object's first character.
    pub column: usize,
    /// 0-based index of the object among the objects of its file.
    pub index: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// One catalog object ("blob").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta {
    /// The `schema` key (empty when absent).
    pub schema: String,
    /// The `package` key (empty when absent).
    pub package: String,
    /// The `name` key (empty when absent).
    pub name: String,
    /// The canonical bytes upstream catalogd serves for this object, without a trailing newline.
    pub blob: Vec<u8>,
    /// Where the object was read from.
    pub origin: Origin,
}

/// Why a walk stopped.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("failed to read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("failed to parse {at}: {message}")]
    Syntax { at: Origin, message: String },
    #[error("failed to decode the object at {at}: {message}")]
    Object { at: Origin, message: String },
    /// An error returned by the caller's callback.
    #[error(transparent)]
    Callback(Box<dyn std::error::Error + Send + Sync>),
}

impl WalkError {
    /// Wraps a callback's own error so it can stop the walk.
    pub fn callback(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> WalkError {
        WalkError::Callback(e.into())
    }

    /// The position the error refers to, when it has one.
    pub fn origin(&self) -> Option<&Origin> {
        match self {
            WalkError::Syntax { at, .. } | WalkError::Object { at, .. } => Some(at),
            _ => None,
        }
    }
}

/// An object before canonical encoding (the loader builds its typed model from this directly).
#[derive(Debug)]
pub(crate) struct RawObject {
    pub schema: String,
    pub package: String,
    pub name: String,
    /// The whole object (`Value::Null` for a JSON `null` in a JSON stream, or for an empty YAML
    /// document when [`NullDocuments::AsObjects`] asks for those).
    pub value: Value,
    pub origin: Origin,
    /// An empty YAML document (blank, comments only, `~`): upstream's blob for it is empty.
    pub empty_document: bool,
    /// The canonical encoding, when a blobs-only walk wrote it straight from the JSON text;
    /// `value` is then `Value::Null` (see [`Decode::BlobsOnly`]).
    pub canonical: Option<Vec<u8>>,
}

impl RawObject {
    pub(crate) fn into_meta(self) -> Meta {
        let blob = if self.empty_document {
            Vec::new()
        } else if let Some(canonical) = self.canonical {
            canonical
        } else {
            self.value.to_canonical()
        };
        Meta {
            schema: self.schema,
            package: self.package,
            name: self.name,
            blob,
            origin: self.origin,
        }
    }
}

/// What to do with a YAML document that holds no value (only blank lines or comments, `---`
/// alone, or `~`).
///
/// Upstream decodes such a document into an object with no schema and an empty blob. catalogd
/// stores the empty blob, so it serves nothing for it, and neither does the resolver see
/// anything; `opm validate` (operator-registry's `LoadFS`) rejects it: `object '' is missing
/// root schema field`. A README whose text is only `# headings` is such a document, since
/// every file not excluded by `.indexignore` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NullDocuments {
    /// Skip them (serving and resolution: nothing to serve).
    Skip,
    /// Report each as an object without schema (validation, as `opm validate`).
    AsObjects,
}

/// What a walk's consumer needs of each object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decode {
    /// The decoded [`Value`] (the typed loader and validation read it).
    Values,
    /// Only the canonical blob and the meta keys: JSON objects are encoded straight from their
    /// text ([`super::canonical`]) and the tree is built only for what that path leaves to the
    /// full parser. The blobs, meta keys and errors are the same either way.
    BlobsOnly,
}

/// Streams every object under `root` in upstream order, honouring `.indexignore`, calling `f` for
/// each; stops at the first error. `root` may also be a single file.
pub fn walk_metas_dir(
    root: &Path,
    mut f: impl FnMut(Meta) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    walk_objects_dir(
        root,
        NullDocuments::Skip,
        Decode::BlobsOnly,
        &mut |raw: RawObject| f(raw.into_meta()),
    )
}

/// Streams every object of a JSON or YAML stream (JSON Lines, concatenated JSON, `---`-separated
/// YAML). `source_name` names the stream in positions and errors.
pub fn walk_metas_reader(
    r: impl Read,
    source_name: &str,
    mut f: impl FnMut(Meta) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    read_stream_with(
        r,
        Arc::from(source_name),
        NullDocuments::Skip,
        Decode::BlobsOnly,
        &mut |raw: RawObject| f(raw.into_meta()),
    )
}

pub(crate) fn walk_objects_dir<E: From<WalkError>>(
    root: &Path,
    null_documents: NullDocuments,
    decode: Decode,
    f: &mut dyn FnMut(RawObject) -> Result<(), E>,
) -> Result<(), E> {
    catalog_files(root, &mut |path: &Path| {
        read_catalog_file(path, null_documents, decode, f)
    })
}

/// Streams the objects of one catalog file (a regular file within [`MAX_CATALOG_FILE_BYTES`]),
/// naming it in positions and errors.
pub(crate) fn read_catalog_file<E: From<WalkError>>(
    path: &Path,
    null_documents: NullDocuments,
    decode: Decode,
    f: &mut dyn FnMut(RawObject) -> Result<(), E>,
) -> Result<(), E> {
    let file = open_regular_bounded(path, MAX_CATALOG_FILE_BYTES).map_err(file_error)?;
    read_stream_with(
        file,
        Arc::from(path.display().to_string()),
        null_documents,
        decode,
        f,
    )
}

/// Visits every catalog file under `root` in the order catalogd reads them: depth first, entries
/// sorted by name bytes (Go's `fs.WalkDir`), skipping `.indexignore` files and what they ignore.
/// A `root` that is a file is visited alone.
pub fn catalog_files<E: From<WalkError>>(
    root: &Path,
    visit: &mut dyn FnMut(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let io_err = |path: &Path, source: io::Error| WalkError::Io {
        path: path.display().to_string(),
        source,
    };
    let meta = fs::metadata(root).map_err(|e| io_err(root, e))?;
    if !meta.is_dir() {
        return visit(root);
    }
    let matcher = IgnoreMatcher::load(root)?;
    visit_dir(root, &mut Vec::new(), &matcher, visit)
}

/// Directory entries sorted by name bytes, as Go's `fs.ReadDir`.
pub(crate) fn sorted_entries(dir: &Path) -> io::Result<Vec<DirEntry>> {
    let mut entries = fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by(|a, b| {
        a.file_name()
            .as_encoded_bytes()
            .cmp(b.file_name().as_encoded_bytes())
    });
    Ok(entries)
}

fn visit_dir<E: From<WalkError>>(
    dir: &Path,
    rel: &mut Vec<String>,
    matcher: &IgnoreMatcher,
    visit: &mut dyn FnMut(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let entries = sorted_entries(dir).map_err(|source| WalkError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let file_type = entry.file_type().map_err(|source| WalkError::Io {
            path: path.display().to_string(),
            source,
        })?;
        if file_type.is_dir() {
            rel.push(name);
            visit_dir(&path, rel, matcher, visit)?;
            rel.pop();
            continue;
        }
        if name == INDEX_IGNORE_FILE {
            continue;
        }
        let mut components: Vec<&str> = rel.iter().map(String::as_str).collect();
        components.push(&name);
        if matcher.is_ignored(&components) {
            continue;
        }
        visit(&path)?;
    }
    Ok(())
}

/// How far upstream looks for the `{` that marks a JSON stream.
const JSON_SNIFF_BYTES: usize = 4096;

pub(crate) fn read_stream<E: From<WalkError>>(
    r: impl Read,
    file: Arc<str>,
    f: &mut dyn FnMut(RawObject) -> Result<(), E>,
) -> Result<(), E> {
    read_stream_with(r, file, NullDocuments::Skip, Decode::Values, f)
}

pub(crate) fn read_stream_with<E: From<WalkError>>(
    mut r: impl Read,
    file: Arc<str>,
    null_documents: NullDocuments,
    decode: Decode,
    f: &mut dyn FnMut(RawObject) -> Result<(), E>,
) -> Result<(), E> {
    let io_err = |source: io::Error| WalkError::Io {
        path: file.to_string(),
        source,
    };
    let mut head = Vec::with_capacity(JSON_SNIFF_BYTES);
    (&mut r)
        .take(JSON_SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(io_err)?;
    let is_json = String::from_utf8_lossy(&head).trim_start().starts_with('{');
    let reader = BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(r));
    let mut cx = StreamCx {
        file,
        index: 0,
        null_documents,
        canonicalizer: (decode == Decode::BlobsOnly).then(Canonicalizer::new),
    };
    if is_json {
        read_json(reader, &mut cx, f)
    } else {
        read_yaml(reader, 1, &mut cx, None, f)
    }
}

struct StreamCx {
    file: Arc<str>,
    /// Objects emitted so far from this stream.
    index: usize,
    null_documents: NullDocuments,
    /// Present for [`Decode::BlobsOnly`].
    canonicalizer: Option<Canonicalizer>,
}

impl StreamCx {
    fn origin(&self, line: usize, column: usize) -> Origin {
        Origin {
            file: self.file.clone(),
            line,
            column,
            index: self.index,
        }
    }
}

fn read_json<E: From<WalkError>>(
    reader: impl BufRead,
    cx: &mut StreamCx,
    f: &mut dyn FnMut(RawObject) -> Result<(), E>,
) -> Result<(), E> {
    let mut splitter = JsonSplitter::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let next = match splitter.next_value(&mut buf) {
            Ok(next) => next,
            Err(SplitError::Io(source)) => {
                return Err(WalkError::Io {
                    path: cx.file.to_string(),
                    source,
                }
                .into());
            }
            Err(SplitError::Syntax(e)) => {
                return Err(WalkError::Syntax {
                    at: cx.origin(e.line, e.column),
                    message: e.message,
                }
                .into());
            }
        };
        let Some((line, column)) = next else {
            return Ok(());
        };
        if let Some(obj) = encode_directly(&buf, cx, line, column) {
            release_large_text(&mut buf);
            cx.index += 1;
            f(obj)?;
            continue;
        }
        let decoded = match gojson::parse(&buf) {
            Ok(v) => to_raw_object(v, cx.origin(line, column), true),
            Err(e) => {
                let (l, c) = position_in(&buf, e.offset, line, column);
                Err(WalkError::Syntax {
                    at: cx.origin(l, c),
                    message: e.message,
                })
            }
        };
        match decoded {
            Ok(Some(obj)) => {
                release_large_text(&mut buf);
                cx.index += 1;
                f(obj)?;
            }
            Ok(None) => {}
            Err(json_err) => {
                // apimachinery retries an ambiguous stream (fewer than two objects decoded) as YAML.
                if cx.index > 1 {
                    return Err(json_err.into());
                }
                let rest = Cursor::new(std::mem::take(&mut buf)).chain(splitter.reader);
                return read_yaml(BufReader::new(rest), line, cx, Some(json_err), f);
            }
        }
    }
}

/// An object's text larger than this is not kept as the next object's buffer.
const RETAINED_TEXT_BYTES: usize = 128 << 10;

/// Frees the text buffer once a large object has been decoded. The callback may wait (the parallel
/// walk's window is full) and most objects are far smaller (39 of the 7,213 in the derived
/// community catalog exceed 128 KiB, the largest is 1 MB), so a large buffer kept for them is
/// memory held idle at an ingest's peak (docs/performance/issue-27.md, fifteenth step).
fn release_large_text(buf: &mut Vec<u8>) {
    if buf.capacity() > RETAINED_TEXT_BYTES {
        *buf = Vec::new();
    }
}

/// For [`Decode::BlobsOnly`]: the object in `buf` encoded straight from its text, or `None` when
/// the full parser must decide (see [`super::canonical`]).
fn encode_directly(buf: &[u8], cx: &mut StreamCx, line: usize, column: usize) -> Option<RawObject> {
    let canonicalizer = cx.canonicalizer.as_mut()?;
    let mut blob = Vec::with_capacity(buf.len());
    let values = canonicalizer.encode(buf, &mut blob)?;
    let (schema, package, name) = canonical::meta_strings(&blob, &values)?;
    Some(RawObject {
        schema,
        package,
        name,
        value: Value::Null,
        origin: cx.origin(line, column),
        empty_document: false,
        canonical: Some(blob),
    })
}

/// 1-based line/column of byte `offset` in `buf`, which starts at `line`/`column`.
fn position_in(buf: &[u8], offset: usize, line: usize, column: usize) -> (usize, usize) {
    let offset = offset.min(buf.len());
    let before = &buf[..offset];
    match before.iter().rposition(|b| *b == b'\n') {
        None => (line, column + offset),
        Some(nl) => (
            line + before.iter().filter(|b| **b == b'\n').count(),
            offset - nl,
        ),
    }
}

fn read_yaml<E: From<WalkError>>(
    reader: impl BufRead,
    first_line: usize,
    cx: &mut StreamCx,
    mut first_error: Option<WalkError>,
    f: &mut dyn FnMut(RawObject) -> Result<(), E>,
) -> Result<(), E> {
    let mut splitter = DocumentSplitter::new(reader, first_line);
    loop {
        let next = match splitter.next_document() {
            Ok(Some(doc)) => match yaml::document_to_value(&doc) {
                Ok(Some(v)) => to_raw_object(v, cx.origin(doc.first_line, 1), false),
                Ok(None) if cx.null_documents == NullDocuments::AsObjects => Ok(Some(RawObject {
                    schema: String::new(),
                    package: String::new(),
                    name: String::new(),
                    value: Value::Null,
                    origin: cx.origin(doc.first_line, 1),
                    empty_document: true,
                    canonical: None,
                })),
                Ok(None) => continue,
                Err(e) => Err(WalkError::Syntax {
                    at: cx.origin(e.line, e.column),
                    message: e.message,
                }),
            },
            Ok(None) => return Ok(()),
            Err(SplitError::Io(source)) => Err(WalkError::Io {
                path: cx.file.to_string(),
                source,
            }),
            Err(SplitError::Syntax(e)) => Err(WalkError::Syntax {
                at: cx.origin(e.line, e.column),
                message: e.message,
            }),
        };
        match next {
            Ok(Some(obj)) => {
                first_error = None;
                cx.index += 1;
                f(obj)?;
            }
            Ok(None) => {}
            Err(e) => return Err(first_error.unwrap_or(e).into()),
        }
    }
}

/// Upstream's `Meta.UnmarshalJSON`: the object plus its schema/package/name.
/// `Ok(None)` for a YAML document that is `null`.
fn to_raw_object(v: Value, at: Origin, from_json: bool) -> Result<Option<RawObject>, WalkError> {
    let obj = match v {
        Value::Object(obj) => obj,
        Value::Null if from_json => {
            return Ok(Some(RawObject {
                schema: String::new(),
                package: String::new(),
                name: String::new(),
                value: Value::Null,
                origin: at,
                empty_document: false,
                canonical: None,
            }));
        }
        Value::Null => return Ok(None),
        other => {
            return Err(WalkError::Object {
                at,
                message: format!("expected a JSON object, got {}", other.kind()),
            });
        }
    };
    let (schema, package, name) = meta_keys(&obj).map_err(|message| WalkError::Object {
        at: at.clone(),
        message,
    })?;
    Ok(Some(RawObject {
        schema,
        package,
        name,
        value: Value::Object(obj),
        origin: at,
        empty_document: false,
        canonical: None,
    }))
}

/// Unicode case folding as upstream uses for top-level keys (approximated by upper-then-lower
/// casing for non-ASCII keys, which folds `ß`, `ſ` and the Kelvin sign as full folding does).
pub(crate) fn fold_key(key: &str) -> String {
    if key.is_ascii() {
        key.to_ascii_lowercase()
    } else {
        key.to_uppercase().to_lowercase()
    }
}

/// Whether `key` is its own fold (ASCII without capitals). Two distinct such keys never fold
/// alike, so only the other keys need folding: an object of a million plain keys costs no
/// allocation here.
fn is_own_fold(key: &str) -> bool {
    key.is_ascii() && !key.bytes().any(|b| b.is_ascii_uppercase())
}

fn meta_keys(obj: &Object) -> Result<(String, String, String), String> {
    // Keys that fold to something else, with their fold; plus any plain key equal to such a
    // fold (`name` beside `Name`), which belongs to the same group.
    let mut folded: Vec<(String, &str)> = obj
        .iter()
        .filter(|(k, _)| !is_own_fold(k))
        .map(|(k, _)| (fold_key(k), k))
        .collect();
    let plain_partners: Vec<(String, &str)> = folded
        .iter()
        .filter_map(|(f, _)| obj.get_key(f).filter(|k| is_own_fold(k)))
        .map(|k| (k.to_owned(), k))
        .collect();
    folded.extend(plain_partners);
    folded.sort();
    folded.dedup();
    let mut dups: Vec<String> = Vec::new();
    let mut i = 0;
    while i < folded.len() {
        let mut j = i + 1;
        while j < folded.len() && folded[j].0 == folded[i].0 {
            j += 1;
        }
        if j - i > 1 {
            let keys: Vec<&str> = folded[i..j].iter().map(|(_, k)| *k).collect();
            dups.push(format!(
                "duplicate keys for key {:?}: [{}]",
                folded[i].0,
                keys.join(" ")
            ));
        }
        i = j;
    }
    if !dups.is_empty() {
        return Err(dups.join(", "));
    }
    let mut out = [String::new(), String::new(), String::new()];
    for (slot, field) in out.iter_mut().zip(["schema", "package", "name"]) {
        // No duplicates are left, so at most one key folds to `field`.
        let found = match obj.get(field) {
            Some(v) => Some((field, v)),
            None => folded
                .iter()
                .find(|(f, _)| f == field)
                .and_then(|(_, k)| obj.get(k).map(|v| (*k, v))),
        };
        match found {
            None => {}
            Some((_, Value::String(s))) => *slot = s.clone(),
            Some((k, v)) => {
                return Err(format!(
                    "expected value for key {k:?} to be a string, got {}",
                    v.kind()
                ));
            }
        }
    }
    let [schema, package, name] = out;
    Ok((schema, package, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metas(input: &str) -> Result<Vec<Meta>, WalkError> {
        let mut out = Vec::new();
        walk_metas_reader(input.as_bytes(), "test", |m| {
            out.push(m);
            Ok(())
        })?;
        Ok(out)
    }

    fn blobs(input: &str) -> Vec<String> {
        metas(input)
            .unwrap()
            .into_iter()
            .map(|m| String::from_utf8(m.blob).unwrap())
            .collect()
    }

    #[test]
    fn concatenated_json_objects_are_separate_blobs_in_order() {
        let input = "{\"schema\":\"olm.package\",\"name\":\"a\"}{\"name\":\"b\",\"schema\":\"x\"}\n\n {\"b\":1,\"a\":[1.0]}";
        assert_eq!(
            blobs(input),
            vec![
                r#"{"name":"a","schema":"olm.package"}"#,
                r#"{"name":"b","schema":"x"}"#,
                r#"{"a":[1],"b":1}"#
            ]
        );
    }

    #[test]
    fn objects_carry_their_line_column_and_index() {
        let ms = metas("{\"schema\":\"a\"}\n  {\"schema\":\"b\"}\n").unwrap();
        assert_eq!(
            (ms[1].origin.line, ms[1].origin.column, ms[1].origin.index),
            (2, 3, 1)
        );
        let ms = metas("---\nschema: a\n---\n# c\nschema: b\n").unwrap();
        assert_eq!(
            (ms[0].origin.line, ms[1].origin.line, ms[1].origin.index),
            (1, 4, 1)
        );
    }

    #[test]
    fn meta_keys_are_found_case_insensitively() {
        let ms = metas("{\"Schema\":\"olm.bundle\",\"PACKAGE\":\"p\",\"Name\":\"n\"}").unwrap();
        assert_eq!(
            (
                ms[0].schema.as_str(),
                ms[0].package.as_str(),
                ms[0].name.as_str()
            ),
            ("olm.bundle", "p", "n")
        );
    }

    #[test]
    fn non_ascii_keys_folding_to_a_plain_key_collide_or_count_as_it() {
        // `ſ` (long s) folds to `s`, as Unicode case folding does upstream.
        let e = metas("{\"ſchema\":\"a\",\"schema\":\"b\"}").unwrap_err();
        assert!(
            e.to_string()
                .contains(r#"duplicate keys for key "schema": [schema ſchema]"#),
            "{e}"
        );
        let ms = metas("{\"ſchema\":\"olm.package\",\"name\":\"x\"}").unwrap();
        assert_eq!(ms[0].schema, "olm.package");
    }

    #[test]
    fn keys_differing_only_in_case_are_rejected() {
        let e = metas("{\"schema\":\"a\",\"name\":\"x\",\"Name\":\"y\"}").unwrap_err();
        assert!(
            e.to_string()
                .contains(r#"duplicate keys for key "name": [Name name]"#),
            "{e}"
        );
    }

    #[test]
    fn non_string_meta_keys_are_rejected() {
        let e = metas("schema: olm.package\nname: 1\n").unwrap_err();
        assert!(e.to_string().contains("to be a string, got number"), "{e}");
        let e = metas("schema: olm.package\nname:\n").unwrap_err();
        assert!(e.to_string().contains("got null"), "{e}");
    }

    #[test]
    fn json_syntax_errors_name_line_and_column() {
        let e =
            metas("{\"schema\":\"a\"}\n{\"schema\":\"b\"}\n{\"schema\": \"c\",\n  \"x\": tru }\n")
                .unwrap_err();
        match e {
            WalkError::Syntax { at, message } => {
                assert_eq!((at.line, at.column, at.index), (4, 11, 2));
                assert!(
                    message.contains("invalid character ' ' in literal"),
                    "{message}"
                );
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn yaml_flow_mapping_that_is_not_json_falls_back_to_yaml() {
        assert_eq!(
            blobs("{schema: olm.package, name: foo}\n"),
            vec![r#"{"name":"foo","schema":"olm.package"}"#]
        );
    }

    #[test]
    fn broken_json_that_is_not_yaml_either_reports_the_json_error() {
        let e = metas("{\"schema\": \"a\", ]").unwrap_err();
        assert!(e.to_string().contains("failed to parse test:1:"), "{e}");
    }

    #[test]
    fn top_level_non_objects_are_rejected() {
        let e = metas("{\"schema\":\"a\"}{\"schema\":\"a\"}[1]").unwrap_err();
        assert!(
            e.to_string().contains("expected a JSON object, got array"),
            "{e}"
        );
        let e = metas("- a\n- b\n").unwrap_err();
        assert!(e.to_string().contains("got array"), "{e}");
    }

    #[test]
    fn json_null_is_a_schemaless_blob_and_yaml_null_documents_are_skipped() {
        let ms = metas("{\"schema\":\"a\"}{\"schema\":\"b\"}null").unwrap();
        assert_eq!(ms.len(), 3);
        assert_eq!(
            (ms[2].schema.as_str(), ms[2].blob.as_slice()),
            ("", &b"null"[..])
        );
        assert_eq!(
            metas("# only a comment\n---\n~\n---\nschema: a\n")
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn truncated_json_stream_is_an_error() {
        let e = metas("{\"schema\":\"a\"}{\"schema\":\"b\"}{\"schema\":").unwrap_err();
        assert!(
            e.to_string().contains("unexpected end of JSON input"),
            "{e}"
        );
    }

    #[test]
    fn callback_errors_stop_the_walk_unchanged() {
        let mut seen = 0;
        let e = walk_metas_reader(
            "{\"schema\":\"a\"}{\"schema\":\"b\"}".as_bytes(),
            "s",
            |_| {
                seen += 1;
                Err(WalkError::callback("stop"))
            },
        )
        .unwrap_err();
        assert_eq!(seen, 1);
        assert_eq!(e.to_string(), "stop");
    }

    #[test]
    fn a_byte_order_mark_before_yaml_is_accepted() {
        assert_eq!(blobs("\u{FEFF}schema: a\n"), vec![r#"{"schema":"a"}"#]);
        assert_eq!(
            blobs("\u{FEFF}---\nschema: a\n---\nschema: b\n"),
            vec![r#"{"schema":"a"}"#, r#"{"schema":"b"}"#]
        );
    }

    #[test]
    fn yaml_errors_name_the_document_line() {
        let e = metas("schema: a\n---\nschema: b\nentries: [\n").unwrap_err();
        let at = e.origin().unwrap();
        assert_eq!((at.index, at.file.as_ref()), (1, "test"));
        assert!(at.line >= 3, "{e}");
    }

    #[test]
    fn invalid_utf8_in_yaml_is_an_error_with_its_line() {
        let mut out = Vec::new();
        let e = walk_metas_reader(&b"schema: a\nname: \xff\n"[..], "y", |m| {
            out.push(m);
            Ok(())
        })
        .unwrap_err();
        assert!(e.to_string().contains("y:2:1: invalid UTF-8"), "{e}");
    }

    #[test]
    fn crlf_yaml_and_strings_with_braces_split_correctly() {
        assert_eq!(
            blobs("schema: a\r\nname: \"x}\"\r\n---\r\nschema: b\r\n"),
            vec![r#"{"name":"x}","schema":"a"}"#, r#"{"schema":"b"}"#]
        );
        assert_eq!(
            blobs("{\"schema\":\"a\",\"n\":\"}\\\"{\"}"),
            vec![r#"{"n":"}\"{","schema":"a"}"#]
        );
    }
}
