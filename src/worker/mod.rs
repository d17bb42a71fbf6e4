//! `teamctl worker`: the teammate loop that runs in a pane or as a detached process.
//!
//! It arms an inotify watch on its inbox before the first read, then reads from its cursor,
//! handles each message in order and moves the cursor only after the message is handled
//! (at-least-once; a bounded set of recent ids drops repeats). Plain messages and task
//! assignments become turns; a shutdown request is answered as soon as the current turn is
//! done, even when other mail is queued ahead of it (that mail stays on disk for `resume`).
//! One idle notification goes to the leader per busy-to-idle edge.

mod autoclaim;
pub mod companion;
mod control;
mod heartbeat;
pub mod launch;
mod plan;
mod shutdown;
pub mod sink;
pub mod turn;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;

use crate::agent;
use crate::bus;
use crate::domain::env;
use crate::domain::interactive::frame;
use crate::domain::name::AgentId;
use crate::domain::time::now_ms;
use crate::domain::{
    Body, Envelope, IdleReason, LEADER, LiveState, Member, Name, Status, TurnInfo,
};
use crate::error::{Error, Result};
use crate::store::fsutil::{LockGuard, with_subdir};
use crate::store::{ConfigCache, Entry, Home, Item, Position, RosterCache, SharedStore, Topic};
use control::{Action, Control};
use sink::Sink;
use turn::{Stoppers, TurnEnd, TurnResult, TurnSpec};

/// The worker's cursor name in its own inbox.
pub const READER: &str = "worker";

/// The cursor older builds' `teamctl inbox NAME` kept in a teammate's inbox. No view moves or
/// reads it now (a teammate's unread is what its worker has not read), so the worker, whose
/// inbox it is, removes it as it starts. The leader's own `inbox` cursor (the leader runs no
/// worker) is in use and never touched.
pub const RETIRED_VIEW_READER: &str = "inbox";

/// The reply a sender gets when `name`'s turn for its message failed.
pub fn failure_notice(name: &str, why: &str) -> String {
    format!("teamctl: {name}'s turn failed ({why})")
}

/// Whether `text`, a reply from `name`, is its worker's failure notice (so `ask` can fail).
pub fn is_failure_notice(name: &str, text: &str) -> bool {
    text.starts_with(&format!("teamctl: {name}'s turn failed ("))
}

/// Messages read per batch: memory stays flat however long the backlog.
const BATCH: usize = 8;

/// How long a worker whose inbox directory was removed waits before it makes it again: long
/// enough for a removal of the whole team directory to finish (then nothing is made again).
const REMOVAL_SETTLE: Duration = Duration::from_millis(250);

/// `until` finished (`None`), or the name of the stopping signal that came first.
async fn unless_stopped(
    stop: &mut Stoppers,
    int: &mut tokio::signal::unix::Signal,
    until: impl std::future::Future<Output = ()>,
) -> Option<&'static str> {
    tokio::select! {
        () = until => None,
        _ = stop.terminate.recv() => Some("SIGTERM"),
        _ = stop.hangup.recv() => Some("SIGHUP"),
        _ = int.recv() => Some("SIGINT"),
    }
}

/// Recent message ids kept to drop repeats.
const SEEN: usize = crate::domain::bounded::SEEN;

/// Start the worker for `NAME@TEAM` and run it until it stops.
/// Whether an idle worker keeps the next turn's process started ahead (`launch.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ahead {
    /// No turn has run here yet (a teammate that never gets a message costs no second
    /// process), or the teammate is interactive (its turns go to its pane).
    NoTurnYet,
    /// A turn has run: one is kept started while idle.
    Keep,
    /// One ended while it waited, since the last turn: another is started; when that one
    /// ends too, `GaveUp` (`warm_ended`).
    DiedOnce,
    /// Two ended while waiting: none is started again until a turn has run.
    GaveUp,
    /// Starting one failed (out of processes or fds, say): said once, not tried again.
    Failed,
}

pub fn run(home: PathBuf, id: &str) -> Result<()> {
    // Nothing is open yet but stdio: whatever else is, it inherited (a pipe whose reader
    // waits for its end, say), and a resident worker must not hold it for its whole life.
    crate::backend::fds::close_above_stdio();
    // Before anything can rename it (`install -b`): the path agents' `teamctl` is taken from.
    crate::backend::exe::remember();
    let (name, team) = id
        .split_once('@')
        .ok_or_else(|| Error::bad(format!("worker id {id:?} is not NAME@TEAM")))?;
    let team = Name::parse_as(team, "team")?;
    let name = Name::teammate(name)?;
    let store = Home::new(home.clone()).open(&team)?;
    let _alone = only_worker(&*store, &name)?;
    turn::adopt_recorded_env(&crate::store::envfile::path(&*store, &name))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io_while("cannot start the worker runtime", e))?;
    runtime.block_on(async move {
        let mut worker = Worker::new(store, home, name)?;
        worker.run().await
    })
}

/// How long a starting worker waits for another worker of its member on this host to end
/// (one being shut down or killed as this one is started) before it gives up.
const ALONE_WITHIN: Duration = Duration::from_secs(10);

/// One worker per member on a host: an exclusive `flock` held for the worker's whole life
/// (the kernel lets go however it ends, `kill -9` too), taken before any mail is read. A second
/// worker (started by hand beside a running one, or while an old one is still ending) waits
/// `ALONE_WITHIN` and then ends without reading anything; two workers on one inbox would
/// handle its mail twice and out of order. Across hosts the member's lease does this.
fn only_worker(store: &dyn crate::store::Store, name: &Name) -> Result<LockGuard> {
    let locks = store.local_dir().join("locks");
    let path = locks.join(format!("{name}.worker"));
    with_subdir(&locks, 1, || LockGuard::acquire_within(&path, ALONE_WITHIN))?.ok_or_else(|| {
        let pid = store.live(name).ok().flatten().map(|l| l.pid);
        Error::failed(format!(
            "another worker of {name} is running on this host{}; a teammate has one worker (`teamctl kill {name}` ends it)",
            pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
        ))
    })
}

/// What handling one message leads to.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    Continue,
    /// Work was done without reading mail (an auto-claimed task): look again before idling.
    Again,
    Exit,
    /// Exit without handling the current message: it stays unread for `resume`.
    Abandon,
}

