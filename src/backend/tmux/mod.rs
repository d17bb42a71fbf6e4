//! The `tmux` backend (SPEC section 8): each teammate's worker runs directly in its own pane
//! (argv after `--`, no `send-keys`, no shell, no focus change). Panes carry teamctl's tag (a
//! pane user option holding the agent id, and the pid of the process teamctl started there);
//! every look at or kill of a recorded pane checks it first, because pane ids are reused after
//! a server restart, and a pane the user respawned with a program of their own is theirs. A
//! tag is a pane option anyone can set: a pane is closed only when what it runs is teamctl's
//! own process for its tag too (`runs_teamctls`).

pub mod argv;
pub mod hook;
pub mod panes;
pub mod place;
pub mod run;

use argv::{PaneState, Server, Start, Started, Untag};
use run::{Fail, Tmux};

use super::{Backend, Launch, Liveness, Placement, proc};
use crate::domain::{BackendType, LiveState, Member, Name, TeamConfig, TmuxFill};
use crate::error::{Error, Result};
use crate::output::shell_word;

/// The oldest tmux with pane options, `-e` on new panes and `select-layout -E`.
const MIN_VERSION: (u32, u32) = (3, 1);

#[derive(Debug, Clone)]
pub struct TmuxBackend {
    tmux: Tmux,
    /// The caller's home key (`proc::home_key`): part of every tag set and checked.
    home_key: String,
    /// The leader's own pane (`$TMUX_PANE`) when the leader runs inside this server.
    leader_pane: Option<String>,
}

