//! A worker serves only where teamctl placed it. A `teamctl worker --id NAME@TEAM` typed
//! anywhere else (`worker` is internal; its line is in `ps`) would otherwise wait on the
//! member's worker lock and, once the teammate's worker ended or was re-run, take it and serve
//! the teammate from a place teamctl knows nothing of. Checked before the lock, so such a
//! worker never holds it, reads no mail and writes no state: it says why and ends.
//!
//! A worker a start just placed in a pane (its tag in `TEAMCTL_PLACED`, the placement's word in
//! `TEAMCTL_PLACEMENT`) is the pane's while that start is under way (the member's start lock
//! held) and the member's record holds that word (`placed_here`): the start recorded the
//! word with the member before it made the pane, and only that pane's environment carries it
//! with the tag. Such a worker starts at once, while the start records its pane. Any other
//! worker in a tmux pane (`$TMUX_PANE` on the server of `$TMUX`) is the pane's when tmux,
//! asked for the pane's process, says it is this worker or one of its parents (the
//! worker runs as the pane's command, or from the pane's shell), so a `$TMUX_PANE` copied from
//! the teammate's pane proves nothing. The pane must carry its member's tag
//! (`@teamctl-agent`, set by the leader that made the pane, kept by tmux when the user re-runs
//! it with `respawn-pane -k`), or the worker must have been started with that tag in
//! `TEAMCTL_PLACED` (the leader gives the pane it in its environment, and tags the pane right
//! after making it): without either the worker waits for the tag `TAGGED_WITHIN` while a
//! start of the member is under way, and is refused at once otherwise. Tags are anyone's to
//! set, so the pane must also carry the placement's random word
//! (`@teamctl-nonce`), which spawn and resume record with the member before they make the
//! pane: the record must name that pane with that word, or (still naming none: the start is
//! recording it, or was cut short after making it) hold that word, on the tmux server the
//! record names (pane ids are each server's own; a named server's socket directory is the
//! `TMUX_TMPDIR` recorded with the leader's environment, not this worker's). A pane tagged by hand has
//! no such word: its worker waits as below while a start is under way, then is refused.
//!
//! Any other worker (no pane: the process backend, an interactive teammate's companion, or a
//! worker typed outside tmux, or in a pane tmux cannot be asked about) is the teammate's only
//! as the process spawn or resume started: the member's record names this very process
//! (`Member::pid`, recorded right after the start with the process's start time, so a pid the
//! system gave again to another process is not taken for it), or, while it records no pid or pane, holds
//! the word of the placement the start gave this worker (`TEAMCTL_PLACEMENT`, recorded before
//! the worker was started, with the old pid and pane cleared: a
//! start killed before it recorded the pid leaves a worker that serves, not one refused with
//! nothing running for the member). The record is waited for only while a
//! start of the member is under way (its start lock held, `wait_for_record`); refused at once
//! otherwise, or while the pid recorded is another live worker of the member.

use std::time::{Duration, Instant};

use crate::backend::proc;
use crate::backend::tmux::argv::{self, Server};
use crate::backend::tmux::run::{Fail, Tmux};
use crate::domain::{Member, Name, env};
use crate::error::{Error, Result};
use crate::store::{LockKey, Store, SyncBell, Topic};

/// How long a worker waits for the leader to tag the pane it was just started in (the leader
/// tags it right after tmux made it, in a second tmux command, unless it was tagged as it was
/// made).
const TAGGED_WITHIN: Duration = Duration::from_secs(10);

/// How long a worker waits for the leader that started it to record where it went (its pane,
/// or its pid), in the team file right after the start: generous, for a team file busy with
/// many starts at once.
const RECORDED_WITHIN: Duration = Duration::from_secs(30);

/// What a pane carries: its id (printed back: a missing pane prints the format without one),
/// its process, the placement's word (`argv::NONCE_OPTION`, a hex word or empty) and teamctl's
/// agent tag.
const FORMAT: &str = concat!(
    "#{pane_id} #{pane_pid} ",
    crate::backend::tmux::argv::plain!("@teamctl-nonce"),
    " ",
    crate::backend::tmux::argv::plain!("@teamctl-agent")
);

/// What the start that placed this worker gave it (`take_marker`).
#[derive(Debug, Clone, Default)]
pub struct Marker {
    /// `TEAMCTL_PLACED`: its pane's tag (a worker in a pane).
    pub tag: Option<String>,
    /// `TEAMCTL_PLACEMENT`: the word of its placement, recorded with the member before the
    /// worker was started (a worker the process backend started).
    pub word: Option<String>,
}

