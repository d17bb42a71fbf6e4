//! Plan approval (`spawn --plan-mode-required --plan CMD`). Before each turn the worker runs the
//! plan command (like a turn: `sh -c`, message on stdin, the turn's environment, plus
//! `TEAMCTL_FEEDBACK` after a rejection), sends `plan_approval_request` to team-lead and waits
//! in `awaiting_plan_approval` for the `plan_approval_response` with that request id from
//! team-lead. The response is found even behind other queued mail (the look-ahead scanner
//! keeps it) and remembered as handled, so it is skipped when the cursor reaches it. A shutdown
//! request is answered while waiting. Three rejections end the turn as failed.

use std::path::PathBuf;
use std::time::Duration;

use super::turn::{Stoppers, TurnEnd, TurnResult, TurnSpec, env_value};
use super::{Next, Worker};
use crate::domain::env;
use crate::domain::message::new_id;
use crate::domain::{Body, Envelope, IdleReason, LEADER, Status};
use crate::error::Result;

/// Rounds of plan, request, rejection before the turn fails.
pub const MAX_ROUNDS: u32 = 3;

/// How each notice of a turn that plan approval ended without running goes on after
/// "teamctl: NAME's ": `ask` fails with them (`is_failure_notice`), as with a failed turn.
pub const NOTICES: [&str; 6] = [
    INTERRUPTED_PLANNING,
    INTERRUPTED_AWAITING,
    PLAN_FAILED,
    NO_PLAN,
    NOT_SENT,
    REJECTED,
];
const INTERRUPTED_PLANNING: &str = "turn was interrupted while planning";
const INTERRUPTED_AWAITING: &str = "turn was interrupted while waiting for plan approval";
const PLAN_FAILED: &str = "plan command failed (";
const NO_PLAN: &str = "plan command printed no plan (its stdout is the plan)";
const NOT_SENT: &str = "plan could not be sent (";
const REJECTED: &str = "plan was rejected ";

/// What the gate decided for the turn.
pub enum Gate {
    /// Run the turn with this plan.
    Approved(String),
    /// The turn is over (failed, interrupted, or the worker stops).
    Done(Next),
}

/// What waiting for a response came to.
enum Answer {
    Approved,
    Rejected(String),
    Interrupted,
    Stop,
}

impl Worker {
    /// Plan, ask, wait; up to three rounds.
    pub(super) async fn plan_gate(
        &mut self,
        env: &Envelope,
        text: &str,
        extra: &[(String, String)],
        stop: &mut Stoppers,
    ) -> Result<Gate> {
        let Some(command) = self.member.plan_command.clone() else {
            return Ok(Gate::Approved(String::new()));
        };
        let mut feedback: Option<String> = None;
        for round in 1..=MAX_ROUNDS {
            self.sink
                .note(&format!("planning (round {round} of {MAX_ROUNDS})"));
            self.live.planning = Some(round);
            self.set_status(Status::Working);
            let mut vars = self.turn_env(env, text, extra);
            vars.push((env::PLAN_ROUND.into(), round.to_string()));
            if let Some(f) = &feedback {
                vars.push((env::FEEDBACK.into(), env_value(f)));
            }
            let spec = TurnSpec {
                command: command.clone(),
                argv: None,
                cwd: PathBuf::from(&self.member.cwd),
                env: vars,
                stdin: text.to_string(),
                timeout: self.member.turn_timeout_secs.map(Duration::from_secs),
                spill: None,
            };
            let result = self.run_spec(&spec, stop).await;
            // Written with the next state: the request sent, or the turn ended.
            self.live.planning = None;
            match result.end {
                TurnEnd::Exited(0) => {}
                TurnEnd::Stopped => {
                    self.exit_on_signal("a stop signal")?;
                    return Ok(Gate::Done(Next::Abandon));
                }
                TurnEnd::Interrupted => {
                    return self.end_turn(
                        env,
                        IdleReason::Interrupted,
                        format!("teamctl: {}'s {INTERRUPTED_PLANNING}", self.name),
                    );
                }
                _ => {
                    let why = result.failure();
                    return self.end_turn(
                        env,
                        IdleReason::Failed,
                        format!("teamctl: {}'s {PLAN_FAILED}{why})", self.name),
                    );
                }
            }
            let plan = result.stdout.trim_end().to_string();
            if plan.trim().is_empty() {
                return self.end_turn(
                    env,
                    IdleReason::Failed,
                    format!("teamctl: {}'s {NO_PLAN}", self.name),
                );
            }
            let request_id = new_id();
            let request = Envelope::new(
                self.name.as_str(),
                LEADER,
                Body::PlanApprovalRequest {
                    request_id: request_id.clone(),
                    plan: plan.clone(),
                },
            );
            // Waiting for an answer to a request that was never delivered would never end.
            if let Err(e) = self.deliver(&request) {
                return self.end_turn(
                    env,
                    IdleReason::Failed,
                    format!("teamctl: {}'s {NOT_SENT}{e})", self.name),
                );
            }
            self.sink.note(&format!(
                "plan sent to {LEADER} for approval ({request_id})"
            ));
            self.await_plan(&request_id);
            match self.await_response(&request_id, stop).await? {
                Answer::Approved => {
                    self.sink.note("plan approved");
                    return Ok(Gate::Approved(plan));
                }
                Answer::Rejected(f) => {
                    self.sink.note(&format!("plan rejected: {f}"));
                    feedback = Some(f);
                    self.set_status(Status::Working);
                }
                Answer::Interrupted => {
                    return self.end_turn(
                        env,
                        IdleReason::Interrupted,
                        format!("teamctl: {}'s {INTERRUPTED_AWAITING}", self.name),
                    );
                }
                Answer::Stop => return Ok(Gate::Done(Next::Abandon)),
            }
        }
        let last = feedback.unwrap_or_default();
        self.end_turn(
            env,
            IdleReason::Failed,
            format!(
                "teamctl: {}'s {REJECTED}{MAX_ROUNDS} times, so the message was not handled (last feedback: {last})",
                self.name
            ),
        )
    }

