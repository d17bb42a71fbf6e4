//! `teamctl send TO [TEXT]` and `send TO --structured JSON`: check, append, and resume a
//! stopped recipient so the message is handled.

use std::io::{IsTerminal, Read};

use crate::bus;
use crate::cli::SendArgs;
use crate::context::Ctx;
use crate::domain::message::VERSION;
use crate::domain::{Body, Envelope, Name, Recipient};
use crate::error::{Error, Result};
use crate::leader;
use crate::store::{FsStore, Store};

pub fn run(ctx: &Ctx, args: SendArgs) -> Result<()> {
    let me = ctx.me()?;
    let recipient = Recipient::parse(&args.to)?;
    let store = ctx.store()?;
    let mut env = match &args.structured {
        Some(json) => structured(&me, &recipient, json)?,
        None => {
            let text = match args.text {
                Some(t) => t,
                None => read_stdin()?,
            };
            Envelope::new(
                me.as_str(),
                recipient.as_str(),
                Body::message(text, args.summary),
            )
        }
    };
    env.hops = env.hops.max(ctx.hops());
    // Inside the turn a shutdown request started, the answer to it is the worker's to send.
    if let Body::ShutdownResponse {
        request_id,
        approve,
        reason,
        ..
    } = &env.body
        && std::env::var(super::shutdown_response::REQUEST_VAR)
            .ok()
            .as_ref()
            == Some(request_id)
    {
        return super::shutdown_response::record(ctx, approve.0, reason.clone());
    }
    let config = store.load()?;
    bus::recipients(&config, &env)?;
    expect_answer(&store, &env)?;
    let to = bus::deliver(&store, &config, &env)?;
    ctx.reconcile(&store)?;
    let resumed = resume_stopped(ctx, &store, &to)?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "id": env.id,
            "to": to.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
            "resumed": resumed.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
        }));
    } else {
        println!("{}", env.id);
        for n in resumed {
            eprintln!("teamctl: {n} was not running; resumed it");
        }
    }
    Ok(())
}

/// A leader's shutdown request sent by hand is recorded like `teamctl shutdown` records it, so
/// the answer marks the teammate stopped and returns its tasks. Only one request is awaited
/// at a time: a second one would be answered never, or by the worker's next life.
fn expect_answer(store: &FsStore, env: &Envelope) -> Result<()> {
    let Body::ShutdownRequest { request_id, .. } = &env.body else {
        return Ok(());
    };
    if env.from != crate::domain::LEADER {
        return Ok(());
    }
    let name = Name::teammate(&env.to)?;
    let (awaited, fresh) = leader::expect_shutdown(store, &name, request_id)?;
    if !fresh {
        return Err(Error::bad(format!(
            "{name} has not answered shutdown request {awaited} yet; wait for it (`teamctl shutdown {name}`) or end it with `teamctl kill {name}`"
        )));
    }
    Ok(())
}

/// Start the recipients that are stopped or dead, so the message gets handled.
pub fn resume_stopped(ctx: &Ctx, store: &FsStore, to: &[Name]) -> Result<Vec<Name>> {
    let config = store.load()?;
    let mut resumed = Vec::new();
    let mut failed = Vec::new();
    for name in to {
        let Some(member) = config.member(name.as_str()) else {
            continue;
        };
        if name.is_leader() {
            continue;
        }
        // A running worker process carrying this member's tag is enough to know the message
        // will be handled: no need to probe its pane (one tmux process per recipient made a
        // broadcast to 300 tmux teammates take 9 s). Anything less certain takes the full check.
        let status = leader::seen_status(member, store.live(name).as_ref());
        if !status.is_running() {
            // One that cannot start must not keep the others of a broadcast from starting.
            match leader::resume_if_down(&ctx.home, store, name) {
                Ok(Some(_)) => resumed.push(name.clone()),
                Ok(None) => {}
                Err(e) => failed.push(e.to_string()),
            }
        }
    }
    if !failed.is_empty() {
        for n in &resumed {
            eprintln!("teamctl: {n} was not running; resumed it");
        }
        // The message is on disk already: this is a failure to act (exit 1), not bad input.
        return Err(Error::failed(format!(
            "the message was delivered and waits in the inbox, but {}",
            failed.join("; ")
        )));
    }
    Ok(resumed)
}

fn read_stdin() -> Result<String> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(Error::bad("no message text: give TEXT or pipe it on stdin"));
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .map_err(|e| Error::bad(format!("cannot read the message from stdin: {e}")))?;
    if text.trim().is_empty() {
        return Err(Error::bad("the message on stdin is empty"));
    }
    Ok(text)
}

/// Build a structured message from JSON: the body's fields and `type`; `from`, `to`, `v`,
/// `id` and `timestamp` are filled in (and must agree when given).
pub fn structured(me: &Name, to: &Recipient, json: &str) -> Result<Envelope> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| Error::bad(format!("--structured is not valid JSON: {e}")))?;
    let serde_json::Value::Object(mut obj) = value else {
        return Err(Error::bad(
            "--structured must be a JSON object with a \"type\"",
        ));
    };
    for (field, want) in [("from", me.as_str()), ("to", to.as_str())] {
        match obj.get(field).and_then(|v| v.as_str()) {
            Some(v) if v != want => {
                return Err(Error::bad(format!(
                    "--structured says {field} {v:?} but the command says {want:?}"
                )));
            }
            _ => {}
        }
    }
    let fresh = Envelope::new(me.as_str(), to.as_str(), Body::message("x", None));
    obj.insert("v".into(), VERSION.into());
    obj.entry("id").or_insert(fresh.id.into());
    obj.insert("from".into(), me.as_str().into());
    obj.insert("to".into(), to.as_str().into());
    obj.insert("timestamp".into(), fresh.timestamp.into());
    let env: Envelope = serde_json::from_value(serde_json::Value::Object(obj))
        .map_err(|e| Error::bad(format!("invalid structured message: {e}")))?;
    env.validate()?;
    Ok(env)
}
