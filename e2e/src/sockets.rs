//! The TCP and UDP sockets a process holds, read from `/proc`.
//!
//! Input: a PID. Output: each socket's protocol, local and remote address and TCP state. Reads
//! `/proc/PID/fd` and `/proc/PID/net/{tcp,tcp6,udp,udp6}`; no network. Used to prove that test
//! components listen on and talk to loopback only.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Transport protocol of a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
}

/// One socket of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Socket {
    pub protocol: Protocol,
    pub local: SocketAddr,
    /// Unspecified (`0.0.0.0:0` / `[::]:0`) for listening and unconnected sockets.
    pub remote: SocketAddr,
    /// The kernel's TCP state number (`0x0A` is LISTEN); UDP sockets report 7 (`CLOSE`).
    pub state: u8,
}

/// TCP state number of a listening socket.
pub const TCP_LISTEN: u8 = 0x0A;

impl Socket {
    pub fn is_listening(&self) -> bool {
        self.protocol == Protocol::Tcp && self.state == TCP_LISTEN
    }

    /// True when neither end leaves the machine: the local address is loopback, and the remote one
    /// is loopback or unset.
    pub fn is_loopback_only(&self) -> bool {
        self.local.ip().is_loopback() && (self.remote.ip().is_loopback() || self.remote.port() == 0)
    }
}

/// Failure to read a process's sockets.
#[derive(Debug, thiserror::Error)]
#[error("failed to read the sockets of process {pid} from {path}: {source}")]
pub struct SocketsError {
    pid: u32,
    path: String,
    #[source]
    source: std::io::Error,
}

/// Every TCP and UDP socket (IPv4 and IPv6) that process `pid` has open.
pub fn of_process(pid: u32) -> Result<Vec<Socket>, SocketsError> {
    let fd_dir = format!("/proc/{pid}/fd");
    let err = |path: &str, source| SocketsError {
        pid,
        path: path.to_owned(),
        source,
    };
    let mut inodes = HashSet::new();
    for entry in std::fs::read_dir(&fd_dir).map_err(|e| err(&fd_dir, e))? {
        let Ok(entry) = entry else { continue };
        if let Ok(target) = std::fs::read_link(entry.path())
            && let Some(inode) = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u64>().ok())
        {
            inodes.insert(inode);
        }
    }
    let mut sockets = Vec::new();
    for (file, protocol) in [
        ("tcp", Protocol::Tcp),
        ("tcp6", Protocol::Tcp),
        ("udp", Protocol::Udp),
        ("udp6", Protocol::Udp),
    ] {
        let path = format!("/proc/{pid}/net/{file}");
        let table = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            // A kernel without IPv6 has no tcp6/udp6 table.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(err(&path, e)),
        };
        sockets.extend(
            parse_table(&table, protocol)
                .into_iter()
                .filter(|(inode, _)| inodes.contains(inode))
                .map(|(_, s)| s),
        );
    }
    Ok(sockets)
}

/// Parses a `/proc/net/{tcp,udp}[6]` table into `(inode, socket)` pairs, skipping bad lines.
fn parse_table(table: &str, protocol: Protocol) -> Vec<(u64, Socket)> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = parse_addr(fields.get(1)?)?;
            let remote = parse_addr(fields.get(2)?)?;
            let state = u8::from_str_radix(fields.get(3)?, 16).ok()?;
            let inode = fields.get(9)?.parse().ok()?;
            Some((
                inode,
                Socket {
                    protocol,
                    local,
                    remote,
                    state,
                },
            ))
        })
        .collect()
}

/// `0100007F:1F90` → 127.0.0.1:8080. The kernel prints each 32-bit word of the address in host
/// byte order.
fn parse_addr(field: &str) -> Option<SocketAddr> {
    let (addr, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |hex: &str| u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes);
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(addr)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(&addr[i * 8..i * 8 + 8])?);
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_and_ipv6_addresses_are_decoded() {
        let local = u32::from_ne_bytes([127, 0, 0, 1]);
        let field = format!("{local:08X}:1F90");
        assert_eq!(parse_addr(&field), Some("127.0.0.1:8080".parse().unwrap()));
        let one = u32::from_ne_bytes([0, 0, 0, 1]);
        let field = format!("000000000000000000000000{one:08X}:0050");
        assert_eq!(parse_addr(&field), Some("[::1]:80".parse().unwrap()));
    }

    #[test]
    fn a_listener_of_this_process_is_found_on_loopback() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sockets = of_process(std::process::id()).unwrap();
        let mine = sockets
            .iter()
            .find(|s| s.local.port() == port)
            .expect("our listener is listed");
        assert!(mine.is_listening());
        assert!(mine.is_loopback_only());
    }

    #[test]
    fn a_wildcard_listener_is_not_loopback_only() {
        let socket = Socket {
            protocol: Protocol::Tcp,
            local: "0.0.0.0:10250".parse().unwrap(),
            remote: "0.0.0.0:0".parse().unwrap(),
            state: TCP_LISTEN,
        };
        assert!(!socket.is_loopback_only());
        let outbound = Socket {
            protocol: Protocol::Tcp,
            local: "127.0.0.1:5000".parse().unwrap(),
            remote: "10.0.0.1:443".parse().unwrap(),
            state: 1,
        };
        assert!(!outbound.is_loopback_only());
    }
}
