//! `teamctl plan list|approve NAME|reject NAME --feedback F`: answer plan approval requests.
//! A request is pending when the teammate is `awaiting_plan_approval` on it (its live state
//! names the request; an older worker's latest), and no response to it is in the teammate's
//! inbox yet. Looking never moves the leader's `inbox` cursor.

use crate::store::Position;
use std::collections::BTreeMap;

use crate::bus;
use crate::cli::PlanCommand;
use crate::context::Ctx;
use crate::domain::message::Approve;
use crate::domain::{Body, Envelope, LEADER, Member, Name, TeamConfig};
use crate::error::{Error, Result};
use crate::leader;
use crate::store::{Item, Store};

/// One plan waiting for the leader.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub name: String,
    pub request_id: String,
    pub plan: String,
    pub timestamp: String,
}

pub fn run(ctx: &Ctx, cmd: PlanCommand) -> Result<()> {
    ctx.require_leader("answer plan approval requests")?;
    let store = ctx.store()?;
    let (name, approve, feedback, wanted) = match cmd {
        PlanCommand::List => {
            ctx.reconcile(&*store)?;
            return list(ctx, &*store);
        }
        PlanCommand::Approve(a) => (Name::teammate(&a.name)?, true, None, a.request),
        PlanCommand::Reject(a) => {
            if a.feedback.trim().is_empty() {
                return Err(Error::bad(
                    "--feedback is empty; say what the plan should change",
                ));
            }
            (Name::teammate(&a.name)?, false, Some(a.feedback), a.request)
        }
    };
    if wanted.as_deref().is_some_and(|w| w.trim().is_empty()) {
        return Err(Error::bad(
            "--request is empty; give the request id `teamctl plan list` shows",
        ));
    }
    let config = store.load()?;
    config.require(name.as_str())?;
    // Held until the answer is in: an approve and a reject at the same moment both reported
    // success (the first answer delivered wins); the second now finds it and sends nothing.
    let _answering = store.lock(&crate::store::LockKey::Plan(name.clone()))?;
    let Some(req) = pending(&*store)?.remove(name.as_str()) else {
        return Err(nothing_pending(&*store, &config, &name));
    };
    if let Some(wanted) = wanted.filter(|w| *w != req.request_id) {
        return Err(Error::bad(format!(
            "{name}'s pending plan is request {}, not {}: nothing was sent (`teamctl plan list` shows it)",
            crate::output::printable_line(&req.request_id, 256),
            crate::output::printable_line(&wanted, 256)
        )));
    }
    crate::pause::at("plan-answering");
    let env = Envelope::new(
        LEADER,
        name.as_str(),
        Body::PlanApprovalResponse {
            request_id: req.request_id.clone(),
            approve: Approve(approve),
            feedback,
        },
    );
    bus::recipients(&config, &env)?;
    ctx.reconcile(&*store)?;
    bus::deliver(&*store, &config, &env)?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "name": name.as_str(),
            "requestId": req.request_id,
            "approve": approve,
        }));
    } else {
        let verb = if approve { "approved" } else { "rejected" };
        crate::outln!(
            "{verb} {name}'s plan ({})",
            crate::output::printable_line(&req.request_id, 256)
        );
    }
    Ok(())
}

/// Why `name` has no plan to answer (bad input: nothing is sent): still writing it (its plan
/// command runs), or none waits.
fn nothing_pending(store: &dyn Store, config: &TeamConfig, name: &Name) -> Error {
    match config.member(name.as_str()).and_then(|m| writing(store, m)) {
        Some(words) => Error::bad(format!(
            "{words}; `teamctl wait {name}` returns once it asks for approval (or its turn ends)"
        )),
        None => Error::bad(format!(
            "{name} has no plan waiting for approval (see `teamctl plan list`)"
        )),
    }
}

/// `bob is still writing its plan (round 1 of 3)`, while `member`'s plan command runs.
fn writing(store: &dyn Store, member: &Member) -> Option<String> {
    let live = store.live(&member.name).ok().flatten()?;
    let round = live.planning_while(leader::effective_status(member, Some(&live)))?;
    let rounds = crate::worker::PLAN_ROUNDS;
    // A round out of range is not a worker's (a state edited by hand): not repeated.
    let of = if (1..=rounds).contains(&round) {
        format!(" (round {round} of {rounds})")
    } else {
        String::new()
    };
    Some(format!("{} is still writing its plan{of}", member.name))
}

fn list(ctx: &Ctx, store: &dyn Store) -> Result<()> {
    let pending: Vec<Pending> = pending(store)?.into_values().collect();
    if ctx.json {
        ctx.print_json(&serde_json::to_value(&pending).unwrap_or_default());
        return Ok(());
    }
    // Those still writing theirs, under the list: one to come.
    let config = store.load()?;
    let writing: Vec<String> = config
        .teammates()
        .filter(|m| !pending.iter().any(|p| p.name == m.name.as_str()))
        .filter_map(|m| writing(store, m))
        .collect();
    if pending.is_empty() {
        crate::outln!("no plans waiting for approval");
    }
    for p in &pending {
        crate::outln!(
            "{} {}",
            ctx.paint.bold(&p.name),
            ctx.paint.dim(&crate::output::printable_line(
                &format!("(request {}, {})", p.request_id, p.timestamp),
                256
            ))
        );
        for line in crate::output::printable(&p.plan).lines() {
            crate::outln!("  {line}");
        }
        crate::outln!(
            "  {}",
            ctx.paint.dim(&format!(
                "teamctl plan approve {0} | teamctl plan reject {0} --feedback TEXT",
                p.name
            ))
        );
    }
    for w in writing {
        crate::outln!("{}", ctx.paint.dim(&w));
    }
    Ok(())
}

