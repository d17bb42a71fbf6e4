//! A preset agent's call for one turn (`spawn --agent`): its argv in a given session, and the
//! files of the turn: the one its message is written to (`MessageVia::File`), the one its reply
//! is read from (`ReplyVia::AiderHistory`), the whole of a message too long for an argument
//! (`message_cut`) and the whole of a reply too long to send (`reply_file`). It owns what a
//! turn needs of the member, the home and the store, so a session renewed mid-turn is one more
//! call of the same methods.

use std::path::{Path, PathBuf};

use super::turn::{self, TurnEnd, TurnResult, TurnSpec};
use crate::agent::{self, preset::Preset};
use crate::domain::interactive::frame;
use crate::domain::{Envelope, Member};
use crate::error::Result;
use crate::store::Store;
use crate::store::fsutil::{check_file, with_subdir, write_atomic};

/// A preset agent's turn, for whichever session it runs in.
pub(super) struct Call {
    pub preset: &'static Preset,
    /// The member's turn number in its session as the turn began (the files are named by it).
    turn: u64,
    model: Option<String>,
    extra: Vec<String>,
    /// The message as the agent gets it: framed, and cut when too long for an argument.
    message: String,
    home: String,
    /// Where the agents' per-session files are (`local_dir()/sessions`).
    pub sessions_dir: PathBuf,
    sessions: String,
    /// A store reached over the network (NATS): a sandboxed agent needs it for `teamctl`.
    networked: bool,
    /// Where `message_cut` put the whole text, for a preset whose file tools must be let in.
    cut_dir: Option<String>,
}

impl Call {
    /// `preset`'s call for `text`, the message `env` as turn `turn` of `member`. A message
    /// too long for an argument is written whole to its file here (`message_cut`).
    pub fn new(
        preset: &'static Preset,
        member: &Member,
        home: &Path,
        store: &dyn Store,
        env: &Envelope,
        text: &str,
        turn: u64,
    ) -> Result<Call> {
        let local = store.local_dir();
        let cut = preset.message_in_args() && text.len() > agent::preset::ARG_ROOM;
        // A preset agent gets the message framed with its sender and id, which no text can
        // fake (`domain::interactive::frame`); a plain `--exec` gets the text as it is.
        let message = if cut {
            message_cut(&local, env, text)?
        } else {
            frame(&env.from, &env.id, text)
        };
        Ok(Call {
            preset,
            turn,
            model: member.model.clone(),
            extra: member.agent_args.clone(),
            message,
            home: home.display().to_string(),
            sessions: local.join("sessions").display().to_string(),
            sessions_dir: local.join("sessions"),
            networked: store.spans_hosts(),
            cut_dir: cut.then(|| local.join("messages").display().to_string()),
        })
    }

    /// The argv and the message text of turn `turn` in `session`.
    fn args(&self, session: &str, turn: u64, prompt: &str) -> (Vec<String>, String) {
        self.preset.turn(&agent::TurnArgs {
            session,
            turn,
            model: self.model.as_deref(),
            prompt,
            message: &self.message,
            home: &self.home,
            sessions: &self.sessions,
            networked: self.networked,
            extra: &self.extra,
            cut_dir: self.cut_dir.as_deref(),
        })
    }

    /// The files of a turn in `session`: the one the message is written to; the one the reply
    /// is read from (aider's LLM history); every file the agent opens itself.
    fn files(&self, session: &str) -> (Option<PathBuf>, Option<PathBuf>, Vec<String>) {
        let a = agent::TurnArgs {
            session,
            turn: self.turn,
            model: None,
            prompt: "",
            message: "",
            home: &self.home,
            sessions: &self.sessions,
            networked: self.networked,
            extra: &[],
            cut_dir: None,
        };
        let message = self.preset.message_file(&a).map(PathBuf::from);
        let reply = self.preset.reply_file(&a).map(PathBuf::from);
        (message, reply, self.preset.own_files(&a))
    }

    /// The reply file of a turn in `session`, made anew (empty, 0600) for the turn. The agent
    /// opens its files itself: never through a link (it would read and write outside the
    /// home) nor a FIFO (it would block): attacker QA. Else why not, for a turn that fails
    /// saying so (`Worker::not_run`); the worker goes on.
    pub fn history(&self, session: &str) -> std::result::Result<Option<PathBuf>, String> {
        let (_, reply, own) = self.files(session);
        for f in own {
            check_file(Path::new(&f)).map_err(|e| e.to_string())?;
        }
        let Some(f) = reply else { return Ok(None) };
        with_subdir(&self.sessions_dir, 1, || turn::fresh_record(&f)).map_err(|e| e.to_string())?;
        Ok(Some(f))
    }

    /// Set `spec` to run turn `turn` in `session`. The message's text goes on stdin, or into
    /// its file (stdin then empty), removed after the turn (`unplace`): the message is in the
    /// inbox; its copy for the turn is not kept.
    pub fn aim(&self, spec: &mut TurnSpec, session: &str, turn: u64, prompt: &str) -> Result<()> {
        let (argv, text) = self.args(session, turn, prompt);
        spec.argv = Some(argv);
        spec.stdin = match self.files(session).0 {
            Some(file) => {
                with_subdir(&self.sessions_dir, 1, || {
                    write_atomic(&file, text.as_bytes(), false)
                })?;
                String::new()
            }
            None => text,
        };
        Ok(())
    }

