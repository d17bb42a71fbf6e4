//! The store: the team file, inboxes with cursors and wake-ups, live worker state and the task
//! list, all behind the `Store` trait so that another backend (NATS JetStream, for teams spread
//! over hosts) can replace local files without touching the CLI or the worker. `FsStore` is
//! the default: plain files under `$TEAMCTL_HOME/teams/TEAM`.

#[cfg(test)]
pub(crate) mod conformance;
pub mod doorbell;
pub mod envfile;
pub mod fsutil;
pub mod home;
pub mod hooks;
pub mod inbox;
#[cfg(test)]
pub mod mem;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(not(feature = "nats"))]
#[path = "nats_off.rs"]
pub mod nats;
pub mod slots;
pub mod spec;
pub mod tasks;
pub mod team;
pub mod teamdir;
pub mod teamindex;
pub mod wake;

use std::path::PathBuf;

/// A reader's cursor file spoiled (`Store::cursor_problem`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorProblem {
    /// Something that is not a regular file is there (`fsutil::odd_kind`: a FIFO, a link, a
    /// directory): its reader (a worker) refuses it, and `resume` with it.
    NotAFile { path: PathBuf, kind: &'static str },
    /// A file holding no cursor teamctl wrote (not a number): read as the log's start.
    NoRecord { path: PathBuf },
    /// A cursor past the end of its log (the log replaced or cut by hand): read as the start.
    PastEnd { path: PathBuf, at: u64, len: u64 },
}

pub use fsutil::LockLook;
pub use home::Home;
pub use inbox::{Entry, Item};
pub use team::FsStore;
pub use wake::{Bell, Subscription, SyncBell, WakeMode};

use crate::domain::live::ShutdownAnswer;
use crate::domain::task::TaskList;
use crate::domain::{Envelope, LiveState, Member, Name, Roster, TeamConfig};
use crate::error::Result;

/// What a subscriber can be woken by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topic {
    /// New mail in a member's inbox.
    Inbox(Name),
    /// The team file changed.
    Team,
    /// A worker's live state changed.
    Live,
    /// The task list changed.
    Tasks,
    /// An interactive teammate's agent reported a hook event (`store::hooks`; host-local).
    Hooks(Name),
}

/// Where a reader is in an inbox. Opaque above the store: a byte offset in the file store, a
/// stream sequence in another. Positions of one inbox are ordered; `START` is before the first
/// message.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Position(u64);

impl Position {
    pub const START: Position = Position(0);

    /// For store implementations only: the backend's own number.
    pub fn from_raw(raw: u64) -> Position {
        Position(raw)
    }

    /// For store implementations only.
    pub fn raw(self) -> u64 {
        self.0
    }
}

/// A change stamp of the team file: two equal stamps mean it did not change in between.
/// The file store uses the file's inode, size and change time; others a revision number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp(u64, u64, i64, i64);

impl Stamp {
    /// The stamp of a file that writers replace (temp file and rename): inode, size and
    /// change time; `None` when the file cannot be looked at. (Not for files written in place:
    /// two writes within one clock tick can leave all three as they were.)
    pub fn of_file(path: &std::path::Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
    }

    /// The stamp of a file from its metadata (an open file's `fstat`).
    pub fn of(m: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp(m.ino(), m.size(), m.ctime(), m.ctime_nsec())
    }

    /// The stamp of a file from its `stat` (`fstatat` relative to a directory's descriptor).
    pub fn of_stat(st: &nix::sys::stat::FileStat) -> Stamp {
        Stamp(st.st_ino, st.st_size as u64, st.st_ctime, st.st_ctime_nsec)
    }

    /// The stamp of a revision number (a store with compare-and-set revisions).
    pub fn revision(rev: u64) -> Stamp {
        Stamp(u64::MAX, rev, 0, 0)
    }

    /// Matches no real stamp.
    const NONE: Stamp = Stamp(0, 0, 0, 0);

    /// Marks a copy this process has just written without knowing its stamp (a store whose
    /// stamp may already be another writer's): good for the next look only, as the copy an
    /// update returns is. Matches no real stamp.
    const OWN: Stamp = Stamp(0, 1, 0, 0);
}

