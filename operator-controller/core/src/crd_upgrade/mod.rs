//! CRD upgrade safety: upstream's verdicts and messages, minus its false positives, plus a
//! data-aware check of stored custom resources.
//!
//! Input: the installed CRD and the CRD an upgrade wants to apply, both decoded into [`Crd`]
//! (and, for the data-aware step, the stored custom resources as JSON values). Output: an
//! [`UpgradeVerdict`] listing every issue upstream would report, each flagged when this check
//! proves it cannot invalidate stored data; the `Progressing` message; object violations.
//! No IO: the controller and the CLI read the inputs.
//!
//! Upstream (operator-controller `df2c201d` with crdify `bb9957dbf465`, its
//! `rukpak/preflights/crdupgradesafety` package) runs three passes: CRD-wide rules, each version against
//! the same version of the old CRD, and every pair of served versions inside the new CRD (minus
//! issues the old CRD already had; skipped when the new CRD converts by webhook). [`rules`]
//! reproduces them with upstream's exact texts; [`gocmp`] and [`unhandled`] reproduce the
//! `unhandled` catch-all's go-cmp report and its condensed form.
//!
//! # Decision table: what upstream refuses and this check allows
//!
//! The question asked of every change is: *can an object the API server accepted under the old
//! schema become invalid, or lose data, under the new one?* If not, the change is allowed (and
//! still listed as "upstream would refuse this"). Anything not proven safe stays refused; the
//! data-aware step ([`validate`]) can then show that no stored object is affected.
//!
//! | change (upstream's report)                                   | here    | why |
//! |--------------------------------------------------------------|---------|-----|
//! | `nullable` added (`nullable added : false -> true`)          | allowed | loosening: values valid before stay valid; `null` becomes valid too |
//! | `nullable` removed                                           | refused | a stored `null` would no longer validate |
//! | `pattern` removed                                            | allowed | a constraint is dropped |
//! | `pattern` added or changed                                   | refused | tightening, or a different language; data-aware can check |
//! | `enum` dropped entirely (`allowed enum values removed : [all]`) | allowed | a constraint is dropped |
//! | `enum` values removed, or an enum added                      | refused | tightening |
//! | `default` added, changed or removed                          | allowed | a default never makes a stored object invalid: the API server validates the new default against the new schema, objects written under the old default keep it persisted, and defaults only fill absent fields |
//! | `type` `integer` → `number`; `string`/`integer` → int-or-string | allowed | widening: every stored value of the old type is valid under the new type |
//! | any other `type` change                                      | refused | stored values of the old type become invalid |
//! | `format` removed                                             | allowed | a constraint is dropped |
//! | `format` added or changed                                    | refused | may reject stored strings (data-aware checks the known formats) |
//! | `description`, `title`, `example`, `externalDocs` edits      | allowed | documentation only; no effect on validation (upstream already ignores `description`) |
//! | `x-kubernetes-validations`: a rule removed, or only its `message`/`messageExpression`/`reason`/`fieldPath` changed | allowed | loosening, or error text only |
//! | `x-kubernetes-validations`: a rule added or its text changed, `optionalOldSelf` changed | refused | a new constraint that stored objects may fail; additive CEL rules are never proven safe |
//! | `x-kubernetes-preserve-unknown-fields: true` added (root or nested) | allowed | unknown fields stop being pruned: no data can be lost |
//! | `x-kubernetes-preserve-unknown-fields: true` removed         | refused | unknown stored fields would be pruned on read |
//! | `x-kubernetes-map-type` added or changed                     | allowed | only changes server-side-apply ownership of the map, not what is valid |
//! | `x-kubernetes-list-type: atomic` added (or any type → `atomic`/absent) | allowed | `atomic` is the default for lists and adds no constraint |
//! | `x-kubernetes-list-type: set`/`map`, or changed `list-map-keys` | refused | adds uniqueness/key constraints stored lists may break |
//! | `exclusiveMinimum`/`exclusiveMaximum`/`uniqueItems` removed, `multipleOf` removed | allowed | a constraint is dropped |
//! | the same added, `multipleOf` added or changed               | refused | tightening |
//! | `allOf` entries removed; `anyOf` dropped or entries added; `not` dropped | allowed | fewer conjuncts / more alternatives: looser |
//! | `allOf` entries added; `anyOf` added or entries removed; `not` added or changed | refused | tightening (`not` inverts every nested change) |
//! | `allOf`/`anyOf` entries changed in place                     | allowed at the parent | each entry is compared at its own path (`^.x.anyOf[0]`), where the usual rules judge it |
//! | `oneOf` dropped entirely                                     | allowed | a constraint is dropped |
//! | `oneOf` added, or variants added/removed                     | refused | a value may match zero or two variants |
//! | `existingFieldRemoval` of a path inside `allOf`/`anyOf`/`oneOf`/`not`, and every issue at such a removed path | allowed | those schemas hold no data fields; the composition change is judged at the parent |
//! | `additionalProperties` schema changed in place               | allowed at the parent | the value schema is compared at `^.x.additionalProperties` |
//! | `additionalProperties` added, removed or switched bool/schema | refused | map values are pruned or constrained |
//! | field removal, scope change, stored version removal, required/min/max tightening, `x-kubernetes-embedded-resource` changes | refused | as upstream |
//!
//! Served-version pairs use the same table (the lower version plays "old").
//!
//! Upstream's served-version ratcheting compares `required` texts whose lists it prints in random
//! order, so one upgrade can pass or fail from run to run. Here every list is sorted, so the
//! same issue always matches and the verdict is stable.

