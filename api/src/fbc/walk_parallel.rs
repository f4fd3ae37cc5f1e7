//! The catalog walk on several threads, with the sequential walk's output, order and errors.
//!
//! Input: a catalog root directory and a thread count. Output: the same [`Meta`]s as
//! [`walk_metas_dir`], in the same order, handed to a callback on the calling thread; the same
//! first error. Reads local files only; no network.
//!
//! Why: parsing and canonical encoding are nearly all of an ingest's CPU, and a catalog image holds
//! one file per package (333 in the derived community catalog), so files are the unit of work.
//! Workers take files in walk order and encode them; the caller consumes file after file, so
//! catalogd's `/all` stays byte-identical to the sequential walk's.
//!
//! Memory: each file's output goes through its own channel of [`CHUNK_BYTES`]-sized chunks with at
//! most [`WINDOW_BYTES`] of blobs waiting in it or being consumed, so a worker ahead of the caller waits instead of
//! buffering a whole file; at most `threads` files are open at once. The window counts bytes, not
//! chunks: a chunk holds at least one blob, and one bundle can be a megabyte, so a window of eight
//! chunks held up to eight such blobs.
//!
//! Errors: a file's error is reported when the caller reaches that file, after every object of the
//! files before it, exactly where the sequential walk would have stopped; a listing error (an
//! unreadable directory) after the files listed before it. The caller's own error stops the
//! workers: their channels close, and they take no further file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Condvar, Mutex};

use super::walk::{
    Decode, Meta, NullDocuments, RawObject, WalkError, catalog_files, read_catalog_file,
    walk_metas_dir,
};

/// Blob bytes a worker collects before handing a chunk over.
pub const CHUNK_BYTES: usize = 128 << 10;

/// Blob bytes of one file waiting for the caller. The median file of the derived community
/// catalog is 88 KB, the largest 4.3 MB. A worker that is a file ahead waits once its window is
/// full, so a smaller window loses the second core behind large files: on that catalog (two cores,
/// catalogd's allocator settings), a 256 KiB window kept only a third of the gain, 1 MiB kept all
/// of it, 2 MiB added memory and no speed (docs/performance/issue-27.md, eighth step).
pub const WINDOW_BYTES: usize = 1 << 20;

/// What a worker sends about one file.
enum Message {
    /// Objects, and the blob bytes they hold in the window.
    Metas(Vec<Meta>, usize),
    /// The file is done: every object was sent, or this error stopped it.
    End(Result<(), WalkError>),
}

/// The blob bytes one file has waiting for the caller, at most [`WINDOW_BYTES`] (or one chunk,
/// however large).
#[derive(Default)]
struct Window {
    state: Mutex<WindowState>,
    changed: Condvar,
}

#[derive(Default)]
struct WindowState {
    bytes: usize,
    /// The caller has stopped: nothing will be released any more.
    closed: bool,
}

