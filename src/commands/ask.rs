//! `teamctl ask NAME TEXT`: send, then wait (woken by inbox events) for the reply to that
//! message id and print it.

use std::time::{Duration, Instant};

use crate::bus;
use crate::cli::AskArgs;
use crate::context::Ctx;
use crate::domain::{Body, Envelope, Name};
use crate::error::{Error, Result};
use crate::leader;
use crate::store::{Item, SyncBell, Topic};

pub fn run(ctx: &Ctx, mut args: AskArgs) -> Result<()> {
    let me = ctx.me()?;
    if let Some((member, team)) = args.name.split_once('@') {
        // A teammate's own agent id (`ask bob@T` in team T) is that teammate (new-user QA:
        // it was sent to `send`, as if T were another team).
        let here = ctx.store().and_then(|s| s.load()).map(|c| c.name);
        if here.is_ok_and(|t| t.as_str() == team) && !member.is_empty() {
            args.name = member.to_string();
        } else {
            return Err(Error::bad(format!(
                "ask waits for a member of this team; to write to another team's member, use `teamctl send {}`",
                args.name
            )));
        }
    }
    if args.name == "*" {
        return Err(Error::bad(
            "ask takes one teammate and waits for its reply; to write to everyone, use `teamctl send '*' TEXT`",
        ));
    }
    // `ask "hello there" bob` (the question typed first) gets the way round added.
    let target = Name::parse_as(&args.name, "member").map_err(|e| {
        match (&args.text, ctx.store().and_then(|s| s.load())) {
            (Some(t), Ok(config)) if t.len() <= 256 => {
                super::mistaken::in_ask(&args.name, Some(t), &config, e)
            }
            _ => e,
        }
    })?;
    if target == me {
        return Err(Error::bad(format!(
            "{me} cannot ask itself: no worker of yours would answer; ask a teammate"
        )));
    }
    let text = match args.text {
        Some(t) => t,
        None => super::send::read_stdin()?,
    };
    let store = ctx.store()?;
    let config = store.load()?;
    // `ask hello bob` (the name typed last) gets the way round added.
    config.require(target.as_str()).map_err(|e| {
        let short = Some(text.as_str()).filter(|t| t.len() <= 256);
        super::mistaken::in_ask(&args.name, short, &config, e)
    })?;
    let mut env = Envelope::new(me.as_str(), target.as_str(), Body::message(text, None));
    env.hops = ctx.hops();
    bus::recipients(&config, &env)?;
    let bell = SyncBell::default();
    // Watch our inbox before sending: the reply cannot slip past. Live states too: a turn
    // that ends without output sends nothing, and its worker going idle says so.
    let _sub = store.subscribe_brief(&[Topic::Inbox(me.clone()), Topic::Live], bell.bell())?;
    let mut pos = store.inbox_end(&me)?;
    let theirs = store.inbox_end(&target)?;
    // Ctrl-C (or SIGTERM) while waiting says where the question and its answer are, exit 130.
    crate::signals::catch()?;
    let _ringing = crate::signals::ring_on(&bell.bell());
    if let Some(signal) = crate::signals::caught() {
        return Err(crate::signals::interrupted(signal, "nothing was sent"));
    }
    // Who runs is looked at just before delivering: found dead after it, the teammate may
    // have died in its turn on the question, and is not started again (`leader::Before`):
    // the wait below then says how it ended.
    let before = crate::leader::Before::look(&*store, std::slice::from_ref(&target), &env.id)?;
    bus::deliver(&*store, &config, &env)?;
    let handled_at = crate::store::end_of(&*store, &target, theirs, &env.id)?;
    ctx.reconcile(&*store)?;
    crate::pause::at("ask-wake");
    let crate::leader::Woken {
        resumed,
        waiting,
        held,
        paused,
        ..
    } = crate::leader::wake(
        &ctx.home,
        &ctx.me()?,
        &*store,
        std::slice::from_ref(&target),
        Some(&before),
    )?;
    crate::leader::say_resumed(&resumed);
    // Stopped by a signal: the wait goes on (someone may continue it), said once.
    for (n, pid) in &paused {
        crate::errln!(
            "teamctl: {}",
            crate::leader::paused_words(n, *pid, &format!("the question ({})", env.id))
        );
    }
    // Dead in its turn on an earlier message: not started to run that turn again, so
    // nobody answers before the user resumes it (QA 39).
    if let Some((_, why)) = held.into_iter().next() {
        return Err(Error::failed(format!(
            "the question ({}) was delivered and waits in its inbox, but {why}",
            env.id
        )));
    }
    // Nobody will answer before it is resumed: said now, as `send` says it (new-user QA: "bob
    // stopped without answering", as if it had been running).
    if waiting.contains(&target) {
        return Err(Error::failed(crate::leader::left_waiting(
            Some(&config),
            &target,
            &format!("the question ({})", env.id),
        )));
    }
    let deadline = crate::domain::time::deadline_after(Duration::from_secs(args.timeout));
    // Set once the teammate is seen stopped: one more look for a reply written just before.
    let mut last_look = false;
    let mut handled = false;
    let mut rewoken = false;
    // How the teammate was seen to end without answering: its status then, and whether it
    // was in its turn on the question.
    let mut ended: Option<(crate::domain::Status, bool)> = None;
    // What the teammate waits on the user for (an interactive agent's dialog, its mail that
    // cannot go in), last said on stderr.
    let mut said: Option<String> = None;
    loop {
        // Our inbox emptied (truncated) or replaced by a shorter one while we wait: read it
        // again from its start, as a reader's cursor past the end of its log does
        // (`store/inbox.rs`). Only the teammate's answer to this message is taken, so a
        // message read again is never mistaken for it; otherwise the answer, written into
        // the new log before our old place, went unseen ("ended without output").
        // (Asked only when nothing new was read: the usual wake-up costs nothing more.)
        let mut batch = store.read(&me, pos, 256)?;
        if batch.is_empty() && store.inbox_end(&me)? < pos {
            pos = crate::store::Position::START;
            batch = store.read(&me, pos, 256)?;
        }
        for e in batch {
            let start = pos;
            pos = e.end;
            // Only the teammate asked can answer: anyone may write `inReplyTo` in a message.
            if let Item::Message(reply) = e.item
                && reply.from == target.as_str()
                && let Body::Message {
                    text,
                    in_reply_to: Some(id),
                    ..
                } = &reply.body
                && *id == env.id
            {
                let shown = print_reply(ctx, &target, &reply, text, args.raw);
                crate::out::finish()?;
                mark_read(&*store, &me, start, pos)?;
                return shown;
            }
        }
        if last_look && handled {
            // Handled, and nothing came back: the turn printed nothing (a failed turn sends
            // its failure notice, which `print_reply` makes an error). What it wrote on stderr
            // is in its log, which the leader has not read: said where (new-user QA 46: `echo
            // oops >&2` gave only "ended without output").
            // An interactive teammate's output is its pane (new-user QA 47: the log pointed
            // to holds only "pasted into %9").
            let interactive = config
                .member(target.as_str())
                .is_some_and(|m| m.interactive.is_some());
            if interactive {
                crate::errln!(
                    "teamctl: {target}'s turn for the message ended without output; its pane shows what it did (`teamctl attach {target}`)"
                );
            } else {
                crate::errln!(
                    "teamctl: {target}'s turn for the message ended without output on stdout; anything it wrote to stderr is in `teamctl log --worker {target}`"
                );
            }
            if ctx.json {
                ctx.print_json(&serde_json::Value::Null);
            }
            return Ok(());
        }
        if last_look {
            // A member of another host is resumed there (or moved here with `--here`).
            let whom = match store
                .load()
                .ok()
                .and_then(|c| c.member(target.as_str()).cloned())
                .and_then(|m| crate::backend::host::elsewhere(&m).cloned())
            {
                Some(host) => format!(
                    "it was started on {host}: `teamctl resume {target}` there handles it, or `teamctl resume {target} --here` on this host"
                ),
                None => format!("`teamctl resume {target}` handles it"),
            };
            let (how, skip) = match ended {
                // A resume runs that turn again: the way past it too (new-user QA 40).
                Some((crate::domain::Status::Dead, true)) => (
                    "died in its turn on the question",
                    format!(
                        " (and runs that turn again; `teamctl resume {target} --skip-turn` skips it)"
                    ),
                ),
                Some((crate::domain::Status::Dead, false)) => {
                    ("died without answering", String::new())
                }
                _ => ("stopped without answering", String::new()),
            };
            return Err(Error::failed(format!(
                "{target} {how}; the message ({}) stays in its inbox: {whom}{skip}",
                env.id
            )));
        }
        if Instant::now() >= deadline {
            let waits = said.map(|w| format!("; {w}")).unwrap_or_default();
            let state = match where_it_is(&*store, &target, &env.id) {
                Where::Answering => format!(": {target} is answering it now"),
                _ => String::new(),
            };
            // Still stopped by a signal: said again, with the way on (new-user QA 42: only
            // the first line said it).
            let paused = store
                .load()
                .ok()
                .and_then(|c| {
                    let live = store.live(&target).ok().flatten();
                    let m = c.member(target.as_str())?;
                    match crate::leader::paused_worker(m, live.as_ref()) {
                        Some(pid) => Some(format!("; its worker (pid {pid}) is stopped by a signal (SIGSTOP?): it answers once `kill -CONT {pid}`")),
                        None => crate::leader::paused_turn(m, live.as_ref(), &crate::leader::StoppedGroups::default()).map(|p| {
                            format!("; {}", crate::leader::paused_turn_words(&target, p))
                        }),
                    }
                })
                .unwrap_or_default();
            let waits = format!("{waits}{paused}");
            return Err(Error::failed(format!(
                "no reply from {target} within {} s{waits}; the message ({}) stays in its inbox{state}: check `teamctl status`",
                args.timeout, env.id
            )));
        }
        // Nobody will answer a teammate that stopped or died, or a team that was deleted:
        // say so now rather than at the timeout.
        // The worker moves its cursor past a message once it is handled, answer sent: past
        // ours with no answer read, one more look, then there is none to wait for.
        if let Some(end) = handled_at
            && store.cursor(&target, crate::worker::READER)? >= end
        {
            handled = true;
            last_look = true;
            continue;
        }
        if !store.exists() {
            return Err(Error::failed(format!(
                "team {} was deleted while waiting for {target}'s reply",
                store.team()
            )));
        }
        // An interactive teammate's pane dies with its program while its worker (the
        // companion) is still answering the message that ended it: its answer is waited for
        // (new-user QA: "stopped without answering", the answer written a moment later).
        let live = store.live(&target)?;
        if let Some(words) = live
            .as_ref()
            .and_then(|l| leader::waits_on_user(&target, l))
            && said.as_ref() != Some(&words)
        {
            crate::errln!("teamctl: {words}; still waiting for its reply");
            said = Some(words);
        }
        if let Ok(config) = store.load()
            && let Some(m) = config.member(target.as_str())
            && let now = leader::effective_status(m, live.as_ref())
            && !now.is_running()
            && !m
                .pid
                .is_some_and(|p| crate::backend::proc::is_worker(p, &m.agent_id))
        {
            // Dead before it took the question (asked while its worker was ending: its
            // program ended on the message before, say), it is started again once to answer,
            // as it would have been had it not been running when asked. Not one stopped
            // meanwhile (`kill`): that is the user's. Nor one that may have died in its turn
            // on the question: started again, it would run the turn that ended it once more,
            // side effects and all (new-user QA 38: the question ran twice). A turn is
            // recorded once its agent runs, so one that ended its worker at once leaves no
            // record (re-QA 38): what says the question was not taken is a record of another
            // message's turn, or the reason a worker wrote as it ended itself (a worker in a
            // turn on the question is killed by it, and writes none).
            let in_its_turn = live
                .as_ref()
                .and_then(|l| l.current_turn.as_ref())
                .is_some_and(|t| t.message_id == env.id);
            let not_taken = live.as_ref().is_some_and(|l| l.not_taken(&env.id));
            if now == crate::domain::Status::Dead && !rewoken && not_taken {
                rewoken = true;
                let woken = crate::leader::wake(
                    &ctx.home,
                    &me,
                    &*store,
                    std::slice::from_ref(&target),
                    None,
                )?;
                if woken.resumed.contains(&target) {
                    crate::errln!(
                        "teamctl: {target} died before it read the question; resumed it to answer"
                    );
                }
                continue;
            }
            ended = Some((now, in_its_turn));
            last_look = true;
            continue;
        }
        if let Some(signal) = crate::signals::caught() {
            return Err(interrupted(&*store, &me, &target, &env.id, signal));
        }
        bell.wait_until(deadline.min(Instant::now() + Duration::from_secs(1)));
    }
}

