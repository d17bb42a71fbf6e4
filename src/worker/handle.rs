//! One message handled: what it leads to (`control::action`), the checks before its turn (a
//! worker whose member moved handles nothing more; the loop guard on hops), its turn (the plan
//! gate, then the interactive pane or the agent), and after the turn: the answer to its
//! sender, the outcome kept for the next idle notification, and `--max-turns`.

use super::control::{self, Action};
use super::turn::{Stoppers, TurnEnd, TurnResult};
use super::{Next, SEEN, Worker, heartbeat, plan, turn};
use crate::domain::env;
use crate::domain::time::now_ms;
use crate::domain::{Body, Envelope, IdleReason, LEADER, Name, Status, TurnInfo};
use crate::error::Result;
use crate::store::Position;

impl Worker {
    pub(super) async fn handle(&mut self, env: Envelope, stop: &mut Stoppers) -> Result<Next> {
        let action = control::action(&env, &self.seen, &self.live.handled_control);
        if action == Action::Skip {
            return Ok(Next::Continue);
        }
        // A worker back from a pause (or a cut-off network) whose member has moved or was
        // stopped meanwhile handles nothing more: the message stays for the member's worker.
        // The team file is read through the worker's cache: again only when it changed.
        let why = match &self.owner {
            Some(owner) => self
                .store
                .load_cached(&mut self.config)
                .ok()
                .and_then(|config| heartbeat::lost_in(config, &self.name, owner)),
            None => None,
        };
        if let Some(why) = why {
            self.sink
                .note(&format!("{why}; exiting without handling more mail"));
            return Ok(Next::Abandon);
        }
        crate::domain::bounded::push(&mut self.seen, env.id.clone(), SEEN);
        if matches!(action, Action::Turn(_) | Action::Task(..)) && self.over_hops(&env)? {
            return Ok(Next::Continue);
        }
        match action {
            Action::Skip => Ok(Next::Continue),
            Action::Turn(text) => self.turn(&env, text, &[], stop).await,
            Action::Task(task_id, subject) => {
                self.assigned_task(&env, task_id, subject, stop).await
            }
            Action::Shutdown => self.answer_shutdown(&env, stop).await,
            Action::Ignore(kind) => {
                self.sink.note(&format!(
                    "ignored a {kind} from {} (not for teammates)",
                    env.from
                ));
                Ok(Next::Continue)
            }
        }
    }

    /// The loop guard: a message more hops away from its origin than the team allows is
    /// left stored but starts no turn, and the leader hears of the loop once.
    fn over_hops(&mut self, env: &Envelope) -> Result<bool> {
        // Hop 0 (the leader's mail, anything sent from outside a turn) is within any limit:
        // the team file, read again after every change to it (400 KB with 1,000 members, each
        // worker parsing it on its next message), is not parsed for it. Only that it is there.
        if env.hops == 0 && self.store.stamp().is_some() {
            return Ok(false);
        }
        let max = self.store.load_cached(&mut self.config)?.max_hops();
        if env.hops <= max {
            return Ok(false);
        }
        self.sink.note(&format!(
            "loop guard: not answering {} from {} ({} hops, over --max-hops {max})",
            env.id, env.from, env.hops
        ));
        if self.store.first_loop_notice(&env.from, self.name.as_str()) {
            let text = format!(
                "teamctl: loop guard: {from} and {me} kept messaging each other; a message from {from} to {me} reached {hops} hops (over --max-hops {max}) and started no turn. It is stored: `teamctl inbox {me} --all` shows it; send {me} a new message to go on.",
                from = env.from,
                me = self.name,
                hops = env.hops
            );
            self.send(LEADER, Body::message(text, None))?;
        }
        Ok(true)
    }

