//! The inbox's watch in the worker's loop: armed before the first read, armed anew when the
//! inbox directory (or `inboxes` above it) was removed or replaced (by hand), said once (in
//! the log, `status` and `doctor`) while it cannot be; and `unless_removed`: a read or write of
//! the inbox that failed because its directory went meanwhile sends the loop back to its top.
//! Also the worker's view of the directories above: the team's whole path checked at each
//! round and before each write made by path (`check_path`; a link swapped in ends the
//! worker, never followed; a write through descriptors from the home, an answer or the
//! cursor in the held inbox, needs no check and is made before the worker ends), and its cursor read and written as its own (`read_cursor`, `store_cursor`: a
//! FIFO or link planted at it is never waited on nor followed). And its watch on its own live
//! state and log (`OwnFiles`), put right at once when removed or replaced.

use std::sync::Arc;
use std::time::Duration;

use super::{READER, Signals, Step, Worker};
use crate::error::{Error, Result};
use crate::store::wake::{Entries, EntryWatch};
use crate::store::{Bell, Home, Position, Subscription, Topic};

/// How long a worker whose inbox directory was removed waits before it makes it again: long
/// enough for a removal of the whole team directory to finish (then nothing is made again).
pub(super) const REMOVAL_SETTLE: Duration = Duration::from_millis(250);

/// The loop's watch on its inbox (and on tasks and hook events, as the member has them).
pub(super) struct Watch {
    topics: Vec<Topic>,
    ring: Bell,
    /// Held for the wake-ups it brings (they end when it is dropped); replaced when armed anew.
    #[allow(dead_code, reason = "held, never read")]
    subscription: Option<Subscription>,
    /// It could not be armed at the start: armed at the first look.
    unwatched: bool,
    /// The inbox's generation the watch was armed on: the log the cursor belongs to.
    pub armed: Option<u64>,
    /// What kept the inbox from being watched again, last said (said once).
    problem: Option<String>,
}

impl Worker {
    /// Arm the watch. Armed before the first read: nothing written after this point can be
    /// missed. An inbox that cannot be watched at the start (a file or link in its
    /// directory's place) is the loop's, as when it happens later: the worker says so in
    /// `status` and `doctor` and watches once that is fixed. Before, it died at once, `resume`
    /// said "resumed", and only the dead pane said why (new-user QA).
    pub(super) fn watch(&mut self) -> Watch {
        let bell = self.bell.clone();
        let mut topics = vec![Topic::Inbox(self.name.clone())];
        if self.member.auto_claim {
            topics.push(Topic::Tasks);
        }
        if self.companion.is_some() {
            topics.push(Topic::Hooks(self.name.clone()));
        }
        let ring: Bell = Arc::new(move || bell.notify_one());
        let mut unwatched = false;
        let subscription = match self.subscribe(&topics, ring.clone()) {
            Ok(s) => Some(s),
            Err(_) => {
                unwatched = true;
                None
            }
        };
        self.held_inbox = self.store.hold_inbox(&self.name);
        Watch {
            topics,
            ring,
            subscription,
            unwatched,
            armed: self.held_inbox.as_ref().map(|h| h.generation),
            problem: None,
        }
    }

