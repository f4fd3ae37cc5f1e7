//! `operator-controller crd-upgrade-check OLD NEW [--data DIR]`: the CRD upgrade-safety check
//! for operator authors, without a cluster.
//!
//! Input: two CRD manifests (YAML or JSON) and optionally a directory of custom resources.
//! Output: the verdict and every violation on stdout; exit status 0 (safe), 1 (unsafe), 2
//! (usage: bad flags, unreadable or invalid files). Reads local files only, each through
//! `olm_api::regular_file` with a size bound.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | safe: nothing blocks (upstream's false positives that are proven safe are listed as `allow`), or `--data` shows no stored object is affected |
//! | 1 | unsafe: at least one `refuse` line (and, with `--data`, objects that break the new schema) |
//! | 2 | usage error; the message names the file and the field |
//!
//! `--data DIR` reads every `*.yaml`, `*.yml` and `*.json` file directly in DIR (sorted); each may
//! hold several documents. Documents of the CRD's group and kind are the stored objects the
//! in-cluster data-aware step would list; other documents are skipped and named.

use std::io::Write;
use std::path::{Path, PathBuf};

use olm_operator_core::crd_upgrade::{
    CheckOptions, Crd, UpgradeVerdict, check_upgrade, data_aware_decision, yaml,
};
use olm_runtime::exit::Exit;
use serde_json::Value;

/// Largest manifest or custom-resource file read (CRDs of real operators reach a few MiB).
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Most files read from `--data`.
pub const MAX_DATA_FILES: usize = 100_000;

/// Arguments of `operator-controller crd-upgrade-check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The installed CRD (YAML or JSON); its `status.storedVersions` is used when present.
    #[arg(value_name = "OLD")]
    pub old: PathBuf,
    /// The CRD the upgrade would apply.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// A directory of custom-resource YAML/JSON files to validate against the new schema, as the
    /// controller's data-aware mode does with the stored objects.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Give upstream's verdict exactly (refuse its false positives too).
    #[arg(long)]
    pub upstream: bool,
}

/// Runs the check and prints the report.
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    match run_inner(args, out) {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(err, "error: {message}");
            Exit::Usage
        }
    }
}

fn run_inner(args: &Args, out: &mut dyn Write) -> Result<Exit, String> {
    let old = read_crd(&args.old)?;
    let new = read_crd(&args.new)?;
    let objects = match &args.data {
        Some(dir) => Some(read_objects(dir, &new, out)?),
        None => None,
    };
    let opts = CheckOptions {
        allow_safe_changes: !args.upstream,
        ..Default::default()
    };
    let verdict = check_upgrade(&old, &new, &opts);
    print_verdict(&verdict, out);
    let mut safe = verdict.is_safe();
    if let Some(objects) = objects
        && !safe
    {
        let outcome = data_aware_decision(&old, &new, &verdict, &objects);
        for v in &outcome.violations {
            let _ = writeln!(out, "object  {v}");
        }
        if let Some(w) = outcome.warning(&verdict) {
            let _ = writeln!(out, "data-aware: {w}");
        }
        if let Some(r) = &outcome.refusal {
            let _ = writeln!(out, "data-aware: refused: {r}");
        }
        safe = outcome.allowed;
    }
    let _ = writeln!(out, "verdict: {}", if safe { "safe" } else { "unsafe" });
    Ok(if safe { Exit::Ok } else { Exit::Invalid })
}

fn print_verdict(verdict: &UpgradeVerdict, out: &mut dyn Write) {
    let blocking = verdict.blocking().count();
    let _ = writeln!(
        out,
        "CRD {}: {} blocking, {} allowed; upstream's check {}",
        verdict.crd,
        blocking,
        verdict.violations.len() - blocking,
        if verdict.upstream_refuses() {
            "refuses"
        } else {
            "passes"
        }
    );
    for v in &verdict.violations {
        match (&v.allowed, verdict.allow_safe_changes) {
            (Some(why), true) => {
                let _ = writeln!(out, "allow   {}  [{}]", v.entry(), why.reason());
            }
            _ => {
                let _ = writeln!(out, "refuse  {}", v.entry());
            }
        }
    }
}

fn documents(path: &Path) -> Result<Vec<Value>, String> {
    let text = olm_api::regular_file::read_regular_to_string(path, MAX_FILE_BYTES)
        .map_err(|e| e.to_string())?;
    yaml::parse_documents(&text).map_err(|e| format!("{}: invalid YAML: {e}", path.display()))
}

fn read_crd(path: &Path) -> Result<Crd, String> {
    let docs = documents(path)?;
    let crd = docs
        .iter()
        .find(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .ok_or_else(|| format!("{}: no CustomResourceDefinition document", path.display()))?;
    Crd::from_value(crd).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_objects(dir: &Path, crd: &Crd, out: &mut dyn Write) -> Result<Vec<Value>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("--data {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for e in entries {
        let path = e
            .map_err(|e| format!("--data {}: {e}", dir.display()))?
            .path();
        let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
        if matches!(ext, "yaml" | "yml" | "json") {
            files.push(path);
        }
        if files.len() > MAX_DATA_FILES {
            return Err(format!(
                "--data {}: more than {MAX_DATA_FILES} files",
                dir.display()
            ));
        }
    }
    files.sort();
    let mut objects = Vec::new();
    for path in files {
        for doc in documents(&path)? {
            let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
            if group == crd.group && kind == crd.kind {
                objects.push(doc);
            } else {
                let _ = writeln!(
                    out,
                    "skipped {}: {kind} {api_version} is not a {} of group {}",
                    path.display(),
                    crd.kind,
                    crd.group
                );
            }
        }
    }
    Ok(objects)
}
