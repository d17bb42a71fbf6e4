//! `teamctl lead`: the leader console (see `crate::console`).

use crate::context::Ctx;
use crate::error::Result;

pub fn run(ctx: &Ctx) -> Result<()> {
    crate::console::run(ctx)
}