pub mod classify;
pub mod gocmp;
pub mod gofmt;
pub mod message;
pub mod model;
pub mod rules;
pub mod unhandled;
pub mod validate;
pub mod yaml;

pub use classify::SafeChange;
pub use message::{MAX_CONDITION_MESSAGE_BYTES, compose_progressing_message, summary_line};
pub use model::{Crd, CrdVersion, DecodeError, Schema};
pub use rules::Group;
pub use validate::{ObjectViolation, ViolationKind, validate_objects};

use olm_api::v1::ConditionReason;

/// `spec.install.preflight.crdUpgradeSafety.enforcement`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Enforcement {
    /// Run the check and refuse unsafe upgrades (the default; an absent block means Strict).
    #[default]
    Strict,
    /// Skip the check entirely.
    None,
}

/// How [`check_upgrade`] decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    pub enforcement: Enforcement,
    /// Allow the changes upstream refuses that are proven safe (the decision table). `false`
    /// gives upstream's verdict exactly.
    pub allow_safe_changes: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            enforcement: Enforcement::Strict,
            allow_safe_changes: true,
        }
    }
}

/// One issue upstream's check reports.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    pub group: Group,
    /// `v1` for same-version issues, `v1 -> v2` for served-version ones, empty for CRD-wide ones.
    pub version: String,
    /// The flattened property path (`^.spec.foo`), empty for CRD-wide issues.
    pub path: String,
    /// The rule (`enum`, `type`, `unhandled`, `existingFieldRemoval`, …).
    pub rule: String,
    /// The rule's text exactly as upstream prints it (`unhandled` condensed as upstream does).
    pub message: String,
    /// Set when upstream refuses this but the change is proven safe ([`SafeChange`]); such a
    /// violation does not block the upgrade when [`CheckOptions::allow_safe_changes`] is on.
    pub allowed: Option<SafeChange>,
}

impl Violation {
    /// The entry as upstream joins it into its message: `<rule>: <text>` for CRD-wide issues,
    /// `<version>: <path>: <rule>: <text>` otherwise.
    pub fn entry(&self) -> String {
        if self.group == Group::CrdWide {
            format!("{}: {}", self.rule, self.message)
        } else {
            format!(
                "{}: {}: {}: {}",
                self.version, self.path, self.rule, self.message
            )
        }
    }
}

