//! The built-in webhook certificate provider: issues each extension's CA and serving
//! certificates, keeps them in Secrets beside the release, rotates them, and removes them on
//! uninstall.
//!
//! Input: the owning extension, its install namespace and the objects it applies (rendered with
//! `CertProvider::Builtin`). Output: the PEM CA bundle to inject into those objects
//! (`olm_operator_core::webhook_certs::inject_ca_bundle`) and when to look again
//! ([`Ensured`]), or a [`WebhookCertError`]. Network: the Kubernetes API (Secrets of the install
//! namespace) with the controller's identity. The decisions (which certificates, when to rotate)
//! are `olm_operator_core::webhook_certs`; this module issues (rcgen, aws-lc-rs) and stores.
//!
//! # Secrets beside the release, not in it
//!
//! The Secrets are written by this module, not put into the Helm release manifest:
//!
//! - the release record (a Secret in the system namespace, readable by upstream's tools) would
//!   hold the private keys, and every rotation would be a new release revision (a new history
//!   entry, a CRD upgrade-safety preflight) although the bundle did not change;
//! - the serving Secret is created before the Deployment that mounts it is applied.
//!
//! What the release would have given for free is done here: each Secret carries the apply
//! layer's ownership metadata (owner labels, Helm triple, controller ownerReference to the
//! ClusterExtension) plus [`PROVIDER_LABEL`]; the reconcile adds the Secret kind to the drift
//! watches, so a deleted or edited Secret re-queues the extension and is restored (a deleted CA
//! means a new CA: its key is gone); uninstall removes them ([`BuiltinCerts::remove`]), and
//! Secrets no longer needed (an upgrade dropped a webhook) are removed at the next apply.
//!
//! | Secret | namespace | keys |
//! |---|---|---|
//! | `<extension>-webhook-ca` (`Opaque`) | install namespace | `ca.crt`, `ca.key` (active CA); during a rotation `next-ca.crt`, `next-ca.key`, `next-since` or `previous-ca.crt`, `previous-since` (Unix seconds) |
//! | `<service>-cert` (`kubernetes.io/tls`) | the Service's | `tls.crt`, `tls.key` (what the volume fix-up mounts), `ca.crt` (the CA bundle) |
//!
//! The Secrets are written with the controller's identity, also when `spec.serviceAccount` is
//! set: they are the provider's, not the bundle's (cert-manager, too, writes its Secrets
//! itself), and the ServiceAccount needs no permission on Secrets for them. Uninstall and the
//! removal of unneeded Secrets cover the install namespace, where the renderer puts every
//! webhook Service.
//!
//! A Secret of one of these names that exists without this extension's ownership metadata and
//! [`PROVIDER_LABEL`] is a collision (the apply layer's rule and upstream's message); nothing is
//! written then. Keys are never logged, never put into the status or events: logs name the
//! Secret and the reason of an issuance only.
//!
//! Certificates: ECDSA P-256 keys; the CA is `CA:TRUE, pathlen 0` with key usages keyCertSign
//! and cRLSign; serving certificates carry the three DNS names, extended key usage serverAuth
//! and an authority key identifier.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use olm_api::v1::ConditionReason;
use olm_operator_core::apply_plan::ownership::{
    OWNER_KIND, OWNER_KIND_LABEL, OWNER_NAME_LABEL, Ownership, collisions_message,
    delete_ownership, stamp, write_ownership,
};
use olm_operator_core::apply_plan::{Collision, Gvk, Owner, ResourceInfo};
use olm_operator_core::render::CertProvider;
use olm_operator_core::webhook_certs::rotation::{
    CaState, CaStep, CertInfo, IssueReason, Policy, ServingStep, Staged, ca_step, next_check,
    serving_step,
};
use olm_operator_core::webhook_certs::{
    CA_BUNDLE_KEY, CERT_MANAGER_GROUP, CERTIFICATE_KEY, OPENSHIFT_OPERATOR_GROUP, PRIVATE_KEY_KEY,
    PROVIDER_BUILTIN, PROVIDER_LABEL, ServingNeed, ca_secret_name, detected_provider,
    serving_needs,
};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData,
};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::apply::ApiFailure;

const FIELD_MANAGER: &str = olm_operator_core::apply_plan::managed_fields::FIELD_MANAGER;
const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const NEXT_CERT: &str = "next-ca.crt";
const NEXT_KEY: &str = "next-ca.key";
const NEXT_SINCE: &str = "next-since";
const PREVIOUS_CERT: &str = "previous-ca.crt";
const PREVIOUS_SINCE: &str = "previous-since";
/// The largest PEM value read back from a Secret (a certificate or key is about 1 KiB; a
/// Secret edited by someone else may hold anything up to the API server's 1 MiB).
const MAX_PEM_BYTES: usize = 64 * 1024;

