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

#[cfg(test)]
mod tests {
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