    /// At the top of each round: the inbox directory removed (and perhaps made again by a
    /// sender) took the watch with it. Make it again, arm anew, and read the new log from its
    /// start (`Again` while it cannot be).
    pub(super) async fn keep_watching(
        &mut self,
        w: &mut Watch,
        sig: &mut Signals,
    ) -> Result<Step<()>> {
        // Before anything is read, watched or written through them (a re-arm included).
        self.check_path()?;
        let mut now = self.store.inbox_generation(&self.name);
        // The log gone from the directory held, or that directory removed: a removal under
        // way (`rm -rf` takes the log first, which rang) is let finish, then looked at again.
        // Its removal itself rings nothing while the worker holds it open, and `inboxes/` is
        // not watched (a spawn there woke every worker). The same directory still there
        // without its log is read as before (a send makes the log again).
        if now.is_some()
            && now == w.armed
            && w.problem.is_none()
            && !w.unwatched
            && self
                .held_inbox
                .as_ref()
                .is_some_and(|h| !self.store.held_inbox_whole(h))
        {
            if let Some(s) = sig.unless(tokio::time::sleep(REMOVAL_SETTLE)).await {
                self.exit_on_signal(s)?;
                return Ok(Step::Out);
            }
            now = self.store.inbox_generation(&self.name);
        }
        // The inbox's doorbell directory removed (`rm -rf bells`): its watch went with it, and
        // with it the wake for a whole `inboxes` moved away (QA: deaf for good after both).
        // Past the inotify limit, its FIFO removed or replaced there (the doorbell thread
        // looks every `DOORBELL_CHECK` and rang): writers ring nothing it holds.
        let bell_lost = |w: &Watch| {
            w.subscription
                .as_ref()
                .is_some_and(Subscription::bells_gone)
        };
        let mut bell_gone =
            w.subscription.is_some() && (bell_lost(w) || self.store.inbox_bell_missing(&self.name));
        if bell_gone {
            // A removal of more than that (the whole team, by hand) is let finish first: the
            // directory is not made again under it.
            if let Some(s) = sig.unless(tokio::time::sleep(REMOVAL_SETTLE)).await {
                self.exit_on_signal(s)?;
                return Ok(Step::Out);
            }
            now = self.store.inbox_generation(&self.name);
            bell_gone = bell_lost(w) || self.store.inbox_bell_missing(&self.name);
        }
        // After a problem (a link where the directory should be), armed anew even when
        // the same directory came back: its watch did not survive the move (QA: moved
        // away and back, the teammate never woke again).
        if !(bell_gone || now.is_none() || now != w.armed || w.problem.is_some() || w.unwatched) {
            return Ok(Step::On(()));
        }
        // Only the doorbell directory: said as that, not as the inbox directory removed.
        let only_bell = bell_gone && now.is_some() && now == w.armed && w.problem.is_none();
        if now.is_none() {
            // Removed: a removal of the whole team (by hand) is let finish first; a
            // team that is gone is not made again, and nothing is written for it.
            if let Some(s) = sig.unless(tokio::time::sleep(REMOVAL_SETTLE)).await {
                self.exit_on_signal(s)?;
                return Ok(Step::Out);
            }
            if self.store.stamp().is_none() {
                self.sink
                    .note("warning: the team directory is gone; waiting to be ended");
                return match sig.unless(self.bell.notified()).await {
                    Some(s) => {
                        self.exit_on_signal(s)?;
                        Ok(Step::Out)
                    }
                    None => Ok(Step::Again),
                };
            }
        }
        // Its generation read first: a directory replaced while the watch is being
        // armed then reads as changed at the next look, and is armed anew again.
        // Held (its directory open, in the file store) with it: the cursor is written into
        // that directory and no other (`store_cursor`).
        let held = self.store.hold_inbox(&self.name);
        let before = held.as_ref().map(|h| h.generation);
        let polls;
        match self.subscribe(&w.topics, w.ring.clone()) {
            Ok(s) => {
                polls = matches!(s.mode, crate::store::wake::WakeMode::Poll(_));
                w.subscription = Some(s);
                w.unwatched = false;
            }
            Err(e) => {
                // Removed again while being made (a `rm -rf` in a loop), or a link or
                // file where the directory should be (never followed: `prepare`
                // refuses it): not the end of the worker; the same wait, then another
                // look. Said once, not every look (QA: a link there logged a line
                // every 250 ms, without end).
                let said = e.to_string();
                if w.problem.as_deref() != Some(said.as_str()) {
                    self.sink.note(&format!(
                        "warning: cannot watch the inbox again ({said}); trying again until it can (said once)"
                    ));
                    // `status` and `doctor` say why no mail is read (QA: `status`
                    // showed a turn long done as still running, `doctor` all well).
                    self.live.inbox_problem = Some(said.clone());
                    self.go_idle();
                    self.save_live();
                    w.problem = Some(said);
                }
                if let Some(s) = sig.unless(tokio::time::sleep(REMOVAL_SETTLE)).await {
                    self.exit_on_signal(s)?;
                    return Ok(Step::Out);
                }
                return Ok(Step::Again);
            }
        }
        self.held_inbox = held.or_else(|| self.store.hold_inbox(&self.name));
        w.armed = before.or_else(|| self.held_inbox.as_ref().map(|h| h.generation));
        self.control.restart();
        if w.problem.take().is_some() {
            self.live.inbox_problem = None;
            self.save_live();
            self.sink
                .note("the inbox directory is back; watching it anew");
        } else if only_bell && polls {
            // Its doorbell cannot be armed there (a link or a file in its place).
            self.sink.note(
                "warning: the inbox's doorbell was removed or replaced, and cannot be made again; polling for mail until it can",
            );
        } else if only_bell {
            self.sink.note(
                "warning: the inbox's doorbell was removed or replaced; made it again, watching anew",
            );
        } else {
            self.sink
                .note("warning: the inbox directory was removed; made it again, watching anew");
        }
        Ok(Step::On(()))
    }

