//! OpenShift cluster-upgrade gating against the real API server with the `config/openshift/`
//! CRDs: the gating loop (`operator_controller::gating`) over releases written directly through
//! `ReleaseStore` (ours, and one in upstream's byte format), and its server-side apply of the
//! `Upgradeable` condition on a ClusterOperator that another writer also writes.
//!
//! Each test runs its own loop with its own system namespace and its own ClusterOperator name (the
//! product's is `olm`), so tests run in parallel; the ClusterVersion singleton is shared with
//! `openshift.rs` and taken under [`crate::support::CLUSTER_VERSION_SINGLETON`].
//!
//! Expected texts: cluster-olm-operator's `InstalledOLMOperatorsUpgradeable` condition
//! (`pkg/controller/incompatible_operator_controller.go`) as library-go's `UnionClusterCondition`
//! puts it on the ClusterOperator (reference `openshift-upgrade-gating.md` §1.6, §1.7).
//!
//! The lifting versions are resolved from a catalog (`e2e/fixtures/gating-catalog/`) served by a
//! real catalogd and fetched with operator-controller's catalogd client. The per-extension
//! `ClusterUpgradeable` condition written on a real ClusterExtension by `operator-controller run`
//! is in [`crate::extension_gating`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use olm_api::openshift::{ClusterOperator, ClusterOperatorStatusCondition, ClusterVersion};
use olm_api::v1::{ConditionReason, ConditionStatus};
use olm_operator_core::gating::{ExtensionMetadata, Lifting, extension_condition};
use olm_operator_core::release::history::{self, NewRelease};
use olm_operator_core::release::model::Metadata;
use olm_operator_core::release::{Chart, Release, Status, secrets};
use olm_runtime::shutdown::CancellationToken;
use operator_controller::gating::{
    ClusterVersionCache, Gating, GatingOptions, OpenShiftMode, PassOutcome, WriteOutcome,
    openshift_enabled,
};
use operator_controller::storage::ReleaseStore;
use serde_json::json;
use tokio::sync::watch;
use tracing::instrument::WithSubscriber;

use crate::support::{
    cluster_extensions, create, create_namespace, delete, delete_namespace, eventually, unique_name,
};

/// The other writer of the ClusterOperator (cluster-olm-operator's library-go on a real cluster).
const OTHER_WRITER: &str = "cluster-olm-operator-e2e";
const PREFIX: &str = "InstalledOLMOperatorsUpgradeable: ";

/// A running gating loop and what a test needs around it.
struct Env {
    client: kube::Client,
    namespace: String,
    cluster_operator: String,
    store: ReleaseStore,
    leading: watch::Sender<bool>,
    outcomes: watch::Receiver<Option<Arc<PassOutcome>>>,
    versions: ClusterVersionCache,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    extensions: Vec<DynamicObject>,
}

impl Env {
    /// Starts a loop; the ClusterOperator is first written by [`OTHER_WRITER`].
    async fn start(prefix: &str, release_version: Option<&str>, leading: bool) -> Env {
        Env::start_with(prefix, release_version, leading, |_| {}).await
    }

    /// [`Env::start`] with options adjusted by `adjust`.
    async fn start_with(
        prefix: &str,
        release_version: Option<&str>,
        leading: bool,
        adjust: impl FnOnce(&mut GatingOptions),
    ) -> Env {
        Env::start_logged(prefix, release_version, leading, adjust, None).await
    }

    /// [`Env::start_with`], the loop's own log events (not its watches') going to `log` when given.
    async fn start_logged(
        prefix: &str,
        release_version: Option<&str>,
        leading: bool,
        adjust: impl FnOnce(&mut GatingOptions),
        log: Option<tracing::Dispatch>,
    ) -> Env {
        let client = olm_e2e::shared().await.client().await;
        let namespace = create_namespace(&client, prefix).await;
        let cluster_operator = unique_name("olm");
        other_writer_applies(&client, &cluster_operator, "AsExpected").await;
        let mut options = GatingOptions::new(&namespace, release_version.map(str::to_string));
        options.cluster_operator = cluster_operator.clone();
        options.settle = Duration::from_millis(100);
        options.retry = Duration::from_secs(1);
        adjust(&mut options);
        let gating = Gating::new(client.clone(), options);
        let outcomes = gating.outcomes();
        let versions = gating.cluster_version();
        let (leading_tx, leading_rx) = watch::channel(leading);
        let shutdown = CancellationToken::new();
        let run = gating.run(leading_rx, shutdown.clone());
        let task = match log {
            Some(log) => tokio::spawn(run.with_subscriber(log)),
            None => tokio::spawn(run),
        };
        Env {
            store: ReleaseStore::new(client.clone(), &namespace),
            client,
            namespace,
            cluster_operator,
            leading: leading_tx,
            outcomes,
            versions,
            shutdown,
            task,
            extensions: Vec::new(),
        }
    }

