//! `operator-controller explain --extension NAME` against an extension installed on the test
//! control plane: it reads the ClusterExtension, its release record and the ClusterCatalogs as
//! the controller does, and its prediction (chosen bundle, upgrade path) is what the controller
//! then does.

use std::time::Duration;

use olm_e2e::assets::Assets;
use olm_e2e::scenario::{DESIRED_STATE, ExtensionSpec, Package, Scenario};
use serde_json::{Value, json};

/// Runs `explain --extension NAME -o json` with the scenario's kubeconfig and system namespace;
/// returns the exit status and the JSON object.
async fn explain(scenario: &Scenario, extension: &str) -> (i32, Value) {
    explain_with(scenario, extension, &[]).await
}

/// [`explain`] with further flags (what-if overrides of the spec).
async fn explain_with(scenario: &Scenario, extension: &str, extra: &[&str]) -> (i32, Value) {
    let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    let bin = Assets::products()
        .and_then(|a| a.binary("operator-controller"))
        .unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = scenario.env.kubeconfig_path().to_path_buf();
    let namespace = scenario.settings.system_namespace.clone();
    let extension = extension.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(bin)
            .args(["explain", "--extension", &extension, "-o", "json"])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--system-namespace", &namespace])
            // Other tests' catalogs are listed too; one that stalls must not hold this up.
            .args(["--catalogd-read-idle-timeout", "5s"])
            .args(&extra)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stdout.lines().count(),
        1,
        "stdout: {stdout}\nstderr: {stderr}"
    );
    (
        out.status.code().unwrap(),
        serde_json::from_str(&stdout).unwrap(),
    )
}

/// Reason codes per bundle name of the scenario's catalog.
fn codes(v: &Value, catalog: &str) -> Vec<(String, Vec<String>)> {
    v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["catalog"] == catalog)
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["reasons"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["code"].as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

#[tokio::test]
async fn explain_shows_the_installed_version_the_chosen_bundle_and_the_upgrade_path() {
    let mut scenario = Scenario::start().await;
    // 1.0.1 replaces 1.0.0, 1.2.0 replaces 1.0.1.
    let catalog = scenario
        .publish(Package::with_versions(&["1.0.0", "1.0.1", "1.2.0"]))
        .await;
    let ns = scenario.namespace("explain").await;
    let ext = scenario
        .install(ExtensionSpec::new(&catalog, &ns).version("1.0.0"))
        .await;
    let name = |v: &str| catalog.bundle(v).0;

    // Pinned: the installed bundle is chosen again; the others are outside the range.
    let (status, v) = explain(&scenario, &ext.name).await;
    assert_eq!(status, 0, "{v}");
    assert_eq!(v["package"], catalog.package());
    assert_eq!(
        v["installed"],
        json!({"name": name("1.0.0"), "version": "1.0.0"})
    );
    assert_eq!(
        v["chosen"],
        json!({"name": name("1.0.0"), "version": "1.0.0", "catalog": catalog.name})
    );
    assert_eq!(v["message"], "");
    assert_eq!(v["upgradePath"], json!([name("1.0.0")]));
    assert_eq!(
        codes(&v, &catalog.name),
        [
            (
                name("1.2.0"),
                vec!["OutsideVersionRange".to_owned(), "NotASuccessor".to_owned()]
            ),
            (name("1.0.1"), vec!["OutsideVersionRange".to_owned()]),
            (name("1.0.0"), vec![]),
        ]
    );

    // What if the pin were lifted? An override of the spec, written nowhere: the extension
    // stays pinned, the answer is the unpinned one.
    let (status, v) = explain_with(&scenario, &ext.name, &["--version", ">=1.0.0"]).await;
    assert_eq!(status, 0, "{v}");
    assert_eq!(
        v["chosen"],
        json!({"name": name("1.0.1"), "version": "1.0.1", "catalog": catalog.name})
    );
    assert_eq!(
        scenario
            .get(&ext)
            .await
            .spec
            .source
            .catalog
            .unwrap()
            .version
            .as_deref(),
        Some("1.0.0")
    );

    // With the controller stopped, lift the pin: explain says what the controller will do.
    scenario.stop_controller(Duration::from_secs(10));
    scenario
        .patch_spec(&ext, json!({"source": {"catalog": {"version": null}}}))
        .await;
    let (status, v) = explain(&scenario, &ext.name).await;
    assert_eq!(status, 0, "{v}");
    assert_eq!(
        v["installed"],
        json!({"name": name("1.0.0"), "version": "1.0.0"})
    );
    assert_eq!(
        v["chosen"],
        json!({"name": name("1.0.1"), "version": "1.0.1", "catalog": catalog.name})
    );
    assert_eq!(
        v["upgradePath"],
        json!([name("1.0.0"), name("1.0.1"), name("1.2.0")])
    );
    assert_eq!(
        codes(&v, &catalog.name),
        [
            (name("1.2.0"), vec!["NotASuccessor".to_owned()]),
            (name("1.0.1"), vec![]),
            (name("1.0.0"), vec!["SameVersionInstalled".to_owned()]),
        ]
    );
    let not_a_successor = v["candidates"][0]["reasons"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        not_a_successor.contains(&format!("the installed bundle \"{}\"", name("1.0.0"))),
        "{not_a_successor}"
    );

    // The controller does what explain said: the first step of the path.
    scenario.start_controller().await;
    scenario
        .wait_for(&ext, DESIRED_STATE.bundle(catalog.bundle("1.0.1")))
        .await;
    let (status, v) = explain(&scenario, &ext.name).await;
    assert_eq!(status, 0, "{v}");
    assert_eq!(v["chosen"]["name"], name("1.2.0"));
    assert_eq!(v["upgradePath"], json!([name("1.0.1"), name("1.2.0")]));
    scenario.finish().await;
}
