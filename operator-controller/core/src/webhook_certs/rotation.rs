//! When the built-in provider issues, renews and rotates certificates.
//!
//! Input: the time now (Unix seconds), a [`Policy`], the extension's name (the jitter seed) and
//! what is stored ([`CaState`], one [`CertInfo`] per serving Secret). Output: one CA step
//! ([`ca_step`]), one step per serving certificate ([`serving_step`]) and when to look again
//! ([`next_check`]). No IO, no clock: the caller passes `now`.
//!
//! # Lifetimes
//!
//! | | OLM classic (`install/certresources.go`) | built-in provider | why we differ |
//! |---|---|---|---|
//! | CA validity | 730 days | 730 days ([`Policy::DEFAULT_VALIDITY`]) | – |
//! | serving validity | 730 days, same expiry as its CA | 730 days, never past its CA's expiry | – |
//! | renewal point | 24 h before expiry (`DefaultCertMinFresh`) | after two thirds of the lifetime, minus a jitter of up to a tenth of it | a day of margin is lost to one day of controller outage; a CA rotation needs room for its overlap |
//! | CA rotation | CA and serving certificate replaced together; the `caBundle` holds the new CA only (pods restarted by a hash annotation) | new CA added to the bundle first, serving certificate switched after the overlap, old CA dropped after another overlap | no window where the API server trusts only a CA the webhook server does not use yet |
//! | overlap | none | a tenth of the validity, at most 24 h ([`Policy::overlap`]) | the kubelet refreshes mounted Secrets within about a minute; a day covers a controller restart |
//! | not-before | now | now minus a twentieth of the validity, at most 1 h | clock skew between the controller and the API server |
//!
//! A test flag shortens the validity (`--builtin-cert-validity`); every other duration above
//! scales with it.
//!
//! # CA state machine
//!
//! | state (bundle) | condition | step | next state |
//! |---|---|---|---|
//! | no CA, or the active CA expired and nothing staged | – | [`CaStep::Create`] | active = new (bundle: new) |
//! | active A (bundle: A) | now ≥ renewal point of A | [`CaStep::Introduce`] | A, next B since now (bundle: A, B) |
//! | A, next B (bundle: A, B) | now ≥ since + overlap, or A expired | [`CaStep::Promote`] | active B, previous A since now (bundle: B, A); serving certificates are re-issued by B ([`IssueReason::Issuer`]) |
//! | B, previous A (bundle: B, A) | now ≥ since + overlap, or A expired | [`CaStep::DropPrevious`] | active B (bundle: B) |
//! | anything else | – | [`CaStep::Keep`] | unchanged |
//!
//! So every serving certificate in use is signed by a CA in the bundle: a serving certificate
//! signed by B exists only after B has been in the bundle for one overlap, and A leaves the
//! bundle one overlap after the last certificate it signed was replaced.
//!
//! # Jitter
//!
//! The renewal point of a certificate is pulled forward by a deterministic amount (SHA-256 of
//! the extension, the certificate's subject and its not-before) of up to a tenth of its
//! lifetime: repeated reconciles agree on it, and extensions installed together (a restore, a
//! fleet) spread their renewals over that tenth instead of renewing in the same second.

use sha2::{Digest, Sha256};

use super::ServingNeed;

/// What the decisions need to know about a stored certificate (the IO side parses it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertInfo {
    pub not_before: i64,
    pub not_after: i64,
    /// The subject distinguished name, in one fixed textual form.
    pub subject: String,
    /// The issuer distinguished name, in the same form.
    pub issuer: String,
    /// Subject alternative DNS names.
    pub dns_names: Vec<String>,
}

/// A CA certificate with the time it entered its current role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staged {
    pub cert: CertInfo,
    pub since: i64,
}

/// The extension's CAs as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaState {
    /// Signs serving certificates.
    pub active: Option<CertInfo>,
    /// Trusted (in the bundle), not signing yet.
    pub next: Option<Staged>,
    /// Trusted (in the bundle), not signing any more.
    pub previous: Option<Staged>,
}

/// Lifetimes and the points derived from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    validity: i64,
}

const DAY: i64 = 24 * 3600;

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            validity: Policy::DEFAULT_VALIDITY,
        }
    }
}

