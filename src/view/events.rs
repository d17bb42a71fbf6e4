//! What the live views wait on: file events of one team (live state, team file, task list and
//! every member's inbox, re-subscribed when members join, or the leader's inbox only), or of
//! one host-local file (a teammate's log, `log --worker -f`), typed lines from stdin, Ctrl-C
//! (which ends a view with exit 0), stdout's reader going away (which ends it as SIGPIPE
//! would), and the team deleted under it (exit 1, `deleted`), or its team file alone removed
//! (exit 1, `why_gone`: a leftover directory, said with how to remove it). One doorbell gathers
//! them all, so a view sleeps until something it shows may have changed.

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::domain::{Name, TeamConfig};
use crate::error::{Error, Result};
use crate::store::home::Home;
use crate::store::{Bell, SharedStore, Stamp, Store, Subscription, SyncBell, Topic};

/// Whose inboxes a view follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inboxes {
    /// Every member's, joined by newcomers (a board of unread counts, a log of all mail).
    Every,
    /// The leader's only (the console shows the leader's mail; teammates' mail would only
    /// wake it for nothing, and re-subscribing hundreds of inboxes on every join costs).
    Leader,
}

/// The team's file events plus Ctrl-C, behind one doorbell.
pub struct TeamWatch {
    store: SharedStore,
    bell: SyncBell,
    sub: Subscription,
    /// The live states' doorbell, for the console (`subscribe`); armed anew by
    /// `follow_members` once found gone (`Subscription::bells_gone`).
    live: Option<Subscription>,
    inboxes: Inboxes,
    members: Vec<Name>,
    stop: Arc<AtomicBool>,
    gone: Arc<AtomicBool>,
    /// The team file as last read, shared with the caller (not copied for every redraw:
    /// 1,000 members are a dozen thousand strings), with the stamp it was read at.
    config: Option<(Stamp, Arc<TeamConfig>)>,
    /// Whether the team file last read carried `delete`'s mark: its removal is then a delete.
    marked: bool,
}

impl TeamWatch {
    /// Subscribe to every topic of the team as it is now, and catch Ctrl-C and SIGTERM.
    /// The watch is armed when this returns: a read made afterwards misses nothing.
    pub fn new(store: &SharedStore, inboxes: Inboxes) -> Result<TeamWatch> {
        let bell = SyncBell::default();
        let stop = Arc::new(AtomicBool::new(false));
        catch_stop_signals(stop.clone(), bell.bell())?;
        let gone = watch_reader(bell.bell());
        let (members, marked) = match inboxes {
            Inboxes::Every => {
                let config = store.load()?;
                (member_names(&config), config.deleting.is_some())
            }
            Inboxes::Leader => (vec![Name::leader()], false),
        };
        let sub = subscribe(&**store, &members, bell.bell(), inboxes)?;
        let live = match inboxes {
            Inboxes::Leader => Some(store.subscribe_brief(&[Topic::Live], bell.bell())?),
            Inboxes::Every => None,
        };
        Ok(TeamWatch {
            store: store.clone(),
            bell,
            sub,
            live,
            inboxes,
            members,
            stop,
            gone,
            config: None,
            marked,
        })
    }

