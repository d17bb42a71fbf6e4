//! Wake-ups: file events turned into a doorbell. inotify is the normal way: one instance per
//! subscription, asking for changes only (a reader opening a watched file wakes nobody), read
//! by a small thread that filters the names and rings, never blocking. When inotify cannot be had
//! (the per-user instance limit, 128 by default, is spent), a subscription waits on FIFO
//! doorbells that writers poke (`super::doorbell`; every topic has them). Only when
//! `TEAMCTL_POLL_MS` asks for it, or no doorbell can be made either, a small thread compares
//! file sizes and times at an interval instead, and says so once. Short-lived waiters (`ask`,
//! `wait`) use doorbells from the start: they cost nothing at exit, unlike an inotify instance.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use nix::libc;

use super::doorbell::Doorbell;
use crate::error::{Error, Result};

/// Set to a number of milliseconds to force polling at that interval (the benchmarks' baseline).
pub const POLL_ENV: &str = "TEAMCTL_POLL_MS";

/// The polling interval used when inotify is not available.
pub const FALLBACK_POLL: Duration = Duration::from_millis(100);

/// Called on every relevant change. Must not block.
pub type Bell = Arc<dyn Fn() + Send + Sync>;

/// One directory to watch, and the file names in it that matter (empty: any).
#[derive(Debug, Clone)]
pub struct Target {
    pub dir: PathBuf,
    pub files: Vec<String>,
}

impl Target {
    pub fn new(dir: PathBuf, files: &[&str]) -> Self {
        Target {
            dir,
            files: files.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn matches(&self, path: &Path) -> bool {
        self.files.is_empty()
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
    _watcher: Option<Inotify>,
    poller: Option<Arc<AtomicBool>>,
    doorbells: Option<Arc<Vec<Doorbell>>>,
    guard: Option<Box<dyn Send>>,
}

impl Subscription {
    /// A subscription of another store: wake-ups stop when `guard` is dropped.
    pub fn holding(mode: WakeMode, guard: impl Send + 'static) -> Subscription {
        Subscription {
            mode,
            _watcher: None,
            poller: None,
            doorbells: None,
            guard: Some(Box::new(guard)),
        }
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
                let _ = std::fs::remove_file(b.path());
            }
            if let Some(first) = bells.first() {
                first.poke_self();
            }
        }
    }
}

/// Ring `bell` on each poke of `bells` (armed already: see `super::doorbell`), from a small
/// thread that ends when the subscription is dropped.
pub fn doorbells(bells: Vec<Doorbell>, bell: Bell) -> Result<Subscription> {
    let stop = Arc::new(AtomicBool::new(false));
    let bells = Arc::new(bells);
    let (stopped, held) = (stop.clone(), bells.clone());
    std::thread::Builder::new()
        .name("teamctl-doorbell".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let far = std::time::Instant::now() + Duration::from_secs(86_400);
            while !stopped.load(Ordering::Relaxed) {
                if super::doorbell::wait_any(&held, far) && !stopped.load(Ordering::Relaxed) {
                    bell();
                }
            }
        })
        .map_err(|e| Error::failed(format!("cannot start the doorbell thread: {e}")))?;
    Ok(Subscription {
        mode: WakeMode::Doorbell,
        _watcher: None,
        poller: Some(stop),
        doorbells: Some(bells),
        guard: None,
    })
}

/// Watch `targets` and ring `bell` on each relevant change. The watch is armed when this
/// returns, so a read made afterwards cannot miss a write made after the read.
pub fn subscribe(targets: Vec<Target>, bell: Bell) -> Result<Subscription> {
    subscribe_or_ring(targets, None, bell)
}

/// Set (to anything) to act as if inotify could not be had (tests of the doorbell fallback).
pub const NO_INOTIFY_ENV: &str = "TEAMCTL_NO_INOTIFY";

