//! The apply layer: writes an extension's objects to the cluster and keeps them there.
//!
//! Input: the owning ClusterExtension ([`Owner`]: name, uid), its install namespace, its
//! [`Identity`] (`spec.serviceAccount`), the rendered objects (JSON with `apiVersion`, `kind`,
//! `metadata`) and the previous release's object references. Output: an [`ApplyOutcome`] (what
//! was written, pruned, kept) or an [`ApplyError`] that knows its condition reason. Network:
//! the Kubernetes API only (discovery, SubjectAccessReviews, reads, server-side apply,
//! deletes, watches). The decisions are in `olm_operator_core::apply_plan`; this module does
//! their IO.
//!
//! # Using it (the reconcile pipeline)
//!
//! ```text
//! let applier = Applier::new(client.clone());
//! let (drift, mut drift_events) = DriftWatches::new(client, 1024);
//! // reconcile, after render and preflight:
//! let outcome = applier.apply(&ApplyRequest { owner, install_namespace, identity, desired, previous }).await?;
//! drift.watch(&outcome.kinds());                     // re-queue on drift
//! record the release (the desired set) …
//! let available = applier.availability(&outcome.deployments()).await?;
//! outcome.kept_crds_message()                        // mention in the status when Some
//! // on deletion, before removing the finalizer:
//! let gone = applier.uninstall(&UninstallRequest { owner, install_namespace, identity, installed }).await?;
//! if !gone.is_complete() { requeue } else { delete the release Secrets, remove the finalizer }
//! // elsewhere: drift_events.recv() → enqueue event.extension
//! ```
//!
//! # One apply, step by step
//!
//! 1. Parse the rendered set (an invalid object is named by position and kind).
//! 2. Removal candidates: the previous release's objects plus CustomResourceDefinitions
//!    labelled as this extension's (one kept by an earlier upgrade for its custom resources
//!    stays a candidate until they are gone).
//! 3. Resolve kinds ([`Discovery`], cached); kinds a CRD of the set defines come from that CRD.
//! 4. Every namespace an object goes to must exist (upstream never creates it either).
//! 5. `spec.serviceAccount` set: the ServiceAccount must exist, and every permission of the
//!    plan is checked with SubjectAccessReviews; all missing ones are reported in one message.
//! 6. Read every object of the set (as the identity). An existing object that is not ours is a
//!    collision; all collisions are reported with upstream's message and **nothing is
//!    written**. After an [`Applier::check`] (the controller's install and upgrade path), the
//!    check's reads stand in for these: its dry run tells which objects exist, only those are
//!    read, and [`Applier::apply_checked`] writes each object on condition that it is still as
//!    the check saw it (its resourceVersion, or absent); one that changed is read again and
//!    checked for a collision before it is written.
//! 7. Write in Helm's install order with server-side apply (`force`), field manager
//!    `operator-controller`, after moving fields upstream's Helm client owns to our manager
//!    (`apply_plan::managed_fields`). The set's CRDs are Established before anything after
//!    them is written (bounded wait).
//! 8. Prune in reverse order what the new set dropped, unless `helm.sh/resource-policy: keep`,
//!    not ours any more, or a CRD with custom resources (kept and reported in
//!    [`ApplyOutcome::kept`], never deleted as a side effect of an upgrade).
//!
//! Objects are written one at a time: an apply that fails part way leaves what it wrote, and
//! the next apply (same or new set) converges, as a Helm upgrade does.

mod call;
pub mod discovery;
pub mod drift;
pub mod error;
pub mod identity;
mod set;
mod uninstall;

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::core::PartialObjectMeta;
use olm_operator_core::apply_plan::plan::{CRD_KIND, kept_crds_message};
use serde_json::Value;

pub use discovery::Discovery;
pub use drift::{DriftChange, DriftEvent, DriftWatches, metadata_fingerprint};
pub use error::{ApiFailure, ApplyError};
pub use olm_operator_core::apply_plan::{
    Availability, Identity, KeepReason, KeptObject, ObjectRef, Owner, ResourceInfo,
};
pub use set::CheckedReads;
pub use set::preview::{ApplyPreview, PreviewedObject, PreviewedRemoval};

/// Time bounds of the apply layer. The defaults suit a controller; tests may shorten them.
#[derive(Clone, Debug)]
pub struct ApplierConfig {
    /// Bound of every single API call.
    pub call_timeout: Duration,
    /// How long a CustomResourceDefinition of the set may take to become Established.
    pub crd_established_timeout: Duration,
    /// How long an uninstall waits for deleted objects to disappear before reporting the
    /// ones that remain.
    pub uninstall_wait: Duration,
}

impl Default for ApplierConfig {
    fn default() -> ApplierConfig {
        ApplierConfig {
            call_timeout: Duration::from_secs(30),
            crd_established_timeout: Duration::from_secs(60),
            uninstall_wait: Duration::from_secs(30),
        }
    }
}

