//! Orphans: processes and tmux panes tagged by teamctl whose team or member no longer exists.
//! A worker is known by its argv (`worker --home H --id NAME@TEAM`), an agent process by
//! `TEAMCTL_AGENT_ID` and `TEAMCTL_HOME` in its environment (and left behind when its
//! teammate is no longer running), a pane by its `@teamctl-agent` user option
//! (`NAME@TEAM/HOMEKEY`), a team session by its `@teamctl-team` option (`TEAM/HOMEKEY`): panes
//! and sessions of another home (another key) are that home's business, but for the sessions
//! of a home that no longer exists, whose orphaned workers name it; panes an older
//! teamctl tagged without a home are reported, never closed. Tags of this home left on a pane
//! the user respawned (its pid another, or the same pid given again to the user's program, as
//! the member's live state tells) are reported too, and taken off by `--fix`, the pane never
//! closed. A tag is a pane option anyone can set: a pane of this home's tags whose live process
//! is not teamctl's for them (`tmux::runs_teamctls`) is reported as carrying foreign tags, never
//! as an orphan, and never closed.

use std::path::{Path, PathBuf};

use crate::backend::tmux::argv::{self, Server};
use crate::backend::tmux::run::Tmux;
use crate::backend::tmux::{
    Closing, Known, Records, Who, close_if_tagged, record_of, runs_teamctls, untag_if_stale,
};

use super::{Finding, Fix, Level};
use crate::backend::proc;
use crate::domain::{Name, Status, TeamConfig};
use crate::error::Result;
use crate::leader;
use crate::store::{Home, Store};

/// What each member of `cfg` of this host recorded of its worker process (`tmux::Records`).
pub fn records(store: &dyn Store, cfg: &TeamConfig) -> Records {
    cfg.teammates()
        .map(|m| record_of(m, store.live(&m.name).ok().flatten().as_ref()))
        .collect()
}

/// What teamctl recorded of `agent_id` (`NAME@TEAM`) in `home` (`tmux::Known`: its worker's
/// process, whether it is interactive, its pane's nonce), while its team is there to read
/// (nothing otherwise: the pid and tags decide).
fn record(home: &Path, agent_id: &str) -> Known {
    let known = || {
        let (name, team) = agent_id.split_once('@')?;
        let (name, team) = (Name::parse(name).ok()?, Name::parse(team).ok()?);
        let home = Home::new(home.to_path_buf());
        if !home.exists(&team) {
            return None;
        }
        let store = home.open(&team).ok()?;
        let member = store
            .roster_with(&[&name])
            .ok()?
            .member(name.as_str())
            .ok()??;
        let live = store.live(&name).ok().flatten();
        Some(Known::of(&member, live.as_ref()))
    };
    known().unwrap_or_default()
}

/// `(home, agent id)` when `pid` is a live teamctl worker of this user (`proc::read_ours`:
/// another user's process shaped like one is none of ours, even to root).
pub fn worker_of(pid: u32) -> Option<(PathBuf, String)> {
    let cmdline = proc::read_ours(pid, "cmdline")?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    // `teamctl worker --home H --id NAME@TEAM` (`backend::worker_args`). An argv is anyone's
    // to set (`exec -a`): only a teamctl binary's is a worker's (attacker QA: a program of the
    // user's imitating one was ended by `doctor --fix`).
    match args.as_slice() {
        [_, worker, home_flag, home, id_flag, id, ..]
            if worker == "worker"
                && home_flag == "--home"
                && id_flag == "--id"
                && proc::runs_teamctl(pid) =>
        {
            Some((PathBuf::from(home), id.clone()))
        }
        _ => None,
    }
}

/// `(home, agent id)` when `pid` is a live process of this user started for a teammate's turn.
pub fn agent_of(pid: u32) -> Option<(PathBuf, String)> {
    let env = proc::read_ours(pid, "environ")?;
    let (mut home, mut id) = (None, None);
    for var in env.split(|b| *b == 0) {
        let var = String::from_utf8_lossy(var);
        let value = |name: &str| var.strip_prefix(name)?.strip_prefix('=');
        if let Some(v) = value(crate::domain::env::HOME) {
            home = Some(PathBuf::from(v));
        } else if let Some(v) = value(crate::domain::env::AGENT_ID) {
            id = Some(v.to_string());
        }
    }
    Some((home?, id?))
}

