//! The table → catalog part of the scenario vocabulary: a [`Package`] (one [`Row`] per bundle, with
//! its channels, upgrade edges, properties and where its image comes from) becomes bundle images
//! and a file-based catalog, pushed and served by the scenario's catalogd.
//!
//! Input: a [`Package`] table; the scenario's registry and catalogd. Output: bundle images and a
//! catalog image pushed, a ClusterCatalog served ([`Published`], from [`Scenario::publish`] and
//! [`Scenario::republish`]), the catalog's blobs as JSON ([`Package::fbc`]). Network: 127.0.0.1
//! only (the registry and the API server).

use std::collections::BTreeMap;
use std::path::Path;

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::{DEFAULT_CHANNEL, POLL_MINUTES, Scenario};
use crate::images::push_catalog;
use crate::operator_controller::{BundleSpec, bundle_name};
use crate::test_env::unique_name;

impl Scenario {
    /// Pushes the package's bundles (each row's image unless it is not pushed or reuses
    /// another's) and a catalog listing them, and waits until the scenario's catalogd serves it
    /// (polled every [`POLL_MINUTES`]).
    pub async fn publish(&self, package: Package) -> Published {
        let registry = self.registry();
        let bundle_repo = unique_name("bundles");
        let catalog_repo = unique_name("catalog");
        let mut published = Published {
            name: String::new(),
            image: String::new(),
            package,
            bundle_repo,
            catalog_repo,
            bundle_images: BTreeMap::new(),
        };
        published.push(registry).await;
        published.name = self
            .catalogs
            .serve("cat", &published.image, Some(POLL_MINUTES))
            .await;
        published
    }

    /// Changes the package's table, pushes the bundles it adds and the catalog again under the
    /// same tag. Returns at once: catalogd picks the new image up on its next poll.
    pub async fn republish(
        &self,
        published: &mut Published,
        change: impl FnOnce(Package) -> Package,
    ) {
        let package = std::mem::replace(&mut published.package, Package::named(""));
        published.package = change(package);
        published.push(self.registry()).await;
    }

    /// Pushes the image of a row that was listed but not pushed.
    pub async fn push_bundle(&self, published: &mut Published, version: &str) {
        let row = published.package.row_mut(version);
        row.image = RowImage::Pushed;
        let spec = row.bundle.clone();
        let image = spec.push(self.registry(), &published.bundle_repo).await;
        published.bundle_images.insert(version.to_owned(), image);
    }

    /// One more ClusterCatalog `prefix-<random>` for `image`, served by the scenario's catalogd.
    pub async fn serve(&self, image: &str, poll_minutes: Option<i64>) -> String {
        self.catalogs.serve("cat", image, poll_minutes).await
    }

    /// Sets a ClusterCatalog's `spec.priority`.
    pub async fn set_catalog_priority(&self, catalog: &str, priority: i32) {
        self.catalogs
            .api
            .patch(
                catalog,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"priority": priority}})),
            )
            .await
            .unwrap_or_else(|e| panic!("set the priority of {catalog}: {e}"));
    }

    /// Deletes a ClusterCatalog and waits until it is gone.
    pub async fn delete_catalog(&self, catalog: &str) {
        self.catalogs
            .api
            .delete(catalog, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete ClusterCatalog {catalog}: {e}"));
        self.catalogs
            .catalogd
            .wait_deleted(&self.catalogs.api, catalog)
            .await;
    }
}

/// Where a row's bundle image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowImage {
    /// Written from the row's [`BundleSpec`] and pushed.
    Pushed,
    /// Listed in the catalog under the tag it would have, never pushed (until
    /// [`Scenario::push_bundle`]).
    NotPushed,
    /// The image of the row of that version (identical content under a new version).
    SameAs(String),
}

/// What a row's channel entries say it replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replaces {
    /// The row before it in the same channel (none for a channel's first row).
    Previous,
    /// The bundle of that version.
    Version(String),
    Nothing,
}

