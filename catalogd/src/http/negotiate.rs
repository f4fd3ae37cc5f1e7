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
    validate_catalog_name_bytes(name.as_bytes())
}

/// [`validate_catalog_name`] for a decoded URL segment, which may not be UTF-8 (Go counts its
/// length in bytes and rejects it by the same pattern).
pub fn validate_catalog_name_bytes(bytes: &[u8]) -> Result<(), String> {
    let name = std::str::from_utf8(bytes).unwrap_or("\u{0}");
    let mut errors = Vec::new();
    if bytes.len() > DNS1123_SUBDOMAIN_MAX {
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
    /// A value is not UTF-8 (`%ff`): Go compares bytes, and no catalog field (always UTF-8)
    /// equals it, so the answer is empty.
    pub matches_nothing: bool,
}

/// Parses a `/metas` query string as upstream does with Go's `URL.Query()`, then rejects any
/// parameter other than `schema`, `package` and `name` (upstream answers 400; the error is the
/// offending key).
///
/// Go's `url.ParseQuery`, which `Query()` calls while ignoring its error, decides which pairs
/// exist at all:
///
/// | query | pairs |
/// |---|---|
/// | split on `&` only | `a=1&b=2` → a, b |
/// | a pair containing `;` | dropped (`package=P;name=x` → nothing) |
/// | an empty pair | dropped (`a=1&&b=2`) |
/// | key or value with a bad `%` escape | dropped (`schema=%zz`, `%4` at the end) |
/// | `+` | a space |
/// | no `=` | the key with an empty value |
/// | more than 10,000 pairs (`&` count + 1) | none at all (Go 1.24+ limit) |
///
/// So `?schema=%zz` is a request without filters: the whole catalog, as upstream answers.
pub fn parse_metas_query(raw: Option<&str>) -> Result<MetasParams, String> {
    let mut params = MetasParams::default();
    let (mut seen_schema, mut seen_package, mut seen_name) = (false, false, false);
    for (key, value) in go_parse_query(raw.unwrap_or("")) {
        let (slot, seen) = match key.as_slice() {
            b"schema" => (&mut params.schema, &mut seen_schema),
            b"package" => (&mut params.package, &mut seen_package),
            b"name" => (&mut params.name, &mut seen_name),
            other => return Err(String::from_utf8_lossy(other).into_owned()),
        };
        if !*seen {
            *seen = true;
            match String::from_utf8(value) {
                Ok(v) => *slot = v,
                Err(_) => params.matches_nothing = true,
            }
        }
    }
    Ok(params)
}

/// Go's limit on query parameters (`urlmaxqueryparams`, default since Go 1.24).
const GO_MAX_QUERY_PARAMS: usize = 10_000;

/// Go's `url.ParseQuery` without the error: the surviving pairs, in order, as bytes.
pub fn go_parse_query(query: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    if query.bytes().filter(|b| *b == b'&').count() + 1 > GO_MAX_QUERY_PARAMS {
        return out;
    }
    for pair in query.split('&') {
        if pair.contains(';') || pair.is_empty() {
            continue;
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(key), Some(value)) = (query_unescape(key), query_unescape(value)) else {
            continue;
        };
        out.push((key, value));
    }
    out
}

/// Go's `url.QueryUnescape`: `+` is a space, `%XX` needs two hex digits; `None` on a bad escape.
fn query_unescape(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hi = b.get(i + 1).and_then(|c| (*c as char).to_digit(16))?;
                let lo = b.get(i + 2).and_then(|c| (*c as char).to_digit(16))?;
                out.push(u8::try_from(hi * 16 + lo).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
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
                name: String::new(),
                matches_nothing: false,
            }
        );
        assert_eq!(
            parse_metas_query(Some("name=a%20b")).expect("valid").name,
            "a b"
        );
        assert_eq!(parse_metas_query(Some("pkg=x")), Err("pkg".to_string()));
        assert_eq!(parse_metas_query(None), Ok(MetasParams::default()));
    }

    // Each expectation was checked against Go 1.26's `url.ParseQuery` (pairs and their order).
    #[test]
    fn query_pairs_follow_go_parse_query() {
        let pairs = |q: &str| -> Vec<(String, String)> {
            go_parse_query(q)
                .into_iter()
                .map(|(k, v)| {
                    (
                        String::from_utf8_lossy(&k).into_owned(),
                        String::from_utf8_lossy(&v).into_owned(),
                    )
                })
                .collect()
        };
        let p = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(pairs("package=P;name=x"), vec![]);
        assert_eq!(pairs("schema=%zz"), vec![]);
        assert_eq!(pairs("schema=%4"), vec![]);
        assert_eq!(pairs("%zz=1&name=a+b"), vec![p("name", "a b")]);
        assert_eq!(
            pairs("=x&&a=%41&b"),
            vec![p("", "x"), p("a", "A"), p("b", "")]
        );
        assert_eq!(pairs("a=1=2&a=%3d"), vec![p("a", "1=2"), p("a", "=")]);
        assert_eq!(pairs("name=%C3%A9"), vec![p("name", "é")]);
        let many = vec!["a=1"; 10_001].join("&");
        assert_eq!(pairs(&many), vec![]);
        let limit = vec!["a=1"; 10_000].join("&");
        assert_eq!(pairs(&limit).len(), 10_000);
    }

    #[test]
    fn dropped_pairs_leave_no_filter_and_no_unknown_key() {
        assert_eq!(
            parse_metas_query(Some("package=P;name=x")),
            Ok(MetasParams::default())
        );
        assert_eq!(
            parse_metas_query(Some("schema=%zz&bogus;=1")),
            Ok(MetasParams::default())
        );
        assert_eq!(parse_metas_query(Some("=x")), Err(String::new()));
        let p = parse_metas_query(Some("package=%ff&package=p")).expect("valid");
        assert!(p.matches_nothing);
        assert_eq!(p.package, "");
    }
}