    /// The team file (parsed again only when it changed), or `None` once the team has been
    /// deleted (the view then ends, with `deleted`'s error).
    pub fn load(&mut self) -> Result<Option<Arc<TeamConfig>>> {
        // Stamp first, then read: a change made in between leaves a stale stamp, so the next
        // look reads again.
        let stamp = self.store.stamp();
        if let (Some(now), Some((then, config))) = (stamp, &self.config)
            && now == *then
        {
            return Ok(Some(config.clone()));
        }
        match self.store.load() {
            Ok(c) => {
                self.marked = c.deleting.is_some();
                let c = Arc::new(c);
                self.config = stamp.map(|s| (s, c.clone()));
                Ok(Some(c))
            }
            Err(_) if !self.store.exists() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Why `view` ends once `load` found no team file: `why_gone`, waiting on this watch.
    pub fn why_gone(&self, home: &Home, view: &str) -> Error {
        why_gone(
            home,
            self.store.team(),
            self.marked,
            view,
            &mut |deadline| {
                self.wait(Some(deadline));
                !self.stopped() && !self.gone.load(Ordering::Relaxed)
            },
        )
    }

    /// A bell other sources (the stdin reader) can ring.
    pub fn bell(&self) -> Bell {
        self.bell.bell()
    }

    /// Has Ctrl-C (or SIGTERM) asked the view to end?
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// `Err(Closed)` once the reader of stdout (a pipe) went away: the view ends as SIGPIPE
    /// would, without waiting for its next write (`log -f | head -1` on a quiet team).
    pub fn check_reader(&self) -> Result<()> {
        reader_check(&self.gone)
    }

    /// Sleep until an event, a stop signal, or `deadline`; true when something rang.
    pub fn wait(&self, deadline: Option<Instant>) -> bool {
        if self.stopped() || self.gone.load(Ordering::Relaxed) {
            return true;
        }
        let far = Instant::now() + std::time::Duration::from_hours(1);
        self.bell.wait_until(deadline.unwrap_or(far))
    }

    /// Follow the inboxes of members who joined since the last look. Returns the newcomers.
    /// The new subscription is armed before the old one is dropped, so nothing slips past.
    /// Also arms the live states' doorbell anew once it was found gone (`bells/live` removed
    /// by hand: the console's status line then changed only at its next look, QA).
    pub fn follow_members(&mut self, config: &TeamConfig) -> Result<Vec<Name>> {
        if self.live.as_ref().is_some_and(Subscription::bells_gone)
            && let Ok(again) = self.store.subscribe_brief(&[Topic::Live], self.bell.bell())
        {
            self.live = Some(again);
        }
        if self.inboxes == Inboxes::Leader {
            return Ok(Vec::new());
        }
        let now = member_names(config);
        let new: Vec<Name> = now
            .iter()
            .filter(|n| !self.members.contains(n))
            .cloned()
            .collect();
        if !new.is_empty() {
            let mut all = self.members.clone();
            all.extend(new.iter().cloned());
            self.sub = subscribe(&*self.store, &all, self.bell.bell(), self.inboxes)?;
            self.members = all;
        }
        Ok(new)
    }
}

/// How a live view (`view`: the leader console, `status --watch`, `log -f`) ends when its
/// team is deleted under it: an error (exit 1, SPEC: it did not end as asked), one line on
/// stderr once the view has given the screen back.
pub fn deleted(team: &Name, view: &str) -> Error {
    Error::failed(format!("team {team} was deleted; {view} ends"))
}

/// How long a view whose team file is gone, with no `delete` mark seen, waits for the team's
/// directory to go too before it takes what is left for a leftover: `delete` marks the team,
/// then removes the whole directory, and a view may find the file gone before the rest of
/// it, the mark unseen (a forced delete, a busy machine).
const GONE_GRACE: Duration = Duration::from_secs(2);

/// How a live view (`view`: the leader console, `status --watch`, `log -f`, `log --worker
/// -f`) ends when its team file is gone: `deleted` when the team was deleted (`marked`: the
/// team file it read last carried `delete`'s mark, or the directory went too within
/// `GONE_GRACE`); when the directory stays without its team file (removed by hand, not by
/// `delete`), that, what the directory holds, and how to remove it; when something other than
/// a regular file was put at the team file's path (a directory, FIFO or symbolic link: looked
/// at with `lstat`, never followed or opened), that, and to remove it. Exit 1 either way.
/// `wait` sleeps until the deadline or an event of the team, false when the view must end at
/// once (Ctrl-C, stdout's reader gone). The one rule for every view: the console uses it too.
pub fn why_gone(
    home: &Home,
    team: &Name,
    marked: bool,
    view: &str,
    wait: &mut dyn FnMut(Instant) -> bool,
) -> Error {
    if !marked {
        let deadline = Instant::now() + GONE_GRACE;
        // A regular team file (or a NATS team's pointer) there: the team was made again, no
        // leftover. Anything else at the team file's path is looked at again until the
        // deadline, as an absent one is: `delete` may still remove the whole directory.
        while std::fs::symlink_metadata(home.team_dir(team)).is_ok() {
            let kind = not_regular(home, team);
            if kind.is_none() && home.exists(team) {
                break;
            }
            if Instant::now() >= deadline || !wait(deadline) {
                if let Some(kind) = not_regular(home, team) {
                    return replaced(home, team, kind, view);
                }
                if let Some(left) = home.leftover(team) {
                    return leftover(&left, view);
                }
                break;
            }
        }
    }
    deleted(team, view)
}

/// What is at `team`'s team file path when it is there but not a regular file (`lstat`: a
/// link is not followed, a FIFO not opened), `None` when it is a regular file or absent.
fn not_regular(home: &Home, team: &Name) -> Option<&'static str> {
    crate::store::fsutil::odd_kind(&home.team_dir(team).join("config.json"))
}

/// A view's end when its team file was replaced by something that is not a regular file
/// (`why_gone`).
fn replaced(home: &Home, team: &Name, kind: &str, view: &str) -> Error {
    Error::failed(format!(
        "team {team}'s team file ({}) was replaced, not by teamctl: {kind} is there, not a regular file, and teamctl does not read through it; remove it, then `teamctl status --team {team}` says what is left of the team and how to remove that; {view} ends",
        home.team_dir(team).join("config.json").display(),
    ))
}

/// A view's end when its team's directory is left without its team file (`why_gone`).
fn leftover(left: &crate::store::home::Leftover, view: &str) -> Error {
    Error::failed(format!(
        "team {}'s team file ({}) was removed, but not by `teamctl delete`: its directory is left, holding {}; {}; {view} ends",
        left.team,
        left.dir.join("config.json").display(),
        left.contents(),
        left.removal()
    ))
}

fn member_names(config: &TeamConfig) -> Vec<Name> {
    config.members.iter().map(|m| m.name.clone()).collect()
}

/// One file's events (written, made, replaced or removed: its directory is watched) plus
/// Ctrl-C, behind one doorbell.
pub struct FileWatch {
    bell: SyncBell,
    _sub: Subscription,
    stop: Arc<AtomicBool>,
    gone: Arc<AtomicBool>,
}

impl FileWatch {
    /// Watch `path` and catch Ctrl-C and SIGTERM. Armed when this returns: a read made
    /// afterwards misses nothing.
    pub fn new(path: &Path) -> Result<FileWatch> {
        let (Some(dir), Some(file)) = (path.parent(), path.file_name().and_then(|f| f.to_str()))
        else {
            return Err(Error::failed(format!("cannot watch {}", path.display())));
        };
        let bell = SyncBell::default();
        let stop = Arc::new(AtomicBool::new(false));
        catch_stop_signals(stop.clone(), bell.bell())?;
        let gone = watch_reader(bell.bell());
        let sub = crate::store::wake::subscribe(
            vec![crate::store::wake::Target::new(dir.to_path_buf(), &[file])],
            bell.bell(),
        )?;
        Ok(FileWatch {
            bell,
            _sub: sub,
            stop,
            gone,
        })
    }

