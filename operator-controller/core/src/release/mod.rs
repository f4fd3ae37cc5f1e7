//! Installed state as Helm release records, bit-compatible with upstream operator-controller's
//! storage (Helm v3 releases in helm-operator-plugins' chunked Secrets).
//!
//! Input: rendered objects, bundle identity, the CSV's annotations, stored Secrets. Output:
//! release records, the Secrets that hold them, the installed bundle. No IO: the
//! `operator-controller` crate's `storage` module reads and writes the Secrets.
//!
//! Why Helm's format: a cluster installed by upstream is taken over without redeploying (its
//! deployed release is our installed state), upstream taking over from us sees its own format,
//! and tools reading upstream's storage (OpenShift's cluster-olm-operator for upgrade gating,
//! upstream's e2e steps) read ours.
//!
//! - [`model`]: the release record and its JSON as Go writes it ([`go_json`], [`time`]).
//! - [`render`]: the chart upstream synthesizes from rendered objects and the manifest Helm
//!   stores for it ([`go_order`]: Go's field order of typed objects, which names chart files).
//! - [`secrets`]: release ⇄ index and chunk Secrets, bounded decoding.
//! - [`history`]: installed release, numbering, labels, pruning.
//! - [`manifest`]: the objects a stored manifest lists (ours or upstream's, JSON or YAML).
//!
//! How the controller uses it (the order Helm writes records in, so a crash leaves what Helm
//! would leave):
//!
//! | step | calls |
//! |---|---|
//! | render | objects → [`ChartObject::typed`] (generated objects) / [`ChartObject::unstructured`] (bundle's other manifests) → [`render::render_release`] with scopes from discovery |
//! | decide | `ReleaseStore::history` → [`history::release_state`] against the new manifest |
//! | install | [`history::install_release`] (`pending-install`) → create → apply → [`history::set_status`] `deployed`/[`history::INSTALL_COMPLETE`] → update |
//! | upgrade | [`history::upgrade_release`] (`pending-upgrade`) → create (prunes to 10) → apply → old [`history::mark_superseded`] → update; new `deployed`/[`history::UPGRADE_COMPLETE`] → update |
//! | failure | [`history::set_status`] `failed` with [`history::install_failed_description`] / [`history::upgrade_failed_description`] → update |
//! | rollback (`OnFailure` only) | [`rollback::rollback_release`] (`pending-rollback`) → create → apply → [`rollback::after_rollback`]: the failed upgrade rolled back, the new record `deployed` → update |
//! | installed state | `ReleaseStore::installed` → [`history::installed_bundle`], [`manifest::manifest_objects`] |
//! | uninstall | objects of the manifest removed → `ReleaseStore::delete_all` |

pub mod go_json;
pub mod go_order;
pub mod history;
pub mod manifest;
pub mod model;
pub mod plan;
pub mod render;
pub mod rollback;
pub mod secrets;
pub mod time;

pub use history::{InstalledBundle, MAX_HISTORY};
pub use model::{Chart, Info, Release, Status};
pub use render::{ChartObject, KindScopes, PostRenderContext, RenderError, ResourceScopes};
pub use secrets::{DecodeError, DecodeLimits, EncodeError, EncodedRelease, Stamps, StoredRelease};
pub use time::HelmTime;
