//! `teamctl doctor`: checks of the machine and of every team in the home, each one a
//! `Finding` with a level and, when teamctl can clean it up itself, a `Fix`. The checks only
//! look; `Fix::apply` acts, and every kill is tag checked again right before it happens.

mod orphans;
mod system;
mod teams;
mod temps;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::backend::proc;
use crate::domain::{Name, TeamConfig};
use crate::error::Result;
use crate::store::{Home, SharedStore};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Ok,
    /// Worth knowing; does not make `doctor` fail.
    Warn,
    /// Something is wrong: `doctor` exits 1 unless it was fixed.
    Problem,
}

/// One thing `doctor` found.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// What `--fix` would do, when it can.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
}

impl Finding {
    pub fn new(check: &'static str, level: Level, message: impl Into<String>) -> Finding {
        Finding {
            check,
            level,
            message: message.into(),
            hint: None,
            fix: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Finding {
        self.hint = Some(hint.into());
        self
    }

    pub fn fix(mut self, fix: Fix) -> Finding {
        self.fix = Some(fix);
        self
    }
}

/// A clean-up `--fix` can do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Fix {
    /// End a worker process (its argv must still name `agent_id` and `home`).
    KillWorker {
        pid: u32,
        agent_id: String,
        home: PathBuf,
    },
    /// End an agent process (its environment must still carry `agent_id` and `home`).
    KillAgent {
        pid: u32,
        agent_id: String,
        home: PathBuf,
    },
    /// Kill a tmux pane (it must still carry the `@teamctl-agent` tag `agent_id`, the whole
    /// `NAME@TEAM/HOMEKEY`, for the process it runs).
    KillPane {
        /// The home whose member's live state the pane's process is judged by.
        home: PathBuf,
        /// The server, as a member records it (none: the default).
        #[serde(skip_serializing_if = "Option::is_none")]
        socket: Option<String>,
        pane: String,
        agent_id: String,
    },
    /// Take teamctl's tags off a tmux pane the user respawned (they name a process it no
    /// longer runs: `agent_id`, the whole `NAME@TEAM/HOMEKEY`, must still be its stale tag).
    /// The pane is never closed.
    UntagPane {
        home: PathBuf,
        /// The server, as a member records it (none: the default).
        #[serde(skip_serializing_if = "Option::is_none")]
        socket: Option<String>,
        pane: String,
        agent_id: String,
    },
    /// Close a placeholder pane a start cut short left (`orphans::placeholders`), while it
    /// still runs `pid`.
    ClosePlaceholder {
        /// The server, as a member records it (none: the default).
        #[serde(skip_serializing_if = "Option::is_none")]
        socket: Option<String>,
        pane: String,
        pid: u32,
    },
    /// Clear the current-team record (`$TEAMCTL_HOME/current`) while it still names `team`,
    /// which no longer exists.
    ClearCurrent { home: PathBuf, team: String },
    /// Remove a team directory (worktrees first, through git). `leftover`: it had no team
    /// file when found; one made since (a `create` of that name after a `delete`) keeps it.
    RemoveTeam {
        home: PathBuf,
        dir: PathBuf,
        #[serde(skip)]
        leftover: bool,
    },
    /// Remove a git worktree; one named after a teammate, only while that teammate is still
    /// down (looked at again under its start lock: a send may have resumed it since).
    RemoveWorktree {
        path: PathBuf,
        #[serde(skip)]
        of: Option<Teammate>,
    },
    /// Put a fresh lock file in place of a FIFO, link, socket, device or empty directory at a
    /// lock file's path (`fsutil::replace_odd_lock`: never followed nor opened).
    ReplaceLock { path: PathBuf },
    /// Remove a FIFO, link, socket or device at a live-state file's path (unlinked, never
    /// followed nor opened; a directory is left). It held no state: the worker writes its own.
    RemoveOddFile { path: PathBuf },
    /// Remove a regular file at a live-state file's path that holds something other than a
    /// live state, if it still does. It held no state: the worker writes its own.
    RemoveSpoiledState { path: PathBuf },
    /// Remove temporary files writers left when they ended mid-write, each still left over
    /// (its writer gone, unchanged for a while) when looked at again.
    RemoveTemps { home: PathBuf, paths: Vec<PathBuf> },
    /// Close the tmux session of a team that no longer exists (its tag checked again; a
    /// session holding the user's own panes keeps them, as `delete` leaves it).
    CloseSession {
        home: PathBuf,
        team: String,
        session: String,
        /// The server, as a member records it (none: the default).
        #[serde(skip_serializing_if = "Option::is_none")]
        socket: Option<String>,
    },
    /// Close teamctl's panes of `team` of `home`, a home that no longer exists, wherever they
    /// are on the server (teammates led from inside tmux, in the user's session), and take
    /// its tags off the windows it opened there.
    ClosePanes {
        home: PathBuf,
        team: String,
        /// The server, as a member records it (none: the default).
        #[serde(skip_serializing_if = "Option::is_none")]
        socket: Option<String>,
    },
}

/// A teammate whose worktree a fix removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Teammate {
    pub home: PathBuf,
    pub team: Name,
    pub name: Name,
}

/// How long polite signals get before the kill.
const GRACE: Duration = Duration::from_secs(3);

