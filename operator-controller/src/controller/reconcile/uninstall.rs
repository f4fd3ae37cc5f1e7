//! Deletion of an extension: its release's objects in reverse order, its certificate Secrets,
//! its release records and bundle cache, then the finalizers.
//!
//! Input: the ClusterExtension being deleted and the [`Context`]. Output: the action, or an
//! [`UninstallError`]. Network: the Kubernetes API.

use super::*;

/// Deletion: uninstall, then drop the records, the cache and the finalizers.
pub(super) async fn finalize(
    api: &Api<ClusterExtension>,
    extension: &ClusterExtension,
    ctx: &Context,
) -> Result<Action, ReconcileError> {
    let name = extension.name_any();
    if !crate::controller::FINALIZERS
        .iter()
        .any(|f| olm_runtime::finalizer::has(extension, f))
    {
        return Ok(Action::await_change());
    }
    let history = ctx
        .store
        .history(&name)
        .await
        .map_err(UninstallError::Records)?;
    let mut installed: Vec<ObjectRef> = Vec::new();
    for release in history.releases().iter().rev() {
        for object in release_refs(release).map_err(UninstallError::Manifest)? {
            if !installed.contains(&object) {
                installed.push(object);
            }
        }
    }
    let owner = Owner {
        name: name.clone(),
        uid: uid(extension),
    };
    let identity = identity(extension, ctx.settings.honor_service_account);
    let request = |identity| UninstallRequest {
        owner: &owner,
        install_namespace: &extension.spec.namespace,
        identity,
        installed: &installed,
    };
    let outcome = match ctx.applier.uninstall(&request(&identity)).await {
        Err(crate::apply::ApplyError::ServiceAccountNotFound { .. }) => {
            // The ServiceAccount went first (a namespace being deleted): remove what we
            // installed with the controller's identity, as upstream's garbage collection would.
            ctx.applier.uninstall(&request(&Identity::Controller)).await
        }
        other => other,
    }
    .map_err(UninstallError::Apply)?;
    if !outcome.is_complete() {
        return Err(UninstallError::Pending(
            outcome.remaining.iter().map(|o| o.to_string()).collect(),
        )
        .into());
    }
    if let Some(certs) = &ctx.builtin_certs {
        certs
            .remove(&owner, &extension.spec.namespace)
            .await
            .map_err(UninstallError::WebhookCerts)?;
    }
    ctx.store
        .delete_all(&name)
        .await
        .map_err(UninstallError::Records)?;
    ctx.puller()
        .delete_owner(&name)
        .await
        .map_err(|e| UninstallError::Cache(e.to_string()))?;
    remove_finalizers(api, extension).await?;
    ctx.metrics.forget(&name);
    ctx.backoff.reset(&name);
    ctx.conflicts.reset(&name);
    Ok(Action::await_change())
}

/// Removes both finalizers in one patch, guarded by the list read.
pub(super) async fn remove_finalizers(
    api: &Api<ClusterExtension>,
    extension: &ClusterExtension,
) -> Result<(), PublishError> {
    let current = extension.finalizers().to_vec();
    let remaining: Vec<&String> = current
        .iter()
        .filter(|f| !crate::controller::FINALIZERS.contains(&f.as_str()))
        .collect();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "replace", "path": "/metadata/finalizers", "value": remaining},
    ]))
    .map_err(|e| PublishError::Encode(e.to_string()))?;
    match api
        .patch(
            &extension.name_any(),
            &olm_runtime::client::patch_params(),
            &Patch::<()>::Json(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(PublishError::Metadata {
            name: extension.name_any(),
            source,
        }),
    }
}
