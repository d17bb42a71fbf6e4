//! Team checks: stale teams (no teammate running and nothing happened for an hour, or a
//! pointer to a server that no longer has the team), team directories without a team file
//! (what mail they hold: `--fix` removes only those without),
//! teammates that are dead or do not take their mail (or wait for the user to answer a dialog
//! in their pane), stale worktrees (of stopped
//! teammates, of members that are gone, or unknown to every member), and a current-team record
//! naming a team that no longer exists; lock and live-state files with something else in
//! their place (a FIFO, a link, a directory), and teammates' spoiled cursors.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Finding, Fix, Level};
use crate::domain::{Name, Status};
use crate::error::{Error, Result};
use crate::leader;
use crate::store::Home;
use crate::worktree;

/// A team with no running teammate and no activity for this long is stale.
pub const STALE_AFTER: Duration = Duration::from_hours(1);

/// A team directory without a team file or mail is left alone for this long (it may be
/// being made); an interrupted `delete`'s mark too.
const HALF_MADE_GRACE: Duration = crate::store::home::HALF_MADE_GRACE;

/// The current-team record (`$TEAMCTL_HOME/current`, the team created last) when something
/// other than a file is there (a FIFO, a link, a directory), or when it names a
/// team gone from the home, directory and all: every command without `--team` then says that
/// team no longer exists, and sends the user here. A directory still there (a leftover, or a
/// team being made) is the leftover check's business: the record still says which team it was.
pub fn current(home: &Home) -> Option<Finding> {
    let path = home.root().join("current");
    if let Some(kind) = crate::store::fsutil::odd_kind(&path) {
        let f = Finding::new(
            "current",
            Level::Warn,
            format!(
                "the current-team record ({}) is {kind}, not the file teamctl writes: commands without --team say no team is selected",
                path.display()
            ),
        );
        // Which team it named is not known: the teams here are reached with --team, and the
        // next `create` records its new team there (new-user QA 46: `create` of the team led
        // before, as the hint had it, made a second one, `NAME-2`).
        return Some(if kind == "a directory" {
            f.hint("move it away by hand; pass --team NAME to reach a team here meanwhile")
        } else {
            f.hint("`teamctl doctor --fix` removes it; pass --team NAME to reach a team here")
                .fix(Fix::RemoveOddFile { path })
        });
    }
    let team = home.current_named()?;
    if home.exists(&team) || std::fs::symlink_metadata(home.team_dir(&team)).is_ok() {
        return None;
    }
    Some(
        Finding::new(
            "current",
            Level::Warn,
            format!(
                "the current-team record ({}) names team {team}, which no longer exists",
                home.root().join("current").display()
            ),
        )
        .hint("`teamctl doctor --fix` clears it; commands then say no team is selected until `teamctl create`")
        .fix(Fix::ClearCurrent {
            home: home.root().to_path_buf(),
            team: team.to_string(),
        }),
    )
}

/// Clear the current-team record if it still names `team` and `team` is still gone, under the
/// lock `create` holds until it records its team, so a team created meanwhile stays current.
pub fn clear_current(home: &Path, team: &str) -> Result<String> {
    let home = Home::new(home.to_path_buf());
    let creating = home.lock_create()?;
    let named = home.current_named();
    let gone = named.as_ref().is_some_and(|t| {
        t.as_str() == team
            && !home.exists(t)
            && std::fs::symlink_metadata(home.team_dir(t)).is_err()
    });
    if !gone {
        return Ok(format!(
            "the current-team record no longer names a gone team {team}; left as it is"
        ));
    }
    creating.set_current(None)?;
    Ok(format!(
        "cleared the current-team record: it named team {team}, which no longer exists; no team is selected now"
    ))
}

fn ago(t: SystemTime) -> String {
    let secs = SystemTime::now()
        .duration_since(t)
        .unwrap_or_default()
        .as_secs();
    match secs {
        s if s >= 86_400 => format!("{} d", s / 86_400),
        s if s >= 3600 => format!("{} h", s / 3600),
        s => format!("{} min", s / 60),
    }
}

pub fn stale_teams(home: &Home) -> Vec<Finding> {
    let mut out = stale_team_findings(home);
    if out.is_empty() {
        let n = home.teams().len();
        out.push(Finding::new(
            "teams",
            Level::Ok,
            format!("{n} team{}, none stale", if n == 1 { "" } else { "s" }),
        ));
    }
    out
}