/// Something held until dropped: a lock, a shared hold on the team.
pub struct Held(#[allow(dead_code)] Box<dyn Send>);

impl Held {
    pub fn new(guard: impl Send + 'static) -> Held {
        Held(Box::new(guard))
    }
}

/// The team's exclusive locks (`Store::lock`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockKey {
    /// One start of a member's worker at a time (spawn, resume, a send that resumes).
    Start(Name),
    /// One reader of the leader's protocol messages at a time.
    Protocol,
    /// One answer to a member's plan request at a time (`plan approve`, `plan reject`): the
    /// second finds the first's answer and sends none.
    Plan(Name),
}

/// The team file cached with its stamp (`Store::load_cached`).
pub type ConfigCache = Option<(Stamp, TeamConfig)>;

/// The team file's roster cached with its stamp (`Store::roster_cached`).
pub type RosterCache = Option<(Stamp, Roster)>;

/// `cache`'s value, read again by `read` only when `store`'s stamp changed since it was filled.
fn cached<'a, T>(
    store: &(impl Store + ?Sized),
    cache: &'a mut Option<(Stamp, T)>,
    read: impl FnOnce() -> Result<T>,
) -> Result<&'a T> {
    if let Some((then, _)) = cache.as_mut()
        && *then == Stamp::OWN
    {
        // Used once, unread (on NATS a stamp is a round trip); the next look reads again.
        *then = Stamp::NONE;
        return Ok(&cache.as_ref().expect("matched above").1);
    }
    let stamp = store.stamp();
    let fresh = matches!((&stamp, &*cache), (Some(now), Some((then, _))) if now == then);
    if !fresh {
        // Stamp first, then read: a change made in between leaves a stale stamp, so the
        // next call reads again. No stamp matches nothing: read again next time.
        *cache = Some((stamp.unwrap_or(Stamp::NONE), read()?));
    }
    Ok(&cache.as_ref().expect("filled above").1)
}

/// What `Store::update_member` does to the team: given its roster, it changes the team's own
/// fields and the one member's entry.
pub type MemberChange<'f> =
    dyn FnMut(&Roster, &mut TeamConfig, &mut Option<Member>) -> Result<()> + 'f;

/// A store shared by the parts of one process.
pub type SharedStore = std::sync::Arc<dyn Store>;

/// An inbox held as it was at one moment (`Store::hold_inbox`): its generation (what
/// `inbox_generation` said of it) and, for the file store, its directory open.
#[derive(Debug)]
pub struct HeldInbox {
    pub generation: u64,
    pub(crate) dir: Option<fsutil::DirFd>,
}

impl HeldInbox {
    pub fn new(generation: u64) -> HeldInbox {
        HeldInbox {
            generation,
            dir: None,
        }
    }
}

/// Everything the CLI, the leader and the worker need from shared state. Nothing above
/// `store/` knows which store it has. Host-local files (logs, worktrees, agent sessions, hook
/// events, recorded environments) live under `local_dir()`, on the host that uses them.
pub trait Store: Send + Sync {
    fn team(&self) -> &Name;

    /// Whether the team still exists (not deleted).
    fn exists(&self) -> bool;
    /// Read the team file.
    fn load(&self) -> Result<TeamConfig>;
    /// The team file's change stamp; `None` when it cannot be had (the team is gone).
    fn stamp(&self) -> Option<Stamp>;
    /// Change the team file (under its lock, or by compare-and-set); `f` returning an error
    /// leaves it untouched. Returns the file as written.
    fn update(&self, f: &mut dyn FnMut(&mut TeamConfig) -> Result<()>) -> Result<TeamConfig>;
    /// A shared hold on the team, taken by `send` while it checks that the team is not being
    /// deleted and appends, so that `delete`'s mark (taken under the team file's exclusive
    /// lock) falls before or after the whole send, never in between.
    fn hold_shared(&self) -> Result<Held>;
    /// An exclusive lock, held until dropped.
    fn lock(&self, key: &LockKey) -> Result<Held>;
    /// Whether `key` is held now (by anyone), asked without taking it; `None` when this store
    /// cannot tell (a lock hosts share), and then a caller takes it as perhaps held.
    fn lock_held(&self, _key: &LockKey) -> Option<bool> {
        None
    }
    /// Whether `key` is held now, and when it is, whether anything says its holder will let it
    /// go (`LockLook::Stuck`: a stopped process, or one that is not teamctl, named in words);
    /// `None` when this store cannot tell.
    fn lock_look(&self, _key: &LockKey) -> Option<LockLook> {
        None
    }

