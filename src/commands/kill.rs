//! `teamctl kill NAME...`: end the teammates and their panes now, without the handshake.
//! Every name is checked before any is ended (one that names no teammate ends none). Killing a
//! teammate that is already stopped changes nothing and says so; a pane the user took over
//! (respawned with a program of theirs) is left open, and it says that rather than "killed".

use crate::cli::KillArgs;
use crate::context::Ctx;
use crate::error::Result;
use crate::leader;

pub fn run(ctx: &Ctx, args: &KillArgs) -> Result<()> {
    ctx.require_leader("kill teammates")?;
    let store = ctx.store()?;
    // `kill '*'`, `kill all`: what kill takes, and how every teammate is ended.
    let names = super::named::teammates(ctx, &store.load()?, &args.names, "kill", "kill")?;
    ctx.reconcile(&*store)?;
    // Dead ones (their worker gone by itself) are marked stopped, not "killed".
    let mut json = Vec::new();
    // Those a `shutdown --remove-worktree` awaited: killed, not shut down, the removal is
    // dropped, said (new-user QA 44: in silence).
    let mut dropped = Vec::new();
    for (member, dead, ended) in leader::end_now(&*store, &names, "killed")? {
        let name = &member.name;
        if member.remove_worktree_on.is_some() {
            dropped.push(name.clone());
        }
        let was_running = !ended.before && !dead;
        let elsewhere = crate::backend::host::elsewhere(&member).filter(|_| was_running);
        if ctx.json {
            // "killed" as the words say it: not of a pane left open to the user, nor of a
            // worker on another host that ends itself (new-user QA: `true` beside `leftOpen`
            // where the text said "marked stopped").
            json.push(serde_json::json!({
                "name": name.as_str(),
                "killed": was_running && ended.left_open.is_empty() && elsewhere.is_none(),
                "status": "stopped",
                "leftOpen": ended.left_open,
            }));
        } else if !ended.left_open.is_empty() {
            crate::outln!(
                "{name} marked stopped; {}",
                leader::left_open_words(&ended.left_open)
            );
        } else if let Some(host) = elsewhere {
            crate::outln!(
                "{name} marked stopped; it runs on {host}, where its worker ends itself at its next heartbeat ({} s by default)",
                crate::domain::live::HEARTBEAT.as_secs()
            );
        } else if was_running {
            crate::outln!("{name} killed");
        } else if dead {
            crate::outln!("{name} was not running (dead); marked stopped");
        } else {
            crate::outln!("{name} was not running (stopped); nothing to kill");
        }
    }
    if ctx.json {
        super::named::print_json(ctx, &args.names, json);
    }
    if !dropped.is_empty() {
        leader::trees::forget(&*store, &dropped)?;
        for name in &dropped {
            crate::errln!(
                "teamctl: {name} was killed, not shut down: the removal of its worktree that `shutdown --remove-worktree` awaited is dropped; `teamctl shutdown {name} --remove-worktree` removes it now"
            );
        }
    }
    Ok(())
}
