//! Replays the vectors the Go libraries produced (`tests/data/version/go-oracle.jsonl`) against
//! both dialects: verdicts, parsed versions and error texts must agree byte for byte.
#![allow(clippy::unwrap_used)]

mod common;

use olm_api::version::{blang, masterminds};
use serde_json::{Map, Value, json};

fn answer(args: &[String]) -> Value {
    let mut out = Map::new();
    let mut put = |key: &str, value: Value| {
        out.insert(key.to_owned(), value);
    };
    let verdict = |put: &mut dyn FnMut(&str, Value), parsed: Result<bool, String>| match parsed {
        Ok(matches) => put("match", json!(matches)),
        Err(error) => put("verr", json!(error)),
    };
    match (args[0].as_str(), &args[1..]) {
        ("mm", [constraint, rest @ ..]) => match masterminds::Constraints::parse(constraint) {
            Err(error) => put("err", json!(error.to_string())),
            Ok(constraints) => {
                put("ok", json!(true));
                if let [version] = rest {
                    let parsed = masterminds::parse_version_lax(version)
                        .map(|v| constraints.matches(&v))
                        .map_err(|e| e.to_string());
                    verdict(&mut put, parsed);
                }
            }
        },
        ("br", [range, rest @ ..]) => match blang::Range::parse(range) {
            Err(error) => put("err", json!(error.to_string())),
            Ok(range) => {
                put("ok", json!(true));
                if let [version] = rest {
                    let parsed = blang::parse_version(version)
                        .map(|v| range.matches(&v))
                        .map_err(|e| e.to_string());
                    verdict(&mut put, parsed);
                }
            }
        },
        ("mmv", [version]) => match masterminds::parse_version_lax(version) {
            Err(error) => put("err", json!(error.to_string())),
            Ok(v) => {
                put("ok", json!(true));
                put("string", json!(v.to_string()));
            }
        },
        ("bv", [version]) => match blang::parse_version(version) {
            Err(error) => put("err", json!(error.to_string())),
            Ok(v) => {
                put("ok", json!(true));
                put("string", json!(v.to_string()));
            }
        },
        other => panic!("unknown case {other:?}"),
    }
    out.entry("ok").or_insert(json!(false));
    Value::Object(out)
}

#[test]
fn both_dialects_answer_exactly_like_the_go_libraries() {
    let path = common::manifest_dir().join("tests/data/version/go-oracle.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut failures = Vec::new();
    let mut cases = 0;
    for (index, line) in text.lines().enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        let args: Vec<String> = serde_json::from_value(case["args"].clone()).unwrap();
        let got = answer(&args);
        cases += 1;
        if got != case["want"] {
            failures.push(format!(
                "line {}: {args:?}\n  go:   {}\n  rust: {got}",
                index + 1,
                case["want"]
            ));
        }
    }
    println!("{cases} cases in {}", path.display());
    assert_eq!(cases, 2947, "cases in {}", path.display());
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
