//! Wake-ups: file events turned into a doorbell. inotify (through `notify`) is the normal way;
//! the callback only filters the event and rings, it never blocks. When inotify cannot be had
//! (the per-user instance limit, 128 by default, is spent), a subscription waits on FIFO
//! doorbells that writers poke (`super::doorbell`; every topic has them). Only when
//! `TEAMCTL_POLL_MS` asks for it, or no doorbell can be made either, a small thread compares
//! file sizes and times at an interval instead, and says so once. Short-lived waiters (`ask`,
//! `wait`) use doorbells from the start: they cost nothing at exit, unlike an inotify instance.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::doorbell::Doorbell;
use crate::error::{Error, Result};

/// Set to a number of milliseconds to force polling at that interval (the benchmarks' baseline).
pub const POLL_ENV: &str = "TEAMCTL_POLL_MS";

/// The polling interval used when inotify is not available.
pub const FALLBACK_POLL: Duration = Duration::from_millis(100);

/// Called on every relevant change. Must not block.
pub type Bell = Arc<dyn Fn() + Send + Sync>;

/// Files watched in the same inotify instance as a subscription's targets, with a bell of
/// their own: rung when one is removed, renamed, replaced (its link count or metadata changed)
/// or written and closed, the watching process's own writes included. A worker's own live
/// state and log (`worker::OwnFiles`): one more instance per worker would halve how many
/// teammates get inotify under the per-user limit. Each file is watched by itself, not its
/// directory: `notify` watches for opens and writes too, so a watch on the team's `state/` or
/// `logs/` woke every watching worker (up to 127) for each file any of them opened or wrote
/// there (`status` of 1,000 took 0.5 s; BENCHMARKS.md). A file replaced is watched again by
/// `EntryWatch::rewatch`; one that is not a regular file has its directory watched meanwhile
/// (so the files' directories are never the targets' own: `rewatch` takes that watch off).
/// Only with inotify: polled or rung by doorbells, they are not watched.
pub struct Entries {
    pub files: Vec<PathBuf>,
    pub bell: Bell,
}

/// The watch on a subscription's `Entries`, to watch them again once one was replaced or first
/// made (a watch follows the file it was put on, not its name). It ends with the subscription.
#[derive(Clone)]
pub struct EntryWatch {
    watcher: std::sync::Weak<std::sync::Mutex<RecommendedWatcher>>,
    files: Vec<PathBuf>,
    /// Set when one of them was removed, renamed or replaced since it was last watched: its
    /// watch may be on a file no longer at its path (the watcher's own state rewritten whole,
    /// say), so it is watched again, whether or not anything is to be put right.
    stale: Arc<AtomicBool>,
}

impl EntryWatch {
    /// Whether one of the files was removed, renamed or replaced since `rewatch`.
    pub fn stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    /// Watch each file now at its path (`watch_entry`); whether every one is watched as a
    /// file.
    pub fn rewatch(&self) -> bool {
        let Some(watcher) = self.watcher.upgrade() else {
            return false;
        };
        self.stale.store(false, Ordering::Relaxed);
        let mut watcher = watcher
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut all = true;
        for f in &self.files {
            all &= watch_entry(&mut watcher, f, true);
        }
        all
    }
}

/// Watch `file` by itself when a regular file is at its path (never through a link), and not
/// its directory; otherwise (missing, or something else there: a FIFO, a link, a directory)
/// its directory, whose events name it (made, removed, renamed), until it is a file again (then
/// `rewatch`). Whether it is watched as a file. `again`: its earlier watch is taken off first.
fn watch_entry(watcher: &mut RecommendedWatcher, file: &Path, again: bool) -> bool {
    let dir = file.parent();
    if again {
        let _ = watcher.unwatch(file);
    }
    if std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file())
        && watcher.watch(file, RecursiveMode::NonRecursive).is_ok()
    {
        if again && let Some(dir) = dir {
            let _ = watcher.unwatch(dir);
        }
        return true;
    }
    if let Some(dir) = dir {
        let _ = watcher.watch(dir, RecursiveMode::NonRecursive);
    }
    false
}

/// One directory to watch, and the file names in it that matter (empty: any).
#[derive(Debug, Clone)]
pub struct Target {
    pub dir: PathBuf,
    pub files: Vec<String>,
    /// A doorbell directory (`Target::rung`): every event in it or on it rings, opens
    /// included (a ring opens it to find its FIFOs, and writes nothing there).
    rung: bool,
}

