//! Upstream's release manifests (`testdata/upstream-manifests/{standard,experimental}.yaml`,
//! upstream v1.11): their objects, and the command line of each Deployment's `manager`
//! container, for the tests that run our binaries exactly as those manifests would.
//!
//! Input: a manifest's file name. Output: its objects as JSON values; a Deployment's container.
//! Reads files only.

use serde_json::Value;

/// The manifests.
pub const MANIFESTS: [&str; 2] = ["standard.yaml", "experimental.yaml"];

/// Every object of the manifest `name`.
pub fn objects(name: &str) -> Vec<Value> {
    let path = olm_testdata::path(&format!("upstream-manifests/{name}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    docs.into_iter().filter(|d| d.is_object()).collect()
}

/// The Deployments of a manifest.
pub fn deployments(objects: &[Value]) -> Vec<&Value> {
    objects
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .collect()
}

/// The `manager` container of a Deployment.
pub fn manager(deployment: &Value) -> &Value {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "manager"))
        .unwrap_or_else(|| panic!("no manager container in {}", deployment["metadata"]["name"]))
}

/// The container's `command` then `args`, as the kubelet would exec them.
pub fn command_line(container: &Value) -> Vec<String> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut line = strings(&container["command"]);
    line.extend(strings(&container["args"]));
    line
}

/// Which of our binaries a command runs (`/operator-controller`, `./catalogd`).
pub fn binary_name(command_line: &[String]) -> &str {
    command_line
        .first()
        .map(|c| c.rsplit('/').next().unwrap_or(c))
        .unwrap_or("")
}
