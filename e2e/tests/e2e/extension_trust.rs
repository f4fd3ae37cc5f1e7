//! What operator-controller publishes can be trusted (issue 23): a refused attempt records
//! nothing and touches nothing, a failure that repeats records once, `Available` always says
//! what the Deployments show, drift repair works without the registry, and a controller that
//! stops working stops the process. Each test is a [`Scenario`]: a controller, a catalogd and a
//! package of its own.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DeleteParams, PostParams};
use olm_api::v1::{ClusterExtension, ConditionType, find_condition};
use olm_e2e::scenario::{
    AVAILABLE, Extension, ExtensionSpec, INSTALLED, Message, ObjectKey, Package, RETRYING,
    Scenario, message,
};
use olm_e2e::test_env::unique_name;
use serde_json::json;

/// The extension's `Available` condition as (status, message), if any.
fn available(e: &ClusterExtension) -> Option<(String, String)> {
    let c = find_condition(&e.status.as_ref()?.conditions, ConditionType::Available)?;
    Some((c.status.as_str().to_owned(), c.message.clone()))
}

/// Revision → status of each release record, as a test writes it down.
fn records(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(revision, status)| ((*revision).to_owned(), (*status).to_owned()))
        .collect()
}

/// The extension installs, and its one release record is the deployed one.
async fn installs_recording_one_deployed_release(scenario: &Scenario, ext: &Extension) {
    scenario.wait_for(ext, INSTALLED).await;
    assert_eq!(
        scenario.release_records(ext).await.by_revision(),
        records(&[("1", "deployed")])
    );
}

/// A user's ServiceAccount of the bundle's name collides: the extension retries with upstream's
/// message, writes no release record, and never labels, annotates or owns the user's object,
/// which survives the extension's deletion.
#[tokio::test]
async fn a_colliding_service_account_records_nothing_and_is_left_byte_identical() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("collide-sa").await;
    let sa_name = format!("{}-sa", catalog.package());
    let accounts: Api<ServiceAccount> = Api::namespaced(scenario.client.clone(), &ns);
    let users: ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": sa_name, "labels": {"team": "users"}, "annotations": {"note": "mine"}}
    }))
    .unwrap();
    accounts
        .create(&PostParams::default(), &users)
        .await
        .unwrap();
    let before = scenario
        .snapshot(ObjectKey::namespaced("v1", "ServiceAccount", &ns, &sa_name))
        .await;

    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    let expected = format!(
        "ServiceAccount '{sa_name}' already exists in namespace '{ns}' and cannot be managed by operator-controller"
    );
    scenario
        .wait_for(&ext, RETRYING.until_message(Message::contains(&expected)))
        .await;
    // Sixty seconds of retries: the refusal stays, nothing is recorded, nothing is touched.
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        let e = scenario.get(&ext).await;
        let progressing = message(&e, ConditionType::Progressing);
        assert!(progressing.contains(&expected), "{progressing}");
        assert_eq!(message(&e, ConditionType::Installed), "No bundle installed");
        assert_eq!(
            scenario.release_records(&ext).await.by_revision(),
            records(&[]),
            "release records"
        );
        before
            .assert_unchanged_after("the extension's retries")
            .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    assert!(
        scenario.failed_reconciles() >= 3,
        "retried several times:\n{}",
        scenario.controller().log_tail()
    );
    scenario.delete_extension(&ext).await;
    before
        .assert_unchanged_after("the extension's deletion")
        .await;
    scenario.finish().await;
}

/// A missing install namespace records nothing while it is missing; once it exists the bundle
/// installs with exactly one record, deployed.
#[tokio::test]
async fn a_missing_namespace_records_nothing_then_the_install_records_once() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let missing = unique_name("later");
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &missing))
        .await;
    scenario
        .wait_for(
            &ext,
            RETRYING.until_message(Message::contains(format!(
                "namespace \"{missing}\" does not exist"
            ))),
        )
        .await;
    scenario.wait_for_failed_reconciles(3).await;
    assert_eq!(
        scenario.release_records(&ext).await.by_revision(),
        records(&[])
    );

    scenario.namespace_named(&missing).await;
    installs_recording_one_deployed_release(&scenario, &ext).await;
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}

