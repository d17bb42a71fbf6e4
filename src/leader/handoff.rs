//! The shutdown handoff of SPEC section 7 for a set of teammates: each is asked to stop (the
//! request id recorded with the member before the request is sent) and, when asked to wait,
//! the answers are acted on until a deadline. `shutdown`, `delete`, `down`, `demo` and the
//! leader console use it. A whole team is asked a batch at a time (one read and one write of
//! the team file per batch) and its answers are acted on as they come, those that came
//! together at once (`leader::reconcile`), so 1,000 teammates cost a few passes, not 1,000.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::Handoff;
use crate::domain::message::new_id;
use crate::domain::{Body, Envelope, LEADER, Name, Status};
use crate::error::{Error, Result};
use crate::store::{Item, Store, SyncBell, Topic};

/// Names as one comma-separated list.
pub fn names(v: &[Name]) -> String {
    v.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
}

/// What a handoff came to.
#[derive(Debug, Default)]
pub struct Outcome {
    pub stopped: Vec<Name>,
    /// Those of `stopped` that were stopped already, recorded so, before they were asked
    /// (nothing was asked of them; said as "already stopped").
    pub already: Vec<Name>,
    /// Those of `stopped` whose worker was gone by itself (dead) before they were asked:
    /// nothing was asked of them, they were marked stopped ("was not running (dead)").
    pub was_dead: Vec<Name>,
    pub refused: Vec<(Name, String)>,
    pub silent: Vec<Name>,
    /// Those of `silent` whose worker is stopped by a signal (this pid): no wait is long enough
    /// for them; they answer once continued (new-user QA 42: "still in a turn?").
    pub paused: Vec<(Name, u32)>,
    /// Those of `silent` whose turn's process is stopped by a signal (this pid): they answer
    /// once it is continued and the turn ends.
    pub paused_turns: Vec<(Name, super::PausedTurn)>,
    /// Asked, not waited for (`--no-wait`).
    pub requested: Vec<Name>,
    /// Running again at the end of `--all` (resumed by a message meanwhile).
    pub running: Vec<Name>,
    /// Asked, and their worker died instead of answering; what was left of them was ended
    /// (true: nothing of it runs any more). Not stopped: dead, as any teammate whose worker
    /// went without a clean exit.
    pub died: Vec<(Name, bool)>,
    /// Stopped early by Ctrl-C or SIGTERM (in a command that catches them, `signals`): those
    /// asked and not yet answered are in `silent`, their requests still awaited; those not
    /// asked yet are in no list.
    pub interrupted: Option<nix::sys::signal::Signal>,
    /// Panes of those stopped (or dead) found to be the user's (respawned with a program of
    /// theirs): left open, teamctl's tags taken off, by teammate.
    pub left_open: Vec<(Name, Vec<String>)>,
    /// The holder of the team's protocol lock, in words, when it was one that nothing says
    /// will let it go (stopped, or not teamctl: `Store::lock_look`): the answers of `silent`
    /// may be waiting behind it, not acted on.
    pub held: Option<String>,
}

impl Outcome {
    /// `n` was asked to stop (it answered, refused, died or is still awaited): what an
    /// interrupted handoff says of the others is that they were not asked.
    pub fn asked(&self, n: &Name) -> bool {
        self.stopped.contains(n)
            || self.silent.contains(n)
            || self.refused.iter().any(|(r, _)| r == n)
            || self.died.iter().any(|(d, _)| d == n)
    }