    /// Append one message to `inbox`. The caller has validated it.
    fn append(&self, inbox: &Name, env: &Envelope) -> Result<()>;
    /// Up to `max` entries of `inbox` after `from`, in order.
    fn read(&self, inbox: &Name, from: Position, max: usize) -> Result<Vec<Entry>>;
    /// The inbox's end: the position after its last message.
    fn inbox_end(&self, inbox: &Name) -> Result<Position>;
    /// Where `reader` has read `inbox` to (`START` when it never has).
    fn cursor(&self, inbox: &Name, reader: &str) -> Result<Position>;
    fn set_cursor(&self, inbox: &Name, reader: &str, pos: Position) -> Result<()>;
    /// `cursor`, as its own reader (the worker) reads it: where a store keeps cursors as files,
    /// one that is there but not a regular file (a FIFO, a link planted at it) is an error
    /// saying so, not the start (which had handled messages run again).
    fn own_cursor(&self, inbox: &Name, reader: &str) -> Result<Position> {
        self.cursor(inbox, reader)
    }
    /// `read` of `inbox` as held by `held` (`hold_inbox`): in the file store, through the
    /// directory held open, never through whatever its path names now (a link swapped in for
    /// it: attacker QA, a worker read an outside inbox through one, and its cursor, and ran
    /// its handled messages again).
    /// With no inbox held (`None`: it could not be held, its directory gone or something else
    /// in its place), the file store reads nothing by its path: an error, and the worker's
    /// next look arms anew.
    fn read_held(
        &self,
        held: Option<&HeldInbox>,
        inbox: &Name,
        from: Position,
        max: usize,
    ) -> Result<Vec<Entry>> {
        let _ = held;
        self.read(inbox, from, max)
    }
    /// `own_cursor` through `held`, as `read_held` reads.
    fn own_cursor_held(
        &self,
        held: Option<&HeldInbox>,
        inbox: &Name,
        reader: &str,
    ) -> Result<Position> {
        let _ = held;
        self.own_cursor(inbox, reader)
    }
    /// Put `pos` in place of a cursor that `own_cursor` refused (the thing there removed,
    /// never followed), for the reader that knows where it is.
    fn replace_cursor(&self, inbox: &Name, reader: &str, pos: Position) -> Result<()> {
        self.set_cursor(inbox, reader, pos)
    }
    /// What is wrong with `reader`'s cursor of `inbox` where a store keeps it as a file, if
    /// anything (`doctor` says it): looked at without following or opening anything odd.
    fn cursor_problem(&self, _inbox: &Name, _reader: &str) -> Option<CursorProblem> {
        None
    }
    /// Forget `reader`'s cursor of `inbox` (none there is no error): it reads as `START`
    /// again. For a reader that no longer reads that inbox (a teammate's old `inbox` view
    /// cursor, removed by its worker when it starts).
    fn remove_cursor(&self, inbox: &Name, reader: &str) -> Result<()>;
    /// Which incarnation of `inbox` this is; it changes when the inbox was removed and made
    /// anew (a subscriber must then subscribe again). `None` while it is missing.
    fn inbox_generation(&self, inbox: &Name) -> Option<u64>;
    /// `inbox` as it is now, held: its generation, and where the store keeps it as a
    /// directory, that directory open (`HeldInbox`). `None` while it is missing.
    fn hold_inbox(&self, inbox: &Name) -> Option<HeldInbox> {
        self.inbox_generation(inbox).map(HeldInbox::new)
    }
    /// Whether the inbox `held` is still whole: where the store keeps it as a directory, that
    /// directory not removed and its log in it. A removal under way (`rm -rf` takes the log
    /// first) is seen here before its directory is gone; the removal of a directory a worker
    /// holds open is reported by inotify only once it lets go.
    fn held_inbox_whole(&self, held: &HeldInbox) -> bool {
        let _ = held;
        true
    }
    /// Whether the directory a reader of `inbox` watches for its rings (the file store's
    /// `bells/inbox-NAME`) is missing: removed, its watch went with it, and it is armed anew.
    fn inbox_bell_missing(&self, inbox: &Name) -> bool {
        let _ = inbox;
        false
    }
    /// `set_cursor`, into the inbox `held` was taken of and no other: where the store keeps
    /// cursors in the inbox's directory, written through the one held, so never into a
    /// directory made anew in its place (the write fails `NotFound` once it is removed).
    fn set_held_cursor(
        &self,
        _held: &HeldInbox,
        inbox: &Name,
        reader: &str,
        pos: Position,
    ) -> Result<()> {
        self.set_cursor(inbox, reader, pos)
    }