impl Window {
    fn lock(&self) -> std::sync::MutexGuard<'_, WindowState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `bytes` more fit, or the window is empty; false once the caller has stopped.
    fn reserve(&self, bytes: usize) -> bool {
        let mut state = self.lock();
        while !state.closed && state.bytes > 0 && state.bytes + bytes > WINDOW_BYTES {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.closed {
            return false;
        }
        state.bytes += bytes;
        true
    }

    /// Waits while the window is full, so a worker does not read and encode its next object
    /// (up to a megabyte of text and as much blob) beside a full window; false once the caller
    /// has stopped.
    fn wait_for_room(&self) -> bool {
        let mut state = self.lock();
        while !state.closed && state.bytes >= WINDOW_BYTES {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        !state.closed
    }

    /// The caller has taken `bytes` out.
    fn release(&self, bytes: usize) {
        let mut state = self.lock();
        state.bytes = state.bytes.saturating_sub(bytes);
        self.changed.notify_all();
    }

    /// The caller has stopped: wakes a waiting worker for good.
    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }
}

/// One file's way to the caller.
struct FileChannel {
    /// Taken by the worker that encodes the file.
    sender: Mutex<Option<Sender<Message>>>,
    window: Window,
}

/// The file's channel closed: the caller has stopped.
#[derive(Debug, thiserror::Error)]
#[error("the walk stopped")]
struct Stopped;

/// Streams every object under `root` as [`walk_metas_dir`] does, encoding files on up to `threads`
/// threads. One thread, or a `root` that is a file, is the sequential walk.
pub fn walk_metas_dir_parallel(
    root: &Path,
    threads: usize,
    mut f: impl FnMut(Meta) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    if threads <= 1 || !root.is_dir() {
        return walk_metas_dir(root, f);
    }
    let mut files: Vec<PathBuf> = Vec::new();
    // The sequential walk would have read these files before meeting the listing error.
    let listed = catalog_files::<WalkError>(root, &mut |path: &Path| {
        files.push(path.to_path_buf());
        Ok(())
    });
    walk_listed_parallel(
        &files,
        threads,
        &|path: &PathBuf, cb: &mut dyn FnMut(RawObject) -> Result<(), WalkError>| {
            read_catalog_file(path, NullDocuments::Skip, Decode::BlobsOnly, cb)
        },
        &|path: &PathBuf| path.display().to_string(),
        listed,
        &mut f,
    )
}

/// Reads one listed file's objects (in blobs-only mode), handing each to the callback.
pub(crate) type ReadFile<'a, T> = dyn Fn(&T, &mut dyn FnMut(RawObject) -> Result<(), WalkError>) -> Result<(), WalkError>
    + Sync
    + 'a;

/// The parallel walk over files already listed in walk order: `read` streams one file's objects,
/// `name` names it in errors, and `listed` is the listing's own outcome, reported after every
/// listed file (where the sequential walk would have met it).
pub(crate) fn walk_listed_parallel<T: Sync>(
    files: &[T],
    threads: usize,
    read: &ReadFile<'_, T>,
    name: &(dyn Fn(&T) -> String + Sync),
    listed: Result<(), WalkError>,
    f: &mut dyn FnMut(Meta) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    let (channels, receivers): (Vec<_>, Vec<_>) = files
        .iter()
        .map(|_| {
            let (tx, rx) = channel::<Message>();
            let channel = FileChannel {
                sender: Mutex::new(Some(tx)),
                window: Window::default(),
            };
            (channel, rx)
        })
        .unzip();
    let next_file = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let threads = threads.min(files.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| encode_files(files, read, &channels, &next_file, &stopped));
        }
        let consumed = consume_in_order(files, name, &channels, receivers, f);
        // A worker waiting for room in a window returns; the others see `stopped` before their
        // next file, or find their channel closed.
        stopped.store(true, Ordering::Relaxed);
        for channel in &channels {
            channel.window.close();
        }
        consumed
    })?;
    listed
}

/// A worker: takes the next file in walk order until none is left or the caller has stopped.
fn encode_files<T>(
    files: &[T],
    read: &ReadFile<'_, T>,
    channels: &[FileChannel],
    next_file: &AtomicUsize,
    stopped: &AtomicBool,
) {
    loop {
        if stopped.load(Ordering::Relaxed) {
            return;
        }
        let i = next_file.fetch_add(1, Ordering::Relaxed);
        let Some(file) = files.get(i) else { return };
        // Taken, not borrowed: should this thread panic, the sender drops with it and the caller
        // sees the channel close instead of waiting for ever.
        let Some(channel) = channels.get(i) else {
            return;
        };
        let Some(tx) = channel
            .sender
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let ended = match encode_file(file, read, &tx, &channel.window) {
            Err(WalkError::Callback(e)) if e.is::<Stopped>() => return,
            ended => ended,
        };
        if tx.send(Message::End(ended)).is_err() {
            return;
        }
    }
}