    /// `done`, unless it failed because the inbox directory was removed or replaced while it
    /// ran (by hand: `rm -rf` takes its files one by one, so the worker can find the cursors'
    /// directory gone, or make it again just as its parent goes): then `None`, and the loop
    /// goes back to its top, which arms anew and reads the new log from its start. A removal
    /// still under way when the failure is seen is given `REMOVAL_SETTLE` to finish. Any other
    /// failure is the worker's end, as before (QA: a worker died with "inboxes/bob/cursors: No
    /// such file or directory" when its inbox directory was removed just after a turn).
    pub(super) async fn unless_removed<T>(
        &self,
        done: Result<T>,
        armed: Option<u64>,
    ) -> Result<Option<T>> {
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
}

impl Worker {
    /// The team's whole path checked as commands check it (`Home::check_team_path`: the home,
    /// `teams` and the team directory no links, the caller's alone; its state directories real
    /// ones). A link swapped in for `teams` or the team directory while the worker ran was
    /// followed: it armed anew through it, answered, said it was idle and watched there, and
    /// later mail was never read (attacker QA). On a failure the worker ends (its log says why:
    /// the file it opened at the start, never through the link); its unread mail stays in the
    /// inbox for `resume`. Said once: every later check fails the same way.
    pub(super) fn check_path(&mut self) -> Result<()> {
        if let Some(why) = &self.path_broken {
            return Err(Error::failed(why.clone()));
        }
        let Err(e) = Home::new(self.home.clone()).check_team_path(self.store.team()) else {
            return Ok(());
        };
        let why = format!(
            "the team's directories are not as teamctl made them ({e}); this teammate ends rather than read or write through them, its unread mail kept in the inbox for `teamctl resume` once they are put right"
        );
        self.path_broken = Some(why.clone());
        Err(Error::failed(why))
    }

    /// The worker's cursor, read as its own (`Store::own_cursor`): a cursor file that is not a
    /// regular file (a FIFO or link planted there) is never waited on nor followed. While the
    /// worker runs, it knows where it handled its inbox to (`kept_cursor`, in the same log):
    /// a fresh cursor file holding that goes in its place, said in the log. Without that
    /// record (the worker just started) it refuses to go on, saying why: read as the start,
    /// handled messages ran again, the first one at each `resume` (attacker QA).
    pub(super) fn read_cursor(&mut self, armed: Option<u64>) -> Result<Position> {
        let read = self
            .store
            .own_cursor_held(self.held_inbox.as_ref(), &self.name, READER);
        match read {
            Ok(pos) => {
                self.kept_cursor = Some((armed, pos));
                Ok(pos)
            }
            Err(e) => match self.kept_cursor {
                Some((then, pos))
                    if then == armed && self.store.inbox_generation(&self.name) == armed =>
                {
                    self.put_back_cursor(&e, pos)?;
                    Ok(pos)
                }
                _ => Err(Error::failed(format!(
                    "cannot tell where this teammate's inbox was handled to ({e}); not reading it, so that no handled message runs again. Removing the cursor file has the inbox read from its start (handled messages then run again)"
                ))),
            },
        }
    }