    /// A worker's live state, if it has written one.
    fn live(&self, member: &Name) -> Result<Option<LiveState>>;
    /// When `live` reads none: what keeps it from being read, if anything does (a FIFO,
    /// directory or symbolic link where the file store keeps it). `status` shows it; the
    /// worker goes on without its state as before (it says so in its log).
    fn live_problem(&self, _member: &Name) -> Option<String> {
        None
    }
    /// When `live` reads none: the state file, if it is a file holding something other than a
    /// live state (written over by hand). Not a problem for a start (the worker writes its
    /// state over it), so not `live_problem`'s; `status` and `doctor` say it.
    fn live_spoiled(&self, _member: &Name) -> Option<PathBuf> {
        None
    }
    fn set_live(&self, member: &Name, state: &LiveState) -> Result<()>;
    /// `set_live` in place of what `live_problem` found (a FIFO or link where the file store
    /// keeps the state: a new file renamed over it, never followed nor opened), for the one
    /// writer of the state, its worker. A directory there is an error saying so, left as it is.
    fn replace_live(&self, member: &Name, state: &LiveState) -> Result<()> {
        self.set_live(member, state)
    }
    /// Whether the team is known to be deleted: `Ok(false)` while it exists, an error when
    /// that cannot be told now (a server away), never a guess.
    fn deleted(&self) -> Result<bool> {
        Ok(!self.exists())
    }
    /// Whether workers of several hosts may share this store (NATS): members then record
    /// their host, and workers renew a lease that other hosts judge them by.
    fn spans_hosts(&self) -> bool {
        false
    }
    /// Renew the lease of `member`'s worker `pid` until `until` (ms): its heartbeat, cheaper
    /// than rewriting the live state and waking nobody. `live` reads it back as
    /// `LiveState::lease_until` while `pid` is the worker that wrote the live state.
    fn renew_lease(&self, _member: &Name, _pid: u32, _until: u64) -> Result<()> {
        Ok(())
    }
    /// Record `member`'s answer to the shutdown request its current turn handles.
    fn set_shutdown_answer(&self, member: &Name, answer: &ShutdownAnswer) -> Result<()>;
    /// Take (read and remove) `member`'s recorded answer to `request_id`, if there is one.
    fn take_shutdown_answer(&self, member: &Name, request_id: &str) -> Option<ShutdownAnswer>;
    /// Whether the loop guard should tell the leader about a loop between `a` and `b` now:
    /// true for exactly one caller, then false for a while (`LOOP_NOTICE_QUIET`).
    fn first_loop_notice(&self, a: &str, b: &str) -> bool;

    /// The task list (empty when there is none yet).
    fn load_tasks(&self) -> Result<TaskList>;
    /// Change the task list under its lock (or by compare-and-set); `f` returning an error
    /// leaves it untouched. Returns the list as written.
    fn update_tasks(&self, f: &mut dyn FnMut(&mut TaskList) -> Result<()>) -> Result<TaskList>;

    /// Ring `bell` whenever one of `topics` changes. Armed when this returns: a read made
    /// afterwards cannot miss a change made after the read.
    fn subscribe(&self, topics: &[Topic], bell: Bell) -> Result<Subscription>;
    /// As `subscribe`, with `entries` (a worker's own live state and log) watched in the same
    /// inotify instance, ringing their own bell (`wake::Entries`); a store that cannot (NATS:
    /// live states are in the server) leaves them unwatched.
    fn subscribe_with_entries(
        &self,
        topics: &[Topic],
        bell: Bell,
        entries: wake::Entries,
    ) -> Result<Subscription> {
        let _ = entries;
        self.subscribe(topics, bell)
    }
    /// As `subscribe`, for a waiter that lives briefly (`ask`, `wait`).
    fn subscribe_brief(&self, topics: &[Topic], bell: Bell) -> Result<Subscription> {
        self.subscribe(topics, bell)
    }

