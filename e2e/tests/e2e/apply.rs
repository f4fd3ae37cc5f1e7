//! The apply layer (`operator_controller::apply`) against the real API server: server-side
//! apply with ownership metadata, collisions, takeover of upstream's objects, pruning that keeps
//! CRDs with custom resources, uninstall without a garbage collector, impersonation with the
//! SubjectAccessReview preflight, drift watches, user-owned fields, availability.
//!
//! Each test creates a real ClusterExtension as the owner (no controller reconciles it): on the
//! `full` tier the garbage collector would otherwise delete objects whose owner does not exist.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use olm_api::v1::{ConditionReason, ConditionStatus};
use olm_e2e::scenario::{ObjectKey, Snapshot};
use olm_e2e::{ControlPlane, Tier};
use operator_controller::apply::{
    Applier, ApplierConfig, ApplyError, ApplyRequest, DriftChange, DriftWatches, Identity,
    KeepReason, ObjectRef, Owner, UninstallRequest,
};
use serde_json::{Value, json};

use crate::support::{
    cluster_extensions, create_namespace, delete_namespace, eventually, unique_name,
};

// ---------------------------------------------------------------------------------------------
// Fixtures

/// Creates a ClusterExtension (the owner of a set) installing into `namespace`.
async fn create_extension(
    client: &kube::Client,
    namespace: &str,
    service_account: Option<&str>,
) -> Owner {
    let name = unique_name("apply");
    let mut spec = json!({
        "namespace": namespace,
        "source": {"sourceType": "Catalog", "catalog": {"packageName": "test-package"}},
    });
    if let Some(sa) = service_account {
        spec["serviceAccount"] = json!({"name": sa});
    }
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .unwrap();
    let created = cluster_extensions(client)
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    Owner {
        name,
        uid: created.metadata.uid.unwrap(),
    }
}

async fn delete_extension(client: &kube::Client, owner: &Owner) {
    let _ = cluster_extensions(client)
        .delete(&owner.name, &DeleteParams::default())
        .await;
}

fn config_map(namespace: &str, name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace}, "data": data})
}

fn deployment(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "manager", "image": "registry.invalid/operator:v1"}]}
            }
        }
    })
}

fn cluster_role(name: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": name}, "rules": []})
}

/// A namespaced CRD `<plural>.<group>` serving `v1`.
fn crd(group: &str, kind: &str, plural: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        },
        // Bundles ship CRDs with a status block; the apply must not choke on it.
        "status": {"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": []}
    })
}

fn custom_resource(group: &str, kind: &str, namespace: &str, name: &str) -> Value {
    json!({"apiVersion": format!("{group}/v1"), "kind": kind,
           "metadata": {"name": name, "namespace": namespace}, "spec": {"size": 1}})
}

fn refs(objects: &[Value]) -> Vec<ObjectRef> {
    objects
        .iter()
        .map(|o| ObjectRef::of_json(o).unwrap())
        .collect()
}

/// A dynamic API for `object`'s kind (plural given), in its namespace if any.
fn api_for(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let ar = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

fn config_maps(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    api_for(client, "v1", "ConfigMap", "configmaps", Some(namespace))
}

fn deployments(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    api_for(
        client,
        "apps/v1",
        "Deployment",
        "deployments",
        Some(namespace),
    )
}

fn crds(client: &kube::Client) -> Api<DynamicObject> {
    api_for(
        client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        None,
    )
}

fn labels(object: &DynamicObject) -> BTreeMap<String, String> {
    object.metadata.labels.clone().unwrap_or_default()
}

fn annotations(object: &DynamicObject) -> BTreeMap<String, String> {
    object.metadata.annotations.clone().unwrap_or_default()
}

/// Asserts the ownership metadata of install-path.md §1 ("Helm ownership metadata on every
/// object") and the controller reference.
fn assert_owned(object: &DynamicObject, owner: &Owner, install_namespace: &str) {
    let name = object.metadata.name.clone().unwrap_or_default();
    let l = labels(object);
    assert_eq!(
        l.get("olm.operatorframework.io/owner-kind")
            .map(String::as_str),
        Some("ClusterExtension"),
        "{name}"
    );
    assert_eq!(
        l.get("olm.operatorframework.io/owner-name"),
        Some(&owner.name),
        "{name}"
    );
    assert_eq!(
        l.get("app.kubernetes.io/managed-by").map(String::as_str),
        Some("Helm"),
        "{name}"
    );
    let a = annotations(object);
    assert_eq!(
        a.get("meta.helm.sh/release-name"),
        Some(&owner.name),
        "{name}"
    );
    assert_eq!(
        a.get("meta.helm.sh/release-namespace").map(String::as_str),
        Some(install_namespace),
        "{name}"
    );
    let refs = object.metadata.owner_references.clone().unwrap_or_default();
    let controller: Vec<_> = refs.iter().filter(|r| r.controller == Some(true)).collect();
    assert_eq!(controller.len(), 1, "{name}: {refs:?}");
    let r = controller[0];
    assert_eq!(
        (r.api_version.as_str(), r.kind.as_str()),
        ("olm.operatorframework.io/v1", "ClusterExtension"),
        "{name}"
    );
    assert_eq!((&r.name, &r.uid), (&owner.name, &owner.uid), "{name}");
    assert_eq!(r.block_owner_deletion, Some(true), "{name}");
}

fn managers(object: &DynamicObject) -> Vec<(String, String)> {
    object
        .metadata
        .managed_fields
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            (
                e.manager.unwrap_or_default(),
                e.operation.unwrap_or_default(),
            )
        })
        .collect()
}

