//! Wall-clock helpers: milliseconds since the epoch and RFC 3339 timestamps.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Far enough ahead to mean "no limit".
const FOREVER: Duration = Duration::from_secs(100 * 365 * 86_400);

/// `now + timeout`, or "no limit" when that does not fit in an `Instant`: a script passing
/// `--timeout 18446744073709551615` means forever, and must not get a panic.
pub fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout.min(FOREVER)).unwrap_or(now)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2026-11-30T14:10:38.123Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A short age such as `3s`, `4m`, `2h`.
pub fn age(since_ms: u64, now_ms: u64) -> String {
    let secs = now_ms.saturating_sub(since_ms) / 1000;
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages() {
        assert_eq!(super::age(0, 5_000), "5s");
        assert_eq!(super::age(0, 600_000), "10m");
        assert_eq!(super::age(10, 0), "0s");
    }
}
