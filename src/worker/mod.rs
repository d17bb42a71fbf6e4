//! `teamctl worker`: the teammate loop that runs in a pane or as a detached process.
//!
//! It arms an inotify watch on its inbox before the first read, then reads from its cursor,
//! handles each message in order and moves the cursor only after the message is handled
//! (at-least-once; a bounded set of recent ids drops repeats). Plain messages and task
//! assignments become turns; a shutdown request is answered as soon as the current turn is
//! done, even when other mail is queued ahead of it (that mail stays on disk for `resume`).
//! One idle notification goes to the leader per busy-to-idle edge.
//!
//! Here: the worker's state and its loop. The loop's pieces are beside it: the inbox's watch
//! (`watch.rs`), one message and its turn (`handle.rs`, the agent's turn in `agent_turn.rs`,
//! `call.rs` and `session.rs`), what the worker sends (`answer.rs`).

mod agent_turn;
mod answer;
mod autoclaim;
mod call;
pub mod companion;
mod control;
mod handle;
mod heartbeat;
pub mod launch;
mod placed;
mod plan;
mod previous;
mod session;
mod shutdown;
pub mod sink;
pub mod turn;
mod watch;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;

use crate::domain::env;
use crate::domain::time::now_ms;
use crate::domain::{Body, IdleReason, LEADER, LiveState, Member, Name, Status};
use crate::error::{Error, Result};
use crate::store::fsutil::{LockGuard, with_subdir};
use crate::store::{ConfigCache, Entry, Home, Item, Position, RosterCache, SharedStore};
use control::Control;
use sink::Sink;
use turn::Stoppers;

/// Rounds of plan, request, rejection before a turn fails (`plan approve` names them).
pub use plan::MAX_ROUNDS as PLAN_ROUNDS;

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

/// Whether `text`, a reply from `name`, is its worker's failure notice (so `ask` can fail):
/// a turn that failed, or one plan approval ended without running (`plan::NOTICES`; new-user
/// QA: `ask` printed "bob's plan command failed" on stdout and exited 0).
pub fn is_failure_notice(name: &str, text: &str) -> bool {
    text.strip_prefix("teamctl: ")
        .and_then(|t| t.strip_prefix(name))
        .and_then(|t| t.strip_prefix("'s "))
        .is_some_and(|rest| {
            rest.starts_with("turn failed (") || plan::NOTICES.iter().any(|n| rest.starts_with(n))
        })
}

/// Messages read per batch: memory stays flat however long the backlog.
const BATCH: usize = 8;

/// The signals the loop answers: those that end a turn (`Stoppers`, passed on to each turn)
/// and SIGINT, which ends the worker between turns.
struct Signals {
    stop: Stoppers,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Signals> {
        Ok(Signals {
            stop: Stoppers {
                interrupt: signal(SignalKind::user_defined1()).map_err(sig_err)?,
                terminate: signal(SignalKind::terminate()).map_err(sig_err)?,
                hangup: signal(SignalKind::hangup()).map_err(sig_err)?,
            },
            int: signal(SignalKind::interrupt()).map_err(sig_err)?,
        })
    }

    /// `until` finished (`None`), or the name of the stopping signal that came first.
    async fn unless(
        &mut self,
        until: impl std::future::Future<Output = ()>,
    ) -> Option<&'static str> {
        tokio::select! {
            () = until => None,
            _ = self.stop.terminate.recv() => Some("SIGTERM"),
            _ = self.stop.hangup.recv() => Some("SIGHUP"),
            _ = self.int.recv() => Some("SIGINT"),
        }
    }
}

/// Where the loop goes after one of its steps.
enum Step<T> {
    /// On with this round, with what the step found.
    On(T),
    /// Back to the top of the loop.
    Again,
    /// Out of the loop: the worker ends.
    Out,
}

/// Recent message ids kept to drop repeats.
const SEEN: usize = crate::domain::bounded::SEEN;

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

