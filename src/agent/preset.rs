//! The preset table: one plain entry per agent CLI, and the argv a turn runs built from it.
//!
//! Flag spellings were checked against each CLI's own `--help` (Claude Code 2.1.197,
//! codex-cli 0.171.0, gemini-cli 0.61.0, aider-chat 0.86.2; see docs/RECIPES.md); each also runs
//! end to end, the real CLI against a stand-in for its model API on loopback (tests/it/agents.rs,
//! agent_codex.rs, agent_gemini.rs, agent_aider.rs). Templates may hold `{session}`, `{model}`,
//! `{prompt}`, `{message}`, `{home}` (teamctl's state directory), `{sessions}` (a directory of
//! the team for agents' session files, made before the turn), `{networked}` (`true` when the
//! team's store is reached over the network, else `false`) and `{message_file}` (the file
//! holding the message, `MessageVia::File`);
//! each is replaced inside its own argv element, and the argv is run directly, never through a
//! shell, so no text is ever interpolated into a command line. `{cut_dir}` is the directory of
//! the file holding a message too long for an argument, on a turn whose message was cut; an
//! element naming it is left out on other turns.

use std::path::Path;

/// How the team prompt reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptVia {
    /// As arguments (a system-prompt flag), on every turn.
    Args(&'static [&'static str]),
    /// Put ahead of the message on the member's first turn (the session remembers it).
    FirstMessage,
}

/// How the message of a turn reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageVia {
    /// On stdin, with these arguments last on the command line (e.g. `-`).
    Stdin(&'static [&'static str]),
    /// As arguments, last on the command line (`{message}`); stdin stays empty.
    Args(&'static [&'static str]),
    /// In a file the worker writes before the turn (`path`, a template like the session
    /// arguments', 0600), named by `args` last on the command line (`{message_file}`); stdin
    /// stays empty, so the agent's own questions read no line of the message as an answer.
    File {
        path: &'static str,
        args: &'static [&'static str],
    },
}

/// One agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The `--agent` value.
    pub name: &'static str,
    /// The program, looked up on the turn's PATH.
    pub program: &'static str,
    /// How to install it, for error messages and docs.
    pub install: &'static str,
    /// First on the command line on the member's first turn: start the session `{session}`.
    pub first_turn: &'static [&'static str],
    /// First on the command line on later turns: continue the session.
    pub later_turn: &'static [&'static str],
    /// Every turn: headless mode and the permission to run `teamctl`.
    pub base: &'static [&'static str],
    /// With `--model`.
    pub model: &'static [&'static str],
    pub prompt: PromptVia,
    pub message: MessageVia,
    /// Stderr meaning the session could not be continued (lost) or started (already there):
    /// the turn is run once more with the other session arguments.
    pub session_retry: &'static [&'static str],
    /// Where the turn's reply is read.
    pub reply: ReplyVia,
    /// Files of the session the agent opens itself (templates, filled as the session arguments
    /// are): before each turn each must be a regular file or missing, never a link (the agent
    /// would read and write outside the home) nor a FIFO (it would block), else the turn is
    /// not run.
    pub own_files: &'static [&'static str],
    /// For an agent that could run only any command or none (no list of allowed ones): the
    /// flag the user adds after `--` to let it run every shell command its model proposes,
    /// unsandboxed, `teamctl` among them. Without it the preset runs none (its `base` says so)
    /// and the team prompt does not offer `teamctl`. `None`: the agent may run `teamctl` (and
    /// only what its own rules allow) on every turn.
    pub shell_opt_in: Option<&'static str>,
    /// Template keys whose values the CLI splits at commas, with no way to quote one
    /// (gemini-cli 0.61.0's `--include-directories`: every value, repeated or not, split at
    /// `,` and trimmed): a value holding a comma would name other directories. `spawn` refuses
    /// such a teammate in a home whose path holds one (`home_problem`); an element whose
    /// value holds one is left out of a turn's argv (`turn`).
    pub comma_split: &'static [&'static str],
}

/// Where the reply of a turn is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyVia {
    /// The turn's stdout.
    Stdout,
    /// The model's last answer in this aider LLM history file (a template, filled as the
    /// session arguments are; `agent::aider::last_reply`), which the worker makes anew, empty,
    /// before each turn: aider's stdout is its whole transcript (banners, questions, token
    /// counts), and its chat history has its own output unmarked among the model's words. A
    /// turn whose record ends with no answer fails (aider's stdout says why).
    AiderLlmHistory(&'static str),
}

