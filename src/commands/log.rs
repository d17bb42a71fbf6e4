//! `teamctl log`: every message of the team in time order (broadcast copies shown once).

use std::collections::HashSet;

use crate::cli::LogArgs;
use crate::context::Ctx;
use crate::domain::Envelope;
use crate::error::{Error, Result};
use crate::store::{FsStore, Item, Store};

/// Every message in every inbox, deduplicated by id, in time order.
pub fn all_messages(store: &FsStore) -> Result<Vec<Envelope>> {
    let config = store.load()?;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for m in &config.members {
        let mut pos = 0;
        loop {
            let entries = store.read(&m.name, pos, 4096)?;
            let Some(last) = entries.last() else { break };
            pos = last.end;
            for e in entries {
                if let Item::Message(env) = e.item
                    && seen.insert(env.id.clone())
                {
                    out.push(*env);
                }
            }
        }
    }
    out.sort_by(|a, b| a.timestamp.cmp(&b.timestamp).then(a.id.cmp(&b.id)));
    Ok(out)
}

pub fn matches(args: &LogArgs, env: &Envelope) -> bool {
    args.from.as_ref().is_none_or(|f| *f == env.from)
        && args.to.as_ref().is_none_or(|t| *t == env.to)
        && args.kind.as_ref().is_none_or(|k| k == env.body.kind())
}

pub fn run(ctx: &Ctx, args: LogArgs) -> Result<()> {
    let store = ctx.store()?;
    let config = store.load()?;
    if args.follow {
        return Err(Error::failed("log -f is not built yet"));
    }
    for env in all_messages(&store)?.iter().filter(|e| matches(&args, e)) {
        if ctx.json {
            println!("{}", serde_json::to_string(env).unwrap_or_default());
        } else {
            println!("{}", ctx.paint.message(&config, env));
        }
    }
    Ok(())
}