    /// Run one turn for `env` and answer its sender.
    pub(super) async fn turn(
        &mut self,
        env: &Envelope,
        text: &str,
        extra_env: &[(String, String)],
        stop: &mut Stoppers,
    ) -> Result<Next> {
        let summary = env.body.preview();
        self.live.current_turn = Some(TurnInfo {
            message_id: env.id.clone(),
            from: env.from.clone(),
            summary: summary.clone(),
            started_at: now_ms(),
            hops: env.hops,
        });
        if self.member.runs_agent() && !self.member.plan_mode_required {
            // Written just before the message can reach the agent, with the process group it
            // runs in (for `interrupt`): one live-state write per turn start instead of two.
            self.mark_status(Status::Working);
        } else {
            self.set_status(Status::Working);
        }
        // One line whatever a hand-written inbox line holds (attacker QA 41: a newline in its
        // sender or summary forged a line of the log).
        self.sink.note(&format!(
            "<- {}: {}",
            crate::output::printable_line(&env.from, 80),
            crate::output::printable_line(&summary, 200)
        ));
        let mut extra_env = extra_env.to_vec();
        let mut with_plan = None;
        if self.member.plan_mode_required {
            match self.plan_gate(env, text, &extra_env, stop).await? {
                plan::Gate::Approved(plan) => {
                    extra_env.push((env::PLAN.into(), turn::env_value(&plan)));
                    // A preset agent reads no environment: the plan goes with the message
                    // (second new-user pass: a Claude teammate never saw its approved plan).
                    if self.member.agent.is_some() && !plan.trim().is_empty() {
                        with_plan = Some(format!(
                            "{text}\n\nYour plan for this, approved by {LEADER}:\n{plan}"
                        ));
                    }
                    self.set_status(Status::Working);
                }
                plan::Gate::Done(next) => return Ok(next),
            }
        }
        let text = with_plan.as_deref().unwrap_or(text);
        // Where the sender's inbox ends now: a report the turn sends itself lands after it.
        let sender_end = Name::parse(&env.from)
            .ok()
            .and_then(|n| Some((self.store.inbox_end(&n).ok()?, n)));
        if self.companion.is_some() {
            // Working (and the turn recorded, for `interrupt`) once the message is pasted.
            let Some(result) = self.interactive_turn(env, text, stop).await? else {
                return Ok(Next::Abandon);
            };
            // Whatever the agent asked the user belonged to this turn.
            self.live.needs_user = None;
            return self
                .turn_done(env, summary, &result, sender_end, stop)
                .await;
        }
        let Some(result) = self.agent_turn(env, text, &extra_env, stop).await? else {
            // No agent command: show the message for a person to answer.
            self.sink.output(format!("{text}\n").as_bytes());
            self.finish_turn(IdleReason::Available, summary);
            return self.after_turn();
        };
        self.turn_done(env, summary, &result, sender_end, stop)
            .await
    }

    /// After a turn: answer the sender (unless the turn reported to it already with
    /// `teamctl send`, which carried `inReplyTo`), record the outcome, stop or go on.
    async fn turn_done(
        &mut self,
        env: &Envelope,
        summary: String,
        result: &TurnResult,
        sender_end: Option<(Position, Name)>,
        stop: &mut Stoppers,
    ) -> Result<Next> {
        match sender_end {
            Some((from, sender)) if result.succeeded() && self.reported(&sender, from, &env.id) => {
                // That report was the answer, `ask` took it; the turn's output stays in the
                // pane and the log only.
                self.sink.note(&format!(
                    "{} already has this turn's report (teamctl send); its output is not sent again",
                    env.from
                ));
            }
            _ => {
                if !self.answer_with_room(env, result, stop).await? {
                    // Not handled: the cursor stays, so `resume` runs this message again.
                    return Ok(Next::Abandon);
                }
            }
        }
        // In the teammate's own log too, after the output that may say why (new-user QA 45:
        // `log --worker` showed a failed turn's output and nothing saying it had failed). A
        // kill and an interrupt in the pane have their note already.
        match result.end {
            TurnEnd::Exited(c) if c != 0 => {
                self.sink
                    .note(&format!("the turn failed ({})", result.end_words()));
            }
            TurnEnd::NoReply => self.sink.note("the turn failed (no reply)"),
            // Its timeout was said as it began to end it; this closes the turn as the others
            // are (new-user QA 46).
            TurnEnd::TimedOut if self.companion.is_none() => {
                self.sink.note("the turn failed (timed out)");
            }
            TurnEnd::Interrupted if self.companion.is_none() => {
                self.sink
                    .note("the turn was interrupted (teamctl interrupt)");
            }
            _ => {}
        }
        let reason = match result.end {
            TurnEnd::Exited(0) => IdleReason::Available,
            TurnEnd::Interrupted => IdleReason::Interrupted,
            _ => IdleReason::Failed,
        };
        let what = if result.succeeded() {
            summary
        } else {
            result.failure()
        };
        self.finish_turn(reason, what);
        self.task_turn_done(result);
        if result.end == TurnEnd::Stopped {
            // Not handled: the cursor stays, so `resume` runs this message again.
            self.exit_on_signal("a stop signal")?;
            return Ok(Next::Abandon);
        }
        self.after_turn()
    }

    pub(super) fn finish_turn(&mut self, reason: IdleReason, what: String) {
        self.live.turns += 1;
        self.live.current_turn = None;
        self.live.last_idle_reason = Some(reason);
        let worst = match (&self.since_idle, reason) {
            (Some((IdleReason::Failed, w)), IdleReason::Available) => {
                (IdleReason::Failed, w.clone())
            }
            _ => (reason, what),
        };
        self.since_idle = Some(worst);
    }

    /// After a turn: stop when `--max-turns` is reached.
    pub(super) fn after_turn(&mut self) -> Result<Next> {
        match self.member.max_turns {
            Some(max) if self.live.turns >= max => {
                self.go_idle();
                let text = format!(
                    "{} stopped after {max} turns (--max-turns {max}); unread mail stays on disk, `teamctl resume {}` brings it back",
                    self.name, self.name
                );
                self.send(LEADER, Body::message(text, None))?;
                self.stop_cleanly()?;
                Ok(Next::Exit)
            }
            _ => Ok(Next::Continue),
        }
    }
}
