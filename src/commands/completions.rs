//! `teamctl completions SHELL`: generated from the clap definition, without the hidden
//! commands (clap_complete would offer the internal `worker`).

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::error::Result;

pub fn run(args: CompletionsArgs) -> Result<()> {
    let full = Cli::command();
    let mut cmd = clap::Command::new("teamctl")
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned());
    clap_complete::generate(args.shell, &mut cmd, "teamctl", &mut std::io::stdout());
    Ok(())
}
