//! Product images built without Docker and without a base image. Input: a built binary (static or
//! dynamically linked against glibc), its version/revision/source, the host's CA bundle. Output: a
//! [`ProductImage`] (layer, config, manifest, index, all with known digests) and, with
//! [`push`], the same in a registry. Reads the binary and the shared libraries `ldd` names; runs
//! `ldd`; [`push`] talks to the registry.
//!
//! The image root holds only:
//!
//! | path                                   | why                                                   |
//! |----------------------------------------|-------------------------------------------------------|
//! | `/usr/local/bin/<name>`                | the binary (DWARF stripped unless kept), the entrypoint |
//! | `/<name>` → `usr/local/bin/<name>`     | a symlink: where upstream's images hold the binary, so upstream's manifests' `command` (`/operator-controller`, `./catalogd`) runs ours |
//! | the libraries `ldd` lists, same paths  | a glibc binary's loader, libc, libm, libgcc_s; none for a static binary |
//! | `/etc/passwd`, `/etc/group`            | the non-root user 65532 (`nonroot`) the image runs as |
//! | `/etc/ssl/certs/ca-certificates.crt`   | catalogs and bundles may live on public HTTPS registries; rustls reads the system bundle |
//!
//! No shell, no package manager. Reproducible: the layer is built with fixed mtimes, uids and
//! order ([`olm_image::push::Layer::from_dir`]) and the config has no timestamps, so the same
//! binary, libraries, CA bundle and labels give the same digests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use olm_image::Platform;
use olm_image::push::{
    BuiltImage, ImageSpec, Layer, PushError, PushedImage, Pusher, RuntimeConfig, index_body,
};
use olm_image::reference::sha256_digest;

/// The numeric user and group the images run as (distroless' `nonroot`), numeric so
/// `runAsNonRoot` can be verified without reading `/etc/passwd`.
pub const USER: &str = "65532:65532";
/// Where the binary goes inside the image.
pub const BINARY_DIR: &str = "/usr/local/bin";
/// Where the CA bundle goes inside the image (also named by `SSL_CERT_FILE`).
pub const CA_BUNDLE_PATH: &str = "/etc/ssl/certs/ca-certificates.crt";
/// The host CA bundle copied into images unless told otherwise (Debian's location).
pub const HOST_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// OCI annotation keys used as config labels.
pub const LABEL_TITLE: &str = "org.opencontainers.image.title";
pub const LABEL_SOURCE: &str = "org.opencontainers.image.source";
pub const LABEL_REVISION: &str = "org.opencontainers.image.revision";
pub const LABEL_VERSION: &str = "org.opencontainers.image.version";
pub const LABEL_LICENSES: &str = "org.opencontainers.image.licenses";

const PASSWD: &str = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n";
const GROUP: &str = "root:x:0:\nnonroot:x:65532:\n";

/// What a product image is made of.
#[derive(Debug, Clone)]
pub struct ImageInput {
    /// The binary's name (`catalogd`, `operator-controller`): file name in the image and title.
    pub name: String,
    /// The built binary.
    pub binary: PathBuf,
    /// `org.opencontainers.image.version`.
    pub version: String,
    /// `org.opencontainers.image.revision` (the git commit).
    pub revision: String,
    /// `org.opencontainers.image.source` (the repository URL).
    pub source: String,
    /// The CA bundle to include, `None` for none.
    pub ca_bundle: Option<PathBuf>,
    /// The platform the binary is built for.
    pub platform: Platform,
    /// Remove DWARF debug information from the image's copy of the binary (`objcopy
    /// --strip-debug`; symbols stay, so backtraces keep function names).
    pub strip_debug: bool,
}

