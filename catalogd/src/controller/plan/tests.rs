use super::*;
use olm_api::v1::{CatalogSource, ClusterCatalogSpec, ImageSource};

const MIN: Duration = Duration::from_secs(60);
const DIGEST_A: &str =
    "reg.io/cat@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const DIGEST_B: &str =
    "reg.io/cat@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn now_time(secs: i64) -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(secs).expect("ts"))
}

fn catalog(reference: &str, poll: Option<i64>, generation: i64) -> ClusterCatalog {
    let mut c = ClusterCatalog::new(
        "cat",
        ClusterCatalogSpec {
            source: CatalogSource {
                type_: SourceType::Image,
                image: Some(ImageSource {
                    ref_: reference.to_string(),
                    poll_interval_minutes: poll,
                }),
            },
            priority: 0,
            availability_mode: AvailabilityMode::Available,
        },
    );
    c.metadata.generation = Some(generation);
    c
}

fn served(c: &mut ClusterCatalog, digest_ref: &str, generation: i64) {
    c.status = Some(serving_status(
        &ClusterCatalogStatus::default(),
        Some(generation),
        digest_ref,
        "https://x/catalogs/cat",
        at(100),
        now_time(100),
    ));
}

fn local(digest: Option<&str>, last_poll: Option<u64>) -> Local {
    Local {
        served_digest_ref: digest.map(str::to_string),
        last_poll: last_poll.map(at),
        leader_target: None,
    }
}

#[test]
fn a_new_catalog_is_unpacked_from_its_spec_reference() {
    let c = catalog("reg.io/cat:latest", None, 1);
    assert_eq!(
        plan(&c, &local(None, None), at(0), true, MIN),
        Plan::Unpack {
            reference: "reg.io/cat:latest".into()
        }
    );
    assert_eq!(
        plan(&c, &local(None, None), at(0), false, MIN),
        Plan::Unpack {
            reference: "reg.io/cat:latest".into()
        }
    );
}

#[test]
fn served_content_of_the_current_generation_is_up_to_date() {
    let mut c = catalog("reg.io/cat:latest", None, 1);
    served(&mut c, DIGEST_A, 1);
    assert_eq!(
        plan(&c, &local(Some(DIGEST_A), Some(0)), at(10_000), true, MIN),
        Plan::UpToDate
    );
}

#[test]
fn a_spec_change_triggers_an_unpack() {
    let mut c = catalog("reg.io/cat:v2", None, 2);
    served(&mut c, DIGEST_A, 1);
    assert_eq!(
        plan(&c, &local(Some(DIGEST_A), Some(0)), at(1), true, MIN),
        Plan::Unpack {
            reference: "reg.io/cat:v2".into()
        }
    );
}

#[test]
fn the_leader_polls_tag_references_when_the_interval_has_passed() {
    let mut c = catalog("reg.io/cat:latest", Some(5), 1);
    served(&mut c, DIGEST_A, 1);
    let l = local(Some(DIGEST_A), Some(1000));
    assert_eq!(plan(&c, &l, at(1000 + 299), true, MIN), Plan::UpToDate);
    assert_eq!(
        plan(&c, &l, at(1000 + 300), true, MIN),
        Plan::Unpack {
            reference: "reg.io/cat:latest".into()
        }
    );
    // After a restart nothing records the last poll: resolve once (no re-pull if unchanged).
    assert_eq!(
        plan(&c, &local(Some(DIGEST_A), None), at(1), true, MIN),
        Plan::Unpack {
            reference: "reg.io/cat:latest".into()
        }
    );
}

#[test]
fn followers_pull_the_digest_the_leader_published() {
    let mut c = catalog("reg.io/cat:latest", Some(5), 1);
    served(&mut c, DIGEST_B, 1);
    assert_eq!(
        plan(&c, &local(Some(DIGEST_A), Some(0)), at(1), false, MIN),
        Plan::Unpack {
            reference: DIGEST_B.into()
        }
    );
    assert_eq!(
        plan(&c, &local(None, None), at(1), false, MIN),
        Plan::Unpack {
            reference: DIGEST_B.into()
        }
    );
    // Followers do not poll on their own.
    assert_eq!(
        plan(&c, &local(Some(DIGEST_B), Some(0)), at(100_000), false, MIN),
        Plan::UpToDate
    );
}

#[test]
fn followers_ignore_a_published_digest_of_an_older_generation() {
    let mut c = catalog("reg.io/cat:v2", None, 2);
    served(&mut c, DIGEST_A, 1);
    assert_eq!(
        plan(&c, &local(None, None), at(1), false, MIN),
        Plan::Unpack {
            reference: "reg.io/cat:v2".into()
        }
    );
}