struct Worker {
    store: SharedStore,
    home: PathBuf,
    name: Name,
    member: Member,
    live: LiveState,
    sink: Sink,
    seen: VecDeque<String>,
    /// Set after a turn; taken when the worker next goes idle.
    since_idle: Option<(IdleReason, String)>,
    /// Control messages found ahead of the cursor (`control.rs`).
    control: Control,
    bell: Arc<Notify>,
    /// Tasks finished since the worker was last idle.
    task_tally: autoclaim::Tally,
    /// The team file as last read, with its stamp: re-read only when it changed.
    config: ConfigCache,
    /// Its roster likewise, for delivering mail (`deliver`).
    roster: RosterCache,
    /// An interactive teammate's agent pane (see `companion.rs`).
    companion: Option<companion::Companion>,
    /// How long each write of the live state vouches for the worker, on a store that hosts
    /// share (`heartbeat.rs`).
    lease: Option<Duration>,
    /// When the team this worker joined was made (`heartbeat::Owner`).
    team_created: u64,
    /// What this worker was started as, on a store that hosts share: checked before each turn.
    owner: Option<heartbeat::Owner>,
    /// The next turn's process, started while idle (`launch.rs`).
    warm: Option<launch::Warm>,
    /// Whether to keep one started (`Ahead`).
    ahead: Ahead,
    /// The worker's binary was removed with nothing in its place: said once (until it is back).
    exe_gone_said: bool,
}

impl Worker {
    fn new(store: SharedStore, home: PathBuf, name: Name) -> Result<Worker> {
        // Its own member only: the team file's other members are not parsed (400 KB with
        // 1,000 members, read by every worker as it starts).
        let roster = store.roster()?;
        roster.require(name.as_str())?;
        let mut member = roster
            .member(name.as_str())?
            .expect("a member, checked above");
        // On a store that hosts share, what it runs is this host's own word, not the file's.
        crate::store::spec::overlay(&*store, &mut member)?;
        let now = now_ms();
        let previous = store.live(&name)?;
        let live = LiveState {
            status: Status::Starting,
            pid: std::process::id(),
            turn_pgid: None,
            current_turn: None,
            current_task: None,
            since: now,
            last_seen: now,
            turns: 0,
            last_idle_reason: None,
            pane_id: std::env::var("TMUX_PANE").ok(),
            handled_control: previous
                .as_ref()
                .map(|p| p.handled_control.clone())
                .unwrap_or_default(),
            session: member.session_id.clone(),
            // The count goes on where the last worker left it, in the same session only.
            session_turns: previous
                .filter(|p| p.session.is_some() && p.session == member.session_id)
                .map_or(0, |p| p.session_turns),
            lease_until: None,
            needs_user: None,
            inbox_problem: None,
        };
        let sink = Sink::open(&store.log_path(&name));
        // An interactive teammate's companion: the pane it delivers into is given by the
        // leader that started both (the team file records it only afterwards).
        let companion = member.interactive.clone().and_then(|rule| {
            let pane = std::env::var(env::COMPANION_PANE)
                .ok()
                .or_else(|| member.pane_id.clone())?;
            let server = match std::env::var(env::COMPANION_SERVER) {
                Ok(s) => crate::backend::tmux::argv::Server::from_record(Some(&s)),
                Err(_) => {
                    crate::backend::tmux::argv::Server::from_record(member.tmux_socket.as_deref())
                }
            };
            Some(companion::Companion::new(server, pane, rule))
        });
        let mut live = live;
        if let Some(c) = &companion {
            live.pane_id = Some(c.pane.clone());
        }
        Ok(Worker {
            store,
            home,
            name,
            member,
            live,
            sink,
            seen: VecDeque::with_capacity(SEEN),
            since_idle: None,
            control: Control::default(),
            bell: Arc::new(Notify::new()),
            task_tally: autoclaim::Tally::default(),
            config: None,
            roster: None,
            companion,
            lease: None,
            team_created: roster.created_at(),
            owner: None,
            warm: None,
            ahead: Ahead::NoTurnYet,
            exe_gone_said: false,
        })
    }