    fn cluster_operators(&self) -> Api<ClusterOperator> {
        Api::all(self.client.clone())
    }

    /// Creates a ClusterExtension (nothing reconciles it here) and returns its name and owner
    /// reference for release records.
    async fn extension(&mut self, prefix: &str) -> (String, OwnerReference) {
        let ce = create(
            &cluster_extensions(&self.client),
            json!({
                "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
                "metadata": {"name": unique_name(prefix)},
                "spec": {"namespace": "default", "source": {"sourceType": "Catalog", "catalog": {"packageName": "gating-test"}}}
            }),
        )
        .await
        .unwrap();
        let name = ce.metadata.name.clone().unwrap();
        let owner =
            secrets::cluster_extension_owner_reference(&name, ce.metadata.uid.as_deref().unwrap());
        self.extensions.push(ce);
        (name, owner)
    }

    /// The `Upgradeable` condition once `want(condition)` holds.
    async fn upgradeable_when(
        &self,
        what: &str,
        want: impl Fn(&ClusterOperatorStatusCondition) -> bool,
    ) -> ClusterOperatorStatusCondition {
        let api = self.cluster_operators();
        eventually(what, || {
            let api = api.clone();
            let want = &want;
            let name = self.cluster_operator.clone();
            async move {
                let co = api.get(&name).await.ok()?;
                co.condition("Upgradeable").filter(|c| want(c)).cloned()
            }
        })
        .await
    }

    /// Waits until `Upgradeable` is exactly (status, reason, message).
    async fn expect(&self, status: ConditionStatus, reason: &str, message: &str) {
        self.upgradeable_when(
            &format!("Upgradeable {status:?} {reason} {message:?}"),
            |c| {
                c.status == status
                    && c.reason.as_deref() == Some(reason)
                    && c.message.as_deref() == Some(message)
            },
        )
        .await;
    }

    /// The first pass outcome for which `want` holds.
    async fn outcome_when(
        &self,
        what: &str,
        want: impl Fn(&PassOutcome) -> bool,
    ) -> Arc<PassOutcome> {
        eventually(what, || {
            let outcome = self.outcomes.borrow().clone();
            let hit = outcome.filter(|o| want(o));
            async move { hit }
        })
        .await
    }

    async fn stop(self) {
        self.shutdown.cancel();
        let api = self.cluster_operators();
        self.task.await.unwrap();
        let _ = api
            .delete(&self.cluster_operator, &Default::default())
            .await;
        for ce in &self.extensions {
            delete(&cluster_extensions(&self.client), ce).await;
        }
        delete_namespace(&self.client, &self.namespace).await;
    }
}

/// The other writer's full intent for the ClusterOperator's status: `Available`, `Degraded`,
/// versions and relatedObjects (never `Upgradeable`).
async fn other_writer_applies(client: &kube::Client, name: &str, degraded_reason: &str) {
    let api: Api<ClusterOperator> = Api::all(client.clone());
    let params = PatchParams::apply(OTHER_WRITER).force();
    api.patch(
        name,
        &params,
        &Patch::Apply(json!({
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": name}, "spec": {}
        })),
    )
    .await
    .unwrap();
    api.patch_status(
        name,
        &params,
        &Patch::Apply(json!({
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": name},
            "status": {
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "AsExpected", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Degraded", "status": "False", "reason": degraded_reason, "lastTransitionTime": "2026-01-01T00:00:00Z"}
                ],
                "versions": [{"name": "operator", "version": "4.18.3"}],
                "relatedObjects": [{"group": "", "resource": "namespaces", "name": "openshift-operator-controller"}]
            }
        })),
    )
    .await
    .unwrap();
}

