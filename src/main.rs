//! The `teamctl` binary: parse, execute, turn an error into one line and an exit code.
//!
//! `main` is the C library's: Rust's own start-up (`lang_start`) is left out, because every
//! agent turn runs `teamctl` (send, ask, task) and its start is on the wake-up's path. What
//! that start-up did and teamctl needs is done here: descriptors 0-2 made open, SIGPIPE
//! ignored, stdout flushed at the end, a panic turned into exit code 101. What is left out:
//! the main thread's stack-overflow message (a read of /proc/self/maps and an alternate signal
//! stack at every start); an overflow is then a plain SIGSEGV. The arguments still come from
//! `std::env::args_os`, which glibc hands to std before `main`.
#![no_main]

#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    teamctl::backend::fds::open_stdio();
    // SAFETY: set once, before any thread exists (std's start-up did the same).
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigIgn,
        );
    }
    // The panic hook has printed the message; 101 is Rust's exit code for a panic.
    let code = std::panic::catch_unwind(run).map_or(101, |()| 0);
    // Flushes stdout, as returning from Rust's `main` does.
    std::process::exit(code)
}

fn run() {
    // Nothing of teamctl's own is open yet: every descriptor from 3 up was inherited (a lock
    // held by `flock`, the pipe of an `out=$(...)`), and no child of ours gets it, neither a
    // worker nor the tmux server a `spawn` starts, which would hold it for its whole life.
    teamctl::backend::fds::cloexec_above_stdio();
    teamctl::pause::take();
    // An empty variable counts as unset (as `TEAMCTL_TEAM=` already did): `TEAMCTL_HOME=` meant
    // "--home requires a value" and `TEAMCTL_AGENT_NAME=` an invalid empty name.
    for var in teamctl::domain::env::options() {
        if std::env::var_os(var).is_some_and(|v| v.is_empty()) {
            // SAFETY: the first thing main does, before any thread exists.
            unsafe { std::env::remove_var(var) };
        }
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == teamctl::worker::launch::ARG)
    {
        // A turn's process started ahead by its worker: become the turn (`worker::launch`).
        teamctl::worker::launch::serve();
    }
    if let Some((home, id)) = teamctl::cli::worker_argv(&args) {
        // Each idle worker is a resident process: skip clap (see `worker_argv`).
        let root = teamctl::context::home_root(home);
        exit_on(teamctl::worker::run(root, &id));
        return;
    }
    if args
        .get(1)
        .is_some_and(|a| a == teamctl::interactive::EXEC_ENV)
    {
        // An interactive teammate's pane: become its agent (see `interactive::exec_env`).
        exit_on(teamctl::interactive::exec_env(&args[2..]));
        return;
    }
    let cli = teamctl::cli::parse(&args);
    if matches!(cli.command, Some(teamctl::cli::Command::Demo(_))) {
        // The demo's teammates go to the team's detached session, never beside the caller's
        // pane: without `$TMUX_PANE` the tmux backend does not split the user's window.
        // SAFETY: before any thread exists.
        unsafe { std::env::remove_var("TMUX_PANE") };
    }
    // SIGPIPE stays ignored: a closed stdout is an error `out` keeps while the command finishes
    // what it changes, and `exit_on` then ends it as SIGPIPE would. With the default action,
    // the first line written to a reader gone away killed the command halfway (QA: `teamctl
    // resume | head -1` resumed one teammate of four). The worker must also survive an agent
    // that closes its stdin. Children get the default back (std resets it at `exec`).
    exit_on(teamctl::commands::run(cli));
}

/// One line and the error's exit code, or nothing; a closed output ends as SIGPIPE would.
fn exit_on(result: teamctl::error::Result<()>) {
    if let Err(err) = result {
        teamctl::out::exit_with(&err);
    }
}
