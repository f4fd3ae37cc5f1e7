//! What an install or upgrade would change, in the preview report's terms: shared by
//! `operator-controller preview` ([`crate::cmd::preview`]) and the reconcile's upgrade approval
//! (the summary of a bundle waiting in `status.pendingApproval`).
//!
//! Input: the rendered objects and what [`Applier::preview`](crate::apply::Applier::preview)
//! read (live objects, server-side dry runs, the prune's decisions). Output: the
//! [`Report`]'s objects, RBAC and webhook deltas and CRD verdicts. Network: one GET per rendered
//! CRD ([`crd_checks`]).

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use olm_api::v1::CrdUpgradeSafetyEnforcement;
use olm_operator_core::apply_plan::{KeepReason, ObjectRef};
use olm_operator_core::crd_upgrade::{CheckOptions, Crd, Enforcement, check_upgrade};
use olm_operator_core::preview::report::{Change, CrdCheck, KeptFields, ObjectChange, Report};
use olm_operator_core::preview::{Comparison, compare, rbac, webhooks};
use serde_json::Value;

use crate::apply::ApplyPreview;

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Per rendered CRD that is installed: upstream's verdict and ours (the preflight decides).
pub(crate) async fn crd_checks(
    client: &kube::Client,
    objects: &[Value],
    enforcement: Option<CrdUpgradeSafetyEnforcement>,
    call_timeout: Duration,
) -> Result<Vec<CrdCheck>, String> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut checks = Vec::new();
    let crds = objects.iter().filter(|o| {
        text(o, "/apiVersion") == "apiextensions.k8s.io/v1"
            && text(o, "/kind") == "CustomResourceDefinition"
    });
    for object in crds {
        let name = text(object, "/metadata/name").to_owned();
        if enforcement == Some(CrdUpgradeSafetyEnforcement::None) {
            checks.push(CrdCheck {
                name,
                verdict: "skipped".into(),
                upstream: String::new(),
            });
            continue;
        }
        let live = tokio::time::timeout(call_timeout, api.get_opt(&name))
            .await
            .map_err(|_| format!("reading CRD {name:?}: no answer"))?
            .map_err(|e| format!("reading a CRD: {e}"))?;
        let Some(live) = live else {
            continue;
        };
        let live = serde_json::to_value(&live).map_err(|e| format!("encoding a CRD: {e}"))?;
        let (Ok(old), Ok(new)) = (Crd::from_value(&live), Crd::from_value(object)) else {
            // The preflight reports the decoding error.
            continue;
        };
        let opts = CheckOptions {
            enforcement: Enforcement::Strict,
            allow_safe_changes: true,
        };
        let verdict = check_upgrade(&old, &new, &opts);
        checks.push(CrdCheck {
            name,
            verdict: if !verdict.is_safe() {
                "unsafe"
            } else if verdict.upstream_refuses() {
                "allowed"
            } else {
                "safe"
            }
            .into(),
            upstream: verdict.upstream_message().unwrap_or_default(),
        });
    }
    Ok(checks)
}

fn object_change(object: &ObjectRef, change: Change) -> ObjectChange {
    ObjectChange {
        api_version: object.api_version.clone(),
        kind: object.kind.clone(),
        namespace: object.namespace.clone(),
        name: object.name.clone(),
        change,
        diff: String::new(),
        kept_fields: Vec::new(),
        reason: String::new(),
    }
}

/// Objects, RBAC and webhook deltas from what the apply's checks read.
pub(crate) fn compare_objects(report: &mut Report, found: &ApplyPreview) {
    let mut roles: Vec<rbac::RolePair<'_>> = Vec::new();
    let mut bindings: Vec<rbac::RolePair<'_>> = Vec::new();
    for o in &found.objects {
        let mut change = object_change(&o.object, Change::Unchanged);
        match (&o.live, &o.dry_run) {
            (None, _) => change.change = Change::Create,
            (Some(_), None) => {
                change.change = Change::Unknown;
                change.reason =
                    "its namespace or the CRD of its kind is created by this apply; not dry-run"
                        .into();
            }
            (Some(live), Some(after)) => {
                if let Comparison::Update { diff, kept } = compare(live, after) {
                    change.change = Change::Update;
                    change.diff = diff;
                    change.kept_fields = kept
                        .into_iter()
                        .map(|(manager, fields)| KeptFields { manager, fields })
                        .collect();
                }
            }
        }
        report.objects.push(change);
        let after = o.dry_run.as_ref().unwrap_or(&o.body);
        let (api_version, kind) = (o.object.api_version.as_str(), o.object.kind.as_str());
        if rbac::is_role(api_version, kind) {
            roles.push((o.live.as_ref(), Some(after)));
        }
        if rbac::is_binding(api_version, kind) {
            bindings.push((o.live.as_ref(), Some(after)));
        }
        if webhooks::is_webhook_configuration(api_version, kind)
            && let Some(delta) = webhooks::webhook_delta(o.live.as_ref(), Some(after))
        {
            report.webhooks.push(delta);
        }
    }
    for r in &found.removals {
        let mut change = object_change(&r.object, Change::Delete);
        let (api_version, kind) = (r.object.api_version.as_str(), r.object.kind.as_str());
        if let Some(reason) = &r.kept {
            if rbac::is_role(api_version, kind) {
                // Kept: it still grants what it granted.
                roles.push((r.live.as_ref(), r.live.as_ref()));
            }
            if rbac::is_binding(api_version, kind) {
                bindings.push((r.live.as_ref(), r.live.as_ref()));
            }
            change.change = Change::Kept;
            change.reason = reason.to_string();
            if *reason == KeepReason::CustomResourcesExist {
                report
                    .crds_kept_for_custom_resources
                    .push(r.object.name.clone());
            }
        } else {
            if rbac::is_role(api_version, kind) {
                roles.push((r.live.as_ref(), None));
            }
            if rbac::is_binding(api_version, kind) {
                bindings.push((r.live.as_ref(), None));
            }
            if webhooks::is_webhook_configuration(api_version, kind)
                && let Some(delta) = webhooks::webhook_delta(r.live.as_ref(), None)
            {
                report.webhooks.push(delta);
            }
        }
        report.objects.push(change);
    }
    report.rbac = rbac::release_delta(&roles, &bindings);
}
