//! Kubeconfig files for the test control plane.
//!
//! Input: the server URL, the CA and a credential. Output: kubeconfig YAML text with every
//! certificate and key inlined (so the file stands alone). No IO.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

/// How a kubeconfig user authenticates.
#[derive(Clone, Debug)]
pub enum Credential {
    /// A client certificate and key (PEM).
    ClientCertificate { cert_pem: String, key_pem: String },
    /// A bearer token, e.g. a service account token from the TokenRequest API.
    Token(String),
}

/// Renders a single-context kubeconfig named `context` pointing at `server`.
pub fn render(
    context: &str,
    server: &str,
    ca_pem: &str,
    credential: &Credential,
) -> Result<String, serde_saphyr::ser::Error> {
    let user = match credential {
        Credential::ClientCertificate { cert_pem, key_pem } => json!({
            "client-certificate-data": STANDARD.encode(cert_pem),
            "client-key-data": STANDARD.encode(key_pem),
        }),
        Credential::Token(token) => json!({ "token": token }),
    };
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": context,
            "cluster": {
                "server": server,
                "certificate-authority-data": STANDARD.encode(ca_pem),
            },
        }],
        "users": [{ "name": context, "user": user }],
        "contexts": [{
            "name": context,
            "context": { "cluster": context, "user": context },
        }],
        "current-context": context,
        "preferences": {},
    });
    serde_saphyr::to_string(&doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_kubeconfig_parses_with_kube_and_inlines_credentials() {
        let yaml = render(
            "olm-e2e",
            "https://127.0.0.1:6443",
            "CA PEM",
            &Credential::ClientCertificate {
                cert_pem: "CERT".into(),
                key_pem: "KEY".into(),
            },
        )
        .unwrap();
        let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some("olm-e2e"));
        let cluster = kc.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:6443"));
        assert_eq!(
            cluster.certificate_authority_data.as_deref(),
            Some(STANDARD.encode("CA PEM").as_str())
        );
        let user = kc.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(
            user.client_certificate_data.as_deref(),
            Some(STANDARD.encode("CERT").as_str())
        );
    }

    #[test]
    fn token_credential_becomes_a_bearer_token_user() {
        let yaml = render(
            "sa",
            "https://127.0.0.1:1",
            "CA",
            &Credential::Token("abc".into()),
        )
        .unwrap();
        let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        let user = kc.auth_infos[0].auth_info.as_ref().unwrap();
        assert!(user.token.is_some());
        assert!(user.client_certificate_data.is_none());
    }
}
