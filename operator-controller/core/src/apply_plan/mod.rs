//! The decisions of the apply layer: what is written to the cluster for an extension, in which
//! order, with which ownership metadata, what is removed, what it takes in permissions, and
//! whether the result is available.
//!
//! Input: rendered objects (JSON), the owning ClusterExtension, the install namespace, the
//! previous release's object references, how kinds are served, and live objects' metadata the
//! IO side read. Output: plans, verdicts and messages. Pure: no network, no Kubernetes client;
//! `operator_controller::apply` does the IO.
//!
//! - [`object`]: kinds, references, identities of objects; parsing rendered objects.
//! - [`order`]: install order (Helm's) and removal order (its reverse).
//! - [`ownership`]: the ownership metadata we stamp, the collision rule and upstream's message.
//! - [`managed_fields`]: our field manager and the takeover of upstream's Helm-written fields.
//! - [`permissions`]: the identity, the SubjectAccessReview verb plan, the missing-permission message.
//! - [`plan`]: one apply's steps, prune list, namespaces; removal decisions; kept-CRD message.
//! - [`availability`]: the `Available` condition from the applied Deployments.

pub mod availability;
pub mod managed_fields;
pub mod object;
pub mod order;
pub mod ownership;
pub mod permissions;
pub mod plan;

pub use availability::{Availability, deployments_availability};
pub use object::{Gvk, InvalidObject, ObjectKey, ObjectRef, RenderedObject, ResourceInfo};
pub use ownership::{Collision, Owner};
pub use permissions::{AccessCheck, AccessPlan, Identity};
pub use plan::{
    ApplyPlan, ApplyStep, DesiredSet, KeepReason, KeptObject, PlanError, RemovalDecision,
    RemovalStep,
};