/// An object the API server refuses only when it is really written (a dry run passes): the
/// first attempt records one `failed` release, the retries that fail the same way append
/// nothing, and once the refusal is lifted that record becomes the deployed one.
#[tokio::test]
async fn a_failure_after_writes_began_leaves_one_failed_record_across_retries() {
    let mut scenario = Scenario::start().await;
    let refused = unique_name("refused");
    let manifest =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {refused}\ndata:\n  a: b\n");
    let catalog = scenario
        .publish(Package::new("pkg").bundle_with("1.0.0", |bundle| {
            bundle.manifests.push(("refused.yaml".into(), manifest));
        }))
        .await;
    let policy = scenario.refuse_real_writes_of_configmap(&refused).await;
    let ns = scenario.namespace("refused").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    scenario
        .wait_for(
            &ext,
            RETRYING.until_message(Message::contains("refused by the test's admission policy")),
        )
        .await;
    // The ServiceAccount comes before ConfigMaps in the apply order: writes had begun.
    let accounts: Api<ServiceAccount> = Api::namespaced(scenario.client.clone(), &ns);
    assert!(
        accounts
            .get_opt(&format!("{}-sa", catalog.package()))
            .await
            .unwrap()
            .is_some()
    );
    scenario.wait_for_failed_reconciles(5).await;
    assert_eq!(
        scenario.release_records(&ext).await.by_revision(),
        records(&[("1", "failed")])
    );

    scenario.lift(policy).await;
    installs_recording_one_deployed_release(&scenario, &ext).await;
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}

/// The time between a Deployment's restore and the extension's `Available=True`, twenty times:
/// `Available` follows the Deployment (kwok makes it available) without any other trigger.
#[tokio::test]
async fn available_follows_a_deployment_deleted_and_restored_twenty_times() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("available").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns))
        .await;
    scenario.wait_for(&ext, AVAILABLE).await;
    let deployments = scenario.deployments(&ext);
    let deployment = catalog.deployment_name();
    let mut slowest = Duration::ZERO;
    for round in 0..20 {
        let old = deployments.get(&deployment).await.unwrap().metadata.uid;
        deployments
            .delete(&deployment, &DeleteParams::default())
            .await
            .unwrap();
        let restored_at = scenario
            .eventually(
                &format!("round {round}: the Deployment restored and available"),
                || async {
                    let d = deployments.get_opt(&deployment).await.ok()??;
                    let ready = d.metadata.uid != old
                        && d.status
                            .as_ref()?
                            .conditions
                            .as_ref()?
                            .iter()
                            .any(|c| c.type_ == "Available" && c.status == "True");
                    ready.then(Instant::now)
                },
            )
            .await;
        scenario
            .eventually(&format!("round {round}: Available=True"), || async {
                let e = scenario.extensions.get(&ext.name).await.ok()?;
                (available(&e)?.0 == "True").then_some(())
            })
            .await;
        slowest = slowest.max(restored_at.elapsed());
    }
    println!("slowest Available=True after a restored Deployment became available: {slowest:?}");
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}

/// With its registry stopped, a deleted Deployment is restored from the deployed release's
/// record; the pull's failure is reported and the extension stays Installed.
#[tokio::test]
async fn drift_is_repaired_from_the_record_while_the_registry_is_down() {
    let mut scenario = Scenario::builder().own_registry().start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("offline").await;
    let ext = scenario.install(ExtensionSpec::new(&catalog, &ns)).await;
    scenario.stop_registry().await;

    let deployments = scenario.deployments(&ext);
    let deployment = catalog.deployment_name();
    let old = deployments.get(&deployment).await.unwrap().metadata.uid;
    deployments
        .delete(&deployment, &DeleteParams::default())
        .await
        .unwrap();
    scenario
        .eventually("the Deployment restored without the registry", || async {
            let d = deployments.get_opt(&deployment).await.ok()??;
            (d.metadata.uid != old).then_some(())
        })
        .await;
    let e = scenario.get(&ext).await;
    assert_eq!(
        find_condition(
            &e.status.as_ref().unwrap().conditions,
            ConditionType::Installed
        )
        .map(|c| c.status.as_str().to_owned()),
        Some("True".to_owned())
    );
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}

