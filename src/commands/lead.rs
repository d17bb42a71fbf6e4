//! `teamctl lead`: the leader console, filled in by the leader's-view work.

use crate::context::Ctx;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx) -> Result<()> {
    Err(Error::failed("the leader console is not built yet"))
}