/// Why `agent_id` in `home` has no business running, if it has none. `worker`: the process
/// is the worker itself (else an agent process, which also needs a running teammate).
fn why_orphaned(home: &Path, agent_id: &str, worker: bool) -> Option<String> {
    let (name, team) = agent_id.split_once('@')?;
    let (Ok(name), Ok(team)) = (Name::parse(name), Name::parse(team)) else {
        return Some(format!("{agent_id:?} is not a valid agent id"));
    };
    let home = Home::new(home.to_path_buf());
    if !home.exists(&team) {
        return Some(format!(
            "team {team} no longer exists in {}",
            home.root().display()
        ));
    }
    // A team that exists but cannot be read now (its NATS server down, say) is no proof of
    // anything: its processes are left alone.
    let store = home.open(&team).ok()?;
    let cfg = store.load().ok()?;
    let Some(member) = cfg.member(name.as_str()) else {
        return Some(format!("team {team} has no member {name} any more"));
    };
    if worker || name.is_leader() {
        return None;
    }
    let status = leader::effective_status(member, store.live(&name).ok().flatten().as_ref());
    (!status.is_running()).then(|| format!("{name} is {status}, so this turn has no worker"))
}

/// Whether process `pid`, of the home `theirs`, is this home's business: of this home, or of
/// a home that no longer exists; another existing home is that home's `doctor`'s business,
/// and so is a home that only looks gone because `pid` sees other mounts
/// (`proc::in_our_mount_namespace`).
fn ours(home: &Home, pid: u32, theirs: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    theirs == home.root()
        || canon(theirs) == canon(home.root())
        || (!theirs.exists() && proc::in_our_mount_namespace(pid))
}

/// How many orphaned workers of this home (or of a home that no longer exists) run: each
/// still holds an inotify instance (`system::inotify` counts them).
pub fn orphaned_workers(home: &Home) -> u64 {
    let mut n = 0;
    for pid in proc::pids() {
        if let Some((theirs, id)) = worker_of(pid).filter(|(h, _)| ours(home, pid, h))
            && why_orphaned(&theirs, &id, true).is_some()
        {
            n += 1;
        }
    }
    n
}

pub fn processes(home: &Home) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut workers = 0;
    for pid in proc::pids() {
        let worker = worker_of(pid);
        if let Some((home, id)) = worker.clone().filter(|(h, _)| ours(home, pid, h)) {
            workers += 1;
            if let Some(why) = why_orphaned(&home, &id, true) {
                out.push(
                    Finding::new(
                        "processes",
                        Level::Problem,
                        format!("orphaned worker {id} (pid {pid}): {why}"),
                    )
                    .hint("`teamctl doctor --fix` ends it")
                    .fix(Fix::KillWorker {
                        pid,
                        agent_id: id,
                        home,
                    }),
                );
            }
        } else if worker.is_none()
            && let Some((home, id)) = agent_of(pid).filter(|(h, _)| ours(home, pid, h))
            && let Some(why) = why_orphaned(&home, &id, false)
        {
            out.push(
                Finding::new(
                    "processes",
                    Level::Problem,
                    format!("orphaned agent process of {id} (pid {pid}): {why}"),
                )
                .hint("`teamctl doctor --fix` ends it")
                .fix(Fix::KillAgent {
                    pid,
                    agent_id: id,
                    home,
                }),
            );
        }
    }
    if out.is_empty() {
        out.push(Finding::new(
            "processes",
            Level::Ok,
            format!(
                "{workers} worker process{}, none orphaned",
                if workers == 1 { "" } else { "es" }
            ),
        ));
    }
    out
}

/// The server teamctl would use here, as a member records it: `TEAMCTL_TMUX_SOCKET`, else
/// `$TMUX`'s, else the default (`None`).
fn env_server() -> Option<String> {
    Server::from_env_values(
        std::env::var("TEAMCTL_TMUX_SOCKET").ok().as_deref(),
        std::env::var("TMUX").ok().as_deref(),
    )
    .record()
}

/// A tmux runner for a server as a member records it (`None`: the default server).
fn runner(socket: Option<&str>) -> Option<Tmux> {
    let program = crate::backend::tmux::find_tmux().ok()?;
    Some(Tmux::new(program, Server::from_record(socket)))
}

fn tmux(socket: Option<&str>, args: &[&str]) -> Option<String> {
    let cmd = args.iter().map(|a| a.to_string()).collect();
    runner(socket)?.run(&[cmd]).ok()
}