    /// Remove the message's file of a turn in `session`, if it has one.
    pub fn unplace(&self, session: &str) {
        if let Some(file) = self.files(session).0 {
            let _ = std::fs::remove_file(file);
        }
    }

    /// Whether the agent refused the session it was given (lost it, or has it already). On
    /// stderr only: stdout is the model's text, which may say anything (attacker QA: a model
    /// that wrote "Error starting session" gave up a working session, and ran the message
    /// three times).
    pub fn refused(&self, r: &TurnResult) -> bool {
        matches!(r.end, TurnEnd::Exited(c) if c != 0)
            && self
                .preset
                .session_retry
                .iter()
                .any(|s| r.stderr_tail.contains(s))
    }
}

/// The file that gets the whole of a reply too long to send: `replies/ID.txt` in the team's
/// host-local directory `local`, by the message's id (any other id spelling gets a fresh one).
pub(super) fn reply_file(local: &Path, env: &Envelope) -> PathBuf {
    let id = if !env.id.is_empty()
        && env.id.len() <= 64
        && env
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        env.id.clone()
    } else {
        crate::domain::message::new_id()
    };
    local.join("replies").join(format!("{id}.txt"))
}

/// `text`, a message too long for an argument (gemini), cut to
/// `agent::preset::ARG_ROOM` and framed, with a marker after the frame naming
/// `messages/ID.txt` beside the replies, which gets the whole text (0600, never through a
/// link): every turn of such a message failed with "Argument list too long" (attacker QA).
/// The marker is outside the frame (teamctl's, not the sender's; inside, the frame would
/// blank the id in its path).
fn message_cut(local: &Path, env: &Envelope, text: &str) -> Result<String> {
    let replies = reply_file(local, env);
    let dir = local.join("messages");
    let path = dir.join(replies.file_name().unwrap_or_default());
    with_subdir(&dir, 1, || write_atomic(&path, text.as_bytes(), false))?;
    let mut end = agent::preset::ARG_ROOM;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Ok(format!(
        "{}\n[teamctl: message cut: {} of {} bytes not shown; the whole message is in {}]",
        frame(&env.from, &env.id, &text[..end]),
        text.len() - end,
        text.len(),
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Body;

    fn message(id: &str) -> Envelope {
        let mut env = Envelope::new("alice", "bob", Body::message("hi", None));
        env.id = id.into();
        env
    }

    fn ended(code: i32, stdout: &str, stderr: &str) -> TurnResult {
        TurnResult {
            spawned: true,
            end: TurnEnd::Exited(code),
            stdout: stdout.into(),
            stderr_tail: stderr.into(),
        }
    }

    #[test]
    fn a_reply_file_is_named_by_the_message_id_only_when_that_id_is_plain() {
        let local = Path::new("/home/t");
        assert_eq!(
            reply_file(local, &message("0190-abc")),
            local.join("replies").join("0190-abc.txt")
        );
        for id in ["../../x", "a/b", "", &"a".repeat(65)] {
            let file = reply_file(local, &message(id));
            assert_eq!(
                file.parent(),
                Some(local.join("replies").as_path()),
                "{id:?}"
            );
            assert_ne!(
                file.file_name(),
                Some(format!("{id}.txt").as_ref()),
                "{id:?}"
            );
        }
    }

    #[test]
    fn only_a_failed_turn_saying_so_on_stderr_refused_its_session() {
        let team = crate::domain::Name::parse("t").unwrap();
        let store = crate::store::mem::MemStore::new(team.clone(), "/home/t".into());
        let member = Member::leader(&team, String::new(), 0);
        let preset = agent::preset::find("claude").unwrap();
        let said = preset.session_retry[0];
        let call = Call::new(
            preset,
            &member,
            Path::new("/home"),
            &store,
            &message("m"),
            "hi",
            1,
        )
        .unwrap();
        assert!(call.refused(&ended(1, "", said)));
        // The model's own text may say anything.
        assert!(!call.refused(&ended(1, said, "")));
        assert!(!call.refused(&ended(0, "", said)));
        assert!(!call.refused(&ended(1, "", "some other failure")));
    }

    #[test]
    fn a_message_too_long_for_an_argument_is_cut_and_kept_whole_beside_the_replies() {
        let dir = tempfile::tempdir().unwrap();
        let text = "é".repeat(agent::preset::ARG_ROOM);
        let cut = message_cut(dir.path(), &message("m1"), &text).unwrap();
        let whole = dir.path().join("messages").join("m1.txt");
        assert_eq!(std::fs::read_to_string(&whole).unwrap(), text);
        assert!(
            cut.ends_with(&format!(
                "[teamctl: message cut: {} of {} bytes not shown; the whole message is in {}]",
                text.len() - agent::preset::ARG_ROOM,
                text.len(),
                whole.display()
            )),
            "{}",
            &cut[cut.len() - 200..]
        );
    }
}
