//! The reconcile's steps up to (not including) its first write, for `preview`: read the
//! extension and its installed state, resolve, pull, render, plan the release, the CRD
//! upgrade-safety preflight and the apply's checks with a server-side dry run; then the
//! comparison into a [`Report`].
//!
//! Input: the [`Args`]. Output: the [`Report`] or a [`Failure`]. Network: the Kubernetes API
//! (reads and `dryRun=All` applies), catalogd, the bundle's registry. Each step uses the
//! controller's code; where the controller would write (finalizers, a pending record marked
//! failed, release records, certificate Secrets, the status) this reads or skips.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use olm_api::condition_error::ConditionError;
use olm_api::v1::{ApprovalMode, BundleMetadata, ClusterExtension};
use olm_operator_core::apply_plan::Owner;
use olm_operator_core::bundle;
use olm_operator_core::preview::report::{BundleRef, NotChosen, Report};
use olm_operator_core::preview::webhooks;
use olm_operator_core::release::history;
use olm_operator_core::release::manifest::manifest_objects;
use olm_operator_core::release::plan::{self as release_plan, ReleaseAction};
use olm_operator_core::release::render::{PostRenderContext, render_release};
use olm_operator_core::render::{self, CertProvider};
use olm_operator_core::resolve::explain::{Contents, Explanation, explain};
use olm_operator_core::resolve::{CatalogInfo, InstalledBundle, Resolver};
use olm_operator_core::status::approval;
use olm_operator_core::status::fallback::{self, Fallback};
use olm_runtime::gates::FeatureGates;
use serde_json::Value;

use super::inputs::{cache, catalogd_client, cert_provider, extension, from_file, puller};
use super::{Args, Failure};
use crate::apply::{Applier, ApplyRequest};
use crate::bundle_source::{ReadLimits, pull_bundle};
use crate::cmd::run::FEATURE_GATES;
use crate::controller::catalogs::{self, catalog_info};
use crate::controller::error::{BundleFailure, BundleStepError, ReconcileError, ValidationError};
use crate::controller::pending::{compare_objects, crd_checks};
use crate::controller::preflight::{PreflightError, PreflightRequest, crd_upgrade_safety};
use crate::controller::reconcile::{
    bundle_manifests, catalogs_matching, chart_objects, identity, release_refs,
};
use crate::storage::ReleaseStore;
use crate::storage::scopes::discover_scopes;

/// Bound of each Kubernetes API call.
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The owner uid of an extension that does not exist yet: rendered ownerReferences need one
/// for the dry run; the API server does not check that the owner exists.
const PLACEHOLDER_UID: &str = "00000000-0000-0000-0000-000000000000";

pub(super) fn runtime<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> Failure + '_ {
    move |e| Failure::Runtime(format!("{what}: {e}"))
}

/// The refusal the controller would write into `Progressing`.
fn refused(mut report: Report, error: ReconcileError) -> Report {
    report.would_apply = false;
    report.message = error.condition_message();
    report
}

