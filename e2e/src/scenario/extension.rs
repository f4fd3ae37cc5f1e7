//! Extensions in the scenario vocabulary: what a test applies ([`ExtensionSpec`] → a
//! ClusterExtension labelled for the scenario's controller) and the steps on an applied
//! [`Extension`]: patch its spec, wait until a condition meets an [`Expect`]ation, read the
//! installed bundle, delete it.
//!
//! Input: [`ExtensionSpec`]s and [`Expect`]ations. Output: ClusterExtensions created, patched and
//! deleted; the extension as read when an expectation is met. Network: 127.0.0.1 only (the API
//! server).

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use olm_api::v1::ClusterExtension;
use serde_json::{Value, json};

use super::{Expect, INSTALLED, Published, Scenario, installed_bundle};
use crate::operator_controller::{CATALOG_NAME_LABEL, INSTANCE_LABEL, OperatorController};
use crate::test_env::unique_name;

impl Scenario {
    /// Creates the extension, labelled for the scenario's controller.
    pub async fn apply_extension(&mut self, spec: ExtensionSpec) -> Extension {
        let extension = spec.create(&self.extensions, &self.settings.instance).await;
        self.applied.push(extension.name.clone());
        extension
    }

    /// Merge-patches the extension's spec (`null` removes a field).
    pub async fn patch_spec(&self, extension: &Extension, spec: Value) {
        self.extensions
            .patch(
                &extension.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": spec })),
            )
            .await
            .unwrap_or_else(|e| panic!("patch {}: {e}", extension.name));
    }

    /// Sets `spec.source.catalog.version` (a version or a range).
    pub async fn set_version(&self, extension: &Extension, version: &str) {
        self.patch_spec(
            extension,
            json!({"source": {"catalog": {"version": version}}}),
        )
        .await;
    }

    /// Sets `spec.config` to `config` inline.
    /// Approves `version`: `spec.install.approval` becomes `Manual` with `approvedVersion`.
    pub async fn approve(&self, extension: &Extension, version: &str) {
        self.patch_spec(
            extension,
            json!({"install": {"approval": {"mode": "Manual", "approvedVersion": version}}}),
        )
        .await;
    }

    /// Sets `spec.install.rollback`.
    pub async fn set_rollback(&self, extension: &Extension, rollback: Value) {
        self.patch_spec(extension, json!({"install": {"rollback": rollback}}))
            .await;
    }

    pub async fn set_config(&self, extension: &Extension, config: Value) {
        self.patch_spec(extension, json!({ "config": inline_config(config) }))
            .await;
    }

    /// The extension as it is now.
    pub async fn get(&self, extension: &Extension) -> ClusterExtension {
        self.extensions
            .get(&extension.name)
            .await
            .unwrap_or_else(|e| panic!("get ClusterExtension {}: {e}", extension.name))
    }

    /// Waits until the extension meets `expect` for its current generation; returns it.
    ///
    /// A message given with [`Expect::message`] and a bundle given with [`Expect::bundle`] are
    /// checked once the condition's status and reason are reached (a mismatch fails at once); a
    /// message given with [`Expect::until_message`] and a bundle given with
    /// [`Expect::until_bundle`] are part of what is awaited.
    pub async fn wait_for(&self, extension: &Extension, expect: Expect) -> ClusterExtension {
        let name = &extension.name;
        let found = self
            .eventually(&format!("{name}: {expect}"), || async {
                let e = self.extensions.get(name).await.ok()?;
                expect.is_met_by(&e).then_some(e)
            })
            .await;
        expect.assert_checks(name, &found);
        found
    }

    /// The installed bundle (name, version) as the extension's status reports it now.
    pub async fn installed(&self, extension: &Extension) -> Option<(String, String)> {
        installed_bundle(&self.get(extension).await)
    }

    /// Applies the extension and waits until it is [`INSTALLED`].
    pub async fn install(&mut self, spec: ExtensionSpec) -> Extension {
        let extension = self.apply_extension(spec).await;
        self.wait_for(&extension, INSTALLED).await;
        extension
    }