/// Why the built-in provider could not provide.
#[derive(Debug, thiserror::Error)]
pub enum WebhookCertError {
    /// Secrets of the provider's names exist and are not this extension's; nothing was written.
    #[error("{}", collisions_message(.0))]
    Collisions(Vec<Collision>),
    /// An API call failed; `action` says which.
    #[error("failed to {action}: {source}")]
    Api {
        action: String,
        #[source]
        source: ApiFailure,
    },
    /// Generating a key or certificate failed (not expected with valid names).
    #[error("failed to issue webhook certificates: {0}")]
    Issue(String),
}

impl WebhookCertError {
    /// Every failure here can clear without a spec edit (the colliding Secret is deleted, the
    /// API server recovers): `Progressing=True/Retrying`.
    pub fn reason(&self) -> ConditionReason {
        ConditionReason::Retrying
    }

    pub fn is_terminal(&self) -> bool {
        false
    }

    fn api(action: impl Into<String>) -> impl FnOnce(ApiFailure) -> WebhookCertError {
        let action = action.into();
        move |source| WebhookCertError::Api { action, source }
    }
}

impl From<rcgen::Error> for WebhookCertError {
    fn from(e: rcgen::Error) -> WebhookCertError {
        WebhookCertError::Issue(e.to_string())
    }
}

/// What [`BuiltinCerts::ensure`] left in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ensured {
    /// The CA bundle (PEM, one to two certificates) to inject.
    pub ca_bundle: String,
    /// When a certificate is due next (renewal, end of an overlap).
    pub recheck_after: Duration,
    /// The Secrets written by this call (names only).
    pub written: Vec<String>,
}

/// The Secret kind, for the drift watches.
pub fn secret_resource() -> ResourceInfo {
    ResourceInfo {
        gvk: Gvk {
            group: String::new(),
            version: "v1".into(),
            kind: "Secret".into(),
        },
        plural: "secrets".into(),
        namespaced: true,
    }
}

/// The provider; one per controller.
#[derive(Clone)]
pub struct BuiltinCerts {
    client: kube::Client,
    policy: Policy,
    call_timeout: Duration,
    /// Extensions (by name) without webhooks whose namespace was found free of their provider
    /// Secrets since this process started: their reconciles make no further call here (most
    /// extensions have no webhooks; one list each after a start is what they cost).
    no_secrets: Arc<Mutex<HashSet<String>>>,
    /// The extensions that had provider Secrets anywhere when this process first looked (one
    /// cluster-wide metadata list instead of one list per extension); `None` when that list
    /// failed, and each extension's namespace is listed as before.
    census: Arc<tokio::sync::OnceCell<Option<HashSet<String>>>>,
    /// Extensions this process has seen needing provider Secrets (the census may predate them).
    had_secrets: Arc<Mutex<HashSet<String>>>,
}

impl BuiltinCerts {
    pub fn new(client: kube::Client, policy: Policy, call_timeout: Duration) -> BuiltinCerts {
        BuiltinCerts {
            client,
            policy,
            call_timeout,
            no_secrets: Arc::default(),
            census: Arc::default(),
            had_secrets: Arc::default(),
        }
    }

