//! Loopback ports for the processes the tests and benchmarks start.
//!
//! Input: the kernel's ephemeral port range (`/proc/sys/net/ipv4/ip_local_port_range`). Output:
//! port numbers on 127.0.0.1 that were free when checked. Network: a bind of 127.0.0.1, released
//! at once.
//!
//! Why not bind `127.0.0.1:0` and hand its port on: the kernel takes such a port from the ephemeral
//! range, the same range every outgoing connection takes its local port from, and it may give the
//! same port to the next caller once it is released. Between the release and the child's bind,
//! a connection to the API server or another test's `:0` can take it; the child then fails with
//! "address already in use", and a readiness probe of that port is answered by the wrong process
//! (seen once in CI: a controller that never started was reported ready by another test's).
//!
//! So ports come from below the ephemeral range, where the kernel never picks one by itself, each
//! handed out at most once per process, from a starting point that differs between processes.
//! Where the range leaves no room below it, ports come from `:0` and are still never repeated.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::Mutex;

/// Lowest port handed out: clear of the well-known and registered ports services tend to use.
const FLOOR: u16 = 12_000;
/// Highest port handed out, plus one: below Kubernetes' NodePort range (30000–32767), which
/// kube-proxy in the `real` tier may hold.
const CEILING: u16 = 30_000;
/// Fewer ports than this below the ephemeral range: use `:0` instead.
const MIN_WINDOW: u16 = 2_048;

struct Allocator {
    /// `[low, high)` below the ephemeral range, or `None` when it is too small.
    window: Option<(u16, u16)>,
    /// Ports handed out so far.
    handed_out: HashSet<u16>,
    /// Where in the window this process starts, and how far it has walked.
    start: u32,
    step: u32,
}

static ALLOCATOR: Mutex<Option<Allocator>> = Mutex::new(None);

/// A free port on 127.0.0.1 that this process has not handed out before.
pub fn free_port() -> std::io::Result<u16> {
    let mut guard = ALLOCATOR.lock().unwrap_or_else(|p| p.into_inner());
    guard.get_or_insert_with(Allocator::new).next()
}

/// `N` distinct free ports on 127.0.0.1.
pub fn free_ports<const N: usize>() -> std::io::Result<[u16; N]> {
    let mut ports = [0u16; N];
    for port in &mut ports {
        *port = free_port()?;
    }
    Ok(ports)
}

fn ephemeral_low() -> Option<u16> {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Allocator {
    fn new() -> Allocator {
        let high = ephemeral_low().unwrap_or(32_768).min(CEILING);
        let window = (high.saturating_sub(FLOOR) >= MIN_WINDOW).then_some((FLOOR, high));
        Allocator {
            window,
            handed_out: HashSet::new(),
            // Processes started together begin far apart: the pid spread over the window.
            start: std::process::id().wrapping_mul(2_654_435_761),
            step: 0,
        }
    }

    fn next(&mut self) -> std::io::Result<u16> {
        let Some((low, high)) = self.window else {
            loop {
                let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
                if self.handed_out.insert(port) {
                    return Ok(port);
                }
            }
        };
        let size = u32::from(high - low);
        for _ in 0..size {
            let offset = self.start.wrapping_add(self.step) % size;
            self.step += 1;
            let port = low + offset as u16;
            if !self.handed_out.contains(&port) && is_free(port) {
                self.handed_out.insert(port);
                return Ok(port);
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            format!("no free port left in 127.0.0.1:{low}-{high}"),
        ))
    }
}

/// Whether 127.0.0.1:`port` can be bound now. The standard library sets `SO_REUSEADDR`, as the
/// servers started on it do, so a port with connections in `TIME_WAIT` counts as free.
fn is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_free_distinct_and_below_the_ephemeral_range() {
        let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap()).collect();
        let distinct: HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        let ephemeral_low = ephemeral_low().expect("this machine's ephemeral port range");
        if ephemeral_low >= FLOOR + MIN_WINDOW {
            for port in &ports {
                assert!(
                    (FLOOR..ephemeral_low.min(CEILING)).contains(port),
                    "{port} is outside {FLOOR}..{ephemeral_low}"
                );
            }
        }
        for port in ports {
            assert!(is_free(port), "{port} was handed out but is taken");
        }
    }

    #[test]
    fn a_taken_port_is_skipped() {
        let mut allocator = Allocator::new();
        let Some((low, _)) = allocator.window else {
            return;
        };
        // Hold the port the allocator would hand out next (or find it held already).
        allocator.start = 0;
        let _held = TcpListener::bind(("127.0.0.1", low));
        assert_ne!(allocator.next().unwrap(), low);
    }
}
