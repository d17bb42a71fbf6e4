//! Starting the recipients of a message that are down, so it gets handled: the leader's mail
//! brings back anyone; a teammate's never brings back one the leader stopped.

use crate::domain::{LiveState, Name, Status, TeamConfig};
use crate::error::{Error, Result};
use crate::store::{Home, RosterCache, Store};

/// Start the recipients that are down so the message gets handled, as `resume_stopped`; but a
/// teammate's mail never brings back one the team file records as stopped (shut down, killed,
/// or at its `--max-turns`): that was the leader's decision, and the mail waits for
/// `teamctl resume`. A member started on another host is never started here: its mail waits
/// too. Nor one that ran as the message was delivered (`before`) and may have died in its turn
/// on it. Returns who was resumed, left waiting, and died so (a start that failed is the error).
pub fn wake(
    home: &Home,
    me: &Name,
    store: &dyn Store,
    to: &[Name],
    before: Option<&Before>,
) -> Result<Woken> {
    let woken = wake_each(home, me, store, to, &mut None, before)?;
    woken.failed_as_error()?;
    Ok(woken)
}

/// Say on stderr who a message started again (stdout is the command's answer).
pub fn say_resumed(resumed: &[Name]) {
    for n in resumed {
        crate::errln!("teamctl: {n} was not running; resumed it");
    }
}

/// Why `what` (`the message`) waits in `n`'s inbox, `n` left waiting by `wake`: stopped by the
/// leader, or not running on the host it was started on.
pub fn left_waiting(config: Option<&TeamConfig>, n: &Name, what: &str) -> String {
    match config
        .and_then(|c| c.member(n.as_str()))
        .and_then(crate::backend::host::elsewhere)
    {
        Some(host) => format!(
            "{n} was started on {host} and is not running; {what} waits in its inbox until it is resumed (`teamctl resume {n}` on that host, or `teamctl resume {n} --here`)"
        ),
        None => format!(
            "{n} is stopped; {what} waits in its inbox until the leader resumes it (`teamctl resume {n}`)"
        ),
    }
}

/// The recipients of message `id` whose worker ran just before it was delivered. One of them
/// found down after the delivery may have died in its turn on the message (a turn that kills
/// its worker at once, say): started again, it would run that turn once more, side effects and
/// all. So it is started again only when its live state says it never took the message
/// (`LiveState::not_taken`); otherwise the message waits for `teamctl resume`, and the sender
/// says why. A look costs one read of each recipient's live state, no tmux process.
pub struct Before {
    id: String,
    running: std::collections::HashSet<Name>,
}

impl Before {
    /// Look, before delivering message `id` to `to`, at whose worker runs.
    pub fn look(store: &dyn Store, to: &[Name], id: &str) -> Result<Before> {
        let team = store.team();
        let mut running = std::collections::HashSet::new();
        for name in to.iter().filter(|n| !n.is_leader()) {
            if store
                .live(name)?
                .is_some_and(|l| crate::backend::proc::is_worker(l.pid, &name.agent_id(team)))
            {
                running.insert(name.clone());
            }
        }
        Ok(Before {
            id: id.to_owned(),
            running,
        })
    }
}

/// Why a recipient found down is not started by a message.
enum Hold {
    /// The message was handled already: it ran as it was delivered, and ended after.
    Handled,
    /// It ran as the message was delivered and nothing says it did not take it (`Before`).
    DiedOnIt(Held),
    /// It died in its turn on an earlier message, still unhandled: started again, it would
    /// run that turn again (QA 39: a message that kills its worker ran once more with each
    /// message sent after it).
    DiedEarlier(Held),
}

/// A recipient not started on purpose: the error that says it all, and why in a few words (for
/// a broadcast, whose report names the commands once for all such recipients).
struct Held {
    error: Error,
    why: String,
}

