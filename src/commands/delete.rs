//! `teamctl delete [--force]`: the shutdown handoff for every teammate, then the team is
//! removed. Refuses while a teammate refuses, unless `--force`. Racing senders and starts are
//! kept out by a mark in the team file taken first (docs/PROTOCOL.md, "Deleting a team").
//! A team kept on a NATS server that another host deleted already is removed from this home
//! only; `delete --leave` removes a NATS team from this home only, leaving it to the others.
//! A team directory without its team file (a leftover) is removed, its mail only with `--force`.

use std::time::Duration;

use crate::cli::DeleteArgs;
use crate::context::Ctx;
use crate::error::Result;
use crate::leader;
use crate::store::Store;

pub fn run(ctx: &Ctx, args: &DeleteArgs) -> Result<()> {
    ctx.require_leader("delete the team")?;
    if let Some(team) = named(ctx)?
        && let Some(server) = ctx.home.gone_from_server(&team)?
    {
        // Deleted from another host: only this home's pointer and local files are left (a
        // worktree with uncommitted changes among them is kept unless `--force`, as always).
        forget_here(ctx, &team, Some(args.force), &ctx.home.lock_create()?)?;
        if ctx.json {
            ctx.print_json(&serde_json::json!({ "deleted": team.as_str(), "alreadyGone": true }));
        } else {
            crate::outln!(
                "team {team} was already deleted on the NATS server at {server}; removed it from this home"
            );
        }
        return Ok(());
    }
    if let Some(team) = named(ctx)?
        && let Some(left) = ctx.home.leftover(&team)
    {
        // Found a leftover, nothing removed yet (tests force a race here).
        crate::pause::at("delete-leftover");
        return delete_leftover(ctx, &left, args.force);
    }
    let store = ctx.store()?;
    // A team named with --team is named in the hints too (new-user QA 38).
    let forced = match &ctx.team {
        Some(team) => format!(
            "teamctl delete --team {} --force",
            crate::output::shell_word(team)
        ),
        None => "teamctl delete --force".to_string(),
    };
    delete_team(ctx, &*store, args, &forced)
}

/// `delete` of a team directory without a team file (`Home::leftover`: a crash, an interrupted
/// `delete`, an `rm -rf` racing sends). Mail in it is removed only with `--force`, and said.
/// Workers still tagged with its members' ids end first (one inbox per member names them),
/// then its worktrees, its tmux session and the directory go as `delete` removes them.
/// Looked at again under `create`'s lock, held to the removal: a `create` (or `up`, `demo`)
/// holds it from making the directory to writing the team file, so what is found then is a
/// leftover, gone, or a team made meanwhile (removed nothing: it is no leftover).
fn delete_leftover(ctx: &Ctx, left: &crate::store::home::Leftover, force: bool) -> Result<()> {
    let team = &left.team;
    let creating = ctx.home.lock_create()?;
    if ctx.home.exists(team) {
        return Err(crate::Error::failed(format!(
            "team {team} was made while this delete ran (its directory had no team file yet): it is a team now, not a leftover, and nothing was removed; `teamctl delete --team {team}` deletes the team"
        )));
    }
    // Gone meanwhile (another `delete`): nothing is left to remove, and no mail with it.
    let left = ctx
        .home
        .leftover(team)
        .unwrap_or_else(|| crate::store::home::Leftover {
            inboxes: Vec::new(),
            ..left.clone()
        });
    let n = left.messages();
    if n > 0 && !force {
        return Err(crate::Error::failed(format!(
            "team {team} has no team file: {} is {}, holding {}; `teamctl delete --force --team {team}` removes it and {} ({})",
            left.dir.display(),
            left.cause(),
            left.contents(),
            if n == 1 {
                "that message"
            } else {
                "those messages"
            },
            left.where_messages()
        )));
    }
    let mut ending = crate::backend::Ending::new(crate::backend::GRACE);
    for (name, _) in left.inboxes.iter().filter(|(n, _)| !n.is_leader()) {
        ending.tagged(&name.agent_id(team));
    }
    ending.finish()?;
    forget_here(ctx, team, Some(force), &creating)?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "deleted": team.as_str(),
            "leftover": true,
            "messagesRemoved": n,
        }));
    } else {
        crate::outln!(
            "deleted what was left of team {team} (no team file){}",
            match n {
                0 => String::new(),
                1 => ", with the one message in it".to_string(),
                n => format!(", with the {n} messages in it"),
            }
        );
    }
    Ok(())
}