    async fn run(&mut self) -> Result<()> {
        let bell = self.bell.clone();
        let mut topics = vec![Topic::Inbox(self.name.clone())];
        if self.member.auto_claim {
            topics.push(Topic::Tasks);
        }
        if self.companion.is_some() {
            topics.push(Topic::Hooks(self.name.clone()));
        }
        // Armed before the first read: nothing written after this point can be missed. An
        // inbox that cannot be watched at the start (a file or link in its directory's place)
        // is the loop's, as when it happens later: the worker says so in `status` and `doctor`
        // and watches once that is fixed. Before, it died at once, `resume` said "resumed",
        // and only the dead pane said why (new-user QA).
        let ring: crate::store::Bell = Arc::new(move || bell.notify_one());
        let mut unwatched = false;
        let mut _subscription = match self.store.subscribe(&topics, ring.clone()) {
            Ok(s) => Some(s),
            Err(_) => {
                unwatched = true;
                None
            }
        };
        let mut armed = self.store.inbox_generation(&self.name);
        let mut stop = Stoppers {
            interrupt: signal(SignalKind::user_defined1()).map_err(sig_err)?,
            terminate: signal(SignalKind::terminate()).map_err(sig_err)?,
            hangup: signal(SignalKind::hangup()).map_err(sig_err)?,
        };
        let mut int = signal(SignalKind::interrupt()).map_err(sig_err)?;
        if self.store.spans_hosts() {
            let (every, lease) = heartbeat::period();
            self.lease = Some(lease);
            let owner = heartbeat::Owner {
                pid: std::process::id(),
                team_created: self.team_created,
                host: self.member.host.clone(),
            };
            self.owner = Some(owner.clone());
            heartbeat::start(
                self.store.clone(),
                self.member.clone(),
                owner,
                self.live.pane_id.clone(),
                every,
                lease,
            );
        }
        if !self.name.is_leader()
            && let Err(e) = self.store.remove_cursor(&self.name, RETIRED_VIEW_READER)
        {
            self.sink.note(&format!(
                "warning: cannot remove the unused `inbox` cursor of an older teamctl ({e})"
            ));
        }
        self.sink.note(&format!(
            "{} ready (pid {}); waiting for mail",
            self.member.agent_id,
            std::process::id()
        ));
        if let Some(c) = &self.companion
            && !c.watch(&self.member.agent_id, self.bell.clone())
        {
            self.sink.note("the agent's pane is gone; exiting");
            return Ok(());
        }
        self.take_up_own_tasks();
        self.set_status(Status::Idle);
        // What kept the inbox from being watched again, last said (said once).
        let mut watch_problem: Option<String> = None;
        loop {
            // An interactive teammate's agent ended (its pane with it): nothing to deliver
            // into. Dead, not stopped: `send` and `ask` resume it with a new pane.
            if self.companion.as_ref().is_some_and(|c| c.exited()) {
                self.sink
                    .note("the agent's pane is gone (its program ended); exiting");
                return Ok(());
            }
            // The inbox directory removed (and perhaps made again by a sender): the watch went
            // with it. Make it again, arm anew, and read the new log from its start.
            let now = self.store.inbox_generation(&self.name);
            // After a problem (a link where the directory should be), armed anew even when
            // the same directory came back: its watch did not survive the move (QA: moved
            // away and back, the teammate never woke again).
            if now.is_none() || now != armed || watch_problem.is_some() || unwatched {
                if now.is_none() {
                    // Removed: a removal of the whole team (by hand) is let finish first; a
                    // team that is gone is not made again, and nothing is written for it.
                    if let Some(sig) =
                        unless_stopped(&mut stop, &mut int, tokio::time::sleep(REMOVAL_SETTLE))
                            .await
                    {
                        return self.exit_on_signal(sig);
                    }
                    if self.store.stamp().is_none() {
                        self.sink
                            .note("warning: the team directory is gone; waiting to be ended");
                        match unless_stopped(&mut stop, &mut int, self.bell.notified()).await {
                            Some(sig) => return self.exit_on_signal(sig),
                            None => continue,
                        }
                    }
                }
                // Its generation read first: a directory replaced while the watch is being
                // armed then reads as changed at the next look, and is armed anew again.
                let before = self.store.inbox_generation(&self.name);
                match self.store.subscribe(&topics, ring.clone()) {
                    Ok(s) => {
                        _subscription = Some(s);
                        unwatched = false;
                    }
                    Err(e) => {
                        // Removed again while being made (a `rm -rf` in a loop), or a link or
                        // file where the directory should be (never followed: `prepare`
                        // refuses it): not the end of the worker; the same wait, then another
                        // look. Said once, not every look (QA: a link there logged a line
                        // every 250 ms, without end).
                        let said = e.to_string();
                        if watch_problem.as_deref() != Some(said.as_str()) {
                            self.sink.note(&format!(
                                "warning: cannot watch the inbox again ({said}); trying again until it can (said once)"
                            ));
                            // `status` and `doctor` say why no mail is read (QA: `status`
                            // showed a turn long done as still running, `doctor` all well).
                            self.live.inbox_problem = Some(said.clone());
                            self.go_idle()?;
                            self.save_live();
                            watch_problem = Some(said);
                        }
                        if let Some(sig) =
                            unless_stopped(&mut stop, &mut int, tokio::time::sleep(REMOVAL_SETTLE))
                                .await
                        {
                            return self.exit_on_signal(sig);
                        }
                        continue;
                    }
                }
                armed = before.or_else(|| self.store.inbox_generation(&self.name));
                self.control.restart();
                if watch_problem.take().is_some() {
                    self.live.inbox_problem = None;
                    self.save_live();
                    self.sink
                        .note("the inbox directory is back; watching it anew");
                } else {
                    self.sink.note(
                        "warning: the inbox directory was removed; made it again, watching anew",
                    );
                }
            }
            let mut cursor = self.store.cursor(&self.name, READER)?;
            let scanned = self.scan_control_at(cursor);
            let Some(mut at_cursor) = self.unless_removed(scanned, armed).await? else {
                continue;
            };
            if let Some(req) = self.control.take_shutdown() {
                match self.answer_shutdown(&req, &mut stop).await? {
                    Next::Exit | Next::Abandon => return Ok(()),
                    Next::Continue | Next::Again => {}
                }
                // Answering took a while and may have moved the cursor: read anew.
                cursor = self.store.cursor(&self.name, READER)?;
                at_cursor.clear();
            }
            // A wake-up from idle reads and parses its message once: what the look-ahead
            // read at the cursor is what a read there would return.
            let entries = if at_cursor.is_empty() {
                let read = self.store.read(&self.name, cursor, BATCH);
                let Some(entries) = self.unless_removed(read, armed).await? else {
                    continue;
                };
                entries
            } else {
                at_cursor
            };
            if entries.is_empty() {
                if self.member.auto_claim {
                    match self.try_auto_claim(&mut stop).await? {
                        Next::Exit | Next::Abandon => return Ok(()),
                        Next::Again => continue,
                        Next::Continue => {}
                    }
                }
                self.go_idle()?;
                tokio::select! {
                    () = self.bell.notified() => {}
                    _ = stop.terminate.recv() => return self.exit_on_signal("SIGTERM"),
                    _ = stop.hangup.recv() => return self.exit_on_signal("SIGHUP"),
                    _ = int.recv() => return self.exit_on_signal("SIGINT"),
                    // An interrupt with no turn running has nothing to cancel.
                    _ = stop.interrupt.recv() => {}
                    // The next turn's process died while it waited: not left `<defunct>`.
                    () = async {
                        match &self.warm {
                            Some(w) => w.ended().await,
                            None => std::future::pending().await,
                        }
                    } => self.warm_ended().await,
                }
                continue;
            }
            for entry in entries {
                let next = match entry.item {
                    Item::Message(env) => self.handle(*env, &mut stop).await?,
                    Item::Garbage(warning) => {
                        self.sink.note(&format!("warning: {warning}"));
                        Next::Continue
                    }
                    Item::Blank => Next::Continue,
                };
                if next == Next::Abandon {
                    return Ok(());
                }
                // The cursor moves only once the message is handled, and only in the log the
                // message came from: an inbox directory removed or made again meanwhile (by
                // hand) has a log of its own, read from its own start once the worker has
                // armed anew (the top of the loop). Before, the old log's offset was written
                // into the new directory, and the new log's first messages were skipped.
                let mut same_log = self.store.inbox_generation(&self.name) == armed;
                if same_log {
                    let set = self.store.set_cursor(&self.name, READER, entry.end);
                    same_log = self.unless_removed(set, armed).await?.is_some();
                }
                if next == Next::Exit {
                    return Ok(());
                }
                if !same_log {
                    break;
                }
                let scanned = self.scan_control_at(entry.end);
                if self.unless_removed(scanned, armed).await?.is_none() {
                    break;
                }
                if self.control.shutdown_pending() {
                    break;
                }
            }
        }
    }

    /// `done`, unless it failed because the inbox directory was removed or replaced while it
    /// ran (by hand: `rm -rf` takes its files one by one, so the worker can find the cursors'
    /// directory gone, or make it again just as its parent goes): then `None`, and the loop
    /// goes back to its top, which arms anew and reads the new log from its start. A removal
    /// still under way when the failure is seen is given `REMOVAL_SETTLE` to finish. Any other
    /// failure is the worker's end, as before (QA: a worker died with "inboxes/bob/cursors: No
    /// such file or directory" when its inbox directory was removed just after a turn).
    async fn unless_removed<T>(&self, done: Result<T>, armed: Option<u64>) -> Result<Option<T>> {
        let e = match done {
            Ok(v) => return Ok(Some(v)),
            Err(e) => e,
        };
        let moved = || self.store.inbox_generation(&self.name) != armed;
        if moved() {
            return Ok(None);
        }
        tokio::time::sleep(REMOVAL_SETTLE).await;
        if moved() { Ok(None) } else { Err(e) }
    }

    /// Look ahead of the cursor for shutdown requests and plan approval responses, each byte
    /// once.
    fn scan_control(&mut self) -> Result<()> {
        let cursor = self.store.cursor(&self.name, READER)?;
        self.scan_control_at(cursor).map(drop)
    }

