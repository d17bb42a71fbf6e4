//! `teamctl shutdown NAME...|--all`: the handoff of SPEC section 7. The request id is recorded
//! with the member before the request is sent; the response is acted on by `leader::reconcile`
//! (here, while waiting, or by the next leader command with `--no-wait`). Ctrl-C (or SIGTERM)
//! while it waits ends the wait and says what stands (`signals`): the requests sent are still
//! awaited, and each teammate asked stops once it answers. A teammate's pane the user took
//! over (respawned with a program of theirs) is left open, and said so, as `kill` does.

use std::time::{Duration, Instant};

use crate::cli::ShutdownArgs;
use crate::context::Ctx;
use crate::domain::Name;
use crate::error::{Error, Result};
use crate::leader;
use crate::leader::handoff::{Outcome, handoff, names};
use crate::store::Store;

pub fn run(ctx: &Ctx, args: &ShutdownArgs) -> Result<()> {
    ctx.require_leader("shut teammates down")?;
    let store = ctx.store()?;
    let config = store.load()?;
    // `shutdown '*'`, `shutdown all`: the way to everyone is `--all`.
    let targets = if args.all {
        config.named_or_all(None)?
    } else {
        super::named::teammates(ctx, &config, &args.names, "shutdown", "shut down")?
    };
    ctx.reconcile(&*store)?;
    if targets.is_empty() && !ctx.json {
        // `--all` of a team with no teammates: nothing to do, said (it was silent).
        crate::outln!("{} has no teammates; nothing to shut down", config.name);
        return Ok(());
    }
    if args.force {
        // All of them at once: marked stopped in one write, their workers ended together (one
        // grace for all, one walk of /proc; member by member, 1,000 took five minutes).
        let (dead, ended): (Vec<bool>, Vec<leader::Ended>) =
            leader::end_now(&*store, &targets, "killed by shutdown --force")?
                .into_iter()
                .map(|(_, dead, ended)| (dead, ended))
                .unzip();
        let already: Vec<Name> = targets
            .iter()
            .zip(&ended)
            .filter(|(_, e)| e.before)
            .map(|(n, _)| n.clone())
            .collect();
        // One whose pane the user took over is said so, not "was not running".
        let was_dead: Vec<Name> = targets
            .iter()
            .zip(&dead)
            .zip(&ended)
            .filter(|((_, d), e)| **d && e.left_open.is_empty())
            .map(|((n, _), _)| n.clone())
            .collect();
        if !ctx.json {
            for (name, ended) in targets.iter().zip(&ended) {
                let open = match ended.left_open.as_slice() {
                    [] => String::new(),
                    panes => format!("; {}", leader::left_open_words(panes)),
                };
                if already.contains(name) {
                    crate::outln!("{name} was already stopped{open}");
                } else if was_dead.contains(name) {
                    crate::outln!("{name} was not running (dead); marked stopped");
                } else {
                    crate::outln!("{name} stopped (forced){open}");
                }
            }
        }
        let left_open: Vec<(Name, Vec<String>)> = targets
            .iter()
            .zip(ended)
            .filter(|(_, e)| !e.left_open.is_empty())
            .map(|(n, e)| (n.clone(), e.left_open))
            .collect();
        let forced = targets.clone();
        if args.all {
            // A send may have resumed one meanwhile: end those too, then look once more.
            let again = still_running(&*store)?;
            if !again.is_empty() {
                let config = store.load()?;
                let members = config.require_all(&again)?;
                leader::end_members(&*store, &members, "killed by shutdown --force")?;
            }
            refuse_running(&*store)?;
        }
        if ctx.json {
            ctx.print_json(
                &Outcome {
                    stopped: forced,
                    already,
                    was_dead,
                    left_open,
                    ..Outcome::default()
                }
                .to_json(),
            );
        }
        if args.remove_worktree {
            let kept = remove_worktrees(&*store, &targets, true)?;
            debug_assert!(kept.is_empty());
        }
        return Ok(());
    }
    if !args.no_wait {
        // From here a Ctrl-C ends the wait, and what stands is said (`interrupted`).
        crate::signals::catch()?;
    }
    let timeout = Duration::from_secs(args.timeout);
    let deadline = crate::domain::time::deadline_after(timeout);
    let mut outcome = handoff(
        &*store,
        &targets,
        args.reason.as_deref(),
        timeout,
        !args.no_wait,
    )?;
    // `--all` ends with every teammate stopped or says who is not: a message sent meanwhile
    // resumes its recipient (sends are not held back), so those are asked again until the
    // timeout.
    while args.all && !args.no_wait && outcome.refused.is_empty() && outcome.interrupted.is_none() {
        let again = still_running(&*store)?;
        if again.is_empty() {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !outcome.silent.is_empty() {
            // Only those started again: one that never answered is running because it was
            // never stopped, and is said once, as silent.
            outcome.running = again
                .into_iter()
                .filter(|n| !outcome.silent.contains(n))
                .collect();
            break;
        }
        crate::errln!(
            "teamctl: {} started again during the shutdown (a message resumed it); asking again",
            names(&again)
        );
        let more = handoff(&*store, &again, args.reason.as_deref(), left, true)?;
        for n in more.stopped {
            if !outcome.stopped.contains(&n) {
                outcome.stopped.push(n);
            }
        }
        outcome.refused.extend(more.refused);
        outcome.silent.extend(more.silent);
        outcome.died.extend(more.died);
        outcome.left_open.extend(more.left_open);
        outcome.held = more.held.or(outcome.held.take());
        outcome.interrupted = more.interrupted;
    }
    // Said in the order given (or the team's, with --all), not the order the answers came.
    outcome
        .stopped
        .sort_by_key(|n| targets.iter().position(|t| t == n));
    if ctx.json {
        ctx.print_json(&outcome.to_json());
    } else {
        for n in &outcome.stopped {
            let open = match outcome.left_open_of(n) {
                Some(panes) => format!("; {}", leader::left_open_words(panes)),
                None => String::new(),
            };
            if outcome.already.contains(n) {
                crate::outln!("{n} was already stopped{open}");
            } else if outcome.was_dead.contains(n) {
                crate::outln!("{n} was not running (dead); marked stopped");
            } else {
                crate::outln!("{n} stopped{open}");
            }
        }
        for n in &outcome.requested {
            crate::outln!("{n}: shutdown requested; the next teamctl command acts on the answer");
        }
    }
    let mut kept = None;
    if args.remove_worktree {
        // Asked and not stopped yet (`--no-wait`, no answer in time): their worktrees go once
        // they stop, whichever command takes in the answer (`leader::trees`; new-user QA 43:
        // the wish was forgotten). Not after Ctrl-C: an interrupted shutdown removes nothing.
        // One whose answer was taken in meanwhile (the console) has stopped: removed here.
        let awaited: Vec<Name> = targets
            .iter()
            .filter(|n| outcome.requested.contains(n) || outcome.silent.contains(n))
            .cloned()
            .collect();
        crate::pause::at("shutdown-wish");
        let (wished, since) = if outcome.interrupted.is_none() && crate::signals::caught().is_none()
        {
            leader::trees::wish(&*store, &awaited)?
        } else {
            (Vec::new(), Vec::new())
        };
        let stopped: Vec<Name> = outcome.stopped.iter().chain(&since).cloned().collect();
        let words = remove_worktrees(&*store, &stopped, false)?;
        if !words.is_empty() {
            kept = Some(kept_error(&words));
        }
        if !wished.is_empty() {
            let (goes, they) = match wished.len() {
                1 => ("its worktree goes", "it stops"),
                _ => ("their worktrees go", "they stop"),
            };
            crate::errln!(
                "teamctl: {}: {goes} once {they} (whichever teamctl command takes in the answer removes it, kept if it holds uncommitted work)",
                names(&wished)
            );
        }
        // Not stopped otherwise (a refusal, a death, an interrupted wait): their worktrees
        // stay, said (new-user QA 43: kept in silence).
        let running: Vec<&Name> = targets
            .iter()
            .filter(|n| !stopped.contains(n) && !wished.contains(n))
            .filter(|n| {
                config
                    .member(n.as_str())
                    .is_some_and(|m| m.worktree.is_some())
            })
            .collect();
        if !running.is_empty() {
            crate::errln!(
                "teamctl: {} did not stop, so {} kept; `teamctl doctor --fix` removes a stopped teammate's clean worktree later",
                running
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if running.len() == 1 {
                    "its worktree is"
                } else {
                    "their worktrees are"
                }
            );
        }
    }
    if let Some(signal) = outcome.interrupted {
        return beside(interrupted(signal, &targets, &outcome), kept);
    }
    // Caught after the handoff, before the removals (which it stopped, as said there).
    if args.remove_worktree
        && let Some(signal) = crate::signals::caught()
    {
        return beside(
            crate::signals::interrupted(
                signal,
                "the teammates asked stopped as said; worktrees not yet removed are kept",
            ),
            kept,
        );
    }
    match outcome.into_result(args.timeout) {
        Err(e) => beside(e, kept),
        Ok(()) => kept.map_or(Ok(()), Err),
    }
}

/// `e`, the error the shutdown ends with, and `kept`, the worktrees kept for their work
/// (`kept_error`), said on stderr beside it.
fn beside(e: Error, kept: Option<Error>) -> Result<()> {
    if let Some(k) = kept {
        crate::errln!("teamctl: {k}");
    }
    Err(e)
}

/// What a shutdown interrupted while it waited leaves (its stopped teammates were said on
/// stdout): each request sent stands, recorded as awaited, so whoever it was sent to stops
/// once it answers; who refused or died; who was not asked yet (of `all`, the targets).
fn interrupted(signal: nix::sys::signal::Signal, all: &[Name], outcome: &Outcome) -> Error {
    let mut what = Vec::new();
    if !outcome.silent.is_empty() {
        let one = outcome.silent.len() == 1;
        what.push(format!(
            "the shutdown request to {} was sent and stands: {} once it answers (a turn in progress finishes first; `teamctl status` shows {} shutdown_pending); {}",
            names(&outcome.silent),
            if one { "it stops" } else { "each stops" },
            if one { "it" } else { "them" },
            crate::leader::handoff::force_hint(&outcome.silent)
        ));
    }
    for (name, why) in &outcome.refused {
        what.push(format!("{name} refused to shut down: {why}"));
    }
    for (name, _) in &outcome.died {
        what.push(format!(
            "{name} died before it answered (`teamctl resume {name}` starts it again)"
        ));
    }
    let not_asked: Vec<Name> = all.iter().filter(|n| !outcome.asked(n)).cloned().collect();
    if !not_asked.is_empty() {
        what.push(format!(
            "{} not asked (running as before)",
            names(&not_asked)
        ));
    }
    if what.is_empty() {
        what.push("every teammate asked had stopped".to_string());
    }
    crate::signals::interrupted(signal, what.join("; "))
}

/// Teammates whose worker runs now (a send resumed them during a shutdown).
fn still_running(store: &dyn Store) -> Result<Vec<Name>> {
    let config = store.load()?;
    let seen = crate::backend::Snapshot::of(config.teammates());
    Ok(config
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
        .map(|m| m.name.clone())
        .collect())
}

/// The error for teammates still running at the end of `shutdown --all`.
fn refuse_running(store: &dyn Store) -> Result<()> {
    let running = still_running(store)?;
    if running.is_empty() {
        return Ok(());
    }
    Err(Error::failed(format!(
        "{} still running at the end (a message resumed it during the shutdown); run `teamctl shutdown --all` again",
        names(&running)
    )))
}

/// `--remove-worktree`: remove the worktrees of teammates that stopped, each while it is
/// still down (`leader::trees::remove_if_down`): a message that resumed it since its shutdown
/// leaves its worktree in place. One with uncommitted work (or files git cannot check) is kept
/// unless `force`, as `delete` keeps it (new-user QA 43: it was discarded, said only after);
/// returns what was kept so, in words.
fn remove_worktrees(store: &dyn Store, names: &[Name], force: bool) -> Result<Vec<(Name, String)>> {
    crate::pause::at("shutdown-remove-worktrees");
    let mut kept = Vec::new();
    for name in names {
        // Ctrl-C (or SIGTERM) caught while this shutdown waited: nothing more is removed
        // (attacker re-check 43: a removal went ahead after the user's interrupt).
        if let Some(signal) = crate::signals::caught() {
            crate::errln!(
                "teamctl: {signal}: {name}'s worktree (and any after it) is kept; `teamctl shutdown {name} --remove-worktree` removes it"
            );
            break;
        }
        let removed = leader::trees::remove_if_down(store, name, force)?;
        match removed {
            Ok(leader::trees::Removal::Removed(removed, dirty)) => {
                crate::outln!("removed {name}'s {removed}");
                if let Some(what) = dirty {
                    crate::errln!(
                        "teamctl: {name}'s worktree had {}, now discarded; its branch keeps what was committed",
                        crate::output::printable_line(&what, 1024)
                    );
                }
            }
            Ok(leader::trees::Removal::Kept(words)) => kept.push((name.clone(), words)),
            Ok(leader::trees::Removal::Nothing) => {}
            Err(up) => crate::errln!(
                "teamctl: {name} {up} again (a message resumed it?); its worktree is kept"
            ),
        }
    }
    Ok(kept)
}

/// The refusal for worktrees kept for their work (`remove_worktrees`), with the way on.
fn kept_error(kept: &[(Name, String)]) -> Error {
    let (names, words): (Vec<&str>, Vec<&str>) =
        kept.iter().map(|(n, w)| (n.as_str(), w.as_str())).unzip();
    Error::failed(format!(
        "{}: save what is worth keeping there; `teamctl shutdown {} --remove-worktree --force` discards it",
        words.join("; "),
        names.join(" ")
    ))
}
