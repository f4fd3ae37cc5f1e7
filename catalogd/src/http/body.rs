//! Streams stored catalog bytes into a response body without loading them into memory.
//!
//! Input: a [`StoredCatalog`] and the pieces to send. Output: an axum [`Body`]. Reads the local
//! filesystem (page-cache hits on the runtime thread, anything else on a blocking thread); no
//! network IO of its own.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, Weak};

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use flate2::Compression;
use flate2::write::GzEncoder;
use futures::StreamExt;
use memmap2::MmapMut;
use tokio::sync::mpsc;

use crate::storage::{Answer, CompressedAnswers, Section, StoredCatalog};

/// Size of each positional read; large enough to amortise syscalls, small enough to keep a few in
/// flight per response without noticeable memory.
const CHUNK: usize = 256 * 1024;
/// Chunks buffered between the reading thread and the connection.
const IN_FLIGHT: usize = 4;

/// A part of a response body.
#[derive(Clone, Debug)]
pub enum Piece {
    /// Literal bytes (multipart boundaries and headers).
    Static(Bytes),
    /// A byte range of `catalog.jsonl`.
    Jsonl(Section),
    /// A byte range of `catalog.jsonl.gz`.
    Gzip(Section),
}

/// Total number of bytes the pieces produce (before any on-the-fly compression).
pub fn total_len(pieces: &[Piece]) -> u64 {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Static(b) => b.len() as u64,
            Piece::Jsonl(s) | Piece::Gzip(s) => s.len,
        })
        .sum()
}

/// Merges sections that touch into one, so a package's adjacent blobs are read in large chunks.
pub fn coalesce(sections: &[Section]) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::with_capacity(sections.len());
    for s in sections {
        match out.last_mut() {
            Some(last) if last.end() == s.offset => last.len += s.len,
            _ => out.push(*s),
        }
    }
    out
}

/// Uncompressed bodies up to this size are read at once on the runtime thread.
///
/// A pread of a few KiB of a just-written file is served from the page cache in microseconds,
/// cheaper than the two thread hand-offs of the blocking pool, which dominated small `/metas`
/// answers (the usual query for one package of ordinary size).
const INLINE_MAX: u64 = 64 * 1024;

/// Whether a streaming body takes [`READ_TURNS`] for its chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pacing {
    /// Every chunk waits its turn: plain HTTP, where downloads without turns were unfair.
    Turns,
    /// Chunks are read as the connection asks: TLS, where downloads were as fair without turns
    /// and the turns' hand-offs between runtime threads cost up to half again the CPU per byte.
    Free,
}

impl Pacing {
    /// The pacing of a connection carried over TLS (`over_tls`) or plain TCP.
    ///
    /// Measured with concurrent `/all` downloads (docs/performance/issue-27.md, twenty-sixth and
    /// twenty-seventh steps): over TLS without turns p99 stayed within 1.16 times p50 whether
    /// catalogd (64 downloads by a two-thread client) or the client (one thread on one core) was
    /// the slower end, and on a link shaped to 2 Gbit/s downloads were as uneven with turns as
    /// without (p99 2.7–4.5 and 2.4–4.5 times p50), the link deciding; over plain HTTP to a fast
    /// client p99 was 3.1–3.4 times p50 without turns and 1.1–1.2 with them.
    pub fn of_connection(over_tls: bool) -> Pacing {
        if over_tls {
            Pacing::Free
        } else {
            Pacing::Turns
        }
    }
}

/// A body streaming `pieces`, gzip-compressing on the fly when `compress` is set.
pub fn stream(
    catalog: Arc<StoredCatalog>,
    pieces: Vec<Piece>,
    compress: bool,
    pacing: Pacing,
) -> Body {
    if compress {
        compressed(catalog, pieces)
    } else if total_len(&pieces) <= INLINE_MAX {
        inline(catalog, pieces)
    } else {
        on_demand(catalog, pieces, pacing)
    }
}

