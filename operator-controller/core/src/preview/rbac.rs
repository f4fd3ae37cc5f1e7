//! The RBAC delta of a ClusterRole or Role: rules added and removed, and whether the new rules
//! grant anything the old ones did not (widening).
//!
//! Input: per role and per binding, the live object (or none) and the object as it would be
//! after the apply (or none). Output: a [`RoleDelta`] per role whose rules change. Pure.
//! Generated role names carry the bundle version, so an upgrade creates new roles and deletes
//! the old ones; a created role bound to the same subjects as a deleted one replaces it, and
//! its delta is relative to that one.
//!
//! A rule grants a set of requests: (API group, resource, verb), optionally limited to
//! resource names, or (non-resource URL, verb). A request of an added rule widens permissions
//! when no rule of the baseline grants it: what the installed release's roles granted in that
//! scope ([`release_delta`]; generated role names carry the bundle version, so an upgrade
//! creates new roles and deletes the old ones). `*` in a baseline rule grants every value, and
//! a trailing `*` of a non-resource URL every URL it prefixes. Each widening request is
//! classified:
//!
//! | what | [`WideningKind`] |
//! |---|---|
//! | `*` as group, resource, verb or URL | `Wildcard` |
//! | verb `escalate`, `bind` or `impersonate` | `Escalation` |
//! | a resource (or URL) no old rule names | `NewResource` |
//! | a resource old rules name, with another verb | `NewVerb` |
//! | the same resource and verb, no longer limited to the old resource names | `WiderNames` |

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

/// One policy rule, as in `rbac.authorization.k8s.io/v1`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
    pub verbs: Vec<String>,
}

impl Rule {
    fn from_json(v: &Value) -> Rule {
        let list = |field: &str| -> Vec<String> {
            v.get(field)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        Rule {
            api_groups: list("apiGroups"),
            resources: list("resources"),
            resource_names: list("resourceNames"),
            non_resource_urls: list("nonResourceURLs"),
            verbs: list("verbs"),
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |v: &[String]| v.join(",");
        if !self.non_resource_urls.is_empty() {
            return write!(
                f,
                "nonResourceURLs=[{}] verbs=[{}]",
                join(&self.non_resource_urls),
                join(&self.verbs)
            );
        }
        let groups: Vec<String> = self
            .api_groups
            .iter()
            .map(|g| {
                if g.is_empty() {
                    "\"\"".into()
                } else {
                    g.clone()
                }
            })
            .collect();
        write!(
            f,
            "apiGroups=[{}] resources=[{}] verbs=[{}]",
            groups.join(","),
            join(&self.resources),
            join(&self.verbs)
        )?;
        if !self.resource_names.is_empty() {
            write!(f, " resourceNames=[{}]", join(&self.resource_names))?;
        }
        Ok(())
    }
}

/// The rules of a ClusterRole or Role object (`rules`).
pub fn rules_of(object: &Value) -> Vec<Rule> {
    object
        .get("rules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(Rule::from_json).collect())
        .unwrap_or_default()
}

/// How a request of a new rule widens permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum WideningKind {
    Wildcard,
    Escalation,
    NewResource,
    NewVerb,
    WiderNames,
}

/// One request the new rules grant and the old ones do not.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Widening {
    pub kind: WideningKind,
    /// `verb group/resource` or `verb URL`, e.g. `create apps/deployments`.
    pub what: String,
}

impl std::fmt::Display for Widening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            WideningKind::Wildcard => "wildcard",
            WideningKind::Escalation => "escalation",
            WideningKind::NewResource => "new resource",
            WideningKind::NewVerb => "new verb",
            WideningKind::WiderNames => "any resource name",
        };
        write!(f, "{kind}: {}", self.what)
    }
}

/// The rule changes of one role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleDelta {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    /// The role of the installed release this one takes the place of (generated names change
    /// with the bundle version): deleted, bound to the same subjects. `added` and `removed`
    /// are then relative to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    pub added: Vec<Rule>,
    pub removed: Vec<Rule>,
    /// Empty when the new rules grant nothing the old ones did not.
    pub widening: Vec<Widening>,
}

impl RoleDelta {
    pub fn widens(&self) -> bool {
        !self.widening.is_empty()
    }
}

