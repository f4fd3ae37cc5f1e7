//! Who writes an extension's objects, and which permissions that takes.
//!
//! Input: the extension's identity, the objects to apply, prune or delete. Output: the list of
//! access checks (one SubjectAccessReview each) and, from the denied ones, the message that
//! lists every missing permission. Pure: no IO.
//!
//! `spec.serviceAccount` set: every request of the apply layer for that extension is made as
//! `system:serviceaccount:<install namespace>:<name>` (impersonation), and the checks below run
//! first, so a missing permission is reported before anything is written, all of them at
//! once. Unset: the controller's own identity, no checks (upstream v1.11's behaviour).
//!
//! Verb plan (one check per distinct row). Server-side apply is a `patch`; when the object
//! does not exist the API server also authorizes it as `create` *with the object's name*
//! (checked against kube-apiserver 1.34: without `create` the apply is refused; a `create`
//! rule limited by `resourceNames` to that name allows it). So every applied object needs
//! `create` by name, whether it exists yet or not (it may be deleted before the next apply):
//!
//! | operation | verb | resource | namespace | name |
//! |---|---|---|---|---|
//! | apply an object | `get`, `patch`, `create` | its resource | its namespace | its name |
//! | set the controller reference (not on `keep` objects) | `update` | `clusterextensions/finalizers` | — | the extension |
//! | prune an object | `get`, `delete` | its resource | its namespace | its name |
//! | prune a CustomResourceDefinition | `list` | its custom resources | all namespaces | — |
//! | uninstall an object | `get`, `delete` | its resource | its namespace | its name |
//!
//! The `clusterextensions/finalizers` row is what the `OwnerReferencesPermissionEnforcement`
//! admission plugin demands for `blockOwnerDeletion: true` (OpenShift enables it), and what
//! upstream's documentation told users to grant.
//!
//! Message (upstream's wording from the release that honoured `spec.serviceAccount`, its
//! `formatPreAuthorizerOutput`; rows grouped by namespace, group, resource and name with the
//! verbs sorted; rows sorted), followed by the identity the checks ran for:
//!
//! ```text
//! pre-authorization failed: service account requires the following permissions to manage cluster extension:
//!   Namespace:"" APIGroups:[apiextensions.k8s.io] Resources:[customresourcedefinitions] ResourceNames:[widgets.example.com] Verbs:[create,get,patch]
//!   Namespace:"ns" APIGroups:[] Resources:[configmaps] ResourceNames:[settings] Verbs:[create,get,patch]
//! checked as user "system:serviceaccount:ns:installer"
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Whose permissions the apply layer uses for an extension.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Identity {
    /// The controller's own ServiceAccount (`spec.serviceAccount` unset).
    Controller,
    /// A ServiceAccount in the install namespace (`spec.serviceAccount.name`).
    ServiceAccount { namespace: String, name: String },
}

impl Identity {
    /// The user name requests are made as, when impersonating.
    pub fn user_name(&self) -> Option<String> {
        match self {
            Identity::Controller => None,
            Identity::ServiceAccount { namespace, name } => {
                Some(format!("system:serviceaccount:{namespace}:{name}"))
            }
        }
    }

    /// The groups the API server gives an impersonated ServiceAccount (and a
    /// SubjectAccessReview must name): `system:serviceaccounts`,
    /// `system:serviceaccounts:<namespace>`, `system:authenticated`.
    pub fn groups(&self) -> Vec<String> {
        match self {
            Identity::Controller => Vec::new(),
            Identity::ServiceAccount { namespace, .. } => vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.user_name() {
            Some(user) => write!(f, "user \"{user}\""),
            None => f.write_str("the controller's own identity"),
        }
    }
}

/// One access check: may the identity do `verb` on this resource (and name, and namespace)?
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessCheck {
    /// Empty for a cluster-scoped resource or an all-namespaces check.
    pub namespace: String,
    /// Empty for the core group.
    pub group: String,
    pub resource: String,
    /// Empty for the main resource.
    pub subresource: String,
    /// Empty for collection checks.
    pub name: String,
    pub verb: String,
}

impl AccessCheck {
    pub fn new(
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> AccessCheck {
        AccessCheck {
            namespace: namespace.unwrap_or("").to_owned(),
            group: group.to_owned(),
            resource: resource.to_owned(),
            subresource: String::new(),
            name: name.unwrap_or("").to_owned(),
            verb: verb.to_owned(),
        }
    }
}

/// The object a set of checks is about.
#[derive(Clone, Copy, Debug)]
pub struct CheckedObject<'a> {
    pub group: &'a str,
    pub plural: &'a str,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

/// Builds the deduplicated, sorted list of checks of the module's verb plan.
#[derive(Debug, Default)]
pub struct AccessPlan {
    checks: BTreeSet<AccessCheck>,
}

impl AccessPlan {
    pub fn new() -> AccessPlan {
        AccessPlan::default()
    }

    /// `get`, `patch` and `create`, by name, for an object to apply.
    pub fn apply(&mut self, o: CheckedObject<'_>) {
        for verb in ["get", "patch", "create"] {
            self.checks.insert(AccessCheck::new(
                verb,
                o.group,
                o.plural,
                o.namespace,
                Some(o.name),
            ));
        }
    }

    /// `update` on `clusterextensions/finalizers` of the owner, needed to set a controller
    /// reference with `blockOwnerDeletion`.
    pub fn owner_reference(&mut self, extension: &str) {
        self.checks.insert(AccessCheck {
            subresource: "finalizers".into(),
            ..AccessCheck::new(
                "update",
                olm_api::v1::GROUP,
                "clusterextensions",
                None,
                Some(extension),
            )
        });
    }

