//! Pause points for tests that force an interleaving between teamctl processes: with
//! `TEAMCTL_TEST_PAUSE=POINT:FILE` set, a process reaching `POINT` creates `FILE.reached` and
//! goes on once `FILE` exists (or after a minute). Unset, as outside such tests, a pause point
//! is one environment lookup.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The variable naming the pause point and its gate file.
pub const VAR: &str = "TEAMCTL_TEST_PAUSE";

/// Wait at `point` if this process was asked to (see the module comment).
pub fn at(point: &str) {
    let Some(value) = std::env::var_os(VAR) else {
        return;
    };
    let value = value.to_string_lossy();
    let Some(gate) = value
        .split_once(':')
        .filter(|(p, _)| *p == point)
        .map(|(_, f)| PathBuf::from(f))
    else {
        return;
    };
    let mut reached = gate.clone().into_os_string();
    reached.push(".reached");
    let _ = std::fs::write(&reached, std::process::id().to_string());
    let deadline = Instant::now() + Duration::from_mins(1);
    while !gate.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}
