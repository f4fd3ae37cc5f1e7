//! The HTTP(S) server catalogd serves content and operational endpoints with: the shared one of
//! `olm-runtime` (limits, certificate reload, graceful shutdown), re-exported for catalogd's users.

pub use olm_runtime::server::*;