/// `delete --leave`: this home stops taking part in a team kept on a NATS server (its pointer
/// and local directory go); the team, its mail and the other hosts' members stay.
pub fn leave(ctx: &Ctx) -> Result<()> {
    ctx.require_leader("leave the team")?;
    let Some(team) = named(ctx)? else {
        // The usual "no team selected" error.
        return ctx.store().map(|_| ());
    };
    if !ctx.home.exists(&team) {
        return Err(crate::Error::bad(format!(
            "this home ({}) has not joined team {team:?}: there is nothing to leave",
            ctx.home.root().display()
        )));
    }
    let Some(server) = ctx.home.server_of(&team)? else {
        return Err(crate::Error::bad(format!(
            "team {team:?} is kept in files in this home, not on a NATS server: there is no other host to leave it to; `teamctl delete --team {team}` deletes it"
        )));
    };
    if ctx.home.gone_from_server(&team)?.is_none() {
        let store = ctx.store()?;
        let config = store.load()?;
        let mut running = Vec::new();
        for m in config
            .teammates()
            .filter(|m| crate::backend::host::elsewhere(m).is_none())
        {
            let live = store.live(&m.name)?;
            if leader::effective_status(m, live.as_ref()).is_running() {
                running.push(m.name.to_string());
            }
        }
        if !running.is_empty() {
            return Err(crate::Error::failed(format!(
                "{} of team {team} {} on this host; stop {} first (`teamctl shutdown NAME`), or `teamctl delete` to delete the team for every host",
                running.join(", "),
                if running.len() == 1 { "runs" } else { "run" },
                if running.len() == 1 { "it" } else { "them" },
            )));
        }
    }
    forget_here(ctx, &team, None, &ctx.home.lock_create()?)?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "left": team.as_str(), "server": server }));
    } else {
        crate::outln!(
            "left team {team}: removed it from this home; it stays on the NATS server at {server} for the other hosts"
        );
    }
    Ok(())
}

/// The team this command names (`--team`, else the current one), if any.
fn named(ctx: &Ctx) -> Result<Option<crate::domain::Name>> {
    match &ctx.team {
        Some(t) => crate::domain::Name::parse_as(t, "team").map(Some),
        // The team led last, also when only a leftover of it is here (no team file).
        None => Ok(ctx.home.current().or_else(|| {
            ctx.home
                .current_named()
                .filter(|t| ctx.home.leftover(t).is_some())
        })),
    }
}

/// Remove this home's directory of `team` (its worktrees through git, so the repositories
/// keep no stale entries; refused while one has uncommitted changes unless `force` is
/// `Some(true)`; `None` when `--force` is not offered), and forget it as the current team;
/// `creating`: `create`'s lock, held by the caller.
/// A symbolic link among the worktrees is unlinked and said, never followed
/// (`worktree::found`): git would remove the worktree it points at, outside the home.
fn forget_here(
    ctx: &Ctx,
    team: &crate::domain::Name,
    force: Option<bool>,
    creating: &crate::store::home::Creating,
) -> Result<()> {
    let crate::worktree::Found { trees, links } = crate::worktree::found(&ctx.home.team_dir(team));
    if force != Some(true) {
        let dirty: Vec<String> = trees
            .iter()
            .filter_map(|p| {
                // A name a turn chose, on one line (attacker QA 42: a newline in it forged a
                // "deleted team" line).
                Some(format!(
                    "{} ({})",
                    crate::output::printable_line(&p.display().to_string(), 1024),
                    crate::worktree::unsaved(p)?
                ))
            })
            .collect();
        if !dirty.is_empty() {
            return Err(crate::Error::failed(format!(
                "{}{}",
                lost_in(&dirty, ""),
                if force.is_some() {
                    ", or use `teamctl delete --force` to remove them anyway"
                } else {
                    ""
                }
            )));
        }
    }
    for link in links {
        match crate::store::fsutil::unlink_if_link(&link.path) {
            Ok(_) => crate::errln!("teamctl: removed {}", crate::worktree::link_note(&link)),
            Err(e) => crate::errln!("teamctl: {e}"),
        }
    }
    for p in &trees {
        match crate::worktree::remove_at(p) {
            Ok(removed @ crate::worktree::Removed::Link(_)) => {
                crate::errln!("teamctl: removed {removed}");
            }
            Ok(_) => {}
            Err(e) => crate::errln!("teamctl: {e}"),
        }
    }
    // This home's team session (its leader console, panes of members that ended) goes too,
    // from the servers this host's own records name: the console would otherwise go on
    // acting as the team's leader.
    let sockets = crate::store::spec::tmux_sockets(&ctx.home.team_dir(team));
    // No team file read here: the pids decide (`backend::tmux::Records`).
    for left in crate::backend::tmux::forget_session(team, None, sockets, &Vec::new()) {
        crate::errln!("{}", crate::backend::tmux::left_open_note(&left));
    }
    creating.forget(team)
}

