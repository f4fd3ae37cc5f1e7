//! What the server's integration tests share. Input: a directory to write into. Output: files on
//! disk. No network.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use olm_runtime::server::TlsFiles;

/// A throwaway self-signed certificate for `name` and its key, written into `dir` as the
/// server's certificate files.
pub fn self_signed_tls_files(dir: &Path, name: &str) -> (TlsFiles, rcgen::Certificate) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![name.to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let files = TlsFiles {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    std::fs::write(&files.cert, cert.pem()).unwrap();
    std::fs::write(&files.key, key.serialize_pem()).unwrap();
    (files, cert)
}
