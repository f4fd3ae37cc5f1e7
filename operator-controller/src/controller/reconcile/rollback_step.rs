//! Guarded rollback (issue 26, `spec.install.rollback.mode: OnFailure`): an upgrade on
//! probation whose Deployments are not Available by its deadline, or whose apply failed
//! part-way, returns to the release it replaced, but only when that is safe for stored data;
//! and a rolled-back bundle is not retried until the spec or the resolved bundle changes.
//!
//! Input: the extension, its release records, the Deployment watch. Output: release records
//! (`pending-rollback` → `deployed`, the failed upgrade marked rolled back), the previous
//! release's objects applied, the `Progressing` note in the findings. Network: the Kubernetes
//! API (CRDs and their custom resources read for the safety check, a dry run, the apply, the
//! release Secrets). The decisions are `olm_operator_core::release::rollback`'s.
//!
//! | situation | what happens |
//! |---|---|
//! | upgrade on probation, Deployments Available | it leaves probation (one record update) |
//! | on probation, not Available, deadline ahead | requeued for the deadline |
//! | on probation, deadline passed (or the upgrade's apply failed) | safety check → dry run → `pending-rollback` record → apply → records; `Progressing` True/`Retrying` names the failed version and why |
//! | the previous release's CRDs do not serve a stored version, a stored object fails its schema, or the dry run fails | nothing is written; the upgrade stays; `Progressing` True/`Retrying` says what prevents the rollback; looked at again every 5 minutes |
//! | the failed bundle resolves again at the same generation | not retried: the rolled-back release stays applied and repaired, `Progressing` True/`Retrying` |

use olm_operator_core::release::rollback::{self, Probation};

use super::*;
use crate::controller::error::RollbackError;

/// How often a refused rollback is looked at again (the stored data may change).
const REFUSED_RECHECK: Duration = Duration::from_secs(300);

/// The deployed upgrade's probation. Returns whether it was rolled back (the reconcile is then
/// over).
pub(super) async fn probation(
    extension: &ClusterExtension,
    ctx: &Context,
    releases: &mut Vec<Release>,
    deadline_minutes: i32,
    findings: &mut Findings,
) -> Result<bool, RollbackError> {
    let Some(watched) = rollback::watched(releases) else {
        return Ok(false);
    };
    let (upgrade, previous) = (watched.upgrade.version, watched.previous.version);
    let name = extension.name_any();
    let deployed = release_deployments(ctx, extension, watched.upgrade);
    let Available::Observed(availability) = available(ctx, &name, &deployed).await else {
        return Ok(false);
    };
    let verdict = rollback::probation(
        watched.upgrade,
        &availability,
        k8s_openapi::jiff::Timestamp::now(),
        deadline_minutes,
    );
    tracing::debug!(extension = %name, version = upgrade, ?verdict, "upgrade on probation");
    match verdict {
        Probation::Passed => {
            let owner_ref = cluster_extension_owner_reference(&name, &uid(extension));
            if let Some(release) = releases.iter_mut().find(|r| r.version == upgrade) {
                rollback::pass_probation(release);
                ctx.store
                    .update(release, &owner_ref, now_secs())
                    .await
                    .map_err(|source| RollbackError::Probation {
                        bundle: bundle_text(release),
                        source,
                    })?;
                tracing::info!(extension = %name, version = upgrade, "upgrade Available: off probation");
            }
            Ok(false)
        }
        Probation::Waiting { recheck_secs } => {
            findings.rollback_recheck = Some(Duration::from_secs(recheck_secs.max(1) as u64));
            Ok(false)
        }
        Probation::Failed { why } => {
            tracing::info!(extension = %name, version = upgrade, why = %why, "upgrade failed its probation; rolling back");
            roll_back(extension, ctx, releases, upgrade, previous, &why, findings).await
        }
    }
}

/// `Progressing`'s note while a rolled-back bundle resolves again unchanged; `None` when the
/// resolved bundle may be tried.
pub(super) fn not_retried(
    extension: &ClusterExtension,
    releases: &[Release],
    bundle: release_plan::BundleIdentity<'_>,
) -> Option<String> {
    let rolled_back = rollback::rolled_back(releases)?;
    rolled_back
        .holds(extension.metadata.generation, bundle)
        .then(|| rolled_back.message(&extension.name_any()))
}