#[test]
fn deletion_and_unavailability_remove_content() {
    let mut c = catalog("reg.io/cat:latest", None, 1);
    c.spec.availability_mode = AvailabilityMode::Unavailable;
    assert_eq!(
        plan(&c, &local(Some(DIGEST_A), None), at(1), true, MIN),
        Plan::Remove { unavailable: true }
    );
    c.metadata.deletion_timestamp = Some(now_time(5));
    assert_eq!(
        plan(&c, &local(Some(DIGEST_A), None), at(1), true, MIN),
        Plan::Remove { unavailable: false }
    );
}

#[test]
fn digest_references_are_never_polled() {
    let c = catalog(DIGEST_A, Some(5), 1);
    assert_eq!(poll_interval(&c, MIN), None);
    assert_eq!(next_poll_in(&c, Some(at(0)), at(1), MIN, 0.5), None);
}

#[test]
fn the_next_poll_carries_at_most_one_percent_jitter() {
    let c = catalog("reg.io/cat:latest", Some(10), 1);
    let base = next_poll_in(&c, Some(at(0)), at(0), MIN, 0.0).expect("polled");
    let most = next_poll_in(&c, Some(at(0)), at(0), MIN, 0.999_999).expect("polled");
    assert_eq!(base, Duration::from_secs(600));
    assert!(most > base && most <= Duration::from_secs(606), "{most:?}");
    // Overdue polls are due now.
    assert_eq!(
        next_poll_in(&c, Some(at(0)), at(10_000), MIN, 0.0),
        Some(Duration::ZERO)
    );
}

#[test]
fn serving_status_matches_upstreams_fields_and_messages() {
    let s = serving_status(
        &ClusterCatalogStatus::default(),
        Some(3),
        DIGEST_A,
        "https://svc/catalogs/cat",
        at(1_700_000_000) + Duration::from_millis(900),
        now_time(5),
    );
    assert_eq!(
        s.resolved_source.as_ref().expect("resolved").image.ref_,
        DIGEST_A
    );
    assert_eq!(
        s.urls.as_ref().expect("urls").base,
        "https://svc/catalogs/cat"
    );
    assert_eq!(s.last_unpacked, Some(now_time(1_700_000_000)));
    let p = find_condition(&s.conditions, ConditionType::Progressing).expect("progressing");
    assert_eq!(
        (
            p.status,
            p.reason.as_str(),
            p.message.as_str(),
            p.observed_generation
        ),
        (ConditionStatus::True, "Succeeded", MSG_UNPACKED, Some(3))
    );
    let v = find_condition(&s.conditions, ConditionType::Serving).expect("serving");
    assert_eq!(
        (v.status, v.reason.as_str(), v.message.as_str()),
        (ConditionStatus::True, "Available", MSG_SERVING)
    );
}

#[test]
fn an_error_keeps_serving_and_reports_retrying_or_blocked() {
    let mut c = catalog("reg.io/cat:latest", None, 1);
    served(&mut c, DIGEST_A, 1);
    let prev = c.status.clone().expect("status");
    let s = error_status(
        &prev,
        Some(1),
        "source catalog content: boom",
        false,
        now_time(200),
    );
    let p = find_condition(&s.conditions, ConditionType::Progressing).expect("progressing");
    assert_eq!(
        (p.status, p.reason.as_str(), p.message.as_str()),
        (
            ConditionStatus::True,
            "Retrying",
            "source catalog content: boom"
        )
    );
    assert_eq!(
        find_condition(&s.conditions, ConditionType::Serving),
        find_condition(&prev.conditions, ConditionType::Serving)
    );
    assert_eq!(s.resolved_source, prev.resolved_source);
    let s = error_status(&prev, Some(1), "bad", true, now_time(200));
    let p = find_condition(&s.conditions, ConditionType::Progressing).expect("progressing");
    assert_eq!(
        (p.status, p.reason.as_str()),
        (ConditionStatus::False, "Blocked")
    );
}

#[test]
fn unavailable_status_clears_the_source_and_says_why() {
    let mut c = catalog("reg.io/cat:latest", None, 1);
    served(&mut c, DIGEST_A, 1);
    let s = unavailable_status(c.status.as_ref().expect("status"), Some(2), now_time(300));
    assert!(s.resolved_source.is_none() && s.urls.is_none() && s.last_unpacked.is_none());
    let v = find_condition(&s.conditions, ConditionType::Serving).expect("serving");
    assert_eq!(
        (v.status, v.reason.as_str(), v.message.as_str()),
        (
            ConditionStatus::False,
            "UserSpecifiedUnavailable",
            MSG_UNAVAILABLE
        )
    );
    let p = find_condition(&s.conditions, ConditionType::Progressing).expect("progressing");
    assert_eq!(
        (p.status, p.reason.as_str(), p.message.as_str()),
        (ConditionStatus::True, "Succeeded", MSG_UNAVAILABLE)
    );
}

