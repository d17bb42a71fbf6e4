//! `teamctl kill NAME`: end the teammate and its pane now, without the handshake.

use crate::cli::NameArg;
use crate::context::Ctx;
use crate::domain::Name;
use crate::error::Result;
use crate::leader;

pub fn run(ctx: &Ctx, args: NameArg) -> Result<()> {
    ctx.require_leader("kill teammates")?;
    let name = Name::teammate(&args.name)?;
    let store = ctx.store()?;
    let member = crate::store::Store::load(&store)?
        .require(name.as_str())?
        .clone();
    ctx.reconcile(&store)?;
    leader::end_member(&store, &member, "killed")?;
    println!("{name} killed");
    Ok(())
}
