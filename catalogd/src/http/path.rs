//! Request paths routed as Go's `http.ServeMux` (Go 1.22+ patterns) routes them for upstream
//! catalogd: percent-decoding, cleaning with a `307 Temporary Redirect`, and segment matching.
//!
//! Input: the request's raw path and query. Output: a [`Route`]. Pure.
//!
//! | request path                                   | Go's mux                                      |
//! |------------------------------------------------|-----------------------------------------------|
//! | a bad `%` escape (`/a/%zz`)                    | the server answers `400 Bad Request` itself   |
//! | not clean (`//`, `/./`, `/x/../`, trailing `/.`) | `307` to the cleaned path, query kept       |
//! | `/catalogs/{catalog}/api/v1/all` or `.../metas` | that handler; segments compared and the catalog taken after decoding each segment (`%61ll` is `all`, `a%2Fb` is the catalog `a/b`) |
//! | anything else                                  | `404 page not found`                          |
//!
//! The mux cleans the *escaped* path (`URL.EscapedPath`) and builds the redirect from a URL
//! whose decoded path is that escaped text, so an escape in a redirected path is escaped again
//! (`/c/N//api/v1/%61ll` → `Location: /c/N/api/v1/%2561ll`). That is what upstream sends, so it
//! is what this sends; checked against Go 1.26 with a throwaway server.

/// Where a request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// The path has an invalid percent escape: the Go server itself answers 400.
    BadRequest,
    /// `307` to this `Location` (already escaped as Go writes it).
    Redirect(String),
    /// `/catalogs/{catalog}/api/v1/all` with the decoded catalog segment.
    All(Vec<u8>),
    /// `/catalogs/{catalog}/api/v1/metas` with the decoded catalog segment.
    Metas(Vec<u8>),
    /// No pattern matches.
    NotFound,
}

/// Routes a request path (`raw_path` as received, percent-encoded) with its raw query.
pub fn route(raw_path: &str, raw_query: Option<&str>) -> Route {
    let Some(decoded) = unescape(raw_path) else {
        return Route::BadRequest;
    };
    let escaped = if valid_encoded(raw_path) {
        raw_path.to_owned()
    } else {
        escape(&decoded)
    };
    let cleaned = clean_path(&escaped);
    if cleaned != escaped {
        let mut location = escape(cleaned.as_bytes());
        if let Some(q) = raw_query.filter(|q| !q.is_empty()) {
            location.push('?');
            location.push_str(q);
        }
        return Route::Redirect(location);
    }
    let segments: Vec<&str> = cleaned.split('/').collect();
    let decoded: Option<Vec<Vec<u8>>> = segments.iter().map(|s| unescape(s)).collect();
    let Some(segments) = decoded else {
        return Route::NotFound;
    };
    match segments.as_slice() {
        [root, catalogs, catalog, api, v1, leaf]
            if root.is_empty()
                && catalogs == b"catalogs"
                && !catalog.is_empty()
                && api == b"api"
                && v1 == b"v1" =>
        {
            match leaf.as_slice() {
                b"all" => Route::All(catalog.clone()),
                b"metas" => Route::Metas(catalog.clone()),
                _ => Route::NotFound,
            }
        }
        _ => Route::NotFound,
    }
}

/// Go's `url` unescape in path mode: `%XX` needs two hex digits, `+` stays.
fn unescape(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hi = b.get(i + 1).and_then(|c| (*c as char).to_digit(16))?;
            let lo = b.get(i + 2).and_then(|c| (*c as char).to_digit(16))?;
            out.push(u8::try_from(hi * 16 + lo).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Go's `shouldEscape(c, encodePath)`.
fn should_escape(c: u8) -> bool {
    !(c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'_'
                | b'.'
                | b'~'
                | b'$'
                | b'&'
                | b'+'
                | b','
                | b'/'
                | b':'
                | b';'
                | b'='
                | b'@'
        ))
}

/// Go's `validEncoded(s, encodePath)`: whether the raw path can be used as the escaped path.
fn valid_encoded(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c)
    })
}

/// Go's `escape(s, encodePath)`.
fn escape(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s {
        if should_escape(c) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(char::from(c));
        }
    }
    out
}

