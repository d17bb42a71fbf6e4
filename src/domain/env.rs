//! The turn environment, written down once: every `TEAMCTL_*` variable teamctl sets for an
//! agent (its turn, or an interactive agent's session) or reads as a global option, and what
//! each one is. The worker sets them; the tmux runner and the process backend remove the
//! identity ones (a tmux server would hand them to every pane, a worker started from inside a
//! turn would inherit them); `main` reads the option ones. Pure data.

/// State directory (also the `--home` option).
pub const HOME: &str = "TEAMCTL_HOME";
/// The team's name (also the `--team` option).
pub const TEAM: &str = "TEAMCTL_TEAM";
/// The teammate's name (also the `--as` option).
pub const AGENT_NAME: &str = "TEAMCTL_AGENT_NAME";
/// `NAME@TEAM`: inside a turn a command acts as this teammate and no one else.
pub const AGENT_ID: &str = "TEAMCTL_AGENT_ID";
/// The teammate's prompt (`spawn --prompt`).
pub const PROMPT: &str = "TEAMCTL_PROMPT";
/// Who sent the message the turn handles.
pub const FROM: &str = "TEAMCTL_FROM";
/// The message's text.
pub const MESSAGE: &str = "TEAMCTL_MESSAGE";
/// The message's id.
pub const MESSAGE_ID: &str = "TEAMCTL_MESSAGE_ID";
/// The message's summary.
pub const SUMMARY: &str = "TEAMCTL_SUMMARY";
/// The hop count of the message being handled.
pub const HOPS: &str = "TEAMCTL_HOPS";
/// The agent's session id (`--session-id` / `--resume`).
pub const SESSION_ID: &str = "TEAMCTL_SESSION_ID";
/// Which turn of the session this is (1 for the first).
pub const TURN: &str = "TEAMCTL_TURN";
/// The teammate's model (`spawn --model`).
pub const MODEL: &str = "TEAMCTL_MODEL";
/// The shutdown request a shutdown turn answers (`teamctl shutdown-response`).
pub const SHUTDOWN_REQUEST_ID: &str = "TEAMCTL_SHUTDOWN_REQUEST_ID";
/// Why the leader asked the teammate to stop.
pub const SHUTDOWN_REASON: &str = "TEAMCTL_SHUTDOWN_REASON";
/// The task a turn works on (an assignment or an auto-claim).
pub const TASK_ID: &str = "TEAMCTL_TASK_ID";
/// The approved plan (`--plan-mode-required`).
pub const PLAN: &str = "TEAMCTL_PLAN";
/// Which planning round this is (1 to 3).
pub const PLAN_ROUND: &str = "TEAMCTL_PLAN_ROUND";
/// Why the leader rejected the last plan.
pub const FEEDBACK: &str = "TEAMCTL_FEEDBACK";
/// An interactive teammate's companion: the agent's pane it delivers into.
pub const COMPANION_PANE: &str = "TEAMCTL_COMPANION_PANE";
/// That pane's tmux server as members record it (empty: the default server).
pub const COMPANION_SERVER: &str = "TEAMCTL_COMPANION_SERVER";
/// A worker's pane made by teamctl: the agent id as teamctl tags it (`worker::placed`). The
/// worker takes it out of its own environment as it starts.
pub const PLACED: &str = "TEAMCTL_PLACED";
/// The random word of the start that placed the teammate (`Member::pane_nonce`), in every
/// agent process teamctl starts for it (its turns, an interactive teammate's agent): what
/// tells a leftover of its turns, to be ended with it, from a program of anyone's that sets
/// `TEAMCTL_AGENT_ID` (`backend::ending`).
pub const PLACEMENT: &str = "TEAMCTL_PLACEMENT";

/// One variable and where it belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    /// Names an agent or its turn: never passed to tmux (the server would hand it to panes)
    /// nor to a detached worker started from inside a turn.
    pub identity: bool,
    /// Stands in for a global option; an empty value counts as unset.
    pub option: bool,
}

const fn var(name: &'static str, identity: bool, option: bool) -> Var {
    Var {
        name,
        identity,
        option,
    }
}

/// The table.
pub const VARS: &[Var] = &[
    var(HOME, false, true),
    var(TEAM, true, true),
    var(AGENT_NAME, true, true),
    var(AGENT_ID, true, false),
    var(FROM, true, false),
    var(MESSAGE, true, false),
    var(MESSAGE_ID, true, false),
    var(SUMMARY, true, false),
    var(PROMPT, true, false),
    var(HOPS, true, false),
    var(SESSION_ID, true, false),
    var(TURN, true, false),
    var(MODEL, true, false),
    var(SHUTDOWN_REQUEST_ID, true, false),
    var(SHUTDOWN_REASON, true, false),
    var(PLACEMENT, true, false),
    var(TASK_ID, false, false),
    var(PLAN, false, false),
    var(PLAN_ROUND, false, false),
    var(FEEDBACK, false, false),
    var(COMPANION_PANE, false, false),
    var(COMPANION_SERVER, false, false),
    var(PLACED, false, false),
];

/// The variables naming an agent or its turn.
pub fn identity() -> impl Iterator<Item = &'static str> {
    VARS.iter().filter(|v| v.identity).map(|v| v.name)
}

/// The store a team is made in (`create --store`); it may carry a login.
pub const STORE: &str = "TEAMCTL_STORE";

/// How often (ms) a worker on a store that hosts share renews its lease (`worker::heartbeat`).
pub const HEARTBEAT_MS: &str = "TEAMCTL_HEARTBEAT_MS";

/// What a worker and its turns never inherit from whoever started them: the identity variables
/// (the launch sets the worker's own), the variables only a task's or a plan's turn is given
/// (set in the leader's shell, they reached every turn: a `task done` in a turn that had no
/// task could close the wrong one; attacker QA), and the store's address, which may carry a
/// login (the team's pointer file names the store; an agent's environment can end up in its
/// output), and the mark of a worker's pane (`PLACED`: tmux would hand it to every pane).
pub fn not_inherited() -> impl Iterator<Item = &'static str> {
    identity().chain([TASK_ID, PLAN, PLAN_ROUND, FEEDBACK, STORE, PLACED])
}

/// The variables that stand in for global options.
pub fn options() -> impl Iterator<Item = &'static str> {
    VARS.iter().filter(|v| v.option).map(|v| v.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_is_what_tmux_and_a_resumed_worker_must_not_inherit() {
        let mut ids: Vec<&str> = identity().collect();
        ids.sort_unstable();
        let mut want = [
            "TEAMCTL_AGENT_ID",
            "TEAMCTL_AGENT_NAME",
            "TEAMCTL_TEAM",
            "TEAMCTL_FROM",
            "TEAMCTL_MESSAGE",
            "TEAMCTL_MESSAGE_ID",
            "TEAMCTL_SUMMARY",
            "TEAMCTL_PLACEMENT",
            "TEAMCTL_PROMPT",
            "TEAMCTL_HOPS",
            "TEAMCTL_SESSION_ID",
            "TEAMCTL_TURN",
            "TEAMCTL_MODEL",
            "TEAMCTL_SHUTDOWN_REQUEST_ID",
            "TEAMCTL_SHUTDOWN_REASON",
        ];
        want.sort_unstable();
        assert_eq!(ids, want);
        assert!(!ids.contains(&HOME), "the home is not an identity");
        let opts: Vec<&str> = options().collect();
        assert_eq!(opts, [HOME, TEAM, AGENT_NAME]);
    }
}