impl Policy {
    /// OLM classic's `DefaultCertValidFor`: 730 days.
    pub const DEFAULT_VALIDITY: i64 = 730 * DAY;
    /// The shortest validity accepted (tests): below it the overlap would be under a second.
    pub const MIN_VALIDITY: i64 = 30;

    /// A policy with certificates valid for `validity_secs` (at least [`Policy::MIN_VALIDITY`]).
    pub fn with_validity(validity_secs: i64) -> Policy {
        Policy {
            validity: validity_secs.max(Policy::MIN_VALIDITY),
        }
    }

    pub fn validity(&self) -> i64 {
        self.validity
    }

    /// How long both CAs stay in the bundle before each switch.
    pub fn overlap(&self) -> i64 {
        (self.validity / 10).clamp(1, DAY)
    }

    /// How far a new certificate's not-before is set back.
    pub fn backdate(&self) -> i64 {
        (self.validity / 20).clamp(0, 3600)
    }

    /// (not-before, not-after) of a CA issued at `now`.
    pub fn ca_window(&self, now: i64) -> (i64, i64) {
        (now - self.backdate(), now + self.validity)
    }

    /// (not-before, not-after) of a serving certificate issued at `now` by `ca`: never valid
    /// past its CA.
    pub fn serving_window(&self, now: i64, ca: &CertInfo) -> (i64, i64) {
        (
            now - self.backdate(),
            (now + self.validity).min(ca.not_after),
        )
    }

    /// When `cert` is renewed: two thirds into its lifetime, pulled forward by the jitter.
    pub fn renew_at(&self, cert: &CertInfo, extension: &str) -> i64 {
        let life = (cert.not_after - cert.not_before).max(0);
        let seed = format!("{extension}\n{}\n{}", cert.subject, cert.not_before);
        cert.not_before + life * 2 / 3 - jitter(&seed, life / 10)
    }
}

/// A deterministic value in `0..span` (0 when `span` ≤ 0).
pub fn jitter(seed: &str, span: i64) -> i64 {
    if span <= 0 {
        return 0;
    }
    let digest = Sha256::digest(seed.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    let value = u64::from_be_bytes(bytes);
    // span > 0, so the cast and the remainder are in range.
    (value % span as u64) as i64
}

/// What to do with the extension's CAs now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaStep {
    Keep,
    /// Make a CA and make it active right away (nothing usable is stored).
    Create,
    /// Make the next CA and add it to the bundle; the active one keeps signing.
    Introduce,
    /// The next CA signs from now on; the active one stays in the bundle as previous.
    Promote,
    /// Remove the previous CA from the bundle.
    DropPrevious,
}

/// The CA step at `now` (module table).
pub fn ca_step(policy: &Policy, now: i64, extension: &str, state: &CaState) -> CaStep {
    let Some(active) = &state.active else {
        return CaStep::Create;
    };
    let usable = |c: &CertInfo| now >= c.not_before && now < c.not_after;
    if !usable(active) {
        return match &state.next {
            Some(next) if usable(&next.cert) => CaStep::Promote,
            _ => CaStep::Create,
        };
    }
    if let Some(previous) = &state.previous {
        if now >= previous.since + policy.overlap() || now >= previous.cert.not_after {
            return CaStep::DropPrevious;
        }
        return CaStep::Keep;
    }
    if let Some(next) = &state.next {
        if now >= next.since + policy.overlap() {
            return CaStep::Promote;
        }
        return CaStep::Keep;
    }
    if now >= policy.renew_at(active, extension) {
        return CaStep::Introduce;
    }
    CaStep::Keep
}

/// Why a serving certificate is issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssueReason {
    /// None stored, or not readable.
    Missing,
    /// Its DNS names are not the Service's three.
    Names,
    /// Not signed by the active CA (a new CA was created or promoted).
    Issuer,
    /// Past its renewal point.
    Due,
    /// Expired or not valid yet.
    Invalid,
}

/// What to do with one serving certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServingStep {
    Keep,
    Issue(IssueReason),
}

