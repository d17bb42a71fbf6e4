//! `teamctl doctor [--fix]`: filled in by the lifecycle work.

use crate::cli::DoctorArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: DoctorArgs) -> Result<()> {
    Err(Error::failed("doctor is not built yet"))
}
