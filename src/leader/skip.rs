//! `resume --skip-turn`: a teammate that is down in a turn on a message still unhandled (one
//! that kills its worker each time it runs, say) is started past that message. Its cursor moves
//! past it, its sender hears the turn will not run (a failure notice in reply to it, as a failed
//! turn's), and a task it was working on for it is failed. All of it under the teammate's start
//! lock, so no worker of it runs meanwhile.

use crate::bus;
use crate::domain::name::AgentId;
use crate::domain::task::TaskStatus;
use crate::domain::time::now_ms;
use crate::domain::{Body, Envelope, LEADER, Name};
use crate::error::{Error, Result};
use crate::store::{Item, Position, Store};

/// The turn a teammate is started past.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub name: Name,
    /// The message of the turn.
    pub id: String,
    pub from: String,
    pub summary: String,
    /// Whether its sender was told (not a teammate's reply, nor the teammate's own mail:
    /// those get no answer from a turn either; nor a sender no longer in the team).
    pub told: bool,
    /// Why the sender could not be told, when writing to it failed (a full disk, say): the
    /// skip stands all the same (attacker QA 40: it stopped half done, the teammate not
    /// started and its retry refused).
    pub untold: Option<String>,
    /// The task failed with it, if it was working on one.
    pub task: Option<u64>,
}

/// The message `name` is down in a turn on, still unhandled and next in its inbox: where its
/// turn's message ends, and the message. An error that says why there is none.
fn turn_to_skip(store: &dyn Store, name: &Name) -> Result<(Position, Envelope)> {
    let config = store.load()?;
    let member = config.require(name.as_str())?;
    let live = store.live(name)?;
    let status = super::effective_status(member, live.as_ref());
    if status.is_running() && !super::cut_short(member, status) {
        let interrupt = if status == crate::domain::Status::Working {
            format!("; `teamctl interrupt {name}` ends the turn it is in")
        } else {
            String::new()
        };
        return Err(Error::bad(format!(
            "{name} is running ({status}): --skip-turn skips the turn of a teammate that is down in it{interrupt}"
        )));
    }
    let Some(turn) = live.and_then(|l| l.current_turn) else {
        return Err(Error::bad(format!(
            "{name} is {status} and was in no turn when it ended: nothing to skip (`teamctl resume {name}` starts it)"
        )));
    };
    let mut at = store.cursor(name, crate::worker::READER)?;
    // The first message ahead of it, when the turn's is not next: then it is either further on
    // (never so by the worker's order: an inbox edited by hand) or behind the cursor, handled
    // or skipped since (the losing side of two skips at once, QA 40: it said "the next
    // unhandled message is X" as if the turn's were still to come).
    let mut ahead: Option<Envelope> = None;
    loop {
        let batch = store.read(name, at, 64)?;
        if batch.is_empty() {
            break;
        }
        for e in batch {
            at = e.end;
            match e.item {
                Item::Message(m) if m.id == turn.message_id => {
                    let Some(next) = ahead else {
                        return Ok((e.end, *m));
                    };
                    return Err(Error::bad(format!(
                        "{name}'s next unhandled message is {} from {}, not {} (the one it was in a turn on): nothing skipped; `teamctl resume {name}` starts it",
                        crate::output::printable(&next.id),
                        crate::output::printable(&next.from),
                        crate::output::printable(&turn.message_id)
                    )));
                }
                // Unreadable lines its worker passes over too.
                Item::Garbage(_) | Item::Blank => {}
                Item::Message(m) => {
                    ahead.get_or_insert(*m);
                }
            }
        }
    }
    Err(Error::bad(format!(
        "{name} was in a turn on {} from {}, which is handled (or skipped) since: nothing to skip (`teamctl resume {name}` starts it)",
        crate::output::printable(&turn.message_id),
        crate::output::printable(&turn.from)
    )))
}

/// Check, without changing anything, that `name` has a turn to skip.
pub fn check_skip(store: &dyn Store, name: &Name) -> Result<()> {
    turn_to_skip(store, name).map(|_| ())
}

/// Skip the turn `name` is down in (see the module comment); checked again under its start lock.
pub fn skip_turn(store: &dyn Store, name: &Name) -> Result<Skipped> {
    let _starting = super::start_lock(store, name)?;
    store.load()?.refuse_if_deleting()?;
    let (end, msg) = turn_to_skip(store, name)?;
    let task = store.live(name)?.and_then(|l| l.current_task);
    store.set_cursor(name, crate::worker::READER, end)?;
    let why = format!(
        "its worker ended in this turn, and the leader skipped the message with `teamctl resume {name} --skip-turn`: it will not run"
    );
    let failed_task = task.filter(|id| fail_task(store, name, *id, &why));
    let (told, untold) = match tell_sender(store, name, &msg, &why) {
        Ok(told) => (told, None),
        Err(e) => (false, Some(e.to_string())),
    };
    // In the teammate's own log too, where the turn and its death are (new-user QA 41: its
    // next worker could only say "handled or skipped since").
    crate::worker::sink::Sink::note_from_outside(
        &store.log_path(name),
        &format!(
            "the leader skipped the message of the turn the last worker ended in, {} (`teamctl resume {name} --skip-turn`): it will not run{}",
            crate::output::turn_words(&crate::domain::TurnInfo {
                message_id: msg.id.clone(),
                from: msg.from.clone(),
                summary: msg.body.preview(),
                started_at: 0,
                hops: 0,
            }),
            if told { "; its sender was told" } else { "" }
        ),
    );
    Ok(Skipped {
        name: name.clone(),
        id: msg.id.clone(),
        from: msg.from.clone(),
        summary: msg.body.preview(),
        told,
        untold,
        task: failed_task,
    })
}