/// As `subscribe`; when inotify cannot be had and `bells` names a doorbell directory for each
/// target's topic, wait on doorbells there (no polling, whatever the number of teammates).
pub fn subscribe_or_ring(
    targets: Vec<Target>,
    bells: Option<Vec<PathBuf>>,
    bell: Bell,
) -> Result<Subscription> {
    if let Some(ms) = std::env::var(POLL_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return Ok(poll(targets, bell, Duration::from_millis(ms.max(1))));
    }
    let watched = match std::env::var_os(NO_INOTIFY_ENV) {
        Some(_) => Err(Error::failed(format!("{NO_INOTIFY_ENV} is set"))),
        None => watch(&targets, bell.clone()),
    };
    match watched {
        Ok(w) => Ok(Subscription {
            mode: WakeMode::Inotify,
            _watcher: Some(w),
            poller: None,
            doorbells: None,
            guard: None,
        }),
        Err(e) => {
            if let Some(dirs) = bells {
                let armed: Result<Vec<Doorbell>> =
                    dirs.iter().map(|d| Doorbell::arm(d, 2)).collect();
                if let Ok(armed) = armed {
                    return doorbells(armed, bell);
                }
            }
            warn_once(&format!(
                "teamctl: inotify unavailable ({e}); polling every {} ms instead. Raise the limit with: sudo sysctl fs.inotify.max_user_instances=1024",
                FALLBACK_POLL.as_millis()
            ));
            Ok(poll(targets, bell, FALLBACK_POLL))
        }
    }
}

/// What a watch asks inotify for: changes only. Not `IN_OPEN` (which `notify` asks for and
/// then drops) nor `IN_ACCESS`/`IN_CLOSE_NOWRITE`: a reader opening a watched file (`status`
/// reading a thousand inboxes and live states, the console its live states) would wake every
/// watcher's thread for nothing.
const MASK: u32 = libc::IN_CLOSE_WRITE
    | libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;

/// An inotify instance with its watches, read by a small thread that rings the bell; dropping
/// it wakes the thread (an eventfd), which ends and closes the instance.
struct Inotify {
    wake: Arc<std::os::fd::OwnedFd>,
    stop: Arc<AtomicBool>,
}