/// One bundle of a [`Package`]: its spec, its channels and its upgrade edges.
#[derive(Clone, Debug)]
pub struct Row {
    pub bundle: BundleSpec,
    pub channels: Vec<String>,
    pub replaces: Replaces,
    /// Versions it skips.
    pub skips: Vec<String>,
    /// `olm.skipRange`, in blang syntax.
    pub skip_range: Option<String>,
    pub image: RowImage,
}

/// A catalog of one package, as a table: one [`Row`] per bundle, in channel order.
///
/// ```text
/// Package::new("pkg")                       // package `pkg-<random>`, default channel stable
///     .bundle("1.0.0").channels(&["stable", "fast"])
///     .bundle("1.1.0").channels(&["fast"])  // replaces 1.0.0 in fast
///     .bundle("1.2.0").skip_range(">=1.0.0 <1.2.0").not_pushed()
/// ```
///
/// The row methods after [`Package::bundle`] (`channels`, `replaces`, `skips`, `skip_range`,
/// `not_pushed`, `same_image_as`, `property`, `crd_schema`, `install_modes`) change the row
/// added last.
#[derive(Clone, Debug)]
pub struct Package {
    pub name: String,
    /// Default: the first row's first channel.
    pub default_channel: Option<String>,
    pub rows: Vec<Row>,
}

impl Package {
    /// An empty package named `prefix-<random>`.
    pub fn new(prefix: &str) -> Package {
        Package::named(&unique_name(prefix))
    }

    /// An empty package named exactly `name`.
    pub fn named(name: &str) -> Package {
        Package {
            name: name.to_owned(),
            default_channel: None,
            rows: Vec::new(),
        }
    }

    /// A package `pkg-<random>` with [`Package::versions`].
    pub fn with_versions(versions: &[&str]) -> Package {
        Package::new("pkg").versions(versions)
    }

    /// Rows for `versions` in [`DEFAULT_CHANNEL`], each replacing the one before.
    pub fn versions(mut self, versions: &[&str]) -> Package {
        for version in versions {
            self = self.bundle(version);
        }
        self
    }

    /// A row for [`BundleSpec::new`] at `version`, in [`DEFAULT_CHANNEL`], replacing the row
    /// before it in its channel.
    pub fn bundle(self, version: &str) -> Package {
        self.bundle_with(version, |_| {})
    }

    /// As [`Package::bundle`], the bundle changed by `change` first.
    pub fn bundle_with(mut self, version: &str, change: impl FnOnce(&mut BundleSpec)) -> Package {
        let mut bundle = BundleSpec::new(&self.name, version);
        change(&mut bundle);
        self.rows.push(Row {
            bundle,
            channels: vec![DEFAULT_CHANNEL.to_owned()],
            replaces: Replaces::Previous,
            skips: Vec::new(),
            skip_range: None,
            image: RowImage::Pushed,
        });
        self
    }

    fn last(&mut self) -> &mut Row {
        self.rows
            .last_mut()
            .expect("a row method needs a Package::bundle before it")
    }

    fn row_mut(&mut self, version: &str) -> &mut Row {
        self.rows
            .iter_mut()
            .find(|r| r.bundle.version == version)
            .unwrap_or_else(|| panic!("no row for version {version}"))
    }

