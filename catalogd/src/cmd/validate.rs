//! `catalogd validate DIR`: loads and validates a File-Based Catalog directory, as `opm validate`
//! does, and reports every problem with its file, line and object.
//!
//! Input: a directory (or a single catalog file). Output: a summary on stdout, problems on stderr,
//! an [`Exit`] status (0 valid, 1 invalid or unloadable, 2 unreadable path). Reads local files only.

use std::io::Write;
use std::path::{Path, PathBuf};

use olm_api::fbc::{Checks, DeclarativeConfig, validate};
use olm_runtime::exit::Exit;

/// Arguments of `catalogd validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The catalog directory (a single catalog file is accepted too).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Report as warnings, not errors, what `opm validate` rejects but catalogd serves and
    /// operator-controller resolves: an unparsable skipRange, an icon that is not base64.
    #[arg(long)]
    pub lenient: bool,
}

/// Runs `validate` with the default checks (relaxed by `--lenient`).
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let checks = Checks {
        lenient: args.lenient,
        ..Checks::default()
    };
    validate_catalog(&args.dir, &checks, out, err)
}

/// `catalogd validate DIR`: load, validate, report. Write failures on the streams are ignored
/// (there is nowhere left to report them).
pub fn validate_catalog(
    dir: &Path,
    checks: &Checks<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    if let Err(e) = check_readable(dir) {
        let _ = writeln!(err, "error: cannot read catalog {}: {e}", dir.display());
        return Exit::Usage;
    }
    let cfg = match DeclarativeConfig::load_dir(dir) {
        Ok(cfg) => cfg,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            let _ = writeln!(err, "catalog {} could not be loaded", dir.display());
            return Exit::Invalid;
        }
    };
    let report = validate(&cfg, checks);
    for w in &report.warnings {
        let _ = writeln!(err, "warning: {w}");
    }
    for e in &report.errors {
        let _ = writeln!(err, "error: {e}");
    }
    let summary = format!(
        "{} packages, {} channels, {} bundles, {} deprecations, {} other objects",
        cfg.packages.len(),
        cfg.channels.len(),
        cfg.bundles.len(),
        cfg.deprecations.len(),
        cfg.others.len()
    );
    if report.is_valid() {
        let _ = writeln!(
            out,
            "catalog {} is valid: {summary} ({} warnings)",
            dir.display(),
            report.warnings.len()
        );
        Exit::Ok
    } else {
        let _ = writeln!(
            err,
            "catalog {} is invalid: {} errors, {} warnings ({summary})",
            dir.display(),
            report.errors.len(),
            report.warnings.len()
        );
        Exit::Invalid
    }
}

/// The catalog root must exist and be readable (a directory, or a regular file: a FIFO would
/// block the open); problems below it are catalog errors instead.
fn check_readable(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(dir)?;
    if meta.is_dir() {
        std::fs::read_dir(dir).map(drop)
    } else {
        olm_api::regular_file::open_regular(dir)
            .map(drop)
            .map_err(|e| e.into_io_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_validate(dir: &Path) -> (Exit, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = validate_catalog(dir, &Checks::default(), &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn a_valid_catalog_exits_zero_with_a_summary() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("c.yaml"),
            "schema: olm.package\nname: p\ndefaultChannel: s\n---\nschema: olm.channel\nname: s\npackage: p\nentries: [{name: p.v1}]\n---\nschema: olm.bundle\nname: p.v1\npackage: p\nimage: quay.io/p:v1\nproperties: [{type: olm.package, value: {packageName: p, version: 1.0.0}}]\n",
        )
        .unwrap();
        let (code, out, err) = run_validate(tmp.path());
        assert_eq!(code, Exit::Ok, "{err}");
        assert!(
            out.contains("is valid: 1 packages, 1 channels, 1 bundles"),
            "{out}"
        );
        assert_eq!(err, "");
    }

    #[test]
    fn an_invalid_catalog_exits_one_naming_file_line_and_object() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("c.yaml"),
            "schema: olm.package\nname: p\ndefaultChannel: s\n---\nschema: olm.channel\nname: s\npackage: p\nentries: [{name: a}, {name: b}]\n",
        )
        .unwrap();
        let (code, out, err) = run_validate(tmp.path());
        assert_eq!(code, Exit::Invalid);
        assert_eq!(out, "");
        let file = tmp.path().join("c.yaml");
        assert!(
            err.contains(&format!(
                "error: {}:5:1: olm.channel \"s\" (package \"p\"): multiple channel heads found in graph: a, b",
                file.display()
            )),
            "{err}"
        );
        assert!(err.contains("is invalid: 2 errors"), "{err}");
    }

    #[test]
    fn an_unparsable_file_exits_one_with_its_position() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("c.json"),
            "{\"schema\":\"olm.package\",\n\"name\": }\n",
        )
        .unwrap();
        let (code, _, err) = run_validate(tmp.path());
        assert_eq!(code, Exit::Invalid);
        assert!(err.contains("c.json:2:"), "{err}");
        assert!(err.contains("could not be loaded"), "{err}");
    }

    #[test]
    fn a_missing_catalog_path_is_a_usage_error() {
        let tmp = tempfile::tempdir().unwrap();
        let (code, _, err) = run_validate(&tmp.path().join("nope"));
        assert_eq!(code, Exit::Usage);
        assert!(err.starts_with("error: cannot read catalog"), "{err}");
    }
}
