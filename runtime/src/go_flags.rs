//! The flags upstream's Go binaries take besides their own: klog's logging flags, the TLS profile
//! flags of upstream's `tlsprofiles` package, and the rules tying `--metrics-bind-address` to
//! `--tls-cert`/`--tls-key`. Both controllers flatten these into their controller mode, so that
//! the command lines of upstream's release manifests start our binaries unchanged.
//!
//! Input: flag values. Output: typed settings ([`KlogArgs::level`], [`TlsProfile`],
//! [`metrics_listener`]) or upstream's error text. No IO.
//!
//! | flag group | meaning here |
//! |---|---|
//! | `-v`/`--v` | log verbosity: 0 `info`, 1–4 `debug`, 5+ `trace` (unless `RUST_LOG` is set) |
//! | other klog flags | accepted; logs always go to stderr (klog's default `--logtostderr=true`), so the file and header options have nothing to act on |
//! | `--tls-profile`, `--tls-custom-*` | the HTTPS listeners' protocol versions, cipher suites and key-exchange groups |

use std::net::SocketAddr;

use crate::flags::listen_address;

/// Go's `strconv.ParseBool`, for boolean flags written `--flag=false`.
pub fn go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("strconv.ParseBool: parsing {s:?}: invalid syntax")),
    }
}

/// klog's flags (`klog.InitFlags`), accepted as upstream's binaries accept them.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct KlogArgs {
    /// Log verbosity (klog's `-v`): 0 info, 1–4 debug, 5 and more trace. `RUST_LOG` overrides it.
    #[arg(short = 'v', long = "v", value_name = "LEVEL", default_value_t = 0)]
    pub v: u8,
    /// klog flag, accepted: logs always go to stderr.
    #[arg(long = "logtostderr", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub logtostderr: Option<bool>,
    /// klog flag, accepted: logs always go to stderr.
    #[arg(long = "alsologtostderr", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub alsologtostderr: Option<bool>,
    /// klog flag, accepted: no log files are written.
    #[arg(long = "log_dir", value_name = "DIR", hide = true)]
    pub log_dir: Option<String>,
    /// klog flag, accepted: no log files are written.
    #[arg(long = "log_file", value_name = "FILE", hide = true)]
    pub log_file: Option<String>,
    /// klog flag, accepted: no log files are written.
    #[arg(long = "log_file_max_size", value_name = "MB", hide = true)]
    pub log_file_max_size: Option<u64>,
    /// klog flag, accepted: no log files are written.
    #[arg(long = "one_output", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub one_output: Option<bool>,
    /// klog flag, accepted: our log lines have their own format.
    #[arg(long = "skip_headers", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub skip_headers: Option<bool>,
    /// klog flag, accepted: our log lines have their own format.
    #[arg(long = "skip_log_headers", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub skip_log_headers: Option<bool>,
    /// klog flag, accepted: our log lines have their own format.
    #[arg(long = "add_dir_header", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub add_dir_header: Option<bool>,
    /// klog flag, accepted: everything goes to stderr.
    #[arg(long = "stderrthreshold", value_name = "SEVERITY", hide = true)]
    pub stderrthreshold: Option<String>,
    /// klog flag, accepted: everything goes to stderr.
    #[arg(long = "legacy_stderr_threshold_behavior", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub legacy_stderr_threshold_behavior: Option<bool>,
    /// klog flag, accepted: per-file verbosity does not apply to our modules.
    #[arg(long = "vmodule", value_name = "PATTERN=N,...", hide = true)]
    pub vmodule: Option<String>,
    /// klog flag, accepted: no Go stack traces exist here.
    #[arg(long = "log_backtrace_at", value_name = "FILE:LINE", hide = true)]
    pub log_backtrace_at: Option<String>,
}

impl KlogArgs {
    /// The tracing filter `-v` stands for.
    pub fn level(&self) -> &'static str {
        match self.v {
            0 => "info",
            1..=4 => "debug",
            _ => "trace",
        }
    }
}

