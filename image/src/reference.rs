//! Image references (`host[:port]/repo[:tag][@sha256:…]`) and digests. No IO.
//!
//! References are parsed by hand rather than with `oci_client::Reference::from_str`: that goes
//! through oci-spec's reference regex, whose one-off compilation costs ~300k allocations and
//! ~10 MiB at peak and whose compiled form and lazy-DFA caches then stay resident for the life of
//! the process. The grammar below mirrors that regex and oci-spec's normalisation exactly (the
//! tests compare both on every case), except that tags are ASCII-only as in the distribution spec.

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    inner: oci_client::Reference,
}

impl ImageRef {
    /// Parses `reference`; Docker Hub shorthands (`busybox`) expand as `docker pull` does.
    pub fn parse(reference: &str) -> Result<Self, String> {
        let inner = parse_reference(reference.trim())?;
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

    /// `registry/repository`, the name registries.conf prefixes are matched against.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry(), self.repository())
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

/// `registry/repository[:tag][@digest]`, normalised (Docker Hub names in full, `:latest` added
/// to a reference that had neither tag nor digest).
impl std::fmt::Display for ImageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.registry(), self.repository())?;
        if let Some(tag) = self.tag() {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = self.digest() {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// oci-spec's limit on the repository path: the registry is not counted, an added `library/` is.
const NAME_TOTAL_LENGTH_MAX: usize = 255;
/// The distribution spec's tag limit: a leading character plus up to 127 more.
const TAG_LENGTH_MAX: usize = 128;
/// A digest's hex part is at least this long before its algorithm's exact length is checked.
const DIGEST_HEX_MIN: usize = 32;
const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_LEGACY: &str = "index.docker.io";
const DOCKER_HUB_OFFICIAL_NAMESPACE: &str = "library";
const DEFAULT_TAG: &str = "latest";

/// Parses `reference` into what `oci_client::Reference::from_str` would return, without its
/// regex. The accepted grammar is oci-spec's `REFERENCE_REGEXP` spelled out:
///
/// ```text
/// reference := name [":" tag] ["@" digest]
/// name      := [domain "/"] path ("/" path)*
/// domain    := label ("." label)* [":" [0-9]+]
/// label     := [a-zA-Z0-9] | [a-zA-Z0-9] [a-zA-Z0-9-]* [a-zA-Z0-9]
/// path      := [a-z0-9]+ (("." | "_" | "__" | "-"*) [a-z0-9]+)*
/// tag       := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
/// digest    := algorithm ":" [0-9a-fA-F]{32,}
/// algorithm := [A-Za-z][A-Za-z0-9]* ([-_+.] [A-Za-z][A-Za-z0-9]*)*
/// ```
///
/// followed by oci-spec's normalisation (`split_domain`) and its post-regex checks (repository
/// length, digest algorithm and length).
fn parse_reference(reference: &str) -> Result<oci_client::Reference, String> {
    let invalid = |problem: String| format!("invalid image reference {reference:?}: {problem}");
    if reference.is_empty() {
        return Err(invalid("it is empty".to_string()));
    }
    // No part of the grammar but the separator contains '@', so the first one starts the digest.
    let (rest, digest) = match reference.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (reference, None),
    };
    // The name holds a ':' only before a port, and a '/' always follows a port; so a ':' with no
    // '/' after it can only start the tag.
    let (name, tag) = match rest.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
        _ => (rest, None),
    };
    check_name(name).map_err(invalid)?;
    if let Some(tag) = tag {
        check_tag(tag).map_err(invalid)?;
    }
    if let Some(digest) = digest {
        check_digest(digest).map_err(invalid)?;
    }
    let (registry, repository) = split_domain(name);
    if repository.len() > NAME_TOTAL_LENGTH_MAX {
        return Err(invalid(format!(
            "repository {repository:?} is {} characters, more than {NAME_TOTAL_LENGTH_MAX}",
            repository.len()
        )));
    }
    let (tag, digest) = (tag.map(str::to_string), digest.map(str::to_string));
    Ok(match (tag, digest) {
        (Some(tag), Some(digest)) => {
            oci_client::Reference::with_tag_and_digest(registry, repository, tag, digest)
        }
        (Some(tag), None) => oci_client::Reference::with_tag(registry, repository, tag),
        (None, Some(digest)) => oci_client::Reference::with_digest(registry, repository, digest),
        // As `docker pull` does, a bare name means its `latest` tag.
        (None, None) => {
            oci_client::Reference::with_tag(registry, repository, DEFAULT_TAG.to_string())
        }
    })
}

/// `name := [domain "/"] path ("/" path)*`. Only the first component can be a domain, and it may
/// also be a path component: which one it is decides nothing here (see [`split_domain`]).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the repository name is empty".to_string());
    }
    let Some((first, rest)) = name.split_once('/') else {
        return check_path_component(name);
    };
    for component in rest.split('/') {
        check_path_component(component)?;
    }
    if first.is_empty() {
        // Reports the leading '/'.
        return check_path_component(first);
    }
    if is_domain(first) || is_path_component(first) {
        return Ok(());
    }
    Err(format!(
        "{first:?} is neither a registry host[:port] nor a lowercase path component"
    ))
}

