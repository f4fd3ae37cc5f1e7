//! Resolution with the available updates (issue 25): the resolver over the selected catalogs'
//! content, `status.availableUpdates` from the same content, and after the status write the
//! updates gauge and one Event per newly listed version.
//!
//! Input: the extension's filter, installed bundle and catalogs. Output: the resolution and the
//! updates. Network: catalogd (package content), the Kubernetes API (Events).

use super::*;

/// After a status write: the updates gauge, and one Event per version newly listed in
/// `status.availableUpdates`.
pub(super) async fn updates_changed(
    extension: &ClusterExtension,
    status: &olm_api::v1::ClusterExtensionStatus,
    ctx: &Context,
) {
    let package = extension
        .spec
        .source
        .catalog
        .as_ref()
        .map(|c| c.package_name.clone())
        .unwrap_or_default();
    ctx.metrics.set_updates_available(
        &extension.name_any(),
        &package,
        status.available_updates.len(),
    );
    let before: BTreeSet<&str> = extension
        .status
        .as_ref()
        .map(|s| {
            s.available_updates
                .iter()
                .map(|u| u.version.as_str())
                .collect()
        })
        .unwrap_or_default();
    for update in status
        .available_updates
        .iter()
        .filter(|u| !before.contains(u.version.as_str()))
    {
        let note = format!(
            "{} {} is available in catalog {} but not installed: {:?}",
            update.name, update.version, update.catalog, update.blocked_by
        );
        crate::controller::events::publish(&ctx.client, extension, "UpdateAvailable", &note).await;
    }
}

/// Resolves, and lists the newer bundles the spec or graph holds back
/// ([`available_updates`]; `None` when the request cannot be read).
pub(super) async fn resolve(
    ctx: &Context,
    filter: &CatalogFilter,
    installed: Option<&InstalledBundle>,
    views: &[olm_operator_core::catalog_changes::CatalogView],
) -> (
    Result<Resolution, ReconcileError>,
    Option<Vec<olm_api::v1::AvailableUpdate>>,
) {
    let resolver = match Resolver::new(filter, installed) {
        Ok(resolver) => resolver,
        Err(e) => return (Err(e.into()), None),
    };
    let infos: Vec<_> = views.iter().map(catalog_info).collect();
    let by_name: BTreeMap<String, _> = views.iter().map(|v| (v.name.clone(), v.clone())).collect();
    let selected = resolver.catalogs_to_search(&infos);
    let fetched =
        catalogs::fetch_packages(&ctx.catalogd, &by_name, &selected, resolver.package()).await;
    let updates = match installed {
        None => Some(Vec::new()),
        Some(installed) => {
            let contents: Contents = fetched
                .iter()
                .map(|(info, result)| {
                    (
                        info.name.clone(),
                        result.as_ref().map(Arc::clone).map_err(|e| e.to_string()),
                    )
                })
                .collect();
            VersionRelease::from_installed(&installed.version, installed.release.as_deref())
                .ok()
                .map(|version| {
                    let explanation = explain(filter, Some(installed), &infos, &contents);
                    available_updates(&explanation, &version)
                        .into_iter()
                        .map(api_update)
                        .collect()
                })
        }
    };
    (
        resolver.resolve_fetched(fetched).map_err(Into::into),
        updates,
    )
}

/// The status form of an available update.
pub(super) fn api_update(update: AvailableUpdate) -> olm_api::v1::AvailableUpdate {
    use olm_api::v1::UpdateBlocker;
    olm_api::v1::AvailableUpdate {
        name: update.name,
        version: update.version,
        catalog: update.catalog,
        channel: update.channel,
        blocked_by: match update.blocked_by {
            ReasonCode::OutsideVersionRange => UpdateBlocker::OutsideVersionRange,
            ReasonCode::NotInRequestedChannel => UpdateBlocker::NotInRequestedChannel,
            _ => UpdateBlocker::NotASuccessor,
        },
        deprecated: update.deprecated,
    }
}