/// `--tls-profile` and the custom profile's flags (upstream's `tlsprofiles.AddFlags`).
#[derive(Clone, Debug, clap::Args)]
pub struct TlsProfileArgs {
    /// The TLS profile of the HTTPS listeners: modern, intermediate, old or custom (Mozilla's
    /// server-side TLS levels, as upstream).
    #[arg(long = "tls-profile", value_name = "PROFILE", default_value = "intermediate", value_parser = profile_name)]
    pub tls_profile: ProfileName,
    /// Cipher suites of the custom profile (Go names, comma-separated).
    #[arg(long = "tls-custom-ciphers", value_name = "CIPHERS", value_parser = cipher_list)]
    pub tls_custom_ciphers: Option<NameList>,
    /// Key-exchange groups of the custom profile (comma-separated).
    #[arg(long = "tls-custom-curves", value_name = "CURVES", value_parser = curve_list)]
    pub tls_custom_curves: Option<NameList>,
    /// Lowest TLS version of the custom profile: TLSv1.0, TLSv1.1, TLSv1.2 or TLSv1.3.
    #[arg(long = "tls-custom-version", value_name = "VERSION", default_value = "TLSv1.2", value_parser = tls_version)]
    pub tls_custom_version: TlsVersion,
}

impl Default for TlsProfileArgs {
    fn default() -> Self {
        TlsProfileArgs {
            tls_profile: ProfileName::Intermediate,
            tls_custom_ciphers: None,
            tls_custom_curves: None,
            tls_custom_version: TlsVersion::V12,
        }
    }
}

/// Upstream's profile names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileName {
    Modern,
    Intermediate,
    Old,
    Custom,
}

/// `--tls-profile`, case-insensitive as upstream's lookup.
pub fn profile_name(s: &str) -> Result<ProfileName, String> {
    match s.to_ascii_lowercase().as_str() {
        "modern" => Ok(ProfileName::Modern),
        "intermediate" => Ok(ProfileName::Intermediate),
        "old" => Ok(ProfileName::Old),
        "custom" => Ok(ProfileName::Custom),
        _ => Err(format!("unknown TLS profile: {s:?}")),
    }
}

/// TLS protocol versions upstream names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    V10,
    V11,
    V12,
    V13,
}

/// `--tls-custom-version`.
pub fn tls_version(s: &str) -> Result<TlsVersion, String> {
    match s {
        "TLSv1.0" => Ok(TlsVersion::V10),
        "TLSv1.1" => Ok(TlsVersion::V11),
        "TLSv1.2" => Ok(TlsVersion::V12),
        "TLSv1.3" => Ok(TlsVersion::V13),
        _ => Err(format!("unknown TLS version: {s:?}")),
    }
}

/// Go's cipher suite names (`tls.CipherSuites()` and `tls.InsecureCipherSuites()`), with the
/// name of the suite rustls implements where there is one. Go ignores the list for TLS 1.3, whose
/// three suites are always on; so do we.
const GO_CIPHERS: &[(&str, Option<&str>)] = &[
    ("TLS_AES_128_GCM_SHA256", Some("TLS13_AES_128_GCM_SHA256")),
    ("TLS_AES_256_GCM_SHA384", Some("TLS13_AES_256_GCM_SHA384")),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        Some("TLS13_CHACHA20_POLY1305_SHA256"),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        Some("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        Some("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        Some("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        Some("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        Some("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        Some("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    ),
    ("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", None),
    ("TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", None),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", None),
    ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", None),
    ("TLS_RSA_WITH_RC4_128_SHA", None),
    ("TLS_RSA_WITH_3DES_EDE_CBC_SHA", None),
    ("TLS_RSA_WITH_AES_128_CBC_SHA", None),
    ("TLS_RSA_WITH_AES_256_CBC_SHA", None),
    ("TLS_RSA_WITH_AES_128_CBC_SHA256", None),
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", None),
    ("TLS_RSA_WITH_AES_256_GCM_SHA384", None),
    ("TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", None),
    ("TLS_ECDHE_RSA_WITH_RC4_128_SHA", None),
    ("TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", None),
    ("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", None),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", None),
];

/// Upstream's curve names and rustls' key-exchange group names (`None`: not implemented here).
const CURVES: &[(&str, Option<&str>)] = &[
    ("X25519MLKEM768", Some("X25519MLKEM768")),
    ("X25519", Some("X25519")),
    ("prime256v1", Some("secp256r1")),
    // The IANA name of prime256v1, which upstream accepts too.
    ("secp256r1", Some("secp256r1")),
    ("secp384r1", Some("secp384r1")),
    ("secp521r1", None),
    ("SecP256r1MLKEM768", Some("secp256r1MLKEM768")),
    ("SecP384r1MLKEM1024", None),
];

/// Go's `encoding/csv` reading of a one-line list, as pflag's string slices read it.
fn csv_items(s: &str) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    s.split(',')
        .map(|i| i.trim_matches('"').to_owned())
        .collect()
}

/// A comma-separated list flag's values (one flag occurrence; the last occurrence wins, as
/// pflag's string slices replace on `Set`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameList(pub Vec<String>);

/// `--tls-custom-ciphers`.
pub fn cipher_list(s: &str) -> Result<NameList, String> {
    let items = csv_items(s);
    for item in &items {
        if !GO_CIPHERS.iter().any(|(go, _)| go == item) {
            return Err(format!("unknown cipher {item:?}"));
        }
    }
    Ok(NameList(items))
}

/// `--tls-custom-curves`.
pub fn curve_list(s: &str) -> Result<NameList, String> {
    let items = csv_items(s);
    for item in &items {
        if !CURVES.iter().any(|(name, _)| name == item) {
            return Err(format!("unknown curve {item:?}"));
        }
    }
    Ok(NameList(items))
}

/// What an HTTPS listener offers, decided from [`TlsProfileArgs`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsProfile {
    /// Only TLS 1.3.
    pub tls13_only: bool,
    /// rustls names of the TLS 1.2 suites offered (`None`: rustls' defaults, which are exactly
    /// Mozilla's intermediate list).
    pub tls12_suites: Option<Vec<String>>,
    /// rustls names of the key-exchange groups (`None`: rustls' defaults).
    pub groups: Option<Vec<String>>,
    /// What of the requested profile cannot be honoured (logged at start).
    pub notes: Vec<String>,
}