/// Reads all of a small body now, as one heap buffer (a mapping per small answer would cost
/// more than the read).
fn inline(catalog: Arc<StoredCatalog>, pieces: Vec<Piece>) -> Body {
    match read_all(&catalog, &pieces) {
        Ok(bytes) => Body::from(bytes),
        // The status line is already decided: end the body with the error, as streaming does.
        Err(e) => Body::from_stream(futures::stream::iter([Err::<Bytes, _>(e)])),
    }
}

/// Every piece's bytes, in order, in one buffer.
fn read_all(catalog: &StoredCatalog, pieces: &[Piece]) -> io::Result<Bytes> {
    let total = usize::try_from(total_len(pieces)).unwrap_or(usize::MAX);
    let mut out = BytesMut::with_capacity(total);
    for piece in pieces {
        let (section, read_at): (Section, ReadAt) = match piece {
            Piece::Static(b) => {
                out.extend_from_slice(b);
                continue;
            }
            Piece::Jsonl(s) => (*s, StoredCatalog::read_jsonl_at),
            Piece::Gzip(s) => (*s, StoredCatalog::read_gzip_at),
        };
        let start = out.len();
        let len = usize::try_from(section.len).map_err(io::Error::other)?;
        out.resize(start + len, 0);
        read_exact_at(&mut out[start..], section.offset, |buf, off| {
            read_at(catalog, buf, off)
        })?;
    }
    Ok(out.freeze())
}

/// Reads one chunk each time the connection asks for more: on the runtime thread when the page
/// cache holds it, else on the blocking pool.
///
/// No thread is tied to a response: a slow or stalled client holds no thread and no buffered
/// chunk beyond the one hyper is writing. Over plain HTTP connections take turns at reading
/// ([`READ_TURNS`], [`Pacing`]), so a connection whose reads never wait cannot get ahead of the
/// others (a thread per response, and inline reads without turns, both put p99 latency at
/// seconds for 64 concurrent plain `/all` downloads).
fn on_demand(catalog: Arc<StoredCatalog>, pieces: Vec<Piece>, pacing: Pacing) -> Body {
    let cursor = Cursor::new(catalog, pieces);
    let stream = futures::stream::unfold(Some(cursor), move |state| async move {
        let mut cursor = state?;
        let cached = match pacing {
            Pacing::Turns => {
                let _turn = READ_TURNS.acquire().await.ok()?;
                cursor.next_chunk_cached()
            }
            Pacing::Free => cursor.next_chunk_cached(),
        };
        let (cursor, item) = match cached {
            Cached::Ready(item) => (cursor, item),
            Cached::WouldWait => tokio::task::spawn_blocking(move || {
                let item = cursor.next_chunk();
                (cursor, item)
            })
            .await
            .ok()?,
        };
        match item {
            None => None,
            // Stop after an error: the body ends there and hyper aborts the response.
            Some(Err(e)) => Some((Err(e), None)),
            Some(Ok(bytes)) => Some((Ok(bytes), Some(cursor))),
        }
    });
    Body::from_stream(stream)
}

/// Turns at reading a chunk on the runtime thread, handed out in the order connections ask for
/// them (tokio's semaphore is fair): under load every plain-HTTP streaming response
/// ([`Pacing::Turns`]) waits its turn per chunk, which gives each connection its share of the
/// runtime threads, as the blocking pool's queue did, without the two thread hand-offs per chunk.
/// A turn lasts one page-cache copy; under contention it passes between runtime threads, a
/// cross-thread wake-up per chunk, which is why TLS downloads, fair without it, skip it.
static READ_TURNS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// What [`Cursor::next_chunk_cached`] found.
enum Cached {
    /// The next chunk, or the end (`None`).
    Ready(Option<io::Result<Bytes>>),
    /// The next chunk would wait for the disk; nothing was consumed.
    WouldWait,
}

