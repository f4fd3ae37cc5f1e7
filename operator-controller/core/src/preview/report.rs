//! The report of `operator-controller preview` (its `-o json` object) and its human text.
//!
//! Input: what the IO side found. Output: JSON (serde) or text, with ANSI colour only when
//! asked. Pure.

use serde::Serialize;

use super::rbac::RoleDelta;
use super::webhooks::WebhookDelta;

/// A bundle: name and version (the catalog and image for a resolved one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleRef {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub catalog: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image: String,
}

/// A bundle newer than the one chosen, and why the resolver does not choose it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotChosen {
    pub name: String,
    pub version: String,
    pub catalog: String,
    pub reasons: Vec<String>,
}

/// What happens to one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    Create,
    Update,
    Unchanged,
    Delete,
    /// Of the installed release, no longer rendered, but not deleted (see `reason`).
    Kept,
    /// Cannot be dry-run now (its kind or namespace is created by the same apply).
    Unknown,
}

impl Change {
    fn word(self) -> &'static str {
        match self {
            Change::Create => "create",
            Change::Update => "update",
            Change::Unchanged => "unchanged",
            Change::Delete => "delete",
            Change::Kept => "kept",
            Change::Unknown => "unknown",
        }
    }
}

/// Fields another manager owns on an updated object; the apply keeps them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeptFields {
    pub manager: String,
    pub fields: Vec<String>,
}

/// One object and its change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectChange {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub change: Change,
    /// Unified diff of the fields our field manager owns (updates only).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diff: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept_fields: Vec<KeptFields>,
    /// Why a `kept` object stays, or why a change is `unknown`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl ObjectChange {
    fn title(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {}/{}", self.kind, ns, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

/// The CRD upgrade-safety result of one rendered CRD that is installed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdCheck {
    pub name: String,
    /// `safe`, `unsafe` (the controller refuses), `allowed` (upstream refuses, the change is
    /// proven safe or the data-aware check lets it through) or `skipped` (enforcement None).
    pub verdict: String,
    /// Upstream's message (`validating upgrade for CRD …`), empty when upstream passes it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub upstream: String,
}

/// What the preview found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub extension: String,
    pub package: String,
    pub installed: Option<BundleRef>,
    /// The bundle the controller would install (`null` when nothing resolves).
    pub target: Option<BundleRef>,
    /// `install`, `upgrade`, `retry` (a failed attempt at the same release), `unchanged` (the
    /// installed release, applied again), `keep-installed` (nothing resolves; the installed
    /// release stays applied) or `none` (nothing resolves, nothing installed).
    pub action: String,
    /// Whether the controller would apply the change.
    pub would_apply: bool,
    /// The message the controller would write into `Progressing` when it refuses; else empty.
    pub message: String,
    /// When the bundle stays: the newer bundles and why the resolver does not choose them.
    pub newer_not_chosen: Vec<NotChosen>,
    pub objects: Vec<ObjectChange>,
    pub rbac: Vec<RoleDelta>,
    pub crds: Vec<CrdCheck>,
    /// Data-aware check: warnings (allowed) or the refusal lines.
    pub data_aware: Vec<String>,
    /// CRDs of the installed release no longer rendered, kept because custom resources exist.
    pub crds_kept_for_custom_resources: Vec<String>,
    pub webhooks: Vec<WebhookDelta>,
    /// Anything else the reader should know (what the preview could not check).
    pub notes: Vec<String>,
}

struct Paint {
    on: bool,
}

impl Paint {
    fn code(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn red(&self, t: &str) -> String {
        self.code("31", t)
    }
    fn green(&self, t: &str) -> String {
        self.code("32", t)
    }
    fn yellow(&self, t: &str) -> String {
        self.code("33", t)
    }
    fn bold(&self, t: &str) -> String {
        self.code("1", t)
    }
    fn diff_line(&self, line: &str) -> String {
        if line.starts_with("+++") || line.starts_with("---") {
            self.bold(line)
        } else if line.starts_with('+') {
            self.green(line)
        } else if line.starts_with('-') {
            self.red(line)
        } else if line.starts_with("@@") {
            self.code("36", line)
        } else {
            line.to_owned()
        }
    }
}

fn bundle_text(b: &BundleRef) -> String {
    format!("{} (version {})", b.name, b.version)
}

impl Report {
    /// Whether the controller would leave everything as it is: the installed release stays
    /// and no object of it changes.
    pub fn changes_nothing(&self) -> bool {
        matches!(self.action.as_str(), "unchanged" | "keep-installed")
            && self.objects.iter().all(|o| o.change == Change::Unchanged)
    }