/// Every preset, by `--agent` name.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "claude",
        program: "claude",
        install: "npm install -g @anthropic-ai/claude-code",
        first_turn: &["--session-id", "{session}"],
        later_turn: &["--resume", "{session}"],
        // `--allowedTools` takes several values: nothing positional may follow it.
        base: &["-p", "--allowedTools", "Bash(teamctl:*)"],
        model: &["--model", "{model}"],
        prompt: PromptVia::Args(&["--append-system-prompt", "{prompt}"]),
        message: MessageVia::Stdin(&[]),
        session_retry: &["No conversation found with session ID", "is already in use"],
        reply: ReplyVia::Stdout,
        own_files: &[],
        shell_opt_in: None,
        comma_split: &[],
    },
    Preset {
        name: "codex",
        program: "codex",
        install: "npm install -g @openai/codex",
        // Codex picks its own session ids: a later turn resumes the newest session recorded
        // for the member's directory (give each codex teammate its own --cwd or --worktree).
        // `exec` never asks for approval; its shell tool runs in the sandbox below.
        first_turn: &["exec"],
        later_turn: &["exec", "resume", "--last"],
        // Sandboxed to its directory, plus teamctl's state directory so `teamctl` can write.
        // Its shell tool runs commands in a login shell by default (`bash -lc`), whose profile
        // resets PATH: the worker's `teamctl`, first on the turn's PATH, was "command not
        // found" (or another one ran). No login shell keeps the turn's PATH.
        base: &[
            "--skip-git-repo-check",
            "-c",
            "sandbox_mode=\"workspace-write\"",
            "-c",
            // The home as a TOML string (`toml_string`): a `"` or `\\` in its path would
            // break the value or change its meaning.
            "sandbox_workspace_write.writable_roots=[{home_toml}]",
            "-c",
            "allow_login_shell=false",
            // Its sandbox has no network: a team kept on a NATS server is out of `teamctl`'s
            // reach ("cannot reach the NATS server") unless the sandbox lets it out.
            "-c",
            "sandbox_workspace_write.network_access={networked}",
        ],
        model: &["--model", "{model}"],
        prompt: PromptVia::FirstMessage,
        // `-`: the prompt is read from stdin.
        message: MessageVia::Stdin(&["-"]),
        session_retry: &[],
        reply: ReplyVia::Stdout,
        own_files: &[],
        shell_opt_in: None,
        comma_split: &[],
    },
    Preset {
        name: "gemini",
        program: "gemini",
        install: "npm install -g @google/gemini-cli",
        first_turn: &["--session-id", "{session}"],
        later_turn: &["--resume", "{session}"],
        // Headless mode refuses an untrusted directory: the teammate's --cwd was chosen. Its
        // file tools read only inside its workspace: a cut message's file is added to it.
        base: &[
            "--skip-trust",
            "--allowed-tools=run_shell_command(teamctl)",
            "--include-directories={cut_dir}",
        ],
        model: &["--model", "{model}"],
        prompt: PromptVia::FirstMessage,
        // Headless mode; the message is the prompt (`=` so a leading `-` stays text).
        message: MessageVia::Args(&["--prompt={message}"]),
        // Not resumable ("Error resuming session: No previous sessions found"); there already
        // ("Error starting session: Session ID ... already exists"), also when it holds nothing
        // to resume (a first turn that failed at the model): then a new session.
        session_retry: &["Error resuming session", "Error starting session"],
        reply: ReplyVia::Stdout,
        own_files: &[],
        shell_opt_in: None,
        // `--include-directories` (a comma-separated list; see `comma_split`).
        comma_split: &["cut_dir"],
    },
    Preset {
        name: "aider",
        program: "aider",
        install: "python3 -m pip install aider-chat",
        // Its memory is a chat history file per session, restored on later turns. The reply is
        // read from its record of the turn's requests and answers (`AiderLlmHistory`).
        first_turn: &[
            "--chat-history-file",
            "{sessions}/{session}.aider.md",
            "--llm-history-file",
            "{sessions}/{session}.aider-llm.txt",
        ],
        later_turn: &[
            "--chat-history-file",
            "{sessions}/{session}.aider.md",
            "--llm-history-file",
            "{sessions}/{session}.aider-llm.txt",
            "--restore-chat-history",
        ],
        // No `--yes-always`: with it aider never runs a shell command (the one question it
        // answers no). Its questions get their defaults (yes) from the turn's closed stdin
        // instead, and aider has no list of allowed commands: it would run every command its
        // model proposes, whatever a message talked it into. So none by default
        // (`--no-suggest-shell-commands`; `shell_opt_in` lets the user choose otherwise). What
        // a default yes must not do headless is turned off: opening a browser (release notes,
        // model warnings), fetching URLs found in a message, analytics, the update check,
        // prompt_toolkit's terminal input.
        base: &[
            "--no-suggest-shell-commands",
            "--no-pretty",
            "--no-stream",
            "--no-fancy-input",
            "--no-check-update",
            "--no-analytics",
            "--no-show-release-notes",
            "--no-show-model-warnings",
            "--no-detect-urls",
        ],
        model: &["--model", "{model}"],
        prompt: PromptVia::FirstMessage,
        // In a file, not `--message`: aider logs its command line into the chat history, where
        // every line of a message after its first was restored on later turns as the model's
        // own words; and an argument is capped at 128 KiB. Not `--message-file=/dev/stdin`:
        // aider's questions before it reads the file (a git repository to make, .gitignore)
        // took the message's first lines from stdin as their answers.
        message: MessageVia::File {
            path: "{sessions}/{session}.message.txt",
            args: &["--message-file", "{message_file}"],
        },
        session_retry: &[],
        reply: ReplyVia::AiderLlmHistory("{sessions}/{session}.aider-llm.txt"),
        own_files: &[
            "{sessions}/{session}.aider.md",
            "{sessions}/{session}.aider-llm.txt",
        ],
        // After the preset's `--no-suggest-shell-commands`: the last of the two counts.
        shell_opt_in: Some("--suggest-shell-commands"),
        comma_split: &[],
    },
];