/// Whether `name`, down (`status`, its live state `live`), is not to be started by the
/// message (`before`, when looked at before delivering), and why.
fn hold(
    store: &dyn Store,
    name: &Name,
    live: Option<&LiveState>,
    status: Status,
    before: Option<&Before>,
) -> Result<Option<Hold>> {
    let cursor = || store.cursor(name, crate::worker::READER);
    if let Some(b) = before.filter(|b| b.running.contains(name)) {
        if crate::store::end_of(store, name, cursor()?, &b.id)?.is_none() {
            return Ok(Some(Hold::Handled));
        }
        if !live.is_some_and(|l| l.not_taken(&b.id)) {
            let why = format!(
                "it ended as the message ({}) reached it, maybe in its turn on it",
                b.id
            );
            return Ok(Some(Hold::DiedOnIt(Held {
                error: Error::failed(format!(
                    "{name} ended as the message ({}) reached it, maybe in its turn on it, so it was not started again (that turn would run twice): `teamctl log --worker {name}` shows its last turn, `teamctl resume {name}` runs the message",
                    b.id
                )),
                why,
            })));
        }
    }
    if let Some(turn) = died_in_unhandled_turn(store, name, live, status)? {
        let turn = crate::output::turn_words(turn);
        return Ok(Some(Hold::DiedEarlier(Held {
            error: Error::failed(format!(
                "{name} died in its turn on an earlier message ({turn}), which is still unhandled, so it was not started again: that turn would run again (this message is after it in its inbox); `teamctl resume {name}` runs that turn again and then the rest, `teamctl resume {name} --skip-turn` skips it (`teamctl log --worker {name}` shows that turn)"
            )),
            why: format!("it died in its turn on an earlier message ({turn}), still unhandled"),
        })));
    }
    Ok(None)
}

/// The turn `name` (down: `status`, its live state `live`) died in on a message still
/// unhandled, if it did: a start runs that turn again (the one that killed its worker, maybe).
pub fn died_in_unhandled_turn<'a>(
    store: &dyn Store,
    name: &Name,
    live: Option<&'a LiveState>,
    status: Status,
) -> Result<Option<&'a crate::domain::TurnInfo>> {
    if status != Status::Dead {
        return Ok(None);
    }
    let Some(turn) = live.and_then(|l| l.current_turn.as_ref()) else {
        return Ok(None);
    };
    let cursor = store.cursor(name, crate::worker::READER)?;
    Ok(crate::store::end_of(store, name, cursor, &turn.message_id)?.map(|_| turn))
}

/// Recipients that did not start, each with why.
pub type Failed = Vec<(Name, Error)>;

/// Who a message woke: resumed (started and running), left waiting (stopped by the leader,
/// or on another host), and those whose start failed, each with why (the message is in their
/// inbox all the same).
#[derive(Default)]
pub struct Woken {
    pub resumed: Vec<Name>,
    pub waiting: Vec<Name>,
    pub failed: Failed,
    /// Running, but stopping after the current turn (Ctrl-C in its pane), each with why: the
    /// message waits for a resume.
    pub stopping: Vec<(Name, String)>,
    /// Ran as the message was delivered, down after, and maybe in its turn on it (`Before`):
    /// not started again, each with what to say.
    pub died: Failed,
    /// Dead in its turn on an earlier message still unhandled: not started again (that turn
    /// would run again, the one that killed its worker, maybe), each with what to say.
    pub held: Failed,
    /// Each of `died` and `held`, with why in a few words (`it died in its turn on ...`).
    pub held_why: Vec<(Name, String)>,
    /// Running, but its worker (this pid) is stopped by a signal (SIGSTOP, a tracer): the
    /// message waits until it is continued. Not continued here: someone stopped it.
    pub paused: Vec<(Name, u32)>,
}

/// The pid of `member`'s worker (by its live state) when that worker is stopped by a signal
/// (SIGSTOP, a tracer): a look at its state in /proc, and at its tag when stopped. A local member's only: a pid names
/// nothing here for a member running on another host. The caller knows it runs.
pub fn paused_worker(member: &crate::domain::Member, live: Option<&LiveState>) -> Option<u32> {
    live.map(|l| l.pid)
        .filter(|_| crate::backend::host::elsewhere(member).is_none())
        .filter(|p| crate::backend::proc::stopped_by_signal(*p))
        // The member's worker, by its tag: a pid written into the state by hand may name any
        // process someone stopped on purpose, never to be continued on our word (attacker QA 42).
        .filter(|p| crate::backend::proc::is_worker(*p, &member.agent_id))
}

