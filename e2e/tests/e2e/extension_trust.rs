//! What operator-controller publishes can be trusted (issue 23): a refused attempt records
//! nothing and touches nothing, a failure that repeats records once, `Available` always says
//! what the Deployments show, drift repair works without the registry, and a controller that
//! stops working stops the process. Same set-up as [`crate::extension_install`]: a controller,
//! a catalogd and a package per test.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use olm_api::v1::{ClusterExtension, ConditionType, find_condition};
use olm_e2e::operator_controller::{BundleSpec, OperatorController, Options, message};
use olm_e2e::registry::Registry;
use serde_json::json;

use crate::extension_install::{
    Fixture, chain, create_extension, delete_extension, extensions, release_secrets,
};
use crate::support::{create_namespace, create_namespace_named, delete_namespace, unique_name};

/// The status label of each release index Secret of `extension`, by version.
async fn release_statuses(oc: &OperatorController, extension: &str) -> Vec<(String, String)> {
    let mut records: Vec<(String, String)> = release_secrets(oc, extension)
        .await
        .iter()
        .map(|s| {
            let labels = s.metadata.labels.clone().unwrap_or_default();
            (
                labels.get("version").cloned().unwrap_or_default(),
                labels.get("status").cloned().unwrap_or_default(),
            )
        })
        .collect();
    records.sort();
    records
}

/// The extension's `Available` condition as (status, message), if any.
fn available(e: &ClusterExtension) -> Option<(String, String)> {
    let c = find_condition(&e.status.as_ref()?.conditions, ConditionType::Available)?;
    Some((c.status.as_str().to_owned(), c.message.clone()))
}

/// An object as the API server returns it, minus nothing: byte-identical means unchanged.
async fn snapshot_service_account(client: &kube::Client, ns: &str, name: &str) -> String {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    serde_json::to_string(&api.get(name).await.expect("the ServiceAccount")).expect("json")
}

/// A user's ServiceAccount of the bundle's name collides: the extension retries with upstream's
/// message, writes no release record, and never labels, annotates or owns the user's object,
/// which survives the extension's deletion.
#[tokio::test]
async fn a_colliding_service_account_records_nothing_and_is_left_byte_identical() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let api = extensions().await;
    let ns = create_namespace(&client, "collide-sa").await;
    let sa_name = format!("{}-sa", fixture.package);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    let users: ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": sa_name, "labels": {"team": "users"}, "annotations": {"note": "mine"}}
    }))
    .unwrap();
    accounts
        .create(&PostParams::default(), &users)
        .await
        .unwrap();
    let before = snapshot_service_account(&client, &ns, &sa_name).await;

    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    let expected = format!(
        "ServiceAccount '{sa_name}' already exists in namespace '{ns}' and cannot be managed by operator-controller"
    );
    oc.wait_progressing(&api, &name, "Retrying", |m| m.contains(&expected))
        .await;
    // Sixty seconds of retries: the refusal stays, nothing is recorded, nothing is touched.
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        let e = api.get(&name).await.unwrap();
        let progressing = message(&e, ConditionType::Progressing);
        assert!(progressing.contains(&expected), "{progressing}");
        assert_eq!(message(&e, ConditionType::Installed), "No bundle installed");
        assert_eq!(
            release_statuses(&oc, &name).await,
            vec![],
            "release records"
        );
        assert_eq!(
            snapshot_service_account(&client, &ns, &sa_name).await,
            before,
            "the user's ServiceAccount"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    assert!(
        oc.log().matches("reconcile failed").count() >= 3,
        "retried several times:\n{}",
        oc.log_tail()
    );
    delete_extension(&oc, &api, &name).await;
    assert_eq!(
        snapshot_service_account(&client, &ns, &sa_name).await,
        before,
        "the user's ServiceAccount after the extension's deletion"
    );
    delete_namespace(&client, &ns).await;
}

/// A missing install namespace records nothing while it is missing; once it exists the bundle
/// installs with exactly one record, deployed.
#[tokio::test]
async fn a_missing_namespace_records_nothing_then_the_install_records_once() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let api = extensions().await;
    let missing = unique_name("later");
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &missing, &fixture.package, &fixture.catalog, None)).await;
    oc.wait_progressing(&api, &name, "Retrying", |m| {
        m.contains(&format!("namespace \"{missing}\" does not exist"))
    })
    .await;
    oc.eventually("three failed attempts", || async {
        (oc.log().matches("reconcile failed").count() >= 3).then_some(())
    })
    .await;
    assert_eq!(release_statuses(&oc, &name).await, vec![]);

    let created = create_namespace_named(&client, &missing).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    assert_eq!(
        release_statuses(&oc, &name).await,
        vec![("1".to_owned(), "deployed".to_owned())]
    );
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &created).await;
}

