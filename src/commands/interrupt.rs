//! `teamctl interrupt NAME`: cancel the current turn only. The worker (tag checked) gets
//! SIGUSR1, ends its turn's process group and reports `interrupted`; it keeps running. An
//! interactive teammate's companion presses the agent's cancel key in its pane instead. With no
//! turn running (idle, stopped, or a worker that is gone) there is nothing to do: it says so
//! and exits 0, as `kill` of a stopped teammate does.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::backend::proc;
use crate::cli::NameArg;
use crate::context::Ctx;
use crate::domain::Name;
use crate::error::{Error, Result};
use crate::store::{SyncBell, Topic};

pub fn run(ctx: &Ctx, args: &NameArg) -> Result<()> {
    // Like `kill`: a teammate's agent cutting another's turn short is not its call.
    ctx.require_leader("interrupt a teammate's turn")?;
    let name = Name::teammate(&args.name)?;
    let store = ctx.store()?;
    let config = store.load()?;
    let member = config.require(name.as_str())?.clone();
    ctx.reconcile(&*store)?;
    if let Some(host) = crate::backend::host::elsewhere(&member) {
        return Err(Error::failed(format!(
            "{name} runs on {host}; its turn can only be interrupted there (`teamctl interrupt {name}` on that host)"
        )));
    }
    let live = store.live(&name)?;
    let pid = live.as_ref().map_or(0, |l| l.pid);
    let turn = live
        .as_ref()
        .and_then(|l| l.current_turn.clone())
        .filter(|_| proc::is_worker(pid, &member.agent_id));
    let Some(turn) = turn else {
        if ctx.json {
            ctx.print_json(&serde_json::json!({
                "name": name.as_str(),
                "interrupted": null,
            }));
        } else {
            crate::outln!("{name} has no turn running; nothing to interrupt");
        }
        return Ok(());
    };
    let bell = SyncBell::default();
    let _sub = store.subscribe_brief(&[Topic::Live], bell.bell())?;
    proc::signal(pid, Signal::SIGUSR1);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now_turn = store.live(&name)?.and_then(|l| l.current_turn);
        if now_turn
            .as_ref()
            .is_none_or(|t| t.message_id != turn.message_id)
        {
            if ctx.json {
                ctx.print_json(&serde_json::json!({
                    "name": name.as_str(),
                    "interrupted": turn.message_id,
                    "summary": turn.summary,
                }));
            } else {
                crate::outln!(
                    "interrupted {name}'s turn: {}",
                    crate::output::printable(&turn.summary)
                );
            }
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::failed(format!(
                "{name} did not end its turn within 10 s"
            )));
        }
        bell.wait_until(deadline);
    }
}
