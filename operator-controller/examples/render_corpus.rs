//! Renders many bundle directories and prints one JSON line per bundle: how a corpus of real
//! bundles (for example the `operators/` tree of community-operators-prod) fares.
//!
//! Input: bundle directories, one per line on stdin. Output on stdout, per bundle:
//! `{"dir", "install", "watch", "cert", "error"}` or `{..., "objects": [...]}`. Reads local files
//! only.
//!
//! Each bundle is rendered the way the `render-real` conformance set picks its cases: install
//! namespace `<package, 40 chars>-system`; no watch namespace when AllNamespaces is supported,
//! else the install namespace (OwnNamespace), else `watched-ns` (SingleNamespace); the
//! cert-manager provider when the CSV has webhooks.
//!
//! ```text
//! find DIR/operators -mindepth 2 -maxdepth 2 -type d | sort \
//!   | cargo run --release -p operator-controller --example render_corpus > corpus.jsonl
//! ```

use std::io::{BufRead, Write};
use std::path::Path;

use olm_operator_core::bundle;
use olm_operator_core::bundle::csv::{ALL_NAMESPACES, OWN_NAMESPACE, SINGLE_NAMESPACE};
use olm_operator_core::render::{self, CertProvider, RenderOptions};
use operator_controller::bundle_source::{ReadLimits, read_bundle_dir};
use serde_json::{Value, json};

fn render_one(dir: &str) -> Value {
    let path = Path::new(dir);
    let package = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut package: String = package.chars().take(40).collect();
    while package.ends_with('-') || package.ends_with('.') {
        package.pop();
    }
    let install = format!("{package}-system");
    let mut out = json!({"dir": dir, "install": install, "watch": "", "cert": ""});
    let fs = match read_bundle_dir(path, &ReadLimits::default()) {
        Ok(fs) => fs,
        Err(e) => {
            out["error"] = json!(e.to_string());
            return out;
        }
    };
    let parsed = match bundle::parse(&fs) {
        Ok(b) => b,
        Err(e) => {
            out["error"] = json!(e.to_string());
            return out;
        }
    };
    let csv = &parsed.csv;
    let watch = if csv.supports(ALL_NAMESPACES) {
        None
    } else if csv.supports(OWN_NAMESPACE) {
        Some(install.clone())
    } else if csv.supports(SINGLE_NAMESPACE) {
        Some("watched-ns".to_owned())
    } else {
        None
    };
    let mut opts = RenderOptions::new(install.clone());
    if let Some(w) = &watch {
        out["watch"] = json!(w);
        opts.config = Some(json!({"watchNamespace": w}));
    }
    if !csv.webhooks.is_empty() {
        out["cert"] = json!("cert-manager");
        opts.cert_provider = CertProvider::CertManager;
    }
    match render::render(&parsed, &opts) {
        Ok(rendered) => out["objects"] = Value::Array(rendered.objects),
        Err(e) => out["error"] = json!(e.to_string()),
    }
    out
}

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let Ok(dir) = line else { break };
        let result = render_one(&dir);
        if serde_json::to_writer(&mut out, &result).is_err() || writeln!(out).is_err() {
            break;
        }
    }
    let _ = out.flush();
}
