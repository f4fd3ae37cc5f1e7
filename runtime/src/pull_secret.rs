//! The global pull secret (`--global-pull-secret NAMESPACE/NAME`): registry credentials for every
//! image a controller pulls, kept current by watching the Secret.
//!
//! Input: the Secret's reference. Output: the credentials each time they change (`None` when the
//! Secret is missing or unusable: pulls go anonymous). Network: one watch on one Secret.

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use olm_image::DockerConfig;
use tokio_util::sync::CancellationToken;

/// `NAMESPACE/NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

impl std::str::FromStr for SecretRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(SecretRef {
                    namespace: ns.to_string(),
                    name: name.to_string(),
                })
            }
            _ => Err(format!(
                "invalid pull secret {s:?}: expected NAMESPACE/NAME"
            )),
        }
    }
}

/// Reads registry credentials from a Secret's `.dockerconfigjson` (or legacy `.dockercfg`).
pub fn credentials(secret: &Secret) -> Result<DockerConfig, String> {
    let data = secret.data.as_ref();
    let bytes = data
        .and_then(|d| d.get(".dockerconfigjson").or_else(|| d.get(".dockercfg")))
        .ok_or_else(|| "the secret has neither .dockerconfigjson nor .dockercfg".to_string())?;
    DockerConfig::from_json(&bytes.0).map_err(|e| e.to_string())
}

/// Watches the Secret until `shutdown`, calling `on_change` with its credentials on every change.
/// A missing or unusable Secret means anonymous pulls (logged, `None`).
pub async fn watch(
    client: kube::Client,
    secret: SecretRef,
    shutdown: CancellationToken,
    mut on_change: impl FnMut(Option<DockerConfig>) + Send,
) {
    let api: Api<Secret> = Api::namespaced(client, &secret.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", secret.name));
    let mut events = watcher::watcher(api, config).boxed();
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => return,
            event = events.next() => match event {
                Some(event) => event,
                None => return,
            },
        };
        let auth = match event {
            Ok(Event::Apply(s) | Event::InitApply(s)) => match credentials(&s) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!(namespace = %secret.namespace, name = %secret.name, error = %e, "ignoring unusable pull secret");
                    None
                }
            },
            Ok(Event::Delete(_)) => None,
            Ok(Event::Init | Event::InitDone) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "pull secret watch failed; retrying");
                continue;
            }
        };
        on_change(auth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    #[test]
    fn secret_references_are_namespace_slash_name() {
        assert_eq!(
            "olmv1-system/pull".parse::<SecretRef>(),
            Ok(SecretRef {
                namespace: "olmv1-system".into(),
                name: "pull".into()
            })
        );
        for bad in ["pull", "/pull", "ns/", "a/b/c"] {
            assert!(bad.parse::<SecretRef>().is_err(), "{bad}");
        }
    }

    #[test]
    fn credentials_come_from_dockerconfigjson() {
        let json = br#"{"auths":{"reg.io":{"auth":"dXNlcjpwYXNz"}}}"#.to_vec();
        let secret = Secret {
            data: Some(
                [(".dockerconfigjson".to_string(), ByteString(json))]
                    .into_iter()
                    .collect(),
            ),
            ..Secret::default()
        };
        let config = credentials(&secret).expect("parses");
        let c = config.credentials_for("reg.io", "cat").expect("entry");
        assert_eq!((c.username.as_str(), c.password.as_str()), ("user", "pass"));
        assert!(credentials(&Secret::default()).is_err());
    }
}
