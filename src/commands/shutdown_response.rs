//! `teamctl shutdown-response approve|reject [--reason R]`: inside the turn a shutdown request
//! started, the teammate's own answer. It is recorded for the worker, which sends it to the
//! leader once the turn ends (a turn that records nothing approves, as before).

use crate::cli::{Decision, ShutdownResponseArgs};
use crate::context::Ctx;
use crate::domain::live::ShutdownAnswer;
use crate::error::{Error, Result};

use crate::domain::env::SHUTDOWN_REQUEST_ID as REQUEST_VAR;

pub fn run(ctx: &Ctx, args: ShutdownResponseArgs) -> Result<()> {
    let approve = args.decision == Decision::Approve;
    let reason = args.reason.filter(|r| !r.trim().is_empty());
    if !approve && reason.is_none() {
        return Err(Error::bad(
            "shutdown-response reject needs --reason: say why you must not stop yet",
        ));
    }
    record(ctx, approve, reason)
}

/// Record the answer of the shutdown request this turn handles.
pub fn record(ctx: &Ctx, approve: bool, reason: Option<String>) -> Result<()> {
    let me = ctx.me()?;
    let request_id = std::env::var(REQUEST_VAR)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            Error::bad(format!(
                "no shutdown request is being handled: shutdown-response answers one from inside the turn it started (${REQUEST_VAR} is not set)"
            ))
        })?;
    if me.is_leader() {
        return Err(Error::bad(
            "the leader asks for shutdowns; only a teammate answers one",
        ));
    }
    let store = ctx.store()?;
    store.load()?.require(me.as_str())?;
    store.set_shutdown_answer(
        &me,
        &ShutdownAnswer {
            request_id: request_id.clone(),
            approve,
            reason,
        },
    )?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({"requestId": request_id, "approve": approve}));
    } else {
        let what = if approve { "approved" } else { "rejected" };
        crate::outln!(
            "shutdown request {request_id} {what}; the answer goes to the leader when this turn ends"
        );
    }
    Ok(())
}
