//! `teamctl hook EVENT` (hidden): run by an interactive teammate's agent for its hook events
//! (Claude Code: `UserPromptSubmit`, `Stop`, `Notification`, installed with `--settings`). It
//! reads the hook's JSON object on stdin and records the event for the teammate's companion,
//! which wakes on it. The teammate is the one in the environment the pane was started with.
//!
//! It never fails the agent's turn: whatever goes wrong is one line on stderr and exit 0
//! (Claude Code takes a hook's exit status 2 as "block", and would feed the error to the
//! model).

use std::io::Read;

use crate::cli::HookArgs;
use crate::context::Ctx;
use crate::domain::interactive::HookEvent;
use crate::domain::time::now_ms;
use crate::error::{Error, Result};
use crate::store::hooks;

/// The most of the hook's stdin read (a Stop event carries the turn's last message).
const MAX_INPUT: u64 = 4 * 1024 * 1024;

#[allow(
    clippy::unnecessary_wraps,
    reason = "every command's run has the dispatcher's signature"
)]
pub fn run(ctx: &Ctx, args: &HookArgs) -> Result<()> {
    if let Err(e) = record(ctx, args) {
        eprintln!("teamctl hook {}: {e}", args.event);
    }
    Ok(())
}

fn record(ctx: &Ctx, args: &HookArgs) -> Result<()> {
    let mut input = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT)
        .read_to_end(&mut input)
        .map_err(|e| Error::io_while("cannot read the hook's input", e))?;
    let value: serde_json::Value = if input.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(&input)
            .map_err(|e| Error::bad(format!("the hook's input is not JSON: {e}")))?
    };
    let event = HookEvent::from_hook(&args.event, &value, now_ms())?;
    let me = ctx.me()?;
    let store = ctx.store()?;
    store.load()?.require(me.as_str())?;
    hooks::append(&*store, &me, &event)
}