impl TlsProfileArgs {
    /// The profile the flags ask for.
    pub fn profile(&self) -> TlsProfile {
        match self.tls_profile {
            ProfileName::Modern => TlsProfile {
                tls13_only: true,
                ..TlsProfile::default()
            },
            ProfileName::Intermediate => TlsProfile::default(),
            ProfileName::Old => TlsProfile {
                notes: vec![
                    "the old profile's TLS 1.0/1.1 and CBC suites are not implemented; TLS 1.2 and later are offered".into(),
                ],
                ..TlsProfile::default()
            },
            ProfileName::Custom => {
                let mut notes = Vec::new();
                if self.tls_custom_version < TlsVersion::V12 {
                    notes.push("TLS 1.0 and 1.1 are not implemented; the lowest version offered is TLS 1.2".into());
                }
                let tls12_suites = self.tls_custom_ciphers.as_ref().map(|names| {
                    names
                        .0
                        .iter()
                        .filter_map(|name| {
                            let rustls = GO_CIPHERS.iter().find(|(go, _)| go == name)?.1;
                            if rustls.is_none() {
                                notes.push(format!("cipher {name} is not implemented and is left out"));
                            }
                            rustls.filter(|r| !r.starts_with("TLS13_")).map(str::to_owned)
                        })
                        .collect()
                });
                let groups = self.tls_custom_curves.as_ref().map(|names| {
                    names
                        .0
                        .iter()
                        .filter_map(|name| {
                            let rustls = CURVES.iter().find(|(c, _)| c == name)?.1;
                            if rustls.is_none() {
                                notes.push(format!("curve {name} is not implemented and is left out"));
                            }
                            rustls.map(str::to_owned)
                        })
                        .collect()
                });
                TlsProfile {
                    tls13_only: self.tls_custom_version == TlsVersion::V13,
                    tls12_suites,
                    groups,
                    notes,
                }
            }
        }
    }
}

/// Where the metrics listener binds, by upstream's rules: `--tls-cert` and `--tls-key` together
/// or not at all; `--metrics-bind-address` only with them; with them and no address,
/// `default_addr`. `None`: no metrics listener (upstream serves no metrics without a
/// certificate). The errors are upstream's words.
pub fn metrics_listener(
    metrics_bind_address: Option<&str>,
    has_cert: bool,
    has_key: bool,
    default_addr: &str,
    tls_pair_message: &str,
    address_message: &str,
) -> Result<Option<SocketAddr>, String> {
    if has_cert != has_key {
        return Err(tls_pair_message.to_owned());
    }
    let addr = metrics_bind_address.unwrap_or("");
    if !addr.is_empty() && !has_cert {
        return Err(address_message.to_owned());
    }
    if !has_cert {
        return Ok(None);
    }
    let addr = if addr.is_empty() { default_addr } else { addr };
    if addr == "0" {
        return Ok(None);
    }
    listen_address(addr).map(Some)
}