/// The other writer's part of the ClusterOperator is intact.
async fn assert_other_writer_survives(env: &Env, degraded_reason: &str) {
    let co = env
        .cluster_operators()
        .get(&env.cluster_operator)
        .await
        .unwrap();
    let available = co.condition("Available").unwrap();
    assert_eq!(
        (available.status, available.reason.as_deref()),
        (ConditionStatus::True, Some("AsExpected"))
    );
    assert_eq!(
        co.condition("Degraded").unwrap().reason.as_deref(),
        Some(degraded_reason)
    );
    let status = co.status.clone().unwrap();
    assert_eq!(status.versions.len(), 1);
    assert_eq!(status.versions[0].version, "4.18.3");
    assert_eq!(status.related_objects.len(), 1);
    assert_eq!(status.related_objects[0].resource, "namespaces");
    // Our field manager owns the Upgradeable entry of the conditions list and nothing else.
    let ours: Vec<String> = co
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.manager.as_deref() == Some(operator_controller::gating::FIELD_MANAGER))
        .map(|m| serde_json::to_string(&m.fields_v1.unwrap().0).unwrap())
        .collect();
    assert!(
        ours.iter()
            .any(|f| f.contains(r#"k:{\"type\":\"Upgradeable\"}"#)),
        "{ours:?}"
    );
    for fields in &ours {
        assert!(!fields.contains("versions"), "{fields}");
        assert!(!fields.contains("relatedObjects"), "{fields}");
        assert!(!fields.contains(r#""type\":\"Available"#), "{fields}");
        assert!(!fields.contains(r#"{\"type\":\"Degraded"#), "{fields}");
    }
}

/// A release record for `ce` installing `bundle`, deployed, with `olm.properties` (if any) on its
/// chart as the installer copies it from the CSV.
fn release<'a>(
    ce: &'a str,
    bundle: &str,
    version: &str,
    olm_properties: Option<&str>,
) -> NewRelease<'a> {
    let annotations: BTreeMap<String, String> = olm_properties
        .map(|p| BTreeMap::from([("olm.properties".to_string(), p.to_string())]))
        .unwrap_or_default();
    NewRelease {
        name: ce,
        namespace: "default",
        chart: Chart {
            metadata: Some(Metadata {
                annotations,
                ..Default::default()
            }),
            ..Default::default()
        },
        manifest: String::new(),
        labels: history::bundle_labels("pkg", bundle, version, "registry.test/b:1", None),
        now: Timestamp::now(),
    }
}

fn max_property(value_json: &str) -> String {
    format!(
        r#"[{{"type":"olm.maxOpenShiftVersion","value":{value_json}}},{{"type":"olm.package","value":{{"packageName":"pkg","version":"1.0.0"}}}}]"#
    )
}

/// Installs a first release (already deployed).
async fn install(env: &Env, owner: &OwnerReference, new: NewRelease<'_>) {
    let mut r = history::install_release(new);
    history::set_status(&mut r, Status::DEPLOYED, history::INSTALL_COMPLETE);
    env.store.create(&r, owner, 1_000).await.unwrap();
}

/// Upgrades as the Helm path does: a new deployed record, the old one superseded.
async fn upgrade(env: &Env, owner: &OwnerReference, new: NewRelease<'_>) {
    let releases: Vec<Release> = env.store.history(new.name).await.unwrap().releases();
    let (mut next, from) = history::upgrade_release(&releases, new).unwrap();
    history::set_status(&mut next, Status::DEPLOYED, history::UPGRADE_COMPLETE);
    env.store.create(&next, owner, 2_000).await.unwrap();
    let mut old = releases.into_iter().find(|r| r.version == from).unwrap();
    history::mark_superseded(&mut old);
    env.store.update(&old, owner, 2_000).await.unwrap();
}

#[tokio::test]
async fn the_test_plane_is_detected_as_openshift() {
    let client = olm_e2e::shared().await.client().await;
    let timeout = Duration::from_secs(10);
    assert!(
        openshift_enabled(&client, OpenShiftMode::Auto, timeout)
            .await
            .unwrap()
    );
    assert!(
        !openshift_enabled(&client, OpenShiftMode::Disabled, timeout)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn upgradeable_follows_installs_upgrades_and_uninstalls() {
    let mut env = Env::start("gating-flow", Some("4.18.3"), true).await;

    // Nothing installed (in this system namespace): library-go's union of a True condition.
    env.expect(ConditionStatus::True, "AsExpected", "All is well")
        .await;
    assert_other_writer_survives(&env, "AsExpected").await;
    assert_eq!(env.versions.current().unwrap().to_string(), "4.18");

    // A bundle with max 4.18 on a 4.18 cluster blocks the upgrade to 4.19.
    let (a, a_owner) = env.extension("gate-a").await;
    install(
        &env,
        &a_owner,
        release(&a, "pkg-a.v1.0.0", "1.0.0", Some(&max_property("\"4.18\""))),
    )
    .await;
    env.expect(
        ConditionStatus::False,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled",
        &format!("{PREFIX}Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle \"pkg-a.v1.0.0\" for ClusterExtension \"{a}\"."),
    )
    .await;
    assert_other_writer_survives(&env, "AsExpected").await;

    // The other writer applies its whole status again (without Upgradeable): ours stays, theirs
    // changes.
    other_writer_applies(&env.client, &env.cluster_operator, "Recovered").await;
    let kept = env
        .upgradeable_when(
            "Upgradeable still False after the other writer's apply",
            |c| c.status == ConditionStatus::False,
        )
        .await;
    assert_other_writer_survives(&env, "Recovered").await;

    // Upgrading to a bundle with max 4.19 lifts the block; the status flip moves the transition time.
    upgrade(
        &env,
        &a_owner,
        release(&a, "pkg-a.v1.1.0", "1.1.0", Some(&max_property("\"4.19\""))),
    )
    .await;
    let lifted = env
        .upgradeable_when("Upgradeable True after the upgrade", |c| {
            c.status == ConditionStatus::True
        })
        .await;
    assert_eq!(
        (lifted.reason.as_deref(), lifted.message.as_deref()),
        (Some("AsExpected"), Some("All is well"))
    );
    assert!(lifted.last_transition_time.0 >= kept.last_transition_time.0);

    // Two blocking extensions: both listed, sorted by bundle name first (the extension names
    // sort the other way round).
    let (b, b_owner) = env.extension("gate-z").await;
    let (c, c_owner) = env.extension("gate-b").await;
    install(
        &env,
        &b_owner,
        release(&b, "aaa.v2.0.0", "2.0.0", Some(&max_property("4.17"))),
    )
    .await;
    install(
        &env,
        &c_owner,
        release(&c, "zzz.v1.0.0", "1.0.0", Some(&max_property("\"4.18\""))),
    )
    .await;
    env.expect(
        ConditionStatus::False,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled",
        &format!("{PREFIX}Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle \"aaa.v2.0.0\" for ClusterExtension \"{b}\",bundle \"zzz.v1.0.0\" for ClusterExtension \"{c}\"."),
    )
    .await;

    // Uninstalling both (their records deleted, as uninstall does) lifts the block again.
    env.store.delete_all(&b).await.unwrap();
    env.store.delete_all(&c).await.unwrap();
    env.expect(ConditionStatus::True, "AsExpected", "All is well")
        .await;

    // A malformed value: upstream's failure reason and message.
    let (d, d_owner) = env.extension("gate-d").await;
    install(
        &env,
        &d_owner,
        release(
            &d,
            "pkg-d.v1.0.0",
            "1.0.0",
            Some(&max_property("\"v4.18\"")),
        ),
    )
    .await;
    env.expect(
        ConditionStatus::False,
        "InstalledOLMOperators_FailureGettingExtensionMetadata",
        &format!("{PREFIX}error(s) with cluster extension {d}: error in bundle pkg-d.v1.0.0: error converting to semver for version \"v4.18\": invalid version format"),
    )
    .await;
    // And an olm.properties that is not JSON at all, alongside a blocking extension: the
    // blocking list comes first, the errors are appended (each line prefixed by the union).
    let (e, e_owner) = env.extension("gate-e").await;
    install(
        &env,
        &e_owner,
        release(&e, "pkg-e.v1.0.0", "1.0.0", Some("abcd")),
    )
    .await;
    let (f, f_owner) = env.extension("gate-f").await;
    install(
        &env,
        &f_owner,
        release(&f, "pkg-f.v1.0.0", "1.0.0", Some(&max_property("\"4.18\""))),
    )
    .await;
    // Errors keep the listing order (ClusterExtensions come sorted by name: gate-d before gate-e).
    env.expect(
        ConditionStatus::False,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled",
        &format!(
            "{PREFIX}Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle \"pkg-f.v1.0.0\" for ClusterExtension \"{f}\".\n\
             {PREFIX} Additionally the following errors were encountered while getting extension metadata: error(s) with cluster extension {d}: error in bundle pkg-d.v1.0.0: error converting to semver for version \"v4.18\": invalid version format\n\
             {PREFIX}error with cluster extension {e}: error in bundle pkg-e.v1.0.0: could not convert olm.properties: failed to unmarshal properties annotation: invalid character 'a' looking for beginning of value"
        ),
    )
    .await;
    assert_other_writer_survives(&env, "Recovered").await;

    env.stop().await;
}

#[tokio::test]
async fn an_extension_installed_by_upstream_is_counted_with_the_4_1_warning() {
    let mut env = Env::start("gating-takeover", Some("4.18.0"), true).await;
    // upstream's records (`operator-controller/core/tests/release_data/`, written by upstream's
    // Helm path) for the extension `fixture-ext`; the deployed one (v3) installs
    // `fixture.v1.2.0` whose olm.properties holds an unquoted `4.1`.
    let ce = create(
        &cluster_extensions(&env.client),
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
            "metadata": {"name": "fixture-ext"},
            "spec": {"namespace": "fixture", "source": {"sourceType": "Catalog", "catalog": {"packageName": "fixture"}}}
        }),
    )
    .await
    .unwrap();
    let owner = secrets::cluster_extension_owner_reference(
        "fixture-ext",
        ce.metadata.uid.as_deref().unwrap(),
    );
    env.extensions.push(ce);
    let secrets_api: Api<Secret> = Api::namespaced(env.client.clone(), &env.namespace);
    for v in ["fixture-ext.v1", "fixture-ext.v2", "fixture-ext.v3"] {
        let path = olm_e2e::repo_root()
            .join("operator-controller/core/tests/release_data")
            .join(format!("upstream-index-{v}.json"));
        let mut secret: Secret = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        secret.metadata.namespace = Some(env.namespace.clone());
        secret.metadata.owner_references = Some(vec![owner.clone()]);
        secrets_api
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }

    // Upstream's verdict on 4.1 (it blocks a 4.18 cluster)...
    env.expect(
        ConditionStatus::False,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled",
        &format!("{PREFIX}Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle \"fixture.v1.2.0\" for ClusterExtension \"fixture-ext\"."),
    )
    .await;
    // ...plus the warning naming the bundle and the property as written (logged by the loop).
    let warning = "bundle \"fixture.v1.2.0\" declares {\"type\":\"olm.maxOpenShiftVersion\",\"value\":4.1} as an unquoted number";
    let outcome = env
        .outcome_when("a pass that judged fixture-ext", |o| {
            o.evaluation
                .as_ref()
                .is_some_and(|e| e.blocking().count() == 1)
        })
        .await;
    let warnings: Vec<&str> = outcome.evaluation.as_ref().unwrap().warnings().collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with(warning), "{}", warnings[0]);

    // The per-extension condition the ClusterExtension controller will write, computed from the
    // same upstream-written release read through the store.
    let installed = env.store.installed("fixture-ext").await.unwrap().unwrap();
    let condition = extension_condition(
        "fixture-ext",
        ExtensionMetadata::from_release(Some(&installed.release)),
        env.versions.current(),
        Lifting::Versions(&[]),
    )
    .unwrap();
    assert_eq!(
        (condition.status, condition.reason),
        (
            ConditionStatus::False,
            ConditionReason::MaxOpenShiftVersionIncompatible
        )
    );
    assert!(
        condition.message.starts_with(
            "bundle \"fixture.v1.2.0\" supports OpenShift up to 4.1; it blocks the cluster's upgrade from 4.18 to 4.19."
        ),
        "{}",
        condition.message
    );
    assert!(
        condition.message.contains(&format!("\nWarning: {warning}")),
        "{}",
        condition.message
    );

    env.stop().await;
}

#[tokio::test]
async fn the_cluster_version_comes_from_completed_history_and_its_changes_re_evaluate() {
    let _singleton = crate::support::CLUSTER_VERSION_SINGLETON.lock().await;
    let client = olm_e2e::shared().await.client().await;
    let cv_api: Api<ClusterVersion> = Api::all(client.clone());
    let cv: ClusterVersion = serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "spec": {"clusterID": "8b1c4e5e-0000-4000-8000-000000000001", "desiredUpdate": {"version": "4.20.0"}}
    }))
    .unwrap();
    cv_api.create(&PostParams::default(), &cv).await.unwrap();
    // An update to 4.20 has started: status.desired names 4.20, the cluster still runs 4.18.
    cv_api
        .patch_status(
            "version",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "desired": {"version": "4.20.0", "image": "registry.test/release@sha256:20"},
                "history": [
                    {"state": "Partial", "version": "4.20.0"},
                    {"state": "Completed", "version": "4.18.2"}
                ]
            }})),
        )
        .await
        .unwrap();

    let mut env = Env::start("gating-cv", None, true).await;
    let (a, a_owner) = env.extension("gate-cv").await;
    install(
        &env,
        &a_owner,
        release(
            &a,
            "pkg-cv.v1.0.0",
            "1.0.0",
            Some(&max_property("\"4.19\"")),
        ),
    )
    .await;
    // Judged against 4.18 (history), not 4.20 (desired): max 4.19 does not block.
    env.outcome_when("a pass that judged the extension at 4.18", |o| {
        o.evaluation.as_ref().is_some_and(|e| {
            e.current.to_string() == "4.18" && e.extensions.iter().any(|x| x.extension == a)
        })
    })
    .await;
    env.expect(ConditionStatus::True, "AsExpected", "All is well")
        .await;
    assert_eq!(env.versions.current().unwrap().to_string(), "4.18");

    // The update to 4.19 completes: the watch re-evaluates, and max 4.19 now blocks 4.20.
    cv_api
        .patch_status(
            "version",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"history": [
                {"state": "Completed", "version": "4.19.1"},
                {"state": "Completed", "version": "4.18.2"}
            ]}})),
        )
        .await
        .unwrap();
    env.expect(
        ConditionStatus::False,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled",
        &format!("{PREFIX}Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.20: bundle \"pkg-cv.v1.0.0\" for ClusterExtension \"{a}\"."),
    )
    .await;
    assert_eq!(env.versions.current().unwrap().to_string(), "4.19");

    // No ClusterVersion at all: the version is unknown, nothing is written, the last condition stays.
    cv_api.delete("version", &Default::default()).await.unwrap();
    let outcome = env
        .outcome_when("a pass without a ClusterVersion", |o| {
            o.write == WriteOutcome::VersionUnknown
        })
        .await;
    assert_eq!(
        outcome.version.as_ref().unwrap_err(),
        "failed to read the cluster version: OPERATOR_IMAGE_VERSION is not set and ClusterVersion \"version\" does not exist"
    );
    assert_eq!(env.versions.current(), None);
    let co = env
        .cluster_operators()
        .get(&env.cluster_operator)
        .await
        .unwrap();
    assert_eq!(
        co.condition("Upgradeable").unwrap().status,
        ConditionStatus::False
    );
    env.stop().await;
}

