//! `teamctl plan list|approve NAME|reject NAME --feedback F`: answer plan approval requests.
//! A request is pending when it is the teammate's latest `plan_approval_request` in the
//! leader's inbox, the teammate is `awaiting_plan_approval`, and no response to it is in the
//! teammate's inbox yet. Looking never moves the leader's `inbox` cursor.

use crate::store::Position;
use std::collections::BTreeMap;

use crate::bus;
use crate::cli::PlanCommand;
use crate::context::Ctx;
use crate::domain::message::Approve;
use crate::domain::{Body, Envelope, LEADER, Name};
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
    let (name, approve, feedback) = match cmd {
        PlanCommand::List => {
            ctx.reconcile(&*store)?;
            return list(ctx, &*store);
        }
        PlanCommand::Approve(a) => (Name::teammate(&a.name)?, true, None),
        PlanCommand::Reject(a) => {
            if a.feedback.trim().is_empty() {
                return Err(Error::bad(
                    "--feedback is empty; say what the plan should change",
                ));
            }
            (Name::teammate(&a.name)?, false, Some(a.feedback))
        }
    };
    let config = store.load()?;
    config.require(name.as_str())?;
    let Some(req) = pending(&*store)?.remove(name.as_str()) else {
        return Err(Error::bad(format!(
            "{name} has no plan waiting for approval (see `teamctl plan list`)"
        )));
    };
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
            crate::output::printable(&req.request_id)
        );
    }
    Ok(())
}

fn list(ctx: &Ctx, store: &dyn Store) -> Result<()> {
    let pending: Vec<Pending> = pending(store)?.into_values().collect();
    if ctx.json {
        ctx.print_json(&serde_json::to_value(&pending).unwrap_or_default());
        return Ok(());
    }
    if pending.is_empty() {
        crate::outln!("no plans waiting for approval");
        return Ok(());
    }
    for p in &pending {
        crate::outln!(
            "{} {}",
            ctx.paint.bold(&p.name),
            ctx.paint.dim(&crate::output::printable(&format!(
                "(request {}, {})",
                p.request_id, p.timestamp
            )))
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
    Ok(())
}

/// Every teammate's pending plan, by name.
pub fn pending(store: &dyn Store) -> Result<BTreeMap<String, Pending>> {
    let config = store.load()?;
    let leader = Name::leader();
    let mut latest: BTreeMap<String, Pending> = BTreeMap::new();
    for e in crate::store::entries(store, &leader, Position::START) {
        let Item::Message(env) = e?.item else {
            continue;
        };
        if let Body::PlanApprovalRequest { request_id, plan } = env.body {
            latest.insert(
                env.from.clone(),
                Pending {
                    name: env.from,
                    request_id,
                    plan,
                    timestamp: env.timestamp,
                },
            );
        }
    }
    latest.retain(|name, p| {
        let Some(member) = config.member(name) else {
            return false;
        };
        leader::plan_pending(store, member, &p.request_id)
    });
    Ok(latest)
}