/// A ValidatingAdmissionPolicy (and its binding) that refuses real writes of one ConfigMap name
/// and lets dry runs through: the failure comes only after other objects were written.
async fn refuse_real_writes_of(
    client: &kube::Client,
    configmap: &str,
) -> Vec<(ApiResource, String)> {
    let policy_name = unique_name("refuse-real-writes");
    let gvk = |kind: &str| {
        ApiResource::from_gvk(&GroupVersionKind::gvk(
            "admissionregistration.k8s.io",
            "v1",
            kind,
        ))
    };
    let policy = gvk("ValidatingAdmissionPolicy");
    let binding = gvk("ValidatingAdmissionPolicyBinding");
    let policies: Api<DynamicObject> = Api::all_with(client.clone(), &policy);
    let bindings: Api<DynamicObject> = Api::all_with(client.clone(), &binding);
    let body: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy_name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"],
            }]},
            "validations": [{
                "expression": format!("request.dryRun == true || object.metadata.name != '{configmap}'"),
                "message": "this ConfigMap is refused by the test's admission policy",
            }],
        },
    }))
    .unwrap();
    policies
        .create(&PostParams::default(), &body)
        .await
        .unwrap();
    let body: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name},
        "spec": {"policyName": policy_name, "validationActions": ["Deny"]},
    }))
    .unwrap();
    bindings
        .create(&PostParams::default(), &body)
        .await
        .unwrap();
    vec![(binding, policy_name.clone()), (policy, policy_name)]
}

