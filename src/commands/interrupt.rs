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

/// What `interrupt` found of a teammate named.
enum Found {
    /// No worker of it runs.
    Down,
    /// Its worker runs no turn.
    NoTurn,
    /// The turn its worker was signalled to end, and whether it has ended since.
    Turn(TurnInfo, bool),
    /// Signalled, but its worker (this pid) is stopped by a signal: the turn ends once it is
    /// continued, so no wait (new-user and attacker QA 42: ten seconds, then "did not end").
    Paused(u32),
}

/// How long each worker gets to say its turn ended.
const WITHIN: Duration = Duration::from_secs(10);

pub fn run(ctx: &Ctx, args: &InterruptArgs) -> Result<()> {
    // Like `kill`: a teammate's agent cutting another's turn short is not its call.
    ctx.require_leader("interrupt a teammate's turn")?;
    let store = ctx.store()?;
    let config = store.load()?;
    let names = super::named::teammates(ctx, &config, &args.names, "interrupt", "interrupt")?;
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
    // Each name with what was found: no worker, no turn, or the turn signalled (and whether
    // it has ended since).
    let mut cut: Vec<(Name, Found)> = Vec::with_capacity(members.len());
    for member in &members {
        let live = store.live(&member.name)?;
        let pid = live.as_ref().map_or(0, |l| l.pid);
        let found = if !proc::is_worker(pid, &member.agent_id) {
            Found::Down
        } else if let Some(turn) = live.as_ref().and_then(|l| l.current_turn.clone()) {
            proc::signal(pid, Signal::SIGUSR1);
            match crate::leader::paused_worker(member, live.as_ref()) {
                Some(pid) => Found::Paused(pid),
                None => Found::Turn(turn, false),
            }
        } else {
            Found::NoTurn
        };
        cut.push((member.name.clone(), found));
    }
    let deadline = Instant::now() + WITHIN;
    loop {
        let mut waiting = false;
        for (name, found) in &mut cut {
            let Found::Turn(turn, done @ false) = found else {
                continue;
            };
            let now_turn = store.live(name)?.and_then(|l| l.current_turn);
            *done = now_turn
                .as_ref()
                .is_none_or(|t| t.message_id != turn.message_id);
            waiting |= !*done;
        }
        if !waiting || Instant::now() >= deadline {
            break;
        }
        bell.wait_until(deadline);
    }
    let mut json = Vec::new();
    let mut late = Vec::new();
    let mut paused = Vec::new();
    for (name, found) in &cut {
        match found {
            Found::Paused(pid) => paused.push(format!(
                "{name}'s worker (pid {pid}) is stopped by a signal (SIGSTOP?): its turn ends once `kill -CONT {pid}`"
            )),
            Found::Turn(_, false) => late.push(name.clone()),
            Found::Down | Found::NoTurn if ctx.json => json.push(serde_json::json!({
                "name": name.as_str(),
                "interrupted": null,
            })),
            // No worker at all (stopped, or dead): said so, not "no turn" (new-user QA).
            Found::Down => {
                crate::outln!("{name} is not running (stopped or dead); nothing to interrupt");
            }
            Found::NoTurn => crate::outln!("{name} has no turn running; nothing to interrupt"),
            Found::Turn(turn, true) if ctx.json => json.push(serde_json::json!({
                "name": name.as_str(),
                "interrupted": turn.message_id,
                "summary": turn.summary,
            })),
            Found::Turn(turn, true) => crate::outln!(
                "interrupted {name}'s turn: {}",
                crate::output::printable(&turn.summary)
            ),
        }
    }
    if ctx.json && late.is_empty() && paused.is_empty() {
        super::named::print_json(ctx, &args.names, json);
    }
    if !late.is_empty() {
        let one = late.len() == 1;
        paused.insert(
            0,
            format!(
                "{} did not end {} turn within {} s",
                crate::leader::handoff::names(&late),
                if one { "its" } else { "their" },
                WITHIN.as_secs()
            ),
        );
    }
    if paused.is_empty() {
        return Ok(());
    }
    Err(Error::failed(paused.join("; ")))
}
