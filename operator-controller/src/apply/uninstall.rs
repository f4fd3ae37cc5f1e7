//! Uninstall: delete what an extension installed, in reverse install order, without relying
//! on a garbage collector.
//!
//! Input: an [`UninstallRequest`] (the installed release's objects). Output: an
//! [`UninstallOutcome`]: deleted, kept, and still present after the bounded wait. Network:
//! the Kubernetes API (discovery and the labelled-CRD list as the controller; reads and
//! deletes as the request's identity, after a SubjectAccessReview preflight for a
//! ServiceAccount).
//!
//! | installed object | action |
//! |---|---|
//! | gone, or its kind no longer served | nothing |
//! | `helm.sh/resource-policy: keep` | kept |
//! | no longer this extension's (see `apply_plan::ownership`) | kept, reported |
//! | ours (CustomResourceDefinitions included, as upstream's garbage collection does) | deleted with a uid precondition, then awaited |
//!
//! CustomResourceDefinitions labelled as this extension's but absent from the release (kept by
//! an earlier upgrade for their custom resources) are removed too: uninstalling removes
//! everything the extension brought. Deleting a CRD removes its custom resources; that is the
//! explicit uninstall upstream performs as well.

use std::collections::BTreeSet;
use std::time::Duration;

use olm_operator_core::apply_plan::plan::{
    RemovalDecision, checked, removal_decision, removal_order,
};
use olm_operator_core::apply_plan::{AccessPlan, KeptObject, ObjectRef};
use tokio::time::{Instant, sleep};

use super::call::{dynamic_api, read_metadata};
use super::error::ApplyError;
use super::identity::{client_for, require_permissions, require_service_account};
use super::{Applier, UninstallOutcome, UninstallRequest};

impl Applier {
    /// Deletes every object of `request.installed` (see the module table) and waits, up to
    /// [`super::ApplierConfig::uninstall_wait`], until they are gone.
    pub async fn uninstall(
        &self,
        request: &UninstallRequest<'_>,
    ) -> Result<UninstallOutcome, ApplyError> {
        let owner = request.owner;
        let install_namespace = request.install_namespace;
        let mut installed = request.installed.to_vec();
        installed.extend(self.labelled_crds(owner).await?);
        let kinds: BTreeSet<_> = installed.iter().map(ObjectRef::gvk).collect();
        let served = self.discovery.resolve(&kinds).await?;
        let (steps, _gone_with_their_kind) = removal_order(&installed, install_namespace, &|gvk| {
            served.get(gvk).cloned()
        });

        require_service_account(&self.client, request.identity, self.config.call_timeout).await?;
        let mut access = AccessPlan::new();
        for step in &steps {
            access.delete(checked(&step.object, &step.resource));
        }
        require_permissions(
            &self.client,
            request.identity,
            access.into_checks(),
            self.config.call_timeout,
        )
        .await?;
        let client = client_for(&self.client, request.identity);

        let mut outcome = UninstallOutcome::default();
        let mut deleted = Vec::new();
        for step in &steps {
            let api = dynamic_api(&client, &step.resource, step.object.namespace.as_deref());
            let live = read_metadata(&api, &step.object.name, self.config.call_timeout)
                .await
                .map_err(ApplyError::api(format!("read {}", step.object)))?;
            match removal_decision(live.as_ref(), owner, install_namespace) {
                RemovalDecision::Gone => {}
                RemovalDecision::Keep(reason) => outcome.kept.push(KeptObject {
                    object: step.object.clone(),
                    reason,
                }),
                RemovalDecision::Delete => {
                    let uid = live.and_then(|m| m.uid);
                    if self
                        .delete_exact(&client, &step.resource, &step.object, uid.clone())
                        .await?
                    {
                        deleted.push((step, uid));
                    }
                }
            }
        }

        // Wait until every deleted object is gone (or replaced by a new object of the same
        // name, which is not ours to wait for).
        let deadline = Instant::now() + self.config.uninstall_wait;
        let mut pause = Duration::from_millis(50);
        let mut pending = deleted;
        loop {
            let mut still = Vec::new();
            for (step, uid) in pending {
                let api = dynamic_api(&client, &step.resource, step.object.namespace.as_deref());
                let live = read_metadata(&api, &step.object.name, self.config.call_timeout)
                    .await
                    .map_err(ApplyError::api(format!("read {}", step.object)))?;
                let same = live.is_some_and(|m| m.uid == uid);
                if same {
                    still.push((step, uid));
                } else {
                    outcome.deleted.push(step.object.clone());
                }
            }
            pending = still;
            if pending.is_empty() || Instant::now() >= deadline {
                break;
            }
            sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
        outcome.remaining = pending.into_iter().map(|(s, _)| s.object.clone()).collect();
        Ok(outcome)
    }
}
