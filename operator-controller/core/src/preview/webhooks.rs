//! Webhooks added, removed and changed within a ValidatingWebhookConfiguration or
//! MutatingWebhookConfiguration.
//!
//! Input: the live configuration (or none) and the configuration as it would be after the
//! apply (or none). Output: a [`WebhookDelta`], `None` when no webhook changes. Pure.
//! `clientConfig.caBundle` is not compared: the certificate provider injects it after
//! rendering, and a rotation is no change of the bundle.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// The webhook changes of one configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelta {
    pub kind: String,
    pub configuration: String,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

/// Whether `kind` is a webhook configuration [`webhook_delta`] compares.
pub fn is_webhook_configuration(api_version: &str, kind: &str) -> bool {
    api_version.starts_with("admissionregistration.k8s.io/")
        && (kind == "ValidatingWebhookConfiguration" || kind == "MutatingWebhookConfiguration")
}

fn webhooks(configuration: Option<&Value>) -> BTreeMap<String, Value> {
    configuration
        .and_then(|c| c.get("webhooks"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|w| {
            let mut w = w.clone();
            if let Some(config) = w.get_mut("clientConfig").and_then(Value::as_object_mut) {
                config.remove("caBundle");
            }
            let name = w
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            (name, w)
        })
        .collect()
}

/// The delta between `old` and `new`; `None` when every webhook stays as it is.
pub fn webhook_delta(old: Option<&Value>, new: Option<&Value>) -> Option<WebhookDelta> {
    let any = new.or(old)?;
    let (before, after) = (webhooks(old), webhooks(new));
    let added: Vec<String> = after
        .keys()
        .filter(|k| !before.contains_key(*k))
        .cloned()
        .collect();
    let removed: Vec<String> = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .cloned()
        .collect();
    let changed: Vec<String> = after
        .iter()
        .filter(|(k, v)| before.get(*k).is_some_and(|b| b != *v))
        .map(|(k, _)| k.clone())
        .collect();
    if added.is_empty() && removed.is_empty() && changed.is_empty() {
        return None;
    }
    let text = |p: &str| {
        any.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Some(WebhookDelta {
        kind: text("/kind"),
        configuration: text("/metadata/name"),
        added,
        removed,
        changed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(hooks: Value) -> Value {
        json!({"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "c"}, "webhooks": hooks})
    }

    #[test]
    fn added_removed_and_changed_webhooks_are_named() {
        let old = config(json!([
            {"name": "a", "clientConfig": {"caBundle": "X"}, "timeoutSeconds": 10},
            {"name": "b"},
            {"name": "c", "failurePolicy": "Fail"}
        ]));
        let new = config(json!([
            {"name": "a", "clientConfig": {"caBundle": "Y"}, "timeoutSeconds": 10},
            {"name": "c", "failurePolicy": "Ignore"},
            {"name": "d"}
        ]));
        let d = webhook_delta(Some(&old), Some(&new)).unwrap();
        assert_eq!(d.added, ["d"]);
        assert_eq!(d.removed, ["b"]);
        assert_eq!(d.changed, ["c"]);
        assert_eq!(d.configuration, "c");
    }

    #[test]
    fn a_ca_bundle_rotation_is_no_change() {
        let old = config(json!([{"name": "a", "clientConfig": {"caBundle": "X"}}]));
        let new = config(json!([{"name": "a", "clientConfig": {"caBundle": "Y"}}]));
        assert_eq!(webhook_delta(Some(&old), Some(&new)), None);
    }

    #[test]
    fn a_new_configuration_adds_all_its_webhooks() {
        let new = config(json!([{"name": "a"}, {"name": "b"}]));
        assert_eq!(webhook_delta(None, Some(&new)).unwrap().added, ["a", "b"]);
        assert_eq!(webhook_delta(Some(&new), None).unwrap().removed, ["a", "b"]);
    }
}
