//! Release artefacts: the product container images and the install manifest.
//!
//! - [`image`]: a minimal image per binary (the binary, exactly the shared libraries `ldd` names,
//!   `/etc/passwd`, CA certificates; no shell), reproducible, pushed as an index with one manifest
//!   per platform. Reads the binary and host libraries; talks to the target registry.
//! - [`kustomize`]: renders the kustomizations under `config/` (the subset of kustomize they use),
//!   so the release manifest is made by our code from the same source `kubectl apply -k` reads.
//!   Reads files only.
//! - [`manifest`]: the release manifest of one TLS variant with images pinned by digest, and the
//!   RBAC of each component as the manifest carries it. Reads files only.
//!
//! `olm-release` (src/bin) is the command-line front end `make images` and
//! `make release-manifest` run.

pub mod image;
pub mod kustomize;
pub mod manifest;