/// Building a product image failed.
#[derive(Debug, thiserror::Error)]
pub enum ImageBuildError {
    #[error("failed to list the shared libraries of {binary:?} with ldd: {reason}")]
    Ldd { binary: PathBuf, reason: String },
    #[error("{binary:?} needs {library}, which ldd did not find on this machine")]
    MissingLibrary { binary: PathBuf, library: String },
    #[error("failed to stage {path:?} into the image root: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("failed to strip debug information from {path:?} with objcopy: {reason}")]
    Strip { path: PathBuf, reason: String },
    #[error("failed to build the image of {name}: {reason}")]
    Build { name: String, reason: String },
    #[error(transparent)]
    Push(#[from] PushError),
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> ImageBuildError + '_ {
    move |source| ImageBuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The shared objects `ldd` printed, in its order: absolute paths of the loader and libraries
/// (the vDSO has no file and is skipped). A statically linked binary needs none. A library that
/// is `not found` is an error naming it.
pub fn parse_ldd(binary: &Path, output: &str) -> Result<Vec<PathBuf>, ImageBuildError> {
    let mut out = Vec::new();
    for line in output.lines().map(str::trim) {
        if line.is_empty() || line.contains("statically linked") {
            continue;
        }
        let target = match line.split_once("=>") {
            Some((name, rest)) => {
                let rest = rest.trim();
                if rest.starts_with("not found") {
                    return Err(ImageBuildError::MissingLibrary {
                        binary: binary.to_path_buf(),
                        library: name.trim().to_string(),
                    });
                }
                rest
            }
            None => line,
        };
        // `path (0x…)`: the address is irrelevant.
        let path = target.split(" (").next().unwrap_or(target).trim();
        if path.starts_with('/') {
            out.push(PathBuf::from(path));
        }
    }
    Ok(out)
}

/// Runs `ldd` on `binary`. `not a dynamic executable` (a static binary) means no libraries.
pub fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, ImageBuildError> {
    let output = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| ImageBuildError::Ldd {
            binary: binary.to_path_buf(),
            reason: e.to_string(),
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        if stdout.contains("not a dynamic executable")
            || stderr.contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        return Err(ImageBuildError::Ldd {
            binary: binary.to_path_buf(),
            reason: format!("{}: {}", output.status, stderr.trim()),
        });
    }
    parse_ldd(binary, &stdout)
}

/// Copies `from` to `root` + `inside` (an absolute path in the image), creating parents. Symlinks
/// are followed: the image holds the file under the name the loader asks for.
fn stage_file(root: &Path, inside: &str, from: &Path) -> Result<(), ImageBuildError> {
    let to = root.join(inside.trim_start_matches('/'));
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io_at(parent))?;
    }
    std::fs::copy(from, &to).map_err(io_at(from))?;
    Ok(())
}

fn stage_text(root: &Path, inside: &str, text: &str) -> Result<(), ImageBuildError> {
    let to = root.join(inside.trim_start_matches('/'));
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io_at(parent))?;
    }
    std::fs::write(&to, text).map_err(io_at(&to))
}

