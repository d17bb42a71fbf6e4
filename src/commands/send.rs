//! `teamctl send TO [TEXT]` and `send TO --structured JSON`: check, append, and resume a
//! stopped recipient so the message is handled.

use std::io::{IsTerminal, Read};

use crate::bus;
use crate::cli::SendArgs;
use crate::context::Ctx;
use crate::domain::message::{VERSION, new_id};
use crate::domain::name::AgentId;
use crate::domain::{Body, Envelope, Name, Recipient, Roster};
use crate::error::{Error, Result};
use crate::leader;
use crate::store::{RosterCache, Store};

pub fn run(ctx: &Ctx, args: SendArgs) -> Result<()> {
    let to = args.to.clone();
    // A short text is kept for the hint to a recipient that is no member (`send hi bob`).
    let text = args.text.as_ref().filter(|t| t.len() <= 256).cloned();
    send(ctx, args)
        .map_err(|e| broadcast_hint(&to, e))
        .map_err(|e| super::mistaken::in_send(ctx, &to, text.as_deref(), e))
}

/// A refused recipient that is a word for "everyone" gets the way to broadcast added (new-user
/// QA: `send all hi` said only "no member "all"").
fn broadcast_hint(to: &str, e: Error) -> Error {
    match e {
        Error::BadInput(msg)
            if to != "*"
                && super::mistaken::means_everyone(to)
                && (msg.starts_with("no member") || msg.starts_with("invalid recipient")) =>
        {
            // `@all` is refused as an address with no name before the `@`: said plainly.
            let msg = if msg.starts_with("invalid recipient") {
                format!("no member {to:?}")
            } else {
                msg
            };
            Error::BadInput(format!(
                "{msg}; to send to everyone use '*' (quoted, so the shell does not expand it): `teamctl send '*' TEXT`"
            ))
        }
        e => e,
    }
}

