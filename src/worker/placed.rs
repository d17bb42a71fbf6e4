//! A worker serves only where teamctl placed it. A worker in a tmux pane (`$TMUX_PANE`) goes
//! on only when that pane carries its member's tag (`@teamctl-agent`, set by the leader that
//! made the pane, kept by tmux when the user re-runs the pane with `respawn-pane -k`): a
//! `teamctl worker --id NAME@TEAM` typed in a pane of the user's (`worker` is internal) would
//! otherwise wait on the member's worker lock and, on a re-run of the teammate's pane, take it
//! first and serve the teammate from a pane teamctl knows nothing of, while the re-run pane
//! died. Checked before the lock, so such a worker never holds it. A worker with no pane (the
//! process backend, an interactive teammate's companion) is not checked here.
//!
//! The leader also gives a worker's pane `TEAMCTL_PLACED` (its tag) in its environment, which
//! tmux keeps for a re-run of the pane: a worker started with it asks tmux nothing (a spawn
//! stays one tmux process). Without it (typed by hand, or placed by an older teamctl) the
//! pane's tag is asked for. Not a secret: a guard against a worker typed by mistake or copied
//! from `ps`, not against a user who sets the variable too.

use std::time::{Duration, Instant};

use crate::backend::proc;
use crate::backend::tmux::argv::{self, Server};
use crate::backend::tmux::run::{Fail, Tmux};
use crate::domain::env;
use crate::error::{Error, Result};

/// How long a worker waits for the leader to tag the pane it was just started in (the leader
/// tags it right after tmux made it, in a second tmux command, unless it was tagged as it was
/// made).
const TAGGED_WITHIN: Duration = Duration::from_secs(10);

/// What a pane carries: its id (printed back: a missing pane prints the format without one)
/// and teamctl's agent tag.
const FORMAT: &str = "#{pane_id} #{@teamctl-agent}";

/// `TEAMCTL_PLACED` as this worker was given it, taken out of its environment so that nothing
/// it starts inherits it. Called first thing, before any thread exists.
pub fn take_marker() -> Option<String> {
    let placed = std::env::var(env::PLACED).ok();
    // SAFETY: the worker has not started any thread yet (`worker::run`, first thing).
    unsafe { std::env::remove_var(env::PLACED) };
    placed
}

/// `Ok` when this worker of `agent_id` may serve: it runs in no tmux pane, or was started with
/// its tag in `TEAMCTL_PLACED` (`placed`: what `take_marker` took), or runs in a pane tagged
/// for `agent_id` of this home (or bare, by an older teamctl), waiting for the tag as long as
/// `TAGGED_WITHIN`. Refused, with the reason, in a pane tagged for another or never tagged.
pub fn check(agent_id: &str, placed: Option<String>) -> Result<()> {
    // An interactive teammate's companion runs detached; its pane is the agent's.
    if std::env::var_os(env::COMPANION_PANE).is_some() {
        return Ok(());
    }
    let Some(pane) = std::env::var("TMUX_PANE")
        .ok()
        .filter(|p| argv::is_pane_id(p))
    else {
        return Ok(());
    };
    let Some(socket) = std::env::var("TMUX")
        .ok()
        .as_deref()
        .and_then(argv::socket_of_tmux_env)
    else {
        return Ok(());
    };
    // No tmux to ask (not on this PATH): nothing can tell, as before.
    let Ok(program) = crate::backend::tmux::find_tmux() else {
        return Ok(());
    };
    let tmux = Tmux::new(program, Server::Path(socket));
    let ours = [
        argv::scoped(agent_id, &proc::home_key()),
        agent_id.to_string(),
    ];
    if placed.is_some_and(|p| p == ours[0]) {
        return Ok(());
    }
    let ask = vec![
        "display-message".to_string(),
        "-p".into(),
        "-t".into(),
        pane.clone(),
        FORMAT.into(),
    ];
    let deadline = Instant::now() + TAGGED_WITHIN;
    let mut pause = Duration::from_millis(5);
    loop {
        let tag = match tmux.run(std::slice::from_ref(&ask)) {
            Ok(out) => match out.trim_end().split_once(' ') {
                Some((id, tag)) if id == pane => tag.to_string(),
                None if out.trim_end() == pane => String::new(),
                _ => return Err(refused(agent_id, &pane, "it is gone")),
            },
            Err(Fail::Gone(_)) => return Err(refused(agent_id, &pane, "it is gone")),
            // tmux cannot be asked: nothing can tell, as before.
            Err(_) => return Ok(()),
        };
        if ours.contains(&tag) {
            return Ok(());
        }
        if !tag.is_empty() {
            return Err(refused(
                agent_id,
                &pane,
                &format!("it is tagged for {}", argv::unscoped(&tag)),
            ));
        }
        if Instant::now() >= deadline {
            return Err(refused(
                agent_id,
                &pane,
                "it carries no tag of teamctl's (not a pane teamctl made for it)",
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

fn refused(agent_id: &str, pane: &str, why: &str) -> Error {
    let name = agent_id.split_once('@').map_or(agent_id, |(n, _)| n);
    Error::failed(format!(
        "this worker of {agent_id} will not serve: it runs in tmux pane {pane}, which is not {name}'s pane ({why}); a teammate's worker runs only where teamctl placed it (`teamctl resume {name}` starts it)"
    ))
}
