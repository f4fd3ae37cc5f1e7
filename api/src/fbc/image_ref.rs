//! Image pull-spec syntax, as `opm validate` checks bundle and related images.
//!
//! Input: a pull spec such as `quay.io/org/op@sha256:…`. Output: `Ok` or the reason it is invalid.
//! No IO.
//!
//! Grammar of the Docker distribution reference (`ParseNormalizedNamed`):
//! `[domain/]path[:tag][@digest]`, where the domain is a host name, IPv4 or `[IPv6]` with an
//! optional port; path components are lowercase alphanumerics joined by `.`, `_`, `__` or dashes;
//! a tag is `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`; a digest is `algorithm:hex` where only sha256,
//! sha384 and sha512 with their exact lowercase hex lengths are accepted. A name without a domain is
//! normalized to `docker.io/library/…`; names are limited to 255 characters; a bare 64-hex string
//! is rejected as ambiguous with an image ID.

/// Checks `spec` like `reference.ParseNormalizedNamed`.
pub fn validate_image_reference(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("repository name must have at least one component".into());
    }
    if spec.len() == 64
        && spec
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format!(
            "invalid repository name ({spec}), cannot specify 64-byte hexadecimal strings"
        ));
    }
    let (domain, remainder) = split_docker_domain(spec);
    let remote_name = remainder.split(':').next().unwrap_or("");
    if remote_name.to_lowercase() != remote_name {
        return Err(format!(
            "invalid reference format: repository name ({remote_name}) must be lowercase"
        ));
    }
    let full = format!("{domain}/{remainder}");
    parse_reference(&full)
}

fn split_docker_domain(name: &str) -> (String, String) {
    let (domain, mut remainder) = match name.find('/') {
        Some(i)
            if name[..i].contains(['.', ':'])
                || &name[..i] == "localhost"
                || name[..i].to_lowercase() != name[..i] =>
        {
            (name[..i].to_owned(), name[i + 1..].to_owned())
        }
        _ => ("docker.io".to_owned(), name.to_owned()),
    };
    if domain == "docker.io" && !remainder.contains('/') {
        remainder = format!("library/{remainder}");
    }
    (domain, remainder)
}

const INVALID: &str = "invalid reference format";

fn parse_reference(s: &str) -> Result<(), String> {
    let (name_tag, digest) = match s.split_once('@') {
        Some((a, d)) => (a, Some(d)),
        None => (s, None),
    };
    let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_tag[last_slash..].rfind(':') {
        Some(i) => (
            &name_tag[..last_slash + i],
            Some(&name_tag[last_slash + i + 1..]),
        ),
        None => (name_tag, None),
    };
    let syntax_ok = is_name(name) && tag.is_none_or(is_tag) && digest.is_none_or(is_digest_syntax);
    if !syntax_ok {
        if s.to_lowercase() != s && parse_reference(&s.to_lowercase()).is_ok() {
            return Err("invalid reference format: repository name must be lowercase".into());
        }
        return Err(INVALID.into());
    }
    if name.len() > 255 {
        return Err("repository name must not be more than 255 characters".into());
    }
    if let Some(d) = digest {
        validate_digest(d)?;
    }
    Ok(())
}

fn is_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    if parts.iter().all(|p| is_path_component(p)) {
        return true;
    }
    parts.len() >= 2 && is_domain(parts[0]) && parts[1..].iter().all(|p| is_path_component(p))
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn is_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    let mut i = 0;
    let run = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && alnum(b[*i]) {
            *i += 1;
        }
        *i > start
    };
    if !run(&mut i) {
        return false;
    }
    while i < b.len() {
        let sep_start = i;
        match b[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if i < b.len() && b[i] == b'_' {
                    i += 1;
                }
            }
            b'-' => {
                while i < b.len() && b[i] == b'-' {
                    i += 1;
                }
            }
            _ => return false,
        }
        debug_assert!(i > sep_start);
        if !run(&mut i) {
            return false;
        }
    }
    true
}