/// A process of a running turn stopped by a signal, and the turn's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PausedTurn {
    pub pid: u32,
    pub group: i32,
}

impl PausedTurn {
    /// How to go on, in words: that process, or every process of the turn (a whole group
    /// stopped, `kill -STOP -- -G`, continued one pid at a time otherwise: new-user QA 43).
    pub fn way_on(self) -> String {
        format!(
            "`kill -CONT {}` continues it (`kill -CONT -- -{}`: every process of the turn)",
            self.pid, self.group
        )
    }
}

/// The processes stopped by a signal, by process group (`proc::stopped_by_group`), looked
/// for once, on first need, for a whole pass over many members (a status table, a doctor
/// check, a round of `wait`): one walk of /proc, not one per member in a turn.
#[derive(Debug, Default)]
pub struct StoppedGroups(std::sync::OnceLock<std::collections::HashMap<i32, u32>>);

impl StoppedGroups {
    fn get(&self) -> &std::collections::HashMap<i32, u32> {
        self.0.get_or_init(crate::backend::proc::stopped_by_group)
    }
}

/// A process of `member`'s running turn (its process group, by the live state) that is
/// stopped by a signal (SIGSTOP, a tracer): the turn may wait for it, its worker waiting for
/// the turn meanwhile (new-user QA 42: `status` said `working`, nothing else). May: a
/// background process of the turn stopped so is one the turn need not wait for. /proc is
/// walked (once per `stopped`) only when a turn runs. Only a process carrying the member's
/// tag, of a local member.
pub fn paused_turn(
    member: &crate::domain::Member,
    live: Option<&LiveState>,
    stopped: &StoppedGroups,
) -> Option<PausedTurn> {
    let live = live.filter(|l| l.current_turn.is_some())?;
    let group = live.turn_pgid?;
    let pid = *stopped.get().get(&group)?;
    (crate::backend::host::elsewhere(member).is_none()
        && crate::backend::proc::is_agent_process(pid, &member.agent_id))
    .then_some(PausedTurn { pid, group })
}

/// What to say of `n`, a process of whose turn is stopped by a signal.
pub fn paused_turn_words(n: &Name, paused: PausedTurn) -> String {
    format!(
        "{n}'s turn may be paused: its process {} is stopped by a signal (SIGSTOP?); {}",
        paused.pid,
        paused.way_on()
    )
}

/// What to say of `n`, whose worker `pid` is stopped by a signal, for `what` (`the message`)
/// just delivered to it.
pub fn paused_words(n: &Name, pid: u32, what: &str) -> String {
    format!(
        "{n}'s worker (pid {pid}) is stopped by a signal (SIGSTOP?); {what} waits in its inbox until `kill -CONT {pid}`"
    )
}

/// `wake`, the team file read through `cache` (read again only if it changed since), going
/// on past a recipient that did not start, returning it with its error
/// (the caller names each one: a broadcast says who got it and who did not start).
pub fn wake_each(
    home: &Home,
    me: &Name,
    store: &dyn Store,
    to: &[Name],
    cache: &mut RosterCache,
    before: Option<&Before>,
) -> Result<Woken> {
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
    let mut woken = resume_stopped_in(home, store, &wake, cache, before)?;
    woken.waiting = waiting;
    Ok(woken)
}

/// Start the recipients that are stopped or dead, so the message gets handled.
pub fn resume_stopped(home: &Home, store: &dyn Store, to: &[Name]) -> Result<Vec<Name>> {
    let mut woken = resume_stopped_in(home, store, to, &mut None, None)?;
    // One not started because it died in a turn still unhandled is said too (the console
    // said nothing of it).
    woken.failed.append(&mut woken.held);
    woken.failed_as_error()?;
    Ok(woken.resumed)
}

