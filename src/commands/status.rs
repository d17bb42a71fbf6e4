//! `teamctl status`: every member's state (checked against the pane or process), backend,
//! pane, pid, unread mail, current turn and last seen. A running teammate the leader asked to
//! stop shows as `shutdown_pending` (its turn still shown) until it answers; a stopped one
//! shows no turn, task or pid (they belonged to a worker that is gone).

use crate::cli::StatusArgs;
use crate::context::Ctx;
use crate::error::Result;
use crate::view::status::{render, rows};

pub fn run(ctx: &Ctx, args: &StatusArgs) -> Result<()> {
    let store = ctx.store()?;
    ctx.reconcile(&*store)?;
    if args.watch {
        return crate::view::board::watch(ctx, &store);
    }
    let config = store.load()?;
    let rows = rows(&*store, &config);
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "team": config.name.as_str(), "members": rows }));
        return Ok(());
    }
    crate::out!("{}", render(ctx.paint, &config, &rows));
    Ok(())
}
