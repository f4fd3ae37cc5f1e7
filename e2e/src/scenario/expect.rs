//! Conditions and messages: what [`super::Scenario::wait_for`] waits for. An [`Expect`] names a
//! condition's type, status and reason (the named ones: [`INSTALLED`], [`DESIRED_STATE`],
//! [`RETRYING`], [`INVALID_CONFIGURATION`], [`AVAILABLE`]), and maybe a [`Message`] pattern and an
//! installed bundle.
//!
//! Input: condition types, statuses, reasons and text patterns. Output: [`Expect`] values and
//! their matching ([`Message::matches`]). Network: none.

use std::fmt;

use olm_api::v1::{ClusterExtension, ConditionType, find_condition};

use super::{installed_bundle, message};

/// A text pattern a condition message must match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Exact(String),
    Contains(String),
    StartsWith(String),
    EndsWith(String),
    /// `*` stands for any text (nothing else is special).
    Glob(String),
    /// Every one of these.
    All(Vec<Message>),
}

impl Message {
    pub fn exact(text: impl Into<String>) -> Message {
        Message::Exact(text.into())
    }

    pub fn contains(text: impl Into<String>) -> Message {
        Message::Contains(text.into())
    }

    pub fn starts_with(text: impl Into<String>) -> Message {
        Message::StartsWith(text.into())
    }

    pub fn ends_with(text: impl Into<String>) -> Message {
        Message::EndsWith(text.into())
    }

    pub fn glob(pattern: impl Into<String>) -> Message {
        Message::Glob(pattern.into())
    }

    /// This pattern and `other`.
    pub fn and(self, other: Message) -> Message {
        match self {
            Message::All(mut all) => {
                all.push(other);
                Message::All(all)
            }
            one => Message::All(vec![one, other]),
        }
    }

    pub fn matches(&self, text: &str) -> bool {
        match self {
            Message::Exact(m) => text == m,
            Message::Contains(m) => text.contains(m.as_str()),
            Message::StartsWith(m) => text.starts_with(m.as_str()),
            Message::EndsWith(m) => text.ends_with(m.as_str()),
            Message::Glob(pattern) => glob_matches(pattern, text),
            Message::All(all) => all.iter().all(|m| m.matches(text)),
        }
    }
}

/// Whether `text` matches `pattern`, in which `*` is any text: the first piece is a prefix, the
/// last a suffix, the ones between occur in order.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    if let [only] = pieces.as_slice() {
        return text == *only;
    }
    let (first, rest) = pieces
        .split_first()
        .expect("split yields one piece at least");
    let (last, middle) = rest.split_last().expect("two pieces at least");
    let Some(mut left) = text.strip_prefix(first) else {
        return false;
    };
    for piece in middle {
        match left.find(piece) {
            Some(at) => left = &left[at + piece.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Exact(m) => write!(f, "exactly {m:?}"),
            Message::Contains(m) => write!(f, "containing {m:?}"),
            Message::StartsWith(m) => write!(f, "starting with {m:?}"),
            Message::EndsWith(m) => write!(f, "ending with {m:?}"),
            Message::Glob(m) => write!(f, "like {m:?}"),
            Message::All(all) => {
                let parts: Vec<String> = all.iter().map(ToString::to_string).collect();
                write!(f, "{}", parts.join(" and "))
            }
        }
    }
}

/// What [`Scenario::wait_for`](super::Scenario::wait_for) waits for: a condition's status and reason for the extension's
/// current generation, and maybe a message.
#[derive(Clone, Debug)]
pub struct Expect {
    pub type_: ConditionType,
    pub status: &'static str,
    pub reason: &'static str,
    /// Checked once status and reason are reached.
    pub asserted: Option<Message>,
    /// Awaited with status and reason.
    pub awaited: Option<Message>,
    /// The bundle (name, version) `status.install` names, checked once status and reason are
    /// reached.
    pub bundle: Option<(String, String)>,
    /// The bundle (name, version) `status.install` names, awaited with status and reason.
    pub awaited_bundle: Option<(String, String)>,
}

impl Expect {
    pub const fn condition(
        type_: ConditionType,
        status: &'static str,
        reason: &'static str,
    ) -> Expect {
        Expect {
            type_,
            status,
            reason,
            asserted: None,
            awaited: None,
            bundle: None,
            awaited_bundle: None,
        }
    }

    /// The message must match `pattern` when status and reason are reached.
    pub fn message(mut self, pattern: Message) -> Expect {
        self.asserted = Some(pattern);
        self
    }

    /// The extension must report `bundle` (name, version; see [`Published::bundle`](super::Published::bundle)) installed
    /// when status and reason are reached.
    pub fn bundle(mut self, bundle: (String, String)) -> Expect {
        self.bundle = Some(bundle);
        self
    }