/// The tmux program, or the error that names the way out.
pub fn find_tmux() -> Result<std::path::PathBuf> {
    which::which("tmux").map_err(|_| {
        Error::failed("tmux was not found on PATH; install tmux or use --backend process")
    })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Whether `$TMUX` names `server`: then the caller is a client of it.
pub fn inside(server: &Server) -> bool {
    inside_with(server, env("TMUX_TMPDIR").as_deref())
}

/// `inside`, a named server's socket looked for in `tmux_tmpdir` (`$TMUX_TMPDIR` as given,
/// not this process's own).
pub fn inside_with(server: &Server, tmux_tmpdir: Option<&str>) -> bool {
    let Some(ours) = env("TMUX").as_deref().and_then(argv::socket_of_tmux_env) else {
        return false;
    };
    let uid = nix::unistd::getuid().as_raw();
    let theirs = server.socket_path(tmux_tmpdir, uid);
    let canon = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canon(&ours) == canon(&theirs)
}

/// The leader's pane when the caller runs in a pane of `server`.
fn leader_pane_on(server: &Server) -> Option<String> {
    env("TMUX_PANE")
        .filter(|p| p.starts_with('%'))
        .filter(|_| inside(server))
}

impl TmuxBackend {
    /// The backend for new teammates: `TEAMCTL_TMUX_SOCKET`, else the server of `$TMUX`,
    /// else the default server.
    pub fn from_env() -> Result<TmuxBackend> {
        let program = find_tmux()?;
        let server = Server::from_env_values(
            env("TEAMCTL_TMUX_SOCKET").as_deref(),
            env("TMUX").as_deref(),
        );
        // The version is checked when the team session is first made on a server and when
        // a tmux command fails (`check_version`), not on every spawn: `tmux -V` was one of
        // five tmux processes per spawn.
        Ok(TmuxBackend {
            home_key: crate::backend::proc::home_key(),
            leader_pane: leader_pane_on(&server),
            tmux: Tmux::new(program, server),
        })
    }

    /// The backend a member was spawned on: the server recorded with it. A member with no
    /// server and no pane recorded was never placed (a start cut short before teamctl
    /// recorded servers first): the environment's server, as for a new teammate, never
    /// silently the default one when the environment names another.
    pub fn for_member(member: &Member) -> TmuxBackend {
        let server = match (&member.tmux_socket, &member.pane_id) {
            (None, None) => Server::from_env_values(
                env("TEAMCTL_TMUX_SOCKET").as_deref(),
                env("TMUX").as_deref(),
            ),
            (socket, _) => Server::from_record(socket.as_deref()),
        };
        TmuxBackend {
            home_key: crate::backend::proc::home_key(),
            leader_pane: leader_pane_on(&server),
            tmux: Tmux::new(find_tmux().unwrap_or_else(|_| "tmux".into()), server),
        }
    }

    /// The server this backend talks to.
    pub fn server(&self) -> &Server {
        &self.tmux.server
    }

    pub fn runner(&self) -> &Tmux {
        &self.tmux
    }

    /// A pane's state, or `None` when it (or its server) is gone.
    pub fn probe(&self, pane: &str) -> Option<PaneState> {
        self.tmux
            .run(&[argv::pane_state(pane)])
            .ok()
            .and_then(|out| argv::parse_state(&out, pane))
    }

    /// `agent_id` (or a team name) as this home tags it in tmux.
    pub fn tag(&self, name: &str) -> String {
        argv::scoped(name, &self.home_key)
    }

    /// Does `pane` exist and carry `agent_id`'s tag of this home, for the process it runs (or
    /// last ran)? (A pane tagged by an older teamctl, without a home, never does; nor one the
    /// user respawned.)
    pub fn is_tagged(&self, pane: &str, agent_id: &str) -> bool {
        let tag = self.tag(agent_id);
        self.probe(pane).is_some_and(|s| s.tag == tag)
    }

    /// A failed tmux command explained by a too old tmux becomes that error, which names the
    /// way out; any other failure stays as it was.
    fn too_old_or(&self, failure: Error) -> Error {
        check_version(&self.tmux.program).err().unwrap_or(failure)
    }

    fn place(&self, launch: &Launch, start: &Start, nonce: &str) -> Result<place::Placed> {
        let team_tag = self.tag(launch.team.as_str());
        let team = team_tag.as_str();
        let agent_tag = self.tag(&launch.agent_id);
        let script = hook::tag_script(
            &agent_tag,
            Some(nonce),
            team,
            &launch.color,
            launch.member.as_str(),
        );
        let tag = place::Tagging {
            script: script.as_deref(),
            agent_id: &agent_tag,
            nonce: Some(nonce),
            color: &launch.color,
            title: launch.member.as_str(),
        };
        if let Some(leader) = &self.leader_pane
            && let Some(p) = place::beside_leader(&self.tmux, leader, team, start, tag)?
        {
            return Ok(p);
        }
        // The console is the leader's: none of the teammate's environment (an interactive
        // teammate's names it, and `teamctl lead` inside a teammate's identity is refused).
        let console = Start {
            argv: &launch.console,
            cwd: &launch.console_cwd,
            env: &[],
        };
        // The last spawn's window, if it was on this server.
        let server = self.tmux.server.record();
        let hint = launch
            .fill
            .as_ref()
            .filter(|f| f.server == server)
            .map(|f| place::Hint {
                window: &f.window,
                panes: f.panes,
            });
        place::detached(&self.tmux, team, start, &console, tag, hint)
    }
}

/// Fail with the way out when `program` is older than teamctl needs.
pub(crate) fn check_version(program: &std::path::Path) -> Result<()> {
    let out = std::process::Command::new(program)
        .arg("-V")
        .output()
        .map_err(|e| Error::failed(format!("cannot run {}: {e}", program.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match argv::parse_version(&text) {
        Some(v) if v < MIN_VERSION => Err(Error::failed(format!(
            "{} is too old: teamctl needs tmux {}.{} or newer; upgrade tmux or use --backend process",
            text.trim(),
            MIN_VERSION.0,
            MIN_VERSION.1
        ))),
        _ => Ok(()),
    }
}

impl Backend for TmuxBackend {
    fn kind(&self) -> BackendType {
        BackendType::Tmux
    }

    fn spawn(&self, launch: &Launch) -> Result<Placement> {
        let argv = launch.argv();
        // A worker's pane says it was placed by teamctl (`worker::placed`), kept by tmux
        // when the user re-runs the pane: the worker need not ask tmux for its pane's tag.
        // With the word its start recorded, it need not ask at all while that start runs.
        let mut env = launch.env.clone();
        if launch.args.first().is_some_and(|a| a == "worker") {
            env.push((
                crate::domain::env::PLACED.into(),
                self.tag(&launch.agent_id),
            ));
            if let Some(word) = &launch.nonce {
                env.push((crate::domain::env::PLACEMENT.into(), word.clone()));
            }
        }
        let start = Start {
            argv: &argv,
            cwd: &launch.cwd,
            env: &env,
        };
        // What tells this placement's pane, dead, from one whose tags someone else set
        // (`close_cmd`): recorded with the member, set on the pane with the tags.
        let nonce = launch
            .nonce
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
        let placed = self
            .place(launch, &start, &nonce)
            .map_err(|e| self.too_old_or(e))?;
        let pane = &placed.pane.pane;
        if !placed.tagged {
            let tags = argv::tag_pane(
                pane,
                &self.tag(&launch.agent_id),
                Some(&nonce),
                &self.tag(launch.team.as_str()),
                &launch.color,
                launch.member.as_str(),
            );
            self.tmux.run(&tags).map_err(|e| match e {
                Fail::Gone(_) => Error::failed(format!(
                    "the worker of {} exited as soon as it started (pane {pane} closed); see `teamctl log`",
                    launch.member
                )),
                e => self.too_old_or(e.into_error("tag the teammate's pane")),
            })?;
        }
        let fill = match (&placed.session, placed.pane.panes) {
            (Some(_), Some(panes)) => Some(TmuxFill {
                server: self.tmux.server.record(),
                window: placed.pane.window.clone(),
                panes,
            }),
            _ => None,
        };
        Ok(Placement {
            pane_id: Some(pane.clone()),
            pid: Some(placed.pane.pid),
            tmux_socket: self.tmux.server.record(),
            tmux_session: placed.session,
            fill,
            nonce: Some(nonce),
        })
    }

    fn tmux_socket(&self) -> Option<String> {
        self.tmux.server.record()
    }

    /// The panes of this server tagged for `member` with `word`, the word a failed start set
    /// on them with their tags (in the same tmux invocation that made them): fresh, never
    /// given to any other pane, so nothing else matches.
    fn left_by(&self, member: &Member, word: &str) -> Vec<Placement> {
        let Ok(out) = self.tmux.run(&[argv::all_pane_states()]) else {
            return Vec::new();
        };
        let ours = self.tag(&member.agent_id);
        argv::parse_pane_states(&out)
            .into_iter()
            .filter(|(_, s)| s.nonce == word && (s.tag == ours || s.stale_tag == ours))
            .map(|(pane, s)| Placement {
                pane_id: Some(pane),
                pid: s.pid,
                tmux_socket: self.tmux.server.record(),
                nonce: Some(word.to_string()),
                ..Placement::default()
            })
            .collect()
    }

    fn liveness(&self, member: &Member, live: Option<&LiveState>) -> Liveness {
        let state = member.pane_id.as_deref().and_then(|p| self.probe(p));
        panes::liveness(member, live, state.as_ref())
    }

    fn terminate_in(
        &self,
        member: &Member,
        live: Option<&LiveState>,
        ending: &mut super::ending::Ending,
    ) -> Result<()> {
        // The worker, then the turn group, then every process carrying the tag, then the
        // panes.
        super::process::end_worker(member, live, ending);
        super::process::end_turn(member, live, ending);
        let panes = [
            member.pane_id.as_deref(),
            live.and_then(|l| l.pane_id.as_deref()),
        ];
        for (i, pane) in panes.iter().enumerate() {
            let Some(pane) = pane else { continue };
            if panes[..i].contains(&Some(pane)) {
                continue;
            }
            let (me, pane, id) = (self.clone(), pane.to_string(), member.agent_id.clone());
            let known = Known::of(member, live);
            ending.then(move || {
                let closing = me.close_tagged(&pane, &id, &known)?;
                Ok(matches!(closing, Closing::Untagged | Closing::Foreign).then_some(pane))
            });
        }
        Ok(())
    }
}

impl TmuxBackend {
    /// Close `pane` if it still carries `agent_id`'s tag for the process its worker recorded
    /// (`known`, from its team file and live state: `close_if_tagged`), saying what was done.
    pub fn close_tagged(&self, pane: &str, agent_id: &str, known: &Known) -> Result<Closing> {
        close_if_tagged(&self.tmux, pane, &self.tag(agent_id), known)
            .map_err(|e| e.into_error(&format!("close pane {pane}")))
    }
}

/// Close `pane` if it still carries `tag` (an agent id scoped to its home, `argv::scoped`) for
/// the process it runs or last ran (`argv::holds`), and that process is the one its worker
/// recorded (`record`, from the member's live state: the same pid with another start time is
/// a program the system gave that pid again): a pane id that no longer does is someone else's
/// now; a pane already gone is fine. A pane the user respawned with a program of their own
/// (the tag names a process it no longer runs) is theirs: left open, the tags taken off. The
/// kill itself is guarded by the pid the pane ran when it was read (`close_cmd`), so a
/// respawn after the look is not missed. A pane whose live process is not teamctl's for the
/// tag (`runs_teamctls`: the tags were set by someone else) is left open too, its tags taken
/// off (`Closing::Foreign`); so is a dead one without the nonce its member recorded (`known`).
/// The one rule for every close of one pane: a member's (`kill`, `shutdown`, the worker's own)
/// and `doctor --fix`'s.
pub fn close_if_tagged(
    t: &Tmux,
    pane: &str,
    tag: &str,
    known: &Known,
) -> std::result::Result<Closing, Fail> {
    let Some(state) = t
        .run(&[argv::pane_state(pane)])
        .ok()
        .and_then(|out| argv::parse_state(&out, pane))
    else {
        return Ok(Closing::NotOurs);
    };
    if state.tag == tag {
        // No pid to guard the kill by: nothing proves the pane is still teamctl's.
        let Some(pid) = state.pid else {
            return Ok(Closing::NotOurs);
        };
        let who = Who::Agent(argv::unscoped(tag), known);
        match close_cmd(pane, pid, state.dead, &state.nonce, Some(who)) {
            Close::Kill(kill) => {
                crate::pause::at("close-pane");
                return match run_keeping_zoom(t, vec![kill], &[pane]) {
                    Ok(_) => Ok(Closing::Killed { pid }),
                    Err(Fail::Gone(_)) => Ok(Closing::NotOurs),
                    Err(e) => Err(e),
                };
            }
            Close::Theirs => {
                let whose = Untag::of(&state.nonce, known.nonce.as_deref());
                let _ = t.run(&argv::untag_pane(pane, whose));
                return Ok(Closing::Untagged);
            }
            Close::Foreign => {
                let _ = t.run(&argv::untag_pane(pane, Untag::Foreign));
                return Ok(Closing::Foreign);
            }
            Close::Not => return Ok(Closing::NotOurs),
        }
    }
    if state.stale_tag == tag {
        let whose = Untag::of(&state.nonce, known.nonce.as_deref());
        let _ = t.run(&argv::untag_pane(pane, whose));
        return Ok(Closing::Untagged);
    }
    Ok(Closing::NotOurs)
}

/// How to close a pane judged teamctl's by its tags (`close_cmd`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Close {
    /// The guarded kill to run.
    Kill(argv::Cmd),
    /// The pane runs the user's program under the pid teamctl's had (its start time is not
    /// the recorded one): theirs, left open, its tags to come off.
    Theirs,
    /// The pane carries teamctl's tags for the process it runs, but that process is not
    /// teamctl's (`runs_teamctls`: the tags were set by someone else): left open, the tags,
    /// teamctl's own options, to come off.
    Foreign,
    /// Not a pane id: nothing to run.
    Not,
}

/// The close of `pane`, found running `pid` (`dead`: ran it last) under teamctl's tags, with
/// `nonce` (`argv::NONCE_OPTION`, empty when it has none): the one helper every close of a
/// pane goes through (`close_if_tagged`, `delete`'s `close_panes`, the placeholder a failed
/// start leaves). The start time its worker recorded (`Known::started` of a teammate's `who`)
/// is compared with `/proc` here (`argv::runs_started`); the pid is then compared
/// by tmux in the same command as the kill (`argv::kill_pane_running`: a format tmux
/// evaluates, nothing run in between), so a pane the user respawns after the look is left
/// open. tmux cannot read `/proc`, so the start time cannot be part of that command: what is
/// left is a respawn between this check and the kill whose program the system gives that very
/// pid again, within that instant.
///
/// `who`: whose tag the pane carries, whose process it must then run (`runs_teamctls`): a
/// tag is a pane option anyone can set, so a pane whose live process is not teamctl's is
/// left open however it is tagged (`Close::Foreign`), and so is a dead one without its
/// member's nonce. `None` only for a pane teamctl just made itself and judges by the pid tmux
/// gave it then (the placeholder).
pub fn close_cmd(pane: &str, pid: u32, dead: bool, nonce: &str, who: Option<Who>) -> Close {
    close_cmd_of(pane, pid, dead, nonce, who, proc::HomeOf::Ours)
}

/// `close_cmd` for a pane of the home `home` (`runs_teamctls_of`).
fn close_cmd_of(
    pane: &str,
    pid: u32,
    dead: bool,
    nonce: &str,
    who: Option<Who>,
    home: proc::HomeOf,
) -> Close {
    let record = match who {
        Some(Who::Agent(_, known)) => known.started,
        _ => None,
    };
    if !argv::runs_started(pid, dead, record, &proc::start_time) {
        return Close::Theirs;
    }
    if who.is_some_and(|who| !runs_teamctls_of(pid, dead, nonce, who, home)) {
        return Close::Foreign;
    }
    argv::kill_pane_running(pane, pid).map_or(Close::Not, Close::Kill)
}

/// Whose tag a pane carries: a teammate's (its agent id, `NAME@TEAM`, and what teamctl
/// recorded of it: `Known`, the default when nothing is) or a team's console (the team's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who<'a> {
    Agent(&'a str, &'a Known),
    Console(&'a str),
}

/// What teamctl recorded of a teammate whose pane it judges: the process its worker recorded
/// (`Started`, from its live state), whether it is interactive (its pane runs its agent, not
/// its worker) and the nonce of its placement (`Member::pane_nonce`). The default, when the
/// team's files are gone or name no such member: none of these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Known {
    pub started: Option<Started>,
    pub interactive: bool,
    pub nonce: Option<String>,
}

impl Known {
    pub fn of(member: &Member, live: Option<&LiveState>) -> Known {
        Known {
            started: live.and_then(Started::of),
            interactive: member.interactive.is_some(),
            // A member now recorded on another host records that host's pane's nonce: a pane
            // this host made for it before it moved is judged as one an older teamctl placed
            // (its tags and pid decide), so it is still closed as an orphan here.
            nonce: member
                .pane_nonce
                .clone()
                .filter(|_| super::host::elsewhere(member).is_none()),
        }
    }
}

/// Does a pane tagged for `who`, found running `pid` (`dead`: ran it last), run teamctl's
/// process for it? A teammate's pane runs its worker (a teamctl binary running `worker --home
/// HOME --id ID` of this home: `proc::is_teamctl_worker`), or, for a teammate recorded as
/// interactive only, its agent (`TEAMCTL_AGENT_ID` and `TEAMCTL_HOME` in its environment, as
/// teamctl started it: `proc::is_agent_process`; anyone can start a program with those, so for
/// a teammate whose pane runs its worker they prove nothing); a console pane runs `teamctl
/// lead` for its team (`proc::is_console`). A dead pane, or one whose process has just ended,
/// runs nothing to be told apart by: a teammate's counts as teamctl's when it carries the nonce
/// its member recorded (`nonce`, the pane's), or its member recorded none (placed by an older
/// teamctl, or the team's files are gone: its tags decide, as they did; nothing runs there to
/// be ended). Another user's live process is not ended, and not teamctl's.
pub fn runs_teamctls(pid: u32, dead: bool, nonce: &str, who: Who) -> bool {
    runs_teamctls_of(pid, dead, nonce, who, proc::HomeOf::Ours)
}

/// `runs_teamctls`, of the home `home`: a worker or console names it with its `--home`.
fn runs_teamctls_of(pid: u32, dead: bool, nonce: &str, who: Who, home: proc::HomeOf) -> bool {
    if dead || proc::ended_or_ending(pid) {
        return match who {
            Who::Agent(_, known) => known.nonce.as_deref().is_none_or(|n| n == nonce),
            Who::Console(_) => true,
        };
    }
    match who {
        Who::Agent(id, known) => {
            proc::is_teamctl_worker_of(pid, id, home)
                || (known.interactive && proc::is_agent_process(pid, id))
        }
        Who::Console(team) => proc::is_console_of(pid, team, home),
    }
}

/// A worker started as `pane`'s own process (`pid`, this process) in the pane recorded for
/// `member`, whose tags there name another process: the user re-ran the pane
/// (`respawn-pane -k` with no command runs the pane's command, the same `teamctl worker` line,
/// again). The pane is the teammate's again: its tags are made to name this worker, only
/// while the pane runs it and carries the member's tag of this home (`argv::retag_running`:
/// one tmux command), so a pane the user respawned with a program of their own, or whose
/// tags came off, is never taken. True when the pane carries the member's tag for `pid` now.
/// The caller records `pid` as the member's (`Member::pid`), which its live state then
/// matches.
pub fn take_back(member: &Member, pane: &str, pid: u32) -> Result<bool> {
    let backend = TmuxBackend::for_member(member);
    let tag = backend.tag(&member.agent_id);
    let Some(retag) = argv::retag_running(pane, pid, &tag) else {
        return Ok(false);
    };
    let out = backend
        .tmux
        .run(&[retag, argv::pane_state(pane)])
        .map_err(|e| e.into_error(&format!("take pane {pane} back")))?;
    Ok(argv::parse_state(&out, pane).is_some_and(|s| s.tag == tag && s.pid == Some(pid)))
}

/// Let the member's `pane` close as its worker `pid` exits (`argv::close_on_exit_running`):
/// a worker the user stopped with Ctrl-C in its pane closes it, as `kill` would, instead of
/// leaving a dead pane that `doctor` reports orphaned (new-user QA).
pub fn close_on_exit(member: &Member, pane: &str, pid: u32) -> Result<()> {
    let Some(cmd) = argv::close_on_exit_running(pane, pid) else {
        return Ok(());
    };
    TmuxBackend::for_member(member)
        .tmux
        .run(&[cmd])
        .map(drop)
        .map_err(|e| e.into_error(&format!("let pane {pane} close")))
}

/// Take teamctl's tags off `pane` while they name a process it no longer runs (`tag`, an
/// agent id scoped to its home: the pane's `PaneState::stale_tag`, or its tag for a pid whose
/// process is not the one its worker recorded, `known`): the user respawned it. Or while the
/// process they name is not teamctl's for the tag (`runs_teamctls`): someone else set them.
/// The pane is the user's: it is never closed here. True when the tags came off.
pub fn untag_if_stale(
    t: &Tmux,
    pane: &str,
    tag: &str,
    known: &Known,
) -> std::result::Result<bool, Fail> {
    let state = t
        .run(&[argv::pane_state(pane)])
        .map(|out| argv::parse_state(&out, pane))?;
    let who = Who::Agent(argv::unscoped(tag), known);
    let Some(whose) = state.and_then(|s| {
        let placed = Untag::of(&s.nonce, known.nonce.as_deref());
        if s.stale_tag == tag {
            return Some(placed);
        }
        let pid = s.pid.filter(|_| s.tag == tag)?;
        if !argv::runs_started(pid, s.dead, known.started, &proc::start_time) {
            Some(placed)
        } else if !runs_teamctls(pid, s.dead, &s.nonce, who) {
            Some(Untag::Foreign)
        } else {
            None
        }
    }) else {
        return Ok(false);
    };
    t.run(&argv::untag_pane(pane, whose)).map(|_| true)
}

/// What `close_if_tagged` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closing {
    /// The pane ran `pid` under the tag: killed, unless it ran another process by the time
    /// tmux came to the kill (the user respawned it in between: then it is left open).
    Killed { pid: u32 },
    /// The pane was the user's (respawned): left open, its tags taken off.
    Untagged,
    /// The pane carried the tag, but what runs in it is not teamctl's process for it (tags
    /// set by someone else: `runs_teamctls`): left open, its tags taken off.
    Foreign,
    /// Gone, or not the tag's.
    NotOurs,
}

/// Remove what teamctl made in tmux for a team being deleted: its detached session, only
/// when that session carries the team's tag of this home, on every server the team's members
/// used. (The session recorded by an older teamctl carries no home in its tag: left alone.)
/// Returns the sessions left open because they hold panes teamctl did not make.
pub fn forget_team(config: &TeamConfig, records: &Records) -> Vec<Kept> {
    // Only this host's members: another host's tmux server is that host's to clean.
    let sockets = config
        .teammates()
        .filter(|m| {
            m.backend_type == Some(BackendType::Tmux)
                && crate::backend::host::elsewhere(m).is_none()
        })
        .map(|m| m.tmux_socket.clone());
    forget_session(
        &config.name,
        config.tmux_session.as_deref(),
        sockets,
        records,
    )
}

/// What teamctl recorded of each member (`Known`), by its pane tag (the agent id scoped to
/// this home, `argv::scoped`): what `forget_session` judges a member's pane by. Empty where
/// the team's files are gone: the pids and tags decide then.
pub type Records = Vec<(String, Known)>;

/// The `Records` entry of `member`, from its team file entry and live state.
pub fn record_of(member: &Member, live: Option<&LiveState>) -> (String, Known) {
    (
        argv::scoped(&member.agent_id, &proc::home_key()),
        Known::of(member, live),
    )
}

/// A team session `forget_session` left open for the user's panes: its name now, and its
/// server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub session: String,
    pub server: Server,
}