/// One request a rule grants.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Request {
    Resource {
        group: String,
        resource: String,
        verb: String,
        /// Empty: any name.
        names: Vec<String>,
    },
    Url {
        url: String,
        verb: String,
    },
}

fn requests(rule: &Rule) -> Vec<Request> {
    let mut out = Vec::new();
    for verb in &rule.verbs {
        for url in &rule.non_resource_urls {
            out.push(Request::Url {
                url: url.clone(),
                verb: verb.clone(),
            });
        }
        for group in &rule.api_groups {
            for resource in &rule.resources {
                out.push(Request::Resource {
                    group: group.clone(),
                    resource: resource.clone(),
                    verb: verb.clone(),
                    names: rule.resource_names.clone(),
                });
            }
        }
    }
    out
}

fn has(values: &[String], value: &str) -> bool {
    values.iter().any(|v| v == "*" || v == value)
}

fn grants(rule: &Rule, request: &Request) -> bool {
    match request {
        Request::Url { url, verb } => {
            has(&rule.verbs, verb)
                && rule
                    .non_resource_urls
                    .iter()
                    .any(|u| u == url || u.strip_suffix('*').is_some_and(|p| url.starts_with(p)))
        }
        Request::Resource {
            group,
            resource,
            verb,
            names,
        } => {
            has(&rule.verbs, verb)
                && has(&rule.api_groups, group)
                && has(&rule.resources, resource)
                && (rule.resource_names.is_empty()
                    || (!names.is_empty() && names.iter().all(|n| rule.resource_names.contains(n))))
        }
    }
}

fn classify(request: &Request, old: &[Rule]) -> WideningKind {
    const ESCALATING: [&str; 3] = ["escalate", "bind", "impersonate"];
    match request {
        Request::Url { url, verb } => {
            if url.contains('*') || verb == "*" {
                WideningKind::Wildcard
            } else if old.iter().any(|r| r.non_resource_urls.contains(url)) {
                WideningKind::NewVerb
            } else {
                WideningKind::NewResource
            }
        }
        Request::Resource {
            group,
            resource,
            verb,
            ..
        } => {
            if group == "*" || resource == "*" || verb == "*" {
                return WideningKind::Wildcard;
            }
            if ESCALATING.contains(&verb.as_str()) {
                return WideningKind::Escalation;
            }
            let names_resource =
                |r: &Rule| has(&r.api_groups, group) && has(&r.resources, resource);
            if !old.iter().any(names_resource) {
                WideningKind::NewResource
            } else if !old.iter().any(|r| names_resource(r) && has(&r.verbs, verb)) {
                WideningKind::NewVerb
            } else {
                WideningKind::WiderNames
            }
        }
    }
}

fn describe(request: &Request) -> String {
    match request {
        Request::Url { url, verb } => format!("{verb} {url}"),
        Request::Resource {
            group,
            resource,
            verb,
            names,
        } => {
            let target = if group.is_empty() {
                resource.clone()
            } else {
                format!("{group}/{resource}")
            };
            if names.is_empty() {
                format!("{verb} {target}")
            } else {
                format!("{verb} {target} ({})", names.join(","))
            }
        }
    }
}

