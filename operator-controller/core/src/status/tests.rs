use super::*;
use k8s_openapi::jiff::Timestamp;
use olm_api::v1::{MAX_CONDITION_MESSAGE_LEN, TRUNCATION_SUFFIX, find_condition};

use crate::resolve::deprecation_conditions;

fn at(secs: i64) -> Time {
    Time(Timestamp::from_second(secs).expect("valid timestamp"))
}

fn bundle() -> BundleMetadata {
    BundleMetadata {
        name: "test-operator.v1.2.0".into(),
        version: "1.2.0".into(),
    }
}

fn installed() -> Installed {
    Installed::Bundle {
        bundle: bundle(),
        image: "registry.example/bundle@sha256:abc".into(),
    }
}

fn outcome(installed: Installed, progress: Progress) -> Outcome {
    Outcome {
        installed,
        progress,
        deprecation: None,
        available: Available::Keep,
    }
}

fn reached() -> Progress {
    Progress::Reached { notes: vec![] }
}

fn condition(status: &ClusterExtensionStatus, type_: ConditionType) -> &olm_api::v1::Condition {
    find_condition(&status.conditions, type_).unwrap_or_else(|| panic!("{type_:?} missing"))
}

fn summary(c: &olm_api::v1::Condition) -> (&str, &str, &str) {
    (c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

/// Strings: upstream `controllers/common_controller.go` (`setInstalledStatusConditionSuccess`,
/// `setStatusProgressing`), install-path.md §1.
#[test]
fn a_successful_install_reports_the_bundle_image_and_desired_state_reached() {
    let s = next_status(None, Some(4), &outcome(installed(), reached()), at(10));
    assert_eq!(
        summary(condition(&s, ConditionType::Installed)),
        (
            "True",
            "Succeeded",
            "Installed bundle registry.example/bundle@sha256:abc successfully"
        )
    );
    assert_eq!(
        summary(condition(&s, ConditionType::Progressing)),
        ("True", "Succeeded", "Desired state reached")
    );
    assert_eq!(s.install.as_ref().map(|i| &i.bundle), Some(&bundle()));
    assert!(
        s.conditions
            .iter()
            .all(|c| c.observed_generation == Some(4))
    );
}

#[test]
fn nothing_installed_removes_the_bundle_and_says_so() {
    let before = next_status(None, Some(1), &outcome(installed(), reached()), at(10));
    let failed = Progress::Failed {
        reason: ConditionReason::Retrying,
        message: "no bundles found for package \"p\"".into(),
    };
    let s = next_status(
        Some(&before),
        Some(2),
        &outcome(Installed::Nothing, failed),
        at(20),
    );
    assert_eq!(
        summary(condition(&s, ConditionType::Installed)),
        ("False", "Failed", "No bundle installed")
    );
    assert_eq!(
        summary(condition(&s, ConditionType::Progressing)),
        ("True", "Retrying", "no bundles found for package \"p\"")
    );
    assert!(s.install.is_none());
}

#[test]
fn an_unreadable_installed_state_is_unknown_and_retried() {
    let s = next_status(
        None,
        Some(1),
        &outcome(
            Installed::Unknown {
                message: "failed to list release secrets".into(),
            },
            Progress::Failed {
                reason: ConditionReason::Retrying,
                message: RETRYING_INSTALLED_STATE.into(),
            },
        ),
        at(10),
    );
    assert_eq!(
        summary(condition(&s, ConditionType::Installed)),
        ("Unknown", "Failed", "failed to list release secrets")
    );
    assert_eq!(
        summary(condition(&s, ConditionType::Progressing)),
        ("True", "Retrying", "retrying to get installed bundle")
    );
}

/// Upstream: only terminal errors set Progressing False, with their own reason or `Blocked`.
#[test]
fn terminal_reasons_set_progressing_false() {
    for (reason, status) in [
        (ConditionReason::InvalidConfiguration, "False"),
        (ConditionReason::Blocked, "False"),
        (ConditionReason::Retrying, "True"),
    ] {
        let s = next_status(
            None,
            Some(1),
            &outcome(
                Installed::Nothing,
                Progress::Failed {
                    reason,
                    message: "m".into(),
                },
            ),
            at(1),
        );
        let p = condition(&s, ConditionType::Progressing);
        assert_eq!(
            (p.status.as_str(), p.reason.as_str()),
            (status, reason.as_str())
        );
    }
}

#[test]
fn notes_follow_desired_state_reached_line_by_line() {
    let s = next_status(
        None,
        None,
        &outcome(
            installed(),
            Progress::Reached {
                notes: vec!["warning one".into(), "warning two".into()],
            },
        ),
        at(1),
    );
    assert_eq!(
        condition(&s, ConditionType::Progressing).message,
        "Desired state reached\nwarning one\nwarning two"
    );
}

#[test]
fn transition_times_move_only_when_a_status_changes() {
    let first = next_status(None, Some(1), &outcome(installed(), reached()), at(10));
    let again = next_status(
        Some(&first),
        Some(2),
        &outcome(installed(), reached()),
        at(20),
    );
    assert_eq!(
        condition(&again, ConditionType::Installed).last_transition_time,
        at(10)
    );
    let failing = next_status(
        Some(&again),
        Some(3),
        &outcome(
            installed(),
            Progress::Failed {
                reason: ConditionReason::Blocked,
                message: "x".into(),
            },
        ),
        at(30),
    );
    assert_eq!(
        condition(&failing, ConditionType::Progressing).last_transition_time,
        at(30)
    );
    assert_eq!(
        condition(&failing, ConditionType::Installed).last_transition_time,
        at(10)
    );
}

/// Upstream `common_controller_test.go` `TestSetStatusConditionWrapper`: 32768 bytes at most,
/// ending in `\n\n... [message truncated]`.
#[test]
fn long_messages_are_truncated_to_the_api_limit_with_upstreams_suffix() {
    let long = "x".repeat(MAX_CONDITION_MESSAGE_LEN + 100);
    let s = next_status(
        None,
        None,
        &outcome(
            Installed::Nothing,
            Progress::Failed {
                reason: ConditionReason::Retrying,
                message: long,
            },
        ),
        at(1),
    );
    let m = &condition(&s, ConditionType::Progressing).message;
    assert_eq!(m.len(), MAX_CONDITION_MESSAGE_LEN);
    assert!(m.ends_with(TRUNCATION_SUFFIX));
    assert_eq!(TRUNCATION_SUFFIX, "\n\n... [message truncated]");
}

#[test]
fn availability_is_set_cleared_or_kept() {
    let available = Availability {
        status: ConditionStatus::True,
        reason: ConditionReason::ProbesSucceeded,
        message: "Objects are available and pass all probes.".into(),
    };
    let mut o = outcome(installed(), reached());
    o.available = Available::Observed(available);
    let s = next_status(None, None, &o, at(1));
    assert_eq!(
        summary(condition(&s, ConditionType::Available)),
        (
            "True",
            "ProbesSucceeded",
            "Objects are available and pass all probes."
        )
    );
    o.available = Available::Keep;
    let kept = next_status(Some(&s), None, &o, at(2));
    assert!(find_condition(&kept.conditions, ConditionType::Available).is_some());
    o.available = Available::Clear;
    let cleared = next_status(Some(&s), None, &o, at(3));
    assert!(find_condition(&cleared.conditions, ConditionType::Available).is_none());
}

#[test]
fn deprecation_conditions_are_set_when_computed_and_kept_otherwise() {
    let mut o = outcome(Installed::Nothing, reached());
    o.deprecation = Some(deprecation_conditions(None, false, &[], None));
    let s = next_status(None, None, &o, at(1));
    assert_eq!(
        summary(condition(&s, ConditionType::Deprecated)),
        (
            "Unknown",
            "DeprecationStatusUnknown",
            "deprecation status unknown: catalog data unavailable"
        )
    );
    assert_eq!(
        summary(condition(&s, ConditionType::BundleDeprecated)),
        ("Unknown", "Absent", "no bundle installed yet")
    );
    o.deprecation = None;
    let kept = next_status(Some(&s), None, &o, at(2));
    assert_eq!(kept.conditions.len(), s.conditions.len());
}

/// Upstream `wrapErrorWithResolutionInfo`: Go's `%q` quoting.
#[test]
fn bundle_errors_are_wrapped_with_the_resolved_bundle() {
    assert_eq!(
        wrap_for_bundle("a.v1", "1.0.0", "boom"),
        "error for resolved bundle \"a.v1\" with version \"1.0.0\": boom"
    );
    assert_eq!(
        wrap_for_bundle("q\"x", "1", "e"),
        "error for resolved bundle \"q\\\"x\" with version \"1\": e"
    );
}

/// Cases of upstream's `internal/shared/util/error/sanitize_test.go` (inputs written as the Go
/// errors print).
#[test]
fn ephemeral_addresses_are_removed_from_network_errors_as_upstream_does() {
    let cases = [
        ("some random error", "some random error"),
        (
            "dial tcp: lookup docker-registry.operator-controller.svc on 10.96.0.10:53: read udp 10.244.0.8:46753->10.96.0.10:53: i/o timeout",
            "dial tcp: lookup docker-registry.operator-controller.svc on 10.96.0.10:53: i/o timeout",
        ),
        (
            "source catalog content: error creating image source: dial tcp: lookup docker-registry.operator-controller.svc on 10.96.0.10:53: read udp 10.244.0.8:46753->10.96.0.10:53: i/o timeout",
            "source catalog content: error creating image source: dial tcp: lookup docker-registry.operator-controller.svc on 10.96.0.10:53: i/o timeout",
        ),
        (
            "lookup registry.example.com on 10.96.0.10:53: no such host",
            "lookup registry.example.com on 10.96.0.10:53: no such host",
        ),
        (
            "dial tcp 10.0.0.1:52341->192.168.1.100:443: connect: connection refused",
            "dial tcp 10.0.0.1:52341->192.168.1.100:443: connect: connection refused",
        ),
        (
            "read tcp 10.0.0.1:52341->192.168.1.100:443: connection reset by peer",
            "connection reset by peer",
        ),
        (
            "write tcp 10.0.0.1:52341->192.168.1.100:443: broken pipe",
            "broken pipe",
        ),
        (
            "read udp [::1]:52341->[fd00::1]:53: i/o timeout",
            "i/o timeout",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(sanitize_network_error(input), want, "{input}");
    }
}

#[test]
fn a_retryable_failure_is_sanitized_in_the_condition() {
    let s = next_status(
        None,
        None,
        &outcome(
            Installed::Nothing,
            Progress::Failed {
                reason: ConditionReason::Retrying,
                message: "x: read tcp 10.0.0.1:1->10.0.0.2:443: reset".into(),
            },
        ),
        at(1),
    );
    assert_eq!(
        condition(&s, ConditionType::Progressing).message,
        "x: reset"
    );
}