/// Panes of this home tagged for a teammate whose team or member is gone, or that are not
/// its member's any more. A pane's tag counts only while the pane runs (or last ran) the
/// process teamctl tagged it for (`argv::parse_pane_states`, the rule every view applies): a
/// pane the user respawned is theirs, never an orphan (also when the system gave their program
/// the very pid teamctl's had: the member's live state records its start time); the tags left
/// on it are reported, and `--fix` takes them off, the pane left alone.
pub fn panes(home: &Home) -> Vec<Finding> {
    if which::which("tmux").is_err() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut seen = 0;
    let our_key = proc::home_key();
    for socket in servers(home) {
        // No server running: nothing to look at.
        let Some(t) = runner(socket.as_deref()) else {
            continue;
        };
        let Ok(list) = t.run(&[argv::all_pane_states()]) else {
            continue;
        };
        for (pane, state) in argv::parse_pane_states(&list) {
            // No tag, or one set for a process the pane no longer runs (the user's now).
            let tag = state.tag;
            if tag.is_empty() {
                out.extend(stale_tags(home, socket.as_deref(), &pane, &state.stale_tag));
                continue;
            }
            let Some((id, key)) = tag.rsplit_once('/') else {
                // An older teamctl's tag: which home it belongs to cannot be told.
                out.push(
                    Finding::new(
                        "panes",
                        Level::Warn,
                        format!(
                            "tmux pane {pane} is tagged {tag} by an older teamctl, without its home; \
                             teamctl never closes it"
                        ),
                    )
                    .hint(format!(
                        "if it is yours and no longer needed: tmux kill-pane -t {pane}"
                    )),
                );
                continue;
            };
            if key != our_key {
                continue;
            }
            // The pid it runs given again, to the user's program: theirs, its tags stale.
            let known = record(home.root(), id);
            let reused = state.pid.is_some_and(|pid| {
                !argv::runs_started(pid, state.dead, known.started, &proc::start_time)
            });
            if reused {
                out.extend(stale_tags(home, socket.as_deref(), &pane, &tag));
                continue;
            }
            // Tags anyone could have set, on a pane whose process is not teamctl's: no orphan
            // of teamctl's, never closed.
            if let Some(pid) = state.pid.filter(|&pid| {
                !runs_teamctls(pid, state.dead, &state.nonce, Who::Agent(id, &known))
            }) {
                out.push(if state.dead {
                    unproven_tags(home, socket.as_deref(), &pane, &tag)
                } else {
                    foreign_tags(home, socket.as_deref(), &pane, &tag, pid)
                });
                continue;
            }
            seen += 1;
            let why =
                why_orphaned(home.root(), id, true).or_else(|| stale_pane(home.root(), id, &pane));
            if let Some(why) = why {
                out.push(
                    Finding::new(
                        "panes",
                        Level::Problem,
                        format!("orphaned tmux pane {pane} tagged {id}: {why}"),
                    )
                    .hint("`teamctl doctor --fix` kills it")
                    .fix(Fix::KillPane {
                        home: home.root().to_path_buf(),
                        socket: socket.clone(),
                        pane: pane.clone(),
                        agent_id: tag.clone(),
                    }),
                );
            }
        }
    }
    if out.is_empty() && seen > 0 {
        out.push(Finding::new(
            "panes",
            Level::Ok,
            format!(
                "{seen} teamctl pane{}, none orphaned",
                if seen == 1 { "" } else { "s" }
            ),
        ));
    }
    out
}

/// The servers this home's panes may be on, as members record them (`None`: the default):
/// the one teamctl would use here, and every one a member of this host recorded.
fn servers(home: &Home) -> Vec<Option<String>> {
    let mut servers = vec![env_server()];
    for (_, cfg) in super::readable_teams(home) {
        // Only this host's members: a socket path another host recorded is not this host's.
        for m in cfg
            .teammates()
            .filter(|m| crate::backend::host::elsewhere(m).is_none())
        {
            if m.tmux_socket.is_some() && !servers.contains(&m.tmux_socket) {
                servers.push(m.tmux_socket.clone());
            }
        }
    }
    servers
}

/// Placeholder panes of this home's teams (`argv::placeholder`: what a new session or window
/// runs until a start puts its worker there) whose maker is gone: a start cut short (killed
/// between making the session or window and placing the worker) left them running `cat`.
/// `delete` closes them with the team; until then they are reported, and `--fix` closes them
/// (guarded by the `cat` they run). One whose maker still runs is a start under way.
/// (New-user QA: such a pane stayed, and `doctor` said nothing of it.)
pub fn placeholders(home: &Home) -> Vec<Finding> {
    if which::which("tmux").is_err() {
        return Vec::new();
    }
    let our_key = proc::home_key();
    let mut out = Vec::new();
    for socket in servers(home) {
        let Some(t) = runner(socket.as_deref()) else {
            continue;
        };
        let Ok(list) = t.run(&[argv::team_panes()]) else {
            continue;
        };
        for p in argv::parse_placeholders(&list) {
            let Some((team, key)) = p.team.rsplit_once('/') else {
                continue;
            };
            // A maker that still runs is starting a teammate there now.
            let made_by_a_live_start = p
                .maker
                .is_some_and(|(pid, started)| proc::start_time(pid) == Some(started));
            if key != our_key || made_by_a_live_start {
                continue;
            }
            out.push(
                Finding::new(
                    "panes",
                    Level::Warn,
                    format!(
                        "tmux pane {} is a placeholder a start of a teammate of {team} left, cut short before it placed the worker there (it runs `cat`, pid {})",
                        p.pane, p.pid
                    ),
                )
                .hint("`teamctl doctor --fix` closes it (`delete` closes it with the team)")
                .fix(Fix::ClosePlaceholder {
                    socket: socket.clone(),
                    pane: p.pane.clone(),
                    pid: p.pid,
                }),
            );
        }
    }
    out
}