/// What to tell the user of a session `forget_session` left open, and how to close it when
/// they are done (on teamctl's server: `-L NAME` or `-S PATH` unless it is the default one).
pub fn left_open_note(kept: &Kept) -> String {
    format!(
        "teamctl: the tmux session {} stays open, no longer teamctl's: it holds panes teamctl did not make (yours are left running; teamctl closed its own); close it when you are done: {}",
        kept.session,
        close_command(kept)
    )
}

/// The shell command that closes a kept session on its server: by its exact name (`=NAME`;
/// tmux takes a bare `-t NAME` as a prefix when no session has that name, so the same command
/// run again would close `NAME-2`, another kept session with the user's programs: QA).
pub fn close_command(kept: &Kept) -> String {
    let mut close = vec!["tmux".to_string()];
    close.extend(kept.server.flags());
    close.extend([
        "kill-session".into(),
        "-t".into(),
        argv::exact_session(&kept.session),
    ]);
    let close: Vec<String> = close.iter().map(|w| shell_word(w)).collect();
    close.join(" ")
}

/// A team session left open for the user's panes stops being teamctl's: its tags come off
/// (session and windows), and it is renamed `NAME-kept` (or `-kept-2`...), so a new team of
/// the same name makes a session of its own instead of taking this one, or failing on its
/// name. Returns the name it has now.
fn keep_for_the_user(t: &Tmux, target: &str, name: &str, tag: &str) -> String {
    let windows: Vec<String> = t
        .run(&[argv::list_windows(target)])
        .map(|out| {
            argv::parse_rows(&out)
                .iter()
                .filter_map(argv::parse_window)
                .map(|w| w.id)
                .collect()
        })
        .unwrap_or_default();
    // teamctl's own windows carry the team's key at window level (`own_window`), asked
    // without what the session's options would lend it.
    let own: Vec<String> = windows
        .iter()
        .filter(|w| t.run(&[argv::window_guard(w, tag)]).is_ok())
        .cloned()
        .collect();
    let _ = t.run(&argv::untag_session(target, tag, &windows, &own));
    for n in 1..10 {
        let new = if n == 1 {
            format!("{name}-kept")
        } else {
            format!("{name}-kept-{n}")
        };
        match t.run(&[argv::rename_session(target, &new)]) {
            Ok(_) => return new,
            Err(Fail::Other(m)) if m.contains("duplicate session") => {}
            Err(_) => break,
        }
    }
    name.to_string()
}