/// An object the API server refuses only when it is really written (a dry run passes): the
/// first attempt records one `failed` release, the retries that fail the same way append
/// nothing, and once the refusal is lifted that record becomes the deployed one.
#[tokio::test]
async fn a_failure_after_writes_began_leaves_one_failed_record_across_retries() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let package = unique_name("pkg");
    let refused = unique_name("refused");
    let mut bundle = BundleSpec::new(&package, "1.0.0");
    bundle.manifests.push((
        "refused.yaml".into(),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {refused}\ndata:\n  a: b\n"),
    ));
    let fixture = Fixture::with_bundles(
        &env.registry,
        &package,
        std::slice::from_ref(&bundle),
        &chain(&package, &["1.0.0"]),
    )
    .await;
    let policy = refuse_real_writes_of(&client, &refused).await;
    // The API server enforces a new policy after a moment: wait until it refuses a real write
    // of that name (and lets its dry run through).
    let probe_ns = create_namespace(&client, "policy-probe").await;
    let probe: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &probe_ns);
    let configmap: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": refused}})).unwrap();
    olm_e2e::eventually::eventually("the admission policy to be enforced", || async {
        let refused_for_real = match probe.create(&PostParams::default(), &configmap).await {
            Ok(_) => {
                // Not enforced yet: remove it and look again.
                let _ = probe.delete(&refused, &DeleteParams::default()).await;
                false
            }
            Err(e) => e
                .to_string()
                .contains("refused by the test's admission policy"),
        };
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        let dry_run_passes = probe.create(&dry_run, &configmap).await.is_ok();
        (refused_for_real && dry_run_passes).then_some(())
    })
    .await;
    delete_namespace(&client, &probe_ns).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let api = extensions().await;
    let ns = create_namespace(&client, "refused").await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &package, &fixture.catalog, None)).await;
    oc.wait_progressing(&api, &name, "Retrying", |m| {
        m.contains("refused by the test's admission policy")
    })
    .await;
    // The ServiceAccount comes before ConfigMaps in the apply order: writes had begun.
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    assert!(
        accounts
            .get_opt(&format!("{package}-sa"))
            .await
            .unwrap()
            .is_some()
    );
    oc.eventually("five failed attempts", || async {
        (oc.log().matches("reconcile failed").count() >= 5).then_some(())
    })
    .await;
    assert_eq!(
        release_statuses(&oc, &name).await,
        vec![("1".to_owned(), "failed".to_owned())]
    );

    for (resource, object) in &policy {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
        api.delete(object, &DeleteParams::default()).await.unwrap();
    }
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    assert_eq!(
        release_statuses(&oc, &name).await,
        vec![("1".to_owned(), "deployed".to_owned())]
    );
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// The time between a Deployment's restore and the extension's `Available=True`, twenty times:
/// `Available` follows the Deployment (kwok makes it available) without any other trigger.
#[tokio::test]
async fn available_follows_a_deployment_deleted_and_restored_twenty_times() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let api = extensions().await;
    let ns = create_namespace(&client, "available").await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    oc.wait_condition(
        &api,
        &name,
        ConditionType::Available,
        "True",
        "ProbesSucceeded",
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment = format!("{}-controller", fixture.package);
    let mut slowest = Duration::ZERO;
    for round in 0..20 {
        let old = deployments.get(&deployment).await.unwrap().metadata.uid;
        deployments
            .delete(&deployment, &DeleteParams::default())
            .await
            .unwrap();
        let restored_at = oc
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
        oc.eventually(&format!("round {round}: Available=True"), || async {
            let e = api.get(&name).await.ok()?;
            (available(&e)?.0 == "True").then_some(())
        })
        .await;
        slowest = slowest.max(restored_at.elapsed());
    }
    println!("slowest Available=True after a restored Deployment became available: {slowest:?}");
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// With its registry stopped, a deleted Deployment is restored from the deployed release's
/// record; the pull's failure is reported and the extension stays Installed.
#[tokio::test]
async fn drift_is_repaired_from_the_record_while_the_registry_is_down() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let registry = Registry::start()
        .await
        .expect("a registry of the test's own");
    let fixture = Fixture::new(&registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&registry)).await;
    let api = extensions().await;
    let ns = create_namespace(&client, "offline").await;
    let name = unique_name("ext");
    create_extension(oc.extension(&name, &ns, &fixture.package, &fixture.catalog, None)).await;
    oc.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;
    registry.stop().await;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment = format!("{}-controller", fixture.package);
    let old = deployments.get(&deployment).await.unwrap().metadata.uid;
    deployments
        .delete(&deployment, &DeleteParams::default())
        .await
        .unwrap();
    oc.eventually("the Deployment restored without the registry", || async {
        let d = deployments.get_opt(&deployment).await.ok()??;
        (d.metadata.uid != old).then_some(())
    })
    .await;
    let e = api.get(&name).await.unwrap();
    assert_eq!(
        find_condition(
            &e.status.as_ref().unwrap().conditions,
            ConditionType::Installed
        )
        .map(|c| c.status.as_str().to_owned()),
        Some("True".to_owned())
    );
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// A reconcile that fails before it applies anything (resolution: a version no catalog has)
/// still writes today's `Available`: with the Deployment deleted it is never True.
#[tokio::test]
async fn an_early_failure_never_reports_a_deleted_deployment_available() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let oc = OperatorController::start(Options::new(&env.registry)).await;
    let api = extensions().await;
    let ns = create_namespace(&client, "early").await;
    let name = unique_name("ext");
    create_extension(oc.extension(
        &name,
        &ns,
        &fixture.package,
        &fixture.catalog,
        Some(">=1.0.0 <2.0.0"),
    ))
    .await;
    oc.wait_condition(
        &api,
        &name,
        ConditionType::Available,
        "True",
        "ProbesSucceeded",
    )
    .await;
    // A version no catalog has: every reconcile now fails at resolution, before any apply.
    crate::extension_install::patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": "9.9.9"}}}),
    )
    .await;
    oc.wait_progressing(&api, &name, "Retrying", |m| m.contains("\"9.9.9\""))
        .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment = format!("{}-controller", fixture.package);
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
                oc.log_tail()
            )
        },
        || async {
            let e = api.get(&name).await.ok()?;
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
        let e = api.get(&name).await.unwrap();
        assert_eq!(available(&e).map(|a| a.0), Some("False".to_owned()));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    delete_extension(&oc, &api, &name).await;
    delete_namespace(&client, &ns).await;
}