impl Target {
    pub fn new(dir: PathBuf, files: &[&str]) -> Self {
        Target {
            dir,
            files: files.iter().map(|s| s.to_string()).collect(),
            rung: false,
        }
    }

    /// A doorbell directory (`doorbell::bell_dir`) watched for its rings: a writer that
    /// rings it after its write opens it, which wakes this watch whether or not anyone has a
    /// FIFO there.
    pub fn rung(dir: PathBuf) -> Self {
        Target {
            dir,
            files: Vec::new(),
            rung: true,
        }
    }

    /// An event of any kind rings for this target at `path` (`rung`): the directory itself
    /// or something in it, nothing elsewhere.
    fn rings_any(&self, path: &Path) -> bool {
        self.rung && (path == self.dir || path.parent() == Some(self.dir.as_path()))
    }

    /// An event on one of `files`, or on the directory itself: moved or removed (`mv
    /// inboxes inboxes.old` took a worker's watch away with it, and nothing rang: it stayed
    /// deaf to later mail; attacker QA).
    fn matches(&self, path: &Path) -> bool {
        self.files.is_empty()
            || path == self.dir
            || path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| self.files.iter().any(|f| f == n))
    }
}

/// How a subscription is woken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeMode {
    Inotify,
    /// FIFO doorbells poked by writers (`super::doorbell`).
    Doorbell,
    Poll(Duration),
    /// Pushed by a store's server (another store than files).
    Push,
}

/// A live subscription; dropping it stops the wake-ups.
pub struct Subscription {
    pub mode: WakeMode,
    watcher: Option<Arc<std::sync::Mutex<RecommendedWatcher>>>,
    /// The files of `Entries` (an inotify subscription made with them), and whether one was
    /// replaced since (`EntryWatch::stale`).
    entries: Option<(Vec<PathBuf>, Arc<AtomicBool>)>,
    poller: Option<Arc<AtomicBool>>,
    doorbells: Option<Arc<Vec<Doorbell>>>,
    /// Set once one of `doorbells` was found gone from its place (`Subscription::bells_gone`).
    bells_gone: Option<Arc<AtomicBool>>,
    guard: Option<Box<dyn Send>>,
}

impl Subscription {
    /// A subscription of another store: wake-ups stop when `guard` is dropped.
    pub fn holding(mode: WakeMode, guard: impl Send + 'static) -> Subscription {
        Subscription {
            mode,
            watcher: None,
            entries: None,
            poller: None,
            doorbells: None,
            bells_gone: None,
            guard: Some(Box::new(guard)),
        }
    }
}

impl Subscription {
    /// Whether a doorbell of this subscription was found gone from where writers ring it
    /// (removed or replaced by hand): it rang once then, and rings nothing more; the holder
    /// arms a new subscription.
    pub fn bells_gone(&self) -> bool {
        self.bells_gone
            .as_ref()
            .is_some_and(|g| g.load(Ordering::Relaxed))
    }

    /// The watch on the `Entries` it was made with, if it watches them (inotify).
    pub fn entry_watch(&self) -> Option<EntryWatch> {
        let (files, stale) = self.entries.clone()?;
        Some(EntryWatch {
            watcher: Arc::downgrade(self.watcher.as_ref()?),
            files,
            stale,
        })
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        drop(self.guard.take());
        if let Some(stop) = &self.poller {
            stop.store(true, Ordering::Relaxed);
        }
        if let Some(bells) = &self.doorbells {
            // The FIFOs go now, not when the waiting thread next wakes (the process may exit
            // first); the poke ends that thread.
            for b in bells.iter() {
                b.remove();
            }
            if let Some(first) = bells.first() {
                first.poke_self();
            }
        }
    }
}

/// How often a doorbell subscription looks that its FIFOs are still in place
/// (`Doorbell::in_place`): a check of the wake, never a read of what it waits for.
pub const DOORBELL_CHECK: Duration = Duration::from_secs(5);