fn send(ctx: &Ctx, mut args: SendArgs) -> Result<()> {
    let me = ctx.me()?;
    let store = ctx.store()?;
    if let Some(to) = AgentId::parse(&args.to, "recipient")? {
        if &to.team != store.team() {
            return across(ctx, &me, &*store, &to, args);
        }
        // An address in this team is the plain name.
        args.to = to.name.as_str().to_string();
    }
    let recipient = Recipient::parse(&args.to)?;
    let all = recipient == Recipient::All;
    let retry = super::broadcast::Retry {
        summary: all.then(|| args.summary.clone()).flatten(),
        structured: all.then(|| args.structured.clone()).flatten(),
    };
    // The team file is read once, as a roster, and again only if it changed meanwhile. To one
    // member, only the sender's and the recipient's entries of the file's index are read
    // (with 1,000 members the index has 1,000 lines, the file 400 KB); to all, every name.
    let mut cache = None;
    let wanted: Vec<&Name> = match &recipient {
        Recipient::One(to) => vec![&me, to],
        Recipient::All => Vec::new(),
    };
    let mut env = match &args.structured {
        Some(json) => structured(&me, &recipient, json)?,
        None => {
            let text = match args.text {
                Some(t) => t,
                None => {
                    // A name that is not a member is said before the text is read: a typo
                    // must not swallow what is being typed or piped in.
                    if let Recipient::One(to) = &recipient {
                        roster_of(&*store, &mut cache, &wanted)?.require(to.as_str())?;
                    }
                    read_stdin()?
                }
            };
            let mut body = Body::message(text, args.summary);
            if let (Body::Message { in_reply_to, .. }, Some(id)) =
                (&mut body, report_of(ctx, &recipient))
            {
                *in_reply_to = Some(id);
            }
            Envelope::new(me.as_str(), recipient.as_str(), body)
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
        && std::env::var(crate::domain::env::SHUTDOWN_REQUEST_ID)
            .ok()
            .as_ref()
            == Some(request_id)
    {
        return super::shutdown_response::record(ctx, approve.0, reason.clone());
    }
    {
        let roster = roster_of(&*store, &mut cache, &wanted)?;
        roster.refuse_if_deleting()?;
        bus::recipients_in(roster, &env)?;
    }
    expect_answer(&*store, &env)?;
    // Under the team file's shared lock: a `delete` marks the team either before this check
    // (the send fails, nothing appended) or after the append (its members are stopped after).
    // A broadcast goes to every member it can (`missed`: those it could not reach).
    // Who runs is looked at just before delivering: one found down after it may have died
    // in its turn on the message, and is not started again to run it twice (`Before`).
    crate::pause::at("send-deliver");
    let (to, missed, before) = {
        let _shared = store.hold_shared()?;
        let roster = roster_of(&*store, &mut cache, &wanted)?;
        roster.refuse_if_deleting()?;
        // A shutdown request wakes nobody (below): nothing to look at for it.
        let before = match env.body {
            Body::ShutdownRequest { .. } => None,
            _ => Some(leader::Before::look(
                &*store,
                &bus::recipients_in(roster, &env)?,
                &env.id,
            )?),
        };
        let (to, missed) = super::broadcast::deliver(&*store, roster, &env)?;
        (to, missed, before)
    };
    ctx.reconcile(&*store)?;
    crate::pause::at("send-wake");
    // A shutdown request is not work: answering it stops the worker, and resuming one that
    // answered already would bring it straight back.
    // A broadcast names each member that did not start with those it missed (the message is
    // in its inbox: its retry is a `resume`), after saying who got it.
    let mut missed = missed;
    let woken = if matches!(env.body, Body::ShutdownRequest { .. }) {
        leader::Woken::default()
    } else {
        let mut woken =
            leader::wake_each(&ctx.home, &me, &*store, &to, &mut cache, before.as_ref())?;
        woken.failed.append(&mut woken.died);
        woken.failed.append(&mut woken.held);
        woken
    };
    if !all {
        woken.failed_as_error()?;
    }
    let leader::Woken {
        resumed,
        waiting,
        failed,
        // Ctrl-C in a recipient's pane during its turn: it ends after the turn, this message
        // unhandled (a send said nothing of it: new-user QA).
        stopping,
        died: _,
        held: _,
        held_why,
        paused,
    } = woken;
    missed.extend(failed.into_iter().map(|(name, error)| {
        super::broadcast::Missed {
            held: held_why
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, why)| why.clone()),
            name,
            error,
            delivered: true,
        }
    }));
    if ctx.json {
        let mut out = serde_json::json!({
            "id": env.id,
            "to": to.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
            "resumed": resumed.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
            "waiting": waiting.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
        });
        if let Body::Message {
            in_reply_to: Some(r),
            ..
        } = &env.body
        {
            out["inReplyTo"] = r.as_str().into();
        }
        if let Some(r) = request_id(&env.body) {
            out["requestId"] = r.into();
        }
        if !stopping.is_empty() {
            out["stopping"] = stopping.iter().map(|(n, _)| n.as_str()).collect();
        }
        if !paused.is_empty() {
            out["paused"] = paused.iter().map(|(n, _)| n.as_str()).collect();
        }
        let names = |delivered: bool| -> Vec<&str> {
            missed
                .iter()
                .filter(|m| m.delivered == delivered)
                .map(|m| m.name.as_str())
                .collect()
        };
        if !names(false).is_empty() {
            out["notSent"] = names(false).into();
        }
        if !names(true).is_empty() {
            out["notStarted"] = names(true).into();
        }
        // Why each of those did not get it or did not start (`held`: not started on purpose,
        // dead in a turn that a start would run again).
        if !missed.is_empty() {
            out["why"] = missed
                .iter()
                .map(|m| {
                    let why = serde_json::json!({ "error": m.error.to_string(), "held": m.held.is_some() });
                    (m.name.to_string(), why)
                })
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        ctx.print_json(&out);
    } else {
        // Who got it, not a bare id: an agent's turn prints this into its own reply.
        match recipient {
            Recipient::All => {
                let names: Vec<&str> = to.iter().map(|n| n.as_str()).collect();
                let members = if names.len() == 1 {
                    "member"
                } else {
                    "members"
                };
                crate::outln!("sent to {} {members}: {}", names.len(), names.join(", "));
            }
            Recipient::One(_) => {
                for n in &to {
                    crate::outln!("sent to {n}");
                }
            }
        }
        crate::leader::say_resumed(&resumed);
        for (n, why) in &stopping {
            crate::errln!(
                "teamctl: {n} is stopping after its current turn ({}); the message waits in its inbox until it is resumed (`teamctl resume {n}` once it has stopped)",
                crate::output::printable(why)
            );
        }
        // Stopped by a signal (attacker QA 41: a send said only "sent to w", and nobody
        // answered).
        for (n, pid) in &paused {
            crate::errln!(
                "teamctl: {}",
                crate::leader::paused_words(n, *pid, "the message")
            );
        }
        let config = if waiting.is_empty() {
            None
        } else {
            store.load().ok()
        };
        for n in waiting {
            crate::errln!(
                "teamctl: {}",
                crate::leader::left_waiting(config.as_ref(), &n, "the message")
            );
        }
    }
    if !missed.is_empty() {
        let team = store.team();
        return Err(super::broadcast::report(
            ctx.home.root(),
            team,
            &me,
            &env,
            &retry,
            &to,
            &missed,
        ));
    }
    Ok(())
}

/// The roster through `cache`: with `wanted` members only, or whole when none is named.
fn roster_of<'a>(
    store: &dyn Store,
    cache: &'a mut RosterCache,
    wanted: &[&Name],
) -> Result<&'a Roster> {
    match wanted {
        [] => store.roster_cached(cache),
        some => store.roster_with_cached(cache, some),
    }
}