/// Fail task `id` if `name` still holds it in progress; whether it did.
fn fail_task(store: &dyn Store, name: &Name, id: u64, why: &str) -> bool {
    let mut failed = false;
    let _ = store.update_tasks(&mut |l| {
        let t = l.get(id)?;
        if t.status == TaskStatus::InProgress && t.owner.as_ref() == Some(name) {
            l.finish(id, TaskStatus::Failed, Some(why.to_string()), now_ms())?;
            failed = true;
        }
        Ok(())
    });
    failed
}

/// The failure notice to the sender of `msg`, in reply to it, as the worker answers a failed
/// turn (no answer to a teammate's reply, nor to the teammate's own mail). Whether it went.
fn tell_sender(store: &dyn Store, name: &Name, msg: &Envelope, why: &str) -> Result<bool> {
    let teammate_reply = msg.from != LEADER
        && matches!(
            &msg.body,
            Body::Message {
                in_reply_to: Some(_),
                ..
            }
        );
    if teammate_reply || msg.from == name.as_str() {
        return Ok(false);
    }
    let mut body = Body::message(crate::worker::failure_notice(name.as_str(), why), None);
    if let Body::Message { in_reply_to, .. } = &mut body {
        *in_reply_to = Some(msg.id.clone());
    }
    let mut env = Envelope::new(name.as_str(), &msg.from, body);
    env.hops = msg.hops.saturating_add(1);
    let sent = match AgentId::parse(&msg.from, "recipient") {
        // A sender of another team: back there, under this teammate's agent id.
        Ok(Some(id)) if &id.team != store.team() => {
            env.from = name.agent_id(store.team());
            env.to = id.name.as_str().to_string();
            bus::across(store, &id, &env).map(|_| ())
        }
        _ => bus::deliver(store, &store.load()?, &env).map(|_| ()),
    };
    match sent {
        Ok(()) => Ok(true),
        // The sender has left the team: nobody to tell.
        Err(Error::BadInput(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{LiveState, Member, Status, TurnInfo};

    /// A team with teammate `p`, dead (its recorded worker pid runs nothing) in a turn on
    /// message `turn` of `inbox`, its cursor past the first `handled` messages.
    fn dead_in_turn(
        inbox: &[&str],
        turn: &str,
        handled: usize,
    ) -> (crate::store::mem::MemStore, Name, tempfile::TempDir) {
        let team = Name::parse("skipunit").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::mem::MemStore::new(team.clone(), dir.path().to_path_buf());
        let p = Name::parse("p").unwrap();
        store
            .update(&mut |cfg| {
                let mut m = Member::leader(&team, "/".into(), 0);
                m.name = p.clone();
                m.agent_id = p.agent_id(&team);
                m.status = Status::Idle;
                m.backend_type = Some(crate::domain::BackendType::Process);
                m.pid = Some(999_999_999);
                cfg.members.push(m);
                Ok(())
            })
            .unwrap();
        let mut ends = Vec::new();
        for id in inbox {
            let mut env = Envelope::new(LEADER, "p", Body::message(format!("text of {id}"), None));
            env.id = (*id).to_string();
            store.append(&p, &env).unwrap();
            ends.push(
                store
                    .read(&p, Position::START, 1000)
                    .unwrap()
                    .last()
                    .unwrap()
                    .end,
            );
        }
        if handled > 0 {
            store
                .set_cursor(&p, crate::worker::READER, ends[handled - 1])
                .unwrap();
        }
        let mut live = LiveState::new(Status::Working, 999_999_999, 0);
        live.current_turn = Some(TurnInfo {
            message_id: turn.to_string(),
            from: LEADER.to_string(),
            summary: String::new(),
            started_at: 0,
            hops: 0,
        });
        store.set_live(&p, &live).unwrap();
        (store, p, dir)
    }

    fn refusal(store: &dyn Store, p: &Name) -> String {
        check_skip(store, p).unwrap_err().to_string()
    }

    #[test]
    fn the_turn_to_skip_is_the_next_unhandled_message_and_a_refusal_says_where_it_is() {
        // Next: skippable.
        let (store, p, _dir) = dead_in_turn(&["m0", "m1", "m2"], "m1", 1);
        check_skip(&store, &p).unwrap();
        // Behind the cursor (another skip won, or it was handled since): said as that, not as
        // a message still to come (QA 40).
        let (store, p, _dir) = dead_in_turn(&["m0", "m1", "m2"], "m1", 2);
        let why = refusal(&store, &p);
        assert!(
            why.contains(
                "p was in a turn on m1 from team-lead, which is handled (or skipped) since"
            ),
            "{why}"
        );
        // Further on, another message first (an inbox edited by hand): that one is named.
        let (store, p, _dir) = dead_in_turn(&["m0", "m1", "m2"], "m1", 0);
        let why = refusal(&store, &p);
        assert!(
            why.contains("p's next unhandled message is m0 from team-lead, not m1"),
            "{why}"
        );
    }
}