/// The delta between the live role `old` and `new` (either absent: created or deleted), `None`
/// when their rules are the same. Widening is judged against `baseline`: what the installed
/// release granted in the role's scope ([`release_delta`]), so a role renamed by an upgrade
/// (generated names carry the bundle version) widens only by what it adds.
pub fn role_delta(
    old: Option<&Value>,
    new: Option<&Value>,
    baseline: &[Rule],
) -> Option<RoleDelta> {
    let any = new.or(old)?;
    let old_rules = old.map(rules_of).unwrap_or_default();
    let new_rules = new.map(rules_of).unwrap_or_default();
    let old_set: BTreeSet<&Rule> = old_rules.iter().collect();
    let new_set: BTreeSet<&Rule> = new_rules.iter().collect();
    if old_set == new_set && old.is_some() == new.is_some() {
        return None;
    }
    let added: Vec<Rule> = new_rules
        .iter()
        .filter(|r| !old_set.contains(r))
        .cloned()
        .collect();
    let removed: Vec<Rule> = old_rules
        .iter()
        .filter(|r| !new_set.contains(r))
        .cloned()
        .collect();
    let mut widening: BTreeSet<Widening> = BTreeSet::new();
    for request in added.iter().flat_map(requests) {
        if baseline.iter().any(|r| grants(r, &request)) {
            continue;
        }
        widening.insert(Widening {
            kind: classify(&request, baseline),
            what: describe(&request),
        });
    }
    let text = |field: &str| {
        any.pointer(field)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Some(RoleDelta {
        kind: text("/kind").unwrap_or_default(),
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name").unwrap_or_default(),
        replaces: None,
        added,
        removed,
        widening: widening.into_iter().collect(),
    })
}

/// One role or binding of a release: `(before, after)`, either absent (created or deleted).
pub type RolePair<'a> = (Option<&'a Value>, Option<&'a Value>);

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `(kind, namespace, name)` of a role, as bindings refer to it.
type RoleKey = (String, Option<String>, String);

fn role_key(role: &Value) -> RoleKey {
    let kind = str_at(role, "/kind").to_owned();
    let namespace = (kind == "Role").then(|| str_at(role, "/metadata/namespace").to_owned());
    (kind, namespace, str_at(role, "/metadata/name").to_owned())
}

/// The subjects each role is bound to by `bindings` (`kind namespace/name`, sorted).
fn subjects_by_role<'a>(
    bindings: impl Iterator<Item = &'a Value>,
) -> BTreeMap<RoleKey, BTreeSet<String>> {
    let mut by_role: BTreeMap<RoleKey, BTreeSet<String>> = BTreeMap::new();
    for binding in bindings {
        let kind = str_at(binding, "/roleRef/kind").to_owned();
        let namespace = (kind == "Role").then(|| str_at(binding, "/metadata/namespace").to_owned());
        let key = (kind, namespace, str_at(binding, "/roleRef/name").to_owned());
        let subjects = binding
            .get("subjects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| {
                format!(
                    "{} {}/{}",
                    str_at(s, "/kind"),
                    str_at(s, "/namespace"),
                    str_at(s, "/name")
                )
            });
        by_role.entry(key).or_default().extend(subjects);
    }
    by_role
}