/// Go's `cleanPath` (mux): `path.Clean` of a rooted path, keeping a trailing slash.
pub fn clean_path(p: &str) -> String {
    if p.is_empty() {
        return "/".to_owned();
    }
    let rooted = if p.starts_with('/') {
        p.to_owned()
    } else {
        format!("/{p}")
    };
    let mut stack: Vec<&str> = Vec::new();
    for seg in rooted.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                stack.pop();
            }
            s => stack.push(s),
        }
    }
    let mut cleaned = format!("/{}", stack.join("/"));
    if rooted.ends_with('/') && cleaned != "/" {
        cleaned.push('/');
    }
    cleaned
}

/// The `307` body Go's `http.Redirect` writes for a GET (`HEAD` gets none).
pub fn redirect_body(location: &str) -> String {
    let mut escaped = String::with_capacity(location.len());
    for c in location.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&#34;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    format!("<a href=\"{escaped}\">Temporary Redirect</a>.\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redirect(p: &str, q: Option<&str>) -> String {
        match route(p, q) {
            Route::Redirect(l) => l,
            other => panic!("{p}: expected a redirect, got {other:?}"),
        }
    }

    // Locations observed from Go 1.26's ServeMux with upstream's two patterns.
    #[test]
    fn unclean_paths_redirect_to_the_clean_path_keeping_the_query() {
        assert_eq!(
            redirect("/catalogs/N//api/v1/all", None),
            "/catalogs/N/api/v1/all"
        );
        assert_eq!(
            redirect("/catalogs/N/api/v1/./all", Some("x=1")),
            "/catalogs/N/api/v1/all?x=1"
        );
        assert_eq!(
            redirect("/catalogs/N/api/v1/x/../all", None),
            "/catalogs/N/api/v1/all"
        );
        assert_eq!(redirect("/catalogs/../api/v1/all", None), "/api/v1/all");
        assert_eq!(
            redirect("/catalogs/N/api/v1/all/.", None),
            "/catalogs/N/api/v1/all"
        );
        assert_eq!(redirect("/x//y", None), "/x/y");
        assert_eq!(
            redirect("/catalogs/N/api/v1/all//", None),
            "/catalogs/N/api/v1/all/"
        );
    }

    #[test]
    fn escapes_in_redirected_paths_are_escaped_again_as_go_does() {
        assert_eq!(
            redirect("/catalogs/N//api/v1/%61ll", Some("a=%zz")),
            "/catalogs/N/api/v1/%2561ll?a=%zz"
        );
        assert_eq!(
            redirect("/catalogs/N//api/v1/a\"b", None),
            "/catalogs/N/api/v1/a%2522b"
        );
        assert_eq!(
            redirect("/catalogs/N//api/v1/caf%C3%A9<", None),
            "/catalogs/N/api/v1/caf%25C3%25A9%253C"
        );
    }

    #[test]
    fn clean_paths_match_after_decoding_each_segment() {
        assert_eq!(
            route("/catalogs/N/api/v1/all", None),
            Route::All(b"N".to_vec())
        );
        assert_eq!(
            route("/catalogs/N/api/v1/%61ll", None),
            Route::All(b"N".to_vec())
        );
        assert_eq!(
            route("/catalogs/a%2Fb/api/v1/metas", Some("x")),
            Route::Metas(b"a/b".to_vec())
        );
        assert_eq!(route("/catalogs/N/api/v1/%2E/all", None), Route::NotFound);
        assert_eq!(route("/catalogs/N/api/v1/all/", None), Route::NotFound);
        assert_eq!(route("/catalogs/api/v1/all", None), Route::NotFound);
        assert_eq!(route("/", None), Route::NotFound);
    }

    #[test]
    fn a_bad_escape_is_a_bad_request() {
        assert_eq!(route("/catalogs/N/api/v1/%zz", None), Route::BadRequest);
        assert_eq!(route("/catalogs/N/api/v1/all%", None), Route::BadRequest);
    }

    #[test]
    fn the_redirect_body_is_go_html() {
        assert_eq!(
            redirect_body("/catalogs/N/api/v1/all"),
            "<a href=\"/catalogs/N/api/v1/all\">Temporary Redirect</a>.\n\n"
        );
        assert_eq!(
            redirect_body("/a?x=1&y='\""),
            "<a href=\"/a?x=1&amp;y=&#39;&#34;\">Temporary Redirect</a>.\n\n"
        );
    }
}
