//! gzip answers to `/metas` queries of one stored content, kept in a file of its directory.
//!
//! Input: the byte ranges of `catalog.jsonl` an answer covers and a way to compress them.
//! Output: the compressed bytes (the first time) or where they are kept in `answers.gz` (every
//! later time). Touches the local filesystem only.
//!
//! Why: answering a `/metas` query with gzip costs deflate over the matching blobs on every
//! request (tens of milliseconds of CPU for the largest package), and a client that polls, or
//! many clients installing the same package, ask the same question again and again. The content
//! is immutable, so the compressed bytes are too: they are computed once, and concurrent first
//! requests for one answer wait for that one computation.
//!
//! Why a file and not memory: operator-controller asks every catalog for all its `olm.package`
//! blobs once per revision, and with base64 icons that answer is 4.3 MiB compressed for a large
//! catalog. Kept in memory, three such answers were 13 MiB of catalogd's steady RSS for
//! something asked once per revision. In a file they are served from the page cache like the
//! content itself, and the kernel reclaims them under pressure.
//!
//! `answers.gz` is the answers one after the other (each a complete gzip member), appended as
//! they are first computed; only this process's in-memory map says where each one is, so the
//! file starts empty whenever the content is opened. Bounded: answers of more than
//! [`CompressedAnswers::MAX_INPUT`] uncompressed bytes are not kept, and once the file holds
//! [`CompressedAnswers::BUDGET`] bytes further answers are computed per request. The file goes
//! away with the content directory.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;

use super::Section;

/// The file of kept answers in a content directory.
pub(super) const ANSWERS: &str = "answers.gz";

/// A compressed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Just computed (by this request).
    Fresh(Bytes),
    /// Kept in `answers.gz`, at this byte range ([`CompressedAnswers::read_at`]).
    Kept(Section),
}

/// What a kept slot holds once its computation finished: where the answer is in the file, or
/// `None` when it could not be kept (the file could not be written), so each request computes
/// its own.
type Slot = Arc<OnceLock<Option<Section>>>;

/// The kept answers of one stored content.
#[derive(Debug)]
pub struct CompressedAnswers {
    path: PathBuf,
    entries: Mutex<HashMap<Vec<Section>, Slot>>,
    /// `answers.gz`, created (empty) when the first answer is kept.
    file: OnceLock<File>,
    /// Bytes written to `file`: where the next answer goes.
    end: Mutex<u64>,
}

impl CompressedAnswers {
    /// Largest uncompressed answer kept (the largest package of community-operators is 4.3 MB).
    pub const MAX_INPUT: u64 = 16 * 1024 * 1024;
    /// Compressed bytes kept per stored content.
    pub const BUDGET: u64 = 32 * 1024 * 1024;

    /// The kept answers of the content directory `dir`: none yet.
    pub(super) fn new(dir: PathBuf) -> CompressedAnswers {
        CompressedAnswers {
            path: dir.join(ANSWERS),
            entries: Mutex::default(),
            file: OnceLock::new(),
            end: Mutex::new(0),
        }
    }

