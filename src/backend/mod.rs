//! Where workers run. A `Launch` is a plain value (the worker's argv, environment, cwd); a
//! `Backend` turns it into a running worker and later checks or ends it. Every kill goes
//! through a tag check, so teamctl never ends a pane or process that is not its own.

pub mod ending;
pub mod exe;
pub mod fds;
pub mod host;
pub mod proc;
pub mod process;
pub mod snapshot;
pub mod tmux;

pub use ending::Ending;
pub use snapshot::Snapshot;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::domain::{BackendType, LiveState, Member, Name, TmuxFill};
use crate::error::{Error, Result};

/// How long a teammate gets between the polite signal and the kill.
pub const GRACE: Duration = Duration::from_secs(3);

/// Everything needed to start one worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub team: Name,
    pub member: Name,
    /// `NAME@TEAM`: the tag put on the pane or process.
    pub agent_id: String,
    /// The `teamctl` binary.
    pub program: PathBuf,
    /// Arguments after the program: `worker --home H --id NAME@TEAM`.
    pub args: Vec<String>,
    /// Extra environment for the worker.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Where the worker's own output goes when it has no pane.
    pub log: PathBuf,
    pub color: String,
    /// The leader console's argv (program first): the first pane of a team session that
    /// teamctl creates outside tmux.
    pub console: Vec<String>,
    /// Where the console runs: the leader's directory (new-user QA 43: it ran in the first
    /// teammate's worktree, left `(deleted)` once that was removed).
    pub console_cwd: PathBuf,
    /// Where the last teammate went in the team's tmux session (`TeamConfig::tmux_fill`).
    pub fill: Option<TmuxFill>,
    /// The placement's random word (`Member::pane_nonce`), recorded with the member before
    /// the pane or process is made (`leader::start_worker_in`): set on the pane with its tags.
    /// `None`: the backend makes one.
    pub nonce: Option<String>,
}

impl Launch {
    pub fn new(
        home: &std::path::Path,
        team: &Name,
        member: &Member,
        log: PathBuf,
    ) -> Result<Launch> {
        if !Path::new(&member.cwd).is_dir() {
            return Err(Error::failed(format!(
                "{}'s working directory {} no longer exists; create it again, or spawn {} anew with another --cwd",
                member.name,
                crate::output::printable_line(&member.cwd, 1024),
                member.name
            )));
        }
        let program =
            exe::current().map_err(|e| Error::io_while("cannot find the teamctl binary", e))?;
        let console = vec![
            program.display().to_string(),
            "lead".into(),
            "--home".into(),
            home.display().to_string(),
            "--team".into(),
            team.to_string(),
            "--as".into(),
            crate::domain::LEADER.into(),
        ];
        Ok(Launch {
            team: team.clone(),
            member: member.name.clone(),
            agent_id: member.agent_id.clone(),
            program,
            args: worker_args(home, &member.agent_id),
            console,
            console_cwd: PathBuf::from(&member.cwd),
            env: Vec::new(),
            cwd: PathBuf::from(&member.cwd),
            log,
            color: member.color.clone(),
            fill: None,
            nonce: None,
        })
    }

    /// The directory put first on an agent's `PATH` (`exe::agent_bin_dir`; `home`: the
    /// teamctl home).
    pub fn program_dir(&self, home: &Path) -> PathBuf {
        exe::agent_bin_dir(Some(home))
    }

    /// The full argv: program then arguments.
    pub fn argv(&self) -> Vec<String> {
        let mut v = vec![self.program.display().to_string()];
        v.extend(self.args.iter().cloned());
        v
    }
}

/// `worker --home H --id NAME@TEAM`: the worker's arguments, which are also its process tag.
pub fn worker_args(home: &std::path::Path, agent_id: &str) -> Vec<String> {
    vec![
        "worker".into(),
        "--home".into(),
        home.display().to_string(),
        "--id".into(),
        agent_id.into(),
    ]
}

/// Where a new worker ended up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    pub pane_id: Option<String>,
    pub pid: Option<u32>,
    pub tmux_socket: Option<String>,
    pub tmux_session: Option<String>,
    /// Where this teammate went in the team's tmux session, for the next spawn.
    pub fill: Option<TmuxFill>,
    /// The random word set on the pane with its tags (`Member::pane_nonce`).
    pub nonce: Option<String>,
}

/// Whether a member's worker is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    /// Pane or process gone, or no longer carrying this member's tag.
    Gone,
}

/// A place where workers run.
pub trait Backend {
    fn kind(&self) -> BackendType;
    /// Start the worker described by `launch`.
    fn spawn(&self, launch: &Launch) -> Result<Placement>;
    /// Is this member's worker running (tag checked)?
    fn liveness(&self, member: &Member, live: Option<&LiveState>) -> Liveness;
    /// End the worker, its turn and its pane now: polite signal, `grace`, then kill. Only what
    /// carries the member's tag is touched.
    fn terminate(&self, member: &Member, live: Option<&LiveState>, grace: Duration) -> Result<()> {
        let mut ending = Ending::new(grace);
        self.terminate_in(member, live, &mut ending)?;
        ending.finish().map(drop)
    }
    /// `terminate`, what is to be ended added to `ending`, which ends it (with other members'
    /// workers: `shutdown --all --force`) when it finishes.
    fn terminate_in(
        &self,
        member: &Member,
        live: Option<&LiveState>,
        ending: &mut Ending,
    ) -> Result<()>;
    /// The server to record with a member (`tmuxSocket`) before its worker is placed, so a
    /// start cut short is never taken for one on another server. `None`: no server (or the
    /// default tmux server).
    fn tmux_socket(&self) -> Option<String> {
        None
    }
    /// What a start of `member` that failed made all the same, found by its placement's word
    /// `word` (a tmux client killed after its server made the pane). None here: a process
    /// start that fails has started nothing.
    fn left_by(&self, member: &Member, word: &str) -> Vec<Placement> {
        let _ = (member, word);
        Vec::new()
    }
}

/// The backend a member was spawned on.
pub fn for_member(member: &Member) -> Box<dyn Backend> {
    match member.backend_type {
        Some(BackendType::Tmux) => Box::new(tmux::TmuxBackend::for_member(member)),
        _ => Box::new(process::ProcessBackend),
    }
}

/// Where a new member's worker runs (`--backend`, mapped by the CLI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Auto,
    Tmux,
    Process,
}

/// The backend to spawn a new member on.
pub fn select(choice: Choice) -> Result<Box<dyn Backend>> {
    match choice {
        Choice::Process => Ok(Box::new(process::ProcessBackend)),
        Choice::Tmux => Ok(Box::new(tmux::TmuxBackend::from_env()?)),
        Choice::Auto => match tmux::TmuxBackend::from_env() {
            Ok(t) => Ok(Box::new(t)),
            Err(_) => Ok(Box::new(process::ProcessBackend)),
        },
    }
}