/// Applies, prunes and uninstalls extensions' objects. Cheap to clone; one per controller.
#[derive(Clone)]
pub struct Applier {
    /// The controller's own identity (discovery, SubjectAccessReviews, namespace checks).
    client: Client,
    discovery: Discovery,
    config: ApplierConfig,
    /// Caches that answer reads without a request when they can: the drift watches (the
    /// extension's labelled CRDs) and the namespaces the controller watches.
    caches: Caches,
}

/// What an [`Applier`] may read from instead of the API server. Each answer it cannot give
/// (not listed yet, or the object absent where a cache may lag) falls back to a request.
#[derive(Clone, Default)]
pub struct Caches {
    pub drift: Option<DriftWatches>,
    pub namespaces: Option<kube::runtime::reflector::Store<PartialObjectMeta<Namespace>>>,
}

impl Applier {
    pub fn new(client: Client) -> Applier {
        Applier::with_config(client, ApplierConfig::default())
    }

    pub fn with_config(client: Client, config: ApplierConfig) -> Applier {
        Applier {
            discovery: Discovery::new(client.clone(), config.call_timeout),
            client,
            config,
            caches: Caches::default(),
        }
    }

    /// With caches to read from before asking the API server.
    pub fn with_caches(mut self, caches: Caches) -> Applier {
        self.caches = caches;
        self
    }

    /// The discovery cache (shared with drift watches' callers that need kinds resolved).
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }
}

/// What to apply for one extension.
#[derive(Clone, Copy, Debug)]
pub struct ApplyRequest<'a> {
    pub owner: &'a Owner,
    pub install_namespace: &'a str,
    pub identity: &'a Identity,
    /// The rendered objects, in rendered order.
    pub desired: &'a [Value],
    /// The objects of the installed release (empty for a first install).
    pub previous: &'a [ObjectRef],
}

/// One object written by an apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedObject {
    /// With the namespace it lives in (`None`: cluster-scoped).
    pub object: ObjectRef,
    pub resource: ResourceInfo,
    /// After the apply.
    pub resource_version: String,
    /// [`drift::metadata_fingerprint`] after the apply: what the drift watch compares.
    pub fingerprint: u64,
    /// Whether the apply changed the object: created it, changed its metadata or content
    /// (`status` and bookkeeping metadata aside, which controllers write concurrently), or
    /// took over upstream's managed fields.
    pub changed: bool,
}

/// What an apply did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyOutcome {
    /// Every object of the set, in apply order.
    pub applied: Vec<AppliedObject>,
    /// Objects of the previous set deleted because the new set dropped them.
    pub pruned: Vec<ObjectRef>,
    /// Objects of the previous set the new set dropped but that stay, with the reason.
    pub kept: Vec<KeptObject>,
}

impl ApplyOutcome {
    /// The objects the apply changed (see [`AppliedObject::changed`]).
    pub fn changed(&self) -> impl Iterator<Item = &ObjectRef> {
        self.applied.iter().filter(|a| a.changed).map(|a| &a.object)
    }

    /// The kinds written, for [`DriftWatches::watch`].
    pub fn kinds(&self) -> Vec<ResourceInfo> {
        let mut kinds: Vec<ResourceInfo> = Vec::new();
        for applied in &self.applied {
            if !kinds.contains(&applied.resource) {
                kinds.push(applied.resource.clone());
            }
        }
        kinds
    }

    /// The Deployments written, for [`Applier::availability`].
    pub fn deployments(&self) -> Vec<ObjectRef> {
        self.applied
            .iter()
            .filter(|a| a.resource.gvk.group == "apps" && a.resource.gvk.kind == "Deployment")
            .map(|a| a.object.clone())
            .collect()
    }

    /// CustomResourceDefinitions kept because custom resources of them exist.
    pub fn kept_crds(&self) -> impl Iterator<Item = &KeptObject> {
        self.kept
            .iter()
            .filter(|k| k.object.kind == CRD_KIND && k.reason == KeepReason::CustomResourcesExist)
    }

    /// A sentence for the status about kept CustomResourceDefinitions, if any.
    pub fn kept_crds_message(&self) -> Option<String> {
        kept_crds_message(&self.kept)
    }
}

/// What to remove for one extension.
#[derive(Clone, Copy, Debug)]
pub struct UninstallRequest<'a> {
    pub owner: &'a Owner,
    pub install_namespace: &'a str,
    /// Whose permissions the deletes use. When the ServiceAccount is gone the uninstall fails
    /// with [`ApplyError::ServiceAccountNotFound`]; falling back to
    /// [`Identity::Controller`] is the caller's explicit decision.
    pub identity: &'a Identity,
    /// The objects of the installed release.
    pub installed: &'a [ObjectRef],
}

/// What an uninstall did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UninstallOutcome {
    /// Objects deleted (and gone) by this uninstall.
    pub deleted: Vec<ObjectRef>,
    /// Objects that stay: `helm.sh/resource-policy: keep`, or no longer this extension's.
    pub kept: Vec<KeptObject>,
    /// Objects deleted but still present when the wait ended (finalizers pending).
    pub remaining: Vec<ObjectRef>,
}

impl UninstallOutcome {
    /// True when nothing the uninstall deleted remains: the finalizer may go.
    pub fn is_complete(&self) -> bool {
        self.remaining.is_empty()
    }
}