    /// `scan_control` from `cursor`, the worker's cursor as just read or set. When the
    /// look-ahead starts at the cursor itself (a wake-up from idle), what it read there comes
    /// back too, up to `BATCH` entries, for the loop to handle without reading the same bytes
    /// again; otherwise nothing does.
    fn scan_control_at(&mut self, cursor: Position) -> Result<Vec<Entry>> {
        let from = self.control.start(cursor);
        let keep = from == cursor;
        let mut at_cursor = Vec::new();
        let store = self.store.clone();
        let mut all = crate::store::entries(&*store, &self.name, from);
        for e in all.by_ref() {
            let e = e?;
            if keep && at_cursor.len() < BATCH {
                at_cursor.push(e.clone());
            }
            let Item::Message(env) = e.item else {
                continue;
            };
            if let Some(settled) = self.control.see(*env, &self.live.handled_control) {
                self.remember_control(&settled);
            }
        }
        self.control.scanned(all.pos());
        Ok(at_cursor)
    }

    async fn handle(&mut self, env: Envelope, stop: &mut Stoppers) -> Result<Next> {
        let action = control::action(&env, &self.seen, &self.live.handled_control);
        if action == Action::Skip {
            return Ok(Next::Continue);
        }
        // A worker back from a pause (or a cut-off network) whose member has moved or was
        // stopped meanwhile handles nothing more: the message stays for the member's worker.
        // The team file is read through the worker's cache: again only when it changed.
        let why = match &self.owner {
            Some(owner) => self
                .store
                .load_cached(&mut self.config)
                .ok()
                .and_then(|config| heartbeat::lost_in(config, &self.name, owner)),
            None => None,
        };
        if let Some(why) = why {
            self.sink
                .note(&format!("{why}; exiting without handling more mail"));
            return Ok(Next::Abandon);
        }
        crate::domain::bounded::push(&mut self.seen, env.id.clone(), SEEN);
        if matches!(action, Action::Turn(_) | Action::Task(..)) && self.over_hops(&env)? {
            return Ok(Next::Continue);
        }
        match action {
            Action::Skip => Ok(Next::Continue),
            Action::Turn(text) => self.turn(&env, text, &[], stop).await,
            Action::Task(task_id, subject) => {
                self.assigned_task(&env, task_id, subject, stop).await
            }
            Action::Shutdown => self.answer_shutdown(&env, stop).await,
            Action::Ignore(kind) => {
                self.sink.note(&format!(
                    "ignored a {kind} from {} (not for teammates)",
                    env.from
                ));
                Ok(Next::Continue)
            }
        }
    }

    /// The loop guard: a message more hops away from its origin than the team allows is
    /// left stored but starts no turn, and the leader hears of the loop once.
    fn over_hops(&mut self, env: &Envelope) -> Result<bool> {
        // Hop 0 (the leader's mail, anything sent from outside a turn) is within any limit:
        // the team file, read again after every change to it (400 KB with 1,000 members, each
        // worker parsing it on its next message), is not parsed for it. Only that it is there.
        if env.hops == 0 && self.store.stamp().is_some() {
            return Ok(false);
        }
        let max = self.store.load_cached(&mut self.config)?.max_hops();
        if env.hops <= max {
            return Ok(false);
        }
        self.sink.note(&format!(
            "loop guard: not answering {} from {} ({} hops, over --max-hops {max})",
            env.id, env.from, env.hops
        ));
        if self.store.first_loop_notice(&env.from, self.name.as_str()) {
            let text = format!(
                "teamctl: loop guard: {from} and {me} kept messaging each other; a message from {from} to {me} reached {hops} hops (over --max-hops {max}) and started no turn. It is stored: `teamctl inbox {me} --all` shows it; send {me} a new message to go on.",
                from = env.from,
                me = self.name,
                hops = env.hops
            );
            self.send(LEADER, Body::message(text, None))?;
        }
        Ok(true)
    }

    /// Run one turn for `env` and answer its sender.
    async fn turn(
        &mut self,
        env: &Envelope,
        text: &str,
        extra_env: &[(String, String)],
        stop: &mut Stoppers,
    ) -> Result<Next> {
        let summary = env.body.preview();
        self.live.current_turn = Some(TurnInfo {
            message_id: env.id.clone(),
            from: env.from.clone(),
            summary: summary.clone(),
            started_at: now_ms(),
            hops: env.hops,
        });
        if self.member.runs_agent() && !self.member.plan_mode_required {
            // Written once the agent's process group exists (with it, for `interrupt`): one
            // live-state write per turn start instead of two.
            self.mark_status(Status::Working);
        } else {
            self.set_status(Status::Working);
        }
        self.sink.note(&format!("<- {}: {summary}", env.from));
        let mut extra_env = extra_env.to_vec();
        let mut with_plan = None;
        if self.member.plan_mode_required {
            match self.plan_gate(env, text, &extra_env, stop).await? {
                plan::Gate::Approved(plan) => {
                    extra_env.push((env::PLAN.into(), turn::env_value(&plan)));
                    // A preset agent reads no environment: the plan goes with the message
                    // (second new-user pass: a Claude teammate never saw its approved plan).
                    if self.member.agent.is_some() && !plan.trim().is_empty() {
                        with_plan = Some(format!(
                            "{text}\n\nYour plan for this, approved by {LEADER}:\n{plan}"
                        ));
                    }
                    self.set_status(Status::Working);
                }
                plan::Gate::Done(next) => return Ok(next),
            }
        }
        let text = with_plan.as_deref().unwrap_or(text);
        // Where the sender's inbox ends now: a report the turn sends itself lands after it.
        let sender_end = Name::parse(&env.from)
            .ok()
            .and_then(|n| Some((self.store.inbox_end(&n).ok()?, n)));
        if self.companion.is_some() {
            // Working (and the turn recorded, for `interrupt`) once the message is pasted.
            let Some(result) = self.interactive_turn(env, text, stop).await? else {
                return Ok(Next::Abandon);
            };
            // Whatever the agent asked the user belonged to this turn.
            self.live.needs_user = None;
            return self
                .turn_done(env, summary, &result, sender_end, stop)
                .await;
        }
        let Some(result) = self.agent_turn(env, text, &extra_env, stop).await? else {
            // No agent command: show the message for a person to answer.
            self.sink.output(format!("{text}\n").as_bytes());
            self.finish_turn(IdleReason::Available, summary);
            return self.after_turn();
        };
        self.turn_done(env, summary, &result, sender_end, stop)
            .await
    }

