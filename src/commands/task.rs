//! `teamctl task ...`: filled in by the task-list work.

use crate::cli::TaskCommand;
use crate::context::Ctx;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _cmd: TaskCommand) -> Result<()> {
    Err(Error::failed("the task list is not built yet"))
}