/// The handoff for every teammate of the team in `store`, then its removal (`delete`, `down`).
/// `forced`: the command that forces it, for the hints (`teamctl delete --force`, or `down`'s).
pub fn delete_team(ctx: &Ctx, store: &dyn Store, args: &DeleteArgs, forced: &str) -> Result<()> {
    let config = match store.load() {
        Ok(c) => c,
        // The damaged-file error points here: `--force` must then work without the file.
        Err(e) if args.force => return delete_damaged(ctx, store, &e),
        Err(e) => return Err(e),
    };
    ctx.reconcile(store)?;
    let names: Vec<_> = config.teammates().map(|m| m.name.clone()).collect();
    if !args.force {
        let dirty = unsaved_trees(store, &config);
        if !dirty.is_empty() {
            return Err(crate::Error::failed(format!(
                "{} or use `{forced}`",
                lost_in(&dirty, "")
            )));
        }
    }
    // Ctrl-C (or SIGTERM) from here on is acted on where the team can still be kept: the mark
    // is undone and the command says what it left (`interrupted`), exit 130. Once teammates
    // are being ended, the delete is finished first.
    crate::signals::catch()?;
    let again = forced.trim_end_matches(" --force");
    // The mark first, under the team file's lock: from here on no send appends, and no spawn
    // or resume starts a worker (each checks it under the same lock or the start lock).
    set_mark(store, true)?;
    crate::pause::at("delete-marked");
    if !args.force {
        // Waiting longer helps only those that did not answer, not those that refused.
        let mut silent = false;
        // Those that answered yes and stopped (not those stopped or dead before they were
        // asked): said by name when the team is kept (QA 39: "those that agreed have
        // stopped" was said when nobody had agreed).
        let mut agreed: Vec<String> = Vec::new();
        // What `--json` prints when the team is kept: who stopped, refused, did not answer.
        let mut kept = serde_json::Value::Null;
        let handed = crate::leader::handoff::handoff(
            store,
            &names,
            Some("team deleted"),
            Duration::from_secs(args.timeout),
            true,
        )
        .and_then(|mut outcome| {
            if let Some(signal) = outcome.interrupted {
                return Err(interrupted(&config.name, signal, &names, &outcome, again));
            }
            // A teammate that died instead of answering ends with the team (all that is left
            // of every teammate is ended below): said, not a reason to keep the team.
            silent = !outcome.silent.is_empty();
            agreed = outcome
                .stopped
                .iter()
                .filter(|n| !outcome.already.contains(n) && !outcome.was_dead.contains(n))
                .map(ToString::to_string)
                .collect();
            kept = outcome.to_json();
            let died = std::mem::take(&mut outcome.died);
            let result = outcome.into_result(args.timeout);
            for (name, _) in died {
                if result.is_ok() {
                    crate::errln!("teamctl: {name} died before it answered; it ends with the team");
                } else {
                    // Kept (attacker QA 39: "it ends with the team" of a team that stays).
                    crate::errln!("teamctl: {name} died before it answered; it is dead");
                }
            }
            result
        });
        if let Err(e) = handed {
            // Kept: sends and resumes work again.
            set_mark(store, false)?;
            if let crate::Error::Interrupted { .. } = e {
                return Err(e);
            }
            let rest = if silent {
                format!(
                    "`{again} --timeout SECS` waits longer for the rest, `{forced}` ends them now"
                )
            } else {
                format!("`{forced}` ends the rest without asking")
            };
            // A script reading stdout learns the team is kept and why, as `shutdown --json`
            // says (new-user QA 38: `delete --json` printed nothing).
            if ctx.json
                && let serde_json::Value::Object(mut out) = kept
            {
                out.insert("deleted".into(), serde_json::Value::Null);
                out.insert("team".into(), config.name.as_str().into());
                ctx.print_json(&serde_json::Value::Object(out));
            }
            let stopped = match agreed.as_slice() {
                [] => String::new(),
                [one] => format!(" ({one} agreed and has stopped)"),
                many => format!(" ({} agreed and have stopped)", many.join(", ")),
            };
            return Err(crate::Error::failed(format!(
                "{e}; team {} is kept{stopped}: {rest}",
                config.name
            )));
        }
    }
    // Work its teammates left in their worktrees while they finished their turns and
    // answered (attacker QA 42: a turn's result written during the handoff was removed with
    // the team, no --force given): looked at again, and the team kept for it.
    if !args.force {
        let dirty = unsaved_trees(store, &config);
        if !dirty.is_empty() {
            set_mark(store, false)?;
            return Err(crate::Error::failed(format!(
                "{}, then `{again}`, or `{forced}`",
                lost_in(
                    &dirty,
                    &format!(
                        " (left while its teammates finished); team {} is kept, its teammates stopped",
                        config.name
                    )
                ),
            )));
        }
    }
    if let Some(signal) = crate::signals::caught() {
        set_mark(store, false)?;
        let ended = if args.force {
            "no teammate was ended"
        } else {
            "every teammate stopped"
        };
        return Err(crate::signals::interrupted(
            signal,
            format!(
                "team {} is kept and takes messages again (its deleting mark is undone); {ended}; `{again}` deletes it",
                config.name
            ),
        ));
    }
    // Past the last point the team can be kept (tests send Ctrl-C here).
    crate::pause::at("delete-ending");
    // Whatever is left (forced, leftovers of stopped members, or one a start that began before
    // the mark brought up) ends now, tag checked.
    let last = stop_everyone(store)?;
    // Worktrees live in the team directory: remove them through git so the repository does
    // not keep stale entries. Their branches are kept.
    // Only this host's own view of each (`store::spec`): a repository the shared file alone
    // names is not one git runs in. Work forced away is said (new-user QA 43: `delete
    // --force` said only "deleted team").
    let discarded = if args.force {
        unsaved_trees(store, &last)
    } else {
        Vec::new()
    };
    let views: Vec<_> = last
        .teammates()
        .filter_map(|m| crate::store::spec::local_view(store, m))
        .collect();
    let branches = crate::worktree::branches_left(views.iter(), store.team().as_str());
    for m in views {
        match crate::worktree::remove_for(&m, &store.local_dir()) {
            Ok(Some(removed @ crate::worktree::Removed::Link(_))) => {
                crate::errln!("teamctl: removed {removed}");
            }
            Ok(_) => {}
            Err(e) => crate::errln!("teamctl: {e}"),
        }
    }
    // Links planted beside them go with the directory (never followed): said here.
    for link in crate::worktree::found(&store.local_dir()).links {
        if crate::store::fsutil::unlink_if_link(&link.path).is_ok() {
            crate::errln!("teamctl: removed {}", crate::worktree::link_note(&link));
        }
    }
    // Each member's pane judged by what its worker recorded of its process, read before the
    // files go.
    let records: crate::backend::tmux::Records = last
        .teammates()
        .map(|m| {
            let live = store.live(&m.name).ok().flatten();
            crate::backend::tmux::record_of(m, live.as_ref())
        })
        .collect();
    for left in crate::backend::tmux::forget_team(&last, &records) {
        crate::errln!("{}", crate::backend::tmux::left_open_note(&left));
    }
    // Under `create`'s lock, the removal and the record's clear: no `create` makes a team in
    // the directory while it goes, and a team created meanwhile stays current.
    ctx.home.lock_create()?.destroy(store)?;
    verify_gone(&last)?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "deleted": config.name.as_str() }));
    } else {
        crate::outln!("deleted team {}", config.name);
    }
    if !discarded.is_empty() {
        crate::errln!(
            "teamctl: discarded (--force) work in {}; the branches keep what was committed",
            discarded.join(", ")
        );
    }
    // The branches are kept (what was committed in the worktrees): said, with the way to drop
    // them (new-user QA 43).
    for (repo, kept) in &branches {
        let shown = |w: &str| crate::output::shell_word(&crate::output::printable_line(w, 1024));
        let (ours, theirs): (Vec<_>, Vec<_>) = kept.iter().partition(|(_, ours)| *ours);
        let words = |v: &[&(String, bool)]| v.iter().map(|(b, _)| shown(b)).collect::<Vec<_>>();
        let (ours, theirs) = (words(&ours), words(&theirs));
        let place = crate::output::printable_line(&repo.display().to_string(), 1024);
        if !ours.is_empty() {
            let (them, it) = match ours.len() {
                1 => ("the branch", "it"),
                _ => ("the branches", "them"),
            };
            crate::errln!(
                "teamctl: kept {them} {} in {place} (`git -C {} branch -d -- {}` deletes {it} once merged)",
                ours.join(", "),
                shown(&repo.display().to_string()),
                ours.join(" "),
            );
        }
        if !theirs.is_empty() {
            crate::errln!(
                "teamctl: kept {} {} in {place}, as given (`--worktree`, or `worktree` in a team file)",
                if theirs.len() == 1 {
                    "the branch"
                } else {
                    "the branches"
                },
                theirs.join(", "),
            );
        }
    }
    if let Some(signal) = crate::signals::caught() {
        // Too late to keep it: its teammates were being ended, so the delete was finished,
        // and what the user asked for is done: exit 0 (docs/CLI.md), the signal said.
        crate::errln!(
            "teamctl: {signal} came while the teammates were being ended, too late to keep the team: the delete was finished, team {} is deleted",
            config.name
        );
    }
    Ok(())
}