/// Remove the team's session of this home (tag checked) from the servers its members of this
/// host used (`sockets`, as recorded) and from the server new teammates would go to (the
/// environment's): a home that leaves a team, or finds it deleted by another host, has only
/// its own records of where its members ran. teamctl's own panes of the team close wherever
/// they are (a team window the user linked into a session of their own goes from there too:
/// killing the session alone would leave it, console and all); a pane whose process is no
/// longer the one teamctl tagged it for (the user respawned it) is the user's, and loses its
/// tags. A session that holds a pane teamctl did not make (the user's own, split into it, or
/// respawned) stays, with only teamctl's panes closed; those sessions are returned.
pub fn forget_session(
    team: &Name,
    recorded_session: Option<&str>,
    sockets: impl IntoIterator<Item = Option<String>>,
    records: &Records,
) -> Vec<Kept> {
    let key = crate::backend::proc::home_key();
    forget_session_of(team, &key, recorded_session, sockets, records)
}

/// `forget_session` for the home of `key`: this one's, or a home that no longer exists, whose
/// orphaned workers `doctor --fix` ended (its session would stay for good otherwise).
pub fn forget_session_of(
    team: &Name,
    key: &str,
    recorded_session: Option<&str>,
    sockets: impl IntoIterator<Item = Option<String>>,
    records: &Records,
) -> Vec<Kept> {
    let tag = argv::scoped(team.as_str(), key);
    let home = proc::HomeOf::key(key);
    let mut names = vec![argv::session_name(&tag)];
    if let Some(recorded) = recorded_session
        && !names.iter().any(|n| n == recorded)
    {
        names.push(recorded.to_string());
    }
    let mut servers: Vec<Server> = vec![Server::from_env_values(
        env("TEAMCTL_TMUX_SOCKET").as_deref(),
        env("TMUX").as_deref(),
    )];
    for socket in sockets {
        let s = Server::from_record(socket.as_deref());
        if !servers.contains(&s) {
            servers.push(s);
        }
    }
    let mut left = Vec::new();
    let Ok(program) = find_tmux() else {
        return left;
    };
    for server in servers {
        let t = Tmux::new(program.clone(), server);
        let sessions: Vec<&String> = names
            .iter()
            .filter(|name| {
                place::session_owner(&t, &argv::exact_session(name))
                    .is_ok_and(|owner| owner.as_deref() == Some(&tag))
            })
            .collect();
        // Every pane of the server in one look (no server: nothing to do here).
        let Ok(out) = t.run(&[argv::team_panes()]) else {
            continue;
        };
        let mut panes = argv::parse_team_panes(&out, &tag);
        close_panes(&t, &mut panes, team.as_str(), home, records);
        // A start cut short between making a session or window and placing its worker left
        // the placeholder running: closed while it still runs it.
        let placeholders: Vec<argv::Cmd> = panes
            .placeholders
            .iter()
            .filter_map(|(pane, pid)| argv::kill_pane_running(pane, *pid))
            .collect();
        if !placeholders.is_empty() {
            let _ = t.run(&placeholders);
        }
        for pane in &panes.taken {
            let _ = t.run(&argv::untag_pane(pane, Untag::Placed));
        }
        for pane in &panes.foreign {
            let _ = t.run(&argv::untag_pane(pane, Untag::Foreign));
        }
        let team_sessions: Vec<String> = sessions.iter().map(|s| (*s).clone()).collect();
        for name in sessions {
            let target = argv::exact_session(name);
            // A pane the user split into the session, or respawned there, is theirs: then
            // only teamctl's own panes close, and the session stays (QA: `delete` killed
            // what ran there).
            if panes.others_in(name) == 0 {
                // Gone already with its last pane, as a rule.
                let _ = t.run(&[argv::kill_session(&target)]);
            } else {
                left.push(Kept {
                    session: keep_for_the_user(&t, &target, name, &tag),
                    server: t.server.clone(),
                });
            }
        }
        untag_windows_left(&t, &tag, &team_sessions);
    }
    left
}