/// `host[:port]` with host a domain name, IPv4 or `[IPv6]`.
fn is_domain(d: &str) -> bool {
    let (host, port) = if let Some(rest) = d.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return false;
        };
        let ip = &rest[..end];
        if ip.is_empty() || !ip.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return false;
        }
        let after = &rest[end + 1..];
        match after.strip_prefix(':') {
            Some(p) => ("x", Some(p)),
            None if after.is_empty() => ("x", None),
            None => return false,
        }
    } else {
        match d.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (d, None),
        }
    };
    if let Some(p) = port
        && (p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    !host.is_empty()
        && host.split('.').all(|c| {
            let b = c.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
        })
}

fn is_tag(t: &str) -> bool {
    let b = t.as_bytes();
    let word = |x: u8| x.is_ascii_alphanumeric() || x == b'_';
    !b.is_empty()
        && b.len() <= 128
        && word(b[0])
        && b[1..].iter().all(|x| word(*x) || *x == b'.' || *x == b'-')
}

fn is_digest_syntax(d: &str) -> bool {
    let Some((alg, hex)) = d.split_once(':') else {
        return false;
    };
    let alg_ok = alg.split(['+', '.', '-', '_']).all(|c| {
        let b = c.as_bytes();
        !b.is_empty() && b[0].is_ascii_alphabetic() && b.iter().all(u8::is_ascii_alphanumeric)
    });
    alg_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

fn validate_digest(d: &str) -> Result<(), String> {
    let (alg, hex) = d.split_once(':').unwrap_or((d, ""));
    let want = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return Err("unsupported digest algorithm".into()),
    };
    if hex.len() != want {
        return Err("invalid checksum digest length".into());
    }
    if !hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err("invalid checksum digest format".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn common_pull_specs_are_valid() {
        for s in [
            "quay.io/org/op:v1.2.3",
            &format!("quay.io/org/op@{SHA}"),
            &format!("registry.redhat.io/ns/op:v1@{SHA}"),
            "localhost/testdata/bundles/registry-v1/prometheus-operator:v0.47.0",
            "docker-registry.operator-controller-e2e.svc.cluster.local:5000/bundles/registry-v1/test-operator:v1.0.0",
            "busybox",
            "library/busybox:latest",
            "127.0.0.1:5000/a/b_c__d-e--f.g:tag_1.0-x",
            "[::1]:5000/x:y",
        ] {
            assert_eq!(validate_image_reference(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn malformed_pull_specs_are_rejected_with_upstream_reasons() {
        assert!(
            validate_image_reference("quay.io/Org/op:v1")
                .unwrap_err()
                .contains("must be lowercase")
        );
        assert_eq!(
            validate_image_reference("quay.io/op:").unwrap_err(),
            INVALID
        );
        assert_eq!(
            validate_image_reference("quay.io/op::v1").unwrap_err(),
            INVALID
        );
        assert_eq!(
            validate_image_reference("quay.io//op").unwrap_err(),
            INVALID
        );
        assert_eq!(
            validate_image_reference("quay.io/op-/x").unwrap_err(),
            INVALID
        );
        assert_eq!(
            validate_image_reference("quay.io/op@md5:0123456789abcdef0123456789abcdef")
                .unwrap_err(),
            "unsupported digest algorithm"
        );
        assert_eq!(
            validate_image_reference("quay.io/op@sha256:0123456789abcdef0123456789abcdef")
                .unwrap_err(),
            "invalid checksum digest length"
        );
        assert!(
            validate_image_reference(&"a".repeat(64))
                .unwrap_err()
                .contains("64-byte")
        );
        assert!(
            validate_image_reference(&format!("quay.io/{}", "a".repeat(300)))
                .unwrap_err()
                .contains("255")
        );
        assert!(validate_image_reference("").is_err());
    }
}
