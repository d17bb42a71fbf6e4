//! The team file's shape (SPEC section 3): the team, its members and their lifecycle states.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::name::{LEADER, Name};
use crate::error::{Error, Result};

/// `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamConfig {
    pub name: Name,
    #[serde(default)]
    pub description: String,
    pub created_at: u64,
    pub lead_agent_id: String,
    #[serde(default)]
    pub lead_session_id: String,
    #[serde(default)]
    pub members: Vec<Member>,
    /// The tmux session created for this team outside tmux, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_session: Option<String>,
    /// Where the last teammate went in that session: a hint that spares the next spawn a
    /// look-up, checked by tmux itself before it is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_fill: Option<TmuxFill>,
    /// Set (to the time, ms) by `delete` under the team file's lock before it stops anyone:
    /// from then on `send`, `spawn` and `resume` refuse the team (docs/PROTOCOL.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleting: Option<u64>,
    /// How many hops a message may travel from agent to agent before it starts no turn
    /// (`create --max-hops`; default `DEFAULT_MAX_HOPS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hops: Option<u32>,
    /// Fields written by other versions, kept as they are.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The window of the team's detached tmux session that the last teammate was split into,
/// on which server, and how many panes it had then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TmuxFill {
    /// The server as members record it (`tmuxSocket`); `None` for the default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The window id (`@N`).
    pub window: String,
    pub panes: usize,
}

/// The loop guard's default: a chain of agent-to-agent messages longer than this starts no turn.
pub const DEFAULT_MAX_HOPS: u32 = 10;

/// The longest `--prompt` (a member's instructions, `prompt` in `up`'s file), in bytes. It
/// travels in a command-line argument, an environment variable and, for an interactive
/// teammate, the one message of at most 16 KiB that tmux takes a command in: longer ones
/// failed every turn ("Argument list too long") or the spawn ("command too long").
pub const MAX_PROMPT: usize = 8 * 1024;

/// `prompt` refused when it is longer than `MAX_PROMPT`, saying what to do instead.
pub fn check_prompt(prompt: &str) -> Result<(), String> {
    if prompt.len() > MAX_PROMPT {
        return Err(format!(
            "the prompt is {} bytes, over the {MAX_PROMPT} a teammate's prompt may have; put long instructions in a file in its directory and have the prompt point to it",
            prompt.len()
        ));
    }
    Ok(())
}

/// `model` refused when an agent CLI could read it as something other than a model name: a
/// leading `-` makes it a flag of the CLI's own (attacker QA: `--model=--yolo` gave Gemini CLI
/// `--model --yolo`, every tool approved), and control characters or blanks are no model's.
pub fn check_model(model: &str) -> Result<(), String> {
    if model.trim().is_empty() {
        return Err("the model is empty; give a model name or leave --model out".into());
    }
    if model.starts_with('-') {
        return Err(format!(
            "{model:?} begins with '-', which the agent would read as one of its own flags, not a model name"
        ));
    }
    if model.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!(
            "{model:?} holds a blank or control character, which no model name has"
        ));
    }
    Ok(())
}

impl TeamConfig {
    /// Every member's agent id made its name at this team, whatever the file said: the id
    /// tags the member's panes and processes (a shared file may have been written by anyone).
    pub fn fix_agent_ids(&mut self) {
        for m in &mut self.members {
            m.agent_id = m.name.agent_id(&self.name);
        }
    }

