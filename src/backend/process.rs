//! The `process` backend: a worker as a detached process (its own session and process group),
//! its output in the teammate's log. For machines without tmux.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::ending::{Ending, Tag};
use super::{Backend, Launch, Liveness, Placement, proc};
use crate::domain::{BackendType, LiveState, Member};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessBackend;

impl ProcessBackend {
    /// The command that starts the worker, as a plain value (testable without spawning).
    pub fn command(launch: &Launch) -> Result<Command> {
        // Never through a link swapped in for the team's directories (`store::teamdir`).
        let log = crate::store::teamdir::open_append(&launch.log)?;
        let err = log
            .try_clone()
            .map_err(|e| Error::failed(format!("{}: {e}", launch.log.display())))?;
        let mut cmd = Command::new(&launch.program);
        // A worker started from inside a teammate's turn (a send that resumes someone) must
        // not inherit that turn's identity; the launch sets the worker's own.
        for var in crate::domain::env::not_inherited() {
            cmd.env_remove(var);
        }
        cmd.args(&launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            // The word of its placement, recorded before it starts (`worker::placed`).
            .envs(
                launch
                    .nonce
                    .iter()
                    .map(|w| (crate::domain::env::PLACEMENT, w)),
            )
            // A detached worker has no pane, even when spawned from inside one.
            .env_remove("TMUX_PANE")
            .current_dir(&launch.cwd)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        // SAFETY: setsid and close_range (`fds`) are async-signal-safe. setsid detaches the
        // worker from our terminal and makes it the leader of its own process group, so the
        // group can be ended as one; no descriptor of whatever started us (the pipe of an
        // `out=$(teamctl spawn ...)`) reaches a worker that runs on after we exit.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                super::fds::cloexec_above_stdio();
                Ok(())
            });
        }
        Ok(cmd)
    }
}

impl Backend for ProcessBackend {
    fn kind(&self) -> BackendType {
        BackendType::Process
    }

    fn spawn(&self, launch: &Launch) -> Result<Placement> {
        let child = Self::command(launch)?
            .spawn()
            .map_err(|e| Error::io_while("cannot start the worker", e))?;
        Ok(Placement {
            pid: Some(child.id()),
            ..Placement::default()
        })
    }

    fn liveness(&self, member: &Member, live: Option<&LiveState>) -> Liveness {
        worker_liveness(member, live)
    }

    fn terminate_in(
        &self,
        member: &Member,
        live: Option<&LiveState>,
        ending: &mut Ending,
    ) -> Result<()> {
        end_worker(member, live, ending);
        end_turn(member, live, ending);
        Ok(())
    }
}

/// End the member's worker with `ending`, before its turn: a worker asked to stop ends its
/// own turn and leaves the message for `resume`; a turn ended first is a failed turn to a
/// worker still running, which then takes the next message. The worker leads its own process
/// group (setsid here, tmux's own for a pane): the group goes while its leader is this
/// member's worker.
pub fn end_worker(member: &Member, live: Option<&LiveState>, ending: &mut Ending) {
    for pid in [member.pid, live.map(|l| l.pid)].into_iter().flatten() {
        if let Some(group) = proc::Pid::new(pid) {
            ending.group(group, Tag::Worker(member.agent_id.clone()));
        }
    }
}

/// Alive when the recorded worker pid (team file or live state) is this member's tagged worker.
pub fn worker_liveness(member: &Member, live: Option<&LiveState>) -> Liveness {
    liveness_of(member, live, false)
}

/// `worker_liveness`, for a teammate its pane shows as gone (`tmux::panes::liveness`): the
/// process must also be the very one recorded, by the start time recorded with its pid (the
/// team file's `pidStarted`, the live state's `startTicks`) where there is one. A process given
/// a dead worker's pid, its command line imitating a worker's, kept the teammate alive for
/// ever: mail unread, `resume` refused as "already running" (attacker QA 41).
pub fn recorded_worker_runs(member: &Member, live: Option<&LiveState>) -> Liveness {
    liveness_of(member, live, true)
}

/// `worker_liveness`, the start times checked too when `by_start`.
fn liveness_of(member: &Member, live: Option<&LiveState>, by_start: bool) -> Liveness {
    let runs = |pid: u32, started: Option<u64>| {
        proc::is_worker(pid, &member.agent_id)
            && (!by_start || started.is_none_or(|t| proc::start_time(pid) == Some(t)))
    };
    if member.pid.is_some_and(|p| runs(p, member.pid_started))
        || live.is_some_and(|l| runs(l.pid, l.start_ticks))
        || started_here(member)
    {
        Liveness::Alive
    } else {
        Liveness::Gone
    }
}

/// Whether the process `member` records (`pid`, `pidStarted`) runs, as the very one a start
/// of this host made (`proc::is_recorded`: before it `exec`s the worker too). A member another
/// host placed is that host's to tell (its pid here, on one machine, is no worker of this
/// home's: `is_worker` checks the home).
pub fn started_here(member: &Member) -> bool {
    crate::backend::host::elsewhere(member).is_none()
        && member
            .pid
            .is_some_and(|pid| proc::is_recorded(pid, member.pid_started))
}

/// End the member's turn process group (the one its live state records) and any process
/// still carrying its tag (its worker; its agent processes, by the word of its placement
/// when its record holds one), with `ending`.
pub fn end_turn(member: &Member, live: Option<&LiveState>, ending: &mut Ending) {
    let id = &member.agent_id;
    if let Some(pgid) = live.and_then(|l| l.turn_pgid).and_then(proc::Pid::group) {
        ending.group(pgid, Tag::Agent(id.clone(), None));
    }
    ending.tagged_placed(id, member.pane_nonce.as_deref());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Name;

    #[test]
    fn a_worker_never_inherits_the_identity_of_the_turn_that_started_it() {
        let dir = tempfile::tempdir().unwrap();
        let launch = Launch {
            team: Name::parse("alpha").unwrap(),
            member: Name::parse("bob").unwrap(),
            agent_id: "bob@alpha".into(),
            program: "/bin/true".into(),
            args: vec![],
            env: vec![("TEAMCTL_AGENT_ID".into(), "bob@alpha".into())],
            cwd: dir.path().to_path_buf(),
            log: dir.path().join("bob.log"),
            color: "blue".into(),
            console: vec![],
            console_cwd: dir.path().to_path_buf(),
            fill: None,
            nonce: None,
        };
        let cmd = ProcessBackend::command(&launch).unwrap();
        let envs: Vec<(String, Option<String>)> = cmd
            .get_envs()
            .map(|(k, v)| {
                let v = v.map(|v| v.to_string_lossy().into_owned());
                (k.to_string_lossy().into_owned(), v)
            })
            .collect();
        for var in ["TEAMCTL_FROM", "TEAMCTL_MESSAGE_ID", "TEAMCTL_AGENT_NAME"] {
            assert!(
                envs.contains(&(var.into(), None)),
                "{var} not removed: {envs:?}"
            );
        }
        assert!(envs.contains(&("TEAMCTL_AGENT_ID".into(), Some("bob@alpha".into()))));
    }
}
