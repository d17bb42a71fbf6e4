//! `teamctl spawn NAME`: add a teammate to the team file, then start its worker on the chosen
//! backend. A worker that cannot be started leaves no member entry behind.

use std::path::PathBuf;

use crate::agent;
use crate::backend;
use crate::cli::SpawnArgs;
use crate::context::Ctx;
use crate::domain::time::now_ms;
use crate::domain::{Interactive, Member, Name, Roster, Status};
use crate::error::{Error, Result};
use crate::leader;
use crate::store::Store;
use crate::worktree;

/// Refuse a new name that differs from a member's (the leader's included) only in case:
/// `Bob` beside `bob`, or `Team-Lead`, would be told apart by nobody reading the board.
/// Members that already look alike (teams made before this check) keep working.
fn look_alike(roster: &Roster, name: &Name) -> Result<()> {
    if roster.has(name.as_str()) {
        // Spawned anew in its own place: not a new name.
        return Ok(());
    }
    match roster
        .names()
        .iter()
        .find(|m| *m != name && m.looks_like(name))
    {
        Some(m) => Err(Error::bad(format!(
            "{name:?} looks like {:?}, already in team {} (they differ only in case, I/l/1, O/0 or - _ .); choose a name a reader can tell apart",
            m.as_str(),
            roster.team()
        ))),
        None => Ok(()),
    }
}

pub fn run(ctx: &Ctx, args: &SpawnArgs) -> Result<()> {
    ctx.require_leader("spawn teammates")?;
    let checked = check(args)?;
    check_home(ctx, args.agent.as_deref())?;
    let store = ctx.store()?;
    let replace = other_branch_refused(&*store, args, &checked.name)?;
    let (
        Started {
            member: started,
            tree,
        },
        starting,
    ) = start_held(
        ctx,
        &*store,
        args,
        checked,
        ctx.member_color.as_deref(),
        replace.as_deref(),
    )?;
    // Said once its worker has written its first live state; one that exited at once is
    // an error with its reason (the member stays recorded, dead: `resume` once fixed).
    let seen = leader::started_one(&*store, &started);
    drop(starting);
    seen?;
    if ctx.json {
        let mut shown = shown_started(&*store, &started);
        if let Some(got) = tree {
            got.add_json(&mut shown);
        }
        ctx.print_json(&shown);
    } else {
        // "bob spawned as bob@T (tmux, pane %3)": as `up` says it (new-user QA: the line had
        // no verb, so it did not read as done).
        crate::outln!(
            "{} spawned as {} {}",
            ctx.paint.color(started.name.as_str(), &started.color),
            ctx.paint.dim(&started.agent_id),
            ctx.paint.dim(&format!("({})", started.placed_at()))
        );
        if let Some(got) = tree {
            crate::outln!("{}", got.line(&started));
        }
    }
    Ok(())
}

/// `spawn --worktree BRANCH` for a teammate that works in a worktree on another branch: it
/// keeps its worktree when spawned anew, so the branch asked for would not be had; refused,
/// nothing changed (new-user QA 46: `--worktree` was passed over without a word). `up`, whose
/// file is the truth, replaces it instead (`start_unless_running`'s `replace`). A worktree
/// gone already (`shutdown --remove-worktree`) holds nothing to keep: the new branch is had,
/// `Some` the command to give again should the tree be back and hold work by then (new-user
/// QA 48: the refusal named the removed tree, and no spawn could move the teammate).
fn other_branch_refused(
    store: &dyn Store,
    args: &SpawnArgs,
    name: &Name,
) -> Result<Option<String>> {
    let Some(given) = args.worktree.as_deref().filter(|g| !g.is_empty()) else {
        return Ok(None);
    };
    let Some(old) = store.roster()?.member(name.as_str())? else {
        return Ok(None);
    };
    let Some(path) = &old.worktree else {
        return Ok(None);
    };
    if old.worktree_branch.as_deref() == Some(given) {
        return Ok(None);
    }
    if std::path::Path::new(path).symlink_metadata().is_err() {
        return Ok(Some(format!(
            "teamctl spawn {name} --worktree {}",
            crate::output::shell_quote(given)
        )));
    }
    let printable = |s: &str| crate::output::printable_line(s, 4096);
    Err(Error::bad(format!(
        "{name} works in its worktree {}{}, and keeps it when spawned anew: nothing was changed; spawn it without --worktree to go on there, `teamctl shutdown {name} --remove-worktree` first to have it work on the new branch, or spawn another teammate with `--worktree {}`",
        printable(path),
        old.worktree_branch
            .as_deref()
            .map(|b| format!(" (made on branch {})", printable(b)))
            .unwrap_or_default(),
        crate::output::shell_quote(given),
    )))
}