    /// The outcome for `--json`: who stopped, who was only asked, who refused and why, who
    /// did not answer in time.
    pub fn to_json(&self) -> serde_json::Value {
        let names = |v: &[Name]| v.iter().map(|n| n.as_str().to_string()).collect::<Vec<_>>();
        serde_json::json!({
            "stopped": names(&self.stopped),
            "alreadyStopped": names(&self.already),
            "wasDead": names(&self.was_dead),
            "requested": names(&self.requested),
            "refused": self.refused.iter().map(|(n, why)| serde_json::json!({
                "name": n.as_str(),
                "reason": why,
            })).collect::<Vec<_>>(),
            "noResponse": names(&self.silent),
            "paused": self.paused.iter().map(|(n, _)| n).chain(self.paused_turns.iter().map(|(n, _)| n)).map(Name::as_str).collect::<Vec<_>>(),
            "running": names(&self.running),
            "died": self.died.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            "leftOpen": self.left_open.iter().map(|(n, panes)| (n.as_str().to_string(), panes.clone().into()))
                .collect::<serde_json::Map<String, serde_json::Value>>(),
        })
    }

    /// The panes of `name` left open to the user, if any (`left_open`).
    pub fn left_open_of(&self, name: &Name) -> Option<&[String]> {
        self.left_open
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.as_slice())
    }

    /// Record what `end_members_noting` said of `members`: the panes left open.
    fn note(&mut self, members: &[crate::domain::Member], ended: Vec<super::Ended>) {
        for (m, e) in members.iter().zip(ended) {
            if !e.left_open.is_empty() {
                self.left_open.push((m.name.clone(), e.left_open));
            }
        }
    }

    pub fn into_result(self, timeout: u64) -> Result<()> {
        let mut problems = Vec::new();
        if !self.refused.is_empty() {
            // With the way on (new-user QA: a refusal said only its reason).
            let each: Vec<String> = self
                .refused
                .iter()
                .map(|(n, why)| format!("{n} refused to shut down: {why}"))
                .collect();
            let names: Vec<Name> = self.refused.iter().map(|(n, _)| n.clone()).collect();
            problems.push(format!("{}; {}", each.join("; "), force_hint(&names)));
        }
        let silent: Vec<Name> = self
            .silent
            .iter()
            .filter(|n| {
                !self.paused.iter().any(|(p, _)| p == *n)
                    && !self.paused_turns.iter().any(|(p, _)| p == *n)
            })
            .cloned()
            .collect();
        if !silent.is_empty() {
            // The request stays recorded as awaited: the teammate stops once it answers (new-user
            // QA: it stopped ten seconds after this said nothing of it).
            let stops = match silent.as_slice() {
                [_] => "it stops once it answers",
                _ => "each stops once it answers",
            };
            let why = match &self.held {
                Some(holder) => format!(
                    "its answer may wait in the leader's inbox, not acted on while the team's protocol lock is {holder}"
                ),
                None => "still in a turn?".to_string(),
            };
            problems.push(format!(
                "no shutdown response from {} within {timeout} s ({why}): the request stands and {stops}; {}",
                names(&silent),
                force_hint(&silent)
            ));
        }
        for (n, pid) in &self.paused {
            problems.push(format!(
                "no shutdown response from {n}: its worker (pid {pid}) is stopped by a signal (SIGSTOP?); the request stands and it stops once it answers, after `kill -CONT {pid}`; {}",
                force_hint(std::slice::from_ref(n))
            ));
        }
        for (n, pid) in &self.paused_turns {
            problems.push(format!(
                "no shutdown response from {n}: {}; the request stands and it stops once that turn ends; {}",
                super::paused_turn_words(n, *pid),
                force_hint(std::slice::from_ref(n))
            ));
        }
        if !self.running.is_empty() {
            problems.push(format!(
                "{} still running at the end (a message resumed it during the shutdown); run `teamctl shutdown --all` again",
                names(&self.running)
            ));
        }
        for (n, ended) in &self.died {
            problems.push(if *ended {
                format!(
                    "{n} died before it answered the shutdown; nothing of it is left running (`teamctl status` shows it dead; `teamctl resume {n}` starts it again)"
                )
            } else {
                format!(
                    "{n} died before it answered the shutdown, and some of its processes could not be ended; `teamctl doctor` lists them"
                )
            });
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::failed(problems.join("; ")))
        }
    }
}