    /// The human text; `colour` adds ANSI colours (for a terminal).
    pub fn human(&self, colour: bool) -> String {
        let p = Paint { on: colour };
        let mut s = String::new();
        s.push_str(&p.bold(&format!(
            "ClusterExtension {} (package {})",
            self.extension, self.package
        )));
        s.push('\n');
        let installed = self
            .installed
            .as_ref()
            .map(bundle_text)
            .unwrap_or_else(|| "nothing installed".into());
        match (&self.target, self.action.as_str()) {
            (Some(t), "unchanged") => s.push_str(&format!(
                "Bundle: {installed}: no bundle change (chosen again from catalog {})\n",
                t.catalog
            )),
            (Some(t), action) => s.push_str(&format!(
                "Bundle: {installed} -> {} from catalog {} ({action})\n",
                bundle_text(t),
                t.catalog
            )),
            (None, _) => s.push_str(&format!("Bundle: {installed}: nothing resolves\n")),
        }
        if !self.newer_not_chosen.is_empty() {
            s.push_str("Newer bundles not chosen:\n");
            for n in &self.newer_not_chosen {
                s.push_str(&format!(
                    "  {} (version {}, catalog {}): {}\n",
                    n.name,
                    n.version,
                    n.catalog,
                    n.reasons.join("; ")
                ));
            }
        }
        if !self.would_apply {
            s.push('\n');
            s.push_str(&p.red("The controller would refuse this change:"));
            s.push('\n');
            for line in self.message.lines() {
                s.push_str(&format!("  {line}\n"));
            }
        }
        if !self.objects.is_empty() {
            s.push_str("\nObjects:\n");
            let width = self
                .objects
                .iter()
                .map(|o| o.change.word().len())
                .max()
                .unwrap_or(0);
            for o in &self.objects {
                let word = format!("{:<width$}", o.change.word());
                let word = match o.change {
                    Change::Create => p.green(&word),
                    Change::Delete => p.red(&word),
                    Change::Update | Change::Kept | Change::Unknown => p.yellow(&word),
                    Change::Unchanged => word,
                };
                s.push_str(&format!("  {word}  {}", o.title()));
                if !o.reason.is_empty() {
                    s.push_str(&format!(" ({})", o.reason));
                }
                s.push('\n');
                for line in o.diff.lines() {
                    s.push_str(&format!("      {}\n", p.diff_line(line)));
                }
                for k in &o.kept_fields {
                    s.push_str(&format!(
                        "      kept (managed by {}): {}\n",
                        k.manager,
                        k.fields.join(", ")
                    ));
                }
            }
        }
        if !self.rbac.is_empty() {
            s.push_str("\nRBAC:\n");
            for r in &self.rbac {
                let title = match &r.namespace {
                    Some(ns) => format!("{} {}/{}", r.kind, ns, r.name),
                    None => format!("{} {}", r.kind, r.name),
                };
                let title = match &r.replaces {
                    Some(old) => format!("{title} (replaces {old})"),
                    None => title,
                };
                let verdict = if r.widens() {
                    p.red("widens permissions")
                } else {
                    "does not widen permissions".into()
                };
                s.push_str(&format!("  {title}: {verdict}\n"));
                for rule in &r.added {
                    s.push_str(&format!("    {}\n", p.green(&format!("+ {rule}"))));
                }
                for rule in &r.removed {
                    s.push_str(&format!("    {}\n", p.red(&format!("- {rule}"))));
                }
                for w in &r.widening {
                    s.push_str(&format!("    {} {w}\n", p.red("!")));
                }
            }
        }
        if !self.crds.is_empty() || !self.crds_kept_for_custom_resources.is_empty() {
            s.push_str("\nCRD upgrade safety:\n");
            for c in &self.crds {
                let verdict = match c.verdict.as_str() {
                    "unsafe" => p.red("unsafe"),
                    "safe" => p.green("safe"),
                    other => p.yellow(other),
                };
                s.push_str(&format!("  {}: {verdict}\n", c.name));
                for line in c.upstream.lines() {
                    s.push_str(&format!("    {line}\n"));
                }
            }
            for line in &self.data_aware {
                s.push_str(&format!("  data-aware: {line}\n"));
            }
            for name in &self.crds_kept_for_custom_resources {
                s.push_str(&format!(
                    "  {name}: no longer rendered, kept because custom resources of it exist\n"
                ));
            }
        }
        if !self.webhooks.is_empty() {
            s.push_str("\nWebhooks:\n");
            for w in &self.webhooks {
                s.push_str(&format!("  {} {}:", w.kind, w.configuration));
                for (label, names) in [
                    ("added", &w.added),
                    ("removed", &w.removed),
                    ("changed", &w.changed),
                ] {
                    if !names.is_empty() {
                        s.push_str(&format!(" {label} {}", names.join(", ")));
                    }
                }
                s.push('\n');
            }
        }
        if !self.notes.is_empty() {
            s.push_str("\nNotes:\n");
            for n in &self.notes {
                s.push_str(&format!("  {n}\n"));
            }
        }
        s.push('\n');
        s.push_str(&if self.would_apply && self.changes_nothing() {
            p.green("Result: nothing would change (nothing was written).")
        } else if self.would_apply {
            p.green("Result: the controller would apply this change (nothing was written).")
        } else {
            p.red("Result: the controller would refuse this change (nothing was written).")
        });
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        Report {
            extension: "e".into(),
            package: "p".into(),
            installed: Some(BundleRef {
                name: "p.v1".into(),
                version: "1.0.0".into(),
                ..BundleRef::default()
            }),
            target: Some(BundleRef {
                name: "p.v2".into(),
                version: "2.0.0".into(),
                catalog: "c".into(),
                image: "r/p:v2".into(),
            }),
            action: "upgrade".into(),
            would_apply: true,
            objects: vec![ObjectChange {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("ns".into()),
                name: "d".into(),
                change: Change::Update,
                diff: "--- live\n+++ after apply\n@@ -1,1 +1,1 @@\n-a\n+b\n".into(),
                kept_fields: vec![],
                reason: String::new(),
            }],
            ..Report::default()
        }
    }

