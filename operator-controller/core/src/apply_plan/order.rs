//! The order objects are written in, and the order they are removed in.
//!
//! Input: kinds. Output: a rank per kind and sorted lists. Pure: no IO.
//!
//! Upstream applies through Helm, which installs by kind in the order of Helm v3.21's
//! `releaseutil.InstallOrder`; we use the same list, so an extension's objects appear in the
//! cluster in the same sequence whichever implementation installs it:
//!
//! | rank | kinds |
//! |---|---|
//! | 0–6 | PriorityClass, Namespace, NetworkPolicy, ResourceQuota, LimitRange, PodSecurityPolicy, PodDisruptionBudget |
//! | 7–10 | ServiceAccount, Secret, SecretList, ConfigMap |
//! | 11–13 | StorageClass, PersistentVolume, PersistentVolumeClaim |
//! | 14 | CustomResourceDefinition (then Established before any object of its kinds) |
//! | 15–22 | ClusterRole(List), ClusterRoleBinding(List), Role(List), RoleBinding(List) |
//! | 23–32 | Service, DaemonSet, Pod, ReplicationController, ReplicaSet, Deployment, HorizontalPodAutoscaler, StatefulSet, Job, CronJob |
//! | 33–35 | IngressClass, Ingress, APIService |
//! | last | every other kind (webhook configurations, cert-manager Issuer/Certificate, custom resources), alphabetically by kind |
//!
//! Objects of the same rank keep their rendered order (a stable sort), as in Helm.
//!
//! Removal (pruning and uninstall) walks the exact reverse of this order: webhook
//! configurations and custom resources first (a webhook whose Service is gone would block
//! other deletions), workloads before the RBAC they use, CustomResourceDefinitions after
//! everything else that is not a namespace-level prerequisite. (Helm's own `UninstallOrder`
//! differs only in moving Service before CronJob; upstream never uses it, it relies on the
//! garbage collector.)

use std::cmp::Ordering;

/// Helm v3.21 `releaseutil.InstallOrder`.
pub const HELM_INSTALL_ORDER: [&str; 36] = [
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// Compares two kinds in install order: known kinds by their rank, unknown kinds after all
/// known ones and alphabetically among themselves. Equal for the same kind.
pub fn compare_kinds(a: &str, b: &str) -> Ordering {
    let rank = |kind: &str| HELM_INSTALL_ORDER.iter().position(|k| *k == kind);
    match (rank(a), rank(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Sorts `items` into install order by the kind `kind_of` returns, keeping the given order
/// among items of the same kind.
pub fn sort_for_apply<T>(items: &mut [T], kind_of: impl Fn(&T) -> &str) {
    items.sort_by(|a, b| compare_kinds(kind_of(a), kind_of(b)));
}

/// Sorts `items` into removal order: the exact reverse of [`sort_for_apply`] on the same input.
pub fn sort_for_removal<T>(items: &mut [T], kind_of: impl Fn(&T) -> &str) {
    sort_for_apply(items, &kind_of);
    items.reverse();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(list: &[(&'static str, &'static str)]) -> Vec<String> {
        list.iter().map(|(k, n)| format!("{k}/{n}")).collect()
    }

    #[test]
    fn install_order_is_helms_with_unknown_kinds_last_alphabetically_and_stable() {
        let mut items = vec![
            ("ValidatingWebhookConfiguration", "v"),
            ("Deployment", "d1"),
            ("Widget", "w"),
            ("ClusterRole", "cr"),
            ("CustomResourceDefinition", "crd"),
            ("Deployment", "d0"),
            ("Certificate", "c"),
            ("ServiceAccount", "sa"),
            ("Service", "svc"),
            ("ConfigMap", "cm"),
            ("MutatingWebhookConfiguration", "m"),
            ("RoleBinding", "rb"),
            ("Role", "r"),
        ];
        sort_for_apply(&mut items, |(k, _)| k);
        assert_eq!(
            kinds(&items),
            [
                "ServiceAccount/sa",
                "ConfigMap/cm",
                "CustomResourceDefinition/crd",
                "ClusterRole/cr",
                "Role/r",
                "RoleBinding/rb",
                "Service/svc",
                "Deployment/d1",
                "Deployment/d0",
                "Certificate/c",
                "MutatingWebhookConfiguration/m",
                "ValidatingWebhookConfiguration/v",
                "Widget/w",
            ]
        );
    }

    #[test]
    fn removal_order_is_the_exact_reverse_of_install_order() {
        let input = vec![
            ("Deployment", "d0"),
            ("CustomResourceDefinition", "crd"),
            ("Widget", "w"),
            ("Deployment", "d1"),
            ("ServiceAccount", "sa"),
        ];
        let mut install = input.clone();
        sort_for_apply(&mut install, |(k, _)| k);
        let mut removal = input;
        sort_for_removal(&mut removal, |(k, _)| k);
        install.reverse();
        assert_eq!(removal, install);
        assert_eq!(
            kinds(&removal),
            [
                "Widget/w",
                "Deployment/d1",
                "Deployment/d0",
                "CustomResourceDefinition/crd",
                "ServiceAccount/sa"
            ]
        );
    }

    #[test]
    fn the_table_lists_each_kind_once() {
        let mut sorted = HELM_INSTALL_ORDER.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), HELM_INSTALL_ORDER.len());
    }
}
