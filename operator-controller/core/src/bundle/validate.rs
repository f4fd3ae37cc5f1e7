//! Upstream's registry+v1 bundle validators, in upstream's order, with upstream's messages.
//!
//! Input: a parsed [`RegistryV1Bundle`]. Output: every problem found, in order (upstream runs all
//! validators and joins their errors with newlines). No IO.
//!
//! Order (`render/registryv1/registryv1.go BundleValidator`): duplicate deployment specs, invalid
//! deployment names, duplicate CRDs, owned CRDs missing, empty package name, conversion webhooks
//! in bundles that are not AllNamespaces-only, webhooks referencing missing deployments, duplicate
//! webhooks, invalid webhook names, CRDs referenced by several conversion webhooks, conversion
//! webhooks referencing CRDs the bundle does not own, forbidden webhook rules, unsupported
//! object kinds. Within a validator, messages are sorted as upstream sorts them.

use std::collections::{BTreeMap, BTreeSet};

use super::RegistryV1Bundle;
use super::csv::{ALL_NAMESPACES, CONVERSION_WEBHOOK};

/// Runs every validator; the messages in upstream's order.
pub fn validate(bundle: &RegistryV1Bundle) -> Vec<String> {
    let checks: [fn(&RegistryV1Bundle) -> Vec<String>; 13] = [
        deployment_spec_uniqueness,
        deployment_names_are_dns1123_subdomains,
        crd_uniqueness,
        owned_crds_exist,
        package_name_not_empty,
        conversion_webhook_support,
        webhook_deployment_referential_integrity,
        webhook_name_uniqueness,
        webhook_names_are_dns1123_subdomains,
        conversion_webhook_crd_reference_uniqueness,
        conversion_webhooks_reference_owned_crds,
        webhook_rules,
        object_support,
    ];
    checks.iter().flat_map(|check| check(bundle)).collect()
}

/// `CheckDeploymentSpecUniqueness`.
pub fn deployment_spec_uniqueness(bundle: &RegistryV1Bundle) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut duplicates = BTreeSet::new();
    for dep in &bundle.csv.deployments {
        if !seen.insert(dep.name.as_str()) {
            duplicates.insert(dep.name.as_str());
        }
    }
    duplicates
        .into_iter()
        .map(|d| {
            format!("cluster service version contains duplicate strategy deployment spec '{d}'")
        })
        .collect()
}

/// `CheckDeploymentNameIsDNS1123SubDomain`.
pub fn deployment_names_are_dns1123_subdomains(bundle: &RegistryV1Bundle) -> Vec<String> {
    let mut invalid: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for dep in &bundle.csv.deployments {
        let errs = dns1123_subdomain_errors(&dep.name);
        if !errs.is_empty() {
            invalid.insert(&dep.name, errs);
        }
    }
    invalid
        .into_iter()
        .map(|(name, errs)| {
            format!(
                "invalid cluster service version strategy deployment name '{name}': {}",
                errs.join(", ")
            )
        })
        .collect()
}

/// `CheckCRDResourceUniqueness`.
pub fn crd_uniqueness(bundle: &RegistryV1Bundle) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut duplicates = BTreeSet::new();
    for crd in &bundle.crds {
        if !seen.insert(crd.name.as_str()) {
            duplicates.insert(crd.name.as_str());
        }
    }
    duplicates
        .into_iter()
        .map(|n| format!("bundle contains duplicate custom resource definition '{n}'"))
        .collect()
}

/// `CheckOwnedCRDExistence`.
pub fn owned_crds_exist(bundle: &RegistryV1Bundle) -> Vec<String> {
    let present: BTreeSet<&str> = bundle.crds.iter().map(|c| c.name.as_str()).collect();
    let missing: BTreeSet<&str> = bundle
        .csv
        .owned_crds
        .iter()
        .map(String::as_str)
        .filter(|n| !present.contains(n))
        .collect();
    missing
        .into_iter()
        .map(|n| {
            format!(
                "cluster service definition references owned custom resource definition '{n}' not found in bundle"
            )
        })
        .collect()
}

/// `CheckPackageNameNotEmpty`.
pub fn package_name_not_empty(bundle: &RegistryV1Bundle) -> Vec<String> {
    if bundle.annotations.package.is_empty() {
        vec!["package name is empty".into()]
    } else {
        Vec::new()
    }
}

