//! `teamctl up [FILE]`: bring up the team a TOML file declares (`domain::teamfile`), and
//! again and again with the same result. Everything is checked first (the file, each member
//! as a spawn request, worktrees, the starting tasks); then the team is created if missing,
//! members missing from it are spawned (on `spawn`'s own path), stopped ones resumed, and
//! tasks whose subject the team does not have yet are added. A running member is never
//! touched: one whose definition changed is listed with what to run; members the file does
//! not name are listed and left alone.

use std::path::{Path, PathBuf};

use crate::cli::BackendArg;
use crate::cli::{SpawnArgs, UpArgs};
use crate::context::Ctx;
use crate::domain::member::DEFAULT_MAX_HOPS;
use crate::domain::task::{NewTask, TaskList};
use crate::domain::teamfile::{self, MemberSpec, TeamFile};
use crate::domain::time::now_ms;
use crate::domain::{BackendType, Member, Name, Status, TeamConfig};
use crate::error::{Error, Result};
use crate::leader;
use crate::store::Store;
use crate::worktree;

use super::spawn::{self, Checked};

/// The file, read and checked, with where it lives (members' `cwd` are relative to it).
pub struct Loaded {
    pub file: TeamFile,
    /// The path as given, for messages.
    pub origin: String,
    pub dir: PathBuf,
}

/// The error when this home leads a team other than `team` (one team at a time).
fn refuse_if_leading_another(ctx: &Ctx, team: &Name) -> Result<()> {
    let Some(current) = ctx.home.current().filter(|c| c != team) else {
        return Ok(());
    };
    let leave = match ctx.home.server_of(&current).ok().flatten() {
        Some(_) => format!(
            ", or leave it for this home only with `teamctl delete --leave --team {current}` (it is kept on its NATS server for the other hosts)"
        ),
        None => String::new(),
    };
    Err(Error::bad(format!(
        "you already lead team {current:?}; a leader leads one team at a time: `teamctl delete --team {current}` (or `teamctl down` with its file) first{leave}, or use another --home"
    )))
}

/// Read and check a team file (`up` and `down`).
pub fn load(path: &Path) -> Result<Loaded> {
    let origin = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        // A file that is not there is a failure to read (exit 1), as for any other reason.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::failed(format!(
                "no team file {}; write one (TOML: `name = \"TEAM\"`, then a `[[member]]` with `name` and `agent` or `exec` for each teammate; teamctl's examples/ has two) or name yours: `teamctl up FILE`",
                where_is(path)
            )));
        }
        Err(e) => {
            return Err(Error::bad(format!(
                "cannot read the team file {origin}: {e}"
            )));
        }
    };
    let file = teamfile::parse(&text, &origin)?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = parent
        .canonicalize()
        .map_err(|e| Error::bad(format!("{}: {e}", parent.display())))?;
    Ok(Loaded { file, origin, dir })
}

/// `path` as given, with the directory it is in when that is the working directory (`teamctl.toml
/// in /home/me/proj`).
pub fn where_is(path: &Path) -> String {
    let origin = path.display();
    match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => format!("{origin} in {}", cwd.display()),
        _ => origin.to_string(),
    }
}

/// What `up` does with one declared member, decided before anything is written.
enum Action {
    /// Not in the team: spawned.
    Spawn,
    /// Running as declared: nothing.
    Running,
    /// Running with another definition: listed, untouched.
    Changed(Vec<String>),
    /// Stopped or dead, as declared: resumed.
    Resume,
    /// Stopped or dead with another definition: spawned anew in its place (same identity
    /// and inbox, as `spawn` does), the new definition taking effect.
    Respawn(Vec<String>),
}

pub fn run(ctx: &Ctx, args: &UpArgs) -> Result<()> {
    up(ctx, args, true)
}

