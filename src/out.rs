//! Standard output, checked. Commands print through `outln!` and `out!` (std's `println!`
//! panics on a write error: `teamctl status > /dev/full` exited 101 with a backtrace). As in
//! coreutils, a write error is kept, later writes are skipped and the command goes on: what it
//! changed in the store is never left half done because its report could not be printed. At
//! the end `finish` flushes and returns the first error, which `main` reports in one line
//! (`teamctl: cannot write output: ...`, exit 1), or, for a reader that went away (EPIPE),
//! ends quietly as a command killed by SIGPIPE does. Long-running printers (`log -f`,
//! `status --watch`, `lead`) write through `now`, which returns the error at once, so they
//! stop instead of running on with nowhere to print.

use std::io::{self, Write};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// The first write error on stdout, once there was one.
static FAILED: Mutex<Option<io::Error>> = Mutex::new(None);

/// Write `args` on stdout, unless an earlier write failed; a failure is kept for `finish`.
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut failed = FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if failed.is_none()
        && let Err(e) = io::stdout().lock().write_fmt(args)
    {
        *failed = Some(e);
    }
}

/// Write `text` on stdout and flush it now: the error, if any, as the command's error.
pub fn now(text: &[u8]) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text)
        .and_then(|()| out.flush())
        .map_err(error)
}

/// Flush stdout: the first error met since the start (or by this flush), if any.
pub fn finish() -> Result<()> {
    let mut failed = FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if failed.is_none()
        && let Err(e) = io::stdout().lock().flush()
    {
        *failed = Some(e);
    }
    failed.take().map_or(Ok(()), |e| Err(error(e)))
}

/// A write error on stdout as the command's error: a reader gone away (EPIPE) is
/// `Error::Closed`, which `main` ends quietly on.
pub fn error(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Error::Closed
    } else {
        Error::io_while("cannot write output", e)
    }
}

/// End the process on `err`: one line and its exit code, or, for a reader that went away
/// (`Error::Closed`), quietly as a command killed by SIGPIPE. teamctl ignores SIGPIPE (`main`)
/// so that a command finishes what it changes before it ends so.
pub fn exit_with(err: &Error) -> ! {
    if let Error::Closed = err {
        die_of_sigpipe();
    }
    // An error may quote a teammate's words (a failure notice, a refusal). Not `eprintln!`,
    // which panics when stderr cannot be written (a worker's log on a full disk).
    let _ = writeln!(
        std::io::stderr(),
        "{}",
        crate::output::printable(&format!("teamctl: {err}"))
    );
    std::process::exit(err.exit_code());
}

/// End as a command killed by SIGPIPE: quietly, with the status a shell reads as such (141),
/// so that `teamctl log -f | head -1` looks like any other pipeline.
fn die_of_sigpipe() -> ! {
    use nix::sys::signal::{
        SigHandler, SigSet, SigmaskHow, Signal, pthread_sigmask, raise, signal,
    };
    // SAFETY: the default action, set on the way out; no handler of ours runs.
    unsafe {
        let _ = signal(Signal::SIGPIPE, SigHandler::SigDfl);
    }
    let mut pipe = SigSet::empty();
    pipe.add(Signal::SIGPIPE);
    let _ = pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&pipe), None);
    let _ = raise(Signal::SIGPIPE);
    std::process::exit(128 + Signal::SIGPIPE as i32)
}

/// `println!` on stdout, checked (see the module).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics: a line stderr cannot take (a closed pipe, a full disk) is
/// lost and the command goes on to its own exit code (`eprintln!` panicked, exit 101: new-user
/// QA, `teamctl 2>&1 | head -1`, `2>/dev/full`).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        // Escaped as errors are (`exit_with`): a warning may quote a name found on disk or a
        // teammate's words (attacker QA: a worktree's name with an OSC reached the terminal).
        let _ = ::std::writeln!(
            ::std::io::stderr(),
            "{}",
            $crate::output::printable(&::std::format!($($arg)*))
        );
    }};
}

/// `eprint!` as `errln!` is `eprintln!`.
#[macro_export]
macro_rules! errprint {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stderr(), $($arg)*);
    }};
}

/// `print!` on stdout, checked (see the module).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}