/// An `--agent` whose CLI cannot be given the directories it needs under this home
/// (`Preset::home_problem`: gemini and a comma in the home's path, codex and a control
/// character in it): bad input, before
/// anything is written.
pub fn check_home(ctx: &Ctx, agent: Option<&str>) -> Result<()> {
    let Some(preset) = agent.and_then(agent::preset::find) else {
        return Ok(());
    };
    match preset.home_problem(ctx.home.root()) {
        Some(why) => Err(Error::bad(format!("--agent {}: {why}", preset.name))),
        None => Ok(()),
    }
}

/// What `check` found: the spawn request's parts that need no team to be known.
pub struct Checked {
    pub name: Name,
    pub cwd: PathBuf,
    pub interactive: Option<Interactive>,
    pub backend: Box<dyn backend::Backend>,
}

/// Check a spawn request (`spawn`'s options, or a member of `up`'s file) without the team:
/// writes nothing, every error is bad input.
pub fn check(args: &SpawnArgs) -> Result<Checked> {
    let name = Name::teammate(&args.name)?;
    let cwd = resolve_cwd(args.cwd.as_ref())?;
    if args.turn_timeout == Some(0) {
        // clap's parser refuses 0 already; a caller that builds SpawnArgs itself gets the same.
        return Err(Error::bad(format!(
            "--turn-timeout {}",
            crate::domain::time::ZERO_SECS
        )));
    }
    if args.max_turns == Some(0) {
        return Err(Error::bad(
            "--max-turns must be at least 1 (leave it out for no limit)",
        ));
    }
    if args.plan.is_some() && !args.plan_mode_required {
        return Err(Error::bad(
            "--plan runs only for plan approval; add --plan-mode-required (or drop --plan)",
        ));
    }
    // A blank command is a mistake (an unset $VAR), not a choice: every turn would do nothing.
    for (flag, cmd, or_else) in [
        ("--exec", &args.exec, ""),
        ("--plan", &args.plan, ""),
        ("--on-shutdown", &args.on_shutdown, ", or leave it out"),
    ] {
        if cmd.as_ref().is_some_and(|c| c.trim().is_empty()) {
            return Err(Error::bad(format!(
                "{flag} is empty; give the command{or_else}"
            )));
        }
    }
    if let Some(p) = &args.prompt {
        crate::domain::member::check_prompt(p).map_err(|e| Error::bad(format!("--prompt: {e}")))?;
    }
    if let Some(m) = &args.model {
        crate::domain::member::check_model(m).map_err(|e| Error::bad(format!("--model: {e}")))?;
    }
    // A teammate without an agent could never answer (issue 11 item 14).
    if args.exec.is_none() && args.agent.is_none() {
        return Err(Error::bad(format!(
            "spawn {} needs an agent to answer its messages: --agent CLI (one of {}) or --exec CMD",
            args.name,
            agent::preset::names().join(", ")
        )));
    }
    if !args.extra.is_empty() && args.agent.is_none() {
        return Err(Error::bad(format!(
            "arguments after -- ({}) are for an --agent CLI; with --exec, put them in the command",
            args.extra.join(" ")
        )));
    }
    if let Some(a) = &args.agent {
        let Some(preset) = agent::preset::find(a) else {
            return Err(Error::bad(format!(
                "unknown --agent {a:?}; use one of {}, or --exec CMD for any other command",
                agent::preset::names().join(", ")
            )));
        };
        if which::which(preset.program).is_err() {
            return Err(Error::bad(format!(
                "--agent {a}: `{}` is not on PATH; install it ({}) or put it on PATH",
                preset.program, preset.install
            )));
        }
    }
    let interactive = interactive_rule(args)?;
    let backend = backend::select(args.backend.into())?;
    if interactive.is_some() && backend.kind() != crate::domain::BackendType::Tmux {
        let why = if crate::backend::tmux::find_tmux().is_ok() {
            "drop --backend process (or use --backend tmux)"
        } else {
            "tmux is not on PATH: install it"
        };
        return Err(Error::bad(format!(
            "interactive teammates need the tmux backend (the agent runs in a tmux pane); {why}"
        )));
    }
    Ok(Checked {
        name,
        cwd,
        interactive,
        backend,
    })
}

