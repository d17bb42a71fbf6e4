//! Leader-side operations shared by the commands and the console: starting a worker (spawn,
//! resume, and `wake` for mail to a stopped teammate), telling idle from dead, ending a
//! teammate, the shutdown handoff (`handoff`), and acting on shutdown responses (SPEC
//! section 7) whichever leader command runs next.

pub mod handoff;
mod skip;
mod started;
pub mod trees;
mod wake;

use std::collections::HashMap;

use crate::backend::{self, Backend, Launch, Liveness};
use crate::domain::{Body, Envelope, Host, LEADER, LiveState, Member, Name, Status};
use crate::error::{Error, Result};
use crate::store::{Held, Home, Item, LockKey, LockLook, Position, RosterCache, Store};
pub use skip::{Skipped, check_skip, skip_turn};
pub use started::{failure_of_one, started, started_one};
pub use wake::{
    Before, PausedTurn, StoppedGroups, Woken, died_in_unhandled_turn, left_waiting, paused_turn,
    paused_turn_words, paused_words, paused_worker, resume_stopped, say_resumed, wake, wake_each,
};

/// The leader's cursor for acting on protocol messages (separate from what `inbox` shows).
pub const PROTOCOL_READER: &str = "protocol";

/// Whether `member`'s plan approval request `request_id` still waits for the leader: it is
/// `awaiting_plan_approval` on that request (`awaited_plan`) and no leader response to it is in
/// its inbox at or after its worker's cursor (the console showing an old request as answered).
pub fn plan_pending(store: &dyn Store, member: &Member, request_id: &str) -> bool {
    awaited_plan(store, member).is_some_and(|w| w.is(request_id))
        && !plan_answered(store, member, request_id)
}

/// The plan approval request a member waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Awaited {
    /// The one its live state names.
    Request(String),
    /// Its latest: a worker of an older teamctl names none.
    Latest,
}

impl Awaited {
    /// Whether a request with `id` may be the one waited on.
    pub fn is(&self, id: &str) -> bool {
        match self {
            Awaited::Request(r) => r == id,
            Awaited::Latest => true,
        }
    }
}

/// What `member` waits on, when it is `awaiting_plan_approval`. Read before the leader's inbox
/// is, a named request is in it: the worker sends the request before it says it waits.
pub fn awaited_plan(store: &dyn Store, member: &Member) -> Option<Awaited> {
    let live = store.live(&member.name).ok().flatten();
    (effective_status(member, live.as_ref()) == Status::AwaitingPlanApproval).then(|| {
        live.and_then(|l| l.plan_request)
            .map_or(Awaited::Latest, Awaited::Request)
    })
}

/// Whether a leader response to `request_id` is in `member`'s inbox at or after its worker's
/// cursor.
pub fn plan_answered(store: &dyn Store, member: &Member, request_id: &str) -> bool {
    let from = store
        .cursor(&member.name, crate::worker::READER)
        .unwrap_or_default();
    crate::store::entries(store, &member.name, from)
        .map_while(|e| e.ok())
        .any(|e| {
            matches!(&e.item, Item::Message(env)
                if env.from == LEADER
                    && matches!(&env.body, Body::PlanApprovalResponse { request_id: r, .. } if r == request_id))
        })
}

/// A member's state as a person should see it: the worker's own word, checked against the
/// pane or process, so idle and dead are never confused.
pub fn effective_status(member: &Member, live: Option<&LiveState>) -> Status {
    status_given(member, live, || {
        backend::for_member(member).liveness(member, live)
    })
}

/// `effective_status` judged from `seen`, one reading of the whole team's panes and
/// processes: for views of every member (one tmux process per server, not per member), and
/// what `status`, `wait`, `shutdown` and `doctor` say; a start cut short is told from one under
/// way by `store` (`settled_status`).
pub fn effective_status_with(
    store: &dyn Store,
    member: &Member,
    live: Option<&LiveState>,
    seen: &backend::Snapshot,
) -> Status {
    let status = status_given(member, live, || seen.liveness(member, live));
    settled_status(store, member, status)
}

/// The live state that speaks for `member`: its recorded worker's (the team file's pid, or no
/// pid recorded), or, while it is `running`, that of another worker of it that runs (tag
/// checked: started by hand from its pane's shell, say, which cannot take the pane back).
pub fn speaking_live<'a>(
    member: &Member,
    live: Option<&'a LiveState>,
    running: bool,
) -> Option<&'a LiveState> {
    live.filter(|l| {
        member.pid.is_none_or(|p| p == l.pid)
            || (running && backend::proc::is_worker(l.pid, &member.agent_id))
    })
}

/// `effective_status`, the worker's liveness asked of `liveness` only when needed.
fn status_given(
    member: &Member,
    live: Option<&LiveState>,
    liveness: impl FnOnce() -> Liveness,
) -> Status {
    if member.name.is_leader() {
        return Status::Active;
    }
    if let Some(host) = backend::host::elsewhere(member) {
        return leased_status(member, host, live, crate::domain::time::now_ms());
    }
    let fresh = speaking_live(member, live, false);
    // No pane or pid recorded, yet the worker runs (its start was cut short after placing it:
    // a killed `spawn`): the worker's own word, its process tag checked (this home's), so a
    // running worker is never "dead" nor started a second time.
    if member.pid.is_none()
        && member.pane_id.is_none()
        && let Some(l) = live.filter(|l| backend::proc::is_worker(l.pid, &member.agent_id))
    {
        return match l.status {
            Status::Stopped => Status::ShutdownPending,
            s => s,
        };
    }
    // Recorded by `spawn` but not yet placed: the worker is being started (a spawn that died
    // there is dead after a minute).
    if member.status == Status::Starting
        && member.pid.is_none()
        && member.pane_id.is_none()
        && crate::domain::time::now_ms().saturating_sub(member.joined_at) < 60_000
    {
        return Status::Starting;
    }
    match liveness() {
        // The live state of the worker the team file records, or of another worker of this
        // member that runs (started by hand, from its pane's shell, say, which cannot take the
        // pane back: it said "starting" for as long as it ran, attacker QA 41).
        Liveness::Alive => match speaking_live(member, live, true) {
            Some(l) if l.status == Status::Stopped => Status::ShutdownPending,
            Some(l) => l.status,
            None => Status::Starting,
        },
        Liveness::Gone => {
            if member.status == Status::Stopped
                || fresh.is_some_and(|l| l.status == Status::Stopped)
            {
                Status::Stopped
            } else {
                Status::Dead
            }
        }
    }
}

/// The state of a member whose worker runs on another host: its own word while its lease
/// holds (renewed by its heartbeat), else stopped or dead as the records say. Nothing on this
/// host is asked.
fn leased_status(member: &Member, host: &Host, live: Option<&LiveState>, now: u64) -> Status {
    let fresh = live.filter(|l| member.pid.is_none_or(|p| p == l.pid));
    match fresh {
        // Marked stopped (shut down, or killed from here: its worker ends itself at its next
        // heartbeat): stopped, whatever its lease still says.
        _ if member.status == Status::Stopped
            || fresh.is_some_and(|l| l.status == Status::Stopped) =>
        {
            Status::Stopped
        }
        Some(l) if backend::host::leased(l, now) => l.status,
        // Recorded as started there, not yet heard of: starting for a minute, as here.
        None if member.status == Status::Starting && now.saturating_sub(host.since) < 60_000 => {
            Status::Starting
        }
        _ => Status::Dead,
    }
}