/// `run`; `again`: a team made meanwhile by another command (a second `up` beside this one)
/// is brought up as it is then, planned anew, once (new-user QA: the slower of two `up`s of a
/// new team ended, exit 1, "run `teamctl up` again").
fn up(ctx: &Ctx, args: &UpArgs, again: bool) -> Result<()> {
    ctx.require_leader("bring a team up")?;
    let Loaded { file, origin, dir } = load(&args.file)?;
    let at = |line: usize, why: String| Error::bad(format!("{origin}:{line}: {why}"));
    // Each member as a spawn request, checked as `spawn` checks its options.
    let mut members: Vec<(&MemberSpec, SpawnArgs, Checked)> = Vec::new();
    for m in &file.members {
        let req = request(m, &dir).map_err(|e| at(m.line_of("cwd"), e.to_string()))?;
        if let Some(a) = &m.agent
            && crate::agent::preset::find(a).is_none()
        {
            return Err(at(
                m.line_of("agent"),
                format!(
                    "unknown agent {a:?}; use one of {}, or exec = \"CMD\" for any other command",
                    crate::agent::preset::names().join(", ")
                ),
            ));
        }
        let checked =
            spawn::check(&req).map_err(|e| at(m.line, format!("member {}: {e}", m.name())))?;
        spawn::check_home(ctx, req.agent.as_deref())
            .map_err(|e| at(m.line_of("agent"), format!("member {}: {e}", m.name())))?;
        members.push((m, req, checked));
    }
    // The team: the file's, which must be the one this leader leads (if any).
    let team = &file.name;
    if let Some(t) = &ctx.team
        && t != team.as_str()
    {
        return Err(Error::bad(format!(
            "{origin} declares team {team}, not {t:?} (--team / TEAMCTL_TEAM); drop --team, or edit the file"
        )));
    }
    refuse_if_leading_another(ctx, team)?;
    let existing = if ctx.home.exists(team) {
        Some(ctx.home.open(team)?)
    } else {
        None
    };
    let config = existing.as_ref().map(|s| s.load()).transpose()?;
    let team_dir = ctx.home.team_dir(team);
    // Two members on one branch of one repository: git checks a branch out in one worktree
    // only, so the second failed once the first had started, and its advice had the first's
    // tree detached (new-user QA 48). Refused with the file's lines, before anything is done.
    {
        let mut declared: Vec<(PathBuf, &str, &MemberSpec)> = Vec::new();
        for (m, req, checked) in &members {
            let Some(branch) = req.worktree.as_deref().filter(|b| !b.is_empty()) else {
                continue;
            };
            let Some(repo) = worktree::repo_root(&checked.cwd) else {
                continue;
            };
            if let Some((_, _, first)) =
                declared.iter().find(|(r, b, _)| *r == repo && *b == branch)
            {
                return Err(at(
                    m.line_of("worktree"),
                    format!(
                        "{}'s worktree branch {} is also {}'s (line {}): git checks a branch out in one worktree only; give one of them another",
                        m.name(),
                        crate::output::printable_line(branch, 256),
                        first.name(),
                        first.line_of("worktree")
                    ),
                ));
            }
            declared.push((repo, branch, m));
        }
    }
    // What to do with each member; worktrees of new members checked (nothing made yet).
    let mut plan = Vec::new();
    for (m, req, checked) in members {
        // The worktree it is to get on `branch` (`replacing` its own), checked: nothing made.
        let tree = |branch: &str, replacing: bool| {
            worktree::plan(
                &checked.cwd,
                &team_dir,
                m.name(),
                team.as_str(),
                branch,
                replacing,
            )
            .map(|_| ())
            .map_err(|e| at(m.line_of("worktree"), e.to_string()))
        };
        let recorded = config.as_ref().and_then(|c| c.member(m.name().as_str()));
        let action = match (recorded, &existing) {
            (None, _) | (_, None) => {
                if let Some(branch) = &req.worktree {
                    tree(branch, false)?;
                }
                Action::Spawn
            }
            (Some(old), Some(store)) => {
                let running =
                    leader::effective_status(old, store.live(m.name())?.as_ref()).is_running();
                let diff = differences(m, &req, &checked, old, team);
                // A worktree it is to get, or to have in place of its own on another branch
                // (`spawn::start_unless_running` replaces it): checked now, as a new member's.
                if !running
                    && !diff.is_empty()
                    && let Some(branch) = &req.worktree
                {
                    let had = old
                        .worktree_branch
                        .as_deref()
                        .filter(|_| old.worktree.is_some());
                    if had
                        != Some(worktree::declared(branch, had, m.name(), team.as_str()).as_str())
                    {
                        tree(branch, had.is_some())?;
                    }
                }
                match (running, diff.is_empty()) {
                    (true, true) => Action::Running,
                    (true, false) => Action::Changed(diff),
                    (false, true) => Action::Resume,
                    (false, false) => Action::Respawn(diff),
                }
            }
        };
        plan.push((m, req, checked, action));
    }
    // The starting tasks, tried on a copy of the list: a refusal now writes nothing.
    let tasks_now = match &existing {
        Some(s) => s.load_tasks()?,
        None => TaskList::default(),
    };
    add_tasks(&mut tasks_now.clone(), &file, now_ms()).map_err(|(line, e)| at(line, e))?;

    // Checked: from here on, things are written and started.
    let appeared = || {
        Error::failed(format!(
            "team {team} appeared while `up` was creating it; run `teamctl up` again"
        ))
    };
    let (store, created) = match existing {
        Some(s) => (s, false),
        None => {
            let cwd =
                std::env::current_dir().map_err(|e| Error::io_while("current directory", e))?;
            // Under `create`'s lock from the checks to the record, as `create`: a `delete` of
            // the name waits (it removed the directory while the team file was being written,
            // leaving a directory without it), and a `create` racing this one leads its team
            // or this one, not both.
            let creating = ctx.home.lock_create()?;
            refuse_if_leading_another(ctx, team)?;
            if ctx.home.exists(team) {
                if again {
                    // Nothing was written or said yet: planned anew on the team as it is.
                    drop(creating);
                    return up(ctx, args, false);
                }
                return Err(appeared());
            }
            let s = ctx
                .home
                .create_in(&creating, team, &file.description, &cwd, None)?;
            if s.team() != team {
                // The name is taken by a directory without a team file: this one is not the
                // file's.
                let _ = s.destroy();
                return Err(appeared());
            }
            if ctx.home.current().is_none() {
                creating.set_current(Some(team))?;
            }
            (s, true)
        }
    };
    if !created {
        // Under `create`'s lock, as every writer of the record: a `create` or `delete` racing
        // this one leaves a record naming a team that exists, or none.
        let creating = ctx.home.lock_create()?;
        if ctx.home.current().is_none() && ctx.home.exists(team) {
            creating.set_current(Some(team))?;
        }
    }
    ctx.reconcile(&*store)?;
    let settings = team_settings(&*store, &file)?;
    let mut out = Report {
        team: team.to_string(),
        created,
        settings,
        ..Report::default()
    };
    if !ctx.json {
        if created {
            crate::outln!("team {team} created");
        } else {
            crate::outln!("team {team}");
        }
        for s in &out.settings {
            crate::outln!("  {s}");
        }
    }
    let again = if args.file.as_os_str() == "teamctl.toml" {
        "teamctl up".to_string()
    } else {
        format!("teamctl up {origin}")
    };
    // Each line is said once the workers started have written their first live state (or
    // exited: then why, and `up` exits 1 after the rest is done), all waited for together.
    // A line to say, or (`Err`) why the member did not start, said in its place.
    let mut lines: Vec<(Result<String, String>, Option<usize>)> = Vec::new();
    // Each member placed, with how it came by its worktree when it was spawned (`None` when
    // resumed): `spawnedMembers` once its worker is seen to run.
    let mut placed = Vec::new();
    let mut spawned_trees: Vec<Option<Option<worktree::Got>>> = Vec::new();
    let mut failed = Vec::new();
    for (m, req, checked, action) in plan {
        let name = m.name().clone();
        let placed_before = placed.len();
        let line = match action {
            Action::Spawn | Action::Respawn(_) => {
                match spawn::start_unless_running(
                    ctx,
                    &*store,
                    &req,
                    checked,
                    m.color.as_deref(),
                    Some(again.as_str()),
                ) {
                    // Its start failed (a tmux client killed, its worktree kept for its
                    // uncommitted work, say): the rest goes on.
                    Err(e) => Err(member_failure(e)?),
                    Ok(Ok(spawn::Started {
                        member: started,
                        tree,
                    })) => {
                        let mut line = match &action {
                            Action::Respawn(diff) => format!(
                                "{name} spawned anew with its new definition ({}): {}",
                                started.placed_at(),
                                diff.join("; ")
                            ),
                            _ => format!("{name} spawned ({})", started.placed_at()),
                        };
                        // Where it works, as `spawn` says it.
                        if let Some(got) = &tree {
                            line = format!("{line}\n{}", got.line(&started));
                        }
                        out.spawned.push(name.to_string());
                        placed.push(started);
                        spawned_trees.push(Some(tree));
                        Ok(line)
                    }
                    // Another command (a second `up` beside this one) started it meanwhile:
                    // said, and the rest goes on (new-user QA: this `up` ended there, exit 2,
                    // its other members and tasks left undone).
                    Ok(Err(status)) => {
                        out.running.push(name.to_string());
                        Ok(format!(
                            "{name} running ({status}), started meanwhile by another command"
                        ))
                    }
                }
            }
            Action::Resume => match leader::resume_if_down(&ctx.home, &*store, &name, false) {
                Err(e) => Err(member_failure(e)?),
                Ok(Some(started)) => {
                    out.resumed.push(name.to_string());
                    let line = format!("{name} resumed ({})", started.placed_at());
                    placed.push(started);
                    spawned_trees.push(None);
                    Ok(line)
                }
                Ok(None) => {
                    out.running.push(name.to_string());
                    Ok(format!(
                        "{name} running, started meanwhile by another command"
                    ))
                }
            },
            Action::Running => {
                out.running.push(name.to_string());
                Ok(format!("{name} running, as declared"))
            }
            Action::Changed(diff) => {
                let todo = format!("teamctl shutdown {name} && {again}");
                // Its worktree is replaced then, unless it holds uncommitted work: said, so
                // the way is not a surprise (new-user QA 46: it was kept, the file not applied).
                let tree = if diff.iter().any(|d| d.starts_with("worktree:")) {
                    " (its worktree is then replaced, kept instead if it holds uncommitted work; its branch stays)"
                } else {
                    ""
                };
                let line = format!(
                    "{name} is running with another definition, left as it is: {}. To apply the file: {todo}{tree}",
                    diff.join("; ")
                );
                out.changed.push(serde_json::json!({
                    "name": name.as_str(),
                    "differences": diff,
                    "todo": todo,
                }));
                Ok(line)
            }
        };
        if let Err(why) = &line {
            out.failed.push(name.to_string());
            out.why
                .insert(name.to_string(), serde_json::json!({ "error": why }));
            failed.push(name.to_string());
        }
        lines.push((
            line,
            (placed.len() > placed_before).then_some(placed_before),
        ));
    }
    let started = leader::started(&*store, &placed);
    for ((m, ok), tree) in placed.iter().zip(&started).zip(&spawned_trees) {
        if let (Ok(()), Some(tree)) = (ok, tree) {
            let mut shown = spawn::shown_started(&*store, m);
            if let Some(got) = tree {
                got.add_json(&mut shown);
            }
            out.spawned_members.push(shown);
        }
    }
    for (line, at) in lines {
        match (line, at.map(|i| (&placed[i], &started[i]))) {
            (Err(why), _) => {
                crate::errln!("{}", crate::output::printable(&format!("teamctl: {why}")));
            }
            (_, Some((m, Err(e)))) => {
                out.spawned.retain(|n| n != m.name.as_str());
                out.resumed.retain(|n| n != m.name.as_str());
                out.failed.push(m.name.to_string());
                out.why.insert(
                    m.name.to_string(),
                    serde_json::json!({ "error": e.to_string() }),
                );
                crate::errln!("teamctl: {e}");
                failed.push(m.name.to_string());
            }
            (Ok(line), _) if !ctx.json => crate::outln!("{line}"),
            _ => {}
        }
    }
    let config = store.load()?;
    for m in config.teammates() {
        if file.members.iter().all(|s| s.name() != &m.name) {
            out.undeclared.push(m.name.to_string());
            if !ctx.json {
                // One stopped already needs no `shutdown`, nor one whose worker died (new-user
                // QA: it was suggested for both).
                let live = store.live(&m.name).ok().flatten();
                let left = match leader::effective_status(m, live.as_ref()) {
                    Status::Stopped => "stopped, left as it is".to_string(),
                    Status::Dead => format!(
                        "dead, left as it is (`teamctl resume {}` starts it again)",
                        m.name
                    ),
                    _ => format!("left as it is (`teamctl shutdown {}` stops it)", m.name),
                };
                crate::outln!("{} is in team {team} but not in {origin}; {left}", m.name);
            }
        }
    }
    let mut added = Vec::new();
    let list = store.update_tasks(&mut |l| {
        added = add_tasks(l, &file, now_ms()).map_err(|(line, e)| at(line, e))?;
        Ok(())
    })?;
    let me = Name::leader();
    for id in &added {
        let task = list.get(*id)?;
        if !ctx.json {
            crate::outln!("task #{id} added: {}", task.subject);
        }
        super::task::tell_owner(ctx, &*store, &me, &list, task)?;
    }
    out.tasks_added = added.clone();
    out.tasks_kept = file.tasks.len() - added.len();
    if !ctx.json && out.tasks_kept > 0 {
        crate::outln!(
            "{} task(s) of the file already in the list (matched by subject), left as they are",
            out.tasks_kept
        );
        // An owner the file gives that the list does not have is said, with the way to give
        // it (new-user QA 45: an owner changed in the file was passed over in silence).
        for t in &file.tasks {
            let Some(want) = &t.owner else { continue };
            let Some(task) = list.tasks.iter().find(|k| k.subject == t.subject) else {
                continue;
            };
            if added.contains(&task.id) || task.owner.as_ref() == Some(want) {
                continue;
            }
            let has = task
                .owner
                .as_ref()
                .map_or_else(|| "no owner".to_string(), |o| format!("owner {o}"));
            crate::outln!(
                "task #{} ({}): {origin} gives it to {want}, the list has {has}; `teamctl task update {} --owner {want}` gives it",
                task.id,
                crate::output::printable_line(&task.subject, 80),
                task.id
            );
        }
    }
    if ctx.json {
        ctx.print_json(&out.to_json());
    }
    if !failed.is_empty() {
        // Each one's reason was said in its place above (it was said again here: QA).
        let (n, who) = match failed.len() {
            1 => (String::new(), failed[0].clone()),
            n => (format!("{n} members "), failed.join(", ")),
        };
        return Err(Error::failed(format!(
            "{n}{who} did not start (why above); the rest of {origin} is done"
        )));
    }
    Ok(())
}

