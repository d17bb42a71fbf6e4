//! Wall-clock helpers: milliseconds since the epoch and RFC 3339 timestamps.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Far enough ahead to mean "no limit".
const FOREVER: Duration = Duration::from_hours(100 * 365 * 24);

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
        .map_or(0, |d| d.as_millis() as u64)
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

/// A number of seconds as people write it: whole seconds (`600`) or a duration (`90s`,
/// `10m`, `1h 30m`); at least one second. `spawn --turn-timeout` and `up`'s file share it.
pub fn parse_secs(s: &str) -> Result<u64, String> {
    match parse_any_secs(s)? {
        0 => Err(ZERO_SECS.into()),
        n => Ok(n),
    }
}

/// Why a timeout of 0 is refused: it is not "no limit" (leaving the option out is).
pub const ZERO_SECS: &str =
    "must be at least 1 second, not 0 (leave it out for no limit; a huge one means none too)";

/// The `--timeout` of a command that waits for answers (`ask`, `shutdown`, `delete`): as
/// `parse_secs`, but its default is a limit, and 0 would give up before anyone could answer
/// (new-user QA: `shutdown --timeout 0` sent the request, then said nobody answered).
pub fn parse_timeout(s: &str) -> Result<u64, String> {
    match parse_any_secs(s)? {
        0 => Err(ZERO_TIMEOUT.into()),
        n => Ok(n),
    }
}

/// Why `parse_timeout` refuses 0.
pub const ZERO_TIMEOUT: &str = "must be at least 1 second, not 0: nothing can answer in no time";

/// `ask --timeout`: `parse_timeout`, its refusal naming the command that does not wait.
pub fn parse_ask_timeout(s: &str) -> Result<u64, String> {
    parse_timeout(s).map_err(|e| match e.as_str() {
        ZERO_TIMEOUT => format!("{e} (`teamctl send` sends without waiting for a reply)"),
        _ => e,
    })
}

/// `wait --timeout`: as `parse_secs`, 0 included (look once, now).
pub fn parse_any_secs(s: &str) -> Result<u64, String> {
    let bad = |what: &str| {
        format!("{what}: give seconds (600) or a duration such as \"90s\", \"10m\", \"1h\"")
    };
    let s = s.trim();
    match s.parse::<u64>() {
        Ok(n) => Ok(n),
        // Said plainly, not as a malformed duration (new-user QA 38).
        Err(_) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("{s:?} is too large: at most {} seconds", u64::MAX))
        }
        Err(_)
            if s.contains('.')
                && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && s.parse::<f64>().is_ok() =>
        {
            Err(bad(&format!("{s:?} is not whole seconds")))
        }
        Err(_) => {
            let d = humantime::parse_duration(s).map_err(|_| bad(&format!("{s:?}")))?;
            if d.subsec_nanos() != 0 {
                return Err(bad(&format!("{s:?} is not whole seconds")));
            }
            Ok(d.as_secs())
        }
    }
}

#[cfg(test)]
mod parse_tests {
    use super::parse_secs;

    #[test]
    fn seconds_and_durations() {
        assert_eq!(parse_secs("600"), Ok(600));
        assert_eq!(parse_secs("10m"), Ok(600));
        assert_eq!(parse_secs("1h 30m"), Ok(5400));
        assert!(parse_secs("0").is_err_and(|e| e.contains("at least 1 second")));
        assert!(parse_secs("0s").is_err_and(|e| e.contains("at least 1 second")));
        assert!(parse_secs("1.5s").is_err());
        assert!(parse_secs("1.5").is_err_and(|e| e.contains("not whole seconds")));
        assert!(parse_secs("1e3").is_err_and(|e| !e.contains("whole")));
        assert!(parse_secs("99999999999999999999").is_err_and(|e| e.contains("too large")));
        assert_eq!(parse_secs("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_secs("five minutes").is_err());
        assert!(parse_secs("-3").is_err());
    }

    #[test]
    fn a_timeout_for_answers_is_never_0_and_a_wait_may_be() {
        use super::{parse_any_secs, parse_timeout};
        assert_eq!(parse_timeout("30"), Ok(30));
        assert_eq!(parse_timeout("2m"), Ok(120));
        assert!(parse_timeout("0").is_err_and(|e| e.contains("in no time")));
        assert!(super::parse_ask_timeout("0").is_err_and(|e| e.contains("teamctl send")));
        assert!(super::parse_ask_timeout("x").is_err_and(|e| !e.contains("teamctl send")));
        assert!(parse_timeout("0s").is_err());
        assert_eq!(parse_any_secs("0"), Ok(0));
        assert_eq!(parse_any_secs("1h"), Ok(3600));
        assert!(parse_any_secs("soon").is_err());
    }
}
