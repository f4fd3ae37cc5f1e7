//! What the reconcile records and reports about the installed release: the record changes after
//! an apply, the Deployments a release lists, and `Available` from live state.
//!
//! Input: the [`Context`], release records, the extension. Output: release Secret updates, the
//! `Available` decision. Network: the Kubernetes API (release Secrets; a Deployment read only
//! without the Deployment watch).

use super::*;

/// `Available` for the status write: from live state whatever step the reconcile stopped at
/// ([`super::availability`]'s table). An unreadable history with Deployments known from an
/// earlier reconcile of this process uses those; without them the condition is Unknown.
pub(super) async fn available(ctx: &Context, extension: &str, deployed: &Deployed) -> Available {
    let deployments = match deployed {
        Deployed::Nothing => return Available::Clear,
        Deployed::Release(deployments) => deployments.clone(),
        Deployed::Unknown => match ctx.deployed.get(extension) {
            Some(deployments) => deployments,
            None => {
                return Available::Observed(Availability {
                    status: ConditionStatus::Unknown,
                    reason: ConditionReason::ProbeFailure,
                    message: "the installed release could not be read".to_owned(),
                });
            }
        },
    };
    match &ctx.deployment_watch {
        Some(watch) => Available::Observed(watch.availability(&deployments)),
        None => match ctx.applier.availability(&deployments).await {
            Ok(availability) => Available::Observed(availability),
            Err(e) => Available::Observed(Availability {
                status: ConditionStatus::Unknown,
                reason: ConditionReason::ProbeFailure,
                message: e.to_string(),
            }),
        },
    }
}

/// The Deployments `release` lists (remembered per release version, so a manifest is parsed
/// once).
pub(super) fn release_deployments(
    ctx: &Context,
    extension: &ClusterExtension,
    release: &Release,
) -> Deployed {
    let name = extension.name_any();
    if let Some(deployments) = ctx.deployed.of_version(&name, release.version) {
        return Deployed::Release(deployments);
    }
    match manifest_objects(&release.manifest) {
        Ok(objects) => {
            let deployments = deployments_of(&objects, &extension.spec.namespace);
            ctx.deployed
                .set(&name, release.version, deployments.clone());
            Deployed::Release(deployments)
        }
        Err(e) => {
            tracing::info!(extension = %name, error = %e, "the deployed release's manifest cannot be read");
            Deployed::Unknown
        }
    }
}

/// Writes the record changes of [`ReleaseAction::after_apply`]: to the record written before the
/// apply (`written`) or to a record of `releases` (a superseded or a retried failed one).
pub(super) async fn record_changes(
    ctx: &Context,
    owner_ref: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
    releases: &mut [Release],
    mut written: Option<&mut (Release, Written)>,
    changes: &[RecordChange],
) -> Result<(), crate::storage::StoreError> {
    for change in changes {
        let version = change.version();
        let apply_change = |release: &mut Release| change.apply_to(release);
        match written.as_deref_mut() {
            Some((release, written)) if release.version == version => {
                apply_change(release);
                ctx.store
                    .update_after(release, owner_ref, now_secs(), Some(written))
                    .await?;
            }
            _ => {
                if let Some(release) = releases.iter_mut().find(|r| r.version == version) {
                    apply_change(release);
                    ctx.store.update(release, owner_ref, now_secs()).await?;
                }
            }
        }
    }
    Ok(())
}
