//! What an install or upgrade would change, from objects already read: the decisions of
//! `operator-controller preview` (the IO is `operator-controller`'s `cmd::preview`).
//!
//! Input: live objects, the objects a server-side dry run returns, rendered objects, role
//! rules, webhook configurations. Output: per-object changes with a unified diff, the RBAC
//! delta, the webhook delta, and the [`report::Report`] with its human rendering. Pure.
//!
//! - [`fields`]: which fields our field manager owns (`managedFields`), the projection of an
//!   object onto them, the fields other managers keep.
//! - [`diff`]: a unified diff of two texts.
//! - [`rbac`]: rules added and removed per ClusterRole/Role, and what widens permissions.
//! - [`webhooks`]: webhooks added, removed and changed per configuration.
//! - [`report`]: the report (`-o json`) and its human text.

pub mod diff;
pub mod fields;
pub mod rbac;
pub mod report;
pub mod webhooks;

use serde_json::Value;

use crate::render::yaml::to_yaml;

/// How one object of the rendered set would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// The apply would change nothing our field manager owns.
    Unchanged,
    /// `diff`: the unified diff of our fields, live → after the apply; `kept`: fields other
    /// managers own, which the apply leaves as they are (manager, paths).
    Update {
        diff: String,
        kept: Vec<(String, Vec<String>)>,
    },
}

/// Compares the live object with the server-side dry run of its apply, on the fields our
/// field manager owns before or after (so fields it stops setting show as removed); other
/// managers' fields, defaults the API server fills in elsewhere, `status` and bookkeeping
/// metadata are not compared.
pub fn compare(live: &Value, dry_run: &Value) -> Comparison {
    let mut trie = fields::ours(live);
    fields::union(&mut trie, &fields::ours(dry_run));
    strip_bookkeeping(&mut trie);
    let before = fields::project(live, &trie).unwrap_or(Value::Null);
    let after = fields::project(dry_run, &trie).unwrap_or(Value::Null);
    if before == after {
        return Comparison::Unchanged;
    }
    let diff = diff::unified(&to_yaml(&before), &to_yaml(&after), "live", "after apply");
    Comparison::Update {
        diff,
        kept: fields::others(dry_run, &trie),
    }
}

/// Fields that change with every write, whoever owns them.
fn strip_bookkeeping(trie: &mut fields::Trie) {
    trie.remove("f:status");
    if let Some(Value::Object(metadata)) = trie.get_mut("f:metadata") {
        for field in ["f:managedFields", "f:resourceVersion", "f:generation"] {
            metadata.remove(field);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(image: &str, replicas: i64, fields: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "resourceVersion": "7", "managedFields": fields},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "manager", "image": image, "terminationMessagePath": "/dev/termination-log"}
            ]}}}
        })
    }

    fn ours() -> Value {
        json!([{"manager": "operator-controller", "operation": "Apply", "fieldsV1": {
            "f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"manager\"}": {".": {}, "f:name": {}, "f:image": {}}
            }}}}
        }}, {"manager": "hpa", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}}])
    }

    #[test]
    fn an_image_change_is_an_update_with_a_diff_and_other_managers_fields_kept() {
        let live = deployment("m:v1", 3, ours());
        let after = deployment("m:v2", 3, ours());
        match compare(&live, &after) {
            Comparison::Update { diff, kept } => {
                assert!(
                    diff.contains("-      - image: m:v1\n+      - image: m:v2\n"),
                    "{diff}"
                );
                assert!(!diff.contains("terminationMessagePath"), "{diff}");
                assert_eq!(
                    kept,
                    [("hpa".to_owned(), vec![".spec.replicas".to_owned()])]
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn changes_outside_our_fields_are_no_update() {
        let live = deployment("m:v1", 3, ours());
        let mut after = deployment("m:v1", 5, ours());
        after["metadata"]["resourceVersion"] = json!("8");
        assert_eq!(compare(&live, &after), Comparison::Unchanged);
    }

    #[test]
    fn a_field_we_stop_setting_shows_as_removed() {
        let with_label = json!([{"manager": "operator-controller", "operation": "Apply",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:x": {}}}}}]);
        let mut live = deployment("m:v1", 1, with_label);
        live["metadata"]["labels"] = json!({"x": "1"});
        let after = deployment("m:v1", 1, json!([]));
        match compare(&live, &after) {
            Comparison::Update { diff, .. } => assert!(diff.contains("-    x: \"1\""), "{diff}"),
            other => panic!("{other:?}"),
        }
    }
}