pub(super) async fn preview(args: &Args) -> Result<Report, Failure> {
    let from_file = from_file(args)?;
    let client = olm_runtime::client::client(args.kubeconfig.as_deref())
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    let (extension, exists) = extension(args, from_file, &client).await?;
    let name = extension.name_any();
    let mut report = Report {
        extension: name.clone(),
        would_apply: true,
        ..Report::default()
    };
    if !exists {
        report.notes.push(format!(
            "ClusterExtension {name:?} does not exist: its objects are dry-run with a placeholder owner uid"
        ));
    }
    let Some(filter) = extension.spec.source.catalog.clone() else {
        return Ok(refused(report, ValidationError::NoCatalogSource.into()));
    };
    report.package = filter.package_name.clone();

    // Installed state, as the reconcile reads it (a record left pending counts as failed).
    let store = ReleaseStore::new(client.clone(), &args.system_namespace);
    let mut releases = store
        .history(&name)
        .await
        .map_err(runtime("reading the installed release"))?
        .releases();
    if let Some(last) = releases.iter_mut().max_by_key(|r| r.version) {
        history::interrupt_pending(last);
    }
    let installed = history::installed_bundle(&releases);
    let deployed = history::deployed(&releases).cloned();
    report.installed = installed.as_ref().map(|b| BundleRef {
        name: b.name.clone(),
        version: b.version.clone(),
        ..BundleRef::default()
    });
    let installed_for_resolver = installed.as_ref().map(|b| InstalledBundle {
        name: b.name.clone(),
        version: b.version.clone(),
        release: b.bundle_release.clone(),
    });

    // Catalogs and resolution.
    let views = catalogs::list_catalogs(&client, None, CALL_TIMEOUT)
        .await
        .map_err(runtime("listing ClusterCatalogs"))?;
    let infos: Vec<CatalogInfo> = views.iter().map(catalog_info).collect();
    let by_name: BTreeMap<String, _> = views.iter().map(|v| (v.name.clone(), v.clone())).collect();
    let catalogd = catalogd_client(args)?;
    let resolver = match Resolver::new(&filter, installed_for_resolver.as_ref()) {
        Ok(resolver) => resolver,
        Err(e) => return Ok(refused(report, e.into())),
    };
    let selected = resolver.catalogs_to_search(&infos);
    let fetched =
        catalogs::fetch_packages(&catalogd, &by_name, &selected, resolver.package()).await;
    let contents: Contents = fetched
        .iter()
        .map(|(info, r)| {
            let r = r.as_ref().map(Arc::clone).map_err(|e| e.to_string());
            (info.name.clone(), r)
        })
        .collect();
    let explanation = explain(&filter, installed_for_resolver.as_ref(), &infos, &contents);
    let resolution = match resolver.resolve_fetched(fetched) {
        Ok(resolution) => resolution,
        Err(e) => {
            let error = ReconcileError::from(e);
            let decision = fallback::on_resolution_failure(
                installed.as_ref().map(|b| b.version.as_str()),
                filter.version.as_deref(),
                catalogs_matching(&filter, &views),
            );
            if decision == Fallback::KeepInstalled && deployed.is_some() {
                report.action = "keep-installed".into();
                report.notes.push(format!(
                    "nothing resolves ({}); the controller keeps the installed release applied",
                    error.condition_message()
                ));
                return Ok(report);
            }
            report.action = "none".into();
            return Ok(refused(report, error));
        }
    };
    let bundle_name = resolution.bundle.name.clone();
    let bundle_version = resolution.status_version();
    report.target = Some(BundleRef {
        name: bundle_name.clone(),
        version: bundle_version.clone(),
        catalog: resolution.catalog.clone(),
        image: resolution.bundle.image.clone(),
    });
    if installed.as_ref().is_some_and(|b| b.name == bundle_name) {
        report.newer_not_chosen = newer_not_chosen(&explanation);
    }
    let failed = |failure: BundleFailure| -> ReconcileError {
        BundleStepError {
            bundle: bundle_name.clone(),
            version: bundle_version.clone(),
            failure,
        }
        .into()
    };

    // Pull, parse, render, as the reconcile's bundle step.
    let gates = FeatureGates::parse(FEATURE_GATES, &args.feature_gates, args.feature_defaults)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let cert_provider = cert_provider(args, &gates, &client).await?;
    let cache = cache(args)?;
    let puller = puller(args, &cache.dir)?;
    let pulled = pull_bundle(
        &puller,
        &name,
        &resolution.bundle.image,
        &ReadLimits::default(),
    )
    .await
    .map_err(|e| Failure::Runtime(failed(BundleFailure::Pull(e)).condition_message()))?;
    let parsed = match bundle::parse(&pulled.fs) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(refused(report, failed(e.into()))),
    };
    let options = crate::controller::reconcile::render_options(
        &extension,
        cert_provider,
        gates.enabled_or("SingleOwnNamespaceInstallSupport", true),
        gates.enabled_or("DeploymentConfig", true),
    );
    let rendered = match render::render(&parsed, &options) {
        Ok(rendered) => rendered,
        Err(e) => return Ok(refused(report, failed(e.into()))),
    };
    let uid = extension
        .metadata
        .uid
        .clone()
        .unwrap_or_else(|| PLACEHOLDER_UID.to_owned());
    let context = PostRenderContext {
        release_namespace: extension.spec.namespace.clone(),
        owner_name: name.clone(),
        owner_uid: uid.clone(),
    };
    let scopes = discover_scopes(&client, &rendered.objects, CALL_TIMEOUT)
        .await
        .map_err(|e| Failure::Runtime(failed(e.into()).condition_message()))?;
    let chart = chart_objects(&rendered, &bundle_manifests(&parsed));
    let (_, manifest) = match render_release(&chart, &rendered.annotations, &context, &scopes) {
        Ok(release) => release,
        Err(e) => return Ok(refused(report, failed(e.into()))),
    };
    let desired = match manifest_objects(&manifest) {
        Ok(desired) => desired,
        Err(e) => return Ok(refused(report, failed(e.into()))),
    };
    let previous = match &deployed {
        Some(d) => match release_refs(d) {
            Ok(refs) => refs,
            Err(e) => return Ok(refused(report, failed(e.into()))),
        },
        None => Vec::new(),
    };
    let action = match release_plan::plan(
        &releases,
        &manifest,
        release_plan::BundleIdentity {
            name: &bundle_name,
            version: &bundle_version,
            image: &resolution.bundle.image,
        },
    ) {
        Ok(action) => action,
        Err(e) => return Ok(refused(report, failed(e.into()))),
    };
    report.action = match action {
        ReleaseAction::Unchanged { .. } => "unchanged",
        ReleaseAction::Install => "install",
        ReleaseAction::Upgrade { .. } => "upgrade",
        ReleaseAction::RetryFailed { .. } => "retry",
    }
    .into();

    // The preflight (install and upgrade only, as the reconcile), then the apply's checks.
    let owner = Owner {
        name: name.clone(),
        uid,
    };
    let identity = identity(&extension, args.honor_service_account);
    let request = ApplyRequest {
        owner: &owner,
        install_namespace: &extension.spec.namespace,
        identity: &identity,
        desired: &desired,
        previous: &previous,
    };
    if !matches!(action, ReleaseAction::Unchanged { .. }) {
        let enforcement = extension
            .spec
            .install
            .as_ref()
            .and_then(|i| i.preflight.as_ref())
            .map(|p| p.crd_upgrade_safety.enforcement);
        report.crds = crd_checks(&client, &rendered.objects, enforcement, CALL_TIMEOUT)
            .await
            .map_err(Failure::Runtime)?;
        let preflight = crd_upgrade_safety(
            &client,
            &PreflightRequest {
                objects: &rendered.objects,
                enforcement,
                data_aware: args.crd_upgrade_safety_data_aware,
                bundle: &bundle_name,
                version: &bundle_version,
                call_timeout: CALL_TIMEOUT,
            },
        )
        .await;
        match preflight {
            Ok(warnings) => {
                for crd in report.crds.iter_mut().filter(|c| c.verdict == "unsafe") {
                    crd.verdict = "allowed".into();
                }
                report.data_aware = warnings;
            }
            Err(e @ PreflightError::GetCrd { .. }) => {
                return Err(Failure::Runtime(e.to_string()));
            }
            Err(e) => {
                if args.crd_upgrade_safety_data_aware {
                    report.data_aware = e
                        .to_string()
                        .lines()
                        .filter(|l| l.starts_with("data-aware check"))
                        .map(str::to_owned)
                        .collect();
                }
                return Ok(refused(report, failed(e.into())));
            }
        }
    } else {
        report
            .notes
            .push("the installed release is current: the controller applies it again (drift repair) without the CRD upgrade-safety preflight".into());
    }
    let applier = Applier::new(client.clone());
    let found = match applier.preview(&request).await {
        Ok(found) => found,
        Err(e) => return Ok(refused(report, failed(e.into()))),
    };
    if cert_provider == CertProvider::Builtin
        && desired
            .iter()
            .any(|o| webhooks::is_webhook_configuration(text(o, "/apiVersion"), text(o, "/kind")))
    {
        report.notes.push("webhook CA bundles come from the built-in certificate provider at apply time; they are not compared".into());
    }
    compare_objects(&mut report, &found);
    if let Some(note) = approval_note(
        &extension,
        installed.as_ref().map(|b| b.name.as_str()),
        &bundle_name,
        &bundle_version,
        &report,
    ) {
        report.notes.push(note);
    }
    Ok(report)
}