/// A member's start error, once `up` has begun to write: that member's failure alone, said in
/// its place while the rest of the file is done, `up` ending with exit 1 (something was
/// written, so bad input met now is no exit 2: a worktree branch taken meanwhile, say), and
/// its `--json` document printed with it (new-user QA 46: such an error ended `up` at once,
/// with no JSON); `Err` for one that ends `up` now (a signal, its output gone).
fn member_failure(e: Error) -> Result<String> {
    match e {
        Error::Interrupted { .. } | Error::Closed => Err(e),
        e => Ok(e.to_string()),
    }
}

/// The spawn request for a declared member; a relative `cwd` is from the file's directory.
fn request(m: &MemberSpec, dir: &Path) -> Result<SpawnArgs> {
    let cwd = match &m.cwd {
        None => dir.to_path_buf(),
        Some(c) => {
            let p = dir.join(c);
            if !p.is_dir() {
                return Err(Error::bad(format!(
                    "cwd {c:?}: {} is not a directory",
                    p.display()
                )));
            }
            p
        }
    };
    Ok(SpawnArgs {
        name: m.name().to_string(),
        exec: m.exec.clone(),
        agent: m.agent.clone(),
        extra: m.args.clone(),
        prompt: m.prompt.clone(),
        backend: match m.backend {
            None => BackendArg::Auto,
            Some(BackendType::Tmux) => BackendArg::Tmux,
            Some(BackendType::Process) => BackendArg::Process,
        },
        cwd: Some(cwd),
        model: m.model.clone(),
        agent_type: m
            .agent_type
            .clone()
            .unwrap_or_else(|| DEFAULT_AGENT_TYPE.into()),
        plan_mode_required: m.plan_mode,
        plan: m.plan.clone(),
        auto_claim: m.auto_claim,
        turn_timeout: m.turn_timeout_secs,
        max_turns: m.max_turns,
        on_shutdown: m.on_shutdown.clone(),
        worktree: m.worktree.clone(),
        interactive: m.interactive,
        prompt_pattern: m.prompt_pattern.clone(),
    })
}