/// Sends one file's objects in chunks; the error that stopped it, if any.
fn encode_file<T>(
    file: &T,
    read: &ReadFile<'_, T>,
    tx: &Sender<Message>,
    window: &Window,
) -> Result<(), WalkError> {
    let mut chunk = Vec::new();
    let mut chunk_bytes = 0;
    let send = |chunk: Vec<Meta>, bytes: usize| {
        if !window.reserve(bytes) {
            return Err(WalkError::callback(Stopped));
        }
        tx.send(Message::Metas(chunk, bytes))
            .map_err(|_| WalkError::callback(Stopped))
    };
    read(file, &mut |raw: RawObject| {
        let meta = raw.into_meta();
        chunk_bytes += meta.blob.len();
        chunk.push(meta);
        if chunk_bytes >= CHUNK_BYTES {
            send(std::mem::take(&mut chunk), std::mem::take(&mut chunk_bytes))?;
            // Before the next object is read and encoded.
            if !window.wait_for_room() {
                return Err(WalkError::callback(Stopped));
            }
        }
        Ok::<(), WalkError>(())
    })?;
    if !chunk.is_empty() {
        send(chunk, chunk_bytes)?;
    }
    Ok(())
}

/// The caller's side: every file's objects, file after file; the first error in walk order.
fn consume_in_order<T>(
    files: &[T],
    name: &(dyn Fn(&T) -> String + Sync),
    channels: &[FileChannel],
    receivers: Vec<Receiver<Message>>,
    f: &mut dyn FnMut(Meta) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    // Returning drops the receivers still here, which wakes any worker waiting to send.
    for ((file, channel), rx) in files.iter().zip(channels).zip(receivers) {
        loop {
            match rx.recv() {
                Ok(Message::Metas(metas, bytes)) => {
                    // Room is made once the objects are consumed, so the window also bounds what
                    // the caller holds: released before, a worker could add a window's worth while
                    // the caller still held a megabyte blob.
                    metas.into_iter().try_for_each(&mut *f)?;
                    channel.window.release(bytes);
                }
                Ok(Message::End(ended)) => {
                    ended?;
                    break;
                }
                Err(_) => {
                    return Err(WalkError::Io {
                        path: name(file),
                        source: std::io::Error::other("the thread reading this file stopped"),
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (schema, package, name, blob, origin) of one object.
    type Walked = (String, String, String, Vec<u8>, String);

    /// Every object, or the error's text; 0 threads is the sequential walk.
    fn walked(root: &Path, threads: usize) -> Result<Vec<Walked>, String> {
        let mut out = Vec::new();
        let walk = |f: &mut dyn FnMut(Meta) -> Result<(), WalkError>| {
            if threads == 0 {
                walk_metas_dir(root, f)
            } else {
                walk_metas_dir_parallel(root, threads, f)
            }
        };
        walk(&mut |m: Meta| {
            out.push((m.schema, m.package, m.name, m.blob, m.origin.to_string()));
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        Ok(out)
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// Packages in nested directories, JSON and YAML, an ignored file, and enough objects per file
    /// to fill several chunks.
    fn mixed_catalog() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for p in 0..12 {
            let mut json = format!("{{\"schema\":\"olm.package\",\"name\":\"p{p}\"}}\n");
            for b in 0..(p * 40) {
                json.push_str(&format!(
                    "{{\"schema\":\"olm.bundle\",\"package\":\"p{p}\",\"name\":\"b{b}\",\"z\":\"{}\",\"a\":1}}\n",
                    "x".repeat(4000)
                ));
            }
            write(root, &format!("pkgs/p{p:02}/catalog.json"), &json);
        }
        write(
            root,
            "a.yaml",
            "schema: olm.package\nname: why\n---\nschema: olm.channel\npackage: why\nname: stable\n",
        );
        write(root, "pkgs/p03/notes.md", "# only a heading\n");
        write(root, "pkgs/.indexignore", "p05\n");
        dir
    }

    #[test]
    fn a_parallel_walk_gives_the_sequential_walks_objects_in_its_order() {
        let dir = mixed_catalog();
        let sequential = walked(dir.path(), 0).expect("sequential");
        assert!(sequential.len() > 1_000, "{}", sequential.len());
        assert!(!sequential.iter().any(|m| m.1 == "p5"), "ignored");
        for threads in [1, 2, 3, 16] {
            assert!(walked(dir.path(), threads).expect("parallel") == sequential);
        }
    }

    #[test]
    fn blobs_larger_than_the_window_pass_one_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        for p in 0..3 {
            let mut json = String::new();
            for b in 0..3 {
                json.push_str(&format!(
                    "{{\"schema\":\"olm.bundle\",\"package\":\"p{p}\",\"name\":\"b{b}\",\"z\":\"{}\"}}\n",
                    "x".repeat(WINDOW_BYTES + 1)
                ));
            }
            write(dir.path(), &format!("p{p}/catalog.json"), &json);
        }
        let sequential = walked(dir.path(), 0).expect("sequential");
        assert_eq!(sequential.len(), 9);
        assert!(walked(dir.path(), 2).expect("parallel") == sequential);
    }

    #[test]
    fn a_window_holds_a_worker_until_the_caller_makes_room_or_stops() {
        let window = Window::default();
        // Empty, it takes a chunk of any size; then nothing more fits until room is made.
        assert!(window.reserve(WINDOW_BYTES * 3));
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| window.reserve(1));
            // Had it not waited, its byte would be counted by now.
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert_eq!(window.lock().bytes, WINDOW_BYTES * 3);
            window.release(WINDOW_BYTES * 3);
            assert!(waiting.join().expect("worker"));
        });
        assert_eq!(window.lock().bytes, 1);
        assert!(window.wait_for_room(), "room for more");
        assert!(window.reserve(WINDOW_BYTES - 1));
        // Full: the worker reads nothing more until the caller has consumed some of it.
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| window.wait_for_room());
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!waiting.is_finished(), "a full window holds the worker");
            window.release(1);
            assert!(waiting.join().expect("worker"));
        });
        assert!(window.reserve(1));
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| window.reserve(2));
            let waiting_for_room = scope.spawn(|| window.wait_for_room());
            window.close();
            assert!(
                !waiting.join().expect("worker"),
                "a closed window takes nothing"
            );
            assert!(!waiting_for_room.join().expect("worker"));
        });
    }

    #[test]
    fn the_first_broken_file_in_walk_order_is_the_error_reported() {
        let dir = mixed_catalog();
        write(dir.path(), "pkgs/p07/catalog.json", "{\"schema\":");
        write(dir.path(), "pkgs/p09/catalog.json", "{\"schema\":1}");
        write(dir.path(), "pkgs/p11/catalog.json", "{");
        let sequential = walked(dir.path(), 0).expect_err("broken");
        assert!(sequential.contains("p07"), "{sequential}");
        for threads in [2, 3] {
            assert_eq!(walked(dir.path(), threads).expect_err("broken"), sequential);
        }
    }

    #[test]
    fn the_callers_error_stops_the_walk_with_nothing_after_it() {
        let dir = mixed_catalog();
        let mut seen = 0;
        let err = walk_metas_dir_parallel(dir.path(), 2, |m| {
            seen += 1;
            if m.name == "b3" && m.package == "p4" {
                return Err(WalkError::callback("enough"));
            }
            Ok(())
        })
        .expect_err("stopped");
        assert_eq!(err.to_string(), "enough");
        let before = walked(dir.path(), 0)
            .expect("sequential")
            .iter()
            .position(|m| m.2 == "b3" && m.1 == "p4")
            .expect("there");
        assert_eq!(seen, before + 1);
    }

    #[test]
    #[cfg(unix)]
    fn a_fifo_is_refused_in_walk_order_without_being_opened() {
        let dir = mixed_catalog();
        let fifo = dir.path().join("pkgs/p08/catalog.json");
        std::fs::remove_file(&fifo).expect("rm");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .expect("mkfifo");
        let sequential = walked(dir.path(), 0).expect_err("fifo");
        assert!(sequential.contains("FIFO"), "{sequential}");
        assert_eq!(walked(dir.path(), 2).expect_err("fifo"), sequential);
    }

    #[test]
    fn the_real_catalogs_walk_to_the_same_bytes_on_two_threads() {
        for rel in [
            "catalogs/community-operators-prod-derived/catalog",
            "catalogs/community-operators-prod/catalogs",
            "catalogs/certified-operators/catalogs",
        ] {
            let root = olm_testdata::path(rel);
            let sequential = walked(&root, 0).unwrap_or_else(|e| panic!("{rel}: {e}"));
            assert!(sequential.len() > 500, "{rel}");
            let parallel = walked(&root, 2).unwrap_or_else(|e| panic!("{rel}: {e}"));
            assert!(parallel == sequential, "{rel}");
        }
    }
}