/// What a delete interrupted during its handoff left: the team kept, unmarked; who stopped,
/// who refused, who still has the request (and stops once it answers it, its turn done), who
/// was not asked (of `all`, the teammates the handoff was for).
fn interrupted(
    team: &crate::domain::Name,
    signal: nix::sys::signal::Signal,
    all: &[crate::domain::Name],
    outcome: &crate::leader::handoff::Outcome,
    again: &str,
) -> crate::Error {
    use crate::leader::handoff::names;
    let mut what =
        format!("team {team} is kept and takes messages again (its deleting mark is undone)");
    let stopped: Vec<_> = outcome
        .stopped
        .iter()
        .filter(|n| !outcome.already.contains(n))
        .cloned()
        .collect();
    if !stopped.is_empty() {
        what.push_str(&format!("; {} stopped", names(&stopped)));
    }
    for (name, why) in &outcome.refused {
        what.push_str(&format!("; {name} refused to shut down: {why}"));
    }
    for (name, _) in &outcome.died {
        what.push_str(&format!(
            "; {name} died before it answered (`teamctl resume {name}` starts it again)"
        ));
    }
    if !outcome.silent.is_empty() {
        let one = outcome.silent.len() == 1;
        what.push_str(&format!(
            "; {} had not answered yet: the request is still awaited, and {} once {} (a turn in progress finishes first; `teamctl status` shows it)",
            names(&outcome.silent),
            if one { "it stops" } else { "they stop" },
            if one { "it answers" } else { "they answer" },
        ));
    }
    let not_asked: Vec<_> = all.iter().filter(|n| !outcome.asked(n)).cloned().collect();
    if !not_asked.is_empty() {
        what.push_str(&format!(
            "; {} not asked (running as before)",
            names(&not_asked)
        ));
    }
    what.push_str(&format!("; `{again}` deletes it"));
    crate::signals::interrupted(signal, what)
}

