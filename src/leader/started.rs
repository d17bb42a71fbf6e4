//! Whether a worker just placed (spawn, resume, up, a send that resumes) has started: the
//! leader waits, with a deadline, until the worker has written its first live state or has
//! exited, so a worker that dies at once (its lock file spoiled, its team file unreadable) is
//! reported with its reason and a non-zero exit, never as "resumed". The wait wakes on the
//! live-state doorbell (`Store::subscribe_brief`): a spawn returns as soon as its worker says
//! it runs, not at the next look (a 10 ms sleep between looks was half of a spawn's time).

use std::time::{Duration, Instant};

use crate::domain::Member;
use crate::error::{Error, Result};
use crate::store::{Store, SyncBell, Topic};

/// How long a start waits for its worker to say it runs. A worker waits up to 10 s for an
/// old worker of its member to end (`worker::only_worker`); past this the start is taken as
/// under way (`status` shows `starting`, then the worker's own word).
pub const WITHIN: Duration = Duration::from_secs(15);

/// How often the live state and the process are looked at meanwhile when no live state was
/// written: a worker that exits without one is seen within this.
const EVERY: Duration = Duration::from_millis(10);

/// How long something not a file may stand at a running worker's live state before the start
/// is reported as one whose state nobody can see (a FIFO or link there is replaced by the
/// worker within milliseconds; a directory never is).
const ODD_STATE_FOR: Duration = Duration::from_secs(1);

/// Wait until each of `members` (just placed: their recorded pid is the new worker's) has
/// written its first live state, or has exited; for each, in order, `Err` with the worker's
/// own reason when it exited first. One still starting at the deadline counts as started.
pub fn started(store: &dyn Store, members: &[Member]) -> Vec<Result<()>> {
    let deadline = Instant::now() + WITHIN;
    // Armed only when a first look finds a worker still starting (one a start placed has
    // usually said it runs by then: `worker::placed`), then looked at again: a state written
    // after the arming rings.
    let mut bell: Option<(SyncBell, Option<crate::store::Subscription>)> = None;
    let mut out: Vec<Option<Result<()>>> = members.iter().map(|_| None).collect();
    let mut odd_since: Vec<Option<Instant>> = members.iter().map(|_| None).collect();
    loop {
        for ((m, slot), odd) in members.iter().zip(out.iter_mut()).zip(odd_since.iter_mut()) {
            if slot.is_some() {
                continue;
            }
            *slot = look(store, m);
            if slot.is_none() {
                // Running, no state of its own yet: a directory at its live state keeps it so
                // for good (attacker QA: resume waited the whole 15 s, then said "resumed").
                match store.live_problem(&m.name) {
                    Some(problem) => {
                        let since = *odd.get_or_insert_with(Instant::now);
                        if since.elapsed() >= ODD_STATE_FOR {
                            *slot = Some(Err(unseen(m, &problem)));
                        }
                    }
                    None => *odd = None,
                }
            }
        }
        if out.iter().all(Option::is_some) || Instant::now() >= deadline {
            return out.into_iter().map(|r| r.unwrap_or(Ok(()))).collect();
        }
        match &bell {
            Some((bell, _)) => {
                bell.wait_until((Instant::now() + EVERY).min(deadline));
            }
            None => {
                let b = SyncBell::default();
                let sub = store.subscribe_brief(&[Topic::Live], b.bell()).ok();
                bell = Some((b, sub));
            }
        }
    }
}

/// A start's error as a failure of that member alone, said beside the others' (`resume` and
/// `up` go on to the next: new-user QA, a tmux client killed during one start ended them
/// there, the rest not started and not named); `Err` for one that ends the command (bad
/// input, an interruption).
pub fn failure_of_one(e: Error) -> Result<String> {
    match e {
        Error::Failed(_) | Error::Io { .. } => Ok(e.to_string()),
        e => Err(e),
    }
}

/// `started` for one member.
pub fn started_one(store: &dyn Store, member: &Member) -> Result<()> {
    started(store, std::slice::from_ref(member)).remove(0)
}

/// What is known of `member`'s new worker now: `None` while it is starting. One placed with
/// no pid of its worker is not waited for. An interactive teammate's worker is its companion
/// beside the agent's pane: waited for as any (it writes its state once it has seen the
/// agent's program run, or why it ended: a program that exits at once fails the start with
/// its exit status and last output; it was "spawned", exit 0: new-user QA).
fn look(store: &dyn Store, member: &Member) -> Option<Result<()>> {
    let Some(pid) = member.pid else {
        return Some(Ok(()));
    };
    let ours = |store: &dyn Store| {
        store
            .live(&member.name)
            .ok()
            .flatten()
            .filter(|l| l.pid == pid)
    };
    if let Some(live) = ours(store) {
        return Some(match live.exit_reason {
            Some(why) => Err(died(member, &why)),
            None => {
                // Started, but what it is sent cannot go in yet: said now, not left for the
                // user to find in `status` (new-user QA).
                if let Some(why) = &live.mail_waits {
                    crate::errln!(
                        "teamctl: warning: {name} runs, but {}; its mail waits until its prompt shows (`teamctl attach {name}` shows its pane)",
                        crate::output::printable(why),
                        name = member.name,
                    );
                }
                Ok(())
            }
        });
    }
    if crate::backend::proc::running(pid) {
        return None;
    }
    // Gone: its reason may have been written just before it went.
    Some(Err(match ours(store).and_then(|l| l.exit_reason) {
        Some(why) => died(member, &why),
        None => Error::failed(format!(
            "{name}'s worker exited as soon as it started, saying nothing in its live state; see `teamctl log {name}`{pane}",
            name = member.name,
            pane = member
                .pane_id
                .as_deref()
                .map(|p| format!(" or its pane {p}"))
                .unwrap_or_default()
        )),
    }))
}

/// A worker that runs but cannot write its live state: `status` and `wait` cannot see it.
fn unseen(member: &Member, problem: &str) -> Error {
    Error::failed(format!(
        "{name}'s worker runs (pid {pid}) but cannot write its live state: {}; `status` and `wait` cannot see it until that is moved away (`teamctl doctor`)",
        crate::output::printable(problem),
        name = member.name,
        pid = member.pid.unwrap_or_default(),
    ))
}

fn died(member: &Member, why: &str) -> Error {
    let who = if member.interactive.is_some() {
        format!("{} (interactive)", member.name)
    } else {
        format!("{}'s worker", member.name)
    };
    Error::failed(format!(
        "{who} exited as soon as it started: {}",
        crate::output::printable(why)
    ))
}