/// Close the placeholder `pane` while it still runs `pid` (one tmux command: the kill guarded
/// by its process). Returns what was done, in one line.
pub fn close_placeholder(socket: Option<&str>, pane: &str, pid: u32) -> Result<String> {
    let gone = || format!("tmux pane {pane} is gone");
    let (Some(t), Some(kill)) = (runner(socket), argv::kill_pane_running(pane, pid)) else {
        return Ok(gone());
    };
    t.run(&[kill])
        .map_err(|e| e.into_error(&format!("close pane {pane}")))?;
    Ok(
        match t
            .run(&[argv::pane_state(pane)])
            .ok()
            .and_then(|out| argv::parse_state(&out, pane))
        {
            Some(_) => format!("left tmux pane {pane} open: it runs another program now"),
            None => format!("closed the placeholder tmux pane {pane}"),
        },
    )
}

/// The tags this home left on `pane` for a process it no longer runs (`stale`, the whole tag):
/// the user respawned it with a program of their own, which makes it theirs. Reported so that
/// they know teamctl's tags are still on it; `--fix` takes them off and leaves the pane alone.
/// Another home's tags (another key), or an older teamctl's without a home, are not this
/// home's to take off.
fn stale_tags(home: &Home, socket: Option<&str>, pane: &str, stale: &str) -> Option<Finding> {
    let (id, key) = stale.rsplit_once('/')?;
    if key != proc::home_key() {
        return None;
    }
    Some(
        Finding::new(
            "panes",
            Level::Warn,
            format!(
                "tmux pane {pane} still carries teamctl's tags for {id}, set for a process it no longer runs: \
                 it was started again with another program, so it is yours, and teamctl leaves it alone"
            ),
        )
        .hint("`teamctl doctor --fix` takes teamctl's tags off it (the pane and what runs in it stay)")
        .fix(Fix::UntagPane {
            home: home.root().to_path_buf(),
            socket: socket.map(String::from),
            pane: pane.to_string(),
            agent_id: stale.to_string(),
        }),
    )
}

/// teamctl's tags for `tag` (the whole tag, this home's) on `pane`, whose live process `pid`
/// is not teamctl's for it (`tmux::runs_teamctls`): set by someone else (a pane option anyone
/// can set). Reported, never called an orphan: the pane and its program are not teamctl's to
/// close. `--fix` takes the tags off, the pane left alone.
fn foreign_tags(home: &Home, socket: Option<&str>, pane: &str, tag: &str, pid: u32) -> Finding {
    let id = argv::unscoped(tag);
    Finding::new(
        "panes",
        Level::Warn,
        format!(
            "tmux pane {pane} carries teamctl's tags for {id}, but its process (pid {pid}) is not teamctl's: \
             left open; teamctl never closes it"
        ),
    )
    .hint("`teamctl doctor --fix` takes teamctl's tags off it (the pane and what runs in it stay)")
    .fix(Fix::UntagPane {
        home: home.root().to_path_buf(),
        socket: socket.map(String::from),
        pane: pane.to_string(),
        agent_id: tag.to_string(),
    })
}

/// teamctl's tags for `tag` (the whole tag, this home's) on `pane`, dead (nothing runs in it to
/// check), without the nonce its member recorded when teamctl placed it
/// (`Member::pane_nonce`): set by someone else. Reported as `foreign_tags` is, never called an
/// orphan nor closed; `--fix` takes the tags off.
fn unproven_tags(home: &Home, socket: Option<&str>, pane: &str, tag: &str) -> Finding {
    let id = argv::unscoped(tag);
    Finding::new(
        "panes",
        Level::Warn,
        format!(
            "tmux pane {pane} carries teamctl's tags for {id}, but it is dead and lacks the mark teamctl set on {id}'s pane: \
             not teamctl's; left open; teamctl never closes it"
        ),
    )
    .hint("`teamctl doctor --fix` takes teamctl's tags off it (the pane stays)")
    .fix(Fix::UntagPane {
        home: home.root().to_path_buf(),
        socket: socket.map(String::from),
        pane: pane.to_string(),
        agent_id: tag.to_string(),
    })
}

