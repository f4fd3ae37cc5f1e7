//! The objects a stored release's `manifest` lists: what was applied, so what drift repair
//! watches and uninstall removes (upstream's `util.ManifestObjects`).
//!
//! Input: manifest text from a record, ours or upstream's. Output: the objects, in order. No IO.
//!
//! Like cli-runtime's stream builder (`YAMLOrJSONDecoder`, then `Flatten`):
//!
//! | manifest starts with | read as |
//! |---|---|
//! | `{` (current upstream and ours: one JSON object per line) | a stream of JSON values |
//! | anything else (older Helm records: `---\n# Source: …\n<yaml>`) | YAML documents separated by `---` lines, YAML 1.1 scalars as sigs.k8s.io/yaml reads them |
//!
//! Objects of a `…List` kind with `items` are replaced by their items; empty documents are
//! skipped; anything that is not an object is an error naming its position.

use serde_json::Value;

/// Why a manifest cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("error parsing release manifest: object {position}: {message}")]
    Parse { position: usize, message: String },
    #[error("error parsing release manifest: object {position} is not a JSON object")]
    NotAnObject { position: usize },
}

/// The objects of a release manifest, in order.
pub fn manifest_objects(manifest: &str) -> Result<Vec<Value>, ManifestError> {
    let mut out = Vec::new();
    if manifest.trim_start().starts_with('{') {
        for (i, value) in serde_json::Deserializer::from_str(manifest)
            .into_iter::<Value>()
            .enumerate()
        {
            let value = value.map_err(|e| ManifestError::Parse {
                position: i + 1,
                message: e.to_string(),
            })?;
            push_flattened(value, &mut out)?;
        }
        return Ok(out);
    }
    let mut splitter = olm_api::fbc::yaml::DocumentSplitter::new(manifest.as_bytes(), 1);
    let mut position = 0;
    loop {
        position += 1;
        let doc = splitter.next_document().map_err(|e| ManifestError::Parse {
            position,
            message: match e {
                olm_api::fbc::yaml::SplitError::Io(e) => e.to_string(),
                olm_api::fbc::yaml::SplitError::Syntax(e) => yaml_message(&e),
            },
        })?;
        let Some(doc) = doc else { break };
        let value =
            olm_api::fbc::yaml::document_to_value(&doc).map_err(|e| ManifestError::Parse {
                position,
                message: yaml_message(&e),
            })?;
        let Some(value) = value else { continue };
        let value: Value =
            serde_json::from_slice(&value.to_canonical()).map_err(|e| ManifestError::Parse {
                position,
                message: e.to_string(),
            })?;
        push_flattened(value, &mut out)?;
    }
    Ok(out)
}

fn yaml_message(e: &olm_api::fbc::yaml::YamlError) -> String {
    format!("line {} column {}: {}", e.line, e.column, e.message)
}

fn push_flattened(value: Value, out: &mut Vec<Value>) -> Result<(), ManifestError> {
    match value {
        Value::Object(mut map) => {
            let is_list = map
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.ends_with("List"))
                && map.get("items").is_some_and(Value::is_array);
            if is_list {
                if let Some(Value::Array(items)) = map.remove("items") {
                    for item in items {
                        push_flattened(item, out)?;
                    }
                }
            } else {
                out.push(Value::Object(map));
            }
            Ok(())
        }
        Value::Null => Ok(()),
        _ => Err(ManifestError::NotAnObject {
            position: out.len() + 1,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_yaml_documents_and_lists() {
        let json = "{\"kind\":\"A\",\"n\":1}\n{\"kind\":\"B\"}\n";
        let objs = manifest_objects(json).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0]["n"], 1);

        let yaml = "---\n# Source: x/templates/a.yaml\nkind: A\nmetadata:\n  name: on\n---\n# Source: b\n---\nkind: ConfigMapList\nitems:\n- kind: ConfigMap\n  data: {x: yes}\n";
        let objs = manifest_objects(yaml).unwrap();
        assert_eq!(objs.len(), 2);
        // YAML 1.1, as Go's sigs.k8s.io/yaml: `on`/`yes` are booleans.
        assert_eq!(objs[0]["metadata"]["name"], true);
        assert_eq!(objs[1]["kind"], "ConfigMap");
        assert_eq!(objs[1]["data"]["x"], true);

        assert!(matches!(
            manifest_objects("{\"a\":1}\n[1]"),
            Err(ManifestError::NotAnObject { position: 2 })
        ));
        assert!(matches!(
            manifest_objects("{\"a\":"),
            Err(ManifestError::Parse { position: 1, .. })
        ));
    }
}
