//! The CRD upgrade-safety preflight of an install or upgrade: every rendered
//! CustomResourceDefinition that already exists is compared with the installed one before
//! anything is applied.
//!
//! Input: the rendered objects, `spec.install.preflight.crdUpgradeSafety.enforcement`, the
//! controller's data-aware setting, the resolved bundle's name and version. Output: notes for
//! the status (data-aware warnings) or a [`PreflightError`]. Network: the Kubernetes API with
//! the controller's identity: one GET per rendered CRD, and in data-aware mode a paged LIST of
//! the custom resources of each CRD whose change is unsafe. The verdicts are
//! `olm_operator_core::crd_upgrade`'s.
//!
//! | situation | outcome |
//! |---|---|
//! | enforcement `None` | skipped |
//! | a rendered CRD is not installed | nothing to compare |
//! | reading an installed CRD fails | retried: `getting existing resource for CRD "<name>": <error>` (upstream's text) |
//! | every change is safe (upstream's rules minus its proven false positives) | proceed |
//! | unsafe, data-aware off | refused: `error for resolved bundle "<b>" with version "<v>": <N> CRD(s), <M> violation(s)` then upstream's `validating upgrade for CRD …` lines |
//! | unsafe, data-aware on, no stored object violates the new schema | proceed; each such CRD adds a warning to the `Progressing` message |
//! | unsafe, data-aware on, a stored object violates it (or a rule cannot be evaluated, or more than [`MAX_STORED_OBJECTS`] are stored) | refused: the message above, then per CRD the data-aware refusal and every violating object |
//!
//! Stored objects are listed through every version in the installed CRD's
//! `status.storedVersions` that it still serves, so each object is checked as it reads in each
//! version the new schema must accept.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use olm_api::v1::CrdUpgradeSafetyEnforcement;
use olm_api::version::go_text::go_quote;
use olm_operator_core::crd_upgrade::{
    CheckOptions, Crd, CrdUpgradeError, Enforcement, UpgradeVerdict, check_upgrade,
    compose_progressing_message, data_aware_decision,
};
use serde_json::Value;

/// Most custom resources of one CRD the data-aware step reads; beyond it the upgrade stays
/// refused (checking a sample would prove nothing).
pub const MAX_STORED_OBJECTS: usize = 10_000;
/// Page size of the LIST of stored objects.
const PAGE: u32 = 500;

/// Why the preflight did not let the install or upgrade through.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// Upstream's text for a failed read of an installed CRD.
    #[error("getting existing resource for CRD {}: {message}", go_quote(.name))]
    GetCrd { name: String, message: String },
    /// A CRD could not be decoded as upstream decodes it.
    #[error(transparent)]
    Decode(#[from] CrdUpgradeError),
    /// The upgrade is unsafe; the message is complete (bundle, summary line, entries).
    #[error("{message}")]
    Refused { message: String },
}

impl PreflightError {
    /// Whether the message already names the bundle (see [`compose_progressing_message`]).
    pub fn is_composed(&self) -> bool {
        matches!(self, PreflightError::Refused { .. })
    }
}

/// How the preflight is run for one extension.
#[derive(Clone, Copy, Debug)]
pub struct PreflightRequest<'a> {
    /// The rendered objects.
    pub objects: &'a [Value],
    pub enforcement: Option<CrdUpgradeSafetyEnforcement>,
    pub data_aware: bool,
    pub bundle: &'a str,
    pub version: &'a str,
    pub call_timeout: Duration,
}