/// `StoredCatalog::read_jsonl_at` or `read_gzip_at` (or their page-cache-only forms).
type ReadAt = fn(&StoredCatalog, &mut [u8], u64) -> io::Result<usize>;

/// The file bytes of the next chunk, not yet read.
#[derive(Clone, Copy)]
struct FileRange {
    read_at: ReadAt,
    read_cached_at: ReadAt,
    offset: u64,
    len: usize,
}

/// What a cursor sends next.
enum Step {
    Bytes(Bytes),
    File(FileRange),
}

/// Position in a list of pieces.
struct Cursor {
    catalog: Arc<StoredCatalog>,
    pieces: Vec<Piece>,
    piece: usize,
    /// Bytes of `pieces[piece]` already produced.
    done_in_piece: u64,
    /// Read buffers of this response ([`ReadBuffers`]).
    buffers: ReadBuffers,
    /// Whether page-cache-only reads are worth trying (false once the filesystem refused one).
    cached_reads: bool,
}

/// The read buffers of one response: anonymous memory mappings of [`CHUNK`] bytes, outside the
/// heap. A chunk is sent as a view of one; once hyper has written and dropped it, the mapping
/// goes back to this response's free list, so a download reuses two or three mappings instead
/// of mapping and zeroing fresh pages per chunk (which cost a fifth of the CPU under load).
/// When the response ends, its mappings are unmapped: the memory goes back to the operating
/// system at once. Heap chunks of 64 concurrent downloads stayed resident in the allocator's
/// arenas after a burst (75 MiB RSS 30 s after the load, against 39 MiB with quarter-size
/// chunks), which is what catalogd's steady RSS measured.
#[derive(Default)]
struct ReadBuffers {
    free: Arc<Mutex<Vec<MmapMut>>>,
}

impl ReadBuffers {
    /// A mapping to read into: a free one, else a new one.
    fn take(&self) -> io::Result<MmapMut> {
        let reused = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match reused {
            Some(map) => Ok(map),
            None => MmapMut::map_anon(CHUNK),
        }
    }

    /// Returns a mapping taken and not used.
    fn put_back(&self, map: MmapMut) {
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(map);
    }

    /// The first `len` bytes of `map` as a chunk that returns `map` here when dropped.
    fn chunk(&self, map: MmapMut, len: usize) -> Bytes {
        Bytes::from_owner(MappedChunk {
            map: Some(map),
            len,
            home: Arc::downgrade(&self.free),
        })
    }
}

/// A chunk read into a mapping of [`ReadBuffers`].
struct MappedChunk {
    map: Option<MmapMut>,
    len: usize,
    /// The response's free list; gone once the response ended (then the mapping is unmapped).
    home: Weak<Mutex<Vec<MmapMut>>>,
}

impl AsRef<[u8]> for MappedChunk {
    fn as_ref(&self) -> &[u8] {
        self.map.as_ref().map_or(&[], |map| &map[..self.len])
    }
}

impl Drop for MappedChunk {
    fn drop(&mut self) {
        if let (Some(map), Some(home)) = (self.map.take(), self.home.upgrade()) {
            home.lock().unwrap_or_else(|e| e.into_inner()).push(map);
        }
    }
}

impl Cursor {
    fn new(catalog: Arc<StoredCatalog>, pieces: Vec<Piece>) -> Cursor {
        Cursor {
            catalog,
            pieces,
            piece: 0,
            done_in_piece: 0,
            buffers: ReadBuffers::default(),
            cached_reads: true,
        }
    }

