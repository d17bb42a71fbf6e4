//! `teamctl create TEAM`: make a team and lead it. One team at a time per leader (per home).

use crate::cli::CreateArgs;
use crate::context::Ctx;
use crate::domain::Name;
use crate::error::{Error, Result};

pub fn run(ctx: &Ctx, args: &CreateArgs) -> Result<()> {
    ctx.require_leader("create a team")?;
    let base = Name::parse_as(&args.name, "team")?;
    let kept_in = crate::store::home::parse_store(args.store.as_deref())?;
    refuse_if_leading(ctx)?;
    // One `create` at a time per home: the check again and the team it makes are one step,
    // so concurrent runs make exactly one team and the others see it as the one led.
    let creating = ctx.home.lock_create()?;
    refuse_if_leading(ctx)?;
    let cwd = std::env::current_dir().map_err(|e| Error::io_while("current directory", e))?;
    let store = ctx
        .home
        .create_in(&creating, &base, &args.description, &cwd, kept_in.as_ref())?;
    if args.max_hops != crate::domain::member::DEFAULT_MAX_HOPS {
        let max = args.max_hops;
        store.update(&mut |cfg| {
            cfg.max_hops = Some(max);
            Ok(())
        })?;
    }
    // Only while the team is still there (a `delete` waits for the lock, but `doctor --fix`
    // removes a leftover without it).
    if ctx.home.exists(store.team()) {
        creating.set_current(Some(store.team()))?;
    }
    drop(creating);
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "team": store.team().as_str(),
            "dir": store.location(),
        }));
    } else {
        crate::outln!("{}", store.team());
    }
    if store.team() != &base {
        crate::errln!("teamctl: {}", taken_note(ctx, &base, store.team()));
    }
    Ok(())
}

/// What was made instead of `base`, and why (SPEC: a taken name gets a unique suffix). A
/// leftover directory of `base` (no team file) takes the name as a team does, but a send to
/// `base` then fails on it: that is said, with what it holds and the command that removes it.
fn taken_note(ctx: &Ctx, base: &Name, made: &Name) -> String {
    match ctx.home.leftover(base) {
        Some(left) => format!(
            "created {:?}: {base:?} is taken by a leftover, not a team ({} is a team directory without a team file, holding {}); {}",
            made.as_str(),
            left.dir.display(),
            left.contents(),
            left.removal()
        ),
        None => format!("team {base:?} exists; created {:?} instead", made.as_str()),
    }
}

fn refuse_if_leading(ctx: &Ctx) -> Result<()> {
    match ctx.home.current() {
        Some(current) => match ctx.home.server_of(&current).ok().flatten() {
            Some(server) => Err(Error::bad(format!(
                "you already lead team {current:?} (kept on the NATS server at {server}); a leader leads one team at a time: leave it for this home with `teamctl delete --leave --team {current}` (it stays for the other hosts), delete it for every host with `teamctl delete --team {current}`, or use another --home"
            ))),
            None => Err(Error::bad(format!(
                "you already lead team {current:?}; a leader leads one team at a time: delete it first with `teamctl delete --team {current}`, or use another --home"
            ))),
        },
        None => Ok(()),
    }
}
