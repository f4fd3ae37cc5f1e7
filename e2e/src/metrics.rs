//! Reading the controllers' `/metrics` the way Prometheus does in a cluster: over HTTPS, with a
//! ServiceAccount token the API server authenticates and whose RBAC allows `get` on `/metrics`
//! (the listener refuses everyone else, as upstream's does).
//!
//! Input: a scratch directory for the listener's certificate, the shared control plane. Output:
//! [`MetricsTls`] (files and flags for a controller), [`reader_token`] and [`scrape`]. Network:
//! the Kubernetes API (ServiceAccount, RBAC, TokenRequest) and 127.0.0.1.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::OnceCell;

use crate::operator_controller::free_port;

/// The ServiceAccount (in `default`) and ClusterRole the metrics reader uses.
pub const READER: &str = "e2e-metrics-reader";

/// A metrics listener's certificate (for 127.0.0.1) and address.
pub struct MetricsTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca_pem: String,
    pub addr: SocketAddr,
}

impl MetricsTls {
    /// A fresh certificate in `dir` and a free port on 127.0.0.1.
    pub fn new(dir: &Path) -> MetricsTls {
        let (ca_pem, cert_pem, key_pem) =
            crate::registry::throwaway_tls().unwrap_or_else(|e| panic!("{e}"));
        let (cert, key) = (dir.join("metrics-tls.crt"), dir.join("metrics-tls.key"));
        std::fs::write(&cert, cert_pem).expect("write the metrics certificate");
        std::fs::write(&key, key_pem).expect("write the metrics key");
        MetricsTls {
            cert,
            key,
            ca_pem,
            addr: SocketAddr::from(([127, 0, 0, 1], free_port())),
        }
    }

    /// `--tls-cert`, `--tls-key`, `--metrics-bind-address`.
    pub fn flags(&self) -> Vec<String> {
        vec![
            format!("--tls-cert={}", self.cert.display()),
            format!("--tls-key={}", self.key.display()),
            format!("--metrics-bind-address={}", self.addr),
        ]
    }

    /// `https://127.0.0.1:PORT/metrics`.
    pub fn url(&self) -> String {
        format!("https://{}/metrics", self.addr)
    }
}

static TOKEN: OnceCell<String> = OnceCell::const_new();

/// A token of a ServiceAccount allowed `get` on `/metrics` (made once per test process).
pub async fn reader_token() -> String {
    TOKEN
        .get_or_init(|| async {
            let client = crate::shared().await.client().await;
            let apply = PatchParams::apply("olm-e2e").force();
            let sa: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
            sa.patch(
                READER,
                &apply,
                &Patch::Apply(json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": READER, "namespace": "default"}})),
            )
            .await
            .expect("the metrics reader ServiceAccount");
            let roles: Api<ClusterRole> = Api::all(client.clone());
            roles
                .patch(
                    READER,
                    &apply,
                    &Patch::Apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "ClusterRole", "metadata": {"name": READER},
                        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})),
                )
                .await
                .expect("the metrics reader ClusterRole");
            let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
            bindings
                .patch(
                    READER,
                    &apply,
                    &Patch::Apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "ClusterRoleBinding", "metadata": {"name": READER},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                            "kind": "ClusterRole", "name": READER},
                        "subjects": [{"kind": "ServiceAccount", "name": READER,
                            "namespace": "default"}]})),
                )
                .await
                .expect("the metrics reader ClusterRoleBinding");
            service_account_token(&client, "default", READER).await
        })
        .await
        .clone()
}

/// A token of ServiceAccount `namespace/name` from the TokenRequest API.
pub async fn service_account_token(client: &kube::Client, namespace: &str, name: &str) -> String {
    let sa: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    sa.create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token")
        .status
        .expect("a token status")
        .token
}

/// GET `url` trusting `ca_pem`, with `token` as the bearer: (status, body).
pub async fn scrape(url: &str, ca_pem: &str, token: Option<&str>) -> (u16, String) {
    let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("a CA certificate");
    let http = reqwest::Client::builder()
        .add_root_certificate(ca)
        .build()
        .expect("an HTTPS client");
    let mut request = http.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("the metrics listener answers");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// The metrics text, read as the metrics reader; panics unless the answer is 200.
pub async fn read(tls: &MetricsTls) -> String {
    let token = reader_token().await;
    let (status, body) = scrape(&tls.url(), &tls.ca_pem, Some(&token)).await;
    assert_eq!(status, 200, "{body}");
    body
}