    /// End the turn without running it: tell the sender why, idle with `reason`.
    fn end_turn(&mut self, env: &Envelope, reason: IdleReason, notice: String) -> Result<Gate> {
        self.sink.note(&notice);
        if env.from != self.name.as_str() {
            let mut body = Body::message(notice.clone(), None);
            if let Body::Message { in_reply_to, .. } = &mut body {
                *in_reply_to = Some(env.id.clone());
            }
            self.send(&env.from, body)?;
        }
        self.finish_turn(reason, notice.clone());
        // A task turn fails (or is interrupted) with it.
        let end = match reason {
            IdleReason::Interrupted => TurnEnd::Interrupted,
            _ => TurnEnd::Exited(1),
        };
        self.task_turn_done(&TurnResult {
            spawned: true,
            end,
            stdout: String::new(),
            stderr_tail: notice,
        });
        Ok(Gate::Done(self.after_turn()?))
    }

    /// Say (in the live state) that the worker waits for the answer to `request_id`.
    fn await_plan(&mut self, request_id: &str) {
        self.mark_status(Status::AwaitingPlanApproval);
        self.live.plan_request = Some(request_id.to_string());
        self.save_live();
    }

    /// Wait for team-lead's answer to `request_id`, answering shutdown requests meanwhile.
    async fn await_response(&mut self, request_id: &str, stop: &mut Stoppers) -> Result<Answer> {
        let bell = self.bell.clone();
        loop {
            self.scan_control()?;
            if let Some(req) = self.control.take_shutdown() {
                if self.answer_shutdown(&req, stop).await? == Next::Exit {
                    return Ok(Answer::Stop);
                }
                self.await_plan(request_id);
            }
            if let Some(answer) = self.take_response(request_id) {
                return Ok(answer);
            }
            tokio::select! {
                () = bell.notified() => {}
                _ = stop.terminate.recv() => {
                    self.exit_on_signal("SIGTERM")?;
                    return Ok(Answer::Stop);
                }
                _ = stop.hangup.recv() => {
                    self.exit_on_signal("SIGHUP")?;
                    return Ok(Answer::Stop);
                }
                _ = stop.interrupt.recv() => return Ok(Answer::Interrupted),
                // Its live state removed or replaced while it waits: written anew at once, as
                // when idle (attacker QA: `plan list` showed nothing, for good).
                () = self.own_files_rang() => {
                    if self.own_files_wrong() {
                        tokio::time::sleep(super::watch::REMOVAL_SETTLE).await;
                        self.put_right_own_files();
                    }
                }
            }
        }
    }

    /// The kept response to `request_id` from team-lead, if it has come; the others are
    /// dropped with a note (they answer nothing that is pending).
    fn take_response(&mut self, request_id: &str) -> Option<Answer> {
        let (found, notes) = self.control.take_plan_answer(request_id);
        for note in notes {
            self.sink.note(&note);
        }
        let found = found?;
        self.remember_control(&found.id);
        self.save_live();
        Some(if found.approve {
            Answer::Approved
        } else {
            Answer::Rejected(found.feedback)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every notice of a turn plan approval ended makes `ask` fail, and only `name`'s own.
    #[test]
    fn plan_notices_are_failure_notices() {
        use crate::worker::is_failure_notice;
        for n in NOTICES {
            assert!(
                is_failure_notice("bob", &format!("teamctl: bob's {n}x)")),
                "{n}"
            );
            assert!(
                !is_failure_notice("bo", &format!("teamctl: bob's {n}x)")),
                "{n}"
            );
        }
        assert!(is_failure_notice(
            "bob",
            "teamctl: bob's turn failed (exit status 1)"
        ));
        assert!(!is_failure_notice("bob", "bob's plan was rejected 3 times"));
        assert!(!is_failure_notice("bob", "teamctl: bob's plan is fine"));
    }
}