/// The preset named `name`.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Every preset name, for error messages.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// What one turn of a preset agent needs.
#[derive(Debug, Clone)]
pub struct TurnArgs<'a> {
    pub session: &'a str,
    /// This member's turn number, 1-based.
    pub turn: u64,
    pub model: Option<&'a str>,
    /// The team prompt.
    pub prompt: &'a str,
    pub message: &'a str,
    /// teamctl's state directory.
    pub home: &'a str,
    /// The team's directory for agents' session files.
    pub sessions: &'a str,
    /// Whether the team's store is reached over the network (NATS): a sandboxed agent's tools
    /// need the network to run `teamctl`.
    pub networked: bool,
    /// What the user added after `--`.
    pub extra: &'a [String],
    /// The directory of the file holding the whole message, when it was cut (`ARG_ROOM`).
    pub cut_dir: Option<&'a str>,
}

/// The most of a message a preset that takes it as an argument (`MessageVia::Args`) is given
/// there: Linux refuses any one argument over 128 KiB (`MAX_ARG_STRLEN`), with the flag and,
/// on a first turn, the team prompt in the same argument. A longer message is cut to this,
/// with a marker naming the file that holds it whole (the worker's `message_cut`).
pub const ARG_ROOM: usize = 96 * 1024;

impl Preset {
    /// Whether a turn's message is a command-line argument (so at most `ARG_ROOM` of it fits).
    pub fn message_in_args(&self) -> bool {
        matches!(self.message, MessageVia::Args(_))
    }

    /// The file a turn's reply is read from (`ReplyVia::AiderLlmHistory`), filled in.
    pub fn reply_file(&self, a: &TurnArgs) -> Option<String> {
        match self.reply {
            ReplyVia::Stdout => None,
            ReplyVia::AiderLlmHistory(t) => Some(fill_path(t, a)),
        }
    }

    /// The files the agent opens itself (`own_files`), filled in.
    pub fn own_files(&self, a: &TurnArgs) -> Vec<String> {
        self.own_files.iter().map(|t| fill_path(t, a)).collect()
    }

    /// The file the worker writes a turn's message to (`MessageVia::File`), filled in.
    pub fn message_file(&self, a: &TurnArgs) -> Option<String> {
        match self.message {
            MessageVia::File { path, .. } => Some(fill_path(path, a)),
            _ => None,
        }
    }

