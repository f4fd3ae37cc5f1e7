//! OCI images: pull by tag or digest, push fixtures, and extract layers safely.