/// A log that keeps what it is given, for one test's subscriber.
#[derive(Clone, Default)]
struct CapturedLog(Arc<std::sync::Mutex<Vec<u8>>>);

impl CapturedLog {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'w> tracing_subscriber::fmt::MakeWriter<'w> for CapturedLog {
    type Writer = CapturedLog;
    fn make_writer(&'w self) -> CapturedLog {
        self.clone()
    }
}

/// On a plane serving the OpenShift config APIs without a ClusterVersion, and without
/// `OPERATOR_IMAGE_VERSION`: the loop says so once, as a warning, and then stays quiet at the
/// default level however many passes run (it used to log an ERROR on every retry, every 10 s).
#[tokio::test]
async fn an_unknown_cluster_version_is_warned_once_and_never_logged_as_an_error() {
    let _singleton = crate::support::CLUSTER_VERSION_SINGLETON.lock().await;
    let client = olm_e2e::shared().await.client().await;
    let cv_api: Api<ClusterVersion> = Api::all(client.clone());
    let _ = cv_api.delete("version", &Default::default()).await;
    eventually("no ClusterVersion", || {
        let cv_api = cv_api.clone();
        async move { matches!(cv_api.get_opt("version").await, Ok(None)).then_some(()) }
    })
    .await;

    let log = CapturedLog::default();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "operator_controller=debug",
        ))
        .with_writer(log.clone())
        .with_ansi(false)
        .finish();
    // Passes every 200 ms (the resync), so "several evaluation periods" come quickly.
    let env = Env::start_logged(
        "gating-quiet",
        None,
        true,
        |o| {
            o.resync = Duration::from_millis(200);
            o.retry = Duration::from_millis(200);
        },
        Some(tracing::Dispatch::new(subscriber)),
    )
    .await;
    let first = env
        .outcome_when("a pass without a cluster version", |o| {
            o.write == WriteOutcome::VersionUnknown
        })
        .await;
    env.outcome_when("five more passes without one", |o| {
        o.pass >= first.pass + 5 && o.write == WriteOutcome::VersionUnknown
    })
    .await;
    assert_eq!(env.versions.current(), None);
    env.stop().await;

    let text = log.text();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains("the cluster version is not known"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(
        warnings[0].contains(
            "OPERATOR_IMAGE_VERSION is not set and ClusterVersion \"version\" does not exist"
        ),
        "{text}"
    );
    assert!(!text.contains("ERROR"), "{text}");
    // The later passes did run, and said it at debug level only.
    assert!(
        text.lines()
            .filter(|l| l.contains("DEBUG") && l.contains("still not known"))
            .count()
            >= 4,
        "{text}"
    );
}

