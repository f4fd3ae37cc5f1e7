//! Streams stored catalog bytes into a response body without loading them into memory.
//!
//! Input: a [`StoredCatalog`] and the pieces to send. Output: an axum [`Body`]. Reads the local
//! filesystem on a blocking thread; no network IO of its own.

use std::io::{self, Write};
use std::sync::Arc;

use axum::body::Body;
use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use tokio::sync::mpsc;

use crate::storage::{Section, StoredCatalog};

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

/// A body streaming `pieces`, gzip-compressing on the fly when `compress` is set.
pub fn stream(catalog: Arc<StoredCatalog>, pieces: Vec<Piece>, compress: bool) -> Body {
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(IN_FLIGHT);
    tokio::task::spawn_blocking(move || {
        let mut sink = Sink {
            tx,
            gzip: compress.then(|| GzEncoder::new(Vec::new(), Compression::new(5))),
        };
        if let Err(e) = write_pieces(&catalog, &pieces, &mut sink).and_then(|()| sink.finish()) {
            // The client may be gone already; nothing else to tell.
            let _ = sink.tx.blocking_send(Err(e));
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Body::from_stream(stream)
}

struct Sink {
    tx: mpsc::Sender<io::Result<Bytes>>,
    gzip: Option<GzEncoder<Vec<u8>>>,
}

impl Sink {
    fn send(&mut self, bytes: Bytes) -> io::Result<()> {
        match self.gzip.as_mut() {
            None => self.emit(bytes),
            Some(gz) => {
                gz.write_all(&bytes)?;
                if gz.get_ref().len() >= CHUNK {
                    let out = std::mem::take(gz.get_mut());
                    self.emit(Bytes::from(out))?;
                }
                Ok(())
            }
        }
    }

    fn emit(&self, bytes: Bytes) -> io::Result<()> {
        self.tx
            .blocking_send(Ok(bytes))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "client went away"))
    }

    fn finish(&mut self) -> io::Result<()> {
        if let Some(gz) = self.gzip.take() {
            let rest = gz.finish()?;
            if !rest.is_empty() {
                self.emit(Bytes::from(rest))?;
            }
        }
        Ok(())
    }
}

fn write_pieces(catalog: &StoredCatalog, pieces: &[Piece], sink: &mut Sink) -> io::Result<()> {
    for piece in pieces {
        match piece {
            Piece::Static(b) => sink.send(b.clone())?,
            Piece::Jsonl(s) => copy_section(s, sink, |buf, off| catalog.read_jsonl_at(buf, off))?,
            Piece::Gzip(s) => copy_section(s, sink, |buf, off| catalog.read_gzip_at(buf, off))?,
        }
    }
    Ok(())
}

fn copy_section(
    section: &Section,
    sink: &mut Sink,
    read_at: impl Fn(&mut [u8], u64) -> io::Result<usize>,
) -> io::Result<()> {
    let mut offset = section.offset;
    let end = section.end();
    while offset < end {
        let want = usize::try_from(end - offset).unwrap_or(CHUNK).min(CHUNK);
        let mut buf = vec![0u8; want];
        let mut filled = 0;
        while filled < want {
            let n = read_at(&mut buf[filled..], offset + filled as u64)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stored catalog is shorter than its index",
                ));
            }
            filled += n;
        }
        offset += want as u64;
        sink.send(Bytes::from(buf))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