    /// The compressed answer for `sections`: where it is kept, or computed with `compute` (and
    /// kept, within the budget) when it is not. A request that finds the answer being computed
    /// by another waits for it. Blocking.
    pub fn get_or_compute(
        &self,
        sections: &[Section],
        compute: impl Fn() -> io::Result<Bytes>,
    ) -> io::Result<Answer> {
        let slot = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            match entries.get(sections) {
                Some(slot) => slot.clone(),
                None if self.written() >= Self::BUDGET => {
                    drop(entries);
                    return compute().map(Answer::Fresh);
                }
                None => {
                    let slot = Slot::default();
                    entries.insert(sections.to_vec(), slot.clone());
                    slot
                }
            }
        };
        let mut computed = None;
        let kept = *slot.get_or_init(|| match compute() {
            Ok(bytes) => {
                let kept = self.append(&bytes);
                computed = Some(Ok(bytes));
                kept
            }
            Err(e) => {
                computed = Some(Err(e));
                None
            }
        });
        match (computed, kept) {
            (Some(Err(e)), _) => {
                // Not kept: the next request tries again.
                self.entries
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(sections);
                Err(e)
            }
            (Some(Ok(bytes)), _) => Ok(Answer::Fresh(bytes)),
            (None, Some(section)) => Ok(Answer::Kept(section)),
            // Another request's computation failed or could not be kept: compute this one alone.
            (None, None) => compute().map(Answer::Fresh),
        }
    }

    /// Where the answer for `sections` is kept, without waiting for one being computed.
    pub fn get(&self, sections: &[Section]) -> Option<Section> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        *entries.get(sections)?.get()?
    }

    /// Reads kept answer bytes at `offset` of `answers.gz`.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file()?.read_at(buf, offset)
    }

    /// [`Self::read_at`] of only what the page cache holds.
    pub fn read_cached_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        super::read_cached_at(self.file()?, buf, offset)
    }

    /// How many answers are kept or being computed (for tests).
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn file(&self) -> io::Result<&File> {
        self.file
            .get()
            .ok_or_else(|| io::Error::other("no compressed answer is kept for this content"))
    }

    fn written(&self) -> u64 {
        *self.end.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends `bytes` to `answers.gz`; `None` when it cannot be written (the answer is then
    /// computed per request, as before it was kept).
    fn append(&self, bytes: &[u8]) -> Option<Section> {
        if bytes.is_empty() {
            return None;
        }
        let file = match self.file.get() {
            Some(file) => file,
            None => {
                let created = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&self.path);
                match created {
                    // Another request may have created it meanwhile; theirs is the one used.
                    Ok(file) => self.file.get_or_init(|| file),
                    Err(e) => {
                        tracing::warn!(path = %self.path.display(), error = %e, "cannot keep compressed answers");
                        return None;
                    }
                }
            }
        };
        let mut end = self.end.lock().unwrap_or_else(|p| p.into_inner());
        match file.write_all_at(bytes, *end) {
            Ok(()) => {
                let section = Section {
                    offset: *end,
                    len: bytes.len() as u64,
                };
                *end += section.len;
                Some(section)
            }
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot keep a compressed answer");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn sections(offset: u64) -> Vec<Section> {
        vec![Section { offset, len: 10 }]
    }

    fn read(answers: &CompressedAnswers, at: Section) -> Vec<u8> {
        let mut buf = vec![0; at.len as usize];
        answers.read_at(&mut buf, at.offset).expect("read");
        buf
    }

    #[test]
    fn an_answer_is_computed_once_then_read_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let answers = CompressedAnswers::new(dir.path().to_path_buf());
        let computed = AtomicUsize::new(0);
        let compute = |bytes: &'static [u8]| {
            let computed = &computed;
            move || {
                computed.fetch_add(1, Ordering::Relaxed);
                Ok(Bytes::from_static(bytes))
            }
        };
        assert!(
            !dir.path().join(ANSWERS).exists(),
            "created only when needed"
        );
        let first = answers.get_or_compute(&sections(0), compute(b"first"));
        assert_eq!(first.unwrap(), Answer::Fresh(Bytes::from_static(b"first")));
        let second = answers.get_or_compute(&sections(10), compute(b"second"));
        assert_eq!(
            second.unwrap(),
            Answer::Fresh(Bytes::from_static(b"second"))
        );

        let Answer::Kept(at) = answers
            .get_or_compute(&sections(10), compute(b"not again"))
            .unwrap()
        else {
            panic!("not kept")
        };
        assert_eq!(at, Section { offset: 5, len: 6 });
        assert_eq!(read(&answers, at), b"second");
        assert_eq!(
            answers.get(&sections(0)),
            Some(Section { offset: 0, len: 5 })
        );
        assert_eq!(computed.load(Ordering::Relaxed), 2);
        assert_eq!(
            std::fs::read(dir.path().join(ANSWERS)).unwrap(),
            b"firstsecond"
        );
    }

    #[test]
    fn a_failed_computation_is_not_kept_and_is_tried_again() {
        let dir = tempfile::tempdir().unwrap();
        let answers = CompressedAnswers::new(dir.path().to_path_buf());
        let failed = answers.get_or_compute(&sections(0), || Err(io::Error::other("boom")));
        assert_eq!(failed.unwrap_err().to_string(), "boom");
        assert!(answers.is_empty());
        let again = answers.get_or_compute(&sections(0), || Ok(Bytes::from_static(b"ok")));
        assert_eq!(again.unwrap(), Answer::Fresh(Bytes::from_static(b"ok")));
        assert_eq!(
            answers.get(&sections(0)),
            Some(Section { offset: 0, len: 2 })
        );
    }

    /// A directory that cannot hold the file (gone, read-only) costs the cache, not the answer.
    #[test]
    fn an_answer_that_cannot_be_written_is_computed_per_request() {
        let dir = tempfile::tempdir().unwrap();
        let answers = CompressedAnswers::new(dir.path().join("gone"));
        let compute = || Ok(Bytes::from_static(b"zz"));
        for _ in 0..2 {
            assert_eq!(
                answers.get_or_compute(&sections(0), compute).unwrap(),
                Answer::Fresh(Bytes::from_static(b"zz"))
            );
        }
        assert_eq!(answers.get(&sections(0)), None);
        assert!(answers.read_at(&mut [0; 2], 0).is_err());
    }

    #[test]
    fn past_the_budget_answers_are_computed_and_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let answers = CompressedAnswers::new(dir.path().to_path_buf());
        let big = Bytes::from(vec![7u8; CompressedAnswers::BUDGET as usize]);
        answers
            .get_or_compute(&sections(0), || Ok(big.clone()))
            .unwrap();
        let over = answers
            .get_or_compute(&sections(10), || Ok(Bytes::from_static(b"over")))
            .unwrap();
        assert_eq!(over, Answer::Fresh(Bytes::from_static(b"over")));
        assert_eq!(answers.len(), 1);
        assert!(answers.get(&sections(0)).is_some());
    }

    /// Concurrent first requests for one answer wait for one computation and all get it.
    #[test]
    fn concurrent_first_requests_share_one_computation() {
        let dir = tempfile::tempdir().unwrap();
        let answers = CompressedAnswers::new(dir.path().to_path_buf());
        let computed = AtomicUsize::new(0);
        let results: Vec<Answer> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        answers
                            .get_or_compute(&sections(0), || {
                                computed.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(std::time::Duration::from_millis(20));
                                Ok(Bytes::from_static(b"shared"))
                            })
                            .unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(computed.load(Ordering::Relaxed), 1);
        for answer in results {
            let bytes = match answer {
                Answer::Fresh(b) => b.to_vec(),
                Answer::Kept(at) => read(&answers, at),
            };
            assert_eq!(bytes, b"shared");
        }
    }
}