/// `effective_status` for views refreshed on every change (the console's status line): a
/// worker process that runs and carries the member's tag (`/proc` only) is taken at its own
/// word, without asking its backend. On tmux that question is one `tmux` process per member,
/// and the console asked it for every member on every change: spawning 300 teammates made
/// tens of thousands of them. Anything less certain takes the full check.
pub fn seen_status(member: &Member, live: Option<&LiveState>) -> Status {
    let running = live.filter(|l| {
        !member.name.is_leader()
            && backend::host::elsewhere(member).is_none()
            && member.pid.is_none_or(|p| p == l.pid)
            && backend::proc::is_worker(l.pid, &member.agent_id)
    });
    match running {
        Some(l) if l.status == Status::Stopped => Status::ShutdownPending,
        Some(l) => l.status,
        None => effective_status(member, live),
    }
}

/// What views show of a member in `status` (as told by `effective_status` or `seen_status`):
/// one the leader asked to stop, still running, as `shutdown_pending` until it answers.
pub fn shown_status(member: &Member, status: Status) -> Status {
    if member.shutdown_request_id.is_some() && status.is_running() {
        Status::ShutdownPending
    } else {
        status
    }
}

/// Start `name`'s worker on `backend` and record where it went.
pub fn start_worker(
    home: &Home,
    store: &dyn Store,
    name: &Name,
    backend: &dyn Backend,
) -> Result<Member> {
    start_worker_in(home, store, &mut None, name, backend, None)
}

/// `start_worker`, the team file read through `cache` (the caller just wrote it, with the
/// member: not read again) and the placement recorded through it, one entry changed
/// (`Store::update_member`: with 1,000 members the others are not parsed or written anew).
/// `word`: the placement's word (`Member::pane_nonce`) the caller recorded with the entry it
/// just wrote, under the start lock (`spawn`: a fresh entry, nothing else to change before
/// the worker is placed): the record is then not written again before the pane is made (one
/// write of the team file fewer per spawn, 400 KB with 1,000 members).
pub fn start_worker_in(
    home: &Home,
    store: &dyn Store,
    cache: &mut RosterCache,
    name: &Name,
    backend: &dyn Backend,
    word: Option<&str>,
) -> Result<Member> {
    // The server goes into the record before the pane is made (see `spawn::start`). On a
    // store that hosts share, so does this host: the worker's heartbeat ends a worker whose
    // member another host has taken over, and must not end the one starting here.
    let roster = store.roster_cached(cache)?;
    roster.require(name.as_str())?;
    let member = roster
        .member(name.as_str())?
        .expect("a member, checked above");
    let previous_host = member.host.clone();
    let socket = backend.tmux_socket();
    let host = store
        .spans_hosts()
        .then(|| backend::host::here(home.root(), crate::domain::time::now_ms()));
    let new_socket = member.tmux_socket != socket && member.pane_id.is_none();
    // The placement's random word (`Member::pane_nonce`) is recorded before anything is made
    // (set on the pane with its tags, given to the worker's turns): a pane this start makes
    // is teamctl's by its record even when the start is cut short (killed, or its last write
    // failed) before it recorded the pane.
    let recorded = word.filter(|w| {
        member.pane_nonce.as_deref() == Some(*w)
            && !new_socket
            && host.is_none()
            && member.shutdown_request_id.is_none()
    });
    let nonce = recorded.map_or_else(new_word, String::from);
    let previous_nonce = member.pane_nonce.clone();
    let (previous_pane, previous_pid) = (member.pane_id.clone(), (member.pid, member.pid_started));
    // A shutdown request still awaited is given up before the new worker can read it: that
    // worker answers only the request the record names (`worker::shutdown`), and one of a
    // worker gone is nobody's to answer (cleared after the start as well, as always).
    let roster = if recorded.is_some() {
        roster
    } else {
        store.update_member(cache, name, &mut |_, _, slot| {
            if let Some(m) = slot {
                if new_socket {
                    m.tmux_socket = socket.clone();
                }
                if host.is_some() {
                    m.host = host.clone();
                }
                m.shutdown_request_id = None;
                m.pane_nonce = Some(nonce.clone());
                // The word is this start's from now on, never the old pane's or worker's: a
                // worker holding it is taken only where the record names no other place
                // (`worker::placed`; attacker QA: a word copied from the record served a
                // killed member from a pane or process of the attacker's).
                m.pane_id = None;
                m.pid = None;
                m.pid_started = None;
            }
            Ok(())
        })?
    };
    roster.require(name.as_str())?;
    let member = roster
        .member(name.as_str())?
        .expect("a member, checked above");
    let fill = roster.head().tmux_fill.clone();
    let leader_cwd = roster
        .member(LEADER)
        .ok()
        .flatten()
        .map(|l| std::path::PathBuf::from(l.cwd))
        .filter(|d| d.is_dir());
    // The teammate runs with this (the leader's) environment, not the tmux server's. A start
    // from inside a teammate's turn (a `send` resuming a stopped teammate) keeps the one
    // recorded: this environment is that turn's (`TEAMCTL_AGENT_ID` set: `context::Turn`).
    if std::env::var_os("TEAMCTL_AGENT_ID").is_none_or(|v| v.is_empty()) {
        crate::store::envfile::record(store, name, std::env::vars_os())?;
    }
    // What it runs is this host's own word on a store that hosts share (`store::spec`).
    let mut run_as = member.clone();
    let placed = crate::store::spec::overlay(store, &mut run_as).and_then(|()| {
        run_as.pane_nonce = Some(nonce.clone());
        if run_as.interactive.is_some() {
            // The agent's own start reads the whole team (its team prompt).
            crate::interactive::start(home, store, &store.load()?, &run_as, backend)
        } else {
            let mut launch = Launch::new(home.root(), store.team(), &run_as, store.log_path(name))?;
            launch.fill = fill;
            launch.nonce = Some(nonce.clone());
            if let Some(dir) = leader_cwd {
                launch.console_cwd = dir;
            }
            backend.spawn(&launch)
        }
    });
    let placement = match placed {
        Ok(p) => p,
        Err(e) => {
            // What the failed start made all the same (its tmux client killed, by a Ctrl-C
            // say, after the server made the pane: attacker QA, the worker and its pane ran
            // on, the member forgotten) is ended, found by this start's word: on the panes it
            // tagged, and in the environment of every process it started.
            end_made(backend, &run_as, &backend.left_by(&run_as, &nonce), &nonce);
            // Nothing started: a member that was to move here stays where it was, and keeps
            // the word of the pane it has (if any).
            let _ = store.update(&mut |cfg| {
                if let Some(m) = cfg.member_mut(name.as_str()) {
                    if host.is_some() && previous_host != host {
                        m.host = previous_host.clone();
                    }
                    if m.pane_nonce.as_deref() == Some(nonce.as_str()) {
                        m.pane_nonce = previous_nonce.clone();
                        if m.pane_id.is_none() && m.pid.is_none() {
                            m.pane_id = previous_pane.clone();
                            (m.pid, m.pid_started) = previous_pid;
                        }
                    }
                }
                Ok(())
            });
            return Err(e);
        }
    };
    crate::pause::at("placed");
    let recorded = record_placement(store, cache, name, backend, &mut run_as, &placement);
    if recorded.is_err() {
        // No pane or process of teamctl's outlives a start it could not record: what was
        // just made is ended (its worker, waiting for the record, serves nothing yet).
        end_made(backend, &run_as, std::slice::from_ref(&placement), &nonce);
    }
    recorded
}