/// `TEAMCTL_PLACED` and `TEAMCTL_PLACEMENT` as this worker was given them, taken out of its
/// environment so that nothing it starts inherits them. Called first thing, before any thread
/// exists.
pub fn take_marker() -> Marker {
    let tag = std::env::var(env::PLACED).ok();
    let word = std::env::var(env::PLACEMENT).ok().filter(|w| !w.is_empty());
    // SAFETY: the worker has not started any thread yet (`worker::run`, first thing).
    unsafe {
        std::env::remove_var(env::PLACED);
        std::env::remove_var(env::PLACEMENT);
    };
    Marker { tag, word }
}

/// `Ok` when this worker of `name` (`agent_id`) in `store` may serve (see the module's
/// comment; `placed`: what `take_marker` took). Refused, with the reason, anywhere else.
pub fn check(store: &dyn Store, name: &Name, agent_id: &str, marker: Marker) -> Result<()> {
    // An interactive teammate's companion runs detached; its pane is the agent's.
    let companion = std::env::var_os(env::COMPANION_PANE).is_some();
    if !companion && let Some(pane) = in_pane() {
        if marker.tag.as_deref() == Some(argv::scoped(agent_id, &proc::home_key()).as_str())
            && let Some(word) = marker.word.as_deref()
            && placed_here(store, name, &pane.0, word)?
        {
            return Ok(());
        }
        let start = LockKey::Start(name.clone());
        let starting = || store.lock_held(&start) != Some(false);
        match in_tagged_pane(&pane, agent_id, marker.tag, starting) {
            Ok(Some(word)) => return recorded_in(store, name, agent_id, &pane, word),
            // tmux cannot be asked: the record tells.
            Ok(None) => {}
            Err(e) => return Err(e),
        }
    }
    recorded_as(store, name, agent_id, marker.word.as_deref())
}

/// The pane `$TMUX_PANE` names, with the server of `$TMUX`, when both are there.
fn in_pane() -> Option<(String, Tmux)> {
    let pane = std::env::var("TMUX_PANE")
        .ok()
        .filter(|p| argv::is_pane_id(p))?;
    let socket = std::env::var("TMUX")
        .ok()
        .as_deref()
        .and_then(argv::socket_of_tmux_env)?;
    let program = crate::backend::tmux::find_tmux().ok()?;
    Some((pane, Tmux::new(program, Server::Path(socket))))
}

