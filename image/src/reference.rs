//! Image references (`host[:port]/repo[:tag][@sha256:…]`) and digests. No IO.

use std::str::FromStr;

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    inner: oci_client::Reference,
}

impl ImageRef {
    /// Parses `reference`; Docker Hub shorthands (`busybox`) expand as `docker pull` does.
    pub fn parse(reference: &str) -> Result<Self, String> {
        let inner = oci_client::Reference::from_str(reference.trim()).map_err(|e| e.to_string())?;
        if let Some(digest) = inner.digest() {
            validate_digest(digest)?;
        }
        Ok(Self { inner })
    }

    /// True for `…@sha256:…` references, whose content cannot change.
    pub fn is_digest_pinned(&self) -> bool {
        self.inner.digest().is_some()
    }

    /// The tag, if written.
    pub fn tag(&self) -> Option<&str> {
        self.inner.tag()
    }

    /// The pinned digest, if any.
    pub fn digest(&self) -> Option<&str> {
        self.inner.digest()
    }

    /// The registry host as written (`127.0.0.1:5000`, `quay.io`, `docker.io`).
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The host actually dialled (`index.docker.io` for Docker Hub).
    pub fn resolved_registry(&self) -> &str {
        self.inner.resolve_registry()
    }

    /// The repository path (`library/busybox`).
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// `registry/repository@digest`, the canonical form recorded in status.
    pub fn with_digest(&self, digest: &str) -> String {
        format!("{}/{}@{}", self.registry(), self.repository(), digest)
    }

    pub(crate) fn oci(&self) -> &oci_client::Reference {
        &self.inner
    }

    pub(crate) fn oci_with_digest(&self, digest: &str) -> oci_client::Reference {
        oci_client::Reference::with_digest(
            self.registry().to_string(),
            self.repository().to_string(),
            digest.to_string(),
        )
    }
}

/// Accepts only `sha256:` followed by 64 lowercase hex digits. Digests become directory names in
/// the cache, so nothing looser is allowed through.
pub fn validate_digest(digest: &str) -> Result<(), String> {
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return Err(format!(
            "unsupported digest {digest:?}: only sha256 digests are supported"
        ));
    };
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format!(
            "invalid digest {digest:?}: expected sha256 and 64 lowercase hex digits"
        ));
    }
    Ok(())
}

/// `sha256:` + hex of the SHA-256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn tag_reference_is_not_pinned_and_keeps_port() {
        let r = ImageRef::parse("127.0.0.1:5000/catalogs/test:v1").unwrap();
        assert!(!r.is_digest_pinned());
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "catalogs/test");
        assert_eq!(
            r.with_digest(D),
            format!("127.0.0.1:5000/catalogs/test@{D}")
        );
    }

    #[test]
    fn digest_reference_is_pinned_even_with_a_tag() {
        let r = ImageRef::parse(&format!("quay.io/org/cat:v1@{D}")).unwrap();
        assert!(r.is_digest_pinned());
        assert_eq!(r.digest(), Some(D));
    }

    #[test]
    fn docker_hub_shorthand_expands() {
        let r = ImageRef::parse("busybox").unwrap();
        assert_eq!(r.registry(), "docker.io");
        assert_eq!(r.repository(), "library/busybox");
        assert_eq!(r.resolved_registry(), "index.docker.io");
    }

    #[test]
    fn malformed_and_non_sha256_references_are_rejected() {
        assert!(ImageRef::parse("Not A Reference").is_err());
        assert!(ImageRef::parse("quay.io/x@sha512:abcd").is_err());
        assert!(validate_digest("sha256:../../etc").is_err());
        assert!(validate_digest(&D.to_uppercase().replace("SHA256", "sha256")).is_err());
        assert!(validate_digest(D).is_ok());
    }
}
