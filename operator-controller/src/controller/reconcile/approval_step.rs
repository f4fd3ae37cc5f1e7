//! Upgrade approval (issue 26): holding a resolved bundle that awaits approval while the
//! installed release stays applied, and the pending upgrade's summary from the preview engine.
//!
//! Input: the extension, its resolution and deployed release. Output: the held state in the
//! findings. Network: the Kubernetes API (dry runs), as the rest of the reconcile.

use super::*;

/// `Approved` True's message when the resolved bundle is the installed one.
pub(super) fn installed_message(name: &str, version: &str) -> String {
    format!("bundle {name} ({version}) is installed; nothing awaits approval")
}

/// The summary of a bundle waiting for `Manual` approval, from the preview engine: the apply's
/// dry run against the deployed release and the CRD verdicts. What cannot be
/// previewed is said in the summary (the bundle waits all the same).
pub(super) async fn pending_summary(
    ctx: &Context,
    extension: &ClusterExtension,
    rendered: &[Value],
    request: &ApplyRequest<'_>,
) -> String {
    let enforcement = extension
        .spec
        .install
        .as_ref()
        .and_then(|i| i.preflight.as_ref())
        .map(|p| p.crd_upgrade_safety.enforcement);
    let mut report = Report::default();
    let mut unknown = Vec::new();
    match ctx.applier.preview(request).await {
        Ok(found) => compare_objects(&mut report, &found),
        Err(e) => unknown.push(format!("objects could not be previewed: {e}")),
    }
    match crd_checks(
        &ctx.client,
        rendered,
        enforcement,
        ctx.settings.call_timeout,
    )
    .await
    {
        Ok(crds) => report.crds = crds,
        Err(e) => unknown.push(format!("CRDs could not be checked: {e}")),
    }
    let mut summary = approval::summary(&report);
    for note in unknown {
        summary.push_str("; ");
        summary.push_str(&note);
    }
    summary
}

/// A resolved bundle waits for approval: nothing new is installed, the deployed release (if
/// any) stays applied and repaired.
pub(super) async fn hold(
    extension: &ClusterExtension,
    ctx: &Context,
    deployed: Option<&Release>,
    bundle: BundleMetadata,
    summary: String,
    findings: &mut Findings,
) -> Result<(), ReconcileError> {
    tracing::info!(extension = %extension.name_any(), bundle = %bundle.name, version = %bundle.version, "resolved bundle awaits approval");
    findings.notes.push(format!(
        "bundle {} ({}) awaits approval (see the Approved condition)",
        bundle.name, bundle.version
    ));
    findings.approval = Some(approval::Finding::Awaiting(PendingApproval {
        bundle,
        summary,
    }));
    match deployed {
        Some(deployed) => maintain(extension, ctx, deployed, findings).await,
        None => Ok(()),
    }
}
