//! `FsStore`: one team's state as files. Layout under `teams/TEAM/`:
//!
//! ```text
//! config.json, config.lock          the team file and its writers' lock
//! config.index                      where each member is in config.json (teamindex.rs; a cache)
//! inboxes/NAME/inbox.jsonl          the append-only log
//! inboxes/NAME/cursors/READER       a reader's byte offset; .inbox.lock, the append lock
//! state/NAME.json                   the worker's live state (written by the worker only, in place: slots.rs)
//! logs/NAME.log                     turn output
//! tasks.json, tasks.lock            the task list and its writers' lock (see tasks.rs)
//! ```
//!
//! Every write into the team directory (the team file and its index, live states, shutdown
//! answers, the start and protocol locks, the team file's lock for its writers) goes through
//! it opened by descriptors from the home (`TeamDir`, opened per write), never by its path: a
//! link swapped in for `teams` or the team directory cannot take it elsewhere. Reads stay by
//! path (`load`, `roster`, `live`: what a swap gives them is a failure or a copy's bytes, never
//! a write), as does `hold_shared` (`send`'s shared lock: opening it changes nothing).

use std::ops::Range;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use super::fsutil::{DirFd, LockGuard, Sync, ensure_dir, ensure_dir_levels};
use super::inbox::{self, InboxPaths};
use super::slots;
use super::tasks::TaskFile;
use super::teamdir::TeamDir;
use super::teamindex;
use super::wake::{self, Bell, Subscription, Target};
use super::{
    ConfigCache, Entry, Held, HeldInbox, LockKey, MemberChange, Position, RosterCache, Stamp,
    Store, Topic,
};
use crate::domain::live::ShutdownAnswer;
use crate::domain::task::TaskList;
use crate::domain::{Envelope, LiveState, Member, Name, Roster, TeamConfig};
use crate::domain::{roster, teamtext};
use crate::error::{Error, IoContext, Result};

/// How long after a loop notice the same pair's loop stays quiet.
pub const LOOP_NOTICE_QUIET: std::time::Duration = std::time::Duration::from_mins(10);

/// Every lock file in a team's directory `dir` (a file-store team's, or the local directory
/// of one kept in NATS), there or not: the team file's and the protocol's, the task list's,
/// the loop notices', each member's start and worker locks (`locks/`), each inbox's, each
/// interactive teammate's events lock. `doctor` looks at what is at each (`lstat`).
pub fn lock_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["config.lock", "protocol.lock", super::tasks::TASKS_LOCK]
        .iter()
        .map(|f| dir.join(f))
        .chain([dir.join("loops").join(".lock")])
        .collect();
    // What a directory holds, links and all; nothing behind a directory that is a link.
    let listed = |d: PathBuf| -> Vec<PathBuf> {
        if super::fsutil::link_at(&d).is_some() {
            return Vec::new();
        }
        super::fsutil::entries_nofollow(&d)
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    };
    out.extend(listed(dir.join("locks")));
    out.extend(
        listed(dir.join("inboxes"))
            .into_iter()
            .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
            .map(|p| InboxPaths::new(p).lock()),
    );
    out.extend(
        listed(dir.join("interactive"))
            .into_iter()
            .filter(|p| p.to_str().is_some_and(|s| s.ends_with(".events.lock"))),
    );
    out
}

#[derive(Debug, Clone)]
pub struct FsStore {
    team: Name,
    dir: PathBuf,
}

impl FsStore {
    pub fn new(team: Name, dir: PathBuf) -> FsStore {
        FsStore { team, dir }
    }

    pub fn dir(&self) -> &PathBuf {
        &self.dir
    }

    fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join("config.index")
    }

    /// The roster of the team file's `bytes`: through `index` (the index file's bytes) when it
    /// is trusted for them, else parsed. With `wanted` (at most a few: each line is compared
    /// with each name), only their entries and the first and last, when all are in it
    /// (`Roster::partial`); the whole roster otherwise, from the same bytes.
    fn roster_from(
        &self,
        bytes: Vec<u8>,
        index: Option<&[u8]>,
        wanted: &[&Name],
    ) -> Result<Roster> {
        let some = match wanted {
            [] => None,
            few if few.len() <= 4 => index.and_then(|i| teamindex::parse_some(i, &bytes, few)),
            _ => None,
        };
        let roster = match some {
            Some(some) => {
                Roster::indexed(bytes, some.names, some.colors, some.spans).map(Roster::partial)
            }
            None => match index.and_then(|i| teamindex::parse(i, &bytes)) {
                Some(all) => Roster::indexed(bytes, all.names, all.colors, all.spans),
                None => Roster::parse(bytes),
            },
        };
        roster
            .map(Roster::without_hosts)
            .map_err(|e| self.damaged(&e))
    }

    /// The team file parsed, a `host` in it (written by hand) dropped: every member of a file
    /// store runs on this host.
    fn parse_config(&self, bytes: &[u8]) -> Result<TeamConfig> {
        let mut config: TeamConfig = serde_json::from_slice(bytes).map_err(|e| self.damaged(&e))?;
        for m in &mut config.members {
            m.host = None;
        }
        Ok(config)
    }

    fn inbox(&self, member: &Name) -> InboxPaths {
        InboxPaths::in_team(&self.dir, member.as_str())
    }

    fn state_path(&self, member: &Name) -> PathBuf {
        // One buffer, sized once (`status` makes one per member).
        let mut path =
            PathBuf::with_capacity(self.dir.as_os_str().len() + member.as_str().len() + 12);
        path.push(&self.dir);
        path.push("state");
        path.push(member.as_str());
        path.as_mut_os_string().push(".json");
        path
    }

    /// Write the first team file and the team's directories.
    pub fn init(&self, config: &TeamConfig) -> Result<()> {
        for sub in ["inboxes", "state", "logs"] {
            ensure_dir(&self.dir.join(sub))?;
        }
        let (dir, _lock) = self.locked()?;
        Self::write_config(&dir, config, None).map(drop)
    }

    /// The lock file of `key`, by path (for looks that take nothing).
    fn lock_path(&self, key: &LockKey) -> PathBuf {
        match key {
            LockKey::Start(name) => self.dir.join("locks").join(format!("{name}.start")),
            LockKey::Plan(name) => self.dir.join("locks").join(format!("{name}.plan")),
            LockKey::Protocol => self.dir.join("protocol.lock"),
        }
    }

    /// The team directory opened by descriptors from the home (`TeamDir`); a team directory
    /// that is gone says the team no longer exists.
    fn open_dir(&self) -> Result<TeamDir> {
        TeamDir::open(&self.dir).map_err(|e| {
            if e.io_kind() == Some(std::io::ErrorKind::NotFound) && !self.dir.exists() {
                Error::failed(format!("team {} no longer exists (deleted)", self.team))
            } else {
                e
            }
        })
    }

    /// The team directory opened (`open_dir`) and the team file's lock taken through it: what
    /// every writer of the team file holds while it reads, changes and replaces it.
    fn locked(&self) -> Result<(TeamDir, LockGuard)> {
        let dir = self.open_dir()?;
        let lock = dir.fd().lock("config.lock")?;
        Ok((dir, lock))
    }

    /// The team file's bytes, or the error for a team whose file is gone.
    fn config_bytes(&self) -> Result<Vec<u8>> {
        super::fsutil::read(&self.config_path()).map_err(|e| self.config_error(e))
    }

    /// The error for the team file that could not be read: a team deleted says so.
    fn config_error(&self, e: std::io::Error) -> Error {
        let path = self.config_path();
        if e.kind() == std::io::ErrorKind::NotFound {
            return Error::failed(format!(
                "team {} no longer exists (deleted; its team file {} is gone)",
                self.team,
                path.display()
            ));
        }
        Error::io(&path, e)
    }

    fn damaged(&self, e: &serde_json::Error) -> Error {
        Error::failed(format!(
            "the team file {} is damaged ({e}); restore it or remove the team with `teamctl delete --force --team {}`",
            self.config_path().display(),
            self.team
        ))
    }

    /// Replace the team file with `config` (the caller holds its lock), then its index. With
    /// `was`, the file as it was read under that lock and its index, a member whose entry
    /// did not change is copied from that text instead of serialised again: the bytes are
    /// the same either way (`domain::teamtext`).
    fn write_config(
        dir: &TeamDir,
        config: &TeamConfig,
        was: Option<&Was>,
    ) -> Result<Option<Stamp>> {
        let mut by_name: Option<std::collections::HashMap<&str, usize>> = None;
        let text = teamtext::render(config, |i, m| {
            let was = was?;
            let j = match was.members.get(i) {
                Some(old) if old.name == m.name => i,
                _ => *by_name
                    .get_or_insert_with(|| {
                        was.members
                            .iter()
                            .enumerate()
                            .map(|(j, o)| (o.name.as_str(), j))
                            .collect()
                    })
                    .get(m.name.as_str())?,
            };
            (was.members[j] == *m).then(|| &was.bytes[was.index.spans[j].clone()])
        })
        .map_err(|e| Error::failed(format!("cannot encode the team file: {e}")))?;
        let names: Vec<&Name> = config.members.iter().map(|m| &m.name).collect();
        let colors: Vec<&str> = config.members.iter().map(|m| m.color.as_str()).collect();
        Self::write_text_with(dir, &text, &names, &colors, Sync::All)
    }

    /// Replace the team file with `text` in `dir` (the caller holds its lock), the file
    /// replaced as `sync` says (`Sync::Data`: a crash may bring back the file before it, never
    /// lose or tear it), then its index (members `names` with `colors`), and ring the team's
    /// doorbell. The file's stamp as the rename left it (`None`: written to meanwhile).
    fn write_text_with(
        dir: &TeamDir,
        text: &teamtext::Text,
        names: &[&Name],
        colors: &[&str],
        sync: Sync,
    ) -> Result<Option<Stamp>> {
        // The file's stamp as the rename left it, from the file written (every writer holds
        // the team file's lock; none when something wrote to it in between).
        let seen = dir.fd().replace("config.json", &text.bytes, sync)?;
        let seen = seen.as_ref().map(Stamp::of);
        // The index after the file it describes, in place (`teamindex`); a failure leaves an
        // index of another file, or a torn one, which no reader trusts.
        let _ = dir.fd().write_in_place(
            "config.index",
            &teamindex::format(text, names, colors, seen),
        );
        super::doorbell::ring_topic_in(dir.fd(), &Topic::Team);
        Ok(seen)
    }

    /// `Store::update_member`, the team file replaced as `sync` says.
    fn update_member_synced<'a>(
        &self,
        cache: &'a mut RosterCache,
        name: &Name,
        f: &mut MemberChange<'_>,
        sync: Sync,
    ) -> Result<&'a Roster> {
        let (dir, lock) = self.locked()?;
        // The cached roster is as good as a read while its stamp is the file's (no writer
        // replaces the file while the lock is held), if it was read through an index.
        let stamp = Self::stamp_in(&dir);
        let roster = match cache.take() {
            Some((then, roster)) if stamp == Some(then) && roster.texts().is_some() => roster,
            _ => {
                let (bytes, index, _) = self.read_locked(&dir)?;
                let Some(index) = index else {
                    drop(lock);
                    return super::update_member_whole(self, cache, name, f);
                };
                Roster::indexed(bytes, index.names, index.colors, index.spans)
                    .map_err(|e| self.damaged(&e))?
                    .without_hosts()
            }
        };
        let mut head = roster.head().clone();
        let mut member = roster.member(name.as_str())?;
        f(&roster, &mut head, &mut member)?;
        let (bytes, spans) = roster.texts().expect("a roster read from the file");
        let at = roster.names().iter().position(|n| n == name);
        let mut entries = Vec::with_capacity(spans.len() + 1);
        let mut names = Vec::with_capacity(spans.len() + 1);
        let mut colors = Vec::with_capacity(spans.len() + 1);
        for (i, span) in spans.iter().enumerate() {
            if Some(i) == at {
                if let Some(m) = &member {
                    entries.push(teamtext::Entry::Member(m));
                    names.push(&m.name);
                    colors.push(m.color.as_str());
                }
            } else {
                entries.push(teamtext::Entry::Text(&bytes[span.clone()]));
                names.push(&roster.names()[i]);
                colors.push(roster.colors()[i].as_ref());
            }
        }
        if let (None, Some(m)) = (at, &member) {
            entries.push(teamtext::Entry::Member(m));
            names.push(&m.name);
            colors.push(m.color.as_str());
        }
        let text = teamtext::render_parts(&head, entries.into_iter())
            .map_err(|e| Error::failed(format!("cannot encode the team file: {e}")))?;
        let stamp =
            Self::write_text_with(&dir, &text, &names, &colors, sync)?.unwrap_or(Stamp::NONE);
        let names = names.into_iter().cloned().collect();
        let colors = colors.into_iter().map(roster::color).collect();
        drop(lock);
        let written = Roster::indexed(text.bytes, names, colors, text.spans)
            .map_err(|e| self.damaged(&e))?
            .without_hosts();
        Ok(&cache.insert((stamp, written)).1)
    }

    /// The team file read under its lock in `dir`, with its index when it has a good one,
    /// and its stamp.
    fn read_locked(&self, dir: &TeamDir) -> Result<(Vec<u8>, Option<teamindex::Index>, Stamp)> {
        let (bytes, meta) = dir
            .fd()
            .read("config.json")
            .map_err(|e| self.config_error(e))?;
        let index = dir
            .fd()
            .read("config.index")
            .ok()
            .and_then(|(i, _)| teamindex::parse(&i, &bytes));
        Ok((bytes, index, Stamp::of(&meta)))
    }

    /// The team file's stamp in `dir` (`lstat` through the descriptor: never a link's).
    fn stamp_in(dir: &TeamDir) -> Option<Stamp> {
        nix::sys::stat::fstatat(
            dir.fd(),
            "config.json",
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .ok()
        .map(|st| Stamp::of_stat(&st))
    }
}

/// The team file as a writer read it, for copying unchanged members' text (`write_config`).
struct Was {
    bytes: Vec<u8>,
    index: teamindex::Index,
    /// The members as parsed from `bytes` (hosts dropped: none is ever written here).
    members: Vec<Member>,
}

impl Was {
    /// `bytes` with their index and their members as parsed, when the index is good and
    /// matches them (the same members, in the same order).
    fn new(bytes: Vec<u8>, index: Option<teamindex::Index>, config: &TeamConfig) -> Option<Was> {
        let index = index?;
        let same = index.names.len() == config.members.len()
            && index
                .names
                .iter()
                .zip(&config.members)
                .all(|(n, m)| *n == m.name);
        same.then(|| Was {
            bytes,
            index,
            members: config.members.clone(),
        })
    }
}