fn strip_debug(path: &Path) -> Result<(), ImageBuildError> {
    let failed = |reason: String| ImageBuildError::Strip {
        path: path.to_path_buf(),
        reason,
    };
    let output = std::process::Command::new("objcopy")
        .arg("--strip-debug")
        .arg(path)
        .output()
        .map_err(|e| failed(e.to_string()))?;
    if !output.status.success() {
        return Err(failed(format!(
            "{}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

/// Writes the image root for `input` into the empty directory `root`.
pub fn stage_root(input: &ImageInput, root: &Path) -> Result<(), ImageBuildError> {
    let binary = format!("{BINARY_DIR}/{}", input.name);
    stage_file(root, &binary, &input.binary)?;
    if input.strip_debug {
        strip_debug(&root.join(binary.trim_start_matches('/')))?;
    }
    for library in shared_libraries(&input.binary)? {
        let inside = library.to_string_lossy().into_owned();
        stage_file(root, &inside, &library)?;
    }
    // Upstream's images hold the binary at `/<name>` and their manifests run `/operator-controller`
    // and `./catalogd` (working directory `/`): the same paths work in ours.
    let alias = root.join(&input.name);
    std::os::unix::fs::symlink(binary.trim_start_matches('/'), &alias).map_err(io_at(&alias))?;
    stage_text(root, "/etc/passwd", PASSWD)?;
    stage_text(root, "/etc/group", GROUP)?;
    if let Some(bundle) = &input.ca_bundle {
        stage_file(root, CA_BUNDLE_PATH, bundle)?;
    }
    Ok(())
}

/// The config labels of a product image.
pub fn labels(input: &ImageInput) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_TITLE.to_string(), input.name.clone()),
        (LABEL_SOURCE.to_string(), input.source.clone()),
        (LABEL_REVISION.to_string(), input.revision.clone()),
        (LABEL_VERSION.to_string(), input.version.clone()),
        (LABEL_LICENSES.to_string(), "Apache-2.0".to_string()),
    ])
}

/// How the image runs: as [`USER`], the binary as entrypoint.
pub fn runtime(input: &ImageInput) -> RuntimeConfig {
    RuntimeConfig {
        user: Some(USER.to_string()),
        env: vec![
            format!("PATH={BINARY_DIR}"),
            format!("SSL_CERT_FILE={CA_BUNDLE_PATH}"),
        ],
        entrypoint: vec![format!("{BINARY_DIR}/{}", input.name)],
        cmd: Vec::new(),
        working_dir: Some("/".to_string()),
    }
}

/// A product image built in memory: one platform manifest and the index over it.
#[derive(Debug, Clone)]
pub struct ProductImage {
    pub name: String,
    pub platform: Platform,
    pub manifest: BuiltImage,
    /// The index body (one entry: `manifest` for `platform`).
    pub index: Vec<u8>,
}

impl ProductImage {
    /// The index digest: what the release manifest pins.
    pub fn digest(&self) -> String {
        sha256_digest(&self.index)
    }

    fn manifest_entry(&self) -> PushedImage {
        PushedImage {
            digest: self.manifest.digest(),
            digest_ref: String::new(),
            size: self.manifest.manifest.len() as i64,
            media_type: olm_image::manifest::OCI_MANIFEST.to_string(),
        }
    }
}

/// Builds the image of `input` (no network).
pub fn build(input: &ImageInput) -> Result<ProductImage, ImageBuildError> {
    let staging = tempfile::tempdir().map_err(io_at(Path::new("temporary directory")))?;
    stage_root(input, staging.path())?;
    // Fast gzip: the binary dominates the layer and compresses nearly as well, several times
    // faster (the digest depends on the level, so it is fixed here).
    let layer = Layer::from_dir_compressed(staging.path(), "", flate2::Compression::fast())?;
    let spec = ImageSpec {
        layers: vec![layer],
        labels: labels(input),
        platform: input.platform.clone(),
    };
    let failed = |e: serde_json::Error| ImageBuildError::Build {
        name: input.name.clone(),
        reason: e.to_string(),
    };
    let manifest = BuiltImage::new(&spec, &runtime(input)).map_err(failed)?;
    let mut image = ProductImage {
        name: input.name.clone(),
        platform: input.platform.clone(),
        manifest,
        index: Vec::new(),
    };
    image.index =
        index_body(&[(image.platform.clone(), image.manifest_entry())]).map_err(failed)?;
    Ok(image)
}

/// Pushes `image` to `repository` (`host/path`, no tag): the platform manifest by digest, then
/// the index under `tag`. Returns `repository@<index digest>`.
pub async fn push(
    pusher: &Pusher,
    repository: &str,
    tag: &str,
    image: &ProductImage,
) -> Result<String, ImageBuildError> {
    pusher.push_built(repository, &image.manifest).await?;
    let pushed = pusher
        .push_manifest_bytes(
            &format!("{repository}:{tag}"),
            olm_image::manifest::OCI_INDEX,
            image.index.clone(),
        )
        .await?;
    debug_assert_eq!(pushed.digest, image.digest());
    Ok(format!("{repository}@{}", pushed.digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_the_loader_and_libraries_and_skips_the_vdso() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        let libs = parse_ldd(Path::new("bin"), out).unwrap();
        assert_eq!(
            libs,
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
        assert!(
            parse_ldd(Path::new("bin"), "\tstatically linked\n")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_library_ldd_cannot_find_is_an_error_naming_it() {
        let err = parse_ldd(Path::new("/x/catalogd"), "\tlibfoo.so.1 => not found\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"/x/catalogd\" needs libfoo.so.1, which ldd did not find on this machine"
        );
    }
}