/// `send NAME@TEAM TEXT` to a member of another team (in the same home, or the same store):
/// plain text only, sent under the sender's agent id, so the recipient sees who and where.
/// The other team's stopped members are not resumed: that is its own leader's call.
fn across(ctx: &Ctx, me: &Name, store: &dyn Store, to: &AgentId, args: SendArgs) -> Result<()> {
    if args.structured.is_some() {
        return Err(Error::bad(format!(
            "structured messages do not go to another team ({to}); send plain text"
        )));
    }
    let text = match args.text {
        Some(t) => t,
        None => read_stdin()?,
    };
    let from = me.agent_id(store.team());
    // The leader cannot be addressed as a member of its own team this way; nor can anyone
    // pose as a member: `me` is checked against this team first.
    store.load()?.require(me.as_str())?;
    let mut body = Body::message(text, args.summary);
    if let Body::Message { in_reply_to, .. } = &mut body
        && let Some(turn) = &ctx.turn
        && turn.from.as_deref() == Some(to.to_string().as_str())
    {
        in_reply_to.clone_from(&turn.message_id);
    }
    let mut env = Envelope::new(&from, to.name.as_str(), body);
    env.hops = ctx.hops();
    let other = bus::across(store, to, &env)?;
    // Only what the team file says: whether its worker runs may not be seen from this host
    // (a team on NATS runs elsewhere).
    let running = other.load().ok().and_then(|c| {
        let m = c.member(to.name.as_str())?;
        Some(m.status != crate::domain::Status::Stopped)
    });
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "id": env.id,
            "to": [to.to_string()],
            "resumed": [],
            "waiting": if running == Some(false) { vec![to.to_string()] } else { vec![] },
        }));
    } else {
        crate::outln!("sent to {to}");
        if running == Some(false) {
            crate::errln!(
                "teamctl: {to} is stopped; the message waits in its inbox until team {}'s leader resumes it",
                to.team
            );
        }
    }
    Ok(())
}