    /// After a turn: answer the sender (unless the turn reported to it already with
    /// `teamctl send`, which carried `inReplyTo`), record the outcome, stop or go on.
    async fn turn_done(
        &mut self,
        env: &Envelope,
        summary: String,
        result: &TurnResult,
        sender_end: Option<(Position, Name)>,
        stop: &mut Stoppers,
    ) -> Result<Next> {
        match sender_end {
            Some((from, sender)) if result.succeeded() && self.reported(&sender, from, &env.id) => {
                // That report was the answer, `ask` took it; the turn's output stays in the
                // pane and the log only.
                self.sink.note(&format!(
                    "{} already has this turn's report (teamctl send); its output is not sent again",
                    env.from
                ));
            }
            _ => {
                if !self.answer_with_room(env, result, stop).await? {
                    // Not handled: the cursor stays, so `resume` runs this message again.
                    return Ok(Next::Abandon);
                }
            }
        }
        let reason = match result.end {
            TurnEnd::Exited(0) => IdleReason::Available,
            TurnEnd::Interrupted => IdleReason::Interrupted,
            _ => IdleReason::Failed,
        };
        let what = if result.succeeded() {
            summary
        } else {
            result.failure()
        };
        self.finish_turn(reason, what);
        self.task_turn_done(result);
        if result.end == TurnEnd::Stopped {
            // Not handled: the cursor stays, so `resume` runs this message again.
            self.exit_on_signal("a stop signal")?;
            return Ok(Next::Abandon);
        }
        self.after_turn()
    }

    /// Run the member's agent (preset or `--exec` command) for `env` as one turn of its
    /// session; `None` when no agent answers this member.
    async fn agent_turn(
        &mut self,
        env: &Envelope,
        text: &str,
        extra_env: &[(String, String)],
        stop: &mut Stoppers,
    ) -> Result<Option<TurnResult>> {
        if !self.member.runs_agent() {
            return Ok(None);
        }
        // The turn counts in the session once its agent has started (a turn that could not
        // start leaves no trace in the agent's conversation).
        self.live.session_turns += 1;
        let turn_no = self.live.session_turns;
        let mut vars = self.turn_env(env, text, extra_env);
        let session = self.session_id();
        vars.push((env::SESSION_ID.into(), session.clone()));
        vars.push((env::TURN.into(), turn_no.to_string()));
        let mut spec = TurnSpec {
            command: self.member.command.clone().unwrap_or_default(),
            argv: None,
            cwd: PathBuf::from(&self.member.cwd),
            env: vars,
            stdin: text.to_string(),
            timeout: self.member.turn_timeout_secs.map(Duration::from_secs),
            spill: Some(self.reply_file(env)),
        };
        let preset = self.member.agent.as_deref().and_then(agent::preset::find);
        let mut prompt = String::new();
        let home = self.home.display().to_string();
        let sessions_dir = self.store.local_dir().join("sessions");
        let sessions = sessions_dir.display().to_string();
        let (model, agent_args) = (self.member.model.clone(), self.member.agent_args.clone());
        // A store reached over the network (NATS): a sandboxed agent needs it for `teamctl`.
        let networked = self.store.spans_hosts();
        let cut =
            preset.is_some_and(|p| p.message_in_args()) && text.len() > agent::preset::ARG_ROOM;
        // Where `message_cut` puts the whole text, for a preset whose file tools must be let in.
        let cut_dir = self
            .store
            .local_dir()
            .join("messages")
            .display()
            .to_string();
        // A preset agent gets the message framed with its sender and id, which no text can
        // fake (`domain::interactive::frame`); a plain `--exec` gets the text as it is.
        let message = match preset {
            Some(_) if cut => self.message_cut(env, text)?,
            Some(_) => frame(&env.from, &env.id, text),
            None => text.to_string(),
        };
        let message = message.as_str();
        let args = |session: &str, turn: u64, prompt: &str| -> (Vec<String>, String) {
            preset.map_or_else(Default::default, |p| {
                p.turn(&agent::TurnArgs {
                    session,
                    turn,
                    model: model.as_deref(),
                    prompt,
                    message,
                    home: &home,
                    sessions: &sessions,
                    networked,
                    extra: &agent_args,
                    cut_dir: cut.then_some(cut_dir.as_str()),
                })
            })
        };
        // The files of a turn in `session` (`MessageVia::File`, `ReplyVia::AiderHistory`): the
        // one the message is written to; the one the reply is read from (aider's chat history).
        let files = |session: &str| {
            let a = agent::TurnArgs {
                session,
                turn: turn_no,
                model: None,
                prompt: "",
                message: "",
                home: &home,
                sessions: &sessions,
                networked,
                extra: &[],
                cut_dir: None,
            };
            let message = preset.and_then(|p| p.message_file(&a)).map(PathBuf::from);
            let reply = preset.and_then(|p| p.reply_file(&a)).map(PathBuf::from);
            let own = preset.map(|p| p.own_files(&a)).unwrap_or_default();
            (message, reply, own)
        };
        // The files the agent opens itself: never through a link (it would read and write
        // outside the home) nor a FIFO (it would block): attacker QA. Else the turn fails
        // saying why (`not_run`); the worker goes on. The reply file is then made anew.
        let history_of = |session: &str| -> std::result::Result<Option<PathBuf>, String> {
            let (_, reply, own) = files(session);
            for f in own {
                crate::store::fsutil::check_file(std::path::Path::new(&f))
                    .map_err(|e| e.to_string())?;
            }
            let Some(f) = reply else { return Ok(None) };
            crate::store::fsutil::with_subdir(&sessions_dir, 1, || turn::fresh_record(&f))
                .map_err(|e| e.to_string())?;
            Ok(Some(f))
        };
        let mut history = match history_of(&session) {
            Ok(h) => h,
            Err(why) => return Ok(Some(self.not_run(why))),
        };
        // The message's text goes on stdin, or into its file (stdin then empty), removed after
        // the turn (`unplace`): the message is in the inbox; its copy for the turn is not kept.
        let place = |session: &str, text: String| -> Result<String> {
            match files(session).0 {
                Some(file) => {
                    crate::store::fsutil::with_subdir(&sessions_dir, 1, || {
                        crate::store::fsutil::write_atomic(&file, text.as_bytes(), false)
                    })?;
                    Ok(String::new())
                }
                None => Ok(text),
            }
        };
        let unplace = |session: &str| {
            if let Some(file) = files(session).0 {
                let _ = std::fs::remove_file(file);
            }
        };
        // The session the turn ran in last.
        let mut ran_in = session.clone();
        if let Some(preset) = preset {
            prompt = self.team_prompt()?;
            if preset.uses_sessions_dir() {
                crate::store::fsutil::ensure_dir_levels(&sessions_dir, 1)?;
            }
            let (argv, text) = args(&session, turn_no, &prompt);
            spec.argv = Some(argv);
            spec.stdin = place(&session, text)?;
        } else if let Some(name) = &self.member.agent {
            let why = format!("unknown agent preset {name:?} in the team file");
            return Ok(Some(TurnResult {
                end: TurnEnd::Exited(127),
                ..self.not_run(why)
            }));
        }
        let mut result = self.run_spec(&spec, stop).await;
        // On stderr only: stdout is the model's text, which may say anything (attacker QA: a
        // model that wrote "Error starting session" gave up a working session, and ran the
        // message three times).
        let refused = |r: &TurnResult| {
            preset.is_some_and(|p| {
                matches!(r.end, TurnEnd::Exited(c) if c != 0)
                    && p.session_retry.iter().any(|s| r.stderr_tail.contains(s))
            })
        };
        if refused(&result) {
            // The agent lost the session (or already has it): once more the other way.
            let as_turn = if turn_no <= 1 { 2 } else { 1 };
            self.sink.note(&format!(
                "session {session} could not be {}; running the turn again {}",
                if as_turn == 1 { "continued" } else { "started" },
                if as_turn == 1 {
                    "as a new session"
                } else {
                    "continuing it"
                },
            ));
            let (argv, text) = args(&session, as_turn, &prompt);
            spec.argv = Some(argv);
            spec.stdin = place(&session, text)?;
            result = self.run_spec(&spec, stop).await;
            if refused(&result) {
                // Refused both ways: the agent keeps a record of the id that it can neither
                // continue nor start again (Gemini CLI, after a first turn that failed at the
                // model), so nothing of it can be resumed. A new session, or every later turn
                // fails the same.
                let fresh = self.new_session(&session);
                self.sink.note(&format!(
                    "session {session} can be neither continued nor started; running the turn as new session {fresh}"
                ));
                self.live.session_turns = 1;
                for (k, v) in &mut spec.env {
                    if k == env::SESSION_ID {
                        v.clone_from(&fresh);
                    } else if k == env::TURN {
                        *v = "1".into();
                    }
                }
                let (argv, text) = args(&fresh, 1, &prompt);
                spec.argv = Some(argv);
                unplace(&session);
                history = match history_of(&fresh) {
                    Ok(h) => h,
                    Err(why) => return Ok(Some(self.not_run(why))),
                };
                spec.stdin = place(&fresh, text)?;
                ran_in.clone_from(&fresh);
                result = self.run_spec(&spec, stop).await;
            }
        }
        unplace(&ran_in);
        if let Some(file) = &history
            && result.succeeded()
        {
            match turn::recorded_reply(file, &spec) {
                Ok(reply) => result.stdout = reply,
                Err(why) => result.no_reply(&why),
            }
        }
        if !result.spawned {
            self.live.session_turns -= 1;
            self.save_live();
            if let Some(p) = preset {
                result.stderr_tail = format!(
                    "{} (is {} installed and on PATH? {})",
                    result.stderr_tail, p.program, p.install
                );
            }
        }
        Ok(Some(result))
    }