    pub fn max_hops(&self) -> u32 {
        self.max_hops.unwrap_or(DEFAULT_MAX_HOPS)
    }

    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name.as_str() == name)
    }

    pub fn member_mut(&mut self, name: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.name.as_str() == name)
    }

    /// A member by name, or a bad-input error that lists who is there.
    pub fn require(&self, name: &str) -> Result<&Member> {
        self.member(name).ok_or_else(|| self.unknown(name))
    }

    /// `require` of each of `names`, in order, copied.
    pub fn require_all(&self, names: &[Name]) -> Result<Vec<Member>> {
        names
            .iter()
            .map(|n| self.require(n.as_str()).cloned())
            .collect()
    }

    pub fn unknown(&self, name: &str) -> Error {
        unknown_member(&self.name, self.members.iter().map(|m| &m.name), name)
    }

    /// `unknown` of several names at once (`given` holds one or more).
    pub fn unknown_all(&self, given: &[&str]) -> Error {
        unknown_members(&self.name, self.members.iter().map(|m| &m.name), given)
    }

    /// The error for a command that would touch a team being deleted, if it is.
    pub fn refuse_if_deleting(&self) -> Result<()> {
        match self.deleting {
            Some(_) => Err(deleting_error(&self.name)),
            None => Ok(()),
        }
    }

    /// Every teammate (every member but the leader).
    pub fn teammates(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| !m.name.is_leader())
    }

    /// `NAME` (a teammate of this team) or, without one, every teammate (`shutdown`, `resume`).
    pub fn named_or_all(&self, name: Option<&str>) -> Result<Vec<Name>> {
        match name {
            Some(n) => {
                let name = Name::teammate(n)?;
                self.require(name.as_str())?;
                Ok(vec![name])
            }
            None => Ok(self.teammates().map(|m| m.name.clone()).collect()),
        }
    }

    /// The colour for the next member: the palette in order, skipping used colours.
    pub fn next_color(&self) -> &'static str {
        next_color(
            self.members.iter().map(|m| m.color.as_str()),
            self.members.len(),
        )
    }
}

/// The palette's first colour none of `used` has, else the palette's `count`-th (wrapping).
pub(crate) fn next_color<'a>(used: impl Iterator<Item = &'a str>, count: usize) -> &'static str {
    let used: Vec<&str> = used.collect();
    COLORS
        .iter()
        .copied()
        .find(|c| !used.contains(c))
        .unwrap_or(COLORS[count % COLORS.len()])
}

/// No member `name` in `team`: a bad-input error that lists who is there.
pub(crate) fn unknown_member<'a>(
    team: &Name,
    members: impl Iterator<Item = &'a Name>,
    name: &str,
) -> Error {
    unknown_members(team, members, &[name])
}

/// None of `given` (one or more) is a member of `team`: one line naming each, with what each
/// most likely meant, then who is there (new-user QA 41: `resume a nosuch1 nosuch2` named the
/// first unknown name only, so a second try met the next).
pub(crate) fn unknown_members<'a>(
    team: &Name,
    members: impl Iterator<Item = &'a Name>,
    given: &[&str],
) -> Error {
    let names: Vec<&Name> = members.collect();
    // The one meant, most likely: one a reader cannot tell apart from it (`looks_like`), else
    // the nearest within two edits (a letter left out, doubled, swapped or mistyped).
    let meant = |name: &str| {
        let parsed = Name::parse(name).ok();
        names
            .iter()
            .find(|n| parsed.as_ref().is_some_and(|p| n.looks_like(p)))
            .or_else(|| {
                names
                    .iter()
                    .map(|n| (strsim::damerau_levenshtein(n.as_str(), name), n))
                    .filter(|(d, _)| *d <= 2 && *d < name.len())
                    .min_by_key(|(d, _)| *d)
                    .map(|(_, n)| n)
            })
            .map(|n| n.as_str())
    };
    let said = match given {
        [name] => format!(
            "no member {name:?} in team {team}{}",
            meant(name).map_or(String::new(), |n| format!(" (did you mean {n:?}?)"))
        ),
        several => {
            // A command line of thousands of names: the first few, and how many more (attacker
            // QA 42: one line of 1.6 MB, and a guess looked for each).
            const NAMED: usize = 20;
            let mut quoted: Vec<String> = several
                .iter()
                .take(NAMED)
                .map(|n| format!("{n:?}"))
                .collect();
            if several.len() > NAMED {
                quoted.push(format!("and {} more", several.len() - NAMED));
            }
            let guesses: Vec<String> = several
                .iter()
                .take(NAMED)
                .filter_map(|g| meant(g).map(|n| format!("{n:?} for {g:?}")))
                .collect();
            format!(
                "no members {} in team {team}{}",
                quoted.join(", "),
                if guesses.is_empty() {
                    String::new()
                } else {
                    format!(" (did you mean {}?)", guesses.join(", "))
                }
            )
        }
    };
    // A big team's every name is no help on one line: the first few, and where the rest are.
    const SHOWN: usize = 20;
    let mut list: Vec<&str> = names.iter().take(SHOWN).map(|n| n.as_str()).collect();
    let more = names.len().saturating_sub(SHOWN);
    let more = if more > 0 {
        list.push("...");
        format!(" ({more} more: `teamctl status` lists them all)")
    } else {
        String::new()
    };
    // One name, like none of theirs: most likely a teammate not spawned yet (new-user QA 45:
    // `send bob` before any spawn named the members only).
    let spawn = match given {
        [name] if meant(name).is_none() && Name::parse(name).is_ok() => {
            format!("; a new teammate: `teamctl spawn {name} --exec CMD`")
        }
        _ => String::new(),
    };
    Error::bad(format!("{said}; members: {}{more}{spawn}", list.join(", ")))
}

