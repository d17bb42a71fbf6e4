//! A team as code (`teamctl up FILE`): the TOML file's shape and its rules, checked in full
//! before anything is started. Pure: text in, a `TeamFile` or one error naming the line out.
//! Unknown keys, bad names, colours, durations and duplicate members are all errors.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::member::{BackendType, COLORS};
use super::name::{LEADER, Name};
use crate::error::{Error, Result};

/// The team a file declares, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamFile {
    pub name: Name,
    pub description: String,
    pub max_hops: Option<u32>,
    pub members: Vec<MemberSpec>,
    pub tasks: Vec<TaskSpec>,
}

/// One `[[member]]`: the options `spawn` takes, by their file names.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberSpec {
    /// The line of its `name`.
    pub line: usize,
    /// The line of each key given, for errors found later (an agent not installed...).
    pub lines: BTreeMap<&'static str, usize>,
    pub name: Name,
    pub agent: Option<String>,
    pub exec: Option<String>,
    /// More arguments for the agent preset (`spawn --agent A -- ARGS`).
    pub args: Vec<String>,
    pub model: Option<String>,
    pub prompt: Option<String>,
    pub agent_type: Option<String>,
    /// As written: relative paths are from the file's directory.
    pub cwd: Option<String>,
    /// A worktree on this branch (`""`: the default `teamctl/NAME@TEAM`).
    pub worktree: Option<String>,
    pub interactive: bool,
    pub prompt_pattern: Option<String>,
    pub auto_claim: bool,
    pub color: Option<String>,
    pub plan_mode: bool,
    pub plan: Option<String>,
    pub turn_timeout_secs: Option<u64>,
    pub max_turns: Option<u64>,
    pub on_shutdown: Option<String>,
    /// `None`: auto (tmux when installed).
    pub backend: Option<BackendType>,
}

impl MemberSpec {
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// The line of `key` when given, else the member's own.
    pub fn line_of(&self, key: &str) -> usize {
        self.lines.get(key).copied().unwrap_or(self.line)
    }
}