/// `CheckConversionWebhookSupport`.
pub fn conversion_webhook_support(bundle: &RegistryV1Bundle) -> Vec<String> {
    let names: Vec<&str> = bundle
        .csv
        .webhooks
        .iter()
        .filter(|w| w.type_ == CONVERSION_WEBHOOK)
        .map(|w| w.generate_name.as_str())
        .collect();
    if names.is_empty() {
        return Vec::new();
    }
    let modes = bundle.csv.supported_install_modes();
    if modes.len() == 1 && modes[0] == ALL_NAMESPACES {
        return Vec::new();
    }
    let modes = format!("[{}]", modes.join(" "));
    names
        .into_iter()
        .map(|name| {
            format!(
                "bundle contains conversion webhook {} and supports install modes {modes} - conversion webhooks are only supported for bundles that only support AllNamespaces install mode",
                olm_api::version::go_text::go_quote(name)
            )
        })
        .collect()
}

/// `CheckWebhookDeploymentReferentialIntegrity`.
pub fn webhook_deployment_referential_integrity(bundle: &RegistryV1Bundle) -> Vec<String> {
    let deployments: BTreeSet<&str> = bundle
        .csv
        .deployments
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let mut by_deployment: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for wh in &bundle.csv.webhooks {
        if !deployments.contains(wh.deployment_name.as_str()) {
            by_deployment
                .entry(&wh.deployment_name)
                .or_default()
                .push((&wh.type_, &wh.generate_name));
        }
    }
    let mut errs = Vec::new();
    for (dep, mut webhooks) in by_deployment {
        webhooks.sort();
        for (type_, name) in webhooks {
            errs.push(format!(
                "webhook of type '{type_}' with name '{name}' references non-existent deployment '{dep}'"
            ));
        }
    }
    errs
}

/// `CheckWebhookNameUniqueness`.
pub fn webhook_name_uniqueness(bundle: &RegistryV1Bundle) -> Vec<String> {
    let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut duplicates: BTreeSet<(&str, &str)> = BTreeSet::new();
    for wh in &bundle.csv.webhooks {
        let key = (wh.type_.as_str(), wh.generate_name.as_str());
        if !seen.insert(key) {
            duplicates.insert(key);
        }
    }
    duplicates
        .into_iter()
        .map(|(type_, name)| format!("duplicate webhook '{name}' of type '{type_}'"))
        .collect()
}

/// `CheckWebhookNameIsDNS1123SubDomain`.
pub fn webhook_names_are_dns1123_subdomains(bundle: &RegistryV1Bundle) -> Vec<String> {
    let mut invalid: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for wh in &bundle.csv.webhooks {
        let errs = dns1123_subdomain_errors(&wh.generate_name);
        if !errs.is_empty() {
            invalid.insert((&wh.type_, &wh.generate_name), errs);
        }
    }
    invalid
        .into_iter()
        .map(|((type_, name), errs)| {
            format!(
                "webhook of type '{type_}' has invalid name '{name}': {}",
                errs.join(",")
            )
        })
        .collect()
}

/// `CheckConversionWebhookCRDReferenceUniqueness`.
pub fn conversion_webhook_crd_reference_uniqueness(bundle: &RegistryV1Bundle) -> Vec<String> {
    let mut by_crd: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for wh in bundle
        .csv
        .webhooks
        .iter()
        .filter(|w| w.type_ == CONVERSION_WEBHOOK)
    {
        for crd in &wh.conversion_crds {
            by_crd.entry(crd).or_default().push(&wh.generate_name);
        }
    }
    by_crd
        .into_iter()
        .filter(|(_, whs)| whs.len() > 1)
        .map(|(crd, mut whs)| {
            whs.sort();
            format!(
                "conversion webhooks [{}] reference same custom resource definition '{crd}'",
                whs.join(",")
            )
        })
        .collect()
}

/// `CheckConversionWebhooksReferenceOwnedCRDs`.
pub fn conversion_webhooks_reference_owned_crds(bundle: &RegistryV1Bundle) -> Vec<String> {
    let mut webhooks: Vec<_> = bundle
        .csv
        .webhooks
        .iter()
        .filter(|w| w.type_ == CONVERSION_WEBHOOK)
        .collect();
    if webhooks.is_empty() {
        return Vec::new();
    }
    let owned: BTreeSet<&str> = bundle.csv.owned_crds.iter().map(String::as_str).collect();
    // Go's slices.SortFunc is not stable; equal names keep an unspecified order upstream.
    webhooks.sort_by(|a, b| a.generate_name.cmp(&b.generate_name));
    let mut errs = Vec::new();
    for wh in webhooks {
        let mut crds: Vec<&str> = wh.conversion_crds.iter().map(String::as_str).collect();
        crds.sort();
        for crd in crds {
            if !owned.contains(crd) {
                errs.push(format!(
                    "conversion webhook '{}' references custom resource definition '{crd}' not owned bundle",
                    wh.generate_name
                ));
            }
        }
    }
    errs
}

