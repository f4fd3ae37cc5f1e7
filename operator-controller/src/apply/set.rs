//! Applying a set: [`Applier::apply`] (the steps are listed in the module above), the prune
//! that follows it, and [`Applier::availability`].
//!
//! Input: an [`ApplyRequest`]. Output: an [`ApplyOutcome`] or an [`ApplyError`]. Network: the
//! Kubernetes API, as the request's identity for everything that reads or writes the set's
//! objects, as the controller for discovery, namespace and ServiceAccount existence,
//! SubjectAccessReviews, the labelled-CRD list and availability reads.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, Preconditions};
use olm_operator_core::apply_plan::managed_fields::{self, FIELD_MANAGER};
use olm_operator_core::apply_plan::ownership::{OWNER_KIND, OWNER_KIND_LABEL, OWNER_NAME_LABEL};
use olm_operator_core::apply_plan::plan::{
    CRD_GROUP, RemovalDecision, RemovalStep, plan, removal_decision,
};
use olm_operator_core::apply_plan::{
    ApplyStep, Availability, Collision, DesiredSet, Gvk, KeepReason, KeptObject, ObjectRef, Owner,
    PlanError, ResourceInfo, deployments_availability,
};
use serde_json::json;
use tokio::time::{Instant, sleep};

use super::call::{bounded, dynamic_api, read_metadata, read_object};
use super::drift::metadata_fingerprint;
use super::error::{ApiFailure, ApplyError};
use super::identity::{client_for, require_permissions, require_service_account};
use super::{AppliedObject, Applier, ApplyOutcome, ApplyRequest};

mod checked;
pub(crate) mod preview;

pub use checked::CheckedReads;
use checked::{Guard, GuardedApplyError, GuardedBody, LiveObject};

/// Longest label value the API server accepts.
const MAX_LABEL_VALUE_LEN: usize = 63;
/// How many objects are read at once before applying.
const READ_CONCURRENCY: usize = 8;
/// Bound of the pause between polls (CRD Established, objects gone).
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(1);

impl Applier {
    /// Makes the cluster match `request.desired` (see the module documentation above for the
    /// steps). On error nothing after the failing step was done; on a collision, a missing
    /// namespace or missing permissions, nothing was written at all.
    pub async fn apply(&self, request: &ApplyRequest<'_>) -> Result<ApplyOutcome, ApplyError> {
        self.apply_checked(request, &CheckedReads::default()).await
    }

    /// [`Applier::apply`] after an [`Applier::check`] of the same objects: what the check saw is
    /// not read again. Each such object is written on condition that it is still as the check
    /// saw it (absent, or at the resourceVersion read); one that changed since is read again
    /// and checked for a collision before it is written, as [`Applier::apply`] does.
    pub async fn apply_checked(
        &self,
        request: &ApplyRequest<'_>,
        checked: &CheckedReads,
    ) -> Result<ApplyOutcome, ApplyError> {
        let owner = request.owner;
        let install_namespace = request.install_namespace;
        let Authorized { plan, client } = self.authorize(request).await?;
        let live = self.read_unchecked(&client, &plan.steps, checked).await?;
        collisions(&plan.steps, live.iter().map(LiveObject::read_now), request)?;

        let mut outcome = ApplyOutcome::default();
        let mut crds_to_establish = Vec::new();
        for (index, (step, live)) in plan.steps.iter().zip(live).enumerate() {
            let (live, applied, took_over) = self
                .write_step(&client, step, live, owner, install_namespace)
                .await?;
            let changed = took_over
                || live
                    .as_ref()
                    .is_none_or(|before| !same_desired_state(before, &applied));
            outcome.applied.push(AppliedObject {
                object: step.object.clone(),
                resource: step.resource.clone(),
                fingerprint: metadata_fingerprint(&applied.metadata),
                resource_version: applied.metadata.resource_version.unwrap_or_default(),
                changed,
            });
            if step.crd.is_some() {
                crds_to_establish.push(step.object.name.clone());
                let next_is_crd = plan.steps.get(index + 1).is_some_and(|s| s.crd.is_some());
                if !next_is_crd {
                    self.wait_established(&client, &crds_to_establish).await?;
                }
            }
        }

        let (pruned, kept) = self
            .prune(&client, owner, install_namespace, &plan.prune)
            .await?;
        outcome.pruned = pruned;
        outcome.kept = kept;
        Ok(outcome)
    }