    /// The last row is in these channels.
    pub fn channels(mut self, channels: &[&str]) -> Package {
        self.last().channels = channels.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// The last row replaces the bundle of `version`.
    pub fn replaces(mut self, version: &str) -> Package {
        self.last().replaces = Replaces::Version(version.to_owned());
        self
    }

    /// The last row replaces nothing.
    pub fn replaces_nothing(mut self) -> Package {
        self.last().replaces = Replaces::Nothing;
        self
    }

    /// The last row skips the bundles of `versions`.
    pub fn skips(mut self, versions: &[&str]) -> Package {
        self.last().skips = versions.iter().map(|v| (*v).to_owned()).collect();
        self
    }

    /// The last row's `olm.skipRange`.
    pub fn skip_range(mut self, range: &str) -> Package {
        self.last().skip_range = Some(range.to_owned());
        self
    }

    /// The last row is listed but its image is not pushed.
    pub fn not_pushed(mut self) -> Package {
        self.last().image = RowImage::NotPushed;
        self
    }

    /// The last row lists the image of the row of `version`.
    pub fn same_image_as(mut self, version: &str) -> Package {
        self.last().image = RowImage::SameAs(version.to_owned());
        self
    }

    /// The last row's bundle ships its CRD with this schema (see [`BundleSpec::with_crd_schema`]).
    pub fn crd_schema(mut self, schema: Value) -> Package {
        let row = self.last();
        row.bundle = row.bundle.clone().with_crd_schema(schema);
        self
    }

    /// The last row's bundle supports only these install modes.
    pub fn install_modes(mut self, modes: &[&str]) -> Package {
        self.last().bundle.install_modes = modes.iter().map(|m| (*m).to_owned()).collect();
        self
    }

    /// The last row's bundle declares a property (in its image and on its catalog entry).
    pub fn property(mut self, type_: &str, value: Value) -> Package {
        self.last()
            .bundle
            .properties
            .push((type_.to_owned(), value));
        self
    }

    /// The package's default channel.
    pub fn default_channel(mut self, channel: &str) -> Package {
        self.default_channel = Some(channel.to_owned());
        self
    }

    /// The channels in order of first appearance, each with its rows' entries.
    fn channel_entries(&self) -> Vec<(String, Vec<Value>)> {
        let mut channels: Vec<(String, Vec<Value>)> = Vec::new();
        let mut previous: BTreeMap<String, String> = BTreeMap::new();
        for row in &self.rows {
            let name = row.bundle.name();
            for channel in &row.channels {
                let mut entry = json!({ "name": name });
                let replaces = match &row.replaces {
                    Replaces::Previous => previous.get(channel).cloned(),
                    Replaces::Version(v) => Some(bundle_name(&self.name, v)),
                    Replaces::Nothing => None,
                };
                if let Some(r) = replaces {
                    entry["replaces"] = json!(r);
                }
                if !row.skips.is_empty() {
                    let skips: Vec<String> = row
                        .skips
                        .iter()
                        .map(|v| bundle_name(&self.name, v))
                        .collect();
                    entry["skips"] = json!(skips);
                }
                if let Some(range) = &row.skip_range {
                    entry["skipRange"] = json!(range);
                }
                previous.insert(channel.clone(), name.clone());
                match channels.iter_mut().find(|(c, _)| c == channel) {
                    Some((_, entries)) => entries.push(entry),
                    None => channels.push((channel.clone(), vec![entry])),
                }
            }
        }
        channels
    }

    /// The file-based catalog of the package, one blob per element, bundles listing `images`
    /// (version → image).
    pub fn fbc(&self, images: &BTreeMap<String, String>) -> Vec<Value> {
        let channels = self.channel_entries();
        let default_channel = self
            .default_channel
            .clone()
            .or_else(|| channels.first().map(|(c, _)| c.clone()))
            .unwrap_or_else(|| DEFAULT_CHANNEL.to_owned());
        let mut blobs = vec![json!({
            "schema": "olm.package", "name": self.name, "defaultChannel": default_channel,
        })];
        for (channel, entries) in channels {
            blobs.push(json!({
                "schema": "olm.channel", "name": channel, "package": self.name, "entries": entries,
            }));
        }
        for row in &self.rows {
            let version = &row.bundle.version;
            let mut properties = vec![json!({"type": "olm.package",
                "value": {"packageName": self.name, "version": version}})];
            properties.extend(
                row.bundle
                    .properties
                    .iter()
                    .map(|(type_, value)| json!({"type": type_, "value": value})),
            );
            let image = images
                .get(version)
                .unwrap_or_else(|| panic!("no image for {version}"));
            blobs.push(json!({
                "schema": "olm.bundle", "name": row.bundle.name(), "package": self.name,
                "image": image, "properties": properties,
            }));
        }
        blobs
    }

    /// Writes [`Package::fbc`] into `dir`, one JSON file per blob.
    pub fn write_fbc(&self, dir: &Path, images: &BTreeMap<String, String>) {
        std::fs::create_dir_all(dir).expect("catalog dir");
        for (i, blob) in self.fbc(images).iter().enumerate() {
            std::fs::write(dir.join(format!("{i:03}.json")), blob.to_string()).expect("blob");
        }
    }

    /// Pushes [`Package::fbc`] as the catalog image `<repo>:latest`; returns its reference.
    pub async fn push_catalog(
        &self,
        registry: &crate::registry::Registry,
        repo: &str,
        images: &BTreeMap<String, String>,
    ) -> String {
        let dir = tempfile::tempdir().expect("a catalog directory");
        self.write_fbc(dir.path(), images);
        let reference = format!("{repo}:latest");
        push_catalog(registry, &reference, dir.path())
            .await
            .unwrap_or_else(|e| panic!("push {reference}: {e}"));
        registry.image(&reference)
    }
}

/// A [`Package`] pushed and served: its ClusterCatalog and images.
#[derive(Debug)]
pub struct Published {
    /// The ClusterCatalog's name.
    pub name: String,
    /// The catalog image (`<repo>:latest`).
    pub image: String,
    pub package: Package,
    /// Where the bundle images are pushed (`<bundle_repo>:v<version>`).
    pub bundle_repo: String,
    pub catalog_repo: String,
    /// The image each version lists.
    pub bundle_images: BTreeMap<String, String>,
}

impl Published {
    /// The package's name.
    pub fn package(&self) -> &str {
        &self.package.name
    }