    /// `get` and `delete` for an object to prune or uninstall.
    pub fn delete(&mut self, o: CheckedObject<'_>) {
        for verb in ["get", "delete"] {
            self.checks.insert(AccessCheck::new(
                verb,
                o.group,
                o.plural,
                o.namespace,
                Some(o.name),
            ));
        }
    }

    /// `list` of a CustomResourceDefinition's custom resources in all namespaces (the check
    /// that keeps a CRD with custom resources).
    pub fn list_custom_resources(&mut self, group: &str, plural: &str) {
        self.checks
            .insert(AccessCheck::new("list", group, plural, None, None));
    }

    pub fn into_checks(self) -> Vec<AccessCheck> {
        self.checks.into_iter().collect()
    }
}

/// Upstream's phrase, checked by its external tests at the time.
pub const MISSING_PERMISSIONS_HEADER: &str = "pre-authorization failed: service account requires the following permissions to manage cluster extension:";

/// The message listing every denied check (see the module documentation for its shape).
pub fn missing_permissions_message(identity: &Identity, denied: &[AccessCheck]) -> String {
    // (namespace, group, resource[/subresource], name) -> verbs
    let mut rows: BTreeMap<(String, String, String, String), BTreeSet<String>> = BTreeMap::new();
    for check in denied {
        let resource = if check.subresource.is_empty() {
            check.resource.clone()
        } else {
            format!("{}/{}", check.resource, check.subresource)
        };
        rows.entry((
            check.namespace.clone(),
            check.group.clone(),
            resource,
            check.name.clone(),
        ))
        .or_default()
        .insert(check.verb.clone());
    }
    let mut lines: Vec<String> = rows
        .into_iter()
        .map(|((namespace, group, resource, name), verbs)| {
            let mut line =
                format!("Namespace:{namespace:?} APIGroups:[{group}] Resources:[{resource}]");
            if !name.is_empty() {
                line.push_str(&format!(" ResourceNames:[{name}]"));
            }
            let verbs: Vec<String> = verbs.into_iter().collect();
            line.push_str(&format!(" Verbs:[{}]", verbs.join(",")));
            line
        })
        .collect();
    lines.sort();
    format!(
        "{MISSING_PERMISSIONS_HEADER}\n  {}\nchecked as {identity}",
        lines.join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa() -> Identity {
        Identity::ServiceAccount {
            namespace: "ns".into(),
            name: "installer".into(),
        }
    }

    #[test]
    fn service_account_identity_names_the_user_and_groups_the_api_server_gives_it() {
        assert_eq!(
            sa().user_name().as_deref(),
            Some("system:serviceaccount:ns:installer")
        );
        assert_eq!(
            sa().groups(),
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        assert_eq!(Identity::Controller.user_name(), None);
    }

    #[test]
    fn the_plan_has_named_verbs_and_owner_reference_rows_deduplicated() {
        let mut plan = AccessPlan::new();
        let cm = CheckedObject {
            group: "",
            plural: "configmaps",
            namespace: Some("ns"),
            name: "a",
        };
        plan.apply(cm);
        plan.apply(CheckedObject { name: "b", ..cm });
        plan.owner_reference("ext");
        plan.owner_reference("ext");
        plan.delete(CheckedObject {
            group: "apiextensions.k8s.io",
            plural: "customresourcedefinitions",
            namespace: None,
            name: "widgets.example.com",
        });
        plan.list_custom_resources("example.com", "widgets");
        let checks: Vec<String> = plan
            .into_checks()
            .into_iter()
            .map(|c| {
                format!(
                    "{} {}/{}/{} {}:{}",
                    c.verb, c.group, c.resource, c.subresource, c.namespace, c.name
                )
            })
            .collect();
        assert_eq!(
            checks,
            [
                "delete apiextensions.k8s.io/customresourcedefinitions/ :widgets.example.com",
                "get apiextensions.k8s.io/customresourcedefinitions/ :widgets.example.com",
                "list example.com/widgets/ :",
                "update olm.operatorframework.io/clusterextensions/finalizers :ext",
                "create /configmaps/ ns:a",
                "get /configmaps/ ns:a",
                "patch /configmaps/ ns:a",
                "create /configmaps/ ns:b",
                "get /configmaps/ ns:b",
                "patch /configmaps/ ns:b",
            ]
        );
    }

    #[test]
    fn the_message_groups_verbs_sorts_rows_and_names_the_identity() {
        // Row format source: operator-controller (before #2770) applier/helm.go ruleDescription
        // and formatPreAuthorizerOutput.
        let denied = vec![
            AccessCheck::new("patch", "apps", "deployments", Some("ns"), Some("d")),
            AccessCheck::new("create", "", "configmaps", Some("ns"), None),
            AccessCheck::new("get", "apps", "deployments", Some("ns"), Some("d")),
            AccessCheck {
                subresource: "finalizers".into(),
                ..AccessCheck::new(
                    "update",
                    "olm.operatorframework.io",
                    "clusterextensions",
                    None,
                    Some("ext"),
                )
            },
            AccessCheck::new("get", "apps", "deployments", Some("ns"), Some("d")),
        ];
        assert_eq!(
            missing_permissions_message(&sa(), &denied),
            "pre-authorization failed: service account requires the following permissions to manage cluster extension:\n  \
             Namespace:\"\" APIGroups:[olm.operatorframework.io] Resources:[clusterextensions/finalizers] ResourceNames:[ext] Verbs:[update]\n  \
             Namespace:\"ns\" APIGroups:[] Resources:[configmaps] Verbs:[create]\n  \
             Namespace:\"ns\" APIGroups:[apps] Resources:[deployments] ResourceNames:[d] Verbs:[get,patch]\n\
             checked as user \"system:serviceaccount:ns:installer\""
        );
    }
}
