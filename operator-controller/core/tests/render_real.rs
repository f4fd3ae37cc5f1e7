//! Conformance: the 70 real community bundles of `testdata/conformance/render-real/` render to
//! exactly what upstream operator-controller df2c201d renders from them (same objects, same
//! names, equal values), or fail with upstream's exact message. Cases and expectations come from
//! that directory's `cases.json` and `expected/` (see its README,
//! `testdata/conformance/render-real.README.md`).
#![allow(clippy::unwrap_used)]

mod render_common;

use olm_operator_core::render::RenderOptions;
use olm_operator_core::render::yaml::to_yaml;
use render_common::*;
use serde_json::Value;

#[test]
fn every_real_bundle_renders_as_upstream_renders_it() {
    let root = testdata("conformance/render-real");
    let cases: Value =
        serde_json::from_slice(&std::fs::read(root.join("cases.json")).unwrap()).unwrap();
    let cases = cases["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 70, "the data set has 70 cases");
    let expected_dirs = std::fs::read_dir(root.join("expected")).unwrap().count();
    println!(
        "conformance/render-real: {} cases, {expected_dirs} expected outputs",
        cases.len()
    );
    assert_eq!(expected_dirs, 70, "one expected output per case");
    let mut failures = Vec::new();
    let mut objects_compared = 0;
    for case in cases {
        let name = case["case"].as_str().unwrap();
        let bundle_dir = root.join(case["bundle"].as_str().unwrap());
        let config_file = case["config"].as_str().map(|c| root.join(c));
        let opts = RenderOptions {
            install_namespace: case["install_namespace"].as_str().unwrap().into(),
            config: inline_config(config_file.as_deref(), case["watch_namespace"].as_str()),
            cert_provider: cert_provider(case["cert_provider"].as_str().unwrap()),
            ..RenderOptions::default()
        };
        let expected_dir = root.join("expected").join(name);
        let outcome = render_dir(&bundle_dir, &opts);
        match (golden_error(&expected_dir), outcome) {
            (Some(want), Err(got)) if want == got => {}
            (Some(want), Err(got)) => {
                failures.push(format!("{name}: error {got:?}, expected {want:?}"))
            }
            (Some(want), Ok(_)) => {
                failures.push(format!("{name}: rendered, expected error {want:?}"))
            }
            (None, Err(got)) => failures.push(format!("{name}: failed: {got}")),
            (None, Ok(rendered)) => {
                let expected = golden_objects(&expected_dir);
                objects_compared += expected.len();
                if let Err(diff) = compare_objects(&rendered.objects, &expected) {
                    failures.push(format!("{name}: {diff}"));
                }
                // What `operator-controller render` prints reads back as the same objects.
                for object in &rendered.objects {
                    let text = to_yaml(object);
                    if yaml_text_value(text.as_bytes()) != *object {
                        failures.push(format!("{name}: YAML text does not read back:\n{text}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(
        objects_compared > 1000,
        "only {objects_compared} objects compared"
    );
    println!("conformance/render-real: {objects_compared} objects compared");
    assert_eq!(objects_compared, 1252, "objects in the expected outputs");
}
