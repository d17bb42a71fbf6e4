//! `teamctl resume [NAME...]`: respawn stopped or dead teammates with the same identity, backend,
//! command and cursor; their unread mail is then handled. With no name, members started on
//! another host are skipped (named, with where they run): that host resumes them.

use crate::cli::ResumeArgs;
use crate::context::Ctx;
use crate::domain::{LEADER, Name};
use crate::error::{Error, Result};
use crate::leader;

pub fn run(ctx: &Ctx, args: &ResumeArgs) -> Result<()> {
    ctx.require_leader("resume teammates")?;
    for name in &args.names {
        not_a_teammate(ctx, name, args.skip_turn)?;
    }
    let store = ctx.store()?;
    let config = store.load()?;
    // A name that only looks like the leader's (`Team-Lead`, `team_lead`) is nobody's: no
    // teammate may look like a member (`spawn`), and the leader is always one.
    for name in args.names.iter().filter_map(|n| Name::parse(n).ok()) {
        if config.member(name.as_str()).is_none() && name.looks_like(&Name::leader()) {
            return Err(leader_error(name.as_str()));
        }
    }
    // Every name checked before any is resumed (one that is no teammate resumes none), each
    // once, in the order given (new-user QA: after `kill a b`, `resume a b` was refused).
    let named = !args.names.is_empty();
    let names = if named {
        let mut names: Vec<Name> = Vec::new();
        // Each name that is no member is said in the one refusal (new-user QA 41: only the
        // first was).
        let mut unknown: Vec<&str> = Vec::new();
        // Each taken once, looked up in a set (a list's `contains` was quadratic).
        let mut seen = std::collections::HashSet::new();
        for given in &args.names {
            let name = Name::teammate(given).map_err(|e| {
                match (e, super::mistaken::listed("resume", given)) {
                    (Error::BadInput(msg), Some(hint)) => Error::BadInput(format!("{msg}; {hint}")),
                    (e, _) => e,
                }
            })?;
            if !seen.insert(name.clone()) {
                continue;
            }
            if config.member(name.as_str()).is_none() {
                unknown.push(given);
            } else {
                names.push(name);
            }
        }
        if !unknown.is_empty() {
            return Err(config.unknown_all(&unknown));
        }
        names
    } else {
        config.named_or_all(None)?
    };
    // A turn to skip for every name, or nothing changes (and nobody is resumed): the refusal
    // says each name's problem, and that the others were left as they are (QA 40: `resume a
    // b --skip-turn` named b's problem alone, as if a had been started past its turn).
    if args.skip_turn {
        refuse_unless_every_turn_skips(&*store, &names)?;
    }
    ctx.reconcile(&*store)?;
    let mut skipped_turns = Vec::new();
    let mut rerun: Vec<(String, String)> = Vec::new();
    let mut resumed = Vec::new();
    let mut running = Vec::new();
    let mut skipped = Vec::new();
    let mut failed = Vec::new();
    // One look at every teammate's pane or process (one tmux process per server); the one
    // found down is checked again under its start lock by `resume_if_down`.
    let seen = {
        let config = store.load()?;
        crate::backend::Snapshot::of(names.iter().filter_map(|n| config.member(n.as_str())))
    };
    for name in names {
        let member = store.load()?.require(name.as_str())?.clone();
        let live = store.live(&name)?;
        let status = leader::effective_status_with(&*store, &member, live.as_ref(), &seen);
        // Ctrl-C in its pane during a turn: running, but it ends after the turn, and a
        // resume is what brings it back then (it said "already running": new-user QA).
        if status.is_running()
            && let Some(why) = live
                .as_ref()
                .filter(|l| member.pid.is_none_or(|p| p == l.pid))
                .and_then(|l| l.stopping.as_deref())
        {
            failed.push((name.to_string(), stopping_error(&name, why)));
            continue;
        }
        // One recorded but never placed is checked again under its start lock.
        if status.is_running() && !leader::cut_short(&member, status) {
            // Running in a pane nobody recorded (its start cut short): recorded now.
            let recorded = if member.pane_id.is_none() && member.pid.is_none() {
                leader::record_unrecorded(&*store, &name)?
            } else {
                None
            };
            if named && !ctx.json {
                match recorded {
                    Some(pane) => crate::outln!(
                        "{name} is already running ({status}) in pane {pane}, which the start that made it did not get to record: recorded now"
                    ),
                    None => crate::outln!("{name} is already running ({status})"),
                }
                // Its worktree removed under it: said, as `status` says it (new-user QA 44).
                if let Some(path) = crate::worktree::gone(&member, &store.local_dir()) {
                    crate::errln!(
                        "teamctl: {}",
                        crate::view::status::worktree_gone_note(
                            name.as_str(),
                            &path.display().to_string()
                        )
                    );
                }
            }
            running.push(name.to_string());
            continue;
        }
        // With no name, a member of another host is left to that host (or to `--here`
        // with its name): this host's members are still resumed.
        if !named && let Some(host) = crate::backend::host::elsewhere(&member) {
            skipped.push((name.to_string(), host.to_string()));
            continue;
        }
        // With no name, one dead in its turn on a message still unhandled runs that turn
        // again: said, with the way past it should that turn be what kills it (new-user QA
        // 40: it was resumed, and died again at once on the same message, nothing said). It
        // is still resumed: most such deaths are not the turn's (a tmux server killed, a
        // reboot), and `resume` is how a whole team comes back.
        if !named
            && let Some(turn) =
                leader::died_in_unhandled_turn(&*store, &name, live.as_ref(), status)?
        {
            rerun.push((name.to_string(), turn.message_id.clone()));
            if !ctx.json {
                crate::errln!(
                    "teamctl: {name} died in its turn on a message still unhandled ({}): resumed, it runs that turn again; if that turn is what kills it, `teamctl resume {name} --skip-turn` (once it is dead again) starts it past it (`teamctl log --worker {name}` shows that turn)",
                    crate::output::turn_words(turn)
                );
            }
        }
        if args.skip_turn {
            match leader::skip_turn(&*store, &name) {
                Ok(skipped) => skipped_turns.push(skipped),
                Err(e) => {
                    failed.push((name.to_string(), leader::failure_of_one(e)?));
                    continue;
                }
            }
        }
        // Another command may have started it meanwhile: then it is running, not resumed.
        let started = match leader::resume_if_down(&ctx.home, &*store, &name, args.here) {
            Ok(started) => started,
            Err(e) => {
                failed.push((name.to_string(), leader::failure_of_one(e)?));
                continue;
            }
        };
        let Some(m) = started else {
            // Said as for one found running (new-user QA: the slower of two resumes of a
            // teammate said nothing at all).
            if named && !ctx.json {
                crate::outln!("{name} is already running (started meanwhile by another command)");
            }
            running.push(name.to_string());
            continue;
        };
        resumed.push(m);
    }
    // Said only once each worker has written its first live state (or exited: then why,
    // and the exit is 1), all waited for together.
    let started = leader::started(&*store, &resumed);
    let resumed: Vec<_> = resumed
        .into_iter()
        .zip(started)
        .filter_map(|(m, r)| match r {
            Ok(()) => Some(m),
            Err(e) => {
                failed.push((m.name.to_string(), e.to_string()));
                None
            }
        })
        .collect();
    if !ctx.json {
        for s in &skipped_turns {
            say_skipped(s);
        }
        for m in &resumed {
            crate::outln!("{} resumed ({})", m.name, m.placed_at());
        }
    }
    if ctx.json {
        let skipped: Vec<_> = skipped
            .iter()
            .map(|(n, h)| serde_json::json!({ "name": n, "host": h }))
            .collect();
        // Who did not start, and why (new-user QA: `--json` had no place for it).
        let failed: Vec<_> = failed
            .iter()
            .map(|(n, why)| serde_json::json!({ "name": n, "error": why }))
            .collect();
        let resumed: Vec<_> = resumed
            .iter()
            .map(|m| super::spawn::shown_started(&*store, m))
            .collect();
        let skipped_turns: Vec<_> = skipped_turns
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name,
                    "message": s.id,
                    "from": s.from,
                    "told": s.told,
                    "untold": s.untold,
                    "task": s.task,
                })
            })
            .collect();
        ctx.print_json(&serde_json::json!({
            "resumed": resumed,
            "running": running,
            "skipped": skipped,
            "skippedTurns": skipped_turns,
            "rerun": rerun
                .iter()
                .map(|(n, id)| serde_json::json!({ "name": n, "message": id }))
                .collect::<Vec<_>>(),
            "failed": failed,
        }));
    } else {
        for (name, host) in &skipped {
            crate::errln!(
                "teamctl: skipped {name}: it was started on {host}; resume it there, or here with `teamctl resume {name} --here`"
            );
        }
        if !named && resumed.is_empty() && skipped.is_empty() && failed.is_empty() {
            crate::errln!("teamctl: nothing to resume: no teammate is stopped or dead");
        }
    }
    // One reason a line, each in full (new-user QA: three teammates' reasons on one line,
    // joined by "; ", were hard to tell apart), then who did not start.
    // One of several named alone says who too (re-QA: `resume a b c` said only the reason).
    let others = !resumed.is_empty() || !running.is_empty() || !skipped.is_empty();
    match failed.as_slice() {
        [] => Ok(()),
        [(_, one)] if !others => Err(Error::failed(one.clone())),
        all => {
            for (_, why) in all {
                crate::errln!("{}", crate::output::printable(&format!("teamctl: {why}")));
            }
            let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
            Err(Error::failed(match names.as_slice() {
                [one] => format!("{one} did not start (why above)"),
                many => format!(
                    "{} teammates did not start (why above): {}",
                    many.len(),
                    many.join(", ")
                ),
            }))
        }
    }
}

