//! Log set-up: structured logs on stderr, as text or JSON, filtered by `RUST_LOG` (default `info`).
//!
//! Input: the chosen [`LogFormat`]. Output: the process-wide tracing subscriber. Writes to stderr.
//!
//! | stderr | text | JSON |
//! |---|---|---|
//! | a terminal | levels and fields coloured (ANSI escape codes) | no escape codes |
//! | a file, a pipe, a container log | no escape codes | no escape codes |

use std::io::IsTerminal;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the subscriber. A second call (tests running a binary's `run` twice) keeps the first.
pub fn init(format: LogFormat) {
    init_with_level(format, "info");
}

/// [`init`] with the filter used when `RUST_LOG` is unset (klog's `-v` picks it).
pub fn init_with_level(format: LogFormat, level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let ansi = std::io::stderr().is_terminal();
    let _ = subscriber(format, filter, std::io::stderr, ansi).try_init();
}

/// The subscriber [`init`] installs, writing to `writer`; `ansi` colours text output (only
/// wanted when the writer is a terminal).
fn subscriber<W>(
    format: LogFormat,
    filter: tracing_subscriber::EnvFilter,
    writer: W,
    ansi: bool,
) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi);
    match format {
        LogFormat::Json => Box::new(builder.json().finish()),
        LogFormat::Text => Box::new(builder.finish()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer keeping everything written, as a file would.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("not poisoned").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Captured {
        type Writer = Captured;
        fn make_writer(&'w self) -> Captured {
            self.clone()
        }
    }

    /// What one warning with fields looks like in `format`.
    fn logged(format: LogFormat, ansi: bool) -> String {
        let out = Captured::default();
        let subscriber = subscriber(
            format,
            tracing_subscriber::EnvFilter::new("info"),
            out.clone(),
            ansi,
        );
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(
                extension = "ext",
                error = "failed to fetch",
                "reconcile failed"
            );
            tracing::error!(attempt = 2, "again");
        });
        let bytes = out.0.lock().expect("not poisoned").clone();
        String::from_utf8(bytes).expect("UTF-8")
    }

    #[test]
    fn logs_to_a_non_terminal_carry_no_ansi_escape_codes_in_either_format() {
        for format in [LogFormat::Text, LogFormat::Json] {
            let text = logged(format, false);
            assert!(text.contains("reconcile failed"), "{format:?}: {text}");
            assert!(text.contains("extension"), "{format:?}: {text}");
            assert!(!text.contains('\u{1b}'), "{format:?}: {text:?}");
        }
    }

    #[test]
    fn text_logs_to_a_terminal_are_coloured() {
        // The check above would notice escape codes: with colours on they are there.
        assert!(logged(LogFormat::Text, true).contains("\u{1b}["));
    }
}