/// Ring `bell` on each poke of `bells` (armed already: see `super::doorbell`), from a small
/// thread that ends when the subscription is dropped. Every `DOORBELL_CHECK` without a poke,
/// the thread looks that each FIFO is still where writers ring it; when one is not (removed
/// by hand, or its directory), it rings `bell` once and says so (`Subscription::bells_gone`),
/// so the holder arms anew instead of waiting on a FIFO nobody rings.
pub fn doorbells(bells: Vec<Doorbell>, bell: Bell) -> Result<Subscription> {
    let stop = Arc::new(AtomicBool::new(false));
    let gone = Arc::new(AtomicBool::new(false));
    let bells = Arc::new(bells);
    let (stopped, held, lost) = (stop.clone(), bells.clone(), gone.clone());
    std::thread::Builder::new()
        .name("teamctl-doorbell".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let next = std::time::Instant::now() + DOORBELL_CHECK;
                if super::doorbell::wait_any(&held, next) {
                    if !stopped.load(Ordering::Relaxed) {
                        bell();
                    }
                } else if !lost.load(Ordering::Relaxed)
                    && !stopped.load(Ordering::Relaxed)
                    && !held.iter().all(Doorbell::in_place)
                {
                    lost.store(true, Ordering::Relaxed);
                    bell();
                }
            }
        })
        .map_err(|e| Error::failed(format!("cannot start the doorbell thread: {e}")))?;
    Ok(Subscription {
        mode: WakeMode::Doorbell,
        watcher: None,
        entries: None,
        poller: Some(stop),
        doorbells: Some(bells),
        bells_gone: Some(gone),
        guard: None,
    })
}

/// Watch `targets` and ring `bell` on each relevant change. The watch is armed when this
/// returns, so a read made afterwards cannot miss a write made after the read.
pub fn subscribe(targets: Vec<Target>, bell: Bell) -> Result<Subscription> {
    subscribe_or_ring(targets, None, bell, None)
}

/// Set (to anything) to act as if inotify could not be had (tests of the doorbell fallback).
pub const NO_INOTIFY_ENV: &str = "TEAMCTL_NO_INOTIFY";

/// As `subscribe`; when inotify cannot be had and `bells` arms a doorbell for each target's
/// topic, wait on those (no polling, whatever the number of teammates).
pub fn subscribe_or_ring(
    targets: Vec<Target>,
    bells: Option<&dyn Fn() -> Result<Vec<Doorbell>>>,
    bell: Bell,
    entries: Option<Entries>,
) -> Result<Subscription> {
    if let Some(ms) = std::env::var(POLL_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return Ok(poll(targets, bell, Duration::from_millis(ms.max(1)), None));
    }
    let stale = Arc::new(AtomicBool::new(false));
    let files = entries.as_ref().map(|e| (e.files.clone(), stale.clone()));
    let watched = match std::env::var_os(NO_INOTIFY_ENV) {
        Some(_) => Err(Error::failed(format!("{NO_INOTIFY_ENV} is set"))),
        None => watch(&targets, bell.clone(), entries.map(|e| (e, stale))),
    };
    match watched {
        Ok(w) => Ok(Subscription {
            mode: WakeMode::Inotify,
            watcher: Some(Arc::new(std::sync::Mutex::new(w))),
            entries: files,
            poller: None,
            doorbells: None,
            bells_gone: None,
            guard: None,
        }),
        Err(e) => {
            // Doorbells wanted but not to be armed (a link or a file where they go): the poll
            // stands in for them, and rings every `DOORBELL_CHECK` besides, so that its holder
            // looks again whether they can be (attacker QA: it polled on for good once the
            // link was gone).
            let standing_in = match bells.map(|arm| arm()) {
                Some(Ok(armed)) => return doorbells(armed, bell),
                Some(Err(_)) => Some(DOORBELL_CHECK),
                None => None,
            };
            warn_once(&format!(
                "teamctl: inotify unavailable ({e}); polling every {} ms instead. Raise the limit with: sudo sysctl fs.inotify.max_user_instances=1024",
                FALLBACK_POLL.as_millis()
            ));
            Ok(poll(targets, bell, FALLBACK_POLL, standing_in))
        }
    }
}

/// The watch on `targets`, and on `entries` with their `EntryWatch::stale` flag.
fn watch(
    targets: &[Target],
    bell: Bell,
    entries: Option<(Entries, Arc<AtomicBool>)>,
) -> Result<RecommendedWatcher> {
    use notify::event::ModifyKind;
    let filters = targets.to_vec();
    let entry_files: Vec<PathBuf> = entries.iter().flat_map(|(e, _)| e.files.clone()).collect();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let (Some((e, stale)), Ok(ev)) = (&entries, &res)
            && ev.paths.iter().any(|p| e.files.contains(p))
        {
            let moved = matches!(
                ev.kind,
                EventKind::Create(_)
                    | EventKind::Remove(_)
                    | EventKind::Modify(ModifyKind::Name(_) | ModifyKind::Metadata(_))
            );
            if moved {
                stale.store(true, Ordering::Relaxed);
            }
            if moved || ev.kind == EventKind::Access(AccessKind::Close(AccessMode::Write)) {
                (e.bell)();
            }
        }
        let ring = match res {
            Ok(ev) => {
                ev.need_rescan()
                    || (relevant(ev.kind)
                        && (ev.paths.is_empty()
                            || ev
                                .paths
                                .iter()
                                .any(|p| filters.iter().any(|t| !t.rung && t.matches(p)))))
                    || ev
                        .paths
                        .iter()
                        .any(|p| filters.iter().any(|t| t.rings_any(p)))
            }
            // An error (an overflow among them) means "read to the end".
            Err(_) => true,
        };
        if ring {
            bell();
        }
    })
    .map_err(|e| Error::failed(e.to_string()))?;
    let mut dirs: Vec<&Path> = targets.iter().map(|t| t.dir.as_path()).collect();
    dirs.sort();
    dirs.dedup();
    for dir in &dirs {
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| Error::failed(format!("{}: {e}", dir.display())))?;
    }
    // The entries at best: one that cannot be watched never costs the watch on the targets
    // (a worker's inbox).
    for file in &entry_files {
        watch_entry(&mut watcher, file, false);
    }
    Ok(watcher)
}

