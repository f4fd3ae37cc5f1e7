//! Shared helpers of the render tests: bundle directories read into memory, golden directories
//! read back, and an object-set comparison that names the first difference.
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use olm_operator_core::bundle::{self, BundleFs, RegistryV1Bundle};
use olm_operator_core::render::{self, CertProvider, RenderOptions, Rendered};
use serde_json::Value;

/// `testdata/<relative>` (see olm-testdata).
pub fn testdata(relative: &str) -> PathBuf {
    olm_testdata::path(relative)
}

/// A bundle directory as the IO side hands it over (tests read it plainly).
pub fn load_bundle_dir(dir: &Path) -> BundleFs {
    let mut fs_ = BundleFs::new();
    for name in ["metadata/annotations.yaml", "metadata/properties.yaml"] {
        if let Ok(bytes) = fs::read(dir.join(name)) {
            fs_.insert_file(name, bytes);
        }
    }
    let manifests = dir.join("manifests");
    if manifests.is_dir() {
        fs_.insert_dir("manifests");
        for entry in fs::read_dir(&manifests).unwrap() {
            let entry = entry.unwrap();
            let name = format!("manifests/{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                fs_.insert_dir(name);
            } else {
                fs_.insert_file(name, fs::read(entry.path()).unwrap());
            }
        }
    }
    fs_
}

/// Parses a YAML file holding one configuration document (or `null`).
pub fn yaml_value(path: &Path) -> Value {
    yaml_text_value(&fs::read(path).unwrap())
}

/// Parses YAML text holding one document (or `null`).
pub fn yaml_text_value(bytes: &[u8]) -> Value {
    let mut splitter = olm_api::fbc::yaml::DocumentSplitter::new(bytes, 1);
    match splitter.next_document().unwrap() {
        None => Value::Null,
        Some(doc) => olm_api::fbc::yaml::document_to_value(&doc)
            .unwrap()
            .map(bundle::manifest::from_go)
            .unwrap_or(Value::Null),
    }
}

/// The objects of a golden directory, in file order.
pub fn golden_objects(dir: &Path) -> Vec<Value> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let bytes = fs::read(f).unwrap();
            let mut objects = bundle::manifest::parse_objects("golden", &bytes).unwrap();
            assert_eq!(objects.len(), 1, "{}", f.display());
            Value::Object(objects.remove(0))
        })
        .collect()
}

/// The expected error of a golden directory, if it holds one (the message without its final
/// newline).
pub fn golden_error(dir: &Path) -> Option<String> {
    let text = fs::read_to_string(dir.join("expected-error.txt")).ok()?;
    Some(text.strip_suffix('\n').unwrap_or(&text).to_owned())
}

fn key(v: &Value) -> (String, String, String) {
    (
        render::object_kind(v).to_owned(),
        render::object_namespace(v).to_owned(),
        render::object_name(v).to_owned(),
    )
}

/// Compares two object sets: the same (kind, namespace, name) keys with the same multiplicity,
/// and equal values. Returns a description of the first difference.
pub fn compare_objects(actual: &[Value], expected: &[Value]) -> Result<(), String> {
    let group = |objs: &[Value]| {
        let mut m: BTreeMap<(String, String, String), Vec<Value>> = BTreeMap::new();
        for o in objs {
            m.entry(key(o)).or_default().push(o.clone());
        }
        m
    };
    let (a, e) = (group(actual), group(expected));
    let a_keys: Vec<_> = a.keys().collect();
    let e_keys: Vec<_> = e.keys().collect();
    if a_keys != e_keys {
        let missing: Vec<_> = e_keys.iter().filter(|k| !a.contains_key(**k)).collect();
        let extra: Vec<_> = a_keys.iter().filter(|k| !e.contains_key(**k)).collect();
        return Err(format!(
            "object sets differ: missing {missing:?}, unexpected {extra:?}"
        ));
    }
    for (k, expected_objs) in &e {
        let actual_objs = &a[k];
        if actual_objs.len() != expected_objs.len() {
            return Err(format!(
                "{k:?}: {} objects, expected {}",
                actual_objs.len(),
                expected_objs.len()
            ));
        }
        for exp in expected_objs {
            if !actual_objs.contains(exp) {
                let act = &actual_objs[0];
                return Err(format!("{k:?}: {}", first_difference(act, exp, "")));
            }
        }
    }
    Ok(())
}

/// Where two values first differ, as a JSON path and both sides.
pub fn first_difference(actual: &Value, expected: &Value, path: &str) -> String {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            for (k, ev) in e {
                match a.get(k) {
                    None => return format!("{path}.{k}: missing, expected {}", short(ev)),
                    Some(av) if av != ev => {
                        return first_difference(av, ev, &format!("{path}.{k}"));
                    }
                    _ => {}
                }
            }
            for (k, av) in a {
                if !e.contains_key(k) {
                    return format!("{path}.{k}: unexpected {}", short(av));
                }
            }
            format!("{path}: equal")
        }
        (Value::Array(a), Value::Array(e)) if a.len() == e.len() => {
            for (i, (av, ev)) in a.iter().zip(e).enumerate() {
                if av != ev {
                    return first_difference(av, ev, &format!("{path}[{i}]"));
                }
            }
            format!("{path}: equal")
        }
        _ => format!(
            "{path}: got {}, expected {}",
            short(actual),
            short(expected)
        ),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 300 {
        format!("{}...", &s[..300])
    } else {
        s
    }
}

/// Parses and renders a bundle directory through the provider path (what the controller does).
pub fn render_dir(dir: &Path, opts: &RenderOptions) -> Result<Rendered, String> {
    let bundle = parse_dir(dir)?;
    render::render(&bundle, opts).map_err(|e| e.to_string())
}

pub fn parse_dir(dir: &Path) -> Result<RegistryV1Bundle, String> {
    bundle::parse(&load_bundle_dir(dir)).map_err(|e| e.to_string())
}

/// `none`, `cert-manager` or `openshift-service-ca`.
pub fn cert_provider(name: &str) -> CertProvider {
    match name {
        "none" | "" => CertProvider::None,
        "cert-manager" => CertProvider::CertManager,
        "openshift-service-ca" => CertProvider::OpenShiftServiceCa,
        other => panic!("unknown cert provider {other}"),
    }
}

/// `spec.config.inline` from a config file plus a watch namespace, as the conformance data
/// describes its cases (`None` when neither is given).
pub fn inline_config(config_file: Option<&Path>, watch_namespace: Option<&str>) -> Option<Value> {
    if config_file.is_none() && watch_namespace.is_none() {
        return None;
    }
    let mut config = match config_file {
        Some(path) => yaml_value(path),
        None => Value::Object(Default::default()),
    };
    if let Some(ns) = watch_namespace {
        config
            .as_object_mut()
            .unwrap()
            .insert("watchNamespace".into(), Value::String(ns.into()));
    }
    Some(config)
}
