//! Value parsers for flags written the way upstream's Go flags are written, for clap.
//!
//! Input: flag values. Output: typed values or a message naming the bad value. No IO.

use std::net::SocketAddr;

pub use crate::duration::parse_flag_duration as duration;

/// A listen address as Go writes it: `:8443` means every interface, port 0 picks a free port.
pub fn listen_address(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|e| format!("invalid listen address {s:?}: {e}"))
}

/// A listen address that `0` (or nothing) switches off, as controller-runtime's
/// `--metrics-bind-address` and `--health-probe-bind-address`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionalListenAddress(pub Option<SocketAddr>);

/// Parses an [`OptionalListenAddress`].
pub fn optional_listen_address(s: &str) -> Result<OptionalListenAddress, String> {
    if s == "0" || s.is_empty() {
        Ok(OptionalListenAddress(None))
    } else {
        listen_address(s).map(|addr| OptionalListenAddress(Some(addr)))
    }
}

/// Where a pod's namespace is mounted (upstream's `podNamespace`).
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
/// The system namespace outside a pod (upstream's default).
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "olmv1-system";

/// The system namespace: the flag (or $POD_NAMESPACE, which clap reads into it), else the pod's
/// namespace file as upstream reads it, else [`DEFAULT_SYSTEM_NAMESPACE`].
pub fn system_namespace(flag: Option<String>) -> String {
    flag.filter(|n| !n.is_empty())
        .or_else(|| {
            olm_api::regular_file::read_regular(
                std::path::Path::new(SERVICE_ACCOUNT_NAMESPACE_FILE),
                4096,
            )
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| DEFAULT_SYSTEM_NAMESPACE.to_owned())
}

/// The arguments with `default` inserted as the mode when upstream's command line names none:
/// no arguments at all, or flags first (`/operator-controller --leader-elect ...`). `--help` and
/// `--version` alone keep their meaning.
pub fn with_default_mode(args: Vec<std::ffi::OsString>, default: &str) -> Vec<std::ffi::OsString> {
    let first = args.get(1).and_then(|a| a.to_str()).map(str::to_owned);
    let insert = match first.as_deref() {
        None => true,
        Some("-h" | "--help" | "-V" | "--version") => false,
        Some(a) => a.starts_with('-'),
    };
    if !insert {
        return args;
    }
    let mut out = Vec::with_capacity(args.len() + 1);
    let mut it = args.into_iter();
    out.extend(it.next());
    out.push(default.into());
    out.extend(it);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn upstream_command_lines_get_the_controller_mode() {
        let v = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(with_default_mode(v(&["/x"]), "run"), v(&["/x", "run"]));
        assert_eq!(
            with_default_mode(v(&["/x", "--leader-elect"]), "run"),
            v(&["/x", "run", "--leader-elect"])
        );
        assert_eq!(
            with_default_mode(v(&["/x", "resolve", "--package=p"]), "run"),
            v(&["/x", "resolve", "--package=p"])
        );
        assert_eq!(
            with_default_mode(v(&["/x", "--help"]), "run"),
            v(&["/x", "--help"])
        );
    }

    use super::*;

    #[test]
    fn go_style_listen_addresses_are_accepted() {
        assert_eq!(
            listen_address(":8443").expect("valid"),
            "0.0.0.0:8443".parse().expect("addr")
        );
        assert_eq!(
            listen_address("127.0.0.1:0").expect("valid"),
            "127.0.0.1:0".parse().expect("addr")
        );
        assert!(listen_address("nope").is_err());
    }

    #[test]
    fn zero_switches_an_optional_address_off() {
        assert_eq!(
            optional_listen_address("0"),
            Ok(OptionalListenAddress(None))
        );
        assert_eq!(optional_listen_address(""), Ok(OptionalListenAddress(None)));
        assert_eq!(
            optional_listen_address(":7443"),
            Ok(OptionalListenAddress(Some(
                "0.0.0.0:7443".parse().expect("addr")
            )))
        );
        let err = optional_listen_address("7443").expect_err("no colon");
        assert!(err.starts_with("invalid listen address \"7443\""), "{err}");
    }
}
