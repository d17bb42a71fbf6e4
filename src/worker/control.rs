//! The worker's look ahead of its cursor, pure (no I/O): the control messages that are acted on
//! before the mail queued ahead of them (the leader's newest shutdown request, plan approval
//! answers), which plan answer settles the pending request, and what a message at the cursor
//! leads to. `Worker::scan_control` feeds it what the inbox holds.

use crate::store::Position;
use std::collections::VecDeque;

use crate::domain::{Body, Envelope, LEADER};

/// Plan answers kept from the look-ahead at most (older ones are stale).
const MAX_KEPT: usize = 16;

/// What the look-ahead found and has not been acted on yet.
#[derive(Debug, Default)]
pub(super) struct Control {
    /// Where in the inbox the look-ahead has read to.
    scanned_to: Position,
    shutdown: Option<Envelope>,
    plan_replies: Vec<Envelope>,
}

/// The answer the leader gave to a plan approval request.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PlanAnswer {
    /// The answer's message id (remembered as handled).
    pub id: String,
    pub approve: bool,
    pub feedback: String,
}

/// What a message at the cursor leads to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Action<'a> {
    /// Seen already (a repeat, or a control message acted on ahead of the cursor).
    Skip,
    /// A turn on this text.
    Turn(&'a str),
    /// The assigned task.
    Task(u64, &'a str),
    /// Answer a shutdown request.
    Shutdown,
    /// Not for teammates (its kind, for the log).
    Ignore(&'static str),
}

impl Control {
    /// Where the next look-ahead starts: never behind the cursor, each byte read once.
    pub fn start(&self, cursor: Position) -> Position {
        self.scanned_to.max(cursor)
    }

    /// The look-ahead has read up to `pos`.
    pub fn scanned(&mut self, pos: Position) {
        self.scanned_to = pos;
    }

    /// The inbox was made anew: read it from its start.
    pub fn restart(&mut self) {
        self.scanned_to = Position::START;
    }

    /// Take in one message found ahead of the cursor, unless `handled` lists it. The leader's
    /// newest shutdown request is the one answered (it is the one the leader waits for); an
    /// older one still pending is settled by that answer and its id is returned, to be
    /// remembered as handled. Anyone else's request is left to the cursor (`action` ignores it).
    pub fn see(&mut self, env: Envelope, handled: &[String]) -> Option<String> {
        if handled.contains(&env.id) {
            return None;
        }
        match env.body {
            Body::ShutdownRequest { .. } if env.from == LEADER => {
                self.shutdown.replace(env).map(|old| old.id)
            }
            Body::PlanApprovalResponse { .. } => {
                if self.plan_replies.len() == MAX_KEPT {
                    self.plan_replies.remove(0);
                }
                self.plan_replies.push(env);
                None
            }
            _ => None,
        }
    }

    /// The shutdown request to answer now, if one was found.
    pub fn take_shutdown(&mut self) -> Option<Envelope> {
        self.shutdown.take()
    }

    pub fn shutdown_pending(&self) -> bool {
        self.shutdown.is_some()
    }

    /// The kept answer to `request_id` from team-lead, if it has come, and a note for each
    /// other answer kept, all dropped (they answer nothing that is pending).
    pub fn take_plan_answer(&mut self, request_id: &str) -> (Option<PlanAnswer>, Vec<String>) {
        let mut found = None;
        let mut notes = Vec::new();
        for env in std::mem::take(&mut self.plan_replies) {
            let Body::PlanApprovalResponse {
                request_id: rid,
                approve,
                feedback,
            } = env.body
            else {
                continue;
            };
            if env.from != LEADER {
                notes.push(format!(
                    "ignored a plan_approval_response from {} (only {LEADER} may answer)",
                    env.from
                ));
            } else if rid != request_id || found.is_some() {
                notes.push(format!(
                    "ignored a plan_approval_response for request {rid} (not the pending one)"
                ));
            } else {
                found = Some(PlanAnswer {
                    id: env.id,
                    approve: approve.0,
                    feedback: feedback.unwrap_or_default(),
                });
            }
        }
        (found, notes)
    }
}

/// What the message at the cursor leads to, given the ids handled lately (`seen`) and the
/// control messages acted on ahead of the cursor (`handled`).
pub(super) fn action<'a>(
    env: &'a Envelope,
    seen: &VecDeque<String>,
    handled: &[String],
) -> Action<'a> {
    if seen.contains(&env.id) || handled.contains(&env.id) {
        return Action::Skip;
    }
    match &env.body {
        Body::Message { text, .. } => Action::Turn(text),
        Body::TaskAssignment { task_id, subject } => Action::Task(*task_id, subject),
        Body::ShutdownRequest { .. } => Action::Shutdown,
        other => Action::Ignore(other.kind()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::message::Approve;

    fn shutdown(from: &str, id: &str) -> Envelope {
        let mut e = Envelope::new(
            from,
            "ann",
            Body::ShutdownRequest {
                request_id: format!("r-{id}"),
                reason: None,
            },
        );
        e.id = id.into();
        e
    }

    fn plan(from: &str, id: &str, request: &str, approve: bool) -> Envelope {
        let mut e = Envelope::new(
            from,
            "ann",
            Body::PlanApprovalResponse {
                request_id: request.into(),
                approve: Approve(approve),
                feedback: (!approve).then(|| "smaller".to_string()),
            },
        );
        e.id = id.into();
        e
    }

    #[test]
    fn the_leaders_newest_shutdown_request_is_answered_and_settles_the_older() {
        let mut c = Control::default();
        assert_eq!(c.see(shutdown(LEADER, "a"), &[]), None);
        assert_eq!(c.see(shutdown(LEADER, "b"), &[]), Some("a".into()));
        // A teammate's request is not the leader's: left to the cursor.
        assert_eq!(c.see(shutdown("bob", "c"), &[]), None);
        assert!(c.shutdown_pending());
        assert_eq!(c.take_shutdown().map(|e| e.id), Some("b".into()));
        assert!(!c.shutdown_pending());
    }

    #[test]
    fn a_handled_control_message_is_not_taken_again() {
        let mut c = Control::default();
        c.see(shutdown(LEADER, "a"), &["a".into()]);
        assert!(!c.shutdown_pending());
    }

    #[test]
    fn the_look_ahead_never_starts_behind_the_cursor_and_restarts_on_a_new_inbox() {
        let p = Position::from_raw;
        let mut c = Control::default();
        assert_eq!(c.start(p(10)), p(10));
        c.scanned(p(40));
        assert_eq!(c.start(p(10)), p(40));
        assert_eq!(c.start(p(50)), p(50));
        c.restart();
        assert_eq!(c.start(Position::START), Position::START);
    }

    #[test]
    fn only_the_leaders_answer_to_the_pending_request_counts_and_the_rest_are_dropped() {
        let mut c = Control::default();
        c.see(plan("bob", "1", "req", true), &[]);
        c.see(plan(LEADER, "2", "old", true), &[]);
        c.see(plan(LEADER, "3", "req", false), &[]);
        c.see(plan(LEADER, "4", "req", true), &[]);
        let (answer, notes) = c.take_plan_answer("req");
        assert_eq!(
            answer,
            Some(PlanAnswer {
                id: "3".into(),
                approve: false,
                feedback: "smaller".into()
            })
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("from bob"));
        // Taken once: nothing is kept.
        assert_eq!(c.take_plan_answer("req"), (None, Vec::new()));
    }

    #[test]
    fn plan_answers_kept_are_bounded_oldest_first_out() {
        let mut c = Control::default();
        for i in 0..=MAX_KEPT {
            c.see(plan(LEADER, &i.to_string(), &format!("r{i}"), true), &[]);
        }
        assert_eq!(c.take_plan_answer("r0").0, None, "the oldest was dropped");
        for i in 0..=MAX_KEPT {
            c.see(plan(LEADER, &i.to_string(), &format!("r{i}"), true), &[]);
        }
        assert_eq!(
            c.take_plan_answer(&format!("r{MAX_KEPT}")).0.map(|a| a.id),
            Some(MAX_KEPT.to_string())
        );
    }

    #[test]
    fn a_message_at_the_cursor_leads_to_its_action() {
        let seen: VecDeque<String> = ["dup".to_string()].into();
        let handled = ["ctl".to_string()];
        let mut m = Envelope::new("bob", "ann", Body::message("hi", None));
        assert_eq!(action(&m, &seen, &handled), Action::Turn("hi"));
        m.id = "dup".into();
        assert_eq!(action(&m, &seen, &handled), Action::Skip);
        let s = shutdown(LEADER, "ctl");
        assert_eq!(action(&s, &seen, &handled), Action::Skip);
        let s = shutdown("bob", "x");
        assert_eq!(action(&s, &seen, &handled), Action::Shutdown);
        let t = Envelope::new(
            LEADER,
            "ann",
            Body::TaskAssignment {
                task_id: 7,
                subject: "fix".into(),
            },
        );
        assert_eq!(action(&t, &seen, &handled), Action::Task(7, "fix"));
        let p = plan(LEADER, "p", "r", true);
        assert_eq!(
            action(&p, &seen, &handled),
            Action::Ignore("plan_approval_response")
        );
    }
}
