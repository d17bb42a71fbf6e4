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
        let dirty: Vec<String> = config
            .teammates()
            .filter_map(|m| m.worktree.as_deref())
            .filter(|w| std::path::Path::new(w).exists() && crate::worktree::is_dirty(w.as_ref()))
            .map(str::to_string)
            .collect();
        if !dirty.is_empty() {
            return Err(crate::Error::failed(format!(
                "uncommitted changes in {}; commit them (the branches are kept) or use `teamctl delete --force`",
                dirty.join(", ")
            )));
        }
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
    // Worktrees live in the team directory: remove them through git so the repository does
    // not keep stale entries. Their branches are kept.
    for m in store.load()?.teammates() {
        if let Err(e) = crate::worktree::remove_for(m) {
            eprintln!("teamctl: {e}");
        }
    }
    crate::backend::tmux::forget_team(&store.load()?);
    store.destroy()?;
    if ctx.home.current().is_none() {
        ctx.home.set_current(None)?;
    }
    println!("deleted team {}", config.name);
    Ok(())
}
