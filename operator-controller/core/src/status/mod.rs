//! The status a ClusterExtension reconcile publishes, decided from what the reconcile found.
//!
//! Input: the status as read, the object's generation, and an [`Outcome`]: what is installed
//! after this reconcile, whether the desired state was reached (or why not), the deprecation
//! conditions and the availability of the installed Deployments. Output: the new
//! `ClusterExtensionStatus` (written by the controller only when it differs from the one read).
//! No IO, no clock: the caller passes the time.
//!
//! Conditions, with upstream's strings (`controllers/common_controller.go`,
//! install-path.md §1):
//!
//! | outcome | condition | status / reason | message |
//! |---|---|---|---|
//! | a bundle is installed | `Installed` | True / `Succeeded` | `Installed bundle <image> successfully` |
//! | nothing is installed | `Installed` | False / `Failed` | `No bundle installed` |
//! | installed state unreadable | `Installed` | Unknown / `Failed` | the error |
//! | desired state reached | `Progressing` | True / `Succeeded` | `Desired state reached` (then one line per note, e.g. a data-aware CRD warning) |
//! | retryable failure | `Progressing` | True / `Retrying` | the error, network addresses removed ([`sanitize_network_error`]) |
//! | terminal failure | `Progressing` | False / `Blocked` or `InvalidConfiguration` | same |
//! | availability observed | `Available` | True / `ProbesSucceeded`, False / `ProbeFailure` | from `apply_plan::availability` |
//! | nothing installed | `Available` | removed | |
//! | deprecation computed | the four deprecation types | from `resolve::deprecation` | |
//!
//! `status.install.bundle` names the installed bundle and is removed when nothing is installed or
//! the installed state is unknown (upstream's `setInstallStatus(ext, nil)`). Every condition
//! carries the generation it was computed for; messages are truncated to the API limit by
//! `set_condition`, upstream's suffix included.
//!
//! Upstream's `ensureFailureConditionsWithReason` fills `Installed` and `Progressing` with
//! fallback texts (`failed to resolve bundle: …`) only when they are missing, and both are always
//! set before it runs, so those texts never show; they are not reproduced.

pub mod approval;
pub mod fallback;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_api::v1::{
    BundleMetadata, ClusterExtensionInstallStatus, ClusterExtensionStatus, ConditionReason,
    ConditionStatus, ConditionType, set_condition,
};
use olm_api::version::go_text::go_quote;
use regex::Regex;

use crate::apply_plan::Availability;
use crate::resolve::ConditionValue;

/// `Progressing` message when the desired state is reached (upstream's).
pub const DESIRED_STATE_REACHED: &str = "Desired state reached";
/// `Installed` message when nothing is installed (upstream's).
pub const NO_BUNDLE_INSTALLED: &str = "No bundle installed";
/// `Progressing` message when the installed state cannot be read (upstream's).
pub const RETRYING_INSTALLED_STATE: &str = "retrying to get installed bundle";

/// `Installed bundle <image> successfully` (upstream's; the image is the bundle reference).
pub fn installed_message(image: &str) -> String {
    format!("Installed bundle {image} successfully")
}

/// Upstream's `wrapErrorWithResolutionInfo`: `error for resolved bundle "<name>" with version
/// "<version>": <error>`, names quoted as Go's `%q` quotes them. Pull, render, preflight and
/// apply errors carry it; resolution errors do not.
pub fn wrap_for_bundle(name: &str, version: &str, message: &str) -> String {
    format!(
        "error for resolved bundle {} with version {}: {message}",
        go_quote(name),
        go_quote(version)
    )
}

/// Upstream's `SanitizeNetworkError`: removes `read|write tcp|udp <addr>-><addr>: ` so that a
/// retry from another source port does not change the message (and cause a status write).
pub fn sanitize_network_error(message: &str) -> String {
    static PATTERN: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    let pattern = PATTERN.get_or_init(|| {
        // Upstream's expression, unchanged (RE2 syntax, which the regex crate accepts).
        Regex::new(
            r"(read|write) (tcp|udp) ((?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|\[[0-9a-fA-F:]+\])(?::\d+)?)->((?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|\[[0-9a-fA-F:]+\])(?::\d+)?)(: )?",
        )
        .ok()
    });
    match pattern {
        Some(p) => p.replace_all(message, "").into_owned(),
        None => message.to_owned(),
    }
}