/// `spawn --agent-type`'s default.
const DEFAULT_AGENT_TYPE: &str = "general-purpose";

/// How the recorded member differs from its declaration, one `key: recorded → declared` each.
fn differences(
    m: &MemberSpec,
    req: &SpawnArgs,
    checked: &Checked,
    old: &Member,
    team: &Name,
) -> Vec<String> {
    let mut out = Vec::new();
    let show = |v: Option<&str>| v.map_or("none".to_string(), |s| format!("{s:?}"));
    let mut field = |key: &str, was: Option<&str>, now: Option<&str>| {
        if was != now {
            out.push(format!("{key}: {} → {}", show(was), show(now)));
        }
    };
    field("agent", old.agent.as_deref(), req.agent.as_deref());
    field("exec", old.command.as_deref(), req.exec.as_deref());
    field("model", old.model.as_deref(), req.model.as_deref());
    field("prompt", old.prompt.as_deref(), req.prompt.as_deref());
    field(
        "agent-type",
        Some(old.agent_type.as_str()),
        Some(req.agent_type.as_str()),
    );
    field("plan", old.plan_command.as_deref(), req.plan.as_deref());
    field(
        "on-shutdown",
        old.on_shutdown.as_deref(),
        req.on_shutdown.as_deref(),
    );
    let args = |a: &[String]| (!a.is_empty()).then(|| format!("{a:?}"));
    field(
        "args",
        args(&old.agent_args).as_deref(),
        args(&req.extra).as_deref(),
    );
    let num = |n: Option<u64>| n.map(|n| n.to_string());
    field(
        "turn-timeout",
        num(old.turn_timeout_secs).as_deref(),
        num(req.turn_timeout).as_deref(),
    );
    field(
        "max-turns",
        num(old.max_turns).as_deref(),
        num(req.max_turns).as_deref(),
    );
    let flag = |b: bool| Some(if b { "true" } else { "false" });
    field("auto-claim", flag(old.auto_claim), flag(req.auto_claim));
    field(
        "plan-mode",
        flag(old.plan_mode_required),
        flag(req.plan_mode_required),
    );
    field(
        "interactive",
        flag(old.interactive.is_some()),
        flag(checked.interactive.is_some()),
    );
    if old.interactive.is_some()
        && checked.interactive.is_some()
        && old.interactive != checked.interactive
    {
        let pattern =
            |i: &Option<crate::domain::Interactive>| i.as_ref().map(|i| i.prompt_pattern.clone());
        field(
            "prompt-pattern",
            pattern(&old.interactive).as_deref(),
            pattern(&checked.interactive).as_deref(),
        );
    }
    if let Some(c) = &m.color {
        field("color", Some(old.color.as_str()), Some(c.as_str()));
    }
    if let Some(b) = m.backend {
        let was = old.backend_type.map(|k| k.to_string());
        field("backend", was.as_deref(), Some(b.to_string().as_str()));
    }
    // A worktree member runs inside its worktree: its branch is what was declared (`true`:
    // the one teamctl named, by today's name or the one it had before).
    let branch = old.worktree_branch.clone();
    let declared = req
        .worktree
        .as_ref()
        .map(|b| worktree::declared(b, branch.as_deref(), m.name(), team.as_str()));
    match (&old.worktree, &declared) {
        (None, None) => {
            let now = checked.cwd.display().to_string();
            field("cwd", Some(old.cwd.as_str()), Some(now.as_str()));
        }
        _ => field(
            "worktree",
            old.worktree.as_ref().and(branch.as_deref()),
            declared.as_deref(),
        ),
    }
    out
}