/// [`metrics_listener`] from the flags' values, with the certificate pair it serves: how both
/// controllers read `--metrics-bind-address`, `--tls-cert` and `--tls-key`.
pub fn metrics_and_tls(
    metrics_bind_address: Option<&str>,
    tls_cert: Option<std::path::PathBuf>,
    tls_key: Option<std::path::PathBuf>,
    default_addr: &str,
    tls_pair_message: &str,
    address_message: &str,
) -> Result<(Option<SocketAddr>, Option<crate::server::TlsFiles>), crate::gates::ArgsError> {
    let addr = metrics_listener(
        metrics_bind_address,
        tls_cert.is_some(),
        tls_key.is_some(),
        default_addr,
        tls_pair_message,
        address_message,
    )
    .map_err(crate::gates::ArgsError::Usage)?;
    let files = match (tls_cert, tls_key) {
        (Some(cert), Some(key)) => Some(crate::server::TlsFiles { cert, key }),
        _ => None,
    };
    Ok((addr, files))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        klog: KlogArgs,
        #[command(flatten)]
        tls: TlsProfileArgs,
    }

    #[test]
    fn klog_flags_parse_as_go_writes_them() {
        let c = Cmd::try_parse_from(["x", "-v=4", "--logtostderr=false", "--vmodule=a=1"]).unwrap();
        assert_eq!(c.klog.v, 4);
        assert_eq!(c.klog.level(), "debug");
        assert_eq!(c.klog.logtostderr, Some(false));
        let c = Cmd::try_parse_from(["x", "--v", "6", "--alsologtostderr"]).unwrap();
        assert_eq!(c.klog.level(), "trace");
        assert_eq!(c.klog.alsologtostderr, Some(true));
        assert_eq!(Cmd::try_parse_from(["x"]).unwrap().klog.level(), "info");
    }

    #[test]
    fn tls_profiles_and_their_errors() {
        let c = Cmd::try_parse_from(["x", "--tls-profile=Modern"]).unwrap();
        assert!(c.tls.profile().tls13_only);
        let e = Cmd::try_parse_from(["x", "--tls-profile=weird"])
            .unwrap_err()
            .to_string();
        assert!(e.contains(r#"unknown TLS profile: "weird""#), "{e}");
        let e = Cmd::try_parse_from(["x", "--tls-custom-ciphers=NOPE"])
            .unwrap_err()
            .to_string();
        assert!(e.contains(r#"unknown cipher "NOPE""#), "{e}");
        let e = Cmd::try_parse_from(["x", "--tls-custom-version=TLSv9"])
            .unwrap_err()
            .to_string();
        assert!(e.contains(r#"unknown TLS version: "TLSv9""#), "{e}");
        let c = Cmd::try_parse_from([
            "x",
            "--tls-profile=custom",
            "--tls-custom-ciphers=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_128_CBC_SHA,TLS_AES_128_GCM_SHA256",
            "--tls-custom-curves=X25519,secp521r1,secp256r1",
        ])
        .unwrap();
        let p = c.tls.profile();
        assert_eq!(
            p.tls12_suites,
            Some(vec!["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_owned()])
        );
        assert_eq!(
            p.groups,
            Some(vec!["X25519".to_owned(), "secp256r1".to_owned()])
        );
        assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
    }

    #[test]
    fn the_metrics_listener_follows_upstreams_rules() {
        let pair = "pair";
        let addr = "addr";
        let l = |a, c, k| metrics_listener(a, c, k, ":8443", pair, addr);
        assert_eq!(l(None, false, false), Ok(None));
        assert_eq!(l(None, true, false), Err(pair.into()));
        assert_eq!(l(Some(":8443"), false, false), Err(addr.into()));
        assert_eq!(
            l(None, true, true),
            Ok(Some("0.0.0.0:8443".parse().unwrap()))
        );
        assert_eq!(
            l(Some("127.0.0.1:9"), true, true),
            Ok(Some("127.0.0.1:9".parse().unwrap()))
        );
        assert_eq!(l(Some("0"), true, true), Ok(None));
    }
}