fn stale_team_findings(home: &Home) -> Vec<Finding> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(home.teams_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        let label = entry.file_name().to_string_lossy().into_owned();
        // Only directories named like a team are teamctl's; anything else is left alone.
        let Ok(team) = Name::parse(&label) else {
            continue;
        };
        let fix = Fix::RemoveTeam {
            home: home.root().to_path_buf(),
            dir: dir.clone(),
            leftover: !home.exists(&team),
        };
        if !home.exists(&team) {
            if let Some(left) = home.leftover(&team) {
                out.extend(leftover(home, &left, fix));
            }
            continue;
        }
        // A pointer to a server that no longer has the team (deleted from another host).
        let gone = match home.gone_from_server(&team) {
            Ok(g) => g,
            // The server cannot be reached (said once, not again by opening the team).
            Err(e) => {
                out.push(Finding::new(
                    "teams",
                    Level::Problem,
                    format!("team {team}: {e}"),
                ));
                continue;
            }
        };
        if let Some(server) = gone {
            let current = home.current().is_some_and(|c| c == team);
            out.push(
                Finding::new(
                    "teams",
                    Level::Problem,
                    format!(
                        "team {team} is no longer on the NATS server at {server} (deleted, from another host?); this home keeps only its pointer{}",
                        if current { " (it is the team you lead, so `create` is blocked)" } else { "" }
                    ),
                )
                .hint(format!(
                    "`teamctl doctor --fix` removes it from this home (as `teamctl delete --team {team}` would)"
                ))
                .fix(fix),
            );
            continue;
        }
        let store = match home.handle(&team) {
            Ok(s) => s,
            Err(e) => {
                out.push(Finding::new(
                    "teams",
                    Level::Problem,
                    format!("team {team}: {e}"),
                ));
                continue;
            }
        };
        let cfg = match store.load() {
            Ok(c) => c,
            Err(e) => {
                out.push(Finding::new("teams", Level::Problem, e.to_string()));
                continue;
            }
        };
        let seen = crate::backend::Snapshot::of(cfg.teammates());
        let running: Vec<&str> = cfg
            .teammates()
            .filter(|m| {
                leader::effective_status_with(
                    &*store,
                    m,
                    store.live(&m.name).ok().flatten().as_ref(),
                    &seen,
                )
                .is_running()
            })
            .map(|m| m.name.as_str())
            .collect();
        if !running.is_empty() {
            continue;
        }
        let Some(last) = store.last_activity() else {
            continue;
        };
        let idle = SystemTime::now().duration_since(last).unwrap_or_default();
        if idle < STALE_AFTER {
            continue;
        }
        let who = if cfg.teammates().next().is_none() {
            "it has no teammates".to_string()
        } else {
            "none of its teammates is running".to_string()
        };
        let current = home.current().is_some_and(|c| c == team);
        out.push(
            Finding::new(
                "teams",
                Level::Problem,
                format!(
                    "team {team} is stale: {who} and nothing happened for {}{}",
                    ago(last),
                    if current { " (it is the team you lead, so `create` is blocked)" } else { "" }
                ),
            )
            .hint(format!(
                "`teamctl doctor --fix` removes it (as `teamctl delete --team {team}` would); `teamctl resume --team {team}` brings it back instead"
            ))
            .fix(fix),
        );
    }
    out
}

/// A team directory without a team file (`Home::leftover`): what it holds and the way out.
/// Without mail it is removed by `--fix` (once it cannot be a team being made); with mail,
/// only by the user's own `delete --force`, which says it removes those messages: `--fix`
/// never throws mail away.
fn leftover(home: &Home, left: &crate::store::home::Leftover, fix: Fix) -> Option<Finding> {
    if left.maybe_being_made() {
        return None;
    }
    let team = &left.team;
    let unread: usize = match home.handle(team) {
        Ok(store) => left
            .inboxes
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, _)| leader::unread(&*store, name, leader::reader_for(name)))
            .sum(),
        Err(_) => 0,
    };
    let message = format!(
        "{} is a team directory without a team file ({}): it holds {}{}",
        left.dir.display(),
        left.cause(),
        left.contents(),
        match (left.messages(), unread) {
            (0, _) => String::new(),
            (_, 0) => ", none unread".to_string(),
            (n, u) if n == u => ", all unread".to_string(),
            (_, u) => format!(", {u} unread"),
        }
    );
    let f = Finding::new("teams", Level::Problem, message);
    Some(match left.messages() {
        0 => f
            .hint(format!(
                "`teamctl doctor --fix` (or `teamctl delete --team {team}`) removes it"
            ))
            .fix(fix),
        // `--fix` leaves it (never mail): the hint says what the user does instead.
        n => f.hint(format!(
            "kept for its mail (`--fix` never removes mail): `teamctl delete --force --team {team}` drops it with {} ({})",
            if n == 1 { "that message" } else { "those messages" },
            left.where_messages()
        )),
    })
}

/// Mail that has waited this long in the inbox of an idle worker is stuck: a worker wakes on a
/// new message within milliseconds.
pub const STUCK_AFTER: Duration = Duration::from_secs(3);

