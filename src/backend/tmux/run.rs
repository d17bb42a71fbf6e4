//! Running tmux: one `tmux` process per command line built by `argv`, never a shell, with
//! `$TMUX` removed so the server is exactly the one given. Failures are sorted into "the
//! pane, session or server is gone", "no space for a new pane" and anything else.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::argv::{self, Cmd, Server};
use crate::error::Error;

/// A tmux program and the server it talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tmux {
    pub program: PathBuf,
    pub server: Server,
}

/// Why a tmux command did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fail {
    /// The target (pane, window, session) or the whole server does not exist.
    Gone(String),
    /// The window has no room for another pane.
    NoSpace(String),
    /// Anything else (including tmux not starting at all).
    Other(String),
}

impl Fail {
    /// Sort tmux's stderr.
    pub fn classify(stderr: &str) -> Fail {
        let msg = stderr.trim().to_string();
        let lower = msg.to_lowercase();
        if lower.contains("no space for new pane") || lower.contains("pane too small") {
            Fail::NoSpace(msg)
        } else if lower.contains("can't find")
            || lower.contains("no such session")
            || lower.contains("no such window")
            || lower.contains("no server running")
            || lower.contains("error connecting to")
            || lower.contains("no such file or directory")
            || lower.contains("server exited")
        {
            Fail::Gone(msg)
        } else {
            Fail::Other(msg)
        }
    }

    /// An option that is not set at all ("invalid option: @x").
    pub fn is_unset_option(&self) -> bool {
        matches!(self, Fail::Other(m) if m.contains("invalid option") || m.contains("unknown option"))
    }

    pub fn message(&self) -> &str {
        match self {
            Fail::Gone(m) | Fail::NoSpace(m) | Fail::Other(m) => m,
        }
    }

    /// As a teamctl error, with what was being done.
    pub fn into_error(self, doing: &str) -> Error {
        Error::failed(format!("tmux could not {doing}: {}", self.message()))
    }
}

impl Tmux {
    pub fn new(program: PathBuf, server: Server) -> Tmux {
        Tmux { program, server }
    }

    /// A client whose output teamctl reads: `-u`, so tmux prints what it holds byte for byte
    /// whatever the locale (new-user QA 45: with `LANG` unset or `C`, tmux printed the tab
    /// between a format's fields, and every byte outside ASCII, as `_`: no pane was teamctl's,
    /// `kill` left them open and `doctor` offered to close the user's shells).
    fn command(&self, cmds: &[Cmd]) -> Command {
        let mut c = self.client();
        c.arg("-u").args(argv::line(&self.server, cmds));
        c
    }

    /// The tmux program, without the commands: `command`, or the user's terminal's client.
    fn client(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.env_remove("TMUX");
        // A server started here inherits this environment and passes it to every pane: it
        // must not carry an agent's identity (the process tag) or its team.
        for var in crate::domain::env::not_inherited() {
            c.env_remove(var);
        }
        c
    }

    /// Run commands in one tmux invocation and return what they printed.
    pub fn run(&self, cmds: &[Cmd]) -> Result<String, Fail> {
        let out = self
            .command(cmds)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Fail::Other(format!("cannot run {}: {e}", self.program.display())))?;
        ended(&out)
    }

    /// `run`, with `input` on tmux's stdin (`load-buffer -`): text never goes on a command
    /// line, where it would be visible to every process and limited in length.
    pub fn run_with_input(&self, cmds: &[Cmd], input: &[u8]) -> Result<String, Fail> {
        use std::io::Write;
        let mut child = self
            .command(cmds)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Fail::Other(format!("cannot run {}: {e}", self.program.display())))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input);
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Fail::Other(format!("tmux: {e}")))?;
        ended(&out)
    }

    /// Run commands with the caller's terminal (for `attach`). `as_client`: the caller is a
    /// client of this server (inside tmux), so `$TMUX` stays and names the client to switch.
    pub fn run_in_terminal(&self, cmds: &[Cmd], as_client: bool) -> Result<(), Error> {
        // Drawn for the user's terminal as its locale says: no `-u`.
        let mut c = self.client();
        c.args(argv::line(&self.server, cmds));
        if as_client && let Some(tmux) = std::env::var_os("TMUX") {
            c.env("TMUX", tmux);
        }
        let status = c
            .status()
            .map_err(|e| Error::failed(format!("cannot run {}: {e}", self.program.display())))?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::failed(
                "tmux could not attach (see its message above); run `teamctl attach` from a terminal",
            ))
        }
    }
}

/// What one tmux invocation's end says: its output, or why it failed. A client ended by a
/// signal says nothing on stderr (attacker QA: "tmux could not split a team window:" and no
/// reason); what it ran may have been done by the server all the same.
fn ended(out: &std::process::Output) -> Result<String, Fail> {
    use std::os::unix::process::ExitStatusExt;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.signal() {
        Some(sig) if stderr.trim().is_empty() => Err(Fail::Other(format!(
            "the tmux client was killed by signal {sig} before it said how its commands went"
        ))),
        _ => Err(Fail::classify(&stderr)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmux_messages_are_sorted() {
        assert!(matches!(
            Fail::classify("can't find pane: %9\n"),
            Fail::Gone(_)
        ));
        assert!(matches!(
            Fail::classify("no server running on /tmp/tmux-0/x"),
            Fail::Gone(_)
        ));
        assert!(matches!(
            Fail::classify("error connecting to /tmp/tmux-0/x (No such file or directory)"),
            Fail::Gone(_)
        ));
        assert!(matches!(
            Fail::classify("no such session: =teamctl-x:"),
            Fail::Gone(_)
        ));
        assert!(matches!(
            Fail::classify("no such window: @7"),
            Fail::Gone(_)
        ));
        assert!(Fail::classify("invalid option: @teamctl-team").is_unset_option());
        assert!(matches!(
            Fail::classify("no space for new pane"),
            Fail::NoSpace(_)
        ));
        assert!(matches!(
            Fail::classify("duplicate session: x"),
            Fail::Other(_)
        ));
        assert_eq!(
            Fail::Other("boom".into()).into_error("split").to_string(),
            "tmux could not split: boom"
        );
    }

    #[test]
    fn a_missing_tmux_program_is_a_failure_not_a_panic() {
        let t = Tmux::new("/nonexistent/tmux".into(), Server::Named("x".into()));
        assert!(matches!(
            t.run(&[vec!["list-sessions".into()]]),
            Err(Fail::Other(_))
        ));
    }
}