/// The deltas of every role of a release. A created role bound (by the new bindings) to
/// exactly the subjects a deleted role of the same kind and namespace was bound to (by the
/// installed bindings) replaces it: one delta, relative to it. The baseline of widening for a
/// ClusterRole is every rule of the installed release's ClusterRoles; for a Role, those plus
/// its namespace's Roles. Roles whose rules stay the same are left out.
pub fn release_delta(roles: &[RolePair<'_>], bindings: &[RolePair<'_>]) -> Vec<RoleDelta> {
    let kind = |v: &Value| str_at(v, "/kind").to_owned();
    let namespace = |v: &Value| {
        v.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let before: Vec<&Value> = roles.iter().filter_map(|(old, _)| *old).collect();
    let cluster: Vec<Rule> = before
        .iter()
        .filter(|v| kind(v) == "ClusterRole")
        .flat_map(|v| rules_of(v))
        .collect();
    let bound_before = subjects_by_role(bindings.iter().filter_map(|(old, _)| *old));
    let bound_after = subjects_by_role(bindings.iter().filter_map(|(_, new)| *new));
    // Pair created roles with the deleted roles they replace.
    let mut pairs: Vec<RolePair<'_>> = Vec::new();
    let mut deleted: Vec<&Value> = roles
        .iter()
        .filter(|(old, new)| old.is_some() && new.is_none())
        .filter_map(|(old, _)| *old)
        .collect();
    let mut replaced: BTreeMap<usize, String> = BTreeMap::new();
    for (old, new) in roles {
        if let (None, Some(created)) = (old, new) {
            let subjects = bound_after
                .get(&role_key(created))
                .filter(|s| !s.is_empty());
            let predecessor = subjects.and_then(|subjects| {
                deleted.iter().position(|d| {
                    let (k, ns, _) = role_key(d);
                    let (ck, cns, _) = role_key(created);
                    k == ck && ns == cns && bound_before.get(&role_key(d)) == Some(subjects)
                })
            });
            if let Some(i) = predecessor {
                let d = deleted.remove(i);
                replaced.insert(pairs.len(), str_at(d, "/metadata/name").to_owned());
                pairs.push((Some(d), Some(created)));
                continue;
            }
        }
        pairs.push((*old, *new));
    }
    let paired: BTreeSet<&str> = replaced.values().map(String::as_str).collect();
    pairs
        .iter()
        .enumerate()
        .filter(|(_, (old, new))| {
            // A deleted role that a created one replaces is reported with it.
            !(new.is_none() && old.is_some_and(|o| paired.contains(str_at(o, "/metadata/name"))))
        })
        .filter_map(|(i, (old, new))| {
            let any = new.or(*old)?;
            let mut baseline = cluster.clone();
            if kind(any) == "Role" {
                let ns = namespace(any);
                baseline.extend(
                    before
                        .iter()
                        .filter(|v| kind(v) == "Role" && namespace(v) == ns)
                        .flat_map(|v| rules_of(v)),
                );
            }
            let mut delta = role_delta(*old, *new, &baseline)?;
            delta.replaces = replaced.get(&i).cloned();
            Some(delta)
        })
        .collect()
}

/// Whether `kind` of `apiVersion` is a binding, whose subjects pair renamed roles
/// ([`release_delta`]).
pub fn is_binding(api_version: &str, kind: &str) -> bool {
    api_version.starts_with("rbac.authorization.k8s.io/")
        && (kind == "ClusterRoleBinding" || kind == "RoleBinding")
}

/// Whether `kind` of `apiVersion` is a role whose rules [`role_delta`] compares.
pub fn is_role(api_version: &str, kind: &str) -> bool {
    api_version.starts_with("rbac.authorization.k8s.io/")
        && (kind == "ClusterRole" || kind == "Role")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r"}, "rules": rules})
    }

    fn kinds(d: &RoleDelta) -> Vec<(WideningKind, &str)> {
        d.widening
            .iter()
            .map(|w| (w.kind, w.what.as_str()))
            .collect()
    }

    #[test]
    fn same_rules_in_another_order_are_no_change() {
        let a = role(
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]}]),
        );
        let b = role(
            json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
        );
        assert_eq!(role_delta(Some(&a), Some(&b), &rules_of(&a)), None);
    }

    #[test]
    fn a_new_verb_and_a_new_resource_widen() {
        let old = role(
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
        );
        let new = role(json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "update"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}
        ]));
        let d = role_delta(Some(&old), Some(&new), &rules_of(&old)).unwrap();
        assert_eq!(d.removed.len(), 1);
        assert_eq!(d.added.len(), 2);
        assert_eq!(
            kinds(&d),
            [
                (WideningKind::NewResource, "get apps/deployments"),
                (WideningKind::NewVerb, "update configmaps"),
            ]
        );
    }

    #[test]
    fn removing_rules_or_splitting_one_does_not_widen() {
        let old = role(
            json!([{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"]}]),
        );
        let new = role(json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}
        ]));
        let d = role_delta(Some(&old), Some(&new), &rules_of(&old)).unwrap();
        assert!(!d.widens(), "{d:?}");
        let gone = role_delta(Some(&old), None, &rules_of(&old)).unwrap();
        assert!(!gone.widens());
        assert_eq!(gone.removed.len(), 1);
    }

    #[test]
    fn wildcards_escalation_and_names_are_flagged() {
        let old = role(
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["one"]}]),
        );
        let new = role(json!([
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["escalate"]},
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["list"]},
            {"nonResourceURLs": ["/metrics*"], "verbs": ["get"]}
        ]));
        let d = role_delta(Some(&old), Some(&new), &rules_of(&old)).unwrap();
        assert_eq!(
            kinds(&d),
            [
                (WideningKind::Wildcard, "get /metrics*"),
                (WideningKind::Wildcard, "list */*"),
                (
                    WideningKind::Escalation,
                    "escalate rbac.authorization.k8s.io/clusterroles"
                ),
                (WideningKind::WiderNames, "get secrets"),
            ]
        );
    }

    #[test]
    fn an_old_wildcard_covers_everything() {
        let old = role(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]));
        let new = role(
            json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["delete"]}]),
        );
        let d = role_delta(Some(&old), Some(&new), &rules_of(&old)).unwrap();
        assert!(!d.widens());
        assert_eq!(d.removed.len(), 1);
    }

    #[test]
    fn a_created_role_grants_everything_it_lists() {
        let new = role(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]));
        let d = role_delta(None, Some(&new), &[]).unwrap();
        assert_eq!(kinds(&d), [(WideningKind::NewResource, "get pods")]);
        assert_eq!(d.name, "r");
    }

    /// Generated role names carry the bundle version: an upgrade creates a role and deletes
    /// the old one; only what the new one adds to the release's grants widens.
    #[test]
    fn a_renamed_role_widens_only_by_what_the_release_did_not_grant() {
        let mut old = role(
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
        );
        old["metadata"]["name"] = json!("p.v1-abc");
        let mut new = role(json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "update"]}
        ]));
        new["metadata"]["name"] = json!("p.v2-def");
        let deltas = release_delta(&[(None, Some(&new)), (Some(&old), None)], &[]);
        assert_eq!(deltas.len(), 2);
        assert_eq!(deltas[0].name, "p.v2-def");
        assert_eq!(
            kinds(&deltas[0]),
            [(WideningKind::NewVerb, "update configmaps")]
        );
        assert_eq!(deltas[1].name, "p.v1-abc");
        assert!(!deltas[1].widens());
    }

    #[test]
    fn a_role_is_judged_against_its_namespace_and_the_cluster_roles() {
        let mut cluster =
            role(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]));
        cluster["metadata"]["name"] = json!("c");
        let ns_role = |ns: &str, resource: &str| {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": format!("r-{ns}-{resource}"), "namespace": ns},
                "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get"]}]})
        };
        let old_a = ns_role("a", "secrets");
        let new_b = ns_role("b", "secrets");
        let new_b_pods = ns_role("b", "pods");
        let deltas = release_delta(
            &[
                (Some(&cluster), Some(&cluster)),
                (Some(&old_a), Some(&old_a)),
                (None, Some(&new_b)),
                (None, Some(&new_b_pods)),
            ],
            &[],
        );
        assert_eq!(deltas.len(), 2);
        assert_eq!(
            kinds(&deltas[0]),
            [(WideningKind::NewResource, "get secrets")]
        );
        assert!(!deltas[1].widens(), "{:?}", deltas[1]);
    }

    fn binding(name: &str, role: &str, sa: &str) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "namespace": "ns", "name": sa}]})
    }

    #[test]
    fn a_created_role_bound_to_the_same_subjects_replaces_the_deleted_one() {
        let mut old = role(
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
        );
        old["metadata"]["name"] = json!("p.v1-abc");
        let mut new = role(json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "update"]}
        ]));
        new["metadata"]["name"] = json!("p.v2-def");
        let mut other = role(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]));
        other["metadata"]["name"] = json!("other");
        let (old_binding, new_binding) = (
            binding("p.v1-abc", "p.v1-abc", "sa"),
            binding("p.v2-def", "p.v2-def", "sa"),
        );
        let other_binding = binding("other", "other", "another-sa");
        let deltas = release_delta(
            &[(None, Some(&new)), (None, Some(&other)), (Some(&old), None)],
            &[
                (None, Some(&new_binding)),
                (None, Some(&other_binding)),
                (Some(&old_binding), None),
            ],
        );
        assert_eq!(deltas.len(), 2, "{deltas:?}");
        assert_eq!(deltas[0].name, "p.v2-def");
        assert_eq!(deltas[0].replaces.as_deref(), Some("p.v1-abc"));
        assert_eq!(deltas[0].removed.len(), 1);
        assert_eq!(deltas[0].added.len(), 1);
        assert_eq!(
            kinds(&deltas[0]),
            [(WideningKind::NewVerb, "update configmaps")]
        );
        assert_eq!(deltas[1].name, "other");
        assert_eq!(deltas[1].replaces, None);
    }

    #[test]
    fn a_renamed_role_with_the_same_rules_is_no_change() {
        let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]);
        let mut old = role(rules.clone());
        old["metadata"]["name"] = json!("p.v1-abc");
        let mut new = role(rules);
        new["metadata"]["name"] = json!("p.v2-def");
        let deltas = release_delta(
            &[(None, Some(&new)), (Some(&old), None)],
            &[
                (None, Some(&binding("b2", "p.v2-def", "sa"))),
                (Some(&binding("b1", "p.v1-abc", "sa")), None),
            ],
        );
        assert_eq!(deltas, Vec::<RoleDelta>::new());
    }
}
