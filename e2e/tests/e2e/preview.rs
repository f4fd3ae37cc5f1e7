//! `operator-controller preview` against extensions on the test control plane: an upgrade's
//! Deployment diff and RBAC widening, a CRD upgrade upstream's safety check refuses, a new
//! extension from a file; and the audit log shows that the preview process (its own
//! client-certificate user) sent no mutating request other than dry runs.

use std::path::Path;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use olm_e2e::assets::Assets;
use olm_e2e::operator_controller::{BundleSpec, widget_schema};
use olm_e2e::scenario::{ExtensionSpec, Package, Scenario};
use olm_e2e::test_env::unique_name;
use serde_json::{Value, json};

/// The result of one preview run.
pub(crate) struct Run {
    pub(crate) status: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `operator-controller preview ARGS` as `user` (a cluster admin of its own name, so the
/// audit log tells its requests apart).
pub(crate) async fn preview(scenario: &Scenario, user: &str, args: &[&str]) -> Run {
    let bin = Assets::products()
        .and_then(|a| a.binary("operator-controller"))
        .unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = scenario
        .env
        .control_plane
        .write_user_kubeconfig(user, Some("system:masters"))
        .unwrap_or_else(|e| panic!("a kubeconfig for {user}: {e}"));
    let mut command = std::process::Command::new(bin);
    command
        .arg("preview")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--system-namespace", &scenario.settings.system_namespace])
        .args(["--insecure-registries", &scenario.registry().host()])
        // Other tests' catalogs are listed too; one that stalls must not hold this up.
        .args(["--catalogd-read-idle-timeout", "5s"])
        .env("NO_COLOR", "1");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    Run {
        status: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub(crate) fn json_of(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}\nstdout: {}\nstderr: {}", run.stdout, run.stderr))
}

/// The audit events of `user`: (verb, requestURI).
fn audited(scenario: &Scenario, user: &str) -> Vec<(String, String)> {
    let audit = std::fs::read_to_string(scenario.env.control_plane.audit_log_path())
        .expect("the audit log");
    audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e.pointer("/user/username").and_then(Value::as_str) == Some(user))
        .map(|e| {
            let field = |p: &str| {
                e.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            (field("/verb"), field("/requestURI"))
        })
        .collect()
}

/// Every mutating request of `user` was a dry run; returns how many dry runs there were.
fn only_dry_runs(scenario: &Scenario, user: &str) -> usize {
    let events = audited(scenario, user);
    let writes: Vec<&(String, String)> = events
        .iter()
        .filter(|(verb, _)| {
            ["create", "update", "patch", "delete", "deletecollection"].contains(&verb.as_str())
        })
        .collect();
    let real: Vec<&&(String, String)> = writes
        .iter()
        .filter(|(_, uri)| !uri.contains("dryRun=All"))
        .collect();
    assert_eq!(
        real,
        Vec::<&&(String, String)>::new(),
        "writes of the preview"
    );
    writes.len()
}

/// The CSV install strategy of `bundle` with the manager image `image` and cluster rules
/// `rules` (the scenario's default Deployment otherwise).
pub(crate) fn install_strategy(bundle: &BundleSpec, image: &str, rules: Value) -> Value {
    let app = format!("{}-op", bundle.package);
    let sa = format!("{}-sa", bundle.package);
    json!({"strategy": "deployment", "spec": {
        "clusterPermissions": [{"serviceAccountName": sa, "rules": rules}],
        "deployments": [{
            "name": bundle.deployment_name(),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": app}},
                "template": {
                    "metadata": {"labels": {"app": app}},
                    "spec": {
                        "serviceAccountName": sa,
                        "containers": [{"name": "manager", "image": image}],
                    },
                },
            },
        }],
    }})
}

fn object<'a>(v: &'a Value, kind: &str) -> Vec<&'a Value> {
    v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == kind)
        .collect()
}

