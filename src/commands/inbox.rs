//! `teamctl inbox [NAME]`: unread messages (the caller's by default), then marked read.
//! Unread is what `status` counts (`leader::unread_start`), in every view. The leader's own
//! inbox is read through an `inbox` cursor that its default view moves to the end. A
//! teammate's inbox is read by its worker: unread there is what the worker has not delivered
//! (past its cursor, less control requests it answered and the message its running turn
//! handles), and no view marks anything read, since moving the worker's cursor would make it
//! skip mail. Idle notifications are state, not mail: the default view leaves them out (and
//! passes the leader's cursor over them: they are in the log, `status` and `wait` show them);
//! `--type TYPE` shows one type without marking anything read; `--all` shows every message,
//! read or not, idle notifications too. `--peek` changes nothing, not even the leader's
//! bookkeeping (`reconcile`).

use crate::cli::InboxArgs;
use crate::context::Ctx;
use crate::domain::Name;
use crate::error::{Error, Result};
use crate::store::Item;
use crate::store::Position;

pub const READER: &str = "inbox";

/// The type the default view leaves out.
pub const IDLE: &str = "idle_notification";

pub fn run(ctx: &Ctx, args: &InboxArgs) -> Result<()> {
    let me = ctx.me()?;
    if let Some(k) = &args.kind
        && !crate::commands::log::KINDS.contains(&k.as_str())
    {
        return Err(Error::bad(format!(
            "unknown message type {k:?}; use one of {}",
            crate::commands::log::KINDS.join(", ")
        )));
    }
    let who = match &args.name {
        Some(n) => Name::parse_as(n, "member")?,
        None => me.clone(),
    };
    // Marking the leader's mail read is acting as the leader: a teammate may only look. (A
    // teammate's inbox has nothing of `inbox`'s to mark: its worker's cursor says what is read.)
    if who != me && who.is_leader() && !me.is_leader() && !args.peek {
        return Err(Error::bad(format!(
            "{me} cannot mark {who}'s mail read; look without marking with `teamctl inbox {who} --peek`"
        )));
    }
    let store = ctx.store()?;
    let config = store.load()?;
    let member = config.require(who.as_str())?;
    // A look moves nothing: reconcile would act on shutdown answers (its own cursor).
    if !args.peek {
        ctx.reconcile(&*store)?;
    }
    // What `status` counts unread: the leader's past `inbox`'s cursor (`READER`), a
    // teammate's past its worker's.
    let (mut pos, not_unread) = if args.all {
        (Position::START, Vec::new())
    } else {
        crate::leader::unread_start(&*store, member)?
    };
    // Each message is written as it is read, never gathered: a backlog of gigabytes (a
    // teammate may send 1 MiB at a time) took twice its size in memory, four times as JSON
    // (attacker QA 45). The JSON array comes out as it did whole (`print_json`).
    let mut shown = 0usize;
    let mut idle_skipped = 0usize;
    let mut all = crate::store::entries(&*store, &who, pos);
    for e in all.by_ref() {
        match e?.item {
            Item::Message(env) if not_unread.contains(&env.id) => {}
            Item::Message(env) => match &args.kind {
                Some(k) if k != env.body.kind() => {}
                None if !args.all && env.body.kind() == IDLE => idle_skipped += 1,
                _ => {
                    if ctx.json {
                        let value = serde_json::to_value(&*env).unwrap_or_default();
                        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
                        let sep = if shown == 0 { "[\n" } else { ",\n" };
                        crate::out::write(format_args!("{sep}  {}", text.replace('\n', "\n  ")));
                    } else {
                        crate::outln!("{}", ctx.paint.message(&config, &env));
                    }
                    shown += 1;
                }
            },
            Item::Garbage(w) => crate::errln!("teamctl: warning: {w}"),
            Item::Blank => {}
        }
    }
    pos = all.pos();
    if ctx.json {
        crate::outln!("{}", if shown == 0 { "[]" } else { "\n]" });
    } else if shown == 0 {
        let what = match &args.kind {
            Some(k) => format!("no unread {k} messages for {who}"),
            None => format!("no unread messages for {who}"),
        };
        if idle_skipped > 0 {
            crate::errln!(
                "{what} ({idle_skipped} idle notification{}, passed; `--all --type {IDLE}` shows {})",
                plural(idle_skipped),
                them(idle_skipped)
            );
        } else {
            crate::errln!("{what}");
        }
    } else if idle_skipped > 0 {
        crate::errln!(
            "({idle_skipped} idle notification{} left out; `--all --type {IDLE}` shows {})",
            plural(idle_skipped),
            them(idle_skipped)
        );
    }
    // Marked read only once shown: output that could not be written (a full disk, a closed
    // pipe) leaves the mail unread, for the next look.
    crate::out::finish()?;
    // A filtered look (`--type`) marks nothing read: what it left out stays unread. Only the
    // leader's own inbox has a cursor of `inbox`'s to mark; a teammate's is its worker's.
    if who.is_leader() && !args.peek && args.kind.is_none() && pos > store.cursor(&who, READER)? {
        store.set_cursor(&who, READER, pos)?;
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// "it" for one, "them" for more.
fn them(n: usize) -> &'static str {
    if n == 1 { "it" } else { "them" }
}