    /// Has Ctrl-C (or SIGTERM) asked the view to end?
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// As `TeamWatch::check_reader`.
    pub fn check_reader(&self) -> Result<()> {
        reader_check(&self.gone)
    }

    /// `why_gone` for `team`, waiting on this watch (`marked`: as there).
    pub fn why_gone(&self, home: &Home, team: &Name, marked: bool, view: &str) -> Error {
        why_gone(home, team, marked, view, &mut |deadline| {
            if !self.stopped() && !self.gone.load(Ordering::Relaxed) {
                self.bell.wait_until(deadline);
            }
            !self.stopped() && !self.gone.load(Ordering::Relaxed)
        })
    }

    /// Sleep until the file changes, a stop signal comes or stdout's reader goes away.
    pub fn wait(&self) {
        if !self.stopped() && !self.gone.load(Ordering::Relaxed) {
            let far = Instant::now() + std::time::Duration::from_hours(1);
            self.bell.wait_until(far);
        }
    }
}

/// The team's topics and `members`' inboxes. The console (`Inboxes::Leader`) has the live
/// states rung on their doorbell instead (`TeamWatch::new`): a watch on `state/` wakes for
/// every open there, the console's own reads of every state at each redraw among them (two
/// thousand events a redraw with 1,000 teammates), where a doorbell rings only for a write.
fn subscribe(
    store: &dyn Store,
    members: &[Name],
    bell: Bell,
    inboxes: Inboxes,
) -> Result<Subscription> {
    let mut topics = match inboxes {
        Inboxes::Every => vec![Topic::Live, Topic::Team, Topic::Tasks],
        Inboxes::Leader => vec![Topic::Team, Topic::Tasks],
    };
    topics.extend(members.iter().cloned().map(Topic::Inbox));
    store.subscribe(&topics, bell)
}

/// Ctrl-C and SIGTERM set `stop` and ring `bell` (a handler thread; no signal mask is
/// changed, so programs started from here get the default dispositions).
fn catch_stop_signals(stop: Arc<AtomicBool>, bell: Bell) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| Error::failed(format!("cannot start the signal handler: {e}")))?;
    let (mut int, mut term) = {
        let _guard = rt.enter();
        let err = |e: std::io::Error| Error::failed(format!("cannot catch Ctrl-C: {e}"));
        (
            signal(SignalKind::interrupt()).map_err(err)?,
            signal(SignalKind::terminate()).map_err(err)?,
        )
    };
    std::thread::Builder::new()
        .name("teamctl-signals".into())
        .stack_size(128 * 1024)
        .spawn(move || {
            rt.block_on(async {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            });
            stop.store(true, Ordering::Relaxed);
            bell();
        })
        .map_err(|e| Error::failed(format!("cannot start the signal handler: {e}")))?;
    Ok(())
}