/// One `[[task]]`: added unless the team already has a task with the same subject.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    pub line: usize,
    pub subject: String,
    pub description: String,
    /// Subjects of tasks above it in the file.
    pub blocked_by: Vec<String>,
    pub owner: Option<Name>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawFile {
    name: Option<Spanned<String>>,
    #[serde(default)]
    description: Option<String>,
    max_hops: Option<Spanned<i64>>,
    #[serde(default)]
    member: Vec<Spanned<RawMember>>,
    #[serde(default)]
    task: Vec<Spanned<RawTask>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawMember {
    name: Option<Spanned<String>>,
    agent: Option<Spanned<String>>,
    exec: Option<Spanned<String>>,
    args: Option<Spanned<Vec<String>>>,
    model: Option<Spanned<String>>,
    prompt: Option<Spanned<String>>,
    agent_type: Option<Spanned<String>>,
    cwd: Option<Spanned<String>>,
    worktree: Option<Spanned<toml::Value>>,
    interactive: Option<Spanned<bool>>,
    prompt_pattern: Option<Spanned<String>>,
    auto_claim: Option<Spanned<bool>>,
    color: Option<Spanned<String>>,
    plan_mode: Option<Spanned<bool>>,
    plan: Option<Spanned<String>>,
    turn_timeout: Option<Spanned<toml::Value>>,
    max_turns: Option<Spanned<i64>>,
    on_shutdown: Option<Spanned<String>>,
    backend: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawTask {
    subject: Option<Spanned<String>>,
    description: Option<String>,
    blocked_by: Option<Spanned<Vec<String>>>,
    owner: Option<Spanned<String>>,
}

/// Parse and check a team file; `origin` (its path) starts every error: `FILE:LINE: why`.
pub fn parse(text: &str, origin: &str) -> Result<TeamFile> {
    let at = |offset: usize, why: String| {
        let line = line_at(text, offset);
        Error::bad(format!("{origin}:{line}: {why}"))
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        at(offset, e.message().trim().replace('\n', " "))
    })?;
    let Some(name) = raw.name else {
        return Err(at(
            0,
            "the team needs a name: add `name = \"TEAM\"` at the top".into(),
        ));
    };
    let team =
        Name::parse_as(name.get_ref(), "team").map_err(|e| at(name.span().start, e.to_string()))?;
    let max_hops = match raw.max_hops {
        None => None,
        Some(h) => Some(
            u32::try_from(*h.get_ref())
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    at(
                        h.span().start,
                        format!(
                            "max-hops must be a whole number from 1, not {}",
                            h.get_ref()
                        ),
                    )
                })?,
        ),
    };
    let mut members: Vec<MemberSpec> = Vec::new();
    for m in raw.member {
        let start = m.span().start;
        let spec = member(m.into_inner(), start, &at, text)?;
        if let Some(first) = members.iter().find(|x| x.name() == spec.name()) {
            return Err(at(
                offset_of_line(text, spec.line),
                format!(
                    "member {} is declared twice (first at line {}); give each [[member]] its own name",
                    spec.name(),
                    first.line
                ),
            ));
        }
        if let Some(first) = members.iter().find(|x| x.name().looks_like(spec.name())) {
            return Err(at(
                offset_of_line(text, spec.line),
                format!(
                    "member {} looks like {} (line {}): they differ only in case, I/l/1, O/0 or - _ .; give each [[member]] a name a reader can tell apart",
                    spec.name(),
                    first.name(),
                    first.line
                ),
            ));
        }
        if spec.name().looks_like(&Name::leader()) {
            return Err(at(
                offset_of_line(text, spec.line),
                format!(
                    "member {} looks like the leader's name {}; choose another name",
                    spec.name(),
                    super::name::LEADER
                ),
            ));
        }
        members.push(spec);
    }
    let mut tasks: Vec<TaskSpec> = Vec::new();
    for t in raw.task {
        let start = t.span().start;
        let t = t.into_inner();
        let Some(subject) = t.subject else {
            return Err(at(start, "a [[task]] needs a subject".into()));
        };
        let line = line_at(text, subject.span().start);
        let text_of = subject.get_ref().trim().to_string();
        if text_of.is_empty() || text_of.chars().any(char::is_control) {
            return Err(at(
                subject.span().start,
                "a task subject is one non-empty line".into(),
            ));
        }
        if let Some(first) = tasks.iter().find(|x| x.subject == text_of) {
            return Err(at(
                subject.span().start,
                format!(
                    "task {text_of:?} is declared twice (first at line {}); tasks are matched by subject",
                    first.line
                ),
            ));
        }
        let mut blocked_by = Vec::new();
        if let Some(b) = t.blocked_by {
            for s in b.get_ref() {
                let s = s.trim();
                if !tasks.iter().any(|x| x.subject == s) {
                    return Err(at(
                        b.span().start,
                        format!(
                            "blocked-by {s:?}: no task above with that subject (a task can wait only on tasks declared before it)"
                        ),
                    ));
                }
                blocked_by.push(s.to_string());
            }
        }
        let owner = match t.owner {
            None => None,
            Some(o) => {
                let n = Name::parse_as(o.get_ref(), "owner")
                    .map_err(|e| at(o.span().start, e.to_string()))?;
                if !n.is_leader() && !members.iter().any(|m| m.name() == &n) {
                    return Err(at(
                        o.span().start,
                        format!("owner {n}: no [[member]] {n} in this file (or {LEADER})"),
                    ));
                }
                Some(n)
            }
        };
        tasks.push(TaskSpec {
            line,
            subject: text_of,
            description: t.description.unwrap_or_default(),
            blocked_by,
            owner,
        });
    }
    Ok(TeamFile {
        name: team,
        description: raw.description.unwrap_or_default(),
        max_hops,
        members,
        tasks,
    })
}