/// Start the worker for `NAME@TEAM` and run it until it stops.
pub fn run(home: PathBuf, id: &str) -> Result<()> {
    // Nothing is open yet but stdio: whatever else is, it inherited (a pipe whose reader
    // waits for its end, say), and a resident worker must not hold it for its whole life.
    crate::backend::fds::close_above_stdio();
    let placed = placed::take_marker();
    // Before anything can rename it (`install -b`): the path agents' `teamctl` is taken from.
    crate::backend::exe::remember();
    let (name, team) = id
        .split_once('@')
        .ok_or_else(|| Error::bad(format!("worker id {id:?} is not NAME@TEAM")))?;
    let team = Name::parse_as(team, "team")?;
    let name = Name::teammate(name)?;
    let store = Home::new(home.clone()).open(&team)?;
    // Only where teamctl placed it, checked before the lock (`placed.rs`).
    if let Err(e) = placed::check(&*store, &name, id, placed) {
        // Kept in the member's log (a worker in a pane teamctl made and could not record
        // says why only there), as a stray's refusal, not the member's own error (new-user
        // QA: a refused hand-run worker made the healthy teammate's log say "error:").
        Sink::open(&store.log_path(&name)).note_exit(&format!(
            "note: a worker not started where teamctl placed it was refused and ended ({e})"
        ));
        return Err(e);
    }
    // Whatever ends it before its loop runs is said in its log and its live state: in a tmux
    // pane it was only on the dead pane, and `resume` said "resumed" (new-user QA).
    let failed = |e: Error| failed_to_start(&*store, &name, e);
    let _alone = only_worker(&*store, &name).map_err(failed)?;
    turn::adopt_recorded_env(&crate::store::envfile::path(&*store, &name)).map_err(failed)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(Error::io_while("cannot start the worker runtime", e)))?;
    let (store2, name2) = (store.clone(), name.clone());
    runtime.block_on(async move {
        let mut worker = Worker::new(store2, home, name2).map_err(failed)?;
        let done = worker.run().await;
        // Why it ended, in its log too: in a tmux pane it was only on the dead pane, gone
        // with it, and `log`, `status` and the next `resume` had nothing to say (attacker QA).
        if let Err(e) = &done {
            worker.sink.note_exit(&format!("error: {e}; exiting"));
            worker.live.exit_reason = Some(e.to_string());
            worker.set_status(Status::Dead);
        }
        done
    })
}

/// Say why the worker of `name` ends before its loop ran (`e`), in its log and, unless
/// another worker of it runs (whose state it is), in its live state, marked dead: the
/// leader that started it (`leader::started`) and `status` read it there. Returns `e`.
fn failed_to_start(store: &dyn crate::store::Store, name: &Name, e: Error) -> Error {
    Sink::open(&store.log_path(name)).note_exit(&format!("error: {e}; exiting"));
    let me = std::process::id();
    let previous = store.live(name).ok().flatten();
    let agent_id = name.agent_id(store.team());
    if previous
        .as_ref()
        .is_some_and(|l| l.pid != me && crate::backend::proc::is_worker(l.pid, &agent_id))
    {
        return e;
    }
    let now = now_ms();
    let mut live = previous.unwrap_or_else(|| LiveState::new(Status::Dead, me, now));
    // What the last worker handled (`handled_control`, its session's turns) stays.
    live.status = Status::Dead;
    live.pid = me;
    live.start_ticks = crate::backend::proc::start_time(me);
    live.turn_pgid = None;
    live.current_turn = None;
    live.current_task = None;
    live.since = now;
    live.last_seen = now;
    live.turns = 0;
    live.pane_id = std::env::var("TMUX_PANE").ok();
    live.lease_until = None;
    live.needs_user = None;
    live.inbox_problem = None;
    live.stopping = None;
    live.exit_reason = Some(e.to_string());
    let _ = store.set_live(name, &live);
    e
}

