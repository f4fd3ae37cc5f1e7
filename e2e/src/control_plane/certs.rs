//! The throwaway PKI of a test control plane.
//!
//! Input: nothing. Output: PEM text for a CA, the API server's serving certificate, an admin client
//! certificate (`CN=admin`, `O=system:masters`) and the service-account signing key pair. No IO;
//! the caller writes the files.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// Host names and addresses the API server certificate is valid for: loopback, plus the names
/// in-cluster clients use for the `kubernetes` Service.
pub const SERVING_SANS: &[&str] = &[
    "127.0.0.1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// A certificate and its private key, both PEM.
#[derive(Clone, Debug)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Everything a control plane needs to authenticate its parts and its users.
#[derive(Clone, Debug)]
pub struct Pki {
    /// The CA that signed every certificate below; clients trust it for the API server.
    pub ca: CertPair,
    /// The API server's serving certificate, valid for [`SERVING_SANS`].
    pub serving: CertPair,
    /// A client certificate for user `admin` in group `system:masters` (cluster-admin via RBAC).
    pub admin: CertPair,
    /// The private key that signs service-account tokens.
    pub service_account_key_pem: String,
    /// Its public key, which the API server uses to verify tokens.
    pub service_account_public_pem: String,
}

/// Failure to generate the PKI.
#[derive(Debug, thiserror::Error)]
#[error("failed to generate the {what}: {source}")]
pub struct CertError {
    what: &'static str,
    #[source]
    source: rcgen::Error,
}

fn context(what: &'static str) -> impl FnOnce(rcgen::Error) -> CertError {
    move |source| CertError { what, source }
}

fn name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(org) = organization {
        dn.push(DnType::OrganizationName, org);
    }
    dn
}

/// The CA's common name.
const CA_NAME: &str = "olm-e2e-ca";

impl Pki {
    /// A client certificate for `user` in `group`, signed by this PKI's CA: another identity
    /// the API server authenticates (tests tell replicas apart in the audit log by it).
    pub fn client_certificate(
        &self,
        user: &str,
        group: Option<&str>,
    ) -> Result<CertPair, CertError> {
        let ca_key = KeyPair::from_pem(&self.ca.key_pem).map_err(context("CA key"))?;
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = name(CA_NAME, None);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().map_err(context("client key"))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name(user, group);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(context("client certificate"))?;
        Ok(CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Generates a fresh CA and the certificates it signs (ECDSA P-256 keys).
    pub fn generate() -> Result<Pki, CertError> {
        let ca_key = KeyPair::generate().map_err(context("CA key"))?;
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = name(CA_NAME, None);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params
            .self_signed(&ca_key)
            .map_err(context("CA certificate"))?;
        let ca = CertPair {
            cert_pem: ca_cert.pem(),
            key_pem: ca_key.serialize_pem(),
        };
        let issuer = Issuer::new(ca_params, ca_key);

        let serving_key = KeyPair::generate().map_err(context("serving key"))?;
        let sans: Vec<String> = SERVING_SANS.iter().map(|s| s.to_string()).collect();
        let mut serving_params =
            CertificateParams::new(sans).map_err(context("serving certificate names"))?;
        serving_params.distinguished_name = name("kube-apiserver", None);
        serving_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        serving_params.use_authority_key_identifier_extension = true;
        let serving_cert = serving_params
            .signed_by(&serving_key, &issuer)
            .map_err(context("serving certificate"))?;

        let admin_key = KeyPair::generate().map_err(context("admin key"))?;
        let mut admin_params = CertificateParams::default();
        admin_params.distinguished_name = name("admin", Some("system:masters"));
        admin_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        admin_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        admin_params.use_authority_key_identifier_extension = true;
        let admin_cert = admin_params
            .signed_by(&admin_key, &issuer)
            .map_err(context("admin client certificate"))?;

        let sa_key = KeyPair::generate().map_err(context("service-account key"))?;

        Ok(Pki {
            ca,
            serving: CertPair {
                cert_pem: serving_cert.pem(),
                key_pem: serving_key.serialize_pem(),
            },
            admin: CertPair {
                cert_pem: admin_cert.pem(),
                key_pem: admin_key.serialize_pem(),
            },
            service_account_public_pem: sa_key.public_key_pem(),
            service_account_key_pem: sa_key.serialize_pem(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_pki_has_distinct_pem_blocks() {
        let pki = Pki::generate().unwrap();
        for pem in [&pki.ca.cert_pem, &pki.serving.cert_pem, &pki.admin.cert_pem] {
            assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        }
        for pem in [
            &pki.ca.key_pem,
            &pki.serving.key_pem,
            &pki.admin.key_pem,
            &pki.service_account_key_pem,
        ] {
            assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        }
        assert!(
            pki.service_account_public_pem
                .starts_with("-----BEGIN PUBLIC KEY-----")
        );
        assert_ne!(pki.serving.cert_pem, pki.admin.cert_pem);
        assert_ne!(pki.ca.key_pem, pki.serving.key_pem);
    }
}