#[tokio::test]
async fn preview_of_an_upgrade_shows_the_image_diff_and_the_widening_rule_and_writes_nothing() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(Package::new("pkg").bundle("1.0.0").bundle_with("1.1.0", |b| {
            let strategy = install_strategy(
                b,
                "example.invalid/e2e/manager:v2",
                json!([
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "update"]},
                    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}
                ]),
            );
            b.csv_spec.insert("install".into(), strategy);
        }))
        .await;
    let ns = scenario.namespace("preview").await;
    let ext = scenario
        .install(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;
    let user = unique_name("previewer");
    // Someone else annotates the Deployment: the apply keeps that field.
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), &ns);
    deployments
        .patch(
            &catalog.deployment_name(),
            &PatchParams {
                field_manager: Some("e2e-editor".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"metadata": {"annotations": {"team": "blue"}}})),
        )
        .await
        .unwrap();

    let run = preview(
        &scenario,
        &user,
        &["--extension", &ext.name, "--version", "1.1.0", "-o", "json"],
    )
    .await;
    assert_eq!(
        run.status, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    let v = json_of(&run);
    assert_eq!(v["action"], "upgrade", "{v}");
    assert_eq!(v["wouldApply"], true);
    assert_eq!(v["installed"]["version"], "1.0.0");
    assert_eq!(v["target"]["name"], catalog.bundle("1.1.0").0);
    let deployments = object(&v, "Deployment");
    assert_eq!(deployments.len(), 1, "{v}");
    assert_eq!(deployments[0]["change"], "update", "{v}");
    let diff = deployments[0]["diff"].as_str().unwrap();
    assert!(
        diff.lines()
            .any(|l| l.starts_with('-') && l.ends_with("image: example.invalid/e2e/manager:v1")),
        "{diff}"
    );
    assert!(
        diff.lines()
            .any(|l| l.starts_with('+') && l.ends_with("image: example.invalid/e2e/manager:v2")),
        "{diff}"
    );
    assert_eq!(
        deployments[0]["keptFields"],
        json!([{"manager": "e2e-editor", "fields": [".metadata.annotations.team"]}]),
        "{v}"
    );
    // The ConfigMap and CRD of the bundle: the ConfigMap's data names the version.
    assert_eq!(object(&v, "ConfigMap")[0]["change"], "update", "{v}");
    assert_eq!(
        object(&v, "CustomResourceDefinition")[0]["change"],
        "unchanged",
        "{v}"
    );
    // Generated ClusterRole names carry the bundle version: the upgrade creates one and
    // deletes the other, bound to the same ServiceAccount; the delta is one entry, relative to
    // the role it replaces.
    let clusterroles = object(&v, "ClusterRole");
    assert_eq!(clusterroles.len(), 2, "{v}");
    let new_role = clusterroles
        .iter()
        .find(|o| o["change"] == "create")
        .unwrap();
    let old_role = clusterroles
        .iter()
        .find(|o| o["change"] == "delete")
        .unwrap();
    let roles = v["rbac"].as_array().unwrap();
    assert_eq!(roles.len(), 1, "{v}");
    let created = &roles[0];
    assert_eq!(created["kind"], "ClusterRole");
    assert_eq!(created["name"], new_role["name"]);
    assert_eq!(created["replaces"], old_role["name"]);
    assert_eq!(
        created["removed"],
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}])
    );
    assert_eq!(
        created["added"],
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "update"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}
        ])
    );
    let widening: Vec<(String, String)> = created["widening"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["kind"].as_str().unwrap().to_owned(),
                w["what"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        widening,
        [
            ("NewResource".to_owned(), "get apps/deployments".to_owned()),
            ("NewVerb".to_owned(), "update configmaps".to_owned()),
        ]
    );
    assert_eq!(v["crds"][0]["verdict"], "safe", "{v}");

    // The human report says the same.
    let human = preview(
        &scenario,
        &user,
        &["--extension", &ext.name, "--version", "1.1.0"],
    )
    .await;
    assert_eq!(human.status, 0, "{}", human.stderr);
    println!("{}", human.stdout);
    assert!(
        human.stdout.contains("widens permissions"),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("(upgrade)"), "{}", human.stdout);

    // Without the override nothing changes, and the report says why 1.1.0 is not chosen.
    let run = preview(&scenario, &user, &["--extension", &ext.name, "-o", "json"]).await;
    assert_eq!(
        run.status, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    let v = json_of(&run);
    assert_eq!(v["action"], "unchanged", "{v}");
    assert_eq!(v["target"]["name"], catalog.bundle("1.0.0").0);
    let newer = v["newerNotChosen"].as_array().unwrap();
    assert_eq!(newer.len(), 1, "{v}");
    assert_eq!(newer[0]["name"], catalog.bundle("1.1.0").0);
    assert!(
        newer[0]["reasons"][0].as_str().unwrap().contains("1.0.0"),
        "{v}"
    );
    assert!(
        v["objects"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["change"] == "unchanged"),
        "{v}"
    );
    let human = preview(&scenario, &user, &["--extension", &ext.name]).await;
    println!("{}", human.stdout);

    // Nothing was written: the extension stays on 1.0.0 and the preview sent dry runs only.
    assert_eq!(
        scenario.installed(&ext).await,
        Some(catalog.bundle("1.0.0"))
    );
    assert!(only_dry_runs(&scenario, &user) > 0);
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}

#[tokio::test]
async fn preview_of_an_upgrade_removing_a_crd_field_shows_upstreams_refusal() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(
            Package::new("pkg")
                .bundle("1.0.0")
                .bundle("1.0.1")
                .crd_schema(widget_schema(false)),
        )
        .await;
    let package = catalog.package().to_owned();
    let ns = scenario.namespace("preview-crd").await;
    let ext = scenario
        .install(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;
    let user = unique_name("previewer");
    let run = preview(
        &scenario,
        &user,
        &["--extension", &ext.name, "--version", "1.0.1", "-o", "json"],
    )
    .await;
    assert_eq!(
        run.status, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    let v = json_of(&run);
    let refusal = format!(
        "error for resolved bundle \"{package}.v1.0.1\" with version \"1.0.1\": 1 CRD, 2 violations\nvalidating upgrade for CRD \"widgets.{package}.e2e.olm.test\": existingFieldRemoval: removed field : v1.^.spec.color\nv1: ^.spec.color: type: type changed : \"string\" -> \"\""
    );
    assert_eq!(v["wouldApply"], false);
    assert_eq!(v["message"], refusal.as_str());
    assert_eq!(v["crds"][0]["verdict"], "unsafe", "{v}");
    assert!(
        v["crds"][0]["upstream"]
            .as_str()
            .unwrap()
            .contains("existingFieldRemoval"),
        "{v}"
    );
    let human = preview(
        &scenario,
        &user,
        &["--extension", &ext.name, "--version", "1.0.1"],
    )
    .await;
    assert_eq!(human.status, 1, "{}", human.stderr);
    println!("{}", human.stdout);
    assert!(
        human.stdout.contains("would refuse this change"),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains(&refusal.replace('\n', "\n  ")),
        "{}",
        human.stdout
    );

    // Data-aware, as the controller with --crd-upgrade-safety-data-aware: no stored Widget
    // sets the removed field, so the upgrade goes through with a warning.
    let run = preview(
        &scenario,
        &user,
        &[
            "--extension",
            &ext.name,
            "--version",
            "1.0.1",
            "--crd-upgrade-safety-data-aware",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(
        run.status, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    let v = json_of(&run);
    assert_eq!(v["wouldApply"], true, "{v}");
    assert_eq!(v["crds"][0]["verdict"], "allowed", "{v}");
    assert_eq!(v["dataAware"].as_array().unwrap().len(), 1, "{v}");
    let human = preview(
        &scenario,
        &user,
        &[
            "--extension",
            &ext.name,
            "--version",
            "1.0.1",
            "--crd-upgrade-safety-data-aware",
        ],
    )
    .await;
    assert_eq!(human.status, 0, "{}", human.stderr);
    println!("{}", human.stdout);

    assert_eq!(
        scenario.installed(&ext).await,
        Some(catalog.bundle("1.0.0"))
    );
    only_dry_runs(&scenario, &user);
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}

#[tokio::test]
async fn preview_of_a_new_extension_from_a_file_creates_every_object() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario.publish(Package::with_versions(&["1.0.0"])).await;
    let ns = scenario.namespace("preview-new").await;
    let name = unique_name("ext");
    let body = ExtensionSpec::new(&catalog, &ns).body(&scenario.settings.instance, &name);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("extension.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let user = unique_name("previewer");
    let run = preview(&scenario, &user, &["-f", path(&file), "-o", "json"]).await;
    assert_eq!(
        run.status, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    let v = json_of(&run);
    assert_eq!(v["action"], "install", "{v}");
    assert_eq!(v["installed"], Value::Null);
    assert_eq!(v["target"]["name"], catalog.bundle("1.0.0").0);
    let objects = v["objects"].as_array().unwrap();
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "CustomResourceDefinition",
        "ConfigMap",
        "Deployment",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    assert!(
        objects.iter().all(|o| o["change"] == "create"),
        "{}",
        serde_json::to_string_pretty(objects).unwrap()
    );
    let human = preview(&scenario, &user, &["-f", path(&file)]).await;
    assert_eq!(human.status, 0, "{}", human.stderr);
    println!("{}", human.stdout);
    // Nothing was created.
    assert!(scenario.extensions.get_opt(&name).await.unwrap().is_none());
    only_dry_runs(&scenario, &user);
    scenario.finish().await;
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A bundle that no longer ships its CRD while custom resources of it exist: the preview says
/// the CRD would be kept, as the controller's prune keeps it.
#[tokio::test]
async fn preview_of_an_upgrade_dropping_a_crd_with_custom_resources_keeps_it() {
    let mut scenario = Scenario::start().await;
    let catalog = scenario
        .publish(
            Package::new("pkg")
                .bundle("1.0.0")
                .bundle_with("1.1.0", |b| {
                    b.manifests.retain(|(f, _)| f != "crd.json");
                    b.csv_spec
                        .insert("customresourcedefinitions".into(), json!({"owned": []}));
                }),
        )
        .await;
    let package = catalog.package().to_owned();
    let ns = scenario.namespace("preview-kept").await;
    let ext = scenario
        .install(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;
    let group = format!("{package}.e2e.olm.test");
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        scenario.client.clone(),
        &ns,
        &ApiResource {
            group: group.clone(),
            version: "v1".into(),
            api_version: format!("{group}/v1"),
            kind: "Widget".into(),
            plural: "widgets".into(),
        },
    );
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1},
    }))
    .unwrap();
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    let user = unique_name("previewer");
    let run = preview(
        &scenario,
        &user,
        &["--extension", &ext.name, "--version", "1.1.0", "-o", "json"],
    )
    .await;
    assert_eq!(
        run.status, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    let v = json_of(&run);
    let crd = format!("widgets.{group}");
    assert_eq!(v["crdsKeptForCustomResources"], json!([crd]), "{v}");
    let crds = object(&v, "CustomResourceDefinition");
    assert_eq!(crds.len(), 1, "{v}");
    assert_eq!(crds[0]["change"], "kept", "{v}");
    // The renamed ClusterRole grants the same: no RBAC change.
    assert_eq!(v["rbac"], json!([]), "{v}");
    assert!(
        crds[0]["reason"]
            .as_str()
            .unwrap()
            .contains("custom resources of it still exist"),
        "{v}"
    );
    let human = preview(
        &scenario,
        &user,
        &["--extension", &ext.name, "--version", "1.1.0"],
    )
    .await;
    println!("{}", human.stdout);
    assert!(
        human
            .stdout
            .contains("no longer rendered, kept because custom resources of it exist"),
        "{}",
        human.stdout
    );
    only_dry_runs(&scenario, &user);
    scenario.delete_extension(&ext).await;
    scenario.finish().await;
}