    /// Writes one step: takes over upstream's managed fields when the live object has them,
    /// then applies. An object the check saw is applied on condition that it is still as seen;
    /// when it is not, it is read again, checked for a collision, and applied as
    /// [`Applier::apply`] would. Returns the live object it wrote over, what the apply returned
    /// and whether the take-over wrote.
    async fn write_step(
        &self,
        client: &Client,
        step: &ApplyStep,
        live: LiveObject,
        owner: &Owner,
        install_namespace: &str,
    ) -> Result<(Option<DynamicObject>, DynamicObject, bool), ApplyError> {
        let (live, guard) = match live {
            LiveObject::Read(live) => (live, None),
            LiveObject::Checked(live) => {
                let guard = Guard::from_checked(live.as_ref());
                (live, Some(guard))
            }
        };
        let took_over = self
            .take_over_fields(client, step, live.as_ref().map(|o| &o.metadata))
            .await?;
        // A take-over wrote (itself on condition of the resourceVersion read): the object is
        // ours and as read, at a newer resourceVersion.
        let guard = guard.filter(|_| !took_over);
        match self.server_side_apply(client, step, guard.as_ref()).await {
            Ok(applied) => Ok((live, applied, took_over)),
            Err(GuardedApplyError::Changed) => {
                let api = dynamic_api(client, &step.resource, step.object.namespace.as_deref());
                let live = read_object(&api, &step.object.name, self.config.call_timeout)
                    .await
                    .map_err(ApplyError::api(format!("read {}", step.object)))?;
                if let Some(collision) =
                    step.collision(live.as_ref().map(|o| &o.metadata), owner, install_namespace)
                {
                    return Err(ApplyError::Collisions(vec![collision]));
                }
                let took_over = self
                    .take_over_fields(client, step, live.as_ref().map(|o| &o.metadata))
                    .await?;
                let applied = self.server_side_apply_unguarded(client, step).await?;
                Ok((live, applied, took_over))
            }
            Err(GuardedApplyError::Failed(e)) => Err(e),
        }
    }

    /// Steps 1–5 of an apply (module documentation): the plan, the namespaces, the
    /// ServiceAccount and its permissions.
    async fn authorize(&self, request: &ApplyRequest<'_>) -> Result<Authorized, ApplyError> {
        let owner = request.owner;
        let install_namespace = request.install_namespace;
        let set = DesiredSet::parse(request.desired).map_err(PlanError::from)?;

        let mut previous = request.previous.to_vec();
        previous.extend(self.labelled_crds(owner).await?);
        let mut kinds = set.kinds_to_discover();
        kinds.extend(previous.iter().map(ObjectRef::gvk));
        let served = self.discovery.resolve(&kinds).await?;
        let plan = plan(&set, owner, install_namespace, &previous, &|gvk| {
            served.get(gvk).cloned()
        })?;

        self.require_namespaces(&plan.namespaces).await?;
        require_service_account(&self.client, request.identity, self.config.call_timeout).await?;
        require_permissions(
            &self.client,
            request.identity,
            plan.access_plan(owner).into_checks(),
            self.config.call_timeout,
        )
        .await?;
        let client = client_for(&self.client, request.identity);
        Ok(Authorized { plan, client })
    }

    /// Steps 1–6 of an apply (module documentation): [`Applier::authorize`], the live objects
    /// and the collision check.
    async fn prepare(&self, request: &ApplyRequest<'_>) -> Result<Prepared, ApplyError> {
        let Authorized { plan, client } = self.authorize(request).await?;
        let live = self.read_objects(&client, &plan.steps).await?;
        collisions(&plan.steps, live.iter().map(Option::as_ref), request)?;
        Ok(Prepared { plan, live, client })
    }