    /// Whether the agent can run `teamctl` from its shell tool, given what the user added after
    /// `--` (`shell_opt_in`).
    pub fn runs_teamctl(&self, extra: &[String]) -> bool {
        let Some(on) = self.shell_opt_in else {
            return true;
        };
        let off = format!("--no-{}", on.trim_start_matches("--"));
        extra
            .iter()
            .rev()
            .find(|e| *e == on || **e == off)
            .is_some_and(|e| e == on)
    }

    /// Why a teammate of this preset cannot run in a team kept under `home` (teamctl's state
    /// directory, where a cut message's directory is): a path holding a comma, which the CLI
    /// would split (`comma_split`); one that cannot be written as the TOML string the CLI is
    /// given it in (`{home_toml}`, `toml_string`: a control character, or not UTF-8).
    pub fn home_problem(&self, home: &Path) -> Option<String> {
        let in_toml = self.base.iter().any(|t| t.contains("{home_toml}"));
        if in_toml && home.to_str().and_then(toml_string).is_none() {
            return Some(format!(
                "{} is given teamctl's home as a TOML string (-c sandbox_workspace_write.writable_roots=[...]), and this home's path ({:?}) holds a control character or is not UTF-8, which teamctl does not write into one; use a home without one (--home or TEAMCTL_HOME)",
                self.program,
                home.to_string_lossy()
            ));
        }
        let home = home.display().to_string();
        if self.comma_split.is_empty() || !home.contains(',') {
            return None;
        }
        Some(format!(
            "{} splits the directories it is given with --include-directories at commas, with no way to quote one, and teamctl gives it one under its home ({home}: a comma in it) on a turn whose message is too long for its command line; use a home without a comma (--home or TEAMCTL_HOME)",
            self.program
        ))
    }

    /// Whether a turn needs the team's sessions directory.
    pub fn uses_sessions_dir(&self) -> bool {
        let files = [
            match self.message {
                MessageVia::File { path, .. } => path,
                _ => "",
            },
            match self.reply {
                ReplyVia::AiderLlmHistory(t) => t,
                ReplyVia::Stdout => "",
            },
        ];
        self.first_turn
            .iter()
            .chain(self.later_turn)
            .chain(&files)
            .chain(self.own_files)
            .any(|t| t.contains("{sessions}"))
    }

    /// The argv of one turn (program first), and the message's text: for its stdin, or, with
    /// `MessageVia::File`, for the message file (`message_file`); empty when the message is an
    /// argument.
    pub fn turn(&self, a: &TurnArgs) -> (Vec<String>, String) {
        let message = match self.prompt {
            PromptVia::FirstMessage if a.turn <= 1 && !a.prompt.is_empty() => {
                format!("{}\n\n---\n\n{}", a.prompt, a.message)
            }
            _ => a.message.to_string(),
        };
        let message_file = self.message_file(a);
        // Never unset in practice: `spawn` refuses a home it cannot write (`home_problem`); a
        // home moved there later gets no writable root (`[]`) rather than a broken value.
        let home_toml = toml_string(a.home).unwrap_or_default();
        // An element naming the cut message's directory only on a turn whose message was cut,
        // and never with a comma the CLI would split it at (`comma_split`: it would name other
        // directories; `spawn` refuses such a home).
        let cut_dir = a
            .cut_dir
            .filter(|d| !(self.comma_split.contains(&"cut_dir") && d.contains(',')));
        let fill = |t: &str| {
            fill(t, &|key| match key {
                "session" => Some(a.session),
                "model" => a.model,
                "prompt" => Some(a.prompt),
                "message" => Some(&message),
                "home" => Some(a.home),
                "home_toml" => Some(&home_toml),
                "sessions" => Some(a.sessions),
                "networked" => Some(if a.networked { "true" } else { "false" }),
                "cut_dir" => cut_dir,
                "message_file" => message_file.as_deref(),
                _ => None,
            })
        };
        let here = |t: &&&str| cut_dir.is_some() || !t.contains("{cut_dir}");
        let mut argv = vec![self.program.to_string()];
        let session = if a.turn <= 1 {
            self.first_turn
        } else {
            self.later_turn
        };
        argv.extend(session.iter().filter(here).map(|t| fill(t)));
        argv.extend(self.base.iter().filter(here).map(|t| fill(t)));
        if a.model.is_some() {
            argv.extend(self.model.iter().map(|t| fill(t)));
        }
        if let PromptVia::Args(args) = self.prompt
            && !a.prompt.is_empty()
        {
            argv.extend(args.iter().map(|t| fill(t)));
        }
        argv.extend(a.extra.iter().cloned());
        match self.message {
            MessageVia::Stdin(args) => {
                argv.extend(args.iter().filter(here).map(|t| fill(t)));
                (argv, message)
            }
            MessageVia::Args(args) => {
                argv.extend(args.iter().filter(here).map(|t| fill(t)));
                (argv, String::new())
            }
            MessageVia::File { args, .. } => {
                argv.extend(args.iter().map(|t| fill(t)));
                (argv, message)
            }
        }
    }
}

