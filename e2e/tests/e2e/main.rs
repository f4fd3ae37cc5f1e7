//! End-to-end tests against a real control plane on loopback.
//!
//! Every end-to-end test is in this one binary so the shared environment ([`olm_e2e::shared`])
//! starts once per run. Tests run in parallel against it: each uses its own namespaces and
//! uniquely named cluster-scoped objects. The binaries come from `OLM_TEST_ASSETS` (`make test`
//! sets it); when they are missing every test fails with instructions.
#![allow(clippy::unwrap_used)]

mod admission_cluster_catalog;
mod admission_cluster_extension;
mod apply;
mod catalog_stall;
mod catalogd;
mod catalogd_in_process;
mod control_plane;
mod dev_env;
mod explain;
mod extension_approval;
mod extension_dropin;
mod extension_gating;
mod extension_install;
mod extension_rbac;
mod extension_rollback;
mod extension_scenarios;
mod extension_takeover;
mod extension_trust;
mod extension_updates;
mod extension_upgrade;
mod gating;
mod link_ordered;
mod loopback;
mod olm_upgrade;
mod openshift;
mod preview;
mod real_tier;
mod registry_mirrors;
mod release_images;
mod release_manifest;
mod release_storage;
mod support;
mod upstream_manifests;
mod webhook_certs;