    /// Whether the API server serves `resource` now (a kind a CRD of the set defines is not
    /// served before that CRD exists).
    async fn served_now(&self, resource: &ResourceInfo) -> bool {
        matches!(
            self.discovery.resolve(&BTreeSet::from([resource.gvk.clone()])).await,
            Ok(served) if served.contains_key(&resource.gvk)
        )
    }

    /// CustomResourceDefinitions carrying this extension's owner labels (read as the
    /// controller: metadata of CRDs is not sensitive, and the ServiceAccount needs no `list`).
    pub(crate) async fn labelled_crds(&self, owner: &Owner) -> Result<Vec<ObjectRef>, ApplyError> {
        // A name longer than a label value allows cannot have labelled anything (the API server
        // refuses such labels), and a selector with it would be refused too.
        if owner.name.len() > MAX_LABEL_VALUE_LEN {
            return Ok(Vec::new());
        }
        // The drift watch of CRDs holds exactly what this LIST selects, once it has listed.
        let crd_kind = ResourceInfo {
            gvk: Gvk {
                group: CRD_GROUP.to_owned(),
                version: "v1".to_owned(),
                kind: "CustomResourceDefinition".to_owned(),
            },
            plural: "customresourcedefinitions".to_owned(),
            namespaced: false,
        };
        let cached = self.caches.drift.as_ref().and_then(|drift| {
            // The first call starts the watch (extensions without CRDs would otherwise never
            // have one); until it has listed, the LIST below answers.
            drift.watch(std::slice::from_ref(&crd_kind));
            drift.owned_by(&crd_kind, &owner.name)
        });
        let cached =
            cached.map(|names| names.into_iter().map(|(_, name)| name).collect::<Vec<_>>());
        let names = match cached {
            Some(names) => names,
            None => {
                let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
                let selector = format!(
                    "{OWNER_KIND_LABEL}={OWNER_KIND},{OWNER_NAME_LABEL}={}",
                    owner.name
                );
                bounded(
                    self.config.call_timeout,
                    api.list_metadata(&ListParams::default().labels(&selector)),
                )
                .await
                .map_err(ApplyError::api(
                    "list the CustomResourceDefinitions of this extension",
                ))?
                .items
                .into_iter()
                .filter_map(|crd| crd.metadata.name)
                .collect()
            }
        };
        Ok(names
            .into_iter()
            .map(|name| ObjectRef {
                api_version: format!("{CRD_GROUP}/v1"),
                kind: "CustomResourceDefinition".into(),
                namespace: None,
                name,
            })
            .collect())
    }

    /// Fails listing every namespace of `namespaces` that does not exist.
    async fn require_namespaces(&self, namespaces: &BTreeSet<String>) -> Result<(), ApplyError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let mut missing = Vec::new();
        for namespace in namespaces {
            // A namespace the cache holds exists (or did a moment ago: an apply into one being
            // deleted fails with the API server's own error). One it does not hold may be new:
            // asked.
            let cached = self.caches.namespaces.as_ref().is_some_and(|store| {
                store
                    .get(&kube::runtime::reflector::ObjectRef::new(namespace))
                    .is_some()
            });
            if cached {
                continue;
            }
            let found = bounded(self.config.call_timeout, api.get_metadata_opt(namespace))
                .await
                .map_err(ApplyError::api(format!("read namespace \"{namespace}\"")))?;
            if found.is_none() {
                missing.push(namespace.clone());
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(ApplyError::NamespacesMissing(missing))
        }
    }