    /// Whether the census says `extension` had no provider Secrets at the start (Secrets made
    /// since then by this process are tracked by `no_secrets`).
    async fn had_none_at_start(&self, extension: &str) -> bool {
        let census = self
            .census
            .get_or_init(|| async {
                let api: Api<Secret> = Api::all(self.client.clone());
                let selector = format!(
                    "{OWNER_KIND_LABEL}={OWNER_KIND},{PROVIDER_LABEL}={PROVIDER_BUILTIN}"
                );
                match bounded(
                    self.call_timeout,
                    api.list_metadata(&ListParams::default().labels(&selector)),
                )
                .await
                {
                    Ok(list) => Some(
                        list.items
                            .iter()
                            .filter_map(|s| s.metadata.labels.as_ref()?.get(OWNER_NAME_LABEL))
                            .cloned()
                            .collect(),
                    ),
                    Err(e) => {
                        tracing::info!(error = %e, "could not list the built-in provider's Secrets cluster-wide; checking each extension's namespace instead");
                        None
                    }
                }
            })
            .await;
        let had_secrets = self
            .had_secrets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(extension);
        !had_secrets && census.as_ref().is_some_and(|c| !c.contains(extension))
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Makes the Secrets match what `objects` need at this time (issuing, renewing, rotating
    /// as [`olm_operator_core::webhook_certs::rotation`] decides) and removes this extension's
    /// provider Secrets no longer needed. `None`: the objects have no webhook that needs a
    /// certificate.
    pub async fn ensure(
        &self,
        owner: &Owner,
        install_namespace: &str,
        objects: &[Value],
    ) -> Result<Option<Ensured>, WebhookCertError> {
        let needs = serving_needs(objects, install_namespace);
        let ca_name = ca_secret_name(&owner.name);
        let keep: BTreeSet<(String, String)> = needs
            .iter()
            .map(|n| (n.namespace.clone(), n.secret_name.clone()))
            .chain((!needs.is_empty()).then(|| (install_namespace.to_owned(), ca_name.clone())))
            .collect();
        if needs.is_empty() {
            if !self.known_without_secrets(&owner.name, None) {
                if !self.had_none_at_start(&owner.name).await {
                    self.remove_except(owner, install_namespace, &keep).await?;
                }
                self.known_without_secrets(&owner.name, Some(true));
            }
            return Ok(None);
        }
        self.known_without_secrets(&owner.name, Some(false));
        let now = unix_now();

        // Read everything first: a collision writes nothing.
        let ca_secret = self.read(install_namespace, &ca_name).await?;
        let mut servings = Vec::with_capacity(needs.len());
        for need in &needs {
            servings.push(self.read(&need.namespace, &need.secret_name).await?);
        }
        let mut collisions = Vec::new();
        for (secret, namespace, name) in std::iter::once((&ca_secret, install_namespace, &ca_name))
            .chain(
                needs
                    .iter()
                    .zip(&servings)
                    .map(|(n, s)| (s, n.namespace.as_str(), &n.secret_name)),
            )
        {
            if let Some(secret) = secret
                && let Some(why) = not_ours(&secret.metadata, owner, install_namespace)
            {
                collisions.push(Collision {
                    kind: "Secret".into(),
                    name: name.clone(),
                    namespace: namespace.to_owned(),
                    why,
                });
            }
        }
        if !collisions.is_empty() {
            return Err(WebhookCertError::Collisions(collisions));
        }

        let mut written = Vec::new();
        // The CA.
        let mut cas = StoredCas::read(ca_secret.as_ref());
        let step = ca_step(&self.policy, now, &owner.name, &cas.state());
        if step != CaStep::Keep {
            tracing::info!(extension = %owner.name, secret = %ca_name, ?step, "rotating the webhook CA");
            cas.apply(step, &self.policy, now, &owner.name)?;
        }
        let ca_data = cas.data();
        if needs_write(ca_secret.as_ref(), &ca_data, &CA_KEYS, owner) {
            self.write(
                owner,
                install_namespace,
                install_namespace,
                &ca_name,
                "Opaque",
                &ca_data,
            )
            .await?;
            written.push(ca_name.clone());
        }
        let bundle = cas.bundle();
        let Some(active) = &cas.active else {
            return Err(WebhookCertError::Issue(
                "no active CA after issuing one".into(),
            ));
        };

        // The serving certificates.
        let mut serving_infos = Vec::with_capacity(needs.len());
        for (need, secret) in needs.iter().zip(&servings) {
            let stored = secret.as_ref().map(secret_data).unwrap_or_default();
            let current = read_serving(&stored);
            let step = serving_step(
                &self.policy,
                now,
                &owner.name,
                need,
                current.as_ref(),
                &active.info,
            );
            let (cert_pem, key_pem, info) = match (step, current) {
                (ServingStep::Keep, Some(info)) => (
                    text(&stored, CERTIFICATE_KEY),
                    text(&stored, PRIVATE_KEY_KEY),
                    info,
                ),
                (step, _) => {
                    let reason = match step {
                        ServingStep::Issue(reason) => reason,
                        ServingStep::Keep => IssueReason::Missing,
                    };
                    tracing::info!(extension = %owner.name, secret = %need.secret_name, ?reason, "issuing a webhook serving certificate");
                    issue_serving(&self.policy, now, need, active)?
                }
            };
            let data = BTreeMap::from([
                (CERTIFICATE_KEY.to_owned(), cert_pem),
                (PRIVATE_KEY_KEY.to_owned(), key_pem),
                (CA_BUNDLE_KEY.to_owned(), bundle.clone()),
            ]);
            if needs_write(secret.as_ref(), &data, &SERVING_KEYS, owner) {
                self.write(
                    owner,
                    install_namespace,
                    &need.namespace,
                    &need.secret_name,
                    "kubernetes.io/tls",
                    &data,
                )
                .await?;
                written.push(need.secret_name.clone());
            }
            serving_infos.push(info);
        }
        self.remove_except(owner, install_namespace, &keep).await?;

        let serving_refs: Vec<&CertInfo> = serving_infos.iter().collect();
        let wait = next_check(&self.policy, now, &owner.name, &cas.state(), &serving_refs);
        Ok(Some(Ensured {
            ca_bundle: bundle,
            recheck_after: Duration::from_secs(wait.max(1).unsigned_abs()),
            written,
        }))
    }

    /// Deletes every provider Secret of this extension in `install_namespace` (uninstall);
    /// returns how many were deleted.
    pub async fn remove(
        &self,
        owner: &Owner,
        install_namespace: &str,
    ) -> Result<usize, WebhookCertError> {
        let removed = self
            .remove_except(owner, install_namespace, &BTreeSet::new())
            .await?;
        self.known_without_secrets(&owner.name, Some(false));
        Ok(removed)
    }

    /// Reads (`set: None`) or records whether `extension` is known to have no provider
    /// Secrets.
    fn known_without_secrets(&self, extension: &str, set: Option<bool>) -> bool {
        let mut known = self
            .no_secrets
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match set {
            None => known.contains(extension),
            Some(true) => known.insert(extension.to_owned()),
            Some(false) => {
                self.had_secrets
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(extension.to_owned());
                known.remove(extension)
            }
        }
    }

    async fn remove_except(
        &self,
        owner: &Owner,
        install_namespace: &str,
        keep: &BTreeSet<(String, String)>,
    ) -> Result<usize, WebhookCertError> {
        // Label values are at most 63 characters: a longer name labelled nothing.
        if owner.name.len() > 63 {
            return Ok(0);
        }
        let api: Api<Secret> = Api::namespaced(self.client.clone(), install_namespace);
        let selector = format!(
            "{OWNER_KIND_LABEL}={OWNER_KIND},{OWNER_NAME_LABEL}={},{PROVIDER_LABEL}={PROVIDER_BUILTIN}",
            owner.name
        );
        let list = bounded(
            self.call_timeout,
            api.list_metadata(&ListParams::default().labels(&selector)),
        )
        .await
        .map_err(WebhookCertError::api(format!(
            "list the webhook certificate Secrets of namespace \"{install_namespace}\""
        )))?;
        let mut deleted = 0;
        for item in list.items {
            let name = item.metadata.name.clone().unwrap_or_default();
            if keep.contains(&(install_namespace.to_owned(), name.clone())) {
                continue;
            }
            if delete_ownership(&item.metadata, owner, install_namespace) != Ownership::Ours {
                continue;
            }
            match bounded(
                self.call_timeout,
                api.delete(&name, &DeleteParams::default()),
            )
            .await
            {
                Ok(_) => deleted += 1,
                Err(e) if e.is_not_found() => {}
                Err(e) => {
                    return Err(WebhookCertError::Api {
                        action: format!("delete Secret \"{install_namespace}/{name}\""),
                        source: e,
                    });
                }
            }
            tracing::info!(extension = %owner.name, secret = %name, "removed a webhook certificate Secret");
        }
        Ok(deleted)
    }

    async fn read(&self, namespace: &str, name: &str) -> Result<Option<Secret>, WebhookCertError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        bounded(self.call_timeout, api.get_opt(name))
            .await
            .map_err(WebhookCertError::api(format!(
                "read Secret \"{namespace}/{name}\""
            )))
    }

    /// Server-side apply of one provider Secret with the apply layer's ownership metadata.
    async fn write(
        &self,
        owner: &Owner,
        install_namespace: &str,
        namespace: &str,
        name: &str,
        type_: &str,
        data: &BTreeMap<String, String>,
    ) -> Result<(), WebhookCertError> {
        let encoded: serde_json::Map<String, Value> = data
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    Value::String(base64::Engine::encode(
                        &base64::engine::general_purpose::STANDARD,
                        v.as_bytes(),
                    )),
                )
            })
            .collect();
        let mut body = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {PROVIDER_LABEL: PROVIDER_BUILTIN},
            },
            "type": type_,
            "data": encoded,
        });
        stamp(&mut body, owner, install_namespace, Some(namespace));
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        bounded(
            self.call_timeout,
            api.patch(
                name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            ),
        )
        .await
        .map_err(WebhookCertError::api(format!(
            "apply Secret \"{namespace}/{name}\""
        )))?;
        Ok(())
    }
}

