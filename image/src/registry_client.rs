//! Builds the oci-client connection (TLS roots, plain-HTTP exceptions, timeouts) and turns its
//! errors into stable [`ImageErrorKind`]s. Input: connection settings. Output: a client. The
//! client talks to registries; nothing here does by itself.

use std::io;
use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};

use crate::error::ImageErrorKind;

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct ConnectionConfig {
    /// Registries (`host:port`, exactly as written in image references) spoken to over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// Extra trusted CA certificates (PEM, one or more), on top of the system roots.
    pub extra_ca_pem: Option<Vec<u8>>,
}

/// A configuration problem found before any network traffic.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// The CA bundle holds no usable certificate.
    #[error("failed to load the extra CA bundle: {0}")]
    CaBundle(String),
    /// The HTTP client could not be built.
    #[error("failed to build the registry client: {0}")]
    Client(String),
}

pub(crate) fn build_client(
    config: &ConnectionConfig,
) -> Result<oci_client::Client, ConnectionError> {
    let extra_root_certificates = match &config.extra_ca_pem {
        Some(pem) => split_pem_certificates(pem)?,
        None => Vec::new(),
    };
    let protocol = if config.insecure_registries.is_empty() {
        ClientProtocol::Https
    } else {
        ClientProtocol::HttpsExcept(config.insecure_registries.clone())
    };
    client(protocol, extra_root_certificates, false)
}

/// How an `insecure` registries.conf source is spoken to, in the order tried (upstream pings
/// HTTPS without certificate verification first, then plain HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InsecureTransport {
    /// HTTPS, any certificate accepted.
    UnverifiedTls,
    /// Plain HTTP.
    PlainHttp,
}

/// A client for one [`InsecureTransport`].
pub(crate) fn build_insecure_client(
    transport: InsecureTransport,
) -> Result<oci_client::Client, ConnectionError> {
    match transport {
        InsecureTransport::UnverifiedTls => client(ClientProtocol::Https, Vec::new(), true),
        InsecureTransport::PlainHttp => client(ClientProtocol::Http, Vec::new(), false),
    }
}

fn client(
    protocol: ClientProtocol,
    extra_root_certificates: Vec<Certificate>,
    accept_invalid_certificates: bool,
) -> Result<oci_client::Client, ConnectionError> {
    let client_config = ClientConfig {
        protocol,
        extra_root_certificates,
        accept_invalid_certificates,
        // Layers are fetched one at a time, in order, by the puller.
        max_concurrent_download: 1,
        connect_timeout: Some(Duration::from_secs(15)),
        read_timeout: Some(Duration::from_secs(120)),
        platform_resolver: None,
        ..ClientConfig::default()
    };
    oci_client::Client::try_from(client_config).map_err(|e| ConnectionError::Client(e.to_string()))
}

/// One `Certificate` per PEM block: a bundle often holds several CAs.
fn split_pem_certificates(pem: &[u8]) -> Result<Vec<Certificate>, ConnectionError> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let text =
        std::str::from_utf8(pem).map_err(|_| ConnectionError::CaBundle("not UTF-8 PEM".into()))?;
    let mut certificates = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let Some(len) = rest[start..].find(END) else {
            return Err(ConnectionError::CaBundle(
                "unterminated certificate block".into(),
            ));
        };
        let block = &rest[start..start + len + END.len()];
        certificates.push(Certificate {
            encoding: CertificateEncoding::Pem,
            data: format!("{block}\n").into_bytes(),
        });
        rest = &rest[start + len + END.len()..];
    }
    if certificates.is_empty() {
        return Err(ConnectionError::CaBundle("no PEM certificate found".into()));
    }
    Ok(certificates)
}

