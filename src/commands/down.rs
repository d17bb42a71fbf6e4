//! `teamctl down [FILE]`: the team a file declares (`up`'s), stopped and removed as `delete`
//! does it: the shutdown handoff for every teammate, then the team directory goes. A team
//! that is not there is nothing to do.

use crate::cli::DownArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};

pub fn run(ctx: &Ctx, args: &DownArgs) -> Result<()> {
    ctx.require_leader("take a team down")?;
    let loaded = super::up::load(&args.file)?;
    let team = &loaded.file.name;
    if let Some(t) = &ctx.team
        && t != team.as_str()
    {
        return Err(Error::bad(format!(
            "{} declares team {team}, not {t:?} (--team / TEAMCTL_TEAM); drop --team, or edit the file",
            loaded.origin
        )));
    }
    if !ctx.home.exists(team) {
        if ctx.json {
            ctx.print_json(&serde_json::json!({ "deleted": null, "team": team.as_str() }));
        } else {
            crate::outln!("team {team} is not up; nothing to do");
        }
        return Ok(());
    }
    let store = ctx.home.open(team)?;
    super::delete::delete_team(ctx, &*store, &args.delete, "teamctl down --force")
}
