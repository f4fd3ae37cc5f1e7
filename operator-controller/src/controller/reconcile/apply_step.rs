//! Applying a release that is already recorded: drift repair of the deployed release, the
//! built-in provider's certificates for the objects about to be applied, and what follows a
//! successful apply (drift watches, metrics, kept CRDs).
//!
//! Input: the extension, its deployed release or objects to apply. Output: the apply's outcome
//! in the findings. Network: the Kubernetes API (server-side apply; certificate Secrets).

use super::*;

/// Drift watches, metrics, kept CRDs and availability after a successful apply.
pub(super) async fn after_apply(
    ctx: &Context,
    name: &str,
    outcome: &crate::apply::ApplyOutcome,
    findings: &mut Findings,
) {
    ctx.drift.watch(&outcome.kinds());
    let changed = outcome.changed().count();
    ctx.metrics.observe_apply(
        name,
        changed,
        outcome.applied.len() - changed,
        outcome.pruned.len(),
    );
    if let Some(note) = outcome.kept_crds_message() {
        findings.notes.push(note);
    }
}

/// §3.6: no catalog serves the package any more; keep the installed release applied (drift
/// repair included) without resolving, pulling or rendering.
pub(super) async fn maintain(
    extension: &ClusterExtension,
    ctx: &Context,
    deployed: &Release,
    findings: &mut Findings,
) -> Result<(), ReconcileError> {
    let installed = history::installed_bundle(std::slice::from_ref(deployed)).unwrap_or_default();
    let wrap = |failure: BundleFailure| -> ReconcileError {
        BundleStepError {
            bundle: installed.name.clone(),
            version: installed.version.clone(),
            failure,
        }
        .into()
    };
    let mut desired = manifest_objects(&deployed.manifest).map_err(|e| wrap(e.into()))?;
    builtin_certificates(extension, ctx, &mut desired, findings)
        .await
        .map_err(|e| wrap(e.into()))?;
    let previous = release_refs(deployed).map_err(|e| wrap(e.into()))?;
    let owner = Owner {
        name: extension.name_any(),
        uid: uid(extension),
    };
    let identity = identity(extension, ctx.settings.honor_service_account);
    let request = ApplyRequest {
        owner: &owner,
        install_namespace: &extension.spec.namespace,
        identity: &identity,
        desired: &desired,
        previous: &previous,
    };
    let outcome = apply_unless_unchanged(ctx, &request)
        .await
        .map_err(|e| wrap(e.into()))?;
    after_apply(ctx, &owner.name, &outcome, findings).await;
    Ok(())
}

/// Applies a release that is already recorded (drift repair), unless the drift watches show
/// its objects exactly as the last identical apply left them ([`last_apply`]).
pub(super) async fn apply_unless_unchanged(
    ctx: &Context,
    request: &ApplyRequest<'_>,
) -> Result<crate::apply::ApplyOutcome, crate::apply::ApplyError> {
    let name = &request.owner.name;
    let request_digest = last_apply::request_digest(request);
    if let Some(outcome) = ctx.last_applies.unchanged(name, request_digest, &ctx.drift) {
        tracing::debug!(extension = %name, "objects as the last apply left them; not applying again");
        return Ok(outcome);
    }
    let outcome = ctx.applier.apply(request).await?;
    ctx.last_applies.record(name, request_digest, &outcome);
    Ok(outcome)
}

/// The built-in provider's Secrets and CA bundles for the objects about to be applied (only
/// when it is the provider): the bundle goes into `desired` (not into the release manifest,
/// so a rotation is no new revision), the next rotation into `findings`.
pub(super) async fn builtin_certificates(
    extension: &ClusterExtension,
    ctx: &Context,
    desired: &mut [Value],
    findings: &mut Findings,
) -> Result<(), crate::webhook_certs::WebhookCertError> {
    let Some(certs) = ctx
        .builtin_certs
        .as_ref()
        .filter(|_| ctx.settings.cert_provider == CertProvider::Builtin)
    else {
        return Ok(());
    };
    let owner = Owner {
        name: extension.name_any(),
        uid: uid(extension),
    };
    let recheck = crate::webhook_certs::provide(
        certs,
        &ctx.drift,
        &owner,
        &extension.spec.namespace,
        desired,
    )
    .await?;
    if recheck.is_some() {
        findings.cert_recheck = recheck;
        findings.notes.push(crate::webhook_certs::status_note(
            ctx.settings.cert_provider_detected,
        ));
    }
    Ok(())
}
