//! `teamctl completions SHELL`: generated from the clap definition.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::error::Result;

pub fn run(args: CompletionsArgs) -> Result<()> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "teamctl", &mut std::io::stdout());
    Ok(())
}
