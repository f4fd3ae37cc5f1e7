//! OpenShift mode: the extension's `ClusterUpgradeable` condition, put into the status before the
//! reconcile's one status write.
//!
//! Input: the extension, the cluster version cache, its deployed release and catalogs. Output:
//! the condition in the status. Network: the Kubernetes API (release Secrets, ClusterCatalogs),
//! catalogd.

use super::*;

/// OpenShift mode: puts the extension's `ClusterUpgradeable` condition into `status` (or removes
/// it: nothing deployed, cluster version unknown). The deployed release is read afresh, so the
/// condition describes what this reconcile left installed; the catalogs are read only when that
/// release blocks the cluster's next minor version.
pub(super) async fn cluster_upgradeable(
    extension: &ClusterExtension,
    ctx: &Context,
    versions: &ClusterVersionCache,
    status: &mut olm_api::v1::ClusterExtensionStatus,
) {
    let name = extension.name_any();
    let installed = match ctx.store.installed(&name).await {
        Ok(installed) => installed,
        Err(e) => {
            tracing::info!(extension = %name, error = %e, "could not read the installed release; ClusterUpgradeable left as it was");
            return;
        }
    };
    let release = installed.as_ref().map(|s| &s.release);
    let metadata = ExtensionMetadata::from_release(release);
    let current = versions.current();
    let lifting = match current {
        Some(current)
            if matches!(
                check_extension(
                    current,
                    &InstalledExtension {
                        name: &name,
                        metadata
                    }
                )
                .verdict,
                Verdict::Blocking { .. }
            ) =>
        {
            lifting_versions(extension, ctx, current, release).await
        }
        _ => Ok((Vec::new(), Vec::new())),
    };
    let lifting_view = match &lifting {
        Ok((inside, outside)) if inside.is_empty() && !outside.is_empty() => {
            Lifting::Outside(outside)
        }
        Ok((inside, _)) => Lifting::Versions(inside),
        Err(why) => Lifting::Unknown(why),
    };
    let condition = extension_condition(&name, metadata, current, lifting_view);
    put_extension_condition(
        &mut status.conditions,
        condition.as_ref(),
        extension.metadata.generation,
        now(),
    );
}

/// The bundle versions in the extension's catalogs, under its channels and version range, that
/// would lift the block at `current` (the resolver's rules, from the installed bundle), and the
/// ones outside them that would (what to change to get one).
pub(super) async fn lifting_versions(
    extension: &ClusterExtension,
    ctx: &Context,
    current: ClusterMinor,
    release: Option<&Release>,
) -> Result<(Vec<String>, Vec<OutsideLift>), String> {
    let filter = extension
        .spec
        .source
        .catalog
        .as_ref()
        .ok_or_else(|| ValidationError::NoCatalogSource.to_string())?;
    let installed = release
        .and_then(|r| history::installed_bundle(std::slice::from_ref(r)))
        .map(|b| InstalledBundle {
            name: b.name,
            version: b.version,
            release: b.bundle_release,
        });
    let views = catalogs::list_catalogs(
        &ctx.client,
        ctx.catalog_cache.as_ref(),
        ctx.settings.call_timeout,
    )
    .await
    .map_err(|e| e.to_string())?;
    let resolver = Resolver::new(filter, installed.as_ref()).map_err(|e| e.to_string())?;
    let infos: Vec<_> = views.iter().map(catalog_info).collect();
    let by_name: BTreeMap<String, _> = views.iter().map(|v| (v.name.clone(), v.clone())).collect();
    let selected = resolver.catalogs_to_search(&infos);
    let fetched =
        catalogs::fetch_packages(&ctx.catalogd, &by_name, &selected, resolver.package()).await;
    let contents: Contents = fetched
        .iter()
        .map(|(info, result)| {
            (
                info.name.clone(),
                result.as_ref().map(Arc::clone).map_err(|e| e.to_string()),
            )
        })
        .collect();
    let inside = lifting_versions_fetched(filter, installed.as_ref(), current, fetched)
        .map_err(|e| e.to_string())?;
    let outside = if inside.is_empty() {
        let explanation = explain(filter, installed.as_ref(), &infos, &contents);
        outside_lifting(&explanation, current)
    } else {
        Vec::new()
    };
    Ok((inside, outside))
}