fn relevant(kind: EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Ring `bell` when `targets` change, looked at `every`; and each `also` without a change
/// (a poll standing in for doorbells: its holder looks whether they can be armed now).
fn poll(targets: Vec<Target>, bell: Bell, every: Duration, also: Option<Duration>) -> Subscription {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    // Taken before this returns, like an inotify watch armed: a write made after `poll`
    // returns (and before the thread first ran) differs from it, so it rings.
    let mut last = snapshot(&targets);
    std::thread::Builder::new()
        .name("teamctl-poll".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut rang = std::time::Instant::now();
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(every);
                let now = snapshot(&targets);
                if now != last || also.is_some_and(|a| rang.elapsed() >= a) {
                    last = now;
                    rang = std::time::Instant::now();
                    bell();
                }
            }
        })
        .expect("spawn poll thread");
    Subscription {
        mode: WakeMode::Poll(every),
        watcher: None,
        entries: None,
        poller: Some(stop),
        doorbells: None,
        bells_gone: None,
        guard: None,
    }
}

/// What a poll compares: per file, its name, size, modification time, inode, and for the small
/// files of a watched directory a CRC of the content (live states are rewritten in place: they
/// keep their size and inode, and two writes within one clock tick keep their time).
type Stamp = Vec<Seen>;
type Seen = (std::ffi::OsString, u64, Option<SystemTime>, u64, u32);

/// Files up to this size are compared by content too.
const CONTENT_LIMIT: u64 = 16 * 1024;

fn snapshot(targets: &[Target]) -> Stamp {
    let mut out = Vec::new();
    for t in targets {
        if t.files.is_empty() {
            // Every file in the directory: a write in place changes no directory entry.
            let mut names: Vec<_> = std::fs::read_dir(&t.dir)
                .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
                .unwrap_or_default();
            names.sort();
            out.extend(names.into_iter().map(|n| stamp(&t.dir, n, true)));
        }
        // Named files (an inbox log, the team file, the task list) grow or are replaced:
        // their size or inode tells, without reading them.
        for f in &t.files {
            out.push(stamp(&t.dir, f.into(), false));
        }
    }
    out
}

fn stamp(dir: &Path, name: std::ffi::OsString, content: bool) -> Seen {
    use std::os::unix::fs::MetadataExt;
    let path = dir.join(&name);
    let m = std::fs::metadata(&path).ok();
    let len = m.as_ref().map_or(0, |m| m.len());
    let crc = match &m {
        Some(m) if content && m.is_file() && len <= CONTENT_LIMIT => {
            super::fsutil::read(&path).map_or(0, |b| crc32fast::hash(&b))
        }
        _ => 0,
    };
    (
        name,
        len,
        m.as_ref().and_then(|m| m.modified().ok()),
        m.as_ref().map_or(0, MetadataExt::ino),
        crc,
    )
}

fn warn_once(msg: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        crate::errln!("{msg}");
    }
}

/// A doorbell for synchronous code: `ring` from any thread, `wait` with a deadline.
#[derive(Clone)]
pub struct SyncBell {
    tx: std::sync::mpsc::SyncSender<()>,
    rx: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
}

impl Default for SyncBell {
    fn default() -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        SyncBell {
            tx,
            rx: Arc::new(std::sync::Mutex::new(rx)),
        }
    }
}

impl SyncBell {
    /// A `Bell` that rings this doorbell without blocking (a pending ring is enough).
    pub fn bell(&self) -> Bell {
        let tx = self.tx.clone();
        Arc::new(move || {
            let _ = tx.try_send(());
        })
    }