/// End what a start of `run_as` made (`placements`) and did not keep, its panes closed by the
/// word this start set on them (`nonce`), and every process carrying that word (a pane the
/// start could not tag, or none recorded: `Ending::placed`).
fn end_made(
    backend: &dyn Backend,
    run_as: &Member,
    placements: &[backend::Placement],
    nonce: &str,
) {
    let mut ending = backend::ending::Ending::new(backend::GRACE);
    for placement in placements {
        let mut made = run_as.clone();
        made.backend_type = Some(backend.kind());
        made.pane_id = placement.pane_id.clone();
        made.pid = placement.pid;
        made.pane_nonce = placement.nonce.clone().or_else(|| Some(nonce.to_string()));
        made.tmux_socket = placement.tmux_socket.clone();
        let _ = backend.terminate_in(&made, None, &mut ending);
    }
    ending.placed(&run_as.agent_id, nonce);
    let _ = ending.finish();
}

/// A placement's random word (`Member::pane_nonce`).
pub fn new_word() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A teammate whose worker serves from a tmux pane its record does not name: its start was
/// cut short (a `spawn` killed, or Ctrl-C, after making the pane and before recording it),
/// while the worker, taken at that start's word (`worker::placed`), went on. Recorded now
/// (its pane and pid), under the member's start lock, only when tmux says that pane runs that
/// very worker, tagged for it with the word the record holds. The pane recorded, or `None`
/// when the member is not such a teammate. (New-user QA: `status` showed no pane, `attach`
/// said the pane was gone and sent the user to `resume`, which said "already running".)
pub fn record_unrecorded(store: &dyn Store, name: &Name) -> Result<Option<String>> {
    let _starting = start_lock(store, name)?;
    let member = store.load()?.require(name.as_str())?.clone();
    if member.pane_id.is_some()
        || member.pid.is_some()
        || member.backend_type != Some(crate::domain::BackendType::Tmux)
    {
        return Ok(None);
    }
    let (Some(word), Some(live)) = (member.pane_nonce.clone(), store.live(name)?) else {
        return Ok(None);
    };
    let Some(pane) = live.pane_id.clone() else {
        return Ok(None);
    };
    if !backend::proc::is_worker(live.pid, &member.agent_id) {
        return Ok(None);
    }
    let tmux = backend::tmux::TmuxBackend::for_member(&member);
    let ours = tmux.probe(&pane).is_some_and(|p| {
        !p.dead && p.pid == Some(live.pid) && p.nonce == word && p.tag == tmux.tag(&member.agent_id)
    });
    if !ours {
        return Ok(None);
    }
    let mut done = false;
    store.update_member(&mut None, name, &mut |_, _, slot| {
        if let Some(m) = slot.as_mut()
            && m.pane_id.is_none()
            && m.pid.is_none()
            && m.pane_nonce.as_deref() == Some(word.as_str())
        {
            m.pane_id = Some(pane.clone());
            m.pid = Some(live.pid);
            m.pid_started = Some(
                live.start_ticks
                    .unwrap_or_else(|| backend::proc::recorded_start(live.pid)),
            );
            done = true;
        }
        Ok(())
    })?;
    Ok(done.then_some(pane))
}

/// Record where a worker `start_worker_in` started went (`placement`).
fn record_placement(
    store: &dyn Store,
    cache: &mut RosterCache,
    name: &Name,
    backend: &dyn Backend,
    run_as: &mut Member,
    placement: &backend::Placement,
) -> Result<Member> {
    let kind = backend.kind();
    // Where it went is this host's own word too: a resume places it there again.
    if store.spans_hosts() {
        run_as.backend_type = Some(kind);
        run_as.tmux_socket = placement.tmux_socket.clone();
        crate::store::spec::save(store, run_as)?;
    }
    // Kept for a worker without a pane too: its turns carry it (`worker::agent_turn`).
    let word = run_as.pane_nonce.clone();
    // Not made durable before `spawn` returns (`Store::update_member_revertible`): a crash
    // that loses it ends the pane or process it names too, and the member is then as it was
    // before this start (recorded durably by `spawn`, or by the last change), dead, resumable.
    let updated = store.update_member_revertible(cache, name, &mut |_, head, slot| {
        // Also replaces the session an older teamctl recorded (`teamctl-TEAM`, no home key).
        if placement.tmux_session.is_some() && head.tmux_session != placement.tmux_session {
            head.tmux_session = placement.tmux_session.clone();
        }
        if placement.fill.is_some() {
            head.tmux_fill = placement.fill.clone();
        }
        let m = slot
            .as_mut()
            .ok_or_else(|| Error::failed(format!("{name} left the team while starting")))?;
        m.backend_type = Some(kind);
        m.pane_id = placement.pane_id.clone();
        m.pid = placement.pid;
        // Read now: the process was just started (and, on the process backend, is not reaped
        // before this leader exits), so this is its start time, not a later process's.
        m.pid_started = placement.pid.map(backend::proc::recorded_start);
        m.pane_nonce = placement.nonce.clone().or_else(|| word.clone());
        m.tmux_socket = placement.tmux_socket.clone();
        m.status = Status::Starting;
        m.shutdown_request_id = None;
        Ok(())
    })?;
    updated.require(name.as_str())?;
    Ok(updated
        .member(name.as_str())?
        .expect("a member, checked above"))
}

/// Held while a teammate's worker is being started (spawn, resume). Until the worker is
/// recorded, a teammate just added looks dead; a second start (a `send` racing a `spawn`, two
/// resumes) waits here and then finds the first one's worker running, so there is never a
/// second worker on one inbox.
pub fn start_lock(store: &dyn Store, name: &Name) -> Result<Held> {
    store.lock(&LockKey::Start(name.clone()))
}

/// Do `f` with the member `name` only while it is down, under its start lock: every start
/// (`resume`, a send's resume, a re-`spawn`) takes that lock first, so none begins in what
/// `f` removes meanwhile (attacker QA 42: `doctor --fix` removed the worktree of a teammate
/// a send had resumed since doctor looked). `Ok(Err(up))`: it runs now, `f` not called.
pub fn while_down<T>(
    store: &dyn Store,
    name: &Name,
    f: impl FnOnce(&Member) -> Result<T>,
) -> Result<std::result::Result<T, Up>> {
    // A start under way holds the lock: it is starting, and is not waited for (a lock held
    // for good had `doctor --fix` and `shutdown --remove-worktree` wait for ever, attacker
    // QA 43). A store that cannot tell is waited on.
    if store.lock_held(&LockKey::Start(name.clone())) == Some(true) {
        return Ok(Err(Up::Starting));
    }
    let _starting = start_lock(store, name)?;
    let config = store.load()?;
    let member = config.require(name.as_str())?;
    let status = effective_status(member, store.live(name)?.as_ref());
    if status.is_running() && !cut_short(member, status) {
        return Ok(Err(Up::Is(status)));
    }
    // The records say down; a worker of it that runs says otherwise (records written over by
    // hand, attacker QA 43).
    // By its recorded id and by the one its name and team make (a recorded id written over
    // hid the worker, attacker re-check 43).
    let named = name.agent_id(&config.name);
    if backend::host::elsewhere(member).is_none()
        && backend::proc::pids().any(|p| {
            backend::proc::is_worker(p, &member.agent_id) || backend::proc::is_worker(p, &named)
        })
    {
        return Ok(Err(Up::WorkerRuns));
    }
    f(member).map(Ok)
}

