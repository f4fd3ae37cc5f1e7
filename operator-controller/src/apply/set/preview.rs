//! [`Applier::preview`]: the checks of [`Applier::check`] with what they read kept, for
//! `operator-controller preview`.
//!
//! Input: an [`ApplyRequest`]. Output: every step's live object and the object a server-side
//! dry run of its apply returns, and what the prune would do with each object the set drops;
//! or the [`ApplyError`] `check` would return. Network: the Kubernetes API, reads and
//! `dryRun=All` applies only; nothing is written.

use olm_operator_core::apply_plan::KeepReason;

use super::*;

/// One object of the set as the apply would find and leave it.
#[derive(Clone, Debug)]
pub struct PreviewedObject {
    pub object: ObjectRef,
    /// The rendered apply body (ownership metadata stamped).
    pub body: serde_json::Value,
    pub live: Option<serde_json::Value>,
    /// `None`: not dry-run (its namespace or the CRD of its kind is created by this apply).
    pub dry_run: Option<serde_json::Value>,
}

/// An object of the previous set that the new set drops.
#[derive(Clone, Debug)]
pub struct PreviewedRemoval {
    pub object: ObjectRef,
    /// `None`: would be deleted.
    pub kept: Option<KeepReason>,
    /// The live object, for deltas of deleted roles and webhook configurations.
    pub live: Option<serde_json::Value>,
}

/// What [`Applier::preview`] found.
#[derive(Clone, Debug, Default)]
pub struct ApplyPreview {
    pub objects: Vec<PreviewedObject>,
    pub removals: Vec<PreviewedRemoval>,
}

impl Applier {
    /// [`Applier::check`]'s checks (plan, namespaces, permissions, live reads, collisions, a
    /// server-side dry run of every object whose kind and namespace exist), failing exactly
    /// where `check` fails, plus the prune's decisions; keeps what it read. Writes nothing.
    pub async fn preview(&self, request: &ApplyRequest<'_>) -> Result<ApplyPreview, ApplyError> {
        let Prepared { plan, live, client } = self.prepare(request).await?;
        let created_namespaces: BTreeSet<&str> = plan
            .steps
            .iter()
            .zip(&live)
            .filter(|(step, live)| step.object.kind == "Namespace" && live.is_none())
            .map(|(step, _)| step.object.name.as_str())
            .collect();
        let mut preview = ApplyPreview::default();
        for (step, live) in plan.steps.iter().zip(live) {
            let skip = step
                .object
                .namespace
                .as_deref()
                .is_some_and(|ns| created_namespaces.contains(ns))
                || (step.needs_established_crd.is_some() && !self.served_now(&step.resource).await);
            let dry_run = if skip {
                None
            } else {
                self.dry_run_object(&client, step).await?
            };
            preview.objects.push(PreviewedObject {
                object: step.object.clone(),
                body: step.body.clone(),
                live: live.map(to_value).transpose()?,
                dry_run: dry_run.map(to_value).transpose()?,
            });
        }
        for removal in &plan.prune {
            let api = dynamic_api(
                &client,
                &removal.resource,
                removal.object.namespace.as_deref(),
            );
            let live = read_object(&api, &removal.object.name, self.config.call_timeout)
                .await
                .map_err(ApplyError::api(format!("read {}", removal.object)))?;
            let kept = match removal_decision(
                live.as_ref().map(|o| &o.metadata),
                request.owner,
                request.install_namespace,
            ) {
                RemovalDecision::Gone => continue,
                RemovalDecision::Keep(reason) => Some(reason),
                RemovalDecision::Delete if removal.custom_resources.is_some() => {
                    match self
                        .has_custom_resources(&client, &removal.object.name)
                        .await
                    {
                        Ok(false) => None,
                        Ok(true) => Some(KeepReason::CustomResourcesExist),
                        Err(why) => Some(KeepReason::CustomResourcesUnknown(why)),
                    }
                }
                RemovalDecision::Delete => None,
            };
            preview.removals.push(PreviewedRemoval {
                object: removal.object.clone(),
                kept,
                live: live.map(to_value).transpose()?,
            });
        }
        Ok(preview)
    }

    /// [`Applier::dry_run_apply`] returning the object the API server would store (`None`
    /// where `dry_run_apply` passes without one: the set's CRD went away since discovery).
    pub(super) async fn dry_run_object(
        &self,
        client: &Client,
        step: &ApplyStep,
    ) -> Result<Option<DynamicObject>, ApplyError> {
        let api = dynamic_api(client, &step.resource, step.object.namespace.as_deref());
        let mut params = PatchParams::apply(FIELD_MANAGER).force();
        params.dry_run = true;
        match bounded(
            self.config.call_timeout,
            api.patch(&step.object.name, &params, &Patch::Apply(&step.body)),
        )
        .await
        {
            Ok(object) => Ok(Some(object)),
            Err(e) if e.is_not_found() && step.needs_established_crd.is_some() => {
                self.discovery.forget(&step.resource.gvk);
                Ok(None)
            }
            Err(e) => Err(ApplyError::api(format!("dry-run apply {}", step.object))(e)),
        }
    }
}

fn to_value(object: DynamicObject) -> Result<serde_json::Value, ApplyError> {
    serde_json::to_value(&object).map_err(|e| ApplyError::Api {
        action: "encode an object read".into(),
        source: super::super::error::ApiFailure::Transport(e.to_string()),
    })
}