    /// Moves past finished pieces: the static bytes to send next, the file range to read next
    /// (consumed only once read), or `None` at the end.
    fn next_step(&mut self) -> Option<Step> {
        loop {
            let piece = self.pieces.get(self.piece)?;
            let (section, read_at, read_cached_at): (Section, ReadAt, ReadAt) = match piece {
                Piece::Static(b) => {
                    let b = b.clone();
                    self.piece += 1;
                    if b.is_empty() {
                        continue;
                    }
                    return Some(Step::Bytes(b));
                }
                Piece::Jsonl(s) => (
                    *s,
                    StoredCatalog::read_jsonl_at,
                    StoredCatalog::read_jsonl_cached_at,
                ),
                Piece::Gzip(s) => (
                    *s,
                    StoredCatalog::read_gzip_at,
                    StoredCatalog::read_gzip_cached_at,
                ),
            };
            if self.done_in_piece >= section.len {
                self.piece += 1;
                self.done_in_piece = 0;
                continue;
            }
            let len = usize::try_from(section.len - self.done_in_piece)
                .unwrap_or(CHUNK)
                .min(CHUNK);
            return Some(Step::File(FileRange {
                read_at,
                read_cached_at,
                offset: section.offset + self.done_in_piece,
                len,
            }));
        }
    }

    /// The next chunk (at most [`CHUNK`] bytes), or `None` at the end. Blocking.
    fn next_chunk(&mut self) -> Option<io::Result<Bytes>> {
        let range = match self.next_step()? {
            Step::Bytes(b) => return Some(Ok(b)),
            Step::File(range) => range,
        };
        self.done_in_piece += range.len as u64;
        let mut map = match self.buffers.take() {
            Ok(map) => map,
            Err(e) => return Some(Err(e)),
        };
        let catalog = &self.catalog;
        let read = read_exact_at(&mut map[..range.len], range.offset, |buf, off| {
            (range.read_at)(catalog, buf, off)
        });
        Some(read.map(|()| self.buffers.chunk(map, range.len)))
    }

    /// [`Cursor::next_chunk`] without waiting for the disk: static bytes, or a chunk the page
    /// cache holds in full. Anything else (part of it on disk, a read error, a filesystem without
    /// page-cache-only reads) is [`Cached::WouldWait`], left for [`Cursor::next_chunk`] to read
    /// and report.
    fn next_chunk_cached(&mut self) -> Cached {
        let range = match self.next_step() {
            None => return Cached::Ready(None),
            Some(Step::Bytes(b)) => return Cached::Ready(Some(Ok(b))),
            Some(Step::File(range)) => range,
        };
        if !self.cached_reads {
            return Cached::WouldWait;
        }
        let mut map = match self.buffers.take() {
            Ok(map) => map,
            Err(e) => return Cached::Ready(Some(Err(e))),
        };
        match (range.read_cached_at)(&self.catalog, &mut map[..range.len], range.offset) {
            Ok(n) if n == range.len => {
                self.done_in_piece += range.len as u64;
                Cached::Ready(Some(Ok(self.buffers.chunk(map, range.len))))
            }
            result => {
                if result.is_err_and(|e| e.kind() == io::ErrorKind::Unsupported) {
                    self.cached_reads = false;
                }
                self.buffers.put_back(map);
                Cached::WouldWait
            }
        }
    }
}