/// Why `while_down` found a teammate up, in words after its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Up {
    Is(Status),
    /// Its start lock is held: a start of it is under way.
    Starting,
    /// Recorded down, yet a worker process of it runs.
    WorkerRuns,
}

impl std::fmt::Display for Up {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Up::Is(status) => write!(f, "is {status}"),
            Up::Starting => f.write_str("is being started"),
            Up::WorkerRuns => f.write_str("has a worker running"),
        }
    }
}

/// `status` (from `effective_status`) is "starting" only because the member was recorded
/// and never placed: no pane, no pid, no worker process carrying its tag. Seen under the start
/// lock (which the recording `spawn` holds until the worker is recorded), that start was cut
/// short (a killed `spawn`): the member is down and may be started, not "starting" for a minute.
pub fn cut_short(member: &Member, status: Status) -> bool {
    unplaced(member, status) && !worker_runs(member)
}

/// "starting" with no pane and no pid recorded: a start under way, or one cut short.
fn unplaced(member: &Member, status: Status) -> bool {
    status == Status::Starting && member.pid.is_none() && member.pane_id.is_none()
}

/// Whether some process carrying `member`'s worker tag runs (a walk of /proc).
fn worker_runs(member: &Member) -> bool {
    backend::proc::pids().any(|p| backend::proc::is_worker(p, &member.agent_id))
}

/// `status` as views show it: "starting" only while a start of the member is under way. One
/// recorded and never placed whose start lock is free, with no worker carrying its tag
/// (`cut_short`), was started by a `spawn` or `resume` that was killed: dead, resumable, not
/// "starting" for a minute (new-user QA). The lock is asked first: a start that lets it go
/// has its worker running by then, which `cut_short` sees.
pub fn settled_status(store: &dyn Store, member: &Member, status: Status) -> Status {
    if unplaced(member, status)
        && store.lock_held(&LockKey::Start(member.name.clone())) == Some(false)
        && !worker_runs(member)
    {
        Status::Dead
    } else {
        status
    }
}

/// Bring back a stopped or dead teammate with the same identity, backend and cursor, saying
/// whether a worker was started (`None`: it was running already, perhaps started by a
/// concurrent spawn or resume this call waited for). A member last started on another host
/// is started here only with `here` (`resume --here`), once its lease says nothing of it runs
/// there; its old worker, should it come back, ends itself (`worker::heartbeat`).
pub fn resume_if_down(
    home: &Home,
    store: &dyn Store,
    name: &Name,
    here: bool,
) -> Result<Option<Member>> {
    let _starting = start_lock(store, name)?;
    let config = store.load()?;
    // Checked under the start lock, which `delete` takes after its mark: a start either sees
    // the mark or is over (and recorded) before `delete` ends this teammate.
    config.refuse_if_deleting()?;
    let member = config.require(name.as_str())?;
    let live = store.live(name)?;
    let status = effective_status(member, live.as_ref());
    if status.is_running() && !cut_short(member, status) {
        return Ok(None);
    }
    crate::pause::at("resume-down");
    // Its worker would end at once, its cursor file spoiled (a FIFO or link planted there:
    // `worker::watch::read_cursor`): said here, not only in its log.
    store
        .own_cursor(name, crate::worker::READER)
        .map_err(|e| {
            Error::failed(format!(
                "cannot resume {name}: cannot tell where its inbox was handled to ({e}); its worker would run handled messages again. Removing that file has the inbox read from its start (handled messages then run again)"
            ))
        })?;
    let elsewhere = backend::host::elsewhere(member);
    if let Some(host) = elsewhere
        && !here
    {
        return Err(Error::failed(format!(
            "{name} was started on {host} and is {status} there; resume it on that host, or `teamctl resume {name} --here` to start it on this one"
        )));
    }
    let mut run_as = member.clone();
    if here
        && store.spans_hosts()
        && (elsewhere.is_some() || crate::store::spec::overlay(store, &mut run_as).is_err())
    {
        // Moved here, or started here again without this host's own copy of what it runs
        // (this home left the team and joined again): this host takes what the shared
        // record says, all of it shown. (A member this host has its own copy of keeps it.)
        // Moved here, it goes to this host's own tmux server, not the one the other host
        // recorded: that one is not shown as if it were used.
        let mut shown = crate::domain::Spec::of(member);
        if elsewhere.is_some() {
            shown.tmux_socket = None;
        }
        crate::errln!(
            "teamctl: {name} will run here as the shared team file records it:\n{}",
            shown.describe().trim_end()
        );
        crate::store::spec::save(store, member)?;
        run_as = member.clone();
    }
    // What it runs, its worktree and where it was placed included, is this host's own word
    // (`store::spec`), never the shared file's alone.
    crate::store::spec::overlay(store, &mut run_as)?;
    let backend = if elsewhere.is_some() {
        // Moved here: this host's own server (the recorded one is the other host's).
        backend::select(match run_as.backend_type {
            Some(crate::domain::BackendType::Tmux) => backend::Choice::Tmux,
            _ => backend::Choice::Process,
        })?
    } else {
        // Leftovers of the old worker (a dead pane kept for reading, a stray agent) go first,
        // tag checked; then the same backend and server (a new session there if it is gone).
        let old = backend::for_member(&run_as);
        old.terminate(&run_as, live.as_ref(), backend::GRACE)?;
        old
    };
    // A worktree removed since (`shutdown --remove-worktree`, `doctor --fix`) is made again.
    if let Some(made) = crate::worktree::restore(&run_as, &store.local_dir())? {
        crate::errln!("{}", crate::worktree::restored_note(&run_as, &made));
    }
    start_worker(home, store, name, backend.as_ref()).map(Some)
}

/// What ending a teammate (`end_members_noting`) found of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// It had ended already (the leader recorded it stopped and nothing of it ran).
    pub before: bool,
    /// Its panes found to be the user's now (respawned with a program of theirs): left open,
    /// teamctl's tags taken off them.
    pub left_open: Vec<String>,
}

/// End teammates now (pane or process group, then its turn), mark them stopped, hand their
/// unfinished tasks back and tell the leader's inbox; many at once (`kill a b`, `shutdown
/// --all --force`, `delete`): one write of
/// the team file marks them all stopped, their workers end together (`backend::Ending`: one
/// grace for all, one walk of `/proc`), one write of the task list hands their tasks back.
/// Returns, for each, whether it had ended already (recorded stopped, nothing of it running).
pub fn end_members(store: &dyn Store, members: &[Member], why: &str) -> Result<Vec<bool>> {
    end_members_noting(store, members, why).map(|e| e.into_iter().map(|e| e.before).collect())
}