/// The error for a command that would touch `team` while it is being deleted.
pub(crate) fn deleting_error(team: &Name) -> Error {
    Error::failed(format!(
        "team {team} is being deleted; nothing is sent to it or started in it (a `teamctl delete` that was interrupted is finished by `teamctl delete --force --team {team}`)"
    ))
}

/// A text field that reads as absent when it holds anything but text (as it did when these
/// fields were read from `extra`).
fn string_or_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

/// Member colours, usable as `--color` and understood by tmux and the terminal.
pub const COLORS: &[&str] = &["blue", "green", "yellow", "magenta", "cyan", "red", "white"];

/// One member of the team: the leader or a teammate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub agent_id: String,
    pub name: Name,
    #[serde(default)]
    pub agent_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default)]
    pub color: String,
    #[serde(default)]
    pub joined_at: u64,
    #[serde(default)]
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The agent command run through `sh -c` for each message; none means a person answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<BackendType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When the process `pid` names started (clock ticks since boot, `/proc/PID/stat`), read
    /// as teamctl recorded the pid: the system may give a pid again to another process, whose
    /// start time differs (`worker::placed` takes a worker for the recorded one only when both
    /// agree; `0`: the process had ended already when recorded, so none is it). Absent for an
    /// older teamctl's record (the pid alone decides then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_started: Option<u64>,
    /// A random word teamctl made when it placed the member in its pane (`paneId`) and set
    /// on that pane too (`@teamctl-nonce`): a dead pane, which runs nothing to check, is
    /// closed as the member's only when it carries this word (`backend::tmux::close_cmd`).
    /// The worker placed there is given it too (`env::PLACEMENT`: `worker::placed`).
    /// Absent for a member placed by an older teamctl, or on the process backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_nonce: Option<String>,
    pub status: Status,
    #[serde(default)]
    pub plan_mode_required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_command: Option<String>,
    #[serde(default)]
    pub auto_claim: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_timeout_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u64>,
    /// The command run on a shutdown request; a non-zero exit refuses, its output the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_shutdown: Option<String>,
    /// The tmux server (`-L` socket name or `-S` path) the pane lives on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_socket: Option<String>,
    /// The git worktree made for this teammate, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// The one conversation this member continues turn after turn, across crashes and
    /// `resume` (a UUID; `TEAMCTL_SESSION_ID` in each turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent preset run for each turn (`spawn --agent`), instead of `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What the user added after `--` to the preset's command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_args: Vec<String>,
    /// An interactive teammate: its agent's own TUI runs in the pane, and a detached companion
    /// worker pastes each message into it (see `domain::interactive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive: Option<super::Interactive>,
    /// The repository a worktree was made from, and its branch, so it can be made again for
    /// `resume` after it was removed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_none"
    )]
    pub worktree_repo: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_none"
    )]
    pub worktree_branch: Option<String>,
    /// The shutdown request whose answer the leader waits for.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_none"
    )]
    pub shutdown_request_id: Option<String>,
    /// The shutdown request whose approval removes this teammate's worktree too: recorded by
    /// `shutdown --remove-worktree` for a teammate that had not stopped when it returned
    /// (`--no-wait`, its `--timeout` passed), so whichever command takes in the answer removes
    /// it (`leader::trees`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_none"
    )]
    pub remove_worktree_on: Option<String>,
    /// Where the worker was last started, on a store that hosts share (NATS); none on the
    /// file store, whose members all run on the host of its home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// Fields written by other versions, kept as they are.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Member {
    /// Where its worker was placed, as `spawn`, `resume` and `up` say it: `tmux, pane %3`,
    /// `process, pid 42` (new-user QA 37: each said it its own way).
    pub fn placed_at(&self) -> String {
        let kind = self.backend_type.map(|k| k.to_string()).unwrap_or_default();
        match (&self.pane_id, self.pid) {
            (Some(p), _) => format!("{kind}, pane {p}"),
            (None, Some(pid)) => format!("{kind}, pid {pid}"),
            _ => kind,
        }
    }

    /// Whether an agent answers this member's messages (a command or a preset).
    pub fn runs_agent(&self) -> bool {
        self.command.is_some() || self.agent.is_some()
    }

    /// The leader's entry in `members`.
    pub fn leader(team: &Name, cwd: String, now: u64) -> Member {
        let name = Name::leader();
        Member {
            agent_id: name.agent_id(team),
            name,
            agent_type: LEADER.into(),
            model: None,
            color: "white".into(),
            joined_at: now,
            cwd,
            prompt: None,
            command: None,
            backend_type: None,
            pane_id: None,
            pid: None,
            pid_started: None,
            pane_nonce: None,
            status: Status::Active,
            plan_mode_required: false,
            plan_command: None,
            auto_claim: false,
            turn_timeout_secs: None,
            max_turns: None,
            on_shutdown: None,
            tmux_socket: None,
            worktree: None,
            session_id: None,
            agent: None,
            agent_args: Vec::new(),
            interactive: None,
            worktree_repo: None,
            worktree_branch: None,
            shutdown_request_id: None,
            remove_worktree_on: None,
            host: None,
            extra: serde_json::Map::default(),
        }
    }
}