    #[test]
    fn the_human_text_names_the_bundle_change_and_each_object() {
        let text = report().human(false);
        assert!(
            text.contains(
                "Bundle: p.v1 (version 1.0.0) -> p.v2 (version 2.0.0) from catalog c (upgrade)"
            ),
            "{text}"
        );
        assert!(
            text.contains("  update  Deployment ns/d\n      --- live\n"),
            "{text}"
        );
        assert!(text.contains("would apply"), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(report().human(true).contains("\x1b[32m+b\x1b[0m"));
    }

    #[test]
    fn an_unchanged_release_changes_nothing() {
        let mut r = report();
        r.action = "unchanged".into();
        assert!(!r.changes_nothing(), "the Deployment would be updated");
        r.objects[0].change = Change::Unchanged;
        r.objects[0].diff.clear();
        assert!(r.changes_nothing());
        assert!(r.human(false).contains("Result: nothing would change"));
    }

    #[test]
    fn the_json_uses_camel_case_and_lower_case_changes() {
        let v = serde_json::to_value(report()).unwrap();
        assert_eq!(v["wouldApply"], true);
        assert_eq!(v["objects"][0]["change"], "update");
        assert_eq!(v["objects"][0]["apiVersion"], "apps/v1");
        assert_eq!(v["target"]["image"], "r/p:v2");
    }

    #[test]
    fn a_refusal_prints_the_controllers_message() {
        let mut r = report();
        r.would_apply = false;
        r.message = "error for resolved bundle \"p.v2\": line one\nline two".into();
        let text = r.human(false);
        assert!(text.contains("would refuse this change:\n  error for resolved bundle \"p.v2\": line one\n  line two\n"), "{text}");
    }
}
