//! A loopback port for a test's own server (nats-server), shared by the integration tests
//! (`common/nats.rs`) and the library's (`src/store/nats/testing.rs`).

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// A loopback port that nothing listens on now, for a server the test starts next. Not one from
/// the ephemeral range (a bind to port 0): every outgoing connection on the machine takes its
/// local port from that range, the teamctl processes of other tests among them, and one that
/// took the port between this check and the server's own bind left a cluster node that never
/// came up ("n1 is not healthy", once in a whole run). So a port below that range: each call in
/// this process tries the next one, from a start that depends on the process id.
pub fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const BASE: u32 = 10_000;
    let low = ephemeral_low().clamp(BASE + 2_000, 65_535);
    let span = low - BASE;
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = BASE + (start + n) % span;
        let port = u16::try_from(port).expect("below 65536");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between {BASE} and {low}");
}

/// The first port of the ephemeral range (`net.ipv4.ip_local_port_range`), 32768 when unknown.
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}