#[tokio::test]
async fn only_the_leader_writes() {
    let mut env = Env::start("gating-leader", Some("4.18.0"), false).await;
    let (a, a_owner) = env.extension("gate-l").await;
    install(
        &env,
        &a_owner,
        release(&a, "pkg-l.v1.0.0", "1.0.0", Some(&max_property("\"4.18\""))),
    )
    .await;
    // A follower reads the cluster version (for the per-extension condition) and judges, but
    // writes nothing.
    env.outcome_when("a follower pass that saw the install", |o| {
        o.write == WriteOutcome::NotLeader
            && o.evaluation
                .as_ref()
                .is_some_and(|e| e.blocking().any(|x| x.extension == a))
    })
    .await;
    assert_eq!(env.versions.current().unwrap().to_string(), "4.18");
    let co = env
        .cluster_operators()
        .get(&env.cluster_operator)
        .await
        .unwrap();
    assert!(co.condition("Upgradeable").is_none());

    // Becoming the leader writes at once.
    env.leading.send_replace(true);
    env.expect(
        ConditionStatus::False,
        "InstalledOLMOperators_IncompatibleOperatorsInstalled",
        &format!("{PREFIX}Found ClusterExtensions that require upgrades prior to upgrading cluster to version 4.19: bundle \"pkg-l.v1.0.0\" for ClusterExtension \"{a}\"."),
    )
    .await;

    // Losing it again: an uninstall is seen but not written.
    env.leading.send_replace(false);
    env.store.delete_all(&a).await.unwrap();
    env.outcome_when("a follower pass that saw the uninstall", |o| {
        o.write == WriteOutcome::NotLeader
            && o.evaluation.as_ref().is_some_and(|e| {
                e.blocking().count() == 0 && e.extensions.iter().any(|x| x.extension == a)
            })
    })
    .await;
    let co = env
        .cluster_operators()
        .get(&env.cluster_operator)
        .await
        .unwrap();
    assert_eq!(
        co.condition("Upgradeable").unwrap().status,
        ConditionStatus::False
    );
    env.stop().await;
}

