//! Interactive teammates, the pure part: how an agent's own TUI or REPL in a pane is told
//! apart as idle or busy, when the companion may paste into it, what a hook event records,
//! and which pane output is the reply of a generic REPL. No I/O here.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The prompt rule's quiet time when none is given: the pane must not change for this long.
pub const DEFAULT_QUIET_MS: u64 = 300;

/// The Claude Code preset's empty input line: `❯` and nothing typed after it.
pub const CLAUDE_INPUT_PATTERN: &str = r"^\s*❯[\s\x{a0}]*$";

/// The largest reply taken from a pane or a hook (a message holds at most 1 MiB).
pub const MAX_REPLY: usize = 1024 * 1024 - 16 * 1024;

/// How an interactive teammate is driven (recorded in its member entry as `interactive`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interactive {
    /// The preset (`claude`) whose hooks say idle and busy; none: the generic prompt rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Generic: the agent waits for input when the last non-blank line of its pane matches.
    /// With hooks: a line matching it is the agent's empty input line.
    pub prompt_pattern: String,
    /// The key `interrupt` sends to the pane (tmux key name: `Escape`, `C-c`).
    pub cancel_key: String,
    /// Generic: how long the pane must stay unchanged, in ms, before the agent counts as idle.
    pub quiet_ms: u64,
}

impl Interactive {
    /// `--interactive --exec CMD --prompt-pattern RE`.
    pub fn generic(pattern: &str) -> Result<Interactive> {
        check_pattern(pattern)?;
        Ok(Interactive {
            preset: None,
            prompt_pattern: pattern.to_string(),
            cancel_key: "C-c".into(),
            quiet_ms: DEFAULT_QUIET_MS,
        })
    }

    /// `--agent claude --interactive`: Claude Code's TUI, idle and busy from its hooks.
    pub fn claude() -> Interactive {
        Interactive {
            preset: Some("claude".into()),
            prompt_pattern: CLAUDE_INPUT_PATTERN.into(),
            cancel_key: "Escape".into(),
            // Submitting clears the input line before the hook says busy; a running turn
            // animates its spinner, so a quiet screen closes that gap.
            quiet_ms: 250,
        }
    }

    /// Idle and busy come from the agent's hooks (not from the screen).
    pub fn uses_hooks(&self) -> bool {
        self.preset.is_some()
    }

    /// Whether `screen` (a `capture-pane -p -N` of the visible pane) shows the agent waiting
    /// with an empty input line: nothing the user typed would be pasted over. Generic: the
    /// last non-blank line matches the prompt pattern (`>>> 1+` does not match `^>>> $`).
    /// With hooks: some line is the empty input line.
    pub fn input_free(&self, screen: &str) -> bool {
        let Ok(re) = regex_lite::Regex::new(&self.prompt_pattern) else {
            return false;
        };
        if self.uses_hooks() {
            screen.lines().any(|l| re.is_match(l))
        } else {
            last_line(screen).is_some_and(|l| re.is_match(l))
        }
    }
}

/// Claude Code's input box: the `❯` line right below a horizontal rule (the transcript
/// shows sent prompts with `❯` too, but not under a rule). Its text after the marker.
pub fn claude_input_line(screen: &str) -> Option<&str> {
    let lines: Vec<&str> = screen.lines().collect();
    lines.windows(2).rev().find_map(|w| {
        let rule = w[0].trim();
        let input = w[1].trim_start().strip_prefix('❯')?;
        (!rule.is_empty() && rule.chars().all(|c| c == '─')).then_some(input)
    })
}

/// A bad `--prompt-pattern` is bad input, said at spawn.
pub fn check_pattern(pattern: &str) -> Result<()> {
    if pattern.is_empty() {
        return Err(Error::bad(
            "--prompt-pattern is empty; give a regex matching the agent's empty prompt line, e.g. '^>>> $'",
        ));
    }
    regex_lite::Regex::new(pattern)
        .map(|_| ())
        .map_err(|e| Error::bad(format!("--prompt-pattern {pattern:?} is not a regex: {e}")))
}

/// The last line of `screen` with anything but blanks on it.
fn last_line(screen: &str) -> Option<&str> {
    screen.lines().rev().find(|l| !l.trim().is_empty())
}

/// One hook event of an interactive teammate's agent (`teamctl hook EVENT`), one JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookEvent {
    /// `user-prompt-submit`, `stop` or `notification`.
    pub event: String,
    pub at: u64,
    /// Stop: the turn's last assistant message. Notification: its message. UserPromptSubmit:
    /// the prompt (to tell the companion's paste from the user's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The hook events teamctl installs and understands.
pub const HOOK_EVENTS: &[(&str, &str)] = &[
    ("UserPromptSubmit", "user-prompt-submit"),
    ("Stop", "stop"),
    ("Notification", "notification"),
];

impl HookEvent {
    /// The event as the agent's hook gave it: `event` (one of `HOOK_EVENTS`) and the JSON
    /// object it wrote on stdin.
    pub fn from_hook(event: &str, input: &serde_json::Value, at: u64) -> Result<HookEvent> {
        if !HOOK_EVENTS.iter().any(|(_, e)| *e == event) {
            let known: Vec<&str> = HOOK_EVENTS.iter().map(|(_, e)| *e).collect();
            return Err(Error::bad(format!(
                "unknown hook event {event:?}; one of: {}",
                known.join(", ")
            )));
        }
        let field = match event {
            "stop" => "last_assistant_message",
            "notification" => "message",
            _ => "prompt",
        };
        let text = input
            .get(field)
            .and_then(|v| v.as_str())
            .map(|t| cut(t, MAX_REPLY).to_string());
        Ok(HookEvent {
            event: event.to_string(),
            at,
            text,
        })
    }
}