/// The windows teamctl made for the team in sessions of the user's (inside tmux, the
/// leader's own), still there once teamctl's panes closed because the user's panes are: their
/// tags and settings come off (`argv::untag_window`). The team's own sessions (`team`) were
/// seen to already. One listing; one invocation per window left.
fn untag_windows_left(t: &Tmux, tag: &str, team: &[String]) {
    let Ok(out) = t.run(&[argv::keyed_windows(tag)]) else {
        return;
    };
    let mut windows: Vec<String> = argv::parse_keyed_windows(&out)
        .into_iter()
        .filter(|(_, session)| !team.contains(session))
        .map(|(window, _)| window)
        .collect();
    windows.sort();
    windows.dedup();
    // The listing's key may be the session's, lent to every window of it (a team session
    // the user renamed): only a window carrying the key itself is teamctl's, so each untag
    // runs behind the window guard (re-QA 38: the user's own windows there lost their
    // settings).
    for window in windows {
        let mut cmds = vec![argv::window_guard(&window, tag)];
        cmds.extend(argv::untag_window(&window, tag));
        let _ = t.run(&cmds);
    }
}

/// Kill teamctl's panes of a team (`ours`), each only while it runs the process it ran when
/// the panes were read, the one its worker recorded (`close_cmd`, judged by `records`): in one
/// tmux invocation, or one each when that stopped at an error. A pane whose pid the system
/// gave again to the user's program is theirs, and so is one whose live process is not
/// teamctl's for its tag (`runs_teamctls`; `team`: the team's name, which its console runs
/// for; `home`: the home whose workers and console those are, this one or a gone one): moved
/// to `taken`, or `foreign` (left open, a session holding it kept, its tags to
/// come off).
fn close_panes(
    t: &Tmux,
    panes: &mut argv::TeamPanes,
    team: &str,
    home: proc::HomeOf,
    records: &Records,
) {
    let mut all: Vec<argv::Cmd> = Vec::new();
    let (mut theirs, mut foreign): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for pane in &panes.ours {
        let Some(owner) = panes.owner_of(pane) else {
            continue;
        };
        let none = Known::default();
        let known = records
            .iter()
            .find(|(agent, _)| !owner.agent.is_empty() && *agent == owner.agent)
            .map_or(&none, |(_, k)| k);
        let who = if owner.agent.is_empty() {
            Who::Console(team)
        } else {
            Who::Agent(argv::unscoped(&owner.agent), known)
        };
        let verdict = close_cmd_of(pane, owner.pid, owner.dead, &owner.nonce, Some(who), home);
        match verdict {
            Close::Kill(kill) => all.push(kill),
            Close::Theirs if Untag::of(&owner.nonce, known.nonce.as_deref()) == Untag::Placed => {
                theirs.push(pane.clone());
            }
            Close::Theirs | Close::Foreign => foreign.push(pane.clone()),
            Close::Not => {}
        }
    }
    panes
        .ours
        .retain(|p| !theirs.contains(p) && !foreign.contains(p));
    panes.taken.extend(theirs);
    panes.foreign.extend(foreign);
    if all.is_empty() {
        return;
    }
    let closing: Vec<&str> = panes.ours.iter().map(String::as_str).collect();
    if run_keeping_zoom(t, all.clone(), &closing).is_err() {
        for kill in all {
            let _ = t.run(&[kill]);
        }
    }
}

