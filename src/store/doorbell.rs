//! Doorbells: the wake-up of short-lived waiters (`ask`, `wait`, `interrupt`, `shutdown`),
//! which must cost nothing at exit (a process holding an inotify instance takes 5-20 ms longer
//! to exit), and of workers past the inotify instance limit. A waiter makes a FIFO of its own
//! in a bell directory next to what it waits on and holds it open; a writer, after its write,
//! pokes every FIFO there with one non-blocking byte. A FIFO nobody holds
//! open any more (its waiter was killed) refuses the poke (ENXIO) and is removed by the poker.
//!
//! No wake is missed: the waiter's FIFO is open under its final name before the waiter reads
//! (`arm` returns only then), and a writer pokes only after its write. A write whose poke came
//! before the FIFO was there was made before the waiter's read, which sees it. Wake-ups are
//! at-least-once: a ring may find nothing new.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use nix::libc;

use super::Topic;
use super::fsutil::DirFd;
use crate::error::{IoContext, Result};

/// A waiter's FIFO, open for reading (and writing, so it never reads end-of-file); removed
/// when dropped, from the directory it was armed in (held open), never through its path.
pub struct Doorbell {
    fifo: std::fs::File,
    dir: DirFd,
    name: String,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A new FIFO's name, `PID-N` (made under `.PID-N`, then renamed).
fn fifo_name() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

impl Doorbell {
    /// Make and open a FIFO in the directory `dir` holds open, every step relative to it
    /// (`mknodat`, `openat` with `O_NOFOLLOW`, `renameat`, and `unlinkat` when dropped): a link
    /// swapped in for the team's directories after `dir` was opened never takes the FIFO
    /// elsewhere (attacker test: a `resume` waiting for its worker armed its doorbell through
    /// a link to a copy of the team, and left FIFOs there; attacker QA: a worker past the
    /// inotify limit armed by path, through a link at `bells`).
    pub fn arm_in(dir: DirFd) -> Result<Doorbell> {
        use nix::fcntl::OFlag;
        use nix::sys::stat::Mode;
        let name = fifo_name();
        let tmp = format!(".{name}");
        let path = dir.path().join(&name);
        let _ = dir.remove(&tmp);
        nix::sys::stat::mknodat(
            &dir,
            tmp.as_str(),
            nix::sys::stat::SFlag::S_IFIFO,
            Mode::S_IRUSR | Mode::S_IWUSR,
            0,
        )
        .map_err(std::io::Error::from)
        .at(&path)?;
        let opened = nix::fcntl::openat(
            &dir,
            tmp.as_str(),
            OFlag::O_RDWR | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(std::io::Error::from)
        .and_then(|fd| {
            dir.rename(&tmp, &name)?;
            Ok(fd)
        });
        match opened {
            Ok(fd) => Ok(Doorbell {
                fifo: std::fs::File::from(fd),
                dir,
                name,
            }),
            Err(e) => {
                let _ = dir.remove(&tmp);
                Err(e).at(&path)
            }
        }
    }

    /// Wait for a poke or until `deadline`; true when poked (the pokes so far are consumed).
    pub fn wait_until(&self, deadline: Instant) -> bool {
        wait_any(std::slice::from_ref(self), deadline)
    }

    /// Consume the pending pokes; true if there were any.
    fn drain(&self) -> bool {
        let mut buf = [0u8; 64];
        let mut any = false;
        loop {
            // SAFETY: reading into a buffer of its own length from our own descriptor.
            let n =
                unsafe { libc::read(self.fifo.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return any;
            }
            any = true;
        }
    }

    /// Poke this doorbell from the inside (to stop a thread waiting on it).
    pub fn poke_self(&self) {
        let _ = (&self.fifo).write(b"x");
    }

    pub fn raw_fd(&self) -> i32 {
        self.fifo.as_raw_fd()
    }

    /// Whether this FIFO is still where writers ring it: found as a writer finds it (the team
    /// directory opened from the home, `bells` and the topic's directory below it, none through
    /// a link: `ring_topic`), under the name it was armed with, and this very FIFO. Not when
    /// it was removed, or its directory (`bells` or the topic's) removed, replaced, moved away
    /// or swapped for a link: writers then ring nothing this waiter holds (QA: a worker past the
    /// inotify limit went deaf for good when its FIFO or `bells` was removed, or a link put at
    /// `bells`, by hand).
    pub fn in_place(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let path = self.dir.path();
        let (Some(topic), Some(bells)) = (path.file_name(), path.parent()) else {
            return false;
        };
        let (Some(bells_name), Some(team)) = (bells.file_name(), bells.parent()) else {
            return false;
        };
        let found = super::teamdir::open_fd(team)
            .and_then(|t| t.dir(bells_name, false, None))
            .and_then(|b| b.dir(topic, false, None));
        let (Ok(dir), Ok(held)) = (found, self.fifo.metadata()) else {
            return false;
        };
        nix::sys::stat::fstatat(
            &dir,
            self.name.as_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .is_ok_and(|st| (st.st_dev, st.st_ino) == (held.dev(), held.ino()))
    }

    /// Remove the FIFO: through the directory it was armed in, never what its path names now
    /// (attacker QA: a link swapped in for `bells` after arming had a waiter remove a file of
    /// the same name elsewhere).
    pub fn remove(&self) {
        let _ = self.dir.remove(&self.name);
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Poke every waiter's FIFO in the directory `dir` holds open (none: nothing to do), every
/// step relative to it (`openat` with `O_NOFOLLOW`, `unlinkat`), never through a path: a link
/// swapped in for `bells` or one of its directories never has a writer poke FIFOs elsewhere,
/// or remove stale ones there (attacker QA). Never blocks. Its listing opens the directory,
/// which is the event a worker watching it wakes on (`wake::Target::rung`).
pub fn ring_in(dir: &DirFd) {
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    let listing = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let Ok(mut entries) = nix::dir::Dir::openat(dir, ".", listing, Mode::empty()) else {
        return;
    };
    let mut fifos: Vec<(String, bool)> = Vec::new();
    for entry in entries.iter().flatten() {
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        let fifo = match entry.file_type() {
            Some(t) => t == nix::dir::Type::Fifo,
            // Not said by the listing: asked of the entry itself, never through a link.
            None => nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO),
        };
        if fifo {
            fifos.push((name.to_string(), name.starts_with('.')));
        }
    }
    drop(entries);
    for (name, arming) in fifos {
        if arming {
            // Still being armed, unless its waiter is gone (killed between making it and
            // naming it: nothing else ever removes it; a test saw one left).
            if armed_by_a_gone_process(&name.as_bytes()[1..]) {
                let _ = dir.remove(&name);
            }
            continue;
        }
        let flags = OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match nix::fcntl::openat(dir, name.as_str(), flags, Mode::empty()) {
            // A full FIFO (EAGAIN) already has a poke pending: enough. Written only when what
            // was opened is a FIFO: a link to a file of the user's renamed over the name
            // between the listing and the open gets nothing (attacker QA).
            Ok(fd) => {
                let mut f = std::fs::File::from(fd);
                let fifo = nix::sys::stat::fstat(&f)
                    .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO);
                if fifo {
                    let _ = f.write(b"x");
                }
            }
            // Nobody holds it open: its waiter is gone without removing it.
            Err(nix::errno::Errno::ENXIO) => {
                let _ = dir.remove(&name);
            }
            Err(_) => {}
        }
    }
}

/// Whether a FIFO being armed (`.PID-N`, `name` without its dot) belongs to a process that is
/// gone: no process has that pid (a pid given again keeps it, until that one goes too).
fn armed_by_a_gone_process(name: &[u8]) -> bool {
    let pid = std::str::from_utf8(name)
        .ok()
        .and_then(|n| n.split_once('-'))
        .and_then(|(pid, _)| pid.parse::<i32>().ok())
        .filter(|pid| *pid > 0);
    pid.is_some_and(|pid| {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH)
    })
}

/// Wait on several doorbells at once: true when any was poked before `deadline`.
pub fn wait_any(bells: &[Doorbell], deadline: Instant) -> bool {
    loop {
        let mut rung = false;
        for b in bells {
            rung |= b.drain();
        }
        if rung {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut pfds: Vec<libc::pollfd> = bells
            .iter()
            .map(|b| libc::pollfd {
                fd: b.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: a valid array of pollfds of the given length.
        unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    }
}

/// Where the doorbells of `topic` are, in a team: `bells/inbox-NAME`, `bells/live`,
/// `bells/team`, `bells/tasks`, `bells/hooks-NAME`. Every topic has them, so a subscription
/// past the inotify instance limit never polls (an auto-claim teammate watches the task list,
/// an interactive teammate's companion its agent's hook events). Always `Some` (an `Option`
/// for the callers that collect one per topic).
pub fn bell_dir(team_dir: &Path, topic: &Topic) -> Option<PathBuf> {
    Some(team_dir.join(BELLS).join(bell_name(topic)))
}

/// The name of `topic`'s doorbell directory in `bells/`.
pub fn bell_name(topic: &Topic) -> String {
    match topic {
        Topic::Inbox(m) => format!("inbox-{m}"),
        Topic::Live => "live".into(),
        Topic::Team => "team".into(),
        Topic::Tasks => "tasks".into(),
        Topic::Hooks(m) => format!("hooks-{m}"),
    }
}

/// The directory under a team that holds its doorbells.
pub const BELLS: &str = "bells";

/// Ring the doorbells of `topic` in a team, after a write to it: the team directory opened by
/// its path (the store's own), `bells` and the topic's directory below it never through a
/// link (`ring_topic_in`).
pub fn ring_topic(team_dir: &Path, topic: &Topic) {
    // A team directory of a home (`HOME/teams/TEAM`): `teams` and the team never through a
    // link either, as writes open it (attacker QA: a link swapped in for the team had sends
    // remove FIFOs in its copy); any other place (a test's) by its path.
    if let Ok(team) = super::teamdir::open_fd(team_dir) {
        ring_topic_in(&team, topic);
    }
}

/// `ring_topic` in the team directory `team` holds open (a writer that has it open already).
pub fn ring_topic_in(team: &DirFd, topic: &Topic) {
    let bells = team
        .dir(BELLS, false, None)
        .and_then(|b| b.dir(&bell_name(topic), false, None));
    if let Ok(dir) = bells {
        ring_in(&dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    /// A doorbell armed in `dir` (made, with `levels` directories above it, when missing).
    fn arm(dir: &Path, levels: usize) -> Doorbell {
        super::super::fsutil::ensure_dir_levels(dir, levels).unwrap();
        Doorbell::arm_in(DirFd::open_path(dir).unwrap()).unwrap()
    }

    /// Ring the doorbells in `dir` (missing: nothing).
    fn ring(dir: &Path) {
        if let Ok(d) = DirFd::open_path(dir) {
            ring_in(&d);
        }
    }

    #[test]
    fn a_ring_after_arming_wakes_and_is_consumed() {
        let dir = tempfile::tempdir().unwrap();
        let bells = dir.path().join("bells");
        let bell = arm(&bells, 1);
        assert!(!bell.wait_until(Instant::now()), "rung before any poke");
        ring(&bells);
        assert!(bell.wait_until(soon()));
        assert!(!bell.wait_until(Instant::now()), "a poke counted twice");
    }

    #[test]
    fn every_waiter_is_woken_by_one_ring() {
        let dir = tempfile::tempdir().unwrap();
        let bells: Vec<Doorbell> = (0..3).map(|_| arm(dir.path(), 0)).collect();
        ring(dir.path());
        for b in &bells {
            assert!(b.wait_until(soon()));
        }
    }

    #[test]
    fn many_rings_never_block_and_wake_once_at_least() {
        let dir = tempfile::tempdir().unwrap();
        let bell = arm(dir.path(), 0);
        // More than a pipe holds: the poker must not block on a full FIFO.
        for _ in 0..100_000 {
            ring(dir.path());
        }
        assert!(bell.wait_until(soon()));
    }

    #[test]
    fn a_dropped_doorbell_leaves_nothing_and_a_stale_fifo_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        drop(arm(dir.path(), 0));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A waiter killed before removing its FIFO: nobody holds it open.
        let stale = dir.path().join("999-0");
        nix::unistd::mkfifo(
            &stale,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .unwrap();
        ring(dir.path());
        assert!(!stale.exists(), "a stale FIFO was left behind");
    }

    /// A waiter killed while arming leaves its FIFO under its `.PID-N` name: removed by a ring
    /// once that pid is gone; one of a running process is being armed, and stays.
    #[test]
    fn a_fifo_left_half_armed_by_a_gone_waiter_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = |name: &str| {
            let path = dir.path().join(name);
            nix::unistd::mkfifo(
                &path,
                nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
            )
            .unwrap();
            path
        };
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let left = fifo(&format!(".{gone}-0"));
        let arming = fifo(&format!(".{}-7", std::process::id()));
        ring(dir.path());
        assert!(
            !left.exists(),
            "a half-armed FIFO of a gone waiter was left"
        );
        assert!(arming.exists(), "a FIFO being armed was removed");
    }

    /// A writer appending and ringing while a waiter arms a fresh doorbell, reads and waits,
    /// in lockstep: each write races the next arm and read, and the writer waits for it to be
    /// seen, so one missed wake stalls the test until its deadline.
    #[test]
    fn no_write_is_missed_by_a_waiter_that_arms_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let bells = dir.path().join("bells");
        let log = dir.path().join("log");
        std::fs::write(&log, b"").unwrap();
        const N: u64 = 500;
        let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
        let (b, l) = (bells.clone(), log.clone());
        let writer = std::thread::spawn(move || {
            for _ in 0..N {
                let mut f = std::fs::OpenOptions::new().append(true).open(&l).unwrap();
                f.write_all(b"x").unwrap();
                ring(&b);
                if ack_rx.recv().is_err() {
                    return;
                }
            }
        });
        for round in 1..=N {
            let bell = arm(&bells, 1);
            while std::fs::metadata(&log).unwrap().len() < round {
                assert!(
                    bell.wait_until(soon()),
                    "a wake was missed in round {round}"
                );
            }
            ack_tx.send(()).unwrap();
        }
        writer.join().unwrap();
    }

    /// Every topic has a doorbell: past the inotify limit, no subscription has to poll.
    #[test]
    fn every_topic_has_a_doorbell_of_its_own() {
        let team = Path::new("/t");
        let bob = crate::domain::Name::teammate("bob").unwrap();
        let topics = [
            Topic::Inbox(bob.clone()),
            Topic::Team,
            Topic::Live,
            Topic::Tasks,
            Topic::Hooks(bob),
        ];
        let mut dirs: Vec<PathBuf> = topics.iter().map(|t| bell_dir(team, t).unwrap()).collect();
        dirs.sort();
        dirs.dedup();
        assert_eq!(
            dirs.len(),
            topics.len(),
            "two topics share a doorbell: {dirs:?}"
        );
    }

    /// A change to the task list rings its doorbells (an auto-claim teammate past the
    /// inotify limit); a change that changes nothing writes nothing and rings nothing.
    #[test]
    fn a_task_list_write_rings_the_tasks_doorbell() {
        use crate::domain::task::NewTask;
        let tmp = tempfile::tempdir().unwrap();
        let home = super::super::Home::new(tmp.path().to_path_buf());
        let team = crate::domain::Name::parse("t").unwrap();
        let store = home.create(&team, "", tmp.path()).unwrap();
        let bell = arm(&bell_dir(&store.local_dir(), &Topic::Tasks).unwrap(), 2);
        store
            .update_tasks(&mut |l| {
                l.add(
                    NewTask {
                        subject: "a".into(),
                        ..Default::default()
                    },
                    0,
                )?;
                Ok(())
            })
            .unwrap();
        // The poke is made before `update_tasks` returns: no waiting needed.
        assert!(bell.wait_until(Instant::now()), "a task write rang nothing");
        store.update_tasks(&mut |_| Ok(())).unwrap();
        assert!(!bell.wait_until(Instant::now()), "a change of nothing rang");
    }

    /// A recorded hook event rings its teammate's hook doorbells (the companion past the
    /// inotify limit), and nobody else's.
    #[test]
    fn a_hook_event_rings_its_teammates_doorbell_only() {
        use crate::domain::interactive::HookEvent;
        let tmp = tempfile::tempdir().unwrap();
        let home = super::super::Home::new(tmp.path().to_path_buf());
        let team = crate::domain::Name::parse("t").unwrap();
        let store = home.create(&team, "", tmp.path()).unwrap();
        let (bob, amy) = (
            crate::domain::Name::teammate("bob").unwrap(),
            crate::domain::Name::teammate("amy").unwrap(),
        );
        let hooks_bell = |m: &crate::domain::Name| {
            arm(
                &bell_dir(&store.local_dir(), &Topic::Hooks(m.clone())).unwrap(),
                2,
            )
        };
        let (bob_bell, amy_bell) = (hooks_bell(&bob), hooks_bell(&amy));
        let event = HookEvent {
            event: "stop".into(),
            at: 1,
            text: None,
            turn: None,
        };
        super::super::hooks::append(&*store, &bob, &event).unwrap();
        assert!(
            bob_bell.wait_until(Instant::now()),
            "bob's event rang nothing"
        );
        assert!(!amy_bell.wait_until(Instant::now()), "bob's event rang amy");
    }

    /// Armed in an open directory, a doorbell lands in that directory and leaves it when
    /// dropped, whatever its path names meanwhile: a link swapped in for it after it was
    /// opened (to a copy elsewhere) gets nothing, and still rings it.
    #[test]
    fn a_doorbell_armed_in_an_open_directory_never_follows_a_link_at_its_path() {
        let top = tempfile::tempdir().unwrap();
        let real = top.path().join("bells");
        std::fs::create_dir(&real).unwrap();
        let held = DirFd::open_private(&real, "the bells").unwrap();
        let aside = top.path().join("aside");
        let copy = top.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        std::fs::rename(&real, &aside).unwrap();
        std::os::unix::fs::symlink(&copy, &real).unwrap();
        let bell = Doorbell::arm_in(held).unwrap();
        let listed = |d: &Path| std::fs::read_dir(d).unwrap().count();
        assert_eq!(listed(&copy), 0, "armed through the link");
        assert_eq!(listed(&aside), 1, "not armed in the directory held");
        ring(&aside);
        assert!(bell.wait_until(soon()));
        drop(bell);
        assert_eq!(listed(&aside), 0, "left behind when dropped");
        assert_eq!(listed(&copy), 0);
    }

    #[test]
    fn ringing_a_missing_directory_is_nothing() {
        ring_topic(Path::new("/nonexistent/teamctl/team"), &Topic::Live);
    }

    #[test]
    fn a_thread_waiting_is_woken_by_a_ring_from_another() {
        let dir = tempfile::tempdir().unwrap();
        let bell = arm(dir.path(), 0);
        let d = dir.path().to_path_buf();
        let t = std::thread::spawn(move || ring(&d));
        assert!(wait_any(std::slice::from_ref(&bell), soon()));
        t.join().unwrap();
    }
}