/// The team file held open as `file` (`len` bytes), read only where `spans` (in order, within
/// it) lie and before the first and after the last (the team's own fields); the rest stays
/// zeros, never touched: a zeroed allocation this large is fresh pages from the kernel, so a
/// `send` to one of 1,000 members faults in a few pages, not the file's 100.
fn read_spans(file: &std::fs::File, len: u64, spans: &[Range<usize>]) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    // A team file of 1,000 members is 400 KB; a far larger one (a sparse file put there) is
    // read the whole way, whose errors are the ones a user gets.
    const MAX: u64 = 256 << 20;
    if len > MAX {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    let len = usize::try_from(len).map_err(std::io::Error::other)?;
    let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
        return Err(std::io::ErrorKind::InvalidData.into());
    };
    let mut bytes = vec![0u8; len];
    let mut ranges: Vec<Range<usize>> = Vec::with_capacity(spans.len() + 2);
    for r in std::iter::once(0..first.start)
        .chain(spans.iter().cloned())
        .chain(std::iter::once(last.end..len))
    {
        match ranges.last_mut() {
            Some(prev) if r.start <= prev.end => prev.end = prev.end.max(r.end),
            _ => ranges.push(r),
        }
    }
    for r in ranges {
        let buf = bytes
            .get_mut(r.clone())
            .ok_or(std::io::ErrorKind::InvalidData)?;
        file.read_exact_at(buf, r.start as u64)?;
    }
    Ok(bytes)
}

impl Store for FsStore {
    fn team(&self) -> &Name {
        &self.team
    }

    fn load(&self) -> Result<TeamConfig> {
        self.parse_config(&self.config_bytes()?)
    }

    /// Only the names parsed, and a member in full when asked for (`domain::roster`); with
    /// a good index (`teamindex`), not even the names: only the text around the members.
    fn roster(&self) -> Result<Roster> {
        let bytes = self.config_bytes()?;
        let index = super::fsutil::read(&self.index_path()).ok();
        self.roster_from(bytes, index.as_deref(), &[])
    }

    /// Only the entries of `names` (and the first and last) read from the index, when it is
    /// trusted and has them all, and they are few; otherwise the whole roster, as `roster`.
    /// When the index was written for the very file opened (its stamp), the file itself is
    /// read only where those entries and the team's own fields are (`read_spans`).
    fn roster_with(&self, names: &[&Name]) -> Result<Roster> {
        let path = self.config_path();
        let mut file = super::fsutil::open_read(&path).map_err(|e| self.config_error(e))?;
        let index = super::fsutil::read(&self.index_path()).ok();
        if (1..=4).contains(&names.len())
            && let Some(index) = index.as_deref()
            && let Ok(meta) = file.metadata()
            && let Some(some) = teamindex::parse_some_stamped(index, Stamp::of(&meta), names)
            && let Ok(bytes) = read_spans(&file, meta.len(), &some.spans)
            && let Ok(roster) = Roster::indexed(bytes, some.names, some.colors, some.spans)
            && roster.named_as_read()
        {
            return Ok(roster.partial().without_hosts());
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes).at(&path)?;
        self.roster_from(bytes, index.as_deref(), names)
    }

    /// Anything at the team file's path (`lstat`): a FIFO or link there is an error when
    /// read, not a deleted team (see `Home::exists`).
    fn exists(&self) -> bool {
        std::fs::symlink_metadata(self.config_path()).is_ok()
    }

    /// Every writer replaces the team file, so its stamp changes with every change.
    fn stamp(&self) -> Option<Stamp> {
        Stamp::of_file(&self.config_path())
    }

    /// The team file's lock, shared: held by `send` while it checks that the team is not being
    /// deleted and appends, so `delete`'s mark (taken exclusively) falls before or after the
    /// whole send, never in between.
    fn hold_shared(&self) -> Result<Held> {
        let guard = LockGuard::shared(&self.dir.join("config.lock")).map_err(|e| {
            if self.dir.exists() {
                e
            } else {
                Error::failed(format!("team {} no longer exists (deleted)", self.team))
            }
        })?;
        Ok(Held::new(guard))
    }

    /// By the lock file's path (opened with no link followed, never made): a look, no write.
    fn lock_held(&self, key: &LockKey) -> Option<bool> {
        Some(super::fsutil::lock_held(&self.lock_path(key)))
    }

    fn lock_look(&self, key: &LockKey) -> Option<super::LockLook> {
        Some(super::fsutil::lock_look(&self.lock_path(key)))
    }

    fn lock(&self, key: &LockKey) -> Result<Held> {
        // Through the team directory opened from the home (`TeamDir`): a lock file is never
        // made through a link swapped in above it.
        let dir = self.open_dir()?;
        let guard = match key {
            LockKey::Start(name) => dir.sub("locks")?.lock(&format!("{name}.start"))?,
            LockKey::Plan(name) => dir.sub("locks")?.lock(&format!("{name}.plan"))?,
            LockKey::Protocol => dir.fd().lock("protocol.lock")?,
        };
        Ok(Held::new(guard))
    }

    /// Which directory `member`'s inbox is now (its inode), `None` when it is missing: a
    /// watcher whose directory was removed (and perhaps made again) must arm a new watch.
    /// Also `None` while `inboxes` above it is not a real directory (a link planted there):
    /// the worker then reads nothing through it and says why (attacker QA: it read and
    /// answered through the link, and `doctor` saw nothing).
    fn inbox_generation(&self, member: &Name) -> Option<u64> {
        std::fs::symlink_metadata(self.dir.join("inboxes"))
            .ok()
            .filter(|m| m.is_dir())?;
        std::fs::symlink_metadata(self.inbox(member).dir)
            .ok()
            .filter(|m| m.is_dir())
            .map(|m| generation(&m))
    }

    /// The inbox directory opened as `append` opens it (never through a link), its generation
    /// taken from the open directory: the one held is the one the generation names.
    fn hold_inbox(&self, member: &Name) -> Option<HeldInbox> {
        let dir = self.inbox(member).open_dir(false).ok()?;
        let generation = generation(&dir.metadata().ok()?);
        Some(HeldInbox {
            generation,
            dir: Some(dir),
        })
    }

    /// Missing: `bells` or the inbox's directory in it not there (removed: made again when
    /// armed anew). Anything else in `bells`' place (a link) is not missing: arming anew
    /// would not make it, and said it had, four times a second (new-user QA).
    fn inbox_bell_missing(&self, member: &Name) -> bool {
        let gone = |p: &std::path::Path| {
            std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        };
        let bells = self.dir.join(super::doorbell::BELLS);
        match std::fs::symlink_metadata(&bells) {
            Ok(m) if m.is_dir() => {
                super::doorbell::bell_dir(&self.dir, &Topic::Inbox(member.clone()))
                    .is_some_and(|d| gone(&d))
            }
            Ok(_) => false,
            Err(_) => gone(&bells),
        }
    }

    fn held_inbox_whole(&self, held: &HeldInbox) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Some(dir) = held.dir.as_ref() else {
            return true;
        };
        dir.metadata().is_ok_and(|m| m.nlink() > 0)
            && nix::sys::stat::fstatat(
                dir,
                inbox::INBOX_FILE,
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .is_ok()
    }

    fn set_held_cursor(
        &self,
        held: &HeldInbox,
        member: &Name,
        reader: &str,
        pos: Position,
    ) -> Result<()> {
        match &held.dir {
            Some(dir) => inbox::set_cursor_in(dir, reader, pos.raw()),
            None => self.set_cursor(member, reader, pos),
        }
    }

    fn update(&self, f: &mut dyn FnMut(&mut TeamConfig) -> Result<()>) -> Result<TeamConfig> {
        let (dir, _lock) = self.locked()?;
        let (bytes, index, _) = self.read_locked(&dir)?;
        let mut config = self.parse_config(&bytes)?;
        let was = Was::new(bytes, index, &config);
        f(&mut config)?;
        Self::write_config(&dir, &config, was.as_ref())?;
        Ok(config)
    }

