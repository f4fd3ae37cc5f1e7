//! Our CRDs are upstream's CRDs: `config/crd/` compared, schema node by schema node, with the
//! `ClusterCatalog` and `ClusterExtension` CRDs of upstream v1.11's release manifests
//! (`testdata/upstream-manifests/`, from upstream commit `df2c201d`).
//!
//! Every node is compared (types, enums, defaults, formats, minimum/maximum, lengths, patterns,
//! `x-kubernetes-validations` rules and messages, list and map markers, printer columns,
//! subresources, scope, names) except where this file lists a difference as ours, on purpose:
//!
//! | difference | why |
//! |---|---|
//! | `description` texts | written by this project in its own words (same meaning); every node upstream describes is described here too |
//! | `ClusterExtension` `spec.config` | upstream's experimental field (in `experimental.yaml`, behind its `SingleOwnNamespaceInstallSupport`/`DeploymentConfig` gates), on by default here; compared with `experimental.yaml`'s node for node |
//! | `ClusterExtension` `status.availableUpdates` and the `Latest` printer column (priority 1: `kubectl get -o wide` only) | ours (issue 25): newer bundles held back by the spec or the graph; the first five printer columns stay upstream's, in order |
//! | `ClusterExtension` `spec.install.approval`, `spec.install.rollback`, `status.pendingApproval`, and the `spec.install` rule `at least one of [preflight, approval, rollback] are required when install is specified` (upstream's `[preflight]`, `has(self.preflight)`) | ours (issue 26): per-extension upgrade approval and guarded rollback; `install: {approval: …}` or `install: {rollback: …}` alone must be admitted, so the rule names every field; every other rule and message is upstream's |
//!
//! Anything else that differs fails the test, naming the path.

use serde_json::Value;

fn load(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text)
        .expect("YAML documents")
        .into_iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .collect()
}

fn by_name<'a>(crds: &'a [Value], name: &str) -> &'a Value {
    crds.iter()
        .find(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no CRD {name}"))
}

fn upstream(file: &str) -> Vec<Value> {
    let path = olm_testdata::path(&format!("upstream-manifests/{file}"));
    load(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn ours() -> Vec<Value> {
    // The run-time CARGO_MANIFEST_DIR first: a cache-shared target directory may hold this test
    // compiled from a checkout at another path, which no longer exists.
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let dir = crate_dir.join("../config/crd");
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("config/crd") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            crds.extend(load(&std::fs::read_to_string(&path).expect("a CRD file")));
        }
    }
    crds
}

/// Every difference between `a` (ours) and `b` (upstream) under `path`, as
/// `(path, what)`. `description` values are compared only for presence.
fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let here = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(_), None) => out.push((here, "only ours".into())),
                    (None, Some(_)) => out.push((here, "only upstream's".into())),
                    (Some(p), Some(q)) if k == "description" => {
                        if p.as_str().is_none_or(str::is_empty)
                            && !q.as_str().is_none_or(str::is_empty)
                        {
                            out.push((here, "upstream describes it, ours does not".into()));
                        }
                    }
                    (Some(p), Some(q)) => differences(p, q, &here, out),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push((
                    path.to_owned(),
                    format!("{} items here, {} upstream", x.len(), y.len()),
                ));
            }
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, &format!("{path}[{i}]"), out);
            }
        }
        // Numbers compare by value: the API server stores schema bounds as float64, so our
        // `2147483647.0` and upstream's `2147483647` are the same stored CRD.
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => {}
        _ if a != b => out.push((path.to_owned(), format!("{a} here, {b} upstream"))),
        _ => {}
    }
}

const CONFIG: &str = "/spec/versions[0]/schema/openAPIV3Schema/properties/spec/properties/config";
const AVAILABLE_UPDATES: &str =
    "/spec/versions[0]/schema/openAPIV3Schema/properties/status/properties/availableUpdates";