    /// The member's session id (recorded in the team file by `spawn`; made and recorded
    /// here for a member spawned by an older teamctl).
    fn session_id(&mut self) -> String {
        // Only a UUID goes on an agent's command line: anything else (a forged or damaged
        // record) could be read there as a flag.
        if let Some(id) = &self.member.session_id
            && uuid::Uuid::parse_str(id).is_ok()
        {
            return id.clone();
        }
        self.record_session(&|s| s.is_none_or(|s| uuid::Uuid::parse_str(s).is_err()))
    }

    /// A new session id for the member in place of `old`, which its agent cannot use.
    fn new_session(&mut self, old: &str) -> String {
        self.record_session(&|s| s.is_none_or(|s| s == old || uuid::Uuid::parse_str(s).is_err()))
    }

    /// Make a session id and record it as the member's where `stale` says of the recorded one;
    /// the member's id as recorded then.
    fn record_session(&mut self, stale: &dyn Fn(Option<&str>) -> bool) -> String {
        let id = agent::new_session_id();
        let name = self.name.clone();
        let recorded = self.store.update(&mut |cfg| {
            if let Some(m) = cfg.member_mut(name.as_str())
                && stale(m.session_id.as_deref())
            {
                m.session_id = Some(id.clone());
            }
            Ok(())
        });
        let id = recorded
            .ok()
            .and_then(|cfg| cfg.member(name.as_str()).and_then(|m| m.session_id.clone()))
            .filter(|id| uuid::Uuid::parse_str(id).is_ok())
            .unwrap_or(id);
        self.member.session_id = Some(id.clone());
        // On a store that hosts share, this host's own copy of what the member runs holds it.
        let _ = crate::store::spec::save(&*self.store, &self.member);
        self.live.session = Some(id.clone());
        id
    }

    /// The team prompt for this member, from the team file as it is now.
    fn team_prompt(&mut self) -> Result<String> {
        let config = self.store.load_cached(&mut self.config)?;
        let mates: Vec<String> = config
            .teammates()
            .filter(|m| m.name != self.name)
            .map(|m| m.name.to_string())
            .collect();
        Ok(agent::prompt::TeamPrompt {
            team: config.name.as_str(),
            description: &config.description,
            name: self.name.as_str(),
            leader: LEADER,
            teammates: &mates,
            interactive: false,
            runs_teamctl: self
                .member
                .agent
                .as_deref()
                .and_then(agent::preset::find)
                .is_none_or(|p| p.runs_teamctl(&self.member.agent_args)),
            instructions: self.member.prompt.as_deref(),
        }
        .render())
    }

    /// A turn that fails before its agent runs, for `why`; the worker goes on.
    fn not_run(&mut self, why: String) -> TurnResult {
        self.live.session_turns -= 1;
        TurnResult {
            spawned: false,
            end: TurnEnd::Exited(1),
            stdout: String::new(),
            stderr_tail: why,
        }
    }

    /// Run a command as a turn does (own process group, recorded for `interrupt`).
    async fn run_spec(&mut self, spec: &TurnSpec, stop: &mut Stoppers) -> TurnResult {
        let store = self.store.clone();
        let name = self.name.clone();
        let mut live = self.live.clone();
        let warm = self.warm.take();
        if self.companion.is_none() && self.ahead != Ahead::Failed {
            self.ahead = Ahead::Keep;
        }
        let result = turn::run(spec, &mut self.sink, stop, warm, move |pgid| {
            live.turn_pgid = Some(pgid);
            live.last_seen = now_ms();
            let _ = store.set_live(&name, &live);
        })
        .await;
        self.live.turn_pgid = None;
        match result {
            Ok(r) => r,
            Err(e) => TurnResult {
                spawned: false,
                end: TurnEnd::Exited(127),
                stdout: String::new(),
                stderr_tail: e.to_string(),
            },
        }
    }

    /// When this worker's binary was removed (not upgraded: nothing is at its path), its
    /// agents' `teamctl` is not there: one line in the log, not a silent miss on `PATH`
    /// (looked at each time the worker goes idle: at its start and after each turn).
    fn say_if_exe_gone(&mut self) {
        match crate::backend::exe::gone() {
            Some(exe) if !self.exe_gone_said => {
                self.exe_gone_said = true;
                self.sink.note(&format!(
                    "warning: this worker's teamctl ({}) was removed and nothing is in its place: its agent finds no `teamctl` there (only another on PATH, if any); install teamctl there again, or `teamctl kill {}` and spawn it with an installed one",
                    exe.display(),
                    self.name
                ));
            }
            Some(_) => {}
            None => self.exe_gone_said = false,
        }
    }