fn reader_check(gone: &AtomicBool) -> Result<()> {
    if gone.load(Ordering::Relaxed) {
        Err(Error::Closed)
    } else {
        Ok(())
    }
}

/// When stdout is a pipe, a thread that sets the flag returned and rings `bell` once its
/// reader has gone (the write end then polls as POLLERR, whatever events are asked for). A
/// view that prints only on change would otherwise learn it at its next write, maybe never.
/// A terminal or a file: a flag that stays false.
fn watch_reader(bell: Bell) -> Arc<AtomicBool> {
    use std::os::fd::AsRawFd;
    let gone = Arc::new(AtomicBool::new(false));
    let fd = std::io::stdout().as_raw_fd();
    let is_pipe = nix::sys::stat::fstat(std::io::stdout())
        .is_ok_and(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFIFO);
    if !is_pipe {
        return gone;
    }
    let flag = gone.clone();
    let _ = std::thread::Builder::new()
        .name("teamctl-reader".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut pfd = nix::libc::pollfd {
                fd,
                events: 0,
                revents: 0,
            };
            loop {
                // SAFETY: one valid pollfd; stdout stays open for the process's life.
                let n = unsafe { nix::libc::poll(&raw mut pfd, 1, -1) };
                if n > 0 {
                    // POLLERR (or POLLHUP): the reader went away; POLLNVAL: nothing to watch.
                    if pfd.revents & (nix::libc::POLLERR | nix::libc::POLLHUP) != 0 {
                        flag.store(true, Ordering::Relaxed);
                        bell();
                    }
                    return;
                }
                if n < 0
                    && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                {
                    return;
                }
            }
        });
    gone
}

