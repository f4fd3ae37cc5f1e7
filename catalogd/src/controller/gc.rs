//! Garbage collection of content whose ClusterCatalog no longer exists (deleted while catalogd was
//! down, or on a replica that missed the deletion).
//!
//! Input: the catalog names in the cluster and what is stored locally. Output: local deletions.
//! Network: one metadata-only list of ClusterCatalogs per sweep.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ListParams};
use olm_api::v1::ClusterCatalog;

use super::reconcile::Context;

/// The local names that belong to no existing catalog. Pure.
pub fn orphans(existing: &BTreeSet<String>, local: &[String]) -> Vec<String> {
    local
        .iter()
        .filter(|n| !existing.contains(*n))
        .cloned()
        .collect()
}

/// One sweep; returns how many catalogs' content was removed.
pub async fn sweep(ctx: &Context, label_selector: Option<&str>) -> Result<usize, kube::Error> {
    // Content written after the list was taken may belong to a catalog created meanwhile.
    let listed_at = std::time::SystemTime::now();
    let api: Api<ClusterCatalog> = Api::all(ctx.client.clone());
    let mut params = ListParams::default();
    if let Some(selector) = label_selector {
        params = params.labels(selector);
    }
    let existing: BTreeSet<String> = api
        .list_metadata(&params)
        .await?
        .items
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .collect();
    let mut removed = 0;
    let stored = ctx.storage.catalogs().unwrap_or_default();
    for name in orphans(&existing, &stored) {
        let recent = matches!(ctx.storage.get(&name), Ok(Some(c)) if c.modified() >= listed_at);
        if recent {
            continue;
        }
        match ctx.storage.delete(&name) {
            Ok(()) => {
                removed += 1;
                tracing::info!(catalog = %name, "removed content of a catalog that no longer exists");
            }
            Err(e) => {
                tracing::warn!(catalog = %name, error = %e, "failed to remove orphaned content")
            }
        }
    }
    let puller = ctx.puller();
    let cached = puller.cache().owners().unwrap_or_default();
    for name in orphans(&existing, &cached) {
        let recent = puller
            .cache()
            .owner_dir(&name)
            .and_then(std::fs::metadata)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= listed_at);
        if recent {
            continue;
        }
        if let Err(e) = puller.delete_owner(&name).await {
            tracing::warn!(catalog = %name, error = %e, "failed to remove an orphaned image cache");
        }
    }
    Ok(removed)
}

/// Sweeps at start-up and then every `interval` until `shutdown`.
pub async fn run(
    ctx: Arc<Context>,
    label_selector: Option<String>,
    interval: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        if let Err(e) = sweep(&ctx, label_selector.as_deref()).await {
            tracing::warn!(error = %e, "garbage collection failed; retrying at the next interval");
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orphans_are_local_names_without_a_catalog() {
        let existing: BTreeSet<String> = ["a", "c"].into_iter().map(String::from).collect();
        let local: Vec<String> = ["a", "b", "c", "d"].into_iter().map(String::from).collect();
        assert_eq!(
            orphans(&existing, &local),
            vec!["b".to_string(), "d".to_string()]
        );
    }
}
