//! Feature gates as upstream's binaries take them: `--feature-gates=Name=bool,...` (repeatable),
//! parsed and checked the way Kubernetes' `component-base/featuregate` does it, with its error
//! messages, plus each binary's table of gates (upstream's default and ours) and the refusal of
//! gates we do not implement.
//!
//! Input: the `--feature-gates` values in command-line order, the binary's [`GateSpec`] table and
//! which defaults apply ([`FeatureDefaults`]). Output: [`FeatureGates`] or a [`GateError`] whose
//! text is upstream's (`invalid argument "X=true" for "--feature-gates" flag: unrecognized feature
//! gate: X`). No IO.
//!
//! | gate state source | value |
//! |---|---|
//! | named on the command line | that value (the last occurrence wins, as in upstream) |
//! | `AllAlpha=true` / `AllBeta=true` | every alpha / beta gate not named explicitly |
//! | otherwise | the default of the chosen [`FeatureDefaults`] |

use std::collections::BTreeMap;
use std::fmt;

/// Upstream's maturity of a gate (`featuregate.PreRelease`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreRelease {
    Alpha,
    Beta,
    Ga,
}

impl fmt::Display for PreRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PreRelease::Alpha => "ALPHA",
            PreRelease::Beta => "BETA",
            PreRelease::Ga => "GA",
        })
    }
}

/// What we do with a gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Both values are implemented with upstream's meaning.
    Implemented,
    /// Only `false` is implemented; `true` refuses to start with this reason.
    RefusedWhenEnabled(&'static str),
}

/// One gate of a binary.
#[derive(Clone, Copy, Debug)]
pub struct GateSpec {
    pub name: &'static str,
    pub pre_release: PreRelease,
    /// Upstream v1.11's default.
    pub upstream_default: bool,
    /// Our default (`None`: decided at start, see [`GateSpec::our_default_note`]).
    pub our_default: Option<bool>,
    /// Why our default differs, or how it is decided when `our_default` is `None`.
    pub our_default_note: &'static str,
    pub support: Support,
}

/// Which defaults apply to gates the command line does not name (`--feature-defaults`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FeatureDefaults {
    /// Our defaults (the table in README).
    #[default]
    Ours,
    /// Upstream v1.11's defaults: with them and upstream's flags the feature set is upstream's.
    Upstream,
}

/// Component-base's implicit gates, accepted by every binary.
pub const ALL_ALPHA: &str = "AllAlpha";
pub const ALL_BETA: &str = "AllBeta";

/// A `--feature-gates` value that cannot be used; `Display` is upstream's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateError {
    /// The offending flag value as given.
    pub value: String,
    /// component-base's message.
    pub reason: String,
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid argument {:?} for \"--feature-gates\" flag: {}",
            self.value, self.reason
        )
    }
}

impl std::error::Error for GateError {}

/// The resolved gates of a binary.
#[derive(Clone, Debug)]
pub struct FeatureGates {
    specs: &'static [GateSpec],
    explicit: BTreeMap<String, bool>,
    defaults: FeatureDefaults,
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Why a controller does not start from its flags: a usage error (exit 2) or a configuration
/// refused (exit 1), with the text to print.
#[derive(Debug, PartialEq, Eq)]
pub enum ArgsError {
    Usage(String),
    Refused(String),
}

impl ArgsError {
    /// Prints `Error: <text>` (as upstream's cobra commands do; a refusal is logged too) and
    /// gives the exit status.
    pub fn report(self, err: &mut dyn std::io::Write) -> crate::exit::Exit {
        match self {
            ArgsError::Usage(message) => {
                let _ = writeln!(err, "Error: {message}");
                crate::exit::Exit::Usage
            }
            ArgsError::Refused(message) => {
                tracing::error!("{message}");
                let _ = writeln!(err, "Error: {message}");
                crate::exit::Exit::Invalid
            }
        }
    }
}

impl FeatureGates {
    /// [`FeatureGates::parse`], refusing a gate that is on but not implemented.
    pub fn parse_checked(
        specs: &'static [GateSpec],
        values: &[String],
        defaults: FeatureDefaults,
    ) -> Result<FeatureGates, ArgsError> {
        let gates = FeatureGates::parse(specs, values, defaults)
            .map_err(|e| ArgsError::Usage(e.to_string()))?;
        match gates.unsupported() {
            Some(why) => Err(ArgsError::Refused(why)),
            None => Ok(gates),
        }
    }

    /// Parses every `--feature-gates` value in order, as component-base's `Set` does per value.
    pub fn parse(
        specs: &'static [GateSpec],
        values: &[String],
        defaults: FeatureDefaults,
    ) -> Result<FeatureGates, GateError> {
        let mut explicit = BTreeMap::new();
        for value in values {
            let fail = |reason: String| GateError {
                value: value.clone(),
                reason,
            };
            let mut pairs = BTreeMap::new();
            for item in value.split(',') {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                let Some((key, raw)) = item.split_once('=') else {
                    return Err(fail(format!("missing bool value for {}", item.trim())));
                };
                let (key, raw) = (key.trim(), raw.trim());
                let Some(enabled) = parse_go_bool(raw) else {
                    return Err(fail(format!(
                        "invalid value of {key}={raw}, err: strconv.ParseBool: parsing {raw:?}: invalid syntax"
                    )));
                };
                pairs.insert(key.to_owned(), enabled);
            }
            for key in pairs.keys() {
                let known = key == ALL_ALPHA
                    || key == ALL_BETA
                    || specs.iter().any(|s| s.name == key.as_str());
                if !known {
                    return Err(fail(format!("unrecognized feature gate: {key}")));
                }
            }
            explicit.extend(pairs);
        }
        Ok(FeatureGates {
            specs,
            explicit,
            defaults,
        })
    }