#[tokio::test]
async fn a_missing_cluster_operator_is_created_and_a_removed_condition_restored() {
    let env = Env::start("gating-heal", Some("4.18.0"), true).await;
    env.expect(ConditionStatus::True, "AsExpected", "All is well")
        .await;
    // Someone deletes the ClusterOperator: the watch sees it and the loop recreates it.
    let api = env.cluster_operators();
    api.delete(&env.cluster_operator, &Default::default())
        .await
        .unwrap();
    env.expect(ConditionStatus::True, "AsExpected", "All is well")
        .await;
    // Someone overwrites our condition with another value: the loop restores it.
    api.patch_status(
        &env.cluster_operator,
        &PatchParams::apply("someone-else").force(),
        &Patch::Apply(json!({
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": env.cluster_operator},
            "status": {"conditions": [{"type": "Upgradeable", "status": "False", "reason": "Manual", "message": "no", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        })),
    )
    .await
    .unwrap();
    env.expect(ConditionStatus::True, "AsExpected", "All is well")
        .await;
    env.stop().await;
}

#[tokio::test]
async fn passes_recur_periodically_without_events() {
    let env = Env::start_with("gating-resync", Some("4.18.0"), true, |o| {
        o.resync = Duration::from_millis(300);
    })
    .await;
    env.expect(ConditionStatus::True, "AsExpected", "All is well")
        .await;
    // Nothing changes from here on; only the resync timer can start further passes (the watches'
    // initial listings account for a few at most). A pass writes the ClusterOperator before it
    // publishes its outcome, so the first outcome is waited for, not read.
    let first = env.outcome_when("a first pass", |_| true).await.pass;
    env.outcome_when("ten more passes", |o| o.pass >= first + 10)
        .await;
    env.stop().await;
}

#[tokio::test]
async fn lifting_versions_come_from_the_extensions_catalog_under_its_rules() {
    use olm_e2e::catalogd::{Catalogd, Options, catalogs};
    use olm_operator_core::gating::{ClusterMinor, lifting_versions};
    use olm_operator_core::resolve::{CatalogInfo, InstalledBundle};
    use operator_controller::catalog_source::http::{
        CatalogEndpoint, CatalogdClient, ClientOptions,
    };

    let shared = olm_e2e::shared().await;
    let repo = unique_name("gating-catalog");
    let fixture = olm_e2e::repo_root().join("e2e/fixtures/gating-catalog");
    olm_e2e::images::push_catalog(&shared.registry, &format!("{repo}:v1"), &fixture)
        .await
        .unwrap();
    let catalogd = Catalogd::start_in_process(Options::new(&shared.registry)).await;
    let api = catalogs().await;
    let name = catalogd
        .create_catalog(
            &api,
            "gating",
            &shared.registry.image(&format!("{repo}:v1")),
            None,
        )
        .await;
    catalogd.wait_serving(&api, &name).await;
    let http = CatalogdClient::new(ClientOptions::default()).unwrap();
    let endpoint = CatalogEndpoint {
        name: name.clone(),
        base_url: format!("{}/catalogs/{name}", catalogd.content_root)
            .parse()
            .unwrap(),
        revision: None,
    };
    let content = http.package(&endpoint, "gating-op").await.unwrap();

    let spec: olm_api::v1::CatalogFilter = serde_json::from_value(json!({
        "packageName": "gating-op", "channels": ["stable"]
    }))
    .unwrap();
    let installed = InstalledBundle {
        name: "gating-op.v1.0.0".to_string(),
        version: "1.0.0".to_string(),
        release: None,
    };
    let current = ClusterMinor::new(4, 18);
    let catalog_infos = [CatalogInfo::new(&name, 0)];
    // stable from 1.0.0: 1.1.0 still stops at 4.18; 1.2.0 (4.19) and 1.3.0 (no maximum) lift
    // the block; 2.0.0 is only in `candidate`.
    let lifting = lifting_versions(&spec, Some(&installed), current, &catalog_infos, |_| {
        Ok(content.clone())
    })
    .unwrap();
    assert_eq!(lifting, ["1.3.0", "1.2.0"]);
    // Under a version range that stops before 1.2.0 nothing lifts it.
    let narrow: olm_api::v1::CatalogFilter = serde_json::from_value(json!({
        "packageName": "gating-op", "channels": ["stable"], "version": "<1.2.0"
    }))
    .unwrap();
    assert!(
        lifting_versions(&narrow, Some(&installed), current, &catalog_infos, |_| Ok(
            content.clone()
        ))
        .unwrap()
        .is_empty()
    );

    // The per-extension condition for the installed 1.0.0 names them.
    let props = r#"[{"type":"olm.maxOpenShiftVersion","value":"4.18"}]"#;
    let condition = extension_condition(
        "gating-ext",
        ExtensionMetadata::Deployed {
            bundle: "gating-op.v1.0.0",
            olm_properties: Some(props),
        },
        Some(current),
        Lifting::Versions(&lifting),
    )
    .unwrap();
    assert_eq!(
        condition.message,
        "bundle \"gating-op.v1.0.0\" supports OpenShift up to 4.18; it blocks the cluster's upgrade from 4.18 to 4.19. Bundle versions that would lift the block (from the extension's catalogs, under its channels and version range): 1.3.0, 1.2.0."
    );

    api.delete(&name, &Default::default()).await.unwrap();
    catalogd.wait_deleted(&api, &name).await;
    catalogd.shut_down().await.unwrap();
}