/// What a member runs: the parts of its record that become a command line, a shell command or
/// a working directory on the host that starts it. On a store that hosts share each host
/// keeps its own copy (`store::spec`) and runs that, not what the shared file says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    pub cwd: String,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub agent_args: Vec<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub on_shutdown: Option<String>,
    #[serde(default)]
    pub plan_command: Option<String>,
    #[serde(default)]
    pub interactive: Option<super::Interactive>,
    #[serde(default)]
    pub worktree: Option<String>,
    #[serde(default)]
    pub worktree_repo: Option<String>,
    #[serde(default)]
    pub worktree_branch: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Where it was last placed on this host (which backend, which tmux server).
    #[serde(default)]
    pub backend_type: Option<BackendType>,
    #[serde(default)]
    pub tmux_socket: Option<String>,
}

impl Spec {
    pub fn of(m: &Member) -> Spec {
        Spec {
            cwd: m.cwd.clone(),
            command: m.command.clone(),
            agent: m.agent.clone(),
            agent_args: m.agent_args.clone(),
            model: m.model.clone(),
            prompt: m.prompt.clone(),
            on_shutdown: m.on_shutdown.clone(),
            plan_command: m.plan_command.clone(),
            interactive: m.interactive.clone(),
            worktree: m.worktree.clone(),
            worktree_repo: m.worktree_repo.clone(),
            worktree_branch: m.worktree_branch.clone(),
            session_id: m.session_id.clone(),
            backend_type: m.backend_type,
            tmux_socket: m.tmux_socket.clone(),
        }
    }