/// Take the tags `agent_id` (scoped: the whole tag) off `pane` while they still name a process
/// the pane no longer runs, or one that is not teamctl's (`tmux::untag_if_stale`, judged by the
/// member's record in `home`); the pane is never closed. Returns what was done, in one line.
pub fn untag_pane(home: &Path, socket: Option<&str>, pane: &str, agent_id: &str) -> Result<String> {
    let id = argv::unscoped(agent_id);
    let Some(t) = runner(socket) else {
        return Ok(format!("tmux pane {pane} ({id}) is gone"));
    };
    Ok(
        match untag_if_stale(&t, pane, agent_id, &record(home, id)) {
            Ok(true) => format!(
                "took teamctl's tags for {id} off tmux pane {pane}; the pane and what runs in it are left alone"
            ),
            Ok(false) | Err(crate::backend::tmux::run::Fail::Gone(_)) => {
                format!("tmux pane {pane} no longer carries stale tags for {id}; left alone")
            }
            Err(e) => return Err(e.into_error(&format!("untag pane {pane}"))),
        },
    )
}

/// Team sessions (`teamctl-TEAM-KEY`, tagged `@teamctl-team` = `TEAM/KEY`) of this home whose
/// team is gone: its directory removed by hand, say, where the dead leader console would
/// otherwise stay for good (it carries no agent tag, so the pane check never sees it). Looked
/// for on the servers the pane check reads, and on those a leftover team directory's own
/// records name.
pub fn sessions(home: &Home) -> Vec<Finding> {
    if which::which("tmux").is_err() {
        return Vec::new();
    }
    let mut servers: Vec<Option<String>> = vec![env_server()];
    let dirs = std::fs::read_dir(home.teams_dir())
        .into_iter()
        .flatten()
        .flatten();
    for socket in dirs.flat_map(|e| crate::store::spec::tmux_sockets(&e.path())) {
        if !servers.contains(&socket) {
            servers.push(socket);
        }
    }
    for (_, cfg) in super::readable_teams(home) {
        for m in cfg
            .teammates()
            .filter(|m| crate::backend::host::elsewhere(m).is_none() && m.tmux_socket.is_some())
        {
            if !servers.contains(&m.tmux_socket) {
                servers.push(m.tmux_socket.clone());
            }
        }
    }
    // Homes removed while their workers ran (`rm -rf` of one home): their sessions, known by
    // their key, on the servers those workers' panes are on.
    let gone = gone_homes();
    for (_, _, socket) in &gone {
        if !servers.contains(socket) {
            servers.push(socket.clone());
        }
    }
    let our_key = proc::home_key();
    let mut out = Vec::new();
    // The teams of gone homes whose session is reported: its close takes their panes elsewhere.
    let mut covered: Vec<(Option<String>, String, Name)> = Vec::new();
    for socket in servers.clone() {
        let Some(list) = tmux(
            socket.as_deref(),
            &[
                "list-sessions",
                "-F",
                concat!(
                    argv::plain!("session_name"),
                    "\t",
                    argv::plain!("@teamctl-team")
                ),
            ],
        ) else {
            continue;
        };
        for line in list.lines() {
            let Some((session, tag)) = line.split_once('\t') else {
                continue;
            };
            // Listed so, a user option resolves through the session's active pane: tags forged
            // on a pane of a session of the user's read as the session's own (attacker QA:
            // `--fix` said it closed such a session, which it rightly left open). The
            // session's own option decides.
            let own = argv::session_tag(&argv::exact_session(session));
            let own: Vec<&str> = own.iter().map(String::as_str).collect();
            if tag.is_empty() || tmux(socket.as_deref(), &own).is_none_or(|o| o.trim() != tag) {
                continue;
            }
            // Only this home's tags (an older teamctl's, without a home, are left alone).
            let Some((team, key)) = tag.rsplit_once('/') else {
                continue;
            };
            let Ok(team) = Name::parse(team) else {
                continue;
            };
            if key != our_key {
                if let Some((gone, _, _)) = gone.iter().find(|(_, k, _)| k == key) {
                    out.push(gone_home_session(gone, &team, session, socket.clone()));
                    covered.push((socket.clone(), key.to_string(), team));
                }
                continue;
            }
            if home.exists(&team) {
                continue;
            }
            // A directory that may be a team being made again under this name: not yet.
            if home.leftover(&team).is_some_and(|l| l.maybe_being_made()) {
                continue;
            }
            out.push(
                Finding::new(
                    "sessions",
                    Level::Problem,
                    format!(
                        "tmux session {session} is team {team}'s, and team {team} no longer exists in {}",
                        home.root().display()
                    ),
                )
                .hint(
                    "`teamctl doctor --fix` closes teamctl's panes in it, and the session unless it holds panes of yours",
                )
                .fix(Fix::CloseSession {
                    home: home.root().to_path_buf(),
                    team: team.to_string(),
                    session: session.to_string(),
                    socket: socket.clone(),
                }),
            );
        }
    }
    out.extend(gone_home_panes(&servers, &gone, &covered));
    out
}