    /// Every step's live object (`None`: absent), in step order.
    async fn read_objects(
        &self,
        client: &Client,
        steps: &[ApplyStep],
    ) -> Result<Vec<Option<DynamicObject>>, ApplyError> {
        // Indices, not `&ApplyStep`s, go through the closure: a closure over a reference
        // makes the future not provably `Send` for every lifetime, which a spawned controller
        // needs.
        stream::iter(0..steps.len())
            .map(|i| async move {
                let step = &steps[i];
                // A kind whose CRD is not served yet answers 404 like an absent object: both
                // mean there is nothing to collide with.
                let api = dynamic_api(client, &step.resource, step.object.namespace.as_deref());
                read_object(&api, &step.object.name, self.config.call_timeout)
                    .await
                    .map_err(ApplyError::api(format!("read {}", step.object)))
            })
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await
    }

    /// Every step's live object: what `checked` holds for it, else read now.
    async fn read_unchecked(
        &self,
        client: &Client,
        steps: &[ApplyStep],
        checked: &CheckedReads,
    ) -> Result<Vec<LiveObject>, ApplyError> {
        stream::iter(0..steps.len())
            .map(|i| async move {
                let step = &steps[i];
                if let Some(seen) = checked.seen(step) {
                    return Ok(LiveObject::Checked(seen.cloned()));
                }
                let api = dynamic_api(client, &step.resource, step.object.namespace.as_deref());
                read_object(&api, &step.object.name, self.config.call_timeout)
                    .await
                    .map(LiveObject::Read)
                    .map_err(ApplyError::api(format!("read {}", step.object)))
            })
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await
    }

    /// Moves the fields upstream's Helm client owns on `live` to our field manager, so later
    /// applies can remove fields the bundle stops setting (`apply_plan::managed_fields`). The
    /// patch carries the live resourceVersion: a concurrent change fails it (retried by the
    /// next reconcile) instead of being overwritten. Returns whether it wrote.
    async fn take_over_fields(
        &self,
        client: &Client,
        step: &ApplyStep,
        live: Option<&ObjectMeta>,
    ) -> Result<bool, ApplyError> {
        let Some(live) = live else {
            return Ok(false);
        };
        let Some(entries) = live.managed_fields.as_deref() else {
            return Ok(false);
        };
        let Some(migrated) = managed_fields::migrate(entries, &step.resource.gvk.api_version())
        else {
            return Ok(false);
        };
        let patch = json!({"metadata": {
            "managedFields": migrated,
            "resourceVersion": live.resource_version,
        }});
        let api = dynamic_api(client, &step.resource, step.object.namespace.as_deref());
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        bounded(
            self.config.call_timeout,
            api.patch(&step.object.name, &params, &Patch::Merge(&patch)),
        )
        .await
        .map_err(ApplyError::api(format!(
            "take over the fields of {} from upstream's field manager",
            step.object
        )))?;
        Ok(true)
    }

    /// A forced server-side apply of `step`, on condition of the guard's resourceVersion when
    /// one is given. A guarded apply refused with a conflict is [`GuardedApplyError::Changed`]
    /// (only a condition fails a forced apply with a conflict).
    async fn server_side_apply(
        &self,
        client: &Client,
        step: &ApplyStep,
        guard: Option<&Guard>,
    ) -> Result<DynamicObject, GuardedApplyError> {
        let resource_version = guard.map(Guard::resource_version);
        self.patch_apply(client, step, resource_version)
            .await
            .map_err(|e| {
                if e.is_conflict() && resource_version.is_some() {
                    GuardedApplyError::Changed
                } else {
                    GuardedApplyError::Failed(ApplyError::api(format!("apply {}", step.object))(e))
                }
            })
    }

    /// [`Applier::server_side_apply`] on no condition.
    async fn server_side_apply_unguarded(
        &self,
        client: &Client,
        step: &ApplyStep,
    ) -> Result<DynamicObject, ApplyError> {
        self.patch_apply(client, step, None)
            .await
            .map_err(ApplyError::api(format!("apply {}", step.object)))
    }