    /// Where a teammate's turn output is logged on this host.
    fn log_path(&self, member: &Name) -> PathBuf;
    /// This team's directory on this host, for host-local files (logs, worktrees, sessions,
    /// hook events, recorded environments, long replies).
    fn local_dir(&self) -> PathBuf;
    /// Where the team is kept, for people: a directory, or a server's address (no secrets).
    fn location(&self) -> String {
        self.local_dir().display().to_string()
    }
    /// Remove the team and everything in it.
    fn destroy(&self) -> Result<()>;
    /// Another team kept in the same place (the same home, the same server), for messages
    /// across teams (`send NAME@TEAM`); a bad-input error when there is no such team.
    fn sibling(&self, team: &Name) -> Result<SharedStore> {
        Err(crate::error::Error::bad(format!(
            "team {} cannot be reached from team {}'s store",
            team,
            self.team()
        )))
    }
    /// When the team last changed: its team file, an inbox or a live state (doctor's stale
    /// teams).
    fn last_activity(&self) -> Option<std::time::SystemTime>;
    /// When `inbox` last got mail.
    fn last_mail(&self, inbox: &Name) -> Option<std::time::SystemTime>;
    /// Every member that has an inbox, by name (a damaged team file's members are found so).
    fn inboxes(&self) -> Vec<Name>;

    /// The team file, read again only when its stamp changed since `cache` was filled.
    fn load_cached<'a>(&self, cache: &'a mut ConfigCache) -> Result<&'a TeamConfig> {
        cached(self, cache, || self.load())
    }

    /// `update`, starting from `cache` when the team file has not changed since it was filled
    /// (not read again), and leaving the file as written in `cache`: a caller that changes
    /// the team file twice (`spawn`: the member, then its placement) parses it once. Returns
    /// the file as written. A store that cannot tell its own write's stamp keeps the copy for
    /// the next look only (`Stamp::OWN`), as a caller of `update` would use what it returned.
    fn update_cached<'a>(
        &self,
        cache: &'a mut ConfigCache,
        f: &mut dyn FnMut(&mut TeamConfig) -> Result<()>,
    ) -> Result<&'a TeamConfig> {
        *cache = None;
        let written = self.update(f)?;
        Ok(&cache.insert((Stamp::OWN, written)).1)
    }

    /// The team file for a reader of a few members (`send`): every member's name, a member
    /// in full only when asked for. A store that reads the team file whole gives it so.
    fn roster(&self) -> Result<Roster> {
        Ok(Roster::from(self.load()?))
    }

    /// `roster`, read again only when the team file's stamp changed since `cache` was filled.
    fn roster_cached<'a>(&self, cache: &'a mut RosterCache) -> Result<&'a Roster> {
        // Some members only (`roster_with`) is not the whole roster asked for here.
        if cache.as_ref().is_some_and(|(_, r)| r.is_partial()) {
            *cache = None;
        }
        cached(self, cache, || self.roster())
    }

    /// `log -f`: a tail of every inbox of the team, members who join later included, armed
    /// when this returns (whatever is stored afterwards it gives). `bell` rings when it may
    /// have more. The default reads each member's inbox from its position (`read`), woken by
    /// the caller's subscription to the inboxes.
    fn follow_inboxes<'a>(&'a self, _bell: Bell) -> Result<Box<dyn InboxTail + 'a>> {
        Ok(Box::new(ReadTail { store: self }))
    }

    /// Change one member's entry and the team's own fields (`spawn`, a worker's placement),
    /// as `update` does, without the other members being parsed or serialised again where the
    /// store can avoid it (a file store copies their text: 400 KB with 1,000 members). `f`
    /// gets the team as it is now (under the lock, or by compare-and-set): its roster, the
    /// team's own fields to change (`members` stays empty) and `name`'s entry (`None`: not a
    /// member). Afterwards `Some` replaces the entry where it was, or adds it at the end;
    /// `None` removes it. An error from `f` leaves the team file untouched. Returns the
    /// roster as written, kept in `cache` for the next look (as `update_cached`).
    fn update_member<'a>(
        &self,
        cache: &'a mut RosterCache,
        name: &Name,
        f: &mut MemberChange<'_>,
    ) -> Result<&'a Roster> {
        update_member_whole(self, cache, name, f)
    }

    /// `update_member` for a change that a crash of the machine may undo: the change is seen
    /// by every reader when this returns, as always, but it may not yet be on disk, and after
    /// a crash the team file may be the one the previous durable write left (whole, never torn
    /// or empty). For recording where a worker was placed (`leader::start_worker_in`): the
    /// crash ends that pane or process too, and the member it reverts to (placed nowhere, or
    /// where it ran before) is started again as any dead one, every pane and process checked
    /// for teamctl's tag before it is ended. A file store saves a journal commit per spawn
    /// (the directory's `fsync`); the default is `update_member`.
    fn update_member_revertible<'a>(
        &self,
        cache: &'a mut RosterCache,
        name: &Name,
        f: &mut MemberChange<'_>,
    ) -> Result<&'a Roster> {
        self.update_member(cache, name, f)
    }

    /// `roster` for a reader of `names` only (`send` to one member): the team's own fields and
    /// at least those members, all of them found, or an error as `roster` gives. A file store
    /// reads only their entries of its index (`Roster::partial`); the default is `roster`.
    fn roster_with(&self, names: &[&Name]) -> Result<Roster> {
        let _ = names;
        self.roster()
    }

    /// `roster_with`, read again only when the team file's stamp changed since `cache` was
    /// filled, or when what it holds lacks one of `names`.
    fn roster_with_cached<'a>(
        &self,
        cache: &'a mut RosterCache,
        names: &[&Name],
    ) -> Result<&'a Roster> {
        if cache
            .as_ref()
            .is_some_and(|(_, r)| r.is_partial() && !names.iter().all(|n| r.has(n.as_str())))
        {
            *cache = None;
        }
        cached(self, cache, || self.roster_with(names))
    }
}