impl Fix {
    /// Do it; returns what was done, in one line.
    pub fn apply(&self) -> Result<String> {
        match self {
            Fix::KillWorker {
                pid,
                agent_id,
                home,
            } => {
                let still = || {
                    orphans::worker_of(*pid).is_some_and(|(h, id)| h == *home && id == *agent_id)
                };
                end(*pid, still);
                Ok(format!("ended orphaned worker {agent_id} (pid {pid})"))
            }
            Fix::KillAgent {
                pid,
                agent_id,
                home,
            } => {
                let still =
                    || orphans::agent_of(*pid).is_some_and(|(h, id)| h == *home && id == *agent_id);
                end(*pid, still);
                Ok(format!(
                    "ended orphaned agent process of {agent_id} (pid {pid})"
                ))
            }
            Fix::KillPane {
                home,
                socket,
                pane,
                agent_id,
            } => orphans::kill_pane(home, socket.as_deref(), pane, agent_id),
            Fix::UntagPane {
                home,
                socket,
                pane,
                agent_id,
            } => orphans::untag_pane(home, socket.as_deref(), pane, agent_id),
            Fix::ClosePlaceholder { socket, pane, pid } => {
                orphans::close_placeholder(socket.as_deref(), pane, *pid)
            }
            Fix::ClearCurrent { home, team } => teams::clear_current(home, team),
            // An earlier fix may have removed it already (a stale team's worktrees). `lstat`:
            // a link pointing nowhere is still there, and still removed.
            Fix::RemoveTeam { dir, .. } | Fix::RemoveWorktree { path: dir, .. }
                if dir.symlink_metadata().is_err() =>
            {
                Ok(format!("{} is already gone", dir.display()))
            }
            Fix::RemoveTeam {
                home,
                dir,
                leftover,
            } => {
                let links = teams::remove_team(&Home::new(home.clone()), dir, *leftover)?;
                let mut done = format!("removed stale team {}", dir.display());
                for link in links {
                    done.push_str(&format!(", and the {link}"));
                }
                Ok(done)
            }
            Fix::RemoveWorktree { path, of: None } => teams::remove_worktree(path),
            Fix::RemoveWorktree { path, of: Some(of) } => {
                let store = Home::new(of.home.clone()).open(&of.team)?;
                crate::leader::while_down(&*store, &of.name, |_| teams::remove_worktree(path))?
                    .map_err(|up| {
                        crate::error::Error::failed(format!(
                            "{}@{} {up} now; its worktree {} is kept",
                            of.name,
                            of.team,
                            path.display()
                        ))
                    })
            }
            Fix::CloseSession {
                home,
                team,
                session,
                socket,
            } => orphans::close_session(home, team, session, socket.as_deref()),
            Fix::ClosePanes { home, team, socket } => {
                orphans::close_panes(home, team, socket.as_deref())
            }
            Fix::ReplaceLock { path } => Ok(match crate::store::fsutil::replace_odd_lock(path)? {
                Some(kind) => format!("replaced {} ({kind}) with a lock file", path.display()),
                None => format!("{} is a lock file again; left as it is", path.display()),
            }),
            Fix::RemoveOddFile { path } => teams::remove_odd_file(path),
            Fix::RemoveSpoiledState { path } => teams::remove_spoiled_state(path),
            Fix::RemoveTemps { home, paths } => temps::remove(home, paths),
        }
    }
}

/// SIGTERM, up to `GRACE`, then SIGKILL, as long as `still` says it is the same process.
fn end(pid: u32, still: impl Fn() -> bool) {
    use nix::sys::signal::Signal;
    if !still() {
        return;
    }
    // Ended means exited (a zombie, or reaped: the pid gone or another process's now), not
    // only no longer reading as the worker: an exiting process's argv reads empty before it
    // has ended, and a pane still running it is then taken for the user's (CI: `doctor --fix`
    // kept a removed home's session for the worker it had just ended).
    let start = proc::start_time(pid);
    let ended = || proc::ended(pid) || proc::start_time(pid) != start;
    proc::signal(pid, Signal::SIGTERM);
    // A stopped process acts on the SIGTERM only once continued: it had the whole grace, then
    // the kill (new-user QA 43).
    // Looked at again just before (attacker QA 43): a pid that ended since the SIGTERM and was
    // given to another process is not continued.
    if proc::stopped_by_signal(pid) && !ended() && still() {
        proc::signal(pid, Signal::SIGCONT);
    }
    if !proc::wait_for(GRACE, ended) && still() {
        proc::signal(pid, Signal::SIGKILL);
    }
    proc::wait_for(Duration::from_secs(2), ended);
}

/// Every team of the home whose team file can be read.
pub fn readable_teams(home: &Home) -> Vec<(SharedStore, TeamConfig)> {
    home.teams()
        .into_iter()
        .filter_map(|t| {
            let store = home.open(&t).ok()?;
            let cfg = store.load().ok()?;
            Some((store, cfg))
        })
        .collect()
}

/// Every check, in order.
pub fn check(home: &Home) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(system::tmux(home));
    out.extend(system::inotify(home));
    out.extend(system::create_lock(home));
    out.extend(teams::odd_files(home));
    out.extend(temps::leftovers(home));
    out.extend(teams::stale_teams(home));
    out.extend(teams::teammates(home));
    out.extend(teams::worktrees(home));
    out.extend(teams::cursors(home));
    out.extend(orphans::processes(home));
    out.extend(orphans::panes(home));
    out.extend(orphans::placeholders(home));
    out.extend(orphans::sessions(home));
    // Last: `--fix` ends what of a gone team still runs before it forgets which team it was.
    out.extend(teams::current(home));
    out
}
