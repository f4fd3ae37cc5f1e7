//! Where a catalog's package content comes from: catalogd over HTTP, or a local directory.
//!
//! Input: a catalog location (a directory path or a `.../catalogs/NAME` URL) and a package name.
//! Output: the package's [`PackageContent`] for the resolver. [`http`] talks to catalogd;
//! [`dir`] reads local files.
//!
//! Both sources yield the same content for the same catalog: the directory source visits files in
//! catalogd's order and keeps objects by the same rules (see [`crate::resolve::content`]).

pub mod dir;
pub mod http;

use std::path::PathBuf;
use std::sync::Arc;

use reqwest::Url;

use crate::resolve::{FetchError, PackageContent};
use dir::DirSource;
use http::{CatalogEndpoint, CatalogdClient};

/// A catalog location as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogLocation {
    Dir(PathBuf),
    Url(Url),
}

/// Why a location cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LocationError {
    #[error("invalid catalog URL {location:?}: {message}")]
    Url { location: String, message: String },
    #[error("cannot name the catalog at {0:?}: it has no last path element")]
    NoName(String),
}

impl CatalogLocation {
    /// `http://` and `https://` locations are URLs; anything else is a path.
    pub fn parse(location: &str) -> Result<CatalogLocation, LocationError> {
        let lower = location.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            let url = Url::parse(location).map_err(|e| LocationError::Url {
                location: location.to_owned(),
                message: e.to_string(),
            })?;
            if url.query().is_some() || url.fragment().is_some() {
                return Err(LocationError::Url {
                    location: location.to_owned(),
                    message: "a catalog URL has no query or fragment".to_owned(),
                });
            }
            Ok(CatalogLocation::Url(url))
        } else {
            Ok(CatalogLocation::Dir(PathBuf::from(location)))
        }
    }

    /// The catalog's name: the last path element of the directory or URL.
    pub fn catalog_name(&self) -> Result<String, LocationError> {
        let name = match self {
            CatalogLocation::Dir(path) => {
                // `dir/.` and `dir/..` name the directory they resolve to.
                let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                resolved
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            }
            CatalogLocation::Url(url) => url
                .path_segments()
                .and_then(|mut s| s.rfind(|s| !s.is_empty()))
                .map(url_decode),
        };
        name.filter(|n| !n.is_empty())
            .ok_or_else(|| LocationError::NoName(self.to_string()))
    }
}

impl std::fmt::Display for CatalogLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CatalogLocation::Dir(p) => write!(f, "{}", p.display()),
            CatalogLocation::Url(u) => write!(f, "{u}"),
        }
    }
}

fn url_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(v) = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One catalog's content provider.
#[derive(Clone, Debug)]
pub enum CatalogSource {
    Dir(DirSource),
    Http {
        client: Arc<CatalogdClient>,
        endpoint: CatalogEndpoint,
    },
}

impl CatalogSource {
    /// `package`'s content in this catalog (empty when the catalog lacks it).
    pub async fn package(&self, package: &str) -> Result<Arc<PackageContent>, FetchError> {
        match self {
            CatalogSource::Dir(source) => {
                let source = source.clone();
                let package = package.to_owned();
                let read = tokio::task::spawn_blocking(move || source.package(&package))
                    .await
                    .map_err(|e| -> FetchError { e.to_string().into() })?;
                Ok(Arc::new(read?))
            }
            CatalogSource::Http { client, endpoint } => {
                Ok(client.package(endpoint, package).await?)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_directories_are_named_after_their_last_path_element() {
        let name = |s: &str| CatalogLocation::parse(s).unwrap().catalog_name().unwrap();
        assert_eq!(
            name("http://127.0.0.1:8080/catalogs/operatorhubio"),
            "operatorhubio"
        );
        assert_eq!(name("https://svc.example/catalogs/my%2Dcat/"), "my-cat");
        assert_eq!(name("some/where/catalog"), "catalog");
        assert_eq!(name("some/where/catalog/"), "catalog");
        let root = CatalogLocation::parse("http://127.0.0.1:8080/").unwrap();
        assert!(root.catalog_name().is_err());
        assert!(CatalogLocation::parse("http://[bad").is_err());
        assert!(CatalogLocation::parse("http://h/catalogs/c?x=1").is_err());
    }
}