/// Teammates that died (their worker is gone without being stopped) and teammates whose worker
/// is idle while mail waits unread (its wake-ups are lost: a removed inbox directory, a
/// stopped process). Each names the teammate and the way out.
pub fn teammates(home: &Home) -> Vec<Finding> {
    let mut out = Vec::new();
    // Stopped processes looked for once for the whole check, when a turn runs.
    let stopped = leader::StoppedGroups::default();
    for (store, cfg) in super::readable_teams(home) {
        if let Some(since) = cfg.deleting {
            // A `delete` runs now, or was interrupted (it keeps sends and starts out).
            let age = crate::domain::time::now_ms().saturating_sub(since);
            if age >= HALF_MADE_GRACE.as_millis() as u64 {
                out.push(
                    Finding::new(
                        "teammates",
                        Level::Problem,
                        format!(
                            "team {} is marked as being deleted since {} s ago: sends and starts are refused",
                            cfg.name,
                            age / 1000
                        ),
                    )
                    .hint(format!(
                        "an interrupted `teamctl delete`; finish it with `teamctl delete --force --team {}`",
                        cfg.name
                    )),
                );
            }
            continue;
        }
        let seen = crate::backend::Snapshot::of(cfg.teammates());
        for m in cfg.teammates() {
            let live = store.live(&m.name).ok().flatten();
            let status = leader::effective_status_with(&*store, m, live.as_ref(), &seen);
            let unread = || leader::unread(&*store, &m.name, crate::worker::READER);
            let resume = format!("`teamctl resume --team {} {}`", cfg.name, m.name);
            // The running worker's own word (not a state an earlier worker left).
            let running = live
                .as_ref()
                .filter(|l| status.is_running() && m.pid.is_none_or(|p| p == l.pid));
            if m.interactive.as_ref().is_some_and(|i| i.uses_hooks())
                && status.is_running()
                && let Some(file) = crate::interactive::hooks_disabled_by(
                    Path::new(&m.cwd),
                    crate::store::envfile::load(&crate::store::envfile::path(&*store, &m.name))
                        .ok()
                        .flatten()
                        .as_deref(),
                )
            {
                out.push(
                    Finding::new(
                        "teammates",
                        Level::Problem,
                        format!(
                            "{}@{} is an interactive Claude Code teammate, but {} sets \"disableAllHooks\": true: its turns are not seen to end (each runs into its turn timeout)",
                            m.name,
                            cfg.name,
                            file.display()
                        ),
                    )
                    .hint(format!(
                        "remove that setting, then `teamctl kill --team {0} {1}` and {resume}",
                        cfg.name, m.name
                    )),
                );
            }
            // A worker that cannot watch its inbox reads no mail (it says why in its log).
            if let Some(why) = running.and_then(|l| l.inbox_problem.as_deref()) {
                out.push(
                    Finding::new(
                        "teammates",
                        Level::Problem,
                        format!(
                            "{}@{} reads no mail: its inbox cannot be watched: {}",
                            m.name,
                            cfg.name,
                            crate::output::printable(why)
                        ),
                    )
                    .hint("the worker watches again by itself once that is done".to_string()),
                );
                continue;
            }
            // An interactive agent at a dialog only the user can answer: not stuck, waiting.
            if let Some(what) = running.and_then(|l| l.needs_user.as_deref()) {
                let pane = m.pane_id.as_deref().unwrap_or("-");
                out.push(
                    Finding::new(
                        "teammates",
                        Level::Warn,
                        format!(
                            "{}@{} waits for you: {} in its pane {pane}",
                            m.name,
                            cfg.name,
                            crate::output::printable_line(what, 512)
                        ),
                    )
                    .hint(format!(
                        "answer it there (`teamctl attach --team {} {}`); its mail waits until then",
                        cfg.name, m.name
                    )),
                );
                continue;
            }
            // An interactive agent whose mail cannot go in: its prompt not seen, its input
            // line not empty. Said while mail is unread (`status` says the same).
            if let Some(why) = running
                .and_then(|l| l.mail_waits.as_deref())
                .filter(|_| unread() > 0)
            {
                let pane = m.pane_id.as_deref().unwrap_or("-");
                out.push(
                    Finding::new(
                        "teammates",
                        Level::Warn,
                        format!(
                            "{}@{}'s mail waits: {}",
                            m.name,
                            cfg.name,
                            crate::output::printable_line(why, 512)
                        ),
                    )
                    .hint(format!(
                        "look at its pane {pane} (`teamctl attach --team {0} {1}`): clear its input line; or, if its prompt does not match, `teamctl kill --team {0} {1}` and spawn it again with a --prompt-pattern that matches its empty prompt line",
                        cfg.name, m.name
                    )),
                );
                continue;
            }
            // Stopped by a signal (SIGSTOP, a tracer) with mail waiting or in a turn: it goes
            // on once continued, where a kill and resume would end its turn (attacker QA 41:
            // doctor said only that; `status` says "paused").
            // The message its turn is on is not unread, as `status` counts (new-user QA 42).
            let waiting_now = || {
                let handling = live
                    .as_ref()
                    .and_then(|l| l.current_turn.as_ref())
                    .filter(|_| status == Status::Working)
                    .map(|t| t.message_id.as_str());
                leader::unread_but(&*store, &m.name, crate::worker::READER, handling)
            };
            if status.is_running()
                && let Some(pid) = leader::paused_worker(m, live.as_ref())
                && let n = waiting_now()
                && (status == Status::Working || n > 0)
            {
                out.push(
                    Finding::new(
                        "teammates",
                        Level::Problem,
                        format!(
                            "{}@{} is paused: its worker (pid {pid}) is stopped by a signal (SIGSTOP?) and reads no mail{}",
                            m.name,
                            cfg.name,
                            waiting(n)
                        ),
                    )
                    .hint(format!(
                        "`kill -CONT {pid}` lets it go on where it stopped (`--fix` leaves it: someone stopped it)"
                    )),
                );
                continue;
            }
            // A process of its turn stopped so (its worker waits for the turn): `status`
            // said `working`, doctor nothing (new-user QA 42).
            if status == Status::Working
                && let Some(p) = leader::paused_turn(m, live.as_ref(), &stopped)
            {
                out.push(
                    Finding::new(
                        "teammates",
                        Level::Problem,
                        format!(
                            "{}@{}'s turn may be paused: its process {} is stopped by a signal (SIGSTOP?){}",
                            m.name,
                            cfg.name,
                            p.pid,
                            waiting(waiting_now())
                        ),
                    )
                    .hint(format!(
                        "{} (`--fix` leaves it: someone stopped it); `teamctl interrupt --team {} {}` ends the turn instead",
                        p.way_on(),
                        cfg.name,
                        m.name
                    )),
                );
                continue;
            }
            match status {
                Status::Dead => {
                    let n = unread();
                    // Why, where its worker said so (an interactive program's exit status and
                    // last output, say): `resume` would meet it again until that is fixed
                    // (new-user QA: doctor said neither).
                    let why = live
                        .as_ref()
                        .filter(|l| m.pid.is_none_or(|p| p == l.pid))
                        .and_then(|l| l.exit_reason.as_deref());
                    // Dead in its turn on a message still unhandled: a resume runs that turn
                    // again, maybe the one that kills it (new-user QA 41: doctor named only
                    // `resume`, where status names --skip-turn too).
                    let turn =
                        leader::died_in_unhandled_turn(&*store, &m.name, live.as_ref(), status)
                            .ok()
                            .flatten()
                            .map(crate::output::turn_words);
                    out.push(
                        Finding::new(
                            "teammates",
                            Level::Problem,
                            format!(
                                "{}@{} is dead: its worker is gone and it was not stopped{}{}",
                                m.name,
                                cfg.name,
                                why.map(|w| format!(" ({})", crate::output::printable(w)))
                                    .unwrap_or_default(),
                                waiting(n)
                            ),
                        )
                        .hint(match (crate::backend::host::elsewhere(m), why) {
                            (None, _) if let Some(turn) = &turn => format!(
                                "it died in its turn on {turn}, still unhandled: {resume} runs that turn again, `teamctl resume --team {} {} --skip-turn` starts it past it (`teamctl log --team {0} --worker {1}` shows that turn)",
                                cfg.name, m.name
                            ),
                            (Some(host), _) => format!(
                                "it was started on {host}: {resume} there starts it again where it left off, or `teamctl resume --team {} {} --here` starts it on this host",
                                cfg.name, m.name
                            ),
                            (None, Some(w)) if crate::domain::live::program_ended(w) => format!(
                                "{resume} starts its program again (so does a message sent to it); if it ends again by itself, `teamctl spawn --team {} {} ...` with another --exec starts it anew",
                                cfg.name, m.name
                            ),
                            (None, Some(_)) => format!(
                                "{resume} meets that again until it is fixed; `teamctl spawn --team {} {} ...` with other options starts it anew (so does `teamctl up` from a changed file)",
                                cfg.name, m.name
                            ),
                            (None, None) => format!("{resume} starts it again where it left off"),
                        }),
                    );
                }
                // Asked to stop, it may be running its `--on-shutdown` command with the request
                // still unread: answering, not stuck (`status` says shutdown_pending).
                Status::Idle if m.shutdown_request_id.is_some() => {}
                Status::Idle => {
                    let quiet = store
                        .last_mail(&m.name)
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|a| a >= STUCK_AFTER);
                    let n = if quiet { unread() } else { 0 };
                    if n > 0 {
                        out.push(
                            Finding::new(
                                "teammates",
                                Level::Problem,
                                format!(
                                    "{}@{} is idle but does not take its mail{}",
                                    m.name,
                                    cfg.name,
                                    waiting(n)
                                ),
                            )
                            .hint(match crate::backend::host::elsewhere(m) {
                                Some(host) => format!(
                                    "it runs on {host}: there, `teamctl kill --team {} {}` then {resume} restarts its worker (the mail is kept)",
                                    cfg.name, m.name
                                ),
                                None => format!(
                                    "`teamctl kill --team {} {}` then {resume} restarts its worker (the mail is kept)",
                                    cfg.name, m.name
                                ),
                            }),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    if out.is_empty() {
        out.push(Finding::new(
            "teammates",
            Level::Ok,
            "no teammate is dead or stuck with unread mail",
        ));
    }
    out
}

fn waiting(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => " (1 unread message waits)".into(),
        n => format!(" ({n} unread messages wait)"),
    }
}

/// Remove a stale team: its worktrees through git (refused when one has uncommitted
/// changes), then the directory; forget it as the current team. Symbolic links among the
/// worktrees are unlinked, never followed (`worktree::found`); returns them, to be said.
pub fn remove_team(home: &Home, dir: &Path, leftover: bool) -> Result<Vec<worktree::Removed>> {
    let team = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| Name::parse(n).ok());
    // Under `create`'s lock to the end, as `delete`: no team is being made in the directory
    // while it is removed, and a leftover is looked at again there: a `delete` then a `create`
    // of its name since `doctor` looked made a whole team in its place (attacker QA: removed).
    crate::pause::at("doctor-remove-team");
    let creating = home.lock_create()?;
    if leftover && let Some(t) = team.as_ref().filter(|t| home.exists(t)) {
        return Err(Error::failed(format!(
            "team {t} was made in {} since doctor looked; left alone",
            dir.display()
        )));
    }
    // A leftover without a team file is removed only while it holds no mail (mail that came
    // since the check is not thrown away unsaid).
    if let Some(left) = team.as_ref().and_then(|t| home.leftover(t))
        && left.messages() > 0
    {
        return Err(Error::failed(format!(
            "{} holds {} now; kept: `teamctl delete --force --team {}` removes it and them",
            dir.display(),
            left.contents(),
            left.team
        )));
    }
    let worktree::Found { trees, links } = worktree::found(dir);
    for path in &trees {
        if let Some(what) = worktree::unsaved(path) {
            return Err(Error::failed(format!(
                "{} has {what}; commit them or remove the worktree by hand",
                path.display()
            )));
        }
    }
    let mut said = Vec::new();
    for link in links {
        if crate::store::fsutil::unlink_if_link(&link.path)?.is_some() {
            said.push(worktree::Removed::Link(link));
        }
    }
    for path in &trees {
        match worktree::remove_at(path)? {
            link @ worktree::Removed::Link(_) => said.push(link),
            worktree::Removed::Worktree(_) => {}
        }
    }
    if let Some(t) = &team {
        let store = home.handle(t);
        let left = match store
            .as_ref()
            .map_err(|_| ())
            .and_then(|s| s.load().map_err(|_| ()))
        {
            Ok(cfg) => {
                let records = super::orphans::records(&**store.as_ref().expect("loaded"), &cfg);
                crate::backend::tmux::forget_team(&cfg, &records)
            }
            // No team file to read (a team another host deleted from the server): this
            // host's own records say where its members ran; the pids decide.
            Err(()) => crate::backend::tmux::forget_session(
                t,
                None,
                crate::store::spec::tmux_sockets(dir),
                &Vec::new(),
            ),
        };
        for session in left {
            crate::errln!("{}", crate::backend::tmux::left_open_note(&session));
        }
    }
    let was_current = std::fs::read_to_string(home.root().join("current"))
        .is_ok_and(|c| team.as_ref().is_some_and(|t| c.trim() == t.as_str()));
    if let Some(link) = crate::store::fsutil::remove_tree_under(home.root(), dir)
        .map_err(|e| Error::failed(format!("cannot remove {}: {e}", dir.display())))?
    {
        said.push(worktree::Removed::Link(link));
    }
    if was_current {
        creating.clear_gone()?;
    }
    Ok(said)
}

pub fn worktrees(home: &Home) -> Vec<Finding> {
    let mut out = Vec::new();
    for (store, cfg) in super::readable_teams(home) {
        let local = store.local_dir();
        // As recorded, and as the home's own path to it (`recorded_here`): one spelled
        // otherwise (`worktrees/../worktrees/NAME`) is the member's (attacker QA 43: it was
        // said to belong to no member, and removed under its running teammate).
        let recorded: Vec<PathBuf> = cfg
            .teammates()
            .flat_map(|m| {
                [
                    m.worktree.as_deref().map(PathBuf::from),
                    worktree::recorded_here(m, &local),
                ]
            })
            .flatten()
            .collect();
        let teammate = |name: &Name| super::Teammate {
            home: home.root().to_path_buf(),
            team: cfg.name.clone(),
            name: name.clone(),
        };
        // Where teamctl makes worktrees only: a path the team file alone names (edited by
        // hand) is never looked into nor removed (attacker QA 42: `--fix` removed a worktree
        // of another repository the file was made to name). A real directory (`lstat`): a
        // link there is reported below, as a link.
        let own = |m: &crate::domain::Member| {
            worktree::recorded_here(m, &local)
                .filter(|p| p.symlink_metadata().is_ok_and(|meta| meta.is_dir()))
        };
        let seen = crate::backend::Snapshot::of(
            cfg.teammates()
                .filter(|m| worktree::recorded_here(m, &local).is_some()),
        );
        for m in cfg.teammates() {
            let Some(here) = worktree::recorded_here(m, &local) else {
                continue;
            };
            let status = leader::effective_status_with(
                &*store,
                m,
                store.live(&m.name).ok().flatten().as_ref(),
                &seen,
            );
            if status.is_running() && here.symlink_metadata().is_err() {
                // Removed by hand under its teammate (new-user QA 43: doctor was silent).
                out.push(
                    Finding::new(
                        "worktrees",
                        Level::Warn,
                        format!(
                            "{}@{} is {status}, but its worktree {} is gone: its agent works in a deleted directory",
                            m.name,
                            cfg.name,
                            here.display()
                        ),
                    )
                    .hint(format!(
                        "`teamctl kill --team {} {}` then `teamctl resume --team {} {}` makes it again from its branch {} (what was not committed there is lost)",
                        cfg.name,
                        m.name,
                        cfg.name,
                        m.name,
                        crate::output::printable_line(
                            m.worktree_branch.as_deref().unwrap_or("(not recorded)"),
                            256
                        )
                    )),
                );
                continue;
            }
            let Some(path) = own(m) else {
                continue;
            };
            if status != Status::Stopped {
                continue;
            }
            let mut f = Finding::new(
                "worktrees",
                Level::Warn,
                format!(
                    "{}@{} is stopped; its worktree {} is kept for `teamctl resume`",
                    m.name,
                    cfg.name,
                    path.display()
                ),
            );
            f = if let Some(what) = worktree::unsaved(&path) {
                f.hint(format!(
                    "it has {}, so --fix keeps it: save what is worth keeping, then `teamctl shutdown --team {team} {name} --remove-worktree` (`teamctl shutdown --team {team} {name} --remove-worktree --force` discards it)",
                    crate::output::printable_line(&what, 1024),
                    team = cfg.name,
                    name = m.name
                ))
            } else {
                f.hint(format!(
                    "`teamctl shutdown --team {} {} --remove-worktree` or `teamctl doctor --fix` removes it (the branch is kept; resume makes it again)",
                    cfg.name, m.name
                ))
                .fix(Fix::RemoveWorktree {
                    path,
                    of: Some(teammate(&m.name)),
                })
            };
            out.push(f);
        }
        let found = worktree::found(&store.local_dir());
        // Never a worktree teamctl made, whoever's name it has: `--fix` unlinks it, and git
        // never runs through it (it would remove what it points at).
        for link in found.links {
            out.push(
                Finding::new(
                    "worktrees",
                    Level::Problem,
                    format!(
                        "{} in team {} is a symbolic link to {}, not a worktree teamctl made",
                        link.path.display(),
                        cfg.name,
                        crate::output::printable(&link.target.display().to_string())
                    ),
                )
                .hint("`teamctl doctor --fix` removes the link (never what it points at)")
                .fix(Fix::RemoveWorktree {
                    path: link.path,
                    of: None,
                }),
            );
        }
        for path in found.trees {
            if recorded.contains(&path) {
                continue;
            }
            let mut f = Finding::new(
                "worktrees",
                Level::Problem,
                format!(
                    "{} belongs to no member of team {}",
                    path.display(),
                    cfg.name
                ),
            );
            f = if let Some(what) = worktree::unsaved(&path) {
                f.hint(format!(
                    "it has {}: save what is worth keeping, then remove it by hand (`git worktree remove --force {}`, or `rm -r` for a directory git does not know); --fix keeps it",
                    crate::output::printable_line(&what, 1024),
                    path.display()
                ))
            } else {
                // One named after a teammate goes only while that teammate is down.
                let of = cfg
                    .teammates()
                    .find(|m| path.file_name() == Some(std::ffi::OsStr::new(m.name.as_str())))
                    .map(|m| teammate(&m.name));
                f.hint("`teamctl doctor --fix` removes it")
                    .fix(Fix::RemoveWorktree { path, of })
            };
            out.push(f);
        }
    }
    out
}

/// Remove the worktree at `path` unless work was left there since doctor looked.
pub fn remove_worktree(path: &Path) -> Result<String> {
    if let Some(what) = worktree::unsaved(path) {
        return Err(Error::failed(format!(
            "{} has {what} now; kept",
            path.display()
        )));
    }
    Ok(format!("removed {}", worktree::remove_at(path)?))
}

/// The team directories under the home's `teams` named like a team (real directories, never
/// a link), whether or not their team file can be read.
fn team_dirs(home: &Home) -> Vec<(Name, PathBuf)> {
    crate::store::fsutil::entries_nofollow(&home.teams_dir())
        .into_iter()
        .filter(|(p, link)| link.is_none() && p.is_dir())
        .filter_map(|(p, _)| Some((Name::parse(p.file_name()?.to_str()?).ok()?, p)))
        .collect()
}

/// A team's lock files and its members' live-state files with something else in their place
/// (`fsutil::odd_kind`: a FIFO, a link, a directory, planted or left by hand): every command
/// taking such a lock fails on it, and `status` cannot tell what a member whose state file it
/// is does; the same at a member's log (`logs/NAME.log`: its worker's log is lost). `--fix`
/// puts a lock file in place of an odd lock, and removes an odd state file or log (it held no
/// state; the worker writes its own at once); a directory holding files is left.
pub fn odd_files(home: &Home) -> Vec<Finding> {
    use crate::store::fsutil::odd_kind;
    let mut out = Vec::new();
    for (team, dir) in team_dirs(home) {
        out.extend(odd_subdirs(&team, &dir));
        for path in crate::store::team::lock_files(&dir) {
            let Some(kind) = odd_kind(&path) else {
                continue;
            };
            out.push(odd_lock(
                path,
                kind,
                &format!("the commands of team {team} that take it fail on it"),
            ));
        }
        for (path, member, kind) in odd_member_files(&dir, "state", ".json") {
            let f = Finding::new(
                "state",
                Level::Problem,
                format!(
                    "{} is {kind}, not {member}@{team}'s live-state file: `status` cannot tell what {member} does",
                    path.display()
                ),
            );
            out.push(if kind == "a directory" {
                f.hint("move it away by hand (`--fix` leaves a directory: it may hold someone's files); a running worker writes its state again at once then")
            } else {
                f.hint("a running worker puts its own file there at its next write; `teamctl doctor --fix` removes it now (it holds no state), and a running worker then writes its state again at once")
                    .fix(Fix::RemoveOddFile { path })
            });
        }
        // A regular file there written over with something else (by hand): read as no
        // state, so the teammate showed `starting` while `doctor` said all was well.
        for (path, member) in spoiled_states(&dir) {
            out.push(
                Finding::new(
                    "state",
                    Level::Problem,
                    format!(
                        "{} holds something other than {member}@{team}'s live state (written over?): `status` cannot tell what {member} does",
                        path.display()
                    ),
                )
                .hint("a running worker writes its state over it at its next write; `teamctl doctor --fix` removes it now (it holds no state), and a running worker then writes its state again at once")
                .fix(Fix::RemoveSpoiledState { path }),
            );
        }
        // A worker's log likewise (`logs/NAME.log`): its notes and its turns' output were
        // lost, said nowhere (new-user QA). A running worker logs again at once once it is
        // removed (`worker::watch::OwnFiles`); one started later makes its own.
        for (path, member, kind) in odd_member_files(&dir, "logs", ".log") {
            let f = Finding::new(
                "logs",
                Level::Problem,
                format!(
                    "{} is {kind}, not {member}@{team}'s log: its worker's notes and its turns' output are lost (`teamctl log --worker {member}` shows nothing)",
                    path.display()
                ),
            );
            out.push(if kind == "a directory" {
                f.hint("move it away by hand (`--fix` leaves a directory: it may hold someone's files); a running worker logs again at once then")
            } else {
                f.hint("`teamctl doctor --fix` removes it (what a link points at is left alone); a running worker then logs to a file of its own at once")
                    .fix(Fix::RemoveOddFile { path })
            });
        }
    }
    out
}

/// What stands at a lock file's `path` (`kind`: `fsutil::odd_kind`), and what fails on it
/// (`fails`), as a finding: `--fix` puts a lock file in its place, unless it is a directory
/// holding files, which is left to the user, and said so at once (attacker QA 43: the hint said
/// `--fix` replaced it, and `--fix` said it could not).
pub fn odd_lock(path: PathBuf, kind: &str, fails: &str) -> Finding {
    let holding =
        kind == "a directory" && std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some());
    let f = Finding::new(
        "locks",
        Level::Problem,
        format!(
            "{} is {kind}{}, not teamctl's lock file: {fails}",
            path.display(),
            if holding { " holding files" } else { "" }
        ),
    );
    if holding {
        f.hint("move it away by hand (`--fix` leaves a directory holding files: they may be someone's); teamctl makes a new lock file then")
    } else {
        f.hint("`teamctl doctor --fix` replaces it with a lock file (or remove it: teamctl makes a new one)")
            .fix(Fix::ReplaceLock { path })
    }
}

/// Remove what `odd_files` found at a live-state file's or a log's path, if it is still not a regular
/// file nor a directory: unlinked, never followed nor opened.
pub fn remove_odd_file(path: &Path) -> Result<String> {
    match crate::store::fsutil::odd_kind(path) {
        None => Ok(format!(
            "{} is a regular file now (or gone); left as it is",
            path.display()
        )),
        Some(kind @ "a directory") => Err(Error::failed(format!(
            "{} is {kind}; left as it is: move it away by hand",
            path.display()
        ))),
        // Moved aside and looked at again there: a file renamed over it after the look above
        // (a record `create` wrote) is never what is removed (attacker QA 46).
        Some(kind) => {
            crate::pause::at("doctor-odd-looked");
            let odd =
                |p: &Path| crate::store::fsutil::odd_kind(p).is_some_and(|k| k != "a directory");
            if remove_if_still(path, &odd)? {
                Ok(format!("removed {} ({kind})", path.display()))
            } else {
                Ok(format!(
                    "{} is a regular file now (or gone); left as it is",
                    path.display()
                ))
            }
        }
    }
}

/// Remove what `odd_files` found at a live-state file's path: a regular file holding
/// something other than a live state, if it still does (`slots::spoiled`). Moved aside first
/// and looked at there, so a state written at the path meanwhile (by its worker, or moved there
/// by hand) is never what is removed (attacker QA: a valid state renamed over it between the
/// look and the unlink was removed); one that became a state again is put back, unless another
/// file took its place meanwhile (that one is newer, and kept).
pub fn remove_spoiled_state(path: &Path) -> Result<String> {
    let left = || {
        Ok(format!(
            "{} holds a live state now (or is gone); left as it is",
            path.display()
        ))
    };
    let spoiled = |p: &Path| crate::store::slots::spoiled(p, crate::store::is_live_state);
    if !spoiled(path) {
        return left();
    }
    crate::pause::at("doctor-spoiled-looked");
    if remove_if_still(path, &spoiled)? {
        return Ok(format!(
            "removed {} (it held no live state)",
            path.display()
        ));
    }
    left()
}

/// Remove what is at `path` if `bad` still says so of it once it is moved aside, where nobody
/// writes: never a file another put at `path` after the look that found it bad. One that is
/// not bad there is put back, unless another file took its place meanwhile (that one is
/// newer, and kept). `true` when it was removed.
fn remove_if_still(path: &Path, bad: &dyn Fn(&Path) -> bool) -> Result<bool> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let aside = path.with_file_name(format!(".{name}.doctor-{}", std::process::id()));
    match renameat2(
        AT_FDCWD,
        path,
        AT_FDCWD,
        &aside,
        RenameFlags::RENAME_NOREPLACE,
    ) {
        Err(nix::errno::Errno::ENOENT) => return Ok(false),
        Err(e) => return Err(Error::io(path, std::io::Error::from(e))),
        Ok(()) => {}
    }
    if bad(&aside) {
        std::fs::remove_file(&aside).map_err(|e| Error::io(&aside, e))?;
        return Ok(true);
    }
    match renameat2(
        AT_FDCWD,
        &aside,
        AT_FDCWD,
        path,
        RenameFlags::RENAME_NOREPLACE,
    ) {
        Ok(()) => {}
        Err(nix::errno::Errno::EEXIST) => {
            let _ = std::fs::remove_file(&aside);
        }
        Err(e) => return Err(Error::io(&aside, std::io::Error::from(e))),
    }
    Ok(false)
}

/// Teammates whose cursor (where their worker handled their inbox to) is spoiled: something
/// not a file there (its worker refuses it, and `resume` with it), a file holding no cursor
/// teamctl wrote, or one past the end of the log (both read as the log's start: handled
/// messages run again). Reported only: no safe fix exists, since nothing else records where
/// the inbox was handled to (the live state does not), and removing the file has the inbox
/// read from its start. A running worker puts its own record in place of an odd file at its
/// next read (`worker::watch::read_cursor`).
pub fn cursors(home: &Home) -> Vec<Finding> {
    use crate::store::CursorProblem;
    let mut out = Vec::new();
    for (store, cfg) in super::readable_teams(home) {
        let seen = crate::backend::Snapshot::of(cfg.teammates());
        for m in cfg.teammates() {
            let Some(problem) = store.cursor_problem(&m.name, crate::worker::READER) else {
                continue;
            };
            let live = store.live(&m.name).ok().flatten();
            let running =
                leader::effective_status_with(&*store, m, live.as_ref(), &seen).is_running();
            let messages = crate::store::entries(&*store, &m.name, crate::store::Position::START)
                .map_while(std::result::Result::ok)
                .filter(|e| matches!(e.item, crate::store::Item::Message(_)))
                .count();
            let who = format!("{}@{}", m.name, cfg.name);
            let again = format!(
                "its inbox is then read from its start ({messages} message{}: those it handled run again)",
                if messages == 1 { "" } else { "s" }
            );
            let f = match problem {
                CursorProblem::NotAFile { path, kind } => {
                    let f = Finding::new(
                        "cursors",
                        if running { Level::Warn } else { Level::Problem },
                        format!(
                            "{who}'s cursor {} is {kind}, not a cursor file: its worker cannot tell where it handled its inbox to{}",
                            path.display(),
                            if running { "" } else { ", and `teamctl resume` refuses it" }
                        ),
                    );
                    if running {
                        f.hint("its worker puts its own record there when it next reads its inbox")
                    } else {
                        f.hint(format!(
                            "no safe fix (nothing else records where the inbox was handled to): `rm {}` and `teamctl resume --team {} {}`: {again}",
                            path.display(),
                            cfg.name,
                            m.name
                        ))
                    }
                }
                CursorProblem::NoRecord { path } => Finding::new(
                    "cursors",
                    Level::Warn,
                    format!(
                        "{who}'s cursor {} holds no cursor teamctl wrote: its worker reads its inbox from the start",
                        path.display()
                    ),
                )
                .hint(format!(
                    "written by hand? {again}; nothing else records where it was handled to"
                )),
                CursorProblem::PastEnd { path, at, len } => Finding::new(
                    "cursors",
                    Level::Warn,
                    format!(
                        "{who}'s cursor {} is at byte {at}, past the end of its inbox log ({len} bytes: replaced or cut by hand): its worker reads the log from its start",
                        path.display()
                    ),
                )
                .hint(format!("{again}; nothing else records where it was handled to")),
            };
            out.push(f);
        }
    }
    out
}

/// The team directory's own directories with something else in their place (a link, a file, a
/// FIFO): every command that keeps a file there fails on it, naming it, while `doctor` said ok
/// (attacker QA: a link at `locks` made `plan approve` and every start fail). Left to the user:
/// what is there may be theirs (teamctl makes the directory again once it is moved away).
fn odd_subdirs(team: &Name, dir: &Path) -> Vec<Finding> {
    const SUBDIRS: [&str; 10] = [
        "inboxes",
        "state",
        "logs",
        "locks",
        "answers",
        "loops",
        "replies",
        "env",
        "interactive",
        "bells",
    ];
    SUBDIRS
        .iter()
        .map(|s| dir.join(s))
        .filter_map(|path| {
            let kind = crate::store::fsutil::odd_kind(&path)
                .filter(|k| *k != "a directory")
                .or_else(|| {
                    std::fs::symlink_metadata(&path)
                        .is_ok_and(|m| m.is_file())
                        .then_some("a file")
                })?;
            Some(
                Finding::new(
                    "team-dirs",
                    Level::Problem,
                    format!(
                        "{} is {kind}, not a directory: the commands of team {team} that keep files there fail on it",
                        path.display()
                    ),
                )
                .hint("move it away by hand (teamctl never follows nor removes it: it may be someone's); teamctl makes the directory again when it needs it"),
            )
        })
        .collect()
}

/// The live-state files (`state/NAME.json`) that are regular files holding something else
/// than a live state (`slots::spoiled`); none behind a link at `state` itself.
fn spoiled_states(dir: &Path) -> Vec<(PathBuf, Name)> {
    member_files(dir, "state", ".json")
        .into_iter()
        .filter(|(path, _)| crate::store::slots::spoiled(path, crate::store::is_live_state))
        .collect()
}

/// The entries of `dir/sub` named for a member (`NAME` + `suffix`) that are something other
/// than a regular file, each with its member and what it is (`odd_kind`).
fn odd_member_files(dir: &Path, sub: &str, suffix: &str) -> Vec<(PathBuf, Name, &'static str)> {
    member_files(dir, sub, suffix)
        .into_iter()
        .filter_map(|(path, member)| {
            let kind = crate::store::fsutil::odd_kind(&path)?;
            Some((path, member, kind))
        })
        .collect()
}

/// The entries of `dir/sub` named for a member (`NAME` + `suffix`), each with its member; none
/// behind a link at `sub` itself.
fn member_files(dir: &Path, sub: &str, suffix: &str) -> Vec<(PathBuf, Name)> {
    use crate::store::fsutil::{entries_nofollow, link_at};
    let sub = dir.join(sub);
    if link_at(&sub).is_some() {
        return Vec::new();
    }
    entries_nofollow(&sub)
        .into_iter()
        .filter_map(|(path, _)| {
            let member = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(suffix))
                .and_then(|n| Name::parse(n).ok())?;
            Some((path, member))
        })
        .collect()
}