    /// The apply call itself. An object whose kind a CRD of the set defines is retried on 404
    /// until the CRD's bound: the API server may serve a just Established CRD's resource a moment
    /// later. A kind still not found is forgotten by discovery.
    async fn patch_apply(
        &self,
        client: &Client,
        step: &ApplyStep,
        resource_version: Option<&str>,
    ) -> Result<DynamicObject, ApiFailure> {
        let api = dynamic_api(client, &step.resource, step.object.namespace.as_deref());
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let deadline = Instant::now() + self.config.crd_established_timeout;
        let mut pause = Duration::from_millis(100);
        let body = GuardedBody {
            body: &step.body,
            resource_version,
        };
        loop {
            match bounded(
                self.config.call_timeout,
                api.patch(&step.object.name, &params, &Patch::Apply(&body)),
            )
            .await
            {
                Ok(object) => return Ok(object),
                Err(e)
                    if e.is_not_found()
                        && step.needs_established_crd.is_some()
                        && Instant::now() < deadline =>
                {
                    sleep(pause).await;
                    pause = (pause * 2).min(MAX_POLL_INTERVAL);
                }
                Err(e) => {
                    if e.is_not_found() {
                        self.discovery.forget(&step.resource.gvk);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Waits until every CRD of `names` is Established; fails at once when the API server
    /// refuses a CRD's names (that does not heal by waiting), or at the bound.
    async fn wait_established(&self, client: &Client, names: &[String]) -> Result<(), ApplyError> {
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let deadline = Instant::now() + self.config.crd_established_timeout;
        let mut pause = Duration::from_millis(50);
        for name in names {
            loop {
                let crd = bounded(self.config.call_timeout, api.get_opt(name))
                    .await
                    .map_err(ApplyError::api(format!(
                        "read CustomResourceDefinition \"{name}\""
                    )))?;
                let conditions = crd
                    .and_then(|c| c.status)
                    .and_then(|s| s.conditions)
                    .unwrap_or_default();
                let condition = |type_: &str| conditions.iter().find(|c| c.type_ == type_);
                if condition("Established").is_some_and(|c| c.status == "True") {
                    break;
                }
                if let Some(refused) = condition("NamesAccepted").filter(|c| c.status == "False") {
                    return Err(ApplyError::CrdNotEstablished {
                        name: name.clone(),
                        detail: format!(
                            "NamesAccepted is False: {}",
                            refused.message.as_deref().unwrap_or("")
                        ),
                    });
                }
                if Instant::now() >= deadline {
                    let detail = match condition("Established") {
                        Some(c) => format!(
                            "Established is {} after {}s: {}",
                            c.status,
                            self.config.crd_established_timeout.as_secs(),
                            c.message.as_deref().unwrap_or("")
                        ),
                        None => format!(
                            "no Established condition after {}s",
                            self.config.crd_established_timeout.as_secs()
                        ),
                    };
                    return Err(ApplyError::CrdNotEstablished {
                        name: name.clone(),
                        detail,
                    });
                }
                sleep(pause).await;
                pause = (pause * 2).min(MAX_POLL_INTERVAL);
            }
        }
        Ok(())
    }

    /// Deletes the removal steps' objects in order, keeping those the table of
    /// [`removal_decision`] keeps and CRDs that still have custom resources.
    async fn prune(
        &self,
        client: &Client,
        owner: &Owner,
        install_namespace: &str,
        removals: &[RemovalStep],
    ) -> Result<(Vec<ObjectRef>, Vec<KeptObject>), ApplyError> {
        let mut pruned = Vec::new();
        let mut kept = Vec::new();
        for removal in removals {
            let api = dynamic_api(
                client,
                &removal.resource,
                removal.object.namespace.as_deref(),
            );
            let live = read_metadata(&api, &removal.object.name, self.config.call_timeout)
                .await
                .map_err(ApplyError::api(format!("read {}", removal.object)))?;
            match removal_decision(live.as_ref(), owner, install_namespace) {
                RemovalDecision::Gone => continue,
                RemovalDecision::Keep(reason) => {
                    kept.push(KeptObject {
                        object: removal.object.clone(),
                        reason,
                    });
                    continue;
                }
                RemovalDecision::Delete => {}
            }
            if removal.custom_resources.is_some() {
                let reason = match self
                    .has_custom_resources(client, &removal.object.name)
                    .await
                {
                    Ok(false) => None,
                    Ok(true) => Some(KeepReason::CustomResourcesExist),
                    Err(why) => Some(KeepReason::CustomResourcesUnknown(why)),
                };
                if let Some(reason) = reason {
                    kept.push(KeptObject {
                        object: removal.object.clone(),
                        reason,
                    });
                    continue;
                }
            }
            let uid = live.and_then(|m| m.uid);
            if self
                .delete_exact(client, &removal.resource, &removal.object, uid)
                .await?
            {
                pruned.push(removal.object.clone());
            }
        }
        Ok((pruned, kept))
    }

    /// Whether any custom resource of the CRD `name` exists, in any namespace. `Err` carries
    /// why that could not be determined.
    async fn has_custom_resources(&self, client: &Client, name: &str) -> Result<bool, String> {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crd = bounded(self.config.call_timeout, crds.get_opt(name))
            .await
            .map_err(|e| e.to_string())?;
        let Some(crd) = crd else {
            return Ok(false);
        };
        let spec = &crd.spec;
        let served: Vec<&str> = spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.as_str())
            .collect();
        let version = spec
            .versions
            .iter()
            .find(|v| v.served && v.storage)
            .map(|v| v.name.as_str())
            .or_else(|| served.first().copied());
        let Some(version) = version else {
            // Nothing served: custom resources cannot be listed, and could still be stored.
            return Err("no version of it is served".into());
        };
        let resource = ResourceInfo {
            gvk: Gvk {
                group: spec.group.clone(),
                version: version.to_owned(),
                kind: spec.names.kind.clone(),
            },
            plural: spec.names.plural.clone(),
            namespaced: spec.scope == "Namespaced",
        };
        let api = dynamic_api(client, &resource, None);
        let list = bounded(
            self.config.call_timeout,
            api.list_metadata(&ListParams::default().limit(1)),
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(!list.items.is_empty())
    }

    /// Deletes one object if it is still the one that was read (`uid` precondition). Returns
    /// false when it was already gone or replaced by another object of the same name.
    pub(crate) async fn delete_exact(
        &self,
        client: &Client,
        resource: &ResourceInfo,
        object: &ObjectRef,
        uid: Option<String>,
    ) -> Result<bool, ApplyError> {
        let api = dynamic_api(client, resource, object.namespace.as_deref());
        let params = DeleteParams {
            preconditions: uid.map(|uid| Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        match bounded(self.config.call_timeout, api.delete(&object.name, &params)).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(false),
            Err(e) => Err(ApplyError::api(format!("delete {object}"))(e)),
        }
    }

    /// The `Available` condition of `deployments` (from [`ApplyOutcome::deployments`]), read
    /// with the controller's identity.
    pub async fn availability(
        &self,
        deployments: &[ObjectRef],
    ) -> Result<Availability, ApplyError> {
        let mut observed = Vec::with_capacity(deployments.len());
        for reference in deployments {
            let resource = ResourceInfo {
                gvk: reference.gvk(),
                plural: "deployments".into(),
                namespaced: true,
            };
            let api = dynamic_api(&self.client, &resource, reference.namespace.as_deref());
            let live = bounded(self.config.call_timeout, api.get_opt(&reference.name))
                .await
                .map_err(ApplyError::api(format!("read {reference}")))?;
            let live = live
                .map(serde_json::to_value)
                .transpose()
                .map_err(|e| ApplyError::Api {
                    action: format!("read {reference}"),
                    source: super::error::ApiFailure::Transport(e.to_string()),
                })?;
            observed.push((reference.clone(), live));
        }
        Ok(deployments_availability(&observed))
    }
}

/// Whether an apply left the parts of an object it can change as they were: everything but
/// `status` (written by controllers, possibly between our read and our write) and the
/// bookkeeping metadata (`resourceVersion`, `managedFields`, `generation`). Compared in place:
/// objects such as CRDs can be megabytes, and cloning both sides of every applied object just
/// to compare them was a copy per object per apply.
fn same_desired_state(before: &DynamicObject, after: &DynamicObject) -> bool {
    same_metadata(&before.metadata, &after.metadata) && same_data(&before.data, &after.data)
}

fn same_metadata(a: &ObjectMeta, b: &ObjectMeta) -> bool {
    // Destructured in full, so a field added to `ObjectMeta` must be placed on one side here.
    let ObjectMeta {
        annotations,
        creation_timestamp,
        deletion_grace_period_seconds,
        deletion_timestamp,
        finalizers,
        generate_name,
        generation: _,
        labels,
        managed_fields: _,
        name,
        namespace,
        owner_references,
        resource_version: _,
        self_link,
        uid,
    } = a;
    *annotations == b.annotations
        && *creation_timestamp == b.creation_timestamp
        && *deletion_grace_period_seconds == b.deletion_grace_period_seconds
        && *deletion_timestamp == b.deletion_timestamp
        && *finalizers == b.finalizers
        && *generate_name == b.generate_name
        && *labels == b.labels
        && *name == b.name
        && *namespace == b.namespace
        && *owner_references == b.owner_references
        && *self_link == b.self_link
        && *uid == b.uid
}

fn same_data(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let fields = |m: &serde_json::Map<String, serde_json::Value>| {
                m.len() - usize::from(m.contains_key("status"))
            };
            fields(a) == fields(b)
                && a.iter()
                    .filter(|(k, _)| k.as_str() != "status")
                    .all(|(k, v)| b.get(k) == Some(v))
        }
        _ => a == b,
    }
}

/// What the checks before an apply found: the plan, every step's live object (in step
/// order) and the client of the request's identity.
struct Prepared {
    plan: olm_operator_core::apply_plan::plan::ApplyPlan,
    live: Vec<Option<DynamicObject>>,
    client: Client,
}

/// A plan whose namespaces, ServiceAccount and permissions were checked, and the client of
/// the request's identity.
struct Authorized {
    plan: olm_operator_core::apply_plan::plan::ApplyPlan,
    client: Client,
}

/// Fails with every collision among `live` (in step order; `None`: absent or not read now).
fn collisions<'a>(
    steps: &[ApplyStep],
    live: impl Iterator<Item = Option<&'a DynamicObject>>,
    request: &ApplyRequest<'_>,
) -> Result<(), ApplyError> {
    let found: Vec<Collision> = steps
        .iter()
        .zip(live)
        .filter_map(|(step, live)| {
            step.collision(
                live.map(|o| &o.metadata),
                request.owner,
                request.install_namespace,
            )
        })
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(ApplyError::Collisions(found))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).expect("an object")
    }

    #[test]
    fn an_apply_changed_nothing_when_only_status_and_bookkeeping_differ() {
        let before = object(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "resourceVersion": "1", "generation": 1,
                "labels": {"a": "b"}},
            "spec": {"replicas": 1},
            "status": {"replicas": 0},
        }));
        let same = object(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "resourceVersion": "2", "generation": 2,
                "labels": {"a": "b"}, "managedFields": [{"manager": "m"}]},
            "spec": {"replicas": 1},
        }));
        assert!(same_desired_state(&before, &same));
        assert!(same_desired_state(&same, &before));

        let relabelled = object(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "labels": {"a": "c"}},
            "spec": {"replicas": 1},
        }));
        assert!(!same_desired_state(&before, &relabelled));
        let rescaled = object(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {"replicas": 2},
        }));
        assert!(!same_desired_state(&before, &rescaled));
        let extra_field = object(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {"replicas": 1},
            "extra": true,
        }));
        assert!(!same_desired_state(&before, &extra_field));
        assert!(!same_desired_state(&extra_field, &before));
    }
}