    /// The gate table.
    pub fn specs(&self) -> &'static [GateSpec] {
        self.specs
    }

    /// Whether `name` was named on the command line (directly, not through `AllAlpha`).
    pub fn is_explicit(&self, name: &str) -> bool {
        self.explicit.contains_key(name)
    }

    /// The gate's value; `None` when it is not named, not implied by `AllAlpha`/`AllBeta`, and
    /// our default is decided at start (the caller decides).
    pub fn value(&self, name: &str) -> Option<bool> {
        if let Some(v) = self.explicit.get(name) {
            return Some(*v);
        }
        let spec = self.specs.iter().find(|s| s.name == name)?;
        let implied = match spec.pre_release {
            PreRelease::Alpha => self.explicit.get(ALL_ALPHA).copied(),
            PreRelease::Beta => self.explicit.get(ALL_BETA).copied(),
            PreRelease::Ga => None,
        };
        if implied == Some(true) {
            return Some(true);
        }
        match self.defaults {
            FeatureDefaults::Upstream => Some(spec.upstream_default),
            FeatureDefaults::Ours => spec.our_default,
        }
    }

    /// The gate's value, with `fallback` for a default decided at start.
    pub fn enabled_or(&self, name: &str, fallback: bool) -> bool {
        self.value(name).unwrap_or(fallback)
    }

    /// The first gate that is enabled but not implemented: its name and why, for a refusal to
    /// start (`feature gate X=true is not supported by this build: ...`).
    pub fn unsupported(&self) -> Option<String> {
        self.specs.iter().find_map(|spec| match spec.support {
            Support::RefusedWhenEnabled(why) if self.value(spec.name) == Some(true) => Some(
                format!("feature gate {}=true is not supported: {why}", spec.name),
            ),
            _ => None,
        })
    }

    /// `name=value` for every gate, in table order (`auto` for a value decided at start), for
    /// the start-up log line as upstream logs the gate states.
    pub fn states(&self) -> String {
        self.specs
            .iter()
            .map(|s| match self.value(s.name) {
                Some(v) => format!("{}={v}", s.name),
                None => format!("{}=auto", s.name),
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[GateSpec] = &[
        GateSpec {
            name: "Alpha1",
            pre_release: PreRelease::Alpha,
            upstream_default: false,
            our_default: Some(true),
            our_default_note: "",
            support: Support::Implemented,
        },
        GateSpec {
            name: "Missing",
            pre_release: PreRelease::Alpha,
            upstream_default: false,
            our_default: Some(false),
            our_default_note: "",
            support: Support::RefusedWhenEnabled("not built"),
        },
        GateSpec {
            name: "Ga1",
            pre_release: PreRelease::Ga,
            upstream_default: true,
            our_default: None,
            our_default_note: "detected",
            support: Support::Implemented,
        },
    ];

    fn parse(values: &[&str], d: FeatureDefaults) -> Result<FeatureGates, GateError> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        FeatureGates::parse(SPECS, &values, d)
    }

    #[test]
    fn values_are_read_in_order_with_go_booleans_and_spaces() {
        let g = parse(&["Alpha1=false, Ga1=T", "Alpha1=1"], FeatureDefaults::Ours).unwrap();
        assert_eq!(g.value("Alpha1"), Some(true));
        assert_eq!(g.value("Ga1"), Some(true));
        assert!(g.is_explicit("Ga1"));
        assert_eq!(g.value("Missing"), Some(false));
    }

    #[test]
    fn defaults_are_ours_or_upstreams() {
        let ours = parse(&[], FeatureDefaults::Ours).unwrap();
        assert_eq!(ours.value("Alpha1"), Some(true));
        assert_eq!(ours.value("Ga1"), None);
        assert!(!ours.enabled_or("Ga1", false));
        assert!(ours.enabled_or("Ga1", true));
        let upstream = parse(&[], FeatureDefaults::Upstream).unwrap();
        assert_eq!(upstream.value("Alpha1"), Some(false));
        assert_eq!(upstream.value("Ga1"), Some(true));
        assert_eq!(upstream.states(), "Alpha1=false,Missing=false,Ga1=true");
    }

    #[test]
    fn errors_are_component_bases_words() {
        let e = parse(&["Nope=true"], FeatureDefaults::Ours).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"invalid argument "Nope=true" for "--feature-gates" flag: unrecognized feature gate: Nope"#
        );
        let e = parse(&["Alpha1"], FeatureDefaults::Ours).unwrap_err();
        assert_eq!(e.reason, "missing bool value for Alpha1");
        let e = parse(&["Alpha1=yes"], FeatureDefaults::Ours).unwrap_err();
        assert_eq!(
            e.reason,
            r#"invalid value of Alpha1=yes, err: strconv.ParseBool: parsing "yes": invalid syntax"#
        );
    }

    #[test]
    fn all_alpha_enables_alpha_gates_not_named() {
        let g = parse(&["AllAlpha=true,Alpha1=false"], FeatureDefaults::Upstream).unwrap();
        assert_eq!(g.value("Alpha1"), Some(false));
        assert_eq!(g.value("Missing"), Some(true));
        assert_eq!(
            g.unsupported().as_deref(),
            Some("feature gate Missing=true is not supported: not built")
        );
    }

    #[test]
    fn an_unimplemented_gate_is_refused_only_when_enabled() {
        assert!(
            parse(&["Missing=false"], FeatureDefaults::Ours)
                .unwrap()
                .unsupported()
                .is_none()
        );
        assert!(
            parse(&["Missing=true"], FeatureDefaults::Ours)
                .unwrap()
                .unsupported()
                .is_some()
        );
    }
}