/// Maps an oci-client error to a stable kind. `registry` names the host in messages.
pub(crate) fn map_error(
    registry: &str,
    had_credentials: bool,
    err: OciDistributionError,
) -> ImageErrorKind {
    let registry = registry.to_string();
    match err {
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => ImageErrorKind::Unauthorized {
            registry,
            status: 401,
            had_credentials,
        },
        OciDistributionError::RegistryError { envelope, .. } => {
            let first = envelope.errors.first();
            let message = first.map(|e| e.message.clone()).unwrap_or_default();
            match first.map(|e| &e.code) {
                Some(OciErrorCode::Unauthorized) => ImageErrorKind::Unauthorized {
                    registry,
                    status: 401,
                    had_credentials,
                },
                Some(OciErrorCode::Denied) => ImageErrorKind::Unauthorized {
                    registry,
                    status: 403,
                    had_credentials,
                },
                Some(
                    OciErrorCode::ManifestUnknown
                    | OciErrorCode::NameUnknown
                    | OciErrorCode::BlobUnknown
                    | OciErrorCode::NotFound,
                ) => ImageErrorKind::NotFound {
                    registry,
                    detail: if message.is_empty() {
                        "not found".into()
                    } else {
                        message
                    },
                },
                Some(OciErrorCode::Toomanyrequests) => ImageErrorKind::RateLimited { registry },
                _ => ImageErrorKind::Protocol {
                    registry,
                    detail: if message.is_empty() {
                        "registry error".into()
                    } else {
                        message
                    },
                },
            }
        }
        OciDistributionError::ServerError { code, message, .. } => match code {
            401 | 403 => ImageErrorKind::Unauthorized {
                registry,
                status: code,
                had_credentials,
            },
            404 => ImageErrorKind::NotFound {
                registry,
                detail: "not found".into(),
            },
            429 => ImageErrorKind::RateLimited { registry },
            500..=599 => ImageErrorKind::ServerError {
                registry,
                status: code,
            },
            _ => ImageErrorKind::Protocol {
                registry,
                detail: format!("HTTP {code}: {}", first_line(&message)),
            },
        },
        OciDistributionError::DigestError(DigestError::VerificationError { expected, actual }) => {
            ImageErrorKind::DigestMismatch {
                what: "manifest",
                expected,
                actual,
            }
        }
        OciDistributionError::RequestError(e) => {
            let reason = if e.is_timeout() {
                "timed out".to_string()
            } else {
                transport_reason(&e, e.is_connect())
            };
            ImageErrorKind::Unreachable { registry, reason }
        }
        OciDistributionError::IoError(e) => ImageErrorKind::Unreachable {
            registry,
            reason: e.kind().to_string(),
        },
        other => ImageErrorKind::Protocol {
            registry,
            detail: first_line(&other.to_string()).to_string(),
        },
    }
}

/// A description of a transport failure without addresses: the first recognisable cause.
pub(crate) fn transport_reason(
    err: &(dyn std::error::Error + 'static),
    is_connect: bool,
) -> String {
    let mut chain: Vec<&(dyn std::error::Error + 'static)> = Vec::new();
    let mut current = Some(err);
    while let Some(e) = current {
        chain.push(e);
        current = e.source();
    }
    let text: Vec<String> = chain
        .iter()
        .map(|e| e.to_string().to_ascii_lowercase())
        .collect();
    if text.iter().any(|t| t.contains("certificate")) {
        return "tls certificate verification failed (is the registry's CA in the CA bundle?)"
            .to_string();
    }
    if text.iter().any(|t| {
        t.contains("invalidcontenttype")
            || t.contains("corrupt message")
            || t.contains("tls handshake")
    }) {
        return "tls handshake failed (if the registry speaks plain HTTP, list it as an insecure registry)".to_string();
    }
    // The resolver's own words name the host; its io::Error kind says nothing ("uncategorized").
    if text
        .iter()
        .any(|t| t.contains("dns error") || t.contains("failed to lookup address"))
    {
        return "name resolution failed".to_string();
    }
    if let Some(io) = chain.iter().find_map(|e| e.downcast_ref::<io::Error>()) {
        return io.kind().to_string();
    }
    if is_connect {
        "connection failed".to_string()
    } else {
        "request failed".to_string()
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_bundle_with_several_certificates_is_split_per_block() {
        let pem = "junk\n-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n";
        let certs = split_pem_certificates(pem.as_bytes()).unwrap();
        assert_eq!(certs.len(), 2);
        assert!(String::from_utf8_lossy(&certs[1].data).contains("BBB"));
        assert!(split_pem_certificates(b"no certs").is_err());
    }

    #[test]
    fn status_codes_map_to_retry_classes() {
        let server = |code| OciDistributionError::ServerError {
            code,
            url: "http://127.0.0.1:1/v2/x".into(),
            message: "boom".into(),
        };
        assert!(matches!(
            map_error("r", false, server(503)),
            ImageErrorKind::ServerError { status: 503, .. }
        ));
        assert!(matches!(
            map_error("r", false, server(429)),
            ImageErrorKind::RateLimited { .. }
        ));
        assert!(matches!(
            map_error("r", true, server(403)),
            ImageErrorKind::Unauthorized {
                status: 403,
                had_credentials: true,
                ..
            }
        ));
        assert!(matches!(
            map_error("r", false, server(404)),
            ImageErrorKind::NotFound { .. }
        ));
    }

    #[test]
    fn resolver_failures_are_described_as_such() {
        let e = io::Error::other(
            "dns error: failed to lookup address information: Name or service not known",
        );
        assert_eq!(transport_reason(&e, true), "name resolution failed");
    }

    #[test]
    fn io_errors_are_described_by_kind_only() {
        let e = io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "connect 127.0.0.1:41234 -> 127.0.0.1:5000",
        );
        let reason = transport_reason(&e, true);
        assert_eq!(reason, "connection refused");
    }
}