fn request<'a>(
    owner: &'a Owner,
    namespace: &'a str,
    identity: &'a Identity,
    desired: &'a [Value],
    previous: &'a [ObjectRef],
) -> ApplyRequest<'a> {
    ApplyRequest {
        owner,
        install_namespace: namespace,
        identity,
        desired,
        previous,
    }
}

// ---------------------------------------------------------------------------------------------
// Apply

#[tokio::test]
async fn a_set_applies_in_order_with_ownership_metadata_and_reapplying_it_writes_nothing() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "apply").await;
    let owner = create_extension(&client, &ns, None).await;
    let group = format!("{}.example.com", unique_name("set"));
    let role = unique_name("apply-role");
    // A custom resource before its CRD in rendered order: the apply orders, and waits for the
    // CRD to be Established before writing it.
    let desired = vec![
        custom_resource(&group, "Widget", &ns, "w"),
        deployment(&ns, "operator"),
        crd(&group, "Widget", "widgets"),
        cluster_role(&role),
        config_map(&ns, "settings", json!({"a": "1"})),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator", "namespace": ns}}),
    ];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    let outcome = applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap();

    let order: Vec<&str> = outcome
        .applied
        .iter()
        .map(|a| a.object.kind.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "ServiceAccount",
            "ConfigMap",
            "CustomResourceDefinition",
            "ClusterRole",
            "Deployment",
            "Widget"
        ]
    );
    assert_eq!(
        outcome.changed().count(),
        6,
        "a first install writes every object"
    );
    assert!(outcome.pruned.is_empty() && outcome.kept.is_empty());

    let objects = [
        api_for(
            &client,
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            Some(&ns),
        )
        .get("operator")
        .await
        .unwrap(),
        config_maps(&client, &ns).get("settings").await.unwrap(),
        crds(&client)
            .get(&format!("widgets.{group}"))
            .await
            .unwrap(),
        api_for(
            &client,
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
            None,
        )
        .get(&role)
        .await
        .unwrap(),
        deployments(&client, &ns).get("operator").await.unwrap(),
        api_for(
            &client,
            &format!("{group}/v1"),
            "Widget",
            "widgets",
            Some(&ns),
        )
        .get("w")
        .await
        .unwrap(),
    ];
    for object in &objects {
        assert_owned(object, &owner, &ns);
        assert!(
            managers(object).contains(&("operator-controller".into(), "Apply".into())),
            "{:?}",
            managers(object)
        );
    }
    // The rendered label stays next to ours.
    assert_eq!(
        labels(&objects[4]).get("app").map(String::as_str),
        Some("operator")
    );

    // Re-applying the same set changes nothing. The objects no controller writes to keep
    // their resourceVersion (the Deployment's and the CRD's status move on their own).
    let quiet = [&objects[0], &objects[1], &objects[3], &objects[5]];
    let mut before = Vec::new();
    for object in quiet {
        before.push(Snapshot::of(&client, ObjectKey::of(object)).await);
    }
    let again = applier
        .apply(&request(&owner, &ns, &identity, &desired, &refs(&desired)))
        .await
        .unwrap();
    assert_eq!(
        again.changed().count(),
        0,
        "{:?}",
        again.changed().collect::<Vec<_>>()
    );
    for snapshot in &before {
        snapshot
            .assert_unchanged_at(&["/metadata/resourceVersion"], "re-applying wrote it")
            .await;
    }

    cleanup(&applier, &client, &owner, &ns, &desired).await;
}

/// Uninstalls (the CRD and ClusterRole are cluster-scoped) and deletes the extension and the
/// namespace.
async fn cleanup(
    applier: &Applier,
    client: &kube::Client,
    owner: &Owner,
    ns: &str,
    installed: &[Value],
) {
    let installed = refs(installed);
    let _ = applier
        .uninstall(&UninstallRequest {
            owner,
            install_namespace: ns,
            identity: &Identity::Controller,
            installed: &installed,
        })
        .await;
    delete_extension(client, owner).await;
    delete_namespace(client, ns).await;
}