/// A controller task that panics (the test-only fault hook) ends the process with a non-zero
/// exit instead of leaving it Ready and idle.
#[tokio::test]
async fn a_panicking_controller_ends_the_process_with_a_failure() {
    let env = olm_e2e::shared().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0"]).await;
    let doomed = unique_name("ext");
    let mut options = Options::new(&env.registry);
    options.env.push((
        "OPERATOR_CONTROLLER_TEST_PANIC_ON_EXTENSION".to_owned(),
        doomed.clone(),
    ));
    let mut oc = OperatorController::start(options).await;
    let client = env.client().await;
    let ns = create_namespace(&client, "panic").await;
    create_extension(oc.extension(&doomed, &ns, &fixture.package, &fixture.catalog, None)).await;
    let mut status = None;
    for _ in 0..600 {
        status = oc.try_exit_status();
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let status = status.unwrap_or_else(|| panic!("still running:\n{}", oc.log_tail()));
    assert!(!status.success(), "{status:?}\n{}", oc.log_tail());
    assert!(
        oc.log().contains("the controller panicked"),
        "{}",
        oc.log_tail()
    );
    let api = extensions().await;
    let _ = api.delete(&doomed, &DeleteParams::default()).await;
    // Nothing runs the finalizers any more: release them by hand.
    let _ = api
        .patch(
            &doomed,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await;
    delete_namespace(&client, &ns).await;
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

/// Two replicas; the leader's Lease is taken over right after an upgrade starts. After the
/// moment the old leader notices, the API server's audit log shows no write of it (other than
/// its election's own Lease requests), and once a replica leads again exactly one release is
/// deployed.
#[tokio::test]
async fn a_replica_that_loses_its_lease_mid_upgrade_writes_nothing_more() {
    use k8s_openapi::api::coordination::v1::Lease;
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let fixture = Fixture::new(&env.registry, &["1.0.0", "1.1.0"]).await;
    let user_a = unique_name("replica-a");
    let user_b = unique_name("replica-b");
    let kubeconfig = |user: &str| {
        env.control_plane
            .write_user_kubeconfig(user, Some("system:masters"))
            .expect("a kubeconfig")
    };
    let mut options = Options::new(&env.registry);
    options.kubeconfig = Some(kubeconfig(&user_a));
    options.args = vec!["--leader-elect".into()];
    let (instance, system_namespace) = (options.instance.clone(), options.system_namespace.clone());
    let a = OperatorController::start(options).await;
    a.eventually("replica a to lead", || async {
        plain(&a.log()).contains("leading=true").then_some(())
    })
    .await;
    let mut options = Options::new(&env.registry);
    options.kubeconfig = Some(kubeconfig(&user_b));
    options.args = vec!["--leader-elect".into()];
    options.instance = instance;
    options.system_namespace = system_namespace.clone();
    let b = OperatorController::start(options).await;

    let api = extensions().await;
    let ns = create_namespace(&client, "lease").await;
    let name = unique_name("ext");
    create_extension(a.extension(
        &name,
        &ns,
        &fixture.package,
        &fixture.catalog,
        Some("1.0.0"),
    ))
    .await;
    a.wait_condition(&api, &name, ConditionType::Installed, "True", "Succeeded")
        .await;

    crate::extension_install::patch_spec(
        &api,
        &name,
        json!({"source": {"catalog": {"version": "1.1.0"}}}),
    )
    .await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &system_namespace);
    let lease_name = "9c4404e7.operatorframework.io";
    // The elector renews every 2 s: read-modify-replace until no renewal came in between.
    olm_e2e::eventually::eventually("the Lease taken over", || async {
        let mut lease = leases.get(lease_name).await.ok()?;
        let spec = lease.spec.get_or_insert_default();
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            k8s_openapi::jiff::Timestamp::now(),
        );
        spec.holder_identity = Some("intruder".into());
        spec.lease_duration_seconds = Some(20);
        spec.acquire_time = Some(now.clone());
        spec.renew_time = Some(now);
        leases
            .replace(lease_name, &PostParams::default(), &lease)
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    let noticed = a
        .eventually("replica a to notice the loss", || async {
            plain(&a.log())
                .lines()
                .find(|l| l.contains("leadership changed") && l.contains("leading=false"))
                .and_then(line_time)
        })
        .await;
    println!(
        "reconcile abandoned mid-way: {}",
        a.log().contains("the reconcile in progress is abandoned")
    );
    // A while without a leader (the intruder holds the Lease), then hand it back: a replica
    // leads again and finishes the upgrade.
    tokio::time::sleep(Duration::from_secs(5)).await;
    olm_e2e::eventually::eventually("the Lease handed back", || async {
        let mut lease = leases.get(lease_name).await.ok()?;
        let spec = lease.spec.get_or_insert_default();
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        leases
            .replace(lease_name, &PostParams::default(), &lease)
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    let e = b
        .eventually("the upgrade to finish", || async {
            let e = api.get(&name).await.ok()?;
            (olm_e2e::operator_controller::installed_bundle(&e)?.1 == "1.1.0").then_some(e)
        })
        .await;
    assert!(!message(&e, ConditionType::Installed).is_empty());
    let records = release_statuses(&a, &name).await;
    assert_eq!(
        records.iter().filter(|(_, s)| s == "deployed").count(),
        1,
        "{records:?}"
    );
    assert!(
        records.iter().all(|(_, s)| !s.starts_with("pending")),
        "{records:?}"
    );

    // Replica a may lead again after the hand-back; from then on its writes are a leader's.
    let regained = plain(&a.log())
        .lines()
        .filter(|l| l.contains("leadership changed") && l.contains("leading=true"))
        .filter_map(line_time)
        .find(|t| *t > noticed);
    let audit = std::fs::read_to_string(env.control_plane.audit_log_path()).expect("audit log");
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
    assert_eq!(
        late,
        Vec::<String>::new(),
        "writes of the old leader after it noticed"
    );
    delete_extension(&b, &api, &name).await;
    delete_namespace(&client, &ns).await;
}