/// An `ask` interrupted while it waits: the question stays in `target`'s inbox (a worker moves
/// its cursor past a message only once it is handled and answered), and the answer goes to
/// the asker's inbox, as any reply does.
fn interrupted(
    store: &dyn crate::store::Store,
    me: &Name,
    target: &Name,
    id: &str,
    signal: nix::sys::signal::Signal,
) -> Error {
    let state = match where_it_is(store, target, id) {
        Where::Answering => format!("{target} is answering it now"),
        Where::NotRunning => {
            format!("{target} is not running: answered once `teamctl resume {target}` starts it")
        }
        Where::Queued => format!("{target} answers it in turn"),
    };
    let shown = if me.is_leader() {
        ": `teamctl inbox` shows it".to_string()
    } else {
        format!(", where {me}'s worker takes it as a message")
    };
    crate::signals::interrupted(
        signal,
        format!(
            "the question ({id}) stays in {target}'s inbox ({state}); the answer goes to {me}'s inbox{shown}"
        ),
    )
}

/// Where a question not answered yet is: in the turn `target` runs, waiting for a teammate
/// that is not running, or in its queue.
enum Where {
    Answering,
    NotRunning,
    Queued,
}

fn where_it_is(store: &dyn crate::store::Store, target: &Name, id: &str) -> Where {
    let config = store.load().ok();
    let member = config.as_ref().and_then(|c| c.member(target.as_str()));
    let live = store.live(target).ok().flatten();
    match member {
        _ if live
            .as_ref()
            .and_then(|l| l.current_turn.as_ref())
            .is_some_and(|t| t.message_id == id) =>
        {
            Where::Answering
        }
        Some(m) if !leader::effective_status(m, live.as_ref()).is_running() => Where::NotRunning,
        _ => Where::Queued,
    }
}

