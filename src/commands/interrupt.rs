//! `teamctl interrupt NAME...`: cancel the current turn only. Each worker (tag checked) gets
//! SIGUSR1, ends its turn's process group and reports `interrupted`; it keeps running. An
//! interactive teammate's companion presses the agent's cancel key in its pane instead. With no
//! turn running (idle, stopped, or a worker that is gone) there is nothing to do: it says so
//! and exits 0, as `kill` of a stopped teammate does. Every name is checked before any turn is
//! cut (one that is no teammate, or runs on another host, cuts none).

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::backend::proc;
use crate::cli::InterruptArgs;
use crate::context::Ctx;
use crate::domain::Name;
use crate::domain::live::TurnInfo;
use crate::error::{Error, Result};
use crate::store::{SyncBell, Topic};

/// How long each worker gets to say its turn ended.
const WITHIN: Duration = Duration::from_secs(10);

pub fn run(ctx: &Ctx, args: &InterruptArgs) -> Result<()> {
    // Like `kill`: a teammate's agent cutting another's turn short is not its call.
    ctx.require_leader("interrupt a teammate's turn")?;
    let store = ctx.store()?;
    let config = store.load()?;
    let names = super::named::teammates(&config, &args.names, "interrupt", "interrupt")?;
    let members = config.require_all(&names)?;
    ctx.reconcile(&*store)?;
    if let Some((m, host)) = members
        .iter()
        .find_map(|m| crate::backend::host::elsewhere(m).map(|h| (m, h)))
    {
        let name = &m.name;
        return Err(Error::failed(format!(
            "{name} runs on {host}; its turn can only be interrupted there (`teamctl interrupt {name}` on that host)"
        )));
    }
    // Subscribed before any signal: a turn that ends at once still rings.
    let bell = SyncBell::default();
    let _sub = store.subscribe_brief(&[Topic::Live], bell.bell())?;
    // Each name with the turn it runs now (signalled), or none.
    let mut cut: Vec<(Name, Option<TurnInfo>)> = Vec::with_capacity(members.len());
    // Those whose worker is not there at all (stopped, or dead): said so, not "no turn".
    let mut down: Vec<Name> = Vec::new();
    for member in &members {
        let live = store.live(&member.name)?;
        let pid = live.as_ref().map_or(0, |l| l.pid);
        let running = proc::is_worker(pid, &member.agent_id);
        if !running {
            down.push(member.name.clone());
        }
        let turn = live.and_then(|l| l.current_turn).filter(|_| running);
        if turn.is_some() {
            proc::signal(pid, Signal::SIGUSR1);
        }
        cut.push((member.name.clone(), turn));
    }
    let deadline = Instant::now() + WITHIN;
    let mut ended: Vec<bool> = cut.iter().map(|(_, t)| t.is_none()).collect();
    loop {
        for ((name, turn), done) in cut.iter().zip(ended.iter_mut()) {
            if *done {
                continue;
            }
            let Some(turn) = turn else { continue };
            let now_turn = store.live(name)?.and_then(|l| l.current_turn);
            *done = now_turn
                .as_ref()
                .is_none_or(|t| t.message_id != turn.message_id);
        }
        if ended.iter().all(|d| *d) || Instant::now() >= deadline {
            break;
        }
        bell.wait_until(deadline);
    }
    let mut json = Vec::new();
    let mut late = Vec::new();
    for ((name, turn), done) in cut.iter().zip(&ended) {
        match turn {
            _ if !done => late.push(name.clone()),
            None if ctx.json => json.push(serde_json::json!({
                "name": name.as_str(),
                "interrupted": null,
            })),
            None if down.contains(name) => {
                crate::outln!("{name} is not running (stopped or dead); nothing to interrupt");
            }
            None => crate::outln!("{name} has no turn running; nothing to interrupt"),
            Some(turn) if ctx.json => json.push(serde_json::json!({
                "name": name.as_str(),
                "interrupted": turn.message_id,
                "summary": turn.summary,
            })),
            Some(turn) => crate::outln!(
                "interrupted {name}'s turn: {}",
                crate::output::printable(&turn.summary)
            ),
        }
    }
    if ctx.json && late.is_empty() {
        super::named::print_json(ctx, &args.names, json);
    }
    if late.is_empty() {
        return Ok(());
    }
    let one = late.len() == 1;
    Err(Error::failed(format!(
        "{} did not end {} turn within {} s",
        crate::leader::handoff::names(&late),
        if one { "its" } else { "their" },
        WITHIN.as_secs()
    )))
}
