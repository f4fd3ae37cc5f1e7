//! The plumbing both OLM controllers (catalogd and operator-controller) share. No OLM domain logic
//! lives here: what a ClusterCatalog or ClusterExtension means is decided in the binaries' crates.
//!
//! | module | what it gives a binary |
//! |---|---|
//! | [`allocator`] | the C library allocator with two arenas and fixed 128 KiB mapping and trim thresholds (`MALLOC_*` variables, set by executing the binary again) and a periodic `malloc_trim`, so memory freed after a burst goes back to the system |
//! | [`client`] | a Kubernetes client from a kubeconfig or the in-cluster configuration, with the rustls provider installed once |
//! | [`leader`] | Lease-based leader election (client-go's rules), or constant leadership for a single replica |
//! | [`server`] | an HTTP(S) server: certificate reload, header-read and idle timeouts, a connection cap, graceful shutdown |
//! | [`ops`] | `/healthz`, `/readyz` (the probe listener), `/metrics` (the metrics listener) and the `--pprof-bind-address` listener |
//! | [`listeners`] | the health, metrics (HTTPS, authorized) and profiling listeners of a controller |
//! | [`metrics_auth`] | `/metrics` only for callers the API server authenticates and authorizes (TokenReview, SubjectAccessReview) |
//! | [`gates`], [`go_flags`] | upstream's `--feature-gates`, klog and TLS profile flags, and the metrics listener's flag rules |
//! | [`shutdown`] | one cancellation token, cancelled on SIGINT/SIGTERM, passed down to every task; `run_until_signal`, the start-up of both `run` modes (runtime, token, error to exit status) |
//! | [`logging`] | text or JSON logs on stderr, filtered by `RUST_LOG` |
//! | [`duration`], [`flags`] | Go-syntax durations (`1h30m`) and Go-style listen addresses (`:8443`) for clap |
//! | [`exit`] | the exit statuses both binaries use, documented once |
//! | [`finalizer`], [`status`] | finalizer add/remove and status writes as JSON patches guarded by `resourceVersion` |
//! | [`backoff`] | per-object capped exponential backoff with jitter |
//! | [`pull_secret`] | the global pull secret, watched and turned into registry credentials |
//! | [`puller_inputs`] | the image puller rebuilt when the global pull secret or `--pull-cas-dir` changes |
//! | [`ca_dir`] | certificate authority directories read again while the process runs, so rotated CAs are trusted |

pub mod allocator;
pub mod backoff;
pub mod ca_dir;
pub mod client;
pub mod duration;
pub mod exit;
pub mod finalizer;
pub mod flags;
pub mod gates;
pub mod go_flags;
pub mod leader;
pub mod listeners;
pub mod logging;
pub mod metrics_auth;
pub mod ops;
pub mod pull_secret;
pub mod puller_inputs;
pub mod server;
pub mod shutdown;
pub mod status;
pub mod supervise;