/// `text` cut to at most `max` bytes on a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A generic REPL's reply: what the pane shows after the pasted input and before the prompt
/// came back. `lines` are the pane's lines from the one the paste went to (joined, `-J`) to
/// the bottom; the first `input_lines` of them echo the input, the last non-blank one is the
/// prompt again.
pub fn reply_from(lines: &str, input_lines: usize) -> String {
    let all: Vec<&str> = lines.lines().collect();
    let end = all.iter().rposition(|l| !l.trim().is_empty()).unwrap_or(0);
    let body = all
        .get(input_lines.max(1)..end)
        .unwrap_or_default()
        .iter()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    cut(body.trim_matches('\n'), MAX_REPLY).to_string()
}

/// What Claude Code's screen asks the user to answer, if anything: a permission prompt (a tool
/// call to allow) or the trust dialog of a folder it has not run in. Only the bottom of the
/// screen counts (the transcript above may quote anything); the words are the TUI's own
/// (Claude Code 2.1.197).
pub fn claude_dialog(screen: &str) -> Option<&'static str> {
    let bottom: Vec<&str> = screen
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(12)
        .collect();
    let has = |s: &str| bottom.iter().any(|l| l.contains(s));
    if has("Do you want to proceed?") && has("Esc to cancel") {
        Some("a permission prompt")
    } else if has("Yes, I trust this folder") {
        Some("a trust dialog")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_rule_sees_typed_text_as_not_free() {
        let i = Interactive::generic("^>>> $").unwrap();
        assert!(i.input_free("Python 3\n>>> 1+1\n2\n>>> \n\n\n"));
        assert!(!i.input_free("Python 3\n>>> 1+1\n2\n>>> 3+\n\n"));
        // Still running: no prompt at the bottom.
        assert!(!i.input_free(">>> import time; time.sleep(5)\n\n"));
        assert!(!i.input_free(""));
    }

    #[test]
    fn claude_input_line_is_free_only_when_empty() {
        let i = Interactive::claude();
        let empty = "──────\n❯\u{a0}\n──────\n  ? for shortcuts\n";
        assert!(i.input_free(empty));
        assert!(!i.input_free("──────\n❯\u{a0}hello there\n──────\n"));
        // The trust dialog's choice is not an input line.
        assert!(!i.input_free(" ❯ 1. Yes, proceed\n"));
        let restored = "❯ Message from a (1):\n  hi\n──────\n❯ Message from a (1):\n──────\n";
        assert_eq!(claude_input_line(restored), Some(" Message from a (1):"));
        assert_eq!(claude_input_line(empty), Some("\u{a0}"));
        assert_eq!(claude_input_line("❯ sent\n"), None);
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(Interactive::generic("").is_err());
        assert!(Interactive::generic("(").is_err());
    }

    #[test]
    fn the_reply_is_between_the_echo_and_the_prompt() {
        assert_eq!(reply_from(">>> 6*7\n42\n>>> \n\n", 1), "42");
        assert_eq!(reply_from(">>> print('a\\nb')\na\nb\n>>> \n", 1), "a\nb");
        assert_eq!(reply_from(">>> x = 1\n>>> \n", 1), "");
        assert_eq!(reply_from("", 1), "");
    }

    #[test]
    fn hook_events_keep_what_the_companion_needs() {
        let input = serde_json::json!({"last_assistant_message": "hi", "session_id": "s"});
        let e = HookEvent::from_hook("stop", &input, 5).unwrap();
        assert_eq!(e.text.as_deref(), Some("hi"));
        let e = HookEvent::from_hook("user-prompt-submit", &input, 5).unwrap();
        assert_eq!(e.text, None);
        let input = serde_json::json!({"prompt": "Message from x:\n\nhi"});
        let e = HookEvent::from_hook("user-prompt-submit", &input, 5).unwrap();
        assert_eq!(e.text.as_deref(), Some("Message from x:\n\nhi"));
        assert!(HookEvent::from_hook("pre-tool-use", &input, 5).is_err());
        assert_eq!(cut("héllo", 2), "h");
    }

    #[test]
    fn a_dialog_at_the_bottom_of_claudes_screen_is_seen() {
        // As Claude Code 2.1.197 shows a Bash call that needs the user's yes.
        let permission = "\
❯ Message from team-lead (01a2):
  run it
● Bash(touch approved && echo approved-by-you)
  ⎿  Waiting…
────────────────
 Bash command
   touch approved && echo approved-by-you
 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and always allow access to work/ from this project
   3. No
 Esc to cancel · Tab to amend · ctrl+e to explain
";
        assert_eq!(claude_dialog(permission), Some("a permission prompt"));
        let trust = "Quick safety check: Is this a project you created or one you trust?\n ❯ 1. Yes, I trust this folder\n   2. No, exit\n Enter to confirm · Esc to cancel\n";
        assert_eq!(claude_dialog(trust), Some("a trust dialog"));
        // The words quoted in the transcript, the input box below: no dialog.
        let quoted = format!(
            "● Do you want to proceed? Esc to cancel\n{}\n────\n❯ \n────\n  ? for shortcuts\n",
            "x\n".repeat(20)
        );
        assert_eq!(claude_dialog(&quoted), None);
        assert_eq!(claude_dialog(""), None);
    }
}