/// Lines typed on stdin, read by a thread; `None` once stdin is closed.
#[derive(Clone, Default)]
pub struct Lines {
    queue: Arc<Mutex<VecDeque<Option<String>>>>,
}

impl Lines {
    /// Start reading stdin; each line (and the end of input) rings `bell`.
    pub fn spawn(bell: Bell) -> Lines {
        let lines = Lines::default();
        let queue = lines.queue.clone();
        let started = std::thread::Builder::new()
            .name("teamctl-stdin".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                let mut lock = stdin.lock();
                loop {
                    let mut line = String::new();
                    let item = match lock.read_line(&mut line) {
                        Ok(0) | Err(_) => None,
                        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
                    };
                    let end = item.is_none();
                    queue.lock().expect("stdin queue").push_back(item);
                    bell();
                    if end {
                        break;
                    }
                }
            });
        if started.is_err() {
            lines.queue.lock().expect("stdin queue").push_back(None);
        }
        lines
    }

    /// Everything typed since the last call, in order (`None` marks the end of input).
    pub fn drain(&self) -> Vec<Option<String>> {
        self.queue.lock().expect("stdin queue").drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A team directory whose team file is gone, `put` then done at its path before
    /// `why_gone` looks; what `why_gone` says (its wait ends at once, as on Ctrl-C).
    fn said_after(put: impl FnOnce(&Path)) -> String {
        let root = tempfile::tempdir().unwrap();
        let home = Home::new(root.path().to_path_buf());
        let team = Name::parse("t").unwrap();
        let dir = home.team_dir(&team);
        std::fs::create_dir_all(dir.join("inboxes")).unwrap();
        put(&dir.join("config.json"));
        why_gone(&home, &team, false, "`log -f`", &mut |_| false).to_string()
    }

    /// Something other than a regular file put where the team file was is said as that, with
    /// what to do, and not as a delete (it was: the grace loop stopped looking once anything
    /// was at the path). The link is not followed (it points at a good team file elsewhere),
    /// the FIFO not opened (that would block).
    #[test]
    fn a_non_regular_file_in_the_team_files_place_is_said_as_that() {
        let elsewhere = tempfile::tempdir().unwrap();
        let good = elsewhere.path().join("config.json");
        std::fs::write(&good, br#"{"name":"t","members":[]}"#).unwrap();
        type Put = Box<dyn FnOnce(&Path)>;
        let cases: [(&str, Put); 3] = [
            ("a directory", Box::new(|p| std::fs::create_dir(p).unwrap())),
            (
                "a FIFO",
                Box::new(|p| {
                    nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
                }),
            ),
            (
                "a symbolic link",
                Box::new(move |p| std::os::unix::fs::symlink(&good, p).unwrap()),
            ),
        ];
        for (kind, put) in cases {
            let said = said_after(put);
            assert!(
                said.contains("config.json) was replaced, not by teamctl: ")
                    && said.contains(&format!("{kind} is there, not a regular file"))
                    && said.contains("remove it, then `teamctl status --team t` says what is left")
                    && said.ends_with("; `log -f` ends"),
                "{kind}: {said}"
            );
            assert!(!said.contains("deleted"), "{kind}: {said}");
        }
    }

    /// The team file absent, its directory left: a leftover; a regular team file back (the
    /// team made again): deleted.
    #[test]
    fn an_absent_team_file_is_a_leftover_and_a_regular_one_a_new_team() {
        let said = said_after(|_| {});
        assert!(
            said.contains("was removed, but not by `teamctl delete`: its directory is left"),
            "{said}"
        );
        let said = said_after(|p| std::fs::write(p, b"{}").unwrap());
        assert_eq!(said, "team t was deleted; `log -f` ends");
    }
}
