//! The `Progressing` message for a refused CRD upgrade, within the condition message limit.
//!
//! Input: the bundle name and version, and the verdicts of the bundle's CRDs. Output: the
//! condition message. No IO.
//!
//! Shape (upstream's wrapping, then a summary line, then upstream's text):
//!
//! ```text
//! error for resolved bundle "<b>" with version "<v>": <N> CRD(s), <M> violation(s)
//! validating upgrade for CRD "<crd1>": <entry>
//! <entry>
//! validating upgrade for CRD "<crd2>": <entry>
//! ```
//!
//! - Only blocking entries appear (allowed false positives are not refusals). Entries keep the
//!   verdict's sorted order; CRDs keep the bundle's order, each one's text joined with `\n` as
//!   upstream's `errors.Join` does.
//! - The summary line counts CRDs with at least one blocking entry and all their blocking
//!   entries; it comes first so that it survives any truncation.
//! - Truncation: when the message would exceed [`MAX_CONDITION_MESSAGE_BYTES`] (the API's
//!   limit, and upstream's), whole entries are dropped from the end and a last line
//!   `... <K> more violation(s) not shown` says how many; a line is never cut in the middle (so no
//!   UTF-8 sequence is split). Upstream instead cuts the byte string and appends
//!   `\n\n... [message truncated]`.

use super::UpgradeVerdict;
use super::gofmt::quote;

/// `metav1.Condition.message` is limited to 32768 bytes.
pub const MAX_CONDITION_MESSAGE_BYTES: usize = 32768;

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `<N> CRD(s), <M> violation(s)` for the blocking entries of `verdicts`.
pub fn summary_line(verdicts: &[UpgradeVerdict]) -> String {
    let crds = verdicts.iter().filter(|v| !v.is_safe()).count();
    let violations: usize = verdicts.iter().map(|v| v.blocking().count()).sum();
    format!(
        "{}, {}",
        plural(crds, "CRD"),
        plural(violations, "violation")
    )
}

/// The `Progressing` message for the refused CRDs among `verdicts`, or `None` when none refuses.
pub fn compose_progressing_message(
    bundle: &str,
    version: &str,
    verdicts: &[UpgradeVerdict],
) -> Option<String> {
    compose_with_limit(bundle, version, verdicts, MAX_CONDITION_MESSAGE_BYTES)
}

/// [`compose_progressing_message`] with an explicit byte limit (for tests).
pub fn compose_with_limit(
    bundle: &str,
    version: &str,
    verdicts: &[UpgradeVerdict],
    limit: usize,
) -> Option<String> {
    let refused: Vec<&UpgradeVerdict> = verdicts.iter().filter(|v| !v.is_safe()).collect();
    if refused.is_empty() {
        return None;
    }
    let mut out = format!(
        "error for resolved bundle {} with version {}: {}",
        quote(bundle),
        quote(version),
        summary_line(verdicts)
    );
    // Lines: the first entry of a CRD carries its "validating upgrade for CRD" prefix.
    let mut lines: Vec<String> = Vec::new();
    for v in &refused {
        for (i, entry) in v.blocking().map(|e| e.entry()).enumerate() {
            if i == 0 {
                lines.push(format!(
                    "validating upgrade for CRD {}: {entry}",
                    quote(&v.crd)
                ));
            } else {
                lines.push(entry);
            }
        }
    }
    let total = lines.len();
    for (shown, l) in lines.iter().enumerate() {
        let remaining_after = total - shown - 1;
        let tail = if remaining_after > 0 {
            format!(
                "\n... {} not shown",
                plural(remaining_after, "more violation")
            )
        } else {
            String::new()
        };
        // Keep room for the "not shown" line of everything after this one.
        if out.len() + 1 + l.len() + tail.len() > limit {
            out.push_str(&format!(
                "\n... {} not shown",
                plural(total - shown, "more violation")
            ));
            return Some(out);
        }
        out.push('\n');
        out.push_str(l);
    }
    Some(out)
}