/// Set (or, when a handoff refused, clear) the team's deleting mark.
fn set_mark(store: &dyn Store, on: bool) -> Result<()> {
    store.update(&mut |cfg| {
        cfg.deleting = on.then(|| cfg.deleting.unwrap_or_else(crate::domain::time::now_ms));
        Ok(())
    })?;
    Ok(())
}

/// End every teammate, until a look at the team file finds no one new (a spawn that added
/// itself before the mark). Each one's start lock is taken and let go first, so a start that
/// began before the mark is finished and recorded (a later one finds the mark and refuses);
/// then all of them end together (`leader::end_members`: one grace, one walk of /proc).
/// Returns the team file as it was last read.
fn stop_everyone(store: &dyn Store) -> Result<crate::domain::TeamConfig> {
    let mut done: Vec<crate::domain::Name> = Vec::new();
    loop {
        let config = store.load()?;
        let todo: Vec<_> = config
            .teammates()
            .map(|m| m.name.clone())
            .filter(|n| !done.contains(n))
            .collect();
        if todo.is_empty() {
            return Ok(config);
        }
        for name in &todo {
            drop(leader::start_lock(store, name)?);
        }
        let config = store.load()?;
        let members: Vec<_> = todo
            .iter()
            .filter_map(|n| config.member(n.as_str()).cloned())
            .collect();
        leader::end_members(store, &members, "team deleted")?;
        done.extend(todo);
    }
}