/// A reconcile that fails before it applies anything (resolution: a version no catalog has)
/// still writes today's `Available`: with the Deployment deleted it is never True.
#[tokio::test]
async fn an_early_failure_never_reports_a_deleted_deployment_available() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("early").await;
    let ext = scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).version(">=1.0.0 <2.0.0"))
        .await;
    scenario.wait_for(&ext, AVAILABLE).await;
    // A version no catalog has: every reconcile now fails at resolution, before any apply.
    scenario.set_version(&ext, "9.9.9").await;
    scenario
        .wait_for(&ext, RETRYING.until_message(Message::contains("\"9.9.9\"")))
        .await;
    let deployments = scenario.deployments(&ext);
    let deployment = catalog.deployment_name();
    deployments
        .delete(&deployment, &DeleteParams::default())
        .await
        .unwrap();
    let last_seen = std::sync::Mutex::new(String::new());
    olm_e2e::eventually::eventually_explained(
        "a failed reconcile (Retrying) with Available=False naming the missing Deployment",
        || {
            format!(
                "last status: {}\n{}",
                last_seen.lock().unwrap(),
                scenario.controller().log_tail()
            )
        },
        || async {
            let e = scenario.extensions.get(&ext.name).await.ok()?;
            *last_seen.lock().unwrap() = serde_json::to_string(&e.status).unwrap_or_default();
            let (status, text) = available(&e)?;
            let progressing =
                find_condition(&e.status.as_ref()?.conditions, ConditionType::Progressing)?;
            (progressing.reason == "Retrying"
                && status == "False"
                && text.contains(&format!("{ns}/{deployment}: not found")))
            .then_some(())
        },
    )
    .await;
    // The failing reconciles go on (with backoff): for a while, never True while the Deployment
    // is gone.
    let until = Instant::now() + Duration::from_secs(15);
    while Instant::now() < until {
        assert!(deployments.get_opt(&deployment).await.unwrap().is_none());
        let e = scenario.get(&ext).await;
        assert_eq!(available(&e).map(|a| a.0), Some("False".to_owned()));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}

/// A controller task that panics (the test-only fault hook) ends the process with a non-zero
/// exit instead of leaving it Ready and idle.
#[tokio::test]
async fn a_panicking_controller_ends_the_process_with_a_failure() {
    let doomed = unique_name("ext");
    let mut scenario = Scenario::builder()
        .controller_env("OPERATOR_CONTROLLER_TEST_PANIC_ON_EXTENSION", &doomed)
        .start()
        .await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("panic").await;
    scenario
        .apply_extension(ExtensionSpec::new(&catalog, &ns).named(&doomed))
        .await;
    let status = scenario.wait_for_controller_exit().await;
    let log_tail = scenario.controller().log_tail();
    assert!(!status.success(), "{status:?}\n{log_tail}");
    assert!(
        scenario
            .controller()
            .log()
            .contains("the controller panicked"),
        "{log_tail}"
    );
    // Nothing runs the finalizers any more: finish releases them by hand.
    scenario.finish().await;
}

/// `text` without terminal colour codes (`ESC [ … m`).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The timestamp a text log line starts with.
fn line_time(line: &str) -> Option<k8s_openapi::jiff::Timestamp> {
    plain(line).split_whitespace().next()?.parse().ok()
}

/// The name of operator-controller's leader-election Lease in its system namespace.
const LEASE_NAME: &str = "9c4404e7.operatorframework.io";