fn check_path_component(component: &str) -> Result<(), String> {
    if component.is_empty() {
        return Err(
            "the name has an empty path component (leading, trailing or double '/')".to_string(),
        );
    }
    if !is_path_component(component) {
        return Err(format!(
            "path component {component:?} must be lowercase letters and digits, joined by \
             '.', '_', '__' or dashes"
        ));
    }
    Ok(())
}

/// `[a-z0-9]+ (("." | "_" | "__" | "-"*) [a-z0-9]+)*`: alphanumeric at both ends, and every run
/// of other characters is one allowed separator.
fn is_path_component(component: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = component.as_bytes();
    bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && component
            .split(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            .all(|separator| {
                matches!(separator, "" | "." | "_" | "__") || separator.bytes().all(|b| b == b'-')
            })
}

/// `label ("." label)* [":" [0-9]+]`. Case is not restricted and the port is not range-checked,
/// as in oci-spec; IPv6 literals (`[::1]`) are not accepted there either.
fn is_domain(domain: &str) -> bool {
    let (host, port) = match domain.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (domain, None),
    };
    let label = |label: &str| {
        let bytes = label.as_bytes();
        bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
    };
    host.split('.').all(label)
        && port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// `[A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}`. oci-spec writes this with `\w`, which its regex crate
/// reads as Unicode word characters; the distribution spec (and Docker's Go `\w`) mean ASCII, and
/// registries reject anything else, so non-ASCII tags are refused here rather than at pull time.
fn check_tag(tag: &str) -> Result<(), String> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    match tag.bytes().next() {
        None => return Err("the tag after ':' is empty".to_string()),
        Some(first) if !word(first) => {
            return Err(format!(
                "tag {tag:?} must start with a letter, digit or '_'"
            ));
        }
        Some(_) => {}
    }
    if !tag.bytes().all(|b| word(b) || b == b'.' || b == b'-') {
        return Err(format!(
            "tag {tag:?} may contain only ASCII letters, digits, '_', '.' and '-'"
        ));
    }
    if tag.len() > TAG_LENGTH_MAX {
        return Err(format!(
            "tag is {} characters, more than {TAG_LENGTH_MAX}",
            tag.len()
        ));
    }
    Ok(())
}

/// `algorithm ":" hex{32,}`, then oci-spec's rule that only sha256, sha384 and sha512 are known,
/// each with its exact hex length. Whether the digest is usable here is [`validate_digest`]'s
/// business, not the reference grammar's.
fn check_digest(digest: &str) -> Result<(), String> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(format!("digest {digest:?} must be algorithm:hex"));
    };
    let algorithm_component = |component: &str| {
        let bytes = component.as_bytes();
        bytes.first().is_some_and(u8::is_ascii_alphabetic)
            && bytes.iter().all(u8::is_ascii_alphanumeric)
    };
    if !algorithm
        .split(['-', '_', '+', '.'])
        .all(algorithm_component)
    {
        return Err(format!("digest algorithm {algorithm:?} is malformed"));
    }
    if hex.len() < DIGEST_HEX_MIN || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "digest {digest:?} needs at least {DIGEST_HEX_MIN} hex digits after ':'"
        ));
    }
    let expected = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return Err(format!("unsupported digest algorithm {algorithm:?}")),
    };
    if hex.len() != expected {
        return Err(format!(
            "a {algorithm} digest has {expected} hex digits, not {}",
            hex.len()
        ));
    }
    Ok(())
}