/// The panes of gone homes' teams that no reported session of theirs holds: a team led from
/// inside tmux puts its teammates in the user's session, with no session of its own (re-QA 38:
/// `--fix` ended the workers and left their panes, dead, and teamctl's tags on the window it
/// opened there). Such a home is known by its workers still running (`gone`), or, once they
/// ended, by the `--home` a dead pane's worker was started with (`#{pane_start_command}`),
/// which no longer exists and hashes to the tag's key.
fn gone_home_panes(
    servers: &[Option<String>],
    gone: &[(PathBuf, String, Option<String>)],
    covered: &[(Option<String>, String, Name)],
) -> Vec<Finding> {
    let our_key = proc::home_key();
    let mut out = Vec::new();
    for socket in servers {
        let Some(list) = tmux(
            socket.as_deref(),
            &[
                "list-panes",
                "-a",
                "-F",
                concat!(
                    "#{pane_id}\t#{pane_pid}\t",
                    argv::plain!("@teamctl-pid"),
                    "\t",
                    argv::plain!("@teamctl-agent"),
                    "\t",
                    argv::plain!("pane_start_command")
                ),
            ],
        ) else {
            continue;
        };
        // Each (home, team) once, with its panes.
        let mut found: Vec<(PathBuf, String, Name, Vec<String>)> = Vec::new();
        for line in list.lines() {
            let mut cols = line.splitn(5, '\t');
            let (Some(pane), Some(pid), Some(tagged_pid), Some(tag), start) = (
                cols.next(),
                cols.next(),
                cols.next(),
                cols.next(),
                cols.next(),
            ) else {
                continue;
            };
            // Tagged for the process it ran, as teamctl tags a pane: a tag alone, set by
            // anyone, does not make a pane one of teamctl's to close (attacker QA 39).
            if pid.is_empty() || pid != tagged_pid {
                continue;
            }
            let Some((id, key)) = tag.rsplit_once('/') else {
                continue;
            };
            let Some(team) = id.split_once('@').and_then(|(_, t)| Name::parse(t).ok()) else {
                continue;
            };
            if key == our_key
                || covered
                    .iter()
                    .any(|(s, k, t)| s == socket && k == key && *t == team)
            {
                continue;
            }
            let home = gone
                .iter()
                .find(|(_, k, _)| k == key)
                .map(|(h, _, _)| h.clone())
                .or_else(|| {
                    start
                        .and_then(started_home)
                        .filter(|h| h.symlink_metadata().is_err() && proc::home_key_of(h) == key)
                });
            let Some(home) = home else {
                continue;
            };
            match found
                .iter_mut()
                .find(|(h, _, t, _)| *h == home && *t == team)
            {
                Some((_, _, _, panes)) => panes.push(pane.to_string()),
                None => found.push((home, key.to_string(), team, vec![pane.to_string()])),
            }
        }
        for (home, _, team, panes) in found {
            out.push(
                Finding::new(
                    "sessions",
                    Level::Problem,
                    format!(
                        "tmux {} {} of team {team} of home {}, which no longer exists",
                        if panes.len() == 1 { "pane" } else { "panes" },
                        panes.join(", "),
                        home.display()
                    ),
                )
                .hint("`teamctl doctor --fix` ends its workers and closes teamctl's panes")
                .fix(Fix::ClosePanes {
                    home,
                    team: team.to_string(),
                    socket: socket.clone(),
                }),
            );
        }
    }
    out
}

/// The `--home` a worker pane's start command (`#{pane_start_command}`) names:
/// `TEAMCTL worker --home HOME --id ID`, as tmux shows it (quotes around a word taken off).
fn started_home(start: &str) -> Option<PathBuf> {
    let (_, rest) = start.split_once(" worker --home ")?;
    let (home, _) = rest.split_once(" --id ")?;
    let home = match home.strip_prefix('"').and_then(|h| h.strip_suffix('"')) {
        // tmux quotes a word with spaces or quotes in it, escaping `"`, `\` and `$` (attacker
        // QA 39: a home with `"` in its path was never found).
        Some(quoted) => {
            let mut out = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                out.push(if c == '\\' { chars.next()? } else { c });
            }
            out
        }
        None => home.to_string(),
    };
    (!home.is_empty()).then(|| PathBuf::from(home))
}

