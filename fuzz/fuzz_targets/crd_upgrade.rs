//! The CRD upgrade-safety comparator on two arbitrary CRDs (seeds: the crd-upgrade conformance
//! pairs). Input: `old \0 new \0 objects`, each YAML or JSON; `objects` is a list of stored
//! custom resources for the data-aware step. Must never panic, and a verdict must agree with
//! itself: what it calls safe has no blocking violation and no message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_operator_core::bundle::manifest::parse_objects;
use olm_operator_core::crd_upgrade::{CheckOptions, Crd, check_upgrade, data_aware_decision};
use serde_json::Value;

fn crd(part: &[u8]) -> Option<Crd> {
    let objects = parse_objects("fuzz.yaml", part).ok()?;
    Crd::from_value(&Value::Object(objects.into_iter().next()?)).ok()
}

fuzz_target!(|data: &[u8]| {
    let parts = olm_fuzz::split_parts(data, 3);
    let (Some(old), Some(new)) = (
        parts.first().and_then(|p| crd(p)),
        parts.get(1).and_then(|p| crd(p)),
    ) else {
        return;
    };
    for allow_safe_changes in [false, true] {
        let opts = CheckOptions {
            allow_safe_changes,
            ..CheckOptions::default()
        };
        let verdict = check_upgrade(&old, &new, &opts);
        assert_eq!(verdict.is_safe(), verdict.message().is_none());
        let stored: Vec<Value> = parts
            .get(2)
            .and_then(|p| parse_objects("objects.yaml", p).ok())
            .map(|objects| objects.into_iter().map(Value::Object).collect())
            .unwrap_or_default();
        let outcome = data_aware_decision(&old, &new, &verdict, &stored);
        if verdict.is_safe() {
            assert!(
                outcome.allowed,
                "a safe verdict is never refused by the data"
            );
        }
    }
});