    /// `m` with these parts in place of its own.
    pub fn apply(&self, m: &mut Member) {
        m.cwd = self.cwd.clone();
        m.command = self.command.clone();
        m.agent = self.agent.clone();
        m.agent_args = self.agent_args.clone();
        m.model = self.model.clone();
        m.prompt = self.prompt.clone();
        m.on_shutdown = self.on_shutdown.clone();
        m.plan_command = self.plan_command.clone();
        m.interactive = self.interactive.clone();
        m.worktree = self.worktree.clone();
        m.worktree_repo = self.worktree_repo.clone();
        m.worktree_branch = self.worktree_branch.clone();
        m.session_id = self.session_id.clone();
        // Known once it was placed here (a spec written before that has none).
        if self.backend_type.is_some() {
            m.backend_type = self.backend_type;
            m.tmux_socket = self.tmux_socket.clone();
        }
    }

    /// Everything it runs, for people: one `key: value` per line, text escaped.
    pub fn describe(&self) -> String {
        let json = serde_json::to_value(self).unwrap_or_default();
        let mut out = String::new();
        if let Some(map) = json.as_object() {
            for (k, v) in map {
                if v.is_null() || v.as_array().is_some_and(Vec::is_empty) {
                    continue;
                }
                out.push_str(&format!("  {k}: {}\n", plain(&v.to_string())));
            }
        }
        out
    }
}

/// The host and teamctl home a member's worker was started from, on a store that hosts share.
/// A member recorded with another host than the one looking is judged by its heartbeat lease
/// (`LiveState::lease_until`), never by this host's processes or tmux, and only its own host
/// ends its processes and closes its pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Host {
    /// The host's name (its hostname), for people and, with `key`, to tell hosts apart.
    pub name: String,
    /// The teamctl home there (a path on that host), for people.
    pub home: String,
    /// That home's key (a hash of its canonical path): two homes on one machine are two hosts.
    pub key: String,
    /// The machine and home's own id (`backend::host`): two machines that share a hostname and
    /// a home path (cloned VMs, containers) are still two hosts.
    #[serde(default)]
    pub id: String,
    /// When the worker was started there (ms).
    pub since: u64,
}

/// A host's name or home as read from the shared team file: control characters (newlines
/// too) and bidirectional controls escaped, so a forged one cannot reach a terminal, reorder
/// a line or break a table row.
pub fn plain(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if super::text::obeyed_by_terminals(c) {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host {} (home {})", plain(&self.name), plain(&self.home))
    }
}

/// Where a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendType {
    Tmux,
    Process,
}

impl fmt::Display for BackendType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendType::Tmux => "tmux",
            BackendType::Process => "process",
        })
    }
}

/// A member's lifecycle state (SPEC section 6). `active` is the leader's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Starting,
    Working,
    Idle,
    AwaitingPlanApproval,
    ShutdownPending,
    Stopped,
    Dead,
    Active,
}