/// The commands that end `silent` teammates now, by name: each one's own while they are few.
pub fn force_hint(silent: &[Name]) -> String {
    let names = |few: &[Name]| few.iter().map(Name::as_str).collect::<Vec<_>>().join(" ");
    match silent {
        [one] => format!("`teamctl shutdown --force {one}` ends it now"),
        // One command for them all (new-user QA 39: one each).
        few if few.len() <= 3 => {
            format!("`teamctl shutdown --force {}` ends them now", names(few))
        }
        _ => "`teamctl shutdown --force NAME` ends one now, `teamctl shutdown --all --force` every teammate".to_string(),
    }
}

/// How long a handoff waits quietly before it says whom it is waiting for.
const NOTICE_AFTER: Duration = Duration::from_secs(2);

/// Whom a handoff is waiting for and until when; a member of another host is judged by its
/// lease, which can take a while to run out when its host is gone.
fn waiting_notice(
    config: &crate::domain::TeamConfig,
    waiting: &[Name],
    deadline: Instant,
) -> String {
    let left = deadline.saturating_duration_since(Instant::now()).as_secs() + 1;
    let remote: Vec<String> = waiting
        .iter()
        .filter_map(|n| config.member(n.as_str()))
        .filter_map(|m| {
            crate::backend::host::elsewhere(m)
                .map(|h| format!("{} on {}", m.name, crate::backend::host::label(h)))
        })
        .collect();
    let mut text = format!(
        "waiting for {} to answer the shutdown request (a turn in progress finishes first; up to {left} s more)",
        names(waiting)
    );
    match remote.len() {
        0 => {}
        1 => text.push_str(&format!(
            "; {} answers from there, or counts as gone once its heartbeat lease runs out",
            remote[0]
        )),
        _ => text.push_str(&format!(
            "; {} answer from there, or count as gone once their heartbeat leases run out",
            remote.join(", ")
        )),
    }
    text
}

