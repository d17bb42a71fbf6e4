//! `teamctl kill NAME`: end the teammate and its pane now, without the handshake. Killing a
//! teammate that is already stopped changes nothing and says so; a pane the user took over
//! (respawned with a program of theirs) is left open, and it says that rather than "killed".

use crate::cli::NameArg;
use crate::context::Ctx;
use crate::domain::Name;
use crate::error::Result;
use crate::leader;

pub fn run(ctx: &Ctx, args: &NameArg) -> Result<()> {
    ctx.require_leader("kill teammates")?;
    // `kill '*'`, `kill all`: what kill takes, and how every teammate is ended.
    let hint = |e| super::mistaken::to_end("kill", &args.name, e);
    let name = Name::teammate_to_end(&args.name, "kill").map_err(hint)?;
    let store = ctx.store()?;
    store.load()?.require(name.as_str()).map_err(hint)?;
    ctx.reconcile(&*store)?;
    // Loaded again: acting on a shutdown answer may just have stopped it.
    let member = store.load()?.require(name.as_str())?.clone();
    let ended = leader::end_member(&*store, &member, "killed")?;
    let was_running = !ended.before;
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "name": name.as_str(),
            "killed": was_running,
            "status": "stopped",
            "leftOpen": ended.left_open,
        }));
    } else if !ended.left_open.is_empty() {
        crate::outln!(
            "{name} marked stopped; {}",
            leader::left_open_words(&ended.left_open)
        );
    } else if let Some(host) = crate::backend::host::elsewhere(&member).filter(|_| was_running) {
        crate::outln!(
            "{name} marked stopped; it runs on {host}, where its worker ends itself at its next heartbeat ({} s by default)",
            crate::domain::live::HEARTBEAT.as_secs()
        );
    } else if was_running {
        crate::outln!("{name} killed");
    } else {
        crate::outln!("{name} was not running (stopped); nothing to kill");
    }
    Ok(())
}
