//! A stopped teammate's worktree removed while it is down (`shutdown --remove-worktree`), and
//! the wish that outlives the command: a teammate asked with `--remove-worktree` that had not
//! stopped when `shutdown` returned (`--no-wait`, its `--timeout` passed) has its worktree
//! removed by whichever command takes in its answer (`reconcile`), as if `shutdown` had waited
//! (new-user QA 43: the wish was forgotten, said only as "kept").

use crate::domain::Name;
use crate::error::Result;
use crate::store::Store;

use super::Up;

/// What removing one teammate's worktree did.
pub enum Removal {
    /// Removed; with the uncommitted work it held (in words), discarded by `force`.
    Removed(crate::worktree::Removed, Option<String>),
    /// Kept for its uncommitted work, in words (`NAME's worktree PATH has ..., so it is kept`).
    Kept(String),
    /// It had none here (gone already, or another host's).
    Nothing,
}

/// Remove `name`'s worktree while it is down, under its start lock (`while_down`): a message
/// that resumed it since it stopped leaves the tree in place (`Err(up)`). One with uncommitted
/// work (or files git cannot check) is kept unless `force`, as `delete` keeps it. Only this
/// host's own view of it: a worktree (and repository) the shared file alone names is not this
/// host's to remove.
pub fn remove_if_down(
    store: &dyn Store,
    name: &Name,
    force: bool,
) -> Result<std::result::Result<Removal, Up>> {
    super::while_down(store, name, |member| {
        let Some(member) = crate::store::spec::local_view(store, member) else {
            return Ok(Removal::Nothing);
        };
        let tree =
            crate::worktree::recorded_here(&member, &store.local_dir()).filter(|w| w.exists());
        let dirty = tree.as_deref().and_then(crate::worktree::unsaved);
        if let (Some(tree), Some(what), false) = (&tree, &dirty, force) {
            return Ok(Removal::Kept(format!(
                "{name}'s worktree {} has {}, so it is kept",
                tree.display(),
                crate::output::printable_line(what, 1024)
            )));
        }
        Ok(
            match crate::worktree::remove_for(&member, &store.local_dir())? {
                Some(removed) => Removal::Removed(removed, dirty),
                None => Removal::Nothing,
            },
        )
    })
}

/// Remember, for each of `names` whose shutdown request is still awaited, that its answer
/// removes its worktree too (`Member::remove_worktree_on`, that request's id). Returns those it
/// was remembered for, and those whose answer was taken in meanwhile (by the team's console, say:
/// new-user QA 44 saw them said "did not stop", their worktrees left), now stopped: the caller
/// removes theirs as for those it saw stop.
pub fn wish(store: &dyn Store, names: &[Name]) -> Result<(Vec<Name>, Vec<Name>)> {
    let (mut wished, mut since) = (Vec::new(), Vec::new());
    store.update(&mut |cfg| {
        wished.clear();
        since.clear();
        for name in names {
            let Some(m) = cfg.member_mut(name.as_str()) else {
                continue;
            };
            if m.worktree.is_none() {
                continue;
            }
            match m.shutdown_request_id.clone() {
                Some(id) => {
                    m.remove_worktree_on = Some(id);
                    wished.push(name.clone());
                }
                None if m.status == crate::domain::Status::Stopped => since.push(name.clone()),
                None => {}
            }
        }
        Ok(())
    })?;
    Ok((wished, since))
}

/// Forget the wishes of `names` (killed: their answer will not come).
pub fn forget(store: &dyn Store, names: &[Name]) -> Result<()> {
    store
        .update(&mut |cfg| {
            for name in names {
                if let Some(m) = cfg.member_mut(name.as_str()) {
                    m.remove_worktree_on = None;
                }
            }
            Ok(())
        })
        .map(|_| ())
}

/// Act on the wishes of teammates that stopped on the request they were remembered for
/// (`granted`: their names), once nothing of them runs: each worktree removed while it is
/// down, kept for uncommitted work; the wish forgotten either way. What was done, in words.
pub fn granted(store: &dyn Store, granted: &[Name]) -> Result<Vec<(Name, String)>> {
    if granted.is_empty() {
        return Ok(Vec::new());
    }
    store.update(&mut |cfg| {
        for name in granted {
            if let Some(m) = cfg.member_mut(name.as_str()) {
                m.remove_worktree_on = None;
            }
        }
        Ok(())
    })?;
    let mut said = Vec::new();
    for name in granted {
        let words = match remove_if_down(store, name, false) {
            Ok(Ok(Removal::Removed(removed, _))) => {
                format!("removed {name}'s {removed} (shutdown --remove-worktree)")
            }
            Ok(Ok(Removal::Kept(words))) => format!(
                "{words}: save what is worth keeping there; `teamctl shutdown {name} --remove-worktree --force` discards it"
            ),
            Ok(Ok(Removal::Nothing)) => continue,
            Ok(Err(up)) => {
                format!("{name} {up} again (a message resumed it?); its worktree is kept")
            }
            Err(e) => format!("{name}'s worktree is kept: {e}"),
        };
        said.push((name.clone(), words));
    }
    Ok(said)
}
