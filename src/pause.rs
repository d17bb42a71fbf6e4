//! Pause points for tests that force an interleaving between teamctl processes: with
//! `TEAMCTL_TEST_PAUSE=POINT:FILE` set, a process reaching `POINT` creates `FILE.reached` and
//! goes on once `FILE` exists (once its signal is recorded too, when `FILE` says `signalled`);
//! after a minute without it, it exits with `PAUSE_TIMED_OUT`, so a test that never opens the
//! gate fails rather than running another order than it meant. The variable is taken out of
//! the environment when the process starts (`take`), so it pauses that one process only, never
//! a worker or an agent started from it; `FILE.reached` is made new (a link or a FIFO already
//! there is not written through: nothing is made and the point does not pause). Unset, as
//! outside such tests, a pause point looks at one static.
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The variable naming the pause point and its gate file.
pub const VAR: &str = "TEAMCTL_TEST_PAUSE";

/// The point and gate this process was given, if any (`take`).
static GATE: OnceLock<Option<(String, PathBuf)>> = OnceLock::new();

/// Read the variable and take it out of the environment. For `main`, before any thread.
pub fn take() {
    let value = std::env::var_os(VAR);
    if value.is_some() {
        // SAFETY: called first thing in main, before any thread exists.
        unsafe { std::env::remove_var(VAR) };
    }
    let gate = value.and_then(|v| {
        let v = v.to_string_lossy();
        let (point, file) = v.split_once(':')?;
        Some((point.to_string(), PathBuf::from(file)))
    });
    let _ = GATE.set(gate);
}

/// Wait at `point` if this process was asked to (see the module comment).
pub fn at(point: &str) {
    let Some(Some((p, gate))) = GATE.get() else {
        return;
    };
    if p != point {
        return;
    }
    let mut reached = gate.clone().into_os_string();
    reached.push(".reached");
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&reached)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, std::process::id().to_string().as_bytes())
        });
    if made.is_err() {
        return;
    }
    let deadline = Instant::now() + Duration::from_mins(1);
    while !gate.exists() {
        if Instant::now() >= deadline {
            // Going on would run the interleaving the test did not ask for, and it might pass
            // that way: a test whose other process waited on a lock this one held did, for a
            // minute each run, until CI saw the order it had not meant fail.
            eprintln!(
                "teamctl: test pause at {point}: {} was not made within a minute",
                gate.display()
            );
            std::process::exit(PAUSE_TIMED_OUT);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // A gate saying `signalled`: the test sent a signal before opening it, and this process
    // goes on only once its signal thread has recorded it (on two busy cores that thread ran
    // after the paused one had gone on: CI, `interrupted::`).
    if std::fs::read(gate).is_ok_and(|g| g.starts_with(SIGNALLED)) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while crate::signals::caught().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The exit code of a process whose pause point's gate was not made within a minute.
pub const PAUSE_TIMED_OUT: i32 = 97;

/// What a test writes into a gate it opens after signalling the paused process (`at`).
pub const SIGNALLED: &[u8] = b"signalled";