/// Once the reply (at `from..to` in the leader's inbox) was shown, the leader's `inbox`
/// cursor goes past it, when no unread message lies before it (new-user QA 43: a reply `ask`
/// printed stayed unread in `inbox` and `status`). The cursor is one place: mail come before
/// the reply keeps it unread, and so the reply too; idle notifications before it are passed,
/// as the default `inbox` view passes them. A teammate's inbox is its worker's, which
/// takes the reply as a message, as `ask` says when interrupted.
fn mark_read(
    store: &dyn crate::store::Store,
    me: &Name,
    from: crate::store::Position,
    to: crate::store::Position,
) -> Result<()> {
    let reader = super::inbox::READER;
    if !me.is_leader() {
        return Ok(());
    }
    let cursor = store.cursor(me, reader)?;
    if cursor >= to || cursor > from {
        return Ok(());
    }
    for e in crate::store::entries(store, me, cursor) {
        let e = e?;
        if e.end > from {
            break;
        }
        // Idle notifications are state, not mail: `inbox` passes the cursor over them too
        // (new-user QA 44: the one the last `ask` left kept every later reply unread).
        if matches!(&e.item, Item::Message(m) if m.body.kind() != super::inbox::IDLE) {
            return Ok(());
        }
    }
    store.set_cursor(me, reader, to)
}

/// The reply on stdout, or the worker's failure notice as an error (exit 1).
/// `raw`: the text as the teammate wrote it; else through `output::printable`.
fn print_reply(ctx: &Ctx, target: &Name, reply: &Envelope, text: &str, raw: bool) -> Result<()> {
    if ctx.json {
        ctx.print_json(&serde_json::to_value(reply).unwrap_or_default());
    }
    if crate::worker::is_failure_notice(target.as_str(), text) {
        // No answer, a failure: a script must not take the notice for the reply.
        return Err(Error::failed(
            text.trim_end().trim_start_matches("teamctl: "),
        ));
    }
    if !ctx.json {
        let shown = if raw {
            std::borrow::Cow::Borrowed(text)
        } else {
            std::borrow::Cow::Owned(crate::output::printable(text))
        };
        crate::out!("{shown}");
        if !text.ends_with('\n') {
            crate::outln!();
        }
    }
    Ok(())
}