/// `Ok` when every one of `names` has a turn to skip (`leader::check_skip`); else one error
/// with every problem, each on its line, and the names that had one, left as they are.
fn refuse_unless_every_turn_skips(store: &dyn crate::store::Store, names: &[Name]) -> Result<()> {
    let mut problems = Vec::new();
    let mut fine = Vec::new();
    for name in names {
        match leader::check_skip(store, name) {
            Ok(()) => fine.push(name.as_str()),
            Err(e) => problems.push(e),
        }
    }
    let Some(first) = problems.first() else {
        return Ok(());
    };
    let mut lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    if !fine.is_empty() {
        let (left, whose) = if fine.len() == 1 {
            ("was left as it is, its turn", "it")
        } else {
            ("were left as they are, their turns", "them")
        };
        lines.push(format!(
            "nothing changed: {} {left} not skipped (`teamctl resume {} --skip-turn` skips {whose} alone)",
            fine.join(", "),
            fine.join(" ")
        ));
    }
    let text = lines.join("\nteamctl: ");
    Err(match first {
        Error::BadInput(_) => Error::bad(text),
        _ => Error::failed(text),
    })
}

/// What `resume --skip-turn` skipped, one line a teammate.
fn say_skipped(s: &leader::Skipped) {
    // Its id, sender and summary as read from the inbox: control characters escaped.
    let from = crate::output::printable(&s.from);
    let what = if s.summary.is_empty() {
        String::new()
    } else {
        format!(" (\"{}\")", crate::output::printable(&s.summary))
    };
    let told = match (&s.untold, s.told) {
        (Some(why), _) => format!(
            "; {from} could not be told it will not run ({})",
            crate::output::printable(why)
        ),
        (None, true) => format!("; {from} was told it will not run"),
        (None, false) => String::new(),
    };
    let task = s
        .task
        .map(|t| format!("; task #{t} failed"))
        .unwrap_or_default();
    crate::outln!(
        "{}: skipped the message of the turn it ended in, {} from {from}{what}{told}{task}",
        s.name,
        crate::output::printable(&s.id),
    );
}