/// A gzip body: a `/metas` answer of at most [`CompressedAnswers::MAX_INPUT`] bytes is
/// compressed once per stored content and then read from where it is kept (`answers.gz`);
/// anything else is compressed while streaming.
fn compressed(catalog: Arc<StoredCatalog>, pieces: Vec<Piece>) -> Body {
    let sections: Option<Vec<Section>> = pieces
        .iter()
        .map(|p| match p {
            Piece::Jsonl(s) => Some(*s),
            Piece::Static(_) | Piece::Gzip(_) => None,
        })
        .collect();
    let Some(sections) = sections.filter(|_| total_len(&pieces) <= CompressedAnswers::MAX_INPUT)
    else {
        return compressed_stream(catalog, pieces);
    };
    // Sent as a stream either way, so a kept answer goes out with the same framing (chunked, no
    // Content-Length) as one compressed while streaming.
    if let Some(kept) = catalog.compressed().get(&sections) {
        return Body::from_stream(kept_answer(catalog, kept));
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let computing = catalog.clone();
    tokio::task::spawn_blocking(move || {
        let answer = computing.compressed().get_or_compute(&sections, || {
            let mut cursor = Cursor::new(computing.clone(), pieces.clone());
            let mut out = BytesMut::new();
            compress_into(&mut cursor, |bytes| {
                out.extend_from_slice(&bytes);
                Ok(())
            })?;
            Ok(out.freeze())
        });
        let _ = tx.send(answer);
    });
    let body = futures::stream::once(async move {
        rx.await
            .unwrap_or_else(|_| Err(io::Error::other("the compressing task ended")))
    })
    .flat_map(move |answer| match answer {
        Ok(Answer::Fresh(bytes)) => futures::stream::once(async move { Ok(bytes) }).boxed(),
        Ok(Answer::Kept(at)) => kept_answer(catalog.clone(), at),
        Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
    });
    Body::from_stream(body)
}

/// The chunks of a kept compressed answer: one read into one buffer, from the page cache on
/// this thread when it holds the answer, else on the blocking pool.
///
/// Not through [`on_demand`]'s turns and chunk mappings: a kept answer is bounded
/// ([`CompressedAnswers::MAX_INPUT`] before compression) and asked by many clients at once
/// (many installs of one package). Read in 256 KiB turns, the largest package's answer (385 KB)
/// was served at 1.9-2.4 k requests/s, against 4.2-4.5 k from memory before it was kept in a
/// file (`make bench-upstream`, P3 `metas_large_gz`).
fn kept_answer(
    catalog: Arc<StoredCatalog>,
    at: Section,
) -> futures::stream::BoxStream<'static, io::Result<Bytes>> {
    futures::stream::once(async move {
        let len = usize::try_from(at.len).map_err(io::Error::other)?;
        let mut buf = vec![0u8; len];
        if matches!(catalog.read_answers_cached_at(&mut buf, at.offset), Ok(n) if n == len) {
            return Ok(Bytes::from(buf));
        }
        tokio::task::spawn_blocking(move || {
            read_exact_at(&mut buf, at.offset, |b, off| {
                catalog.read_answers_at(b, off)
            })?;
            Ok(Bytes::from(buf))
        })
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)))
    })
    .boxed()
}

/// Compresses on a blocking thread that feeds the connection through a small channel: deflate is
/// CPU-bound, so it keeps one thread busy per response either way.
fn compressed_stream(catalog: Arc<StoredCatalog>, pieces: Vec<Piece>) -> Body {
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(IN_FLIGHT);
    tokio::task::spawn_blocking(move || {
        let mut cursor = Cursor::new(catalog, pieces);
        let send = |item| {
            tx.blocking_send(item)
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "client went away"))
        };
        if let Err(e) = compress_into(&mut cursor, |bytes| send(Ok(bytes))) {
            // The client may be gone already; nothing else to tell.
            let _ = send(Err(e));
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Body::from_stream(stream)
}

/// Gzips everything `cursor` yields, handing out compressed output about [`CHUNK`] at a time.
fn compress_into(
    cursor: &mut Cursor,
    mut emit: impl FnMut(Bytes) -> io::Result<()>,
) -> io::Result<()> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::new(5));
    while let Some(chunk) = cursor.next_chunk() {
        gz.write_all(&chunk?)?;
        if gz.get_ref().len() >= CHUNK {
            emit(Bytes::from(std::mem::take(gz.get_mut())))?;
        }
    }
    let rest = gz.finish()?;
    if !rest.is_empty() {
        emit(Bytes::from(rest))?;
    }
    Ok(())
}