/// Add the file's tasks the list does not have yet (matched by subject, first match), in
/// file order; returns the new ids. Errors carry the task's line.
fn add_tasks(
    list: &mut TaskList,
    file: &TeamFile,
    now: u64,
) -> std::result::Result<Vec<u64>, (usize, String)> {
    let id_of = |list: &TaskList, subject: &str| {
        list.tasks
            .iter()
            .find(|t| t.subject == subject)
            .map(|t| t.id)
    };
    let mut added = Vec::new();
    for t in &file.tasks {
        if id_of(list, &t.subject).is_some() {
            continue;
        }
        let blocked_by = t.blocked_by.iter().filter_map(|s| id_of(list, s)).collect();
        let new = NewTask {
            subject: t.subject.clone(),
            description: t.description.clone(),
            blocked_by,
            owner: t.owner.clone(),
            by: Some(crate::domain::Name::leader()),
            hops: 0,
        };
        let task = list
            .add(new, now)
            .map_err(|e| (t.line, format!("task {:?}: {e}", t.subject)))?;
        added.push(task.id);
    }
    Ok(added)
}

/// The team's own settings from the file (description, max-hops), written when they differ;
/// what changed, as `key: was → now`.
fn team_settings(store: &dyn Store, file: &TeamFile) -> Result<Vec<String>> {
    let config = store.load()?;
    let mut changes = Vec::new();
    if config.description != file.description {
        changes.push(format!(
            "description: {:?} → {:?}",
            config.description, file.description
        ));
    }
    // Left out, it is the default, as a description left out is none (new-user QA 45: the
    // one was cleared, the other kept).
    let hops = file.max_hops.unwrap_or(DEFAULT_MAX_HOPS);
    if hops != config.max_hops() {
        let default = if file.max_hops.is_none() {
            " (the default)"
        } else {
            ""
        };
        changes.push(format!("max-hops: {} → {hops}{default}", config.max_hops()));
    }
    if !changes.is_empty() {
        store.update(&mut |cfg: &mut TeamConfig| {
            cfg.description = file.description.clone();
            cfg.max_hops = file.max_hops;
            Ok(())
        })?;
    }
    Ok(changes)
}

/// What `up` did, for `--json`.
#[derive(Default)]
struct Report {
    team: String,
    created: bool,
    settings: Vec<String>,
    spawned: Vec<String>,
    /// Each member in `spawned`, as `spawn --json` prints it (its record, the status its
    /// worker says, `worktreeCreated` ... when it works in a worktree).
    spawned_members: Vec<serde_json::Value>,
    resumed: Vec<String>,
    /// Not started: its start failed, or its worker exited as soon as it started (said on
    /// stderr, with why: `why`, by name).
    failed: Vec<String>,
    why: serde_json::Map<String, serde_json::Value>,
    running: Vec<String>,
    changed: Vec<serde_json::Value>,
    undeclared: Vec<String>,
    tasks_added: Vec<u64>,
    tasks_kept: usize,
}

impl Report {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "team": self.team,
            "created": self.created,
            "settings": self.settings,
            "spawned": self.spawned,
            "spawnedMembers": self.spawned_members,
            "resumed": self.resumed,
            "failed": self.failed,
            "why": self.why,
            "running": self.running,
            "changed": self.changed,
            "undeclared": self.undeclared,
            "tasksAdded": self.tasks_added,
            "tasksKept": self.tasks_kept,
        })
    }
}