    /// Move the cursor to `pos` in the log the watch is `armed` on. A cursor file spoiled
    /// meanwhile (a FIFO or link planted there) is replaced by a fresh one holding `pos`.
    /// Written through the inbox held since the watch was armed: a sender that made the
    /// inbox directory again between the caller's look at its generation and this write
    /// cannot get the old log's offset into the new directory (the write fails `NotFound`,
    /// and the loop arms anew).
    pub(super) fn store_cursor(&mut self, pos: Position, armed: Option<u64>) -> Result<()> {
        // Through the held inbox (opened by descriptors from the home) it needs no look at
        // the path first; by its path it does (never through a link swapped in above it).
        let set = match &self.held_inbox {
            Some(held) if Some(held.generation) == armed => {
                self.store.set_held_cursor(held, &self.name, READER, pos)
            }
            _ => self
                .check_path()
                .and_then(|()| self.store.set_cursor(&self.name, READER, pos)),
        };
        match set {
            Ok(()) => {}
            Err(e)
                if self.check_path().is_ok()
                    && self.store.own_cursor(&self.name, READER).is_err()
                    && self.store.inbox_generation(&self.name) == armed =>
            {
                self.put_back_cursor(&e, pos)?;
            }
            Err(e) => return Err(e),
        }
        self.kept_cursor = Some((armed, pos));
        Ok(())
    }

    fn put_back_cursor(&mut self, why: &Error, pos: Position) -> Result<()> {
        // By path: never through a link swapped in above the inbox.
        self.check_path()?;
        self.store.replace_cursor(&self.name, READER, pos)?;
        self.sink.note(&format!(
            "warning: the cursor file was spoiled ({why}); replaced it with a fresh one at byte {}, where this worker had handled its inbox to",
            pos.raw()
        ));
        Ok(())
    }
}

/// The worker's watch on its own files: its live state (`state/NAME.json`) and its log
/// (`logs/NAME.log`). Removed by hand or by `doctor --fix` (which removes a FIFO or link found
/// there), replaced by something not a file, or its state overwritten with something that is
/// not one, they are put right at once, the worker idle or not (before, an idle worker wrote
/// its state only at its next message, so `status` said `starting` meanwhile, and its log was
/// lost until a restart): its state written anew, its log followed to the file now there
/// (`Sink::follow`). Woken by inotify (the inbox's own instance: `Worker::subscribe`) on the
/// two files themselves (`wake::Entries`: removed, renamed, replaced, or written and closed,
/// its own state writes included), watched again once put right; without inotify, by nothing
/// (the state is put right at the next write, as before).
pub(super) struct OwnFiles {
    pub ring: Arc<tokio::sync::Notify>,
    /// The watch on them (inotify), to watch a file again once it was replaced or made.
    pub watch: Option<EntryWatch>,
    /// Not every one of them is watched yet (not made when the watch was armed).
    pub unwatched: bool,
}

impl Worker {
    /// The inbox's subscription (with `topics`), its own files watched in the same inotify
    /// instance (`Store::subscribe_with_entries`: one instance per worker, not two).
    fn subscribe(&mut self, topics: &[Topic], ring: Bell) -> Result<Subscription> {
        let Some(own) = &self.own_files else {
            return self.store.subscribe(topics, ring);
        };
        let files = vec![
            self.store
                .local_dir()
                .join("state")
                .join(format!("{}.json", self.name)),
            self.store.log_path(&self.name),
        ];
        let bell = own.ring.clone();
        let entries = Entries {
            files,
            bell: Arc::new(move || bell.notify_one()),
        };
        let subscription = self.store.subscribe_with_entries(topics, ring, entries)?;
        if let Some(own) = &mut self.own_files {
            own.watch = subscription.entry_watch();
            // Watched as they were when armed; one not made yet is watched once it is.
            own.unwatched = own.watch.is_some();
        }
        Ok(subscription)
    }

