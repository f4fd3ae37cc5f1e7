//! [`Applier::check`]: every check an apply makes before its first write, and a server-side
//! dry run of each object; what it saw ([`CheckedReads`]) lets the apply that follows write
//! without reading each object again.
//!
//! Input: an [`ApplyRequest`]. Output: [`CheckedReads`] or the [`ApplyError`] the apply would
//! fail with before writing. Network: the Kubernetes API, reads and `dryRun=All` applies only;
//! nothing is written.
//!
//! Why the reads can be kept: the apply writes each object the check saw on condition that it
//! is still as seen. For an object that existed, the condition is its resourceVersion. For
//! one that did not, it is a resourceVersion no stored object can have ([`ABSENT`]): the API
//! server ignores a resourceVersion when an apply creates the object, and refuses it with a
//! conflict when the object exists. A refused write is read again and checked for a
//! collision, so an object someone else created after the check is never taken over.

use std::collections::HashMap;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::*;

/// The resourceVersion an apply carries for an object the check found absent. etcd's
/// revisions start at 1 for the empty store and every write gets a higher one, so no object
/// is ever stored at revision 1: the condition holds exactly while the object does not exist.
const ABSENT: &str = "1";

/// What [`Applier::check`] saw of each object of the set, for [`Applier::apply_checked`].
#[derive(Clone, Debug, Default)]
pub struct CheckedReads {
    /// Keyed by the object with its namespace; `None`: it did not exist.
    seen: HashMap<ObjectRef, Option<DynamicObject>>,
}

impl CheckedReads {
    /// What the check saw of `step`'s object (`Some(None)`: absent), `None` when it did not
    /// look at it.
    pub(super) fn seen(&self, step: &ApplyStep) -> Option<Option<&DynamicObject>> {
        self.seen.get(&step.object).map(Option::as_ref)
    }

    /// How many objects the check saw.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// A step's live object as the apply knows it.
pub(super) enum LiveObject {
    /// Read by the apply itself (`None`: absent); checked for collisions before any write.
    Read(Option<DynamicObject>),
    /// As the check saw it; written on that condition ([`Guard`]).
    Checked(Option<DynamicObject>),
}

impl LiveObject {
    /// The object read by the apply itself (the ones its collision check looks at).
    pub(super) fn read_now(&self) -> Option<&DynamicObject> {
        match self {
            LiveObject::Read(live) => live.as_ref(),
            LiveObject::Checked(_) => None,
        }
    }
}

/// The condition an apply is written on: the object is still at this resourceVersion, or
/// still absent ([`ABSENT`]).
pub(super) struct Guard {
    resource_version: String,
}

impl Guard {
    pub(super) fn from_checked(live: Option<&DynamicObject>) -> Guard {
        let resource_version = live
            .and_then(|o| o.metadata.resource_version.clone())
            .filter(|rv| !rv.is_empty())
            .unwrap_or_else(|| ABSENT.to_owned());
        Guard { resource_version }
    }

    pub(super) fn resource_version(&self) -> &str {
        &self.resource_version
    }
}

/// Why a server-side apply did not write.
pub(super) enum GuardedApplyError {
    /// Its guard failed: the object is not as the check saw it.
    Changed,
    Failed(ApplyError),
}

/// An apply body with `metadata.resourceVersion` set when a guard is given, serialized in
/// place (bodies such as CRDs can be megabytes; no copy is made to add one field).
#[derive(Debug)]
pub(super) struct GuardedBody<'a> {
    pub(super) body: &'a serde_json::Value,
    pub(super) resource_version: Option<&'a str>,
}

