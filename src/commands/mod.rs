//! One file per command. Each `run` validates everything before it writes anything.

pub(crate) mod ask;
pub(crate) mod attach;
pub(crate) mod broadcast;
pub(crate) mod complete;
pub(crate) mod completions;
pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod down;
pub(crate) mod hook;
pub(crate) mod inbox;
pub(crate) mod interrupt;
pub(crate) mod kill;
pub(crate) mod lead;
pub(crate) mod log;
pub(crate) mod mistaken;
mod named;
pub(crate) mod plan;
pub(crate) mod resume;
pub(crate) mod send;
pub(crate) mod shutdown;
pub(crate) mod shutdown_response;
pub(crate) mod spawn;
pub(crate) mod status;
pub(crate) mod task;
pub(crate) mod up;
pub(crate) mod wait;

use crate::cli::{Cli, Command};
use crate::context::Ctx;
use crate::error::{Error, Result};

/// Run the parsed command line: the global options become a `Ctx` once, then one file per
/// command does the work.
pub fn run(cli: Cli) -> Result<()> {
    let Some(command) = cli.command else {
        // Bare `teamctl`: the help, on stderr, exit 2 (as clap does without variables).
        use clap::CommandFactory;
        let help = Cli::command().render_help();
        crate::errprint!("{help}");
        return Err(Error::bad("a command is required (see the list above)"));
    };
    let spawning = matches!(command, Command::Spawn(_));
    let ctx = Ctx::new(cli.global.resolve(), spawning)?;
    // Before anything is read or written: a home that is not the caller's alone is refused
    // (`completions` touches no home).
    if !matches!(command, Command::Completions(_)) {
        ctx.home.verify_for_command()?;
    }
    // The worker writes its pane through its own sink and must outlive a closed one.
    let worker = matches!(command, Command::Worker(_));
    let result = dispatch(command, &ctx);
    // The output is the last step: what the command did stands whether or not its report
    // could be written; a write error is reported only when nothing else went wrong.
    let printed = if worker { Ok(()) } else { crate::out::finish() };
    result.and(printed)
}

fn dispatch(command: Command, ctx: &Ctx) -> Result<()> {
    // Commands that only act on a team that exists: a `--team` not here is said so, with the
    // teams there are, never "create it".
    let existing = match &command {
        Command::Delete(a) if !a.leave => Some("delete"),
        Command::Status(_) => Some("show the status of"),
        Command::Shutdown(_) => Some("shut down"),
        Command::Kill(_) => Some("kill"),
        Command::Interrupt(_) => Some("interrupt"),
        Command::Resume(_) => Some("resume"),
        Command::Wait(_) => Some("wait for"),
        Command::Attach(_) => Some("attach to"),
        Command::Inbox(_) => Some("read an inbox of"),
        Command::Log(_) => Some("show the log of"),
        Command::Task(_) => Some("use the task list of"),
        Command::Ask(_) => Some("ask in"),
        Command::Plan(_) => Some("answer a plan in"),
        Command::ShutdownResponse(_) => Some("answer in"),
        _ => None,
    };
    if let Some(doing) = existing {
        ctx.require_existing_team(doing)?;
    }
    match command {
        Command::Create(a) => create::run(ctx, &a),
        Command::Delete(a) if a.leave => delete::leave(ctx),
        Command::Delete(a) => delete::run(ctx, &a.delete),
        Command::Up(a) => up::run(ctx, &a),
        Command::Down(a) => down::run(ctx, &a),
        Command::Spawn(a) => spawn::run(ctx, &a),
        // Asked only on the way to an error: `send` is every agent turn's command.
        Command::Send(a) => {
            send::run(ctx, a).map_err(|e| match ctx.require_existing_team("send in") {
                Err(no_team) => no_team,
                Ok(()) => e,
            })
        }
        Command::Ask(a) => ask::run(ctx, a),
        Command::Inbox(a) => inbox::run(ctx, &a),
        Command::Status(a) => status::run(ctx, &a),
        Command::Wait(a) => wait::run(ctx, &a),
        Command::Shutdown(a) => shutdown::run(ctx, &a),
        Command::ShutdownResponse(a) => shutdown_response::run(ctx, a),
        Command::Interrupt(a) => interrupt::run(ctx, &a),
        Command::Kill(a) => kill::run(ctx, &a),
        Command::Resume(a) => resume::run(ctx, &a),
        Command::Plan(c) => plan::run(ctx, c),
        Command::Task(c) => task::run(ctx, c),
        Command::Attach(a) => attach::run(ctx, &a),
        Command::Log(a) => log::run(ctx, &a),
        Command::Doctor(a) => doctor::run(ctx, &a),
        Command::Completions(a) => completions::run(&a),
        Command::Demo(a) => demo::run(ctx, &a),
        Command::Lead => lead::run(ctx),
        Command::Hook(a) => hook::run(ctx, &a),
        Command::Worker(a) => {
            // Workers are the leader's to start (spawn, resume, a leader's `send`): a worker
            // started from a turn would bring back a teammate the leader shut down, or run
            // beside the live one.
            if let Some(t) = &ctx.turn {
                return Err(crate::error::Error::bad(format!(
                    "only the leader starts workers; this runs inside {}'s turn (TEAMCTL_AGENT_ID)",
                    t.name.agent_id(&t.team)
                )));
            }
            // Started any other way than teamctl starts it (`main`: `worker --home H --id ID`,
            // H absolute), a worker could not be told by its command line, the tag `kill`,
            // `resume` and `delete` find workers by: it would serve where nothing stops it
            // (attacker QA: one typed as `worker --id=bob@t` outlived `kill` and `delete`).
            Err(crate::error::Error::bad(format!(
                "`teamctl worker` is internal; teamctl starts it as `teamctl worker --home ABSOLUTE_HOME --id {}` (`teamctl resume NAME` starts a teammate's worker)",
                a.id
            )))
        }
        Command::Complete(a) => complete::run(ctx, &a),
    }
}