    /// Watch its own files again (`EntryWatch::rewatch`): after they were put right, or once
    /// its first live state was written.
    pub(super) fn rewatch_own_files(&mut self) {
        if let Some(own) = &mut self.own_files
            && let Some(watch) = &own.watch
        {
            own.unwatched = !watch.rewatch();
        }
    }

    /// Resolves when `OwnFiles` rings (never without it).
    pub(super) async fn own_files_rang(&self) {
        match &self.own_files {
            Some(own) => own.ring.notified().await,
            None => std::future::pending().await,
        }
    }

    /// Whether its live state is not its own or its log not the file it writes (what
    /// `put_right_own_files` puts right). When all is well, a file of its own replaced since it
    /// was watched (its state rewritten whole: a spoiled file replaced, or one too big for a
    /// slot) is watched again here.
    pub(super) fn own_files_wrong(&mut self) -> bool {
        let me = std::process::id();
        let wrong = !matches!(self.store.live(&self.name), Ok(Some(l)) if l.pid == me)
            || self
                .sink
                .strayed(&self.store.log_path(&self.name))
                .is_some();
        if !wrong
            && self
                .own_files
                .as_ref()
                .and_then(|o| o.watch.as_ref())
                .is_some_and(EntryWatch::stale)
        {
            self.rewatch_own_files();
        }
        wrong
    }

    /// Put right what `OwnFiles` rang for: a live state that is not this worker's (removed, a
    /// FIFO or link put there, or something not a state written into it: written anew,
    /// `save_live` saying what it replaced; a directory is said once and left) and a log that
    /// is not the file the worker writes; then both watched again.
    /// Nothing is made in a team that is gone or going (its team file or the file's
    /// directory removed), nor through a link swapped in above it (`check_path`).
    pub(super) fn put_right_own_files(&mut self) {
        // Written over again between the repair and the new watch (a write the new watch was
        // not there to see, left to the next heartbeat: CI saw it), put right again, a few
        // times at most (what cannot be put right is said once, and waits for its ring).
        for _ in 0..3 {
            self.put_right_own_files_once();
            if !self.own_files_wrong() {
                break;
            }
        }
    }

    fn put_right_own_files_once(&mut self) {
        if self.store.stamp().is_none() || self.check_path().is_err() {
            return;
        }
        let is_dir = |p: &std::path::Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
        let state = self.store.local_dir().join("state");
        let me = std::process::id();
        let mine = matches!(self.store.live(&self.name), Ok(Some(l)) if l.pid == me);
        if !mine && is_dir(&state) {
            let file = state.join(format!("{}.json", self.name));
            let gone = std::fs::symlink_metadata(&file).is_err();
            // A regular file there that reads as no state of its own (written over in place):
            // said as the removal is (a FIFO or link there `save_live` says itself).
            let spoiled = std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file());
            self.save_live();
            if self.live_failure_said.is_none() {
                if gone {
                    self.sink
                        .note("the live-state file was removed; wrote it anew");
                } else if spoiled {
                    self.sink.note(
                        "warning: the live-state file held no state of this worker's (written over); wrote it anew",
                    );
                }
            }
        }
        let log = self.store.log_path(&self.name);
        if log.parent().is_some_and(is_dir)
            && let Some(what) = self.sink.follow(&log)
        {
            self.sink.note(&format!(
                "the log file {} was {what}; logging to it anew",
                log.display()
            ));
        }
        self.rewatch_own_files();
    }
}