impl Serialize for GuardedBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (Some(resource_version), serde_json::Value::Object(top)) =
            (self.resource_version, self.body)
        else {
            return self.body.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        let mut wrote_metadata = false;
        for (key, value) in top {
            match (key.as_str(), value) {
                ("metadata", serde_json::Value::Object(metadata)) => {
                    map.serialize_entry(
                        key,
                        &WithResourceVersion {
                            metadata,
                            resource_version,
                        },
                    )?;
                    wrote_metadata = true;
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        if !wrote_metadata {
            map.serialize_entry(
                "metadata",
                &WithResourceVersion {
                    metadata: &serde_json::Map::new(),
                    resource_version,
                },
            )?;
        }
        map.end()
    }
}

struct WithResourceVersion<'a> {
    metadata: &'a serde_json::Map<String, serde_json::Value>,
    resource_version: &'a str,
}

impl Serialize for WithResourceVersion<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.metadata {
            if key != "resourceVersion" {
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry("resourceVersion", self.resource_version)?;
        map.end()
    }
}

/// What the check's dry run of one step found.
enum DryRun {
    /// The dry run created it: the object does not exist.
    Absent,
    /// The dry run passed on an existing object.
    Exists,
    /// Not dry-run: its namespace or the CRD of its kind is created by this apply, so it
    /// cannot exist yet.
    Skipped,
    Failed(ApplyError),
}

impl Applier {
    /// Every check an apply makes before its first write, then a server-side dry run of every
    /// object whose kind is served now (an object whose kind a CRD of the set defines, before
    /// that CRD exists, cannot be dry-run and is checked by the apply itself). Writes nothing:
    /// the controller calls it before recording a release, so that a refused attempt leaves no
    /// record and no trace on any object.
    ///
    /// Failures come in the order the apply would meet them: a read, then every collision,
    /// then the first object the dry run refuses. An object the dry run created (it does not
    /// exist) is not read: nothing can collide with it.
    pub async fn check(&self, request: &ApplyRequest<'_>) -> Result<CheckedReads, ApplyError> {
        let Authorized { plan, client } = self.authorize(request).await?;
        let steps = &plan.steps;
        let is_namespace = |step: &ApplyStep| {
            step.object.kind == "Namespace" && step.resource.gvk.group.is_empty()
        };

        // The set's namespaces first: whether each exists decides what can be dry-run into it.
        let mut dry_runs: Vec<Option<DryRun>> = steps.iter().map(|_| None).collect();
        let mut created_namespaces = BTreeSet::new();
        for (index, step) in steps.iter().enumerate().filter(|(_, s)| is_namespace(s)) {
            let dry_run = self.dry_run_step(&client, step).await;
            if matches!(dry_run, DryRun::Absent) {
                created_namespaces.insert(step.object.name.clone());
            }
            dry_runs[index] = Some(dry_run);
        }
        let created_namespaces = &created_namespaces;
        let client_ref = &client;
        let rest: Vec<(usize, DryRun)> =
            stream::iter((0..steps.len()).filter(|&index| dry_runs[index].is_none()))
                .map(|index| async move {
                    let step = &steps[index];
                    let in_created_namespace = step
                        .object
                        .namespace
                        .as_deref()
                        .is_some_and(|ns| created_namespaces.contains(ns));
                    let dry_run = if in_created_namespace
                        || (step.needs_established_crd.is_some()
                            && !self.served_now(&step.resource).await)
                    {
                        DryRun::Skipped
                    } else {
                        self.dry_run_step(client_ref, step).await
                    };
                    (index, dry_run)
                })
                .buffered(READ_CONCURRENCY)
                .collect()
                .await;
        for (index, dry_run) in rest {
            dry_runs[index] = Some(dry_run);
        }
        let dry_runs: Vec<DryRun> = dry_runs.into_iter().flatten().collect();

        // Read what exists (and what the dry run refused, whose refusal may be a collision).
        let reads: Vec<Option<Option<DynamicObject>>> = stream::iter(0..steps.len())
            .map(|index| {
                let dry_run = &dry_runs[index];
                async move {
                    let step = &steps[index];
                    match dry_run {
                        DryRun::Absent | DryRun::Skipped => Ok(Some(None)),
                        DryRun::Exists | DryRun::Failed(_) => {
                            let api = dynamic_api(
                                client_ref,
                                &step.resource,
                                step.object.namespace.as_deref(),
                            );
                            read_object(&api, &step.object.name, self.config.call_timeout)
                                .await
                                .map(Some)
                                .map_err(ApplyError::api(format!("read {}", step.object)))
                        }
                    }
                }
            })
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        collisions(
            steps,
            reads
                .iter()
                .map(|read| read.as_ref().and_then(Option::as_ref)),
            request,
        )?;
        let mut seen = HashMap::with_capacity(steps.len());
        for ((step, dry_run), read) in steps.iter().zip(dry_runs).zip(reads) {
            if let DryRun::Failed(e) = dry_run {
                return Err(e);
            }
            seen.insert(step.object.clone(), read.flatten());
        }
        Ok(CheckedReads { seen })
    }

    /// The server-side dry run of one step's apply, and whether it found the object.
    async fn dry_run_step(&self, client: &Client, step: &ApplyStep) -> DryRun {
        match self.dry_run_object(client, step).await {
            // The API server stores nothing in a dry run: the object it returns carries a
            // resourceVersion only when it was read from storage, that is when it exists.
            Ok(Some(object)) => match object.metadata.resource_version.as_deref() {
                None | Some("") => DryRun::Absent,
                Some(_) => DryRun::Exists,
            },
            Ok(None) => DryRun::Skipped,
            Err(e) => DryRun::Failed(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serialized(body: &serde_json::Value, resource_version: Option<&str>) -> serde_json::Value {
        serde_json::to_value(GuardedBody {
            body,
            resource_version,
        })
        .unwrap()
    }

    #[test]
    fn a_guarded_body_is_the_body_with_its_resource_version_and_nothing_else_changed() {
        let body = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "y"}},
            "data": {"k": "v"},
        });
        assert_eq!(serialized(&body, None), body);
        let mut expected = body.clone();
        expected["metadata"]["resourceVersion"] = json!("42");
        assert_eq!(serialized(&body, Some("42")), expected);
    }

    #[test]
    fn a_guard_replaces_a_resource_version_the_body_carries_and_adds_metadata_when_missing() {
        let body = json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7"}});
        assert_eq!(
            serialized(&body, Some("9")),
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "9"}})
        );
        let body = json!({"kind": "ConfigMap"});
        assert_eq!(
            serialized(&body, Some("9")),
            json!({"kind": "ConfigMap", "metadata": {"resourceVersion": "9"}})
        );
    }

    #[test]
    fn an_absent_object_is_guarded_by_a_revision_no_stored_object_has() {
        assert_eq!(Guard::from_checked(None).resource_version(), ABSENT);
        let mut live: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "310"}
        }))
        .unwrap();
        assert_eq!(Guard::from_checked(Some(&live)).resource_version(), "310");
        live.metadata.resource_version = Some(String::new());
        assert_eq!(Guard::from_checked(Some(&live)).resource_version(), ABSENT);
    }
}