/// Every teammate's pending plan, by name: the request each one that is
/// `awaiting_plan_approval` waits on (named in its live state, read first; an older worker's
/// latest), unless an answer to it is on its way. A request of a turn that was interrupted stays
/// in the leader's inbox unanswered; it is never taken for the one waited on now.
pub fn pending(store: &dyn Store) -> Result<BTreeMap<String, Pending>> {
    let config = store.load()?;
    let awaited: BTreeMap<&str, leader::Awaited> = config
        .members
        .iter()
        .filter_map(|m| Some((m.name.as_str(), leader::awaited_plan(store, m)?)))
        .collect();
    let leader = Name::leader();
    let mut found: BTreeMap<String, Pending> = BTreeMap::new();
    for e in crate::store::entries(store, &leader, Position::START) {
        let Item::Message(env) = e?.item else {
            continue;
        };
        let Body::PlanApprovalRequest { request_id, plan } = env.body else {
            continue;
        };
        let Some(wanted) = awaited.get(env.from.as_str()) else {
            continue;
        };
        if !wanted.is(&request_id) {
            continue;
        }
        // The worker's own request is the first with its id: it is sent before the live
        // state names it, so a line appended after with that id (from another process that
        // read the state) cannot change the plan shown and approved (attacker QA). Of a
        // worker that names none, the latest.
        if matches!(wanted, leader::Awaited::Request(_)) && found.contains_key(&env.from) {
            continue;
        }
        found.insert(
            env.from.clone(),
            Pending {
                name: env.from,
                request_id,
                plan,
                timestamp: env.timestamp,
            },
        );
    }
    crate::pause::at("plan-inbox-read");
    // Still waited on once no answer is seen: a worker that took an answer while the inbox
    // was read has moved its cursor past it only after it said it no longer waits (new-user
    // QA: two `plan approve` at once both answered, the second after the worker had taken
    // the first answer and finished the turn).
    found.retain(|name, p| {
        config.member(name).is_some_and(|m| {
            !leader::plan_answered(store, m, &p.request_id)
                && leader::awaited_plan(store, m).is_some_and(|a| a.is(&p.request_id))
        })
    });
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{LiveState, Status};

    /// The race a CI run hit: a turn interrupted while awaiting approval leaves its request
    /// unanswered in the leader's inbox; the next message's request is sent, then the worker
    /// says it waits. `plan list` (and `plan approve`, which answers what it lists) read the
    /// leader's inbox between the two, then the worker's state: the old request was taken for
    /// the one waited on (its approval then answered nothing). The state names the request.
    #[test]
    fn an_interrupted_turns_request_is_never_the_pending_one() {
        let dir = tempfile::tempdir().unwrap();
        let team = Name::parse("t").unwrap();
        let store = crate::store::mem::MemStore::new(team, dir.path().to_path_buf());
        let bob = Name::parse("bob").unwrap();
        let now = crate::domain::time::now_ms();
        store
            .update(&mut |cfg| {
                // Of another host, so its lease (not this host's processes) says it runs.
                cfg.members.push(leader::remote_member(Status::Idle, now));
                Ok(())
            })
            .unwrap();
        let request = |id: &str, plan: &str| {
            let body = Body::PlanApprovalRequest {
                request_id: id.into(),
                plan: plan.into(),
            };
            store
                .append(&Name::leader(), &Envelope::new("bob", LEADER, body))
                .unwrap();
        };
        let awaiting = |id: Option<&str>| {
            let live = LiveState {
                lease_until: Some(now + 60_000),
                plan_request: id.map(str::to_string),
                ..LiveState::new(Status::AwaitingPlanApproval, 7, now)
            };
            store.set_live(&bob, &live).unwrap();
        };
        request("old", "plan for job");
        // The new request is named before the leader's inbox is read again: nothing is shown
        // rather than the old one.
        awaiting(Some("new"));
        assert!(pending(&store).unwrap().is_empty());
        request("new", "plan for next job");
        let p = pending(&store).unwrap().remove("bob").unwrap();
        assert_eq!(
            (p.request_id.as_str(), p.plan.as_str()),
            ("new", "plan for next job")
        );
        // A later request still in the inbox (not possible from one worker, but a forged line)
        // does not displace the one named, nor a later line with its id change its plan.
        request("later", "plan for something else");
        request("new", "a harmless plan");
        let p = pending(&store).unwrap().remove("bob").unwrap();
        assert_eq!(
            (p.request_id.as_str(), p.plan.as_str()),
            ("new", "plan for next job")
        );
        // A state written by an older teamctl names none: its latest request is meant.
        awaiting(None);
        assert_eq!(pending(&store).unwrap()["bob"].plan, "a harmless plan");
        // Answered: not pending any more.
        awaiting(Some("new"));
        let answer = Envelope::new(
            LEADER,
            "bob",
            Body::PlanApprovalResponse {
                request_id: "new".into(),
                approve: Approve(true),
                feedback: None,
            },
        );
        store.append(&bob, &answer).unwrap();
        assert!(pending(&store).unwrap().is_empty());
        // Nor once the worker no longer waits.
        store
            .set_live(&bob, &LiveState::new(Status::Idle, 7, now))
            .unwrap();
        assert!(pending(&store).unwrap().is_empty());
    }
}