/// Close teamctl's panes of `team` of the gone `home` wherever they are on `socket`'s server,
/// and take its tags off windows it opened in the user's sessions (`forget_session_of`, the
/// pids deciding), unless the home exists again meanwhile.
pub fn close_panes(home: &Path, team: &str, socket: Option<&str>) -> Result<String> {
    let team = Name::parse(team)?;
    if home.symlink_metadata().is_ok() {
        return Ok(format!(
            "home {} exists again; the panes of its team {team} are left alone",
            home.display()
        ));
    }
    let key = proc::home_key_of(home);
    let kept = crate::backend::tmux::forget_session_of(
        &team,
        &key,
        None,
        [socket.map(String::from)],
        &Vec::new(),
    );
    Ok(match kept.first() {
        Some(now) => format!(
            "closed teamctl's panes of team {team}, whose home is gone; its session holds panes of yours, so it stays, renamed {}",
            now.session
        ),
        None => format!("closed teamctl's panes of team {team}, whose home is gone"),
    })
}

/// Homes that no longer exist whose workers (or agent processes) still run here, each with its
/// key and the tmux server its processes run under (their `$TMUX`; none: the default).
fn gone_homes() -> Vec<(PathBuf, String, Option<String>)> {
    let mut out: Vec<(PathBuf, String, Option<String>)> = Vec::new();
    for pid in proc::pids() {
        let Some((home, _)) = worker_of(pid).or_else(|| agent_of(pid)) else {
            continue;
        };
        if home.symlink_metadata().is_ok() || !proc::in_our_mount_namespace(pid) {
            continue;
        }
        let key = proc::home_key_of(&home);
        let socket = server_of(pid);
        if !out.iter().any(|(_, k, s)| *k == key && *s == socket) {
            out.push((home, key, socket));
        }
    }
    out
}

/// The tmux server `pid` runs under, as a member records it, from its environment.
fn server_of(pid: u32) -> Option<String> {
    let env = proc::read_ours(pid, "environ")?;
    let (mut ours, mut tmux) = (None, None);
    for var in env.split(|b| *b == 0) {
        let var = String::from_utf8_lossy(var);
        if let Some(v) = var.strip_prefix("TEAMCTL_TMUX_SOCKET=") {
            ours = Some(v.to_string());
        } else if let Some(v) = var.strip_prefix("TMUX=") {
            tmux = Some(v.to_string());
        }
    }
    Server::from_env_values(ours.as_deref(), tmux.as_deref()).record()
}

/// The session of `team` of `home`, which no longer exists: its workers are ended first (they
/// come before it in the findings), then it is closed as a gone team's is.
fn gone_home_session(home: &Path, team: &Name, session: &str, socket: Option<String>) -> Finding {
    Finding::new(
        "sessions",
        Level::Problem,
        format!(
            "tmux session {session} is team {team}'s of home {}, which no longer exists",
            home.display()
        ),
    )
    .hint("`teamctl doctor --fix` ends its workers, closes teamctl's panes in it, and the session unless it holds panes of yours")
    .fix(Fix::CloseSession {
        home: home.to_path_buf(),
        team: team.to_string(),
        session: session.to_string(),
        socket,
    })
}

/// Close a gone team's session as `delete` would (`backend::tmux::forget_session`: its tag
/// checked again; a session holding panes teamctl did not make keeps them, renamed), unless
/// the team exists again meanwhile.
pub fn close_session(
    home: &Path,
    team: &str,
    session: &str,
    socket: Option<&str>,
) -> Result<String> {
    let team = Name::parse(team)?;
    if Home::new(home.to_path_buf()).exists(&team) {
        return Ok(format!(
            "team {team} exists again; its tmux session {session} is left alone"
        ));
    }
    // Another home's session only while that home is gone (`gone_homes`).
    let key = proc::home_key_of(home);
    if key != proc::home_key() && home.symlink_metadata().is_ok() {
        return Ok(format!(
            "home {} exists again; its tmux session {session} is left alone",
            home.display()
        ));
    }
    // The team's files are gone: the pids decide.
    let kept = crate::backend::tmux::forget_session_of(
        &team,
        &key,
        Some(session),
        [socket.map(String::from)],
        &Vec::new(),
    );
    Ok(match kept.first() {
        Some(now) => format!(
            "closed teamctl's panes in tmux session {session} of team {team}, which is gone; the session holds panes of yours, so it stays, renamed {}; close it when you are done: {}",
            now.session,
            crate::backend::tmux::close_command(now)
        ),
        None => format!("closed tmux session {session} of team {team}, which is gone"),
    })
}