/// The serving step at `now`, given the active CA after this reconcile's CA step.
pub fn serving_step(
    policy: &Policy,
    now: i64,
    extension: &str,
    need: &ServingNeed,
    current: Option<&CertInfo>,
    active_ca: &CertInfo,
) -> ServingStep {
    let Some(cert) = current else {
        return ServingStep::Issue(IssueReason::Missing);
    };
    if cert.dns_names != need.dns_names() {
        return ServingStep::Issue(IssueReason::Names);
    }
    if cert.issuer != active_ca.subject {
        return ServingStep::Issue(IssueReason::Issuer);
    }
    if now < cert.not_before || now >= cert.not_after {
        return ServingStep::Issue(IssueReason::Invalid);
    }
    if now >= policy.renew_at(cert, extension) {
        return ServingStep::Issue(IssueReason::Due);
    }
    ServingStep::Keep
}

/// Seconds from `now` until a step is due again (at least 1): the earliest renewal point, end
/// of an overlap or expiry among what is stored after this reconcile.
pub fn next_check(
    policy: &Policy,
    now: i64,
    extension: &str,
    ca: &CaState,
    serving: &[&CertInfo],
) -> i64 {
    let mut due = Vec::new();
    if let Some(active) = &ca.active {
        due.push(active.not_after);
        if ca.next.is_none() && ca.previous.is_none() {
            due.push(policy.renew_at(active, extension));
        }
    }
    for staged in [&ca.next, &ca.previous].into_iter().flatten() {
        due.push(staged.since + policy.overlap());
    }
    for cert in serving {
        due.push(policy.renew_at(cert, extension));
        due.push(cert.not_after);
    }
    due.into_iter()
        .min()
        .map(|t| (t - now).max(1))
        .unwrap_or(policy.validity())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXT: &str = "ext";

    fn need() -> ServingNeed {
        ServingNeed {
            service: "svc".into(),
            namespace: "ns".into(),
            secret_name: "svc-cert".into(),
        }
    }

    /// A simulated store: CAs named by a counter, serving certificates issued as the decisions
    /// say, the bundle as the IO side builds it.
    struct Sim {
        policy: Policy,
        ca: CaState,
        serving: Option<CertInfo>,
        made: u32,
        steps: Vec<(i64, CaStep)>,
    }

    impl Sim {
        fn new(policy: Policy) -> Sim {
            Sim {
                policy,
                ca: CaState::default(),
                serving: None,
                made: 0,
                steps: Vec::new(),
            }
        }

        fn new_ca(&mut self, now: i64) -> CertInfo {
            self.made += 1;
            let (nb, na) = self.policy.ca_window(now);
            CertInfo {
                not_before: nb,
                not_after: na,
                subject: format!("CN=ca-{}", self.made),
                issuer: format!("CN=ca-{}", self.made),
                dns_names: vec![],
            }
        }

        fn bundle(&self) -> Vec<String> {
            let mut out: Vec<String> = self.ca.active.iter().map(|c| c.subject.clone()).collect();
            out.extend(self.ca.next.iter().map(|s| s.cert.subject.clone()));
            out.extend(self.ca.previous.iter().map(|s| s.cert.subject.clone()));
            out
        }

        /// One reconcile at `now`, as the IO side runs it.
        fn reconcile(&mut self, now: i64) -> i64 {
            let step = ca_step(&self.policy, now, EXT, &self.ca);
            if step != CaStep::Keep {
                self.steps.push((now, step));
            }
            match step {
                CaStep::Keep => {}
                CaStep::Create => {
                    self.ca = CaState {
                        active: Some(self.new_ca(now)),
                        ..CaState::default()
                    }
                }
                CaStep::Introduce => {
                    let cert = self.new_ca(now);
                    self.ca.next = Some(Staged { cert, since: now });
                }
                CaStep::Promote => {
                    let next = self.ca.next.take().expect("promote needs a next CA");
                    let old = self.ca.active.replace(next.cert).expect("an active CA");
                    self.ca.previous = Some(Staged {
                        cert: old,
                        since: now,
                    });
                }
                CaStep::DropPrevious => self.ca.previous = None,
            }
            let active = self.ca.active.clone().expect("an active CA after the step");
            if let ServingStep::Issue(_) = serving_step(
                &self.policy,
                now,
                EXT,
                &need(),
                self.serving.as_ref(),
                &active,
            ) {
                let (nb, na) = self.policy.serving_window(now, &active);
                self.serving = Some(CertInfo {
                    not_before: nb,
                    not_after: na,
                    subject: format!("CN=svc.ns@{now}"),
                    issuer: active.subject.clone(),
                    dns_names: need().dns_names(),
                });
            }
            let serving: Vec<&CertInfo> = self.serving.iter().collect();
            next_check(&self.policy, now, EXT, &self.ca, &serving)
        }

        /// The invariant: the serving certificate in use is valid and its issuer is in the
        /// bundle, and the bundle has one or two CAs.
        fn check(&self, now: i64) {
            let serving = self.serving.as_ref().expect("a serving certificate");
            assert!(
                now >= serving.not_before && now < serving.not_after,
                "serving certificate invalid at {now}"
            );
            let bundle = self.bundle();
            assert!(
                bundle.contains(&serving.issuer),
                "at {now}: issuer {} not in bundle {bundle:?}",
                serving.issuer
            );
            assert!((1..=2).contains(&bundle.len()));
        }
    }

    #[test]
    fn a_short_lifetime_rotates_with_an_overlap_and_never_breaks_trust() {
        let policy = Policy::with_validity(90);
        let mut sim = Sim::new(policy);
        // Reconciled every second (drift, resyncs) over five lifetimes.
        for now in 1_000..1_000 + 5 * 90 {
            sim.reconcile(now);
            sim.check(now);
        }
        let kinds: Vec<CaStep> = sim.steps.iter().map(|s| s.1).collect();
        assert_eq!(kinds[0], CaStep::Create);
        // Each rotation is Introduce, Promote, DropPrevious, one overlap apart.
        let rotations = kinds.iter().filter(|k| **k == CaStep::Introduce).count();
        assert!(rotations >= 5, "{kinds:?}");
        for w in sim.steps.windows(3) {
            if w[0].1 == CaStep::Introduce {
                assert_eq!(w[1].1, CaStep::Promote);
                assert_eq!(w[1].0 - w[0].0, policy.overlap());
                assert_eq!(w[2].1, CaStep::DropPrevious);
                assert_eq!(w[2].0 - w[1].0, policy.overlap());
            }
        }
        assert_eq!(kinds.iter().filter(|k| **k == CaStep::Create).count(), 1);
    }

    #[test]
    fn reconciling_only_when_next_check_says_is_enough() {
        for validity in [60, 90, 3600, Policy::DEFAULT_VALIDITY] {
            let policy = Policy::with_validity(validity);
            let mut sim = Sim::new(policy);
            let mut now = 1_000_000;
            let end = now + 4 * validity;
            while now < end {
                let wait = sim.reconcile(now);
                sim.check(now);
                assert!(wait >= 1);
                // Check the invariant over the sleep, too (sampled).
                for t in [now + wait / 2, now + wait - 1] {
                    if t > now {
                        sim.check(t);
                    }
                }
                now += wait;
            }
            let creates = sim.steps.iter().filter(|s| s.1 == CaStep::Create).count();
            assert_eq!(creates, 1, "validity {validity}: {:?}", sim.steps);
        }
    }

    #[test]
    fn the_overlap_window_holds_both_cas() {
        let policy = Policy::with_validity(900);
        let mut sim = Sim::new(policy);
        sim.reconcile(0);
        let first = sim.bundle();
        let renew = policy.renew_at(sim.ca.active.as_ref().expect("active"), EXT);
        assert!(renew > 0 && renew < 900);
        sim.reconcile(renew - 1);
        assert_eq!(
            sim.bundle(),
            first,
            "nothing happens before the renewal point"
        );
        sim.reconcile(renew);
        let both = sim.bundle();
        assert_eq!(both.len(), 2);
        assert_eq!(both[0], first[0]);
        // During the overlap the serving certificate is still the old CA's.
        assert_eq!(
            sim.serving.as_ref().map(|s| s.issuer.clone()),
            Some(first[0].clone())
        );
        sim.reconcile(renew + policy.overlap());
        // Switched: the new CA signs, the old one is still trusted.
        let issuer = sim.serving.as_ref().map(|s| s.issuer.clone());
        assert_eq!(issuer, Some(both[1].clone()));
        assert_eq!(sim.bundle().len(), 2);
        sim.reconcile(renew + 2 * policy.overlap() - 1);
        assert_eq!(sim.bundle().len(), 2);
        sim.reconcile(renew + 2 * policy.overlap());
        assert_eq!(sim.bundle(), vec![both[1].clone()]);
    }

    #[test]
    fn default_lifetimes_follow_olm_classic_and_the_table() {
        let p = Policy::default();
        assert_eq!(p.validity(), 730 * DAY);
        assert_eq!(p.overlap(), DAY);
        assert_eq!(p.backdate(), 3600);
        let (nb, na) = p.ca_window(0);
        let ca = CertInfo {
            not_before: nb,
            not_after: na,
            subject: "CN=a".into(),
            issuer: "CN=a".into(),
            dns_names: vec![],
        };
        let renew = p.renew_at(&ca, EXT);
        let life = na - nb;
        assert!(renew <= nb + life * 2 / 3 && renew > nb + life * 2 / 3 - life / 10);
        // A serving certificate never outlives its CA.
        let (_, serving_na) = p.serving_window(100, &ca);
        assert_eq!(serving_na, na);
    }

    #[test]
    fn jitter_spreads_many_extensions_and_is_stable() {
        let p = Policy::default();
        let cert = |subject: &str| CertInfo {
            not_before: 0,
            not_after: p.validity(),
            subject: subject.into(),
            issuer: subject.into(),
            dns_names: vec![],
        };
        let points: std::collections::BTreeSet<i64> = (0..1000)
            .map(|i| p.renew_at(&cert("CN=ca"), &format!("ext-{i}")))
            .collect();
        // 1000 extensions over a window of 73 days: nearly all at different seconds.
        assert!(points.len() > 990, "{}", points.len());
        let span = points.last().copied().unwrap_or(0) - points.first().copied().unwrap_or(0);
        assert!(
            span > p.validity() / 10 * 9 / 10,
            "spread over the window: {span}"
        );
        // Deterministic: the same inputs give the same point.
        assert_eq!(
            p.renew_at(&cert("CN=ca"), "ext-1"),
            p.renew_at(&cert("CN=ca"), "ext-1")
        );
        assert_eq!(jitter("x", 0), 0);
    }

    #[test]
    fn serving_certificates_are_reissued_for_each_reason() {
        let p = Policy::with_validity(3000);
        let ca = CertInfo {
            not_before: 0,
            not_after: 3000,
            subject: "CN=ca".into(),
            issuer: "CN=ca".into(),
            dns_names: vec![],
        };
        let good = CertInfo {
            not_before: 0,
            not_after: 3000,
            subject: "CN=svc.ns".into(),
            issuer: "CN=ca".into(),
            dns_names: need().dns_names(),
        };
        let step = |c: Option<&CertInfo>, now| serving_step(&p, now, EXT, &need(), c, &ca);
        assert_eq!(step(Some(&good), 10), ServingStep::Keep);
        assert_eq!(step(None, 10), ServingStep::Issue(IssueReason::Missing));
        let mut names = good.clone();
        names.dns_names.pop();
        assert_eq!(
            step(Some(&names), 10),
            ServingStep::Issue(IssueReason::Names)
        );
        let mut other = good.clone();
        other.issuer = "CN=other".into();
        assert_eq!(
            step(Some(&other), 10),
            ServingStep::Issue(IssueReason::Issuer)
        );
        assert_eq!(
            step(Some(&good), 2999),
            ServingStep::Issue(IssueReason::Due)
        );
        assert_eq!(
            step(Some(&good), 3000),
            ServingStep::Issue(IssueReason::Invalid)
        );
        assert_eq!(
            step(Some(&good), -5),
            ServingStep::Issue(IssueReason::Invalid)
        );
    }

    #[test]
    fn an_expired_ca_is_replaced_at_once_or_its_staged_successor_promoted() {
        let p = Policy::with_validity(100);
        let ca = |n: &str, nb, na| CertInfo {
            not_before: nb,
            not_after: na,
            subject: n.into(),
            issuer: n.into(),
            dns_names: vec![],
        };
        let expired = CaState {
            active: Some(ca("CN=a", 0, 100)),
            ..CaState::default()
        };
        assert_eq!(ca_step(&p, 100, EXT, &expired), CaStep::Create);
        let staged = CaState {
            next: Some(Staged {
                cert: ca("CN=b", 90, 190),
                since: 95,
            }),
            ..expired
        };
        assert_eq!(ca_step(&p, 100, EXT, &staged), CaStep::Promote);
        assert_eq!(ca_step(&p, 0, EXT, &CaState::default()), CaStep::Create);
    }
}