    /// Waits until the extension reports `bundle` (name, version; see [`Published::bundle`])
    /// installed; returns it.
    pub async fn wait_until_installed(
        &self,
        extension: &Extension,
        bundle: (String, String),
    ) -> ClusterExtension {
        let name = &extension.name;
        self.eventually(
            &format!("{name} to report {} installed", bundle.0),
            || async {
                let e = self.extensions.get(name).await.ok()?;
                (installed_bundle(&e).as_ref() == Some(&bundle)).then_some(e)
            },
        )
        .await
    }

    /// Deletes the extension and waits until it is gone (its finalizers released).
    pub async fn delete_extension(&mut self, extension: &Extension) {
        self.delete_extension_named(&extension.name).await;
        self.applied.retain(|n| n != &extension.name);
    }

    /// Sends the extension's deletion and returns at once (the controller runs its finalizers
    /// later): [`Scenario::wait_deleted`] waits for them.
    pub async fn start_deleting(&self, extension: &Extension) {
        self.extensions
            .delete(&extension.name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete ClusterExtension {}: {e}", extension.name));
    }

    /// Waits until the extension is gone (its finalizers released).
    pub async fn wait_deleted(&mut self, extension: &Extension) {
        self.wait_gone(&extension.name).await;
        self.applied.retain(|n| n != &extension.name);
    }

    pub(super) async fn delete_extension_named(&self, name: &str) {
        let _ = self.extensions.delete(name, &DeleteParams::default()).await;
        self.wait_gone(name).await;
    }

    async fn wait_gone(&self, name: &str) {
        self.eventually(&format!("{name} to be deleted"), || {
            gone(&self.extensions, name)
        })
        .await;
    }
}

/// `Some` once the extension `name` no longer exists.
async fn gone(extensions: &Api<ClusterExtension>, name: &str) -> Option<()> {
    matches!(extensions.get_opt(name).await, Ok(None)).then_some(())
}

/// [`Scenario::wait_for`] for a test that runs its own controllers: waits until the extension
/// `name` meets `expect`; a failure quotes `controller`'s log tail.
pub async fn wait_for(
    extensions: &Api<ClusterExtension>,
    name: &str,
    controller: &OperatorController,
    expect: Expect,
) -> ClusterExtension {
    let found = controller
        .eventually(&format!("{name}: {expect}"), || async {
            let e = extensions.get(name).await.ok()?;
            expect.is_met_by(&e).then_some(e)
        })
        .await;
    expect.assert_checks(name, &found);
    found
}

/// Deletes the extension `name` and waits until it is gone (`controller` released its
/// finalizers); a failure quotes the controller's log tail.
pub async fn delete_extension(
    extensions: &Api<ClusterExtension>,
    name: &str,
    controller: &OperatorController,
) {
    let _ = extensions.delete(name, &DeleteParams::default()).await;
    controller
        .eventually(&format!("{name} to be deleted"), || gone(extensions, name))
        .await;
}

/// A ClusterExtension to apply: one package from catalogs selected by name (or a selector).
#[derive(Clone, Debug)]
pub struct ExtensionSpec {
    /// Default: `ext-<random>`.
    pub name: Option<String>,
    pub package: String,
    pub namespace: String,
    /// `spec.source.catalog.selector`; default: the catalog's name label.
    pub selector: Value,
    pub version: Option<String>,
    pub channels: Vec<String>,
    pub upgrade_constraint_policy: Option<String>,
    pub service_account: Option<String>,
    /// `spec.config.inline`.
    pub inline_config: Option<Value>,
    /// `spec.install.approval`.
    pub approval: Option<Value>,
    /// `spec.install.rollback`.
    pub rollback: Option<Value>,
}

impl ExtensionSpec {
    /// The published package from its catalog (selected by name), into `namespace`.
    pub fn new(catalog: &Published, namespace: &str) -> ExtensionSpec {
        ExtensionSpec::of_package(catalog.package(), &catalog.name, namespace)
    }