/// Two replicas; the leader's Lease is taken over right after an upgrade starts. After the
/// moment the old leader notices, the API server's audit log shows no write of it (other than
/// its election's own Lease requests and the dry runs already in flight), and once a replica
/// leads again exactly one release is deployed.
#[tokio::test]
async fn a_replica_that_loses_its_lease_mid_upgrade_writes_nothing_more() {
    let user_a = unique_name("replica-a");
    let user_b = unique_name("replica-b");
    let mut scenario = Scenario::builder()
        .controller_user(&user_a)
        .controller_arg("--leader-elect")
        .start()
        .await;
    let catalog = scenario
        .publish(Package::with_versions(&["1.0.0", "1.1.0"]))
        .await;
    scenario
        .eventually("replica a to lead", || async {
            plain(&scenario.controller().log())
                .contains("leading=true")
                .then_some(())
        })
        .await;
    scenario.start_replica(&user_b).await;

    let ns = scenario.namespace("lease").await;
    let ext = scenario
        .install(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;

    scenario.set_version(&ext, "1.1.0").await;
    let leases: Api<Lease> =
        Api::namespaced(scenario.client.clone(), &scenario.settings.system_namespace);
    // The elector renews every 2 s: read-modify-replace until no renewal came in between.
    olm_e2e::eventually::eventually("the Lease taken over", || async {
        let mut lease = leases.get(LEASE_NAME).await.ok()?;
        let spec = lease.spec.get_or_insert_default();
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            k8s_openapi::jiff::Timestamp::now(),
        );
        spec.holder_identity = Some("intruder".into());
        spec.lease_duration_seconds = Some(20);
        spec.acquire_time = Some(now.clone());
        spec.renew_time = Some(now);
        leases
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    let noticed = scenario
        .eventually("replica a to notice the loss", || async {
            plain(&scenario.controller().log())
                .lines()
                .find(|l| l.contains("leadership changed") && l.contains("leading=false"))
                .and_then(line_time)
        })
        .await;
    println!(
        "reconcile abandoned mid-way: {}",
        scenario
            .controller()
            .log()
            .contains("the reconcile in progress is abandoned")
    );
    // A while without a leader (the intruder holds the Lease), then hand it back: a replica
    // leads again and finishes the upgrade.
    tokio::time::sleep(Duration::from_secs(5)).await;
    olm_e2e::eventually::eventually("the Lease handed back", || async {
        let mut lease = leases.get(LEASE_NAME).await.ok()?;
        let spec = lease.spec.get_or_insert_default();
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        leases
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    let e = scenario
        .wait_until_installed(&ext, catalog.bundle("1.1.0"))
        .await;
    assert!(!message(&e, ConditionType::Installed).is_empty());
    let records = scenario.release_records(&ext).await;
    let statuses = records.statuses();
    assert_eq!(
        statuses.iter().filter(|s| *s == "deployed").count(),
        1,
        "{:?}",
        records.by_revision()
    );
    assert!(
        statuses.iter().all(|s| !s.starts_with("pending")),
        "{:?}",
        records.by_revision()
    );

    // Replica a may lead again after the hand-back; from then on its writes are a leader's.
    let regained = plain(&scenario.controller().log())
        .lines()
        .filter(|l| l.contains("leadership changed") && l.contains("leading=true"))
        .filter_map(line_time)
        .find(|t| *t > noticed);
    let audit =
        std::fs::read_to_string(scenario.env.control_plane.audit_log_path()).expect("audit log");
    let late: Vec<String> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|event| {
            event.pointer("/user/username").and_then(|u| u.as_str()) == Some(user_a.as_str())
                && event
                    .pointer("/objectRef/resource")
                    .and_then(|r| r.as_str())
                    != Some("leases")
                && event
                    .get("requestReceivedTimestamp")
                    .and_then(|t| t.as_str())
                    .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
                    .is_some_and(|t| t > noticed && regained.is_none_or(|r| t < r))
        })
        .map(|event| event.to_string())
        .collect();
    // The audit log has the time the API server received a request, not when it was sent: what
    // was in flight when the replica noticed may arrive just after. A dry run persists nothing,
    // and the dry runs of one attempt go out together (seen in CI on a loaded machine: four
    // dry-run patches received within 3 ms after the log line, each cut short by the replica,
    // "context canceled"). A replica that went on would write: every object's write follows
    // the dry runs, so at most the one write in flight may arrive late.
    let (late_dry_runs, late_writes): (Vec<&String>, Vec<&String>) =
        late.iter().partition(|event| event.contains("dryRun=All"));
    println!(
        "dry runs of the old leader received after it noticed: {}",
        late_dry_runs.len()
    );
    assert!(
        late_writes.len() <= 1,
        "writes of the old leader after it noticed (one in flight allowed):\n{}",
        late.join("\n")
    );
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}