impl Drop for Inotify {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        self.stop.store(true, Ordering::Relaxed);
        let one: u64 = 1;
        // SAFETY: eight bytes from a local to our own eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// A new descriptor from a system call's result, or the error it set.
fn owned(raw: i32, what: &str) -> Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    if raw < 0 {
        return Err(Error::failed(format!(
            "{what}: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: a descriptor just returned to us and owned by nobody else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) })
}

fn watch(targets: &[Target], bell: Bell) -> Result<Inotify> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: plain system calls; the descriptors are owned from here on.
    let fd = owned(unsafe { libc::inotify_init1(libc::IN_CLOEXEC) }, "inotify")?;
    let wake = Arc::new(owned(
        unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) },
        "eventfd",
    )?);
    let mut dirs: Vec<&Path> = targets.iter().map(|t| t.dir.as_path()).collect();
    dirs.sort();
    dirs.dedup();
    // Watch descriptor -> the targets in that directory.
    let mut by_wd: Vec<(i32, Vec<Target>)> = Vec::new();
    for dir in dirs {
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| Error::failed(format!("{}: a NUL in the path", dir.display())))?;
        // SAFETY: a valid descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), MASK) };
        if wd < 0 {
            return Err(Error::failed(format!(
                "{}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            )));
        }
        let here = targets.iter().filter(|t| t.dir == dir).cloned().collect();
        by_wd.push((wd, here));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (stopped, woken) = (stop.clone(), wake.clone());
    std::thread::Builder::new()
        .name("teamctl-inotify".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            // Aligned for the event headers read out of it.
            let mut buf = [0u64; 512];
            let head = std::mem::size_of::<libc::inotify_event>();
            while !stopped.load(Ordering::Relaxed) {
                let mut pfds = [
                    libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: woken.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                // SAFETY: a valid array of pollfds of the given length; no timeout.
                let ready = unsafe { libc::poll(pfds.as_mut_ptr(), 2, -1) };
                if ready < 0 {
                    if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    // Cannot wait any more: say "read to the end" once and stop.
                    bell();
                    return;
                }
                if pfds[1].revents != 0 || stopped.load(Ordering::Relaxed) {
                    // Dropped: the instance closes with `fd`, here.
                    return;
                }
                // SAFETY: reading into our own buffer of its own length in bytes.
                let n = unsafe {
                    libc::read(
                        fd.as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        std::mem::size_of_val(&buf),
                    )
                };
                if n < 0 {
                    if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    // Cannot read any more: say "read to the end" once and stop.
                    bell();
                    return;
                }
                let bytes = &bytemuck_bytes(&buf)[..n as usize];
                let mut ring = false;
                let mut at = 0;
                while at + head <= bytes.len() {
                    // SAFETY: the kernel wrote whole events; the header may be unaligned
                    // after a name, so it is read unaligned.
                    let ev: libc::inotify_event =
                        unsafe { std::ptr::read_unaligned(bytes[at..].as_ptr().cast()) };
                    let name_bytes =
                        &bytes[at + head..(at + head + ev.len as usize).min(bytes.len())];
                    at += head + ev.len as usize;
                    // An overflow means "read to the end"; an event on the directory itself
                    // (removed, moved) too.
                    if ev.mask & libc::IN_Q_OVERFLOW != 0 || ev.len == 0 {
                        ring = true;
                        continue;
                    }
                    let name = name_bytes.split(|&b| b == 0).next().unwrap_or(&[]);
                    let name = Path::new(std::ffi::OsStr::from_bytes(name));
                    ring |= by_wd
                        .iter()
                        .filter(|(wd, _)| *wd == ev.wd)
                        .any(|(_, ts)| ts.iter().any(|t| t.matches(name)));
                }
                if ring && !stopped.load(Ordering::Relaxed) {
                    bell();
                }
            }
        })
        .map_err(|e| Error::failed(format!("cannot start the inotify thread: {e}")))?;
    Ok(Inotify { wake, stop })
}

/// The bytes of a buffer of `u64`s.
fn bytemuck_bytes(buf: &[u64]) -> &[u8] {
    // SAFETY: any bytes are valid `u8`s; same allocation, same length in bytes.
    unsafe { std::slice::from_raw_parts(buf.as_ptr().cast(), std::mem::size_of_val(buf)) }
}

fn poll(targets: Vec<Target>, bell: Bell, every: Duration) -> Subscription {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::Builder::new()
        .name("teamctl-poll".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut last = snapshot(&targets);
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(every);
                let now = snapshot(&targets);
                if now != last {
                    last = now;
                    bell();
                }
            }
        })
        .expect("spawn poll thread");
    Subscription {
        mode: WakeMode::Poll(every),
        _watcher: None,
        poller: Some(stop),
        doorbells: None,
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
        eprintln!("{msg}");
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

    fn inotify_instances() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
            })
            .count()
    }

    /// A dropped subscription's instance is closed even when no event ever comes: the drop
    /// wakes its thread (a long-lived worker arming anew must not keep the old one, one of the
    /// user's 128).
    #[test]
    fn a_dropped_watch_closes_its_instance_without_any_event() {
        let dir = tempfile::tempdir().unwrap();
        let before = inotify_instances();
        let bell = SyncBell::default();
        let sub = subscribe(
            vec![Target::new(dir.path().into(), &["inbox.jsonl"])],
            bell.bell(),
        )
        .unwrap();
        assert_eq!(sub.mode, WakeMode::Inotify);
        // One event handled: the thread is past its start and back to waiting.
        std::fs::write(dir.path().join("inbox.jsonl"), b"x\n").unwrap();
        assert!(bell.wait_until(Instant::now() + Duration::from_secs(5)));
        drop(sub);
        let deadline = Instant::now() + Duration::from_secs(5);
        // (`<=`: another test may close one of its own meanwhile.)
        while inotify_instances() > before {
            assert!(
                Instant::now() < deadline,
                "the dropped watch's instance is open"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn inotify_rings_on_a_write_to_a_watched_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let bell = SyncBell::default();
        let sub = subscribe(
            vec![Target::new(dir.path().into(), &["inbox.jsonl"])],
            bell.bell(),
        )
        .unwrap();
        assert_eq!(sub.mode, WakeMode::Inotify);
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
