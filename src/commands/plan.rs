//! `teamctl plan list|approve|reject`: filled in by the lifecycle work.

use crate::cli::PlanCommand;
use crate::context::Ctx;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _cmd: PlanCommand) -> Result<()> {
    Err(Error::failed("plan approval is not built yet"))
}