/// `Ok(Some(word))` when tmux says this worker runs in `pane` (its process is this worker or a
/// parent of it) and the pane is `agent_id`'s of this home (its tag, or `placed`), `word` its
/// `@teamctl-nonce` then (empty: not set yet); `Ok(None)` when tmux cannot be asked; refused
/// otherwise. A pane with no tag yet is waited for only while a start of the member is under
/// way (`starting`: the start that made it tags it), at most `TAGGED_WITHIN`: a worker typed in
/// a pane of the user's is refused at once (new-user QA: after 10 s of silence).
fn in_tagged_pane(
    (pane, tmux): &(String, Tmux),
    agent_id: &str,
    placed: Option<String>,
    starting: impl Fn() -> bool,
) -> Result<Option<String>> {
    let ours = [
        argv::scoped(agent_id, &proc::home_key()),
        agent_id.to_string(),
    ];
    let marked = placed.is_some_and(|p| p == ours[0]);
    let ask = vec![
        "display-message".to_string(),
        "-p".into(),
        "-t".into(),
        pane.clone(),
        FORMAT.into(),
    ];
    let me = std::process::id();
    let deadline = Instant::now() + TAGGED_WITHIN;
    let mut pause = Duration::from_millis(5);
    let mut last_look = false;
    loop {
        let (pid, word, tag) = match tmux
            .run(std::slice::from_ref(&ask))
            .map(|out| parse(&out, pane))
        {
            Ok(Some(found)) => found,
            Ok(None) | Err(Fail::Gone(_)) => return Err(refused(agent_id, pane, "it is gone")),
            Err(_) => return Ok(None),
        };
        if !pid.is_some_and(|pid| proc::is_self_or_ancestor(pid, me)) {
            let runs = pid.map_or("nothing".to_string(), |p| format!("pid {p}"));
            return Err(refused(
                agent_id,
                pane,
                &format!(
                    "this worker (pid {me}) does not run in it: tmux says it runs {runs}, neither this worker nor a parent of it"
                ),
            ));
        }
        if ours.contains(&tag) || (marked && tag.is_empty()) {
            return Ok(Some(word));
        }
        if !tag.is_empty() {
            return Err(refused(
                agent_id,
                pane,
                &format!("it is tagged for {}", argv::unscoped(&tag)),
            ));
        }
        if last_look {
            let name = agent_id.split_once('@').map_or(agent_id, |(n, _)| n);
            return Err(refused(
                agent_id,
                pane,
                &format!(
                    "it carries no tag of teamctl's, and no start of {name} is under way to tag it"
                ),
            ));
        }
        if Instant::now() >= deadline {
            return Err(refused(
                agent_id,
                pane,
                "it carries no tag of teamctl's (not a pane teamctl made for it)",
            ));
        }
        if !starting() {
            // Looked at once more: a start may have tagged the pane and let go since.
            last_look = true;
            continue;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// A worker just placed in `pane` (given its tag in `TEAMCTL_PLACED`) with the word `word`
/// (`TEAMCTL_PLACEMENT`), on the tmux server the record names, when the member's record holds
/// that word and either
/// - a start of the member is under way (its start lock held) and the record names no worker
///   and no pane yet: the start recorded the word before it made the pane and gave the pane's
///   command alone, and clears both as it records its word (`leader::start_worker_in`);
///   one recorded already goes the long way (attacker QA: with the start lock held by hand, a
///   copied word served a killed member whose record still named its old pid and pane, first
///   with another pid, then with that pid given again to the forged worker); or
/// - the start has recorded it: the record names `pane` and this very process (its pid and
///   its start time: the start recorded the process tmux said the pane runs). A worker process
///   slow to start on a busy machine began after its start let go of the lock, and asked (CI:
///   the test that no spawned worker asks tmux failed one run in many).
///
/// Such a worker need not ask tmux where it runs, nor wait for the start to record the pane:
/// it was the longest step of a spawn at a thousand panes to ask (a tmux client per start,
/// 7 ms, and a load on the server every spawn shares), and a sixth of a spawn to wait (the
/// record written, rung and read before the worker went on). A start's word is new each
/// time: a process started later with an old worker's environment finds another word
/// recorded, or no start under way (attacker QA: one started with a dead worker's pid given
/// again was taken for it). `false` sends the worker the long way: tmux is asked, as for any
/// other worker.
fn placed_here(store: &dyn Store, name: &Name, pane: &str, word: &str) -> Result<bool> {
    let me = std::process::id();
    let roster = store.roster_with(&[name])?;
    let Some(m) = roster.member(name.as_str())? else {
        return Ok(false);
    };
    if m.pane_nonce.as_deref() != Some(word) {
        return Ok(false);
    }
    let by_start = m.pid.is_none()
        && m.pane_id.is_none()
        && store.lock_held(&LockKey::Start(name.clone())) != Some(false);
    let recorded = m.pane_id.as_deref() == Some(pane)
        && m.pid == Some(me)
        && proc::is_recorded(me, m.pid_started);
    Ok((by_start || recorded)
        && on_recorded_server(&m, recorded_tmux_tmpdir(store, name).as_deref()))
}

/// Whether this worker's tmux server (`$TMUX`) is the one the member's record names
/// (`Member::tmux_socket`, recorded before its pane was made). A server recorded by name (or
/// none: the default) has its socket in the directory `$TMUX_TMPDIR` named for the leader that
/// placed the member, as recorded with its environment (`tmpdir`: `recorded_tmux_tmpdir`),
/// never this worker's own, which is anyone's to set (attacker QA: a server of the same name
/// in another directory passed).
fn on_recorded_server(m: &Member, tmpdir: Option<&str>) -> bool {
    crate::backend::tmux::inside_with(&Server::from_record(m.tmux_socket.as_deref()), tmpdir)
}

/// `TMUX_TMPDIR` in the environment recorded for `name` (non-empty), if any.
fn recorded_tmux_tmpdir(store: &dyn Store, name: &Name) -> Option<String> {
    let vars = crate::store::envfile::load(&crate::store::envfile::path(store, name)).ok()??;
    vars.into_iter()
        .find(|(k, _)| k == "TMUX_TMPDIR")
        .and_then(|(_, v)| v.into_string().ok())
        .filter(|v| !v.is_empty())
}

/// The member's record, read again until `done` says it holds (`Ok(true)`) or refuses
/// (`Err(why)`). While it does neither, a start of the member is waited for: spawn and resume
/// hold the member's start lock from before they start its worker until they have recorded
/// it, so with that lock free (after one more read: the start may have just recorded and let
/// go) no start is under way and nothing will record this worker. On a store that hosts share
/// that lock is not a file here: the record is waited for `within`. `Err("")`: not
/// recorded. Each write of the team file rings the wait (`Topic::Team`): a record is seen as
/// it is made.
fn wait_for_record(
    store: &dyn Store,
    name: &Name,
    within: Duration,
    mut done: impl FnMut(&Member) -> std::result::Result<bool, String>,
) -> Result<std::result::Result<(), String>> {
    let deadline = Instant::now() + within;
    // Armed before the first read: a write after it rings.
    let bell = SyncBell::default();
    let _sub = store.subscribe_brief(&[Topic::Team], bell.bell()).ok();
    let start = LockKey::Start(name.clone());
    let starting = || store.lock_held(&start) != Some(false);
    let mut last_look = false;
    let mut pause = Duration::from_millis(2);
    loop {
        let roster = store.roster_with(&[name])?;
        let member = roster
            .member(name.as_str())?
            .ok_or_else(|| Error::failed(format!("{name} is no longer a member of the team")))?;
        match done(&member) {
            Ok(true) => return Ok(Ok(())),
            Err(why) => return Ok(Err(why)),
            Ok(false) if last_look || Instant::now() >= deadline => return Ok(Err(String::new())),
            Ok(false) if !starting() => {
                last_look = true;
                continue;
            }
            Ok(false) => {}
        }
        // The pause bounds the wait for a start that ends without recording (its lock let
        // go, which rings nothing).
        bell.wait_until((Instant::now() + pause).min(deadline));
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// A pane's process, word and tag as `FORMAT` prints them; `None` when it is not `pane`'s
/// line (a missing pane).
fn parse(out: &str, pane: &str) -> Option<(Option<u32>, String, String)> {
    let mut words = out.trim_end().splitn(4, ' ');
    match (words.next(), words.next(), words.next(), words.next()) {
        (Some(id), Some(pid), nonce, tag) if id == pane => Some((
            pid.parse::<u32>().ok(),
            nonce.unwrap_or("").to_string(),
            tag.unwrap_or("").to_string(),
        )),
        _ => None,
    }
}

/// A worker in `pane` (proven: `in_tagged_pane`): `Ok` once the member's record names that
/// pane with the word set on it (`Member::pane_nonce`, recorded before the pane was made), or
/// the record's word is the pane's while it names no pane yet (the start that made it is
/// recording it, or was cut short after making it). A pane anyone tagged by hand has no such
/// word: refused once no start is under way. A record without a word (an older teamctl's
/// placement) is judged by the pane it names alone.
fn recorded_in(
    store: &dyn Store,
    name: &Name,
    agent_id: &str,
    (pane, tmux): &(String, Tmux),
    mut word: String,
) -> Result<()> {
    // The pane's word (as `in_tagged_pane` read it), asked again until it has one (a pane
    // tagged after it was made, `argv::tag_pane`, gets it before its record names it).
    let mut pane_word = || {
        if word.is_empty()
            && let Ok(Some((_, w, _))) = tmux
                .run(&[vec![
                    "display-message".to_string(),
                    "-p".into(),
                    "-t".into(),
                    pane.clone(),
                    FORMAT.into(),
                ]])
                .map(|out| parse(&out, pane))
        {
            word = w;
        }
        word.clone()
    };
    // Read once, not at each look at the record below.
    let tmpdir = recorded_tmux_tmpdir(store, name);
    let found = wait_for_record(store, name, RECORDED_WITHIN, |m| {
        // Pane ids are a server's own (every server counts from %0): the record's pane on
        // another server is another pane (attacker QA: a pane of the attacker's server with
        // the killed member's pane id, tag and word forged on it served the member).
        if !on_recorded_server(m, tmpdir.as_deref()) {
            return Err("it is on another tmux server than the one teamctl recorded".into());
        }
        let names_it = m.pane_id.as_deref() == Some(pane.as_str());
        match m.pane_nonce.as_deref() {
            None => Ok(names_it),
            // Not while the record names another pane: the word is that pane's (a copy set
            // on this one by hand proves nothing; attacker QA).
            Some(n) if n == pane_word() && (names_it || m.pane_id.is_none()) => Ok(true),
            Some(_) if names_it => {
                Err("it does not carry the word teamctl recorded with it".into())
            }
            Some(_) => Ok(false),
        }
    })?;
    found.map_err(|why| {
        let why = if why.is_empty() {
            "teamctl did not record it as that teammate's pane".to_string()
        } else {
            why
        };
        refused(agent_id, pane, &why)
    })
}

/// A worker in no pane teamctl can check: `Ok` once the member's record names this process
/// as its worker, or holds the word of the placement this worker was started with (`word`:
/// the start recorded it before starting the worker, and is recording the worker's pid, or
/// was cut short before it could: the worker serves, as one in its pane does); refused at
/// once while it names another live worker of the member.
fn recorded_as(store: &dyn Store, name: &Name, agent_id: &str, word: Option<&str>) -> Result<()> {
    let me = std::process::id();
    let started = proc::start_time(me);
    let found = wait_for_record(store, name, RECORDED_WITHIN, |m| match m.pid {
        Some(p) if p == me => is_recorded_process(m, started),
        Some(p) if proc::is_worker(p, agent_id) => Err(format!(
            "another worker of {name} is running (pid {p}, the one teamctl started)"
        )),
        // The word only while no worker is recorded: the start records it with no pid (or
        // pane), then the pid; a pid recorded and gone (killed, crashed) keeps its word in
        // the record, for anyone who reads it (attacker QA: a copied word served a killed
        // member from a process of the attacker's).
        None => Ok(word.is_some() && m.pane_nonce.as_deref() == word && m.pane_id.is_none()),
        Some(_) => Ok(false),
    })?;
    found.map_err(|why| {
        let why = if why.is_empty() {
            format!("teamctl did not record it as {name}'s worker")
        } else {
            why
        };
        Error::failed(format!(
            "this worker of {agent_id} (pid {me}) will not serve: {why}; a teammate's worker runs only where teamctl placed it (`teamctl resume {name}` starts it)"
        ))
    })
}

/// The record names this process's pid (`Member::pid`): `Ok(true)` when it is this very
/// process, started when the record says (`started`: this process's start time); refused when
/// the record's is another start time, a process gone whose pid the system gave this one
/// (attacker QA: a worker started by forking until a dead worker's pid came round served its
/// member). A record without a start time (an older teamctl's, or unreadable) is judged by
/// the pid alone.
fn is_recorded_process(m: &Member, started: Option<u64>) -> std::result::Result<bool, String> {
    match (m.pid_started, started) {
        (Some(recorded), Some(mine)) if recorded != mine => Err(format!(
            "the worker teamctl recorded had this pid ({}) but started at another time: it is gone, and the system gave its pid to this process",
            m.pid.unwrap_or_default()
        )),
        _ => Ok(true),
    }
}

fn refused(agent_id: &str, pane: &str, why: &str) -> Error {
    let name = agent_id.split_once('@').map_or(agent_id, |(n, _)| n);
    Error::failed(format!(
        "this worker of {agent_id} will not serve: it runs in tmux pane {pane}, which is not {name}'s pane ({why}); a teammate's worker runs only where teamctl placed it (`teamctl resume {name}` starts it)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_pid_is_this_process_only_when_it_started_when_recorded() {
        let mut m = Member::leader(&Name::parse("t").unwrap(), "/".into(), 0);
        m.pid = Some(42);
        // An older record (no start time), or a start time this process cannot read.
        assert_eq!(is_recorded_process(&m, Some(7)), Ok(true));
        m.pid_started = Some(7);
        assert_eq!(is_recorded_process(&m, None), Ok(true));
        assert_eq!(is_recorded_process(&m, Some(7)), Ok(true));
        // The pid given again to a later process.
        let why = is_recorded_process(&m, Some(9)).unwrap_err();
        assert!(
            why.contains("pid (42)") && why.contains("another time"),
            "{why}"
        );
        // Recorded after it had ended already (`0`): no process is it (attacker QA: a worker
        // dead before its start recorded it left no start time, and the pid alone served).
        m.pid_started = Some(0);
        assert!(is_recorded_process(&m, Some(9)).is_err());
    }
}