/// oci-spec's `split_domain` (after Docker's `splitDockerDomain`): the first component is the
/// registry only if it contains '.' or ':' or is `localhost`; otherwise, including for an
/// uppercase first component, the whole name is a Docker Hub repository, and single-component
/// Docker Hub names live under `library/`.
fn split_domain(name: &str) -> (String, String) {
    let (registry, repository) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
        _ => (DOCKER_HUB, name),
    };
    let registry = if registry == DOCKER_HUB_LEGACY {
        DOCKER_HUB
    } else {
        registry
    };
    let repository = if registry == DOCKER_HUB && !repository.contains('/') {
        format!("{DOCKER_HUB_OFFICIAL_NAMESPACE}/{repository}")
    } else {
        repository.to_string()
    };
    (registry.to_string(), repository)
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

    /// oci-client's own, regex-based parse: the behaviour `parse_reference` must reproduce.
    fn oci_client_parse(s: &str) -> Result<oci_client::Reference, oci_client::ParseError> {
        <oci_client::Reference as std::str::FromStr>::from_str(s)
    }

    /// Asserts `parse_reference` and oci-client agree on `s` (equal references, or both errors)
    /// and returns whether it was accepted.
    fn assert_same_as_oci_client(s: &str) -> bool {
        let ours = parse_reference(s);
        let theirs = oci_client_parse(s);
        match (&ours, &theirs) {
            (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs, "{s:?}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{s:?}: ours {ours:?}, oci-client {theirs:?}"),
        }
        theirs.is_ok()
    }

    fn hex(n: usize) -> String {
        "0123456789abcdef".chars().cycle().take(n).collect()
    }

    #[test]
    fn table_matches_oci_client() {
        let h = hex(64);
        let cases: Vec<(String, bool)> = vec![
            // Docker Hub shorthands and normalisation.
            ("busybox".into(), true),
            ("busybox:1.36".into(), true),
            ("library/busybox".into(), true),
            ("docker.io/library/busybox:latest".into(), true),
            ("docker.io/busybox".into(), true),
            ("index.docker.io/busybox".into(), true),
            ("index.docker.io/org/repo:v1".into(), true),
            // A first component without '.' or ':' is a Docker Hub namespace, not a host.
            (format!("host/repo:tag@{D}"), true),
            ("0/1".into(), true),
            // Registries.
            ("quay.io/org/repo:v1".into(), true),
            ("127.0.0.1:5000/a/b/c:tag".into(), true),
            ("localhost/x".into(), true),
            (format!("localhost:5000/x@sha256:{h}"), true),
            (
                "my-registry.example.com:443/team/app:1.0.0-rc.1".into(),
                true,
            ),
            ("xn--n3h.com/myimage:xn--n3h.com".into(), true),
            (
                "b.gcr.io/test.example.com/my-app:test.example.com".into(),
                true,
            ),
            ("Quay.IO/org/repo".into(), true),
            // Without a '/', "host:port" is a name and a tag.
            ("test.com:5000".into(), true),
            ("localhost:5000".into(), true),
            // Path-component separators.
            ("a.b_c__d-e--f/g:t".into(), true),
            ("org/my.repo_name__x-y---z".into(), true),
            // Surprises kept for compatibility: an uppercase or underscored first component passes
            // as a "domain" in the grammar, and split_domain then decides what it is.
            ("Foo/bar".into(), true),
            ("LOCALHOST/x".into(), true),
            ("foo_bar.com/x".into(), true),
            // Tags.
            ("repo:_tag".into(), true),
            ("repo:Tag.With-Mixed_Case".into(), true),
            (format!("repo:{}", "t".repeat(128)), true),
            (format!("repo:{}", "t".repeat(129)), false),
            ("repo:".into(), false),
            ("repo:.tag".into(), false),
            ("repo:-tag".into(), false),
            ("repo::tag".into(), false),
            ("repo:tag:tag".into(), false),
            (":tag".into(), false),
            // Digests: the grammar allows any sha256/384/512 of the right length, in any case.
            (format!("repo@sha256:{}", h.to_uppercase()), true),
            (format!("repo@sha384:{}", hex(96)), true),
            (format!("repo@sha512:{}", hex(128)), true),
            ("repo@".into(), false),
            (format!("@sha256:{h}"), false),
            ("repo@sha256:abc".into(), false),
            (format!("repo@sha256:{}", hex(63)), false),
            (format!("repo@sha256:{}", hex(65)), false),
            (format!("repo@sha256:{}", "g".repeat(64)), false),
            (format!("repo@md5:{}", hex(32)), false),
            (format!("repo@256:{h}"), false),
            ("repo@sha256".into(), false),
            (format!("repo@sha256:{h}@sha256:{h}"), false),
            // Names.
            ("".into(), false),
            ("Busybox".into(), false),
            ("quay.io/Org/repo".into(), false),
            ("a//b".into(), false),
            ("a/b/".into(), false),
            ("/a".into(), false),
            ("a b".into(), false),
            (" busybox".into(), false),
            ("busybox\n".into(), false),
            ("a..b".into(), false),
            ("a___b".into(), false),
            ("a_.b".into(), false),
            ("a-".into(), false),
            ("-a".into(), false),
            ("_a".into(), false),
            ("a.".into(), false),
            ("täst".into(), false),
            ("[::1]:5000/repo".into(), false),
            ("host:/repo".into(), false),
            ("host:port/repo".into(), false),
            ("-host.com/repo".into(), false),
            ("host-.com/repo".into(), false),
            ("host..com/repo".into(), false),
            ("aa/asdf$$^/aa".into(), false),
            // The 255 limit counts the repository after `library/` is added, without the registry.
            ("a".repeat(247), true),
            ("a".repeat(248), false),
            (format!("example.com/{}", "a".repeat(255)), true),
            (format!("example.com/{}", "a".repeat(256)), false),
        ];
        assert!(cases.len() >= 40);
        for (reference, valid) in &cases {
            assert_eq!(
                assert_same_as_oci_client(reference),
                *valid,
                "{reference:?}"
            );
        }
    }

    /// Every string up to five characters over an alphabet covering each grammar's boundaries.
    #[test]
    fn short_strings_match_oci_client_exhaustively() {
        let alphabet = ['a', 'B', '1', '.', '_', '-', ':', '/', '@'];
        let mut strings = vec![String::new()];
        let mut accepted = 0;
        for _ in 0..5 {
            strings = strings
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            accepted += strings
                .iter()
                .filter(|s| assert_same_as_oci_client(s))
                .count();
        }
        assert!(accepted > 1000, "only {accepted} accepted");
    }

    /// Names, tags and digests in every combination, so the splitting on ':' and '@' is covered.
    #[test]
    fn combinations_match_oci_client() {
        let h = hex(64);
        let names = [
            "busybox",
            "library/busybox",
            "quay.io/org/repo",
            "localhost:5000/x",
            "127.0.0.1/a/b",
            "Foo/bar",
            "foo_bar.com/x",
            "a__b/c--d",
            "docker.io/x",
            "index.docker.io/x/y",
            "UP",
            "a//b",
            "",
        ];
        let tags = [
            String::new(),
            ":v1".into(),
            ":".into(),
            ":_".into(),
            ":-x".into(),
            "::x".into(),
            ":a/b".into(),
            format!(":{}", "a".repeat(128)),
            format!(":{}", "a".repeat(129)),
        ];
        let digests = [
            String::new(),
            "@".into(),
            format!("@sha256:{h}"),
            format!("@sha256:{}", h.to_uppercase()),
            format!("@sha256:{}", hex(63)),
            format!("@sha384:{}", hex(96)),
            format!("@sha512:{}", hex(128)),
            format!("@md5:{}", hex(32)),
            format!("@a+b.c_d-e:{}", hex(32)),
            format!("@sha256:{}", "z".repeat(64)),
            "@sha256".into(),
            format!("@@sha256:{h}"),
        ];
        let mut accepted = 0;
        for name in names {
            for tag in &tags {
                for digest in &digests {
                    if assert_same_as_oci_client(&format!("{name}{tag}{digest}")) {
                        accepted += 1;
                    }
                }
            }
        }
        assert!(accepted > 100, "only {accepted} accepted");
    }

    /// oci-spec's tag regex uses `\w`, which the regex crate reads as Unicode; registries (and
    /// Docker's Go grammar) only take ASCII, so this one difference is deliberate.
    #[test]
    fn non_ascii_tags_are_refused_although_oci_client_accepts_them() {
        assert!(oci_client_parse("repo:tàg").is_ok());
        assert!(parse_reference("repo:tàg").is_err());
    }

    #[test]
    fn errors_name_the_reference_and_the_problem() {
        let err = ImageRef::parse("quay.io/Org/repo").unwrap_err();
        assert!(
            err.contains("\"quay.io/Org/repo\"") && err.contains("lowercase"),
            "{err}"
        );
        let err = ImageRef::parse(&format!("repo:{}", "t".repeat(129))).unwrap_err();
        assert!(err.contains("more than 128"), "{err}");
        let err = ImageRef::parse("repo@sha256:abc").unwrap_err();
        assert!(err.contains("hex digits"), "{err}");
    }

    #[test]
    fn surrounding_whitespace_is_trimmed() {
        let r = ImageRef::parse("  quay.io/org/repo:v1\n").unwrap();
        assert_eq!(r.oci(), &parse_reference("quay.io/org/repo:v1").unwrap());
    }
}
