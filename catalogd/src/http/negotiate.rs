//! Request parsing decisions shared by the handlers: gzip acceptance, catalog name validation and
//! `/metas` query parameters. Pure.

/// Whether the client accepts a gzip-encoded response, read the way upstream's gzip middleware
/// (klauspost gzhttp) reads `Accept-Encoding`: a `gzip` entry with a q-value above zero.
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let Some(value) = accept_encoding else {
        return false;
    };
    let mut gzip_q = None;
    for entry in value.split(',') {
        let mut coding = String::new();
        let mut q = 1.0_f64;
        for (i, part) in entry.split(';').enumerate() {
            let part = part.trim();
            // gzhttp resets the q-value for every parameter it reads.
            q = 1.0;
            if i == 0 {
                coding = part.to_ascii_lowercase();
            } else if let Some(v) = part.strip_prefix("q=") {
                q = v.parse::<f64>().unwrap_or(0.0).clamp(0.0, 1.0);
            }
        }
        if coding == "gzip" {
            gzip_q = Some(q);
        }
    }
    gzip_q.is_some_and(|q| q > 0.0)
}

/// Smallest body upstream compresses (gzhttp's default minimum size).
pub const GZIP_MIN_SIZE: u64 = 1024;

const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// Validates a catalog name from the URL as a DNS-1123 subdomain; the error text is upstream's
/// (Kubernetes' validation messages joined with "; "), which keeps path traversal out of storage.
pub fn validate_catalog_name(name: &str) -> Result<(), String> {
    let mut errors = Vec::new();
    if name.len() > DNS1123_SUBDOMAIN_MAX {
        errors.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
        ));
    }
    if !is_dns1123_subdomain(name) {
        errors.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', \
             and must start and end with an alphanumeric character (e.g. 'example.com', regex used for \
             validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("invalid catalog name: {}", errors.join("; ")))
    }
}

fn is_dns1123_subdomain(name: &str) -> bool {
    !name.is_empty() && name.split('.').all(is_dns1123_label)
}

fn is_dns1123_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
        }
        _ => false,
    }
}

/// The `/metas` filter values: the first value of each parameter, as Go's `Query().Get` returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetasParams {
    pub schema: String,
    pub package: String,
    pub name: String,
}

/// Parses a `/metas` query string; any parameter other than `schema`, `package` and `name` is an
/// error (upstream answers 400).
pub fn parse_metas_query(raw: Option<&str>) -> Result<MetasParams, String> {
    let mut params = MetasParams::default();
    let (mut seen_schema, mut seen_package, mut seen_name) = (false, false, false);
    for (key, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        let (slot, seen) = match key.as_ref() {
            "schema" => (&mut params.schema, &mut seen_schema),
            "package" => (&mut params.package, &mut seen_package),
            "name" => (&mut params.name, &mut seen_name),
            other => return Err(other.to_string()),
        };
        if !*seen {
            *slot = value.into_owned();
            *seen = true;
        }
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_acceptance_follows_q_values() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("br, GZIP;q=0.5")));
        assert!(accepts_gzip(Some("deflate, gzip ; q=1")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(Some("*")));
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn catalog_names_must_be_dns1123_subdomains() {
        assert!(validate_catalog_name("operatorhubio").is_ok());
        assert!(validate_catalog_name("a.b-c.d1").is_ok());
        let err = validate_catalog_name("Bad_Name").expect_err("invalid");
        assert!(
            err.starts_with("invalid catalog name: a lowercase RFC 1123 subdomain"),
            "{err}"
        );
        assert!(validate_catalog_name("..").is_err());
        assert!(validate_catalog_name("a..b").is_err());
        assert!(validate_catalog_name("-a").is_err());
        let long = "a".repeat(254);
        let err = validate_catalog_name(&long).expect_err("too long");
        assert_eq!(
            err,
            "invalid catalog name: must be no more than 253 characters"
        );
    }

    #[test]
    fn metas_query_takes_first_values_and_rejects_unknown_keys() {
        let p =
            parse_metas_query(Some("schema=olm.bundle&package=foo&package=bar")).expect("valid");
        assert_eq!(
            p,
            MetasParams {
                schema: "olm.bundle".into(),
                package: "foo".into(),
                name: String::new()
            }
        );
        assert_eq!(
            parse_metas_query(Some("name=a%20b")).expect("valid").name,
            "a b"
        );
        assert_eq!(parse_metas_query(Some("pkg=x")), Err("pkg".to_string()));
        assert_eq!(parse_metas_query(None), Ok(MetasParams::default()));
    }
}