/// What is installed once the reconcile is over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Installed {
    /// This bundle (name and version as the status records them), from this image reference.
    Bundle {
        bundle: BundleMetadata,
        image: String,
    },
    /// Nothing.
    Nothing,
    /// The installed state could not be read; the message says why.
    Unknown { message: String },
}

/// Whether the desired state was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Reached; `notes` are appended to the message, one per line (warnings the user should see
    /// although nothing failed).
    Reached { notes: Vec<String> },
    /// Not reached: `reason` is the error's condition reason (`Retrying`, `Blocked`,
    /// `InvalidConfiguration`), `message` its text.
    Failed {
        reason: ConditionReason,
        message: String,
    },
}

/// What to do with the `Available` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Available {
    /// Set it from the Deployments just read.
    Observed(Availability),
    /// Remove it (nothing is installed).
    Clear,
    /// Leave it as it is (the reconcile did not get to read the Deployments).
    Keep,
}

/// Everything the status is computed from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub installed: Installed,
    pub progress: Progress,
    /// The four deprecation conditions, when this reconcile computed them; `None` keeps the
    /// ones of the status read.
    pub deprecation: Option<[ConditionValue; 4]>,
    pub available: Available,
}

/// The status `previous` becomes after a reconcile with `outcome` (see the module table).
pub fn next_status(
    previous: Option<&ClusterExtensionStatus>,
    generation: Option<i64>,
    outcome: &Outcome,
    now: Time,
) -> ClusterExtensionStatus {
    let mut status = previous.cloned().unwrap_or_default();
    let set = |status: &mut ClusterExtensionStatus,
               type_: ConditionType,
               condition: ConditionStatus,
               reason: ConditionReason,
               message: &str| {
        set_condition(
            &mut status.conditions,
            type_,
            condition,
            reason,
            message,
            generation,
            now.clone(),
        );
    };

    if let Some(deprecation) = &outcome.deprecation {
        for value in deprecation {
            set(
                &mut status,
                value.type_,
                value.status,
                value.reason,
                &value.message,
            );
        }
    }

    match &outcome.installed {
        Installed::Bundle { bundle, image } => {
            status.install = Some(ClusterExtensionInstallStatus {
                bundle: bundle.clone(),
            });
            set(
                &mut status,
                ConditionType::Installed,
                ConditionStatus::True,
                ConditionReason::Succeeded,
                &installed_message(image),
            );
        }
        Installed::Nothing => {
            status.install = None;
            set(
                &mut status,
                ConditionType::Installed,
                ConditionStatus::False,
                ConditionReason::Failed,
                NO_BUNDLE_INSTALLED,
            );
        }
        Installed::Unknown { message } => {
            status.install = None;
            set(
                &mut status,
                ConditionType::Installed,
                ConditionStatus::Unknown,
                ConditionReason::Failed,
                message,
            );
        }
    }

    match &outcome.progress {
        Progress::Reached { notes } => {
            let mut message = DESIRED_STATE_REACHED.to_owned();
            for note in notes {
                message.push('\n');
                message.push_str(note);
            }
            set(
                &mut status,
                ConditionType::Progressing,
                ConditionStatus::True,
                ConditionReason::Succeeded,
                &message,
            );
        }
        Progress::Failed { reason, message } => set(
            &mut status,
            ConditionType::Progressing,
            progressing_status(*reason),
            *reason,
            &sanitize_network_error(message),
        ),
    }

    match &outcome.available {
        Available::Observed(availability) => set(
            &mut status,
            ConditionType::Available,
            availability.status,
            availability.reason,
            &availability.message,
        ),
        Available::Clear => status
            .conditions
            .retain(|c| c.type_ != ConditionType::Available.as_str()),
        Available::Keep => {}
    }
    status
}

/// `Progressing`'s status for a failure reason: upstream sets False only for terminal errors,
/// which are exactly the `Blocked` and `InvalidConfiguration` ones; `Retrying` is True.
pub fn progressing_status(reason: ConditionReason) -> ConditionStatus {
    match reason {
        ConditionReason::Blocked | ConditionReason::InvalidConfiguration => ConditionStatus::False,
        _ => ConditionStatus::True,
    }
}

#[cfg(test)]
mod tests;
