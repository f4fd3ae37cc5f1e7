//! What a failed resolution leads to: retry, or keep maintaining the installed bundle.
//!
//! Input: whether a bundle is installed (and its version), `spec.source.catalog.version`, and
//! whether any ClusterCatalog matches the extension's selector. Output: a [`Fallback`]. No IO.
//!
//! Upstream's `handleResolutionError` (reference §3.6), rows checked in order:
//!
//! | installed | `spec.version` | matching ClusterCatalogs | decision |
//! |---|---|---|---|
//! | nothing | any | any | retry: report the resolution error |
//! | yes | set and not equal (as text) to the installed version | any | retry: report the resolution error |
//! | yes | unset, or equal | cannot tell (listing failed) | retry |
//! | yes | unset, or equal | some exist | retry (a catalog is probably being updated) |
//! | yes | unset, or equal | none (deleted, or the ClusterCatalog API is absent) | keep the installed bundle: apply it again and keep repairing drift |
//!
//! Catalogs are counted whatever their availability or serving state, as upstream lists them
//! (only the selector filters). A catalog coming back triggers a reconcile that resolves again.

/// The decision of the module table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// Report the resolution error and retry.
    Retry,
    /// Proceed with the installed bundle as the resolved one.
    KeepInstalled,
}

/// Whether catalogs matching the extension's selector exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatalogsMatching {
    Some,
    None,
    /// They could not be listed.
    Unknown,
}

/// Decides per the module table. `installed_version` is the installed bundle's version as its
/// release records it; `spec_version` is `spec.source.catalog.version` (empty means unset).
pub fn on_resolution_failure(
    installed_version: Option<&str>,
    spec_version: Option<&str>,
    catalogs: CatalogsMatching,
) -> Fallback {
    let Some(installed) = installed_version else {
        return Fallback::Retry;
    };
    if let Some(wanted) = spec_version.filter(|v| !v.is_empty())
        && wanted != installed
    {
        return Fallback::Retry;
    }
    match catalogs {
        CatalogsMatching::None => Fallback::KeepInstalled,
        CatalogsMatching::Some | CatalogsMatching::Unknown => Fallback::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's `TestHandleResolutionError`-style table (`clusterextension_reconcile_steps.go`).
    #[test]
    fn the_installed_bundle_is_kept_only_when_its_catalogs_are_gone_and_no_other_version_is_asked_for()
     {
        use CatalogsMatching as C;
        use Fallback::*;
        let cases = [
            (None, None, C::None, Retry),
            (None, Some("1.0.0"), C::None, Retry),
            (Some("1.0.0"), Some("1.2.0"), C::None, Retry),
            (Some("1.0.0"), Some(">=1.0.0"), C::None, Retry),
            (Some("1.0.0"), None, C::Unknown, Retry),
            (Some("1.0.0"), None, C::Some, Retry),
            (Some("1.0.0"), None, C::None, KeepInstalled),
            (Some("1.0.0"), Some(""), C::None, KeepInstalled),
            (Some("1.0.0"), Some("1.0.0"), C::None, KeepInstalled),
            (Some("1.0.0"), Some("1.0.0"), C::Some, Retry),
        ];
        for (installed, spec, catalogs, want) in cases {
            assert_eq!(
                on_resolution_failure(installed, spec, catalogs),
                want,
                "{installed:?} {spec:?} {catalogs:?}"
            );
        }
    }
}
