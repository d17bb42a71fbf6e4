//! `teamctl delete [--force]`: the shutdown handoff for every teammate, then the team is
//! removed. Refuses while a teammate refuses, unless `--force`.

use std::time::Duration;

use crate::cli::DeleteArgs;
use crate::context::Ctx;
use crate::error::Result;
use crate::leader;
use crate::store::{FsStore, Store};

pub fn run(ctx: &Ctx, args: DeleteArgs) -> Result<()> {
    ctx.require_leader("delete the team")?;
    let store = ctx.store()?;
    delete_team(ctx, &store, args)
}

/// The handoff for every teammate of the team in `store`, then its removal (`delete`, `down`).
pub fn delete_team(ctx: &Ctx, store: &FsStore, args: DeleteArgs) -> Result<()> {
    let store = store.clone();
    let config = match store.load() {
        Ok(c) => c,
        // The damaged-file error points here: `--force` must then work without the file.
        Err(e) if args.force => return delete_damaged(ctx, &store, e),
        Err(e) => return Err(e),
    };
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
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "deleted": config.name.as_str() }));
    } else {
        println!("deleted team {}", config.name);
    }
    Ok(())
}

/// `delete --force` of a team whose team file cannot be read: its process workers are found by
/// their tags (one inbox per member names them) and ended, then the team is removed.
fn delete_damaged(ctx: &Ctx, store: &FsStore, why: crate::Error) -> Result<()> {
    let team = store.team().clone();
    let inboxes = std::fs::read_dir(store.dir().join("inboxes"));
    for entry in inboxes.into_iter().flatten().flatten() {
        let Some(name) = entry
            .file_name()
            .to_str()
            .and_then(|n| crate::domain::Name::parse(n).ok())
        else {
            continue;
        };
        if !name.is_leader() {
            crate::backend::proc::end_tagged(&name.agent_id(&team), leader::GRACE);
        }
    }
    store.destroy()?;
    if ctx.home.current().is_none() {
        ctx.home.set_current(None)?;
    }
    eprintln!(
        "teamctl: {why}\nteamctl: removed it anyway (--force); tmux panes it may have left are found by `teamctl doctor`"
    );
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "deleted": team.as_str() }));
    } else {
        println!("deleted team {team}");
    }
    Ok(())
}