/// The provider `operator-controller run` uses when `--cert-provider` is unset, from API
/// discovery, once at start (the decision and its table:
/// [`olm_operator_core::webhook_certs::detected_provider`]). The resources of
/// `operator.openshift.io` are read only when that group is served and cert-manager's is not.
pub async fn detect_provider(
    client: &kube::Client,
    call_timeout: Duration,
) -> Result<CertProvider, ApiFailure> {
    let groups = bounded(call_timeout, client.list_api_groups()).await?;
    let names: Vec<String> = groups.groups.iter().map(|g| g.name.clone()).collect();
    let mut openshift_operator_resources = Vec::new();
    if !names.iter().any(|g| g == CERT_MANAGER_GROUP)
        && let Some(group) = groups
            .groups
            .iter()
            .find(|g| g.name == OPENSHIFT_OPERATOR_GROUP)
    {
        for version in &group.versions {
            let resources = bounded(
                call_timeout,
                client.list_api_group_resources(&version.group_version),
            )
            .await?;
            openshift_operator_resources.extend(resources.resources.into_iter().map(|r| r.name));
        }
    }
    Ok(detected_provider(&names, &openshift_operator_resources))
}

/// The longest a reconcile waits for the next certificate check (a daily look also repairs
/// what no watch reported).
const MAX_RECHECK: Duration = Duration::from_secs(24 * 3600);