/// Returns to the release `target` after the upgrade `failed` failed for `why`, when that is
/// safe. `Ok(true)`: rolled back; `Ok(false)`: refused, and `findings` says why.
#[allow(clippy::too_many_arguments)]
pub(super) async fn roll_back(
    extension: &ClusterExtension,
    ctx: &Context,
    releases: &mut Vec<Release>,
    failed: i64,
    target: i64,
    why: &str,
    findings: &mut Findings,
) -> Result<bool, RollbackError> {
    let name = extension.name_any();
    let (Some(failed_release), Some(target_release)) = (
        releases.iter().find(|r| r.version == failed).cloned(),
        releases.iter().find(|r| r.version == target).cloned(),
    ) else {
        return Ok(false);
    };
    let target_text = bundle_text(&target_release);
    let refuse = |findings: &mut Findings, reason: String| {
        tracing::info!(extension = %name, reason = %reason, "rollback refused");
        findings.rollback_note = Some(format!(
            "upgrade to {} failed: {why}; rolling back to {target_text} is unsafe, so the upgrade stays installed: {reason}",
            bundle_text(&failed_release)
        ));
        findings.rollback_recheck = Some(REFUSED_RECHECK);
        ctx.metrics.set_rollback_refused(&name, true);
    };
    let mut desired =
        manifest_objects(&target_release.manifest).map_err(|source| RollbackError::Manifest {
            target: target_text.clone(),
            source,
        })?;
    if let Err(reason) = safe_to_return(ctx, &target_release, &desired).await {
        refuse(findings, reason);
        return Ok(false);
    }
    builtin_certificates(extension, ctx, &mut desired, findings)
        .await
        .map_err(|source| RollbackError::Certificates {
            target: target_text.clone(),
            source,
        })?;
    let previous = release_refs(&failed_release).map_err(|source| RollbackError::Manifest {
        target: target_text.clone(),
        source,
    })?;
    let owner = Owner {
        name: name.clone(),
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
    let checked = match ctx.applier.check(&request).await {
        Ok(checked) => checked,
        Err(e) => {
            refuse(
                findings,
                format!("the dry run of the previous release fails: {e}"),
            );
            return Ok(false);
        }
    };

    // Every check passed: record, apply, record.
    let owner_ref = cluster_extension_owner_reference(&name, &uid(extension));
    let record = rollback::rollback_release(
        releases,
        &target_release,
        extension.metadata.generation.unwrap_or_default(),
        k8s_openapi::jiff::Timestamp::now(),
    );
    let recording = |source| RollbackError::Record {
        target: target_text.clone(),
        source,
    };
    let written = ctx
        .store
        .create_after(&record, &owner_ref, now_secs(), None)
        .await
        .map_err(recording)?;
    let applied = ctx.applier.apply_checked(&request, &checked).await;
    let changes = rollback::after_rollback(
        releases,
        &name,
        failed,
        record.version,
        target,
        why,
        match &applied {
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
        .as_ref()
        .map(|_| ())
        .map_err(String::as_str),
    );
    let mut written = (record, written);
    let recorded = record_changes(ctx, &owner_ref, releases, Some(&mut written), &changes).await;
    releases.push(written.0);
    let outcome = applied.map_err(|source| RollbackError::Apply {
        target: target_text.clone(),
        source,
    })?;
    recorded.map_err(recording)?;

    ctx.last_applies
        .record(&name, last_apply::request_digest(&request), &outcome);
    ctx.set_rendered(&name, None);
    ctx.set_preflight_notes(&name, None);
    let deployments = deployments_of(&desired, &extension.spec.namespace);
    if let Some(deployed) = history::deployed(releases) {
        ctx.deployed
            .set(&name, deployed.version, deployments.clone());
    }
    findings.deployed = Deployed::Release(deployments);
    if let Some(bundle) = history::installed_bundle(releases) {
        findings.installed = installed_finding(&bundle);
    }
    findings.rollback_note = rollback::rolled_back(releases).map(|r| r.message(&name));
    ctx.metrics.rollback_performed();
    ctx.metrics.set_rollback_refused(&name, false);
    tracing::info!(extension = %name, target = %target_text, "rolled back");
    after_apply(ctx, &name, &outcome, findings).await;
    Ok(true)
}

/// Whether installing `target` again is safe for stored data: every CRD it ships still serves
/// every version the live CRD stores objects in, and the CRD upgrade-safety check run from the
/// live CRDs back to the target's, data-aware, lets it through. `Err` names the CRD or object
/// that prevents it.
async fn safe_to_return(ctx: &Context, target: &Release, objects: &[Value]) -> Result<(), String> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    let mut problems = Vec::new();
    for crd in objects.iter().filter(|o| {
        o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
            && o.get("apiVersion").and_then(Value::as_str) == Some("apiextensions.k8s.io/v1")
    }) {
        let crd_name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let live = tokio::time::timeout(ctx.settings.call_timeout, crds.get_opt(crd_name))
            .await
            .map_err(|_| format!("reading CRD {crd_name:?}: no answer from the API server"))?
            .map_err(|e| format!("reading CRD {crd_name:?}: {e}"))?;
        let Some(live) = live else { continue };
        let live = serde_json::to_value(&live).map_err(|e| e.to_string())?;
        problems.extend(rollback::unserved_stored_versions(&live, crd));
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    let label = |k| target.label(k).unwrap_or_default().to_owned();
    crd_upgrade_safety(
        &ctx.client,
        &PreflightRequest {
            objects,
            enforcement: Some(olm_api::v1::CrdUpgradeSafetyEnforcement::Strict),
            data_aware: true,
            bundle: &label(history::BUNDLE_NAME_LABEL),
            version: &label(history::BUNDLE_VERSION_LABEL),
            call_timeout: ctx.settings.call_timeout,
        },
    )
    .await
    .map(drop)
    .map_err(|e| format!("the CRD upgrade-safety check from the installed CRDs back to the previous release's refuses: {e}"))
}

/// `<bundle name> (<version>)` from a record's labels.
fn bundle_text(release: &Release) -> String {
    format!(
        "{} ({})",
        release
            .label(history::BUNDLE_NAME_LABEL)
            .unwrap_or_default(),
        release
            .label(history::BUNDLE_VERSION_LABEL)
            .unwrap_or_default()
    )
}