/// API groups no admission webhook rule may target.
const FORBIDDEN_WEBHOOK_RULE_API_GROUPS: [&str; 2] = ["olm.operatorframework.io", "*"];
/// Resources of `admissionregistration.k8s.io` no admission webhook rule may target (lowercase).
const FORBIDDEN_ADMISSION_REGISTRATION_RESOURCES: [&str; 5] = [
    "*",
    "mutatingwebhookconfiguration",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfiguration",
    "validatingwebhookconfigurations",
];

/// `CheckWebhookRules`.
pub fn webhook_rules(bundle: &RegistryV1Bundle) -> Vec<String> {
    let quote = olm_api::version::go_text::go_quote;
    let mut errs = Vec::new();
    for wh in &bundle.csv.webhooks {
        if wh.type_ == CONVERSION_WEBHOOK {
            continue;
        }
        for (groups, resources) in wh.rule_groups_and_resources() {
            for group in &groups {
                if FORBIDDEN_WEBHOOK_RULE_API_GROUPS.contains(&group.as_str()) {
                    errs.push(format!(
                        "webhook {} contains forbidden rule: admission webhook rules cannot reference API group {}",
                        quote(&wh.generate_name),
                        quote(group)
                    ));
                }
                if group == "admissionregistration.k8s.io" {
                    for resource in &resources {
                        if FORBIDDEN_ADMISSION_REGISTRATION_RESOURCES
                            .contains(&resource.to_lowercase().as_str())
                        {
                            errs.push(format!(
                                "webhook {} contains forbidden rule: admission webhook rules cannot reference resource {} for API group {}",
                                quote(&wh.generate_name),
                                quote(resource),
                                quote(group)
                            ));
                        }
                    }
                }
            }
        }
    }
    errs
}

/// `CheckObjectSupport`.
pub fn object_support(bundle: &RegistryV1Bundle) -> Vec<String> {
    let quote = olm_api::version::go_text::go_quote;
    bundle
        .others
        .iter()
        .filter(|o| supported_kind(o.kind()).is_none())
        .map(|o| {
            format!(
                "unsupported resource {} with kind {}",
                quote(o.name()),
                quote(o.kind())
            )
        })
        .collect()
}

/// operator-registry's `bundle.IsSupported`: `Some(namespaced)` for a kind a registry+v1 bundle
/// may carry, `None` otherwise.
pub fn supported_kind(kind: &str) -> Option<bool> {
    Some(match kind {
        "ClusterServiceVersion" => true,
        "CustomResourceDefinition" => false,
        "ClusterRole" => false,
        "ClusterRoleBinding" => false,
        "Service" => true,
        "ServiceAccount" => true,
        "Role" => true,
        "RoleBinding" => true,
        "PrometheusRule" => true,
        "ServiceMonitor" => true,
        "Secret" => true,
        "ConfigMap" => true,
        "PodDisruptionBudget" => true,
        "PriorityClass" => false,
        "VerticalPodAutoscaler" => false,
        "ConsoleYAMLSample" => false,
        "ConsoleQuickStart" => false,
        "ConsoleCLIDownload" => false,
        "ConsoleLink" => false,
        "ConsolePlugin" => false,
        "NetworkPolicy" => true,
        "PodMonitor" => true,
        _ => return None,
    })
}

const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

/// apimachinery's `validation.IsDNS1123Subdomain`, its messages sorted as upstream sorts them.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
        ));
    }
    if !is_dns1123_subdomain(value) {
        errs.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_owned(),
        );
    }
    errs.sort();
    errs
}

fn is_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(is_dns1123_label_shape)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no length limit: the subdomain regex has none per label).
pub fn is_dns1123_label_shape(label: &str) -> bool {
    let b = label.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_subdomain_errors_match_apimachinery() {
        assert!(dns1123_subdomain_errors("a.b-c.d1").is_empty());
        assert_eq!(dns1123_subdomain_errors("Bad").len(), 1);
        assert_eq!(dns1123_subdomain_errors("").len(), 1);
        assert_eq!(dns1123_subdomain_errors("a..b").len(), 1);
        let long = "a".repeat(254);
        let errs = dns1123_subdomain_errors(&long);
        assert_eq!(errs, vec!["must be no more than 253 characters".to_owned()]);
        let errs = dns1123_subdomain_errors(&format!("{long}-"));
        assert_eq!(errs.len(), 2);
        assert!(errs[0].starts_with("a lowercase RFC 1123 subdomain"));
    }
}