/// End the teammates `names` now (`kill`, `shutdown --force`), each under its start lock, a
/// batch at a time (`START_LOCKS_AT_ONCE`): a start under way (a `spawn`, a `resume`) is
/// waited for and what it placed is ended, where ending them beside it left the start to
/// place a worker after the kill and report it started, the kill's "stopped" lost (attacker
/// QA: the teammate then showed dead, and a teammate's message brought it back). For each, in
/// the order given: the member as it was, whether it was dead (`dead_ones`), what ending found.
pub fn end_now(store: &dyn Store, names: &[Name], why: &str) -> Result<Vec<(Member, bool, Ended)>> {
    let mut out = Vec::with_capacity(names.len());
    for batch in names.chunks(START_LOCKS_AT_ONCE) {
        let batch_refs: Vec<&Name> = batch.iter().collect();
        say_starts_waited(store, &batch_refs, "to end it");
        let _starting = start_locks(store, &batch_refs)?;
        let members = store.load()?.require_all(batch)?;
        let dead = dead_ones(store, &members);
        let ended = end_members_noting(store, &members, why)?;
        out.extend(
            members
                .into_iter()
                .zip(dead)
                .zip(ended)
                .map(|((m, d), e)| (m, d, e)),
        );
    }
    Ok(out)
}

/// For each of `members` (in order), whether its worker is gone by itself (dead, on this host):
/// what `kill` and `shutdown` say of it is "was not running (dead); marked stopped", not that
/// they ended it (attacker QA: "d killed" of a worker gone a while). One look at their panes.
pub fn dead_ones(store: &dyn Store, members: &[Member]) -> Vec<bool> {
    let seen = backend::Snapshot::of(members.iter());
    members
        .iter()
        .map(|m| {
            backend::host::elsewhere(m).is_none()
                && effective_status_with(
                    store,
                    m,
                    store.live(&m.name).ok().flatten().as_ref(),
                    &seen,
                ) == Status::Dead
        })
        .collect()
}

/// `end_members`, saying for each (in `members` order) whether it had ended already, and the
/// panes of its left open to the user (`Ended::left_open`), so `kill` and `shutdown` can say
/// so.
pub fn end_members_noting(store: &dyn Store, members: &[Member], why: &str) -> Result<Vec<Ended>> {
    let seen = backend::Snapshot::of(members);
    let mut lives = Vec::with_capacity(members.len());
    let mut ended_before = Vec::with_capacity(members.len());
    for m in members {
        let live = store.live(&m.name)?;
        ended_before.push(
            m.status == Status::Stopped
                && !effective_status_with(store, m, live.as_ref(), &seen).is_running(),
        );
        lives.push(live);
    }
    // Recorded first: whoever watches (`wait`, `ask`) sees it stopped the moment its worker
    // is gone, never "dead" in between.
    let names: Vec<&Name> = members.iter().map(|m| &m.name).collect();
    mark_all_stopped(store, &names)?;
    // A worker of another host is not ours to end: it reads the mark on its next heartbeat
    // and ends itself, closing its own pane there (`worker::heartbeat`).
    let mut ending = backend::Ending::new(backend::GRACE);
    for (m, live) in members.iter().zip(&lives) {
        if backend::host::elsewhere(m).is_none() {
            backend::for_member(m).terminate_in(m, live.as_ref(), &mut ending)?;
        }
    }
    let left_open = ending.finish()?;
    // Their unfinished tasks (pending or in progress) go back to the list: pending again,
    // without an owner, so another teammate can claim them.
    let now = crate::domain::time::now_ms();
    store.update_tasks(&mut |list| {
        for name in &names {
            list.release_owner(name, now);
        }
        Ok(())
    })?;
    for (m, before) in members.iter().zip(&ended_before) {
        if *before {
            // Ended already (a second kill, a forced shutdown of a stopped teammate): the
            // leader was told then, once.
            continue;
        }
        let notice = Envelope::new(
            m.name.as_str(),
            LEADER,
            Body::message(format!("{} stopped ({why})", m.name), None),
        );
        store.append(&Name::leader(), &notice)?;
    }
    // Each pane left open is told of the member whose pane it was (recorded, or its worker's).
    Ok(members
        .iter()
        .zip(&lives)
        .zip(ended_before)
        .map(|((m, live), before)| Ended {
            before,
            left_open: left_open
                .iter()
                .filter(|p| {
                    m.pane_id.as_deref() == Some(p.as_str())
                        || live.as_ref().and_then(|l| l.pane_id.as_deref()) == Some(p.as_str())
                })
                .cloned()
                .collect(),
        })
        .collect())
}

/// Teammates whose worker died (asked to shut down, they never answered): what is left of
/// them ends (turns, agent processes, panes: tags checked; all together, as `end_members`
/// does), their awaited shutdown requests are cleared (one write) and the leader's inbox is
/// told `why`. They are not marked stopped: they stay dead, as any teammate whose worker
/// went without a clean exit (`status`, `doctor`; `resume` or mail starts one again where it
/// left off, its tasks taken up again). For each, true when nothing of it runs any more (its
/// worker, or any process carrying its tag: one walk of `/proc` for all).
pub fn end_dead_all(store: &dyn Store, members: &[Member], why: &str) -> Result<Vec<bool>> {
    let lives = members
        .iter()
        .map(|m| store.live(&m.name))
        .collect::<Result<Vec<_>>>()?;
    store.update(&mut |cfg| {
        for member in members {
            if let Some(m) = cfg.member_mut(member.name.as_str()) {
                m.shutdown_request_id = None;
            }
        }
        Ok(())
    })?;
    let here = |m: &Member| backend::host::elsewhere(m).is_none();
    let mut ending = backend::Ending::new(backend::GRACE);
    for (m, live) in members.iter().zip(&lives) {
        if here(m) {
            backend::for_member(m).terminate_in(m, live.as_ref(), &mut ending)?;
        }
    }
    ending.finish()?;
    let ids: Vec<(String, Option<String>)> = members
        .iter()
        .filter(|m| here(m))
        .map(|m| (m.agent_id.clone(), m.pane_nonce.clone()))
        .collect();
    let tagged = backend::ending::still_tagged(&ids);
    let mut ended = Vec::with_capacity(members.len());
    for (m, live) in members.iter().zip(&lives) {
        ended.push(
            !here(m)
                || (backend::for_member(m).liveness(m, live.as_ref()) == Liveness::Gone
                    && !tagged.contains(&m.agent_id)),
        );
        let notice = Envelope::new(
            m.name.as_str(),
            LEADER,
            Body::message(format!("{} died ({why})", m.name), None),
        );
        store.append(&Name::leader(), &notice)?;
    }
    Ok(ended)
}

/// Mark every one of `names` stopped, its awaited shutdown request cleared, in one write.
fn mark_all_stopped(store: &dyn Store, names: &[&Name]) -> Result<()> {
    store.update(&mut |cfg| {
        for name in names {
            if let Some(m) = cfg.member_mut(name.as_str()) {
                m.status = Status::Stopped;
                m.shutdown_request_id = None;
            }
        }
        Ok(())
    })?;
    Ok(())
}

/// Record that the leader waits for `name`'s answer to shutdown request `request_id`, unless
/// an earlier request is still unanswered. Returns the id awaited and whether it is new. A
/// worker answers the first request it finds, so a second id would never be matched: the
/// teammate would exit without ever being marked stopped or its tasks returned.
pub fn expect_shutdown(store: &dyn Store, name: &Name, request_id: &str) -> Result<(String, bool)> {
    let wanted = [(name.clone(), request_id.to_string())];
    Ok(expect_shutdowns(store, &wanted)?.remove(0))
}