#[tokio::test]
async fn unowned_objects_are_collisions_with_upstreams_message_and_nothing_is_written_until_they_are_gone()
 {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "collide").await;
    let owner = create_extension(&client, &ns, None).await;
    let role = unique_name("collide-role");
    // Two objects exist beforehand, created by someone else.
    let existing_deployment: DynamicObject =
        serde_json::from_value(deployment(&ns, "test-operator")).unwrap();
    deployments(&client, &ns)
        .create(&PostParams::default(), &existing_deployment)
        .await
        .unwrap();
    let roles = api_for(
        &client,
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        None,
    );
    let existing_role: DynamicObject = serde_json::from_value(cluster_role(&role)).unwrap();
    roles
        .create(&PostParams::default(), &existing_role)
        .await
        .unwrap();

    let desired = vec![
        config_map(&ns, "settings", json!({})),
        deployment(&ns, "test-operator"),
        cluster_role(&role),
    ];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    let err = applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap_err();
    // Source of each line: upstream action/error/errors.go, prefix from applier/helm.go;
    // cluster-scoped objects get '' (install-path.md §3). Every collision, in install order.
    assert_eq!(
        err.to_string(),
        format!(
            "failed to get release state using server-side dry-run: ClusterRole '{role}' already exists in namespace '' and cannot be managed by operator-controller\n\
             Deployment 'test-operator' already exists in namespace '{ns}' and cannot be managed by operator-controller"
        )
    );
    assert!(matches!(&err, ApplyError::Collisions(c) if c.len() == 2));
    assert_eq!(err.reason(), ConditionReason::Retrying);
    assert!(!err.is_terminal());
    // Nothing was written: the ConfigMap (first in install order) does not exist, and the
    // existing objects are untouched.
    assert!(
        config_maps(&client, &ns)
            .get_opt("settings")
            .await
            .unwrap()
            .is_none()
    );
    let untouched = deployments(&client, &ns)
        .get("test-operator")
        .await
        .unwrap();
    assert!(!labels(&untouched).contains_key("olm.operatorframework.io/owner-name"));

    // The same objects collide at upgrade too (a previous release without them).
    let previous = refs(&desired[..1]);
    let err = applier
        .apply(&request(&owner, &ns, &identity, &desired, &previous))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApplyError::Collisions(c) if c.len() == 2),
        "{err}"
    );

    deployments(&client, &ns)
        .delete("test-operator", &DeleteParams::default())
        .await
        .unwrap();
    roles.delete(&role, &DeleteParams::default()).await.unwrap();
    let outcome = eventually(
        "the install once the colliding objects are deleted",
        || async {
            applier
                .apply(&request(&owner, &ns, &identity, &desired, &[]))
                .await
                .ok()
        },
    )
    .await;
    assert_eq!(outcome.applied.len(), 3);
    assert_owned(
        &deployments(&client, &ns)
            .get("test-operator")
            .await
            .unwrap(),
        &owner,
        &ns,
    );

    cleanup(&applier, &client, &owner, &ns, &desired).await;
}

#[tokio::test]
async fn what_changed_after_the_check_is_read_again_and_an_object_someone_else_created_meanwhile_is_never_taken_over()
 {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "checked").await;
    let owner = create_extension(&client, &ns, None).await;
    let group = format!("{}.example.com", unique_name("checked"));
    // A custom resource whose CRD the set creates: the check cannot dry-run it, and the apply
    // creates it on condition that it still does not exist.
    let desired = vec![
        config_map(&ns, "settings", json!({"a": "1"})),
        config_map(&ns, "other", json!({"b": "2"})),
        crd(&group, "Widget", "widgets"),
        custom_resource(&group, "Widget", &ns, "w"),
    ];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    let request = request(&owner, &ns, &identity, &desired, &[]);

    // Someone else creates "settings" after the check found it absent.
    let checked = applier.check(&request).await.unwrap();
    assert_eq!(checked.len(), 4);
    let theirs: DynamicObject =
        serde_json::from_value(config_map(&ns, "settings", json!({"theirs": "yes"}))).unwrap();
    config_maps(&client, &ns)
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    let err = applier.apply_checked(&request, &checked).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to get release state using server-side dry-run: ConfigMap 'settings' already exists in namespace '{ns}' and cannot be managed by operator-controller"
        )
    );
    let untouched = config_maps(&client, &ns).get("settings").await.unwrap();
    assert!(!labels(&untouched).contains_key("olm.operatorframework.io/owner-name"));
    assert_eq!(untouched.data["data"], json!({"theirs": "yes"}));
    assert!(
        managers(&untouched)
            .iter()
            .all(|(manager, _)| manager != "operator-controller"),
        "{:?}",
        managers(&untouched)
    );

    // Gone again: the next check and apply create everything, each on the condition that it
    // does not exist.
    config_maps(&client, &ns)
        .delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    let checked = applier.check(&request).await.unwrap();
    let outcome = applier.apply_checked(&request, &checked).await.unwrap();
    assert_eq!(
        outcome.changed().count(),
        4,
        "a first install writes every object"
    );
    let settings = config_maps(&client, &ns).get("settings").await.unwrap();
    assert_owned(&settings, &owner, &ns);
    assert_eq!(settings.data["data"], json!({"a": "1"}));
    let widget = api_for(
        &client,
        &format!("{group}/v1"),
        "Widget",
        "widgets",
        Some(&ns),
    )
    .get("w")
    .await
    .unwrap();
    assert_owned(&widget, &owner, &ns);

    // Ours, edited after the check: the apply's condition fails, it reads the object again and
    // writes the set's content back.
    let checked = applier.check(&request).await.unwrap();
    config_maps(&client, &ns)
        .patch(
            "other",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "edited"}})),
        )
        .await
        .unwrap();
    let outcome = applier.apply_checked(&request, &checked).await.unwrap();
    let changed: Vec<&str> = outcome.changed().map(|o| o.name.as_str()).collect();
    assert_eq!(changed, ["other"]);
    let other = config_maps(&client, &ns).get("other").await.unwrap();
    assert_eq!(other.data["data"], json!({"b": "2"}));

    // Unchanged since the check: nothing is read again and nothing changes.
    let checked = applier.check(&request).await.unwrap();
    let outcome = applier.apply_checked(&request, &checked).await.unwrap();
    assert_eq!(outcome.changed().count(), 0);

    cleanup(&applier, &client, &owner, &ns, &desired).await;
}