fn member(
    m: RawMember,
    start: usize,
    at: &dyn Fn(usize, String) -> Error,
    text: &str,
) -> Result<MemberSpec> {
    let Some(name) = m.name else {
        return Err(at(start, "a [[member]] needs a name".into()));
    };
    let mut spec = MemberSpec {
        line: line_at(text, name.span().start),
        lines: BTreeMap::new(),
        name: Name::teammate(name.get_ref()).map_err(|e| at(name.span().start, e.to_string()))?,
        agent: None,
        exec: None,
        args: Vec::new(),
        model: None,
        prompt: None,
        agent_type: None,
        cwd: None,
        worktree: None,
        interactive: false,
        prompt_pattern: None,
        auto_claim: false,
        color: None,
        plan_mode: false,
        plan: None,
        turn_timeout_secs: None,
        max_turns: None,
        on_shutdown: None,
        backend: None,
    };
    let mut key = |k: &'static str, span: std::ops::Range<usize>| {
        spec.lines.insert(k, line_at(text, span.start));
        span.start
    };
    // Plain strings: a blank one is a mistake (an unset variable), as for spawn.
    let mut string = |k: &'static str, v: Option<Spanned<String>>| -> Result<Option<String>> {
        let Some(v) = v else { return Ok(None) };
        let off = key(k, v.span());
        if v.get_ref().trim().is_empty() {
            return Err(at(
                off,
                format!("{k} is empty; give a value or leave the key out"),
            ));
        }
        Ok(Some(v.into_inner()))
    };
    let agent = string("agent", m.agent)?;
    let exec = string("exec", m.exec)?;
    let model = string("model", m.model)?;
    let prompt_at = m.prompt.as_ref().map(|v| v.span().start);
    let prompt = string("prompt", m.prompt)?;
    let agent_type = string("agent-type", m.agent_type)?;
    let cwd = string("cwd", m.cwd)?;
    let prompt_pattern = string("prompt-pattern", m.prompt_pattern)?;
    let color = string("color", m.color)?;
    let plan = string("plan", m.plan)?;
    let on_shutdown = string("on-shutdown", m.on_shutdown)?;
    let backend = string("backend", m.backend)?;
    if let (Some(p), Some(off)) = (&prompt, prompt_at) {
        super::member::check_prompt(p).map_err(|e| at(off, e))?;
    }
    if agent.is_some() && exec.is_some() {
        return Err(at(
            offset_of_line(text, spec.lines["exec"].max(spec.lines["agent"])),
            "agent and exec are exclusive: a preset (agent) or any command (exec)".into(),
        ));
    }
    let mut flag = |k: &'static str, v: Option<Spanned<bool>>| match v {
        Some(v) => {
            spec.lines.insert(k, line_at(text, v.span().start));
            *v.get_ref()
        }
        None => false,
    };
    let interactive = flag("interactive", m.interactive);
    let auto_claim = flag("auto-claim", m.auto_claim);
    let plan_mode = flag("plan-mode", m.plan_mode);
    if prompt_pattern.is_some() && !interactive {
        return Err(at(
            offset_of_line(text, spec.lines["prompt-pattern"]),
            "prompt-pattern is for interactive members; add `interactive = true` or drop it".into(),
        ));
    }
    if plan_mode && plan.is_none() {
        return Err(at(
            offset_of_line(text, spec.lines["plan-mode"]),
            "plan-mode needs `plan = \"CMD\"`, the command that writes the plan".into(),
        ));
    }
    if let Some(c) = &color
        && !COLORS.contains(&c.as_str())
    {
        return Err(at(
            offset_of_line(text, spec.lines["color"]),
            format!("unknown colour {c:?}; use one of {}", COLORS.join(", ")),
        ));
    }
    spec.backend = match backend.as_deref() {
        None | Some("auto") => None,
        Some("tmux") => Some(BackendType::Tmux),
        Some("process") => Some(BackendType::Process),
        Some(b) => {
            return Err(at(
                offset_of_line(text, spec.lines["backend"]),
                format!("backend {b:?}: use auto, tmux or process"),
            ));
        }
    };
    if let Some(a) = m.args {
        spec.lines.insert("args", line_at(text, a.span().start));
        spec.args = a.into_inner();
    }
    if let Some(w) = m.worktree {
        spec.lines.insert("worktree", line_at(text, w.span().start));
        spec.worktree = match w.get_ref() {
            toml::Value::Boolean(true) => Some(String::new()),
            toml::Value::Boolean(false) => None,
            toml::Value::String(b) if !b.trim().is_empty() => Some(b.clone()),
            other => {
                return Err(at(
                    w.span().start,
                    format!(
                        "worktree is true (branch teamctl/NAME@TEAM) or a branch name, not {other}"
                    ),
                ));
            }
        };
    }
    if let Some(t) = m.turn_timeout {
        spec.lines
            .insert("turn-timeout", line_at(text, t.span().start));
        spec.turn_timeout_secs =
            Some(duration_secs(t.get_ref()).map_err(|why| at(t.span().start, why))?);
    }
    if let Some(n) = m.max_turns {
        spec.lines
            .insert("max-turns", line_at(text, n.span().start));
        spec.max_turns = Some(
            u64::try_from(*n.get_ref())
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    at(
                        n.span().start,
                        format!(
                            "max-turns must be a whole number from 1, not {}",
                            n.get_ref()
                        ),
                    )
                })?,
        );
    }
    spec.agent = agent;
    spec.exec = exec;
    spec.model = model;
    spec.prompt = prompt;
    spec.agent_type = agent_type;
    spec.cwd = cwd;
    spec.interactive = interactive;
    spec.prompt_pattern = prompt_pattern;
    spec.auto_claim = auto_claim;
    spec.color = color;
    spec.plan_mode = plan_mode;
    spec.plan = plan;
    spec.on_shutdown = on_shutdown;
    Ok(spec)
}

/// A turn timeout: whole seconds as a number (`600`) or a duration (`"10m"`, `"1h 30m"`).
fn duration_secs(v: &toml::Value) -> std::result::Result<u64, String> {
    let bad = |what: String| {
        format!(
            "turn-timeout {what}: give seconds (600) or a duration such as \"90s\", \"10m\", \"1h\""
        )
    };
    let secs = match v {
        toml::Value::Integer(n) => u64::try_from(*n).map_err(|_| bad(n.to_string()))?,
        toml::Value::String(s) => {
            super::time::parse_secs(s).map_err(|e| format!("turn-timeout {e}"))?
        }
        other => return Err(bad(other.to_string())),
    };
    if secs == 0 {
        return Err(format!("turn-timeout {}", super::time::ZERO_SECS));
    }
    Ok(secs)
}

