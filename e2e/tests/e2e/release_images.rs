//! The product images (`make images`): built from the binaries under test by our own OCI code,
//! pushed to the loopback registry, pulled back by our own pull code, and run from the unpacked
//! root filesystem (chroot) as the image's user.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use olm_e2e::assets::Assets;
use olm_e2e::release::image::{
    self, HOST_CA_BUNDLE, ImageInput, LABEL_REVISION, LABEL_SOURCE, LABEL_TITLE, LABEL_VERSION,
    ProductImage, USER,
};
use olm_e2e::release::manifest::COMPONENTS;
use olm_image::{ExtractFilter, Platform, Puller};

use crate::support::unique_name;

/// A built product image and where it was pushed (`repository@<index digest>`).
pub struct Pushed {
    pub image: ProductImage,
    pub reference: String,
}

/// Both product images, built from the binaries under test and pushed to the shared registry once
/// per test run (building a debug binary's image takes seconds; the tests share it).
pub async fn product_images() -> &'static BTreeMap<String, Pushed> {
    static IMAGES: tokio::sync::OnceCell<BTreeMap<String, Pushed>> =
        tokio::sync::OnceCell::const_new();
    IMAGES
        .get_or_init(|| async {
            let env = olm_e2e::shared().await;
            let pusher = olm_e2e::images::pusher(&env.registry).unwrap();
            let mut out = BTreeMap::new();
            for name in COMPONENTS {
                let input = input(name);
                let image = tokio::task::spawn_blocking(move || image::build(&input))
                    .await
                    .unwrap()
                    .unwrap();
                let repository = env.registry.image(&unique_name(name));
                let reference = image::push(&pusher, &repository, "v1", &image)
                    .await
                    .unwrap();
                assert_eq!(reference, format!("{repository}@{}", image.digest()));
                out.insert(name.to_string(), Pushed { image, reference });
            }
            out
        })
        .await
}

/// `chroot` from coreutils (in /usr/sbin, which a test's PATH may lack).
fn chroot() -> PathBuf {
    [
        "/usr/sbin/chroot",
        "/usr/bin/chroot",
        "/sbin/chroot",
        "/bin/chroot",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
    .unwrap_or_else(|| PathBuf::from("chroot"))
}

const SHELLS: [&str; 6] = ["sh", "bash", "dash", "ash", "zsh", "busybox"];

fn input(name: &str) -> ImageInput {
    let bin_dir = Assets::products().unwrap_or_else(|e| panic!("{e}"));
    ImageInput {
        name: name.to_string(),
        binary: bin_dir.binary(name).unwrap_or_else(|e| panic!("{e}")),
        version: "1.2.3-test".to_string(),
        revision: "0123456789abcdef0123456789abcdef01234567".to_string(),
        source: "https://example.invalid/olm-rs".to_string(),
        ca_bundle: Path::new(HOST_CA_BUNDLE)
            .is_file()
            .then(|| PathBuf::from(HOST_CA_BUNDLE)),
        platform: Platform::host(),
        // What `make images` does; it also makes the debug binaries' images small and quick.
        strip_debug: true,
    }
}

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// Runs `/usr/local/bin/<name> <arg>` inside `root` as `user` (coreutils chroot drops to it after
/// entering the root).
fn run_in_root(root: &Path, user: &str, name: &str, arg: &str) -> std::process::Output {
    std::process::Command::new(chroot())
        .arg(format!("--userspec={user}"))
        .arg(root)
        .arg(format!("{}/{name}", image::BINARY_DIR))
        .arg(arg)
        .env_clear()
        .output()
        .unwrap_or_else(|e| panic!("failed to run chroot: {e}"))
}

#[tokio::test]
async fn product_images_are_reproducible_have_no_shell_and_run_from_their_root_as_nonroot() {
    let env = olm_e2e::shared().await;
    let cache = tempfile::tempdir().unwrap();
    let puller = Puller::new(env.registry.puller_config(cache.path())).unwrap();
    let images = product_images().await;
    for name in COMPONENTS {
        let input = input(name);
        let Pushed {
            image: first,
            reference,
        } = &images[name];
        let second = tokio::task::spawn_blocking(move || image::build(&input))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            first.digest(),
            second.digest(),
            "{name}: two builds gave different index digests"
        );
        assert_eq!(first.manifest.digest(), second.manifest.digest());
        let input = self::input(name);
        let index: serde_json::Value = serde_json::from_slice(&first.index).unwrap();
        assert_eq!(index["mediaType"], olm_image::manifest::OCI_INDEX);
        assert_eq!(index["manifests"].as_array().unwrap().len(), 1);
        assert_eq!(
            index["manifests"][0]["platform"]["architecture"],
            Platform::host().architecture
        );
        let config: serde_json::Value = serde_json::from_slice(&first.manifest.config).unwrap();
        assert_eq!(config["config"]["User"], USER);
        assert!(config.get("created").is_none());

        let unpacked = puller
            .pull(
                &unique_name("release"),
                reference,
                ExtractFilter::Everything,
            )
            .await
            .unwrap();
        assert_eq!(unpacked.labels[LABEL_TITLE], name);
        assert_eq!(unpacked.labels[LABEL_VERSION], "1.2.3-test");
        assert_eq!(unpacked.labels[LABEL_REVISION], input.revision);
        assert_eq!(unpacked.labels[LABEL_SOURCE], input.source);

        let root = &unpacked.dir;
        let listed = files(root);
        assert!(
            listed.contains(&format!("usr/local/bin/{name}")),
            "{listed:?}"
        );
        assert!(listed.contains(&"etc/passwd".to_string()), "{listed:?}");
        let shells: Vec<&String> = listed
            .iter()
            .filter(|f| SHELLS.iter().any(|s| f.rsplit('/').next() == Some(*s)))
            .collect();
        assert!(
            shells.is_empty(),
            "{name}: the image holds a shell: {shells:?}"
        );
        let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
        assert!(passwd.contains(":65532:65532:"), "{passwd}");

        if !rustix::process::geteuid().is_root() {
            olm_e2e::skip::skip(&format!(
                "running {name} from its image root: chroot needs root (CI runs tests as root)"
            ));
            continue;
        }
        let version = run_in_root(root, USER, name, "--version");
        assert!(
            version.status.success(),
            "{name} --version in its image root: {version:?}"
        );
        assert_eq!(
            String::from_utf8_lossy(&version.stdout).trim(),
            format!("{name} {}", env!("CARGO_PKG_VERSION"))
        );
        let help = run_in_root(root, USER, name, "--help");
        assert!(help.status.success(), "{name} --help: {help:?}");
        assert!(String::from_utf8_lossy(&help.stdout).contains("Usage:"));
        // A root filesystem without a shell cannot run one.
        let shell = std::process::Command::new(chroot())
            .arg(format!("--userspec={USER}"))
            .arg(root)
            .arg("/bin/sh")
            .args(["-c", "true"])
            .output()
            .unwrap();
        assert!(!shell.status.success(), "a shell ran inside {name}'s image");
    }
}
