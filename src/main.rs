//! The `teamctl` binary: parse, execute, turn an error into one line and an exit code.

use clap::Parser;

fn main() {
    let cli = teamctl::cli::Cli::parse();
    if let Err(err) = cli.execute() {
        eprintln!("teamctl: {err}");
        std::process::exit(err.exit_code());
    }
}