/// The 1-based line of byte `offset`.
fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The byte offset where 1-based `line` starts.
fn offset_of_line(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n')
        .nth(line - 2)
        .map_or(text.len(), |(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let e = parse(text, "t.toml").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        e.to_string()
    }

    #[test]
    fn a_full_file_parses() {
        let f = parse(
            r#"
name = "shop"
description = "build it"
max-hops = 4

[[member]]
name = "alice"
agent = "claude"
model = "sonnet"
args = ["--verbose"]
worktree = true
turn-timeout = "10m"
color = "green"
auto-claim = true

[[member]]
name = "bob"
exec = "cat"
interactive = true
prompt-pattern = '^>>> $'
backend = "tmux"
turn-timeout = 90
plan-mode = true
plan = "echo plan"

[[task]]
subject = "design"

[[task]]
subject = "build"
blocked-by = ["design"]
owner = "bob"
"#,
            "t.toml",
        )
        .unwrap();
        assert_eq!(f.name.as_str(), "shop");
        assert_eq!(f.max_hops, Some(4));
        let a = &f.members[0];
        assert_eq!(a.worktree.as_deref(), Some(""));
        assert_eq!(a.turn_timeout_secs, Some(600));
        assert_eq!(a.line, 7);
        assert_eq!(a.line_of("model"), 9);
        let b = &f.members[1];
        assert_eq!(b.turn_timeout_secs, Some(90));
        assert_eq!(b.backend, Some(BackendType::Tmux));
        assert_eq!(f.tasks[1].blocked_by, vec!["design".to_string()]);
        assert_eq!(f.tasks[1].owner.as_ref().unwrap().as_str(), "bob");
    }

    #[test]
    fn errors_name_the_line() {
        let head = "name = \"t\"\n[[member]]\nname = \"bob\"\nexec = \"cat\"\n";
        for (extra, line, says) in [
            ("modle = \"x\"\n", 5, "unknown field"),
            ("color = \"mauve\"\n", 5, "unknown colour"),
            ("turn-timeout = \"soon\"\n", 5, "turn-timeout"),
            ("turn-timeout = 0\n", 5, "turn-timeout"),
            ("turn-timeout = \"1500ms\"\n", 5, "whole seconds"),
            ("backend = \"docker\"\n", 5, "backend"),
            ("agent = \"claude\"\n", 5, "exclusive"),
            ("prompt-pattern = \"x\"\n", 5, "interactive"),
            ("plan-mode = true\n", 5, "plan"),
            ("worktree = 3\n", 5, "worktree"),
            ("max-turns = -1\n", 5, "max-turns"),
            ("exec2 = 1\n", 5, "unknown field"),
            ("[[member]]\nname = \"bob\"\nexec = \"cat\"\n", 6, "twice"),
            (
                "[[member]]\nname = \"bad name\"\n",
                6,
                "invalid member name",
            ),
            ("[[member]]\nname = \"team-lead\"\n", 6, "the leader's name"),
            (
                "[[task]]\nsubject = \"a\"\nblocked-by = [\"zz\"]\n",
                7,
                "no task above",
            ),
            (
                "[[task]]\nsubject = \"a\"\nowner = \"carol\"\n",
                7,
                "no [[member]] carol",
            ),
            (
                "[[task]]\nsubject = \"a\"\n[[task]]\nsubject = \"a\"\n",
                8,
                "twice",
            ),
            ("[[task]]\nsubject = \"\"\n", 6, "subject"),
        ] {
            let e = err(&format!("{head}{extra}"));
            assert!(e.starts_with(&format!("t.toml:{line}: ")), "{extra:?}: {e}");
            assert!(e.contains(says), "{extra:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
        assert!(err("[[member]]\nname = \"bob\"\n").contains("needs a name"));
        assert!(err("name = \"a b\"\n").starts_with("t.toml:1: invalid team name"));
        assert!(err("name = \"t\"\ncolour = 1\n").starts_with("t.toml:2: "));
        assert!(err("name = \"t\"\n[[member]\n").starts_with("t.toml:2: "));
    }

    #[test]
    fn the_examples_parse() {
        let claude = parse(include_str!("../../examples/claude-team.toml"), "c").unwrap();
        assert_eq!(claude.members.len(), 4);
        assert!(
            claude
                .members
                .iter()
                .all(|m| m.agent.as_deref() == Some("claude"))
        );
        let shards = parse(include_str!("../../examples/test-shards.toml"), "s").unwrap();
        assert_eq!(shards.members.len(), 3);
        assert!(shards.members.iter().all(|m| m.exec.is_some()));
    }
}