#[test]
fn unknown_condition_types_are_dropped() {
    let mut prev = ClusterCatalogStatus::default();
    set_condition(
        &mut prev.conditions,
        ConditionType::Installed,
        ConditionStatus::True,
        ConditionReason::Succeeded,
        "x",
        Some(1),
        now_time(1),
    );
    let s = serving_status(&prev, Some(1), DIGEST_A, "u", at(1), now_time(2));
    assert!(find_condition(&s.conditions, ConditionType::Installed).is_none());
}

#[test]
fn base_urls_follow_the_external_address_and_scheme() {
    assert_eq!(
        base_url("catalogd-service.olmv1-system.svc", true, "op"),
        "https://catalogd-service.olmv1-system.svc/catalogs/op"
    );
    assert_eq!(
        base_url("127.0.0.1:8080/", false, "op"),
        "http://127.0.0.1:8080/catalogs/op"
    );
}

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct StepFailure {
    message: &'static str,
    terminal: bool,
}

impl ConditionError for StepFailure {
    fn reason(&self) -> ConditionReason {
        if self.terminal {
            ConditionReason::Blocked
        } else {
            ConditionReason::Retrying
        }
    }
    fn is_terminal(&self) -> bool {
        self.terminal
    }
}

#[test]
fn a_step_error_is_reported_through_its_condition_contract() {
    let mut c = catalog("reg.io/cat:latest", None, 1);
    served(&mut c, DIGEST_A, 1);
    let prev = c.status.clone().expect("status");
    for terminal in [false, true] {
        let error = StepFailure {
            message: "source catalog content: boom",
            terminal,
        };
        assert_eq!(
            failure_status(&prev, Some(1), &error, now_time(200)),
            error_status(&prev, Some(1), error.message, terminal, now_time(200)),
            "terminal: {terminal}"
        );
    }
}

#[test]
fn waiting_for_replicas_keeps_what_was_served_and_withholds_what_was_not() {
    use olm_api::v1::ClusterCatalogUrls;
    let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    let waiting = ["replica-b".to_string()];
    // Nothing served before: Serving False, no URL.
    let fresh = ClusterCatalogStatus::default();
    let status = waiting_status(
        &fresh,
        Some(1),
        "r@sha256:1",
        "https://c/catalogs/x",
        SystemTime::UNIX_EPOCH,
        &waiting,
        now.clone(),
    );
    assert!(status.urls.is_none());
    assert!(status.resolved_source.is_none(), "{status:?}");
    let serving = find_condition(&status.conditions, ConditionType::Serving).unwrap();
    assert_eq!(serving.status, ConditionStatus::False);
    assert!(
        serving.message.contains("(1 not yet: replica-b)"),
        "{}",
        serving.message
    );
    assert!(is_waiting(&status));
    // Served before: Serving and the URL stay (the old content is on every replica).
    let before = serving_status(
        &fresh,
        Some(1),
        "r@sha256:0",
        "https://c/catalogs/x",
        SystemTime::UNIX_EPOCH,
        now.clone(),
    );
    let status = waiting_status(
        &before,
        Some(2),
        "r@sha256:1",
        "https://c/catalogs/x",
        SystemTime::UNIX_EPOCH,
        &waiting,
        now.clone(),
    );
    assert_eq!(
        status.urls,
        Some(ClusterCatalogUrls {
            base: "https://c/catalogs/x".into()
        })
    );
    let serving = find_condition(&status.conditions, ConditionType::Serving).unwrap();
    assert_eq!(serving.status, ConditionStatus::True);
    // What clients key their caches by still names what every replica serves.
    assert_eq!(status.resolved_source, before.resolved_source);
    assert_eq!(status.last_unpacked, before.last_unpacked);
    assert!(is_waiting(&status));
    assert!(!is_waiting(&before));
}

#[test]
fn a_follower_pulls_the_digest_the_waiting_leader_serves_before_anything_else() {
    let mut c = catalog("reg.io/cat:latest", Some(5), 1);
    served(&mut c, DIGEST_A, 1);
    let mut waiting = local(Some(DIGEST_A), Some(0));
    waiting.leader_target = Some(DIGEST_B.into());
    assert_eq!(
        plan(&c, &waiting, at(1), false, MIN),
        Plan::Unpack {
            reference: DIGEST_B.into()
        }
    );
    // Nothing served yet: the leader's digest, not the spec's tag.
    waiting.served_digest_ref = None;
    assert_eq!(
        plan(&c, &waiting, at(1), false, MIN),
        Plan::Unpack {
            reference: DIGEST_B.into()
        }
    );
    // Already served here: nothing to do; and the leader itself never follows anyone.
    waiting.served_digest_ref = Some(DIGEST_B.into());
    assert_eq!(plan(&c, &waiting, at(1), false, MIN), Plan::UpToDate);
    waiting.served_digest_ref = Some(DIGEST_A.into());
    assert_eq!(plan(&c, &waiting, at(1), true, MIN), Plan::UpToDate);
}
