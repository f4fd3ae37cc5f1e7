//! The apply layer's one error type, and how API failures read in it.
//!
//! Input: failures of the plan, of the cluster and of the API calls. Output: [`ApplyError`],
//! whose text is the condition message (upstream's where upstream has one) and which knows its
//! condition reason. No IO.
//!
//! Every apply error is retryable (`Progressing=True/Retrying`): install-path.md §1 item 5
//! lists only invalid configuration and unparsable image references as terminal upstream, and
//! each failure here can clear without a spec edit (a namespace or ServiceAccount is created,
//! RBAC is granted, a colliding object is deleted, the API server recovers).

use std::time::Duration;

use kube::core::Status;
use olm_api::v1::ConditionReason;
use olm_operator_core::apply_plan::ownership::collisions_message;
use olm_operator_core::apply_plan::{AccessCheck, Collision, Identity, PlanError};

/// A failed API call.
#[derive(Debug, thiserror::Error)]
pub enum ApiFailure {
    /// The API server answered with an error status; the text is its message.
    #[error("{}", status_text(.0))]
    Status(Box<Status>),
    /// No answer (connection, TLS, decoding).
    #[error("{0}")]
    Transport(String),
    #[error("no answer from the API server within {}s", .0.as_secs())]
    Timeout(Duration),
}

fn status_text(status: &Status) -> String {
    if status.message.is_empty() {
        format!("the API server answered {} {}", status.code, status.reason)
    } else {
        status.message.clone()
    }
}

impl ApiFailure {
    pub(crate) fn from_kube(error: kube::Error) -> ApiFailure {
        match error {
            kube::Error::Api(status) => ApiFailure::Status(status),
            other => ApiFailure::Transport(other.to_string()),
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, ApiFailure::Status(s) if s.code == 404)
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, ApiFailure::Status(s) if s.code == 409)
    }

    pub fn is_forbidden(&self) -> bool {
        matches!(self, ApiFailure::Status(s) if s.code == 403)
    }
}

/// Why an apply, uninstall or availability check did not complete.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The rendered set cannot be planned: an invalid or duplicate object, or kinds the API
    /// server does not serve.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Namespaces the objects go to do not exist; upstream does not create them either
    /// (`CreateNamespace=false`) and waits.
    #[error("{}", missing_namespaces_message(.0))]
    NamespacesMissing(Vec<String>),
    /// `spec.serviceAccount` names a ServiceAccount that does not exist (upstream's text).
    #[error(
        "service account \"{name}\" not found in namespace \"{namespace}\": unable to authenticate with the Kubernetes cluster."
    )]
    ServiceAccountNotFound { namespace: String, name: String },
    /// The ServiceAccount lacks permissions; `message` lists all of them.
    #[error("{message}")]
    MissingPermissions {
        identity: Identity,
        denied: Vec<AccessCheck>,
        message: String,
    },
    /// Existing objects that are not this extension's; nothing was written.
    #[error("{}", collisions_message(.0))]
    Collisions(Vec<Collision>),
    /// A CustomResourceDefinition of the set did not become Established.
    #[error("failed to apply: CustomResourceDefinition \"{name}\" is not Established: {detail}")]
    CrdNotEstablished { name: String, detail: String },
    /// An API call failed; `action` says which (`apply Deployment "ns/name"`).
    #[error("failed to {action}: {source}")]
    Api {
        action: String,
        #[source]
        source: ApiFailure,
    },
}

fn missing_namespaces_message(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let (noun, verb) = if names.len() == 1 {
        ("namespace", "does")
    } else {
        ("namespaces", "do")
    };
    format!(
        "failed to apply: {noun} {} {verb} not exist; operator-controller does not create namespaces, the installation continues once they exist",
        quoted.join(", ")
    )
}

impl ApplyError {
    /// The condition reason this error sets on `Progressing`.
    pub fn reason(&self) -> ConditionReason {
        ConditionReason::Retrying
    }

    /// Whether only a spec edit can clear this error: never for the apply layer (see the
    /// module documentation).
    pub fn is_terminal(&self) -> bool {
        false
    }

    pub(crate) fn api(action: impl Into<String>) -> impl FnOnce(ApiFailure) -> ApplyError {
        let action = action.into();
        move |source| ApplyError::Api { action, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_apply_error_is_retrying_and_never_terminal() {
        let errors = [
            ApplyError::NamespacesMissing(vec!["a".into()]),
            ApplyError::ServiceAccountNotFound {
                namespace: "n".into(),
                name: "s".into(),
            },
            ApplyError::Collisions(vec![]),
            ApplyError::CrdNotEstablished {
                name: "c".into(),
                detail: "d".into(),
            },
            ApplyError::Api {
                action: "x".into(),
                source: ApiFailure::Timeout(Duration::from_secs(3)),
            },
        ];
        for e in errors {
            assert_eq!(e.reason(), ConditionReason::Retrying, "{e}");
            assert!(!e.is_terminal(), "{e}");
        }
    }

    #[test]
    fn messages_name_what_is_missing() {
        assert_eq!(
            ApplyError::NamespacesMissing(vec!["ns".into()]).to_string(),
            "failed to apply: namespace \"ns\" does not exist; operator-controller does not create namespaces, the installation continues once they exist"
        );
        assert_eq!(
            ApplyError::NamespacesMissing(vec!["a".into(), "b".into()]).to_string(),
            "failed to apply: namespaces \"a\", \"b\" do not exist; operator-controller does not create namespaces, the installation continues once they exist"
        );
        // Source: operator-controller (before #2770) authentication/tokengetter.go.
        assert_eq!(
            ApplyError::ServiceAccountNotFound {
                namespace: "ns".into(),
                name: "installer".into()
            }
            .to_string(),
            "service account \"installer\" not found in namespace \"ns\": unable to authenticate with the Kubernetes cluster."
        );
        assert_eq!(
            ApplyError::Api {
                action: "apply ConfigMap \"ns/c\"".into(),
                source: ApiFailure::Timeout(Duration::from_secs(30)),
            }
            .to_string(),
            "failed to apply ConfigMap \"ns/c\": no answer from the API server within 30s"
        );
    }
}