/// `s` as a TOML string value: a literal string (`'...'`, taken as it is) when it holds no
/// `'`, else a basic string with `"` and `\\` escaped. `None` when it holds a control
/// character other than tab (TOML lets a basic string hold one only escaped, and teamctl puts
/// none in an agent's configuration).
pub fn toml_string(s: &str) -> Option<String> {
    if s.chars().any(|c| c != '\t' && (c < ' ' || c == '\u{7f}')) {
        return None;
    }
    if !s.contains('\'') {
        return Some(format!("'{s}'"));
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Some(out)
}

/// A file's template filled in: `{session}`, `{home}`, `{sessions}`.
fn fill_path(template: &str, a: &TurnArgs) -> String {
    fill(template, &|key| match key {
        "session" => Some(a.session),
        "home" => Some(a.home),
        "sessions" => Some(a.sessions),
        _ => None,
    })
}

/// `template` with each `{key}` replaced by its value, in one pass (a value is never scanned
/// again); unknown keys stay as they are.
fn fill<'v>(template: &str, value: &dyn Fn(&str) -> Option<&'v str>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}').and_then(|close| {
            let key = &after[..close];
            value(key).map(|v| (v, close))
        }) {
            Some((v, close)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<'a>(turn: u64, message: &'a str, extra: &'a [String]) -> TurnArgs<'a> {
        TurnArgs {
            session: "S-1",
            turn,
            model: Some("m1"),
            prompt: "P",
            message,
            home: "/h",
            sessions: "/h/s",
            networked: false,
            extra,
            cut_dir: None,
        }
    }

    #[test]
    fn claude_starts_then_resumes_its_session() {
        let p = find("claude").unwrap();
        let extra = vec!["--verbose".to_string()];
        let (first, stdin) = p.turn(&args(1, "hi {session}", &extra));
        assert_eq!(
            first,
            [
                "claude",
                "--session-id",
                "S-1",
                "-p",
                "--allowedTools",
                "Bash(teamctl:*)",
                "--model",
                "m1",
                "--append-system-prompt",
                "P",
                "--verbose"
            ]
        );
        // The message is on stdin, never re-filled.
        assert_eq!(stdin, "hi {session}");
        let (later, _) = p.turn(&args(2, "x", &[]));
        assert_eq!(later[..3], ["claude", "--resume", "S-1"]);
    }

    #[test]
    fn a_first_message_carries_the_prompt_once() {
        let p = find("gemini").unwrap();
        let (first, stdin) = p.turn(&args(1, "-do it", &[]));
        assert_eq!(first.last().unwrap(), "--prompt=P\n\n---\n\n-do it");
        assert_eq!(stdin, "", "the message is not given twice");
        let (later, _) = p.turn(&args(3, "-do it", &[]));
        assert_eq!(later.last().unwrap(), "--prompt=-do it");
        assert_eq!(later[1..3], ["--resume", "S-1"]);
    }

    #[test]
    fn gemini_may_read_the_file_of_a_cut_message_only_on_that_turn() {
        let p = find("gemini").unwrap();
        let (plain, _) = p.turn(&args(2, "m", &[]));
        assert!(
            !plain.iter().any(|a| a.contains("include-directories")),
            "{plain:?}"
        );
        let (cut, _) = p.turn(&TurnArgs {
            cut_dir: Some("/h/t/messages"),
            ..args(2, "m", &[])
        });
        assert!(
            cut.contains(&"--include-directories=/h/t/messages".to_string()),
            "{cut:?}"
        );
    }

    /// gemini-cli splits `--include-directories` at commas: a directory with one in its path is
    /// never given (it would name `/h/a` and the relative `b/t/messages`), and such a home is
    /// refused for gemini, said why; the other presets take it.
    #[test]
    fn gemini_is_never_given_a_directory_it_would_split_at_a_comma() {
        let p = find("gemini").unwrap();
        let (cut, _) = p.turn(&TurnArgs {
            cut_dir: Some("/h/a,b/t/messages"),
            ..args(2, "m", &[])
        });
        assert!(
            !cut.iter().any(|a| a.contains("include-directories")),
            "{cut:?}"
        );
        let said = p.home_problem(Path::new("/h/a,b")).unwrap();
        assert!(
            said.contains(
                "splits the directories it is given with --include-directories at commas"
            ) && said.contains("/h/a,b")
                && said.contains("use a home without a comma"),
            "{said}"
        );
        assert_eq!(p.home_problem(Path::new("/h/a b")), None);
        for other in ["claude", "codex", "aider"] {
            assert_eq!(
                find(other).unwrap().home_problem(Path::new("/h/a,b")),
                None,
                "{other}"
            );
        }
    }

    #[test]
    fn aider_keeps_a_chat_history_per_session_in_the_team() {
        let p = find("aider").unwrap();
        assert!(p.uses_sessions_dir());
        let (first, _) = p.turn(&args(1, "m", &[]));
        assert!(
            first.contains(&"/h/s/S-1.aider.md".to_string()),
            "{first:?}"
        );
        let (later, _) = p.turn(&args(2, "m", &[]));
        assert!(later.contains(&"--restore-chat-history".to_string()));
        assert!(!find("claude").unwrap().uses_sessions_dir());
        // Its reply is read from its LLM history, beside it, also named on every turn.
        for turn in [1, 2] {
            let (argv, _) = p.turn(&args(turn, "m", &[]));
            let at = argv.iter().position(|a| a == "--llm-history-file").unwrap();
            assert_eq!(argv[at + 1], "/h/s/S-1.aider-llm.txt", "{argv:?}");
        }
        assert_eq!(
            p.reply_file(&args(2, "m", &[])).as_deref(),
            Some("/h/s/S-1.aider-llm.txt")
        );
        assert_eq!(find("claude").unwrap().reply_file(&args(1, "m", &[])), None);
        // Both files are checked before a turn: aider opens them itself.
        assert_eq!(
            p.own_files(&args(2, "m", &[])),
            ["/h/s/S-1.aider.md", "/h/s/S-1.aider-llm.txt"]
        );
        assert!(
            find("claude")
                .unwrap()
                .own_files(&args(1, "m", &[]))
                .is_empty()
        );
    }

    #[test]
    fn aider_reads_the_message_from_a_file_and_never_answers_yes_to_everything() {
        let p = find("aider").unwrap();
        let (first, text) = p.turn(&args(1, "line one\nline two", &[]));
        assert_eq!(text, "P\n\n---\n\nline one\nline two");
        assert_eq!(
            first[first.len() - 2..],
            ["--message-file", "/h/s/S-1.message.txt"]
        );
        assert_eq!(
            p.message_file(&args(1, "m", &[])).as_deref(),
            Some("/h/s/S-1.message.txt")
        );
        assert!(!p.message_in_args());
        assert_eq!(
            find("claude").unwrap().message_file(&args(1, "m", &[])),
            None
        );
        // `--yes-always` answers no to every shell command: teamctl could not run.
        assert!(!first.iter().any(|a| a.starts_with("--yes")), "{first:?}");
    }

    #[test]
    fn aider_runs_no_shell_command_unless_the_user_adds_the_flag_last() {
        let p = find("aider").unwrap();
        let (argv, _) = p.turn(&args(1, "m", &[]));
        assert!(argv.contains(&"--no-suggest-shell-commands".to_string()));
        let extra = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!p.runs_teamctl(&[]));
        assert!(!p.runs_teamctl(&extra(&["--no-git"])));
        let on = extra(&["--no-git", "--suggest-shell-commands"]);
        assert!(p.runs_teamctl(&on));
        // The flag comes after the preset's own, so aider takes it.
        let (argv, _) = p.turn(&args(1, "m", &on));
        let at = |f: &str| argv.iter().position(|a| a == f).unwrap();
        assert!(at("--suggest-shell-commands") > at("--no-suggest-shell-commands"));
        assert!(!p.runs_teamctl(&extra(&[
            "--suggest-shell-commands",
            "--no-suggest-shell-commands"
        ])));
        for other in ["claude", "codex", "gemini"] {
            assert!(find(other).unwrap().runs_teamctl(&[]), "{other}");
        }
    }

    #[test]
    fn codex_keeps_its_path_and_reaches_the_network_only_for_a_networked_store() {
        let p = find("codex").unwrap();
        let (argv, stdin) = p.turn(&args(1, "m", &[]));
        assert_eq!(argv.last().unwrap(), "-", "the message is on stdin");
        assert_eq!(stdin, "P\n\n---\n\nm");
        let has = |argv: &[String], v: &str| argv.windows(2).any(|w| w[0] == "-c" && w[1] == v);
        assert!(has(&argv, "allow_login_shell=false"), "{argv:?}");
        assert!(
            has(&argv, "sandbox_workspace_write.writable_roots=['/h']"),
            "{argv:?}"
        );
        assert!(
            has(&argv, "sandbox_workspace_write.network_access=false"),
            "{argv:?}"
        );
        let nats = TurnArgs {
            networked: true,
            ..args(2, "m", &[])
        };
        let (later, _) = p.turn(&nats);
        assert_eq!(later[..4], ["codex", "exec", "resume", "--last"]);
        assert!(
            has(&later, "sandbox_workspace_write.network_access=true"),
            "{later:?}"
        );
    }

    #[test]
    fn every_preset_has_a_unique_name_and_a_session_rule() {
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PRESETS.len());
        for p in PRESETS {
            let (a, _) = p.turn(&args(1, "m", &[]));
            let (b, _) = p.turn(&args(2, "m", &[]));
            assert_ne!(a, b, "{}: later turns must continue the session", p.name);
        }
    }

    /// A home as a TOML string: literal when it can be (no `'`), escaped when it holds one;
    /// each read back by a TOML parser as the path itself. A control character is refused.
    #[test]
    fn toml_string_writes_any_path_toml_reads_back_as_it_is() {
        assert_eq!(toml_string("/h").unwrap(), "'/h'");
        assert_eq!(toml_string(r#"/h/a"b\c"#).unwrap(), r#"'/h/a"b\c'"#);
        assert_eq!(toml_string(r"/h/it's").unwrap(), r#""/h/it's""#);
        assert_eq!(toml_string(r#"/h/'"\"#).unwrap(), r#""/h/'\"\\""#);
        for path in [
            "/h",
            r#"/h/a"b"#,
            r"/h/a\b",
            r"/h/it's",
            r#"/h/'"\"],x="#,
            "/h/tab\there",
            "/h/é ü",
        ] {
            let doc = format!("r = [{}]", toml_string(path).unwrap());
            let v: toml::Table = toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
            assert_eq!(v["r"][0].as_str(), Some(path), "{doc}");
        }
        for bad in ["/h/a\nb", "/h/\u{1b}[31m", "/h/\u{7f}", "/h/\0"] {
            assert_eq!(toml_string(bad), None, "{bad:?}");
        }
    }

    /// codex is given the home escaped in its argv (a `"` in it broke the TOML value), and
    /// a home it cannot be given is refused for codex, said why, as gemini's comma is.
    #[test]
    fn codex_is_given_its_home_as_a_toml_string_or_refused() {
        let p = find("codex").unwrap();
        let home = r#"/h/a"b\c's"#;
        let (argv, _) = p.turn(&TurnArgs {
            home,
            ..args(1, "m", &[])
        });
        assert!(
            argv.windows(2).any(|w| w[0] == "-c"
                && w[1] == r#"sandbox_workspace_write.writable_roots=["/h/a\"b\\c's"]"#),
            "{argv:?}"
        );
        assert_eq!(p.home_problem(Path::new(home)), None);
        let said = p.home_problem(Path::new("/h/a\nb")).unwrap();
        assert!(
            said.starts_with("codex is given teamctl's home as a TOML string")
                && said.contains(r#"("/h/a\nb")"#)
                && said.contains("holds a control character")
                && said.contains("use a home without one (--home or TEAMCTL_HOME)"),
            "{said}"
        );
        use std::os::unix::ffi::OsStrExt;
        let latin1 = std::ffi::OsStr::from_bytes(b"/h/\xe9");
        assert!(p.home_problem(Path::new(latin1)).is_some());
        for other in ["claude", "gemini", "aider"] {
            assert_eq!(
                find(other).unwrap().home_problem(Path::new("/h/a\nb")),
                None,
                "{other}"
            );
        }
    }
}