    /// Wait for a ring or until `deadline`; true when rung.
    pub fn wait_until(&self, deadline: std::time::Instant) -> bool {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let rx = self.rx.lock().expect("bell lock");
        rx.recv_timeout(left).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A write right after a polling subscription returns rings. Before, the thread took its
    /// first look when it first ran: a write in between was taken for the starting state.
    #[test]
    fn a_write_right_after_a_poll_subscription_rings() {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("inbox.jsonl");
            std::fs::write(&file, b"").unwrap();
            let bell = SyncBell::default();
            let _sub = poll(
                vec![Target::new(dir.path().into(), &["inbox.jsonl"])],
                bell.bell(),
                Duration::from_millis(20),
                None,
            );
            std::fs::write(&file, b"{}\n").unwrap();
            assert!(
                bell.wait_until(Instant::now() + Duration::from_secs(5)),
                "round {round}: a write right after subscribing did not ring"
            );
        }
    }

    /// Polling (inotify spent) sees a file of a watched directory rewritten in place: same
    /// size, same inode, no directory entry changed (live states are written so).
    #[test]
    fn polling_sees_a_file_rewritten_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bob.json");
        // Two writes fill both slots: the file has its final size.
        for _ in 0..2 {
            super::super::slots::store(&file, b"{\"status\":\"working\"}").unwrap();
        }
        let bell = SyncBell::default();
        let _sub = poll(
            vec![Target::new(dir.path().into(), &[])],
            bell.bell(),
            Duration::from_millis(10),
            None,
        );
        for status in ["idle", "gone", "idle"] {
            // A wait that rang before this write cannot count: drain it first.
            while bell.wait_until(Instant::now() + Duration::from_millis(50)) {}
            let before = std::fs::metadata(&file).unwrap();
            super::super::slots::store(&file, format!("{{\"status\":\"{status}\"}}").as_bytes())
                .unwrap();
            let after = std::fs::metadata(&file).unwrap();
            assert_eq!(before.len(), after.len());
            assert!(
                bell.wait_until(Instant::now() + Duration::from_secs(5)),
                "no ring for {status}"
            );
        }
    }

    /// An inotify subscription to `targets` (waiting for an instance: see below).
    fn inotify(targets: &[Target], bell: &SyncBell) -> Subscription {
        // An inotify instance is a per-user resource (128 by default) that other programs may
        // hold all of for a while (a 1,000-teammate bench does): wait for one, then say why.
        let deadline = Instant::now() + Duration::from_mins(1);
        loop {
            let sub = subscribe(targets.to_vec(), bell.bell()).unwrap();
            if sub.mode == WakeMode::Inotify {
                return sub;
            }
            assert!(
                Instant::now() < deadline,
                "no inotify instance for a minute: this user's fs.inotify.max_user_instances are all in use"
            );
            drop(sub);
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A watched directory moved away (`mv inboxes inboxes.old`: its watch goes with it) or
    /// removed rings, whatever names are watched in it; before, only events on those names
    /// did, and a worker whose `inboxes` was moved stayed deaf to later mail.
    #[test]
    fn a_watched_directory_moved_or_removed_rings() {
        for removed in [false, true] {
            let top = tempfile::tempdir().unwrap();
            let dir = top.path().join("inboxes");
            std::fs::create_dir(&dir).unwrap();
            let bell = SyncBell::default();
            let _sub = inotify(&[Target::new(dir.clone(), &["bob"])], &bell);
            if removed {
                std::fs::remove_dir(&dir).unwrap();
            } else {
                std::fs::rename(&dir, top.path().join("inboxes.old")).unwrap();
            }
            assert!(
                bell.wait_until(Instant::now() + Duration::from_secs(5)),
                "no ring (removed: {removed})"
            );
        }
    }

    #[test]
    fn inotify_rings_on_a_write_to_a_watched_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let bell = SyncBell::default();
        // Held to the end: the watch lives as long as the subscription.
        let _sub = inotify(&[Target::new(dir.path().into(), &["inbox.jsonl"])], &bell);
        std::fs::write(dir.path().join("other"), b"x").unwrap();
        // Drain anything the unrelated write produced (it must not ring; give it a moment).
        let rang_for_other = bell.wait_until(Instant::now() + Duration::from_millis(200));
        assert!(
            !rang_for_other,
            "a write to an unwatched name rang the bell"
        );
        std::fs::write(dir.path().join("inbox.jsonl"), b"x\n").unwrap();
        assert!(bell.wait_until(Instant::now() + Duration::from_secs(5)));
    }
}