/// The reconcile's certificate step for the objects it is about to apply: ensures the
/// Secrets ([`BuiltinCerts::ensure`]), watches Secrets for drift, and sets the CA bundle in
/// `desired`. Returns when to reconcile again for the next rotation (`None`: no webhooks).
pub async fn provide(
    certs: &BuiltinCerts,
    drift: &crate::apply::DriftWatches,
    owner: &Owner,
    install_namespace: &str,
    desired: &mut [Value],
) -> Result<Option<Duration>, WebhookCertError> {
    let Some(ensured) = certs.ensure(owner, install_namespace, desired).await? else {
        return Ok(None);
    };
    drift.watch(&[secret_resource()]);
    olm_operator_core::webhook_certs::inject_ca_bundle(desired, &ensured.ca_bundle);
    Ok(Some(ensured.recheck_after.min(MAX_RECHECK)))
}

/// The note in the extension's status when the built-in provider serves it.
pub fn status_note(detected: bool) -> String {
    if detected {
        "webhook certificates are issued by operator-controller's built-in provider (neither cert-manager nor OpenShift service-ca was detected)".to_owned()
    } else {
        "webhook certificates are issued by operator-controller's built-in provider".to_owned()
    }
}

/// The keys of the CA Secret this module owns (absent ones are removed by the apply).
const CA_KEYS: [&str; 7] = [
    CA_CERT,
    CA_KEY,
    NEXT_CERT,
    NEXT_KEY,
    NEXT_SINCE,
    PREVIOUS_CERT,
    PREVIOUS_SINCE,
];
const SERVING_KEYS: [&str; 3] = [CERTIFICATE_KEY, PRIVATE_KEY_KEY, CA_BUNDLE_KEY];

/// Whether the stored Secret differs from what this module would write, in the keys it owns or
/// in the labels uninstall selects by. Keys or labels others added are not compared: a Secret
/// someone annotated is not rewritten on every reconcile (each write is a drift event).
fn needs_write(
    stored: Option<&Secret>,
    desired: &BTreeMap<String, String>,
    owned_keys: &[&str],
    owner: &Owner,
) -> bool {
    let Some(stored) = stored else {
        return true;
    };
    let data = secret_data(stored);
    let labels = stored.metadata.labels.as_ref();
    let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
    owned_keys.iter().any(|k| data.get(*k) != desired.get(*k))
        || label(PROVIDER_LABEL) != Some(PROVIDER_BUILTIN)
        || label(OWNER_KIND_LABEL) != Some(OWNER_KIND)
        || label(OWNER_NAME_LABEL) != Some(owner.name.as_str())
}

/// Why an existing Secret is not this extension's provider Secret (`None`: it is): it must pass
/// the apply layer's write rule (Helm triple of this extension, no other controller) and show
/// that this provider made it: its label, or (someone removed the label) a controller
/// ownerReference to this ClusterExtension, which a Secret made by anyone else does not carry.
fn not_ours(meta: &ObjectMeta, owner: &Owner, install_namespace: &str) -> Option<String> {
    if let Ownership::NotOurs { why } = write_ownership(meta, owner, install_namespace) {
        return Some(why);
    }
    let labelled = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(PROVIDER_LABEL))
        .is_some_and(|v| v == PROVIDER_BUILTIN);
    let controlled = meta.owner_references.iter().flatten().any(|r| {
        r.controller == Some(true)
            && r.kind == OWNER_KIND
            && r.name == owner.name
            && r.api_version.starts_with("olm.operatorframework.io/")
    });
    (!labelled && !controlled).then(|| {
        format!("it has no label {PROVIDER_LABEL}={PROVIDER_BUILTIN} and no ownerReference to the extension")
    })
}