/// What `Store::follow_inboxes` gives.
pub trait InboxTail: Send {
    /// Without waiting, the entries stored since the last call in `members`' inboxes (a
    /// store that has them all may give others' too) after each inbox's position in `pos`
    /// (an inbox not in it: from its start), in each inbox's order; `pos` is moved past them.
    fn take(
        &mut self,
        members: &[Name],
        pos: &mut std::collections::HashMap<Name, Position>,
    ) -> Result<Vec<(Name, Entry)>>;
}

/// The default `InboxTail`: every member's inbox read from its position.
struct ReadTail<'a, S: ?Sized> {
    store: &'a S,
}

impl<S: Store + ?Sized> InboxTail for ReadTail<'_, S> {
    fn take(
        &mut self,
        members: &[Name],
        pos: &mut std::collections::HashMap<Name, Position>,
    ) -> Result<Vec<(Name, Entry)>> {
        let mut out = Vec::new();
        for m in members {
            let at = pos.entry(m.clone()).or_insert(Position::START);
            let mut from = *at;
            loop {
                let batch = self.store.read(m, from, 512)?;
                let Some(last) = batch.last() else { break };
                from = last.end;
                out.extend(batch.into_iter().map(|e| (m.clone(), e)));
            }
            *at = from;
        }
        Ok(out)
    }
}

/// `Store::update_member` through `update`: every member parsed and written (the default).
pub fn update_member_whole<'a>(
    store: &(impl Store + ?Sized),
    cache: &'a mut RosterCache,
    name: &Name,
    f: &mut MemberChange<'_>,
) -> Result<&'a Roster> {
    *cache = None;
    let written = store.update(&mut |cfg| {
        let roster = Roster::from(cfg.clone());
        let mut head = crate::domain::teamtext::without_members(cfg);
        let mut member = cfg.member(name.as_str()).cloned();
        f(&roster, &mut head, &mut member)?;
        let mut members = std::mem::take(&mut cfg.members);
        match (member, members.iter().position(|m| m.name == *name)) {
            (Some(m), Some(i)) => members[i] = m,
            (Some(m), None) => members.push(m),
            (None, Some(i)) => {
                members.remove(i);
            }
            (None, None) => {}
        }
        head.members = members;
        *cfg = head;
        Ok(())
    })?;
    Ok(&cache.insert((Stamp::OWN, Roster::from(written))).1)
}