    fn turn_env(
        &self,
        env: &Envelope,
        text: &str,
        extra: &[(String, String)],
    ) -> Vec<(String, String)> {
        let team = self.store.team().to_string();
        let mut path = crate::backend::exe::agent_bin_dir(Some(&self.home))
            .display()
            .to_string();
        if let Ok(old) = std::env::var("PATH") {
            path = format!("{path}:{old}");
        }
        let summary = match &env.body {
            Body::Message { summary, .. } => summary.clone(),
            other => other.preview(),
        };
        let mut vars = vec![
            (env::HOME.to_string(), self.home.display().to_string()),
            (env::TEAM.into(), team),
            (env::AGENT_NAME.into(), self.name.to_string()),
            (env::AGENT_ID.into(), self.member.agent_id.clone()),
            (
                env::PROMPT.into(),
                self.member.prompt.clone().unwrap_or_default(),
            ),
            (env::FROM.into(), env.from.clone()),
            (env::MESSAGE.into(), turn::env_value(text)),
            (env::MESSAGE_ID.into(), env.id.clone()),
            (env::SUMMARY.into(), turn::env_value(&summary)),
            (env::HOPS.into(), env.hops.to_string()),
            ("PATH".into(), path),
        ];
        if let Some(model) = &self.member.model {
            vars.push((env::MODEL.into(), model.clone()));
        }
        vars.extend(extra.iter().cloned());
        vars
    }