async fn bounded<T>(
    limit: Duration,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiFailure> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(ApiFailure::from_kube(error)),
        Err(_) => Err(ApiFailure::Timeout(limit)),
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A Secret's data as text (values that are not UTF-8 or too large read as empty).
fn secret_data(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .data
        .iter()
        .flatten()
        .map(|(k, ByteString(v))| {
            let text = if v.len() <= MAX_PEM_BYTES {
                String::from_utf8(v.clone()).unwrap_or_default()
            } else {
                String::new()
            };
            (k.clone(), text)
        })
        .collect()
}

fn text(data: &BTreeMap<String, String>, key: &str) -> String {
    data.get(key).cloned().unwrap_or_default()
}

/// What the decisions need from one PEM certificate; `None` when it is not one.
pub fn cert_info(pem: &str) -> Option<CertInfo> {
    let (_, parsed) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    let (_, cert) = x509_parser::parse_x509_certificate(&parsed.contents).ok()?;
    let dns_names = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    x509_parser::extensions::GeneralName::DNSName(d) => Some((*d).to_owned()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    Some(CertInfo {
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        dns_names,
    })
}

/// Whether `key_pem` is the private key of the certificate `cert_pem`.
fn key_matches(cert_pem: &str, key: &KeyPair) -> bool {
    let Ok((_, parsed)) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()) else {
        return false;
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(&parsed.contents) else {
        return false;
    };
    cert.public_key().raw == key.subject_public_key_info().as_slice()
}

/// The stored serving certificate, when its certificate parses and its key matches it.
fn read_serving(data: &BTreeMap<String, String>) -> Option<CertInfo> {
    let cert = data.get(CERTIFICATE_KEY)?;
    let key = KeyPair::from_pem(data.get(PRIVATE_KEY_KEY)?).ok()?;
    key_matches(cert, &key).then(|| cert_info(cert)).flatten()
}

/// One CA: its PEM texts and what the decisions need.
struct Ca {
    cert_pem: String,
    key_pem: String,
    info: CertInfo,
}

impl Ca {
    /// A stored CA whose certificate parses and whose key matches it.
    fn read(data: &BTreeMap<String, String>, cert_key: &str, key_key: &str) -> Option<Ca> {
        let cert_pem = data.get(cert_key)?.clone();
        let key_pem = data.get(key_key)?.clone();
        let key = KeyPair::from_pem(&key_pem).ok()?;
        if !key_matches(&cert_pem, &key) {
            return None;
        }
        let info = cert_info(&cert_pem)?;
        Some(Ca {
            cert_pem,
            key_pem,
            info,
        })
    }

    fn issue(policy: &Policy, now: i64) -> Result<Ca, WebhookCertError> {
        let key = KeyPair::generate()?;
        // A name unique to the key: serving certificates name their CA by it.
        let digest = sha2::Sha256::digest(key.subject_public_key_info());
        let id = hex::encode(&digest[..8]);
        let (not_before, not_after) = policy.ca_window(now);
        let mut params = CertificateParams::default();
        let mut name = DistinguishedName::new();
        name.push(DnType::OrganizationName, "operator-controller");
        name.push(DnType::CommonName, format!("olmv1-webhook-ca-{id}"));
        params.distinguished_name = name;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = timestamp(not_before)?;
        params.not_after = timestamp(not_after)?;
        let cert = params.self_signed(&key)?;
        let cert_pem = cert.pem();
        let info = cert_info(&cert_pem)
            .ok_or_else(|| WebhookCertError::Issue("the new CA does not parse".into()))?;
        Ok(Ca {
            cert_pem,
            key_pem: key.serialize_pem(),
            info,
        })
    }
}

/// The CA Secret's content as read and as changed by a step.
struct StoredCas {
    active: Option<Ca>,
    next: Option<(Ca, i64)>,
    previous: Option<(String, CertInfo, i64)>,
}

impl StoredCas {
    fn read(secret: Option<&Secret>) -> StoredCas {
        let data = secret.map(secret_data).unwrap_or_default();
        let since = |key: &str| data.get(key).and_then(|s| s.trim().parse::<i64>().ok());
        let next = Ca::read(&data, NEXT_CERT, NEXT_KEY).zip(since(NEXT_SINCE));
        let previous = data.get(PREVIOUS_CERT).and_then(|pem| {
            let info = cert_info(pem)?;
            Some((pem.clone(), info, since(PREVIOUS_SINCE)?))
        });
        StoredCas {
            active: Ca::read(&data, CA_CERT, CA_KEY),
            next,
            previous,
        }
    }

    fn state(&self) -> CaState {
        CaState {
            active: self.active.as_ref().map(|c| c.info.clone()),
            next: self.next.as_ref().map(|(c, since)| Staged {
                cert: c.info.clone(),
                since: *since,
            }),
            previous: self.previous.as_ref().map(|(_, info, since)| Staged {
                cert: info.clone(),
                since: *since,
            }),
        }
    }

    fn apply(
        &mut self,
        step: CaStep,
        policy: &Policy,
        now: i64,
        extension: &str,
    ) -> Result<(), WebhookCertError> {
        match step {
            CaStep::Keep => {}
            CaStep::Create => {
                *self = StoredCas {
                    active: Some(Ca::issue(policy, now)?),
                    next: None,
                    previous: None,
                };
            }
            CaStep::Introduce => self.next = Some((Ca::issue(policy, now)?, now)),
            CaStep::Promote => {
                let Some((next, _)) = self.next.take() else {
                    return Err(WebhookCertError::Issue(format!(
                        "{extension}: no next CA to promote"
                    )));
                };
                self.previous = self
                    .active
                    .replace(next)
                    .map(|old| (old.cert_pem, old.info, now));
            }
            CaStep::DropPrevious => self.previous = None,
        }
        Ok(())
    }

    fn data(&self) -> BTreeMap<String, String> {
        let mut data = BTreeMap::new();
        if let Some(active) = &self.active {
            data.insert(CA_CERT.to_owned(), active.cert_pem.clone());
            data.insert(CA_KEY.to_owned(), active.key_pem.clone());
        }
        if let Some((next, since)) = &self.next {
            data.insert(NEXT_CERT.to_owned(), next.cert_pem.clone());
            data.insert(NEXT_KEY.to_owned(), next.key_pem.clone());
            data.insert(NEXT_SINCE.to_owned(), since.to_string());
        }
        if let Some((pem, _, since)) = &self.previous {
            data.insert(PREVIOUS_CERT.to_owned(), pem.clone());
            data.insert(PREVIOUS_SINCE.to_owned(), since.to_string());
        }
        data
    }

    /// The PEM bundle: the active CA, then the next or the previous one.
    fn bundle(&self) -> String {
        let mut out = String::new();
        for pem in self
            .active
            .iter()
            .map(|c| &c.cert_pem)
            .chain(self.next.iter().map(|(c, _)| &c.cert_pem))
            .chain(self.previous.iter().map(|(pem, _, _)| pem))
        {
            out.push_str(pem.trim_end());
            out.push('\n');
        }
        out
    }
}

fn timestamp(secs: i64) -> Result<time::OffsetDateTime, WebhookCertError> {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .map_err(|e| WebhookCertError::Issue(format!("time {secs} out of range: {e}")))
}

/// A serving certificate for `need`, signed by `ca`: (certificate PEM, key PEM, info).
fn issue_serving(
    policy: &Policy,
    now: i64,
    need: &ServingNeed,
    ca: &Ca,
) -> Result<(String, String, CertInfo), WebhookCertError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(need.dns_names())?;
    let mut name = DistinguishedName::new();
    let common_name = need.common_name();
    // X.509's upper bound for a common name; the DNS names carry the identity anyway.
    if common_name.len() <= 64 {
        name.push(DnType::CommonName, common_name);
    }
    params.distinguished_name = name;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let (not_before, not_after) = policy.serving_window(now, &ca.info);
    params.not_before = timestamp(not_before)?;
    params.not_after = timestamp(not_after)?;
    let ca_key = KeyPair::from_pem(&ca.key_pem)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key)?;
    let cert = params.signed_by(&key, &issuer)?;
    let cert_pem = cert.pem();
    let info = cert_info(&cert_pem).ok_or_else(|| {
        WebhookCertError::Issue("the new serving certificate does not parse".into())
    })?;
    Ok((cert_pem, key.serialize_pem(), info))
}

