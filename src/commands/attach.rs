//! `teamctl attach [NAME]`: filled in by the tmux backend.

use crate::cli::AttachArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: AttachArgs) -> Result<()> {
    Err(Error::failed(
        "attach needs the tmux backend, which this build does not have yet",
    ))
}