#[tokio::test]
async fn objects_written_by_upstreams_helm_client_are_adopted_and_their_fields_become_ours() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "adopt").await;
    let owner = create_extension(&client, &ns, None).await;
    // What upstream's Helm client leaves: Helm's ownership metadata, our owner labels, and an
    // `Update` entry of manager `operator-controller` (it creates, it never applies).
    let upstream = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "settings", "namespace": ns,
            "labels": {"app.kubernetes.io/managed-by": "Helm",
                       "olm.operatorframework.io/owner-kind": "ClusterExtension",
                       "olm.operatorframework.io/owner-name": owner.name},
            "annotations": {"meta.helm.sh/release-name": owner.name, "meta.helm.sh/release-namespace": ns},
        },
        "data": {"kept": "1", "dropped-by-the-new-bundle": "x"}
    });
    let created = config_maps(&client, &ns)
        .create(
            &PostParams {
                field_manager: Some("operator-controller".into()),
                ..PostParams::default()
            },
            &serde_json::from_value(upstream).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        managers(&created),
        [("operator-controller".to_owned(), "Update".to_owned())]
    );

    let desired = vec![config_map(&ns, "settings", json!({"kept": "1"}))];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    // Not in a previous release (an install upstream did not finish): Helm's rule adopts it.
    let outcome = applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap();
    assert_eq!(outcome.changed().count(), 1);
    let adopted = config_maps(&client, &ns).get("settings").await.unwrap();
    assert_owned(&adopted, &owner, &ns);
    assert_eq!(
        managers(&adopted),
        [("operator-controller".to_owned(), "Apply".to_owned())]
    );
    // The field upstream set and the new set does not is removed: it became ours first.
    assert_eq!(adopted.data["data"], json!({"kept": "1"}));

    let again = applier
        .apply(&request(&owner, &ns, &identity, &desired, &refs(&desired)))
        .await
        .unwrap();
    assert_eq!(again.changed().count(), 0);

    delete_extension(&client, &owner).await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn dropped_objects_are_pruned_and_a_dropped_crd_is_kept_while_it_has_custom_resources() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "prune").await;
    let owner = create_extension(&client, &ns, None).await;
    let group = format!("{}.example.com", unique_name("prune"));
    let widgets = format!("widgets.{group}");
    let gadgets = format!("gadgets.{group}");
    let v1 = vec![
        crd(&group, "Widget", "widgets"),
        crd(&group, "Gadget", "gadgets"),
        custom_resource(&group, "Gadget", &ns, "bundled-gadget"),
        config_map(&ns, "a", json!({})),
        config_map(&ns, "b", json!({})),
        {
            let mut kept = config_map(&ns, "policy-keep", json!({}));
            kept["metadata"]["annotations"] = json!({"helm.sh/resource-policy": "keep"});
            kept
        },
    ];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    applier
        .apply(&request(&owner, &ns, &identity, &v1, &[]))
        .await
        .unwrap();
    let kept_by_policy = config_maps(&client, &ns).get("policy-keep").await.unwrap();
    assert!(
        kept_by_policy
            .metadata
            .owner_references
            .clone()
            .unwrap_or_default()
            .is_empty()
    );
    assert_eq!(
        annotations(&kept_by_policy).get("operator-sdk/primary-resource"),
        Some(&format!("/{}", owner.name))
    );
    // User data: a Widget nobody but the user manages.
    let widgets_api = api_for(
        &client,
        &format!("{group}/v1"),
        "Widget",
        "widgets",
        Some(&ns),
    );
    widgets_api
        .create(
            &PostParams::default(),
            &serde_json::from_value(custom_resource(&group, "Widget", &ns, "mine")).unwrap(),
        )
        .await
        .unwrap();

    // v2 keeps only ConfigMap a.
    let v2 = vec![config_map(&ns, "a", json!({}))];
    let outcome = applier
        .apply(&request(&owner, &ns, &identity, &v2, &refs(&v1)))
        .await
        .unwrap();
    let pruned: Vec<String> = outcome.pruned.iter().map(ToString::to_string).collect();
    // Reverse install order: the Gadget (unknown kind, last installed) before its CRD.
    assert_eq!(
        pruned,
        [
            format!("Gadget \"{ns}/bundled-gadget\""),
            format!("CustomResourceDefinition \"{gadgets}\""),
            format!("ConfigMap \"{ns}/b\""),
        ]
    );
    let kept: Vec<(String, KeepReason)> = outcome
        .kept
        .iter()
        .map(|k| (k.object.to_string(), k.reason.clone()))
        .collect();
    assert_eq!(
        kept,
        [
            (
                format!("CustomResourceDefinition \"{widgets}\""),
                KeepReason::CustomResourcesExist
            ),
            (
                format!("ConfigMap \"{ns}/policy-keep\""),
                KeepReason::ResourcePolicy
            ),
        ]
    );
    assert_eq!(
        outcome.kept_crds_message().unwrap(),
        format!(
            "kept CustomResourceDefinition(s) \"{widgets}\" that the installed bundle no longer contains, because custom resources of them still exist; they are removed once those custom resources are deleted"
        )
    );
    assert!(crds(&client).get_opt(&widgets).await.unwrap().is_some());
    assert!(
        widgets_api.get_opt("mine").await.unwrap().is_some(),
        "user data survives the upgrade"
    );
    assert!(
        config_maps(&client, &ns)
            .get_opt("policy-keep")
            .await
            .unwrap()
            .is_some()
    );
    eventually("the gadget CRD to disappear", || async {
        crds(&client)
            .get_opt(&gadgets)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        config_maps(&client, &ns)
            .get_opt("b")
            .await
            .unwrap()
            .is_none()
    );

    // The next reconcile (previous = v2, which no longer lists the Widget CRD) still finds the
    // kept CRD by its labels and keeps reporting it.
    let outcome = applier
        .apply(&request(&owner, &ns, &identity, &v2, &refs(&v2)))
        .await
        .unwrap();
    assert_eq!(outcome.kept_crds().count(), 1);
    // Once the user deletes the custom resources, the CRD goes.
    widgets_api
        .delete("mine", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the widget to disappear", || async {
        widgets_api
            .get_opt("mine")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    let outcome = applier
        .apply(&request(&owner, &ns, &identity, &v2, &refs(&v2)))
        .await
        .unwrap();
    assert_eq!(
        outcome
            .pruned
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        [widgets.as_str()]
    );
    assert!(outcome.kept.is_empty());

    cleanup(&applier, &client, &owner, &ns, &v2).await;
    let _ = config_maps(&client, &ns)
        .delete("policy-keep", &DeleteParams::default())
        .await;
}

#[tokio::test]
async fn a_missing_install_namespace_is_a_retryable_error_and_the_install_proceeds_once_it_exists()
{
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = unique_name("later");
    let owner = create_extension(&client, &ns, None).await;
    let desired = vec![config_map(&ns, "settings", json!({}))];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    let err = applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to apply: namespace \"{ns}\" does not exist; operator-controller does not create namespaces, the installation continues once they exist"
        )
    );
    assert_eq!(err.reason(), ConditionReason::Retrying);
    assert!(!err.is_terminal());

    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .unwrap();
    applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap();
    assert_owned(
        &config_maps(&client, &ns).get("settings").await.unwrap(),
        &owner,
        &ns,
    );

    delete_extension(&client, &owner).await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn a_crd_the_api_server_refuses_to_establish_fails_the_apply_with_its_reason() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "names").await;
    let owner = create_extension(&client, &ns, None).await;
    let group = format!("{}.example.com", unique_name("names"));
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    // `gizmos.<group>` claims the kind `Widget` that `widgets.<group>` already serves.
    let first = vec![crd(&group, "Widget", "widgets")];
    applier
        .apply(&request(&owner, &ns, &identity, &first, &[]))
        .await
        .unwrap();
    let second = vec![
        crd(&group, "Widget", "widgets"),
        crd(&group, "Widget", "gizmos"),
    ];
    let err = eventually("the conflicting CRD to be refused", || async {
        match applier
            .apply(&request(&owner, &ns, &identity, &second, &refs(&first)))
            .await
        {
            Err(e @ ApplyError::CrdNotEstablished { .. }) => Some(e),
            _ => None,
        }
    })
    .await;
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("failed to apply: CustomResourceDefinition \"gizmos.{group}\" is not Established: NamesAccepted is False: ")),
        "{text}"
    );
    // The API server's own reason (it names the first conflicting name, here `WidgetList`).
    assert!(text.ends_with("is already in use"), "{text}");
    assert_eq!(err.reason(), ConditionReason::Retrying);

    cleanup(&applier, &client, &owner, &ns, &second).await;
}

