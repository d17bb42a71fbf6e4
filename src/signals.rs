//! Ctrl-C (SIGINT) and SIGTERM for the commands that must not end halfway without a word:
//! `delete` undoes its deleting mark, `ask` says where its question and the answer are,
//! `shutdown` that the requests it sent stand. Once a
//! command calls `catch`, the signal is recorded (`caught`) instead of ending the process; a
//! small thread then rings the bells of the waits that asked for it (`ring_on`), so a wait ends
//! at once, and the command acts on it at its next safe point, exiting with 128 + the signal
//! (`Error::Interrupted`). A command that never calls `catch` keeps the default: the signal
//! ends it.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::Signal;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

use crate::error::{Error, Result};

/// What a wait rings to end early: the same type as `store::Bell`, named here so this module
/// stays below the store (whose lock waits ask it, `fsutil::lock_said`).
pub type Bell = std::sync::Arc<dyn Fn() + Send + Sync>;

/// The first signal caught (0: none yet).
static CAUGHT: AtomicI32 = AtomicI32::new(0);
/// Set once `catch` has run (the handle keeps the signals caught for the process's life).
static CATCHING: OnceLock<Handle> = OnceLock::new();
/// The bells to ring when a signal comes, by the id of their `Ringing`.
static BELLS: Mutex<Vec<(u64, Bell)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// From now on SIGINT and SIGTERM are recorded, not fatal. Once per process; later calls do
/// nothing.
pub fn catch() -> Result<()> {
    if CATCHING.get().is_some() {
        return Ok(());
    }
    let mut signals = Signals::new([SIGINT, SIGTERM])
        .map_err(|e| Error::failed(format!("cannot catch Ctrl-C: {e}")))?;
    if CATCHING.set(signals.handle()).is_err() {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("teamctl-signals".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            for signal in signals.forever() {
                let _ = CAUGHT.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
                ring_all();
            }
        })
        .map_err(|e| Error::failed(format!("cannot catch Ctrl-C: a thread: {e}")))?;
    Ok(())
}

fn ring_all() {
    let bells = BELLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for (_, bell) in bells.iter() {
        bell();
    }
}

/// Set while `interruptible` runs: a wait for a lock then ends on a caught signal.
static LOCKS_INTERRUPTIBLE: AtomicBool = AtomicBool::new(false);

/// Run `f`, whose waits for locks (`fsutil::lock_said`) end with `Error::Interrupted` when a
/// signal is caught, instead of going on once the lock is let go: for a wait before anything
/// is done (new-user QA 45: Ctrl-C to a `shutdown` waiting for a start did not end it, and
/// the teammate was asked once the start ended). Only where `catch` was called.
pub fn interruptible<T>(f: impl FnOnce() -> T) -> T {
    LOCKS_INTERRUPTIBLE.store(true, Ordering::SeqCst);
    let out = f();
    LOCKS_INTERRUPTIBLE.store(false, Ordering::SeqCst);
    out
}

/// Whether a lock waited for now ends on a caught signal (`interruptible`).
pub fn locks_interruptible() -> bool {
    CATCHING.get().is_some() && LOCKS_INTERRUPTIBLE.load(Ordering::SeqCst)
}

/// The signal caught since `catch`, if one was.
pub fn caught() -> Option<Signal> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        n => Signal::try_from(n).ok(),
    }
}

/// The error a command interrupted by `signal` ends with: `what` says what it left.
pub fn interrupted(signal: Signal, what: impl std::fmt::Display) -> Error {
    Error::Interrupted {
        code: 128 + signal as i32,
        message: format!("interrupted ({signal}): {what}"),
    }
}

/// Rings its bell when a signal is caught, until dropped.
pub struct Ringing(u64);

/// Ring `bell` when a signal is caught (at once when one was already).
pub fn ring_on(bell: &Bell) -> Ringing {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    BELLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((id, bell.clone()));
    // Looked at after it is listed: a signal in between rings it twice, never not at all.
    if caught().is_some() {
        bell();
    }
    Ringing(id)
}

impl Drop for Ringing {
    fn drop(&mut self) {
        BELLS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|(id, _)| *id != self.0);
    }
}