impl Status {
    /// A status in which the worker process should be running.
    pub fn is_running(self) -> bool {
        matches!(
            self,
            Status::Starting
                | Status::Working
                | Status::Idle
                | Status::AwaitingPlanApproval
                | Status::ShutdownPending
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Starting => "starting",
            Status::Working => "working",
            Status::Idle => "idle",
            Status::AwaitingPlanApproval => "awaiting_plan_approval",
            Status::ShutdownPending => "shutdown_pending",
            Status::Stopped => "stopped",
            Status::Dead => "dead",
            Status::Active => "active",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = Error;
    fn from_str(s: &str) -> Result<Status> {
        serde_json::from_value(serde_json::Value::String(s.to_string()))
            .map_err(|_| Error::bad(format!("unknown status {s:?}")))
    }
}

#[cfg(test)]
mod tests {
    /// A misspelt member name gets the member it most likely meant, and a big team's list is
    /// cut short (QA, twelfth session: 151 names on one line and no hint).
    #[test]
    fn a_model_name_is_never_a_flag_nor_blank() {
        for ok in [
            "sonnet",
            "openai/gpt-4.1",
            "claude-opus-4-1@20250805",
            "gemini-2.5-pro",
        ] {
            assert_eq!(check_model(ok), Ok(()), "{ok}");
        }
        for bad in ["--yolo", "-m", "", " ", "a b", "a\tb", "x\u{1b}[2J"] {
            assert!(check_model(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_unknown_member_error_says_who_was_meant_and_lists_a_few() {
        let team = Name::parse("t").unwrap();
        let names: Vec<Name> = ["team-lead", "bob", "alice"]
            .iter()
            .map(|n| Name::parse(n).unwrap())
            .collect();
        let err =
            |name: &str, names: &[Name]| unknown_member(&team, names.iter(), name).to_string();
        assert_eq!(
            err("bbo", &names),
            "no member \"bbo\" in team t (did you mean \"bob\"?); members: team-lead, bob, alice"
        );
        assert!(err("Alice", &names).contains("did you mean \"alice\"?"));
        assert!(err("zed", &names).starts_with("no member \"zed\" in team t; members: "));
        assert!(
            err("zed", &names).ends_with("; a new teammate: `teamctl spawn zed --exec CMD`"),
            "{}",
            err("zed", &names)
        );
        assert!(!err("bbo", &names).contains("spawn"));
        let many: Vec<Name> = (0..151)
            .map(|i| Name::parse(&format!("m{i}")).unwrap())
            .collect();
        let e = err("m777", &many);
        assert!(e.contains("did you mean \"m77\"?"), "{e}");
        assert!(
            e.contains("m19, ... (131 more: `teamctl status` lists them all)"),
            "{e}"
        );
        assert!(!e.contains("m20,"), "{e}");
        assert_eq!(
            unknown_members(&team, names.iter(), &["bbo", "zed"]).to_string(),
            "no members \"bbo\", \"zed\" in team t (did you mean \"bob\" for \"bbo\"?); members: team-lead, bob, alice"
        );
        let given: Vec<String> = (0..5000).map(|i| format!("x{i}")).collect();
        let given: Vec<&str> = given.iter().map(String::as_str).collect();
        let e = unknown_members(&team, names.iter(), &given).to_string();
        assert!(e.contains("\"x19\", and 4980 more in team t"), "{e}");
        assert!(!e.contains("x20\""), "{e}");
    }

    use super::*;

    #[test]
    fn config_round_trips_and_keeps_unknown_fields() {
        let json = r#"{"name":"t","description":"d","createdAt":1,"leadAgentId":"team-lead@t","leadSessionId":"s","members":[{"agentId":"bob@t","name":"bob","agentType":"worker","color":"blue","joinedAt":2,"cwd":"/","command":"cat","backendType":"tmux","paneId":"%1","pid":9,"status":"idle","planModeRequired":false,"future":true}],"later":[1]}"#;
        let cfg: TeamConfig = serde_json::from_str(json).unwrap();
        assert_eq!(cfg.members[0].backend_type, Some(BackendType::Tmux));
        assert_eq!(cfg.members[0].status, Status::Idle);
        let back = serde_json::to_value(&cfg).unwrap();
        assert_eq!(back["later"], serde_json::json!([1]));
        assert_eq!(back["members"][0]["future"], serde_json::json!(true));
        assert_eq!(back["members"][0]["paneId"], "%1");
    }

    #[test]
    fn a_host_is_shown_without_control_characters() {
        let h = Host {
            name: "evil\u{1b}]0;PWNED\u{7}\nzed idle".into(),
            home: "/h\r".into(),
            key: "k".into(),
            id: "i".into(),
            since: 0,
        };
        let shown = h.to_string();
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert!(
            shown.contains("\\u{1b}") && shown.contains("\\n"),
            "{shown}"
        );
        assert_eq!(plain("bob-2 é"), "bob-2 é");
    }

    #[test]
    fn statuses_parse() {
        assert_eq!(
            "awaiting_plan_approval".parse::<Status>().unwrap(),
            Status::AwaitingPlanApproval
        );
        assert!("sleepy".parse::<Status>().is_err());
    }
}