/// Inside a turn, a plain message to the sender of the message being handled is a report on
/// it: it carries that message's id in `inReplyTo`, so `ask` takes it for the answer.
fn report_of(ctx: &Ctx, to: &Recipient) -> Option<String> {
    let turn = ctx.turn.as_ref()?;
    let Recipient::One(n) = to else {
        return None;
    };
    let (id, from) = match (&turn.message_id, &turn.from) {
        (Some(id), Some(from)) => (id.clone(), from.clone()),
        // An interactive agent's pane has no turn variables (no `TEAMCTL_HOPS` either): the
        // turn its companion delivered is in the member's live state, as for its hops.
        _ if std::env::var_os(crate::domain::env::HOPS).is_none() => {
            let live = ctx.home.handle(&turn.team).ok()?.live(&turn.name).ok()??;
            let t = live.current_turn?;
            (t.message_id, t.from)
        }
        _ => return None,
    };
    (from == n.as_str()).then_some(id)
}

/// The request id of a request or response body.
fn request_id(body: &Body) -> Option<&str> {
    match body {
        Body::ShutdownRequest { request_id, .. }
        | Body::ShutdownResponse { request_id, .. }
        | Body::PlanApprovalRequest { request_id, .. }
        | Body::PlanApprovalResponse { request_id, .. } => Some(request_id),
        _ => None,
    }
}

/// A leader's shutdown request sent by hand is recorded like `teamctl shutdown` records it, so
/// the answer marks the teammate stopped and returns its tasks. Only one request is awaited
/// at a time: a second one would be answered never, or by the worker's next life.
fn expect_answer(store: &dyn Store, env: &Envelope) -> Result<()> {
    let Body::ShutdownRequest { request_id, .. } = &env.body else {
        return Ok(());
    };
    if env.from != crate::domain::LEADER {
        return Ok(());
    }
    let name = Name::teammate(&env.to)?;
    let config = store.load()?;
    if let Some(m) = config.member(name.as_str()) {
        let status = leader::seen_status(m, store.live(&name)?.as_ref());
        if !status.is_running() {
            return Err(Error::bad(format!(
                "{name} is not running ({status}); there is nothing to shut down"
            )));
        }
    }
    let (awaited, fresh) = leader::expect_shutdown(store, &name, request_id)?;
    if !fresh {
        return Err(Error::bad(format!(
            "{name} has not answered shutdown request {awaited} yet; wait for it (`teamctl shutdown {name}`) or end it with `teamctl kill {name}`"
        )));
    }
    Ok(())
}

