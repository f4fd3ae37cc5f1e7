//! Acting as an extension's ServiceAccount: impersonated clients and the permission preflight.
//!
//! Input: the controller's client, an [`Identity`], the access checks of a plan. Output: a
//! client whose requests carry `Impersonate-User: system:serviceaccount:<ns>:<name>`, and the
//! checks the identity fails. Network: `GET` of the ServiceAccount and one
//! SubjectAccessReview per check, both with the controller's identity.
//!
//! Only the user is impersonated: for a `system:serviceaccount:` user the API server adds the
//! ServiceAccount groups itself, so the controller needs `impersonate` on `serviceaccounts`
//! only, not on `groups`. The SubjectAccessReviews name the same user and groups
//! ([`Identity::groups`]), so the preflight answers what the impersonated requests will get.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt, stream};
use http::HeaderValue;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};
use olm_operator_core::apply_plan::permissions::missing_permissions_message;
use olm_operator_core::apply_plan::{AccessCheck, Identity};

use super::call::bounded;
use super::error::ApplyError;

/// The client that acts as `identity`: the controller's own client for
/// [`Identity::Controller`], else one that impersonates the ServiceAccount.
pub fn client_for(controller: &Client, identity: &Identity) -> Client {
    let Some(user) = identity.user_name() else {
        return controller.clone();
    };
    let header = match HeaderValue::from_str(&user) {
        Ok(header) => header,
        // ServiceAccount names are DNS labels and namespace names too, so this cannot fail for
        // a name the API server accepted; a request without the header would act as the
        // controller, so refuse every request instead.
        Err(_) => HeaderValue::from_static("system:anonymous"),
    };
    let inner = controller.clone();
    let service = tower::service_fn(move |mut request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        request
            .headers_mut()
            .insert("Impersonate-User", header.clone());
        async move { inner.send(request).await }
    });
    Client::new(service, controller.default_namespace().to_owned())
}

/// Fails with upstream's message when `identity`'s ServiceAccount does not exist (every
/// permission check would fail and hide the real cause).
pub(crate) async fn require_service_account(
    controller: &Client,
    identity: &Identity,
    call_timeout: Duration,
) -> Result<(), ApplyError> {
    let Identity::ServiceAccount { namespace, name } = identity else {
        return Ok(());
    };
    let api: Api<ServiceAccount> = Api::namespaced(controller.clone(), namespace);
    let found = bounded(call_timeout, api.get_metadata_opt(name))
        .await
        .map_err(ApplyError::api(format!(
            "read ServiceAccount \"{namespace}/{name}\""
        )))?;
    match found {
        Some(_) => Ok(()),
        None => Err(ApplyError::ServiceAccountNotFound {
            namespace: namespace.clone(),
            name: name.clone(),
        }),
    }
}

/// How many SubjectAccessReviews run at once.
const REVIEW_CONCURRENCY: usize = 8;

/// Runs every check for `identity` and fails with one message listing all denied ones.
/// Nothing to do for [`Identity::Controller`].
pub(crate) async fn require_permissions(
    controller: &Client,
    identity: &Identity,
    checks: Vec<AccessCheck>,
    call_timeout: Duration,
) -> Result<(), ApplyError> {
    let Some(user) = identity.user_name() else {
        return Ok(());
    };
    let groups = identity.groups();
    let api: Api<SubjectAccessReview> = Api::all(controller.clone());
    let answers: Vec<(AccessCheck, bool)> = stream::iter(checks)
        .map(|check| {
            let review = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: Some(user.clone()),
                    groups: Some(groups.clone()),
                    resource_attributes: Some(ResourceAttributes {
                        namespace: non_empty(&check.namespace),
                        verb: Some(check.verb.clone()),
                        group: Some(check.group.clone()),
                        resource: Some(check.resource.clone()),
                        subresource: non_empty(&check.subresource),
                        name: non_empty(&check.name),
                        ..ResourceAttributes::default()
                    }),
                    ..SubjectAccessReviewSpec::default()
                },
                ..SubjectAccessReview::default()
            };
            let api = api.clone();
            async move {
                let answer = bounded(call_timeout, api.create(&PostParams::default(), &review))
                    .await
                    .map_err(ApplyError::api("create a SubjectAccessReview"))?;
                let allowed = answer.status.is_some_and(|s| s.allowed);
                Ok::<_, ApplyError>((check, allowed))
            }
        })
        .buffered(REVIEW_CONCURRENCY)
        .try_collect()
        .await?;
    let denied: Vec<AccessCheck> = answers
        .into_iter()
        .filter(|(_, allowed)| !allowed)
        .map(|(check, _)| check)
        .collect();
    if denied.is_empty() {
        return Ok(());
    }
    Err(ApplyError::MissingPermissions {
        message: missing_permissions_message(identity, &denied),
        identity: identity.clone(),
        denied,
    })
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}