/// A teammate stopping after its turn (`why`: Ctrl-C in its pane) is not resumed: it is
/// still running, and stops once the turn is done.
fn stopping_error(name: &Name, why: &str) -> String {
    format!(
        "{name} is stopping after its current turn ({}): it is not resumed now; `teamctl resume {name}` once it has stopped (`teamctl status` shows it `stopped`), or `teamctl interrupt {name}` to end the turn now",
        crate::output::printable(why)
    )
}

/// Refuse, in `resume`'s own words, a name that can name no teammate to resume: the leader's
/// (or the leader's agent id), `*`, an agent id. Other names are checked against the team (`named_or_all`).
fn not_a_teammate(ctx: &Ctx, name: &str, skip_turn: bool) -> Result<()> {
    if name == LEADER {
        return Err(leader_error(name));
    }
    if name == "*" {
        // `--skip-turn` takes names: with none it is refused (new-user QA 40: this pointed there).
        let how = if skip_turn {
            "`--skip-turn` takes the names of the teammates to start past their turn (`teamctl status` shows each one's turn)"
        } else {
            "`teamctl resume` with no name resumes every teammate that is stopped or dead"
        };
        return Err(Error::bad(format!("\"*\" is not a teammate: {how}")));
    }
    if let Some((member, team)) = name.split_once('@')
        && let Ok(member) = Name::parse(member)
        && Name::parse(team).is_ok()
        // The leader's id (`team-lead@t1`, or a spelling of it: no teammate may look like
        // the leader, `spawn`) gets the leader's words at once, not a suggestion that would
        // then be refused with them.
        && member.looks_like(&Name::leader())
    {
        return Err(leader_error(name));
    }
    match super::mistaken::agent_id(ctx, "resume", name) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The leader is not a process teamctl runs, so there is nothing of it to resume. `name`: the
/// leader's, or one that looks like it.
fn leader_error(name: &str) -> Error {
    let nobody = if name == LEADER {
        String::new()
    } else {
        format!("{name:?} is no teammate; ")
    };
    Error::bad(format!(
        "{nobody}{LEADER:?} is the leader, you, not a teammate to resume: teamctl runs no process for the leader (your own shell leads, or `teamctl lead` for the console); `teamctl resume NAME` resumes a teammate, `teamctl resume` every one that is stopped or dead"
    ))
}