    /// The file that gets the whole of a reply too long to send: `replies/ID.txt` in the team
    /// directory, by the message's id (any other id spelling gets a fresh one).
    fn reply_file(&self, env: &Envelope) -> PathBuf {
        let id = if !env.id.is_empty()
            && env.id.len() <= 64
            && env
                .id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            env.id.clone()
        } else {
            crate::domain::message::new_id()
        };
        self.store
            .local_dir()
            .join("replies")
            .join(format!("{id}.txt"))
    }

    /// `text`, a message too long for an argument (gemini), cut to
    /// `agent::preset::ARG_ROOM` and framed, with a marker after the frame naming
    /// `messages/ID.txt` beside the replies, which gets the whole text (0600, never through a
    /// link): every turn of such a message failed with "Argument list too long" (attacker QA).
    /// The marker is outside the frame (teamctl's, not the sender's; inside, the frame would
    /// blank the id in its path).
    fn message_cut(&self, env: &Envelope, text: &str) -> Result<String> {
        let replies = self.reply_file(env);
        let dir = self.store.local_dir().join("messages");
        let path = dir.join(replies.file_name().unwrap_or_default());
        crate::store::fsutil::with_subdir(&dir, 1, || {
            crate::store::fsutil::write_atomic(&path, text.as_bytes(), false)
        })?;
        let mut end = agent::preset::ARG_ROOM;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Ok(format!(
            "{}\n[teamctl: message cut: {} of {} bytes not shown; the whole message is in {}]",
            frame(&env.from, &env.id, &text[..end]),
            text.len() - end,
            text.len(),
            path.display()
        ))
    }

    /// Whether `sender`'s inbox, from byte `from` on, holds a message of ours in reply to `id`.
    fn reported(&self, sender: &Name, from: Position, id: &str) -> bool {
        crate::store::entries(&*self.store, sender, from)
            .map_while(|e| e.ok())
            .any(|e| {
                matches!(&e.item, Item::Message(m) if m.from == self.name.as_str()
                    && matches!(&m.body, Body::Message { in_reply_to: Some(r), .. } if r == id))
            })
    }

    /// Send the turn's stdout (or a failure notice) back to the sender. A teammate's reply is
    /// never answered automatically, so two agents cannot ping-pong forever.
    fn answer(&mut self, env: &Envelope, result: &TurnResult) -> Result<()> {
        let is_teammate_reply = env.from != LEADER
            && matches!(
                &env.body,
                Body::Message {
                    in_reply_to: Some(_),
                    ..
                }
            );
        if is_teammate_reply || env.from == self.name.as_str() {
            return Ok(());
        }
        let text = if result.succeeded() {
            if result.stdout.trim().is_empty() {
                return Ok(());
            }
            result.stdout.clone()
        } else if result.end == TurnEnd::Stopped {
            return Ok(());
        } else {
            failure_notice(self.name.as_str(), &result.failure())
        };
        let mut body = Body::message(text, None);
        if let Body::Message { in_reply_to, .. } = &mut body {
            *in_reply_to = Some(env.id.clone());
        }
        self.send_hops(&env.from, body, env.hops.saturating_add(1))
    }

    /// `answer`, waiting while it cannot be written: no room on the file system (ENOSPC,
    /// EDQUOT), or the sender's inbox not a directory (a file or link in its place). The
    /// answer is kept in memory and written once it can be, the message stays unhandled
    /// meanwhile (the cursor does not move), and the worker lives on, its log saying why
    /// (once). Before, the failed write ended the worker, silently on a full disk (its log
    /// was full too), and each `resume` ran the turn again into the same failure (both QA
    /// passes). A sender no longer in the team is not waited for (`send_hops`), nor a team
    /// that is gone. False:
    /// SIGTERM or SIGHUP came first, and the message is left for `resume`.
    async fn answer_with_room(
        &mut self,
        env: &Envelope,
        result: &TurnResult,
        stop: &mut Stoppers,
    ) -> Result<bool> {
        let mut wait = Duration::from_millis(200);
        let mut waited = false;
        loop {
            match self.answer(env, result) {
                // A team that is gone (removed by hand) is not waited for: the worker ends,
                // as it did before.
                Err(e) if self.store.stamp().is_none() => return Err(e),
                Err(e) => {
                    if !waited {
                        let why = if no_room(&e) {
                            "no room"
                        } else {
                            "cannot write it"
                        };
                        self.sink.note(&format!(
                            "{why}: the answer to {} waits ({e}); trying again until it can be written",
                            env.from
                        ));
                        waited = true;
                    }
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        _ = stop.terminate.recv() => {
                            self.exit_on_signal("SIGTERM")?;
                            return Ok(false);
                        }
                        _ = stop.hangup.recv() => {
                            self.exit_on_signal("SIGHUP")?;
                            return Ok(false);
                        }
                    }
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
                Ok(()) => {
                    if waited {
                        self.sink
                            .note(&format!("the answer to {} is written", env.from));
                    }
                    return Ok(true);
                }
            }
        }
    }

    fn send(&mut self, to: &str, body: Body) -> Result<()> {
        self.send_hops(to, body, 0)
    }

    /// Send with a hop count (the loop guard).
    fn send_hops(&mut self, to: &str, body: Body, hops: u32) -> Result<()> {
        let mut env = Envelope::new(self.name.as_str(), to, body);
        env.hops = hops;
        let sent = match AgentId::parse(to, "recipient") {
            // A sender of another team (`send NAME@TEAM`): the answer goes back there, under
            // this teammate's agent id.
            Ok(Some(id)) if &id.team != self.store.team() => {
                env.from = self.name.agent_id(self.store.team());
                env.to = id.name.as_str().to_string();
                bus::across(&*self.store, &id, &env).map(|_| Vec::new())
            }
            _ => self.deliver(&env),
        };
        match sent {
            Ok(_) => Ok(()),
            // The sender may have left the team; say so in the log, keep working.
            Err(Error::BadInput(why)) => {
                self.sink.note(&format!("could not answer {to}: {why}"));
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Validate and append `env`, against the team file as it is now (read again only when
    /// it changed: with 300 members it is about 200 KB of JSON, and every turn sends twice).
    fn deliver(&mut self, env: &Envelope) -> Result<Vec<Name>> {
        if let Some(done) = bus::to_leader(&*self.store, &self.name, env) {
            return done;
        }
        // As a roster: a teammate's reply to another reads one member's worth of the team
        // file after a change to it, not all 400 KB of 1,000 members.
        let roster = self.store.roster_cached(&mut self.roster)?;
        bus::deliver_in(&*self.store, roster, env)
    }

    fn finish_turn(&mut self, reason: IdleReason, what: String) {
        self.live.turns += 1;
        self.live.current_turn = None;
        self.live.last_idle_reason = Some(reason);
        let worst = match (&self.since_idle, reason) {
            (Some((IdleReason::Failed, w)), IdleReason::Available) => {
                (IdleReason::Failed, w.clone())
            }
            _ => (reason, what),
        };
        self.since_idle = Some(worst);
    }

    /// After a turn: stop when `--max-turns` is reached.
    fn after_turn(&mut self) -> Result<Next> {
        match self.member.max_turns {
            Some(max) if self.live.turns >= max => {
                self.go_idle()?;
                let text = format!(
                    "{} stopped after {max} turns (--max-turns {max}); unread mail stays on disk, `teamctl resume {}` brings it back",
                    self.name, self.name
                );
                self.send(LEADER, Body::message(text, None))?;
                self.stop_cleanly()?;
                Ok(Next::Exit)
            }
            _ => Ok(Next::Continue),
        }
    }

    /// The busy-to-idle edge: one notification to the leader, then the idle state.
    fn go_idle(&mut self) -> Result<()> {
        if let Some((reason, summary)) = self.since_idle.take() {
            self.task_tally.clear();
            self.send(
                LEADER,
                Body::IdleNotification {
                    idle_reason: reason,
                    summary: Some(summary),
                },
            )?;
        }
        if self.live.status != Status::Idle {
            self.set_status(Status::Idle);
        }
        // Checked while idle, not on a message's way to its agent.
        self.say_if_exe_gone();
        self.warm_up();
        Ok(())
    }

    /// Have the next turn's process started and waiting (`launch.rs`), once a turn has run.
    fn warm_up(&mut self) {
        if !matches!(self.ahead, Ahead::Keep | Ahead::DiedOnce)
            || self.warm.as_mut().is_some_and(launch::Warm::waiting)
        {
            return;
        }
        let tag = [
            (env::HOME.to_string(), self.home.display().to_string()),
            (env::AGENT_ID.to_string(), self.member.agent_id.clone()),
        ];
        match launch::Warm::start(&self.member.agent_id, &tag) {
            Ok(w) => self.warm = Some(w),
            Err(e) => {
                // Turns start the plain way, as before; said once.
                self.ahead = Ahead::Failed;
                self.warm = None;
                self.sink.note(&format!(
                    "warning: cannot start a turn's process ahead ({e}); turns start when their message comes"
                ));
            }
        }
    }

    /// The next turn's process ended while it waited (killed from outside, say): waited for,
    /// so no `<defunct>` child stays until the next message. Another is started in its place
    /// (at the next `go_idle`) once; when that one ends too before a turn has run, turns start
    /// when their message comes until one has run, rather than one process after another.
    async fn warm_ended(&mut self) {
        let Some(warm) = self.warm.take() else {
            return;
        };
        let how = warm
            .reap()
            .await
            .map_or_else(|| "how is not known".to_string(), |s| s.to_string());
        if self.ahead == Ahead::DiedOnce {
            self.ahead = Ahead::GaveUp;
            self.sink.note(&format!(
                "warning: the process started ahead for the next turn ended again while waiting ({how}); the next turn starts when its message comes"
            ));
        } else {
            self.ahead = Ahead::DiedOnce;
            self.sink.note(&format!(
                "warning: the process started ahead for the next turn ended while waiting ({how}); starting another"
            ));
        }
    }

    fn remember_control(&mut self, id: &str) {
        crate::domain::bounded::remember(
            &mut self.live.handled_control,
            id.to_string(),
            crate::domain::bounded::HANDLED,
        );
    }

    /// A clean exit not asked for by the leader (max turns): record it as stopped.
    fn stop_cleanly(&mut self) -> Result<()> {
        self.set_status(Status::Stopped);
        let name = self.name.clone();
        self.store.update(&mut |cfg| {
            if let Some(m) = cfg.member_mut(name.as_str()) {
                m.status = Status::Stopped;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Exit on a signal. Not a clean stop: the live state is left as it was, so `status`
    /// shows the member as dead (or stopped, when the leader recorded a kill).
    #[allow(
        clippy::unnecessary_wraps,
        reason = "callers return it from their select! arms"
    )]
    fn exit_on_signal(&mut self, what: &str) -> Result<()> {
        self.sink.note(&format!("{what} received; exiting"));
        Ok(())
    }

    fn set_status(&mut self, status: Status) {
        self.mark_status(status);
        self.save_live();
    }

    /// Change the status in memory only; the next live-state write carries it.
    fn mark_status(&mut self, status: Status) {
        if self.live.status != status {
            self.live.since = now_ms();
        }
        self.live.status = status;
    }

    fn save_live(&mut self) {
        self.live.last_seen = now_ms();
        if let Some(lease) = self.lease {
            self.live.lease_until = Some(self.live.last_seen + lease.as_millis() as u64);
        }
        if let Err(e) = self.store.set_live(&self.name, &self.live) {
            self.sink
                .note(&format!("warning: cannot write live state: {e}"));
        }
    }
}

#[allow(clippy::needless_pass_by_value, reason = "passed to map_err by name")]
fn sig_err(e: std::io::Error) -> Error {
    Error::failed(format!("cannot install signal handlers: {e}"))
}
/// The file system has no room for a write (ENOSPC), or the user's quota is spent (EDQUOT).
fn no_room(e: &Error) -> bool {
    matches!(
        e.io_kind(),
        Some(std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
    )
}