const PRINTER_COLUMNS: &str = "/spec/versions[0]/additionalPrinterColumns";
const APPROVAL: &str = "/spec/versions[0]/schema/openAPIV3Schema/properties/spec/properties/install/properties/approval";
const ROLLBACK: &str = "/spec/versions[0]/schema/openAPIV3Schema/properties/spec/properties/install/properties/rollback";
const PENDING_APPROVAL: &str =
    "/spec/versions[0]/schema/openAPIV3Schema/properties/status/properties/pendingApproval";
const INSTALL_RULE: &str = "/spec/versions[0]/schema/openAPIV3Schema/properties/spec/properties/install/x-kubernetes-validations[0]";

#[test]
fn our_crds_are_upstreams_standard_crds_plus_the_documented_differences() {
    let ours = ours();
    let standard = upstream("standard.yaml");
    let experimental = upstream("experimental.yaml");
    assert_eq!(standard.len(), 2, "upstream's standard CRDs");
    let mut unexpected = Vec::new();
    let mut compared = 0;
    for name in [
        "clustercatalogs.olm.operatorframework.io",
        "clusterextensions.olm.operatorframework.io",
    ] {
        let mut found = Vec::new();
        differences(
            by_name(&ours, name),
            by_name(&standard, name),
            "",
            &mut found,
        );
        for (path, what) in found {
            // Metadata (labels, annotations) of the CRD objects themselves are packaging.
            if path.starts_with("/metadata/") {
                continue;
            }
            if name.starts_with("clusterextensions")
                && (path == CONFIG || path == AVAILABLE_UPDATES)
                && what == "only ours"
            {
                continue;
            }
            if name.starts_with("clusterextensions")
                && (path == APPROVAL || path == ROLLBACK || path == PENDING_APPROVAL)
                && what == "only ours"
            {
                continue;
            }
            // Upstream's rule on `spec.install`, widened to the approval and rollback fields.
            if name.starts_with("clusterextensions") && path == format!("{INSTALL_RULE}/message") {
                assert_eq!(
                    what,
                    "\"at least one of [preflight, approval, rollback] are required when install is specified\" here, \"at least one of [preflight] are required when install is specified\" upstream"
                );
                continue;
            }
            if name.starts_with("clusterextensions") && path == format!("{INSTALL_RULE}/rule") {
                assert_eq!(
                    what,
                    "\"has(self.preflight) || has(self.approval) || has(self.rollback)\" here, \"has(self.preflight)\" upstream"
                );
                continue;
            }
            // One column more than upstream's, at the end (the first five are compared item by
            // item and must be equal).
            if name.starts_with("clusterextensions")
                && path == PRINTER_COLUMNS
                && what == "6 items here, 5 upstream"
            {
                let ours = by_name(&ours, name)
                    .pointer("/spec/versions/0/additionalPrinterColumns/5")
                    .expect("the sixth column");
                assert_eq!(ours["name"], "Latest");
                assert_eq!(ours["jsonPath"], ".status.availableUpdates[0].version");
                continue;
            }
            unexpected.push(format!("{name}{path}: {what}"));
        }
        compared += 1;
    }
    assert_eq!(compared, 2);
    assert!(
        unexpected.is_empty(),
        "differences from upstream's CRDs that are not documented as ours:\n{}",
        unexpected.join("\n")
    );

    // `spec.config` is upstream's experimental node, node for node.
    let pointer = CONFIG.replace("[0]", "/0");
    let name = "clusterextensions.olm.operatorframework.io";
    let mine = by_name(&ours, name)
        .pointer(&pointer)
        .expect("our spec.config");
    let theirs = by_name(&experimental, name)
        .pointer(&pointer)
        .expect("upstream's experimental spec.config");
    let mut found = Vec::new();
    differences(mine, theirs, "spec.config", &mut found);
    assert!(
        found.is_empty(),
        "spec.config differs from upstream's experimental CRD:\n{found:#?}"
    );
}