/// A teammate `start_unless_running` or `start_held` started, with how it came by its worktree
/// when it works in one.
pub struct Started {
    pub member: Member,
    pub tree: Option<worktree::Got>,
}

/// Add the checked teammate to the team in `store` and start its worker; `color` is its
/// colour (default: the one it had, else the next free one). The same path for `spawn` and
/// `up`. A teammate found running under its start lock (another command started it, as a
/// second `up` beside this one: `up` says so and goes on) is not started: `Ok(Err(status))`.
/// `replace`: a worktree of the member's on another branch than `args.worktree` names is
/// replaced by one on that branch when it holds no uncommitted work (`worktree::replace`;
/// `up`, whose file names the branch), the command that tries again given for when it does;
/// `None` (`spawn`, but for a worktree gone already: `other_branch_refused`): kept.
pub fn start_unless_running(
    ctx: &Ctx,
    store: &dyn Store,
    args: &SpawnArgs,
    checked: Checked,
    color: Option<&str>,
    replace: Option<&str>,
) -> Result<std::result::Result<Started, Status>> {
    start_or_running(ctx, store, args, checked, color, replace).map(|r| r.map(|(s, _)| s))
}

/// `start`, with the member's start lock (`leader::start_lock`) still held: `spawn` lets it go
/// once its worker has said it runs, so that the worker, checking where it was placed while
/// its start is under way, trusts the record instead of asking tmux (`worker::placed`). A
/// teammate already running is refused.
pub fn start_held(
    ctx: &Ctx,
    store: &dyn Store,
    args: &SpawnArgs,
    checked: Checked,
    color: Option<&str>,
    replace: Option<&str>,
) -> Result<(Started, crate::store::Held)> {
    let name = checked.name.clone();
    start_or_running(ctx, store, args, checked, color, replace)?.map_err(|status| {
        let team = store.team();
        Error::bad(format!(
            "{name} is already running in team {team} ({status}); send it work, or `teamctl kill {name}` first to spawn it anew"
        ))
    })
}