    /// Waits until the message matches `pattern` too (for a condition that holds the same
    /// status and reason with other messages first).
    pub fn until_message(mut self, pattern: Message) -> Expect {
        self.awaited = Some(pattern);
        self
    }

    /// Waits until the extension reports `bundle` (name, version) installed too (for a
    /// condition that holds the same status and reason while another bundle is installed, as
    /// `Installed` does during an upgrade).
    pub fn until_bundle(mut self, bundle: (String, String)) -> Expect {
        self.awaited_bundle = Some(bundle);
        self
    }

    /// Whether `extension` meets what is awaited: the condition's status and reason for its
    /// current generation, the message of [`Expect::until_message`] and the bundle of
    /// [`Expect::until_bundle`].
    pub fn is_met_by(&self, extension: &ClusterExtension) -> bool {
        let Some(c) = extension
            .status
            .as_ref()
            .and_then(|s| find_condition(&s.conditions, self.type_))
        else {
            return false;
        };
        c.status.as_str() == self.status
            && c.reason == self.reason
            && c.observed_generation == extension.metadata.generation
            && self.awaited.iter().all(|m| m.matches(&c.message))
            && self
                .awaited_bundle
                .iter()
                .all(|b| installed_bundle(extension).as_ref() == Some(b))
    }

    /// Fails the test unless `found` (the extension `name` once it met the expectation) has the
    /// message of [`Expect::message`] and the bundle of [`Expect::bundle`].
    pub fn assert_checks(&self, name: &str, found: &ClusterExtension) {
        if let Some(pattern) = &self.asserted {
            let text = message(found, self.type_);
            assert!(
                pattern.matches(&text),
                "{name}: {:?} {}/{}: the message does not match {pattern}:\n{text}",
                self.type_,
                self.status,
                self.reason
            );
        }
        if let Some(bundle) = &self.bundle {
            assert_eq!(
                installed_bundle(found).as_ref(),
                Some(bundle),
                "{name}: {:?} {}/{}: the installed bundle",
                self.type_,
                self.status,
                self.reason
            );
        }
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {}/{}", self.type_, self.status, self.reason)?;
        if let Some(m) = &self.awaited {
            write!(f, " with a message {m}")?;
        }
        if let Some((name, _)) = &self.awaited_bundle {
            write!(f, " with {name} installed")?;
        }
        Ok(())
    }
}

/// `Installed` with `status` and `reason`.
pub const fn installed(status: &'static str, reason: &'static str) -> Expect {
    Expect::condition(ConditionType::Installed, status, reason)
}

/// `Progressing` with `status` and `reason`.
pub const fn progressing(status: &'static str, reason: &'static str) -> Expect {
    Expect::condition(ConditionType::Progressing, status, reason)
}

/// `Available` with `status` and `reason`.
pub const fn available(status: &'static str, reason: &'static str) -> Expect {
    Expect::condition(ConditionType::Available, status, reason)
}

/// `Installed` True, `Succeeded`: a bundle is installed.
pub const INSTALLED: Expect = installed("True", "Succeeded");
/// `Progressing` True, `Succeeded`: the desired state is reached.
pub const DESIRED_STATE: Expect = progressing("True", "Succeeded");
/// `Progressing` True, `Retrying`: a retryable error.
pub const RETRYING: Expect = progressing("True", "Retrying");
/// `Progressing` False, `InvalidConfiguration`: a terminal error in `spec.config`.
pub const INVALID_CONFIGURATION: Expect = progressing("False", "InvalidConfiguration");
/// `Available` True, `ProbesSucceeded`: the installed Deployments are available.
pub const AVAILABLE: Expect = available("True", "ProbesSucceeded");
/// `Approved` False, `AwaitingApproval`: the resolved bundle waits for approval.
pub const AWAITING_APPROVAL: Expect =
    Expect::condition(ConditionType::Approved, "False", "AwaitingApproval");
/// `Approved` True, `Approved`: nothing waits for approval.
pub const APPROVED: Expect = Expect::condition(ConditionType::Approved, "True", "Approved");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_star_is_any_text_and_everything_else_is_literal() {
        assert!(glob_matches("abc", "abc"));
        assert!(!glob_matches("abc", "abcd"));
        assert!(glob_matches("error *", "error for bundle"));
        assert!(glob_matches("* not found", "widgets not found"));
        assert!(glob_matches("*[red]*", "values removed : [red]"));
        assert!(glob_matches("a*b*c", "a-b-c"));
        assert!(!glob_matches("a*b*c", "a-c-b"));
        assert!(
            !glob_matches("ab*ba", "aba"),
            "prefix and suffix may not overlap"
        );
    }
}