/// The outcome of comparing one installed CRD with its replacement.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeVerdict {
    /// `metadata.name` of the new CRD.
    pub crd: String,
    /// Whether the check was skipped (enforcement `None`).
    pub skipped: bool,
    /// Whether flagged violations are allowed ([`CheckOptions::allow_safe_changes`]).
    pub allow_safe_changes: bool,
    /// Every issue upstream reports, sorted by group, version, path, rule and text.
    pub violations: Vec<Violation>,
}

impl UpgradeVerdict {
    /// The violations that block the upgrade.
    pub fn blocking(&self) -> impl Iterator<Item = &Violation> {
        self.violations
            .iter()
            .filter(|v| !(self.allow_safe_changes && v.allowed.is_some()))
    }

    /// True when nothing blocks the upgrade.
    pub fn is_safe(&self) -> bool {
        self.blocking().next().is_none()
    }

    /// True when upstream's check would refuse this upgrade.
    pub fn upstream_refuses(&self) -> bool {
        !self.skipped && !self.violations.is_empty()
    }

    /// `validating upgrade for CRD "<name>": <blocking entries joined by "\n">`, or `None` when
    /// nothing blocks.
    pub fn message(&self) -> Option<String> {
        let entries: Vec<String> = self.blocking().map(Violation::entry).collect();
        (!entries.is_empty()).then(|| crd_message(&self.crd, &entries))
    }

    /// The message upstream itself would print (every entry), or `None` when it would pass.
    pub fn upstream_message(&self) -> Option<String> {
        let entries: Vec<String> = self.violations.iter().map(Violation::entry).collect();
        (!entries.is_empty() && !self.skipped).then(|| crd_message(&self.crd, &entries))
    }
}

fn crd_message(crd: &str, entries: &[String]) -> String {
    format!(
        "validating upgrade for CRD {}: {}",
        gofmt::quote(crd),
        entries.join("\n")
    )
}

/// Compares the installed CRD `old` with the CRD `new` an upgrade would apply.
pub fn check_upgrade(old: &Crd, new: &Crd, opts: &CheckOptions) -> UpgradeVerdict {
    let mut verdict = UpgradeVerdict {
        crd: new.name.clone(),
        skipped: opts.enforcement == Enforcement::None,
        allow_safe_changes: opts.allow_safe_changes,
        violations: Vec::new(),
    };
    if verdict.skipped {
        return verdict;
    }
    let (issues, contexts) = rules::run(old, new);
    for issue in issues {
        let ctx = contexts.get(&(issue.group, issue.version.clone(), issue.path.clone()));
        let allowed = classify::classify(&issue, ctx);
        let message = if issue.rule == "unhandled" {
            unhandled::concise(&issue.message)
        } else {
            issue.message.clone()
        };
        verdict.violations.push(Violation {
            group: issue.group,
            version: issue.version,
            path: issue.path,
            rule: issue.rule,
            message,
            allowed,
        });
    }
    verdict.violations.sort_by(|a, b| {
        (a.group, &a.version, &a.path, &a.rule, &a.message)
            .cmp(&(b.group, &b.version, &b.path, &b.rule, &b.message))
    });
    verdict
}

/// Why the CRD upgrade step did not let the upgrade through. Never terminal: upstream retries
/// with backoff (a new bundle or a CRD change can clear it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CrdUpgradeError {
    /// At least one CRD change is unsafe; the text is [`UpgradeVerdict::message`] for each such
    /// CRD, joined with `\n` (the controller wraps it with the bundle, see [`message`]).
    #[error("{0}")]
    Unsafe(String),
    /// A CRD could not be decoded as upstream decodes it.
    #[error("converting unstructured to CRD object: {0}")]
    Decode(#[from] DecodeError),
}

impl CrdUpgradeError {
    /// The reason of the `Progressing` condition this error sets.
    pub fn condition_reason(&self) -> ConditionReason {
        ConditionReason::Retrying
    }

    /// Whether only a spec change can clear it (never: the check is retried).
    pub fn is_terminal(&self) -> bool {
        false
    }
}