/// Ask each target to stop and, with `wait`, act on the answers until `timeout`.
pub fn handoff(
    store: &dyn Store,
    targets: &[Name],
    reason: Option<&str>,
    timeout: Duration,
    wait: bool,
) -> Result<Outcome> {
    let mut out = Outcome::default();
    let bell = SyncBell::default();
    let _sub = if wait {
        Some(store.subscribe_brief(&[Topic::Inbox(Name::leader()), Topic::Live], bell.bell())?)
    } else {
        None
    };
    // A Ctrl-C the command catches ends the wait at once (`signals`).
    let _ringing = crate::signals::ring_on(&bell.bell());
    let mut waiting: BTreeSet<Name> = BTreeSet::new();
    // The requests awaited, and where their answers can start in the leader's inbox: another
    // reader (the leader console) may act on a refusal first, and then only the inbox says.
    let mut asked: HashMap<Name, String> = HashMap::new();
    // Where each asked worker ran: placed anew since, it was started again (a send resumed it
    // once it had stopped).
    let mut placed: HashMap<Name, Placed> = HashMap::new();
    let leader_name = Name::leader();
    let mut answers_from = store
        .cursor(&leader_name, super::PROTOCOL_READER)?
        .min(store.inbox_end(&leader_name)?);
    // A batch of teammates at a time, under their start locks: a start in progress (a send
    // resuming one) finishes first; it clears the awaited request when it records the new
    // worker, which would then answer a request the leader no longer expects. One read of
    // the team file, one look at the panes and processes, one write of the requests awaited
    // for the whole batch (one of each per teammate made `shutdown --all` quadratic).
    let mut sorted: Vec<&Name> = targets.iter().collect();
    sorted.sort();
    sorted.dedup();
    for batch in sorted.chunks(super::START_LOCKS_AT_ONCE) {
        if crate::signals::caught().is_some() {
            // Nobody more is asked.
            break;
        }
        super::say_starts_waited(store, batch, "to ask it to shut down");
        // Ctrl-C while the locks are waited for ends the wait, and nobody of this batch is
        // asked (new-user QA 45: `^C`, then the teammate was asked, and stopped, once the
        // start ended).
        let _starting = match crate::signals::interruptible(|| super::start_locks(store, batch)) {
            Err(Error::Interrupted { .. }) => break,
            held => held?,
        };
        if crate::signals::caught().is_some() {
            break;
        }
        let config = store.load()?;
        let members = batch
            .iter()
            .map(|n| config.require(n.as_str()))
            .collect::<Result<Vec<_>>>()?;
        // One look at the batch's panes and processes (one tmux process per server).
        let seen = crate::backend::Snapshot::of(members.iter().copied());
        let (mut had_stopped, mut had_died, mut ask) = (Vec::new(), Vec::new(), Vec::new());
        for member in members {
            let status = super::effective_status_with(
                store,
                member,
                store.live(&member.name)?.as_ref(),
                &seen,
            );
            // Under its start lock (ours now): one recorded and never placed was cut short.
            let status = if super::cut_short(member, status) {
                Status::Dead
            } else {
                status
            };
            match status {
                Status::Stopped => {
                    // Stopped on its own (or its answer was missed): make sure nothing is left.
                    if member.status == Status::Stopped {
                        out.already.push(member.name.clone());
                    } else {
                        had_stopped.push(member.clone());
                    }
                    out.stopped.push(member.name.clone());
                }
                Status::Dead => {
                    had_died.push(member.clone());
                    out.was_dead.push(member.name.clone());
                    out.stopped.push(member.name.clone());
                }
                _ => ask.push(member),
            }
        }
        if !had_stopped.is_empty() {
            let ended = super::end_members_noting(store, &had_stopped, "it had stopped")?;
            out.note(&had_stopped, ended);
        }
        if !had_died.is_empty() {
            let ended = super::end_members_noting(store, &had_died, "it had died")?;
            out.note(&had_died, ended);
            // One whose pane the user took over is said so, not "was not running".
            let left_open: Vec<Name> = out.left_open.iter().map(|(n, _)| n.clone()).collect();
            out.was_dead.retain(|n| !left_open.contains(n));
        }
        // Recorded first: a response can only be acted on once the leader expects it. A
        // request still unanswered is awaited again, not repeated.
        let wanted: Vec<(Name, String)> = ask.iter().map(|m| (m.name.clone(), new_id())).collect();
        let awaited = super::expect_shutdowns(store, &wanted)?;
        for (member, (request_id, fresh)) in ask.into_iter().zip(awaited) {
            let name = &member.name;
            if fresh {
                let env = Envelope::new(
                    LEADER,
                    name.as_str(),
                    Body::ShutdownRequest {
                        request_id: request_id.clone(),
                        reason: reason.map(String::from),
                    },
                );
                store.append(name, &env)?;
            }
            asked.insert(name.clone(), request_id);
            placed.insert(name.clone(), Placed::of(member));
            waiting.insert(name.clone());
        }
    }
    if !wait {
        out.requested = waiting.into_iter().collect();
        return Ok(out);
    }
    out.interrupted = crate::signals::caught();
    let deadline = crate::domain::time::deadline_after(timeout);
    // Said once, when the answers take long enough to look like a hang.
    let notice_at = Instant::now() + NOTICE_AFTER;
    let mut noticed = false;
    while !waiting.is_empty() {
        take_answers(store, &mut waiting, &mut out)?;
        if let Some(signal) = crate::signals::caught() {
            out.interrupted = Some(signal);
            break;
        }
        // Refusals another reader acted on: read from the inbox itself.
        let mut answers = crate::store::entries(store, &leader_name, answers_from);
        for e in answers.by_ref() {
            let Item::Message(env) = e?.item else {
                continue;
            };
            let Body::ShutdownResponse {
                request_id,
                approve,
                reason,
                ..
            } = &env.body
            else {
                continue;
            };
            let Ok(n) = Name::teammate(&env.from) else {
                continue;
            };
            if !approve.0 && asked.get(&n) == Some(request_id) && waiting.remove(&n) {
                // Ended meanwhile by `kill` (or `shutdown --force`), its on-shutdown command
                // killed with it and answered as a refusal: stopped, not refused (re-QA 37:
                // "refused ... exited with signal 15", and a hint to force a stopped teammate).
                let stopped = store
                    .load()?
                    .member(n.as_str())
                    .is_some_and(|m| m.status == Status::Stopped);
                if stopped {
                    out.stopped.push(n);
                } else {
                    out.refused.push((n, reason.clone().unwrap_or_default()));
                }
            }
        }
        answers_from = answers.pos();
        // A worker that died instead of answering has not answered: what is left of it ends,
        // it stays dead, and the handoff says so (`Outcome::died`); one that stopped without
        // an answer the leader could match is cleaned up as stopped.
        let config = store.load()?;
        let seen =
            crate::backend::Snapshot::of(waiting.iter().filter_map(|n| config.member(n.as_str())));
        let restarted = |name: &Name, m: &crate::domain::Member| {
            placed.get(name).is_some_and(|p| *p != Placed::of(m))
        };
        let mut gone = Vec::new();
        for name in &waiting {
            let member = config.require(name.as_str())?;
            if restarted(name, member)
                || matches!(
                    super::effective_status_with(store, member, store.live(name)?.as_ref(), &seen),
                    Status::Dead | Status::Stopped
                )
            {
                gone.push(name.clone());
            }
        }
        if !gone.is_empty() {
            // An answer may have come just before its worker went: acted on first, so only a
            // worker that died without answering is taken for dead.
            take_answers(store, &mut waiting, &mut out)?;
        }
        gone.retain(|n| waiting.contains(n));
        for batch in gone.chunks(super::START_LOCKS_AT_ONCE) {
            // Judged again under their start locks before anything is ended: a send may have
            // resumed one since the look above (the worker asked is gone), and ending the
            // worker that send started would leave it "dead" (its start recorded after the
            // stop mark) or stopped with that message unhandled. Started again, it stopped:
            // `shutdown --all` asks it again.
            let _starting = super::start_locks(store, &batch.iter().collect::<Vec<_>>())?;
            let config = store.load()?;
            let mut died = Vec::new();
            // The same reason, the same ending: all at once.
            let mut ends: BTreeMap<&str, Vec<crate::domain::Member>> = BTreeMap::new();
            for name in batch {
                let member = config.require(name.as_str())?;
                let why = match super::effective_status(member, store.live(name)?.as_ref()) {
                    Status::Dead
                        if !restarted(name, member)
                            && crate::backend::host::elsewhere(member).is_none() =>
                    {
                        // It has not answered, and never will: said by name, and the shutdown
                        // fails (SPEC section 7), at once rather than at the timeout.
                        died.push(member.clone());
                        waiting.remove(name);
                        continue;
                    }
                    Status::Dead if restarted(name, member) => {
                        Some("it died after it was started again")
                    }
                    // A member of another host is "dead" once its lease runs out, which says
                    // nothing certain of its worker (a host cut off, a stopped process):
                    // marked stopped below, that worker ends itself if it ever comes back
                    // (`worker::heartbeat`), as the waiting notice says.
                    Status::Dead => Some("its heartbeat lease ran out before it answered"),
                    Status::Stopped => Some("it stopped"),
                    _ if restarted(name, member) => None,
                    _ => continue,
                };
                if let Some(why) = why {
                    ends.entry(why).or_default().push(member.clone());
                }
                out.stopped.push(name.clone());
                waiting.remove(name);
            }
            if !died.is_empty() {
                let ended =
                    super::end_dead_all(store, &died, "it died before it answered the shutdown")?;
                out.died.extend(died.into_iter().map(|m| m.name).zip(ended));
            }
            for (why, members) in ends {
                let ended = super::end_members_noting(store, &members, why)?;
                out.note(&members, ended);
            }
        }
        if waiting.is_empty() || Instant::now() >= deadline {
            break;
        }
        if !noticed && Instant::now() >= notice_at {
            noticed = true;
            let left: Vec<Name> = waiting.iter().cloned().collect();
            crate::errln!("teamctl: {}", waiting_notice(&config, &left, deadline));
            // One stopped by a signal answers only once continued: said now, not at the end.
            let (workers, turns) = paused_of(store, &left);
            for (n, pid) in workers {
                crate::errln!(
                    "teamctl: {}",
                    super::paused_words(&n, pid, "the shutdown request")
                );
            }
            for (n, pid) in turns {
                crate::errln!("teamctl: {}", super::paused_turn_words(&n, pid));
            }
        }
        let mut until = deadline.min(Instant::now() + Duration::from_secs(1));
        if !noticed {
            until = until.min(notice_at);
        }
        bell.wait_until(until);
    }
    out.silent = waiting.into_iter().collect();
    (out.paused, out.paused_turns) = paused_of(store, &out.silent);
    Ok(out)
}