/// Runs the preflight; returns the notes for the status (data-aware warnings).
pub async fn crd_upgrade_safety(
    client: &kube::Client,
    request: &PreflightRequest<'_>,
) -> Result<Vec<String>, PreflightError> {
    if request.enforcement == Some(CrdUpgradeSafetyEnforcement::None) {
        return Ok(Vec::new());
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let opts = CheckOptions {
        enforcement: Enforcement::Strict,
        allow_safe_changes: true,
    };
    let mut compared: Vec<(Crd, Crd, Value)> = Vec::new();
    for object in request.objects.iter().filter(|o| is_crd(o)) {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let live = tokio::time::timeout(request.call_timeout, api.get_opt(&name))
            .await
            .map_err(|_| PreflightError::GetCrd {
                name: name.clone(),
                message: format!(
                    "no answer from the API server within {}s",
                    request.call_timeout.as_secs()
                ),
            })?
            .map_err(|e| PreflightError::GetCrd {
                name: name.clone(),
                message: e.to_string(),
            })?;
        let Some(live) = live else {
            continue;
        };
        let live = serde_json::to_value(&live).map_err(|e| PreflightError::GetCrd {
            name: name.clone(),
            message: e.to_string(),
        })?;
        let old = Crd::from_value(&live).map_err(CrdUpgradeError::from)?;
        let new = Crd::from_value(object).map_err(CrdUpgradeError::from)?;
        compared.push((old, new, live));
    }
    let verdicts: Vec<UpgradeVerdict> = compared
        .iter()
        .map(|(old, new, _)| check_upgrade(old, new, &opts))
        .collect();
    if verdicts.iter().all(UpgradeVerdict::is_safe) {
        return Ok(Vec::new());
    }
    let refusal = || {
        compose_progressing_message(request.bundle, request.version, &verdicts).unwrap_or_default()
    };
    if !request.data_aware {
        return Err(PreflightError::Refused { message: refusal() });
    }

    let mut notes = Vec::new();
    let mut refused_lines = Vec::new();
    for ((old, new, live), verdict) in compared.iter().zip(&verdicts) {
        if verdict.is_safe() {
            continue;
        }
        let objects = match stored_objects(client, old, live, request.call_timeout).await {
            Ok(objects) => objects,
            Err(why) => {
                refused_lines.push(format!(
                    "data-aware check of CRD {}: refused: {why}",
                    go_quote(&verdict.crd)
                ));
                continue;
            }
        };
        let outcome = data_aware_decision(old, new, verdict, &objects);
        if outcome.allowed {
            notes.extend(outcome.warning(verdict));
            continue;
        }
        refused_lines.push(format!(
            "data-aware check of CRD {} ({} checked): refused: {}",
            go_quote(&verdict.crd),
            objects_text(outcome.objects_checked),
            outcome.refusal.clone().unwrap_or_default()
        ));
        refused_lines.extend(outcome.violations.iter().map(|v| v.to_string()));
    }
    if refused_lines.is_empty() {
        return Ok(notes);
    }
    let mut message = refusal();
    for line in refused_lines {
        message.push('\n');
        message.push_str(&line);
    }
    Err(PreflightError::Refused { message })
}

fn objects_text(n: usize) -> String {
    if n == 1 {
        "1 object".into()
    } else {
        format!("{n} objects")
    }
}

fn is_crd(object: &Value) -> bool {
    object.get("apiVersion").and_then(Value::as_str) == Some("apiextensions.k8s.io/v1")
        && object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
}

/// The stored custom resources of the installed CRD, read through each stored version it
/// still serves. `Err` says why they could not be read (the upgrade then stays refused).
async fn stored_objects(
    client: &kube::Client,
    old: &Crd,
    live: &Value,
    call_timeout: Duration,
) -> Result<Vec<Value>, String> {
    let plural = live
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .ok_or("the installed CRD has no spec.names.plural")?;
    let mut versions: Vec<&str> = old
        .stored_versions
        .iter()
        .map(String::as_str)
        .filter(|v| old.version(v).is_some_and(|cv| cv.served))
        .collect();
    if versions.is_empty() {
        // No stored version is served any more: read through the storage version.
        versions.extend(
            old.versions
                .iter()
                .filter(|v| v.served && v.storage)
                .map(|v| v.name.as_str()),
        );
    }
    if versions.is_empty() {
        return Err(
            "no version of the installed CRD is served, so its objects cannot be read".into(),
        );
    }
    let mut objects = Vec::new();
    for version in versions {
        let resource = ApiResource {
            group: old.group.clone(),
            version: version.to_owned(),
            api_version: format!("{}/{version}", old.group),
            kind: old.kind.clone(),
            plural: plural.to_owned(),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let mut params = ListParams::default().limit(PAGE);
        loop {
            let page = tokio::time::timeout(call_timeout, api.list(&params))
                .await
                .map_err(|_| {
                    format!(
                        "listing {} {plural}: no answer within {}s",
                        resource.api_version,
                        call_timeout.as_secs()
                    )
                })?
                .map_err(|e| format!("listing {} {plural}: {e}", resource.api_version))?;
            for item in page.items {
                let mut value = serde_json::to_value(&item).map_err(|e| e.to_string())?;
                // Items of a list carry no type; the schema is chosen by the version read.
                if let Some(map) = value.as_object_mut() {
                    map.insert("apiVersion".into(), resource.api_version.clone().into());
                    map.insert("kind".into(), old.kind.clone().into());
                }
                objects.push(value);
                if objects.len() > MAX_STORED_OBJECTS {
                    return Err(format!(
                        "more than {MAX_STORED_OBJECTS} stored objects; the data-aware check reads at most that many"
                    ));
                }
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
    }
    Ok(objects)
}
