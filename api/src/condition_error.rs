//! The one contract between errors and status conditions: every error a reconcile step can end
//! with says which condition reason it shows as and whether retrying can help.
//!
//! Input: nothing. Output: the [`ConditionError`] trait and a check of the message rule. No IO.
//!
//! Implemented by `olm_image::ImageError` (pulls), `olm_operator_core::resolve::ResolveError`
//! (resolution) and catalogd's step errors; the ClusterExtension controller's steps implement it too.
//!
//! **Message rule.** A condition's message is the error's `Display`, whole: every error's `Display`
//! already contains the text of its cause (the `failed to X: <cause>` pattern), so the
//! [`std::error::Error::source`] chain is never appended again (that would say everything twice).
//! `source()` is for logs and for matching on causes. [`missing_causes`] checks the rule for one
//! error; tests of each implementation run it over representative errors.
//!
//! **Reason and retry are separate.** [`ConditionError::reason`] is what the `Progressing`
//! condition shows; [`ConditionError::is_terminal`] decides the requeue: a terminal error waits for
//! a change of the object (or of what it depends on), others back off and retry. They usually agree
//! (`Blocked` ⇔ terminal), but upstream shows some errors as `Retrying` that only a change can fix
//! (a resolution that finds no bundle); those keep upstream's reason and are still terminal here.

use crate::v1::ConditionReason;

/// An error that ends a reconcile step and is reported in a status condition.
pub trait ConditionError: std::error::Error {
    /// The reason of the condition reporting this error.
    fn reason(&self) -> ConditionReason;

    /// True when retrying cannot succeed until the object (or what it refers to) changes.
    fn is_terminal(&self) -> bool;

    /// The condition message: `Display`, which by the message rule already includes the causes.
    fn condition_message(&self) -> String {
        self.to_string()
    }
}

/// The causes in `error`'s source chain whose text its message does not contain; empty when the
/// error follows the message rule.
pub fn missing_causes(error: &dyn std::error::Error) -> Vec<String> {
    let message = error.to_string();
    let mut missing = Vec::new();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !message.contains(&text) {
            missing.push(text);
        }
        cause = c.source();
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("failed to read the thing: {0}")]
    struct Includes(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("failed to read the thing")]
    struct Omits(#[source] std::io::Error);

    #[test]
    fn the_message_rule_accepts_a_message_with_its_cause_and_names_a_missing_one() {
        let cause = || std::io::Error::other("disk on fire");
        assert!(missing_causes(&Includes(cause())).is_empty());
        assert_eq!(missing_causes(&Omits(cause())), vec!["disk on fire"]);
    }
}