/// A teammate and the pid of its worker stopped by a signal.
type Stopped = (Name, u32);
/// A teammate and its turn's process stopped by a signal.
type StoppedTurn = (Name, super::PausedTurn);

/// Those of `names` whose worker is stopped by a signal, and those whose turn's process is
/// (their worker running), each with the stopped pid.
fn paused_of(store: &dyn Store, names: &[Name]) -> (Vec<Stopped>, Vec<StoppedTurn>) {
    let (mut workers, mut turns) = (Vec::new(), Vec::new());
    let Ok(config) = store.load() else {
        return (workers, turns);
    };
    let stopped = super::StoppedGroups::default();
    for n in names {
        let Some(member) = config.member(n.as_str()) else {
            continue;
        };
        let live = store.live(n).ok().flatten();
        if let Some(pid) = super::paused_worker(member, live.as_ref()) {
            workers.push((n.clone(), pid));
        } else if let Some(pid) = super::paused_turn(member, live.as_ref(), &stopped) {
            turns.push((n.clone(), pid));
        }
    }
    (workers, turns)
}

/// Act on the shutdown answers that reached the leader (`reconcile`): each answer from one
/// of `waiting` moves it to stopped or refused.
fn take_answers(store: &dyn Store, waiting: &mut BTreeSet<Name>, out: &mut Outcome) -> Result<()> {
    // A holder that nothing says will let the lock go (stopped, or not teamctl) is not waited
    // for: the wait goes on to the shutdown's own deadline, its answers said to be waiting
    // (new-user QA 47: `--timeout` was passed over, the shutdown hung until killed).
    if let Some(crate::store::LockLook::Stuck(holder)) =
        store.lock_look(&crate::store::LockKey::Protocol)
    {
        if out.held.as_ref() != Some(&holder) {
            crate::errln!("teamctl: {}", super::held_words(&holder));
        }
        out.held = Some(holder);
        return Ok(());
    }
    // Ctrl-C (or SIGTERM) while the protocol lock is waited for ends the wait; the loop then
    // stops on the caught signal (attacker QA 46: a `flock` held on it hung the shutdown past
    // both).
    let handoffs = match crate::signals::interruptible(|| super::reconcile(store)) {
        Err(Error::Interrupted { .. }) => return Ok(()),
        done => done?,
    };
    for h in handoffs {
        match h {
            Handoff::Stopped(n) => {
                if waiting.remove(&n) {
                    out.stopped.push(n);
                }
            }
            Handoff::Refused(n, why) => {
                if waiting.remove(&n) {
                    out.refused.push((n, why));
                }
            }
            Handoff::LeftOpen(n, panes) => out.left_open.push((n, panes)),
            Handoff::Worktree(_, words) => crate::errln!("teamctl: {words}"),
            // Only in passing: this shutdown waited for the lock and holds it.
            Handoff::Held(_) => {}
        }
    }
    Ok(())
}

/// Where a member's worker was placed (its pid, its pane): a start changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Placed(Option<u32>, Option<String>);

impl Placed {
    fn of(member: &crate::domain::Member) -> Placed {
        Placed(member.pid, member.pane_id.clone())
    }
}