    /// The image the catalog lists for `version`.
    pub fn bundle_image(&self, version: &str) -> &str {
        self.bundle_images
            .get(version)
            .unwrap_or_else(|| panic!("no bundle {version} published"))
    }

    /// (bundle name, version), as `status.install.bundle` reports an installed bundle.
    pub fn bundle(&self, version: &str) -> (String, String) {
        (bundle_name(&self.package.name, version), version.to_owned())
    }

    /// The Deployment the package's bundles install (see [`BundleSpec::deployment_name`]).
    pub fn deployment_name(&self) -> String {
        self.package
            .rows
            .first()
            .unwrap_or_else(|| panic!("{} has no bundle", self.package.name))
            .bundle
            .deployment_name()
    }

    /// Pushes the rows' images not pushed yet and the catalog (tag `latest`).
    async fn push(&mut self, registry: &crate::registry::Registry) {
        for row in &self.package.rows {
            let version = &row.bundle.version;
            if self.bundle_images.contains_key(version) {
                continue;
            }
            let image = match &row.image {
                RowImage::Pushed => row.bundle.push(registry, &self.bundle_repo).await,
                RowImage::NotPushed => registry.image(&format!("{}:v{version}", self.bundle_repo)),
                RowImage::SameAs(other) => self.bundle_image(other).to_owned(),
            };
            self.bundle_images.insert(version.clone(), image);
        }
        self.image = self
            .package
            .push_catalog(registry, &self.catalog_repo, &self.bundle_images)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_replace_the_row_before_them_in_each_channel() {
        let package = Package::named("p")
            .bundle("1.0.0")
            .channels(&["stable", "fast"])
            .bundle("1.1.0")
            .channels(&["fast"])
            .bundle("1.2.0")
            .channels(&["fast"])
            .skips(&["1.1.0"])
            .skip_range("<1.2.0");
        let images = [("1.0.0", "i0"), ("1.1.0", "i1"), ("1.2.0", "i2")]
            .map(|(v, i)| (v.to_owned(), i.to_owned()))
            .into();
        let fbc = package.fbc(&images);
        assert_eq!(fbc[0]["defaultChannel"], "stable");
        assert_eq!(fbc[1]["entries"], json!([{"name": "p.v1.0.0"}]));
        assert_eq!(
            fbc[2]["entries"],
            json!([
                {"name": "p.v1.0.0"},
                {"name": "p.v1.1.0", "replaces": "p.v1.0.0"},
                {"name": "p.v1.2.0", "replaces": "p.v1.1.0", "skips": ["p.v1.1.0"], "skipRange": "<1.2.0"},
            ])
        );
        assert_eq!(fbc[5]["image"], "i2");
    }
}