/// What `spec.install.approval` makes of this install or upgrade, as the reconcile decides it
/// ([`approval`]): `None` when it proceeds.
fn approval_note(
    extension: &ClusterExtension,
    installed: Option<&str>,
    name: &str,
    version: &str,
    report: &Report,
) -> Option<String> {
    let config = extension.spec.approval()?;
    let resolved = BundleMetadata {
        name: name.to_owned(),
        version: version.to_owned(),
    };
    match config.mode {
        ApprovalMode::Manual if approval::manual_holds(config, installed, &resolved) => {
            Some(format!(
                "spec.install.approval is Manual: the controller holds {name} ({version}) until spec.install.approval.approvedVersion is {version}"
            ))
        }
        ApprovalMode::AutomaticUnlessEscalation if installed.is_some_and(|i| i != name) => {
            let causes = approval::escalations(report, &report.data_aware);
            (!causes.is_empty()).then(|| {
                format!(
                    "spec.install.approval is AutomaticUnlessEscalation: the controller holds {name} ({version}) because {}",
                    causes.join("; ")
                )
            })
        }
        _ => None,
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The bundles listed before the chosen one (newest first) and why they are not chosen.
fn newer_not_chosen(e: &Explanation) -> Vec<NotChosen> {
    e.candidates
        .iter()
        .take_while(|c| !c.chosen)
        .map(|c| NotChosen {
            name: c.name.clone(),
            version: c.version.clone(),
            catalog: c.catalog.clone(),
            reasons: c.reasons.iter().map(|r| r.message.clone()).collect(),
        })
        .collect()
}