/// `expect_shutdown` for many teammates in one write of the team file (`shutdown --all`: one
/// write, not one per teammate). For each `(name, new id)`, in order: the id awaited and
/// whether it is new.
pub fn expect_shutdowns(
    store: &dyn Store,
    wanted: &[(Name, String)],
) -> Result<Vec<(String, bool)>> {
    let mut awaited = Vec::new();
    store.update(&mut |cfg| {
        // `update` may run this more than once (a store with compare-and-set): from scratch.
        awaited.clear();
        for (name, request_id) in wanted {
            let mut this = (request_id.clone(), true);
            if let Some(m) = cfg.member_mut(name.as_str()) {
                match &m.shutdown_request_id {
                    Some(old) => this = (old.clone(), false),
                    None => m.shutdown_request_id = Some(request_id.clone()),
                }
            }
            awaited.push(this);
        }
        Ok(())
    })?;
    Ok(awaited)
}

/// Say which of `names` have a start under way (their start lock held), before a wait for
/// it that lasts as long as that start (re-QA 37: a kill waited in silence for a start that
/// hung; attacker QA 43: so did a shutdown); `then`: what follows the start (`to end it`).
pub fn say_starts_waited(store: &dyn Store, names: &[&Name], then: &str) {
    let starting: Vec<&str> = names
        .iter()
        .filter(|n| store.lock_held(&LockKey::Start((**n).clone())) == Some(true))
        .map(|n| n.as_str())
        .collect();
    if !starting.is_empty() {
        crate::errln!(
            "teamctl: waiting for the start of {} under way (a spawn, resume or send) {then}",
            starting.join(", ")
        );
    }
}

/// How many teammates' start locks one process holds at once (each may be an open file);
/// more are taken a batch at a time.
pub const START_LOCKS_AT_ONCE: usize = 256;

/// The start locks of `names` (at most `START_LOCKS_AT_ONCE`), taken in name order: every
/// holder of several takes them in that order and holds no other start lock meanwhile, so
/// two never wait for each other.
pub fn start_locks(store: &dyn Store, names: &[&Name]) -> Result<Vec<Held>> {
    let mut sorted = names.to_vec();
    sorted.sort();
    sorted.dedup();
    sorted.into_iter().map(|n| start_lock(store, n)).collect()
}

/// What acting on the leader's protocol mail did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handoff {
    Stopped(Name),
    Refused(Name, String),
    /// Said after its `Stopped`: the panes of it found to be the user's (respawned with a
    /// program of theirs), left open with teamctl's tags taken off.
    LeftOpen(Name, Vec<String>),
    /// Said after its `Stopped`: what became of its worktree, which a `shutdown
    /// --remove-worktree` that did not wait for it asked to remove (`trees`), in words.
    Worktree(Name, String),
    /// The answers were left to the holder of the protocol lock, which nothing says will
    /// let it go (stopped, or not teamctl): who it is, in words (`Store::lock_look`).
    Held(String),
}

/// What is said when shutdown answers wait for a stuck holder of the protocol lock
/// (`Handoff::Held`).
pub fn held_words(holder: &str) -> String {
    format!(
        "warning: answers to shutdown requests wait in the leader's inbox, not acted on: the team's protocol lock is {holder}"
    )
}

/// What is said of a stopped teammate's panes the user took over (`Ended::left_open`), after
/// "NAME marked stopped; " or "NAME stopped; " (`kill`, `shutdown`).
pub fn left_open_words(panes: &[String]) -> String {
    match panes {
        [one] => format!(
            "its pane {one} is not teamctl's any more (another program was started in it): left open, teamctl's tags taken off"
        ),
        many => format!(
            "its panes {} are not teamctl's any more (another program was started in them): left open, teamctl's tags taken off",
            many.join(", ")
        ),
    }
}

/// Act on shutdown responses that reached the leader since the last look: approved ones end
/// exactly the pane or process group they name (tag checked) and mark the member stopped.
/// The answers read together are acted on together (`act_on`): one read of the team file
/// for all of them, one write for the refusals, and the approved teammates ended at once
/// (`end_members`: one grace, one walk of `/proc`).
pub fn reconcile(store: &dyn Store) -> Result<Vec<Handoff>> {
    reconcile_when(store, true)
}

/// `reconcile` for a command that acts on answers in passing (every leader command but a
/// shutdown waiting for its answers): while another leader process holds the protocol lock,
/// that one is acting on them, and this one leaves them to it rather than wait. A `send` had
/// waited there for as long as a `shutdown` took to end the teammates it was ending, and the
/// teammate the send was to resume only after.
pub fn reconcile_in_passing(store: &dyn Store) -> Result<Vec<Handoff>> {
    reconcile_when(store, false)
}

fn reconcile_when(store: &dyn Store, wait: bool) -> Result<Vec<Handoff>> {
    let leader = Name::leader();
    if store.inbox_end(&leader)? <= store.cursor(&leader, PROTOCOL_READER)? {
        return Ok(Vec::new());
    }
    // Left to the lock's holder, which acts on them; said when nothing says it will (a
    // stopped shutdown, a program that is not teamctl: attacker QA 46, a foreign `flock`
    // left every answer unacted on without a word).
    if !wait {
        match store.lock_look(&LockKey::Protocol) {
            Some(LockLook::Held) => return Ok(Vec::new()),
            Some(LockLook::Stuck(holder)) => return Ok(vec![Handoff::Held(holder)]),
            Some(LockLook::Free) | None => {}
        }
    }
    let _lock = store.lock(&LockKey::Protocol)?;
    let mut answers = Vec::new();
    let mut all = crate::store::entries(store, &leader, store.cursor(&leader, PROTOCOL_READER)?);
    for e in all.by_ref() {
        let Item::Message(env) = e?.item else {
            continue;
        };
        if let Body::ShutdownResponse {
            request_id,
            approve,
            reason,
            pane_id,
            ..
        } = env.body
        {
            answers.push(Answer {
                from: env.from,
                request_id,
                approve: approve.0,
                reason,
                pane_id,
            });
        }
    }
    let out = act_on(store, &answers)?;
    store.set_cursor(&leader, PROTOCOL_READER, all.pos())?;
    Ok(out)
}

/// A shutdown response as the leader acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    from: String,
    request_id: String,
    approve: bool,
    reason: Option<String>,
    pane_id: Option<String>,
}