/// Fills `buf` from `offset`; a short file means the index and the content disagree.
fn read_exact_at(
    buf: &mut [u8],
    offset: u64,
    read_at: impl Fn(&mut [u8], u64) -> io::Result<usize>,
) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = read_at(&mut buf[filled..], offset + filled as u64)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "stored catalog is shorter than its index",
            ));
        }
        filled += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Storage;

    /// A stored catalog whose `catalog.jsonl` is `lines` blobs of 1 KiB each (plus newlines).
    fn stored(lines: usize) -> (tempfile::TempDir, Arc<StoredCatalog>, Vec<u8>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = Storage::open(dir.path()).expect("storage");
        let mut w = storage
            .begin("c", "sha256:1")
            .expect("begin")
            .expect("writer");
        let mut expected = Vec::new();
        for i in 0..lines {
            let blob = format!(r#"{{"name":"b{i:06}","pad":"{}"}}"#, "x".repeat(1000));
            w.push("olm.bundle", "p", &format!("b{i}"), blob.as_bytes())
                .expect("push");
            expected.extend_from_slice(blob.as_bytes());
            expected.push(b'\n');
        }
        (dir, w.commit().expect("commit"), expected)
    }

    fn drain(cursor: &mut Cursor) -> (Vec<u8>, Vec<usize>, Option<io::Error>) {
        let (mut out, mut sizes) = (Vec::new(), Vec::new());
        while let Some(chunk) = cursor.next_chunk() {
            match chunk {
                Ok(b) => {
                    sizes.push(b.len());
                    out.extend_from_slice(&b);
                }
                Err(e) => return (out, sizes, Some(e)),
            }
        }
        (out, sizes, None)
    }

    #[test]
    fn the_cursor_yields_every_piece_in_order_in_bounded_chunks() {
        let (_dir, catalog, jsonl) = stored(600); // about 600 KiB: three chunks
        let len = catalog.len();
        let mut cursor = Cursor::new(
            catalog,
            vec![
                Piece::Static(Bytes::from_static(b"--head--")),
                Piece::Jsonl(Section { offset: 0, len }),
                Piece::Static(Bytes::new()),
                Piece::Jsonl(Section { offset: 5, len: 10 }),
                Piece::Static(Bytes::from_static(b"--tail--")),
            ],
        );
        let (out, sizes, err) = drain(&mut cursor);
        assert!(err.is_none(), "{err:?}");
        let mut expected = b"--head--".to_vec();
        expected.extend_from_slice(&jsonl);
        expected.extend_from_slice(&jsonl[5..15]);
        expected.extend_from_slice(b"--tail--");
        assert_eq!(out, expected);
        assert!(sizes.iter().all(|&n| n > 0 && n <= CHUNK), "{sizes:?}");
        assert_eq!(sizes.len(), 1 + jsonl.len().div_ceil(CHUNK) + 2);
        assert!(cursor.next_chunk().is_none(), "the cursor stays at the end");
    }

    /// Drains `cursor` as the streaming body does: page-cache reads, and a blocking read for
    /// each chunk they leave. Returns the bytes, and how many chunks each way gave.
    fn drain_cached_first(cursor: &mut Cursor) -> (Vec<u8>, usize, usize) {
        let (mut out, mut cached, mut blocking) = (Vec::new(), 0, 0);
        loop {
            let chunk = match cursor.next_chunk_cached() {
                Cached::Ready(chunk) => {
                    cached += 1;
                    chunk
                }
                Cached::WouldWait => {
                    blocking += 1;
                    cursor.next_chunk()
                }
            };
            match chunk {
                Some(chunk) => out.extend_from_slice(&chunk.expect("chunk")),
                None => return (out, cached - 1, blocking),
            }
        }
    }

    #[test]
    fn page_cache_reads_and_blocking_reads_interleave_into_the_same_bytes() {
        let (_dir, catalog, jsonl) = stored(1200); // about 1.2 MiB: five chunks
        let len = catalog.len();
        let pieces = vec![
            Piece::Static(Bytes::from_static(b"--head--")),
            Piece::Jsonl(Section { offset: 0, len }),
            Piece::Jsonl(Section { offset: 5, len: 10 }),
        ];
        let mut expected = b"--head--".to_vec();
        expected.extend_from_slice(&jsonl);
        expected.extend_from_slice(&jsonl[5..15]);

        // Just written, so in the page cache: every chunk is read without waiting where the
        // filesystem offers page-cache-only reads.
        let mut cursor = Cursor::new(catalog.clone(), pieces.clone());
        let (out, cached, blocking) = drain_cached_first(&mut cursor);
        assert_eq!(out, expected);
        assert_eq!(cached + blocking, 1 + jsonl.len().div_ceil(CHUNK) + 1);
        if cursor.cached_reads {
            assert_eq!(
                blocking, 0,
                "a just-written file is read from the page cache"
            );
        }

        // Without them, every file chunk goes to the blocking read, and nothing is skipped.
        let mut cursor = Cursor::new(catalog, pieces);
        cursor.cached_reads = false;
        let (out, cached, blocking) = drain_cached_first(&mut cursor);
        assert_eq!(out, expected);
        assert_eq!((cached, blocking), (1, jsonl.len().div_ceil(CHUNK) + 1));
    }

    /// A large body streams with the exact bytes whether it takes read turns or not, and many at
    /// once, paced both ways, all finish (no turn is kept).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streaming_bodies_take_turns_and_carry_the_exact_bytes() {
        let (_dir, catalog, jsonl) = stored(1200);
        let len = catalog.len();
        let downloads = (0..16).map(|n| {
            let pacing = if n % 2 == 0 {
                Pacing::Turns
            } else {
                Pacing::Free
            };
            let body = stream(
                catalog.clone(),
                vec![Piece::Jsonl(Section { offset: 0, len })],
                false,
                pacing,
            );
            tokio::spawn(axum::body::to_bytes(body, usize::MAX))
        });
        for download in futures::future::join_all(downloads).await {
            assert_eq!(download.expect("task").expect("body"), jsonl);
        }
    }

    #[test]
    fn compressed_output_inflates_to_the_pieces() {
        let (_dir, catalog, jsonl) = stored(600);
        let len = catalog.len();
        let mut cursor = Cursor::new(
            catalog,
            vec![
                Piece::Static(Bytes::from_static(b"head;")),
                Piece::Jsonl(Section { offset: 0, len }),
            ],
        );
        let mut gz = Vec::new();
        compress_into(&mut cursor, |b| {
            gz.extend_from_slice(&b);
            Ok(())
        })
        .expect("compress");
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain)
            .expect("valid gzip");
        let mut expected = b"head;".to_vec();
        expected.extend_from_slice(&jsonl);
        assert_eq!(plain, expected);
    }

    /// A gzip `/metas` answer is compressed once per stored content: the second request is
    /// served the bytes kept in `answers.gz`, both inflate to the selected blobs, and an answer
    /// with a literal piece (an error prefix) is streamed, not kept.
    #[tokio::test]
    async fn compressed_answers_are_kept_per_content_and_inflate_to_the_pieces() {
        let (_dir, catalog, jsonl) = stored(600);
        let sections = vec![
            Section {
                offset: 0,
                len: 3003,
            },
            Section {
                offset: 10010,
                len: 50050,
            },
        ];
        let pieces: Vec<Piece> = sections.iter().copied().map(Piece::Jsonl).collect();
        let mut expected = jsonl[..3003].to_vec();
        expected.extend_from_slice(&jsonl[10010..60060]);
        let inflate = |gz: &[u8]| {
            let mut plain = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz), &mut plain)
                .expect("valid gzip");
            plain
        };
        let collect = |body: Body| axum::body::to_bytes(body, usize::MAX);

        assert!(catalog.compressed().is_empty());
        let first = collect(stream(catalog.clone(), pieces.clone(), true, Pacing::Turns))
            .await
            .expect("first body");
        assert_eq!(inflate(&first), expected);
        assert_eq!(catalog.compressed().len(), 1);
        let kept = catalog.compressed().get(&sections).expect("kept");
        let mut in_file = vec![0; kept.len as usize];
        catalog
            .read_answers_at(&mut in_file, kept.offset)
            .expect("read answers.gz");
        assert_eq!(in_file, first);
        let second = collect(stream(catalog.clone(), pieces, true, Pacing::Turns))
            .await
            .expect("second body");
        assert_eq!(second, first);

        let mut with_prefix = vec![Piece::Static(Bytes::from_static(b"err\n"))];
        with_prefix.push(Piece::Jsonl(sections[0]));
        let body = collect(stream(catalog.clone(), with_prefix, true, Pacing::Turns))
            .await
            .expect("prefixed body");
        assert_eq!(inflate(&body)[..4], b"err\n"[..]);
        assert_eq!(
            catalog.compressed().len(),
            1,
            "a prefixed answer is not kept"
        );
    }

    /// A kept answer larger than a read chunk is read from `answers.gz` whole.
    #[tokio::test]
    async fn a_large_kept_answer_is_read_from_the_answers_file() {
        let (_dir, catalog, _) = stored(10);
        let sections = [Section { offset: 0, len: 1 }];
        let bytes: Bytes = (0..CHUNK as u32 + 70_000)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let fresh = catalog
            .compressed()
            .get_or_compute(&sections, || Ok(bytes.clone()))
            .expect("kept");
        assert_eq!(fresh, Answer::Fresh(bytes.clone()));
        let at = catalog.compressed().get(&sections).expect("kept");
        assert!(at.len > CHUNK as u64);
        let body = Body::from_stream(kept_answer(catalog.clone(), at));
        let streamed = axum::body::to_bytes(body, usize::MAX).await.expect("body");
        assert_eq!(streamed, bytes);
    }

    /// Small bodies are read inline and large ones on demand; both give the same bytes, and a
    /// section the file cannot satisfy ends either body with an error rather than short data.
    #[tokio::test]
    async fn inline_and_on_demand_bodies_agree_and_both_fail_on_a_short_file() {
        let (_dir, catalog, jsonl) = stored(600);
        let len = catalog.len();
        let collect = |body: Body| axum::body::to_bytes(body, usize::MAX);
        for pacing in [Pacing::Turns, Pacing::Free] {
            let body_of = |offset: u64, len: u64| {
                stream(
                    catalog.clone(),
                    vec![Piece::Jsonl(Section { offset, len })],
                    false,
                    pacing,
                )
            };
            let small = collect(body_of(100, INLINE_MAX)).await.expect("small body");
            assert_eq!(small[..], jsonl[100..100 + INLINE_MAX as usize]);
            let large = collect(body_of(0, len)).await.expect("large body");
            assert_eq!(large[..], jsonl[..], "{pacing:?}");

            assert!(collect(body_of(len - 10, 20)).await.is_err(), "inline");
            assert!(
                collect(body_of(len - 10, INLINE_MAX + 1)).await.is_err(),
                "on demand, {pacing:?}"
            );
        }
    }

    #[test]
    fn a_section_past_the_end_of_the_file_is_an_error() {
        let (_dir, catalog, _) = stored(2);
        let len = catalog.len();
        let mut cursor = Cursor::new(
            catalog,
            vec![Piece::Jsonl(Section {
                offset: len - 4,
                len: 100,
            })],
        );
        let (out, _, err) = drain(&mut cursor);
        assert!(out.is_empty());
        let err = err.expect("an error");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(err.to_string(), "stored catalog is shorter than its index");
    }

    #[test]
    fn adjacent_sections_are_merged() {
        let s = |offset, len| Section { offset, len };
        assert_eq!(
            coalesce(&[s(0, 10), s(10, 5), s(20, 5), s(25, 1)]),
            vec![s(0, 15), s(20, 6)]
        );
        assert_eq!(coalesce(&[]), Vec::<Section>::new());
    }
}