/// Run `kills` (closes of `closing`) in one invocation, and zoom again the windows the user
/// had zoomed on a pane that stays: tmux unzooms a window when one of its panes closes
/// (attacker QA 38: `kill` of a teammate beside the leader undid the user's zoom). The
/// windows are read in the same invocation, before the kills; a window is zoomed again only
/// when one was (one more tmux call, then).
fn run_keeping_zoom(t: &Tmux, kills: Vec<argv::Cmd>, closing: &[&str]) -> Result<String, Fail> {
    // One pane's close reads its own window only: `kill` of each of 1,000 teammates does not
    // list the whole server each time.
    let one = match closing {
        [pane] => Some(*pane),
        _ => None,
    };
    let mut cmds = vec![argv::zoom_states(one)];
    cmds.extend(kills);
    let out = t.run(&cmds)?;
    let again: Vec<argv::Cmd> = argv::parse_zoomed(&out, closing)
        .iter()
        .filter_map(|w| argv::rezoom(w))
        .collect();
    if !again.is_empty() {
        let _ = t.run(&again);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pane is closed by its tag only while what it runs is teamctl's for that tag, or it
    /// runs nothing (dead, or its process ended); the placeholder teamctl just made is judged
    /// by its pid alone.
    #[test]
    fn a_tagged_pane_whose_live_process_is_not_teamctls_is_left_open() {
        // This test's process runs, and is no worker or console of anyone's.
        let me = std::process::id();
        let none = Known::default();
        let agent = Some(Who::Agent("bob@t", &none));
        let console = Some(Who::Console("t"));
        for who in [agent, console] {
            assert_eq!(close_cmd("%3", me, false, "", who), Close::Foreign);
            assert!(matches!(close_cmd("%3", me, true, "", who), Close::Kill(_)));
        }
        assert!(matches!(
            close_cmd("%3", me, false, "", None),
            Close::Kill(_)
        ));
        // A process that has ended (reaped: no such pid now).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        assert!(matches!(
            close_cmd("%3", gone, false, "", agent),
            Close::Kill(_)
        ));
        // The pid given again to another program (start time not the recorded one): theirs.
        let known = Known {
            started: Some(Started { pid: me, start: 1 }),
            ..Known::default()
        };
        let recorded = Some(Who::Agent("bob@t", &known));
        assert_eq!(close_cmd("%3", me, false, "", recorded), Close::Theirs);
    }

    /// A dead pane runs nothing to check: it is the member's only with the nonce its member
    /// recorded (none recorded: an older teamctl's placement, its tags decide).
    #[test]
    fn a_dead_pane_is_closed_only_with_its_members_nonce() {
        let me = std::process::id();
        let known = Known {
            nonce: Some("n1".into()),
            ..Known::default()
        };
        let who = Some(Who::Agent("bob@t", &known));
        assert!(matches!(
            close_cmd("%3", me, true, "n1", who),
            Close::Kill(_)
        ));
        assert_eq!(close_cmd("%3", me, true, "", who), Close::Foreign);
        assert_eq!(close_cmd("%3", me, true, "n2", who), Close::Foreign);
        let older = Known::default();
        let who = Some(Who::Agent("bob@t", &older));
        assert!(matches!(close_cmd("%3", me, true, "", who), Close::Kill(_)));
    }

    /// `TEAMCTL_AGENT_ID` in a process's environment is anyone's to set: it makes a pane
    /// teamctl's only for a member recorded as interactive (whose pane runs its agent).
    #[test]
    fn the_agent_environment_counts_for_an_interactive_member_only() {
        let id = "envonly@t-placed";
        let mut child = std::process::Command::new("sleep")
            .arg("100")
            .env("TEAMCTL_AGENT_ID", id)
            .env("TEAMCTL_HOME", proc::home_root().unwrap_or("/nonexistent"))
            .spawn()
            .unwrap();
        let pid = child.id();
        // `spawn` returns once the exec began: the new program's environment can read empty
        // for a moment after that (CI: the first look saw none, the second saw it).
        let id_var = format!("{}={id}", crate::domain::env::AGENT_ID);
        assert!(proc::wait_for(std::time::Duration::from_secs(10), || {
            proc::read_ours(pid, "environ")
                .is_some_and(|e| e.split(|b| *b == 0).any(|v| v == id_var.as_bytes()))
        }));
        let worker = Known::default();
        let interactive = Known {
            interactive: true,
            ..Known::default()
        };
        let said = (
            runs_teamctls(pid, false, "", Who::Agent(id, &worker)),
            proc::is_agent_process(pid, id)
                && runs_teamctls(pid, false, "", Who::Agent(id, &interactive)),
            proc::is_agent_process(pid, id),
        );
        let _ = child.kill();
        let _ = child.wait();
        assert!(!said.0, "a non-interactive member's pane runs its worker");
        assert_eq!(said.1, said.2, "an interactive member's runs its agent");
    }

    #[test]
    fn the_kept_session_note_says_how_to_close_it_on_teamctls_server() {
        let kept = |server| Kept {
            session: "teamctl-t-0badc0de-kept".into(),
            server,
        };
        let note = left_open_note(&kept(Server::Default));
        assert!(
            note.contains("teamctl-t-0badc0de-kept stays open"),
            "{note}"
        );
        assert!(
            note.ends_with(": tmux kill-session -t '=teamctl-t-0badc0de-kept'"),
            "{note}"
        );
        assert!(
            left_open_note(&kept(Server::Named("work".into())))
                .ends_with(": tmux -L work kill-session -t '=teamctl-t-0badc0de-kept'")
        );
        // A socket path a shell would split or expand is quoted.
        assert!(
            left_open_note(&kept(Server::Path("/tmp/my socket's/s".into()))).ends_with(
                ": tmux -S '/tmp/my socket'\\''s/s' kill-session -t '=teamctl-t-0badc0de-kept'"
            )
        );
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a-b_c.d/e:1"), "a-b_c.d/e:1");
    }
}
