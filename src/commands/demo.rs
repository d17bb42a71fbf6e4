//! `teamctl demo [--stop]`: filled in by the leader's-view work.

use crate::cli::DemoArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: DemoArgs) -> Result<()> {
    Err(Error::failed("demo is not built yet"))
}
