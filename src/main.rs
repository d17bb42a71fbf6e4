//! The `teamctl` binary: parse, execute, turn an error into one line and an exit code.

use clap::Parser;

fn main() {
    let cli = teamctl::cli::Cli::parse();
    if !matches!(cli.command, teamctl::cli::Command::Worker(_)) {
        // `teamctl status | head` ends quietly, as Unix tools do, instead of panicking on a
        // closed stdout. Not in the worker: it must survive an agent that closes its stdin.
        // SAFETY: set once, before any thread exists.
        unsafe {
            let _ = nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGPIPE,
                nix::sys::signal::SigHandler::SigDfl,
            );
        }
    }
    if let Err(err) = cli.execute() {
        eprintln!("teamctl: {err}");
        std::process::exit(err.exit_code());
    }
}