    /// `package` from the ClusterCatalog named `catalog`, into `namespace`.
    pub fn of_package(package: &str, catalog: &str, namespace: &str) -> ExtensionSpec {
        ExtensionSpec {
            name: None,
            package: package.to_owned(),
            namespace: namespace.to_owned(),
            selector: json!({"matchLabels": {CATALOG_NAME_LABEL: catalog}}),
            version: None,
            channels: Vec::new(),
            upgrade_constraint_policy: None,
            service_account: None,
            inline_config: None,
            approval: None,
            rollback: None,
        }
    }

    pub fn named(mut self, name: &str) -> ExtensionSpec {
        self.name = Some(name.to_owned());
        self
    }

    /// `spec.source.catalog.version` (a version or a range).
    pub fn version(mut self, version: &str) -> ExtensionSpec {
        self.version = Some(version.to_owned());
        self
    }

    pub fn channels(mut self, channels: &[&str]) -> ExtensionSpec {
        self.channels = channels.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// `CatalogProvided` or `SelfCertified`.
    pub fn upgrade_constraint_policy(mut self, policy: &str) -> ExtensionSpec {
        self.upgrade_constraint_policy = Some(policy.to_owned());
        self
    }

    /// The catalogs whose names are `catalogs` (a `matchExpressions` selector).
    pub fn catalogs(mut self, catalogs: &[&str]) -> ExtensionSpec {
        self.selector = json!({"matchExpressions": [{
            "key": CATALOG_NAME_LABEL, "operator": "In", "values": catalogs,
        }]});
        self
    }

    pub fn service_account(mut self, name: &str) -> ExtensionSpec {
        self.service_account = Some(name.to_owned());
        self
    }

    pub fn inline_config(mut self, config: Value) -> ExtensionSpec {
        self.inline_config = Some(config);
        self
    }

    /// `spec.install.approval.mode` (`Automatic`, `Manual`, `AutomaticUnlessEscalation`).
    pub fn approval(mut self, mode: &str) -> ExtensionSpec {
        self.approval = Some(json!({ "mode": mode }));
        self
    }

    /// `spec.install.rollback`: `OnFailure` with a progress deadline of `minutes`.
    pub fn rollback_on_failure(mut self, minutes: i32) -> ExtensionSpec {
        self.rollback = Some(json!({"mode": "OnFailure", "progressDeadlineMinutes": minutes}));
        self
    }

    /// Creates the ClusterExtension, labelled for the controller `instance`.
    pub async fn create(&self, extensions: &Api<ClusterExtension>, instance: &str) -> Extension {
        let extension = Extension {
            name: self.name.clone().unwrap_or_else(|| unique_name("ext")),
            namespace: self.namespace.clone(),
        };
        let body = self.body(instance, &extension.name);
        let object: ClusterExtension = serde_json::from_value(body.clone())
            .unwrap_or_else(|e| panic!("ClusterExtension {body}: {e}"));
        extensions
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create ClusterExtension {}: {e}", extension.name));
        extension
    }

    /// The ClusterExtension, labelled for the controller `instance`.
    pub fn body(&self, instance: &str, name: &str) -> Value {
        let mut source = json!({"packageName": self.package, "selector": self.selector});
        if let Some(v) = &self.version {
            source["version"] = json!(v);
        }
        if !self.channels.is_empty() {
            source["channels"] = json!(self.channels);
        }
        if let Some(p) = &self.upgrade_constraint_policy {
            source["upgradeConstraintPolicy"] = json!(p);
        }
        let mut spec = json!({
            "namespace": self.namespace,
            "source": {"sourceType": "Catalog", "catalog": source},
        });
        if let Some(sa) = &self.service_account {
            spec["serviceAccount"] = json!({ "name": sa });
        }
        if let Some(config) = &self.inline_config {
            spec["config"] = inline_config(config.clone());
        }
        if let Some(approval) = &self.approval {
            spec["install"]["approval"] = approval.clone();
        }
        if let Some(rollback) = &self.rollback {
            spec["install"]["rollback"] = rollback.clone();
        }
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": name, "labels": {INSTANCE_LABEL: instance}},
            "spec": spec,
        })
    }
}

/// `spec.config` holding `config` inline.
pub fn inline_config(config: Value) -> Value {
    json!({"configType": "Inline", "inline": config})
}

/// An applied extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extension {
    pub name: String,
    /// Its install namespace.
    pub namespace: String,
}
