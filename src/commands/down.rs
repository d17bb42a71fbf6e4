//! `teamctl down [FILE]`: the team a file declares (`up`'s), stopped and removed as `delete`
//! does it: the shutdown handoff for every teammate, then the team directory goes. A team
//! that is not there is nothing to do; one with teammates the file does not declare is
//! refused.

use crate::cli::DownArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};

pub fn run(ctx: &Ctx, args: &DownArgs) -> Result<()> {
    ctx.require_leader("take a team down")?;
    let loaded = super::up::load(&args.file);
    // `--team nope down`: a team that is not here is said so, with the teams there are, unless
    // the file declares that very team (then it is not up: nothing to do).
    if ctx.team.is_some()
        && !matches!(&loaded, Ok(l) if ctx.team.as_deref() == Some(l.file.name.as_str()))
    {
        ctx.require_existing_team("take down")?;
    }
    // No file: `down` is `delete` of the team a file declares; without one, `delete` is it.
    let loaded = loaded.map_err(|e| match e {
        Error::Failed(msg) if msg.starts_with("no team file") => {
            let team = ctx
                .team
                .as_deref()
                .map_or("TEAM".to_string(), crate::output::shell_word);
            Error::failed(format!(
                "no team file {}; `down` takes down the team a file declares: name the file it was brought up with (`teamctl down FILE`), or take a team down without one: `teamctl delete --team {team}`",
                super::up::where_is(&args.file)
            ))
        }
        e => e,
    })?;
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
    // Only a team the file declares whole: teammates it does not name (spawned by hand, or by
    // another file of the same team name) would go with it unasked (new-user and attacker QA
    // 45: `up` had said "left as it is", then `down` deleted them and their mail). Nothing
    // changes; `delete` is the way to remove them all.
    let undeclared: Vec<String> = store
        .load()?
        .teammates()
        .filter(|m| loaded.file.members.iter().all(|s| s.name() != &m.name))
        .map(|m| m.name.to_string())
        .collect();
    if !undeclared.is_empty() {
        let (some, them) = if undeclared.len() == 1 {
            ("a teammate", "it")
        } else {
            ("teammates", "them")
        };
        return Err(Error::bad(format!(
            "team {team} has {some} {origin} does not declare: {names}; `down` would delete {them} with the team: add {them} to {origin}, or delete the whole team: `teamctl delete --team {team}`",
            origin = loaded.origin,
            names = undeclared.join(", "),
        )));
    }
    // Hints name the file, as `up`'s do: `teamctl down --force` alone reads teamctl.toml,
    // another team's (new-user QA 38: "team shop is not up; nothing to do", exit 0).
    let forced = if args.file.as_os_str() == "teamctl.toml" {
        "teamctl down --force".to_string()
    } else {
        format!(
            "teamctl down {} --force",
            crate::output::shell_word(&args.file.display().to_string())
        )
    };
    super::delete::delete_team(ctx, &*store, &args.delete, &forced)
}
