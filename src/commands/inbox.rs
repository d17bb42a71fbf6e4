//! `teamctl inbox [NAME]`: unread messages (the caller's by default), then marked read.
//! `inbox` keeps its own cursor, separate from the worker's.

use crate::cli::InboxArgs;
use crate::context::Ctx;
use crate::domain::Name;
use crate::error::{Error, Result};
use crate::store::{Item, Store};

pub const READER: &str = "inbox";

pub fn run(ctx: &Ctx, args: InboxArgs) -> Result<()> {
    let me = ctx.me()?;
    let who = match &args.name {
        Some(n) => Name::parse_as(n, "member")?,
        None => me.clone(),
    };
    // Marking another member's mail read is acting as that member: a teammate may only look.
    if who != me && !me.is_leader() && !args.peek {
        return Err(Error::bad(format!(
            "{me} cannot mark {who}'s mail read; look without marking with `teamctl inbox {who} --peek`"
        )));
    }
    let store = ctx.store()?;
    let config = store.load()?;
    config.require(who.as_str())?;
    ctx.reconcile(&store)?;
    let mut pos = if args.all {
        0
    } else {
        store.cursor(&who, READER)
    };
    let mut shown = Vec::new();
    let mut all = crate::store::entries(&store, &who, pos);
    for e in all.by_ref() {
        match e?.item {
            Item::Message(env) => shown.push(*env),
            Item::Garbage(w) => eprintln!("teamctl: warning: {w}"),
            Item::Blank => {}
        }
    }
    pos = all.pos();
    if ctx.json {
        ctx.print_json(&serde_json::to_value(&shown).unwrap_or_default());
    } else if shown.is_empty() {
        eprintln!("no unread messages for {who}");
    } else {
        for env in &shown {
            println!("{}", ctx.paint.message(&config, env));
        }
    }
    if !args.peek && pos > store.cursor(&who, READER) {
        store.set_cursor(&who, READER, pos)?;
    }
    Ok(())
}
