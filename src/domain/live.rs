//! A running worker's live state: what it is doing right now. Written only by the worker
//! itself (one writer, atomic replace), read by `status`, `wait` and the leader console.

use serde::{Deserialize, Serialize};

use super::member::Status;
use super::message::IdleReason;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveState {
    pub status: Status,
    /// The worker's own pid.
    pub pid: u32,
    /// When the worker's process started (field 22 of `/proc/PID/stat`, clock ticks since
    /// boot; `backend::proc::start_time`), read by the worker itself as it starts. With `pid`
    /// it names that one process for good: in a tmux pane the worker is the pane's process, so
    /// a pane running this pid with another start time runs a program the system gave the
    /// same pid again (the user's, respawned into the pane), not teamctl's. Absent in a state
    /// an older teamctl wrote (the pid alone decides then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
    /// The process group of the running turn, when a turn runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_pgid: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_turn: Option<TurnInfo>,
    /// The task being worked on, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_task: Option<u64>,
    /// When the status last changed (ms).
    pub since: u64,
    /// When the worker last wrote this file (ms).
    pub last_seen: u64,
    /// Turns run since the worker started.
    #[serde(default)]
    pub turns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_idle_reason: Option<IdleReason>,
    /// The tmux pane the worker runs in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    /// Control messages (shutdown requests) already answered out of order, so a restart
    /// does not answer them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handled_control: Vec<String>,
    /// The member's session (`sessionId`) the turn count below belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Turns started in that session, kept across restarts (`TEAMCTL_TURN` is this + 1).
    #[serde(default)]
    pub session_turns: u64,
    /// On a store that hosts share: until when (ms, the worker's clock) the worker vouches
    /// that it runs. Its heartbeat renews it (`Store::renew_lease`); another host judges the
    /// worker dead once it has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<u64>,
    /// An interactive teammate whose agent waits for the user to answer something in its
    /// pane (a permission prompt, a trust dialog): what, as its companion last saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_user: Option<String>,
    /// An interactive teammate whose mail cannot be pasted into its agent now: why, as its
    /// companion last saw it (its prompt not seen since it started, its input line not empty:
    /// text typed in the pane, or a `--prompt-pattern` that does not match). Cleared once a
    /// message goes in. `status` and `doctor` show it while mail is unread; `spawn` and
    /// `resume` warn of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_waits: Option<String>,
    /// Why the worker cannot watch its inbox (something not a directory where it should be):
    /// no mail is read until that is moved away. `status` and `doctor` show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox_problem: Option<String>,
    /// Why the worker ended with an error, written as it exits (its lock taken by something
    /// not a lock file, its team file unreadable): `resume`, `spawn`, `send` and `status` say
    /// it, not only its pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_reason: Option<String>,
    /// Why the worker will end once its running turn is done (Ctrl-C in its pane): `status`
    /// shows it as stopping meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<String>,
    /// While `awaiting_plan_approval`: the id of the request the worker waits on. The leader
    /// answers that one, never an older request still in its inbox (one of a turn that was
    /// interrupted). Absent in a state an older teamctl wrote (its latest request is taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_request: Option<String>,
    /// While its plan command runs: the round (1 to 3). The leader's `plan approve` says the
    /// plan is still being written (not that none waits), `status` shows `working (planning)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning: Option<u32>,
}

impl LiveState {
    /// A state with `status` for worker `pid` at `now` (ms) and nothing else known yet: no
    /// turn, task, pane, session or lease. Callers set what they know on top of it.
    pub fn new(status: Status, pid: u32, now: u64) -> LiveState {
        LiveState {
            status,
            pid,
            start_ticks: None,
            turn_pgid: None,
            current_turn: None,
            current_task: None,
            since: now,
            last_seen: now,
            turns: 0,
            last_idle_reason: None,
            pane_id: None,
            handled_control: Vec::new(),
            session: None,
            session_turns: 0,
            lease_until: None,
            needs_user: None,
            mail_waits: None,
            inbox_problem: None,
            exit_reason: None,
            stopping: None,
            plan_request: None,
            planning: None,
        }
    }

    /// The plan round its plan command runs, for a teammate judged `status`: only while it
    /// works (a dead or stopped worker's word is history).
    pub fn planning_while(&self, status: Status) -> Option<u32> {
        self.planning.filter(|_| status == Status::Working)
    }

    /// Whether this, the state a worker left as it ended, says it never took message `id`: it
    /// was in another message's turn, or it ended itself (stopped, or wrote why it ended:
    /// a worker killed in a turn on `id` does neither). Nothing recorded says nothing: a turn
    /// is recorded only once its agent runs, so one that ended its worker at once leaves no
    /// trace.
    pub fn not_taken(&self, id: &str) -> bool {
        let in_its_turn = self
            .current_turn
            .as_ref()
            .is_some_and(|t| t.message_id == id);
        !in_its_turn
            && (self.current_turn.is_some()
                || self.exit_reason.is_some()
                || self.status == Status::Stopped)
    }
}

/// How every `exitReason` of an interactive teammate whose program ended begins (its
/// companion's `why_ended`): nothing of teamctl's is broken then, and `resume` (or mail sent
/// to it) starts the program again; other reasons (its lock spoiled, say) need fixing first.
pub const PROGRAM_ENDED: &str = "its program ";

/// Whether `exit_reason` says the teammate's program ended (`PROGRAM_ENDED`).
pub fn program_ended(exit_reason: &str) -> bool {
    exit_reason.starts_with(PROGRAM_ENDED)
}

/// How often a worker on a store that hosts share renews its lease, and how long each renewal
/// lasts: several beats may be missed (a slow server, a paused host) before others call it dead.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(5);
pub const LEASE: std::time::Duration = std::time::Duration::from_secs(20);

/// A teammate's own answer to the shutdown request its turn is handling, written by
/// `teamctl shutdown-response` inside that turn and sent by the worker once the turn ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownAnswer {
    pub request_id: String,
    pub approve: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnInfo {
    pub message_id: String,
    pub from: String,
    pub summary: String,
    pub started_at: u64,
    /// The hop count of the message the turn handles (the loop guard). An interactive
    /// agent's pane has no `TEAMCTL_HOPS`; its commands read this instead. Absent means 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hops: u32,
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_record_of_something_else_says_a_message_was_not_taken() {
        let mut l = LiveState::new(Status::Idle, 7, 0);
        assert!(
            !l.not_taken("m"),
            "killed while idle: it may have just taken m"
        );
        l.status = Status::Working;
        l.current_turn = Some(TurnInfo {
            message_id: "m".into(),
            from: "team-lead".into(),
            summary: String::new(),
            started_at: 0,
            hops: 0,
        });
        assert!(!l.not_taken("m"), "in its turn on m");
        l.exit_reason = Some("its program ended".into());
        assert!(!l.not_taken("m"), "in its turn on m, whatever else it says");
        l.current_turn.as_mut().unwrap().message_id = "other".into();
        assert!(l.not_taken("m"));
        l.current_turn = None;
        assert!(l.not_taken("m"), "it wrote why it ended");
        l.exit_reason = None;
        assert!(!l.not_taken("m"));
        l.status = Status::Stopped;
        assert!(l.not_taken("m"), "it stopped itself");
    }
}
