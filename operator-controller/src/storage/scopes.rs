//! Which of a release's kinds are namespaced, from the API server's discovery documents: the
//! `ResourceScopes` the manifest rendering needs (Helm's builder asks its REST mapper the same).
//!
//! Input: a `kube::Client` and the rendered objects. Output: a `KindScopes` for their kinds.
//! Network: one discovery request per distinct `apiVersion`, bounded by `timeout`.

use std::collections::BTreeSet;
use std::time::Duration;

use olm_operator_core::release::KindScopes;
use serde_json::Value;

/// Why discovery failed (a group the server does not serve is not a failure: its kinds are just
/// unknown, and rendering names them).
#[derive(Debug, thiserror::Error)]
pub enum ScopesError {
    #[error("failed to discover the resources of {api_version:?}: {source}")]
    Discovery {
        api_version: String,
        #[source]
        source: kube::Error,
    },
    #[error("timed out after {seconds}s discovering the resources of {api_version:?}")]
    Timeout { api_version: String, seconds: u64 },
}

/// The scopes of every `(apiVersion, kind)` among `objects` that the API server serves.
pub async fn discover_scopes(
    client: &kube::Client,
    objects: &[Value],
    timeout: Duration,
) -> Result<KindScopes, ScopesError> {
    let api_versions: BTreeSet<&str> = objects
        .iter()
        .filter_map(|o| o.get("apiVersion").and_then(Value::as_str))
        .collect();
    let mut scopes = KindScopes::default();
    for api_version in api_versions {
        let request = async {
            if api_version.contains('/') {
                client.list_api_group_resources(api_version).await
            } else {
                client.list_core_api_resources(api_version).await
            }
        };
        let list = match tokio::time::timeout(timeout, request).await {
            Err(_) => {
                return Err(ScopesError::Timeout {
                    api_version: api_version.to_string(),
                    seconds: timeout.as_secs(),
                });
            }
            Ok(Err(kube::Error::Api(status))) if status.code == 404 => continue,
            Ok(Err(source)) => {
                return Err(ScopesError::Discovery {
                    api_version: api_version.to_string(),
                    source,
                });
            }
            Ok(Ok(list)) => list,
        };
        for resource in list.resources.iter().filter(|r| !r.name.contains('/')) {
            scopes.insert(api_version, &resource.kind, resource.namespaced);
        }
    }
    Ok(scopes)
}