/// Issues a CA and one serving certificate per need without storing anything (for
/// `operator-controller render --cert-provider builtin`): the serving Secrets' data (keys
/// [`CERTIFICATE_KEY`], [`PRIVATE_KEY_KEY`], [`CA_BUNDLE_KEY`]) per need, and the bundle.
pub fn issue_offline(
    policy: &Policy,
    needs: &[ServingNeed],
) -> Result<(Vec<BTreeMap<String, String>>, String), WebhookCertError> {
    let now = unix_now();
    let ca = Ca::issue(policy, now)?;
    let bundle = format!("{}\n", ca.cert_pem.trim_end());
    let mut out = Vec::with_capacity(needs.len());
    for need in needs {
        let (cert, key, _) = issue_serving(policy, now, need, &ca)?;
        out.push(BTreeMap::from([
            (CERTIFICATE_KEY.to_owned(), cert),
            (PRIVATE_KEY_KEY.to_owned(), key),
            (CA_BUNDLE_KEY.to_owned(), bundle.clone()),
        ]));
    }
    Ok((out, bundle))
}

/// A serving Secret as `render` prints it (data base64-encoded, no ownership metadata: the
/// controller adds that when it writes).
pub fn serving_secret_object(need: &ServingNeed, data: &BTreeMap<String, String>) -> Value {
    let encoded: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                Value::String(base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    v.as_bytes(),
                )),
            )
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": need.secret_name,
            "namespace": need.namespace,
            "labels": {PROVIDER_LABEL: PROVIDER_BUILTIN},
        },
        "type": "kubernetes.io/tls",
        "data": encoded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need() -> ServingNeed {
        ServingNeed {
            service: "hook-service".into(),
            namespace: "ns".into(),
            secret_name: "hook-service-cert".into(),
        }
    }

    #[test]
    fn issued_certificates_read_back_as_the_decisions_expect() {
        let policy = Policy::with_validity(3600);
        let ca = Ca::issue(&policy, 1_000_000).expect("a CA");
        assert_eq!(ca.info.subject, ca.info.issuer);
        assert_eq!(ca.info.not_after, 1_000_000 + 3600);
        let (cert, key, info) = issue_serving(&policy, 1_000_100, &need(), &ca).expect("serving");
        assert_eq!(info.issuer, ca.info.subject);
        assert_eq!(info.dns_names, need().dns_names());
        assert_eq!(
            info.not_after, ca.info.not_after,
            "capped at the CA's expiry"
        );
        let data = BTreeMap::from([
            (CERTIFICATE_KEY.to_owned(), cert.clone()),
            (PRIVATE_KEY_KEY.to_owned(), key),
        ]);
        assert_eq!(read_serving(&data), Some(info));
        // A key that is not the certificate's makes the stored certificate unusable.
        let other = KeyPair::generate().expect("a key").serialize_pem();
        let data = BTreeMap::from([
            (CERTIFICATE_KEY.to_owned(), cert),
            (PRIVATE_KEY_KEY.to_owned(), other),
        ]);
        assert_eq!(read_serving(&data), None);
        assert_eq!(cert_info("not a certificate"), None);
    }

    fn owner() -> Owner {
        Owner {
            name: "ext".into(),
            uid: "u1".into(),
        }
    }

    /// Metadata as [`BuiltinCerts::write`] stamps it.
    fn ours() -> ObjectMeta {
        let mut body = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "labels": {PROVIDER_LABEL: PROVIDER_BUILTIN}}});
        stamp(&mut body, &owner(), "ns", Some("ns"));
        serde_json::from_value(body["metadata"].clone()).expect("metadata")
    }

    #[test]
    fn only_secrets_this_provider_made_for_this_extension_are_ours() {
        assert_eq!(not_ours(&ours(), &owner(), "ns"), None);
        // A user's Secret of the same name.
        assert!(not_ours(&ObjectMeta::default(), &owner(), "ns").is_some());
        // Another extension's.
        let other = Owner {
            name: "other".into(),
            uid: "u2".into(),
        };
        assert!(not_ours(&ours(), &other, "ns").is_some());
        // The label removed: still ours by the ownerReference (re-applying restores it).
        let mut unlabelled = ours();
        unlabelled.labels.as_mut().map(|l| l.remove(PROVIDER_LABEL));
        assert_eq!(not_ours(&unlabelled, &owner(), "ns"), None);
        // The Helm triple of this extension on a Secret someone else made (a bundle's own
        // Secret, say) without our label or ownerReference: not ours.
        let mut bundle_secret = ours();
        bundle_secret
            .labels
            .as_mut()
            .map(|l| l.remove(PROVIDER_LABEL));
        bundle_secret.owner_references = None;
        assert!(not_ours(&bundle_secret, &owner(), "ns").is_some());
    }

    #[test]
    fn secrets_are_rewritten_only_when_owned_keys_or_selecting_labels_differ() {
        let data = BTreeMap::from([(CERTIFICATE_KEY.to_owned(), "c".to_owned())]);
        let secret = |meta: ObjectMeta, extra: bool| {
            let mut d: BTreeMap<String, ByteString> = data
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                .collect();
            if extra {
                d.insert("someone-elses".into(), ByteString(b"x".to_vec()));
            }
            Secret {
                metadata: meta,
                data: Some(d),
                ..Secret::default()
            }
        };
        assert!(needs_write(None, &data, &SERVING_KEYS, &owner()));
        assert!(!needs_write(
            Some(&secret(ours(), false)),
            &data,
            &SERVING_KEYS,
            &owner()
        ));
        assert!(!needs_write(
            Some(&secret(ours(), true)),
            &data,
            &SERVING_KEYS,
            &owner()
        ));
        let mut unlabelled = ours();
        unlabelled.labels.as_mut().map(|l| l.remove(PROVIDER_LABEL));
        assert!(needs_write(
            Some(&secret(unlabelled, false)),
            &data,
            &SERVING_KEYS,
            &owner()
        ));
        let changed = BTreeMap::from([(CERTIFICATE_KEY.to_owned(), "d".to_owned())]);
        assert!(needs_write(
            Some(&secret(ours(), false)),
            &changed,
            &SERVING_KEYS,
            &owner()
        ));
        // A key this module owns that should be gone (the previous CA after its overlap).
        let mut ca = secret(ours(), false);
        ca.data
            .as_mut()
            .map(|d| d.insert(PREVIOUS_CERT.into(), ByteString(b"p".to_vec())));
        assert!(needs_write(Some(&ca), &data, &CA_KEYS, &owner()));
    }

    #[test]
    fn the_ca_secret_round_trips_through_every_rotation_step() {
        let policy = Policy::with_validity(600);
        let mut cas = StoredCas::read(None);
        for (now, step) in [
            (10, CaStep::Create),
            (400, CaStep::Introduce),
            (460, CaStep::Promote),
            (520, CaStep::DropPrevious),
        ] {
            cas.apply(step, &policy, now, "ext").expect("step");
            let secret = Secret {
                data: Some(
                    cas.data()
                        .into_iter()
                        .map(|(k, v)| (k, ByteString(v.into_bytes())))
                        .collect(),
                ),
                ..Secret::default()
            };
            let read = StoredCas::read(Some(&secret));
            assert_eq!(read.state(), cas.state(), "after {step:?}");
            assert_eq!(read.bundle(), cas.bundle());
            let certs = cas.bundle().matches("BEGIN CERTIFICATE").count();
            let expected = match step {
                CaStep::Introduce | CaStep::Promote => 2,
                _ => 1,
            };
            assert_eq!(certs, expected, "bundle size after {step:?}");
        }
        assert!(!cas.data().contains_key(PREVIOUS_CERT));
    }
}
