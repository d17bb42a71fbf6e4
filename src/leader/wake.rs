//! Starting the recipients of a message that are down, so it gets handled: the leader's mail
//! brings back anyone; a teammate's never brings back one the leader stopped.

use crate::domain::{Name, Status};
use crate::error::{Error, Result};
use crate::store::{Home, RosterCache, Store};

/// Start the recipients that are down so the message gets handled, as `resume_stopped`; but a
/// teammate's mail never brings back one the team file records as stopped (shut down, killed,
/// or at its `--max-turns`): that was the leader's decision, and the mail waits for
/// `teamctl resume`. A member started on another host is never started here: its mail waits
/// too. Returns who was resumed and who was left waiting.
pub fn wake(
    home: &Home,
    me: &Name,
    store: &dyn Store,
    to: &[Name],
) -> Result<(Vec<Name>, Vec<Name>)> {
    wake_in(home, me, store, to, &mut None)
}

/// `wake`, the team file read through `cache` (read again only if it changed since).
pub fn wake_in(
    home: &Home,
    me: &Name,
    store: &dyn Store,
    to: &[Name],
    cache: &mut RosterCache,
) -> Result<(Vec<Name>, Vec<Name>)> {
    let roster = store.roster_with_cached(cache, &to.iter().collect::<Vec<_>>())?;
    let (mut wake, mut waiting) = (Vec::new(), Vec::new());
    for name in to {
        if name.is_leader() {
            wake.push(name.clone());
            continue;
        }
        // A member's full entry is parsed only when it may matter: a leader's mail wakes
        // anyone of this host, so only a store that hosts share needs to look.
        let member = if me.is_leader() && !store.spans_hosts() {
            None
        } else {
            roster.member(name.as_str())?
        };
        match member {
            // Started on another host: only that host starts it again (`resume` there, or
            // `resume --here` here).
            Some(m) if crate::backend::host::elsewhere(&m).is_some() => {
                if !super::effective_status(&m, store.live(name)?.as_ref()).is_running() {
                    waiting.push(name.clone());
                }
            }
            Some(m)
                if !me.is_leader()
                    && super::seen_status(&m, store.live(name)?.as_ref()) == Status::Stopped =>
            {
                waiting.push(name.clone());
            }
            _ => wake.push(name.clone()),
        }
    }
    Ok((resume_stopped_in(home, store, &wake, cache)?, waiting))
}

/// Start the recipients that are stopped or dead, so the message gets handled.
pub fn resume_stopped(home: &Home, store: &dyn Store, to: &[Name]) -> Result<Vec<Name>> {
    resume_stopped_in(home, store, to, &mut None)
}

/// `resume_stopped`, the team file read through `cache`.
fn resume_stopped_in(
    home: &Home,
    store: &dyn Store,
    to: &[Name],
    cache: &mut RosterCache,
) -> Result<Vec<Name>> {
    let roster = store.roster_with_cached(cache, &to.iter().collect::<Vec<_>>())?;
    let mut resumed = Vec::new();
    let mut failed = Vec::new();
    for name in to {
        if name.is_leader() {
            continue;
        }
        let Some(member) = roster.member(name.as_str())? else {
            continue;
        };
        // A running worker process carrying this member's tag is enough to know the message
        // will be handled: no need to probe its pane (one tmux process per recipient made a
        // broadcast to 300 tmux teammates take 9 s). Anything less certain takes the full check.
        let status = super::seen_status(&member, store.live(name)?.as_ref());
        if !status.is_running() || super::cut_short(&member, status) {
            // One that cannot start must not keep the others of a broadcast from starting.
            match super::resume_if_down(home, store, name, false) {
                Ok(Some(_)) => resumed.push(name.clone()),
                Ok(None) => {}
                Err(e) => failed.push(e.to_string()),
            }
        }
    }
    if !failed.is_empty() {
        for n in &resumed {
            eprintln!("teamctl: {n} was not running; resumed it");
        }
        // The message is on disk already: this is a failure to act (exit 1), not bad input.
        return Err(Error::failed(format!(
            "the message was delivered and waits in the inbox, but {}",
            failed.join("; ")
        )));
    }
    Ok(resumed)
}