/// A pane of an existing member that is not the member's pane (left from an earlier run), or
/// the pane of a member that has stopped.
fn stale_pane(home: &Path, agent_id: &str, pane: &str) -> Option<String> {
    let (name, team) = agent_id.split_once('@')?;
    let store = Home::new(home.to_path_buf())
        .open(&Name::parse(team).ok()?)
        .ok()?;
    let cfg = store.load().ok()?;
    let member = cfg.member(name)?;
    // This home tagged the pane, but the member now runs on another host (moved there by
    // `resume --here`): nothing here is its any more, whatever pane id that host recorded.
    if let Some(host) = crate::backend::host::elsewhere(member) {
        return Some(format!(
            "{name} runs on {} now, not in this pane",
            crate::backend::host::label(host)
        ));
    }
    match member.pane_id.as_deref() {
        Some(current) if current != pane => {
            Some(format!("{name}'s pane is {current}, not this one"))
        }
        _ => {
            let status =
                leader::effective_status(member, store.live(&member.name).ok().flatten().as_ref());
            (status == Status::Stopped).then(|| format!("{name} is stopped"))
        }
    }
}

/// Kill `pane` if it still carries the tag `agent_id` (scoped to its home: the whole tag) for
/// the process it runs, by the rule every close of a pane follows (`tmux::close_if_tagged`:
/// the kill guarded by that process in the same tmux command; a pane the user respawned
/// meanwhile is left open, its stale tags taken off). Returns what was done, in one line.
pub fn kill_pane(home: &Path, socket: Option<&str>, pane: &str, agent_id: &str) -> Result<String> {
    let id = argv::unscoped(agent_id);
    let Some(t) = runner(socket) else {
        return Ok(format!("tmux pane {pane} ({id}) is gone"));
    };
    let done = close_if_tagged(&t, pane, agent_id, &record(home, id))
        .map_err(|e| e.into_error(&format!("kill pane {pane}")))?;
    let still_there = || {
        t.run(&[argv::pane_state(pane)])
            .ok()
            .and_then(|out| argv::parse_state(&out, pane))
    };
    Ok(match done {
        Closing::Killed { pid } => match still_there() {
            // Respawned between the look and the kill: the guard left it.
            Some(s) if s.pid != Some(pid) => format!(
                "left tmux pane {pane} open: it runs another program now, not teamctl's ({id})"
            ),
            _ => format!("killed orphaned tmux pane {pane} ({id})"),
        },
        Closing::Untagged => format!(
            "left tmux pane {pane} open: it runs another program now, not teamctl's ({id}); its tags are off"
        ),
        Closing::Foreign => format!(
            "left tmux pane {pane} open: its process is not teamctl's ({id}: the tags were set by something else); its tags are off"
        ),
        Closing::NotOurs => format!("tmux pane {pane} is no longer tagged {id}; left alone"),
    })
}

#[cfg(test)]
mod start_command_tests {
    use super::started_home;
    use std::path::PathBuf;

    #[test]
    fn the_home_of_a_workers_start_command() {
        assert_eq!(
            started_home("/bin/teamctl worker --home /tmp/h --id a@t"),
            Some(PathBuf::from("/tmp/h"))
        );
        assert_eq!(
            started_home(r#"/bin/teamctl worker --home "/tmp/my home" --id a@t"#),
            Some(PathBuf::from("/tmp/my home"))
        );
        assert_eq!(
            started_home(r#"/bin/teamctl worker --home "/tmp/h d1 \"q\" \\x" --id a@t"#),
            Some(PathBuf::from(r#"/tmp/h d1 "q" \x"#))
        );
        assert_eq!(started_home("sleep 600"), None);
        assert_eq!(started_home("/bin/teamctl worker --home  --id a@t"), None);
    }
}

#[cfg(test)]
mod lookalike_tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    use std::time::Duration;

    /// Run as root (as CI is): another user's process with a worker's argv and an agent's tag
    /// is not taken for ours, so `doctor --fix` never ends it (attacker QA, twelfth session).
    #[test]
    fn another_users_worker_lookalike_is_no_orphan_of_ours() {
        use std::os::unix::fs::PermissionsExt;
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.path().join("worker"), "import time\ntime.sleep(30)\n").unwrap();
        let id = format!("eve@doctor-test-{}", std::process::id());
        let mut child = Command::new("python3")
            .args(["worker", "--home", "/nonexistent-teamctl/h", "--id", &id])
            .current_dir(dir.path())
            .env(crate::domain::env::AGENT_ID, &id)
            .env(crate::domain::env::HOME, "/nonexistent-teamctl/h")
            .uid(65534)
            .gid(65534)
            .spawn()
            .unwrap();
        let pid = child.id();
        let shaped = || {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.ends_with(format!("{id}\0").as_bytes()))
        };
        assert!(proc::wait_for(Duration::from_secs(10), shaped));
        assert_eq!(worker_of(pid), None);
        assert_eq!(agent_of(pid), None);
        let _ = child.kill();
        let _ = child.wait();
    }
}