// ---------------------------------------------------------------------------------------------
// Uninstall

#[tokio::test]
async fn uninstall_removes_every_object_in_reverse_order_on_a_cluster_without_garbage_collector() {
    // A control plane of its own on the `apiserver` tier: no kube-controller-manager, so no
    // garbage collector could be what removes the objects.
    let plane = ControlPlane::builder()
        .tier(Tier::ApiServer)
        .start()
        .await
        .unwrap();
    let client = plane.client().await;
    let ns = create_namespace(&client, "uninstall").await;
    let owner = create_extension(&client, &ns, None).await;
    let group = format!("{}.example.com", unique_name("gone"));
    let role = unique_name("gone-role");
    let mut kept = config_map(&ns, "policy-keep", json!({}));
    kept["metadata"]["annotations"] = json!({"helm.sh/resource-policy": "keep"});
    let desired = vec![
        crd(&group, "Widget", "widgets"),
        custom_resource(&group, "Widget", &ns, "w"),
        deployment(&ns, "operator"),
        config_map(&ns, "settings", json!({})),
        cluster_role(&role),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator", "namespace": ns}}),
        kept,
    ];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap();
    // A user's custom resource of the extension's CRD goes with the CRD, as upstream's GC does.
    let widgets_api = api_for(
        &client,
        &format!("{group}/v1"),
        "Widget",
        "widgets",
        Some(&ns),
    );
    widgets_api
        .create(
            &PostParams::default(),
            &serde_json::from_value(custom_resource(&group, "Widget", &ns, "mine")).unwrap(),
        )
        .await
        .unwrap();

    let installed = refs(&desired);
    let outcome = applier
        .uninstall(&UninstallRequest {
            owner: &owner,
            install_namespace: &ns,
            identity: &identity,
            installed: &installed,
        })
        .await
        .unwrap();
    assert!(outcome.is_complete(), "remaining: {:?}", outcome.remaining);
    let mut deleted: Vec<String> = outcome.deleted.iter().map(|o| o.kind.clone()).collect();
    deleted.sort();
    assert_eq!(
        deleted,
        [
            "ClusterRole",
            "ConfigMap",
            "CustomResourceDefinition",
            "Deployment",
            "ServiceAccount",
            "Widget"
        ]
    );
    assert_eq!(outcome.kept.len(), 1);
    assert_eq!(outcome.kept[0].reason, KeepReason::ResourcePolicy);

    // Everything labelled as the extension's is gone, but the kept object.
    for (api_version, kind, plural, namespace, name) in [
        (
            "apps/v1",
            "Deployment",
            "deployments",
            Some(ns.as_str()),
            "operator",
        ),
        (
            "v1",
            "ConfigMap",
            "configmaps",
            Some(ns.as_str()),
            "settings",
        ),
        (
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            Some(ns.as_str()),
            "operator",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
            None,
            role.as_str(),
        ),
    ] {
        let api = api_for(&client, api_version, kind, plural, namespace);
        assert!(
            api.get_opt(name).await.unwrap().is_none(),
            "{kind} {name} still exists"
        );
    }
    assert!(
        crds(&client)
            .get_opt(&format!("widgets.{group}"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        config_maps(&client, &ns)
            .get_opt("policy-keep")
            .await
            .unwrap()
            .is_some()
    );
    // The owner still exists: nothing but the uninstall removed the objects.
    assert!(
        cluster_extensions(&client)
            .get_opt(&owner.name)
            .await
            .unwrap()
            .is_some()
    );

    plane.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Identity

#[tokio::test]
async fn a_service_account_without_rbac_gets_every_missing_permission_in_one_message_then_installs_once_bound()
 {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "sa").await;
    let owner = create_extension(&client, &ns, Some("installer")).await;
    let role = unique_name("sa-role");
    let desired = vec![
        config_map(&ns, "settings", json!({})),
        deployment(&ns, "operator"),
        cluster_role(&role),
    ];
    let applier = Applier::new(client.clone());
    let identity = Identity::ServiceAccount {
        namespace: ns.clone(),
        name: "installer".into(),
    };

    // No ServiceAccount yet: upstream's message, not a wall of permissions.
    let err = applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "service account \"installer\" not found in namespace \"{ns}\": unable to authenticate with the Kubernetes cluster."
        )
    );

    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "installer"}})).unwrap(),
    )
    .await
    .unwrap();
    let err = applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap_err();
    // Header: upstream's pre-authorization message (operator-controller before #2770,
    // applier/helm.go formatPreAuthorizerOutput); rows in its ruleDescription format.
    assert_eq!(
        err.to_string(),
        format!(
            "pre-authorization failed: service account requires the following permissions to manage cluster extension:\n  \
             Namespace:\"\" APIGroups:[olm.operatorframework.io] Resources:[clusterextensions/finalizers] ResourceNames:[{ce}] Verbs:[update]\n  \
             Namespace:\"\" APIGroups:[rbac.authorization.k8s.io] Resources:[clusterroles] ResourceNames:[{role}] Verbs:[create,get,patch]\n  \
             Namespace:\"{ns}\" APIGroups:[] Resources:[configmaps] ResourceNames:[settings] Verbs:[create,get,patch]\n  \
             Namespace:\"{ns}\" APIGroups:[apps] Resources:[deployments] ResourceNames:[operator] Verbs:[create,get,patch]\n\
             checked as user \"system:serviceaccount:{ns}:installer\"",
            ce = owner.name
        )
    );
    assert_eq!(err.reason(), ConditionReason::Retrying);
    assert!(!err.is_terminal());
    assert!(
        config_maps(&client, &ns)
            .get_opt("settings")
            .await
            .unwrap()
            .is_none(),
        "nothing written"
    );

    // Grant exactly what the message asked for, limited to the named objects: a Role for the
    // namespace, a ClusterRole for the rest. (That a name-limited `create` is enough is what
    // the API server does for server-side apply; the preflight checks the same.)
    let bind = |kind: &str, name: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
               "metadata": {"name": name, "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                           "kind": if kind == "RoleBinding" { "Role" } else { "ClusterRole" }, "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}]})
    };
    let rbac = |kind: &str, plural: &str, namespaced: bool| {
        api_for(
            &client,
            "rbac.authorization.k8s.io/v1",
            kind,
            plural,
            namespaced.then_some(ns.as_str()),
        )
    };
    let granted = unique_name("installer");
    let create = |api: Api<DynamicObject>, body: Value| async move {
        api.create(
            &PostParams::default(),
            &serde_json::from_value(body).unwrap(),
        )
        .await
        .unwrap();
    };
    create(
        rbac("Role", "roles", true),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": granted, "namespace": ns},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"],
                          "verbs": ["get", "patch", "create", "delete"]},
                         {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["operator"],
                          "verbs": ["get", "patch", "create", "delete"]}]}),
    )
    .await;
    create(
        rbac("RoleBinding", "rolebindings", true),
        bind("RoleBinding", &granted),
    )
    .await;
    create(
        rbac("ClusterRole", "clusterroles", false),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": granted},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": [role],
                          "verbs": ["get", "patch", "create", "delete"]},
                         {"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterextensions/finalizers"],
                          "resourceNames": [owner.name], "verbs": ["update"]}]}),
    )
    .await;
    let mut cluster_binding = bind("ClusterRoleBinding", &granted);
    cluster_binding["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    create(
        rbac("ClusterRoleBinding", "clusterrolebindings", false),
        cluster_binding,
    )
    .await;

    let outcome = eventually("the install once RBAC is bound", || async {
        applier
            .apply(&request(&owner, &ns, &identity, &desired, &[]))
            .await
            .ok()
    })
    .await;
    assert_eq!(outcome.applied.len(), 3);
    assert_owned(
        &deployments(&client, &ns).get("operator").await.unwrap(),
        &owner,
        &ns,
    );

    // The writes were made as the ServiceAccount: the identity's client authenticates as it.
    let as_sa = operator_controller::apply::identity::client_for(&client, &identity);
    let review: SelfSubjectReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"
    }))
    .unwrap();
    let who = Api::<SelfSubjectReview>::all(as_sa)
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let user = who.status.unwrap().user_info.unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some(format!("system:serviceaccount:{ns}:installer").as_str())
    );
    assert!(
        user.groups
            .unwrap_or_default()
            .contains(&format!("system:serviceaccounts:{ns}"))
    );

    // The uninstall runs as the ServiceAccount too (it holds delete on everything it created).
    let installed = refs(&desired);
    let gone = applier
        .uninstall(&UninstallRequest {
            owner: &owner,
            install_namespace: &ns,
            identity: &identity,
            installed: &installed,
        })
        .await
        .unwrap();
    assert!(gone.is_complete());
    assert_eq!(gone.deleted.len(), 3);

    for (kind, plural) in [
        ("ClusterRoleBinding", "clusterrolebindings"),
        ("ClusterRole", "clusterroles"),
    ] {
        let _ = rbac(kind, plural, false)
            .delete(&granted, &DeleteParams::default())
            .await;
    }
    delete_extension(&client, &owner).await;
    delete_namespace(&client, &ns).await;
}

