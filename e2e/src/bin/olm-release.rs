//! `olm-release`: the product images (`make images`) and the install manifest
//! (`make release-manifest`). `images` reads the built binaries and pushes to the registry named by
//! `--registry`; `manifest` reads `config/` and writes one YAML file. See olm_e2e::release.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use olm_e2e::release::image::{self, ImageInput};
use olm_e2e::release::manifest::{self, COMPONENTS, Variant};
use olm_image::DockerConfig;
use olm_image::push::{Pusher, PusherConfig};

#[derive(Parser)]
#[command(about = "Build and push OLM's container images; generate the install manifest")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build an image for each binary in --bin-dir and push it to --registry.
    Images {
        /// Directory holding the built `catalogd` and `operator-controller`.
        #[arg(long)]
        bin_dir: PathBuf,
        /// `host[:port]/path`: images go to `<registry>/catalogd` and
        /// `<registry>/operator-controller`.
        #[arg(long)]
        registry: String,
        /// Tag of the pushed index (default: the version).
        #[arg(long)]
        tag: Option<String>,
        /// Speak plain HTTP to the registry (a local test registry).
        #[arg(long)]
        insecure: bool,
        /// Registry credentials (a Docker config.json); default $REGISTRY_AUTH_FILE, else
        /// ~/.docker/config.json when it exists.
        #[arg(long)]
        authfile: Option<PathBuf>,
        /// `org.opencontainers.image.version`.
        #[arg(long, default_value = env!("CARGO_PKG_VERSION"))]
        version: String,
        /// `org.opencontainers.image.revision` (the git commit).
        #[arg(long)]
        revision: String,
        /// `org.opencontainers.image.source` (the repository URL).
        #[arg(long)]
        source: String,
        /// CA bundle copied into the images for HTTPS registries.
        #[arg(long, default_value = image::HOST_CA_BUNDLE)]
        ca_bundle: PathBuf,
        /// Keep the binaries' DWARF debug information (by default it is stripped with objcopy).
        #[arg(long)]
        keep_debug: bool,
        /// Write `{"catalogd": "<ref>@sha256:…", …}` here (input of `manifest --images`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write the install manifest of --variant with the images of --images pinned by digest.
    Manifest {
        /// The JSON `images --out` wrote.
        #[arg(long)]
        images: PathBuf,
        #[arg(long, value_enum, default_value_t = Variant::Standalone)]
        variant: Variant,
        /// The repository root (holding config/).
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Images {
            bin_dir,
            registry,
            tag,
            insecure,
            authfile,
            version,
            revision,
            source,
            ca_bundle,
            keep_debug,
            out,
        } => {
            images(ImagesArgs {
                bin_dir,
                registry,
                tag: tag.unwrap_or_else(|| version.clone()),
                insecure,
                authfile,
                version,
                revision,
                source,
                ca_bundle,
                keep_debug,
                out,
            })
            .await
        }
        Command::Manifest {
            images,
            variant,
            root,
            out,
        } => write_manifest(&images, variant, &root, &out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("olm-release: {e}");
            ExitCode::FAILURE
        }
    }
}

struct ImagesArgs {
    bin_dir: PathBuf,
    registry: String,
    tag: String,
    insecure: bool,
    authfile: Option<PathBuf>,
    version: String,
    revision: String,
    source: String,
    ca_bundle: PathBuf,
    keep_debug: bool,
    out: Option<PathBuf>,
}

fn auth(authfile: Option<PathBuf>) -> Result<Option<DockerConfig>, String> {
    let path = authfile
        .or_else(|| std::env::var_os("REGISTRY_AUTH_FILE").map(PathBuf::from))
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".docker/config.json"))
                .filter(|p| p.is_file())
        });
    let Some(path) = path else { return Ok(None) };
    let bytes = std::fs::read(&path).map_err(|e| format!("failed to read {path:?}: {e}"))?;
    DockerConfig::from_json(&bytes)
        .map(Some)
        .map_err(|e| format!("{path:?}: {e}"))
}

async fn images(args: ImagesArgs) -> Result<(), String> {
    let registry = args.registry.trim_end_matches('/');
    let host = registry.split('/').next().unwrap_or(registry).to_string();
    let pusher = Pusher::new(PusherConfig {
        insecure_registries: if args.insecure { vec![host] } else { vec![] },
        auth: auth(args.authfile)?,
        extra_ca_pem: None,
    })
    .map_err(|e| e.to_string())?;
    let mut pushed = BTreeMap::new();
    for name in COMPONENTS {
        let input = ImageInput {
            name: name.to_string(),
            binary: args.bin_dir.join(name),
            version: args.version.clone(),
            revision: args.revision.clone(),
            source: args.source.clone(),
            ca_bundle: Some(args.ca_bundle.clone()),
            platform: olm_image::Platform::host(),
            strip_debug: !args.keep_debug,
        };
        let built = image::build(&input).map_err(|e| e.to_string())?;
        let reference = image::push(&pusher, &format!("{registry}/{name}"), &args.tag, &built)
            .await
            .map_err(|e| e.to_string())?;
        println!("{name}={reference}");
        pushed.insert(name.to_string(), reference);
    }
    if let Some(out) = args.out {
        let json = serde_json::to_string_pretty(&pushed).map_err(|e| e.to_string())?;
        std::fs::write(&out, json + "\n").map_err(|e| format!("failed to write {out:?}: {e}"))?;
    }
    Ok(())
}

fn write_manifest(
    images: &PathBuf,
    variant: Variant,
    root: &std::path::Path,
    out: &PathBuf,
) -> Result<(), String> {
    let text = std::fs::read_to_string(images)
        .map_err(|e| format!("failed to read {images:?}: {e} (run `make images` first)"))?;
    let images: BTreeMap<String, String> =
        serde_json::from_str(&text).map_err(|e| format!("{images:?}: {e}"))?;
    let yaml = manifest::release_manifest(root, variant, &images).map_err(|e| e.to_string())?;
    std::fs::write(out, yaml).map_err(|e| format!("failed to write {out:?}: {e}"))?;
    println!("olm-release: wrote {}", out.display());
    Ok(())
}