/// Runs [`check_upgrade`] for every (installed, new) CRD pair and turns the blocking ones into
/// one error, as upstream joins them.
pub fn check_all(
    pairs: &[(&Crd, &Crd)],
    opts: &CheckOptions,
) -> Result<Vec<UpgradeVerdict>, CrdUpgradeError> {
    let verdicts: Vec<UpgradeVerdict> = pairs
        .iter()
        .map(|(old, new)| check_upgrade(old, new, opts))
        .collect();
    let messages: Vec<String> = verdicts
        .iter()
        .filter_map(UpgradeVerdict::message)
        .collect();
    if messages.is_empty() {
        Ok(verdicts)
    } else {
        Err(CrdUpgradeError::Unsafe(messages.join("\n")))
    }
}

/// The data-aware decision for one CRD whose verdict is unsafe.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataAwareOutcome {
    /// Whether the upgrade may proceed (with [`DataAwareOutcome::warning`] in the status).
    pub allowed: bool,
    /// How many stored objects were checked.
    pub objects_checked: usize,
    /// What the stored objects break under the new schema (and the rules not evaluated).
    pub violations: Vec<ObjectViolation>,
    /// Why the upgrade stays refused, when it does.
    pub refusal: Option<String>,
}

impl DataAwareOutcome {
    /// The warning for the status message when an upstream refusal is overruled by the data.
    pub fn warning(&self, verdict: &UpgradeVerdict) -> Option<String> {
        (self.allowed && !verdict.is_safe()).then(|| {
            let n = verdict.blocking().count();
            format!(
                "CRD {}: upstream's check refuses this upgrade ({n} violation{}); allowed because no stored object violates the new schema ({} checked)",
                gofmt::quote(&verdict.crd),
                if n == 1 { "" } else { "s" },
                objects_checked_text(self.objects_checked)
            )
        })
    }
}

fn objects_checked_text(n: usize) -> String {
    if n == 1 {
        "1 object".into()
    } else {
        format!("{n} objects")
    }
}

/// Decides whether stored data lets an unsafe upgrade through.
///
/// | blocking issues | stored objects | outcome |
/// |---|---|---|
/// | none | any | allowed |
/// | `storedVersionRemoval` | any | refused: the API server refuses to drop a stored version |
/// | `scope` | none | allowed: nothing is stored |
/// | `scope` | some | refused: every stored object changes identity |
/// | others | none violate the new schema, no rule left unevaluated | allowed, with a warning |
/// | others | a violation or an unevaluated rule (CEL) on some object | refused, naming the objects |
pub fn data_aware_decision(
    old: &Crd,
    new: &Crd,
    verdict: &UpgradeVerdict,
    objects: &[serde_json::Value],
) -> DataAwareOutcome {
    let mut outcome = DataAwareOutcome {
        allowed: true,
        objects_checked: objects.len(),
        violations: Vec::new(),
        refusal: None,
    };
    if verdict.is_safe() {
        return outcome;
    }
    let blocking: Vec<&Violation> = verdict.blocking().collect();
    if blocking.iter().any(|v| v.rule == "storedVersionRemoval") {
        outcome.allowed = false;
        outcome.refusal = Some("a stored version is removed".into());
        return outcome;
    }
    if blocking.iter().any(|v| v.rule == "scope") && !objects.is_empty() {
        outcome.allowed = false;
        outcome.refusal = Some(format!(
            "the scope changes and {} stored",
            objects_checked_text(objects.len())
        ));
        return outcome;
    }
    outcome.violations = validate::validate_objects_since(Some(old), new, objects);
    if !outcome.violations.is_empty() {
        outcome.allowed = false;
        let objects: std::collections::BTreeSet<String> = outcome
            .violations
            .iter()
            .map(ObjectViolation::object)
            .collect();
        outcome.refusal = Some(format!(
            "stored objects do not validate against the new schema: {}",
            objects.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    outcome
}
