//! `teamctl delete [--force]`: the shutdown handoff for every teammate, then the team is
//! removed. Refuses while a teammate refuses, unless `--force`.

use std::time::Duration;

use crate::cli::DeleteArgs;
use crate::context::Ctx;
use crate::error::Result;
use crate::leader;
use crate::store::Store;

pub fn run(ctx: &Ctx, args: DeleteArgs) -> Result<()> {
    ctx.require_leader("delete the team")?;
    let store = ctx.store()?;
    let config = store.load()?;
    ctx.reconcile(&store)?;
    let names: Vec<_> = config.teammates().map(|m| m.name.clone()).collect();
    if !args.force {
        let outcome = super::shutdown::handoff(
            &store,
            &names,
            Some("team deleted".into()),
            Duration::from_secs(args.timeout),
            true,
        )?;
        outcome.into_result(args.timeout).map_err(|e| {
            crate::Error::failed(format!(
                "{e}; the team is kept (use `teamctl delete --force` to kill)"
            ))
        })?;
    }
    // Whatever is left (forced, or leftovers of stopped members) ends now, tag checked.
    for m in store.load()?.teammates() {
        leader::end_member(&store, m, "team deleted")?;
    }
    crate::backend::tmux::forget_team(&store.load()?);
    store.destroy()?;
    if ctx.home.current().is_none() {
        ctx.home.set_current(None)?;
    }
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "deleted": config.name.as_str() }));
    } else {
        println!("deleted team {}", config.name);
    }
    Ok(())
}