/// `start_held`, or the status of the teammate found running.
fn start_or_running(
    ctx: &Ctx,
    store: &dyn Store,
    args: &SpawnArgs,
    checked: Checked,
    color: Option<&str>,
    replace: Option<&str>,
) -> Result<std::result::Result<(Started, crate::store::Held), Status>> {
    let Checked {
        name,
        cwd,
        interactive,
        backend,
    } = checked;
    // The team file is read as a roster (400 KB with 1,000 members; a file store reads one
    // member of it), and again only if it changed meanwhile: every look below, the member's
    // record and its placement go through `cache`, and each write changes that one entry.
    let mut cache = None;
    // Checked before anything is written, and again in the update (a racing spawn).
    look_alike(store.roster_cached(&mut cache)?, &name)?;
    // A worktree is made for a new member, and for one spawned anew that had none; one
    // spawned anew keeps the worktree it had (`spawn` refuses another branch for it first:
    // `other_branch_refused`), unless `replace` has it replaced by one on the branch asked for.
    let had = match &args.worktree {
        Some(_) => store
            .roster_cached(&mut cache)?
            .member(name.as_str())?
            .filter(|m| m.worktree.is_some()),
        None => None,
    };
    let team_name = store.team().to_string();
    let replacing = match (&had, &args.worktree, replace) {
        (Some(old), Some(asked), Some(_)) => {
            let had = old.worktree_branch.as_deref();
            had != Some(worktree::declared(asked, had, &name, &team_name).as_str())
        }
        _ => false,
    };
    let tree = match &args.worktree {
        Some(branch) if had.is_none() || replacing => {
            let plan = worktree::plan(
                &cwd,
                &store.local_dir(),
                &name,
                &team_name,
                branch,
                replacing,
            )?;
            if let Some(said) = &plan.reused {
                crate::errln!("teamctl: {said}");
            }
            Some(plan)
        }
        _ => None,
    };
    ctx.reconcile(store)?;
    let team = store.team().clone();
    let mut member = Member::leader(&team, cwd.display().to_string(), now_ms());
    member.agent_id = name.agent_id(&team);
    member.name = name.clone();
    member.agent_type = args.agent_type.clone();
    member.model = args.model.clone();
    member.prompt = args.prompt.clone();
    member.command = args.exec.clone();
    member.agent = args.agent.clone();
    member.agent_args = args.extra.clone();
    member.session_id = Some(crate::agent::new_session_id());
    member.status = Status::Starting;
    member.plan_mode_required = args.plan_mode_required;
    member.plan_command = args.plan.clone();
    member.auto_claim = args.auto_claim;
    member.turn_timeout_secs = args.turn_timeout;
    member.max_turns = args.max_turns;
    member.on_shutdown = args.on_shutdown.clone();
    member.backend_type = Some(backend.kind());
    // Recorded with the entry, before the worker is placed: a spawn killed half-way leaves a
    // member on the right server, never one read as "the default server".
    member.tmux_socket = backend.tmux_socket();
    member.interactive = interactive;
    if let Some(t) = &tree {
        worktree::record(&mut member, t);
    }
    // A teammate that is not running (killed, stopped, dead) is spawned anew in its place: the
    // same identity and inbox, the new options. A running one is not. Seen under its start
    // lock, one "starting" whose start was cut short (a `spawn` killed before it placed the
    // worker) is down: `status` says dead, and a spawn again starts it (new-user QA: it was
    // refused as "already running (starting)").
    let running = |existing: Option<&Member>| {
        let existing = existing?;
        let status = leader::effective_status(existing, store.live(&name).ok().flatten().as_ref());
        (status.is_running() && !leader::cut_short(existing, status)).then_some(status)
    };
    // Held until the worker is recorded: see `leader::start_lock`.
    let starting = leader::start_lock(store, &name)?;
    let previous = store.roster_cached(&mut cache)?.member(name.as_str())?;
    if let Some(status) = running(previous.as_ref()) {
        return Ok(Err(status));
    }
    // What a re-spawn carries over (the session, the worktree, its directory) comes from this
    // host's own copy of what the old entry ran (`store::spec`), never from the shared file's
    // word alone; without one, nothing is carried over.
    let trusted = previous
        .clone()
        .and_then(|mut m| crate::store::spec::overlay(store, &mut m).ok().map(|()| m));
    if let Some(old) = &trusted
        && old.agent == member.agent
        && old.command == member.command
        && old.session_id.is_some()
    {
        // Spawned anew with the same agent: the same conversation goes on.
        member.session_id = old.session_id.clone();
    }
    if let Some(old) = previous
        .as_ref()
        .filter(|m| crate::backend::host::elsewhere(m).is_none())
    {
        // Leftovers of the old worker (a dead pane, a stray agent) go first, as on resume.
        backend::for_member(old).terminate(
            old,
            store.live(&name)?.as_ref(),
            crate::backend::GRACE,
        )?;
    }
    let mut got = None;
    // Its worktree on another branch goes first, kept (and this start refused) when it holds
    // uncommitted work; what it had is this host's own view of it (`trusted`).
    let mut replaced = None;
    if let (Some(again), Some(old)) = (replace, &trusted)
        && old.worktree.is_some()
    {
        let instead = match (&tree, &args.worktree) {
            (Some(t), _) if replacing => Some(format!(
                "on branch {}",
                crate::output::printable_line(&t.branch, 256)
            )),
            (None, None) => Some("without a worktree".to_string()),
            _ => None,
        };
        if let Some(instead) = instead {
            // Set aside either way; said as replaced only when there was one to remove.
            let removed = worktree::replace(old, &store.local_dir(), &instead, again)?;
            replaced = Some(old.worktree_branch.clone().filter(|_| removed));
        }
    }
    if tree.is_none()
        && let Some(was) = &replaced
    {
        got = Some(worktree::Got::Left {
            replaced: was.clone(),
        });
    }
    if let Some(old) = &trusted
        && tree.is_none()
        && replaced.is_none()
        && old.worktree.is_some()
    {
        member.worktree = old.worktree.clone();
        member.cwd = old.cwd.clone();
        member.worktree_repo = old.worktree_repo.clone();
        member.worktree_branch = old.worktree_branch.clone();
        // Said once, by `Got`'s line (new-user QA 48: a note on stderr said it again).
        let made = worktree::restore(&member, &store.local_dir())?;
        got = Some(worktree::Got::Kept {
            remade: made.is_some(),
            new_branch: made.as_ref().is_some_and(|m| m.new_branch),
        });
    }
    // The placement's word goes in with the entry (`leader::start_worker_in`).
    let word = leader::new_word();
    member.pane_nonce = Some(word.clone());
    store.update_member(&mut cache, &name, &mut |roster, head, slot| {
        // Under the team file's lock: `delete` sees this member when it looks after its mark.
        head.refuse_if_deleting()?;
        look_alike(roster, &name)?;
        let mut m = member.clone();
        let old_color = match slot {
            Some(old) => old.color.clone(),
            None => roster.next_color().to_string(),
        };
        m.color = color.map_or(old_color, String::from);
        if let Some(old) = slot {
            // Fields this version does not know (written by another version or tool)
            // stay, as docs/PROTOCOL.md promises; a pending shutdown request does not.
            for (k, v) in &old.extra {
                m.extra.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        *slot = Some(m);
        Ok(())
    })?;
    crate::pause::at("spawn-recorded");
    // On failure the team file is left as it was: the old entry back, or none.
    let forget = || {
        let _ = store.update_member(&mut None, &name, &mut |_, _, slot| {
            slot.clone_from(&previous);
            Ok(())
        });
    };
    if let Some(t) = &tree {
        match worktree::add(&t.repo, &t.path, &t.branch) {
            Ok(new_branch) => {
                got = Some(worktree::Got::Made {
                    new_branch,
                    replaced: replaced.flatten(),
                });
            }
            Err(e) => {
                forget();
                return Err(e);
            }
        }
    }
    // This host was told what the member runs: that is what it will run (`store::spec`).
    if let Err(e) = crate::store::spec::save(store, &member) {
        forget();
        return Err(e);
    }
    let started = match leader::start_worker_in(
        &ctx.home,
        store,
        &mut cache,
        &name,
        backend.as_ref(),
        Some(&word),
    ) {
        Ok(m) => m,
        Err(e) => {
            forget();
            if let Some(t) = &tree {
                let _ = worktree::remove(&t.repo, &t.path);
            }
            return Err(e);
        }
    };
    Ok(Ok((
        Started {
            member: started,
            tree: got,
        },
        starting,
    )))
}

/// `--interactive`: how the companion tells idle from busy (checked before anything is written).
fn interactive_rule(args: &SpawnArgs) -> Result<Option<Interactive>> {
    if !args.interactive {
        return Ok(None);
    }
    if args.plan_mode_required {
        return Err(Error::bad(
            "--interactive and --plan-mode-required do not go together: the agent in the pane plans with you itself",
        ));
    }
    match (&args.agent, &args.exec, &args.prompt_pattern) {
        (Some(a), _, None) if a == "claude" => Ok(Some(Interactive::claude())),
        (Some(a), _, None) => Err(Error::bad(format!(
            "--agent {a} has no interactive mode in teamctl yet; interactive presets: claude (or --exec CMD --prompt-pattern RE for any REPL)"
        ))),
        (Some(_), _, Some(_)) => Err(Error::bad(
            "--prompt-pattern is for --exec: a preset knows when its agent is idle",
        )),
        (None, Some(_), Some(pattern)) => Interactive::generic(pattern).map(Some),
        (None, Some(_), None) => Err(Error::bad(
            "--interactive --exec needs --prompt-pattern RE: a regex matching the REPL's empty prompt line (e.g. '^>>> $'), so teamctl knows when it is idle",
        )),
        (None, None, _) => Err(Error::bad(
            "--interactive needs the agent: --agent claude, or --exec CMD --prompt-pattern RE for any REPL",
        )),
    }
}

fn resolve_cwd(cwd: Option<&PathBuf>) -> Result<PathBuf> {
    let dir = match cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| Error::io_while("current directory", e))?,
    };
    let dir = dir
        .canonicalize()
        .map_err(|e| Error::bad(format!("--cwd {}: {e}", dir.display())))?;
    if !dir.is_dir() {
        return Err(Error::bad(format!(
            "--cwd {} is not a directory",
            dir.display()
        )));
    }
    // Recorded in the team file (JSON) as text: a byte that is not UTF-8 became U+FFFD, and
    // the teammate ran in that other directory, which anyone who can write the parent may
    // make (attacker QA). Refused, as a home of such a path is.
    if dir.to_str().is_none() {
        return Err(Error::bad(format!(
            "the working directory {} is not valid UTF-8: teamctl records it in the team file, which cannot carry it unchanged; use --cwd with a directory whose path is UTF-8",
            std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()).escape_ascii()
        )));
    }
    Ok(dir)
}

/// A member `spawn` or `resume` started, as `--json` prints it: its record with the status
/// its worker says now (`idle`, say), not the `starting` recorded before it was seen to run
/// (new-user QA 38).
pub fn shown_started(store: &dyn Store, m: &Member) -> serde_json::Value {
    let mut v = serde_json::to_value(m).unwrap_or_default();
    let live = store.live(&m.name).ok().flatten();
    let now = leader::shown_status(m, leader::seen_status(m, live.as_ref()));
    if let Ok(status) = serde_json::to_value(now) {
        v["status"] = status;
    }
    v
}