/// Remove the team directory, again while files appear in it (a worker writing its last
/// state, a sender's append that passed before the mark): nothing makes the directory itself
/// again, so this ends. Gone already (another `delete`) is done.
/// Exit 0 only when nothing of the team runs: every teammate's pane or worker is gone.
fn verify_gone(config: &crate::domain::TeamConfig) -> Result<()> {
    let running: Vec<&str> = config
        .teammates()
        .filter(|m| {
            let backend = crate::backend::for_member(m);
            if backend.liveness(m, None) == crate::backend::Liveness::Gone {
                return false;
            }
            let _ = backend.terminate(m, None, crate::backend::GRACE);
            backend.liveness(m, None) == crate::backend::Liveness::Alive
        })
        .map(|m| m.name.as_str())
        .collect();
    if running.is_empty() {
        return Ok(());
    }
    Err(crate::Error::failed(format!(
        "the team directory is removed but {} still runs; `teamctl doctor --fix` ends it",
        running.join(", ")
    )))
}

/// `delete --force` of a team whose team file cannot be read: its process workers are found by
/// their tags (one inbox per member names them) and ended, then the team is removed.
fn delete_damaged(ctx: &Ctx, store: &dyn Store, why: &crate::Error) -> Result<()> {
    let team = store.team().clone();
    let mut ending = crate::backend::Ending::new(crate::backend::GRACE);
    for name in store.inboxes() {
        if !name.is_leader() {
            ending.tagged(&name.agent_id(&team));
        }
    }
    ending.finish()?;
    // As `delete_team`: under `create`'s lock.
    ctx.home.lock_create()?.destroy(store)?;
    crate::errln!(
        "teamctl: {why}\nteamctl: removed it anyway (--force); tmux panes it may have left are found by `teamctl doctor`"
    );
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "deleted": team.as_str() }));
    } else {
        crate::outln!("deleted team {team}");
    }
    Ok(())
}

/// The worktrees of the team that removing it may lose work in, each with what
/// (`worktree::unsaved`): the members' own (where teamctl makes them: git never runs in a path
/// the file alone names) and any other tree under its `worktrees/` (attacker QA 42: one that
/// belonged to no member was removed with its work, where `doctor` had said it keeps it).
/// What a refusal says of the worktrees `dirty` (each `PATH (what it has)`), `after` their
/// list: one to a line when there are more, then what to do, which fits every kind of work
/// (new-user QA 48: "commit it" was said of ignored files and of commits on no branch).
fn lost_in(dirty: &[String], after: &str) -> String {
    let list = match dirty {
        [one] => format!("work that may be lost in {one}{after}"),
        many => format!(
            "work that may be lost in {} worktrees{after}:\n  {}\n",
            many.len(),
            many.join("\n  ")
        ),
    };
    let sep = if dirty.len() == 1 { "; " } else { "" };
    format!("{list}{sep}save what is worth keeping there (the branches are kept)")
}

fn unsaved_trees(store: &dyn Store, config: &crate::domain::TeamConfig) -> Vec<String> {
    let local = store.local_dir();
    let mut trees: Vec<std::path::PathBuf> = config
        .teammates()
        .filter_map(|m| crate::worktree::recorded_here(m, &local))
        .filter(|w| w.exists())
        .collect();
    for t in crate::worktree::found(&local).trees {
        if !trees.contains(&t) {
            trees.push(t);
        }
    }
    trees
        .into_iter()
        .filter_map(|w| {
            Some(format!(
                "{} ({})",
                crate::output::printable_line(&w.display().to_string(), 1024),
                crate::worktree::unsaved(&w)?
            ))
        })
        .collect()
}