// ---------------------------------------------------------------------------------------------
// Drift

#[tokio::test]
async fn a_deleted_configmap_is_reported_by_the_drift_watch_and_restored_by_reapplying() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "drift").await;
    let owner = create_extension(&client, &ns, None).await;
    let desired = vec![config_map(&ns, "settings", json!({"a": "1"}))];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    let outcome = applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap();
    let (drift, mut events) = DriftWatches::new(client.clone(), 64);
    drift.watch(&outcome.kinds());
    drift.watch(&outcome.kinds()); // idempotent
    assert_eq!(drift.watched().len(), 1);
    assert!(drift.synced(&outcome.kinds()[0]).await);

    // The watch sees every extension's objects (other tests run in parallel): wait for ours.
    let mut next_for = async |change: DriftChange| {
        loop {
            let event = tokio::time::timeout(Duration::from_secs(60), events.recv())
                .await
                .expect("no drift event within the bound")
                .expect("the drift channel closed");
            if event.extension == owner.name {
                assert_eq!(event.object.name, "settings");
                assert_eq!(event.object.namespace.as_deref(), Some(ns.as_str()));
                assert_eq!(event.change, change, "{event:?}");
                return;
            }
        }
    };

    // A field we own changed by someone else: reported, and re-applying takes it back.
    config_maps(&client, &ns)
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "changed"}})),
        )
        .await
        .unwrap();
    next_for(DriftChange::Modified).await;
    applier
        .apply(&request(&owner, &ns, &identity, &desired, &refs(&desired)))
        .await
        .unwrap();
    assert_eq!(
        config_maps(&client, &ns)
            .get("settings")
            .await
            .unwrap()
            .data["data"]["a"],
        "1"
    );
    next_for(DriftChange::Modified).await; // our own repair

    config_maps(&client, &ns)
        .delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    next_for(DriftChange::Deleted).await;
    let restored = applier
        .apply(&request(&owner, &ns, &identity, &desired, &refs(&desired)))
        .await
        .unwrap();
    assert_eq!(restored.changed().count(), 1);
    assert_owned(
        &config_maps(&client, &ns).get("settings").await.unwrap(),
        &owner,
        &ns,
    );

    drift.retain(&[]);
    assert!(drift.watched().is_empty());
    delete_extension(&client, &owner).await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn user_labels_annotations_and_rollout_restarts_survive_reapplying() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "userfields").await;
    let owner = create_extension(&client, &ns, None).await;
    let desired = vec![deployment(&ns, "operator")];
    let applier = Applier::new(client.clone());
    let identity = Identity::Controller;
    applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap();

    let api = deployments(&client, &ns);
    // `kubectl label` / `kubectl annotate` (Update entries of their own managers).
    api.patch(
        "operator",
        &PatchParams {
            field_manager: Some("kubectl-label".into()),
            ..PatchParams::default()
        },
        &Patch::Merge(
            json!({"metadata": {"labels": {"team": "blue"}, "annotations": {"note": "mine"}}}),
        ),
    )
    .await
    .unwrap();
    // `kubectl rollout restart` (upstream's user-managed-fields scenario).
    let restarted_at = "2026-01-01T00:00:00Z";
    api.patch(
        "operator",
        &PatchParams { field_manager: Some("kubectl-rollout".into()), ..PatchParams::default() },
        &Patch::Strategic(json!({"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": restarted_at}}}}})),
    )
    .await
    .unwrap();
    // On the full tier the controller-manager reacts to the restart by writing the Deployment's
    // `deployment.kubernetes.io/revision` annotation; were that write to land between the
    // applier's read and its apply, the object would rightly count as changed (by someone else).
    // Let it settle first: it has processed the latest spec once observedGeneration catches up.
    if env.control_plane.tier() == Tier::Full {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let live = api.get("operator").await.unwrap();
            let observed = live.data["status"]["observedGeneration"].as_i64();
            if observed.is_some() && observed == live.metadata.generation {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the controller-manager did not process the restarted Deployment"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    let outcome = applier
        .apply(&request(&owner, &ns, &identity, &desired, &refs(&desired)))
        .await
        .unwrap();
    assert_eq!(outcome.changed().count(), 0, "nothing of ours had drifted");
    let live = api.get("operator").await.unwrap();
    assert_eq!(labels(&live).get("team").map(String::as_str), Some("blue"));
    assert_eq!(
        annotations(&live).get("note").map(String::as_str),
        Some("mine")
    );
    assert_eq!(
        live.data["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"],
        restarted_at
    );
    assert_owned(&live, &owner, &ns);

    if env.control_plane.tier() == Tier::Full {
        // The restart rolled a second ReplicaSet, and re-applying did not undo it.
        let replica_sets = api_for(&client, "apps/v1", "ReplicaSet", "replicasets", Some(&ns));
        eventually("two ReplicaSets after the restart", || async {
            (replica_sets
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .len()
                == 2)
                .then_some(())
        })
        .await;
    }

    delete_extension(&client, &owner).await;
    delete_namespace(&client, &ns).await;
}

// ---------------------------------------------------------------------------------------------
// Availability

#[tokio::test]
async fn availability_names_every_deployment_that_is_not_available() {
    let env = olm_e2e::shared().await;
    let client = env.client().await;
    let ns = create_namespace(&client, "available").await;
    let owner = create_extension(&client, &ns, None).await;
    let mut stuck = deployment(&ns, "stuck");
    // No Node matches: its Pod never runs.
    stuck["spec"]["template"]["spec"]["nodeSelector"] = json!({"no-such-node": "true"});
    let desired = vec![deployment(&ns, "ready"), stuck];
    let applier = Applier::with_config(client.clone(), ApplierConfig::default());
    let identity = Identity::Controller;
    let outcome = applier
        .apply(&request(&owner, &ns, &identity, &desired, &[]))
        .await
        .unwrap();
    assert_eq!(outcome.deployments().len(), 2);

    if env.control_plane.tier() == Tier::Full {
        let ready_only = vec![outcome.deployments()[0].clone()];
        let available = eventually("the ready Deployment to be Available", || async {
            let a = applier.availability(&ready_only).await.unwrap();
            a.is_available().then_some(a)
        })
        .await;
        assert_eq!(available.reason, ConditionReason::ProbesSucceeded);
        assert_eq!(
            available.message,
            "Objects are available and pass all probes."
        );
        let both = applier.availability(&outcome.deployments()).await.unwrap();
        assert_eq!(both.status, ConditionStatus::False);
        assert_eq!(both.reason, ConditionReason::ProbeFailure);
        assert!(
            both.message
                .starts_with(&format!("Object Deployment.apps/v1 {ns}/stuck: ")),
            "{}",
            both.message
        );
        assert!(!both.message.contains("/ready"), "{}", both.message);
    } else {
        // No controllers: no status at all.
        let both = applier.availability(&outcome.deployments()).await.unwrap();
        assert_eq!(both.reason, ConditionReason::ProbeFailure);
        assert_eq!(
            both.message,
            format!(
                "Object Deployment.apps/v1 {ns}/ready: missing .status.conditions\nObject Deployment.apps/v1 {ns}/stuck: missing .status.conditions"
            )
        );
    }

    delete_extension(&client, &owner).await;
    delete_namespace(&client, &ns).await;
}