/// Act on `answers`, in the order they came. An answer counts only for the request it
/// answers, the one recorded with its member (`shutdownRequestId`): the leader never has two
/// outstanding for one teammate (`expect_shutdown` awaits an unanswered one again rather
/// than make a second), and the worker answers the newest it finds, so an answer to another
/// id is stale (a request from before a start, an old answer read again) and must not end
/// the teammate, which may be about to refuse the one outstanding.
fn act_on(store: &dyn Store, answers: &[Answer]) -> Result<Vec<Handoff>> {
    if answers.is_empty() {
        return Ok(Vec::new());
    }
    let config = store.load()?;
    // The request each teammate is awaited for, as the answers taken so far leave it.
    let mut awaited: HashMap<&str, Option<&str>> = HashMap::new();
    let mut out = Vec::new();
    let mut refused: Vec<(&str, &str)> = Vec::new();
    let mut approved: Vec<(Name, &Answer)> = Vec::new();
    for a in answers {
        let Some(member) = config.member(&a.from) else {
            continue;
        };
        let slot = awaited
            .entry(&a.from)
            .or_insert(member.shutdown_request_id.as_deref());
        if *slot != Some(a.request_id.as_str()) {
            continue;
        }
        *slot = None;
        if a.approve {
            approved.push((member.name.clone(), a));
            out.push(Handoff::Stopped(member.name.clone()));
        } else {
            refused.push((&a.from, &a.request_id));
            out.push(Handoff::Refused(
                member.name.clone(),
                a.reason.clone().unwrap_or_default(),
            ));
        }
    }
    if !refused.is_empty() {
        // Cleared only while still the one refused: a start and a new request meanwhile
        // would be awaited.
        store.update(&mut |cfg| {
            for (name, id) in &refused {
                if let Some(m) = cfg.member_mut(name)
                    && m.shutdown_request_id.as_deref() == Some(*id)
                {
                    m.shutdown_request_id = None;
                    m.remove_worktree_on = None;
                }
            }
            Ok(())
        })?;
    }
    if approved.is_empty() {
        return Ok(out);
    }
    crate::pause::at("reconcile-end");
    // Ended under their start locks, each request looked at again there: a send may have
    // resumed one since the team file was read above (the worker that answered is gone), and
    // ending it now would end the worker that send started, leaving it "dead" (its start
    // recorded after the stop mark) or stopped with that message unhandled. A start clears
    // the awaited request, as does another leader command that acted on this answer first:
    // either way it has stopped, and nothing is ended here.
    approved.sort_by(|a, b| a.0.cmp(&b.0));
    let mut left_team = Vec::new();
    let mut left_open = Vec::new();
    // Those whose worktree goes with this answer (`trees::wish`), once they are ended.
    let mut wished = Vec::new();
    for batch in approved.chunks(START_LOCKS_AT_ONCE) {
        let names: Vec<&Name> = batch.iter().map(|(n, _)| n).collect();
        let _starting = start_locks(store, &names)?;
        let config = store.load()?;
        let mut targets = Vec::new();
        for (name, a) in batch {
            let Some(member) = config.member(name.as_str()) else {
                left_team.push(name.clone());
                continue;
            };
            if member.shutdown_request_id.as_deref() != Some(a.request_id.as_str()) {
                continue;
            }
            let mut target = member.clone();
            if a.pane_id.is_some() {
                target.pane_id = a.pane_id.clone();
            }
            if member.remove_worktree_on.as_deref() == Some(a.request_id.as_str()) {
                wished.push(name.clone());
            }
            targets.push(target);
        }
        if !targets.is_empty() {
            let ended = end_members_noting(store, &targets, "shutdown approved")?;
            for (m, e) in targets.iter().zip(ended) {
                if !e.left_open.is_empty() {
                    left_open.push(Handoff::LeftOpen(m.name.clone(), e.left_open));
                }
            }
        }
    }
    out.retain(|h| !matches!(h, Handoff::Stopped(n) if left_team.contains(n)));
    out.extend(left_open);
    // Their start locks let go: each removal takes its own (`while_down`).
    for (name, words) in trees::granted(store, &wished)? {
        out.push(Handoff::Worktree(name, words));
    }
    Ok(out)
}

/// What a teammate waits on the user for, from its live state, in words: an interactive one's
/// dialog to answer in its pane, or why its mail cannot go in; or the leader's approval of its
/// plan. `ask` and `wait` say it as they wait (they waited in silence until their timeout),
/// `status` shows the same in its STATUS and TURN columns.
pub fn waits_on_user(name: &Name, live: &LiveState) -> Option<String> {
    // One line each, bounded: the live state is a file a hand can edit (attacker QA: a pane id
    // with escapes and newlines, a megabyte of `mailWaits`).
    let pane = crate::output::printable_line(live.pane_id.as_deref().unwrap_or("-"), 32);
    let printable = |t: &str| crate::output::printable_line(t, 512);
    if let Some(what) = &live.needs_user {
        return Some(format!(
            "{name} waits for you: {} in its pane {pane} (`teamctl attach {name}`)",
            printable(what)
        ));
    }
    if let Some(why) = &live.mail_waits {
        return Some(format!(
            "{name}'s mail waits: {} (`teamctl attach {name}` shows its pane {pane})",
            printable(why)
        ));
    }
    (live.status == Status::AwaitingPlanApproval).then(|| {
        format!(
            "{name} waits for {LEADER} to approve its plan (`teamctl plan list`, then `teamctl plan approve {name}` or `teamctl plan reject {name} --feedback TEXT`)"
        )
    })
}

/// Unread messages in `name`'s inbox for `reader`. Control messages the worker already
/// answered ahead of its cursor (a shutdown request, a plan response) are not unread.
pub fn unread(store: &dyn Store, name: &Name, reader: &str) -> usize {
    unread_but(store, name, reader, None)
}