/// The message text piped on stdin (`send`, `ask` without TEXT): read up to one byte past
/// the message limit, so a huge input is refused without being held whole in memory.
pub(crate) fn read_stdin() -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(Error::bad("no message text: give TEXT or pipe it on stdin"));
    }
    let limit = crate::domain::message::MAX_MESSAGE_BYTES;
    let mut bytes = Vec::new();
    stdin
        .lock()
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::bad(format!("cannot read the message from stdin: {e}")))?;
    if bytes.len() > limit {
        return Err(Error::bad(format!(
            "the message on stdin is over the {} MiB limit; put a long text in a file and send its path",
            limit / (1024 * 1024)
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::bad("the message on stdin is not UTF-8 text"))?;
    if text.trim().is_empty() {
        return Err(Error::bad("the message on stdin is empty"));
    }
    Ok(text)
}

/// Build a structured message from JSON: the body's fields and `type`; `from`, `to`, `id` and
/// `timestamp` are filled in (`from` and `to` must agree when given). An `id` is refused: ids
/// are teamctl's, and a chosen one could shadow another message. A `v` other than the
/// supported version is refused, not rewritten. `request_id` is taken for `requestId`, and a
/// request without one gets a fresh id.
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
    if obj.contains_key("id") {
        return Err(Error::bad(
            "--structured must not give an \"id\": message ids are teamctl's (a request's own id goes in \"requestId\")",
        ));
    }
    match obj.get("v") {
        None => {}
        Some(v) if v.as_u64() == Some(u64::from(VERSION)) => {}
        Some(v) => {
            return Err(Error::bad(format!(
                "--structured says v {v}; this teamctl writes version {VERSION} only (leave \"v\" out)"
            )));
        }
    }
    if let Some(alias) = obj.remove("request_id") {
        if obj.get("requestId").is_some_and(|r| *r != alias) {
            return Err(Error::bad(
                "--structured gives both requestId and request_id, and they differ; give one",
            ));
        }
        obj.insert("requestId".into(), alias);
    }
    let is_request = matches!(
        obj.get("type").and_then(|t| t.as_str()),
        Some("shutdown_request" | "plan_approval_request")
    );
    if is_request && !obj.contains_key("requestId") {
        obj.insert("requestId".into(), new_id().into());
    }
    let fresh = Envelope::new(me.as_str(), to.as_str(), Body::message("x", None));
    obj.insert("v".into(), VERSION.into());
    obj.insert("id".into(), fresh.id.into());
    obj.insert("from".into(), me.as_str().into());
    obj.insert("to".into(), to.as_str().into());
    obj.insert("timestamp".into(), fresh.timestamp.into());
    let env: Envelope = serde_json::from_value(serde_json::Value::Object(obj))
        .map_err(|e| Error::bad(format!("invalid structured message: {e}")))?;
    env.validate()?;
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(from: &str, json: &str) -> Result<Envelope> {
        let to = Recipient::parse("bob").unwrap();
        structured(&Name::parse(from).unwrap(), &to, json)
    }

    #[test]
    fn the_seeds_literal_shutdown_request_gets_a_request_id() {
        let env = build("team-lead", r#"{"type":"shutdown_request"}"#).unwrap();
        assert!(
            matches!(&env.body, Body::ShutdownRequest { request_id, .. } if !request_id.is_empty())
        );
        let env = build(
            "team-lead",
            r#"{"type":"shutdown_request","request_id":"r7","reason":"done"}"#,
        )
        .unwrap();
        assert!(
            matches!(&env.body, Body::ShutdownRequest { request_id, .. } if request_id == "r7")
        );
        let both = r#"{"type":"shutdown_request","request_id":"a","requestId":"b"}"#;
        assert_eq!(build("team-lead", both).unwrap_err().exit_code(), 2);
        let same = r#"{"type":"shutdown_request","request_id":"a","requestId":"a"}"#;
        assert!(build("team-lead", same).is_ok());
        // A response must name the request it answers: nothing is made up for it.
        let resp = r#"{"type":"plan_approval_response","approve":true}"#;
        assert!(build("team-lead", resp).is_err());
        let resp = r#"{"type":"plan_approval_response","request_id":"p","approve":true}"#;
        assert!(build("team-lead", resp).is_ok());
    }

    #[test]
    fn ids_are_teamctls_and_other_versions_are_refused() {
        let with_id = r#"{"type":"shutdown_request","requestId":"r","id":"mine"}"#;
        assert_eq!(build("team-lead", with_id).unwrap_err().exit_code(), 2);
        let v2 = r#"{"type":"shutdown_request","requestId":"r","v":2}"#;
        assert_eq!(build("team-lead", v2).unwrap_err().exit_code(), 2);
        let v1 = r#"{"type":"shutdown_request","requestId":"r","v":1}"#;
        assert_eq!(build("team-lead", v1).unwrap().v, VERSION);
    }

    #[test]
    fn only_the_leader_asks_for_a_shutdown_or_answers_a_plan() {
        let req = r#"{"type":"shutdown_request","requestId":"r"}"#;
        assert_eq!(build("alice", req).unwrap_err().exit_code(), 2);
        let ok = r#"{"type":"plan_approval_response","requestId":"r","approve":true}"#;
        assert_eq!(build("alice", ok).unwrap_err().exit_code(), 2);
    }
}
