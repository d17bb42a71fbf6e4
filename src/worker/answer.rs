//! What the worker sends: a turn's answer to its sender (not when the turn reported already,
//! never to a teammate's reply; kept while it cannot be written), mail to the leader, and
//! delivery against the team's roster as last read (or back to another team, `send
//! NAME@TEAM`).

use std::time::Duration;

use super::turn::{Stoppers, TurnEnd, TurnResult};
use super::{Worker, failure_notice};
use crate::bus;
use crate::domain::name::AgentId;
use crate::domain::{Body, Envelope, LEADER, Name};
use crate::error::{Error, Result};
use crate::store::{Item, Position};

impl Worker {
    /// Whether `sender`'s inbox, from byte `from` on, holds a message of ours in reply to `id`.
    pub(super) fn reported(&self, sender: &Name, from: Position, id: &str) -> bool {
        crate::store::entries(&*self.store, sender, from)
            .map_while(|e| e.ok())
            .any(|e| {
                matches!(&e.item, Item::Message(m) if m.from == self.name.as_str()
                    && matches!(&m.body, Body::Message { in_reply_to: Some(r), .. } if r == id))
            })
    }

    /// Send the turn's stdout (or a failure notice) back to the sender. A teammate's reply is
    /// never answered automatically, so two agents cannot ping-pong forever.
    fn answer(&mut self, env: &Envelope, result: &TurnResult) -> Result<()> {
        let is_teammate_reply = env.from != LEADER
            && matches!(
                &env.body,
                Body::Message {
                    in_reply_to: Some(_),
                    ..
                }
            );
        if is_teammate_reply || env.from == self.name.as_str() {
            return Ok(());
        }
        let text = if result.succeeded() {
            if result.stdout.trim().is_empty() {
                return Ok(());
            }
            result.stdout.clone()
        } else if result.end == TurnEnd::Stopped {
            return Ok(());
        } else {
            let mut notice = failure_notice(self.name.as_str(), &result.failure());
            // The reason came from stderr (its last lines): what the turn printed, which may
            // say more, is in the log only (new-user QA 45: the notice dropped its stdout
            // without a word; 46: and the start of a long stderr).
            if result.end != TurnEnd::NoReply && !result.stderr_tail.trim().is_empty() {
                notice.push_str(&format!(
                    "; what it printed is in `teamctl log --worker {}`",
                    self.name
                ));
            }
            notice
        };
        let mut body = Body::message(text, None);
        if let Body::Message { in_reply_to, .. } = &mut body {
            *in_reply_to = Some(env.id.clone());
        }
        self.send_hops(&env.from, body, env.hops.saturating_add(1))
    }

    /// `answer`, waiting while it cannot be written: no room on the file system (ENOSPC,
    /// EDQUOT), or the sender's inbox not a directory (a file or link in its place). The
    /// answer is kept in memory and written once it can be, the message stays unhandled
    /// meanwhile (the cursor does not move), and the worker lives on, its log saying why
    /// (once). Before, the failed write ended the worker, silently on a full disk (its log
    /// was full too), and each `resume` ran the turn again into the same failure (both QA
    /// passes). A sender no longer in the team is not waited for (`send_hops`), nor a team
    /// that is gone. False:
    /// SIGTERM or SIGHUP came first, and the message is left for `resume`.
    pub(super) async fn answer_with_room(
        &mut self,
        env: &Envelope,
        result: &TurnResult,
        stop: &mut Stoppers,
    ) -> Result<bool> {
        let mut wait = Duration::from_millis(200);
        let mut waited = false;
        loop {
            match self.answer(env, result) {
                // A team that is gone (removed by hand) is not waited for: the worker ends,
                // as it did before.
                Err(e) if self.store.stamp().is_none() => return Err(e),
                Err(e) => {
                    // Nor a team whose path is not teamctl's: the answer cannot be written
                    // (its append found a link on its way from the home); the worker ends
                    // saying why (`check_path`), the message unhandled for `resume`.
                    self.check_path()?;
                    if !waited {
                        let why = if no_room(&e) {
                            "no room"
                        } else {
                            "cannot write it"
                        };
                        self.sink.note(&format!(
                            "{why}: the answer to {} waits ({e}); trying again until it can be written",
                            env.from
                        ));
                        waited = true;
                    }
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        _ = stop.terminate.recv() => {
                            self.exit_on_signal("SIGTERM")?;
                            return Ok(false);
                        }
                        _ = stop.hangup.recv() => {
                            self.exit_on_signal("SIGHUP")?;
                            return Ok(false);
                        }
                    }
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
                Ok(()) => {
                    if waited {
                        self.sink
                            .note(&format!("the answer to {} is written", env.from));
                    }
                    return Ok(true);
                }
            }
        }
    }

    pub(super) fn send(&mut self, to: &str, body: Body) -> Result<()> {
        self.send_hops(to, body, 0)
    }

    /// Send with a hop count (the loop guard).
    fn send_hops(&mut self, to: &str, body: Body, hops: u32) -> Result<()> {
        // No look at the team's path first (`check_path`): an append walks down from the
        // home by directory descriptors, never through a link (`store::inbox`), so it lands
        // in the real inbox or fails. A worker whose path check trips between a turn and
        // its answer thus still answers (and stores its cursor) before it ends: refused, the
        // handled message ran again at `resume` (attacker QA: 13 of 106 under a swap loop).
        let mut env = Envelope::new(self.name.as_str(), to, body);
        env.hops = hops;
        let sent = match AgentId::parse(to, "recipient") {
            // A sender of another team (`send NAME@TEAM`): the answer goes back there, under
            // this teammate's agent id.
            Ok(Some(id)) if &id.team != self.store.team() => {
                env.from = self.name.agent_id(self.store.team());
                env.to = id.name.as_str().to_string();
                bus::across(&*self.store, &id, &env).map(|_| Vec::new())
            }
            _ => self.deliver(&env),
        };
        match sent {
            Ok(_) => Ok(()),
            // The sender may have left the team; say so in the log, keep working.
            Err(Error::BadInput(why)) => {
                self.sink.note(&format!("could not answer {to}: {why}"));
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Validate and append `env`, against the team file as it is now (read again only when
    /// it changed: with 300 members it is about 200 KB of JSON, and every turn sends twice).
    pub(super) fn deliver(&mut self, env: &Envelope) -> Result<Vec<Name>> {
        if let Some(done) = bus::to_leader(&*self.store, &self.name, env) {
            return done;
        }
        // As a roster: a teammate's reply to another reads one member's worth of the team
        // file after a change to it, not all 400 KB of 1,000 members.
        let roster = self.store.roster_cached(&mut self.roster)?;
        bus::deliver_in(&*self.store, roster, env)
    }
}

/// The file system has no room for a write (ENOSPC), or the user's quota is spent (EDQUOT).
fn no_room(e: &Error) -> bool {
    matches!(
        e.io_kind(),
        Some(std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
    )
}