/// Whether `bytes` are a live state as a worker writes it (what `Store::live` reads).
pub fn is_live_state(bytes: &[u8]) -> bool {
    serde_json::from_slice::<LiveState>(bytes).is_ok()
}

/// Where message `id` ends in `inbox`, looked for from `from` on: `None` when it is not there
/// (before `from`: handled, if `from` is its worker's cursor).
pub fn end_of(
    store: &dyn Store,
    inbox: &Name,
    mut from: Position,
    id: &str,
) -> Result<Option<Position>> {
    loop {
        let batch = store.read(inbox, from, 64)?;
        if batch.is_empty() {
            return Ok(None);
        }
        for e in batch {
            from = e.end;
            if matches!(&e.item, Item::Message(m) if m.id == id) {
                return Ok(Some(e.end));
            }
        }
    }
}

/// Every entry of `inbox` after `from` to its end, read in batches (memory stays bounded
/// however long the inbox). `pos()` is the position of the last entry yielded: the cursor
/// value once those entries are handled.
pub fn entries<'a>(store: &'a dyn Store, inbox: &Name, from: Position) -> Entries<'a> {
    Entries {
        own: false,
        ..entries_held(store, None, inbox, from)
    }
}

/// `entries` of a worker's own inbox, read through `held` (`Store::read_held`).
pub fn entries_held<'a>(
    store: &'a dyn Store,
    held: Option<&'a HeldInbox>,
    inbox: &Name,
    from: Position,
) -> Entries<'a> {
    Entries {
        store,
        own: true,
        held,
        inbox: inbox.clone(),
        pos: from,
        next: from,
        batch: std::collections::VecDeque::new(),
        done: false,
    }
}

/// See [`entries`].
pub struct Entries<'a> {
    store: &'a dyn Store,
    /// Read as a worker reads its own inbox (`Store::read_held`), through `held`.
    own: bool,
    held: Option<&'a HeldInbox>,
    inbox: Name,
    /// Just past the last entry yielded.
    pos: Position,
    /// Where the next batch starts.
    next: Position,
    batch: std::collections::VecDeque<Entry>,
    done: bool,
}

impl Entries<'_> {
    /// Just past the last entry yielded so far.
    pub fn pos(&self) -> Position {
        self.pos
    }
}

impl Iterator for Entries<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        if self.batch.is_empty() && !self.done {
            let read = if self.own {
                self.store.read_held(self.held, &self.inbox, self.next, 512)
            } else {
                self.store.read(&self.inbox, self.next, 512)
            };
            match read {
                Ok(batch) => {
                    match batch.last() {
                        Some(last) => self.next = last.end,
                        None => self.done = true,
                    }
                    self.batch = batch.into();
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let entry = self.batch.pop_front()?;
        self.pos = entry.end;
        Some(Ok(entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Body;

    #[test]
    fn entries_walk_batches_and_report_where_they_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        let bob = Name::parse("bob").unwrap();
        for i in 0..1100 {
            let env = Envelope::new("team-lead", "bob", Body::message(format!("m{i}"), None));
            store.append(&bob, &env).unwrap();
        }
        let mut all = entries(&*store, &bob, Position::START);
        let got: Vec<Entry> = all.by_ref().map(|e| e.unwrap()).collect();
        assert_eq!(got.len(), 1100, "more than two batches, all read");
        assert_eq!(all.pos(), store.inbox_end(&bob).unwrap());
        // From the middle: only what follows, and pos moves entry by entry.
        let mid = got[999].end;
        let mut rest = entries(&*store, &bob, mid);
        assert_eq!(rest.pos(), mid);
        let first = rest.next().unwrap().unwrap();
        assert_eq!(rest.pos(), first.end);
        assert_eq!(rest.count(), 99);
        // An empty inbox yields nothing and stays where it started.
        let nobody = Name::parse("nobody").unwrap();
        let mut none = entries(&*store, &nobody, Position::START);
        assert!(none.next().is_none());
        assert_eq!(none.pos(), Position::START);
    }
}