/// `unread`, not counting `handling`: the message a running turn is handling (the cursor
/// moves past it only when the turn is done; if the worker dies first it is unread again).
pub fn unread_but(store: &dyn Store, name: &Name, reader: &str, handling: Option<&str>) -> usize {
    let mut handled = if reader == crate::worker::READER {
        store
            .live(name)
            .ok()
            .flatten()
            .map(|l| l.handled_control)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    handled.extend(handling.map(String::from));
    unread_ids(store, name, reader, &handled).len()
}

/// The ids of the messages in `name`'s inbox past `reader`'s cursor, but those in `handled`.
pub fn unread_ids(store: &dyn Store, name: &Name, reader: &str, handled: &[String]) -> Vec<String> {
    unread_kinds(store, name, reader, handled)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// `unread_ids`, each with whether it is an idle notification (state, which the default
/// `inbox` view leaves out: `status` shows how many of the unread are such).
pub fn unread_kinds(
    store: &dyn Store,
    name: &Name,
    reader: &str,
    handled: &[String],
) -> Vec<(String, bool)> {
    crate::store::entries(store, name, store.cursor(name, reader).unwrap_or_default())
        .map_while(|e| e.ok())
        .filter_map(|e| match e.item {
            Item::Message(env) if !handled.contains(&env.id) => {
                let idle = matches!(env.body, Body::IdleNotification { .. });
                Some((env.id, idle))
            }
            _ => None,
        })
        .collect()
}

/// Where `member`'s unread mail starts as `status` counts it (its own reader's cursor:
/// `reader_for`), and the ids past it that `status` does not count: control requests its
/// worker answered ahead of the cursor, and the message a running turn handles. `inbox --peek`
/// shows exactly these unread messages, so it never disagrees with `status`.
pub fn unread_start(store: &dyn Store, member: &Member) -> Result<(Position, Vec<String>)> {
    let reader = reader_for(&member.name);
    let live = store.live(&member.name).ok().flatten();
    let mut skip = match &live {
        Some(l) if reader == crate::worker::READER => l.handled_control.clone(),
        _ => Vec::new(),
    };
    // As `status` rows do: the live state of the worker recorded, its turn only while working.
    if let Some(turn) = live
        .as_ref()
        .filter(|l| member.pid.is_none_or(|p| p == l.pid))
        .and_then(|l| l.current_turn.as_ref())
        && effective_status(member, live.as_ref()) == Status::Working
    {
        skip.push(turn.message_id.clone());
    }
    Ok((store.cursor(&member.name, reader)?, skip))
}

/// The cursor a member's own messages are read with: the worker's, or `inbox` for the leader.
pub fn reader_for(name: &Name) -> &'static str {
    if name.is_leader() {
        "inbox"
    } else {
        crate::worker::READER
    }
}

/// Member bob of team t, recorded as running on another host (pid 7) since `since`: judged by
/// its lease, never by this host's processes (tests of the leader's views).
#[cfg(test)]
pub(crate) fn remote_member(status: Status, since: u64) -> Member {
    let team = Name::parse("t").unwrap();
    let mut m = Member::leader(&team, "/".into(), 0);
    m.name = Name::parse("bob").unwrap();
    m.agent_id = "bob@t".into();
    m.status = status;
    m.pid = Some(7);
    m.host = Some(Host {
        name: "another-host".into(),
        home: "/h".into(),
        key: "0".into(),
        id: "0".into(),
        since,
    });
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ask` and `wait` say what an interactive teammate waits on the user for: a dialog
    /// first (its mail waits for it too), escaped as the agent's words may carry escapes.
    #[test]
    fn what_a_teammate_waits_on_the_user_for_is_said_in_words() {
        let bob = Name::parse("bob").unwrap();
        let mut l = LiveState::new(Status::Idle, 7, 0);
        assert_eq!(waits_on_user(&bob, &l), None);
        l.pane_id = Some("%3".into());
        l.mail_waits = Some("its input line is not empty".into());
        assert_eq!(
            waits_on_user(&bob, &l).unwrap(),
            "bob's mail waits: its input line is not empty (`teamctl attach bob` shows its pane %3)"
        );
        l.needs_user = Some("a permission prompt\u{1b}[2J".into());
        let said = waits_on_user(&bob, &l).unwrap();
        assert!(
            said.starts_with("bob waits for you: a permission prompt")
                && said.ends_with("in its pane %3 (`teamctl attach bob`)")
                && !said.contains('\u{1b}'),
            "{said}"
        );
    }

    /// `status`, its board and the console's line show one asked to stop alike.
    #[test]
    fn a_running_member_asked_to_stop_shows_shutdown_pending() {
        let team = Name::parse("t").unwrap();
        let mut m = Member::leader(&team, "/".into(), 0);
        assert_eq!(shown_status(&m, Status::Working), Status::Working);
        m.shutdown_request_id = Some("r1".into());
        for running in [Status::Working, Status::Idle, Status::AwaitingPlanApproval] {
            assert_eq!(shown_status(&m, running), Status::ShutdownPending);
        }
        for ended in [Status::Dead, Status::Stopped] {
            assert_eq!(shown_status(&m, ended), ended);
        }
    }

    fn live(status: Status, pid: u32, lease_until: Option<u64>) -> LiveState {
        LiveState {
            lease_until,
            ..LiveState::new(status, pid, 0)
        }
    }

    /// The shutdown answers that reached the leader together are acted on together: 40
    /// approvals take three reads and one write of the team file (one for all, not two reads
    /// and a write each), and each counts only for the request it answers: a stale approval
    /// (of another id) ends nothing.
    #[test]
    fn answers_read_together_are_acted_on_in_one_pass() {
        use crate::domain::message::Approve;
        // A team name of this process's own: the ending walks /proc for its tags.
        let team = Name::parse(&format!("recon{}", std::process::id())).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::mem::MemStore::new(team.clone(), dir.path().to_path_buf());
        let names: Vec<Name> = (0..41)
            .map(|i| Name::parse(&format!("w{i}")).unwrap())
            .collect();
        store
            .update(&mut |cfg| {
                for n in &names {
                    let mut m = Member::leader(&team, "/".into(), 0);
                    m.name = n.clone();
                    m.agent_id = n.agent_id(&team);
                    m.status = Status::Idle;
                    m.shutdown_request_id = Some(format!("req-{n}"));
                    cfg.members.push(m);
                }
                Ok(())
            })
            .unwrap();
        let answer = |from: &Name, request_id: String| {
            let body = Body::ShutdownResponse {
                request_id,
                approve: Approve(true),
                reason: None,
                pane_id: None,
                backend_type: Some(crate::domain::BackendType::Process),
            };
            let env = Envelope::new(from.as_str(), LEADER, body);
            store.append(&Name::leader(), &env).unwrap();
        };
        // w40 answers an older request only.
        answer(&names[40], "req-older".into());
        for n in &names[..40] {
            answer(n, format!("req-{n}"));
        }
        let before = store.team_file_io();
        let acted = reconcile(&store).unwrap();
        let after = store.team_file_io();
        assert_eq!(acted.len(), 40, "{acted:?}");
        assert!(
            acted
                .iter()
                .all(|h| matches!(h, Handoff::Stopped(n) if n != &names[40]))
        );
        let config = store.load().unwrap();
        for n in &names[..40] {
            let m = config.member(n.as_str()).unwrap();
            assert_eq!(
                (m.status, m.shutdown_request_id.as_deref()),
                (Status::Stopped, None)
            );
        }
        let stale = config.member("w40").unwrap();
        assert_eq!(stale.status, Status::Idle, "a stale approval ended w40");
        assert_eq!(stale.shutdown_request_id.as_deref(), Some("req-w40"));
        let (loads, writes) = (after.0 - before.0, after.1 - before.1);
        assert!(
            loads <= 3 && writes <= 1,
            "{loads} reads and {writes} writes of the team file for 40 answers"
        );
    }

    /// A member of another host is what its worker says while the lease holds, and stopped or
    /// dead once it has run out; this host's processes are never asked (pid 7 is not ours).
    #[test]
    fn a_member_of_another_host_is_judged_by_its_lease() {
        let now = crate::domain::time::now_ms();
        let m = remote_member(Status::Starting, now);
        let idle = |until| live(Status::Idle, 7, Some(until));
        assert_eq!(effective_status(&m, Some(&idle(now + 5_000))), Status::Idle);
        assert_eq!(effective_status(&m, Some(&idle(now - 1))), Status::Dead);
        // Another worker's state (not the recorded pid) vouches for nothing.
        let other = live(Status::Idle, 8, Some(now + 5_000));
        assert_eq!(effective_status(&m, Some(&other)), Status::Starting);
        // Not heard of yet: starting for a minute after it was placed there, then dead.
        assert_eq!(effective_status(&m, None), Status::Starting);
        let old = remote_member(Status::Starting, now - 61_000);
        assert_eq!(effective_status(&old, None), Status::Dead);
        // Recorded as stopped, or said so last: stopped, not dead.
        let stopped = remote_member(Status::Stopped, now);
        assert_eq!(
            effective_status(&stopped, Some(&idle(now - 1))),
            Status::Stopped
        );
        let said = live(Status::Stopped, 7, Some(now - 1));
        assert_eq!(effective_status(&m, Some(&said)), Status::Stopped);
        // The same member here (no host recorded) is judged by this host's processes.
        let mut here = m.clone();
        here.host = None;
        assert_eq!(
            effective_status(&here, Some(&idle(now + 5_000))),
            Status::Dead
        );
    }
}