    /// Under the lock, the cached file is as good as a read when its stamp is the file's;
    /// after the write the stamp is this write's (no other writer can replace the file while
    /// the lock is held).
    fn update_cached<'a>(
        &self,
        cache: &'a mut ConfigCache,
        f: &mut dyn FnMut(&mut TeamConfig) -> Result<()>,
    ) -> Result<&'a TeamConfig> {
        let (dir, _lock) = self.locked()?;
        let (bytes, index, stamp) = self.read_locked(&dir)?;
        let mut config = match cache.take() {
            Some((then, config)) if stamp == then => config,
            _ => self.parse_config(&bytes)?,
        };
        let was = Was::new(bytes, index, &config);
        // On an error the cache stays empty: `f` may have changed the copy half-way.
        f(&mut config)?;
        let stamp = Self::write_config(&dir, &config, was.as_ref())?.unwrap_or(Stamp::NONE);
        Ok(&cache.insert((stamp, config)).1)
    }

    /// With a good index only `name`'s entry is parsed and serialised; the other members'
    /// text is copied as it is (the bytes are those a whole write gives: `domain::teamtext`).
    /// Without one (a file written by an older teamctl or by hand), the whole way once.
    fn update_member<'a>(
        &self,
        cache: &'a mut RosterCache,
        name: &Name,
        f: &mut MemberChange<'_>,
    ) -> Result<&'a Roster> {
        self.update_member_synced(cache, name, f, Sync::All)
    }

    /// The team file's data is synced before it replaces the old one, as always (a crash
    /// never leaves it empty or torn); the replacement itself is not (no directory `fsync`):
    /// a crash may bring back the file the last `update_member` or `update` left.
    fn update_member_revertible<'a>(
        &self,
        cache: &'a mut RosterCache,
        name: &Name,
        f: &mut MemberChange<'_>,
    ) -> Result<&'a Roster> {
        self.update_member_synced(cache, name, f, Sync::Data)
    }

    fn append(&self, to: &Name, env: &Envelope) -> Result<()> {
        inbox::append(&self.inbox(to), env)?;
        super::doorbell::ring_topic(&self.dir, &Topic::Inbox(to.clone()));
        Ok(())
    }

    fn read(&self, member: &Name, from: Position, max: usize) -> Result<Vec<Entry>> {
        inbox::read_from(&self.inbox(member).log(), from.raw(), max)
    }

    fn read_held(
        &self,
        held: Option<&HeldInbox>,
        member: &Name,
        from: Position,
        max: usize,
    ) -> Result<Vec<Entry>> {
        let shown = self.inbox(member);
        match held_paths(held, &shown)? {
            Some(paths) => inbox::read_from_as(&paths.log(), &shown.log(), from.raw(), max),
            None => self.read(member, from, max),
        }
    }

    fn own_cursor_held(
        &self,
        held: Option<&HeldInbox>,
        member: &Name,
        reader: &str,
    ) -> Result<Position> {
        match held_paths(held, &self.inbox(member))? {
            Some(paths) => inbox::cursor_checked(&paths, reader).map(Position::from_raw),
            None => self.own_cursor(member, reader),
        }
    }

    fn inbox_end(&self, member: &Name) -> Result<Position> {
        Ok(Position::from_raw(inbox::log_len(
            &self.inbox(member).log(),
        )))
    }

    fn cursor(&self, member: &Name, reader: &str) -> Result<Position> {
        Ok(Position::from_raw(inbox::cursor(
            &self.inbox(member),
            reader,
        )))
    }

    fn set_cursor(&self, member: &Name, reader: &str, pos: Position) -> Result<()> {
        inbox::set_cursor(&self.inbox(member), reader, pos.raw())
    }

    fn own_cursor(&self, member: &Name, reader: &str) -> Result<Position> {
        inbox::cursor_checked(&self.inbox(member), reader).map(Position::from_raw)
    }

    fn replace_cursor(&self, member: &Name, reader: &str, pos: Position) -> Result<()> {
        inbox::replace_cursor(&self.inbox(member), reader, pos.raw())
    }

    fn remove_cursor(&self, member: &Name, reader: &str) -> Result<()> {
        inbox::remove_cursor(&self.inbox(member), reader)
    }

    /// `lstat` first: nothing odd is opened. An empty file is a cursor being made (its first
    /// record not written yet), not a spoiled one.
    fn cursor_problem(&self, member: &Name, reader: &str) -> Option<super::CursorProblem> {
        use super::CursorProblem;
        let paths = self.inbox(member);
        let path = paths.cursor(reader);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if let Some(kind) = super::fsutil::odd_kind(&path) {
            return Some(CursorProblem::NotAFile { path, kind });
        }
        if meta.len() == 0 {
            return None;
        }
        match slots::load_checked::<slots::Offset>(&path) {
            Ok(None) => Some(CursorProblem::NoRecord { path }),
            Ok(Some(at)) => {
                let len = inbox::log_len(&paths.log());
                (at > len).then_some(CursorProblem::PastEnd { path, at, len })
            }
            Err(_) => None,
        }
    }

    /// A state that cannot be read or parsed reads as none (a worker rewrites it soon).
    fn live(&self, member: &Name) -> Result<Option<LiveState>> {
        Ok(slots::load(&self.state_path(member)).and_then(|b| serde_json::from_slice(&b).ok()))
    }

    /// Looked at only when `live` read nothing: the open is non-blocking, never through a
    /// link, and refuses anything but a regular file (`fsutil`), so a FIFO is never waited on.
    fn live_problem(&self, member: &Name) -> Option<String> {
        let path = self.state_path(member);
        // What is there, in a word (`status` shows `unknown (state file is a FIFO)`).
        if let Some(kind) = super::fsutil::odd_kind(&path) {
            return Some(format!(
                "{} is {kind}, not {member}'s live-state file: remove it (its worker then writes a fresh one)",
                path.display()
            ));
        }
        match super::fsutil::open_read(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Some(Error::io(&path, e).to_string())
            }
            _ => None,
        }
    }

    fn live_spoiled(&self, member: &Name) -> Option<PathBuf> {
        let path = self.state_path(member);
        slots::spoiled(&path, super::is_live_state).then_some(path)
    }

    fn set_live(&self, member: &Name, state: &LiveState) -> Result<()> {
        let bytes = serde_json::to_vec(state)
            .map_err(|e| Error::failed(format!("cannot encode state: {e}")))?;
        let team = self.open_dir()?;
        let state = team.sub("state")?;
        slots::store_at(&state, &format!("{member}.json"), &bytes)?;
        super::doorbell::ring_topic_in(team.fd(), &Topic::Live);
        Ok(())
    }

    fn replace_live(&self, member: &Name, state: &LiveState) -> Result<()> {
        let path = self.state_path(member);
        super::fsutil::check_dir(path.parent().expect("state dir"))?;
        match super::fsutil::odd_kind(&path) {
            None => self.set_live(member, state),
            Some(kind @ "a directory") => Err(Error::failed(format!(
                "{} is {kind}, not this teammate's live-state file: move it away (it is left as it is: it may hold someone's files); until then `status` cannot tell what this teammate does",
                path.display()
            ))),
            Some(_) => {
                let bytes = serde_json::to_vec(state)
                    .map_err(|e| Error::failed(format!("cannot encode state: {e}")))?;
                let team = self.open_dir()?;
                let state = team.sub("state")?;
                slots::replace_at(&state, &format!("{member}.json"), &bytes)?;
                super::doorbell::ring_topic_in(team.fd(), &Topic::Live);
                Ok(())
            }
        }
    }

    /// Record `member`'s answer to the shutdown request its current turn handles.
    fn set_shutdown_answer(&self, member: &Name, answer: &ShutdownAnswer) -> Result<()> {
        let bytes = serde_json::to_vec(answer)
            .map_err(|e| Error::failed(format!("cannot encode the answer: {e}")))?;
        // `answers/` only, never the team directory above it (a turn racing `delete`).
        let answers = self.open_dir()?.sub("answers")?;
        answers
            .replace(&format!("{member}.json"), &bytes, Sync::All)
            .map(drop)
    }

    /// Whether the loop guard should tell the leader about a loop between `a` and `b` now:
    /// true for the first worker to ask, then false for a while (`LOOP_NOTICE_QUIET`), so
    /// the leader gets one notice per loop, not one per message or per member.
    fn first_loop_notice(&self, a: &str, b: &str) -> bool {
        let (x, y) = if a <= b { (a, b) } else { (b, a) };
        let dir = self.dir.join("loops");
        if ensure_dir_levels(&dir, 1).is_err() {
            return true;
        }
        let path = dir.join(format!("{x}~{y}"));
        // Check, remove and create under one lock: without it a second teammate that found no
        // marker could remove the first one's fresh marker and win as well (two notices).
        let Ok(_guard) = super::fsutil::LockGuard::acquire(&dir.join(".lock")) else {
            return true;
        };
        let fresh = |p: &std::path::Path| {
            std::fs::symlink_metadata(p)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age < LOOP_NOTICE_QUIET)
        };
        if fresh(&path) {
            return false;
        }
        // A stale marker goes; then exactly one creator wins.
        let _ = std::fs::remove_file(&path);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .is_ok()
    }

    /// Take (read and remove) `member`'s recorded answer to `request_id`, if there is one.
    /// The answer is first renamed to a name of this taker's own: of takers racing for one
    /// answer exactly one rename succeeds (read then remove let two takers both get it).
    fn take_shutdown_answer(&self, member: &Name, request_id: &str) -> Option<ShutdownAnswer> {
        static TAKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let taken = format!(".{member}.taken-{}-{n}", std::process::id());
        // In `answers` as found from the home (`TeamDir`), never through a link above it.
        let answers = self
            .open_dir()
            .ok()?
            .fd()
            .dir("answers", false, None)
            .ok()?;
        answers.rename(&format!("{member}.json"), &taken).ok()?;
        let bytes = answers.read(&taken);
        let _ = answers.remove(&taken);
        let (bytes, _) = bytes.ok()?;
        serde_json::from_slice::<ShutdownAnswer>(&bytes)
            .ok()
            .filter(|a| a.request_id == request_id)
    }

    fn load_tasks(&self) -> Result<TaskList> {
        TaskFile::new(&self.dir).load()
    }

    fn update_tasks(&self, f: &mut dyn FnMut(&mut TaskList) -> Result<()>) -> Result<TaskList> {
        TaskFile::new(&self.dir).update(f)
    }

    fn subscribe(&self, topics: &[Topic], bell: Bell) -> Result<Subscription> {
        self.subscribe_to(topics, bell, None)
    }

    fn subscribe_with_entries(
        &self,
        topics: &[Topic],
        bell: Bell,
        entries: wake::Entries,
    ) -> Result<Subscription> {
        self.subscribe_to(topics, bell, Some(entries))
    }

    fn log_path(&self, member: &Name) -> PathBuf {
        self.dir.join("logs").join(format!("{member}.log"))
    }

    /// For a waiter that lives briefly (`ask`, `wait`): doorbells, which cost nothing at exit;
    /// the usual subscription when forced to poll or when a FIFO cannot be made.
    fn subscribe_brief(&self, topics: &[Topic], bell: Bell) -> Result<Subscription> {
        if std::env::var_os(wake::POLL_ENV).is_some() {
            return self.subscribe(topics, bell);
        }
        // Armed through the team directory opened as every write opens it (`open_dir`: no
        // link followed on the way down), never by path; a team directory that cannot be
        // opened so is an error, not a watch by path.
        let team = self.open_dir()?;
        let mut bells = Vec::with_capacity(topics.len());
        for t in topics {
            let armed = bell_dir_in(&team, t).and_then(super::doorbell::Doorbell::arm_in);
            match armed {
                Ok(b) => bells.push(b),
                Err(_) => return self.subscribe(topics, bell),
            }
        }
        wake::doorbells(bells, bell)
    }

    fn local_dir(&self) -> PathBuf {
        self.dir.clone()
    }

    /// Retried: a worker that is still ending may write into the directory meanwhile.
    fn destroy(&self) -> Result<()> {
        let dir = &self.dir;
        let mut last = None;
        for _ in 0..200 {
            // Never through a link, on the way from the home either (`remove_tree_under`:
            // the team directory is `HOME/teams/TEAM`).
            let removed = match dir.parent().and_then(std::path::Path::parent) {
                Some(home) => super::fsutil::remove_tree_under(home, dir),
                None => super::fsutil::remove_tree(dir),
            };
            if let Err(e) = removed {
                last = Some(e);
            }
            if std::fs::symlink_metadata(dir).is_err() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Err(Error::failed(format!(
            "cannot remove {}: {}; run `teamctl delete --force` again",
            dir.display(),
            last.map_or_else(|| "it keeps coming back".into(), |e| e.to_string())
        )))
    }

    fn last_activity(&self) -> Option<std::time::SystemTime> {
        let mtime = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let mut newest = mtime(&self.config_path());
        let mut consider = |p: PathBuf| {
            if let Some(t) = mtime(&p) {
                newest = Some(newest.map_or(t, |n: std::time::SystemTime| n.max(t)));
            }
        };
        for e in std::fs::read_dir(self.dir.join("inboxes"))
            .into_iter()
            .flatten()
            .flatten()
        {
            consider(e.path().join(inbox::INBOX_FILE));
        }
        for e in std::fs::read_dir(self.dir.join("state"))
            .into_iter()
            .flatten()
            .flatten()
        {
            consider(e.path());
        }
        newest
    }

    fn last_mail(&self, member: &Name) -> Option<std::time::SystemTime> {
        std::fs::metadata(self.inbox(member).log())
            .and_then(|m| m.modified())
            .ok()
    }

    /// A team of the same home (`teams/` is this directory's parent, the home above it).
    fn sibling(&self, team: &Name) -> Result<super::SharedStore> {
        let home = self
            .dir
            .parent()
            .and_then(std::path::Path::parent)
            .ok_or_else(|| Error::failed(format!("{} is not inside a home", self.dir.display())))?;
        super::Home::new(home.to_path_buf()).open(team)
    }

    fn inboxes(&self) -> Vec<Name> {
        let mut out: Vec<Name> = std::fs::read_dir(self.dir.join("inboxes"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| Name::parse(e.file_name().to_str()?).ok())
            .collect();
        out.sort();
        out
    }
}

/// Which directory `m` is: its inode number, which the file system gives again to a directory
/// made after one was removed (a `rm -rf` and `mkdir` during a turn), mixed with its birth time,
/// which it does not (where the file system records one; the number alone otherwise).
fn generation(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let born = m
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    m.ino() ^ born.rotate_left(32)
}

impl FsStore {
    /// `subscribe`, with a worker's own files (`Store::subscribe_with_entries`).
    fn subscribe_to(
        &self,
        topics: &[Topic],
        bell: Bell,
        entries: Option<wake::Entries>,
    ) -> Result<Subscription> {
        let mut targets = Vec::new();

        // Past the inotify instance limit, doorbells where every topic has them, armed in the
        // team directory opened as every write opens it (`open_dir`), never by path (attacker
        // QA: armed through a link at `bells`).
        let bells = || -> Result<Vec<super::doorbell::Doorbell>> {
            let team = self.open_dir()?;
            topics
                .iter()
                .map(|t| bell_dir_in(&team, t).and_then(super::doorbell::Doorbell::arm_in))
                .collect()
        };
        // Watching several inboxes (`status --watch`, `log -f`): one that cannot be watched (a
        // link where its directory should be) is left out, not the end of the watch on all
        // the others (QA); the directory above still wakes the watcher when it changes.
        let several = topics
            .iter()
            .filter(|t| matches!(t, Topic::Inbox(_)))
            .nth(1)
            .is_some();
        for topic in topics {
            let target = match topic {
                Topic::Inbox(m) => {
                    let paths = self.inbox(m);
                    // A watch on the inbox directory goes with it when it is removed or
                    // moved (ringing then), and when the whole `inboxes` is moved away
                    // (`mv inboxes inboxes.old`) rings nothing: the next message goes into an
                    // inbox made anew, unseen. What else rings then: the inbox's doorbell
                    // directory, which every append rings after it is made (its ring opens
                    // that directory), watched by one inbox's subscriber (a worker, the
                    // console). Not `inboxes` itself: every member made there (each spawn)
                    // woke every watching worker, up to 127 of them (issue 14). Several
                    // inboxes (`status --watch`) keep the one watch on `inboxes`.
                    let bells = (!several)
                        .then(|| self.open_dir().and_then(|t| bell_dir_in(&t, topic)))
                        .and_then(Result::ok);
                    targets.push(match bells {
                        Some(d) => Target::rung(d.path().to_path_buf()),
                        None => Target::new(self.dir.join("inboxes"), &[m.as_str()]),
                    });
                    match inbox::prepare(&paths) {
                        Ok(()) => Target::new(paths.dir, &[inbox::INBOX_FILE]),
                        Err(_) if several => continue,
                        Err(e) => return Err(e),
                    }
                }
                Topic::Team => Target::new(self.dir.clone(), &["config.json"]),
                Topic::Live => {
                    let dir = self.dir.join("state");
                    ensure_dir_levels(&dir, 1)?;
                    Target::new(dir, &[])
                }
                Topic::Tasks => Target::new(self.dir.clone(), &[super::tasks::TASKS_FILE]),
                Topic::Hooks(m) => {
                    let dir = super::hooks::dir(self as &dyn Store);
                    ensure_dir(&dir)?;
                    Target::new(dir, &[&super::hooks::events_file(m)])
                }
            };
            targets.push(target);
        }
        wake::subscribe_or_ring(targets, Some(&bells), bell, entries)
    }
}

/// `topic`'s doorbell directory (`doorbell::bell_name`) in the opened team directory `team`,
/// made (`0700`) with `bells/` when missing, never through a link.
fn bell_dir_in(team: &TeamDir, topic: &Topic) -> Result<DirFd> {
    team.fd().dir(super::doorbell::BELLS, true, None)?.dir(
        &super::doorbell::bell_name(topic),
        true,
        None,
    )
}

/// The held inbox directory as paths that resolve through its descriptor (`/proc/self/fd/N`,
/// the directory itself whatever its name names now); `None` where `/proc` cannot do it (the
/// inbox is then read by its path, as before). Nothing held, with something at the inbox's
/// path, is an error: it is not read by its path then (attacker QA: a worker that could not hold
/// its inbox, a link swapped in for it, read the link's copy); with nothing there (removed:
/// the worker makes it again), it is read by its path, as before, which finds nothing.
fn held_paths(held: Option<&HeldInbox>, paths: &InboxPaths) -> Result<Option<InboxPaths>> {
    use std::os::fd::{AsFd, AsRawFd};
    let Some(dir) = held.and_then(|h| h.dir.as_ref()) else {
        if std::fs::symlink_metadata(&paths.dir)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            return Ok(None);
        }
        return Err(crate::error::Error::failed(format!(
            "{} is not held open (gone, or something else in its place): not read by its path",
            paths.dir.display()
        )));
    };
    // Whether `/proc` resolves descriptors, asked once per process (not a `stat` per read).
    static PROC_FD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*PROC_FD.get_or_init(|| std::path::Path::new("/proc/self/fd").is_dir()) {
        return Ok(None);
    }
    Ok(Some(InboxPaths::new(PathBuf::from(format!(
        "/proc/self/fd/{}",
        dir.as_fd().as_raw_fd()
    )))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Home;

    /// A fresh team in a temp home; `reopen` opens it as another process would.
    fn make() -> crate::store::conformance::Made {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        let team = store.team().clone();
        crate::store::conformance::Made {
            store,
            // `handle`, not `open`: cases look at a destroyed team through it too.
            reopen: Box::new(move || home.handle(&team).unwrap()),
            keep: Box::new(dir),
        }
    }

    mod conformance {
        crate::store::conformance::conformance_tests!(super::make);
    }

    /// A team `t` in a fresh temp home (kept while the directory is).
    fn fresh() -> (tempfile::TempDir, crate::store::SharedStore) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        (dir, store)
    }

    /// A worker's reads of its held inbox (`read_held`, `own_cursor_held`) never go through a
    /// link swapped in for the inbox directory since it was held (attacker QA: a worker read
    /// an outside inbox and its missing cursor through one, and ran handled messages again);
    /// a read by path follows the name to the copy.
    #[test]
    fn reads_of_a_held_inbox_never_follow_a_link_swapped_in_for_it() {
        use crate::domain::{Body, Envelope};
        use crate::store::Item;
        let (dir, store) = fresh();
        let bob = Name::parse("bob").unwrap();
        let text = |entries: Vec<Entry>| -> Vec<String> {
            entries
                .into_iter()
                .filter_map(|e| match e.item {
                    Item::Message(env) => match env.body {
                        Body::Message { text, .. } => Some(text),
                        _ => None,
                    },
                    _ => None,
                })
                .collect()
        };
        for t in ["one", "two"] {
            let env = Envelope::new("team-lead", "bob", Body::message(t, None));
            store.append(&bob, &env).unwrap();
        }
        let first = store.read(&bob, Position::START, 10).unwrap();
        store.set_cursor(&bob, "worker", first[0].end).unwrap();
        let held = store.hold_inbox(&bob).unwrap();
        // A copy with a message of its own and no cursor, swapped in by a link.
        let real = store.local_dir().join("inboxes/bob");
        let copy = dir.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        let outside = Envelope::new("team-lead", "bob", Body::message("outside", None));
        std::fs::write(
            copy.join("inbox.jsonl"),
            format!("{}\n", serde_json::to_string(&outside).unwrap()),
        )
        .unwrap();
        let aside = store.local_dir().join("inboxes/.real");
        std::fs::rename(&real, &aside).unwrap();
        std::os::unix::fs::symlink(&copy, &real).unwrap();
        assert_eq!(
            text(
                store
                    .read_held(Some(&held), &bob, Position::START, 10)
                    .unwrap()
            ),
            ["one", "two"]
        );
        assert_eq!(
            store.own_cursor_held(Some(&held), &bob, "worker").unwrap(),
            first[0].end
        );
        // Nothing held (a link there when the worker tried): nothing read by the path; with
        // nothing there (removed), nothing found.
        assert!(store.read_held(None, &bob, Position::START, 10).is_err());
        assert!(store.own_cursor_held(None, &bob, "worker").is_err());
        // By path, the name leads to the copy (what a worker read before).
        assert_eq!(
            text(store.read(&bob, Position::START, 10).unwrap()),
            ["outside"]
        );
        std::fs::remove_file(&real).unwrap();
        assert!(
            store
                .read_held(None, &bob, Position::START, 10)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store.own_cursor_held(None, &bob, "worker").unwrap(),
            Position::START
        );
    }

    #[test]
    fn concurrent_updates_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let team = Name::parse("t").unwrap();
        let store = home.create(&team, "", dir.path()).unwrap();
        let threads: Vec<_> = (0..20)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || {
                    store
                        .update(&mut |cfg| {
                            let mut m = cfg.members[0].clone();
                            m.name = Name::parse(&format!("m{i}")).unwrap();
                            cfg.members.push(m);
                            Ok(())
                        })
                        .unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(store.load().unwrap().members.len(), 21);
    }

    #[test]
    fn the_cached_team_file_is_read_again_after_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        let mut cache = None;
        assert_eq!(store.load_cached(&mut cache).unwrap().description, "");
        for i in 0..20 {
            let text = format!("change {i}");
            store
                .update(&mut |cfg| {
                    cfg.description = text.clone();
                    Ok(())
                })
                .unwrap();
            assert_eq!(store.load_cached(&mut cache).unwrap().description, text);
        }
    }

    /// Team `t` in a home at `dir`, with a member for each of `names` (the leader's entry
    /// copied, each in directory `/cwd/I`).
    fn team_of(dir: &std::path::Path, names: &[String]) -> crate::store::SharedStore {
        let home = Home::new(dir.to_path_buf());
        let store = home.create(&Name::parse("t").unwrap(), "", dir).unwrap();
        store
            .update(&mut |cfg| {
                for (i, n) in names.iter().enumerate() {
                    let mut m = cfg.members[0].clone();
                    m.name = Name::parse(n).unwrap();
                    m.cwd = format!("/cwd/{i}");
                    cfg.members.push(m);
                }
                Ok(())
            })
            .unwrap();
        store
    }

    /// `roster_with` reads a few members through the index and says it holds some only; a
    /// whole roster asked for after it is read whole; without a trusted index, or for one
    /// who is not a member, it is the whole roster (whose error names the members).
    #[test]
    fn a_roster_of_a_few_members_is_partial_and_never_taken_for_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
        let store = team_of(dir.path(), &names);
        let m5 = Name::parse("m5").unwrap();
        let whole = store.roster().unwrap();
        assert_eq!(whole.names().len(), 11);
        let some = store.roster_with(&[&m5]).unwrap();
        assert!(some.is_partial());
        let names: Vec<&str> = some.names().iter().map(|n| n.as_str()).collect();
        assert_eq!(names, ["team-lead", "m5", "m9"]);
        assert_eq!(some.head(), whole.head());
        assert_eq!(
            some.member("m5").unwrap(),
            whole.member("m5").unwrap(),
            "the member in full"
        );
        assert!(some.texts().is_none(), "no text to write the file from");
        // Through one cache: the few, then the whole, then the few again from the whole.
        let mut cache = None;
        assert!(
            store
                .roster_with_cached(&mut cache, &[&m5])
                .unwrap()
                .is_partial()
        );
        let m7 = Name::parse("m7").unwrap();
        let again = store.roster_with_cached(&mut cache, &[&m7]).unwrap();
        assert!(again.has("m7"), "another member read again");
        assert_eq!(store.roster_cached(&mut cache).unwrap().names().len(), 11);
        assert!(
            !store
                .roster_with_cached(&mut cache, &[&m5])
                .unwrap()
                .is_partial()
        );
        // Not a member: the whole roster, and the same error as a whole read gives.
        let nobody = Name::parse("nobody").unwrap();
        let got = store.roster_with(&[&m5, &nobody]).unwrap();
        assert!(!got.is_partial());
        assert_eq!(
            got.require("nobody").unwrap_err().to_string(),
            whole.require("nobody").unwrap_err().to_string()
        );
        // No index (or one of other bytes): the whole roster.
        std::fs::remove_file(store.local_dir().join("config.index")).unwrap();
        let got = store.roster_with(&[&m5]).unwrap();
        assert!(!got.is_partial());
        assert_eq!(got.names().len(), 11);
    }

    /// `roster_with` trusts the index for the team file it opened by its stamp alone, and
    /// reads only the entries asked for and the text around the members; the team file
    /// changed by hand (replaced, or written in place, the same length) is another stamp:
    /// read whole, and what it now says is what is given.
    #[test]
    fn a_few_members_are_read_by_the_stamp_and_a_file_edited_by_hand_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
        let store = team_of(dir.path(), &names);
        let m5 = Name::parse("m5").unwrap();
        let path = store.local_dir().join("config.json");
        let whole = store.roster().unwrap();
        let some = store.roster_with(&[&m5]).unwrap();
        assert!(some.is_partial());
        assert_eq!(some.member("m5").unwrap(), whole.member("m5").unwrap());
        assert_eq!(some.head(), whole.head());

        // What the stamp path reads: the spans, and all before the first and after the last.
        let file = std::fs::File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        let text = std::fs::read(&path).unwrap();
        let at = |needle: &str| {
            let i = text
                .windows(needle.len())
                .position(|w| w == needle.as_bytes())
                .unwrap();
            i..i + needle.len()
        };
        let (a, b, c) = (at("\"m1\""), at("\"m5\""), at("\"m8\""));
        let got = read_spans(&file, len, &[a.clone(), b.clone(), c.clone()]).unwrap();
        assert_eq!(got.len(), text.len());
        for (i, (g, t)) in got.iter().zip(&text).enumerate() {
            let read = i < a.end || b.contains(&i) || i >= c.start;
            assert_eq!(*g, if read { *t } else { 0 }, "byte {i}");
        }

        // A file far larger than any team's (sparse, put there by hand) is not allocated for.
        let sparse = tempfile::tempfile().unwrap();
        sparse.set_len(300 << 20).unwrap();
        assert!(read_spans(&sparse, 300 << 20, std::slice::from_ref(&a)).is_err());

        // Replaced by hand (a new inode), the same length, m5's directory changed.
        let edited = String::from_utf8(text.clone())
            .unwrap()
            .replace("/cwd/5", "/cwd/X");
        assert_eq!(edited.len(), text.len());
        let tmp = store.local_dir().join("config.json.hand");
        std::fs::write(&tmp, &edited).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        let got = store.roster_with(&[&m5]).unwrap();
        assert!(
            !got.is_partial(),
            "replaced: not the file the index was written for"
        );
        assert_eq!(got.member("m5").unwrap().unwrap().cwd, "/cwd/X");

        // Written in place (the same inode), the same length: its change time moves.
        store.update(&mut |_| Ok(())).unwrap();
        let stamped = Stamp::of_file(&path).unwrap();
        assert!(store.roster_with(&[&m5]).unwrap().is_partial());
        let now = std::fs::read(&path).unwrap();
        let edited = String::from_utf8(now).unwrap().replace("/cwd/X", "/cwd/Y");
        assert_ne!(edited.as_bytes(), std::fs::read(&path).unwrap());
        // Written until its change time has moved (at once where the kernel gives a change
        // time looked at a finer one; within a clock tick elsewhere).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, edited.as_bytes()))
                .unwrap();
            if Stamp::of_file(&path) != Some(stamped) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the team file's change time did not move"
            );
        }
        let got = store.roster_with(&[&m5]).unwrap();
        assert!(!got.is_partial(), "written in place: another change time");
        assert_eq!(got.member("m5").unwrap().unwrap().cwd, "/cwd/Y");
    }

    /// A hand edit that lands while teamctl writes the team file (after its rename, before its
    /// look at the stamp) can leave an index whose stamp is the edited file's. The members read
    /// by it must still be the ones asked for: a member renamed by that edit is not given
    /// under its old name, and its new name is found by reading the whole file (attacker QA).
    #[test]
    fn an_index_stamped_for_a_file_edited_as_it_was_written_gives_no_member_by_a_name_it_lost() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["alice", "bob", "carol", "dave"].map(String::from);
        let store = team_of(dir.path(), &names);
        let path = store.local_dir().join("config.json");
        let index_path = store.local_dir().join("config.index");
        let whole = store.roster().unwrap();
        let text = std::fs::read(&path).unwrap();
        let index = std::fs::read(&index_path).unwrap();
        let all = teamindex::parse(&index, &text).unwrap();
        // bob renamed in place (the same length), then the index written again for the
        // edited file's stamp with the names teamctl had: as the race leaves it.
        let edited = String::from_utf8(text.clone())
            .unwrap()
            .replace("\"name\": \"bob\"", "\"name\": \"bib\"");
        assert_ne!(edited.as_bytes(), &text[..]);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, edited.as_bytes()))
            .unwrap();
        let names: Vec<&Name> = all.names.iter().collect();
        let colors: Vec<&str> = all.colors.iter().map(|c| c.as_ref()).collect();
        let forged = teamindex::format(
            &teamtext::Text {
                bytes: text.clone(),
                spans: all.spans.clone(),
            },
            &names,
            &colors,
            Stamp::of_file(&path),
        );
        std::fs::write(&index_path, forged).unwrap();
        let bob = Name::parse("bob").unwrap();
        let got = store.roster_with(&[&bob]).unwrap();
        assert!(!got.is_partial(), "read whole: bob's text names bib");
        assert!(!got.has("bob"));
        let err = got.require("bob").unwrap_err().to_string();
        assert!(
            err.contains("bib"),
            "the error lists the members as the file has them: {err}"
        );
        let bib = Name::parse("bib").unwrap();
        let got = store.roster_with(&[&bib]).unwrap();
        assert!(got.has("bib"), "its new name, from the whole file");
        // Members the edit did not touch are still read by the stamp.
        let carol = Name::parse("carol").unwrap();
        let got = store.roster_with(&[&carol]).unwrap();
        assert!(got.is_partial());
        assert_eq!(got.member("carol").unwrap(), whole.member("carol").unwrap());
    }

    /// Every write that copies unchanged members from the file's own text (through its
    /// index) leaves exactly the bytes a whole serialisation gives; a roster read through the
    /// index is the roster a scan gives; an index of other bytes (the file edited by hand) is
    /// not used, and the next write is whole again.
    #[test]
    fn writes_through_the_index_are_whole_writes_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let team = Name::parse("t").unwrap();
        let store = home.create(&team, "", dir.path()).unwrap();
        let path = store.local_dir().join("config.json");
        let index = store.local_dir().join("config.index");
        // What the file must hold: every change made to this copy too, by the test.
        let mut want = store.load().unwrap();
        let check = |what: &str, want: &TeamConfig| {
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&bytes),
                String::from_utf8_lossy(&serde_json::to_vec_pretty(want).unwrap()),
                "{what}"
            );
            let text = std::fs::read(&index).unwrap();
            assert!(teamindex::parse(&text, &bytes).is_some(), "{what}: index");
            let scanned = Roster::parse(bytes).unwrap().without_hosts();
            let roster = store.roster().unwrap();
            assert_eq!(roster.names(), scanned.names(), "{what}");
            assert_eq!(roster.created_at(), want.created_at);
            for m in &want.members {
                assert_eq!(roster.member(m.name.as_str()).unwrap().as_ref(), Some(m));
            }
        };
        check("created", &want);
        let mut cache = None;
        for i in 0..12 {
            let name = Name::parse(&format!("w{i}")).unwrap();
            let mut m = Member::leader(&team, format!("/tmp/\"{i}\" \u{e9}"), i);
            m.agent_id = name.agent_id(&team);
            m.name = name.clone();
            m.command = Some(format!("echo {i}"));
            if i == 3 {
                m.extra
                    .insert("fromAnotherVersion".into(), serde_json::json!([1, {}]));
            }
            // As `spawn`: the member, then where it went, through one cache.
            let mut add = |cfg: &mut TeamConfig| {
                cfg.members.push(m.clone());
                Ok(())
            };
            add(&mut want).unwrap();
            store.update_cached(&mut cache, &mut add).unwrap();
            check("added", &want);
            let mut place = |cfg: &mut TeamConfig| {
                cfg.tmux_fill = Some(crate::domain::TmuxFill {
                    server: None,
                    window: format!("@{i}"),
                    panes: i as usize,
                });
                let m = cfg.member_mut(name.as_str()).unwrap();
                m.pid = Some(100 + i as u32);
                m.status = crate::domain::Status::Idle;
                Ok(())
            };
            place(&mut want).unwrap();
            store.update_cached(&mut cache, &mut place).unwrap();
            check("placed", &want);
        }
        let mut change = |cfg: &mut TeamConfig| {
            cfg.members.retain(|m| m.name.as_str() != "w4");
            cfg.members.swap(2, 7);
            cfg.member_mut("w9").unwrap().prompt = Some("x\ny".into());
            cfg.member_mut("w0").unwrap().pid = None;
            cfg.description = "d".into();
            Ok(())
        };
        change(&mut want).unwrap();
        store.update(&mut change).unwrap();
        check("removed, moved, changed", &want);
        // One entry through `update_member`: added, changed with the team's own fields,
        // removed (what it wrote is checked against `load` by the conformance case).
        let x = Name::parse("x").unwrap();
        let mut rcache = None;
        for step in 0..3 {
            store
                .update_member(&mut rcache, &x, &mut |_, head, m| {
                    match step {
                        0 => {
                            let mut n = Member::leader(&team, "/x \u{e9}".into(), 9);
                            n.name = x.clone();
                            *m = Some(n);
                        }
                        1 => {
                            m.as_mut().unwrap().pid = Some(7);
                            head.tmux_session = Some("s \"q\"".into());
                        }
                        _ => *m = None,
                    }
                    Ok(())
                })
                .unwrap();
            want = store.load().unwrap();
            check(&format!("update_member step {step}"), &want);
        }
        // Edited by hand (compact, a member changed): the index is not trusted.
        want.member_mut("w1").unwrap().cwd = "/elsewhere".into();
        std::fs::write(&path, serde_json::to_vec(&want).unwrap()).unwrap();
        assert_eq!(
            store.roster().unwrap().member("w1").unwrap().unwrap().cwd,
            "/elsewhere"
        );
        store.update(&mut |_| Ok(())).unwrap();
        check("after a hand edit", &want);
    }

    #[test]
    fn live_state_and_cursors_make_missing_directories() {
        let (_dir, store) = fresh();
        let bob = Name::parse("bob").unwrap();
        std::fs::remove_dir_all(store.local_dir().join("state")).unwrap();
        let live = crate::domain::LiveState::new(crate::domain::Status::Idle, 1, 0);
        store.set_live(&bob, &live).unwrap();
        assert_eq!(store.live(&bob).unwrap().unwrap().pid, 1);
        store.set_cursor(&bob, "worker", Position::START).unwrap();
        assert_eq!(store.cursor(&bob, "worker").unwrap(), Position::START);
    }

    #[test]
    fn taken_names_get_a_suffix() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let team = Name::parse("alpha").unwrap();
        assert_eq!(
            home.create(&team, "", dir.path()).unwrap().team().as_str(),
            "alpha"
        );
        assert_eq!(
            home.create(&team, "", dir.path()).unwrap().team().as_str(),
            "alpha-2"
        );
        assert_eq!(home.teams().len(), 2);
    }

    #[test]
    fn a_damaged_team_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        std::fs::write(store.local_dir().join("config.json"), b"\x00\xffgarbage").unwrap();
        let err = store.load().unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");
    }
}
