//! The environment end-to-end tests run against, and the one instance a test binary shares.
//!
//! Input: the binaries named by the environment (see [`crate::assets`]) and `OLM_TEST_TIER`.
//! Output: running components on loopback. Network: 127.0.0.1 only.
//!
//! All end-to-end tests live in one test binary so [`shared`] starts the environment once per
//! run. Tests share it, so each test works in namespaces and objects with unique names
//! ([`unique_name`]) and never assumes a cluster-wide list is empty.

use std::path::Path;
use std::time::Instant;

use crate::control_plane::{ControlPlane, ControlPlaneError, Tier};
use crate::registry::Registry;

/// Environment variable choosing the shared environment's tier: `full` (the default) or
/// `apiserver` (etcd and kube-apiserver only; faster, but Deployments never become Available
/// and nothing garbage-collects).
pub const TIER_ENV: &str = "OLM_TEST_TIER";

/// Everything an end-to-end test talks to.
///
/// A new component is one field here and one line in [`TestEnv::start`].
#[derive(Debug)]
pub struct TestEnv {
    pub control_plane: ControlPlane,
    /// An OCI registry on loopback (plain HTTP) for catalog and bundle images.
    pub registry: Registry,
}

/// Failure to start the environment.
#[derive(Debug, thiserror::Error)]
pub enum TestEnvError {
    #[error(transparent)]
    ControlPlane(#[from] ControlPlaneError),
    #[error("failed to start the {name}: {source}")]
    Component {
        name: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "failed to start the test environment: {TIER_ENV}={value} is not `full` or `apiserver`"
    )]
    BadTier { value: String },
}

impl TestEnvError {
    /// Wraps any component's start error, e.g. `.map_err(TestEnvError::component("registry"))`.
    pub fn component<E>(name: &'static str) -> impl FnOnce(E) -> TestEnvError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        move |e| TestEnvError::Component {
            name,
            source: Box::new(e),
        }
    }
}

impl TestEnv {
    /// Starts every component.
    pub async fn start(tier: Tier) -> Result<TestEnv, TestEnvError> {
        Ok(TestEnv {
            control_plane: ControlPlane::builder().tier(tier).start().await?,
            registry: Registry::start()
                .await
                .map_err(TestEnvError::component("registry"))?,
        })
    }

    /// The tier named by `OLM_TEST_TIER` (default [`Tier::Full`]).
    pub fn tier_from_env() -> Result<Tier, TestEnvError> {
        match std::env::var(TIER_ENV).as_deref() {
            Err(_) | Ok("") | Ok("full") => Ok(Tier::Full),
            Ok("apiserver") => Ok(Tier::ApiServer),
            Ok(other) => Err(TestEnvError::BadTier {
                value: other.to_owned(),
            }),
        }
    }

    /// A new cluster-admin client for the calling test's runtime.
    pub async fn client(&self) -> kube::Client {
        self.control_plane.client().await
    }

    pub fn kubeconfig_path(&self) -> &Path {
        self.control_plane.kubeconfig_path()
    }

    /// Stops every component and removes scratch files.
    pub async fn stop(self) {
        self.registry.stop().await;
        self.control_plane.stop().await;
    }
}

/// The test binary's environment, started by the first caller and shared by every test.
///
/// It is never dropped: its components die with the test process (parent-death signal), and the
/// next run removes its scratch directory.
///
/// # Panics
/// When the environment cannot start (for example, the binaries are missing): every test that
/// needs it fails with the reason, none is skipped. Also when `OLM_REQUIRE_ALL` is set (as under
/// `make test`) and `OLM_TEST_TIER` asks for less than the full tier, whose absence would leave
/// out the parts of tests that need Pods or garbage collection.
pub async fn shared() -> &'static TestEnv {
    static ENV: tokio::sync::OnceCell<Result<TestEnv, String>> = tokio::sync::OnceCell::const_new();
    let env = ENV
        .get_or_init(|| async {
            let started = Instant::now();
            let tier = TestEnv::tier_from_env().map_err(|e| e.to_string())?;
            if tier != Tier::Full && crate::skip::require_all() {
                return Err(format!(
                    "{TIER_ENV}=apiserver leaves out the parts of tests that need the full tier, \
                     and {REQUIRE_ALL_ENV} is set (make test sets it): unset {TIER_ENV}, or run \
                     with {REQUIRE_ALL_ENV}=0 to allow that",
                    REQUIRE_ALL_ENV = crate::skip::REQUIRE_ALL_ENV
                ));
            }
            let env = TestEnv::start(tier).await.map_err(|e| e.to_string())?;
            eprintln!(
                "olm-e2e: test environment ({:?}) ready in {:.1}s ({}); KUBECONFIG={}",
                env.control_plane.tier(),
                started.elapsed().as_secs_f64(),
                env.control_plane.startup_summary(),
                env.kubeconfig_path().display()
            );
            Ok(env)
        })
        .await;
    match env {
        Ok(env) => env,
        Err(e) => panic!("the shared test environment is unavailable: {e}"),
    }
}

/// `prefix` plus a random suffix, valid as a Kubernetes name when `prefix` is.
pub fn unique_name(prefix: &str) -> String {
    let suffix: u32 = rand::random();
    format!("{prefix}-{suffix:08x}")
}