/// Give what start-up or a turn allocated and freed back to the system (`malloc_trim`), as the
/// worker goes idle: with 1,000 teammates a worker's heap kept about 560 KB of freed buffers
/// from reading the team at its start, a seventh of an idle worker's resident memory
/// (BENCHMARKS.md, idle RSS; issue 14 asks under 4 MiB each). glibc only.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of glibc's allocator to the system.
    unsafe {
        nix::libc::malloc_trim(0);
    }
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
    /// The last failure to write the live state said in the log, so that one that stands
    /// (a directory planted at the state file) is said once, not at every write.
    live_failure_said: Option<String>,
    /// Where this worker last read or moved its cursor to, and the inbox's generation then
    /// (the log it is a place in): its own record of handled work, put back in place of a
    /// cursor file found spoiled (`watch::read_cursor`).
    kept_cursor: Option<(Option<u64>, Position)>,
    /// Why the team's path is not to be used any more (`watch::check_path`): the worker ends.
    path_broken: Option<String>,
    /// The inbox the watch was armed on, held (`watch::store_cursor` writes the cursor into
    /// it and no other).
    held_inbox: Option<crate::store::HeldInbox>,
    /// Why the worker ends once its running turn is done (Ctrl-C in its pane meanwhile:
    /// `stop_after_turn`), carried into every live-state write.
    stopping: Arc<std::sync::Mutex<Option<String>>>,
    /// The watch on its own live state and log (`watch::OwnFiles`), from the loop's start.
    own_files: Option<watch::OwnFiles>,
    /// The line saying the turn the worker before this one ended in (`previous`), for the
    /// log as this one starts.
    ended_turn: Option<String>,
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
        let ended_turn =
            previous::ended_turn(&*store, &name, previous.as_ref(), std::process::id());
        let live = LiveState {
            // In a tmux pane this process is the pane's: its start time tells it from a
            // program the system gives the same pid later (`backend::tmux::Started`).
            start_ticks: crate::backend::proc::start_time(std::process::id()),
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
            ..LiveState::new(Status::Starting, std::process::id(), now)
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
            live_failure_said: None,
            kept_cursor: None,
            path_broken: None,
            held_inbox: None,
            stopping: Arc::default(),
            own_files: None,
            ended_turn,
        })
    }

    async fn run(&mut self) -> Result<()> {
        self.own_files = Some(watch::OwnFiles {
            ring: Arc::default(),
            watch: None,
            unwatched: false,
        });
        let mut watch = self.watch();
        let mut sig = Signals::install()?;
        self.begin();
        if let Some(c) = &self.companion
            && !c.watch(&self.member.agent_id, self.bell.clone())
        {
            self.sink.note("the agent's pane is gone; exiting");
            self.agent_ended();
            return Ok(());
        }
        if self.companion.is_some() {
            if let Some(signal) = sig.unless(self.first_look()).await {
                return self.exit_on_signal(signal);
            }
            if self.program_ended() {
                return Ok(());
            }
        }
        self.take_up_own_tasks();
        self.set_status(Status::Idle);
        give_back_freed_memory();
        loop {
            if self.program_ended() {
                return Ok(());
            }
            match self.keep_watching(&mut watch, &mut sig).await? {
                Step::On(()) => {}
                Step::Again => continue,
                Step::Out => return Ok(()),
            }
            let entries = match self.next_entries(watch.armed, &mut sig).await? {
                Step::On(entries) => entries,
                Step::Again => continue,
                Step::Out => return Ok(()),
            };
            let step = if entries.is_empty() {
                self.idle(&mut sig).await?
            } else {
                self.handle_all(entries, watch.armed, &mut sig).await?
            };
            if let Step::Out = step {
                return Ok(());
            }
        }
    }

    /// What a worker does once, before its loop: its heartbeat on a store that hosts share,
    /// the retired cursor removed, and the line saying it is ready.
    fn begin(&mut self) {
        self.take_back_pane();
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
        if let Some(line) = self.ended_turn.take() {
            self.sink.note(&line);
        }
        self.sink.note(&format!(
            "{} ready (pid {}); waiting for mail",
            self.member.agent_id,
            std::process::id()
        ));
    }

    /// A worker the user re-ran in its recorded pane (`respawn-pane -k` with no command runs
    /// the pane's command, this `teamctl worker` line, again) is the teammate, in its pane:
    /// the pane's tags are made to name this worker (`tmux::take_back`, which leaves alone a
    /// pane that does not run it or has lost the member's tag) and its pid is recorded as the
    /// member's while the member is still placed in that pane. So `status` shows it live,
    /// `ask` reaches it instead of starting a second worker, and `shutdown`, `kill` and
    /// `delete` close the pane as teamctl's own.
    fn take_back_pane(&mut self) {
        let pid = std::process::id();
        let m = &self.member;
        let Some(pane) = self
            .live
            .pane_id
            .clone()
            .filter(|p| m.pane_id.as_ref() == Some(p))
        else {
            return;
        };
        if m.pid == Some(pid)
            || m.backend_type != Some(crate::domain::BackendType::Tmux)
            || m.interactive.is_some()
            || crate::backend::host::elsewhere(m).is_some()
        {
            return;
        }
        crate::pause::at("take-back");
        match crate::backend::tmux::take_back(m, &pane, pid) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                self.sink.note(&format!(
                    "warning: this worker runs in {}'s pane {pane}, re-run there, but cannot take the pane back ({e})",
                    self.name
                ));
                return;
            }
        }
        let name = self.name.clone();
        let recorded = self
            .store
            .update_member(&mut self.roster, &name, &mut |_, _, slot| match slot {
                Some(m) if m.pane_id.as_deref() == Some(pane.as_str()) => {
                    m.pid = Some(pid);
                    m.pid_started = Some(crate::backend::proc::recorded_start(pid));
                    Ok(())
                }
                // Placed elsewhere since, or gone: nothing to change.
                _ => Err(Error::failed(format!(
                    "{name} is no longer placed in {pane}"
                ))),
            });
        match recorded {
            Ok(_) => {
                self.member.pid = Some(pid);
                self.member.pid_started = Some(crate::backend::proc::recorded_start(pid));
                self.sink.note(&format!(
                    "pane {pane} was re-run: this worker (pid {pid}) is {} there now",
                    self.name
                ));
            }
            Err(e) => self.sink.note(&format!(
                "warning: pane {pane} was re-run, but this worker cannot be recorded as {}'s ({e})",
                self.name
            )),
        }
    }

    /// The next messages to handle, read at the cursor (a shutdown request found ahead of
    /// them is answered first), in the log the watch is `armed` on; none when the inbox is
    /// read to its end.
    async fn next_entries(
        &mut self,
        armed: Option<u64>,
        sig: &mut Signals,
    ) -> Result<Step<Vec<Entry>>> {
        let mut cursor = self.read_cursor(armed)?;
        let scanned = self.scan_control_at(cursor);
        let Some(mut at_cursor) = self.unless_removed(scanned, armed).await? else {
            return Ok(Step::Again);
        };
        if let Some(req) = self.control.take_shutdown() {
            match self.answer_shutdown(&req, &mut sig.stop).await? {
                Next::Exit | Next::Abandon => return Ok(Step::Out),
                Next::Continue | Next::Again => {}
            }
            // Answering took a while and may have moved the cursor: read anew.
            cursor = self.read_cursor(armed)?;
            at_cursor.clear();
        }
        // A wake-up from idle reads and parses its message once: what the look-ahead
        // read at the cursor is what a read there would return.
        if !at_cursor.is_empty() {
            return Ok(Step::On(at_cursor));
        }
        // Through the inbox directory held since the watch was armed (`Store::read_held`).
        let read = self
            .store
            .read_held(self.held_inbox.as_ref(), &self.name, cursor, BATCH);
        Ok(match self.unless_removed(read, armed).await? {
            Some(entries) => Step::On(entries),
            None => Step::Again,
        })
    }

    /// No mail left: a task claimed (`--auto-claim`), or the idle edge and the wait for a
    /// wake-up or a signal.
    async fn idle(&mut self, sig: &mut Signals) -> Result<Step<()>> {
        if self.member.auto_claim {
            match self.try_auto_claim(&mut sig.stop).await? {
                Next::Exit | Next::Abandon => return Ok(Step::Out),
                Next::Again => return Ok(Step::Again),
                Next::Continue => {}
            }
        }
        self.go_idle();
        let signal = loop {
            let stop = &mut sig.stop;
            break tokio::select! {
            () = self.bell.notified() => None,
            // Its live state or log removed or replaced: put right at once, still idle.
            () = self.own_files_rang() => {
                // Its own writes ring too: only something wrong is waited on. A removal of the
                // whole team (by hand) is let finish first: nothing is made again in a team
                // that is going (`put_right_own_files` looks then).
                if self.own_files_wrong() {
                    if let Some(s) = sig.unless(tokio::time::sleep(watch::REMOVAL_SETTLE)).await {
                        break Some(s);
                    }
                    self.put_right_own_files();
                }
                continue;
            }
            _ = stop.terminate.recv() => Some("SIGTERM"),
            _ = stop.hangup.recv() => Some("SIGHUP"),
            _ = sig.int.recv() => Some("SIGINT"),
            // An interrupt with no turn running has nothing to cancel.
            _ = stop.interrupt.recv() => None,
            // The next turn's process died while it waited: not left `<defunct>`.
            () = async {
                match &self.warm {
                    Some(w) => w.ended().await,
                    None => std::future::pending().await,
                }
            } => {
                self.warm_ended().await;
                None
            }
            };
        };
        if let Some(signal) = signal {
            self.exit_on_signal(signal)?;
            if signal == "SIGINT" {
                self.stopped_by_user()?;
            }
            return Ok(Step::Out);
        }
        Ok(Step::Again)
    }

    /// Handle `entries` in order, the cursor moved past each once it is handled; stopped
    /// early when the inbox's log changed or a shutdown request is waiting.
    async fn handle_all(
        &mut self,
        entries: Vec<Entry>,
        armed: Option<u64>,
        sig: &mut Signals,
    ) -> Result<Step<()>> {
        for entry in entries {
            let next = match entry.item {
                // Mail for someone else (its inbox file linked to another's: attacker QA 45,
                // bob ran carol's message) is never run here; said, and passed over.
                Item::Message(env) if !addressed_to(&env, &self.name) => {
                    self.sink.note(&format!(
                        "warning: passed over message {} from {} to {}, not {}: is this inbox a link to another's?",
                        crate::output::printable_line(&env.id, 128),
                        crate::output::printable_line(&env.from, 128),
                        crate::output::printable_line(&env.to, 128),
                        self.name
                    ));
                    Next::Continue
                }
                Item::Message(env) => {
                    // Ctrl-C in its pane while the turn runs is said at once (the pane and
                    // the live state: `status` shows it stopping); the worker ends after the
                    // turn, its message handled.
                    let (store, name) = (self.store.clone(), self.name.clone());
                    let stopping = self.stopping.clone();
                    let handled = self.handle(*env, &mut sig.stop);
                    tokio::pin!(handled);
                    loop {
                        tokio::select! {
                            next = &mut handled => break next?,
                            _ = sig.int.recv() => stop_after_turn(&*store, &name, &stopping),
                        }
                    }
                }
                Item::Garbage(warning) => {
                    self.sink.note(&format!("warning: {warning}"));
                    Next::Continue
                }
                Item::Blank => Next::Continue,
            };
            if next == Next::Abandon {
                return Ok(Step::Out);
            }
            // The cursor moves only once the message is handled, and only in the log the
            // message came from: an inbox directory removed or made again meanwhile (by
            // hand) has a log of its own, read from its own start once the worker has
            // armed anew (the top of the loop). Before, the old log's offset was written
            // into the new directory, and the new log's first messages were skipped.
            crate::pause::at("worker-handled");
            let mut same_log = self.store.inbox_generation(&self.name) == armed;
            // Through the inbox held since the watch was armed (never through a link swapped
            // in above it: `store_cursor`), before the path check below: a message answered
            // is a message handled, even by a worker about to end, whatever its path now
            // leads to (a link to a copy there reads as another inbox).
            let held = self
                .held_inbox
                .as_ref()
                .is_some_and(|h| Some(h.generation) == armed);
            if same_log || held {
                let set = self.store_cursor(entry.end, armed);
                let stored = self.unless_removed(set, armed).await?.is_some();
                same_log = same_log && stored;
            }
            if self.stopping_after_turn().is_some() {
                // As a worker Ctrl-C'd while idle: the leader was told of its last turn, and
                // its state holds no turn of a worker gone. Stopped by the user, not dead
                // (new-user QA: `dead` with no reason, and `doctor` called it a problem).
                self.tell_idle();
                self.exit_on_signal("SIGINT (during the turn)")?;
                self.stopped_by_user()?;
                return Ok(Step::Out);
            }
            // A link swapped in for the team's directories ends the worker here, its
            // message answered and its cursor stored.
            self.check_path()?;
            if next == Next::Exit {
                return Ok(Step::Out);
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
        Ok(Step::Again)
    }

    /// Look ahead of the cursor for shutdown requests and plan approval responses, each byte
    /// once.
    fn scan_control(&mut self) -> Result<()> {
        let cursor = self.read_cursor(self.store.inbox_generation(&self.name))?;
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
        let mut all =
            crate::store::entries_held(&*store, self.held_inbox.as_ref(), &self.name, from);
        for e in all.by_ref() {
            let e = e?;
            if keep && at_cursor.len() < BATCH {
                at_cursor.push(e.clone());
            }
            let Item::Message(env) = e.item else {
                continue;
            };
            if !addressed_to(&env, &self.name) {
                continue;
            }
            if let Some(settled) = self.control.see(*env, &self.live.handled_control) {
                // On the field: the inbox held is borrowed meanwhile.
                remember_control_in(&mut self.live, &settled);
            }
        }
        self.control.scanned(all.pos());
        Ok(at_cursor)
    }

    /// The busy-to-idle edge: one notification to the leader, then the idle state.
    fn go_idle(&mut self) {
        self.tell_idle();
        // Checked while idle, not on a message's way to its agent.
        self.say_if_exe_gone();
        self.warm_up();
        give_back_freed_memory();
    }

    /// The idle notification owed to the leader, and the idle state written (the turn's gone
    /// from it).
    fn tell_idle(&mut self) {
        if let Some((reason, summary)) = self.since_idle.take() {
            let body = Body::IdleNotification {
                idle_reason: reason,
                summary: Some(summary.clone()),
            };
            match self.send(LEADER, body) {
                Ok(()) => self.task_tally.clear(),
                // The leader's inbox cannot be written (a link put in its place by hand,
                // the disk full): not the end of the worker, whose state then still said
                // working and whose mail waited for a resume (seen when the inboxes directory
                // was swapped for a link just after a reply). Kept, and told at the next idle
                // edge.
                Err(e) => {
                    self.sink.note(&format!(
                        "warning: could not tell {LEADER} this teammate is idle ({e}); told at the next idle edge"
                    ));
                    self.since_idle = Some((reason, summary));
                }
            }
        }
        if self.live.status != Status::Idle {
            self.set_status(Status::Idle);
        }
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
        remember_control_in(&mut self.live, id);
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

    /// Whether an interactive teammate's agent has ended (its pane with it): nothing to
    /// deliver into, so the worker ends, dead, not stopped (`send` and `ask` resume it with a
    /// new pane), its reason recorded (`agent_ended`).
    fn program_ended(&mut self) -> bool {
        if !self.companion.as_ref().is_some_and(|c| c.exited()) {
            return false;
        }
        self.sink
            .note("the agent's pane is gone (its program ended); exiting");
        self.agent_ended();
        true
    }

    /// An interactive teammate's program ended (its companion ends with it): why, from its
    /// dead pane, in its log and its live state, marked dead (`spawn` and `resume` fail with
    /// it, `status` shows it).
    fn agent_ended(&mut self) {
        let Some(c) = &self.companion else {
            return;
        };
        let why = c.why_ended(&self.member.agent_id);
        self.sink.note(&format!("the agent ended: {why}"));
        self.live.exit_reason = Some(why);
        self.live.current_turn = None;
        self.set_status(Status::Dead);
    }

    /// Ctrl-C in its pane ended it (at once when idle, after its turn when busy): the user's
    /// stop, recorded as one (`stopped`, as `kill` leaves it: its mail waits for `resume`),
    /// not a worker that died.
    /// Nothing of it is left, as after `kill`: processes its turns left running outside their
    /// group (`setsid`) but carrying its tag are ended, and its pane closes as it exits
    /// (attacker and new-user QA: a `setsid sleep` ran on, and the dead pane was reported
    /// orphaned). An interactive teammate's companion leaves the agent's pane to the user.
    fn stopped_by_user(&mut self) -> Result<()> {
        *self
            .stopping
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        self.live.current_turn = None;
        self.live.current_task = None;
        self.stop_cleanly()?;
        if self.companion.is_some() {
            return Ok(());
        }
        let record = self
            .store
            .load()
            .ok()
            .and_then(|c| c.member(self.name.as_str()).cloned());
        let member = record.as_ref().unwrap_or(&self.member);
        let mut ending = crate::backend::Ending::new(crate::backend::GRACE);
        ending.tagged_placed(&member.agent_id, member.pane_nonce.as_deref());
        if let Err(e) = ending.finish() {
            self.sink.note(&format!("warning: {e}"));
        }
        if member.backend_type == Some(crate::domain::BackendType::Tmux)
            && let Some(pane) = self.live.pane_id.clone()
            && let Err(e) = crate::backend::tmux::close_on_exit(member, &pane, std::process::id())
        {
            self.sink.note(&format!("warning: {e}"));
        }
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

    /// Why the worker ends once its running turn is done, if it does.
    fn stopping_after_turn(&self) -> Option<String> {
        self.stopping
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
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
        if status != Status::AwaitingPlanApproval {
            self.live.plan_request = None;
        }
        if status != Status::Working {
            self.live.planning = None;
        }
        self.live.status = status;
    }

    fn save_live(&mut self) {
        // Not written through a link swapped in for the team's directories: the worker ends
        // at its next check, saying why (`check_path`).
        if self.check_path().is_err() {
            return;
        }
        self.live.last_seen = now_ms();
        self.live.stopping = self.stopping_after_turn();
        if let Some(lease) = self.lease {
            self.live.lease_until = Some(self.live.last_seen + lease.as_millis() as u64);
        }
        let Err(e) = self.store.set_live(&self.name, &self.live) else {
            self.live_failure_said = None;
            // Its first state (or a file not made when its watch was armed): watched now.
            if self.own_files.as_ref().is_some_and(|o| o.unwatched) {
                self.rewatch_own_files();
            }
            return;
        };
        // Something not a state file in its place (a FIFO, link or directory planted there):
        // `status` could not tell what this teammate does until it went (attacker QA). The
        // worker, its one writer, puts a file of its own there instead; a directory it leaves.
        let failure = match self.store.live_problem(&self.name) {
            Some(why) => match self.store.replace_live(&self.name, &self.live) {
                Ok(()) => {
                    self.live_failure_said = None;
                    self.sink.note(&format!(
                        "warning: the live-state file was spoiled ({why}); replaced it with a fresh one"
                    ));
                    self.rewatch_own_files();
                    return;
                }
                Err(e) => e.to_string(),
            },
            None => e.to_string(),
        };
        if self.live_failure_said.as_deref() != Some(failure.as_str()) {
            self.sink
                .note(&format!("warning: cannot write live state: {failure}"));
            self.live_failure_said = Some(failure);
        }
    }
}

/// Record the control request `id` as handled in `live` (`Worker::remember_control`).
fn remember_control_in(live: &mut crate::domain::LiveState, id: &str) {
    crate::domain::bounded::remember(
        &mut live.handled_control,
        id.to_string(),
        crate::domain::bounded::HANDLED,
    );
}

/// Ctrl-C (SIGINT) reached the worker of `name` while a turn runs: it ends after the turn.
/// Said at once in its pane and log, with how to end the turn now, and written into its live
/// state (`stopping`: `status` shows it), which the worker's later writes carry on. Ctrl-C
/// again ends the turn now, as `teamctl interrupt` does (SIGUSR1 to the worker), which then
/// ends (QA: a second press did nothing, where most programs give up at once).
fn stop_after_turn(
    store: &dyn crate::store::Store,
    name: &Name,
    stopping: &std::sync::Mutex<Option<String>>,
) {
    const WHY: &str = "Ctrl-C in its pane";
    let mut note = Sink::open(&store.log_path(name));
    let again = stopping
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .replace(WHY.into())
        .is_some();
    if again {
        note.note(&format!(
            "SIGINT again: ending {name}'s turn now; it stops then"
        ));
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGUSR1);
        return;
    }
    note.note(&format!(
        "SIGINT received: {name} stops once the current turn is done; `teamctl interrupt {name}` ends the turn now, as does Ctrl-C again"
    ));
    // Nothing else of the worker runs meanwhile (one thread: this is the turn's `select!`).
    if let Ok(Some(mut live)) = store.live(name)
        && live.pid == std::process::id()
        && live.stopping.is_none()
    {
        live.stopping = Some(WHY.into());
        live.last_seen = now_ms();
        let _ = store.set_live(name, &live);
    }
}

#[allow(clippy::needless_pass_by_value, reason = "passed to map_err by name")]
fn sig_err(e: std::io::Error) -> Error {
    Error::failed(format!("cannot install signal handlers: {e}"))
}

/// `env` is for `me`: sent to its name, or to everyone (`*`).
fn addressed_to(env: &crate::domain::Envelope, me: &Name) -> bool {
    env.to == me.as_str() || env.to == "*"
}