impl Woken {
    /// Starts that failed as one error (exit 1), saying first who was resumed.
    pub fn failed_as_error(&self) -> Result<()> {
        let (resumed, failed) = (&self.resumed, &self.failed);
        if failed.is_empty() {
            return Ok(());
        }
        say_resumed(resumed);
        // The message is on disk already: this is a failure to act (exit 1), not bad input.
        Err(Error::failed(format!(
            "the message was delivered and waits in the inbox, but {}",
            failed
                .iter()
                .map(|(_, e)| e.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        )))
    }
}

/// `resume_stopped`, the team file read through `cache`.
fn resume_stopped_in(
    home: &Home,
    store: &dyn Store,
    to: &[Name],
    cache: &mut RosterCache,
    before: Option<&Before>,
) -> Result<Woken> {
    let roster = store.roster_with_cached(cache, &to.iter().collect::<Vec<_>>())?;
    let mut resumed = Vec::new();
    let mut failed = Vec::new();
    let mut stopping = Vec::new();
    let mut died = Vec::new();
    let mut held = Vec::new();
    let mut held_why = Vec::new();
    let mut paused = Vec::new();
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
        let live = store.live(name)?;
        let status = super::seen_status(&member, live.as_ref());
        if status.is_running()
            && let Some(why) = live.as_ref().and_then(|l| l.stopping.clone())
        {
            stopping.push((name.clone(), why));
        }
        if status.is_running()
            && let Some(pid) = paused_worker(&member, live.as_ref())
        {
            paused.push((name.clone(), pid));
        }
        if !status.is_running() {
            match hold(store, name, live.as_ref(), status, before)? {
                Some(Hold::Handled) => continue,
                Some(Hold::DiedOnIt(h)) => {
                    held_why.push((name.clone(), h.why));
                    died.push((name.clone(), h.error));
                    continue;
                }
                Some(Hold::DiedEarlier(h)) => {
                    held_why.push((name.clone(), h.why));
                    held.push((name.clone(), h.error));
                    continue;
                }
                None => {}
            }
        }
        if !status.is_running() || super::cut_short(&member, status) {
            // One that cannot start must not keep the others of a broadcast from starting.
            match super::resume_if_down(home, store, name, false) {
                Ok(Some(m)) => resumed.push(m),
                Ok(None) => {}
                Err(e) => failed.push((name.clone(), e)),
            }
        }
    }
    // Only a worker that started is said to be resumed: one that died at once (its reason
    // read from its live state) fails the command, the message still on disk. A send to a
    // running teammate never gets here, so waits for nothing.
    let started = super::started(store, &resumed);
    let resumed: Vec<Name> = resumed
        .into_iter()
        .zip(started)
        .filter_map(|(m, r)| match r {
            Ok(()) => Some(m.name),
            Err(e) => {
                let why = Error::failed(format!("{} did not start: {e}", m.name));
                failed.push((m.name, why));
                None
            }
        })
        .collect();
    Ok(Woken {
        resumed,
        failed,
        stopping,
        died,
        held,
        held_why,
        paused,
        ..Woken::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Member;

    /// Only the member's own worker, stopped, is paused: a stopped process of another
    /// program whose pid a live state names (written by hand) is not, nor a running worker
    /// (attacker QA 42: the user was told to continue someone's stopped process).
    #[test]
    fn paused_is_the_members_own_worker_stopped() {
        use nix::sys::signal::{Signal, kill};
        let team = Name::parse("pauseunit").unwrap();
        let mut m = Member::leader(&team, "/".into(), 0);
        m.name = Name::parse("p").unwrap();
        m.agent_id = m.name.agent_id(&team);
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = other.id();
        let nix_pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
        kill(nix_pid, Signal::SIGSTOP).unwrap();
        assert!(crate::backend::proc::wait_for(
            std::time::Duration::from_secs(10),
            || crate::backend::proc::stopped_by_signal(pid)
        ));
        let live = LiveState::new(Status::Idle, pid, 0);
        assert_eq!(paused_worker(&m, Some(&live)), None);
        assert_eq!(paused_worker(&m, None), None);
        let _ = other.kill();
        let _ = other.wait();
    }
}
